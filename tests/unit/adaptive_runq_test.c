/* adaptive_runq_test.c: adaptive's run-aware queue (issue 16). Across workflow runs the run
 * with the least remaining work x expected makespan goes first; within a run the critical path
 * (rank = runtime + tail); pods without a run keep the rank order. The live queue re-sorts when
 * a run's work shrinks (sched_queue_view), explain shows the run and its remaining work, and
 * the run is read from the pod's labels. */
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
    /* wf "big": MAP 300 s per sample, then 50 s; wf "small": ONE 100 s, the end */
    profile(w.s, "big", "MAP", 300, 50);
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

/* Run "b" has three samples of 300 s queued (remaining 950 s), run "s" one task of 100 s
 * (remaining 100 s). Today's rank order puts every MAP (rank 350 s) before ONE (100 s); the run
 * order puts the short run first. Both started at 0, so the makespan weight keeps the order. */
static void test_short_run_first(void) {
    world w = world_new();
    sched_pod *p[4] = {pod_of("b1", "big", "MAP", "b", 0), pod_of("b2", "big", "MAP", "b", 0),
                       pod_of("b3", "big", "MAP", "b", 0), pod_of("s1", "small", "ONE", "s", 0)};
    CHECK_INT(view(&w, p, 4, 0), 1); /* new runs: the order changed */
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[3], p[0]) < 0);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[0], p[3]) > 0);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[3], p[2]) < 0);
    const sched_adaptive_run *b = sched_adaptive_run_lookup(w.fw, "b");
    CHECK(b != NULL);
    if (b) {
        CHECK_INT((int)b->pods, 3);
        CHECK_INT((int)b->work_ms, 900000);
        CHECK_INT((int)b->tail_ms, 50000);
        CHECK_INT((int)b->remaining_ms, 950000);
        CHECK_INT((int)b->makespan_ms, 950000); /* age 0 */
    }
    CHECK_INT(view(&w, p, 4, 0), 0); /* nothing changed: no re-sort needed */
    for (int i = 0; i < 4; i++)
        sched_pod_free(p[i]);
    world_free(&w);
}

/* The weight: two runs with equal remaining work, one queued for 1,000 s already (expected
 * makespan 1,100 s) and one new (100 s): delaying the new one by the other's work costs more
 * of its makespan, so it goes first. */
static void test_makespan_weight(void) {
    world w = world_new();
    sched_pod *p[2] = {pod_of("old", "small", "ONE", "old", 1000),
                       pod_of("new", "small", "ONE", "new", 1000000)};
    sched_adaptive_run *t = NULL;
    size_t cap = 0;
    tm_err err = {{0}, 0};
    /* the old run was seen at 0 s in an earlier view: its age carries over */
    sched_adaptive_run prev[1] = {{.name = "old", .pods = 1, .first_ms = 1, .seen_ms = 900000}};
    CHECK_INT(sched_adaptive_run_work(w.s, (const sched_pod *const *)p, 2, 1000000, prev, 1, &t,
                                      &cap, &err),
              0);
    const sched_adaptive_run *o = NULL, *n = NULL;
    for (size_t i = 0; t && i < cap; i++) {
        if (t[i].name && strcmp(t[i].name, "old") == 0)
            o = &t[i];
        if (t[i].name && strcmp(t[i].name, "new") == 0)
            n = &t[i];
    }
    CHECK(o && n);
    if (o && n) {
        CHECK_INT((int)o->first_ms, 1);
        CHECK_INT((int)o->makespan_ms, 999999 + 100000);
        CHECK_INT((int)n->makespan_ms, 100000);
        CHECK(n->key < o->key);
    }
    /* fed back view after view, the table keeps its size (it doubled every view before) */
    for (int v = 0; v < 40 && t; v++) {
        sched_adaptive_run *t2 = NULL;
        size_t cap2 = 0;
        CHECK_INT(sched_adaptive_run_work(w.s, (const sched_pod *const *)p, 2, 1000000, t, cap, &t2,
                                          &cap2, &err),
                  0);
        for (size_t i = 0; i < cap; i++)
            free(t[i].name);
        free(t);
        t = t2;
        CHECKF(cap2 <= 16, "view %d: %zu slots for 2 runs", v, cap2);
        cap = cap2;
        if (cap2 > 16)
            break;
    }
    for (size_t i = 0; t && i < cap; i++)
        free(t[i].name);
    free(t);
    /* through the framework: a view at 1,000 s after one at 1 ms */
    CHECK_INT(view(&w, p, 1, 1), 1);
    CHECK_INT(view(&w, p, 2, 1000000), 1);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[1], p[0]) < 0);
    /* a run not queued for more than a day is forgotten */
    CHECK_INT(view(&w, p + 1, 1, 1000000 + 25LL * 3600 * 1000), 1);
    CHECK(sched_adaptive_run_lookup(w.fw, "old") == NULL);
    sched_pod_free(p[0]);
    sched_pod_free(p[1]);
    world_free(&w);
}

/* Within a run: the critical path first. EARLY (100 s, 900 s after it: rank 1,000 s) before
 * LATE (300 s, the end: rank 300 s), with or without a view. */
static void test_critical_path_within_run(void) {
    world w = world_new();
    sched_pod *p[2] = {pod_of("late", "chain", "LATE", "c", 0),
                       pod_of("early", "chain", "EARLY", "c", 5)};
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[1], p[0]) < 0);
    view(&w, p, 2, 10);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[1], p[0]) < 0);
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[0], p[1]) > 0);
    sched_pod_free(p[0]);
    sched_pod_free(p[1]);
    world_free(&w);
}

/* No run labels: one anonymous run, so the rank order of before (MAP 350 s before ONE 100 s,
 * although ONE's workflow is shorter), with or without a view. */
static void test_no_run_label(void) {
    world w = world_new();
    sched_pod *p[2] = {pod_of("s1", "small", "ONE", "", 0), pod_of("b1", "big", "MAP", "", 0)};
    CHECK(sched_framework_queue_cmp(w.fw, w.s, p[1], p[0]) < 0);
    view(&w, p, 2, 0);
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

/* The live queue: run "b" has one MAP queued (350 s), run "s" five ONEs (500 s), so b1 heads
 * the heap. Then four of s's pods go (bound or deleted): "s" has 100 s left against b's 350 s,
 * and the view after the change re-sorts the heap so that s1 pops first. Without the re-sort
 * the heap keeps b1 at its top; by the rank order alone b1 (350 s) would go first too. */
static void test_live_queue_reorders(void) {
    world w = world_new();
    sched_queue *q = sched_queue_new(qcmp, &w, 1000, 8000);
    CHECK_INT(sched_queue_add(q, pod_of("b1", "big", "MAP", "b", 0), 0), 0);
    const char *const s_pods[] = {"s1", "s2", "s3", "s4", "s5"};
    for (int i = 0; i < 5; i++)
        CHECK_INT(sched_queue_add(q, pod_of(s_pods[i], "small", "ONE", "s", 0), 0), 0);
    CHECK_INT(sched_queue_view(q, qview, &w), 1);
    for (int i = 1; i < 5; i++)
        CHECK_INT(sched_queue_remove(q, s_pods[i]), 0);
    CHECK_INT(sched_queue_view(q, qview, &w), 1);
    sched_pod *first = sched_queue_pop(q, 0);
    CHECKF(first && strcmp(first->name, "s1") == 0, "first: %s", first ? first->name : "none");
    first = sched_queue_pop(q, 0);
    CHECKF(first && strcmp(first->name, "b1") == 0, "second: %s", first ? first->name : "none");
    sched_queue_free(q);
    world_free(&w);
}

/* explain shows the run and its remaining work as the last view saw it. */
static void test_explain(void) {
    world w = world_new();
    sched_pod *p[2] = {pod_of("b1", "big", "MAP", "b", 1), pod_of("b2", "big", "MAP", "b", 1)};
    view(&w, p, 2, 100001); /* queued 100 s ago */
    tm_err err = {{0}, 0};
    json_t *doc = sched_explain(w.fw, w.s, p[0], 100001, &err);
    CHECKF(doc != NULL, "%s", err.msg);
    const json_t *qr = json_object_get(json_object_get(doc, "task"), "queueRank");
    CHECK_STR(tm_json_str(qr, "run", "?"), "b");
    CHECK_INT(tm_json_int(qr, "runWork.remainingMs", -1), 650000);
    CHECK_INT(tm_json_int(qr, "runWork.queuedPods", -1), 2);
    CHECK_INT(tm_json_int(qr, "runWork.makespanMs", -1), 750000);
    char *text = doc ? sched_explain_text(doc) : NULL;
    CHECKF(text &&
               strstr(text, "run b: 2 queued task(s), remaining work 650.0 s = their expected "
                            "runtimes 600.0 s + longest tail 50.0 s; expected makespan 750.0 s"),
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
    sched_pod_free(p[0]);
    sched_pod_free(p[1]);
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
    RUN(test_short_run_first);
    RUN(test_makespan_weight);
    RUN(test_critical_path_within_run);
    RUN(test_no_run_label);
    RUN(test_live_queue_reorders);
    RUN(test_explain);
    RUN(test_run_label);
    return TEST_SUMMARY();
}
