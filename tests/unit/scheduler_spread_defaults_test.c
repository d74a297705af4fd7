/* scheduler_spread_defaults_test.c: PodTopologySpread's default constraints, with scores worked
 * out by hand from kube-scheduler's formulas: the default selector from Services and a pod's
 * controller (owner_selectors.c, kube's helper.DefaultSelector), the System defaults (hostname
 * maxSkew 3, zone maxSkew 5, ScheduleAnyway; a node without the zone label still scored),
 * defaultingType List (nodes need every key; DoNotSchedule defaults filter), the config parser,
 * and what the live cache keeps (the controller reference of a pod to place, the selector
 * table). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/cache.h"
#include "scheduler/backend/owner_selectors.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/filters.h"
#include "scheduler/plugins/spread_defaults.h"

static json_t *js(const char *text) {
    if (!text)
        return NULL;
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j)
        printf("    json: %s: %s\n", je.text, text);
    return j;
}

/* Records a Service/RC/RS/StatefulSet from JSON text; returns put_json's answer. */
static int put_owner(sched_owner_sels *t, sched_owner_kind k, const char *text) {
    json_t *j = js(text);
    tm_err err = {0};
    int rc = sched_owner_sels_put_json(t, k, j, &err);
    json_decref(j);
    return rc;
}

/* The default selector's string form for a pod (ns, labels JSON, owner), "" when none. */
static char *dsel(const sched_owner_sels *t, const char *ns, const char *labels, sched_owner_kind k,
                  const char *owner) {
    json_t *l = js(labels);
    tm_selector *s = NULL;
    tm_err err = {0};
    int rc = sched_owner_sels_default_selector(t, ns, l, k, owner, &s, &err);
    json_decref(l);
    char *out = rc != 0 ? strdup("error") : s ? tm_selector_string(s) : strdup("");
    tm_selector_free(s);
    return out;
}

#define CHECK_SEL(got, want)                                                                       \
    do {                                                                                           \
        char *g_ = (got);                                                                          \
        CHECK_STR(g_, want);                                                                       \
        free(g_);                                                                                  \
    } while (0)

static void test_default_selector(void) {
    sched_owner_sels *t = sched_owner_sels_new();
    CHECK_INT(put_owner(t, SCHED_OWNER_SERVICE,
                        "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"web\"},"
                        "\"spec\":{\"selector\":{\"app\":\"web\"}}}"),
              0);
    CHECK_INT(put_owner(t, SCHED_OWNER_SERVICE,
                        "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"fe\"},"
                        "\"spec\":{\"selector\":{\"tier\":\"fe\"}}}"),
              0);
    /* another namespace, a selector the pod does not match, no selector at all */
    put_owner(t, SCHED_OWNER_SERVICE,
              "{\"metadata\":{\"namespace\":\"other\",\"name\":\"o\"},"
              "\"spec\":{\"selector\":{\"zone\":\"x\"}}}");
    put_owner(t, SCHED_OWNER_SERVICE,
              "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"db\"},"
              "\"spec\":{\"selector\":{\"app\":\"db\"}}}");
    put_owner(t, SCHED_OWNER_SERVICE,
              "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"ext\"},\"spec\":{}}");
    put_owner(t, SCHED_OWNER_RC,
              "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"rc1\"},"
              "\"spec\":{\"selector\":{\"app\":\"web\",\"rc\":\"r1\"}}}");
    put_owner(t, SCHED_OWNER_RS,
              "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"rs1\"},\"spec\":{\"selector\":{"
              "\"matchLabels\":{\"pod-template-hash\":\"h\"},\"matchExpressions\":[{\"key\":"
              "\"track\",\"operator\":\"NotIn\",\"values\":[\"canary\"]}]}}}");
    CHECK_INT(sched_owner_sels_count(t, SCHED_OWNER_SERVICE), 5);
    const char *pod = "{\"app\":\"web\",\"tier\":\"fe\",\"rc\":\"r1\",\"pod-template-hash\":\"h\"}";
    /* both Services that select the pod, merged and sorted */
    CHECK_SEL(dsel(t, "ns", pod, SCHED_OWNER_NONE, NULL), "app=web,tier=fe");
    /* a ReplicationController's map merged in */
    CHECK_SEL(dsel(t, "ns", pod, SCHED_OWNER_RC, "rc1"), "app=web,rc=r1,tier=fe");
    /* a ReplicaSet's requirements added after the Services' */
    CHECK_SEL(dsel(t, "ns", pod, SCHED_OWNER_RS, "rs1"),
              "app=web,tier=fe,pod-template-hash=h,track notin (canary)");
    /* an owner the table does not know, or of another namespace: the Services alone */
    CHECK_SEL(dsel(t, "ns", pod, SCHED_OWNER_RS, "rs2"), "app=web,tier=fe");
    CHECK_SEL(dsel(t, "other", "{\"app\":\"web\"}", SCHED_OWNER_RS, "rs1"), "");
    /* nothing selects the pod: no default constraint */
    CHECK_SEL(dsel(t, "ns", "{\"app\":\"batch\"}", SCHED_OWNER_NONE, NULL), "");
    CHECK_SEL(dsel(t, "ns", NULL, SCHED_OWNER_NONE, NULL), "");
    /* the ReplicaSet alone */
    CHECK_SEL(dsel(t, "ns", "{\"pod-template-hash\":\"h\"}", SCHED_OWNER_RS, "rs1"),
              "pod-template-hash=h,track notin (canary)");
    /* a change moves the generation; a deleted Service no longer selects */
    uint64_t g = sched_owner_sels_generation(t);
    CHECK_INT(sched_owner_sels_remove(t, SCHED_OWNER_SERVICE, "ns", "fe"), 0);
    CHECK(sched_owner_sels_generation(t) != g);
    CHECK_INT(sched_owner_sels_remove(t, SCHED_OWNER_SERVICE, "ns", "fe"), -1);
    CHECK_SEL(dsel(t, "ns", pod, SCHED_OWNER_NONE, NULL), "app=web");
    /* a selector that does not parse is kept as selecting nothing, and said */
    CHECK_INT(
        put_owner(t, SCHED_OWNER_SS,
                  "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"ss\"},\"spec\":{\"selector\":"
                  "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Bogus\"}]}}}"),
        1);
    CHECK_SEL(dsel(t, "ns", "{\"a\":\"b\"}", SCHED_OWNER_SS, "ss"), "");
    CHECK_INT(put_owner(t, SCHED_OWNER_SERVICE, "{\"metadata\":{}}"), -1);
    /* which owner references count: kube compares group, version and kind */
    CHECK_INT(sched_owner_kind_of_ref("apps/v1", "ReplicaSet"), SCHED_OWNER_RS);
    CHECK_INT(sched_owner_kind_of_ref("apps/v1", "StatefulSet"), SCHED_OWNER_SS);
    CHECK_INT(sched_owner_kind_of_ref("v1", "ReplicationController"), SCHED_OWNER_RC);
    CHECK_INT(sched_owner_kind_of_ref("extensions/v1beta1", "ReplicaSet"), SCHED_OWNER_NONE);
    CHECK_INT(sched_owner_kind_of_ref("batch/v1", "Job"), SCHED_OWNER_NONE);
    sched_owner_sels_free(t);
}

/* ---- scoring ---- */

static int64_t flat_score(void *state, const sched_cycle *c, const sched_node *n) {
    return 7;
}

static sched_framework *fw_flat(void) {
    tm_err err;
    sched_plugin pl = {.name = "fixed", .score = flat_score};
    sched_framework *fw = sched_framework_new(&pl, &err);
    if (!fw)
        printf("    setup: %s\n", err.msg);
    return fw;
}

static void put_node(sched_snapshot *s, const char *name, const char *zone) {
    sched_node *n = sched_node_new(name);
    n->allocatable.v[SCHED_RES_CPU] = 4000;
    n->allocatable.v[SCHED_RES_MEMORY] = 8LL << 30;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    sched_node_set_label(n, "kubernetes.io/hostname", name);
    if (zone)
        sched_node_set_label(n, "topology.kubernetes.io/zone", zone);
    tm_err err;
    if (sched_snapshot_put_node(s, n, &err) != 0)
        printf("    put_node: %s\n", err.msg);
}

static void place(sched_snapshot *s, const char *uid, const char *app, const char *on) {
    char text[512];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"%s\",\"uid\":\"%s\","
             "\"labels\":{\"app\":\"%s\"}},\"spec\":{\"nodeName\":\"%s\","
             "\"containers\":[{\"name\":\"c\"}]}}",
             uid, uid, app, on);
    json_t *j = js(text);
    tm_err err;
    if (!j || sched_snapshot_add_pod_json(s, j, on, &err) != 0)
        printf("    place %s failed\n", uid);
    json_decref(j);
}

/* A pod app=web of ReplicaSet rs-web (owner kind as given), with extra spec JSON. */
static sched_pod *rs_pod(sched_snapshot *s, const char *owner_api, const char *spec_extra) {
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p\",\"uid\":\"p\","
             "\"labels\":{\"app\":\"web\"},\"ownerReferences\":[{\"apiVersion\":\"%s\","
             "\"kind\":\"ReplicaSet\",\"name\":\"rs-web\",\"uid\":\"u\",\"controller\":true}]},"
             "\"spec\":{\"containers\":[{\"name\":\"c\"}]%s}}",
             owner_api, spec_extra);
    json_t *j = js(text);
    tm_err err = {0};
    sched_pod *p = j ? sched_pod_from_json(s, j, NULL, &err) : NULL;
    if (!p)
        printf("    pod: %s\n", err.msg);
    json_decref(j);
    return p;
}

static int64_t part_of(const sched_framework *fw, const sched_snapshot *s, const char *node_name) {
    const char *names[16];
    int64_t parts[16];
    size_t n = sched_framework_score_parts(fw, (size_t)sched_snapshot_node_index(s, node_name),
                                           names, parts, 16);
    for (size_t k = 0; k < n; k++)
        if (strcmp(names[k], "PodTopologySpread") == 0)
            return parts[k];
    return -1;
}

static sched_owner_sels *rs_table(void) {
    sched_owner_sels *t = sched_owner_sels_new();
    put_owner(t, SCHED_OWNER_RS,
              "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"rs-web\"},"
              "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}");
    return t;
}

/* Zones a (a-1, a-2), b (b-1, b-2); app=web pods: a-1 2, a-2 1, b-1 1, b-2 0; one app=db pod
 * on b-2 (not selected). A pod of ReplicaSet rs-web (selector app=web), no constraints of its
 * own: the System defaults. hostname (maxSkew 3): size 4 feasible nodes -> w = log 6 = 1.7918;
 * zone (maxSkew 5): domains a, b -> w = log 4 = 1.3863, counts a 3, b 1. Raw:
 *   a-1 2*1.7918 + 2 + 3*1.3863 + 4 = 13.74 -> 14
 *   a-2 1*1.7918 + 2 + 3*1.3863 + 4 = 11.95 -> 12
 *   b-1 1*1.7918 + 2 + 1*1.3863 + 4 =  9.18 ->  9
 *   b-2 0        + 2 + 1*1.3863 + 4 =  7.39 ->  7
 * normalised 100 * (14 + 7 - raw) / 14: 50, 64, 85, 100; weight 2: 100, 128, 170, 200. */
static void test_system_defaults(void) {
    sched_framework *fw = fw_flat();
    sched_snapshot *s = sched_snapshot_new();
    put_node(s, "a-1", "a");
    put_node(s, "a-2", "a");
    put_node(s, "b-1", "b");
    put_node(s, "b-2", "b");
    place(s, "w1", "web", "a-1");
    place(s, "w2", "web", "a-1");
    place(s, "w3", "web", "a-2");
    place(s, "w4", "web", "b-1");
    place(s, "d1", "db", "b-2");
    sched_owner_sels *t = rs_table();
    sched_pod *p = rs_pod(s, "apps/v1", "");
    CHECK(p && p->controller_kind == SCHED_OWNER_RS && strcmp(p->controller_name, "rs-web") == 0);
    sched_decision d;
    tm_err err = {0};
    /* without the table (nobody watches Services and controllers): no default spreading */
    CHECK(p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_INT(part_of(fw, s, "b-2"), -1);
    sched_snapshot_set_owner_selectors(s, t);
    if (p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0) {
        CHECK_STR(d.node_name, "b-2");
        CHECK_INT(part_of(fw, s, "a-1"), 100);
        CHECK_INT(part_of(fw, s, "a-2"), 128);
        CHECK_INT(part_of(fw, s, "b-1"), 170);
        CHECK_INT(part_of(fw, s, "b-2"), 200);
    } else {
        CHECK(false);
    }
    sched_pod_free(p);
    /* an owner of another group (not apps/v1): nothing selects the pod, no spreading */
    p = rs_pod(s, "extensions/v1beta1", "");
    CHECK(p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_INT(part_of(fw, s, "b-2"), -1);
    sched_pod_free(p);
    /* constraints of its own (a DoNotSchedule one only, matching nothing): no defaults */
    p = rs_pod(s, "apps/v1",
               ",\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
               "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"DoNotSchedule\","
               "\"labelSelector\":{\"matchLabels\":{\"app\":\"none\"}}}]");
    CHECK(p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_INT(part_of(fw, s, "b-2"), -1);
    CHECK_INT(d.n_feasible, 4);
    sched_pod_free(p);
    sched_snapshot_set_owner_selectors(s, NULL);
    sched_owner_sels_free(t);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* A node without a zone label (x-1) beside a-1 (zone a) and b-1 (zone b); app=web pods: a-1 1,
 * x-1 2. System defaults: no node ignored; zone domains a, b and "" (x-1's) -> w = log 5 =
 * 1.6094, counts a 1, b 0, "" 2; hostname size 3 -> w = log 5 = 1.6094. Raw:
 *   a-1 1*1.6094 + 2 + 1*1.6094 + 4 = 9.22 -> 9
 *   b-1 0        + 2 + 0        + 4 = 6
 *   x-1 2*1.6094 + 2 (no zone key: no zone term)  = 5.22 -> 5
 * normalised 100 * (9 + 5 - raw) / 9: 55, 88, 100; weight 2: 110, 176, 200.
 * The same two constraints as defaultingType List: x-1 lacks a key, so it is ignored (0) and
 * its pods are not counted; zone domains a, b -> log 4 = 1.3863; hostname size 3 - 1 = 2 ->
 * log 4. a-1 1.3863 + 2 + 1.3863 + 4 = 8.77 -> 9, b-1 6; normalised 100 * (15 - raw) / 9: 66,
 * 100; weight 2: 132, 200; x-1 0. */
static void test_missing_zone(void) {
    sched_framework *fw = fw_flat();
    sched_snapshot *s = sched_snapshot_new();
    put_node(s, "a-1", "a");
    put_node(s, "b-1", "b");
    put_node(s, "x-1", NULL);
    place(s, "w1", "web", "a-1");
    place(s, "w2", "web", "x-1");
    place(s, "w3", "web", "x-1");
    sched_owner_sels *t = rs_table();
    sched_snapshot_set_owner_selectors(s, t);
    sched_pod *p = rs_pod(s, "apps/v1", "");
    sched_decision d;
    tm_err err = {0};
    if (p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0) {
        CHECK_STR(d.node_name, "x-1");
        CHECK_INT(part_of(fw, s, "a-1"), 110);
        CHECK_INT(part_of(fw, s, "b-1"), 176);
        CHECK_INT(part_of(fw, s, "x-1"), 200);
    } else {
        CHECK(false);
    }
    json_t *args = js("{\"defaultingType\":\"List\",\"defaultConstraints\":["
                      "{\"maxSkew\":3,\"topologyKey\":\"kubernetes.io/hostname\","
                      "\"whenUnsatisfiable\":\"ScheduleAnyway\"},"
                      "{\"maxSkew\":5,\"topologyKey\":\"topology.kubernetes.io/zone\","
                      "\"whenUnsatisfiable\":\"ScheduleAnyway\"}]}");
    sched_spread_defaults *dd = sched_spread_defaults_from_json(args, &err);
    CHECK(dd && !dd->system && dd->n == 2);
    sched_spread_state *st = sched_framework_plugin_state(fw, "PodTopologySpread");
    CHECK(st && sched_spread_set_defaults(st, dd) == 0);
    if (p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0) {
        CHECK_STR(d.node_name, "b-1");
        CHECK_INT(part_of(fw, s, "a-1"), 132);
        CHECK_INT(part_of(fw, s, "b-1"), 200);
        CHECK_INT(part_of(fw, s, "x-1"), 0);
    } else {
        CHECK(false);
    }
    /* List with no constraints: no default spreading */
    json_decref(args);
    args = js("{\"defaultingType\":\"List\"}");
    CHECK(st && sched_spread_set_defaults(st, sched_spread_defaults_from_json(args, &err)) == 0);
    CHECK(p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0);
    CHECK_INT(part_of(fw, s, "b-1"), -1);
    json_decref(args);
    sched_pod_free(p);
    sched_snapshot_set_owner_selectors(s, NULL);
    sched_owner_sels_free(t);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* defaultingType List with a DoNotSchedule zone constraint (maxSkew 1): app=web a-1 2, b-1 0:
 * the pod of rs-web may go only to zone b (a: 2 + 1 - 0 > 1), x-1 lacks the key (missing
 * required label); a pod nothing selects goes anywhere. */
static void test_list_filter(void) {
    sched_framework *fw = fw_flat();
    sched_snapshot *s = sched_snapshot_new();
    put_node(s, "a-1", "a");
    put_node(s, "b-1", "b");
    put_node(s, "x-1", NULL);
    place(s, "w1", "web", "a-1");
    place(s, "w2", "web", "a-1");
    sched_owner_sels *t = rs_table();
    sched_snapshot_set_owner_selectors(s, t);
    tm_err err = {0};
    json_t *args = js("{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":1,"
                      "\"topologyKey\":\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":"
                      "\"DoNotSchedule\"}]}");
    sched_spread_state *st = sched_framework_plugin_state(fw, "PodTopologySpread");
    CHECK(st && sched_spread_set_defaults(st, sched_spread_defaults_from_json(args, &err)) == 0);
    json_decref(args);
    sched_pod *p = rs_pod(s, "apps/v1", "");
    sched_decision d;
    if (p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0) {
        CHECK_STR(d.node_name, "b-1");
        CHECK_INT(d.n_feasible, 1);
        uint32_t det = 9;
        CHECK_INT(sched_framework_node_status(fw, (size_t)sched_snapshot_node_index(s, "a-1"), &det,
                                              NULL),
                  SCHED_FILTER_SPREAD);
        CHECK_INT(det, SCHED_SPREAD_SKEW);
        CHECK_INT(sched_framework_node_status(fw, (size_t)sched_snapshot_node_index(s, "x-1"), &det,
                                              NULL),
                  SCHED_FILTER_SPREAD);
        CHECK_INT(det, SCHED_SPREAD_MISSING_LABEL);
    } else {
        CHECK(false);
    }
    sched_pod_free(p);
    p = rs_pod(s, "batch/v1", "");
    CHECK(p && sched_framework_schedule(fw, s, p, 0, &d, &err) == 0 && d.n_feasible == 3);
    sched_pod_free(p);
    sched_snapshot_set_owner_selectors(s, NULL);
    sched_owner_sels_free(t);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void check_bad_args(const char *text, const char *want) {
    json_t *j = js(text);
    tm_err err = {0};
    sched_spread_defaults *d = sched_spread_defaults_from_json(j, &err);
    CHECK(d == NULL);
    if (!strstr(err.msg, want))
        printf("    got \"%s\", want it to contain \"%s\"\n", err.msg, want);
    CHECK(strstr(err.msg, want) != NULL);
    sched_spread_defaults_free(d);
    json_decref(j);
}

static void test_args(void) {
    tm_err err = {0};
    sched_spread_defaults *d = sched_spread_defaults_from_json(NULL, &err);
    CHECK(d && d->system && d->n == 2 && d->soft[0] && d->soft[1]);
    if (d && d->n == 2) {
        CHECK_STR(d->c[0].topology_key, "kubernetes.io/hostname");
        CHECK_INT(d->c[0].max_skew, 3);
        CHECK_STR(d->c[1].topology_key, "topology.kubernetes.io/zone");
        CHECK_INT(d->c[1].max_skew, 5);
        CHECK(d->c[1].honor_node_affinity && !d->c[1].honor_node_taints);
    }
    sched_spread_defaults_free(d);
    check_bad_args("{\"defaultingType\":\"Sometimes\"}", "defaultingType must be System or List");
    check_bad_args("{\"defaultingType\":\"System\",\"defaultConstraints\":[{\"maxSkew\":1,"
                   "\"topologyKey\":\"k\",\"whenUnsatisfiable\":\"DoNotSchedule\"}]}",
                   "must be empty with defaultingType System");
    check_bad_args("{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":1,"
                   "\"topologyKey\":\"k\",\"whenUnsatisfiable\":\"DoNotSchedule\","
                   "\"labelSelector\":{}}]}",
                   "defaultConstraints[0]: labelSelector is not allowed");
    check_bad_args("{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":0,"
                   "\"topologyKey\":\"k\",\"whenUnsatisfiable\":\"DoNotSchedule\"}]}",
                   "maxSkew is not an integer >= 1");
    check_bad_args("{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":1,"
                   "\"topologyKey\":\"k\",\"whenUnsatisfiable\":\"Never\"}]}",
                   "whenUnsatisfiable is not DoNotSchedule or ScheduleAnyway");
    check_bad_args(
        "{\"defaultingType\":\"List\",\"defaultConstraints\":["
        "{\"maxSkew\":1,\"topologyKey\":\"k\",\"whenUnsatisfiable\":\"DoNotSchedule\"},"
        "{\"maxSkew\":2,\"topologyKey\":\"k\",\"whenUnsatisfiable\":\"DoNotSchedule\"}]}",
        "given twice");
    check_bad_args("{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":1,"
                   "\"topologyKey\":\"k\",\"whenUnsatisfiable\":\"DoNotSchedule\","
                   "\"nodeTaintsPolicy\":\"Maybe\"}]}",
                   "nodeTaintsPolicy must be Honor or Ignore");
    check_bad_args("{\"defaultConstraint\":[]}", "podTopologySpread.defaultConstraint is not");
}

/* The live cache: the pod transform keeps the controller reference of a pod to place (not of a
 * placed one), and the selector table follows the informer events. */
static void test_cache(void) {
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema", NULL, NULL, NULL, &err);
    CHECK(c != NULL);
    if (!c)
        return;
    const char *text =
        "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p\",\"uid\":\"p\",\"labels\":{\"app\":"
        "\"web\"},\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":"
        "\"cm\",\"uid\":\"1\"},{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"name\":"
        "\"db\",\"uid\":\"2\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
        "\"spec\":{\"schedulerName\":\"tarema\",\"containers\":[{\"name\":\"c\"}]}}";
    json_t *t = sched_cache_pod_transform(c, js(text));
    CHECK_INT(json_array_size(json_object_get(json_object_get(t, "metadata"), "ownerReferences")),
              1);
    sched_pod *p = sched_pod_from_json(sched_cache_snapshot(c), t, NULL, &err);
    CHECK(p && p->controller_kind == SCHED_OWNER_SS && strcmp(p->controller_name, "db") == 0);
    sched_pod_free(p);
    json_decref(t);
    json_t *bound = js(text);
    json_object_set_new(json_object_get(bound, "spec"), "nodeName", json_string("n1"));
    t = sched_cache_pod_transform(c, bound);
    CHECK(json_object_get(json_object_get(t, "metadata"), "ownerReferences") == NULL);
    json_decref(t);
    /* events are ignored until the table is tracked */
    json_t *svc = sched_cache_owner_transform(
        c, js("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"s\",\"resourceVersion\":\"5\","
              "\"annotations\":{\"big\":\"x\"}},\"spec\":{\"selector\":{\"app\":\"web\"},"
              "\"ports\":[{\"port\":80}]}}"));
    CHECK(json_object_get(json_object_get(svc, "spec"), "ports") == NULL);
    CHECK(json_object_get(json_object_get(svc, "metadata"), "annotations") == NULL);
    CHECK_INT(sched_cache_owner_event(c, SCHED_OWNER_SERVICE, TM_WATCH_ADDED, svc, &err), 0);
    CHECK(sched_snapshot_owner_selectors(sched_cache_snapshot(c)) == NULL);
    CHECK_INT(sched_cache_track_owner_selectors(c, &err), 0);
    sched_owner_sels *tab = sched_snapshot_owner_selectors(sched_cache_snapshot(c));
    CHECK_INT(sched_cache_owner_event(c, SCHED_OWNER_SERVICE, TM_WATCH_ADDED, svc, &err), 0);
    CHECK_INT(sched_owner_sels_count(tab, SCHED_OWNER_SERVICE), 1);
    CHECK_SEL(dsel(tab, "ns", "{\"app\":\"web\"}", SCHED_OWNER_NONE, NULL), "app=web");
    CHECK_INT(sched_cache_owner_event(c, SCHED_OWNER_SERVICE, TM_WATCH_DELETED, svc, &err), 0);
    CHECK_INT(sched_owner_sels_count(tab, SCHED_OWNER_SERVICE), 0);
    json_decref(svc);
    sched_cache_free(c); /* frees the table */
}

/* Whether the defaults hold a hard constraint honouring taints (the loop's hint for a taint a
 * node gained), read back from the plugin that holds them. */
static void test_defaults_honour_taints(void) {
    struct {
        const char *args;
        bool want;
    } cases[] = {
        {"null", false}, /* System: both ScheduleAnyway */
        {"{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":1,"
         "\"topologyKey\":\"zone\",\"whenUnsatisfiable\":\"DoNotSchedule\","
         "\"nodeTaintsPolicy\":\"Honor\"}]}",
         true},
        {"{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":1,"
         "\"topologyKey\":\"zone\",\"whenUnsatisfiable\":\"DoNotSchedule\"}]}",
         false},
        {"{\"defaultingType\":\"List\",\"defaultConstraints\":[{\"maxSkew\":1,"
         "\"topologyKey\":\"zone\",\"whenUnsatisfiable\":\"ScheduleAnyway\","
         "\"nodeTaintsPolicy\":\"Honor\"}]}",
         false},
    };
    tm_err err = {0};
    sched_framework *fw = fw_flat();
    CHECK(fw != NULL);
    sched_spread_state *st = fw ? sched_framework_plugin_state(fw, "PodTopologySpread") : NULL;
    CHECK(st != NULL);
    for (size_t i = 0; st && i < sizeof cases / sizeof cases[0]; i++) {
        json_t *args = js(cases[i].args);
        CHECK(sched_spread_set_defaults(st, sched_spread_defaults_from_json(args, &err)) == 0);
        CHECKF(sched_spread_defaults_honour_taints(sched_spread_get_defaults(st)) == cases[i].want,
               "case %zu: want %d", i, cases[i].want);
        json_decref(args);
    }
    sched_framework_free(fw);
}

int main(void) {
    RUN(test_default_selector);
    RUN(test_defaults_honour_taints);
    RUN(test_system_defaults);
    RUN(test_missing_zone);
    RUN(test_list_filter);
    RUN(test_args);
    RUN(test_cache);
    return TEST_SUMMARY();
}
