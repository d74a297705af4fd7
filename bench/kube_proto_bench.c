/* kube_proto_bench.c: the same pod list as JSON and as protobuf: bytes on the wire and the CPU
 * time to decode it. The pods are the three a real kube-apiserver 1.35.4 sent
 * (tests/data/proto/pods.pb and pods.json, see capture.sh), repeated into a list of
 * KP_BENCH_PODS pods (default 10,000); the protobuf list is packed by protobuf-c and wrapped
 * in the "k8s\0" envelope exactly as the server does, the JSON one is written compact as the
 * server writes it. JSON is decoded the way lib/informer.c decodes a list page today
 * (json_loadb), protobuf by tm_kp_pod_list, and protobuf followed by tm_kp_to_json of every pod
 * (lib/kube_proto_json.h: the JSON objects the informers' readers take), once without and once
 * with metadata.managedFields. Each decode runs KP_BENCH_ROUNDS times (default 5); the median
 * CPU time is printed. Asserts nothing about time. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/fileutil.h"
#include "lib/kube_proto.h"
#include "lib/kube_proto_json.h"
#include "lib/proto/k8s_runtime.pb-c.h"
#include "proto_captures.h"

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Decodes the list and converts every pod (kept in one array, as an informer keeps them);
 * returns the CPU seconds and the pods converted in *n. Freeing is not timed, as for JSON. */
static double decode_to_json(const uint8_t *pb, size_t len, unsigned flags, size_t *n) {
    tm_err err = {{0}, 0};
    double t0 = cpu_s();
    K8s__Io__Api__Core__V1__PodList *l = tm_kp_pod_list(pb, len, &err);
    json_t *all = json_array();
    for (size_t i = 0; l && i < l->n_items; i++) {
        json_t *j = tm_kp_to_json(&l->items[i]->base, &tm_kp_kind_pod, flags, &err);
        if (!j) {
            fprintf(stderr, "kube_proto_bench: pod %zu: %s\n", i, err.msg);
            break;
        }
        json_array_append_new(all, j);
    }
    double t = cpu_s() - t0;
    if (!l)
        fprintf(stderr, "kube_proto_bench: %s\n", err.msg);
    *n = json_array_size(all);
    json_decref(all);
    tm_kp_free(l);
    return t;
}

int main(void) {
    long pods = getenv("KP_BENCH_PODS") ? atol(getenv("KP_BENCH_PODS")) : 10000;
    int rounds = getenv("KP_BENCH_ROUNDS") ? atoi(getenv("KP_BENCH_ROUNDS")) : 5;
    if (pods < 1 || rounds < 1 || rounds > 100) {
        fprintf(stderr, "kube_proto_bench: KP_BENCH_PODS must be >= 1, KP_BENCH_ROUNDS 1..100\n");
        return 1;
    }
    size_t pblen, jslen;
    char *pb = (char *)proto_capture_load("pods.pb", &pblen),
         *js = (char *)proto_capture_load("pods.json", &jslen);
    tm_err err = {{0}, 0};
    K8s__Io__Api__Core__V1__PodList *seed = pb ? tm_kp_pod_list(pb, pblen, &err) : NULL;
    json_t *jseed = js ? json_loadb(js, jslen, 0, NULL) : NULL;
    json_t *jitems = json_object_get(jseed, "items");
    if (!seed || !json_array_size(jitems) || seed->n_items != json_array_size(jitems)) {
        fprintf(stderr, "kube_proto_bench: cannot read the captured pod list: %s\n", err.msg);
        return 1;
    }

    /* The big lists: item i is captured pod i % 3, in both encodings. */
    K8s__Io__Api__Core__V1__PodList big = *seed;
    big.n_items = (size_t)pods;
    big.items = malloc(sizeof *big.items * (size_t)pods);
    json_t *jbig = json_deep_copy(jseed), *jbitems = json_array();
    for (long i = 0; i < pods; i++) {
        big.items[i] = seed->items[(size_t)i % seed->n_items];
        json_array_append(jbitems, json_array_get(jitems, (size_t)i % seed->n_items));
    }
    json_object_set_new(jbig, "items", jbitems);
    size_t rawlen = protobuf_c_message_get_packed_size(&big.base);
    uint8_t *raw = malloc(rawlen);
    protobuf_c_message_pack(&big.base, raw);
    K8s__Io__Apimachinery__Pkg__Runtime__TypeMeta tm =
        K8S__IO__APIMACHINERY__PKG__RUNTIME__TYPE_META__INIT;
    tm.apiversion = "v1";
    tm.kind = "PodList";
    K8s__Io__Apimachinery__Pkg__Runtime__Unknown un =
        K8S__IO__APIMACHINERY__PKG__RUNTIME__UNKNOWN__INIT;
    un.typemeta = &tm;
    un.has_raw = 1;
    un.raw.data = raw;
    un.raw.len = rawlen;
    un.contenttype = "";
    un.contentencoding = "";
    size_t pbbig_len = 4 + protobuf_c_message_get_packed_size(&un.base);
    uint8_t *pbbig = malloc(pbbig_len);
    memcpy(pbbig, "k8s\0", 4);
    protobuf_c_message_pack(&un.base, pbbig + 4);
    char *jsbig = json_dumps(jbig, JSON_COMPACT);
    size_t jsbig_len = strlen(jsbig);

    double tj[100], tp[100], tc[100], ta[100];
    size_t check_j = 0, check_p = 0, check_c = 0, check_a = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = cpu_s();
        json_t *v = json_loadb(jsbig, jsbig_len, 0, NULL);
        tj[r] = cpu_s() - t0;
        check_j = json_array_size(json_object_get(v, "items"));
        json_decref(v);
        t0 = cpu_s();
        K8s__Io__Api__Core__V1__PodList *l = tm_kp_pod_list(pbbig, pbbig_len, &err);
        tp[r] = cpu_s() - t0;
        check_p = l ? l->n_items : 0;
        if (!l)
            fprintf(stderr, "kube_proto_bench: %s\n", err.msg);
        tm_kp_free(l);
        tc[r] = decode_to_json(pbbig, pbbig_len, TM_KPJ_NO_MANAGED_FIELDS, &check_c);
        ta[r] = decode_to_json(pbbig, pbbig_len, 0, &check_a);
    }
    qsort(tj, (size_t)rounds, sizeof tj[0], cmp_d);
    qsort(tp, (size_t)rounds, sizeof tp[0], cmp_d);
    qsort(tc, (size_t)rounds, sizeof tc[0], cmp_d);
    qsort(ta, (size_t)rounds, sizeof ta[0], cmp_d);
    int ok = check_j == (size_t)pods && check_p == (size_t)pods && check_c == (size_t)pods &&
             check_a == (size_t)pods;
    printf("kube_proto_bench: %ld pods (the 3 captured ones repeated), median of %d rounds\n", pods,
           rounds);
    printf("  captured 3-pod list:  JSON %zu bytes as jq wrote it, protobuf %zu bytes\n", jslen,
           pblen);
    printf("  bytes:   JSON %.1f MB  protobuf %.1f MB  (%.2fx)  per pod %zu / %zu B\n",
           (double)jsbig_len / 1e6, (double)pbbig_len / 1e6, (double)pbbig_len / (double)jsbig_len,
           jsbig_len / (size_t)pods, pbbig_len / (size_t)pods);
    printf(
        "  decode:  JSON (jansson json_loadb) %.3f s  protobuf (tm_kp_pod_list) %.3f s  (%.2fx)\n",
        tj[rounds / 2], tp[rounds / 2], tp[rounds / 2] / tj[rounds / 2]);
    printf("  decode + tm_kp_to_json:  without managedFields %.3f s (%.2fx JSON)  all fields "
           "%.3f s (%.2fx JSON)\n",
           tc[rounds / 2], tc[rounds / 2] / tj[rounds / 2], ta[rounds / 2],
           ta[rounds / 2] / tj[rounds / 2]);
    printf("  per pod: JSON %.1f us  protobuf %.1f us  protobuf + to_json %.1f us (no "
           "managedFields) %.1f us (all)\n",
           tj[rounds / 2] / (double)pods * 1e6, tp[rounds / 2] / (double)pods * 1e6,
           tc[rounds / 2] / (double)pods * 1e6, ta[rounds / 2] / (double)pods * 1e6);
    if (!ok)
        fprintf(stderr,
                "kube_proto_bench: decoded %zu (JSON), %zu (protobuf), %zu and %zu (to_json) "
                "items, not %ld\n",
                check_j, check_p, check_c, check_a, pods);

    free(jsbig);
    free(pbbig);
    free(raw);
    free(big.items);
    json_decref(jbig);
    json_decref(jseed);
    tm_kp_free(seed);
    free(pb);
    free(js);
    return ok ? 0 : 1;
}
