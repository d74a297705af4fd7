/* Unit tests of the client's wire behaviour against a scripted HTTP server on 127.0.0.1 inside
 * the test (no cluster): leader election losing at once on 409; the cap on requests at the wire;
 * informer paging, watch parameters, events split across TCP writes (inside UTF-8 sequences too),
 * BOOKMARK resourceVersions, re-list on an ERROR 410 event and on HTTP 410 with the diff against
 * the store (deletions included), resume from the last RV after a normal stream end, at once (only
 * repeated empty streams back off); the transform hook; the bearer token re-read when its file
 * rotates; Status messages in async errors; streamed initial lists (sendInitialEvents), a server
 * that refuses them, a stream cut before its closing bookmark. The server answers one connection at
 * a time with the next scripted response and closes it. */
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
#include "lib/jsonutil.h"
#include "lib/kube.h"

#define MAX_PARTS 8
#define MAX_REQS  32

typedef struct {
    const char *status;           /* "200 OK" */
    const char *parts[MAX_PARTS]; /* written separately with a pause between */
    int hold_ms;                  /* keep the connection open this long before closing */
    const char *extra;            /* more header lines, each ending in \r\n */
} response;

static struct {
    int fd, port;
    const response *script;
    int nscript, next;
    char *reqs[MAX_REQS]; /* request line + Authorization header of each request */
    int nreqs;
    volatile int stop;
    pthread_mutex_t mu;
} srv;

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void record(const char *head, const char *body) {
    char line[1024] = "";
    const char *eol = strstr(head, "\r\n");
    snprintf(line, sizeof line, "%.*s", eol ? (int)(eol - head) : 0, head);
    const char *auth = strcasestr(head, "\r\nAuthorization: ");
    if (auth) {
        auth += 2;
        const char *e = strstr(auth, "\r\n");
        size_t n = strlen(line);
        snprintf(line + n, sizeof line - n, " | %.*s", e ? (int)(e - auth) : 0, auth);
    }
    if (body && *body) {
        size_t n = strlen(line);
        snprintf(line + n, sizeof line - n, " | %.700s", body);
    }
    pthread_mutex_lock(&srv.mu);
    if (srv.nreqs < MAX_REQS)
        srv.reqs[srv.nreqs++] = strdup(line);
    pthread_mutex_unlock(&srv.mu);
}

static void serve_one(int c) {
    char head[8192];
    char *body = fake_http_read(c, head, sizeof head);
    if (!body)
        return;
    record(head, body);
    free(body);
    pthread_mutex_lock(&srv.mu);
    const response *rsp = srv.next < srv.nscript ? &srv.script[srv.next++] : NULL;
    pthread_mutex_unlock(&srv.mu);
    char hdr[512];
    snprintf(hdr, sizeof hdr,
             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\n%s\r\n",
             rsp ? rsp->status : "503 Service Unavailable", rsp && rsp->extra ? rsp->extra : "");
    if (send(c, hdr, strlen(hdr), MSG_NOSIGNAL) < 0)
        return;
    for (int i = 0; rsp && i < MAX_PARTS && rsp->parts[i]; i++) {
        if (i)
            sleep_ms(30);
        if (send(c, rsp->parts[i], strlen(rsp->parts[i]), MSG_NOSIGNAL) < 0)
            return;
    }
    for (int waited = 0; rsp && waited < rsp->hold_ms && !srv.stop; waited += 20)
        sleep_ms(20);
}

static void *server_main(void *arg) {
    (void)arg;
    while (!srv.stop) {
        struct pollfd p = {srv.fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int c = accept(srv.fd, NULL, NULL);
        if (c < 0)
            continue;
        serve_one(c);
        close(c);
    }
    return NULL;
}

static pthread_t server_start(const response *script, int n) {
    srv.fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(srv.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(srv.fd, (struct sockaddr *)&a, sizeof a);
    listen(srv.fd, 16);
    socklen_t len = sizeof a;
    getsockname(srv.fd, (struct sockaddr *)&a, &len);
    srv.port = ntohs(a.sin_port);
    srv.script = script;
    srv.nscript = n;
    srv.next = 0;
    srv.stop = 0;
    pthread_t t;
    pthread_create(&t, NULL, server_main, NULL);
    return t;
}

static void server_stop(pthread_t t) {
    srv.stop = 1;
    pthread_join(t, NULL);
    close(srv.fd);
    for (int i = 0; i < srv.nreqs; i++)
        free(srv.reqs[i]);
    srv.nreqs = 0;
}

static const char *req(int i) {
    pthread_mutex_lock(&srv.mu);
    const char *r = i < srv.nreqs ? srv.reqs[i] : "";
    pthread_mutex_unlock(&srv.mu);
    return r;
}

static tm_kube *fake_client(const char *token_file) {
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", srv.port);
    tm_kube_config cfg = {.server = url, .token_file = (char *)token_file, .paged_lists = true};
    tm_err err = {0};
    tm_kube *k = tm_kube_new(&cfg, &err);
    if (!k)
        printf("    client: %s\n", err.msg);
    return k;
}

/* ---- informer ------------------------------------------------------------------------------ */

#define POD(name, rv)                                                                              \
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                       \
    "\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv "\"}}"
#define LISTPOD(name, rv)                                                                          \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv "\"}}"

static const response informer_script[] = {
    /* 0, 1: the first list, two pages */
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\","
      "\"continue\":\"c1\"},\"items\":[" LISTPOD("a", "5") "]}"},
     0,
     NULL},
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\"},"
      "\"items\":[" LISTPOD("b", "6") "]}"},
     0,
     NULL},
    /* 2: watch from 10; events split mid-line and inside the two bytes of "é"; then 410 */
    {"200 OK",
     {"{\"type\":\"ADDED\",\"object\":" POD("c", "11") "}\n{\"type\":\"MODIFIED\",\"obj",
      "ect\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
      "\"resourceVersion\":\"12\"},\"note\":\"caf\xc3",
      "\xa9\"}}\n{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{"
      "\"resourceVersion\":\"15\"}}}\n",
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
      "\"message\":\"too old resource version: 10 (15)\"}}\n"},
     300,
     NULL},
    /* 3: re-list: b was deleted and d added meanwhile */
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"20\"},"
      "\"items\":[" LISTPOD("a", "12") "," LISTPOD("c", "11") "," LISTPOD("d", "16") "]}"},
     0,
     NULL},
    /* 4: watch from 20 answered with HTTP 410 */
    {"410 Gone",
     {"{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":410,\"reason\":\"Gone\","
      "\"message\":\"too old\"}"},
     0,
     NULL},
    /* 5: re-list: a changed */
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"31\"},"
      "\"items\":[" LISTPOD("a", "30") "," LISTPOD("c", "11") "," LISTPOD("d", "16") "]}"},
     0,
     NULL},
    /* 6: watch from 31: c deleted, a bookmark, then the server ends the stream normally */
    {"200 OK",
     {"{\"type\":\"DELETED\",\"object\":" POD("c", "33") "}\n",
      "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":"
      "\"40\"}}}\n"},
     1200,
     NULL},
    /* 7: the watch resumes from 40 without a re-list */
    {"200 OK", {"{\"type\":\"ADDED\",\"object\":" POD("e", "41") "}\n"}, 3000, NULL},
};

typedef struct {
    char log[1024];
    int synced;
} ilog;

static void on_event(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    ilog *l = ud;
    static const char *c[] = {"+", "~", "-"};
    size_t n = strlen(l->log);
    snprintf(l->log + n, sizeof l->log - n, "%s%s@%s ", c[t],
             tm_json_str(obj, "metadata.name", "?"),
             tm_json_str(obj, "metadata.resourceVersion", "?"));
    if (t != TM_WATCH_ADDED && !old)
        snprintf(l->log + strlen(l->log), sizeof l->log - strlen(l->log), "(no old) ");
}

static void on_synced(void *ud) {
    ((ilog *)ud)->synced++;
}

typedef struct {
    int pods;
    char names[64];
} count_ctx;

/* Counts the stored pods (kind Pod, as listed) and notes their names in key order. */
static void count_pods(void *ud, json_t *obj) {
    count_ctx *c = ud;
    c->pods += strcmp(tm_json_str(obj, "kind", ""), "Pod") == 0;
    size_t n = strlen(c->names);
    snprintf(c->names + n, sizeof c->names - n, "%s ", tm_json_str(obj, "metadata.name", "?"));
}

static void informer_relist_and_resume(bool compact) {
    pthread_t t =
        server_start(informer_script, (int)(sizeof informer_script / sizeof informer_script[0]));
    tm_kube *k = fake_client(NULL);
    ilog l = {"", 0};
    tm_informer_opts o = {.path = "/api/v1/namespaces/ns/pods",
                          .field_selector = "spec.schedulerName=tarema",
                          .page_size = 1,
                          .on_event = on_event,
                          .on_synced = on_synced,
                          .ud = &l,
                          .compact_store = compact};
    tm_err err = {0};
    tm_informer *inf = tm_informer_start(k, &o, &err);
    CHECKF(inf != NULL, "%s", err.msg);
    for (int i = 0; i < 300 && !tm_informer_get(inf, "ns", "e"); i++)
        tm_kube_run(k, 20, &err);
    CHECK_STR(l.log, "+a@5 +b@6 +c@11 ~a@12 +d@16 -b@6 ~a@30 -c@33 +e@41 ");
    CHECK_INT(l.synced, 3);
    CHECK_INT(tm_informer_relists(inf), 2);
    CHECK_INT(tm_informer_reconnects(inf), 3);
    CHECK_INT(tm_informer_size(inf), 3);
    CHECK_STR(tm_json_str(tm_informer_get(inf, "ns", "a"), "kind", NULL), "Pod");
    CHECK(strstr(req(0), "GET /api/v1/namespaces/ns/pods?limit=1&fieldSelector=spec."
                         "schedulerName%3Dtarema ") != NULL);
    CHECK(strstr(req(1), "&continue=c1") != NULL);
    CHECK(strstr(req(2), "watch=1&allowWatchBookmarks=true&resourceVersion=10&timeoutSeconds=") !=
          NULL);
    CHECK(strstr(req(2), "fieldSelector=spec.schedulerName%3Dtarema") != NULL);
    CHECK(strstr(req(3), "?limit=1") != NULL && strstr(req(3), "watch") == NULL);
    CHECK(strstr(req(4), "resourceVersion=20&") != NULL);
    CHECK(strstr(req(6), "resourceVersion=31&") != NULL);
    CHECK(strstr(req(7), "resourceVersion=40&") != NULL); /* the bookmark's RV, no re-list */
    count_ctx cc = {0};
    tm_informer_foreach(inf, count_pods, &cc);
    CHECK_INT(cc.pods, 3);
    CHECK_STR(cc.names, "a d e ");
    tm_informer_stop(inf);
    tm_kube_free(k);
    server_stop(t);
}

static void test_informer_relist_and_resume(void) {
    informer_relist_and_resume(false);
}

/* The same with the store kept as text: the same events, the same objects read back. */
static void test_informer_compact_store(void) {
    informer_relist_and_resume(true);
}

/* ---- streamed initial lists (sendInitialEvents) ------------------------------------------- */

#define END_BOOKMARK(rv)                                                                           \
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"" rv  \
    "\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n"

static const response stream_script[] = {
    /* 0: the initial events, the bookmark that ends them, then a change on the same stream */
    {"200 OK",
     {"{\"type\":\"ADDED\",\"object\":" POD("a", "5") "}\n{\"type\":\"ADDED\",\"object\":" POD(
          "b", "6") "}\n",
      "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":"
      "\"8\"}}}\n",
      END_BOOKMARK("10"), "{\"type\":\"MODIFIED\",\"object\":" POD("a", "12") "}\n"},
     300,
     NULL},
    /* 1: the watch resumes from 12, no list */
    {"200 OK", {"{\"type\":\"ADDED\",\"object\":" POD("c", "13") "}\n"}, 3000, NULL},
};

static tm_kube *streaming_client(void) {
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", srv.port);
    tm_kube_config cfg = {.server = url};
    tm_err err = {0};
    tm_kube *k = tm_kube_new(&cfg, &err);
    if (!k)
        printf("    client: %s\n", err.msg);
    return k;
}

/* Runs k until the informer holds `name` (or about 6 s pass). */
static void run_until_stored(tm_kube *k, tm_informer *inf, const char *name) {
    tm_err err = {0};
    for (int i = 0; i < 300 && !tm_informer_get(inf, "ns", name); i++)
        tm_kube_run(k, 20, &err);
}

/* The initial list as a stream: nothing is delivered before the closing bookmark, then the
 * objects as adds, then the same stream's changes; the next watch resumes from the last RV. */
static void test_streamed_list(void) {
    pthread_t t = server_start(stream_script, 2);
    tm_kube *k = streaming_client();
    ilog l = {"", 0};
    tm_informer_opts o = {.path = "/api/v1/namespaces/ns/pods",
                          .field_selector = "spec.schedulerName=tarema",
                          .on_event = on_event,
                          .on_synced = on_synced,
                          .ud = &l};
    tm_err err = {0};
    tm_informer *inf = tm_informer_start(k, &o, &err);
    CHECKF(inf != NULL, "%s", err.msg);
    run_until_stored(k, inf, "c");
    CHECK_STR(l.log, "+a@5 +b@6 ~a@12 +c@13 ");
    CHECK_INT(l.synced, 1);
    CHECK_INT(tm_informer_relists(inf), 0);
    CHECK(strstr(req(0), "GET /api/v1/namespaces/ns/pods?watch=1&allowWatchBookmarks=true&"
                         "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&"
                         "timeoutSeconds=") != NULL);
    CHECK(strstr(req(0), "&resourceVersion=") == NULL);
    CHECK(strstr(req(0), "fieldSelector=spec.schedulerName%3Dtarema") != NULL);
    /* asked for protobuf first (pods), answered JSON: read as JSON */
    CHECK_STR(tm_informer_encoding(inf), "json");
    CHECK(strstr(req(1), "sendInitialEvents") == NULL && strstr(req(1), "resourceVersion=12&"));
    tm_informer_stop(inf);
    tm_kube_free(k);
    server_stop(t);
}

static const response refused_stream_script[] = {
    /* 0: a server whose WatchList feature is off */
    {"422 Unprocessable Entity",
     {"{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":422,\"reason\":\"Invalid\","
      "\"message\":\"sendInitialEvents is forbidden for watch unless the WatchList feature "
      "gate is enabled\"}"},
     0,
     NULL},
    /* 1: the paged list */
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\"},"
      "\"items\":[" LISTPOD("a", "5") "]}"},
     0,
     NULL},
    /* 2: the watch from the list's RV */
    {"200 OK", {"{\"type\":\"ADDED\",\"object\":" POD("b", "11") "}\n"}, 500, NULL},
    /* 3: a stream cut before its bookmark (second informer): listed again, streamed */
    {"200 OK", {"{\"type\":\"ADDED\",\"object\":" POD("x", "5") "}\n"}, 0, NULL},
    {"200 OK",
     {"{\"type\":\"ADDED\",\"object\":" POD("x", "5") "}\n{\"type\":\"ADDED\",\"object\":" POD(
         "y", "6") "}\n" END_BOOKMARK("10")},
     3000,
     NULL},
};

/* A server that refuses sendInitialEvents gets paged lists from then on, without a re-list
 * counted; a stream cut before its bookmark is listed again, and nothing is delivered early. */
static void test_streamed_list_refused_or_cut(void) {
    pthread_t t = server_start(refused_stream_script, 5);
    tm_kube *k = streaming_client();
    ilog l = {"", 0};
    tm_informer_opts o = {.path = "/api/v1/namespaces/ns/pods",
                          .on_event = on_event,
                          .on_synced = on_synced,
                          .ud = &l};
    tm_err err = {0};
    tm_informer *inf = tm_informer_start(k, &o, &err);
    run_until_stored(k, inf, "b");
    CHECK_STR(l.log, "+a@5 +b@11 ");
    CHECK_INT(tm_informer_relists(inf), 0);
    CHECK(strstr(req(0), "sendInitialEvents=true") != NULL);
    CHECK(strstr(req(1), "?limit=500") != NULL && strstr(req(1), "watch") == NULL);
    CHECK(strstr(req(2), "resourceVersion=10&") != NULL);
    tm_informer_stop(inf);

    ilog l2 = {"", 0};
    o.ud = &l2;
    tm_informer *cut = tm_informer_start(k, &o, &err);
    run_until_stored(k, cut, "y");
    CHECK_STR(l2.log, "+x@5 +y@6 ");
    CHECK_INT(l2.synced, 1);
    CHECK(strstr(req(3), "sendInitialEvents=true") && strstr(req(4), "sendInitialEvents=true"));
    tm_informer_stop(cut);
    tm_kube_free(k);
    server_stop(t);
}

/* ---- token rotation and async errors -----------------------------------------------------------
 */

static const response token_script[] = {
    {"200 OK", {"{\"major\":\"1\"}"}, 0, NULL},
    {"200 OK", {"{\"major\":\"1\"}"}, 0, NULL},
    {"403 Forbidden",
     {"{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":403,\"reason\":\"Forbidden\","
      "\"message\":\"pods is forbidden: User \\\"x\\\" cannot list resource \\\"pods\\\"\"}"},
     0,
     NULL},
    {"200 OK", {""}, 0, NULL},
};

typedef struct {
    int done, status;
    bool null_body, object_body; /* what the callback's body was */
    char msg[1100];
} async_res;

static void on_done(void *ud, int status, json_t *body, const tm_err *err) {
    async_res *r = ud;
    r->done++;
    r->status = status;
    r->null_body = body && json_is_null(body);
    r->object_body = json_is_object(body);
    snprintf(r->msg, sizeof r->msg, "%s", err ? err->msg : "");
}

static void test_token_rotation_and_async_status(void) {
    pthread_t t = server_start(token_script, 4);
    char tok[] = "/tmp/tarema-kube-token-XXXXXX";
    int fd = mkstemp(tok);
    CHECK(write(fd, "first-token\n", 12) == 12);
    close(fd);
    tm_kube *k = fake_client(tok);
    tm_err err = {0};
    json_t *v = tm_kube_get(k, "/version", &err);
    CHECKF(v != NULL, "%s", err.msg);
    json_decref(v);
    FILE *f = fopen(tok, "w"); /* rotated in place: new content, other size */
    fputs("second-token-longer\n", f);
    fclose(f);
    v = tm_kube_get(k, "/version", &err);
    json_decref(v);
    CHECK(strstr(req(0), "Authorization: Bearer first-token") != NULL);
    CHECK(strstr(req(1), "Authorization: Bearer second-token-longer") != NULL);
    async_res r = {0};
    CHECK(tm_kube_request_async(k, "GET", "/api/v1/pods", NULL, NULL, on_done, &r) == 0);
    CHECK(tm_kube_request_async(k, NULL, "/x", NULL, NULL, on_done, &r) == -1);
    for (int i = 0; i < 200 && !r.done; i++)
        tm_kube_run(k, 20, &err);
    CHECK_INT(r.status, 403);
    CHECKF(strstr(r.msg, "GET /api/v1/pods: pods is forbidden: User \"x\" cannot list resource "
                         "\"pods\" (HTTP 403 Forbidden)") != NULL,
           "%s", r.msg);
    /* A 2xx with an empty body is json null, not an error. */
    int status = 0;
    v = tm_kube_request(k, "DELETE", "/api/v1/x", NULL, NULL, &status, &err);
    CHECK(v && json_is_null(v));
    CHECK_INT(status, 200);
    json_decref(v);
    tm_kube_free(k);
    unlink(tok);
    server_stop(t);
}

/* ---- binds and events: a success's body is not parsed ------------------------------------ */

#define BIND_OK "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Success\",\"code\":201}"
static const response bind_script[] = {
    {"201 Created", {BIND_OK}, 0, NULL},
    {"409 Conflict",
     {"{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":409,\"reason\":\"Conflict\","
      "\"message\":\"pod p is already assigned to node n1\"}"},
     0,
     NULL},
    {"201 Created", {"{\"kind\":\"Event\",\"metadata\":{\"name\":\"e\"}}"}, 0, NULL},
    {"201 Created", {BIND_OK}, 0, NULL},
    {"201 Created", {BIND_OK}, 0, NULL},
    {"409 Conflict",
     {"{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":409,\"reason\":\"Conflict\","
      "\"message\":\"pod p is already assigned to node n1\"}"},
     0,
     NULL},
};

static void run_until(tm_kube *k, const async_res *r) {
    tm_err err = {0};
    for (int i = 0; i < 200 && !r->done; i++)
        tm_kube_run(k, 20, &err);
}

/* A bind's, an event's or a write's answer is read only for its status (a 2xx body is JSON null
 * to the callback, not parsed: no caller reads it); an error is still parsed for its message;
 * any other request gets its body parsed. */
static void test_bind_and_event_bodies(void) {
    pthread_t t = server_start(bind_script, 6);
    tm_kube *k = fake_client(NULL);
    async_res r = {0};
    CHECK(tm_kube_bind_async(k, "ns", "p", "uid-1", "n1", on_done, &r) == 0);
    run_until(k, &r);
    CHECK_INT(r.status, 201);
    CHECK(r.null_body && !r.msg[0]);
    memset(&r, 0, sizeof r);
    CHECK(tm_kube_bind_async(k, "ns", "p", "uid-1", "n2", on_done, &r) == 0);
    run_until(k, &r);
    CHECK_INT(r.status, 409);
    CHECKF(strstr(r.msg, "pod p is already assigned to node n1") != NULL, "%s", r.msg);
    memset(&r, 0, sizeof r);
    json_t *ev =
        json_pack("{s:s,s:{s:s,s:s}}", "kind", "Event", "metadata", "name", "e", "namespace", "ns");
    CHECK(tm_kube_event_post_async(k, ev, on_done, &r) == 0);
    json_decref(ev);
    run_until(k, &r);
    CHECK_INT(r.status, 201);
    CHECK(r.null_body);
    memset(&r, 0, sizeof r);
    CHECK(tm_kube_request_async(k, "POST", "/api/v1/namespaces/ns/pods/p/binding", NULL, NULL,
                                on_done, &r) == 0);
    run_until(k, &r);
    CHECK_INT(r.status, 201);
    CHECK(r.object_body);
    CHECK(strstr(req(0), "POST /api/v1/namespaces/ns/pods/p/binding") != NULL);
    /* a write whose answer is not read: a 2xx gives null, an error still its parsed Status */
    memset(&r, 0, sizeof r);
    CHECK(tm_kube_write_async(k, "POST", "/api/v1/namespaces/ns/pods/p/binding", NULL, NULL,
                              on_done, &r) == 0);
    run_until(k, &r);
    CHECK_INT(r.status, 201);
    CHECK(r.null_body && !r.msg[0]);
    memset(&r, 0, sizeof r);
    json_t *bind = json_pack("{s:s,s:{s:s},s:{s:s}}", "kind", "Binding", "metadata", "name", "p",
                             "target", "name", "n3");
    CHECK(tm_kube_write_async(k, "POST", "/api/v1/namespaces/ns/pods/p/binding", bind, NULL,
                              on_done, &r) == 0);
    json_decref(bind);
    run_until(k, &r);
    CHECK_INT(r.status, 409);
    CHECKF(strstr(r.msg, "already assigned") != NULL, "%s", r.msg);
    tm_kube_free(k);
    server_stop(t);
}

/* ---- tm_kube_wakeup --------------------------------------------------------------------- */

static int64_t ms_since(const struct timespec *a) {
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (int64_t)(b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000;
}

/* A wakeup ends the loop's wait, even one given before tm_kube_run is entered (the labeler
 * wakes its loop from HTTP handlers at any moment): the loop's look at curl's sockets before it
 * waits must not swallow it. The wait asked for is 10 s; a swallowed wakeup sleeps it out. */
static void test_wakeup_ends_the_wait(void) {
    tm_kube *k = fake_client(NULL);
    tm_err err = {0};
    struct timespec a;
    clock_gettime(CLOCK_MONOTONIC, &a);
    tm_kube_wakeup(k);
    CHECK_INT(tm_kube_run(k, 10000, &err), 0);
    int64_t took = ms_since(&a);
    CHECKF(took < 5000, "a wakeup before the run: it waited %lld ms of 10,000", (long long)took);
    tm_kube_free(k);
}

/* ---- leader election: 409 ---------------------------------------------------------------- */

#define LEASE(rv)                                                                                  \
    "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"        \
    "\"l\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv "\"},\"spec\":{\"holderIdentity\":"     \
    "\"me\",\"leaseDurationSeconds\":3,\"acquireTime\":\"2024-01-01T00:00:00.000000Z\","           \
    "\"renewTime\":\"2024-01-01T00:00:00.000000Z\",\"leaseTransitions\":0}}"

static const response leader_script[] = {
    {"404 Not Found",
     {"{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\",\"message\":\"not found\"}"},
     0,
     NULL},
    {"201 Created", {LEASE("1")}, 0, NULL},
    {"200 OK", {LEASE("1")}, 0, NULL},
    {"409 Conflict",
     {"{\"kind\":\"Status\",\"code\":409,\"reason\":\"Conflict\",\"message\":\"the object "
      "has been modified\"}"},
     0,
     NULL},
};

typedef struct {
    int started, stopped;
    double stopped_after_409;
} lstate;

static void l_started(void *ud) {
    ((lstate *)ud)->started++;
}
static void l_stopped(void *ud) {
    ((lstate *)ud)->stopped++;
}

static void test_leader_loses_at_once_on_409(void) {
    pthread_t t = server_start(leader_script, 4);
    tm_kube *k = fake_client(NULL);
    lstate st = {0};
    tm_leader_opts o = {.ns = "ns",
                        .name = "l",
                        .identity = "me",
                        .lease_ms = 3000,
                        .renew_deadline_ms = 2000,
                        .retry_ms = 200,
                        .on_started_leading = l_started,
                        .on_stopped_leading = l_stopped,
                        .ud = &st};
    tm_err err = {0};
    tm_leader *l = tm_leader_start(k, &o, &err);
    CHECKF(l != NULL, "%s", err.msg);
    bool led = false;
    for (int i = 0; i < 200 && !st.stopped; i++) {
        tm_kube_run(k, 10, &err);
        led = led || tm_leader_is_leader(l);
    }
    CHECK(led);
    CHECK_INT(st.started, 1);
    CHECK_INT(st.stopped, 1);
    CHECK(!tm_leader_is_leader(l));
    CHECK(strncmp(req(0), "GET /apis/coordination.k8s.io/v1/namespaces/ns/leases/l ", 56) == 0);
    CHECK(strncmp(req(1), "POST /apis/coordination.k8s.io/v1/namespaces/ns/leases ", 55) == 0);
    CHECK(strstr(req(1), "\"holderIdentity\":\"me\"") != NULL);
    CHECK(strstr(req(1), "\"leaseTransitions\":0") != NULL);
    CHECK(strstr(req(1), "\"leaseDurationSeconds\":3") != NULL);
    CHECK(strncmp(req(3), "PUT /apis/coordination.k8s.io/v1/namespaces/ns/leases/l ", 56) == 0);
    /* Optimistic concurrency: the PUT carries the resourceVersion read; a renewal keeps the
     * acquire time and transition count. */
    CHECK(strstr(req(3), "\"resourceVersion\":\"1\"") != NULL);
    CHECK(strstr(req(3), "\"acquireTime\":\"2024-01-01T00:00:00.000000Z\"") != NULL);
    CHECK(strstr(req(3), "\"renewTime\":\"2024-01-01T00:00:00.000000Z\"") == NULL);
    tm_leader_stop(l, false);
    tm_kube_free(k);
    server_stop(t);
}

/* ---- 429 Too Many Requests ------------------------------------------------------------------ */

static const response throttle_script[] = {
    {"429 Too Many Requests",
     {"{\"kind\":\"Status\",\"code\":429,\"reason\":\"TooManyRequests\",\"message\":\"too "
      "many requests\"}"},
     0,
     "Retry-After: 1\r\n"},
    {"200 OK", {"{\"n\":1}"}, 0, NULL},
    {"429 Too Many Requests", {"{}"}, 0, "Retry-After: 1\r\n"},
    {"200 OK", {"{\"n\":2}"}, 0, NULL},
};

static void test_429_retried_after_retry_after(void) {
    pthread_t t = server_start(throttle_script, 4);
    tm_kube *k = fake_client(NULL);
    tm_err err = {0};
    json_t *v = tm_kube_get(k, "/api/v1/nodes", &err);
    CHECKF(v != NULL, "%s", err.msg);
    CHECK_INT(tm_json_int(v, "n", 0), 1);
    json_decref(v);
    async_res r = {0};
    CHECK(tm_kube_request_async(k, "GET", "/api/v1/pods", NULL, NULL, on_done, &r) == 0);
    for (int i = 0; i < 300 && !r.done; i++)
        tm_kube_run(k, 20, &err);
    CHECK_INT(r.done, 1);
    CHECK_INT(r.status, 200);
    CHECK_INT(tm_kube_inflight(k), 0);
    CHECK(strncmp(req(1), "GET /api/v1/nodes ", 18) == 0);
    CHECK(strncmp(req(3), "GET /api/v1/pods ", 17) == 0);
    tm_kube_free(k);
    server_stop(t);
}

/* ---- the cap on requests at the wire ------------------------------------------------------ */

#define OK_SLOW                                                                                    \
    { "200 OK", {"{}"}, 40, NULL }
static const response slow_script[] = {OK_SLOW, OK_SLOW, OK_SLOW, OK_SLOW,
                                       OK_SLOW, OK_SLOW, OK_SLOW, OK_SLOW};

/* Eight requests through a client capped at three: never more than three at the wire, the cap
 * reached (the rest really queued), every one answered, and the reused easy handles work. */
static void test_max_active_queues_the_rest(void) {
    pthread_t t = server_start(slow_script, 8);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", srv.port);
    tm_kube_config cfg = {.server = url, .max_active = 3};
    tm_err err = {0};
    tm_kube *k = tm_kube_new(&cfg, &err);
    CHECKF(k != NULL, "%s", err.msg);
    async_res r[8] = {{0}};
    for (int i = 0; i < 8; i++) {
        char path[32];
        snprintf(path, sizeof path, "/r%d", i);
        CHECK(tm_kube_request_async(k, "GET", path, NULL, NULL, on_done, &r[i]) == 0);
    }
    CHECK_INT(tm_kube_inflight(k), 8);
    int most = tm_kube_active(k), done = 0;
    for (int i = 0; i < 500 && done < 8; i++) {
        tm_kube_run(k, 20, &err);
        if (tm_kube_active(k) > most)
            most = tm_kube_active(k);
        done = 0;
        for (int j = 0; j < 8; j++)
            done += r[j].done;
    }
    CHECK_INT(most, 3);
    CHECK_INT(done, 8);
    for (int j = 0; j < 8; j++)
        CHECKF(r[j].status == 200, "request %d: status %d %s", j, r[j].status, r[j].msg);
    CHECK_INT(tm_kube_inflight(k), 0);
    CHECK_INT(tm_kube_active(k), 0);
    tm_kube_free(k);
    server_stop(t);
    cfg.max_active = -1;
    CHECK(tm_kube_new(&cfg, &err) == NULL);
    CHECKF(strstr(err.msg, "max_active (-1) must not be negative") != NULL, "%s", err.msg);
}

/* ---- the Lease is not queued behind the client's own traffic ------------------------------ */

static const response ok_script[] = {OK_SLOW, OK_SLOW, OK_SLOW, OK_SLOW, OK_SLOW, OK_SLOW};

/* Three requests through a client limited to 1 request a second, burst 1, one at the wire: the
 * second and third are reserved 1 and 2 s ahead. The elector's Lease read, made after them, is
 * exempt (tm_xfer_start_exempt) and reaches the server before the second: behind a scheduler's
 * thousands of binds its renewal had missed the deadline (lib/kube_internal.h). Mutation: with
 * the leader's requests through tm_xfer_start, the read comes after /r2. */
static int position_of(const char *prefix) {
    for (int i = 0; i < MAX_REQS; i++)
        if (strncmp(req(i), prefix, strlen(prefix)) == 0)
            return i;
    return -1;
}

static void test_leader_not_queued_behind_traffic(void) {
    pthread_t t = server_start(ok_script, 6);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", srv.port);
    tm_kube_config cfg = {.server = url, .qps = 1, .burst = 1, .max_active = 1};
    tm_err err = {0};
    tm_kube *k = tm_kube_new(&cfg, &err);
    CHECKF(k != NULL, "%s", err.msg);
    async_res r[3] = {{0}};
    for (int i = 0; i < 3; i++) {
        char path[32];
        snprintf(path, sizeof path, "/r%d", i);
        CHECK(tm_kube_request_async(k, "GET", path, NULL, NULL, on_done, &r[i]) == 0);
    }
    tm_leader_opts o = {.ns = "ns",
                        .name = "l",
                        .identity = "me",
                        .lease_ms = 15000,
                        .renew_deadline_ms = 10000,
                        .retry_ms = 5000};
    tm_leader *l = tm_leader_start(k, &o, &err);
    CHECKF(l != NULL, "%s", err.msg);
    for (int i = 0; i < 300 && !r[2].done; i++)
        tm_kube_run(k, 20, &err);
    CHECK_INT(r[2].done, 1);
    int lease = position_of("GET /apis/coordination.k8s.io/v1/namespaces/ns/leases/l ");
    int r1 = position_of("GET /r1 ");
    CHECKF(lease >= 0 && r1 >= 0 && lease < r1, "lease read at %d, /r1 at %d", lease, r1);
    tm_leader_stop(l, false);
    for (int i = 0; i < 50 && tm_kube_inflight(k); i++)
        tm_kube_run(k, 20, &err);
    CHECK_INT(tm_kube_inflight(k), 0); /* the exempt transfers counted in and out */
    CHECK_INT(tm_kube_active(k), 0);
    tm_kube_free(k);
    server_stop(t);
}

/* ---- timers ---------------------------------------------------------------------------------- */

static void tick(void *ud) {
    int *order = ud;
    order[order[0] + 1] = order[0] + 1;
    order[0]++;
}

static void test_timers_and_cancel(void) {
    tm_kube_config cfg = {.server = "http://127.0.0.1:1"};
    tm_err err = {0};
    tm_kube *k = tm_kube_new(&cfg, &err);
    int order[8] = {0};
    tm_timer_add(k, 30, tick, order);
    tm_timer *c = tm_timer_add(k, 10, tick, order);
    tm_timer_add(k, 0, tick, order);
    tm_timer_cancel(k, c);
    for (int i = 0; i < 20 && order[0] < 2; i++)
        tm_kube_run(k, 20, &err);
    CHECK_INT(order[0], 2);
    /* Pending timers are freed with the client. */
    tm_timer_add(k, 100000, tick, order);
    tm_kube_free(k);
}

/* ---- callbacks that stop or free what calls them ------------------------------------------ */

static const response one_ok[] = {{"200 OK", {"{\"n\":1}"}, 0, NULL}};

static tm_kube *doomed;

static void free_client_in_done(void *ud, int status, json_t *body, const tm_err *err) {
    on_done(ud, status, body, err);
    tm_kube_free(doomed);
}

/* A done callback frees the client while another request waits for the rate limiter, an
 * informer's list is queued and a timer is pending: nothing runs afterwards and nothing is
 * touched after the free (valgrind: no invalid read, no leak). */
static void test_free_client_inside_callback(void) {
    pthread_t t = server_start(one_ok, 1);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", srv.port);
    tm_kube_config cfg = {.server = url, .qps = 1, .burst = 1};
    tm_err err = {0};
    doomed = tm_kube_new(&cfg, &err);
    async_res first = {0}, second = {0};
    CHECK(tm_kube_request_async(doomed, "GET", "/a", NULL, NULL, free_client_in_done, &first) == 0);
    CHECK(tm_kube_request_async(doomed, "GET", "/b", NULL, NULL, on_done, &second) == 0);
    ilog l = {"", 0};
    tm_informer_opts o = {.path = "/api/v1/pods", .on_event = on_event, .ud = &l};
    CHECK(tm_informer_start(doomed, &o, &err) != NULL);
    int order[8] = {0};
    CHECK(tm_timer_add(doomed, 100000, tick, order) != NULL);
    for (int i = 0; i < 200 && !first.done; i++)
        tm_kube_run(doomed, 20, &err); /* the last call returns after freeing the client */
    CHECK_INT(first.done, 1);
    CHECK_INT(first.status, 200);
    CHECK_INT(second.done, 0);
    CHECK_INT(order[0], 0);
    CHECK_STR(l.log, "");
    server_stop(t);
}

#define HELD_LEASE(holder)                                                                         \
    "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"        \
    "\"l\",\"namespace\":\"ns\",\"resourceVersion\":\"7\"},\"spec\":{\"holderIdentity\":\"" holder \
    "\",\"leaseDurationSeconds\":15}}"

static const response held_by_me[] = {{"200 OK", {HELD_LEASE("me")}, 0, NULL}};

typedef struct {
    tm_leader *l;
    int told;
} stopper;

static void stop_on_new_leader(void *ud, const char *identity) {
    stopper *s = ud;
    s->told++;
    tm_leader_stop(s->l, false);
}

/* on_new_leader stops the elector (a replica shutting down when it sees the record): it must
 * not go on to write the Lease it read, with a request whose callback would find it freed. */
static void test_leader_stopped_in_new_leader_callback(void) {
    pthread_t t = server_start(held_by_me, 1);
    tm_kube *k = fake_client(NULL);
    stopper st = {0};
    tm_leader_opts o = {
        .ns = "ns", .name = "l", .identity = "me", .on_new_leader = stop_on_new_leader, .ud = &st};
    tm_err err = {0};
    st.l = tm_leader_start(k, &o, &err);
    CHECKF(st.l != NULL, "%s", err.msg);
    for (int i = 0; i < 30; i++)
        tm_kube_run(k, 10, &err);
    CHECK_INT(st.told, 1);
    pthread_mutex_lock(&srv.mu);
    int n = srv.nreqs;
    pthread_mutex_unlock(&srv.mu);
    CHECKF(n == 1, "%d requests, the 2nd: %s", n, req(1));
    tm_kube_free(k);
    server_stop(t);
}

/* ---- an expired continue token -------------------------------------------------------------- */

static const response expired_script[] = {
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\","
      "\"continue\":\"c1\"},\"items\":[" LISTPOD("a", "5") "]}"},
     0,
     NULL},
    {"410 Gone",
     {"{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"The provided "
      "continue parameter is too old\"}"},
     0,
     NULL},
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"12\"},"
      "\"items\":[" LISTPOD("a", "5") "," LISTPOD("b", "11") "]}"},
     0,
     NULL},
    {"200 OK", {""}, 2000, NULL}, /* the informer's watch */
};

/* A continue token that expires mid-list: the list starts over once, unpaged (client-go's
 * pager does the same: a paged retry could expire again and again on a busy cluster). */
static void test_expired_continue_relists_unpaged(void) {
    pthread_t t = server_start(expired_script, 4);
    tm_kube *k = fake_client(NULL);
    ilog l = {"", 0};
    tm_informer_opts o = {.path = "/api/v1/pods",
                          .page_size = 1,
                          .on_event = on_event,
                          .on_synced = on_synced,
                          .ud = &l};
    tm_err err = {0};
    tm_informer *inf = tm_informer_start(k, &o, &err);
    for (int i = 0; i < 200 && !tm_informer_synced(inf); i++)
        tm_kube_run(k, 20, &err);
    CHECK(tm_informer_synced(inf));
    CHECK_STR(l.log, "+a@5 +b@11 ");
    CHECK(strstr(req(1), "continue=c1") != NULL);
    CHECKF(strncmp(req(2), "GET /api/v1/pods HTTP", 21) == 0, "%s", req(2));
    tm_informer_stop(inf);
    tm_kube_free(k);
    server_stop(t);

    /* The synchronous list behaves alike. */
    t = server_start(expired_script, 3);
    k = fake_client(NULL);
    tm_list_opts lo = {.limit = 1};
    char *rv = NULL;
    json_t *items = tm_kube_list(k, "/api/v1/pods", &lo, &rv, &err);
    CHECKF(items != NULL, "%s", err.msg);
    CHECK_INT(json_array_size(items), 2);
    CHECK_STR(rv, "12");
    CHECKF(strncmp(req(2), "GET /api/v1/pods HTTP", 21) == 0, "%s", req(2));
    json_decref(items);
    free(rv);
    tm_kube_free(k);
    server_stop(t);
}

/* ---- re-watch after a normal stream end ------------------------------------------------------ */

static int nreqs(void) {
    pthread_mutex_lock(&srv.mu);
    int n = srv.nreqs;
    pthread_mutex_unlock(&srv.mu);
    return n;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const response shedding_script[] = {
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\"},"
      "\"items\":[]}"},
     0,
     NULL},
    /* The server closes each watch after one event, as an API server shedding watchers does. */
    {"200 OK", {"{\"type\":\"ADDED\",\"object\":" POD("x", "11") "}\n"}, 0, NULL},
    {"200 OK", {"{\"type\":\"ADDED\",\"object\":" POD("y", "12") "}\n"}, 0, NULL},
    {"200 OK", {"{\"type\":\"ADDED\",\"object\":" POD("z", "13") "}\n"}, 0, NULL},
    {"200 OK", {""}, 3000, NULL},
};

/* A watch that ended normally after delivering events is resumed at once from the last RV: any
 * wait (the old code backed off at least 500 ms per such end) delays every change made
 * meanwhile, by tens of seconds during a burst. */
static void test_rewatch_at_once_after_normal_end(void) {
    pthread_t t = server_start(shedding_script, 5);
    tm_kube *k = fake_client(NULL);
    ilog l = {"", 0};
    tm_informer_opts o = {.path = "/api/v1/pods", .on_event = on_event, .ud = &l};
    tm_err err = {0};
    tm_informer *inf = tm_informer_start(k, &o, &err);
    CHECKF(inf != NULL, "%s", err.msg);
    for (int i = 0; i < 200 && !tm_informer_synced(inf); i++)
        tm_kube_run(k, 10, &err);
    int64_t t0 = now_ms();
    while (!tm_informer_get(inf, "ns", "z") && now_ms() - t0 < 5000)
        tm_kube_run(k, 10, &err);
    CHECK_STR(l.log, "+x@11 +y@12 +z@13 ");
    /* two streams ended normally before z: re-watched at once, never a backoff wait (the old
     * code waited 500 ms or more after each). Counted, not timed, so load cannot flake it. */
    CHECK_INT(tm_informer_backoffs(inf), 0);
    while (nreqs() < 5 && now_ms() - t0 < 3000) /* the server records the last one late */
        tm_kube_run(k, 10, &err);
    CHECK(strstr(req(2), "resourceVersion=11&") != NULL);
    CHECK(strstr(req(3), "resourceVersion=12&") != NULL);
    CHECK(strstr(req(4), "resourceVersion=13&") != NULL);
    CHECK_INT(tm_informer_relists(inf), 0);
    tm_informer_stop(inf);
    tm_kube_free(k);
    server_stop(t);
}

static const response empty_script[] = {
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\"},"
      "\"items\":[]}"},
     0,
     NULL},
    {"200 OK", {""}, 0, NULL},
    {"200 OK", {""}, 0, NULL},
    {"200 OK", {""}, 0, NULL},
    {"200 OK", {""}, 0, NULL},
    {"200 OK", {""}, 0, NULL},
};

/* The bound against a hot loop: streams that end at once without a single event are re-watched
 * at once only twice in a row; the third such end backs off (at least 500 ms). */
static void test_empty_streams_back_off(void) {
    pthread_t t = server_start(empty_script, 6);
    tm_kube *k = fake_client(NULL);
    tm_informer_opts o = {.path = "/api/v1/pods"};
    tm_err err = {0};
    tm_informer *inf = tm_informer_start(k, &o, &err);
    CHECKF(inf != NULL, "%s", err.msg);
    int64_t t0 = now_ms();
    while (nreqs() < 4 && now_ms() - t0 < 3000)
        tm_kube_run(k, 10, &err);
    CHECK_INT(nreqs(), 4); /* the list and three watches */
    t0 = now_ms();
    while (now_ms() - t0 < 250)
        tm_kube_run(k, 10, &err);
    CHECK_INT(nreqs(), 4); /* the fourth waits */
    CHECK_INT(tm_informer_backoffs(inf), 1);
    tm_informer_stop(inf);
    tm_kube_free(k);
    server_stop(t);
}

/* ---- transform ------------------------------------------------------------------------------- */

#define BIGPOD(name, rv)                                                                           \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv          \
    "\",\"managedFields\":[{\"manager\":\"kubectl\"}]},\"spec\":{\"nodeName\":\"n1\"}}"

static const response transform_script[] = {
    {"200 OK",
     {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\"},"
      "\"items\":[" BIGPOD("a", "5") "," BIGPOD("skip", "6") "]}"},
     0,
     NULL},
    {"200 OK",
     {"{\"type\":\"ADDED\",\"object\":" BIGPOD("b", "11") "}\n",
      "{\"type\":\"ADDED\",\"object\":" BIGPOD("skip2", "12") "}\n",
      "{\"type\":\"MODIFIED\",\"object\":" BIGPOD("a", "13") "}\n",
      "{\"type\":\"DELETED\",\"object\":" BIGPOD("b", "14") "}\n",
      "{\"type\":\"MODIFIED\",\"object\":" BIGPOD("a", "15") "}\n"},
     3000,
     NULL},
};

typedef struct {
    int calls, untrimmed; /* transform calls; events that delivered an untransformed object */
    tm_informer *inf;
    int store_ok; /* the store as expected when b was deleted */
    char log[256];
} tlog;

/* Drops managedFields in place; replaces the object by a fresh one for "b"; drops "skip*" and
 * resourceVersion 15. */
static json_t *trim(void *ud, json_t *obj) {
    tlog *l = ud;
    l->calls++;
    const char *name = tm_json_str(obj, "metadata.name", "");
    if (strncmp(name, "skip", 4) == 0 ||
        strcmp(tm_json_str(obj, "metadata.resourceVersion", ""), "15") == 0) {
        json_decref(obj);
        return NULL;
    }
    if (strcmp(name, "b") == 0) {
        json_t *n = json_pack("{s:O,s:{s:b}}", "metadata", json_object_get(obj, "metadata"), "spec",
                              "copied", 1);
        json_decref(obj);
        json_object_del(json_object_get(n, "metadata"), "managedFields");
        return n;
    }
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
    return obj;
}

static void on_tevent(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    tlog *l = ud;
    static const char *c[] = {"+", "~", "-"};
    size_t n = strlen(l->log);
    snprintf(l->log + n, sizeof l->log - n, "%s%s@%s ", c[t],
             tm_json_str(obj, "metadata.name", "?"),
             tm_json_str(obj, "metadata.resourceVersion", "?"));
    if (tm_json_path(obj, "metadata.managedFields") ||
        (old && tm_json_path(old, "metadata.managedFields")))
        l->untrimmed++;
    if (t == TM_WATCH_DELETED && strcmp(tm_json_str(obj, "metadata.name", ""), "b") == 0) {
        json_t *a = tm_informer_get(l->inf, "ns", "a");
        l->store_ok = a && !tm_json_path(a, "metadata.managedFields") &&
                      strcmp(tm_json_str(a, "spec.nodeName", ""), "n1") == 0 &&
                      !tm_informer_get(l->inf, "ns", "skip") && tm_informer_size(l->inf) == 1;
    }
}

/* Every listed and watched object passes through the transform before it is stored or
 * delivered; NULL drops it. */
static void test_transform(void) {
    pthread_t t = server_start(transform_script, 2);
    tm_kube *k = fake_client(NULL);
    tlog l = {0, 0, NULL, 0, ""};
    tm_informer_opts o = {.path = "/api/v1/pods",
                          .on_event = on_tevent,
                          .ud = &l,
                          .transform = trim,
                          .transform_ud = &l};
    tm_err err = {0};
    tm_informer *inf = tm_informer_start(k, &o, &err);
    CHECKF(inf != NULL, "%s", err.msg);
    l.inf = inf;
    int64_t t0 = now_ms();
    /* a's last version is dropped by the transform: the stored one goes with a DELETED */
    while (!strstr(l.log, "-a@") && now_ms() - t0 < 3000)
        tm_kube_run(k, 10, &err);
    CHECK_STR(l.log, "+a@5 +b@11 ~a@13 -b@14 -a@13 ");
    CHECK_INT(l.untrimmed, 0);
    CHECK(l.store_ok);
    CHECK_INT(l.calls, 7);
    CHECK_INT(tm_informer_size(inf), 0);
    tm_informer_stop(inf);
    tm_kube_free(k);
    server_stop(t);
}

/* ---- a failing lease GET is reported ---------------------------------------------------- */

static const response forbidden_lease[] = {
    {"403 Forbidden",
     {"{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\",\"message\":\"leases.coordination"
      ".k8s.io \\\"l\\\" is forbidden: User \\\"x\\\" cannot get resource \\\"leases\\\"\"}"},
     0,
     NULL},
};

/* A replica whose GETs of the Lease fail (RBAC, say) must say so in its log instead of retrying
 * in silence forever. */
static void test_leader_get_failure_is_logged(void) {
    pthread_t t = server_start(forbidden_lease, 1);
    tm_kube *k = fake_client(NULL);
    char logf[] = "/tmp/tarema-leader-log-XXXXXX";
    int fd = mkstemp(logf);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    tm_leader_opts o = {.ns = "ns", .name = "l", .identity = "me"};
    tm_err err = {0};
    tm_leader *l = tm_leader_start(k, &o, &err);
    pthread_mutex_lock(&srv.mu);
    for (int i = 0; i < 100 && srv.nreqs < 1; i++) {
        pthread_mutex_unlock(&srv.mu);
        tm_kube_run(k, 10, &err);
        pthread_mutex_lock(&srv.mu);
    }
    pthread_mutex_unlock(&srv.mu);
    for (int i = 0; i < 10; i++)
        tm_kube_run(k, 10, &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    char buf[4096] = "";
    FILE *f = fopen(logf, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    unlink(logf);
    CHECKF(strstr(buf, "lease request failed") != NULL && strstr(buf, "is forbidden") != NULL,
           "log: %s", buf);
    CHECK(!tm_leader_is_leader(l));
    tm_leader_stop(l, false);
    tm_kube_free(k);
    server_stop(t);
}

int main(void) {
    pthread_mutex_init(&srv.mu, NULL);
    RUN(test_leader_loses_at_once_on_409);
    RUN(test_informer_relist_and_resume);
    RUN(test_informer_compact_store);
    RUN(test_token_rotation_and_async_status);
    RUN(test_bind_and_event_bodies);
    RUN(test_wakeup_ends_the_wait);
    RUN(test_429_retried_after_retry_after);
    RUN(test_max_active_queues_the_rest);
    RUN(test_leader_not_queued_behind_traffic);
    RUN(test_timers_and_cancel);
    RUN(test_free_client_inside_callback);
    RUN(test_leader_stopped_in_new_leader_callback);
    RUN(test_expired_continue_relists_unpaged);
    RUN(test_rewatch_at_once_after_normal_end);
    RUN(test_empty_streams_back_off);
    RUN(test_transform);
    RUN(test_streamed_list);
    RUN(test_streamed_list_refused_or_cut);
    RUN(test_leader_get_failure_is_logged);
    return TEST_SUMMARY();
}
