/* scheduler_cache_test.c: informer events into the cache: node add/update/delete (heartbeats
 * ignored), capacity of every pod counted, our pending pods handed to the queue hook (status-only
 * updates not), terminal and deleted pods released, assumptions confirmed or undone, TaskProfiles
 * into the task table, bad input rejected with the object named; the informer transforms keep
 * everything the scheduler reads of a pod or node; claims and volumes into the volume tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "scheduler/backend/cache.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/backend/volumes.h"

typedef struct rec {
    int pending, gone, changed;
    char last_pending[64], last_gone[64], last_gone_node[64];
} rec;

static void on_pending(void *ud, sched_pod *p) {
    rec *r = ud;
    r->pending++;
    snprintf(r->last_pending, sizeof r->last_pending, "%s", p->uid);
    sched_pod_free(p);
}

static void on_gone(void *ud, const char *uid, const char *node) {
    rec *r = ud;
    r->gone++;
    snprintf(r->last_gone, sizeof r->last_gone, "%s", uid);
    snprintf(r->last_gone_node, sizeof r->last_gone_node, "%s", node ? node : "");
}

static void on_changed(void *ud) {
    ((rec *)ud)->changed++;
}

static json_t *node_json(const char *name, const char *cpu, const char *ready, const char *hb) {
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{}, s:{s:{s:s, s:s, s:s}, s:[{s:s, s:s, "
                     "s:s}]}}",
                     "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
                     "kubernetes.io/hostname", name, "spec", "status", "allocatable", "cpu", cpu,
                     "memory", "8Gi", "pods", "110", "conditions", "type", "Ready", "status", ready,
                     "lastHeartbeatTime", hb);
}

static json_t *pod_json(const char *uid, const char *sched, const char *node, const char *cpu,
                        const char *phase) {
    json_t *p =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s, "
                  "s:s}}}]}, s:{s:s}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", uid, "namespace", "ns",
                  "uid", uid, "creationTimestamp", "2024-01-01T00:00:00Z", "spec", "schedulerName",
                  sched, "containers", "name", "c", "image", "x", "resources", "requests", "cpu",
                  cpu, "memory", "1Gi", "status", "phase", phase);
    if (node)
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
    return p;
}

static sched_cache *new_cache(rec *r, const char *const *ns) {
    sched_cache_hooks h = {
        .pod_pending = on_pending, .pod_gone = on_gone, .cluster_changed = on_changed, .ud = r};
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema", ns, NULL, &h, &err);
    CHECK(c != NULL);
    return c;
}

static int64_t cpu_requested(sched_cache *c, const char *node) {
    const sched_node *n = sched_snapshot_node_by_name(sched_cache_snapshot(c), node);
    return n ? n->requested.v[SCHED_RES_CPU] : -1;
}

/* A node change that lets no waiting pod fit goes to node_worsened, not cluster_changed (no
 * retry of every waiting pod): NotReady, less capacity, cordoned. A taint gained, or a
 * PreferNoSchedule one changed, goes to node_taints_gained (only pods whose spread honours
 * taints can gain). Ready again, uncordoned, a NoSchedule or NoExecute taint lost (and none
 * gained) go to node_usable with the node's name (the pods the node can help). A new label,
 * more capacity, a taint lost and one gained at once go to cluster_changed, as does the node's
 * deletion. Each step is applied to the previous node. */
static int worsened, gained, usable;
static char usable_node[32];
static void on_usable(void *ud, const char *node) {
    (void)ud;
    usable++;
    snprintf(usable_node, sizeof usable_node, "%s", node);
}
static void on_worsened(void *ud) {
    (void)ud;
    worsened++;
}
static void on_gained(void *ud) {
    (void)ud;
    gained++;
}

static void test_node_changes_that_cannot_help(void) {
    rec r = {0};
    sched_cache_hooks h = {.cluster_changed = on_changed,
                           .node_worsened = on_worsened,
                           .node_taints_gained = on_gained,
                           .node_usable = on_usable,
                           .ud = &r};
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema", NULL, NULL, &h, &err);
    CHECK(c != NULL);
    worsened = gained = usable = 0;
    json_t *prev = node_json("n1", "4", "True", "t1");
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_ADDED, prev, NULL, &err), 0);
    CHECK_INT(r.changed, 1); /* a new node may help */
    struct {
        const char *what, *cpu, *ready;
        const char *taint, *effect; /* a taint's key and effect, or NULL */
        bool cordon;
        const char *label; /* a label's value, or NULL */
        int changed, worsened, gained, usable;
    } steps[] = {
        {"NotReady", "4", "False", NULL, NULL, false, NULL, 1, 1, 0, 0},
        {"Ready again", "4", "True", NULL, NULL, false, NULL, 1, 1, 0, 1},
        {"capacity down", "2", "True", NULL, NULL, false, NULL, 1, 2, 0, 1},
        {"capacity up", "8", "True", NULL, NULL, false, NULL, 2, 2, 0, 1},
        {"a taint added", "8", "True", "gpu", "NoSchedule", false, NULL, 2, 2, 1, 1},
        {"another taint instead", "8", "True", "ssd", "NoSchedule", false, NULL, 3, 2, 1, 1},
        {"its effect now NoExecute", "8", "True", "ssd", "NoExecute", false, NULL, 4, 2, 1, 1},
        {"the taint removed", "8", "True", NULL, NULL, false, NULL, 4, 2, 1, 2},
        {"a PreferNoSchedule taint", "8", "True", "hdd", "PreferNoSchedule", false, NULL, 4, 2, 2,
         2},
        {"and gone again", "8", "True", NULL, NULL, false, NULL, 4, 2, 3, 2},
        {"cordoned", "8", "True", NULL, NULL, true, NULL, 4, 3, 3, 2},
        {"uncordoned", "8", "True", NULL, NULL, false, NULL, 4, 3, 3, 3},
        {"NotReady again", "8", "False", NULL, NULL, false, NULL, 4, 4, 3, 3},
        {"Ready with more capacity", "9", "True", NULL, NULL, false, NULL, 5, 4, 3, 3},
        {"a label", "9", "True", NULL, NULL, false, "a", 6, 4, 3, 3},
        {"NotReady and cordoned at once", "9", "False", NULL, NULL, true, "a", 6, 5, 3, 3},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        json_t *n = node_json("n1", steps[i].cpu, steps[i].ready, "t");
        json_t *spec = json_object_get(n, "spec");
        if (steps[i].taint)
            json_object_set_new(
                spec, "taints",
                json_pack("[{s:s, s:s}]", "key", steps[i].taint, "effect", steps[i].effect));
        if (steps[i].cordon)
            json_object_set_new(spec, "unschedulable", json_true());
        if (steps[i].label)
            json_object_set_new(tm_json_path(n, "metadata.labels"), "zone",
                                json_string(steps[i].label));
        CHECK_INT(sched_cache_node_event(c, TM_WATCH_MODIFIED, n, prev, &err), 0);
        CHECKF(r.changed == steps[i].changed && worsened == steps[i].worsened &&
                   gained == steps[i].gained && usable == steps[i].usable,
               "%s: changed %d worsened %d gained %d usable %d, want %d %d %d %d", steps[i].what,
               r.changed, worsened, gained, usable, steps[i].changed, steps[i].worsened,
               steps[i].gained, steps[i].usable);
        json_decref(prev);
        prev = n;
    }
    /* the snapshot follows every change either way */
    const sched_node *sn = sched_snapshot_node_by_name(sched_cache_snapshot(c), "n1");
    CHECK(sn && !sn->ready && sn->allocatable.v[SCHED_RES_CPU] == 9000);
    CHECK(strcmp(usable_node, "n1") == 0);
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_DELETED, prev, prev, &err), 0);
    CHECK_INT(r.changed, 7);
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_DELETED, prev, prev, &err), 0);
    CHECK_INT(r.changed, 7); /* unknown by now: nothing to say */
    json_decref(prev);
    sched_cache_free(c);
    /* without a node_usable hook, a node usable again tells cluster_changed */
    rec r2 = {0};
    h = (sched_cache_hooks){.cluster_changed = on_changed, .ud = &r2};
    c = sched_cache_new("tarema", NULL, NULL, &h, &err);
    CHECK(c != NULL);
    json_t *down = node_json("n2", "4", "False", "t1"), *up = node_json("n2", "4", "True", "t2");
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_ADDED, down, NULL, &err), 0);
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_MODIFIED, up, down, &err), 0);
    CHECK_INT(r2.changed, 2);
    CHECK_INT(usable, 3);
    json_decref(down);
    json_decref(up);
    sched_cache_free(c);
}

static void test_nodes(void) {
    rec r = {0};
    sched_cache *c = new_cache(&r, NULL);
    tm_err err = {0};
    json_t *n1 = node_json("n1", "4", "True", "t1");
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_ADDED, n1, NULL, &err), 0);
    CHECK_INT(sched_snapshot_node_count(sched_cache_snapshot(c)), 1);
    CHECK_INT(r.changed, 1);
    /* A heartbeat (only a timestamp differs) changes nothing. */
    json_t *n1b = node_json("n1", "4", "True", "t2");
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_MODIFIED, n1b, n1, &err), 0);
    CHECK_INT(r.changed, 1);
    /* Capacity grows: the node is replaced and waiting pods are told. */
    json_t *n1c = node_json("n1", "8", "True", "t3");
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_MODIFIED, n1c, n1b, &err), 0);
    CHECK_INT(r.changed, 2);
    const sched_node *n = sched_snapshot_node_by_name(sched_cache_snapshot(c), "n1");
    CHECK(n && n->allocatable.v[SCHED_RES_CPU] == 8000);
    /* Ready -> NotReady is relevant. */
    json_t *n1d = node_json("n1", "8", "False", "t4");
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_MODIFIED, n1d, n1c, &err), 0);
    n = sched_snapshot_node_by_name(sched_cache_snapshot(c), "n1");
    CHECK(n && !n->ready);
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_DELETED, n1d, n1d, &err), 0);
    CHECK_INT(sched_snapshot_node_count(sched_cache_snapshot(c)), 0);
    /* Bad input names the node and the field. */
    json_t *bad = node_json("n2", "lots", "True", "t");
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_ADDED, bad, NULL, &err), -1);
    CHECKF(strstr(err.msg, "n2") != NULL, "%s", err.msg);
    json_decref(bad);
    json_decref(n1);
    json_decref(n1b);
    json_decref(n1c);
    json_decref(n1d);
    sched_cache_free(c);
}

static void test_pods_capacity_and_queue(void) {
    rec r = {0};
    sched_cache *c = new_cache(&r, NULL);
    tm_err err = {0};
    json_t *n1 = node_json("n1", "4", "True", "t");
    sched_cache_node_event(c, TM_WATCH_ADDED, n1, NULL, &err);
    /* Another scheduler's bound pod counts. */
    json_t *other = pod_json("o1", "default-scheduler", "n1", "1", "Running");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, other, NULL, &err), 0);
    CHECK_INT(cpu_requested(c, "n1"), 1000);
    CHECK_INT(r.pending, 0);
    CHECK_INT(r.gone, 0);
    /* Another scheduler's pending pod is ignored. */
    json_t *other_p = pod_json("o2", "default-scheduler", NULL, "1", "Pending");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, other_p, NULL, &err), 0);
    CHECK_INT(r.pending, 0);
    /* Our pending pod goes to the queue. */
    json_t *mine = pod_json("m1", "tarema", NULL, "500m", "Pending");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, mine, NULL, &err), 0);
    CHECK_INT(r.pending, 1);
    CHECK_STR(r.last_pending, "m1");
    /* A status-only update (our PodScheduled condition) does not requeue it... */
    json_t *mine2 = json_deep_copy(mine);
    json_object_set_new(json_object_get(mine2, "status"), "conditions", json_array());
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, mine2, mine, &err), 0);
    CHECK_INT(r.pending, 1);
    /* ...a label change does. */
    json_t *mine3 = json_deep_copy(mine2);
    json_object_set_new(json_object_get(mine3, "metadata"), "labels",
                        json_pack("{s:s}", "nextflow.io/processName", "align"));
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, mine3, mine2, &err), 0);
    CHECK_INT(r.pending, 2);
    /* Bound: leaves the queue, counts on its node. */
    json_t *bound = pod_json("m1", "tarema", "n1", "500m", "Pending");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, bound, mine3, &err), 0);
    CHECK_INT(r.gone, 1);
    CHECK_STR(r.last_gone_node, "n1");
    CHECK_INT(cpu_requested(c, "n1"), 1500);
    /* Finished: released, and waiting pods are told. */
    int changed = r.changed;
    json_t *done = pod_json("m1", "tarema", "n1", "500m", "Succeeded");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, done, bound, &err), 0);
    CHECK_INT(cpu_requested(c, "n1"), 1000);
    CHECK_INT(r.changed, changed + 1);
    CHECK_INT(r.gone, 2);
    CHECK_STR(r.last_gone_node, "");
    /* Deleted: released too. */
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_DELETED, other, other, &err), 0);
    CHECK_INT(cpu_requested(c, "n1"), 0);
    /* A pod bound to a node not seen yet counts once the node appears. */
    json_t *early = pod_json("e1", "default-scheduler", "n9", "2", "Running");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, early, NULL, &err), 0);
    json_t *n9 = node_json("n9", "4", "True", "t");
    sched_cache_node_event(c, TM_WATCH_ADDED, n9, NULL, &err);
    CHECK_INT(cpu_requested(c, "n9"), 2000);
    /* A malformed quantity is an error naming the pod. */
    json_t *bad = pod_json("b1", "default-scheduler", "n1", "two", "Running");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, bad, NULL, &err), -1);
    CHECKF(strstr(err.msg, "ns/b1") != NULL, "%s", err.msg);
    json_t *objs[] = {n1, other, other_p, mine, mine2, mine3, bound, done, early, n9, bad};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
        json_decref(objs[i]);
    sched_cache_free(c);
}

static void test_namespaces(void) {
    rec r = {0};
    const char *const ns[] = {"other", NULL};
    sched_cache *c = new_cache(&r, ns);
    tm_err err = {0};
    json_t *mine = pod_json("m1", "tarema", NULL, "1", "Pending");
    CHECK(!sched_cache_is_ours(c, mine)); /* namespace ns is not watched */
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, mine, NULL, &err), 0);
    CHECK_INT(r.pending, 0);
    json_decref(mine);
    sched_cache_free(c);
}

static void test_assume_forget(void) {
    rec r = {0};
    sched_cache *c = new_cache(&r, NULL);
    tm_err err = {0};
    json_t *n1 = node_json("n1", "4", "True", "t"), *n2 = node_json("n2", "4", "True", "t");
    sched_cache_node_event(c, TM_WATCH_ADDED, n1, NULL, &err);
    sched_cache_node_event(c, TM_WATCH_ADDED, n2, NULL, &err);
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_snapshot *s = sched_cache_snapshot(c);
    json_t *pj = pod_json("a", "tarema", NULL, "1", "Pending");
    sched_pod *p = sched_pod_from_json(s, pj, NULL, &err);
    CHECK(p != NULL);
    int idx = sched_snapshot_node_index(s, "n1");
    CHECK_INT(sched_framework_reserve(fw, sched_cache_snapshot(c), p, idx, &err), 0);
    CHECK_INT(sched_cache_assume_placed(c, p->uid, &err), 0);
    CHECK(sched_cache_is_assumed(c, "a"));
    CHECK_INT(cpu_requested(c, "n1"), 1000);
    /* Bind failed: the reservation is undone. */
    CHECK(sched_cache_forget(c, "a"));
    CHECK_INT(cpu_requested(c, "n1"), 0);
    CHECK(!sched_cache_forget(c, "a"));
    /* Assumed on n1, but the watch shows the pod bound on n2 (someone else won): a late bind
     * failure must not erase the real usage. */
    CHECK_INT(sched_framework_reserve(fw, sched_cache_snapshot(c), p, idx, &err), 0);
    CHECK_INT(sched_cache_assume_placed(c, p->uid, &err), 0);
    json_t *bound = pod_json("a", "tarema", "n2", "1", "Running");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, bound, pj, &err), 0);
    CHECK(!sched_cache_is_assumed(c, "a"));
    CHECK(!sched_cache_forget(c, "a"));
    CHECK_INT(cpu_requested(c, "n1"), 0);
    CHECK_INT(cpu_requested(c, "n2"), 1000);
    CHECK_INT(sched_cache_assumed_count(c), 0);
    /* An assumed pod deleted before its bind answered is forgotten. */
    sched_pod *q = sched_pod_new("ns", "b", "b");
    q->requests.v[SCHED_RES_CPU] = 500;
    CHECK_INT(sched_framework_reserve(fw, sched_cache_snapshot(c), q, idx, &err), 0);
    CHECK_INT(sched_cache_assume_placed(c, q->uid, &err), 0);
    json_t *bj = pod_json("b", "tarema", NULL, "500m", "Pending");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_DELETED, bj, bj, &err), 0);
    CHECK_INT(sched_cache_assumed_count(c), 0);
    CHECK_INT(cpu_requested(c, "n1"), 0);
    sched_pod_free(q);
    sched_pod_free(p);
    sched_framework_free(fw);
    json_decref(pj);
    json_decref(bj);
    json_decref(bound);
    json_decref(n1);
    json_decref(n2);
    sched_cache_free(c);
}

static void test_task_profiles(void) {
    rec r = {0};
    sched_cache *c = new_cache(&r, NULL);
    tm_err err = {0};
    json_t *tp = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}, s:{s:{s:i, s:i, s:i}}}", "apiVersion",
                           "tarema.io/v1alpha1", "kind", "TaskProfile", "metadata", "name",
                           "wf-align", "spec", "workflow", "wf", "process", "align", "status",
                           "labels", "cpu", 3, "mem", 1, "io", 2);
    CHECK_INT(sched_cache_task_event(c, TM_WATCH_ADDED, tp, &err), 0);
    const sched_task_profile *t = sched_snapshot_task(sched_cache_snapshot(c), "wf", "align");
    CHECKF(t != NULL, "%s", err.msg);
    if (t)
        CHECK_INT(t->labels[SCHED_FEAT_CPU], 3);
    CHECK_INT(sched_cache_task_event(c, TM_WATCH_DELETED, tp, &err), 0);
    CHECK(sched_snapshot_task(sched_cache_snapshot(c), "wf", "align") == NULL);
    json_t *bad = json_pack("{s:{s:s}, s:{}}", "metadata", "name", "broken", "spec");
    CHECK_INT(sched_cache_task_event(c, TM_WATCH_ADDED, bad, &err), -1);
    CHECKF(strstr(err.msg, "broken") != NULL, "%s", err.msg);
    json_decref(bad);
    json_decref(tp);
    sched_cache_free(c);
}

/* ---- informer transforms ---------------------------------------------------------------- */

/* A pod as an API server sends it, with everything the transform must keep and a lot it must
 * drop (managedFields, kubectl's last-applied annotation, volumes, env, image, status). */
static const char *big_pod =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\","
    "\"uid\":\"u-p\",\"resourceVersion\":\"7\",\"creationTimestamp\":\"2024-01-01T00:00:05Z\","
    "\"deletionTimestamp\":\"2024-01-01T00:01:00Z\","
    "\"labels\":{\"nextflow.io/processName\":\"align\",\"app\":\"x\"},"
    "\"annotations\":{\"tarema.io/workflow\":\"wf\",\"tarema.io/cpu\":\"2\","
    "\"kubectl.kubernetes.io/last-applied-configuration\":\"{...huge...}\"},"
    "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":{}}}]},"
    "\"spec\":{\"schedulerName\":\"tarema\",\"priority\":5,\"nodeName\":\"n1\","
    "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],"
    "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
    "\"nodeSelector\":{\"disk\":\"ssd\"},"
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
    "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
    "\"values\":[\"a\"]}]}]}},\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
    "Execution\":[{\"labelSelector\":{\"matchLabels\":{\"app\":\"x\"}},\"topologyKey\":"
    "\"kubernetes.io/hostname\"}]}},"
    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","
    "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":"
    "{\"app\":\"x\"}}}],"
    "\"overhead\":{\"cpu\":\"100m\"},"
    "\"containers\":[{\"name\":\"c\",\"image\":\"img\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
    "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"limits\":{\"cpu\":\"2\"}},"
    "\"ports\":[{\"containerPort\":80,\"hostPort\":8080}]}],"
    "\"initContainers\":[{\"name\":\"side\",\"image\":\"img\",\"restartPolicy\":\"Always\","
    "\"resources\":{\"requests\":{\"cpu\":\"500m\"}},\"ports\":[{\"hostPort\":9090}]}]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\",\"conditions\":[{\"type\":"
    "\"Ready\",\"status\":\"True\"}],\"containerStatuses\":[{\"name\":\"c\"}]}}";

static const char *big_node =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\","
    "\"resourceVersion\":\"3\",\"labels\":{\"zone\":\"a\",\"tarema.io/cpu\":\"3\"},"
    "\"annotations\":{\"node.alpha.kubernetes.io/ttl\":\"0\"},"
    "\"managedFields\":[{\"manager\":\"kubelet\"}]},"
    "\"spec\":{\"podCIDR\":\"10.0.0.0/24\",\"unschedulable\":true,\"taints\":[{\"key\":\"k\","
    "\"value\":\"v\",\"effect\":\"NoSchedule\"}]},"
    "\"status\":{\"capacity\":{\"cpu\":\"8\"},\"allocatable\":{\"cpu\":\"7\",\"memory\":\"6Gi\","
    "\"pods\":\"110\"},\"images\":[{\"names\":[\"img\"],\"sizeBytes\":1}],"
    "\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},{\"type\":\"Ready\","
    "\"status\":\"True\",\"lastHeartbeatTime\":\"t\"}],\"nodeInfo\":{\"kubeletVersion\":\"v1\"}}}";

static json_t *parse(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    CHECKF(j != NULL, "%s", je.text);
    return j;
}

/* The trimmed pod gives the scheduler exactly the same sched_pod as the full one, and drops the
 * bulk. */
static void test_pod_transform_keeps_what_scheduling_reads(void) {
    rec r = {0};
    sched_cache *c = new_cache(&r, NULL);
    tm_err err = {0};
    json_t *full = parse(big_pod);
    json_t *slim = sched_cache_pod_transform(c, json_deep_copy(full));
    CHECK(slim != NULL);
    CHECK(tm_json_path(slim, "metadata.managedFields") == NULL);
    CHECK(tm_json_path(slim, "spec.volumes") == NULL);
    CHECK(tm_json_path(slim, "spec.containers") != NULL &&
          json_object_get(json_array_get(tm_json_path(slim, "spec.containers"), 0), "env") == NULL);
    CHECK(json_object_get(tm_json_path(slim, "metadata.annotations"),
                          "kubectl.kubernetes.io/last-applied-configuration") == NULL);
    CHECK(tm_json_path(slim, "status.containerStatuses") == NULL);
    CHECK_STR(tm_json_str(slim, "status.phase", NULL), "Running");
    CHECK_STR(tm_json_str(slim, "metadata.resourceVersion", NULL), "7");
    CHECK(tm_json_path(slim, "status.podIP") == NULL);

    sched_snapshot *snap = sched_cache_snapshot(c);
    sched_pod *a = sched_pod_from_json(snap, full, NULL, &err);
    sched_pod *b = sched_pod_from_json(snap, slim, NULL, &err);
    CHECKF(a && b, "%s", err.msg);
    if (a && b) {
        CHECK_STR(b->uid, a->uid);
        CHECK_STR(b->node_name, a->node_name);
        CHECK(memcmp(&a->requests, &b->requests, sizeof a->requests) == 0);
        /* placed: what places a pod is not kept (a pod on a node no longer uses it) */
        CHECK_INT(a->n_tolerations, 1);
        CHECK_INT(b->n_tolerations, 0);
        CHECK_INT(b->n_node_selector, 0);
        CHECK(!b->has_affinity);
        CHECK_STR(b->workflow, "wf");
        CHECK_STR(b->process, "align");
        CHECK_INT(b->labels[SCHED_FEAT_CPU], 2);
        CHECK_INT(b->priority, 5);
        CHECK(b->created_ms == a->created_ms && b->created_ms > 0);
        CHECK(json_equal(a->pod_labels, b->pod_labels));
        CHECK_INT(b->n_host_ports, 2);
        CHECK_INT(b->n_pod_anti_affinity, 1);
        CHECK_INT(b->n_spread, 0);
        CHECK(b->terminating);
    }
    sched_pod_free(a);
    sched_pod_free(b);
    CHECK(sched_cache_is_ours(c, slim));

    /* The same pod still to place keeps everything that places it. */
    json_t *pending = json_deep_copy(full);
    json_object_del(json_object_get(pending, "spec"), "nodeName");
    json_t *pslim = sched_cache_pod_transform(c, json_deep_copy(pending));
    a = sched_pod_from_json(snap, pending, NULL, &err);
    b = sched_pod_from_json(snap, pslim, NULL, &err);
    CHECKF(a && b, "%s", err.msg);
    if (a && b) {
        CHECK_INT(b->n_tolerations, 1);
        CHECK_INT(b->n_node_selector, 1);
        CHECK(b->has_affinity && b->n_affinity == 1);
        CHECK_INT(b->n_pod_anti_affinity, 1);
        CHECK_INT(b->n_spread, 1);
        CHECK(memcmp(&a->requests, &b->requests, sizeof a->requests) == 0);
    }
    sched_pod_free(a);
    sched_pod_free(b);
    json_decref(pending);
    json_decref(pslim);

    /* A status-only update of a trimmed pending pod still does not requeue it. */
    json_object_del(json_object_get(full, "spec"), "nodeName");
    json_object_del(json_object_get(full, "metadata"), "deletionTimestamp");
    json_t *p1 = sched_cache_pod_transform(c, json_deep_copy(full));
    json_object_set_new(json_object_get(full, "status"), "podIP", json_string("10.0.0.2"));
    json_t *p2 = sched_cache_pod_transform(c, json_deep_copy(full));
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, p1, NULL, &err), 0);
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, p2, p1, &err), 0);
    CHECK_INT(r.pending, 1);
    json_decref(p1);
    json_decref(p2);
    json_decref(full);
    json_decref(slim);
    CHECK(sched_cache_pod_transform(c, NULL) == NULL);
    sched_cache_free(c);
}

/* Another scheduler's pod is kept once it is on a node (it holds capacity) and dropped while it
 * is not (it never will be ours); our own pending pods are kept. */
static void test_pod_transform_drops_others_unbound(void) {
    rec r = {0};
    sched_cache *c = new_cache(&r, NULL);
    json_t *other = parse(big_pod);
    json_object_set_new(json_object_get(other, "spec"), "schedulerName",
                        json_string("default-scheduler"));
    json_t *kept = sched_cache_pod_transform(c, json_deep_copy(other));
    CHECK(kept != NULL); /* bound (nodeName n1) */
    json_decref(kept);
    json_object_del(json_object_get(other, "spec"), "nodeName");
    CHECK(sched_cache_pod_transform(c, json_deep_copy(other)) == NULL);
    json_t *ours = parse(big_pod);
    json_object_del(json_object_get(ours, "spec"), "nodeName");
    kept = sched_cache_pod_transform(c, json_deep_copy(ours));
    CHECK(kept != NULL);
    json_decref(kept);
    json_decref(ours);
    json_decref(other);
    sched_cache_free(c);
}

/* A pod keeps the volumes that name a claim (and only those, trimmed); claim and volume events
 * reach the tables once tracking is on, a changed binding is a cluster change, a status-only
 * update is not; a bound pod's claims are recorded as in use until it is deleted. */
static void test_claims_and_volumes(void) {
    rec r = {0};
    sched_cache *c = new_cache(&r, NULL);
    tm_err err = {0};
    json_t *full = parse(big_pod);
    json_object_del(json_object_get(full, "spec"), "nodeName");
    json_object_set_new(json_object_get(full, "spec"), "volumes",
                        parse("[{\"name\":\"v\",\"emptyDir\":{}},{\"name\":\"w\","
                              "\"persistentVolumeClaim\":{\"claimName\":\"work\","
                              "\"readOnly\":true}},{\"name\":\"t\",\"ephemeral\":{"
                              "\"volumeClaimTemplate\":{\"spec\":{\"resources\":{}}}}}]"));
    json_t *slim = sched_cache_pod_transform(c, json_deep_copy(full));
    json_t *want = parse("[{\"name\":\"w\",\"persistentVolumeClaim\":{\"claimName\":"
                         "\"work\"}},{\"name\":\"t\",\"ephemeral\":{}}]");
    CHECK(json_equal(tm_json_path(slim, "spec.volumes"), want));
    sched_pod *p = sched_pod_from_json(sched_cache_snapshot(c), slim, NULL, &err);
    CHECKF(p && p->n_claims == 2, "%s", err.msg);
    sched_pod_free(p);

    json_t *pvc = parse("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"work\"},"
                        "\"spec\":{},\"status\":{\"phase\":\"Pending\"}}");
    CHECK_INT(sched_cache_claim_event(c, TM_WATCH_ADDED, pvc, NULL, &err), 0);
    CHECK(sched_snapshot_volumes(sched_cache_snapshot(c)) == NULL); /* not tracked: ignored */
    CHECK_INT(r.changed, 0);
    CHECK_INT(sched_cache_track_volumes(c, &err), 0);
    sched_volumes *v = sched_snapshot_volumes(sched_cache_snapshot(c));
    CHECK_INT(sched_cache_claim_event(c, TM_WATCH_ADDED, pvc, NULL, &err), 0);
    CHECK_INT(sched_volumes_claim_count(v), 1);
    CHECK_INT(r.changed, 1);
    json_t *bound = json_deep_copy(pvc);
    json_object_set_new(json_object_get(bound, "spec"), "volumeName", json_string("pv1"));
    CHECK_INT(sched_cache_claim_event(c, TM_WATCH_MODIFIED, bound, pvc, &err), 0);
    CHECK_INT(r.changed, 2);
    json_t *status_only = json_deep_copy(bound);
    json_object_set_new(json_object_get(status_only, "status"), "phase", json_string("Bound"));
    CHECK_INT(sched_cache_claim_event(c, TM_WATCH_MODIFIED, status_only, bound, &err), 0);
    CHECK_INT(r.changed, 2);
    /* the binding completes (kube-scheduler's isPVCFullyBound): that counts */
    json_t *completed = json_deep_copy(status_only);
    json_object_set_new(json_object_get(completed, "metadata"), "annotations",
                        json_pack("{s:s}", "pv.kubernetes.io/bind-completed", "yes"));
    CHECK_INT(sched_cache_claim_event(c, TM_WATCH_MODIFIED, completed, status_only, &err), 0);
    CHECK_INT(r.changed, 3);
    json_decref(completed);
    json_t *pv = parse("{\"metadata\":{\"name\":\"pv1\"},\"spec\":{}}");
    CHECK_INT(sched_cache_volume_event(c, TM_WATCH_ADDED, pv, NULL, &err), 0);
    CHECK_INT(sched_volumes_volume_count(v), 1);
    CHECK_INT(sched_cache_volume_event(c, TM_WATCH_DELETED, pv, NULL, &err), 0);
    CHECK_INT(sched_cache_claim_event(c, TM_WATCH_DELETED, bound, NULL, &err), 0);
    CHECK_INT(sched_volumes_volume_count(v), 0);
    CHECK_INT(sched_volumes_claim_count(v), 0);
    /* a bound pod's claims count as used (VolumeRestrictions, NodeVolumeLimits) until it goes */
    json_t *user = json_deep_copy(full);
    json_object_set_new(json_object_get(user, "spec"), "nodeName", json_string("n1"));
    json_t *user_slim = sched_cache_pod_transform(c, json_deep_copy(user));
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, user_slim, NULL, &err), 0);
    const char *pns = tm_json_str(user, "metadata.namespace", ""),
               *pname = tm_json_str(user, "metadata.name", "");
    char eph[256];
    snprintf(eph, sizeof eph, "%s-t", pname);
    CHECK_INT(sched_volumes_claim_users(v, pns, "work", NULL), 1);
    CHECK_INT(sched_volumes_claim_users(v, pns, eph, NULL), 1); /* the ephemeral one's name */
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_DELETED, user_slim, NULL, &err), 0);
    CHECK_INT(sched_volumes_claim_users(v, pns, "work", NULL), 0);
    json_decref(user_slim);
    json_decref(user);
    json_t *bad = parse("{\"metadata\":{\"name\":\"x\"}}");
    CHECK_INT(sched_cache_claim_event(c, TM_WATCH_ADDED, bad, NULL, &err), -1);
    CHECK_STR(err.msg, "PersistentVolumeClaim without metadata.namespace and .name");
    json_decref(bad);
    json_decref(pv);
    json_decref(status_only);
    json_decref(bound);
    json_decref(pvc);
    json_decref(want);
    json_decref(slim);
    json_decref(full);
    sched_cache_free(c);
}

static void test_node_transform_keeps_what_scheduling_reads(void) {
    rec r = {0};
    sched_cache *c = new_cache(&r, NULL);
    tm_err err = {0};
    json_t *full = parse(big_node);
    json_t *slim = sched_cache_node_transform(c, json_deep_copy(full));
    CHECK(tm_json_path(slim, "metadata.managedFields") == NULL);
    /* images: names and sizes only (ImageLocality) */
    CHECK_INT(json_array_size(tm_json_path(slim, "status.images")), 1);
    CHECK_INT(json_object_size(json_array_get(tm_json_path(slim, "status.images"), 0)), 2);
    CHECK(tm_json_path(slim, "status.nodeInfo") == NULL);
    CHECK(tm_json_path(slim, "spec.podCIDR") == NULL);
    CHECK_INT(json_array_size(tm_json_path(slim, "status.conditions")), 1);
    sched_snapshot *snap = sched_cache_snapshot(c);
    sched_node *a = sched_node_from_json(snap, full, &err);
    sched_node *b = sched_node_from_json(snap, slim, &err);
    CHECKF(a && b, "%s", err.msg);
    if (a && b) {
        CHECK(memcmp(&a->allocatable, &b->allocatable, sizeof a->allocatable) == 0);
        CHECK(b->ready && b->unschedulable);
        CHECK_INT(b->n_taints, 1);
        CHECK_INT(b->n_labels, a->n_labels);
        CHECK_INT(b->n_images, 1);
        CHECK_INT(sched_node_image_size(b, "img"), 1);
    }
    sched_node_free(a);
    sched_node_free(b);
    /* A heartbeat (only lastHeartbeatTime differs) stays invisible after trimming. */
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_ADDED, slim, NULL, &err), 0);
    json_t *hb = json_deep_copy(full);
    json_object_set_new(json_array_get(tm_json_path(hb, "status.conditions"), 1),
                        "lastHeartbeatTime", json_string("t2"));
    hb = sched_cache_node_transform(c, hb);
    CHECK_INT(sched_cache_node_event(c, TM_WATCH_MODIFIED, hb, slim, &err), 0);
    CHECK_INT(r.changed, 1);
    /* Without allocatable, capacity is kept (the filters fall back to it). */
    json_object_del(json_object_get(full, "status"), "allocatable");
    json_t *cap = sched_cache_node_transform(c, json_deep_copy(full));
    CHECK_STR(tm_json_str(cap, "status.capacity.cpu", NULL), "8");
    json_decref(cap);
    json_decref(hb);
    json_decref(slim);
    json_decref(full);
    sched_cache_free(c);
}

/* Capacity released on a node, through the informer's path: a bound pod resized down or gone
 * tells the node-scoped hook where and at which priority (the loop's narrow requeue); a
 * relabelled one (anti-affinity, spread) and a cache without that hook tell every waiting pod. */
typedef struct rel_rec {
    int released, changed;
    char node[64];
    int32_t prio;
} rel_rec;

static void on_released(void *ud, const char *node, int32_t prio) {
    rel_rec *r = ud;
    r->released++;
    snprintf(r->node, sizeof r->node, "%s", node);
    r->prio = prio;
}

static void on_rel_changed(void *ud) {
    ((rel_rec *)ud)->changed++;
}

static void test_released_capacity_names_the_node(void) {
    for (int with_hook = 1; with_hook >= 0; with_hook--) {
        rel_rec r = {0};
        sched_cache_hooks h = {.cluster_changed = on_rel_changed,
                               .pod_released = with_hook ? on_released : NULL,
                               .ud = &r};
        tm_err err = {0};
        sched_cache *c = sched_cache_new("tarema", NULL, NULL, &h, &err);
        json_t *n1 = node_json("n1", "4", "True", "t");
        sched_cache_node_event(c, TM_WATCH_ADDED, n1, NULL, &err);
        r.changed = 0;
        json_t *p = pod_json("b1", "default-scheduler", "n1", "2", "Running");
        json_object_set_new(json_object_get(p, "spec"), "priority", json_integer(7));
        CHECK_INT(sched_cache_pod_event(c, TM_WATCH_ADDED, p, NULL, &err), 0);
        CHECK_INT(r.released + r.changed, 0); /* a new pod frees nothing */
        json_t *q = json_deep_copy(p);
        json_t *req = json_object_get(
            json_object_get(
                json_array_get(json_object_get(json_object_get(q, "spec"), "containers"), 0),
                "resources"),
            "requests");
        json_object_set_new(req, "cpu", json_string("1"));
        CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, q, p, &err), 0);
        CHECK_INT(cpu_requested(c, "n1"), 1000);
        CHECK_INT(with_hook ? r.released : r.changed, 1); /* resized down */
        json_t *l = json_deep_copy(q);
        json_object_set_new(json_object_get(l, "metadata"), "labels", json_pack("{s:s}", "a", "b"));
        CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, l, q, &err), 0);
        CHECK_INT(r.changed, with_hook ? 1 : 2); /* relabelled: every waiting pod */
        CHECK_INT(sched_cache_pod_event(c, TM_WATCH_DELETED, l, l, &err), 0);
        CHECK_INT(cpu_requested(c, "n1"), 0);
        if (with_hook) {
            CHECK_INT(r.released, 2);
            CHECK_STR(r.node, "n1");
            CHECK_INT(r.prio, 7);
            CHECK_INT(r.changed, 1);
        } else {
            CHECK_INT(r.changed, 3);
        }
        json_decref(p);
        json_decref(q);
        json_decref(l);
        json_decref(n1);
        sched_cache_free(c);
    }
}

int main(void) {
    RUN(test_nodes);
    RUN(test_node_changes_that_cannot_help);
    RUN(test_pods_capacity_and_queue);
    RUN(test_namespaces);
    RUN(test_assume_forget);
    RUN(test_task_profiles);
    RUN(test_pod_transform_keeps_what_scheduling_reads);
    RUN(test_pod_transform_drops_others_unbound);
    RUN(test_node_transform_keeps_what_scheduling_reads);
    RUN(test_claims_and_volumes);
    RUN(test_released_capacity_names_the_node);
    return TEST_SUMMARY();
}
