/* scheduler_scores_test.c: the kube-scheduler scores added beside the policy, with values
 * worked out by hand from kube's formulas: PodTopologySpread's ScheduleAnyway score
 * (plugins/pod_topology_spread.c), NodeResourcesBalancedAllocation and ImageLocality
 * (secondary scores: a weighted part when a user preference is scored, else the policy's
 * tie-break), the snapshot's counters behind their O(1) PreScores (PreferNoSchedule nodes,
 * nodes per image). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/filters.h"

/* A policy that rates every node alike (kube's view of identical empty nodes)... */
static int64_t flat_score(void *state, const sched_cycle *c, const sched_node *n) {
    return 7;
}
/* ...and one with a strict order: a-1 10, then the others 0. */
static int64_t a1_score(void *state, const sched_cycle *c, const sched_node *n) {
    return strcmp(n->name, "a-1") == 0 ? 10 : 0;
}

static sched_framework *fw_with(int64_t (*score)(void *, const sched_cycle *, const sched_node *)) {
    tm_err err;
    sched_plugin pl = {.name = "fixed", .score = score};
    sched_framework *fw = sched_framework_new(&pl, &err);
    if (!fw)
        printf("    setup: %s\n", err.msg);
    return fw;
}

static sched_node *node(const char *name, const char *zone, int64_t cpu, int64_t mem) {
    sched_node *n = sched_node_new(name);
    n->allocatable.v[SCHED_RES_CPU] = cpu;
    n->allocatable.v[SCHED_RES_MEMORY] = mem;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    sched_node_set_label(n, "kubernetes.io/hostname", name);
    if (zone)
        sched_node_set_label(n, "topology.kubernetes.io/zone", zone);
    return n;
}

static void put(sched_snapshot *s, sched_node *n) {
    tm_err err;
    if (sched_snapshot_put_node(s, n, &err) != 0)
        printf("    put_node: %s\n", err.msg);
}

static sched_pod *pod_json(sched_snapshot *s, const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    tm_err err = {0};
    sched_pod *p = j ? sched_pod_from_json(s, j, NULL, &err) : NULL;
    if (!p)
        printf("    pod: %s %s\n", j ? err.msg : je.text, text);
    json_decref(j);
    return p;
}

/* Places a pod app=LABEL in namespace ns on node. */
static void place(sched_snapshot *s, const char *uid, const char *ns, const char *app,
                  const char *on) {
    char text[512];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"uid\":\"%s\","
             "\"labels\":{\"app\":\"%s\"}},\"spec\":{\"nodeName\":\"%s\","
             "\"containers\":[{\"name\":\"c\"}]}}",
             ns, uid, uid, app, on);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    tm_err err;
    if (!j || sched_snapshot_add_pod_json(s, j, on, &err) != 0)
        printf("    place %s failed\n", uid);
    json_decref(j);
}

static int64_t node_score(const sched_framework *fw, const sched_snapshot *s, const char *name) {
    int64_t sc = 0;
    sched_framework_node_status(fw, (size_t)sched_snapshot_node_index(s, name), NULL, &sc);
    return sc;
}

/* The part of plugin `name` in node's total, -1 when it took no part. */
static int64_t part_of(const sched_framework *fw, const sched_snapshot *s, const char *node_name,
                       const char *name) {
    const char *names[16];
    int64_t parts[16];
    size_t n = sched_framework_score_parts(fw, (size_t)sched_snapshot_node_index(s, node_name),
                                           names, parts, 16);
    for (size_t k = 0; k < n; k++)
        if (strcmp(names[k], name) == 0)
            return parts[k];
    return -1;
}

/* ---- PodTopologySpread, ScheduleAnyway ---- */

/* Zones a (a-1, a-2), b (b-1), c (c-1), and d-1 without a zone label. Pods app=web: 2 on a-1,
 * 1 on b-1, 5 on d-1 (a node without the key counts nothing), 1 on c-1 in another namespace
 * (not counted). A pod with a soft zone constraint (maxSkew 1, app=web): domains a, b, c among
 * the feasible nodes -> weight log(3 + 2); counts a 2, b 1, c 0; raw round(2 * 1.609) = 3
 * (a-1, a-2), round(1.609) = 2 (b-1), 0 (c-1); d-1 lacks the key: ignored, 0. Normalised
 * 100 * (3 + 0 - raw) / 3: 0, 0, 33, 100; times 2: 0, 0, 66, 200. The policy rates all alike
 * (100 each): c-1 wins with 300. */
static void test_spread_zone(void) {
    sched_framework *fw = fw_with(flat_score);
    sched_snapshot *s = sched_snapshot_new();
    put(s, node("a-1", "a", 4000, 8LL << 30));
    put(s, node("a-2", "a", 4000, 8LL << 30));
    put(s, node("b-1", "b", 4000, 8LL << 30));
    put(s, node("c-1", "c", 4000, 8LL << 30));
    put(s, node("d-1", NULL, 4000, 8LL << 30));
    place(s, "w1", "default", "web", "a-1");
    place(s, "w2", "default", "web", "a-1");
    place(s, "w3", "default", "web", "b-1");
    for (int i = 0; i < 5; i++) {
        char uid[8];
        snprintf(uid, sizeof uid, "d%d", i);
        place(s, uid, "default", "web", "d-1");
    }
    place(s, "other", "other-ns", "web", "c-1");
    sched_pod *p =
        pod_json(s, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"p\",\"uid\":\"p\","
                    "\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}],"
                    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
                    "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"ScheduleAnyway\","
                    "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]}}");
    CHECK(p && p->n_soft_spread == 1 && p->n_spread == 0);
    sched_decision d;
    tm_err err;
    if (p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0) {
        CHECK_STR(d.node_name, "c-1");
        CHECK_INT(part_of(fw, s, "a-1", "PodTopologySpread"), 0);
        CHECK_INT(part_of(fw, s, "a-2", "PodTopologySpread"), 0);
        CHECK_INT(part_of(fw, s, "b-1", "PodTopologySpread"), 66);
        CHECK_INT(part_of(fw, s, "c-1", "PodTopologySpread"), 200);
        CHECK_INT(part_of(fw, s, "d-1", "PodTopologySpread"), 0);
        CHECK_INT(node_score(fw, s, "c-1"), 300);
        CHECK_INT(node_score(fw, s, "b-1"), 166);
    } else {
        CHECK(false);
    }
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* Per hostname (maxSkew 2): pods on the node itself, a-1 2, b-1 1, others 0; the size is the
 * feasible nodes with the key, 4 -> weight log(6) = 1.792; raw round(cnt * 1.792 + 1): a-1
 * round(4.58) = 5, a-2 1, b-1 round(2.79) = 3, c-1 1. Normalised 100 * (5 + 1 - raw) / 5:
 * 20, 100, 60, 100; times 2: 40, 200, 120, 200. The policy prefers a-1 (10 vs 0 -> 100 vs 0):
 * a-1 140, a-2 200, b-1 120, c-1 200: a-2 (name order among the tied). */
static void test_spread_hostname(void) {
    sched_framework *fw = fw_with(a1_score);
    sched_snapshot *s = sched_snapshot_new();
    put(s, node("a-1", "a", 4000, 8LL << 30));
    put(s, node("a-2", "a", 4000, 8LL << 30));
    put(s, node("b-1", "b", 4000, 8LL << 30));
    put(s, node("c-1", "c", 4000, 8LL << 30));
    place(s, "w1", "default", "web", "a-1");
    place(s, "w2", "default", "web", "a-1");
    place(s, "w3", "default", "web", "b-1");
    sched_pod *p =
        pod_json(s, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"p\",\"uid\":\"p\"},"
                    "\"spec\":{\"containers\":[{\"name\":\"c\"}],"
                    "\"topologySpreadConstraints\":[{\"maxSkew\":2,\"topologyKey\":"
                    "\"kubernetes.io/hostname\",\"whenUnsatisfiable\":\"ScheduleAnyway\","
                    "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]}}");
    sched_decision d;
    tm_err err;
    if (p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0) {
        CHECK_STR(d.node_name, "a-2");
        CHECK_INT(part_of(fw, s, "a-1", "PodTopologySpread"), 40);
        CHECK_INT(part_of(fw, s, "a-2", "PodTopologySpread"), 200);
        CHECK_INT(part_of(fw, s, "b-1", "PodTopologySpread"), 120);
        CHECK_INT(part_of(fw, s, "c-1", "PodTopologySpread"), 200);
        CHECK_INT(node_score(fw, s, "a-1"), 140);
    } else {
        CHECK(false);
    }
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* No ScheduleAnyway constraint (a DoNotSchedule one only): PodTopologySpread says nothing, the
 * policy's raw score decides (no parts). A ScheduleAnyway one with no matching pod anywhere
 * scores every node alike (raw maxSkew - 1 = 0): silent too, the same raw policy score. */
static void test_spread_silent(void) {
    sched_framework *fw = fw_with(a1_score);
    sched_snapshot *s = sched_snapshot_new();
    put(s, node("a-1", "a", 4000, 8LL << 30));
    put(s, node("b-1", "b", 4000, 8LL << 30));
    sched_pod *hard =
        pod_json(s, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"h\",\"uid\":\"h\"},"
                    "\"spec\":{\"containers\":[{\"name\":\"c\"}],"
                    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
                    "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"DoNotSchedule\","
                    "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]}}");
    sched_pod *soft =
        pod_json(s, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"q\",\"uid\":\"q\"},"
                    "\"spec\":{\"containers\":[{\"name\":\"c\"}],"
                    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
                    "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"ScheduleAnyway\","
                    "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]}}");
    sched_decision d;
    tm_err err;
    CHECK(hard && sched_framework_schedule(fw, s, hard, 0, &d, &err) == 0);
    CHECK_INT(d.score, 10); /* raw policy */
    CHECK_INT(part_of(fw, s, "a-1", "PodTopologySpread"), -1);
    CHECK(soft && sched_framework_schedule(fw, s, soft, 0, &d, &err) == 0);
    CHECK_INT(d.score, 10);
    CHECK_INT(part_of(fw, s, "a-1", "PodTopologySpread"), -1);
    CHECK_INT(part_of(fw, s, "b-1", "PodTopologySpread"), -1);
    CHECK_STR(d.node_name, "a-1");
    sched_pod_free(hard);
    sched_pod_free(soft);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* ---- NodeResourcesBalancedAllocation ---- */

/* cpu (1000 + 1000) / 4000 = 0.5, memory (1 + 1) / 8 GiB = 0.25: (1 - 0.125) * 100 = 87;
 * cpu (3500 + 1000) / 4000 capped at 1, memory 0.25: (1 - 0.375) * 100 = 62; a node without
 * memory allocatable: one fraction, std 0: 100. */
static void test_balanced_formula(void) {
    sched_resources pod = {0};
    pod.v[SCHED_RES_CPU] = 1000;
    pod.v[SCHED_RES_MEMORY] = 1LL << 30;
    sched_node *n = node("n", NULL, 4000, 8LL << 30);
    n->requested.v[SCHED_RES_CPU] = 1000;
    n->requested.v[SCHED_RES_MEMORY] = 1LL << 30;
    CHECK_INT(sched_balanced_allocation_score(&pod, n), 87);
    n->requested.v[SCHED_RES_CPU] = 3500;
    CHECK_INT(sched_balanced_allocation_score(&pod, n), 62);
    n->allocatable.v[SCHED_RES_MEMORY] = 0;
    CHECK_INT(sched_balanced_allocation_score(&pod, n), 100);
    sched_node_free(n);
}

/* The policy rates a-1 and b-1 alike; a-1's cpu is half taken already, b-1 is empty. A pod of
 * 1000 cpu, 2 GiB: a-1 cpu 0.75, memory 0.25 -> 75; b-1 0.25 and 0.25 -> 100. By default the
 * tie goes to the name order (a-1: the policy's placements stay what they were); with the
 * tie-break on, to b-1. A best-effort pod (no requests) is not scored (kube skips it): a-1
 * by name. With a policy that prefers a-1, the policy decides: the score is secondary. */
static void test_balanced_breaks_ties_only(void) {
    sched_snapshot *s = sched_snapshot_new();
    put(s, node("a-1", NULL, 4000, 8LL << 30));
    put(s, node("b-1", NULL, 4000, 8LL << 30));
    sched_resources busy = {0};
    busy.v[SCHED_RES_CPU] = 2000;
    busy.v[SCHED_RES_PODS] = 1;
    tm_err err;
    CHECK(sched_snapshot_add_pod(s, "busy", "a-1", &busy, &err) == 0);
    sched_pod *p = sched_pod_new("default", "p", "p");
    p->requests.v[SCHED_RES_CPU] = 1000;
    p->requests.v[SCHED_RES_MEMORY] = 2LL << 30;
    p->requests.v[SCHED_RES_PODS] = 1;
    sched_pod *be = sched_pod_new("default", "be", "be");
    be->requests.v[SCHED_RES_PODS] = 1;
    sched_framework *flat = fw_with(flat_score), *strict = fw_with(a1_score);
    sched_decision d;
    const char *tn[4];
    int64_t tv[4];
    CHECK(sched_framework_schedule(flat, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "a-1"); /* tie-break off by default */
    CHECK(sched_framework_tie_parts(flat, 1, tn, tv, 4) == 0);
    sched_score_weights ws = sched_score_weights_default();
    ws.tie_break = 1; /* scoreTieBreak: true */
    CHECK(sched_framework_apply_weights(flat, &ws, &err) == 0);
    sched_framework_set_tie_break(strict, true);
    CHECK(sched_framework_schedule(flat, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "b-1");
    CHECK_INT(d.score, 7); /* the policy's raw score stays the score */
    CHECK(sched_framework_tie_parts(flat, 0, tn, tv, 4) == 1); /* what explain shows */
    CHECK_STR(tn[0], "NodeResourcesBalancedAllocation");
    CHECK_INT(tv[0], 75);
    CHECK(sched_framework_tie_parts(flat, 1, tn, tv, 4) == 1);
    CHECK_INT(tv[0], 100);
    CHECK_INT(part_of(flat, s, "b-1", "NodeResourcesBalancedAllocation"), -1); /* not a part */
    CHECK(sched_framework_schedule(flat, s, be, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "a-1");
    CHECK(sched_framework_schedule(strict, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "a-1");
    /* weight 0 turns it off: name order again */
    CHECK(sched_framework_set_score_weight(flat, "NodeResourcesBalancedAllocation", 0, &err) == 0);
    CHECK(sched_framework_schedule(flat, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "a-1");
    sched_pod_free(p);
    sched_pod_free(be);
    sched_snapshot_free(s);
    sched_framework_free(flat);
    sched_framework_free(strict);
}

/* ---- ImageLocality ---- */

/* Four nodes; repo/big:1 (500 MiB) on a-1 and b-1, repo/small:latest (100 MiB) on all four.
 * A pod with containers repo/big:1 and repo/small (normalised to repo/small:latest):
 * a-1: 500 * 2/4 + 100 * 4/4 = 350 MiB -> 100 * (350 - 23) / (2 * 1000 - 23) = 16;
 * c-1: 100 MiB -> 100 * 77 / 1977 = 3. With an init container as well (3 containers, the
 * same images): a-1 100 * (350 - 23) / (3000 - 23) = 10. One container of 2000 MiB on every
 * node: clamped at 1000 -> 100. */
static void test_image_formula(void) {
    sched_snapshot *s = sched_snapshot_new();
    const char *names[] = {"a-1", "b-1", "c-1", "d-1"};
    for (int i = 0; i < 4; i++) {
        sched_node *n = node(names[i], NULL, 4000, 8LL << 30);
        const char *im[] = {"repo/small:latest", "repo/big:1", "huge:2"};
        int64_t sz[] = {100LL << 20, 500LL << 20, 2000LL << 20};
        sched_node_set_images(n, im, sz, i < 2 ? 3 : 1);
        if (i >= 2) { /* c-1, d-1: small, and huge */
            const char *im2[] = {"repo/small:latest", "huge:2"};
            int64_t sz2[] = {100LL << 20, 2000LL << 20};
            sched_node_set_images(n, im2, sz2, 2);
        }
        put(s, n);
    }
    CHECK_INT(sched_snapshot_image_nodes(s, "repo/big:1"), 2);
    CHECK_INT(sched_snapshot_image_nodes(s, "repo/small:latest"), 4);
    sched_pod *p =
        pod_json(s, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"p\"},"
                    "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"repo/big:1\"},"
                    "{\"name\":\"b\",\"image\":\"repo/small\"}]}}");
    CHECK(p && p->n_images == 2);
    if (p) {
        CHECK_STR(p->images[1], "repo/small:latest");
        CHECK_INT(sched_image_locality_score(s, p, sched_snapshot_node_by_name(s, "a-1")), 16);
        CHECK_INT(sched_image_locality_score(s, p, sched_snapshot_node_by_name(s, "c-1")), 3);
    }
    sched_pod *pi =
        pod_json(s, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"pi\"},\"spec\":{"
                    "\"initContainers\":[{\"name\":\"i\",\"image\":\"registry:5000/tool\"}],"
                    "\"containers\":[{\"name\":\"a\",\"image\":\"repo/big:1\"},"
                    "{\"name\":\"b\",\"image\":\"repo/small\"}]}}");
    CHECK(pi && pi->n_images == 3);
    if (pi) {
        CHECK_STR(pi->images[0], "registry:5000/tool:latest"); /* a port is not a tag */
        CHECK_INT(sched_image_locality_score(s, pi, sched_snapshot_node_by_name(s, "a-1")), 10);
    }
    sched_pod *ph =
        pod_json(s, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"ph\"},"
                    "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"huge:2\"}]}}");
    if (ph)
        CHECK_INT(sched_image_locality_score(s, ph, sched_snapshot_node_by_name(s, "c-1")), 100);
    sched_pod_free(p);
    sched_pod_free(pi);
    sched_pod_free(ph);
    sched_snapshot_free(s);
}

/* The count per image follows the nodes: replaced without images, removed. And the plugin:
 * the policy rates a-1 and b-1 alike, the pod's 800 MiB image is on b-1 only (1 of 2 nodes:
 * 400 MiB -> 100 * 377 / 977 = 38): b-1 by the tie-break (on here); with a node affinity preference
 * for a-1 (weight 2, 100 -> 200) it is a part: a-1 100 + 200 + 0, b-1 100 + 0 + 38: a-1. */
static void test_image_table_and_plugin(void) {
    sched_snapshot *s = sched_snapshot_new();
    sched_node *a = node("a-1", NULL, 4000, 8LL << 30), *b = node("b-1", NULL, 4000, 8LL << 30);
    sched_node_set_label(a, "disk", "ssd");
    const char *im[] = {"app:v1", "app@sha256:abc"};
    int64_t sz[] = {800LL << 20, 800LL << 20};
    sched_node_set_images(b, im, sz, 2);
    put(s, a);
    put(s, b);
    CHECK_INT(sched_snapshot_image_names(s), 2);
    sched_pod *p =
        pod_json(s, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"p\"},"
                    "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"app:v1\"}]}}");
    sched_pod *pa = pod_json(
        s, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"pa\"},\"spec\":{"
           "\"containers\":[{\"name\":\"a\",\"image\":\"app:v1\"}],\"affinity\":{\"nodeAffinity\":{"
           "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":5,\"preference\":{"
           "\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\",\"values\":[\"ssd\"]}]}}]"
           "}}}}");
    sched_framework *fw = fw_with(flat_score);
    sched_framework_set_tie_break(fw, true);
    sched_decision d;
    tm_err err;
    CHECK(p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "b-1");
    CHECK(pa && sched_framework_schedule(fw, s, pa, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "a-1");
    CHECK_INT(part_of(fw, s, "b-1", "ImageLocality"), 38);
    CHECK_INT(node_score(fw, s, "a-1"), 300);
    CHECK_INT(node_score(fw, s, "b-1"), 138);
    /* b-1 replaced without images, then with them again, then removed */
    put(s, node("b-1", NULL, 4000, 8LL << 30));
    CHECK_INT(sched_snapshot_image_nodes(s, "app:v1"), 0);
    CHECK_INT(sched_snapshot_image_names(s), 0);
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_STR(d.node_name, "a-1"); /* nothing to say: name order */
    sched_node *b2 = node("b-1", NULL, 4000, 8LL << 30);
    sched_node_set_images(b2, im, sz, 2);
    put(s, b2);
    CHECK_INT(sched_snapshot_image_nodes(s, "app@sha256:abc"), 1);
    CHECK(sched_snapshot_remove_node(s, "b-1") == 0);
    CHECK_INT(sched_snapshot_image_nodes(s, "app:v1"), 0);
    sched_pod_free(p);
    sched_pod_free(pa);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* Node JSON: status.images parsed (every name with the image's size); a bad entry named. */
static void test_node_images_json(void) {
    sched_snapshot *s = sched_snapshot_new();
    json_error_t je;
    json_t *j = json_loads(
        "{\"metadata\":{\"name\":\"n\"},\"status\":{\"images\":[{\"names\":[\"x@sha256:1\","
        "\"x:1\"],\"sizeBytes\":123},{\"names\":[\"y:2\"],\"sizeBytes\":7}]}}",
        0, &je);
    tm_err err = {0};
    sched_node *n = sched_node_from_json(s, j, &err);
    CHECK(n && n->n_images == 3);
    if (n) {
        CHECK_INT(sched_node_image_size(n, "x:1"), 123);
        CHECK_INT(sched_node_image_size(n, "x@sha256:1"), 123);
        CHECK_INT(sched_node_image_size(n, "y:2"), 7);
        CHECK_INT(sched_node_image_size(n, "z:1"), -1);
    }
    sched_node_free(n);
    json_decref(j);
    j = json_loads("{\"metadata\":{\"name\":\"n\"},\"status\":{\"images\":[{\"names\":[\"x\"],"
                   "\"sizeBytes\":\"big\"}]}}",
                   0, &je);
    CHECK(sched_node_from_json(s, j, &err) == NULL);
    CHECK(strstr(err.msg, "status.images[0]") != NULL);
    json_decref(j);
    sched_snapshot_free(s);
}

/* ---- TaintToleration's PreScore counter ---- */

static size_t prefer_nodes(const sched_snapshot *s) {
    sched_node_cols c;
    sched_snapshot_node_cols(s, &c);
    return c.n_prefer_taint;
}

static void test_prefer_taint_counter(void) {
    sched_snapshot *s = sched_snapshot_new();
    sched_node *a = node("a-1", NULL, 4000, 8LL << 30), *b = node("b-1", NULL, 4000, 8LL << 30);
    sched_node_add_taint(a, "slow", "", SCHED_EFFECT_PREFER_NO_SCHEDULE);
    sched_node_add_taint(a, "spot", "", SCHED_EFFECT_PREFER_NO_SCHEDULE);
    sched_node_add_taint(b, "gpu", "", SCHED_EFFECT_NO_SCHEDULE);
    put(s, a);
    put(s, b);
    CHECK_INT(prefer_nodes(s), 1); /* a node, not a taint, counts once */
    sched_node *b2 = node("b-1", NULL, 4000, 8LL << 30);
    sched_node_add_taint(b2, "old", "", SCHED_EFFECT_PREFER_NO_SCHEDULE);
    put(s, b2);
    CHECK_INT(prefer_nodes(s), 2);
    put(s, node("a-1", NULL, 4000, 8LL << 30)); /* replaced without taints */
    CHECK_INT(prefer_nodes(s), 1);
    CHECK(sched_snapshot_remove_node(s, "b-1") == 0);
    CHECK_INT(prefer_nodes(s), 0);
    sched_snapshot_free(s);
}

/* InterPodAffinity's preferred-terms score summed per topology pair once per cycle (PreScore)
 * gives every node exactly what summing over the placed pods for each node gives (the plugin
 * without state): random clusters of 40 nodes in 3 zones, 300 placed pods with random labels and
 * preferred (anti-)affinity terms by hostname or zone in two namespaces, 20 incoming pods. */
static unsigned rnd_state = 7;
static unsigned rnd(unsigned n) {
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 16) % n;
}

static void pref_term_json(char *buf, size_t size, bool anti) {
    static const char *const keys[] = {"kubernetes.io/hostname", "topology.kubernetes.io/zone"};
    snprintf(buf, size,
             "\"%s\": {\"preferredDuringSchedulingIgnoredDuringExecution\": [{\"weight\": %u, "
             "\"podAffinityTerm\": {\"labelSelector\": {\"matchLabels\": {\"app\": \"a%u\"}}, "
             "\"topologyKey\": \"%s\", \"namespaces\": [\"n0\", \"n1\"]}}]}",
             anti ? "podAntiAffinity" : "podAffinity", 1 + rnd(100), rnd(4), keys[rnd(2)]);
}

static char *random_pod(char *buf, size_t size, int i, const char *node) {
    char aff[512] = "", anti[512] = "";
    if (rnd(2))
        pref_term_json(aff, sizeof aff, false);
    if (rnd(3) == 0)
        pref_term_json(anti, sizeof anti, true);
    snprintf(buf, size,
             "{\"metadata\": {\"name\": \"p%d\", \"namespace\": \"n%u\", \"uid\": \"u%d\", "
             "\"labels\": {\"app\": \"a%u\"}}, \"spec\": {%s%s%s \"affinity\": {%s%s%s}, "
             "\"containers\": [{\"name\": \"c\"}]}}",
             i, rnd(2), i, rnd(4), node ? "\"nodeName\": \"" : "", node ? node : "",
             node ? "\"," : "", aff, aff[0] && anti[0] ? ", " : "", anti);
    return buf;
}

static void test_interpod_prescore_equals_per_node_sum(void) {
    sched_snapshot *s = sched_snapshot_new();
    char name[32], zone[32], buf[2048];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "n-%d", i);
        snprintf(zone, sizeof zone, "z%d", i % 3);
        put(s, node(name, zone, 64000, 64LL << 30));
    }
    tm_err err = {0};
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "n-%u", rnd(40));
        json_t *j = json_loads(random_pod(buf, sizeof buf, i, name), 0, NULL);
        CHECKF(j && sched_snapshot_add_pod_json(s, j, NULL, &err) == 0, "%s", err.msg);
        json_decref(j);
    }
    sched_plugin with, without;
    CHECK_INT(sched_filter_interpod_affinity(&with, true), 0);
    CHECK_INT(sched_filter_interpod_affinity(&without, false), 0);
    int compared = 0, nonzero = 0;
    for (int k = 0; k < 20; k++) {
        sched_pod *p = pod_json(s, random_pod(buf, sizeof buf, 1000 + k, NULL));
        if (!p)
            continue;
        sched_cycle c = {.snap = s, .pod = p};
        bool a = with.pref_pre_score(with.state, &c), b = without.pref_pre_score(NULL, &c);
        CHECK(a == b);
        for (size_t i = 0; a && i < sched_snapshot_node_count(s); i++) {
            const sched_node *n = sched_snapshot_node(s, i);
            int64_t x = with.pref_score(with.state, &c, n), y = without.pref_score(NULL, &c, n);
            CHECKF(x == y, "pod %d node %s: %lld per pair, %lld per node", k, n->name, (long long)x,
                   (long long)y);
            compared++;
            nonzero += y != 0;
        }
        sched_pod_free(p);
    }
    CHECKF(compared == 800 && nonzero > 100, "compared %d, non-zero %d", compared,
           nonzero); /* every pod scored, and scores that say something */
    with.free_state(with.state);
    sched_snapshot_free(s);
}

/* The pod sets answer each pod's node index without a lookup by name (snapshot.c, node_i): it
 * stays right when a node is removed and the last one moves into its place, when pods are
 * hidden and shown (preemption's what-if), and when a node comes back. */
static void check_podset_nodes(const sched_snapshot *s, const char *when) {
    size_t n = sched_snapshot_podset_count(s, SCHED_PODSET_META), bad = 0;
    for (size_t i = 0; i < n; i++) {
        const char *uid;
        int node;
        sched_snapshot_podset_pod(s, SCHED_PODSET_META, i, &uid, &node);
        const char *name = sched_snapshot_pod_node(s, uid);
        int want = name ? sched_snapshot_node_index(s, name) : -1;
        bad += node != want;
    }
    CHECKF(bad == 0 && n > 0, "%s: %zu of %zu pods with a wrong node index", when, bad, n);
}

static void test_podset_node_index_follows_node_moves(void) {
    sched_snapshot *s = sched_snapshot_new();
    char name[16], buf[2048];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "n-%d", i);
        put(s, node(name, NULL, 8000, 8LL << 30));
    }
    tm_err err = {0};
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "n-%d", i % 5);
        json_t *j = json_loads(random_pod(buf, sizeof buf, i, name), 0, NULL);
        CHECKF(j && sched_snapshot_add_pod_json(s, j, NULL, &err) == 0, "%s", err.msg);
        json_decref(j);
    }
    check_podset_nodes(s, "placed");
    CHECK_INT(sched_snapshot_remove_node(s, "n-1"), 0); /* n-4 moves to index 1 */
    check_podset_nodes(s, "n-1 removed");
    CHECK_INT(sched_snapshot_hide_pod(s, "u4", true), 0); /* a pod of n-4 */
    CHECK_INT(sched_snapshot_hide_pod(s, "u4", false), 0);
    check_podset_nodes(s, "a pod of the moved node hidden and shown");
    put(s, node("n-1", NULL, 8000, 8LL << 30)); /* back, at the end: its pods count again */
    check_podset_nodes(s, "n-1 back");
    CHECK_INT(sched_snapshot_remove_node(s, "n-0"), 0);
    check_podset_nodes(s, "n-0 removed");
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_interpod_prescore_equals_per_node_sum);
    RUN(test_podset_node_index_follows_node_moves);
    RUN(test_spread_zone);
    RUN(test_spread_hostname);
    RUN(test_spread_silent);
    RUN(test_balanced_formula);
    RUN(test_balanced_breaks_ties_only);
    RUN(test_image_formula);
    RUN(test_image_table_and_plugin);
    RUN(test_node_images_json);
    RUN(test_prefer_taint_counter);
    return TEST_SUMMARY();
}
