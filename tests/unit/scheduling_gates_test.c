/* scheduling_gates_test.c: spec.schedulingGates (issue 15's step pods carry tarema.io/planned):
 * the gates parsed from a pod, the SchedulingGates PreEnqueue plugin of every framework, and
 * the queue that never pops a gated pod, takes it to active at once (no backoff) when an update
 * removes the last gate, and leaves it alone on cluster changes and gang takes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/backend/queue.h"
#include "scheduler/plugins/scheduling_gates.h"

static sched_pod *pod_json(sched_snapshot *s, const char *name, const char *gates) {
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\"},"
             "\"spec\":{\"schedulerName\":\"tarema\",%s\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}",
             name, name, gates);
    json_error_t je;
    json_t *j = json_loads(buf, 0, &je);
    CHECKF(j != NULL, "%s", je.text);
    tm_err err = {0};
    sched_pod *p = sched_pod_from_json(s, j, NULL, &err);
    CHECKF(p != NULL, "%s", err.msg);
    json_decref(j);
    return p;
}

#define TWO_GATES "\"schedulingGates\":[{\"name\":\"tarema.io/planned\"},{\"name\":\"x.io/b\"}],"
#define ONE_GATE  "\"schedulingGates\":[{\"name\":\"tarema.io/planned\"}],"

typedef struct world {
    sched_snapshot *s;
    sched_framework *fw;
    int checks; /* gate hook calls */
} world;

/* The queue's gate hook as the framework's PreEnqueue: the plugin registered by
 * sched_framework_new decides. */
static bool fw_gate(void *ud, const sched_pod *p) {
    world *w = ud;
    char msg[512];
    w->checks++;
    return sched_framework_pre_enqueue(w->fw, w->s, p, 0, msg, sizeof msg) != SCHED_STATUS_OK;
}

static int fifo(void *ud, const sched_pod *a, const sched_pod *b) {
    (void)ud;
    return strcmp(a->uid, b->uid);
}

static void test_parse_and_plugin(void) {
    world w = {.s = sched_snapshot_new()};
    tm_err err = {0};
    w.fw = sched_policy_new("tarema", &err);
    CHECKF(w.fw != NULL, "%s", err.msg);
    sched_pod *g = pod_json(w.s, "g", TWO_GATES);
    sched_pod *f = pod_json(w.s, "f", "\"schedulingGates\":[],");
    sched_pod *n = pod_json(w.s, "n", "");
    CHECK_STR(g->scheduling_gates ? g->scheduling_gates : "(none)", "tarema.io/planned, x.io/b");
    CHECK(f->scheduling_gates == NULL);
    CHECK(n->scheduling_gates == NULL);
    char msg[512];
    CHECK_INT(sched_framework_pre_enqueue(w.fw, w.s, g, 0, msg, sizeof msg), SCHED_STATUS_GATED);
    CHECK_STR(msg, "SchedulingGates: waiting for scheduling gates: tarema.io/planned, x.io/b");
    CHECK_INT(sched_framework_pre_enqueue(w.fw, w.s, f, 0, msg, sizeof msg), SCHED_STATUS_OK);
    CHECK_INT(sched_framework_pre_enqueue(w.fw, w.s, n, 0, msg, sizeof msg), SCHED_STATUS_OK);
    sched_pod_free(g);
    sched_pod_free(f);
    sched_pod_free(n);
    sched_framework_free(w.fw);
    sched_snapshot_free(w.s);
}

/* A gated pod is never popped, whatever happens to the cluster; removing one gate of two keeps
 * it gated; removing the last one makes it the next pod popped, at the same instant. */
static void test_gated_never_popped_ungate_pops_now(void) {
    world w = {.s = sched_snapshot_new()};
    tm_err err = {0};
    w.fw = sched_policy_new("tarema", &err);
    sched_queue *q = sched_queue_new(fifo, NULL, 1000, 8000);
    sched_queue_set_gate(q, fw_gate, &w);
    CHECK_INT(sched_queue_add(q, pod_json(w.s, "a-gated", TWO_GATES), 0), 0);
    CHECK_INT(sched_queue_state(q, "a-gated"), SCHED_Q_GATED);
    CHECK_INT(sched_queue_count(q, SCHED_Q_GATED), 1);
    CHECK_INT(sched_queue_count(q, SCHED_Q_ACTIVE), 0);
    for (int64_t t = 0; t < 600000; t += 30000) {
        sched_queue_move_all(q, t);
        sched_queue_flush_unschedulable(q, t, 0);
        CHECK(sched_queue_pop(q, t) == NULL);
        CHECK(sched_queue_take(q, "a-gated") == NULL); /* a gang cycle cannot take it either */
    }
    /* another pod goes through meanwhile */
    CHECK_INT(sched_queue_add(q, pod_json(w.s, "b-free", ""), 1000), 0);
    sched_pod *p = sched_queue_pop(q, 1000);
    CHECK(p && strcmp(p->uid, "b-free") == 0);
    CHECK(sched_queue_pop(q, 1000) == NULL);
    /* one gate of two removed: still gated */
    CHECK_INT(sched_queue_add(q, pod_json(w.s, "a-gated", ONE_GATE), 2000), 0);
    CHECK_INT(sched_queue_state(q, "a-gated"), SCHED_Q_GATED);
    CHECK(sched_queue_pop(q, 2000) == NULL);
    /* the last gate removed: popped at once, no backoff, no attempt counted */
    CHECK_INT(sched_queue_add(q, pod_json(w.s, "a-gated", ""), 3000), 0);
    CHECK_INT(sched_queue_state(q, "a-gated"), SCHED_Q_ACTIVE);
    CHECK_INT(sched_queue_next_backoff_ms(q, 3000), -1);
    p = sched_queue_pop(q, 3000);
    CHECK(p && strcmp(p->uid, "a-gated") == 0);
    CHECK_INT(sched_queue_attempts(q, "a-gated"), 0);
    CHECK_INT(sched_queue_count(q, SCHED_Q_GATED), 0);
    CHECK(w.checks >= 4);
    sched_queue_free(q);
    sched_framework_free(w.fw);
    sched_snapshot_free(w.s);
}

/* A pod found gated at pop time (PreEnqueue after all) waits gated, without an attempt, and an
 * ungating update brings it back at once even after failures (no backoff). */
static void test_gate_in_flight(void) {
    sched_queue *q = sched_queue_new(fifo, NULL, 1000, 8000);
    sched_snapshot *s = sched_snapshot_new();
    CHECK_INT(sched_queue_add(q, pod_json(s, "a", ""), 0), 0); /* no hook: queued */
    CHECK(sched_queue_pop(q, 0) != NULL);
    CHECK_INT(sched_queue_unschedulable(q, "a", 0), 0);
    sched_queue_move_all(q, 5000);
    CHECK(sched_queue_pop(q, 5000) != NULL);
    CHECK_INT(sched_queue_gate(q, "a"), 0);
    CHECK_INT(sched_queue_state(q, "a"), SCHED_Q_GATED);
    CHECK_INT(sched_queue_attempts(q, "a"), 1);
    CHECK_INT(sched_queue_gate(q, "a"), -1); /* not in flight any more */
    sched_queue_move_all(q, 6000);
    CHECK(sched_queue_pop(q, 6000) == NULL);
    CHECK_INT(sched_queue_add(q, pod_json(s, "a", ""), 6001), 0);
    CHECK(sched_queue_pop(q, 6001) != NULL);
    CHECK_INT(sched_queue_remove(q, "a"), 0);
    CHECK_INT(sched_queue_count(q, SCHED_Q_NONE), 0);
    sched_queue_free(q);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_parse_and_plugin);
    RUN(test_gated_never_popped_ungate_pops_now);
    RUN(test_gate_in_flight);
    return TEST_SUMMARY();
}
