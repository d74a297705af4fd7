/* scheduler_release_hint_test.c: which waiting pods a release of capacity can help
 * (scheduler/live/release_hint.h): a pod that fits on the node now, the pods nominated there
 * counted when they come first; the node its own preemption nominated it to; a preempting pod
 * when a pod it could not evict went; nothing else, a node gone included. */
#include <stdlib.h>

#include "harness.h"
#include "scheduler/backend/nominated.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/live/release_hint.h"

static void add_node(sched_snapshot *s, const char *name) {
    char text[256];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{\"cpu\":\"4\","
             "\"memory\":\"8Gi\",\"pods\":\"10\"},\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"True\"}]}}",
             name);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    tm_err err = {0};
    sched_node *n = sched_node_from_json(s, j, &err);
    CHECK(n && sched_snapshot_put_node(s, n, &err) == 0);
    json_decref(j);
}

static sched_pod *pod(const char *uid, int64_t mcpu, int32_t prio, bool never) {
    sched_pod *p = sched_pod_new("ns", uid, uid);
    p->requests.v[SCHED_RES_CPU] = mcpu;
    p->requests.v[SCHED_RES_PODS] = 1;
    p->priority = prio;
    p->preempt_never = never;
    return p;
}

static bool helps(const sched_snapshot *s, const char *node, int32_t prio, const sched_pod *p) {
    sched_release r = {(char *)node, prio};
    sched_release_hint *h = sched_release_hint_new(s, &r, 1);
    CHECK(h != NULL);
    bool yes = h && sched_release_hint_helps(h, p);
    sched_release_hint_free(h);
    return yes;
}

static void test_release_hint(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1");
    add_node(s, "n2");
    sched_nominated *t = sched_nominated_new();
    sched_snapshot_set_nominated(s, t);
    tm_err err = {0};
    sched_resources busy = {0};
    busy.v[SCHED_RES_CPU] = 3000;
    busy.v[SCHED_RES_PODS] = 1;
    CHECK(sched_snapshot_add_pod(s, "busy", "n1", &busy, &err) == 0); /* n1: 1 cpu left */
    sched_pod *nom = pod("nom", 3000, 100, false);                    /* n2 is held for it */
    CHECK(sched_nominated_set_pod(t, nom, "n2", &err) == 0);
    sched_pod *a = pod("a", 2000, 100, false), *never = pod("never", 2000, 100, true);
    sched_pod *low = pod("low", 2000, 50, false), *high = pod("high", 2000, 200, false);
    /* n2 released capacity, but the pod nominated there comes first for a, never and low */
    CHECK(!helps(s, "n2", 0, a));
    CHECK(!helps(s, "n2", 0, never));
    CHECK(!helps(s, "n2", 0, low));
    /* a pod of higher priority than the nominee does not count it: it fits */
    CHECK(helps(s, "n2", 0, high));
    /* the nominee itself: its own node */
    CHECK(helps(s, "n2", 0, nom));
    /* n1 still too full: only a pod that may preempt and sees a pod it could not evict leave */
    CHECK(!helps(s, "n1", 0, a));
    CHECK(helps(s, "n1", 100, a));
    CHECK(!helps(s, "n1", 100, never));
    CHECK(!helps(s, "n1", 99, a));
    /* busy gone from n1: every 2-cpu pod fits there */
    CHECK(sched_snapshot_remove_pod(s, "busy") == 0);
    CHECK(helps(s, "n1", 0, a));
    CHECK(helps(s, "n1", 0, never));
    CHECK(helps(s, "n1", 0, low));
    /* a node that is gone helps nobody who cannot preempt */
    CHECK(!helps(s, "ghost", 0, never));
    sched_pod *ps[] = {nom, a, never, low, high};
    for (size_t i = 0; i < 5; i++)
        sched_pod_free(ps[i]);
    sched_snapshot_set_nominated(s, NULL);
    sched_nominated_free(t);
    sched_snapshot_free(s);
}

/* A nomination that ends, or moves, frees its node as a pod leaving does: the table says where
 * and at which priority (the loop feeds it to the same requeue). */
typedef struct ended {
    int n;
    char node[32], uid[32];
    int32_t prio;
} ended;

static void on_end(void *ud, const char *uid, const char *node, int32_t prio) {
    ended *e = ud;
    e->n++;
    snprintf(e->uid, sizeof e->uid, "%s", uid);
    snprintf(e->node, sizeof e->node, "%s", node);
    e->prio = prio;
}

static void test_nomination_end_frees_its_node(void) {
    sched_nominated *t = sched_nominated_new();
    ended e = {0};
    sched_nominated_on_end(t, on_end, &e);
    tm_err err = {0};
    sched_pod *p = pod("p", 1000, 42, false);
    CHECK(sched_nominated_set_pod(t, p, "n1", &err) == 0);
    CHECK(sched_nominated_set_pod(t, p, "n1", &err) == 0); /* the same node again: nothing ends */
    CHECK_INT(e.n, 0);
    CHECK(sched_nominated_set_pod(t, p, "n2", &err) == 0); /* moved: n1 is free */
    CHECK_INT(e.n, 1);
    CHECK_STR(e.node, "n1");
    CHECK_STR(e.uid, "p");
    CHECK_INT(e.prio, 42);
    CHECK(sched_nominated_remove(t, "p") == 0);
    CHECK_INT(e.n, 2);
    CHECK_STR(e.node, "n2");
    CHECK(sched_nominated_remove(t, "p") == -1); /* none left: nothing more */
    CHECK_INT(e.n, 2);
    sched_pod_free(p);
    sched_nominated_free(t);
}

int main(void) {
    RUN(test_release_hint);
    RUN(test_nomination_end_frees_its_node);
    return TEST_SUMMARY();
}
