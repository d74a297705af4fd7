/* lib_kube_proto_json_test.c: lib/kube_proto_json.h on what a real kube-apiserver 1.35.4 sent
 * (tests/data/proto/, made by tests/data/proto/capture.sh): every pod, node, watch object and
 * the 410 Status, decoded from protobuf and converted, must equal the JSON the same server gave
 * for the same object, exactly, once the server's zero values are taken out (protobuf cannot
 * tell them from absent; kube_proto_json.h). Then each type with a JSON form of its own, built
 * by hand, and the errors. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proto_captures.h"
#include "lib/fileutil.h"
#include "lib/kube_proto.h"
#include "lib/jsonutil.h"
#include "lib/kube_proto_json.h"
#include "lib/proto/k8s_runtime.pb-c.h"

typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta ObjectMeta;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time Time;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__MicroTime MicroTime;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Duration Duration;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__FieldsV1 FieldsV1;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ManagedFieldsEntry ManagedFieldsEntry;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__WatchEvent WatchEvent;
typedef K8s__Io__Apimachinery__Pkg__Runtime__RawExtension RawExtension;
typedef K8s__Io__Apimachinery__Pkg__Api__Resource__Quantity Quantity;
typedef K8s__Io__Apimachinery__Pkg__Util__Intstr__IntOrString IntOrString;
typedef K8s__Io__Api__Core__V1__Pod Pod;
typedef K8s__Io__Api__Core__V1__PodSpec PodSpec;
typedef K8s__Io__Api__Core__V1__Container Container;
typedef K8s__Io__Api__Core__V1__ResourceRequirements ResourceRequirements;
typedef K8s__Io__Api__Core__V1__ResourceRequirements__RequestsEntry RequestsEntry;
typedef K8s__Io__Api__Core__V1__Probe Probe;
typedef K8s__Io__Api__Core__V1__ProbeHandler ProbeHandler;
typedef K8s__Io__Api__Core__V1__HTTPGetAction HTTPGetAction;
typedef K8s__Io__Api__Core__V1__TCPSocketAction TCPSocketAction;
typedef K8s__Io__Api__Core__V1__Secret Secret;
typedef K8s__Io__Api__Core__V1__Secret__DataEntry SecretDataEntry;
typedef K8s__Io__Api__Core__V1__Volume Volume;
typedef K8s__Io__Api__Core__V1__VolumeSource VolumeSource;
typedef K8s__Io__Api__Core__V1__ConfigMapVolumeSource ConfigMapVolumeSource;
typedef K8s__Io__Api__Core__V1__LocalObjectReference LocalObjectReference;
typedef K8s__Io__Api__Coordination__V1__Lease Lease;
typedef K8s__Io__Api__Coordination__V1__LeaseSpec LeaseSpec;

/* ---- comparing with the server's JSON --------------------------------------------------- */

static int is_zero(json_t *v) {
    return json_is_null(v) || json_is_false(v) || (json_is_string(v) && !json_string_length(v)) ||
           (json_is_integer(v) && json_integer_value(v) == 0) ||
           (json_is_real(v) && json_real_value(v) == 0) ||
           (json_is_array(v) && json_array_size(v) == 0);
}

/* Takes out, at any depth, the keys whose value is "", 0, false, null or [] ({} stays): what a
 * server's JSON holds that its protobuf cannot tell from absent. Arrays keep their elements. */
static void normalise(json_t *j) {
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v) {
            normalise(v);
            if (is_zero(v))
                json_object_del(j, k);
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            normalise(json_array_get(j, i));
    }
}

/* The path of the first difference between a and b into buf; 1 when there is one. */
static int first_diff(json_t *a, json_t *b, char *buf, size_t cap, size_t at) {
    if (json_equal(a, b))
        return 0;
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) {
            snprintf(buf + at, cap - at, ".%s", k);
            json_t *w = json_object_get(b, k);
            if (!w) {
                snprintf(buf + strlen(buf), cap - strlen(buf), " (only in the conversion)");
                return 1;
            }
            if (first_diff(v, w, buf, cap, strlen(buf)))
                return 1;
        }
        json_object_foreach(b, k, v) {
            if (!json_object_get(a, k)) {
                snprintf(buf + at, cap - at, ".%s (only in the server's JSON)", k);
                return 1;
            }
        }
    } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(buf + at, cap - at, "[%zu]", i);
            if (first_diff(json_array_get(a, i), json_array_get(b, i), buf, cap, strlen(buf)))
                return 1;
        }
    }
    char *x = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT),
         *y = json_dumps(b, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(buf + at, cap - at, ": conversion %.200s, server %.200s", x ? x : "?", y ? y : "?");
    free(x);
    free(y);
    return 1;
}

/* Converts msg and checks it equals the server's JSON server (normalised; a copy is taken).
 * drop_kind: the server's list items carry no kind/apiVersion. */
static void check_same(const char *what, const ProtobufCMessage *msg, const tm_kp_kind *kind,
                       json_t *server) {
    tm_err err = {{0}, 0};
    json_t *mine = tm_kp_to_json(msg, kind, 0, &err);
    CHECKF(mine != NULL, "%s: %s", what, err.msg);
    json_t *want = json_deep_copy(server);
    normalise(want);
    if (kind && !json_object_get(server, "kind")) {
        json_object_del(mine, "kind");
        json_object_del(mine, "apiVersion");
    }
    char diff[2048] = "";
    int differs = mine && first_diff(mine, want, diff, sizeof diff, 0);
    CHECKF(mine && !differs, "%s differs at %s", what, diff);
    json_decref(mine);
    json_decref(want);
}

static void test_pods_match_server_json(void) {
    size_t len;
    uint8_t *pb = proto_capture_load("pods.pb", &len);
    json_t *j = proto_capture_json("pods.json");
    tm_err err = {{0}, 0};
    K8s__Io__Api__Core__V1__PodList *l = pb ? tm_kp_pod_list(pb, len, &err) : NULL;
    CHECKF(l && j, "%s", err.msg);
    json_t *items = json_object_get(j, "items");
    CHECK(l && l->n_items == 3 && json_array_size(items) == 3);
    for (size_t i = 0; l && i < l->n_items && i < json_array_size(items); i++) {
        char what[32];
        snprintf(what, sizeof what, "pod %zu", i);
        check_same(what, &l->items[i]->base, &tm_kp_kind_pod, json_array_get(items, i));
    }
    /* The whole list, its metadata (continue token, resourceVersion) with it. */
    if (l)
        check_same("pod list", &l->base, &tm_kp_kind_pod_list, j);
    tm_kp_free(l);
    free(pb);
    json_decref(j);
}

static void test_nodes_match_server_json(void) {
    size_t len;
    uint8_t *pb = proto_capture_load("nodes.pb", &len);
    json_t *j = proto_capture_json("nodes.json");
    tm_err err = {{0}, 0};
    K8s__Io__Api__Core__V1__NodeList *l = pb ? tm_kp_node_list(pb, len, &err) : NULL;
    CHECKF(l && j, "%s", err.msg);
    json_t *items = json_object_get(j, "items");
    CHECK(l && l->n_items >= 2 && l->n_items == json_array_size(items));
    for (size_t i = 0; l && i < l->n_items && i < json_array_size(items); i++) {
        char what[32];
        snprintf(what, sizeof what, "node %zu", i);
        check_same(what, &l->items[i]->base, &tm_kp_kind_node, json_array_get(items, i));
    }
    tm_kp_free(l);
    free(pb);
    json_decref(j);
}

/* Every object of a watch stream (pods, bookmarks) and of the 410 watch (a Status). */
static void check_watch_objects(const char *pbname, const char *jsname, size_t want_events) {
    size_t len;
    uint8_t *pb = proto_capture_load(pbname, &len);
    json_t *events = proto_capture_events(jsname);
    CHECK(pb && json_array_size(events) == want_events);
    tm_kpwatch *ws = tm_kpwatch_new(&tm_kp_kind_pod, 0);
    tm_err err = {{0}, 0};
    CHECK(pb && tm_kpwatch_feed(ws, pb, len, &err) == 0);
    tm_kp_event ev;
    size_t got = 0;
    int rc;
    while ((rc = tm_kpwatch_next(ws, &ev, &err)) == 1) {
        json_t *jo = json_object_get(json_array_get(events, got), "object");
        char what[64];
        snprintf(what, sizeof what, "%s event %zu (%s)", pbname, got, tm_ws_type_name(ev.type));
        check_same(what, ev.object, ev.type == TM_WS_ERROR ? &tm_kp_kind_status : &tm_kp_kind_pod,
                   jo);
        tm_kp_free(ev.object);
        got++;
    }
    CHECKF(rc == 0, "%s", err.msg);
    CHECK_INT(got, want_events);
    tm_kpwatch_free(ws);
    free(pb);
    json_decref(events);
}

static void test_watch_objects_match_server_json(void) {
    check_watch_objects("watch.pb", "watch.json", 7);
    check_watch_objects("gone.pb", "gone.json", 1);
}

/* ---- each special type, by hand --------------------------------------------------------- */

/* The JSON text of msg converted (caller frees), or "ERROR: <message>". */
static char *conv_text(const ProtobufCMessage *msg, const tm_kp_kind *kind, unsigned flags) {
    tm_err err = {{0}, 0};
    json_t *j = tm_kp_to_json(msg, kind, flags, &err);
    char *s;
    if (!j) {
        s = malloc(strlen(err.msg) + 8);
        strcpy(s, "ERROR: ");
        strcat(s, err.msg);
        return s;
    }
    s = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return s;
}

#define CHECK_CONV(msg, kind, flags, want)                                                         \
    do {                                                                                           \
        char *got_ = conv_text((msg), (kind), (flags));                                            \
        CHECK_STR(got_, (want));                                                                   \
        free(got_);                                                                                \
    } while (0)

static void test_time(void) {
    Time created = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
    created.has_seconds = 1;
    created.seconds = 1709164800 + 3723; /* a leap day */
    created.has_nanos = 1;
    created.nanos = 999999999; /* dropped: Time is seconds in JSON */
    Time deleted = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
    deleted.has_seconds = 1;
    deleted.seconds = -1;
    ObjectMeta meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    meta.name = "p";
    meta.creationtimestamp = &created;
    meta.deletiontimestamp = &deleted;
    Pod pod = K8S__IO__API__CORE__V1__POD__INIT;
    pod.metadata = &meta;
    CHECK_CONV(&pod.base, &tm_kp_kind_pod, 0,
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"creationTimestamp\":"
               "\"2024-02-29T01:02:03Z\",\"deletionTimestamp\":\"1969-12-31T23:59:59Z\","
               "\"name\":\"p\"}}");
    /* The zero time (an empty message, as the server sends a Go zero time) is null: left out. */
    Time zero = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
    meta.creationtimestamp = &zero;
    deleted.seconds = 0; /* the epoch is a time like any other */
    CHECK_CONV(&meta.base, NULL, 0,
               "{\"deletionTimestamp\":\"1970-01-01T00:00:00Z\",\"name\":\"p\"}");
    deleted.seconds = 253402300799LL;
    CHECK_CONV(&meta.base, NULL, 0,
               "{\"deletionTimestamp\":\"9999-12-31T23:59:59Z\",\"name\":\"p\"}");
    /* Far out of range: no crash, some text. */
    deleted.seconds = INT64_MIN;
    char *s = conv_text(&meta.base, NULL, 0);
    CHECK(s && strncmp(s, "ERROR", 5) != 0);
    free(s);
    deleted.seconds = INT64_MAX;
    s = conv_text(&meta.base, NULL, 0);
    CHECK(s && strncmp(s, "ERROR", 5) != 0);
    free(s);
}

static void test_microtime(void) {
    MicroTime renew = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__MICRO_TIME__INIT;
    renew.has_seconds = 1;
    renew.seconds = 1700000000;
    renew.has_nanos = 1;
    renew.nanos = 123456789; /* truncated to microseconds */
    MicroTime acquire = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__MICRO_TIME__INIT;
    acquire.has_seconds = 1;
    acquire.seconds = 1700000000;
    LeaseSpec spec = K8S__IO__API__COORDINATION__V1__LEASE_SPEC__INIT;
    spec.holderidentity = "me";
    spec.has_leasedurationseconds = 1;
    spec.leasedurationseconds = 15;
    spec.renewtime = &renew;
    spec.acquiretime = &acquire;
    Lease lease = K8S__IO__API__COORDINATION__V1__LEASE__INIT;
    lease.spec = &spec;
    CHECK_CONV(&lease.base, &tm_kp_kind_lease, 0,
               "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"spec\":{"
               "\"acquireTime\":\"2023-11-14T22:13:20.000000Z\",\"holderIdentity\":\"me\","
               "\"leaseDurationSeconds\":15,\"renewTime\":\"2023-11-14T22:13:20.123456Z\"}}");
    /* Nanos out of range carry into the seconds, as Go's time.Unix does. */
    renew.nanos = -1000;
    CHECK_CONV(&renew.base, NULL, 0, "\"2023-11-14T22:13:19.999999Z\"");
    renew.nanos = 2000001000;
    CHECK_CONV(&renew.base, NULL, 0, "\"2023-11-14T22:13:22.000001Z\"");
}

static void test_duration(void) {
    static const struct {
        int64_t ns;
        const char *want;
    } cases[] = {
        {0, "\"0s\""},
        {1, "\"1ns\""},
        {999, "\"999ns\""},
        {1500, "\"1.5\xc2\xb5s\""},
        {1000000, "\"1ms\""},
        {1234567, "\"1.234567ms\""},
        {1500000000, "\"1.5s\""},
        {60000000000LL, "\"1m0s\""},
        {3723000000000LL, "\"1h2m3s\""},
        {3600000000000LL, "\"1h0m0s\""},
        {-90000000000LL, "\"-1m30s\""},
        {90061000000001LL, "\"25h1m1.000000001s\""},
        {INT64_MIN, "\"-2562047h47m16.854775808s\""},
        {INT64_MAX, "\"2562047h47m16.854775807s\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Duration d = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__DURATION__INIT;
        d.has_duration = 1;
        d.duration = cases[i].ns;
        CHECK_CONV(&d.base, NULL, 0, cases[i].want);
    }
}

/* A container with resources requests {cpu: 2, memory: 1Gi}, a readiness probe on a port by
 * number and a liveness probe on a port by name. */
static void test_intorstring_quantity_map_inline(void) {
    Quantity cpu = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    cpu.string = "2";
    Quantity mem = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    mem.string = "1Gi";
    RequestsEntry e1 = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
    e1.key = "cpu";
    e1.value = &cpu;
    RequestsEntry e2 = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
    e2.key = "memory";
    e2.value = &mem;
    RequestsEntry *req[] = {&e1, &e2};
    ResourceRequirements res = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__INIT;
    res.n_requests = 2;
    res.requests = req;

    IntOrString p8080 = K8S__IO__APIMACHINERY__PKG__UTIL__INTSTR__INT_OR_STRING__INIT;
    p8080.has_type = 1;
    p8080.type = 0;
    p8080.has_intval = 1;
    p8080.intval = 8080;
    HTTPGetAction hg = K8S__IO__API__CORE__V1__HTTPGET_ACTION__INIT;
    hg.path = "/healthz";
    hg.port = &p8080;
    ProbeHandler rh = K8S__IO__API__CORE__V1__PROBE_HANDLER__INIT;
    rh.httpget = &hg;
    Probe ready = K8S__IO__API__CORE__V1__PROBE__INIT;
    ready.handler = &rh;
    ready.has_periodseconds = 1;
    ready.periodseconds = 5;

    IntOrString phttp = K8S__IO__APIMACHINERY__PKG__UTIL__INTSTR__INT_OR_STRING__INIT;
    phttp.has_type = 1;
    phttp.type = 1;
    phttp.strval = "http";
    TCPSocketAction tcp = K8S__IO__API__CORE__V1__TCPSOCKET_ACTION__INIT;
    tcp.port = &phttp;
    ProbeHandler lh = K8S__IO__API__CORE__V1__PROBE_HANDLER__INIT;
    lh.tcpsocket = &tcp;
    Probe live = K8S__IO__API__CORE__V1__PROBE__INIT;
    live.handler = &lh;

    Container c = K8S__IO__API__CORE__V1__CONTAINER__INIT;
    c.name = "main";
    c.image = "";
    c.resources = &res;
    c.readinessprobe = &ready;
    c.livenessprobe = &live;
    CHECK_CONV(&c.base, NULL, 0,
               "{\"livenessProbe\":{\"tcpSocket\":{\"port\":\"http\"}},\"name\":\"main\","
               "\"readinessProbe\":{\"httpGet\":{\"path\":\"/healthz\",\"port\":8080},"
               "\"periodSeconds\":5},\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":"
               "\"1Gi\"}}}");
    /* An IntOrString of a type that does not exist cannot be written; the path is named. */
    phttp.type = 7;
    CHECK_CONV(&c.base, NULL, 0,
               "ERROR: livenessProbe.tcpSocket.port: IntOrString of type 7 (0 is int, 1 is "
               "string)");
    /* A map entry whose Quantity is absent is the zero quantity. */
    phttp.type = 1;
    e2.value = NULL;
    CHECK_CONV(&res.base, NULL, 0, "{\"requests\":{\"cpu\":\"2\",\"memory\":\"0\"}}");

    /* Inline: Volume.volumeSource and ConfigMapVolumeSource.localObjectReference are embedded
     * Go structs, their fields the parent's in JSON. */
    LocalObjectReference ref = K8S__IO__API__CORE__V1__LOCAL_OBJECT_REFERENCE__INIT;
    ref.name = "cm";
    ConfigMapVolumeSource cmv = K8S__IO__API__CORE__V1__CONFIG_MAP_VOLUME_SOURCE__INIT;
    cmv.localobjectreference = &ref;
    cmv.has_defaultmode = 1;
    cmv.defaultmode = 420;
    VolumeSource vs = K8S__IO__API__CORE__V1__VOLUME_SOURCE__INIT;
    vs.configmap = &cmv;
    Volume vol = K8S__IO__API__CORE__V1__VOLUME__INIT;
    vol.name = "v";
    vol.volumesource = &vs;
    CHECK_CONV(&vol.base, NULL, 0,
               "{\"configMap\":{\"defaultMode\":420,\"name\":\"cm\"},\"name\":\"v\"}");
}

static void test_bytes_base64(void) {
    SecretDataEntry e[4];
    SecretDataEntry *ep[4];
    static const char *vals[] = {"hello", "h", "he", ""};
    static const char *keys[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        SecretDataEntry init = K8S__IO__API__CORE__V1__SECRET__DATA_ENTRY__INIT;
        e[i] = init;
        e[i].key = (char *)keys[i];
        e[i].has_value = 1;
        e[i].value.data = (uint8_t *)vals[i];
        e[i].value.len = strlen(vals[i]);
        ep[i] = &e[i];
    }
    Secret s = K8S__IO__API__CORE__V1__SECRET__INIT;
    s.n_data = 4;
    s.data = ep;
    s.type = "Opaque";
    CHECK_CONV(&s.base, NULL, 0,
               "{\"data\":{\"a\":\"aGVsbG8=\",\"b\":\"aA==\",\"c\":\"aGU=\",\"d\":\"\"},"
               "\"type\":\"Opaque\"}");
    /* Strings that are not UTF-8: the bytes become U+FFFD, as Go writes them. */
    s.n_data = 0;
    s.type = "a\xff"
             "b";
    CHECK_CONV(&s.base, NULL, 0,
               "{\"type\":\"a\xef\xbf\xbd"
               "b\"}");
}

/* Map values and array elements are written even when zero: a label "" is a label. */
static void test_zero_map_values_and_elements_stay(void) {
    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta__LabelsEntry l0 =
        K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__LABELS_ENTRY__INIT;
    l0.key = "node-role.kubernetes.io/control-plane";
    l0.value = "";
    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta__LabelsEntry *labels[] = {&l0};
    char *fin[] = {"a", "", NULL};
    ObjectMeta meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    meta.n_labels = 1;
    meta.labels = labels;
    meta.n_finalizers = 3;
    meta.finalizers = fin;
    meta.name = ""; /* zero: left out */
    meta.has_generation = 1;
    meta.generation = 0; /* zero: left out */
    CHECK_CONV(&meta.base, NULL, 0,
               "{\"finalizers\":[\"a\",\"\",\"\"],\"labels\":{\"node-role.kubernetes.io/"
               "control-plane\":\"\"}}");
    /* A key that is not UTF-8 gets U+FFFD for the bad byte, as Go writes it. (Found by the
     * fuzzer, tests/fuzz/corpus/kube_proto/to_json_map_key_not_utf8.pb: jansson refuses such a
     * key and frees the value it was given, which was then used again.) */
    l0.key = "k\xff";
    l0.value = "v";
    meta.n_finalizers = 0;
    CHECK_CONV(&meta.base, NULL, 0, "{\"labels\":{\"k\xef\xbf\xbd\":\"v\"}}");
}

static void test_fields_v1_and_managed_fields(void) {
    static const char good[] = "{\"f:metadata\":{\"f:labels\":{}}}";
    FieldsV1 f0 = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__FIELDS_V1__INIT;
    f0.has_raw = 1;
    f0.raw.data = (uint8_t *)good;
    f0.raw.len = strlen(good);
    ManagedFieldsEntry m0 = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__MANAGED_FIELDS_ENTRY__INIT;
    m0.manager = "kubectl";
    m0.fieldsv1 = &f0;
    static const char bad[] = "{\"f:spec\":"; /* cut short */
    FieldsV1 f1 = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__FIELDS_V1__INIT;
    f1.has_raw = 1;
    f1.raw.data = (uint8_t *)bad;
    f1.raw.len = strlen(bad);
    ManagedFieldsEntry m1 = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__MANAGED_FIELDS_ENTRY__INIT;
    m1.manager = "kubelet";
    m1.fieldsv1 = &f1;
    ManagedFieldsEntry *mf[] = {&m0, &m1};
    ObjectMeta meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    meta.name = "p";
    meta.n_managedfields = 1;
    meta.managedfields = mf;
    Pod pod = K8S__IO__API__CORE__V1__POD__INIT;
    pod.metadata = &meta;
    CHECK_CONV(&pod.base, NULL, 0,
               "{\"metadata\":{\"managedFields\":[{\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{}}},"
               "\"manager\":\"kubectl\"}],\"name\":\"p\"}}");
    meta.n_managedfields = 2;
    char *s = conv_text(&pod.base, NULL, 0);
    CHECKF(strncmp(s, "ERROR: metadata.managedFields[1].fieldsV1: not JSON: ", 53) == 0, "%s", s);
    free(s);
    /* Left out, the bad one is not even read. */
    CHECK_CONV(&pod.base, &tm_kp_kind_pod, TM_KPJ_NO_MANAGED_FIELDS,
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}");
    /* Empty raw: the server's null, left out. */
    f1.has_raw = 0;
    CHECK_CONV(&m1.base, NULL, 0, "{\"manager\":\"kubelet\"}");
}

static void test_raw_extension(void) {
    static const char obj[] = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"}}";
    RawExtension raw = K8S__IO__APIMACHINERY__PKG__RUNTIME__RAW_EXTENSION__INIT;
    raw.has_raw = 1;
    raw.raw.data = (uint8_t *)obj;
    raw.raw.len = strlen(obj);
    WatchEvent ev = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__WATCH_EVENT__INIT;
    ev.type = "ADDED";
    ev.object = &raw;
    CHECK_CONV(&ev.base, NULL, 0,
               "{\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"}},\"type\":\"ADDED\"}");
    raw.raw.data = (uint8_t *)"k8s\0\x0a";
    raw.raw.len = 5;
    char *s = conv_text(&ev.base, NULL, 0);
    CHECKF(strncmp(s, "ERROR: object: not JSON", 23) == 0, "%s", s);
    free(s);
}

static void test_bad_arguments(void) {
    tm_err err = {{0}, 0};
    CHECK(tm_kp_to_json(NULL, NULL, 0, &err) == NULL);
    CHECK(err.msg[0] != 0);
    CHECK(tm_kp_to_json(NULL, NULL, 0, NULL) == NULL);
}

/* Pod {metadata {name "a"}, spec {field 99 = 1}}: a field a newer API server might send. Kept
 * out quietly by default; refused, naming where, with TM_KPJ_STRICT. */
static void test_strict_refuses_unknown_fields(void) {
    const uint8_t raw[] = {0x0a, 0x03, 0x0a, 0x01, 'a', 0x12, 0x03, 0x98, 0x06, 0x01};
    ProtobufCMessage *m =
        protobuf_c_message_unpack(&k8s__io__api__core__v1__pod__descriptor, NULL, sizeof raw, raw);
    CHECK(m != NULL);
    if (!m)
        return;
    tm_err err = {{0}, 0};
    json_t *j = tm_kp_to_json(m, &tm_kp_kind_pod, 0, &err);
    CHECK_STR(tm_json_str(j, "metadata.name", NULL), "a");
    json_decref(j);
    j = tm_kp_to_json(m, &tm_kp_kind_pod, TM_KPJ_STRICT, &err);
    CHECK(j == NULL);
    CHECKF(strstr(err.msg, "spec: ") == err.msg && strstr(err.msg, "field 99, unknown"), "%s",
           err.msg);
    json_decref(j);
    /* a message without unknown fields converts under TM_KPJ_STRICT too */
    const uint8_t ok[] = {0x0a, 0x03, 0x0a, 0x01, 'b'};
    ProtobufCMessage *m2 =
        protobuf_c_message_unpack(&k8s__io__api__core__v1__pod__descriptor, NULL, sizeof ok, ok);
    j = m2 ? tm_kp_to_json(m2, &tm_kp_kind_pod, TM_KPJ_STRICT, &err) : NULL;
    CHECK_STR(tm_json_str(j, "metadata.name", NULL), "b");
    json_decref(j);
    protobuf_c_message_free_unpacked(m, NULL);
    if (m2)
        protobuf_c_message_free_unpacked(m2, NULL);
}

int main(void) {
    RUN(test_pods_match_server_json);
    RUN(test_nodes_match_server_json);
    RUN(test_watch_objects_match_server_json);
    RUN(test_time);
    RUN(test_microtime);
    RUN(test_duration);
    RUN(test_intorstring_quantity_map_inline);
    RUN(test_bytes_base64);
    RUN(test_zero_map_values_and_elements_stay);
    RUN(test_fields_v1_and_managed_fields);
    RUN(test_raw_extension);
    RUN(test_bad_arguments);
    RUN(test_strict_refuses_unknown_fields);
    return TEST_SUMMARY();
}
