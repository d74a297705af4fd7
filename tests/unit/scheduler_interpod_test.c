/* scheduler_interpod_test.c: the InterPodAffinity filter (required terms): affinity by zone,
 * anti-affinity by hostname, the symmetry rule (placed pods' anti-affinity), the first-pod
 * exception for a term matching the pod itself, namespaces and namespaceSelector, term parsing
 * errors, the reasons in the FailedScheduling message, and batches through reserve. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler_filter_helpers.h"
#include "scheduler/cmd/explain.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"

#define ZONE "topology.kubernetes.io/zone"
#define HOST "kubernetes.io/hostname"
#define TERM(sel, key, extra)                                                                      \
    "{'labelSelector':{'matchLabels':{" sel "}},'topologyKey':'" key "'" extra "}"
#define AFF(terms)                                                                                 \
    ",'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[" terms "]}}"
#define ANTI(terms)                                                                                \
    ",'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[" terms "]" \
    "}"                                                                                            \
    "}"

/* Zones a (a1, a2), b (b1), c (c1), and a node without a zone label (nz). */
static sched_snapshot *cluster(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a1", "a");
    add_node(s, "a2", "a");
    add_node(s, "b1", "b");
    add_node(s, "c1", "c");
    add_node(s, "nz", NULL);
    return s;
}

static void test_affinity_zone(void) {
    sched_snapshot *s = cluster();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    place(s, "a1", podtext("db", "ns", "'app':'db'", ""));
    place(s, "c1", podtext("db-other-ns", "other", "'app':'db'", ""));
    sched_pod *p =
        incoming(s, podtext("p", "ns", "'app':'web'", AFF(TERM("'app':'db'", ZONE, ""))), &err);
    CHECK(p != NULL);
    CHECK_STR(feasible(fw, s, p), "a1,a2"); /* the zone of the db pod in the pod's namespace */
    uint32_t d;
    CHECK_INT(sched_filter_node(s, p, sched_snapshot_node_by_name(s, "b1"), &d),
              SCHED_FILTER_INTERPOD);
    CHECK_INT(d, SCHED_INTERPOD_AFFINITY);
    CHECK(!sched_filter_resolvable(SCHED_FILTER_INTERPOD, d));
    sched_pod_free(p);
    /* explicit namespaces: the db pod of namespace "other" is in zone c */
    p = incoming(
        s,
        podtext("p", "ns", "'app':'web'", AFF(TERM("'app':'db'", ZONE, ",'namespaces':['other']"))),
        &err);
    CHECK_STR(feasible(fw, s, p), "c1");
    sched_pod_free(p);
    /* namespaceSelector {}: every namespace */
    p = incoming(
        s,
        podtext("p", "ns", "'app':'web'", AFF(TERM("'app':'db'", ZONE, ",'namespaceSelector':{}"))),
        &err);
    CHECK_STR(feasible(fw, s, p), "a1,a2,c1");
    sched_pod_free(p);
    /* two terms: a pod must match both; topology keys must all be on the node */
    p = incoming(s,
                 podtext("p", "ns", "'app':'web'",
                         AFF(TERM("'app':'db'", ZONE, "") "," TERM("'app':'db'", HOST, ""))),
                 &err);
    CHECK_STR(feasible(fw, s, p), "a1");
    sched_pod_free(p);
    /* nothing matches and the pod does not match its own term: nowhere */
    p = incoming(s, podtext("p", "ns", "'app':'web'", AFF(TERM("'app':'cache'", ZONE, ""))), &err);
    CHECK_STR(feasible(fw, s, p),
              "0/5 nodes are available: 5 node(s) didn't match pod affinity rules.");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_anti_affinity_hostname(void) {
    sched_snapshot *s = cluster();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    place(s, "a1", podtext("w1", "ns", "'app':'web'", ""));
    place(s, "b1", podtext("w2", "ns", "'app':'web'", ""));
    place(s, "c1", podtext("w3", "other", "'app':'web'", "")); /* another namespace */
    sched_pod *p =
        incoming(s, podtext("w4", "ns", "'app':'web'", ANTI(TERM("'app':'web'", HOST, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "a2,c1,nz");
    sched_pod_free(p);
    /* by zone: zones a and b hold web pods; the node without a zone label is fine */
    p = incoming(s, podtext("w4", "ns", "'app':'web'", ANTI(TERM("'app':'web'", ZONE, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "c1,nz");
    sched_pod_free(p);
    /* a non-empty namespaceSelector is not evaluated: anti-affinity assumes it matches all */
    p = incoming(s,
                 podtext("w4", "ns", "'app':'web'",
                         ANTI(TERM("'app':'web'", HOST,
                                   ",'namespaceSelector':{'matchLabels':{'team':'x'}}"))),
                 &err);
    CHECK_STR(feasible(fw, s, p), "a2,nz");
    sched_pod_free(p);
    /* no labelSelector: the term matches no pod */
    p = incoming(s, podtext("w4", "ns", "'app':'web'", ANTI("{'topologyKey':'" HOST "'}")), &err);
    CHECK_STR(feasible(fw, s, p), "a1,a2,b1,c1,nz");
    sched_pod_free(p);
    p = incoming(s,
                 podtext("w4", "ns", "'app':'web'",
                         ",'nodeSelector':{'" ZONE "':'a'}" ANTI(TERM("'app':'web'", ZONE, ""))),
                 &err);
    CHECK_STR(feasible(fw, s, p),
              "0/5 nodes are available: 2 node(s) didn't match pod anti-affinity rules, 3 "
              "node(s) didn't match Pod's node affinity/selector.");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* A placed pod's anti-affinity keeps matching pods out of its domain, even pods without any
 * affinity of their own. */
static void test_symmetry(void) {
    sched_snapshot *s = cluster();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    place(s, "a1", podtext("quiet", "ns", "'app':'db'", ANTI(TERM("'role':'noisy'", ZONE, ""))));
    CHECK_INT(sched_snapshot_podset_count(s, SCHED_PODSET_ANTI), 1);
    sched_pod *p = incoming(s, podtext("n", "ns", "'role':'noisy'", ""), &err);
    CHECK_STR(feasible(fw, s, p), "b1,c1,nz");
    uint32_t d = 9;
    CHECK_INT(sched_filter_node(s, p, sched_snapshot_node_by_name(s, "a2"), &d),
              SCHED_FILTER_INTERPOD);
    CHECK_INT(d, SCHED_INTERPOD_EXISTING_ANTI);
    sched_pod_free(p);
    p = incoming(s, podtext("n", "ns", "'role':'calm'", ""), &err);
    CHECK_STR(feasible(fw, s, p), "a1,a2,b1,c1,nz");
    sched_pod_free(p);
    /* the placed pod's term defaults to its own namespace */
    p = incoming(s, podtext("n", "elsewhere", "'role':'noisy'", ""), &err);
    CHECK_STR(feasible(fw, s, p), "a1,a2,b1,c1,nz");
    sched_pod_free(p);
    p = incoming(s, podtext("n", "ns", "'role':'noisy'", ",'nodeSelector':{'" ZONE "':'a'}"), &err);
    CHECK_STR(feasible(fw, s, p),
              "0/5 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity "
              "rules, 3 node(s) didn't match Pod's node affinity/selector.");
    sched_pod_free(p);
    /* explain takes the recorded pod out and puts it back with its metadata */
    p = incoming(s, podtext("quiet", "ns", "'app':'db'", ANTI(TERM("'role':'noisy'", ZONE, ""))),
                 &err);
    json_t *doc = sched_explain(fw, s, p, 0, &err);
    CHECK(doc != NULL);
    json_decref(doc);
    CHECK_INT(sched_snapshot_podset_count(s, SCHED_PODSET_ANTI), 1);
    sched_pod_free(p);
    /* the pod is gone: so is its rule */
    CHECK_INT(sched_snapshot_remove_pod(s, "quiet-uid"), 0);
    CHECK_INT(sched_snapshot_podset_count(s, SCHED_PODSET_ANTI), 0);
    p = incoming(s, podtext("n", "ns", "'role':'noisy'", ""), &err);
    CHECK_STR(feasible(fw, s, p), "a1,a2,b1,c1,nz");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* The first pod of a group with affinity to itself goes anywhere the topology key exists; the
 * next ones follow it (reserve records the first for the rest of the batch). */
static void test_self_match(void) {
    sched_snapshot *s = cluster();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_pod *p1 = incoming(
        s, podtext("c1", "ns", "'app':'cache'", AFF(TERM("'app':'cache'", ZONE, ""))), &err);
    sched_pod *p2 = incoming(
        s, podtext("c2", "ns", "'app':'cache'", AFF(TERM("'app':'cache'", ZONE, ""))), &err);
    CHECK_STR(feasible(fw, s, p1), "a1,a2,b1,c1");
    sched_decision d;
    CHECK(sched_framework_schedule(fw, s, p1, 0, &d, &err) == 0 && d.node >= 0);
    const char *zone = sched_node_label(sched_snapshot_node(s, (size_t)d.node), ZONE);
    CHECK(sched_framework_reserve(fw, s, p1, d.node, &err) == 0);
    char want[64];
    snprintf(want, sizeof want, "%s",
             strcmp(zone, "a") == 0 ? "a1,a2"
             : zone[0] == 'b'       ? "b1"
                                    : "c1");
    CHECK_STR(feasible(fw, s, p2), want);
    sched_pod_free(p2);
    /* a non-empty namespaceSelector turns the exception off (its namespaces are unknown) */
    sched_snapshot_remove_pod(s, "c1-uid");
    p2 = incoming(s,
                  podtext("c2", "ns", "'app':'cache'",
                          AFF(TERM("'app':'cache'", ZONE,
                                   ",'namespaces':['ns'],'namespaceSelector':{'matchLabels':"
                                   "{'team':'x'}}"))),
                  &err);
    CHECK_STR(feasible(fw, s, p2),
              "0/5 nodes are available: 5 node(s) didn't match pod affinity rules.");
    sched_pod_free(p2);
    sched_pod_free(p1);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_parse_errors(void) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_pod *p = incoming(s, podtext("p", "ns", "", AFF("{'labelSelector':{}}")), &err);
    CHECK(p == NULL);
    CHECKF(strstr(err.msg, "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
                           "topologyKey is missing") != NULL,
           "%s", err.msg);
    p = incoming(s,
                 podtext("p", "ns", "",
                         ANTI("{'labelSelector':{'matchExpressions':[{'key':'a','operator':"
                              "'Near'}]},'topologyKey':'x'}")),
                 &err);
    CHECK(p == NULL);
    CHECKF(strstr(err.msg, "labelSelector") != NULL && strstr(err.msg, "ns/p") != NULL, "%s",
           err.msg);
    /* a placed pod with a broken anti-affinity term still takes capacity */
    json_t *j = J(podtext("q", "ns", "", ANTI("{}")));
    CHECK_INT(sched_snapshot_add_pod_json(s, j, "n1", &err), -1);
    CHECKF(strstr(err.msg, "topologyKey is missing") && strstr(err.msg, "recorded"), "%s", err.msg);
    CHECK_STR(sched_snapshot_pod_node(s, "q-uid"), "n1");
    CHECK(sched_snapshot_pod_meta(s, "q-uid") == NULL);
    json_decref(j);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_affinity_zone);
    RUN(test_anti_affinity_hostname);
    RUN(test_symmetry);
    RUN(test_self_match);
    RUN(test_parse_errors);
    return TEST_SUMMARY();
}
