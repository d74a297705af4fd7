/* labeler_run_tail_test.c: each process's time from its task's end to the end of its workflow
 * run (labeler/run_tail.h), on hand-computed values. */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "labeler/run_tail.h"
#include "labeler/weblog.h"

/* r1: A ends at 1 s and 3 s, B at 6 s, C fails at 10 s (the run's end: it ended last).
 *     A: mean(10 - 1, 10 - 3) = 8 s; B: 4 s; C: no completed task, no tail.
 * r2: A at 2 s, B at 5 s (the end); A's third task and D without a completion time.
 *     A: 3 s; B: 0 s.
 * Over runs: A (8 + 3) / 2 = 5.5 s from 2 runs, B (4 + 0) / 2 = 2 s from 2 runs. Rows are
 * interleaved so the grouping cannot rely on their order. */
static void test_tails(void) {
    lab_tail_row rows[] = {
        {"r2", "A", 2000, true}, {"r1", "B", 6000, true},   {"r1", "A", 3000, true},
        {"r2", "D", NAN, true},  {"r1", "C", 10000, false}, {"r2", "B", 5000, true},
        {"r1", "A", 1000, true}, {"r2", "A", NAN, true},
    };
    size_t n = 0;
    tm_err err = {{0}, 0};
    lab_tail *t = lab_run_tails(rows, sizeof rows / sizeof rows[0], &n, &err);
    CHECK(t != NULL);
    CHECK_INT(n, 2);
    if (!t || n != 2) {
        free(t);
        return;
    }
    CHECK_STR(t[0].process, "A");
    CHECK_INT(t[0].runs, 2);
    CHECK_NEAR(t[0].mean_s, 5.5, 1e-9);
    CHECK_STR(t[1].process, "B");
    CHECK_INT(t[1].runs, 2);
    CHECK_NEAR(t[1].mean_s, 2.0, 1e-9);
    const lab_tail *b = lab_run_tail_find(t, n, "B");
    CHECK(b == &t[1]);
    CHECK(lab_run_tail_find(t, n, "C") == NULL); /* only failed: no tail */
    CHECK(lab_run_tail_find(t, n, "D") == NULL); /* no completion time */
    free(t);
}

/* One run, one process: its tail is the time after it to the run's end, and the last process
 * of a run has tail 0 (the chipseq shape: an early process has the larger tail). */
static void test_one_run(void) {
    lab_tail_row rows[] = {{"r", "FASTQC", 60000, true}, {"r", "MULTIQC", 900000, true}};
    size_t n = 0;
    tm_err err = {{0}, 0};
    lab_tail *t = lab_run_tails(rows, 2, &n, &err);
    CHECK(t && n == 2);
    const lab_tail *f = t ? lab_run_tail_find(t, n, "FASTQC") : NULL,
                   *m = t ? lab_run_tail_find(t, n, "MULTIQC") : NULL;
    CHECK(f && m);
    if (f && m) {
        CHECK_NEAR(f->mean_s, 840.0, 1e-9);
        CHECK_INT(f->runs, 1);
        CHECK_NEAR(m->mean_s, 0.0, 1e-9);
    }
    free(t);
}

static void test_empty(void) {
    size_t n = 7;
    tm_err err = {{0}, 0};
    lab_tail *t = lab_run_tails(NULL, 0, &n, &err);
    CHECK(t != NULL);
    CHECK_INT(n, 0);
    CHECK(lab_run_tail_find(t, n, "A") == NULL);
    free(t);
}

/* Nextflow's `completed` event marks a run complete unless metadata.workflow.success is false
 * (before, it was ignored as LAB_WEBLOG_OTHER and no weblog run ever had an end). */
static void test_weblog_completed(void) {
    const char *texts[] = {
        "{\"event\":\"completed\",\"runName\":\"n\",\"runId\":\"i\","
        "\"utcTime\":\"2023-05-01T13:00:00Z\",\"metadata\":{\"workflow\":{\"success\":true}}}",
        "{\"event\":\"completed\",\"runName\":\"n\",\"runId\":\"i\","
        "\"metadata\":{\"workflow\":{\"success\":false}}}",
        "{\"event\":\"completed\",\"runName\":\"n\",\"runId\":\"i\"}"};
    const bool success[] = {true, false, true};
    for (int k = 0; k < 3; k++) {
        json_t *j = json_loads(texts[k], 0, NULL);
        lab_weblog_event ev;
        tm_err err = {{0}, 0};
        CHECK(j && lab_weblog_parse(j, NULL, &ev, &err) == 0);
        CHECKF(ev.kind == LAB_WEBLOG_COMPLETED, "event %d: kind %d", k, (int)ev.kind);
        CHECKF(ev.success == success[k], "event %d: success %d", k, (int)ev.success);
        CHECK(lab_weblog_validate(&ev, &err) == 0);
        json_decref(j);
    }
}

int main(void) {
    RUN(test_weblog_completed);
    RUN(test_tails);
    RUN(test_one_run);
    RUN(test_empty);
    return TEST_SUMMARY();
}
