/* asa_queue_age_test.c: issue 18, ASA's pro-active submission in tarema-scheduler's queue
 * (queue.h "queue age", scheduling_gates.h): a pod gated by the planner's order gate alone is
 * held: never popped nor taken, but its age counts from when it was first seen so; when the
 * order gate goes it is placed ahead of every pod that arrived after that moment. A pod ungated
 * late (any other gate: on-completion, reserve, a user's gate) queues from its ungating, behind
 * the pods that arrived meanwhile. Real pods (JSON with creationTimestamp) and the queue-sort of
 * the tarema policy, with the scheduler's hooks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "planner/modes.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/backend/queue.h"
#include "scheduler/plugins/scheduling_gates.h"

#define PLANNED "{\"name\":\"tarema.io/planned\"}"
#define ORDER   "{\"name\":\"tarema.io/after-predecessors\"}"

typedef struct world {
    sched_snapshot *s;
    sched_framework *fw;
    sched_queue *q;
} world;

/* A pod created at created_s (seconds since the epoch, as creationTimestamp) with these gates
 * (a JSON array body, "" for none). */
static sched_pod *pod(world *w, const char *name, long created_s, const char *gates) {
    char ts[32], buf[1024];
    time_t t = (time_t)created_s;
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\","
             "\"creationTimestamp\":\"%s\"},\"spec\":{\"schedulerName\":\"tarema\","
             "\"schedulingGates\":[%s],\"containers\":[{\"name\":\"c\",\"resources\":"
             "{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}",
             name, name, ts, gates);
    json_error_t je;
    json_t *j = json_loads(buf, 0, &je);
    CHECKF(j != NULL, "%s", je.text);
    tm_err err = {0};
    sched_pod *p = sched_pod_from_json(w->s, j, NULL, &err);
    CHECKF(p != NULL, "%s", err.msg);
    json_decref(j);
    return p;
}

static bool gate_hook(void *ud, const sched_pod *p) {
    (void)ud;
    return sched_scheduling_gated(p, NULL, 0);
}

static bool held_hook(void *ud, const sched_pod *p) {
    (void)ud;
    return sched_scheduling_held(p);
}

static int cmp(void *ud, const sched_pod *a, const sched_pod *b) {
    world *w = ud;
    return sched_framework_queue_cmp(w->fw, w->s, a, b);
}

/* The queue as tarema-scheduler sets it up, its now_ms in wall milliseconds. */
static void world_init(world *w) {
    tm_err err = {0};
    w->s = sched_snapshot_new();
    w->fw = sched_policy_new("tarema", &err);
    CHECKF(w->fw != NULL, "%s", err.msg);
    w->q = sched_queue_new(cmp, w, 1000, 8000);
    sched_queue_set_gate(w->q, gate_hook, w);
    sched_queue_set_held(w->q, held_hook, w);
}

static void world_free(world *w) {
    sched_queue_free(w->q);
    sched_framework_free(w->fw);
    sched_snapshot_free(w->s);
}

static void add(world *w, sched_pod *p, long at_s) {
    CHECK_INT(sched_queue_add(w->q, p, (int64_t)at_s * 1000), 0);
}

/* Pops every ready pod at at_s and checks their order. */
static void pops(world *w, long at_s, const char *const *want, int n) {
    for (int i = 0; i < n; i++) {
        sched_pod *p = sched_queue_pop(w->q, (int64_t)at_s * 1000);
        CHECKF(p && strcmp(p->uid, want[i]) == 0, "pop %d: %s, want %s", i, p ? p->uid : "none",
               want[i]);
    }
    CHECK(sched_queue_pop(w->q, (int64_t)at_s * 1000) == NULL);
}

/* The proactive step: created with both gates at 1000, the planner's gate removed at 1010
 * (ungateAt), the order gate at 1030 (predecessors succeeded). x arrived at 1005, y at 1020:
 * the step's pod goes after x and before y. Before the rule it went first (creation 1000). */
static void test_held_pod_ages_from_ungate_at(void) {
    world w;
    world_init(&w);
    add(&w, pod(&w, "step", 1000, PLANNED "," ORDER), 1000);
    CHECK_INT(sched_queue_since(w.q, "step"), 0); /* not queued yet */
    add(&w, pod(&w, "x", 1005, ""), 1005);
    add(&w, pod(&w, "step", 1000, ORDER), 1010);
    CHECK_INT(sched_queue_state(w.q, "step"), SCHED_Q_GATED); /* held: still gated */
    CHECK_INT(sched_queue_since(w.q, "step"), 1010000);
    CHECK(sched_queue_take(w.q, "step") == NULL); /* a gang cycle cannot take it either */
    add(&w, pod(&w, "y", 1020, ""), 1020);
    /* the order gate goes: active at once, no backoff, ahead of y */
    add(&w, pod(&w, "step", 1000, ""), 1030);
    CHECK_INT(sched_queue_state(w.q, "step"), SCHED_Q_ACTIVE);
    CHECK_INT(sched_queue_since(w.q, "step"), 1010000);
    const char *want[] = {"x", "step", "y"};
    pops(&w, 1030, want, 3);
    world_free(&w);
}

/* A held pod is never tried, whatever the cluster does, and the SchedulingGates plugin still
 * refuses it at PreEnqueue, saying it is queued. */
static void test_held_pod_never_popped(void) {
    world w;
    world_init(&w);
    add(&w, pod(&w, "step", 1000, ORDER), 1000);
    CHECK_INT(sched_queue_since(w.q, "step"), 1000000);
    for (long t = 1000; t < 2000; t += 100) {
        sched_queue_move_all(w.q, t * 1000);
        sched_queue_flush_unschedulable(w.q, t * 1000, 0);
        CHECK(sched_queue_pop(w.q, t * 1000) == NULL);
    }
    const sched_pod *p = sched_queue_get(w.q, "step");
    char msg[512] = "";
    CHECK_INT(sched_framework_pre_enqueue(w.fw, w.s, p, 0, msg, sizeof msg), SCHED_STATUS_GATED);
    CHECKF(strstr(msg, "tarema.io/after-predecessors (queued") != NULL, "%s", msg);
    CHECK(sched_scheduling_held(p));
    world_free(&w);
}

/* Any other gate (on-completion's and reserve's tarema.io/planned, a user's gate, or the order
 * gate next to another one): the pod joins when its last gate goes, behind the pods that
 * arrived meanwhile. Before the rule it went first (creation 1000). */
static void test_other_gates_age_from_ungating(void) {
    world w;
    world_init(&w);
    add(&w, pod(&w, "late", 1000, PLANNED), 1000);
    add(&w, pod(&w, "both", 1000, ORDER ",{\"name\":\"x.io/b\"}"), 1000);
    add(&w, pod(&w, "x", 1005, ""), 1005);
    add(&w, pod(&w, "y", 1020, ""), 1020);
    add(&w, pod(&w, "late", 1000, ""), 1030);
    add(&w, pod(&w, "both", 1000, ""), 1031);
    CHECK_INT(sched_queue_since(w.q, "late"), 1030000);
    const char *want[] = {"x", "y", "late", "both"};
    pops(&w, 1031, want, 4);
    world_free(&w);
}

/* A pod never gated keeps its creation as its age; the joining time is set once: later updates
 * (an annotation, a failed attempt) do not move it, and a held pod that fails once keeps it. */
static void test_since_set_once(void) {
    world w;
    world_init(&w);
    add(&w, pod(&w, "plain", 900, ""), 1000);
    CHECK_INT(sched_queue_since(w.q, "plain"), 900000);
    add(&w, pod(&w, "plain", 900, ""), 1100);
    CHECK_INT(sched_queue_since(w.q, "plain"), 900000);
    add(&w, pod(&w, "step", 1000, ORDER), 1010);
    add(&w, pod(&w, "step", 1000, ORDER), 1020); /* resync or another update */
    add(&w, pod(&w, "step", 1000, ""), 1030);
    CHECK_INT(sched_queue_since(w.q, "step"), 1010000);
    const char *want[] = {"plain", "step"};
    pops(&w, 1030, want, 2);
    CHECK_INT(sched_queue_unschedulable(w.q, "step", 1030000), 0);
    add(&w, pod(&w, "step", 1000, ""), 1040);
    CHECK_INT(sched_queue_since(w.q, "step"), 1010000);
    CHECK_INT(sched_queue_get(w.q, "step")->created_ms, 1010000);
    world_free(&w);
}

/* Without the held hook (the simulator, the extender) no gated pod counts as queued; the wall
 * offset maps the loop's monotonic now_ms to wall time. */
static void test_no_hook_and_offset(void) {
    world w;
    world_init(&w);
    sched_queue_set_held(w.q, NULL, NULL);
    sched_queue_set_wall_offset(w.q, 1000000);
    add(&w, pod(&w, "step", 1000, ORDER), 5);
    CHECK_INT(sched_queue_since(w.q, "step"), 0);
    add(&w, pod(&w, "step", 1000, ""), 10);
    CHECK_INT(sched_queue_since(w.q, "step"), 1010000);
    world_free(&w);
}

/* The scheduler's order gate is the planner's. */
static void test_same_gate_name(void) {
    CHECK_STR(SCHED_ORDER_GATE, PL_GATE_ORDER);
}

int main(void) {
    RUN(test_held_pod_ages_from_ungate_at);
    RUN(test_held_pod_never_popped);
    RUN(test_other_gates_age_from_ungating);
    RUN(test_since_set_once);
    RUN(test_no_hook_and_offset);
    RUN(test_same_gate_name);
    return TEST_SUMMARY();
}
