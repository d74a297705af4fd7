/* labeler_store_test.c: the task-run store against a real PostgreSQL (DATABASE_URL or PG*):
 * migrations applied once and idempotent, parameterised values, trace ingest of the fixtures,
 * re-ingest without duplicates, and labels computed from stored runs by hand-checked numbers. */
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "labeler/groups.h"
#include "labeler/ingest.h"
#include "labeler/migrations.h"
#include "labeler/store.h"
#include "lib/pg.h"

#define FIX "tests/fixtures/labeler/"

static const char *db;
static char wf[64], wf_evil[96];

static long count_sql(const char *sql, const char *param) {
    tm_err err = {{0}, 0};
    PGconn *c = tm_pg_connect(db, &err);
    if (!c)
        return -1;
    const char *params[] = {param};
    PGresult *r = tm_pg_exec(c, sql, param ? 1 : 0, param ? params : NULL, &err);
    long n = r ? atol(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    tm_pg_close(c);
    return n;
}

static void test_migrations(void) {
    tm_err err = {{0}, 0};
    PGconn *c = tm_pg_connect(db, &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    size_t n;
    const tm_pg_migration *m = lab_migrations(&n);
    int applied = -1;
    CHECK(tm_pg_migrate(c, m, n, &applied, &err) == 0);
    CHECK(tm_pg_migrate(c, m, n, &applied, &err) == 0);
    CHECK_INT(applied, 0); /* the second run has nothing left to do */
    CHECK_INT(count_sql("SELECT max(version) FROM schema_migrations", NULL), 6);
    /* 003 made the identity the primary key. */
    CHECK_INT(count_sql("SELECT count(*) FROM information_schema.table_constraints WHERE "
                        "table_name = 'task_runs' AND constraint_name = 'task_runs_identity' AND "
                        "constraint_type = 'PRIMARY KEY'",
                        NULL),
              1);
    /* A database from the future is refused with a message saying so. */
    tm_pg_migration older[] = {m[0]};
    CHECK(tm_pg_migrate(c, older, 1, &applied, &err) == -1);
    CHECK(strstr(err.msg, "version 6") != NULL);
    /* A broken migration rolls back completely. */
    tm_pg_migration broken[] = {
        m[0], m[1], m[2], m[3], m[4], m[5], {7, "broken", "CREATE TABLE lab_t3 (x int); SELEC 1"}};
    CHECK(tm_pg_migrate(c, broken, 7, &applied, &err) == -1);
    CHECK(strstr(err.msg, "migration 7 (broken)") != NULL);
    CHECK(!tm_pg_err_retryable(c, &err)); /* a syntax error fails the same way next time */
    CHECK(tm_pg_run(c, "SELECT 1/0", 0, NULL, &err) == -1);
    CHECK(strstr(err.msg, "SQLSTATE 22012") != NULL);
    CHECK(!tm_pg_err_retryable(c, &err));
    CHECK(tm_pg_run(c, "SELECT pg_sleep(0.01)", 0, NULL, &err) == 0);
    CHECK_INT(count_sql("SELECT count(*) FROM pg_tables WHERE tablename = 'lab_t3'", NULL), 0);
    CHECK_INT(count_sql("SELECT max(version) FROM schema_migrations", NULL), 6);
    tm_pg_close(c);
}

/* Components sharing the database keep their own series of versions: the DAM's version 1 must
 * neither be refused because the labeler is at 6, nor make the labeler skip its own 1. */
static void test_migration_sets(void) {
    tm_err err = {{0}, 0};
    PGconn *c = tm_pg_connect(db, &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    tm_pg_migration other[] = {{1, "e2e set one", "CREATE TABLE IF NOT EXISTS lab_set_t1 (x int)"}};
    int applied = -1;
    CHECKF(tm_pg_migrate_set(c, "e_e_set", other, 1, &applied, &err) == 0, "%s", err.msg);
    CHECK(tm_pg_migrate_set(c, "e_e_set", other, 1, &applied, &err) == 0);
    CHECK_INT(applied, 0);
    CHECK_INT(count_sql("SELECT max(version) FROM e_e_set_schema_migrations", NULL), 1);
    CHECK_INT(count_sql("SELECT max(version) FROM schema_migrations", NULL), 6);
    /* the labeler's series is untouched and still complete */
    size_t n;
    const tm_pg_migration *m = lab_migrations(&n);
    CHECK(tm_pg_migrate(c, m, n, &applied, &err) == 0);
    CHECK_INT(applied, 0);
    /* set names are identifiers, never text from outside */
    CHECK(tm_pg_migrate_set(c, "x; DROP TABLE task_runs", other, 1, &applied, &err) == -1);
    CHECK(strstr(err.msg, "set name") != NULL);
    CHECK(tm_pg_migrate_set(c, "", other, 1, &applied, &err) == -1);
    CHECK(tm_pg_migrate_set(c, "digits2", other, 1, &applied, &err) == -1);
    CHECK(tm_pg_run(c, "DROP TABLE lab_set_t1", 0, NULL, &err) == 0);
    CHECK(tm_pg_run(c, "DROP TABLE e_e_set_schema_migrations", 0, NULL, &err) == 0);
    tm_pg_close(c);
}

static int ingest(lab_store *s, const char *path, const char *workflow, lab_ingest_stats *st) {
    FILE *f = fopen(path, "r");
    tm_err err = {{0}, 0};
    char run[128];
    lab_ingest_default_run(path, run, sizeof run);
    int rc = f ? lab_ingest_trace(s, f, path, workflow, run, st, &err) : -1;
    if (rc < 0)
        printf("    ingest %s: %s\n", path, err.msg);
    if (f)
        fclose(f);
    return rc;
}

static void test_ingest_idempotent(void) {
    tm_err err = {{0}, 0};
    lab_store *s = lab_store_open(db, &err);
    CHECKF(s != NULL, "%s", err.msg);
    if (!s)
        return;
    lab_ingest_stats st;
    CHECK(ingest(s, FIX "chipseq_trace_human.txt", wf, &st) == 0);
    CHECK_INT(st.stored, 40);
    CHECK_INT(st.inserted, 40);
    CHECK_INT(st.skipped, 2);
    CHECK(ingest(s, FIX "chipseq_trace_human.txt", wf, &st) == 0);
    CHECK_INT(st.inserted, 0);
    CHECK_INT(st.updated, 40);
    CHECK_INT(lab_store_count(s, wf, &err), 40);
    CHECK(ingest(s, FIX "eager_trace_raw.txt", wf, &st) == 0);
    CHECK_INT(st.inserted, 30);
    CHECK_INT(lab_store_count(s, wf, &err), 70);
    /* Values arrive intact: 617.1 MB peak_rss of the first chipseq task, timestamps in UTC. */
    CHECK_INT(count_sql("SELECT peak_rss FROM task_runs WHERE workflow = $1 AND hash = "
                        "'3d/085794'",
                        wf),
              (long)llround(617.1 * 1024 * 1024));
    CHECK_INT(count_sql("SELECT extract(epoch FROM complete_time) * 1000 FROM task_runs WHERE "
                        "workflow = $1 AND hash = '3d/085794'",
                        wf),
              1682944518222L);
    /* A workflow name that would break concatenated SQL is just a value. */
    CHECK(ingest(s, FIX "eager_trace_raw.txt", wf_evil, &st) == 0);
    CHECK_INT(lab_store_count(s, wf_evil, &err), 30);
    /* The same task twice in one batch: stored once, the later copy wins. */
    lab_task_run r[2];
    for (int i = 0; i < 2; i++) {
        lab_task_run_init(&r[i]);
        snprintf(r[i].workflow, sizeof r[i].workflow, "%s", wf);
        snprintf(r[i].run_name, sizeof r[i].run_name, "dup");
        snprintf(r[i].process, sizeof r[i].process, "DUP");
        snprintf(r[i].hash, sizeof r[i].hash, "dd/000001");
        r[i].cpu_pct = 100 + i;
    }
    long ins = 0, upd = 0;
    CHECK(lab_store_put_runs(s, r, 2, "trace", &ins, &upd, &err) == 0);
    CHECK_INT(ins, 1);
    CHECK_INT(
        count_sql("SELECT cpu_pct FROM task_runs WHERE workflow = $1 AND process = 'DUP'", wf),
        101);
    lab_store_close(s);
}

/* Hand-computed: a workflow with processes A (cpu 100, 200), B (300, 400), C (500, 600, 700)
 * on the groups of groups_3.json (cpu classes 20, 20, 40 cores: p = 0.25, 0.5). Sorted cpu
 * samples 100..700 (7): h = 1.5 -> 250, h = 3 -> 400. A 150 -> 1, B 350 -> 2, C 600 -> 3. */
static void test_labels_from_store(void) {
    tm_err err = {{0}, 0};
    lab_store *s = lab_store_open(db, &err);
    if (!s)
        return;
    char path[] = "/tmp/labeler-e2e-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("hash\tprocess\tstatus\t%cpu\tpeak_rss\trchar\twchar\trealtime\n", f);
    const char *procs[] = {"A", "A", "B", "B", "C", "C", "C"};
    for (int i = 0; i < 7; i++)
        fprintf(f, "%02d/000000\t%s\tCOMPLETED\t%d.0%%\t%d MB\t%d\t0\t%ds\n", i, procs[i],
                (i + 1) * 100, (i + 1) * 10, (i + 1) * 1000, i + 1);
    fputs("99/000000\tC\tFAILED\t9999%\t1 MB\t1\t1\t1s\n", f); /* failed runs do not count */
    fclose(f);
    char wf2[80];
    snprintf(wf2, sizeof wf2, "%s-hand", wf);
    lab_ingest_stats st;
    CHECK(ingest(s, path, wf2, &st) == 0);
    unlink(path);
    json_t *root = json_load_file(FIX "groups_3.json", 0, NULL);
    lab_groups g;
    lab_classes cls[LAB_NFEATURES];
    CHECK(root && lab_groups_from_json(root, &g, &err) == 0);
    CHECK(lab_groups_all_classes(&g, cls, &err) == 0);
    json_decref(root);
    lab_samples smp;
    CHECK(lab_store_samples(s, wf2, &smp, &err) == 0);
    CHECK_INT(smp.n, 7);
    lab_labeling *l = lab_label_compute(smp.v, smp.n, cls, &err);
    CHECK(l != NULL);
    if (l) {
        CHECK_NEAR(l->bounds[LAB_CPU][0], 250, 1e-9);
        CHECK_NEAR(l->bounds[LAB_CPU][1], 400, 1e-9);
        CHECK_INT(l->procs[0].label[LAB_CPU], 1);
        CHECK_INT(l->procs[1].label[LAB_CPU], 2);
        CHECK_INT(l->procs[2].label[LAB_CPU], 3);
        CHECK_NEAR(l->procs[2].mean_realtime_ms, 6000, 1e-9);
        /* io = rchar + wchar, not read_bytes: 1000..7000, classes io 40+40 -> median 4000. */
        CHECK_NEAR(l->bounds[LAB_IO][0], 4000, 1e-9);
        CHECK_INT(l->procs[1].label[LAB_IO], 1); /* B: 3500 */
        CHECK_INT(l->procs[2].label[LAB_IO], 2); /* C: 6000 */
    }
    lab_labeling_free(l);
    lab_samples_free(&smp);
    char since[64];
    char **changed = lab_store_changed_workflows(s, "", since, &err);
    int seen = 0;
    for (char **p = changed; p && *p; p++)
        seen |= strcmp(*p, wf2) == 0;
    CHECK(seen);
    CHECK(since[0] != '\0');
    lab_strv_free(changed);
    lab_store_close(s);
}

static void collect(void *ud, const char *workflow) {
    char *seen = ud;
    if (strcmp(workflow, wf) == 0)
        (*seen)++;
}

/* Every write NOTIFYs its workflows at commit, so a listening labeler relabels at once,
 * whichever process stored the runs. */
static void test_notify_on_store(void) {
    tm_err err = {{0}, 0};
    lab_store *listener = lab_store_open(db, &err), *writer = lab_store_open(db, &err);
    CHECKF(listener && writer, "%s", err.msg);
    if (!listener || !writer)
        goto out;
    CHECK(lab_store_listen(listener, &err) == 0);
    char seen = 0;
    CHECK_INT(lab_store_notifications(listener, collect, &seen, &err), 0);
    lab_task_run r[3];
    for (int i = 0; i < 3; i++) {
        lab_task_run_init(&r[i]);
        snprintf(r[i].workflow, sizeof r[i].workflow, "%s", wf);
        snprintf(r[i].run_name, sizeof r[i].run_name, "notify");
        snprintf(r[i].process, sizeof r[i].process, "N");
        snprintf(r[i].hash, sizeof r[i].hash, "nn/%06d", i);
    }
    CHECK(lab_store_put_runs(writer, r, 3, "trace", NULL, NULL, &err) == 0);
    for (int i = 0; i < 50 && !seen; i++) { /* delivery is asynchronous: allow 5 s */
        usleep(100 * 1000);
        CHECK(lab_store_notifications(listener, collect, &seen, &err) >= 0);
    }
    CHECK_INT(seen, 1); /* one notification per workflow and batch, not per run */
out:
    lab_store_close(listener);
    lab_store_close(writer);
}

static void cleanup(void) {
    tm_err err = {{0}, 0};
    PGconn *c = tm_pg_connect(db, &err);
    if (!c)
        return;
    const char *params[] = {wf, wf_evil};
    tm_pg_run(c, "DELETE FROM task_runs WHERE workflow LIKE $1 || '%' OR workflow = $2", 2, params,
              &err);
    tm_pg_close(c);
}

int main(void) {
    db = getenv("DATABASE_URL");
    setenv("TZ", "UTC", 1);
    tzset();
    snprintf(wf, sizeof wf, "e2e-store-%d", (int)getpid());
    snprintf(wf_evil, sizeof wf_evil, "it's'); DROP TABLE task_runs; -- %d", (int)getpid());
    RUN(test_migrations);
    RUN(test_migration_sets);
    RUN(test_ingest_idempotent);
    RUN(test_labels_from_store);
    RUN(test_notify_on_store);
    cleanup();
    return TEST_SUMMARY();
}
