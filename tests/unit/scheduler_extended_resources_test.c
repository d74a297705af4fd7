/* scheduler_extended_resources_test.c: a cluster with many distinct extended resources (issue
 * 30), built the way the live informer builds the snapshot (node and pod JSON through the cache's
 * event path). No node ever drops out because other nodes advertise many device-plugin
 * resources; bound pods count for what they request; a pending pod that asks for a resource the
 * snapshot cannot track stays pending with a reason naming it, never bound as if it had not
 * asked; each untracked name is reported once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "scheduler/backend/cache.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"

/* How many extended resources one snapshot can track. */
#define EXT_SLOTS (SCHED_RES_MAX - SCHED_RES_FIRST_EXT)

static json_t *node_json(const char *name, const char *res, const char *amount) {
    json_t *n =
        json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{}, s:{s:{s:s, s:s, s:s}, s:[{s:s, "
                  "s:s}]}}",
                  "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
                  "kubernetes.io/hostname", name, "spec", "status", "allocatable", "cpu", "4",
                  "memory", "8Gi", "pods", "110", "conditions", "type", "Ready", "status", "True");
    if (res)
        json_object_set_new(tm_json_path(n, "status.allocatable"), res, json_string(amount));
    return n;
}

/* A pod requesting 1 cpu and, when res is set, amount of res; bound to node when set. */
static json_t *pod_json(const char *uid, const char *sched, const char *node, const char *res,
                        const char *amount) {
    json_t *p =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s}}}]}, "
                  "s:{s:s}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", uid, "namespace", "ns",
                  "uid", uid, "creationTimestamp", "2024-01-01T00:00:00Z", "spec", "schedulerName",
                  sched, "containers", "name", "c", "image", "x", "resources", "requests", "cpu",
                  "1", "status", "phase", node ? "Running" : "Pending");
    if (res) {
        json_t *req = tm_json_path(json_array_get(tm_json_path(p, "spec.containers"), 0),
                                   "resources.requests");
        json_object_set_new(req, res, json_string(amount));
    }
    if (node)
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
    return p;
}

static sched_cache *new_cache(void) {
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema", NULL, NULL, NULL, &err);
    CHECK(c != NULL);
    return c;
}

/* n nodes "n00".., node i advertising 4 of "example.com/rNN" (NN = i) through the informer. */
static void add_nodes(sched_cache *c, int n) {
    for (int i = 0; i < n; i++) {
        char name[16], res[32];
        snprintf(name, sizeof name, "n%02d", i);
        snprintf(res, sizeof res, "example.com/r%02d", i);
        json_t *j = node_json(name, res, "4");
        tm_err err = {0};
        int rc = sched_cache_node_event(c, TM_WATCH_ADDED, j, NULL, &err);
        if (rc != 0)
            fprintf(stderr, "    node %s: %s\n", name, err.msg);
        CHECK_INT(rc, 0);
        json_decref(j);
    }
}

static void bind_foreign(sched_cache *c, const char *uid, const char *node, const char *res,
                         const char *amount) {
    json_t *j = pod_json(uid, "default-scheduler", node, res, amount);
    tm_err err = {0};
    int rc = sched_cache_pod_event(c, TM_WATCH_ADDED, j, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "    pod %s: %s\n", uid, err.msg);
    CHECK_INT(rc, 0);
    json_decref(j);
}

static int64_t requested(sched_cache *c, const char *node, const char *res) {
    sched_snapshot *s = sched_cache_snapshot(c);
    const sched_node *n = sched_snapshot_node_by_name(s, node);
    if (!n)
        return -1;
    for (int r = 0; r < sched_snapshot_resource_count(s); r++)
        if (strcmp(sched_snapshot_resource_name(s, r), res) == 0)
            return n->requested.v[r];
    return -2;
}

/* Schedules a pending pod of ours asking for amount of res; returns the chosen node's name or
 * "" with the FailedScheduling message in msg. */
static const char *schedule(sched_cache *c, const char *uid, const char *res, const char *amount,
                            char *msg, size_t size) {
    static char chosen[32];
    tm_err err = {0};
    sched_snapshot *s = sched_cache_snapshot(c);
    json_t *pj = pod_json(uid, "tarema", NULL, res, amount);
    sched_pod *p = sched_pod_from_json(s, pj, NULL, &err);
    json_decref(pj);
    if (!p) {
        snprintf(msg, size, "not parsed: %s", err.msg);
        return "";
    }
    sched_framework *fw = sched_policy_new("fair", &err);
    CHECK(fw != NULL);
    sched_decision d;
    CHECK_INT(sched_framework_schedule(fw, s, p, 0, &d, &err), 0);
    snprintf(chosen, sizeof chosen, "%s", d.node >= 0 ? d.node_name : "");
    sched_framework_fit_message(fw, s, msg, size);
    sched_framework_free(fw);
    sched_pod_free(p);
    return chosen;
}

/* 20 distinct extended resources (more than 16 slots minus the 4 fixed ones once allowed):
 * every node is in the snapshot and every resource is scheduled on. */
static void test_twenty_resources(void) {
    sched_cache *c = new_cache();
    add_nodes(c, 20);
    sched_snapshot *s = sched_cache_snapshot(c);
    CHECK_INT((int)sched_snapshot_node_count(s), 20);
    CHECK(sched_snapshot_node_by_name(s, "n19") != NULL);
    bind_foreign(c, "other", "n19", "example.com/r19", "3");
    CHECK_INT(requested(c, "n19", "example.com/r19"), 3);
    char msg[1200];
    /* 3 more of r19 do not fit beside the 3 in use on the only node that has it */
    CHECK_STR(schedule(c, "p1", "example.com/r19", "3", msg, sizeof msg), "");
    CHECK(strstr(msg, "Insufficient example.com/r19") != NULL);
    CHECK_STR(schedule(c, "p2", "example.com/r19", "1", msg, sizeof msg), "n19");
    CHECK_STR(schedule(c, "p3", "example.com/r17", "4", msg, sizeof msg), "n17");
    sched_cache_free(c);
}

/* Past the limit: EXT_SLOTS + 5 distinct names. Nodes all kept with cpu counted, a bound pod
 * of another scheduler asking for an untracked resource still counts its cpu, a pending pod
 * asking for one stays pending with a reason naming the resource and the limit, a zero request
 * of one is no request; each untracked name is reported once. */
static void test_past_the_limit(void) {
    int n = EXT_SLOTS + 5;
    sched_cache *c = new_cache();
    add_nodes(c, n);
    sched_snapshot *s = sched_cache_snapshot(c);
    CHECK_INT((int)sched_snapshot_node_count(s), n);
    char last[16], last_res[32], want[160];
    snprintf(last, sizeof last, "n%02d", n - 1);
    snprintf(last_res, sizeof last_res, "example.com/r%02d", n - 1);
    bind_foreign(c, "other", last, last_res, "2");
    CHECK_INT(requested(c, last, "cpu"), 1000);
    CHECK_INT(requested(c, last, last_res), -2); /* no slot */
    char msg[1200];
    CHECK_STR(schedule(c, "p1", last_res, "1", msg, sizeof msg), "");
    snprintf(want, sizeof want,
             "%d/%d nodes are available: %d tarema tracks at most %d distinct extended "
             "resources; %s is not tracked.",
             0, n, n, EXT_SLOTS, last_res);
    CHECK_STR(msg, want);
    /* a request of 0 asks for nothing (as kube-scheduler skips zero scalar requests) */
    CHECK(schedule(c, "p2", last_res, "0", msg, sizeof msg)[0] != '\0');
    /* a tracked one still schedules, also in a slot past the 32 bits of the filter's detail */
    CHECK_STR(schedule(c, "p3", "example.com/r00", "4", msg, sizeof msg), "n00");
    char high_node[16], high_res[32];
    snprintf(high_node, sizeof high_node, "n%02d", EXT_SLOTS - 1);
    snprintf(high_res, sizeof high_res, "example.com/r%02d", EXT_SLOTS - 1);
    CHECK_STR(schedule(c, "p4", high_res, "3", msg, sizeof msg), high_node);
    CHECK_STR(schedule(c, "p5", high_res, "5", msg, sizeof msg), "");
    snprintf(want, sizeof want, "0/%d nodes are available: %d Insufficient %s.", n, n, high_res);
    CHECK_STR(msg, want);
    /* preemption cannot give a slot: the rejection is unresolvable */
    CHECK(!sched_filter_resolvable(SCHED_FILTER_RESOURCES, SCHED_FIT_UNTRACKED));
    CHECK(sched_filter_resolvable(SCHED_FILTER_RESOURCES, 1u << SCHED_RES_CPU));
    /* each untracked name once, then nothing more however many events name it again */
    int reported = 0;
    for (const char *u; (u = sched_snapshot_untracked_next(s));)
        reported++;
    CHECK_INT(reported, 5);
    add_nodes(c, n);
    bind_foreign(c, "other2", last, last_res, "1");
    CHECK(sched_snapshot_untracked_next(s) == NULL);
    sched_cache_free(c);
}

int main(void) {
    RUN(test_twenty_resources);
    RUN(test_past_the_limit);
    return TEST_SUMMARY();
}
