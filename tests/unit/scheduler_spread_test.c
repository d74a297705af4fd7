/* scheduler_spread_test.c: the PodTopologySpread filter (whenUnsatisfiable: DoNotSchedule):
 * maxSkew across three zones with pods already placed, a node without the topology label,
 * minDomains, the node inclusion policies, what counts (namespace, terminating pods,
 * matchLabelKeys, empty selector), the filter order and reasons, and spreading a batch through
 * reserve. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler_filter_helpers.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"

#define ZONE         "topology.kubernetes.io/zone"
#define SPREAD(list) ",'topologySpreadConstraints':[" list "]"
#define TSC(skew, extra)                                                                           \
    "{'maxSkew':" #skew ",'topologyKey':'" ZONE "','whenUnsatisfiable':'DoNotSchedule',"           \
    "'labelSelector':{'matchLabels':{'app':'x'}}" extra "}"

/* Zones a (a1, a2), b (b1, b2), c (c1, c2); app=x pods: two in a, one in b, none in c. */
static sched_snapshot *cluster(void) {
    sched_snapshot *s = sched_snapshot_new();
    static const char *const names[] = {"a1", "a2", "b1", "b2", "c1", "c2"};
    for (int i = 0; i < 6; i++) {
        char zone[2] = {names[i][0], 0};
        add_node(s, names[i], zone);
    }
    place(s, "a1", podtext("x1", "ns", "'app':'x'", ""));
    place(s, "a2", podtext("x2", "ns", "'app':'x'", ""));
    place(s, "b1", podtext("x3", "ns", "'app':'x'", ""));
    place(s, "c1", podtext("y1", "ns", "'app':'y'", ""));    /* other label */
    place(s, "c1", podtext("x4", "other", "'app':'x'", "")); /* other namespace */
    place(s, "c2",
          "{'metadata':{'name':'x5','namespace':'ns','uid':'x5-uid','labels':{'app':"
          "'x'},'deletionTimestamp':'2024-01-01T00:00:00Z'},'spec':{}}"); /* leaving */
    return s;
}

static void test_max_skew(void) {
    sched_snapshot *s = cluster();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    /* counts a=2 b=1 c=0, min 0: only zone c keeps the skew at 1 */
    sched_pod *p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(1, ""))), &err);
    CHECK(p != NULL);
    CHECK_STR(feasible(fw, s, p), "c1,c2");
    uint32_t d = 9;
    CHECK_INT(sched_filter_node(s, p, sched_snapshot_node_by_name(s, "b1"), &d),
              SCHED_FILTER_SPREAD);
    CHECK_INT(d, SCHED_SPREAD_SKEW);
    CHECK(sched_filter_resolvable(SCHED_FILTER_SPREAD, d));
    sched_pod_free(p);
    p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(2, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "b1,b2,c1,c2");
    sched_pod_free(p);
    /* a pod outside its own selector adds nothing to its domain */
    p = incoming(s, podtext("p", "ns", "'app':'z'", SPREAD(TSC(1, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "b1,b2,c1,c2");
    sched_pod_free(p);
    /* ScheduleAnyway is a preference, not a filter */
    p = incoming(s,
                 podtext("p", "ns", "'app':'x'",
                         SPREAD("{'maxSkew':1,'topologyKey':'" ZONE "','whenUnsatisfiable':"
                                "'ScheduleAnyway','labelSelector':{'matchLabels':{'app':'x'}}}")),
                 &err);
    CHECK_INT(p ? p->n_spread : 99, 0);
    CHECK_STR(feasible(fw, s, p), "a1,a2,b1,b2,c1,c2");
    sched_pod_free(p);
    /* an empty selector counts no pod (kube-scheduler's countPodsMatchSelector) but the pod
     * matches it: skew 1 everywhere */
    p = incoming(s,
                 podtext("p", "ns", "'app':'x'",
                         SPREAD("{'maxSkew':1,'topologyKey':'" ZONE "','whenUnsatisfiable':"
                                "'DoNotSchedule','labelSelector':{}}")),
                 &err);
    CHECK_STR(feasible(fw, s, p), "a1,a2,b1,b2,c1,c2");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_missing_label(void) {
    sched_snapshot *s = cluster();
    add_node(s, "nz", NULL);
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_pod *p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(1, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "c1,c2");
    uint32_t d = 9;
    CHECK_INT(sched_filter_node(s, p, sched_snapshot_node_by_name(s, "nz"), &d),
              SCHED_FILTER_SPREAD);
    CHECK_INT(d, SCHED_SPREAD_MISSING_LABEL);
    CHECK(!sched_filter_resolvable(SCHED_FILTER_SPREAD, d));
    sched_pod_free(p);
    p = incoming(s,
                 podtext("p", "ns", "'app':'x'",
                         ",'nodeSelector':{'kubernetes.io/hostname':'nz'}" SPREAD(TSC(1, ""))),
                 &err);
    CHECK_STR(feasible(fw, s, p),
              "0/7 nodes are available: 1 node(s) didn't match pod topology spread constraints "
              "(missing required label), 6 node(s) didn't match Pod's node affinity/selector.");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_min_domains(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a1", "a");
    add_node(s, "b1", "b");
    place(s, "a1", podtext("x1", "ns", "'app':'x'", ""));
    place(s, "b1", podtext("x2", "ns", "'app':'x'", ""));
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    /* two domains, one pod each: global minimum 1, skew 1 */
    sched_pod *p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(1, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "a1,b1");
    sched_pod_free(p);
    /* minDomains 3 > 2 domains: the global minimum counts as 0, skew 2 */
    p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(1, ",'minDomains':3"))), &err);
    CHECK_INT(p ? p->spread[0].min_domains : 0, 3);
    CHECK_STR(feasible(fw, s, p),
              "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints.");
    sched_pod_free(p);
    p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(1, ",'minDomains':2"))), &err);
    CHECK_STR(feasible(fw, s, p), "a1,b1");
    sched_pod_free(p);
    p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(1, ",'minDomains':0"))), &err);
    CHECK(p == NULL);
    CHECKF(strstr(err.msg, "topologySpreadConstraints[0].minDomains") != NULL, "%s", err.msg);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

#define ONLY_AB                                                                                    \
    ",'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"              \
    "'nodeSelectorTerms':[{'matchExpressions':[{'key':'" ZONE "','operator':'In','values':['a',"   \
    "'b']}]}]}}}"

static void test_inclusion_policies(void) {
    sched_snapshot *s = cluster();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    /* nodeAffinityPolicy Honor (default): zone c is not a domain, the minimum is b's 1 */
    sched_pod *p = incoming(s, podtext("p", "ns", "'app':'x'", ONLY_AB SPREAD(TSC(1, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "b1,b2");
    sched_pod_free(p);
    p = incoming(
        s,
        podtext("p", "ns", "'app':'x'", ONLY_AB SPREAD(TSC(1, ",'nodeAffinityPolicy':'Ignore'"))),
        &err);
    CHECK_STR(feasible(fw, s, p),
              "0/6 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 4 "
              "node(s) didn't match pod topology spread constraints.");
    sched_pod_free(p);
    /* nodeTaintsPolicy Honor: tainted zone c stops being a domain (tolerated: it stays) */
    sched_node *c1 = sched_node_new("c1"), *c2 = sched_node_new("c2");
    sched_node *cs[2] = {c1, c2};
    for (int i = 0; i < 2; i++) {
        cs[i]->allocatable.v[SCHED_RES_CPU] = 4000;
        cs[i]->allocatable.v[SCHED_RES_MEMORY] = 8LL << 30;
        cs[i]->allocatable.v[SCHED_RES_PODS] = 110;
        sched_node_set_label(cs[i], ZONE, "c");
        sched_node_add_taint(cs[i], "gpu", "yes", SCHED_EFFECT_NO_SCHEDULE);
        CHECK(sched_snapshot_put_node(s, cs[i], &err) == 0);
    }
    p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(1, ",'nodeTaintsPolicy':'Honor'"))),
                 &err);
    CHECK_STR(feasible(fw, s, p), "b1,b2");
    sched_pod_free(p);
    p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(1, ""))), &err); /* Ignore */
    CHECK_STR(feasible(fw, s, p),
              "0/6 nodes are available: 2 node(s) had untolerated taint {gpu: yes}, 4 node(s) "
              "didn't match pod topology spread constraints.");
    sched_pod_free(p);
    p = incoming(s, podtext("p", "ns", "'app':'x'", SPREAD(TSC(1, ",'nodeTaintsPolicy':'Maybe'"))),
                 &err);
    CHECK(p == NULL);
    CHECKF(strstr(err.msg, "nodeTaintsPolicy") != NULL, "%s", err.msg);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_match_label_keys(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a1", "a");
    add_node(s, "b1", "b");
    place(s, "a1", podtext("v1a", "ns", "'app':'x','rev':'1'", ""));
    place(s, "a1", podtext("v1b", "ns", "'app':'x','rev':'1'", ""));
    place(s, "b1", podtext("v2a", "ns", "'app':'x','rev':'2'", ""));
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    /* only rev 2 pods count for a rev 2 pod: a=0 b=1 */
    sched_pod *p = incoming(
        s, podtext("p", "ns", "'app':'x','rev':'2'", SPREAD(TSC(1, ",'matchLabelKeys':['rev']"))),
        &err);
    CHECK_STR(feasible(fw, s, p), "a1");
    sched_pod_free(p);
    /* without matchLabelKeys: a=2 b=1 */
    p = incoming(s, podtext("p", "ns", "'app':'x','rev':'2'", SPREAD(TSC(1, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "b1");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Spread runs after NodeResourcesFit; a batch spreads through reserve even with a policy that
 * packs nodes. */
static void test_order_and_batch(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a1", "a");
    add_node(s, "b1", "b");
    add_node(s, "c1", "c");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fill-nodes", &err);
    sched_pod *ps[4];
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        ps[i] = incoming(s, podtext(name, "ns", "'app':'x'", SPREAD(TSC(1, ""))), &err);
    }
    int per_zone[3] = {0};
    for (int i = 0; i < 3; i++) {
        sched_decision d;
        CHECK(sched_framework_schedule(fw, s, ps[i], 0, &d, &err) == 0 && d.node >= 0);
        if (d.node < 0)
            continue;
        per_zone[sched_node_label(sched_snapshot_node(s, (size_t)d.node), ZONE)[0] - 'a']++;
        CHECK(sched_framework_reserve(fw, s, ps[i], d.node, &err) == 0);
    }
    CHECK(per_zone[0] == 1 && per_zone[1] == 1 && per_zone[2] == 1);
    CHECK_STR(feasible(fw, s, ps[3]), "a1,b1,c1");
    /* fill a1's cpu: it is reported short of cpu, not as a spread violation */
    sched_resources big = {0};
    big.v[SCHED_RES_CPU] = 4000;
    CHECK(sched_snapshot_add_pod(s, "hog", "a1", &big, &err) == 0);
    sched_decision d;
    CHECK(sched_framework_schedule(fw, s, ps[3], 0, &d, &err) == 0);
    uint32_t det;
    CHECK_INT(
        sched_framework_node_status(fw, (size_t)sched_snapshot_node_index(s, "a1"), &det, NULL),
        SCHED_FILTER_RESOURCES);
    for (int i = 0; i < 4; i++)
        sched_pod_free(ps[i]);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_max_skew);
    RUN(test_missing_label);
    RUN(test_min_domains);
    RUN(test_inclusion_policies);
    RUN(test_match_label_keys);
    RUN(test_order_and_batch);
    return TEST_SUMMARY();
}
