/* scheduler_filter_test.c: the always-on filters (resources incl. extended, readiness,
 * unschedulable, taints/tolerations, nodeSelector, required node affinity), Pod/Node JSON
 * parsing into them, and the kube-scheduler-style FailedScheduling message. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"

static sched_node *node_json(sched_snapshot *s, const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j) {
        printf("    bad test JSON: %s\n", je.text);
        return NULL;
    }
    tm_err err = {0};
    sched_node *n = sched_node_from_json(s, j, &err);
    if (!n)
        printf("    node_from_json: %s\n", err.msg);
    json_decref(j);
    return n;
}

static sched_pod *pod_json(sched_snapshot *s, const char *text, tm_err *err) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j) {
        printf("    bad test JSON: %s\n", je.text);
        return NULL;
    }
    sched_pod *p = sched_pod_from_json(s, j, NULL, err);
    json_decref(j);
    return p;
}

#define NODE(name, extra_meta, spec, alloc)                                                        \
    "{\"metadata\":{\"name\":\"" name "\"" extra_meta "},\"spec\":{" spec                          \
    "},\"status\":{\"allocatable\":{" alloc                                                        \
    "},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"

#define STD_ALLOC "\"cpu\":\"4\",\"memory\":\"8Gi\",\"ephemeral-storage\":\"10Gi\",\"pods\":\"10\""

#define POD(spec)                                                                                  \
    "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\"},\"spec\":{" spec "}}"

#define CTR(req) "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{" req "}}}]"

/* Filter outcome of a pod on a single node (both given as JSON). */
static sched_filter_id run1(const char *node_text, const char *pod_text, uint32_t *detail,
                            char *reason, size_t rsize) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_node *n = node_json(s, node_text);
    sched_pod *p = pod_json(s, pod_text, &err);
    sched_filter_id id = SCHED_FILTER_COUNT;
    if (n && p && sched_snapshot_put_node(s, n, &err) == 0) {
        const sched_node *sn = sched_snapshot_node(s, 0);
        id = sched_filter_node(s, p, sn, detail);
        if (reason)
            sched_filter_reason(s, sn, p, id, detail ? *detail : 0, reason, rsize);
    } else if (!p) {
        printf("    pod_from_json: %s\n", err.msg);
    }
    sched_pod_free(p);
    sched_snapshot_free(s);
    return id;
}

static void test_resources_fit(void) {
    uint32_t d;
    char r[256];
    CHECK_INT(run1(NODE("n", "", "", STD_ALLOC), POD(CTR("\"cpu\":\"4\",\"memory\":\"8Gi\"")), &d,
                   r, sizeof r),
              SCHED_FILTER_OK);
    CHECK_INT(run1(NODE("n", "", "", STD_ALLOC), POD(CTR("\"cpu\":\"4001m\"")), &d, r, sizeof r),
              SCHED_FILTER_RESOURCES);
    CHECK_STR(r, "Insufficient cpu");
    CHECK_INT(run1(NODE("n", "", "", STD_ALLOC),
                   POD(CTR("\"cpu\":\"5\",\"memory\":\"9Gi\",\"ephemeral-storage\":\"11Gi\"")), &d,
                   r, sizeof r),
              SCHED_FILTER_RESOURCES);
    CHECK_STR(r, "Insufficient cpu, Insufficient memory, Insufficient ephemeral-storage");
    /* a pod with no requests still needs a pod slot */
    CHECK_INT(
        run1(NODE("n", "", "", "\"cpu\":\"4\",\"pods\":\"0\""), POD(CTR("")), &d, r, sizeof r),
        SCHED_FILTER_RESOURCES);
    CHECK_STR(r, "Too many pods");
}

static void test_extended_resources(void) {
    uint32_t d;
    char r[256];
    CHECK_INT(run1(NODE("n", "", "", STD_ALLOC ",\"nvidia.com/gpu\":\"2\""),
                   POD(CTR("\"nvidia.com/gpu\":\"2\"")), &d, r, sizeof r),
              SCHED_FILTER_OK);
    CHECK_INT(run1(NODE("n", "", "", STD_ALLOC ",\"nvidia.com/gpu\":\"2\""),
                   POD(CTR("\"nvidia.com/gpu\":\"3\"")), &d, r, sizeof r),
              SCHED_FILTER_RESOURCES);
    CHECK_STR(r, "Insufficient nvidia.com/gpu");
    /* a node that does not offer the resource at all */
    CHECK_INT(
        run1(NODE("n", "", "", STD_ALLOC), POD(CTR("\"example.com/fpga\":\"1\"")), &d, r, sizeof r),
        SCHED_FILTER_RESOURCES);
    CHECK_STR(r, "Insufficient example.com/fpga");
}

static void test_requests_accounting(void) {
    /* init containers: max(sum of containers + sidecars, largest init step) + overhead */
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_pod *p = pod_json(
        s,
        POD("\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\","
            "\"memory\":\"1Gi\"}}},{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"500m\"}}}"
            "],"
            "\"initContainers\":[{\"name\":\"i1\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}},"
            "{\"name\":\"side\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{"
            "\"memory\":\"512Mi\"}}},{\"name\":\"i2\",\"resources\":{\"requests\":{\"memory\":"
            "\"2Gi\"}}}],\"overhead\":{\"cpu\":\"100m\"}"),
        &err);
    CHECK(p != NULL);
    if (p) {
        /* cpu: max(1.5 + 0, 3) + 0.1 = 3.1; memory: max(1Gi + 512Mi, 2Gi + 512Mi) */
        CHECK_INT(p->requests.v[SCHED_RES_CPU], 3100);
        CHECK_INT(p->requests.v[SCHED_RES_MEMORY], 2560LL * 1024 * 1024);
        CHECK_INT(p->requests.v[SCHED_RES_PODS], 1);
    }
    sched_pod_free(p);
    /* bad quantities are errors naming the field */
    p = pod_json(s, POD(CTR("\"cpu\":\"lots\"")), &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "spec.containers[0].resources.requests") != NULL);
    CHECK(strstr(err.msg, "lots") != NULL);
    sched_snapshot_free(s);
}

static void test_pods_on_node_count(void) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_node *n = node_json(s, NODE("n", "", "", STD_ALLOC));
    CHECK(sched_snapshot_put_node(s, n, &err) == 0);
    sched_pod *p = pod_json(s, POD(CTR("\"cpu\":\"3\"")), &err);
    sched_resources other = {0};
    other.v[SCHED_RES_CPU] = 1500;
    other.v[SCHED_RES_PODS] = 1;
    CHECK(sched_snapshot_add_pod(s, "other", "n", &other, &err) == 0);
    uint32_t d = 0;
    CHECK_INT(sched_filter_node(s, p, sched_snapshot_node(s, 0), &d), SCHED_FILTER_RESOURCES);
    CHECK(d & (1u << SCHED_RES_CPU));
    /* the other pod goes away: fits again */
    CHECK(sched_snapshot_remove_pod(s, "other") == 0);
    CHECK_INT(sched_filter_node(s, p, sched_snapshot_node(s, 0), &d), SCHED_FILTER_OK);
    CHECK_INT(sched_snapshot_node(s, 0)->requested.v[SCHED_RES_CPU], 0);
    /* pods recorded before their node arrives count once it does */
    CHECK(sched_snapshot_add_pod(s, "early", "late", &other, &err) == 0);
    CHECK(sched_snapshot_put_node(s, node_json(s, NODE("late", "", "", STD_ALLOC)), &err) == 0);
    CHECK_INT(sched_snapshot_node_by_name(s, "late")->requested.v[SCHED_RES_CPU], 1500);
    /* replacing a node keeps its usage; removing and re-adding restores it */
    CHECK(sched_snapshot_put_node(s, node_json(s, NODE("late", "", "", STD_ALLOC)), &err) == 0);
    CHECK_INT(sched_snapshot_node_by_name(s, "late")->requested.v[SCHED_RES_CPU], 1500);
    CHECK(sched_snapshot_remove_node(s, "late") == 0);
    CHECK(sched_snapshot_put_node(s, node_json(s, NODE("late", "", "", STD_ALLOC)), &err) == 0);
    CHECK_INT(sched_snapshot_node_by_name(s, "late")->requested.v[SCHED_RES_CPU], 1500);
    /* moving a pod moves its usage */
    CHECK(sched_snapshot_add_pod(s, "early", "n", &other, &err) == 0);
    CHECK_INT(sched_snapshot_node_by_name(s, "late")->requested.v[SCHED_RES_CPU], 0);
    CHECK_INT(sched_snapshot_node_by_name(s, "n")->requested.v[SCHED_RES_CPU], 1500);
    CHECK_INT(sched_snapshot_pod_count(s), 1);
    sched_pod_free(p);
    sched_snapshot_free(s);
}

static void test_ready_and_unschedulable(void) {
    uint32_t d;
    char r[256];
    const char *notready = "{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{" STD_ALLOC
                           "},\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}";
    CHECK_INT(run1(notready, POD(CTR("")), &d, r, sizeof r), SCHED_FILTER_NODE_READY);
    CHECK_STR(r, "node(s) were not ready");
    const char *nocond =
        "{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{" STD_ALLOC "}}}";
    CHECK_INT(run1(nocond, POD(CTR("")), &d, r, sizeof r), SCHED_FILTER_NODE_READY);
    CHECK_INT(
        run1(NODE("n", "", "\"unschedulable\":true", STD_ALLOC), POD(CTR("")), &d, r, sizeof r),
        SCHED_FILTER_NODE_UNSCHEDULABLE);
    CHECK_STR(r, "node(s) were unschedulable");
    /* DaemonSet-style toleration of the unschedulable taint */
    CHECK_INT(run1(NODE("n", "", "\"unschedulable\":true", STD_ALLOC),
                   POD(CTR("") ",\"tolerations\":[{\"key\":\"node.kubernetes.io/unschedulable\","
                               "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]"),
                   &d, r, sizeof r),
              SCHED_FILTER_OK);
}

#define TAINTED(eff)                                                                               \
    NODE("n", "", "\"taints\":[{\"key\":\"dedicated\",\"value\":\"gpu\",\"effect\":\"" eff "\"}]", \
         STD_ALLOC)

static void test_taints(void) {
    uint32_t d;
    char r[256];
    CHECK_INT(run1(TAINTED("NoSchedule"), POD(CTR("")), &d, r, sizeof r), SCHED_FILTER_TAINT);
    CHECK_STR(r, "node(s) had untolerated taint {dedicated: gpu}");
    CHECK_INT(run1(TAINTED("NoExecute"), POD(CTR("")), &d, r, sizeof r), SCHED_FILTER_TAINT);
    /* PreferNoSchedule is a preference, never a filter */
    CHECK_INT(run1(TAINTED("PreferNoSchedule"), POD(CTR("")), &d, r, sizeof r), SCHED_FILTER_OK);
    /* Equal with matching value */
    CHECK_INT(run1(TAINTED("NoSchedule"),
                   POD(CTR("") ",\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\","
                               "\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]"),
                   &d, r, sizeof r),
              SCHED_FILTER_OK);
    /* Equal with another value */
    CHECK_INT(run1(TAINTED("NoSchedule"),
                   POD(CTR("") ",\"tolerations\":[{\"key\":\"dedicated\",\"value\":\"cpu\"}]"), &d,
                   r, sizeof r),
              SCHED_FILTER_TAINT);
    /* Exists on the key, any value, any effect */
    CHECK_INT(
        run1(TAINTED("NoExecute"),
             POD(CTR("") ",\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\"}]"), &d,
             r, sizeof r),
        SCHED_FILTER_OK);
    /* right key, wrong effect */
    CHECK_INT(run1(TAINTED("NoExecute"),
                   POD(CTR("") ",\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\","
                               "\"effect\":\"NoSchedule\"}]"),
                   &d, r, sizeof r),
              SCHED_FILTER_TAINT);
    /* empty key with Exists tolerates everything */
    CHECK_INT(run1(TAINTED("NoSchedule"),
                   POD(CTR("") ",\"tolerations\":[{\"operator\":\"Exists\"}]"), &d, r, sizeof r),
              SCHED_FILTER_OK);
    /* bad operator is an error naming it */
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_pod *p =
        pod_json(s, POD(CTR("") ",\"tolerations\":[{\"key\":\"a\",\"operator\":\"Has\"}]"), &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "spec.tolerations[0].operator \"Has\"") != NULL);
    sched_snapshot_free(s);
}

#define LABELED                                                                                    \
    NODE("n", ",\"labels\":{\"zone\":\"a\",\"cores\":\"16\",\"disk\":\"ssd\"}", "", STD_ALLOC)
#define AFF(expr)                                                                                  \
    POD(CTR(                                                                                       \
        "") ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
            "{\"nodeSelectorTerms\":[" expr "]}}}")

static sched_filter_id aff(const char *pod) {
    uint32_t d;
    char r[256];
    sched_filter_id id = run1(LABELED, pod, &d, r, sizeof r);
    if (id == SCHED_FILTER_NODE_AFFINITY)
        CHECK_STR(r, "node(s) didn't match Pod's node affinity/selector");
    return id;
}

static void test_node_selector(void) {
    CHECK_INT(aff(POD(CTR("") ",\"nodeSelector\":{\"zone\":\"a\",\"disk\":\"ssd\"}")),
              SCHED_FILTER_OK);
    CHECK_INT(aff(POD(CTR("") ",\"nodeSelector\":{\"zone\":\"b\"}")), SCHED_FILTER_NODE_AFFINITY);
    CHECK_INT(aff(POD(CTR("") ",\"nodeSelector\":{\"gpu\":\"yes\"}")), SCHED_FILTER_NODE_AFFINITY);
}

#define EXPR(k, op, vals)                                                                          \
    "{\"matchExpressions\":[{\"key\":\"" k "\",\"operator\":\"" op "\"" vals "}]}"

static void test_node_affinity_ops(void) {
    CHECK_INT(aff(AFF(EXPR("zone", "In", ",\"values\":[\"b\",\"a\"]"))), SCHED_FILTER_OK);
    CHECK_INT(aff(AFF(EXPR("zone", "In", ",\"values\":[\"b\"]"))), SCHED_FILTER_NODE_AFFINITY);
    CHECK_INT(aff(AFF(EXPR("zone", "NotIn", ",\"values\":[\"b\"]"))), SCHED_FILTER_OK);
    CHECK_INT(aff(AFF(EXPR("zone", "NotIn", ",\"values\":[\"a\"]"))), SCHED_FILTER_NODE_AFFINITY);
    CHECK_INT(aff(AFF(EXPR("gpu", "NotIn", ",\"values\":[\"a\"]"))), SCHED_FILTER_OK);
    CHECK_INT(aff(AFF(EXPR("disk", "Exists", ""))), SCHED_FILTER_OK);
    CHECK_INT(aff(AFF(EXPR("gpu", "Exists", ""))), SCHED_FILTER_NODE_AFFINITY);
    CHECK_INT(aff(AFF(EXPR("gpu", "DoesNotExist", ""))), SCHED_FILTER_OK);
    CHECK_INT(aff(AFF(EXPR("disk", "DoesNotExist", ""))), SCHED_FILTER_NODE_AFFINITY);
    CHECK_INT(aff(AFF(EXPR("cores", "Gt", ",\"values\":[\"8\"]"))), SCHED_FILTER_OK);
    CHECK_INT(aff(AFF(EXPR("cores", "Gt", ",\"values\":[\"16\"]"))), SCHED_FILTER_NODE_AFFINITY);
    CHECK_INT(aff(AFF(EXPR("cores", "Lt", ",\"values\":[\"32\"]"))), SCHED_FILTER_OK);
    CHECK_INT(aff(AFF(EXPR("cores", "Lt", ",\"values\":[\"16\"]"))), SCHED_FILTER_NODE_AFFINITY);
    CHECK_INT(aff(AFF(EXPR("zone", "Gt", ",\"values\":[\"1\"]"))), SCHED_FILTER_NODE_AFFINITY);
    /* terms are ORed, expressions in a term ANDed */
    CHECK_INT(aff(AFF(EXPR("zone", "In", ",\"values\":[\"b\"]") "," EXPR("disk", "Exists", ""))),
              SCHED_FILTER_OK);
    CHECK_INT(
        aff(AFF("{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]},"
                "{\"key\":\"gpu\",\"operator\":\"Exists\"}]}")),
        SCHED_FILTER_NODE_AFFINITY);
    /* matchFields on metadata.name */
    CHECK_INT(aff(AFF("{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
                      "[\"n\"]}]}")),
              SCHED_FILTER_OK);
    CHECK_INT(aff(AFF("{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\","
                      "\"values\":[\"n\"]}]}")),
              SCHED_FILTER_NODE_AFFINITY);
    /* an empty term matches nothing */
    CHECK_INT(aff(AFF("{}")), SCHED_FILTER_NODE_AFFINITY);
    /* invalid requirements are errors */
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_pod *p = pod_json(s, AFF(EXPR("cores", "Gt", ",\"values\":[\"many\"]")), &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "\"many\"") != NULL);
    p = pod_json(s, AFF(EXPR("zone", "Near", ",\"values\":[\"a\"]")), &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "matchExpressions[0]") != NULL);
    sched_snapshot_free(s);
}

static void test_fit_message(void) {
    /* kube-scheduler's aggregated message: "N reason" strings sorted as strings */
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    char name[32], text[512];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "aff-%02d", i);
        snprintf(text, sizeof text,
                 "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{" STD_ALLOC
                 "},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                 name);
        CHECK(sched_snapshot_put_node(s, node_json(s, text), &err) == 0);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "small-%d", i);
        snprintf(text, sizeof text,
                 "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"zone\":\"a\"}},\"status\":{"
                 "\"allocatable\":{\"cpu\":\"1\",\"memory\":\"1Gi\",\"pods\":\"10\"},"
                 "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                 name);
        CHECK(sched_snapshot_put_node(s, node_json(s, text), &err) == 0);
    }
    sched_pod *p =
        pod_json(s, POD(CTR("\"cpu\":\"2\"") ",\"nodeSelector\":{\"zone\":\"a\"}"), &err);
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_decision d;
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_INT(d.node, -1);
    CHECK_INT(d.n_nodes, 15);
    char msg[512];
    CHECK_STR(sched_framework_fit_message(fw, s, msg, sizeof msg),
              "0/15 nodes are available: 12 node(s) didn't match Pod's node affinity/selector, 3 "
              "Insufficient cpu.");
    /* short of cpu where its selector lets it go: capacity alone holds it back */
    CHECK(sched_framework_capacity_only(fw));
    sched_pod_free(p);
    /* held back by other pods (required affinity to pods that do not exist): not capacity */
    p = pod_json(s,
                 POD(CTR("\"cpu\":\"2\"") ",\"affinity\":{\"podAffinity\":{"
                                          "\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                                          "\"labelSelector\":{\"matchLabels\":{\"app\":\"none\"}},"
                                          "\"topologyKey\":\"kubernetes.io/hostname\"}]}}"),
                 &err);
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_INT(d.node, -1);
    CHECK(!sched_framework_capacity_only(fw));
    sched_pod_free(p);
    /* a spread constraint: PodTopologySpread ran for it (pods on other nodes decide it), and
     * would have run after NodeResourcesFit's rejection: not capacity alone either */
    p = pod_json(s,
                 POD(CTR("\"cpu\":\"2\"") ",\"nodeSelector\":{\"zone\":\"a\"},"
                                          "\"topologySpreadConstraints\":[{\"maxSkew\":1,"
                                          "\"topologyKey\":\"zone\",\"whenUnsatisfiable\":"
                                          "\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":"
                                          "{\"app\":\"s\"}}}]"),
                 &err);
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_INT(d.node, -1);
    CHECK(!sched_framework_capacity_only(fw));
    sched_pod_free(p);
    /* a host port is the node's own business: still capacity alone */
    p = pod_json(s,
                 POD("\"containers\":[{\"name\":\"c\",\"ports\":[{\"containerPort\":80,"
                     "\"hostPort\":8080}],\"resources\":{\"requests\":{\"cpu\":\"2\"}}}],"
                     "\"nodeSelector\":{\"zone\":\"a\"}"),
                 &err);
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_INT(d.node, -1);
    CHECK(sched_framework_capacity_only(fw));
    sched_pod_free(p);
    /* placed: nothing to wait for */
    p = pod_json(s, POD(CTR("\"cpu\":\"2\"")), &err);
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK(d.node >= 0);
    CHECK(!sched_framework_capacity_only(fw));
    sched_pod_free(p);
    /* several short resources on one node count once each */
    p = pod_json(
        s, POD(CTR("\"cpu\":\"2\",\"memory\":\"2Gi\"") ",\"nodeSelector\":{\"zone\":\"a\"}"), &err);
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(sched_framework_fit_message(fw, s, msg, sizeof msg),
              "0/15 nodes are available: 12 node(s) didn't match Pod's node affinity/selector, 3 "
              "Insufficient cpu, 3 Insufficient memory.");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_resources_fit);
    RUN(test_extended_resources);
    RUN(test_requests_accounting);
    RUN(test_pods_on_node_count);
    RUN(test_ready_and_unschedulable);
    RUN(test_taints);
    RUN(test_node_selector);
    RUN(test_node_affinity_ops);
    RUN(test_fit_message);
    return TEST_SUMMARY();
}
