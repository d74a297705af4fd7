/* scheduler_preferences_test.c: preference scoring beside the policy (framework/cycle.c
 * combine_preferences, plugins/taint_toleration.c's score): kube-scheduler's normalise-weight-
 * sum when a preference plugin has something to say, with hand-worked numbers; the policy's raw
 * score untouched (values and ties) when none has; weights set and rejected by name. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/filters.h"

/* A policy whose raw score is fixed per node: a-1 10, b-1 0, b-2 -10 (any sign, any range). */
static int64_t fixed_score(void *state, const sched_cycle *c, const sched_node *n) {
    if (strcmp(n->name, "a-1") == 0)
        return 10;
    return strcmp(n->name, "b-1") == 0 ? 0 : -10;
}

static sched_framework *fw_fixed(void) {
    tm_err err;
    sched_plugin pl = {.name = "fixed", .score = fixed_score};
    sched_framework *fw = sched_framework_new(&pl, &err);
    if (!fw)
        printf("    setup: %s\n", err.msg);
    return fw;
}

/* Nodes a-1, b-1, b-2 (4 cpu each) with 2, 1 and 0 PreferNoSchedule taints (prefer > 0), or
 * a NoSchedule-free cluster without them (prefer == 0). */
static sched_snapshot *cluster(int prefer) {
    sched_snapshot *s = sched_snapshot_new();
    const char *names[] = {"a-1", "b-1", "b-2"};
    for (int i = 0; i < 3; i++) {
        sched_node *n = sched_node_new(names[i]);
        n->allocatable.v[SCHED_RES_CPU] = 4000;
        n->allocatable.v[SCHED_RES_MEMORY] = 8LL << 30;
        n->allocatable.v[SCHED_RES_PODS] = 110;
        for (int t = 0; prefer && t < 2 - i; t++)
            sched_node_add_taint(n, t ? "spot" : "slow", "yes", SCHED_EFFECT_PREFER_NO_SCHEDULE);
        tm_err err;
        if (sched_snapshot_put_node(s, n, &err) != 0)
            printf("    put_node: %s\n", err.msg);
    }
    return s;
}

static sched_pod *pod(const char *name) {
    sched_pod *p = sched_pod_new("default", name, name);
    p->requests.v[SCHED_RES_CPU] = 100;
    return p;
}

static int64_t node_score(const sched_framework *fw, size_t i) {
    int64_t sc = 0;
    sched_framework_node_status(fw, i, NULL, &sc);
    return sc;
}

/* No PreferNoSchedule taint anywhere: the policy's raw scores decide, not normalised (10, 0,
 * -10 would be 100, 50, 0). */
static void test_no_preferences_raw_policy(void) {
    sched_framework *fw = fw_fixed();
    sched_snapshot *s = cluster(0);
    sched_pod *p = pod("p");
    sched_decision d;
    tm_err err;
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "a-1");
    CHECK(d.score == 10);
    CHECK(node_score(fw, 1) == 0);
    CHECK(node_score(fw, 2) == -10);
    const char *names[8];
    int64_t parts[8];
    CHECK(sched_framework_score_parts(fw, 0, names, parts, 8) == 0); /* no parts: raw policy */
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* Taints 2, 1, 0 untolerated: TaintToleration 0, 50, 100 (reverse), times 3; the policy
 * 10, 0, -10 -> 100, 50, 0, times 1; NodeResourcesBalancedAllocation, which joins once a
 * preference is scored: cpu 100/4000 = 0.025, memory 0 -> (1 - 0.0125) * 100 = 98 on every
 * node: totals 198, 298, 398, b-2 wins. Policy weight 5: 598, 498, 398, a-1 wins. */
static void test_taint_toleration_weighted(void) {
    sched_framework *fw = fw_fixed();
    sched_snapshot *s = cluster(1);
    sched_pod *p = pod("p");
    sched_decision d;
    tm_err err;
    CHECK(sched_framework_score_weight(fw, "policy") == SCHED_POLICY_WEIGHT_DEFAULT);
    CHECK(sched_framework_score_weight(fw, "TaintToleration") == 3);
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "b-2");
    CHECK(node_score(fw, 0) == 198);
    CHECK(node_score(fw, 1) == 298);
    CHECK(node_score(fw, 2) == 398);
    const char *names[8];
    int64_t parts[8];
    CHECK(sched_framework_score_parts(fw, 1, names, parts, 8) == 3);
    CHECK_STR(names[0], "policy");
    CHECK(parts[0] == 50);
    CHECK_STR(names[1], "TaintToleration");
    CHECK(parts[1] == 150);
    CHECK_STR(names[2], "NodeResourcesBalancedAllocation");
    CHECK(parts[2] == 98);
    CHECK(sched_framework_set_score_weight(fw, "policy", 5, &err) == 0);
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "a-1");
    CHECK(node_score(fw, 0) == 598);
    CHECK(node_score(fw, 1) == 498);
    CHECK(node_score(fw, 2) == 398);
    /* weight 0 turns the preference off: the raw policy again */
    CHECK(sched_framework_set_score_weight(fw, "TaintToleration", 0, &err) == 0);
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK(d.score == 10);
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* A pod tolerating every PreferNoSchedule taint: TaintToleration scores every node alike, so it
 * says nothing and the policy decides alone, exactly as with no taint (raw score, no parts). */
static void test_tolerated_taints(void) {
    sched_framework *fw = fw_fixed();
    sched_snapshot *s = cluster(1);
    sched_pod *p = pod("p");
    p->tolerations = calloc(1, sizeof *p->tolerations);
    p->tolerations[0] = (sched_toleration){.key = strdup(""),
                                           .op = SCHED_TOL_EXISTS,
                                           .value = strdup(""),
                                           .effect = SCHED_EFFECT_PREFER_NO_SCHEDULE};
    p->n_tolerations = 1;
    sched_decision d;
    tm_err err;
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "a-1");
    CHECK(d.score == 10);
    const char *names[8];
    int64_t parts[8];
    CHECK(sched_framework_score_parts(fw, 0, names, parts, 8) == 0);
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* A pod with preferred node affinity, parsed from JSON: weight 30 for disk=ssd (a-1 and b-2
 * here), 50 for zone=b (b-1, b-2): raw a-1 30, b-1 50, b-2 80 -> 37, 62, 100 (100 * raw / 80,
 * truncated), times 2; the policy 100, 50, 0 -> totals 174, 174, 200: b-2. A weight 0 term and
 * an empty preference add nothing. */
static void test_node_affinity_preferred(void) {
    sched_framework *fw = fw_fixed();
    sched_snapshot *s = cluster(0);
    sched_node_set_label((sched_node *)sched_snapshot_node(s, 0), "disk", "ssd");
    sched_node_set_label((sched_node *)sched_snapshot_node(s, 2), "disk", "ssd");
    sched_node_set_label((sched_node *)sched_snapshot_node(s, 1), "zone", "b");
    sched_node_set_label((sched_node *)sched_snapshot_node(s, 2), "zone", "b");
    json_error_t je;
    json_t *j =
        json_loads("{\"metadata\":{\"namespace\":\"default\",\"name\":\"p\",\"uid\":\"p\"},"
                   "\"spec\":{\"containers\":[{\"name\":\"c\"}],\"affinity\":{\"nodeAffinity\":{"
                   "\"preferredDuringSchedulingIgnoredDuringExecution\":["
                   "{\"weight\":30,\"preference\":{\"matchExpressions\":[{\"key\":\"disk\","
                   "\"operator\":\"In\",\"values\":[\"ssd\"]}]}},"
                   "{\"weight\":0,\"preference\":{\"matchExpressions\":[{\"key\":\"disk\","
                   "\"operator\":\"Exists\"}]}},"
                   "{\"weight\":40,\"preference\":{}},"
                   "{\"weight\":50,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\","
                   "\"operator\":\"In\",\"values\":[\"b\"]}]}}]}}}}",
                   0, &je);
    CHECK(j != NULL);
    tm_err err;
    sched_pod *p = sched_pod_from_json(s, j, NULL, &err);
    json_decref(j);
    CHECK(p != NULL);
    if (!p) {
        printf("    %s\n", err.msg);
        return;
    }
    CHECK(p->n_node_prefs == 3);
    sched_decision d;
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "b-2");
    CHECK(node_score(fw, 0) == 174);
    CHECK(node_score(fw, 1) == 174);
    CHECK(node_score(fw, 2) == 200);
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* A placed pod app=web on a-1; the incoming pod's preferred anti-affinity (weight 100, per
 * hostname) against app=web: raw -100, 0, 0 -> min..max 0, 100, 100, times 2; the policy 100,
 * 50, 0: totals 100, 250, 200, b-1 (a-1 by the policy alone). */
static void test_interpod_preferred_anti(void) {
    sched_framework *fw = fw_fixed();
    sched_snapshot *s = cluster(0);
    for (size_t i = 0; i < 3; i++) {
        sched_node *n = (sched_node *)sched_snapshot_node(s, i);
        sched_node_set_label(n, "kubernetes.io/hostname", n->name);
    }
    tm_err err;
    json_error_t je;
    json_t *web = json_loads("{\"metadata\":{\"namespace\":\"default\",\"name\":\"web\","
                             "\"uid\":\"web\",\"labels\":{\"app\":\"web\"}},"
                             "\"spec\":{\"nodeName\":\"a-1\",\"containers\":[{\"name\":\"c\"}]}}",
                             0, &je);
    CHECK(web && sched_snapshot_add_pod_json(s, web, "a-1", &err) == 0);
    json_decref(web);
    json_t *j =
        json_loads("{\"metadata\":{\"namespace\":\"default\",\"name\":\"p\",\"uid\":\"p\"},"
                   "\"spec\":{\"containers\":[{\"name\":\"c\"}],\"affinity\":{\"podAntiAffinity\":{"
                   "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,"
                   "\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},"
                   "\"topologyKey\":\"kubernetes.io/hostname\"}}]}}}}",
                   0, &je);
    sched_pod *p = j ? sched_pod_from_json(s, j, NULL, &err) : NULL;
    json_decref(j);
    CHECK(p != NULL);
    if (!p)
        return;
    sched_decision d;
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "b-1");
    CHECK(node_score(fw, 0) == 100);
    CHECK(node_score(fw, 1) == 250);
    CHECK(node_score(fw, 2) == 200);
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* The same from the other side: the placed pod on a-1 holds the preferred anti-affinity
 * (weight 100, per hostname) against app=db, and the incoming app=db pod has no preferred terms
 * of its own (only placed pods with preferred terms are walked then; a placed pod without any
 * sits on b-2 and counts for nothing): raw -100, 0, 0 -> the same totals 100, 250, 200: b-1. */
static void test_interpod_placed_pods_preferences(void) {
    sched_framework *fw = fw_fixed();
    sched_snapshot *s = cluster(0);
    for (size_t i = 0; i < 3; i++) {
        sched_node *n = (sched_node *)sched_snapshot_node(s, i);
        sched_node_set_label(n, "kubernetes.io/hostname", n->name);
    }
    tm_err err;
    json_error_t je;
    json_t *guard = json_loads(
        "{\"metadata\":{\"namespace\":\"default\",\"name\":\"guard\",\"uid\":\"guard\"},"
        "\"spec\":{\"nodeName\":\"a-1\",\"containers\":[{\"name\":\"c\"}],"
        "\"affinity\":{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuring"
        "Execution\":[{\"weight\":100,\"podAffinityTerm\":{\"labelSelector\":"
        "{\"matchLabels\":{\"app\":\"db\"}},\"topologyKey\":\"kubernetes.io/hostname\"}}]}}}}",
        0, &je);
    CHECK(guard && sched_snapshot_add_pod_json(s, guard, "a-1", &err) == 0);
    json_decref(guard);
    json_t *plain = json_loads("{\"metadata\":{\"namespace\":\"default\",\"name\":\"plain\","
                               "\"uid\":\"plain\",\"labels\":{\"app\":\"db\"}},"
                               "\"spec\":{\"nodeName\":\"b-2\",\"containers\":[{\"name\":\"c\"}]}}",
                               0, &je);
    CHECK(plain && sched_snapshot_add_pod_json(s, plain, "b-2", &err) == 0);
    json_decref(plain);
    CHECK(sched_snapshot_podset_count(s, SCHED_PODSET_PREF) == 1);
    json_t *j =
        json_loads("{\"metadata\":{\"namespace\":\"default\",\"name\":\"p\",\"uid\":\"p\","
                   "\"labels\":{\"app\":\"db\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
                   0, &je);
    sched_pod *p = j ? sched_pod_from_json(s, j, NULL, &err) : NULL;
    json_decref(j);
    CHECK(p != NULL);
    if (!p)
        return;
    sched_decision d;
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "b-1");
    CHECK(node_score(fw, 0) == 100);
    CHECK(node_score(fw, 1) == 250);
    CHECK(node_score(fw, 2) == 200);
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void test_weight_errors(void) {
    sched_framework *fw = fw_fixed();
    tm_err err;
    CHECK(sched_framework_set_score_weight(fw, "NodeAfinity", 2, &err) == -1);
    CHECK(strstr(err.msg, "scoreWeights.NodeAfinity") != NULL);
    CHECK(sched_framework_set_score_weight(fw, "TaintToleration", 101, &err) == -1);
    CHECK(strstr(err.msg, "scoreWeights.TaintToleration") != NULL);
    CHECK(sched_framework_set_score_weight(fw, "policy", -1, &err) == -1);
    CHECK(sched_framework_score_weight(fw, "nope") == -1);
    sched_framework_free(fw);
}

int main(void) {
    RUN(test_no_preferences_raw_policy);
    RUN(test_taint_toleration_weighted);
    RUN(test_tolerated_taints);
    RUN(test_node_affinity_preferred);
    RUN(test_interpod_preferred_anti);
    RUN(test_interpod_placed_pods_preferences);
    RUN(test_weight_errors);
    return TEST_SUMMARY();
}
