/* End-to-end test of the informers' protobuf path against the real kube-apiserver: two clients,
 * one that asks for protobuf (the default) and one that speaks JSON only, each with an informer
 * on the same pods and on the nodes. Their stores must hold the same objects, compared field by
 * field, through the list and then through watched changes (a patch, a deletion, a creation).
 * The pods are made to use what a Kubernetes pod can carry that the conversion treats apart:
 * quantities, IntOrString (named and numbered probe ports), times, maps of quantities, pod-level
 * resources, affinity terms with weights, tolerations with seconds, spread constraints, init
 * containers, host ports, volumes. The one documented difference (lib/kube_proto_json.h: a zero
 * scalar is absent in protobuf) is normalised away on both sides; so are managedFields, which the
 * protobuf path leaves out. Needs KUBECONFIG. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib_kube_e2e.h"

static tm_kube *kube; /* synchronous helper client */
static tm_kube *pb, *js;
static char ns[64];

/* Drops what protobuf cannot carry (zero scalars, null, empty arrays) and managedFields. */
static void normalise(json_t *v) {
    if (json_is_object(v)) {
        json_object_del(json_object_get(v, "metadata"), "managedFields");
        const char *k;
        json_t *x;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, x) {
            if (json_is_null(x) || json_is_false(x) ||
                (json_is_string(x) && !*json_string_value(x)) ||
                (json_is_integer(x) && json_integer_value(x) == 0) ||
                (json_is_real(x) && json_real_value(x) == 0) ||
                (json_is_array(x) && json_array_size(x) == 0))
                json_object_del(v, k);
            else
                normalise(x);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) normalise(x);
    }
}

/* The first path where a and b differ, into buf; 0 when equal. */
static int first_diff(const json_t *a, const json_t *b, char *buf, size_t len) {
    if (json_equal(a, b))
        return 0;
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)a, k, x) {
            json_t *y = json_object_get(b, k);
            if (!y) {
                snprintf(buf, len, ".%s only in protobuf", k);
                return 1;
            }
            size_t n = strlen(k) + 1;
            if (n < len && first_diff(x, y, buf + n, len - n)) {
                buf[0] = '.';
                memcpy(buf + 1, k, n - 1);
                return 1;
            }
        }
        json_object_foreach((json_t *)b, k, x) {
            if (!json_object_get(a, k)) {
                snprintf(buf, len, ".%s only in JSON", k);
                return 1;
            }
        }
    }
    char *sa = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY),
         *sb = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(buf, len, ": protobuf %.200s, JSON %.200s", sa ? sa : "?", sb ? sb : "?");
    free(sa);
    free(sb);
    return 1;
}

typedef struct {
    const tm_informer *other;
    int checked, differ;
} cmp_ctx;

static void compare_one(void *ud, json_t *obj) {
    cmp_ctx *c = ud;
    const char *name = tm_json_str(obj, "metadata.name", "");
    json_t *twin = tm_informer_get(c->other, tm_json_str(obj, "metadata.namespace", NULL), name);
    json_t *a = json_deep_copy(obj), *b = twin ? json_deep_copy(twin) : NULL;
    normalise(a);
    normalise(b);
    char where[2048] = "";
    if (!b) {
        c->differ++;
        printf("    %s: in the protobuf store only\n", name);
    } else if (first_diff(a, b, where, sizeof where)) {
        c->differ++;
        printf("    %s differs at %s\n", name, where);
    }
    c->checked++;
    json_decref(a);
    json_decref(b);
}

/* Every object of the protobuf informer equals its JSON twin; both hold as many. */
static int compare_stores(const tm_informer *p, const tm_informer *j, const char *what) {
    cmp_ctx c = {.other = j};
    tm_informer_foreach(p, compare_one, &c);
    CHECKF(tm_informer_size(p) == tm_informer_size(j), "%s: %zu objects in protobuf, %zu in JSON",
           what, tm_informer_size(p), tm_informer_size(j));
    CHECKF(c.differ == 0, "%s: %d of %d objects differ", what, c.differ, c.checked);
    printf("    %s: %d objects compared\n", what, c.checked);
    return c.differ;
}

static const char *pod_json =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
    "\"labels\":{\"app\":\"kp\",\"tier\":\"%s\"},\"annotations\":{\"tarema.io/runtime\":\"30s\","
    "\"note\":\"héllo \\\"quoted\\\"\"}},"
    "\"spec\":{\"schedulerName\":\"nobody-schedules-this\",\"activeDeadlineSeconds\":600,"
    "\"terminationGracePeriodSeconds\":5,\"priorityClassName\":\"\","
    "\"resources\":{\"requests\":{\"cpu\":\"1500m\",\"memory\":\"1Gi\"},"
    "\"limits\":{\"cpu\":\"2\",\"memory\":\"1536Mi\"}},"
    "\"nodeSelector\":{\"kubernetes.io/os\":\"linux\"},"
    "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
    "\"tolerationSeconds\":120},{\"key\":\"zone\",\"operator\":\"Equal\",\"value\":\"a\","
    "\"effect\":\"NoSchedule\"}],"
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
    "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/os\","
    "\"operator\":\"In\",\"values\":[\"linux\"]}]}]},"
    "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":7,\"preference\":"
    "{\"matchExpressions\":[{\"key\":\"tarema.io/"
    "cpu\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}}]},"
    "\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":50,"
    "\"podAffinityTerm\":{\"topologyKey\":\"kubernetes.io/hostname\",\"labelSelector\":"
    "{\"matchLabels\":{\"app\":\"kp\"}}}}]}},"
    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"topology.kubernetes.io/zone\","
    "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"app\":\"kp\"}},"
    "\"minDomains\":2}],"
    "\"initContainers\":[{\"name\":\"init\",\"image\":\"busybox\",\"command\":[\"true\"],"
    "\"resources\":{\"requests\":{\"cpu\":\"250m\"}}}],"
    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox:1.36\",\"args\":[\"sleep\",\"3600\"],"
    "\"ports\":[{\"name\":\"http\",\"containerPort\":8080,\"hostPort\":%d,\"protocol\":\"TCP\"}],"
    "\"env\":[{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}}],"
    "\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"256Mi\","
    "\"ephemeral-storage\":\"1G\"},\"limits\":{\"memory\":\"512Mi\"}},"
    "\"readinessProbe\":{\"httpGet\":{\"path\":\"/ready\",\"port\":\"http\"},"
    "\"periodSeconds\":3},"
    "\"livenessProbe\":{\"tcpSocket\":{\"port\":8080},\"initialDelaySeconds\":2}}],"
    "\"volumes\":[{\"name\":\"scratch\",\"emptyDir\":{\"sizeLimit\":\"2Gi\"}},"
    "{\"name\":\"cfg\",\"configMap\":{\"name\":\"nothing\",\"defaultMode\":420,\"optional\":true}}]"
    "}}";

static int create_pod(const char *name, const char *tier, int host_port) {
    char text[8192];
    snprintf(text, sizeof text, pod_json, name, tier, host_port);
    json_error_t je;
    json_t *pod = json_loads(text, 0, &je);
    if (!pod) {
        printf("    the test's pod does not parse: %s (column %d)\n", je.text, je.column);
        return -1;
    }
    char *coll = tm_kube_path("v1", "pods", ns, NULL, NULL);
    tm_err err = {0};
    json_t *r = tm_kube_create(kube, coll, pod, &err);
    if (!r)
        printf("    create pod %s: %s\n", name, err.msg);
    json_decref(r);
    json_decref(pod);
    free(coll);
    return r ? 0 : -1;
}

/* Runs both loops until fn says done or timeout_s passes. */
static bool run_both_until(bool (*fn)(void), double timeout_s) {
    double end = e2e_now_s() + timeout_s;
    tm_err err = {0};
    while (!fn() && e2e_now_s() < end) {
        tm_kube_run(pb, 50, &err);
        tm_kube_run(js, 50, &err);
    }
    return fn();
}

static tm_informer *pods_pb, *pods_js, *nodes_pb, *nodes_js;

static bool all_synced(void) {
    return tm_informer_synced(pods_pb) && tm_informer_synced(pods_js) &&
           tm_informer_synced(nodes_pb) && tm_informer_synced(nodes_js);
}

static const char *want_rv_pod;
static const char *want_label;
/* The patched pod shows the new label in both stores, the deleted pod is gone from both and the
 * new one is in both. */
static bool changes_seen(void) {
    const tm_informer *inf[] = {pods_pb, pods_js};
    for (int i = 0; i < 2; i++) {
        json_t *p = tm_informer_get(inf[i], ns, want_rv_pod);
        if (!p || strcmp(tm_json_str(p, "metadata.labels.stage", ""), want_label) != 0)
            return false;
        if (tm_informer_get(inf[i], ns, "kp-b") || !tm_informer_get(inf[i], ns, "kp-d"))
            return false;
    }
    return true;
}

static void test_list_then_watch_agree(void) {
    CHECK(create_pod("kp-a", "web", 0) == 0);
    CHECK(create_pod("kp-b", "db", 30100) == 0);
    CHECK(create_pod("kp-c", "web", 0) == 0);
    char *coll = tm_kube_path("v1", "pods", ns, NULL, NULL);
    tm_informer_opts o = {.path = coll};
    tm_err err = {0};
    pods_pb = tm_informer_start(pb, &o, &err);
    pods_js = tm_informer_start(js, &o, &err);
    o.path = "/api/v1/nodes";
    nodes_pb = tm_informer_start(pb, &o, &err);
    nodes_js = tm_informer_start(js, &o, &err);
    free(coll);
    CHECK(pods_pb && pods_js && nodes_pb && nodes_js);
    if (!pods_pb || !pods_js || !nodes_pb || !nodes_js)
        return;
    CHECK(run_both_until(all_synced, 60));
    /* the wire encodings are what was asked for */
    CHECK_STR(tm_informer_encoding(pods_pb), "protobuf");
    CHECK_STR(tm_informer_encoding(nodes_pb), "protobuf");
    CHECK_STR(tm_informer_encoding(pods_js), "json");
    CHECK_STR(tm_informer_encoding(nodes_js), "json");
    CHECK_INT(tm_informer_size(pods_pb), 3);
    CHECK(tm_informer_size(nodes_pb) > 0);
    compare_stores(pods_pb, pods_js, "listed pods");
    compare_stores(nodes_pb, nodes_js, "listed nodes");
    json_t *p = tm_informer_get(pods_pb, ns, "kp-b");
    /* spot checks of the special types, as the JSON reader wants them */
    json_t *c0 = json_array_get(tm_json_path(p, "spec.containers"), 0);
    CHECK_STR(tm_json_str(c0, "resources.requests.cpu", ""), "500m");
    CHECK_STR(tm_json_str(p, "spec.resources.limits.memory", ""), "1536Mi");
    CHECK_STR(tm_json_str(c0, "readinessProbe.httpGet.port", ""), "http");
    CHECK_INT(tm_json_int(c0, "livenessProbe.tcpSocket.port", 0), 8080);
    CHECK_INT(tm_json_int(json_array_get(json_object_get(c0, "ports"), 0), "hostPort", 0), 30100);
    CHECK_STR(tm_json_str(p, "kind", ""), "Pod");
    CHECK(strlen(tm_json_str(p, "metadata.creationTimestamp", "")) == 20);

    /* watched changes: a label patched in, a pod deleted, a pod created */
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "stage", "two");
    char *path = tm_kube_path("v1", "pods", ns, "kp-a", NULL);
    json_t *r = tm_kube_patch(kube, path, TM_PATCH_MERGE, patch, &err);
    CHECK(r != NULL);
    json_decref(r);
    json_decref(patch);
    free(path);
    path = tm_kube_path("v1", "pods", ns, "kp-b", NULL);
    CHECK(tm_kube_delete(kube, path, &err) == 0);
    free(path);
    CHECK(create_pod("kp-d", "db", 30101) == 0);
    want_rv_pod = "kp-a";
    want_label = "two";
    CHECK(run_both_until(changes_seen, 60));
    CHECK_STR(tm_informer_encoding(pods_pb), "protobuf");
    compare_stores(pods_pb, pods_js, "watched pods");
    CHECK_INT(tm_informer_relists(pods_pb), 0);
}

int main(void) {
    if (!(kube = e2e_client(0, 0)) || !(pb = e2e_client(0, 0)))
        return 1;
    tm_err err = {0};
    tm_kube_config *cfg = tm_kube_config_load(NULL, NULL, &err);
    if (!cfg) {
        printf("    cannot load kubeconfig: %s\n", err.msg);
        return 1;
    }
    cfg->json_only = true;
    js = tm_kube_new(cfg, &err);
    tm_kube_config_free(cfg);
    if (!js) {
        printf("    cannot create client: %s\n", err.msg);
        return 1;
    }
    snprintf(ns, sizeof ns, "kube-proto-%d", (int)getpid());
    if (!e2e_create_namespace(kube, ns))
        return 1;
    RUN(test_list_then_watch_agree);
    char *path = tm_kube_path("v1", "namespaces", NULL, ns, NULL);
    tm_kube_delete(kube, path, &err);
    free(path);
    tm_kube_free(pb);
    tm_kube_free(js);
    tm_kube_free(kube);
    return TEST_SUMMARY();
}
