/* ingest.c: see ingest.h. */
#include "labeler/ingest.h"

#include <stdlib.h>
#include <string.h>

#include "labeler/node_group.h"
#include "labeler/trace_parse.h"
#include "lib/log.h"

/* Big enough to amortise a round trip, small enough to keep memory flat (~2.5 KB a row). */
#define BATCH        10000
#define MAX_REPORTED 50

static int flush(lab_store *s, lab_task_run *batch, size_t *n, lab_ingest_stats *st, tm_err *err) {
    long ins = 0, upd = 0;
    if (lab_store_put_runs(s, batch, *n, "trace", &ins, &upd, err) < 0)
        return -1;
    st->inserted += ins;
    st->updated += upd;
    st->stored += ins + upd;
    *n = 0;
    return 0;
}

int lab_ingest_trace(lab_store *s, FILE *f, const char *source, const char *workflow,
                     const char *run_name, lab_ingest_stats *stats, tm_err *err) {
    return lab_ingest_trace_groups(s, f, source, workflow, run_name, NULL, stats, err);
}

int lab_ingest_trace_groups(lab_store *s, FILE *f, const char *source, const char *workflow,
                            const char *run_name, const json_t *node_groups,
                            lab_ingest_stats *stats, tm_err *err) {
    memset(stats, 0, sizeof *stats);
    lab_trace_reader *r = lab_trace_open(f, source, err);
    if (!r)
        return -1;
    lab_task_run *batch = malloc(BATCH * sizeof *batch);
    if (!batch) {
        lab_trace_close(r);
        return tm_err_set(err, "out of memory");
    }
    size_t n = 0;
    int rc = 0;
    for (;;) {
        tm_err rowerr = {{0}, 0};
        int got = lab_trace_next(r, &batch[n], &rowerr);
        if (got == 0)
            break;
        if (got < 0) {
            if (stats->skipped++ < MAX_REPORTED)
                tm_warn("skipping bad trace row: %s", rowerr.msg);
            else if (stats->skipped == MAX_REPORTED + 1)
                tm_warn("more bad rows in %s; reporting only the first %d", source, MAX_REPORTED);
            continue;
        }
        snprintf(batch[n].workflow, sizeof batch[n].workflow, "%s", workflow);
        snprintf(batch[n].run_name, sizeof batch[n].run_name, "%s", run_name);
        lab_node_groups_fill(node_groups, &batch[n], 1);
        if (++n == BATCH && (rc = flush(s, batch, &n, stats, err)) < 0)
            break;
    }
    if (rc == 0 && n)
        rc = flush(s, batch, &n, stats, err);
    free(batch);
    lab_trace_close(r);
    return rc;
}

void lab_ingest_default_run(const char *path, char *out, size_t size) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, size, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = '\0';
}
