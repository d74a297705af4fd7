/* adaptive_runq_test.c: adaptive's run-aware queue (issue 16). With one workflow run queued,
 * the critical path first (rank = runtime + tail); with two or more, the shortest expected
 * runtime first (as SJFN); pods without a run are one run. The live queue re-sorts when the
 * order switches (sched_queue_view), explain shows the run and the order, and the run is read
 * from the pod's labels. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "scheduler/explain.h"
#include "scheduler/framework.h"
#include "scheduler/plugin_adaptive.h"
#include "scheduler/podspec.h"
#include "scheduler/policy.h"
#include "scheduler/queue.h"

#define GI (1024LL * 1024 * 1024)

static void add_node(sched_snapshot *s, const char *name) {
    sched_node *n = sched_node_new(name);
    n->ready = true;
    n->allocatable.v[SCHED_RES_CPU] = 4000;
    n->allocatable.v[SCHED_RES_MEMORY] = 32 * GI;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    sched_node_set_label(n, "tarema.io/group", "1");
    tm_err err;
    if (sched_snapshot_put_node(s, n, &err) != 0)
        printf("    put_node: %s\n", err.msg);
}

/* Process proc of workflow wf runs runtime_s, with tail_s of its run after it. */
static void profile(sched_snapshot *s, const char *wf, const char *proc, int runtime_s,
                    int tail_s) {
    sched_task_profile tp;
    memset(&tp, 0, sizeof tp);
    tp.expected_runtime_ms = runtime_s * 1000LL;
    tp.tail_ms = tail_s * 1000LL;
    tm_err err = {{0}, 0};
    if (sched_snapshot_set_task(s, wf, proc, &tp, &err) != 0)
        printf("    set_task: %s\n", err.msg);
}

static sched_pod *pod_of(const char *name, const char *wf, const char *proc, const char *run,
                         int64_t created_ms) {
    sched_pod *p = sched_pod_new("ns", name, name);
    free(p->workflow);
    free(p->process);
    free(p->run);
    p->workflow = strdup(wf);
    p->process = strdup(proc);
    p->run = strdup(run);
    p->requests.v[SCHED_RES_CPU] = 1000;
    p->requests.v[SCHED_RES_MEMORY] = GI;
    p->requests.v[SCHED_RES_PODS] = 1;
    p->created_ms = created_ms;
    return p;
}

typedef struct world {
    sched_snapshot *s;
    sched_framework *fw;
} world;

static world world_new(void) {
    world w = {sched_snapshot_new(), NULL};
    tm_err err = {{0}, 0};
    add_node(w.s, "n-0");
    w.fw = sched_policy_new("adaptive", &err);
    CHECKF(w.fw != NULL, "%s", err.msg);
    /* wf "big": MAP 300 s per sample, then 50 s; FIN 60 s at the end; wf "small": ONE 100 s */
    profile(w.s, "big", "MAP", 300, 50);
    profile(w.s, "big", "FIN", 60, 0);
    profile(w.s, "small", "ONE", 100, 0);
    profile(w.s, "chain", "EARLY", 100, 900);
    profile(w.s, "chain", "LATE", 300, 0);
    return w;
}

static void world_free(world *w) {
    sched_framework_free(w->fw);
    sched_snapshot_free(w->s);
}

static int view(world *w, sched_pod **pods, size_t n, int64_t now_ms) {
    tm_err err = {{0}, 0};
    int rc =
        sched_framework_queue_view(w->fw, w->s, (const sched_pod *const *)pods, n, now_ms, &err);
    CHECKF(rc >= 0, "%s", err.msg);
    return rc;
}

/* Runs "b" (three MAPs of 300 s, rank 350 s) and "s" (one ONE of 100 s, rank 100 s) compete:
 * the shortest expected runtime first, so ONE before every MAP, although the rank order (and
 * the order with one run queued) puts MAP first. A task without a known runtime goes after the
 * known ones. */
static void test_runs_compete_shortest_first(void) {
    world w = world_new();
    sched_pod *p[5] = {pod_of("b1", "big", "MAP", "b", 0), pod_of("b2", "big", "MAP", "b", 0),
                       pod_of("b3", "big", "MAP", "b", 0), pod_of("s1", "small", "ONE", "s", 0),
                       pod_of("u1", "small", "UNKNOWN", "u", 0)};
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[0], p[3]) < 0); /* no view yet: rank */
    CHECK_INT(view(&w, p, 4, 0), 1); /* two runs: the order switched */
    CHECK_INT((int)sched_adaptive_runs_queued(w.fw), 2);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[3], p[0]) < 0);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[0], p[3]) > 0);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[3], p[2]) < 0);
    const sched_adaptive_run *b = sched_adaptive_run_lookup(w.fw, "b");
    CHECK(b != NULL);
    if (b) {
        CHECK_INT((int)b->pods, 3);
        CHECK_INT((int)b->work_ms, 900000);
        CHECK_INT((int)b->tail_ms, 50000);
    }
    CHECK_INT(view(&w, p, 5, 0), 0); /* a third run: still several, no re-sort needed */
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[4], p[0]) > 0); /* unknown after 300 s */
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[0], p[4]) < 0);
    CHECK_INT(view(&w, p, 3, 0), 1); /* only "b" left: back to the rank order */
    CHECK_INT((int)sched_adaptive_runs_queued(w.fw), 1);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[0], p[3]) < 0);
    CHECK(sched_adaptive_run_lookup(w.fw, "s") == NULL);
    for (int i = 0; i < 5; i++)
        sched_pod_free(p[i]);
    world_free(&w);
}

/* Within one run: the critical path first. EARLY (100 s, 900 s after it: rank 1,000 s) before
 * LATE (300 s, the end: rank 300 s), with or without a view; and FIN (60 s, rank 60 s) after
 * MAP (300 s, rank 350 s) although it is shorter. */
static void test_critical_path_within_run(void) {
    world w = world_new();
    sched_pod *p[4] = {pod_of("late", "chain", "LATE", "c", 0),
                       pod_of("early", "chain", "EARLY", "c", 5), pod_of("fin", "big", "FIN", "c", 0),
                       pod_of("map", "big", "MAP", "c", 0)};
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[1], p[0]) < 0);
    CHECK_INT(view(&w, p, 4, 10), 0); /* one run: the order of before */
    CHECK_INT((int)sched_adaptive_runs_queued(w.fw), 1);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[1], p[0]) < 0);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[0], p[1]) > 0);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[3], p[2]) < 0);
    for (int i = 0; i < 4; i++)
        sched_pod_free(p[i]);
    world_free(&w);
}

/* No run labels: one anonymous run, so the rank order (MAP 350 s before ONE 100 s, although
 * ONE is shorter), with or without a view. */
static void test_no_run_label(void) {
    world w = world_new();
    sched_pod *p[2] = {pod_of("s1", "small", "ONE", "", 0), pod_of("b1", "big", "MAP", "", 0)};
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[1], p[0]) < 0);
    view(&w, p, 2, 0);
    CHECK_INT((int)sched_adaptive_runs_queued(w.fw), 1);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[1], p[0]) < 0);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[0], p[1]) > 0);
    sched_pod_free(p[0]);
    sched_pod_free(p[1]);
    world_free(&w);
}

static int qcmp(void *ud, const sched_pod *a, const sched_pod *b) {
    world *w = ud;
    return sched_framework_queue_cmp(w->fw, w->s, a, b);
}

static int qview(void *ud, const sched_pod *const *pods, size_t n) {
    world *w = ud;
    tm_err err = {{0}, 0};
    return sched_framework_queue_view(w->fw, w->s, pods, n, 0, &err);
}

/* The live queue: run "b" has MAP (300 s, rank 350 s) and FIN (60 s, rank 60 s) queued, so MAP
 * heads the heap. Then run "s" queues ONE (100 s): two runs, and the view re-sorts the heap so
 * that FIN, ONE, MAP pop in that order. Without the re-sort MAP stays at the top. */
static void test_live_queue_reorders(void) {
    world w = world_new();
    sched_queue *q = sched_queue_new(qcmp, &w, 1000, 8000);
    CHECK_INT(sched_queue_add(q, pod_of("map", "big", "MAP", "b", 0), 0), 0);
    CHECK_INT(sched_queue_add(q, pod_of("fin", "big", "FIN", "b", 0), 0), 0);
    CHECK_INT(sched_queue_view(q, qview, &w), 0);
    CHECK_INT(sched_queue_add(q, pod_of("one", "small", "ONE", "s", 0), 0), 0);
    CHECK_INT(sched_queue_view(q, qview, &w), 1);
    const char *const want[] = {"fin", "one", "map"};
    for (int i = 0; i < 3; i++) {
        sched_pod *got = sched_queue_pop(q, 0);
        CHECKF(got && strcmp(got->name, want[i]) == 0, "pop %d: %s, want %s", i,
               got ? got->name : "none", want[i]);
    }
    sched_queue_free(q);
    world_free(&w);
}

/* explain shows the run as the last view saw it, how many runs were queued, and the order. */
static void test_explain(void) {
    world w = world_new();
    sched_pod *p[3] = {pod_of("b1", "big", "MAP", "b", 1), pod_of("b2", "big", "MAP", "b", 1),
                       pod_of("s1", "small", "ONE", "s", 1)};
    view(&w, p, 2, 100001);
    tm_err err = {{0}, 0};
    json_t *doc = sched_explain(w.fw, w.s, p[0], 100001, &err);
    CHECKF(doc != NULL, "%s", err.msg);
    const json_t *qr = json_object_get(json_object_get(doc, "task"), "queueRank");
    CHECK_STR(tm_json_str(qr, "run", "?"), "b");
    CHECK_INT(tm_json_int(qr, "runWork.workMs", -1), 600000);
    CHECK_INT(tm_json_int(qr, "runWork.queuedPods", -1), 2);
    CHECK_INT(tm_json_int(qr, "runsQueued", -1), 1);
    CHECK_STR(tm_json_str(qr, "order", "?"), "critical-path");
    char *text = doc ? sched_explain_text(doc) : NULL;
    CHECKF(text && strstr(text, "queue order: one workflow run queued, so the larger rank first") &&
               strstr(text, "run b: 2 queued task(s), expected runtimes 600.0 s in all, longest "
                            "tail 50.0 s"),
           "%s", text ? text : "(null)");
    free(text);
    json_decref(doc);
    view(&w, p, 3, 100001); /* run "s" joins */
    doc = sched_explain(w.fw, w.s, p[0], 100001, &err);
    qr = json_object_get(json_object_get(doc, "task"), "queueRank");
    CHECK_INT(tm_json_int(qr, "runsQueued", -1), 2);
    CHECK_STR(tm_json_str(qr, "order", "?"), "shortest-runtime");
    text = doc ? sched_explain_text(doc) : NULL;
    CHECKF(text && strstr(text, "queue order: 2 workflow runs queued, so the shortest expected "
                                "runtime first"),
           "%s", text ? text : "(null)");
    free(text);
    json_decref(doc);
    /* a run the view did not see */
    sched_pod *o = pod_of("x", "small", "ONE", "other", 0);
    doc = sched_explain(w.fw, w.s, o, 100000, &err);
    qr = json_object_get(json_object_get(doc, "task"), "queueRank");
    CHECK(json_is_null(json_object_get(qr, "runWork")));
    text = doc ? sched_explain_text(doc) : NULL;
    CHECKF(text && strstr(text, "run other: not seen queued"), "%s", text ? text : "(null)");
    free(text);
    json_decref(doc);
    sched_pod_free(o);
    for (int i = 0; i < 3; i++)
        sched_pod_free(p[i]);
    world_free(&w);
}

/* The run from the pod's labels: Nextflow's nextflow.io/runName, else tarema.io/run, else "". */
static void test_run_label(void) {
    sched_snapshot *s = sched_snapshot_new();
    sched_keys keys = sched_keys_default();
    static const char *const cases[][2] = {
        {"{\"nextflow.io/runName\":\"happy_turing\",\"tarema.io/run\":\"r2\"}", "happy_turing"},
        {"{\"tarema.io/run\":\"r2\"}", "r2"},
        {"{\"app\":\"x\"}", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[512];
        snprintf(buf, sizeof buf,
                 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u\",\"labels\":%s},"
                 "\"spec\":{\"containers\":[]}}",
                 cases[i][0]);
        json_t *j = json_loads(buf, 0, NULL);
        tm_err err = {{0}, 0};
        sched_pod *p = j ? sched_pod_from_json(s, j, &keys, &err) : NULL;
        CHECKF(p != NULL, "%s", err.msg);
        if (p)
            CHECK_STR(p->run, cases[i][1]);
        sched_pod_free(p);
        json_decref(j);
    }
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_runs_compete_shortest_first);
    RUN(test_critical_path_within_run);
    RUN(test_no_run_label);
    RUN(test_live_queue_reorders);
    RUN(test_explain);
    RUN(test_run_label);
    return TEST_SUMMARY();
}
