/* labeler_node_group_test.c: the node group of each run in the store (migration 005) against a
 * real PostgreSQL (DATABASE_URL or PG*): stored with the run, read back with the samples, kept
 * when a re-ingest of the same run on the same node cannot resolve the group (no cluster at
 * hand), dropped when the run is stored again on another node without a group, and per-group
 * runtimes computed from what the store returns. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "labeler/group_runtime.h"
#include "labeler/store.h"
#include "lib/pg.h"

static const char *db;
static char wf[64];

static void run(lab_task_run *r, int id, const char *node, const char *group, int64_t ms) {
    lab_task_run_init(r);
    snprintf(r->workflow, sizeof r->workflow, "%s", wf);
    snprintf(r->run_name, sizeof r->run_name, "r1");
    snprintf(r->process, sizeof r->process, "P");
    snprintf(r->name, sizeof r->name, "P (%d)", id);
    snprintf(r->status, sizeof r->status, "COMPLETED");
    snprintf(r->node, sizeof r->node, "%s", node);
    snprintf(r->node_group, sizeof r->node_group, "%s", group);
    r->task_id = id;
    r->realtime_ms = ms;
    r->cpu_pct = 100;
}

/* "group:count ..." of the stored runs, NULL groups as "-". */
static void groups_of(lab_samples *smp, char *buf, size_t cap) {
    int nslow = 0, nfast = 0, nnull = 0;
    for (size_t i = 0; i < smp->n; i++) {
        if (!smp->group[i])
            nnull++;
        else if (strcmp(smp->group[i], "slow") == 0)
            nslow++;
        else if (strcmp(smp->group[i], "fast") == 0)
            nfast++;
    }
    snprintf(buf, cap, "fast:%d slow:%d -:%d", nfast, nslow, nnull);
}

static void test_node_group_stored(void) {
    tm_err err = {{0}, 0};
    lab_store *s = lab_store_open(db, &err);
    CHECKF(s != NULL, "%s", err.msg);
    if (!s)
        return;
    lab_task_run r[4];
    run(&r[0], 1, "n1-1", "slow", 100000);
    run(&r[1], 2, "n1-2", "slow", 120000);
    run(&r[2], 3, "c2-1", "fast", 60000);
    run(&r[3], 4, "mystery", "", 90000);
    CHECKF(lab_store_put_runs(s, r, 4, "trace", NULL, NULL, &err) == 0, "%s", err.msg);
    lab_samples smp;
    char got[64] = "";
    CHECKF(lab_store_samples(s, wf, &smp, &err) == 0, "%s", err.msg);
    groups_of(&smp, got, sizeof got);
    CHECK_STR(got, "fast:1 slow:2 -:1");
    lab_group_rt g[4];
    CHECK_INT(lab_group_runtimes(smp.v, smp.group, smp.n, "P", g, 4, &err), 2);
    CHECK(strcmp(g[0].group, "fast") == 0 && g[0].runs == 1 && g[0].mean_s == 60);
    CHECK(strcmp(g[1].group, "slow") == 0 && g[1].runs == 2 && g[1].mean_s == 110);
    lab_samples_free(&smp);
    /* re-ingest: run 1 on the same node without a group keeps "slow"; run 3 now on another
     * node without a group loses "fast" (it is another placement, its old group is wrong) */
    run(&r[0], 1, "n1-1", "", 100000);
    run(&r[1], 3, "elsewhere", "", 60000);
    long ins = -1, upd = -1;
    CHECKF(lab_store_put_runs(s, r, 2, "trace", &ins, &upd, &err) == 0, "%s", err.msg);
    CHECK(ins == 0 && upd == 2);
    CHECKF(lab_store_samples(s, wf, &smp, &err) == 0, "%s", err.msg);
    groups_of(&smp, got, sizeof got);
    CHECK_STR(got, "fast:0 slow:2 -:2");
    lab_samples_free(&smp);
    lab_store_close(s);
}

int main(void) {
    db = getenv("DATABASE_URL");
    snprintf(wf, sizeof wf, "e2e-node-group-%d", (int)getpid());
    RUN(test_node_group_stored);
    tm_err err = {{0}, 0};
    PGconn *c = tm_pg_connect(db, &err);
    const char *params[] = {wf};
    if (c)
        tm_pg_run(c, "DELETE FROM task_runs WHERE workflow = $1", 1, params, &err);
    tm_pg_close(c);
    return TEST_SUMMARY();
}
