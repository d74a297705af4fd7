/* End-to-end tests of lib/kube.h's synchronous calls and asynchronous requests against the
 * real local control plane ($KUBECONFIG from tests/run.sh or hack/cluster.sh env): list the
 * kwok nodes of the heterogeneous node file (paged), create/get/patch/replace/delete, the
 * binding subresource, events.k8s.io events, Status messages in errors, async requests on
 * the loop and the client-side qps limit. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/kube_internal.h"
#include "lib_kube_e2e.h"

static tm_kube *kube;
static char ns[64];

static json_t *pod_manifest(const char *name) {
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:[{s:s, s:s}]}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", "name", name, "labels", "app", "kube-e2e", "spec",
                     "schedulerName", "nobody-schedules-this", "containers", "name", "main",
                     "image", "busybox");
}

static void test_list_kwok_nodes_paged(void) {
    tm_err err = {0};
    char *rv = NULL;
    tm_list_opts opts = {.limit = 4};
    json_t *nodes = tm_kube_list(kube, "/api/v1/nodes", &opts, &rv, &err);
    CHECKF(nodes != NULL, "%s", err.msg);
    if (!nodes)
        return;
    /* tests/fixtures/nodes/paper-5442.yaml: 5 e2, 4 n1, 4 n2, 2 c2 (15, so 4 pages of 4). */
    int e2 = 0, n1 = 0, n2 = 0, c2 = 0;
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) {
        const char *name = tm_json_str(n, "metadata.name", "");
        e2 += strncmp(name, "e2-", 3) == 0;
        n1 += strncmp(name, "n1-", 3) == 0;
        n2 += strncmp(name, "n2-", 3) == 0;
        c2 += strncmp(name, "c2-", 3) == 0;
        CHECK_STR(tm_json_str(n, "kind", NULL), "Node");
        CHECK_STR(tm_json_str(n, "apiVersion", NULL), "v1");
    }
    CHECKF(json_array_size(nodes) >= 15, "got %zu nodes", json_array_size(nodes));
    CHECK(e2 >= 5 && n1 >= 4 && n2 >= 4 && c2 >= 2);
    CHECK(rv != NULL && *rv);
    /* A label selector narrows the list on the server. */
    tm_list_opts sel = {.label_selector = "type=kwok"};
    json_t *kw = tm_kube_list(kube, "/api/v1/nodes", &sel, NULL, &err);
    CHECKF(kw != NULL, "%s", err.msg);
    json_decref(kw);
    json_decref(nodes);
    free(rv);
}

static void test_error_carries_status_message(void) {
    tm_err err = {0};
    char *path = tm_kube_path("v1", "pods", ns, "does-not-exist", NULL);
    json_t *r = tm_kube_get(kube, path, &err);
    CHECK(r == NULL);
    CHECK_INT(err.http_status, 404);
    CHECKF(strstr(err.msg, "pods \"does-not-exist\" not found") != NULL, "%s", err.msg);
    CHECK_INT(tm_kube_delete(kube, path, &err), 0); /* 404 counts as success */
    free(path);
    /* A validation error names the field. */
    json_t *bad = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata",
                            "name", "Bad_Name");
    char *coll = tm_kube_path("v1", "pods", ns, NULL, NULL);
    r = tm_kube_create(kube, coll, bad, &err);
    CHECK(r == NULL);
    CHECK_INT(err.http_status, 422);
    CHECKF(strstr(err.msg, "Bad_Name") != NULL, "%s", err.msg);
    json_decref(bad);
    free(coll);
}

static void test_create_get_patch_replace_delete(void) {
    tm_err err = {0};
    char *coll = tm_kube_path("v1", "configmaps", ns, NULL, NULL);
    char *path = tm_kube_path("v1", "configmaps", ns, "cm1", NULL);
    json_t *cm = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                           "metadata", "name", "cm1", "data", "a", "1");
    json_t *r = tm_kube_create(kube, coll, cm, &err);
    CHECKF(r != NULL, "%s", err.msg);
    json_decref(r);
    json_t *p = json_pack("{s:{s:s}}", "data", "b", "2");
    r = tm_kube_patch(kube, path, TM_PATCH_MERGE, p, &err);
    CHECKF(r != NULL, "%s", err.msg);
    CHECK_STR(tm_json_str(r, "data.a", NULL), "1");
    CHECK_STR(tm_json_str(r, "data.b", NULL), "2");
    json_decref(p);
    /* Replace with a stale resourceVersion: 409 with the API's message. */
    json_t *stale = json_deep_copy(r);
    json_object_set_new(json_object_get(stale, "metadata"), "resourceVersion", json_string("1"));
    json_t *r2 = tm_kube_replace(kube, path, stale, &err);
    CHECK(r2 == NULL);
    CHECK_INT(err.http_status, 409);
    json_decref(stale);
    json_object_set_new(json_object_get(r, "data"), "c", json_string("3"));
    r2 = tm_kube_replace(kube, path, r, &err);
    CHECKF(r2 != NULL, "%s", err.msg);
    json_decref(r2);
    json_decref(r);
    json_t *jp = json_pack("[{s:s, s:s}]", "op", "remove", "path", "/data/a");
    r = tm_kube_patch(kube, path, TM_PATCH_JSON, jp, &err);
    CHECKF(r != NULL && !tm_json_str(r, "data.a", NULL), "%s", err.msg);
    json_decref(r);
    json_decref(jp);
    r = tm_kube_get(kube, path, &err);
    CHECK_STR(tm_json_str(r, "data.c", NULL), "3");
    json_decref(r);
    CHECK_INT(tm_kube_delete(kube, path, &err), 0);
    r = tm_kube_get(kube, path, &err);
    CHECK(r == NULL && err.http_status == 404);
    json_decref(cm);
    free(coll);
    free(path);
}

static void test_strategic_patch_bind_and_event(void) {
    tm_err err = {0};
    char *coll = tm_kube_path("v1", "pods", ns, NULL, NULL);
    json_t *pod = pod_manifest("bindme");
    json_t *created = tm_kube_create(kube, coll, pod, &err);
    CHECKF(created != NULL, "%s", err.msg);
    if (!created) {
        json_decref(pod);
        free(coll);
        return;
    }
    char *path = tm_kube_path("v1", "pods", ns, "bindme", NULL);
    /* Strategic merge on containers merges by name instead of replacing the list (a merge
     * patch would drop the container's other fields and fail validation). */
    json_t *sp = json_pack("{s:{s:[{s:s, s:s}]}}", "spec", "containers", "name", "main", "image",
                           "busybox:1.36");
    json_t *r = tm_kube_patch(kube, path, TM_PATCH_STRATEGIC, sp, &err);
    CHECKF(r != NULL, "%s", err.msg);
    json_t *ctrs = tm_json_path(r, "spec.containers");
    CHECK_INT(json_array_size(ctrs), 1);
    CHECK_STR(tm_json_str(json_array_get(ctrs, 0), "image", NULL), "busybox:1.36");
    CHECK(json_object_get(json_array_get(ctrs, 0), "terminationMessagePath") != NULL);
    json_decref(r);
    json_decref(sp);
    const char *uid = tm_json_str(created, "metadata.uid", NULL);
    CHECK(tm_kube_bind(kube, ns, "bindme", "00000000-0000-0000-0000-000000000000", "e2-1", &err) ==
          -1); /* a wrong UID precondition is refused */
    CHECK(err.http_status == 409 || err.http_status == 422 || err.http_status == 404);
    CHECKF(tm_kube_bind(kube, ns, "bindme", uid, "e2-1", &err) == 0, "%s", err.msg);
    r = tm_kube_get(kube, path, &err);
    CHECK_STR(tm_json_str(r, "spec.nodeName", NULL), "e2-1");
    json_t *ev = tm_kube_event_new(r, "Normal", "Scheduled", "Scheduling",
                                   "Successfully assigned pod to e2-1", "tarema", "e2e-1");
    CHECKF(tm_kube_event_post(kube, ev, &err) == 0, "%s", err.msg);
    json_decref(ev);
    json_decref(r);
    char *evpath = tm_kube_path("events.k8s.io/v1", "events", ns, NULL, NULL);
    tm_list_opts fs = {.field_selector = "regarding.name=bindme"};
    json_t *evs = tm_kube_list(kube, evpath, &fs, NULL, &err);
    CHECKF(evs != NULL && json_array_size(evs) >= 1, "%s", err.msg);
    if (evs && json_array_size(evs) >= 1) {
        CHECK_STR(tm_json_str(json_array_get(evs, 0), "reason", NULL), "Scheduled");
        CHECK_STR(tm_json_str(json_array_get(evs, 0), "reportingController", NULL), "tarema");
    }
    json_decref(evs);
    free(evpath);
    free(path);
    json_decref(created);
    json_decref(pod);
    free(coll);
}

typedef struct {
    int done, ok, conflicts;
} async_state;

static void on_async(void *ud, int status, json_t *body, const tm_err *err) {
    async_state *st = ud;
    st->done++;
    if (!err && json_is_object(body))
        st->ok++;
    if (err && err->http_status == 409)
        st->conflicts++;
}

static void test_async_requests_and_qps(void) {
    tm_kube *k = e2e_client(10, 2);
    if (!k) {
        CHECK(0);
        return;
    }
    async_state st = {0};
    char *coll = tm_kube_path("v1", "configmaps", ns, NULL, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 12; i++) {
        char name[32];
        snprintf(name, sizeof name, "async-%d", i % 10); /* two names twice: 409 */
        json_t *cm = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                               "metadata", "name", name);
        CHECK(tm_kube_request_async(k, "POST", coll, cm, NULL, on_async, &st) == 0);
        json_decref(cm);
    }
    CHECK_INT(tm_kube_inflight(k), 12);
    tm_err err = {0};
    for (int i = 0; i < 600 && st.done < 12; i++)
        CHECK(tm_kube_run(k, 50, &err) == 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK_INT(st.done, 12);
    CHECK_INT(st.ok, 10);
    CHECK_INT(st.conflicts, 2);
    CHECK_INT(tm_kube_inflight(k), 0);
    /* 12 requests at 10 qps with a burst of 2 take at least (12 - 2) / 10 s. */
    CHECKF(secs >= 0.95, "took %.3f s", secs);
    printf("    12 async creates at qps=10 burst=2 took %.2f s\n", secs);
    free(coll);
    tm_kube_free(k);
}

typedef struct {
    int done, h2, ok;
    long connects;
} mux_state;

static void mux_done(void *ud, tm_xfer *x, CURLcode rc, long status) {
    mux_state *m = ud;
    long version = 0, connects = 0;
    curl_easy_getinfo(x->easy, CURLINFO_HTTP_VERSION, &version);
    curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &connects);
    m->done++;
    m->h2 += version == CURL_HTTP_VERSION_2_0;
    m->ok += rc == CURLE_OK && status == 200;
    m->connects += connects;
}

/* The loop's transfers go over HTTP/2 (the API server offers it over TLS) and share one
 * connection: 20 requests plus a watch in flight at once on one thread open one connection. */
static void test_http2_multiplexed_on_one_connection(void) {
    tm_kube *k = e2e_client(0, 0);
    if (!k) {
        CHECK(0);
        return;
    }
    static const tm_xfer_ops ops = {NULL, mux_done};
    mux_state m = {0}, w = {0};
    /* The first request opens the connection; the others wait for it (PIPEWAIT). */
    tm_xfer *watch = tm_xfer_start(k, "GET", "/api/v1/nodes?watch=1&timeoutSeconds=30", NULL, 0,
                                   NULL, true, 0, NULL, &ops, &w);
    CHECK(watch != NULL);
    for (int i = 0; i < 20; i++)
        CHECK(tm_xfer_start(k, "GET", "/api/v1/nodes?limit=1", NULL, 0, NULL, false, 0, NULL, &ops,
                            &m) != NULL);
    tm_err err = {0};
    for (int i = 0; i < 300 && m.done < 20; i++)
        tm_kube_run(k, 20, &err);
    CHECK_INT(m.done, 20);
    CHECK_INT(m.ok, 20);
    CHECK_INT(m.h2, 20);
    CHECKF(m.connects <= 1, "the requests opened %ld connections", m.connects);
    printf("    20 requests + 1 watch: HTTP/2 on %ld new connection(s)\n", m.connects);
    tm_xfer_cancel(watch);
    CHECK_INT(w.done, 0);
    tm_kube_free(k);
}

int main(void) {
    kube = e2e_client(0, 0);
    if (!kube) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    snprintf(ns, sizeof ns, "kube-sync-%d", (int)getpid());
    tm_err err = {0};
    e2e_create_namespace(kube, ns);
    RUN(test_list_kwok_nodes_paged);
    RUN(test_error_carries_status_message);
    RUN(test_create_get_patch_replace_delete);
    RUN(test_strategic_patch_bind_and_event);
    RUN(test_async_requests_and_qps);
    RUN(test_http2_multiplexed_on_one_connection);
    char *path = tm_kube_path("v1", "namespaces", NULL, ns, NULL);
    tm_kube_delete(kube, path, &err);
    free(path);
    tm_kube_free(kube);
    return TEST_SUMMARY();
}
