/* scheduler_extended_resources_test.c: a cluster with many distinct extended resources (issue
 * 30: any number), built the way the live informer builds the snapshot (node and pod JSON
 * through the cache's event path). No node ever drops out because other nodes advertise many
 * device-plugin resources; names past the fixed slots are kept sparsely and counted like the
 * others: bound pods count for what they request, a pending pod fits only where enough is left,
 * with kube-scheduler's "Insufficient <name>" reason elsewhere; requests follow the same formula
 * (init containers, sidecars, overhead); a node changed or advertising a name late keeps what
 * its pods use; preemption frees them; a gang's minResources counts them; each sparse name is
 * reported once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "scheduler/backend/cache.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/preemption/preemption.h"

/* How many extended resources one snapshot has fixed slots for. */
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

/* What node uses of a sparse resource (-1: no such node or name, -2: the node does not
 * advertise it). */
static int64_t sparse_used(sched_cache *c, const char *node, const char *res) {
    sched_snapshot *s = sched_cache_snapshot(c);
    const sched_node *n = sched_snapshot_node_by_name(s, node);
    int id = sched_snapshot_xres_find(s, res);
    if (!n || id < 0)
        return -1;
    int k = sched_xres_index(n->xalloc, n->n_xalloc, (uint32_t)id);
    return k < 0 ? -2 : n->xused[k];
}

static void pod_event(sched_cache *c, tm_watch_type t, json_t *j) {
    tm_err err = {0};
    int rc = sched_cache_pod_event(c, t, j, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "    pod event: %s\n", err.msg);
    CHECK_INT(rc, 0);
    json_decref(j);
}

/* Past the fixed slots: EXT_SLOTS + 5 distinct names. Nodes all kept; a bound pod of another
 * scheduler asking for a sparse resource counts for it (and its cpu); a pending pod asking for
 * one is bound where enough is left and names it where not; a zero request asks for nothing;
 * preemption may resolve the shortage; each sparse name is reported once. */
static void test_past_the_fixed_slots(void) {
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
    CHECK_INT(requested(c, last, last_res), -2); /* no fixed slot */
    CHECK_INT(sparse_used(c, last, last_res), 2);
    char msg[1200];
    /* 4 on the node, 2 in use: 3 do not fit, 2 do, on the only node that has it */
    CHECK_STR(schedule(c, "p1", last_res, "3", msg, sizeof msg), "");
    snprintf(want, sizeof want, "0/%d nodes are available: %d Insufficient %s.", n, n, last_res);
    CHECK_STR(msg, want);
    CHECK_STR(schedule(c, "p1b", last_res, "2", msg, sizeof msg), last);
    /* a request of 0 asks for nothing (as kube-scheduler skips zero scalar requests) */
    CHECK(schedule(c, "p2", last_res, "0", msg, sizeof msg)[0] != '\0');
    /* one with a fixed slot still schedules, also in a slot past the 32 bits of the detail */
    CHECK_STR(schedule(c, "p3", "example.com/r00", "4", msg, sizeof msg), "n00");
    char high_node[16], high_res[32];
    snprintf(high_node, sizeof high_node, "n%02d", EXT_SLOTS - 1);
    snprintf(high_res, sizeof high_res, "example.com/r%02d", EXT_SLOTS - 1);
    CHECK_STR(schedule(c, "p4", high_res, "3", msg, sizeof msg), high_node);
    CHECK_STR(schedule(c, "p5", high_res, "5", msg, sizeof msg), "");
    snprintf(want, sizeof want, "0/%d nodes are available: %d Insufficient %s.", n, n, high_res);
    CHECK_STR(msg, want);
    /* evicting the pod that holds it may help: preemption tries */
    CHECK(sched_filter_resolvable(SCHED_FILTER_RESOURCES, SCHED_FIT_SPARSE));
    /* the bound pod leaves: all 4 are free again */
    pod_event(c, TM_WATCH_DELETED, pod_json("other", "default-scheduler", last, last_res, "2"));
    CHECK_INT(sparse_used(c, last, last_res), 0);
    CHECK_STR(schedule(c, "p6", last_res, "4", msg, sizeof msg), last);
    /* each sparse name once, then nothing more however many events name it again */
    int reported = 0;
    for (const char *u; (u = sched_snapshot_xres_next(s));)
        reported++;
    CHECK_INT(reported, 5);
    add_nodes(c, n);
    bind_foreign(c, "other2", last, last_res, "1");
    CHECK(sched_snapshot_xres_next(s) == NULL);
    sched_cache_free(c);
}

/* A node changed (same name, the informer's MODIFIED) keeps what its pods use of a sparse
 * resource; one that starts advertising a sparse resource after pods asking for it were bound
 * there counts them at once (a device plugin registering late). */
static void test_sparse_usage_survives_node_changes(void) {
    int n = EXT_SLOTS + 2;
    sched_cache *c = new_cache();
    add_nodes(c, n);
    char last[16], last_res[32], late_res[32], msg[1200];
    snprintf(last, sizeof last, "n%02d", n - 1);
    snprintf(last_res, sizeof last_res, "example.com/r%02d", n - 1);
    snprintf(late_res, sizeof late_res, "example.com/late");
    bind_foreign(c, "a", last, last_res, "3");
    bind_foreign(c, "b", last, late_res, "3"); /* the node does not advertise it (yet) */
    add_nodes(c, n);                           /* every node again: replaced in place */
    CHECK_INT(sparse_used(c, last, last_res), 3);
    CHECK_STR(schedule(c, "p1", last_res, "2", msg, sizeof msg), "");
    CHECK(strstr(msg, "Insufficient example.com/r") != NULL);
    /* now the node advertises 4 of the late one as well */
    json_t *j = node_json(last, last_res, "4");
    json_object_set_new(tm_json_path(j, "status.allocatable"), late_res, json_string("4"));
    tm_err err = {0};
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_MODIFIED, j, NULL, &err), 0);
    json_decref(j);
    CHECK_INT(sparse_used(c, last, late_res), 3);
    CHECK_INT(sparse_used(c, last, last_res), 3);
    CHECK_STR(schedule(c, "p2", late_res, "2", msg, sizeof msg), "");
    CHECK_STR(schedule(c, "p3", late_res, "1", msg, sizeof msg), last);
    sched_cache_free(c);
}

/* Preemption frees a sparse resource: a pod of priority 0 holds 3 of the 4 of a sparse
 * resource on the only node advertising it; a pod of priority 1000 asking for 2 preempts it
 * (the filters re-run with it removed find the room), and one of priority 0 does not. */
static void test_sparse_preemption(void) {
    int n = EXT_SLOTS + 1;
    sched_cache *c = new_cache();
    add_nodes(c, n);
    sched_snapshot *s = sched_cache_snapshot(c);
    char last[16], last_res[32];
    snprintf(last, sizeof last, "n%02d", n - 1);
    snprintf(last_res, sizeof last_res, "example.com/r%02d", n - 1);
    json_t *low = pod_json("low", "default-scheduler", last, last_res, "3");
    json_object_set_new(json_object_get(low, "status"), "startTime",
                        json_string("2024-01-01T00:00:10Z"));
    pod_event(c, TM_WATCH_ADDED, low);
    CHECK_INT(sparse_used(c, last, last_res), 3);
    for (int prio = 1000; prio >= 0; prio -= 1000) {
        json_t *pj = pod_json(prio ? "hi" : "peer", "tarema", NULL, last_res, "2");
        json_object_set_new(json_object_get(pj, "spec"), "priority", json_integer(prio));
        tm_err err = {0};
        sched_pod *p = sched_pod_from_json(s, pj, NULL, &err);
        json_decref(pj);
        CHECK(p != NULL);
        sched_framework *fw = sched_policy_new("fair", &err);
        CHECK(fw != NULL && sched_preemption_plugin_add(fw, &err) == 0);
        sched_decision d;
        CHECK_INT(sched_framework_schedule(fw, s, p, 0, &d, &err), 0);
        CHECK_INT(d.node, -1);
        int nom = -2;
        sched_status st = sched_framework_post_filter(fw, &nom, &err);
        const sched_preemption_result *r = sched_preemption_last(fw);
        if (prio) {
            CHECK(st == SCHED_STATUS_OK && r && r->n_victims == 1);
            CHECK(r && r->node_name && strcmp(r->node_name, last) == 0);
            CHECK(r && r->n_victims == 1 && strcmp(r->victims[0].uid, "low") == 0);
        } else {
            CHECK(st != SCHED_STATUS_OK);
        }
        CHECK_INT(sparse_used(c, last, last_res), 3); /* the dry run undoes what it hides */
        sched_framework_free(fw);
        sched_pod_free(p);
    }
    sched_cache_free(c);
}

static int changed_calls;
static void on_changed(void *ud) {
    (void)ud;
    changed_calls++;
}

/* A bound pod resized down in place on a resource kept sparsely frees it: a cluster change (the
 * pods waiting for room are retried), as for a fixed slot; resized up, it frees nothing. */
static void test_sparse_resize_down_is_a_cluster_change(void) {
    int n = EXT_SLOTS + 1;
    tm_err err = {0};
    sched_cache_hooks h = {.cluster_changed = on_changed};
    sched_cache *c = sched_cache_new("tarema", NULL, NULL, &h, &err);
    CHECK(c != NULL);
    add_nodes(c, n);
    char last[16], last_res[32];
    snprintf(last, sizeof last, "n%02d", n - 1);
    snprintf(last_res, sizeof last_res, "example.com/r%02d", n - 1);
    json_t *big = pod_json("r", "default-scheduler", last, last_res, "3");
    json_t *small = pod_json("r", "default-scheduler", last, last_res, "1");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, big, NULL, &err), 0);
    CHECK_INT(sparse_used(c, last, last_res), 3);
    int before = changed_calls;
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, small, big, &err), 0); /* 3 -> 1 */
    CHECK_INT(sparse_used(c, last, last_res), 1);
    CHECK_INT(changed_calls, before + 1);
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, big, small, &err), 0); /* 1 -> 3 */
    CHECK_INT(sparse_used(c, last, last_res), 3);
    CHECK_INT(changed_calls, before + 1);
    json_decref(big);
    json_decref(small);
    sched_cache_free(c);
}

/* A gang's minResources naming a resource kept sparsely counts what the nodes have free of it:
 * 4 on the last node, 3 in use by a bound pod: 1 fits, 2 do not; once the pod goes, 4 do. */
static void test_sparse_gang_min_resources(void) {
    int n = EXT_SLOTS + 1;
    sched_cache *c = new_cache();
    add_nodes(c, n);
    sched_snapshot *s = sched_cache_snapshot(c);
    char last[16], last_res[32], why[256];
    snprintf(last, sizeof last, "n%02d", n - 1);
    snprintf(last_res, sizeof last_res, "example.com/r%02d", n - 1);
    bind_foreign(c, "user", last, last_res, "3");
    sched_min_resource mr = {.name = last_res, .amount = 1};
    sched_gang_spec spec = {.min_member = 1, .min_res = &mr, .n_min_res = 1};
    CHECK(sched_gang_min_resources_fit(s, &spec, why, sizeof why));
    mr.amount = 2;
    CHECK(!sched_gang_min_resources_fit(s, &spec, why, sizeof why));
    CHECK(strstr(why, "exceeds the free capacity 1") != NULL);
    pod_event(c, TM_WATCH_DELETED, pod_json("user", "default-scheduler", last, last_res, "3"));
    mr.amount = 4;
    CHECK(sched_gang_min_resources_fit(s, &spec, why, sizeof why));
    sched_cache_free(c);
}

/* A pod's sparse requests follow kube-scheduler's formula as the fixed slots do: the larger of
 * the containers' sum and the largest init step, sidecars beside both, plus overhead. */
static void test_sparse_requests_formula(void) {
    sched_snapshot *s = sched_snapshot_new();
    CHECK(s != NULL);
    tm_err err = {0};
    char res[32];
    for (int i = 0; i < EXT_SLOTS; i++) { /* fill every fixed slot */
        snprintf(res, sizeof res, "example.com/f%02d", i);
        CHECK(sched_snapshot_resource_slot(s, res, &err) >= 0);
    }
    CHECK_INT(sched_snapshot_resource_slot(s, "example.com/s", &err), SCHED_RES_NO_SLOT);
    json_t *pod = json_loads(
        "{\"metadata\": {\"name\": \"f\"}, \"spec\": {"
        "\"containers\": [{\"name\": \"a\", \"resources\": {\"requests\": {\"example.com/s\": "
        "\"1\", \"example.com/t\": \"2\"}}}, {\"name\": \"b\", \"resources\": {\"requests\": "
        "{\"example.com/s\": \"1\"}}}],"
        "\"initContainers\": [{\"name\": \"i\", \"resources\": {\"requests\": {\"example.com/s\": "
        "\"5\"}}}, {\"name\": \"side\", \"restartPolicy\": \"Always\", \"resources\": "
        "{\"requests\": {\"example.com/t\": \"1\"}}}],"
        "\"overhead\": {\"example.com/t\": \"1\", \"example.com/z\": \"0\"}}}",
        0, NULL);
    CHECK(pod != NULL);
    sched_resources r;
    sched_xres *x = NULL;
    uint32_t nx = 0;
    CHECK_INT(sched_pod_requests_x(s, pod, &r, &x, &nx, &err), 0);
    /* s: max(1 + 1, 5) = 5; t: 2 + sidecar 1 + overhead 1 = 4; z: 0, so not listed */
    CHECK_INT((int)nx, 2);
    int sid = sched_snapshot_xres_find(s, "example.com/s");
    int tid = sched_snapshot_xres_find(s, "example.com/t");
    CHECK(sid >= 0 && tid >= 0);
    CHECK_INT(sched_xres_get(x, nx, (uint32_t)sid), 5);
    CHECK_INT(sched_xres_get(x, nx, (uint32_t)tid), 4);
    CHECK_INT(r.v[SCHED_RES_PODS], 1);
    free(x);
    json_decref(pod);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_twenty_resources);
    RUN(test_past_the_fixed_slots);
    RUN(test_sparse_usage_survives_node_changes);
    RUN(test_sparse_requests_formula);
    RUN(test_sparse_preemption);
    RUN(test_sparse_gang_min_resources);
    RUN(test_sparse_resize_down_is_a_cluster_change);
    return TEST_SUMMARY();
}
