/* Unit tests of the binder's outcome state machine against a fake API server on 127.0.0.1 (no
 * cluster). A bind whose outcome is unknown (the connection closes with no answer, or a 5xx)
 * must not be reported as failed: the binder reads the pod back until the server answers and
 * reports what it finds (bound there = success, unbound = failure, bound elsewhere = 409, gone =
 * 404). A definite refusal (4xx) is reported at once. Issue 13, defect 2: before the fix an
 * unknown outcome was reported as a failure at once and the scheduler freed the node's
 * capacity while the pod had been bound. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fake_http.h"
#include "harness.h"
#include "lib/kube.h"
#include "scheduler/live/binder.h"
#include "scheduler/backend/cache.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"

/* What the fake server does with the next request of a kind: answer with status and body, or
 * close the connection without a word (status NULL). */
typedef struct {
    const char *status;
    const char *body;
} answer;

#define MAXA 8
static struct {
    int fd, port;
    volatile int stop;
    pthread_mutex_t mu;
    answer bind[MAXA], get[MAXA];
    int nbind, nget, bind_i, get_i; /* scripted answers and how many were used */
    int events;
    int bind_short_by; /* a bind's body is this many bytes shorter than its Content-Length */
} fk = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void serve_one(int c) {
    char head[8192];
    char *body = fake_http_read(c, head, sizeof head);
    if (!body)
        return;
    free(body);
    answer a = {"201 Created", "{}"};
    size_t short_by = 0;
    pthread_mutex_lock(&fk.mu);
    if (strncmp(head, "POST ", 5) == 0 && strstr(head, "/binding ")) {
        a = fk.bind_i < fk.nbind ? fk.bind[fk.bind_i] : (answer){"500 Oops", "{}"};
        fk.bind_i++;
        short_by = (size_t)fk.bind_short_by;
    } else if (strncmp(head, "GET ", 4) == 0) {
        a = fk.get_i < fk.nget ? fk.get[fk.get_i] : (answer){NULL, NULL};
        fk.get_i++;
    } else {
        fk.events++;
    }
    pthread_mutex_unlock(&fk.mu);
    if (!a.status)
        return; /* the connection closes with no answer: the outcome is unknown */
    char hdr[512];
    snprintf(hdr, sizeof hdr,
             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n",
             a.status, strlen(a.body) + short_by);
    if (send(c, hdr, strlen(hdr), MSG_NOSIGNAL) >= 0)
        send(c, a.body, strlen(a.body), MSG_NOSIGNAL);
}

static void *server_main(void *arg) {
    (void)arg;
    while (!fk.stop) {
        struct pollfd p = {fk.fd, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            continue;
        int c = accept(fk.fd, NULL, NULL);
        if (c < 0)
            continue;
        serve_one(c);
        close(c);
    }
    return NULL;
}

static pthread_t server_start(const answer *binds, int nbind, const answer *get, int nget) {
    fk.fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fk.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fk.fd, (struct sockaddr *)&a, sizeof a);
    listen(fk.fd, 16);
    socklen_t len = sizeof a;
    getsockname(fk.fd, (struct sockaddr *)&a, &len);
    fk.port = ntohs(a.sin_port);
    if (nbind)
        memcpy(fk.bind, binds, (size_t)nbind * sizeof *binds);
    if (nget)
        memcpy(fk.get, get, (size_t)nget * sizeof *get);
    fk.nbind = nbind, fk.nget = nget;
    fk.bind_i = fk.get_i = fk.events = 0;
    fk.stop = 0;
    pthread_t t;
    pthread_create(&t, NULL, server_main, NULL);
    return t;
}

static void server_stop(pthread_t t) {
    fk.stop = 1;
    pthread_join(t, NULL);
    close(fk.fd);
}

static int gets_used(void) {
    pthread_mutex_lock(&fk.mu);
    int n = fk.get_i;
    pthread_mutex_unlock(&fk.mu);
    return n;
}

/* What the scheduler loop does with a result, on a cache: success keeps the reservation until
 * the watch confirms it; any failure undoes it (loop.c on_bind). */
typedef struct {
    int calls, status;
    bool ok;
    int gets_at_result; /* GETs the server had answered when the result came */
    bool assumed_after; /* the reservation still held on the cache once the loop ended */
    sched_cache *cache;
} result;

static void on_result(void *ud, const char *ns, const char *name, const char *uid, const char *node,
                      int status, const tm_err *err) {
    (void)ns, (void)name, (void)node;
    result *r = ud;
    r->calls++;
    r->status = status;
    r->ok = err == NULL;
    r->gets_at_result = gets_used();
    if (err && r->cache)
        sched_cache_forget(r->cache, uid);
}

#define POD_JSON(uid, node)                                                                        \
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"" uid           \
    "\"},\"spec\":{\"nodeName\":\"" node "\",\"schedulerName\":\"tarema\"}}"

static const char node_json[] =
    "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":"
    "\"8Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";
static const char pending_pod_json[] =
    "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\"},\"spec\":"
    "{\"schedulerName\":\"tarema\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
    "{\"cpu\":\"3\"}}}]}}";

/* Binds pod u1 to n1 (assumed on a cache), runs the loop until the result or max_ms. While the
 * result is pending, checks at each turn that the reservation is still held. */
static result run_bind(const answer *bind, int nbind, const answer *get, int nget, int max_ms,
                       bool *held_while_pending) {
    pthread_t t = server_start(bind, nbind, get, nget);
    result r = {0};
    tm_err err = {0};
    r.cache = sched_cache_new("tarema", NULL, NULL, NULL, &err);
    sched_framework *fw = sched_policy_new("tarema", &err);
    json_t *nj = json_loads(node_json, 0, NULL), *pj = json_loads(pending_pod_json, 0, NULL);
    CHECK(sched_cache_node_event(r.cache, TM_WATCH_ADDED, nj, NULL, &err) == 0);
    sched_pod *pod = sched_pod_from_json(sched_cache_snapshot(r.cache), pj, NULL, &err);
    CHECK(pod != NULL);
    CHECK(sched_framework_reserve(fw, sched_cache_snapshot(r.cache), pod, 0, &err) == 0);
    CHECK(sched_cache_assume_placed(r.cache, pod->uid, &err) == 0);

    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", fk.port);
    tm_kube_config cfg = {.server = url};
    tm_kube *k = tm_kube_new(&cfg, &err);
    sched_binder *b = sched_binder_new(k, "tarema", "test", on_result, &r);
    CHECK(sched_binder_bind(b, pod, "n1", &err) == 0);
    *held_while_pending = true;
    for (int waited = 0; r.calls == 0 && waited < max_ms; waited += 20) {
        tm_kube_run(k, 20, &err);
        if (r.calls == 0 && !sched_cache_is_assumed(r.cache, "u1"))
            *held_while_pending = false;
    }
    r.assumed_after = sched_cache_is_assumed(r.cache, "u1");
    tm_kube_free(k);
    sched_binder_free(b);
    sched_cache_free(r.cache);
    r.cache = NULL;
    sched_pod_free(pod);
    sched_framework_free(fw);
    json_decref(nj);
    json_decref(pj);
    server_stop(t);
    return r;
}

static void test_unknown_outcome_read_back_bound(void) {
    /* The bind's connection breaks (the API server died after committing); the pod read back is
     * on n1: a success, the reservation was held throughout. */
    answer bind[] = {{NULL, NULL}};
    answer get[] = {{"200 OK", POD_JSON("u1", "n1")}};
    bool held;
    result r = run_bind(bind, 1, get, 1, 5000, &held);
    CHECK_INT(r.calls, 1);
    CHECKF(r.ok, "status %d", r.status);
    CHECK(r.gets_at_result >= 1);
    CHECK(held);
}

static void test_unknown_outcome_retried_until_answered(void) {
    /* A 504 (etcd may have committed), then the read-back fails twice (server still down),
     * then the pod is unbound: only then a failure, and the reservation held until then. */
    answer bind[] = {{"504 Gateway Timeout", "{\"kind\":\"Status\",\"code\":504}"}};
    answer get[] = {
        {NULL, NULL}, {"503 Service Unavailable", "{}"}, {"200 OK", POD_JSON("u1", "")}};
    bool held;
    result r = run_bind(bind, 1, get, 3, 8000, &held);
    CHECK_INT(r.calls, 1);
    CHECK(!r.ok);
    CHECK_INT(r.status, 504);
    CHECK_INT(r.gets_at_result, 3);
    CHECK(held);
}

static void test_unknown_outcome_bound_elsewhere(void) {
    answer bind[] = {{NULL, NULL}};
    answer get[] = {{"200 OK", POD_JSON("u1", "n2")}};
    bool held;
    result r = run_bind(bind, 1, get, 1, 5000, &held);
    CHECK_INT(r.calls, 1);
    CHECK(!r.ok);
    CHECK_INT(r.status, 409);
    CHECK(held);
}

static void test_unknown_outcome_pod_gone_or_replaced(void) {
    answer bind[] = {{NULL, NULL}};
    answer gone[] = {{"404 Not Found", "{\"kind\":\"Status\",\"code\":404}"}};
    bool held;
    result r = run_bind(bind, 1, gone, 1, 5000, &held);
    CHECK_INT(r.calls, 1);
    CHECK_INT(r.status, 404);
    /* Same name, another uid: our pod is gone too. */
    answer other[] = {{"200 OK", POD_JSON("u2", "n1")}};
    r = run_bind(bind, 1, other, 1, 5000, &held);
    CHECK_INT(r.calls, 1);
    CHECK(!r.ok);
    CHECK_INT(r.status, 404);
}

static void test_refusal_reported_at_once(void) {
    /* A 409 is a definite answer: no read-back, the reservation goes at once. */
    answer bind[] = {{"409 Conflict", "{\"kind\":\"Status\",\"code\":409}"}};
    bool held;
    result r = run_bind(bind, 1, NULL, 0, 5000, &held);
    CHECK_INT(r.calls, 1);
    CHECK(!r.ok); /* reported as a failure */
    CHECK_INT(r.status, 409);
    CHECK_INT(r.gets_at_result, 0);
    CHECK(!r.assumed_after); /* and the reservation released */
}

static void test_success_status_then_broken_transfer(void) {
    /* The API server answered 201 and died before the body ended (curl: the status, and a
     * transfer error): the binding was committed, so a success, with no read-back, and the
     * reservation kept. Before the fix: a failure, the capacity freed while the pod sat there. */
    answer bind[] = {{"201 Created", "{\"kind\":\"Status\""}};
    bool held;
    fk.bind_short_by = 64;
    result r = run_bind(bind, 1, NULL, 0, 5000, &held);
    fk.bind_short_by = 0;
    CHECK_INT(r.calls, 1);
    CHECKF(r.ok, "status %d", r.status);
    CHECK_INT(r.status, 201);
    CHECK_INT(r.gets_at_result, 0);
    CHECK(r.assumed_after);
}

static void test_outcome_classes(void) {
    CHECK(sched_binder_outcome_unknown(0));
    CHECK(sched_binder_outcome_unknown(500));
    CHECK(sched_binder_outcome_unknown(504));
    CHECK(!sched_binder_outcome_unknown(409));
    CHECK(!sched_binder_outcome_unknown(404));
    CHECK(!sched_binder_outcome_unknown(403));
}

int main(void) {
    RUN(test_outcome_classes);
    RUN(test_refusal_reported_at_once);
    RUN(test_success_status_then_broken_transfer);
    RUN(test_unknown_outcome_read_back_bound);
    RUN(test_unknown_outcome_retried_until_answered);
    RUN(test_unknown_outcome_bound_elsewhere);
    RUN(test_unknown_outcome_pod_gone_or_replaced);
    return TEST_SUMMARY();
}
