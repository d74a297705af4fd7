/* adaptive_tail_test.c: the workflow's critical path live (issue 16): the scheduler reads
 * TaskProfile status.tailSeconds into the task table's tail_ms (podspec.h), a bad value warned
 * and ignored, the adaptive queue ranks by runtime + tail, and explain shows the rank's parts. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "scheduler/cmd/explain.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/backend/queue.h"

#define GI (1024LL * 1024 * 1024)

/* A TaskProfile of process proc with a mean runtime and the status fields in extra. */
static int parse(const char *proc, int runtime_s, const char *extra, sched_task_profile *tp,
                 tm_err *warn) {
    char buf[2048];
    snprintf(
        buf, sizeof buf,
        "{\"metadata\":{\"name\":\"tp-%s\"},\"spec\":{\"workflow\":\"wf\",\"process\":\"%s\"},"
        "\"status\":{\"labels\":{\"cpu\":1,\"mem\":1,\"io\":1},\"mean\":{\"realtimeMs\":%d}%s}}",
        proc, proc, runtime_s * 1000, extra);
    json_error_t e;
    json_t *j = json_loads(buf, 0, &e);
    if (!j) {
        printf("    bad JSON in test: %s\n", e.text);
        return -1;
    }
    const char *wf, *p;
    tm_err err = {{0}, 0};
    int rc = sched_task_profile_from_json_warn(j, &wf, &p, tp, warn, &err);
    json_decref(j);
    return rc;
}

static void test_read_tail(void) {
    sched_task_profile tp;
    tm_err warn = {{0}, 0};
    CHECK_INT(parse("A", 80, ",\"tailSeconds\":1234.5678,\"tailRuns\":3", &tp, &warn), 0);
    CHECK_INT((int)tp.tail_ms, 1234568);
    CHECK_STR(warn.msg, "");
    CHECK_INT(parse("A", 80, ",\"tailSeconds\":0", &tp, &warn), 0); /* the last process */
    CHECK_INT((int)tp.tail_ms, 0);
    CHECK_STR(warn.msg, "");
    CHECK_INT(parse("A", 80, "", &tp, &warn), 0); /* no complete run yet */
    CHECK_INT((int)tp.tail_ms, 0);
    CHECK_STR(warn.msg, "");
    static const char *const bad[][2] = {
        {",\"tailSeconds\":\"600\"", "tailSeconds is not a number"},
        {",\"tailSeconds\":-1", "tailSeconds is not a number between 0 and a year"},
        {",\"tailSeconds\":1e300", "tailSeconds is not a number between 0 and a year"},
        {",\"tailSeconds\":600,\"tailRuns\":0", "tailRuns is not an integer >= 1"},
        {",\"tailSeconds\":600,\"tailRuns\":1.5", "tailRuns is not an integer >= 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tm_err_clear(&warn);
        CHECK_INT(parse("A", 80, bad[i][0], &tp, &warn), 0);
        CHECKF(strstr(warn.msg, "TaskProfile tp-A: status.") && strstr(warn.msg, bad[i][1]) &&
                   strstr(warn.msg, "tail ignored"),
               "%s: %s", bad[i][0], warn.msg);
        CHECK_INT((int)tp.tail_ms, 0);
        CHECK_INT(tp.labels[0], 1); /* the rest of the profile still counts */
        CHECK_INT((int)tp.expected_runtime_ms, 80000);
    }
    /* a bad runtimeByGroup entry and a bad tail: both named */
    tm_err_clear(&warn);
    CHECK_INT(parse("A", 80, ",\"runtimeByGroup\":[7],\"tailSeconds\":-5", &tp, &warn), 0);
    CHECKF(strstr(warn.msg, "runtimeByGroup[0] is not an object") &&
               strstr(warn.msg, "tailSeconds is not a number"),
           "%s", warn.msg);
}

static void add_node(sched_snapshot *s, const char *name) {
    sched_node *n = sched_node_new(name);
    n->ready = true;
    n->allocatable.v[SCHED_RES_CPU] = 4000;
    n->allocatable.v[SCHED_RES_MEMORY] = 32 * GI;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    sched_node_set_label(n, "tarema.io/cpu", "1");
    sched_node_set_label(n, "tarema.io/mem", "1");
    sched_node_set_label(n, "tarema.io/io", "1");
    sched_node_set_label(n, "tarema.io/group", "1");
    tm_err err;
    if (sched_snapshot_put_node(s, n, &err) != 0)
        printf("    put_node: %s\n", err.msg);
}

static sched_pod *pod_of(const char *name, const char *proc, int64_t created_ms) {
    sched_pod *p = sched_pod_new("ns", name, name);
    free(p->workflow);
    free(p->process);
    p->workflow = strdup("wf");
    p->process = strdup(proc);
    p->requests.v[SCHED_RES_CPU] = 1000;
    p->requests.v[SCHED_RES_MEMORY] = GI;
    p->requests.v[SCHED_RES_PODS] = 1;
    p->created_ms = created_ms;
    return p;
}

/* EARLY runs 100 s with 900 s of its workflow run after it; LATE runs 300 s and ends the run.
 * By runtime alone LATE would go first (300 > 100); with the tails read from the TaskProfiles
 * EARLY ranks 1000 s against 300 s and goes first, and explain shows both parts. */
static void test_queue_and_explain(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n-0");
    sched_task_profile early, late;
    tm_err warn = {{0}, 0}, err = {{0}, 0};
    CHECK_INT(parse("EARLY", 100, ",\"tailSeconds\":900,\"tailRuns\":2", &early, &warn), 0);
    CHECK_INT(parse("LATE", 300, ",\"tailSeconds\":0,\"tailRuns\":2", &late, &warn), 0);
    CHECK_INT(sched_snapshot_set_task(s, "wf", "EARLY", &early, &err), 0);
    CHECK_INT(sched_snapshot_set_task(s, "wf", "LATE", &late, &err), 0);
    CHECK_INT((int)sched_adaptive_rank_ms(&early), 1000000);
    CHECK_INT((int)sched_adaptive_rank_ms(&late), 300000);
    sched_pod *pe = pod_of("early", "EARLY", 2000), *pl = pod_of("late", "LATE", 1000);
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECKF(fw && sched_framework_queue_cmp(fw, s, pe, pl) < 0, "%s", err.msg);
    CHECK(fw && sched_framework_queue_cmp(fw, s, pl, pe) > 0);
    json_t *doc = fw ? sched_explain(fw, s, pe, 0, &err) : NULL;
    CHECKF(doc != NULL, "%s", err.msg);
    const json_t *qr = json_object_get(json_object_get(doc, "task"), "queueRank");
    CHECK_INT(tm_json_int(qr, "rankMs", -1), 1000000);
    CHECK_INT(tm_json_int(qr, "runtimeMs", -1), 100000);
    CHECK_INT(tm_json_int(qr, "tailMs", -1), 900000);
    char *text = doc ? sched_explain_text(doc) : NULL;
    CHECKF(text && strstr(text, "queue rank 1000.0 s = expected runtime 100.0 s + tail 900.0 s"),
           "%s", text ? text : "(null)");
    free(text);
    json_decref(doc);
    /* tarema's queue knows no rank: no queueRank */
    sched_framework *ta = sched_policy_new("tarema", &err);
    doc = ta ? sched_explain(ta, s, pe, 0, &err) : NULL;
    CHECK(doc && !json_object_get(json_object_get(doc, "task"), "queueRank"));
    json_decref(doc);
    sched_framework_free(ta);
    sched_framework_free(fw);
    sched_pod_free(pe);
    sched_pod_free(pl);
    sched_snapshot_free(s);
}

typedef struct qctx {
    sched_framework *fw;
    sched_snapshot *s;
} qctx;

static int qcmp(void *ud, const sched_pod *a, const sched_pod *b) {
    const qctx *c = ud;
    return sched_framework_queue_cmp(c->fw, c->s, a, b);
}

/* The live scheduler queues pods as their watch delivers them, often before the TaskProfiles
 * (at start-up, or a workflow's first pods): queued without a tail, LATE (created first) heads
 * the heap. Once the profiles are known, sched_queue_reorder puts EARLY first (before, the heap
 * kept the stale order and the live e2e bound PLOTPROFILE first). */
static void test_queue_reorder(void) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {{0}, 0}, warn = {{0}, 0};
    qctx c = {sched_policy_new("adaptive", &err), s};
    sched_queue *q = sched_queue_new(qcmp, &c, 1000, 10000);
    CHECK(c.fw && q);
    if (!c.fw || !q)
        return;
    CHECK_INT(sched_queue_add(q, pod_of("late", "LATE", 1000), 0), 0);
    CHECK_INT(sched_queue_add(q, pod_of("early", "EARLY", 2000), 0), 0);
    sched_task_profile early, late;
    CHECK_INT(parse("EARLY", 100, ",\"tailSeconds\":900,\"tailRuns\":2", &early, &warn), 0);
    CHECK_INT(parse("LATE", 300, ",\"tailSeconds\":0,\"tailRuns\":2", &late, &warn), 0);
    CHECK_INT(sched_snapshot_set_task(s, "wf", "EARLY", &early, &err), 0);
    CHECK_INT(sched_snapshot_set_task(s, "wf", "LATE", &late, &err), 0);
    sched_queue_reorder(q);
    sched_pod *first = sched_queue_pop(q, 0);
    CHECKF(first && strcmp(first->name, "early") == 0, "first: %s", first ? first->name : "none");
    sched_queue_free(q);
    sched_framework_free(c.fw);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_queue_reorder);
    RUN(test_read_tail);
    RUN(test_queue_and_explain);
    return TEST_SUMMARY();
}
