/* lib_httpd_test.c: the HTTP server on 127.0.0.1 with a kernel-chosen port, driven by libcurl:
 * routing (exact, prefix, 404, 405 with Allow), body limits (413), JSON bodies, built-in
 * /healthz /readyz /metrics, malformed requests, and many concurrent clients. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "lib/httpd.h"
#include "lib/log.h"

/* ---- client side ---- */

typedef struct {
    long status;
    char *body;
    size_t len;
    char headers[2048];
} reply;

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
    reply *r = ud;
    char *grown = realloc(r->body, r->len + sz * n + 1);
    if (!grown)
        return 0;
    r->body = grown;
    memcpy(r->body + r->len, p, sz * n);
    r->len += sz * n;
    r->body[r->len] = '\0';
    return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
    reply *r = ud;
    size_t used = strlen(r->headers);
    snprintf(r->headers + used, sizeof r->headers - used, "%.*s", (int)(sz * n), p);
    return sz * n;
}

/* Sends one request; extra_hdr may be NULL. Returns the reply (free body with reply_free). */
static reply request(int port, const char *method, const char *path, const char *body, size_t len,
                     const char *extra_hdr) {
    reply r = {.status = -1};
    r.body = calloc(1, 1);
    char url[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;
    if (extra_hdr)
        hl = curl_slist_append(hl, extra_hdr);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    else
        printf("    curl %s %s: %s\n", method, path, curl_easy_strerror(rc));
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return r;
}

static void reply_free(reply *r) {
    free(r->body);
    r->body = NULL;
}

/* The "error" member of a JSON error body, or "" (copied into buf). */
static const char *json_error_of(const reply *r, char *buf, size_t size) {
    buf[0] = '\0';
    json_t *j = json_loads(r->body ? r->body : "", 0, NULL);
    const char *e = json_string_value(json_object_get(j, "error"));
    snprintf(buf, size, "%s", e ? e : "");
    json_decref(j);
    return buf;
}

/* ---- server side ---- */

static void on_echo(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    const char *q = tm_httpd_query(req, "x");
    const char *h = tm_httpd_header(req, "x-test");
    json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:s}", "method", req->method, "path",
                          req->path, "body", req->body, "len", (json_int_t)req->body_len, "x",
                          q ? q : "(none)", "hdr", h ? h : "(none)", "remote", req->remote_addr);
    tm_httpd_header_set(resp, "X-Echo", "yes");
    tm_httpd_json(resp, 200, j);
}

static void on_tagged(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    char text[256];
    snprintf(text, sizeof text, "%s %s", (const char *)ud, req->path);
    tm_httpd_text(resp, 200, text);
}

static void on_json(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    json_t *in = tm_httpd_req_json(req, resp);
    if (!in)
        return;
    json_object_set_new(in, "seen", json_true());
    tm_httpd_json(resp, 201, in);
}

static void on_nothing(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {}

static void on_bad_status(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    tm_httpd_text(resp, 42, "weird");
}

static void on_null_json(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    tm_httpd_json(resp, 200, NULL);
}

static void on_count(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    atomic_int *n = ud;
    int v = atomic_fetch_add(n, 1) + 1;
    usleep(1000); /* overlap with other clients */
    char text[64];
    snprintf(text, sizeof text, "%s#%d", req->body, v);
    tm_httpd_text(resp, 200, text);
}

static tm_httpd *start(size_t max_body) {
    tm_err err = {0};
    tm_httpd_opts o = {.port = 0, .max_body = max_body, .name = "test"};
    tm_httpd *srv = tm_httpd_start(&o, &err);
    CHECKF(srv != NULL, "%s", err.msg);
    return srv;
}

static void test_routes(void) {
    tm_httpd *srv = start(0);
    if (!srv)
        return;
    int port = tm_httpd_port(srv);
    CHECK(port > 0);
    tm_err err = {0};
    CHECK_INT(tm_httpd_route(srv, "POST", "/echo", on_echo, NULL, &err), 0);
    CHECK_INT(tm_httpd_route(srv, "PUT", "/echo", on_echo, NULL, &err), 0);

    reply r = request(port, "POST", "/echo?x=a%20b&y=2", "hello", 5, "X-Test: 42");
    CHECK_INT(r.status, 200);
    json_t *j = json_loads(r.body, 0, NULL);
    CHECK_STR(json_string_value(json_object_get(j, "method")), "POST");
    CHECK_STR(json_string_value(json_object_get(j, "path")), "/echo");
    CHECK_STR(json_string_value(json_object_get(j, "body")), "hello");
    CHECK_STR(json_string_value(json_object_get(j, "x")), "a b");
    CHECK_STR(json_string_value(json_object_get(j, "hdr")), "42");
    CHECK_STR(json_string_value(json_object_get(j, "remote")), "127.0.0.1");
    CHECK(strstr(r.headers, "Content-Type: application/json") != NULL);
    CHECK(strstr(r.headers, "X-Echo: yes") != NULL);
    json_decref(j);
    reply_free(&r);

    /* a body with a NUL byte keeps its length */
    r = request(port, "POST", "/echo", "a\0b", 3, NULL);
    CHECK_INT(r.status, 200);
    j = json_loads(r.body, 0, NULL);
    CHECK_INT(json_integer_value(json_object_get(j, "len")), 3);
    CHECK_STR(json_string_value(json_object_get(j, "body")), "a");
    json_decref(j);
    reply_free(&r);

    char msg[512];
    r = request(port, "GET", "/nope", NULL, 0, NULL);
    CHECK_INT(r.status, 404);
    CHECK_STR(json_error_of(&r, msg, sizeof msg), "no such endpoint: GET /nope");
    reply_free(&r);

    r = request(port, "DELETE", "/echo", NULL, 0, NULL);
    CHECK_INT(r.status, 405);
    CHECK(strstr(r.headers, "Allow: POST, PUT") != NULL);
    CHECK(strstr(json_error_of(&r, msg, sizeof msg), "method DELETE not allowed for /echo") !=
          NULL);
    reply_free(&r);

    /* percent-encoded paths arrive decoded */
    CHECK_INT(tm_httpd_route(srv, "GET", "/a b", on_tagged, "space", &err), 0);
    r = request(port, "GET", "/a%20b", NULL, 0, NULL);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "space /a b");
    reply_free(&r);
    tm_httpd_free(srv);
}

static void test_prefix_routes(void) {
    tm_httpd *srv = start(0);
    if (!srv)
        return;
    int port = tm_httpd_port(srv);
    tm_err err = {0};
    CHECK_INT(tm_httpd_route(srv, "POST", "/weblog*", on_tagged, "weblog", &err), 0);
    CHECK_INT(tm_httpd_route(srv, "POST", "/weblog/long/*", on_tagged, "long", &err), 0);
    CHECK_INT(tm_httpd_route(srv, "POST", "/weblog/exact", on_tagged, "exact", &err), 0);
    CHECK_INT(tm_httpd_route(srv, "*", "/any", on_tagged, "any", &err), 0);
    static const struct {
        const char *method, *path, *want;
        long status;
    } cases[] = {
        {"POST", "/weblog", "weblog /weblog", 200},
        {"POST", "/weblog/run-1/abc", "weblog /weblog/run-1/abc", 200},
        {"POST", "/weblogs", "weblog /weblogs", 200},
        {"POST", "/weblog/exact", "exact /weblog/exact", 200},
        {"POST", "/weblog/long/x", "long /weblog/long/x", 200},
        {"POST", "/weblog/long", "weblog /weblog/long", 200},
        {"GET", "/weblog/x", NULL, 405},
        {"POST", "/web", NULL, 404},
        {"PATCH", "/any", "any /any", 200},
        {"GET", "/any", "any /any", 200},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reply r = request(port, cases[i].method, cases[i].path, "{}", 2, NULL);
        CHECKF(r.status == cases[i].status, "%s %s: status %ld", cases[i].method, cases[i].path,
               r.status);
        if (cases[i].want)
            CHECK_STR(r.body, cases[i].want);
        reply_free(&r);
    }
    /* replacing a route's handler */
    CHECK_INT(tm_httpd_route(srv, "POST", "/weblog/exact", on_tagged, "again", &err), 0);
    reply r = request(port, "POST", "/weblog/exact", "", 0, NULL);
    CHECK_STR(r.body, "again /weblog/exact");
    reply_free(&r);
    /* bad patterns */
    CHECK_INT(tm_httpd_route(srv, "GET", "nope", on_tagged, NULL, &err), -1);
    CHECK(strstr(err.msg, "\"nope\"") != NULL);
    CHECK_INT(tm_httpd_route(srv, "GET", "/a*b", on_tagged, NULL, &err), -1);
    CHECK_INT(tm_httpd_route(srv, "GET", NULL, on_tagged, NULL, &err), -1);
    CHECK_INT(tm_httpd_route(srv, "GET", "/x", NULL, NULL, &err), -1);
    tm_httpd_free(srv);
}

static void test_body_limits(void) {
    tm_httpd *srv = start(1024);
    if (!srv)
        return;
    int port = tm_httpd_port(srv);
    tm_err err = {0};
    CHECK_INT(tm_httpd_route(srv, "POST", "/echo", on_echo, NULL, &err), 0);
    char *big = malloc(300000);
    memset(big, 'x', 300000);
    char msg[512];

    reply r = request(port, "POST", "/echo", big, 1024, NULL); /* exactly the limit */
    CHECK_INT(r.status, 200);
    reply_free(&r);

    r = request(port, "POST", "/echo", big, 1025, NULL); /* Content-Length over the limit */
    CHECK_INT(r.status, 413);
    CHECK_STR(json_error_of(&r, msg, sizeof msg),
              "request body larger than the limit of 1024 bytes");
    reply_free(&r);

    r = request(port, "POST", "/echo", big, 300000, NULL);
    CHECK_INT(r.status, 413);
    reply_free(&r);

    /* chunked: no Content-Length, the limit is found while reading */
    r = request(port, "POST", "/echo", big, 300000, "Transfer-Encoding: chunked");
    CHECK_INT(r.status, 413);
    CHECK_STR(json_error_of(&r, msg, sizeof msg),
              "request body larger than the limit of 1024 bytes");
    reply_free(&r);

    r = request(port, "POST", "/echo", big, 1000, "Transfer-Encoding: chunked");
    CHECK_INT(r.status, 200);
    reply_free(&r);

    r = request(port, "POST", "/echo", "ok", 2, NULL); /* still serving */
    CHECK_INT(r.status, 200);
    reply_free(&r);
    free(big);
    tm_httpd_free(srv);
}

static void test_json_and_handler_results(void) {
    tm_httpd *srv = start(0);
    if (!srv)
        return;
    int port = tm_httpd_port(srv);
    tm_err err = {0};
    tm_httpd_route(srv, "POST", "/json", on_json, NULL, &err);
    tm_httpd_route(srv, "GET", "/nothing", on_nothing, NULL, &err);
    tm_httpd_route(srv, "GET", "/badstatus", on_bad_status, NULL, &err);
    tm_httpd_route(srv, "GET", "/nulljson", on_null_json, NULL, &err);
    char msg[512];

    reply r = request(port, "POST", "/json", "{\"a\": 1}", 8, NULL);
    CHECK_INT(r.status, 201);
    CHECK_STR(r.body, "{\"a\":1,\"seen\":true}");
    reply_free(&r);

    r = request(port, "POST", "/json", "{\"a\": ", 6, NULL);
    CHECK_INT(r.status, 400);
    CHECK(strncmp(json_error_of(&r, msg, sizeof msg), "invalid JSON body: ", 19) == 0);
    CHECK(strstr(msg, "line 1") != NULL);
    reply_free(&r);

    r = request(port, "POST", "/json", "", 0, NULL);
    CHECK_INT(r.status, 400);
    CHECK_STR(json_error_of(&r, msg, sizeof msg), "invalid JSON body: the request has no body");
    reply_free(&r);

    r = request(port, "POST", "/json", "\xff\xfe{", 3, NULL);
    CHECK_INT(r.status, 400);
    reply_free(&r);

    r = request(port, "GET", "/nothing", NULL, 0, NULL);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.len, 0);
    reply_free(&r);

    r = request(port, "GET", "/badstatus", NULL, 0, NULL);
    CHECK_INT(r.status, 500);
    CHECK_STR(json_error_of(&r, msg, sizeof msg), "handler returned invalid HTTP status 42");
    reply_free(&r);

    r = request(port, "GET", "/nulljson", NULL, 0, NULL);
    CHECK_INT(r.status, 500);
    reply_free(&r);
    tm_httpd_free(srv);
}

static atomic_bool g_ready; /* test-only state shared with the readiness callback */

static bool ready_cb(void *ud, char *reason, size_t size) {
    if (atomic_load(&g_ready))
        return true;
    snprintf(reason, size, "%s", (const char *)ud);
    return false;
}

static void test_builtins(void) {
    tm_httpd *srv = start(0);
    if (!srv)
        return;
    int port = tm_httpd_port(srv);
    tm_err err = {0};
    reply r = request(port, "GET", "/healthz", NULL, 0, NULL);
    CHECK_INT(r.status, 404); /* off until enabled */
    reply_free(&r);

    CHECK_INT(tm_httpd_enable_health(srv, ready_cb, "cache not synced", &err), 0);
    r = request(port, "GET", "/healthz", NULL, 0, NULL);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "ok\n");
    reply_free(&r);

    atomic_store(&g_ready, false);
    r = request(port, "GET", "/readyz", NULL, 0, NULL);
    CHECK_INT(r.status, 503);
    CHECK_STR(r.body, "not ready: cache not synced\n");
    reply_free(&r);
    atomic_store(&g_ready, true);
    r = request(port, "GET", "/readyz", NULL, 0, NULL);
    CHECK_INT(r.status, 200);
    reply_free(&r);

    r = request(port, "HEAD", "/healthz", NULL, 0, NULL);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.len, 0);
    reply_free(&r);

    r = request(port, "POST", "/healthz", "", 0, NULL);
    CHECK_INT(r.status, 405);
    CHECK(strstr(r.headers, "Allow: GET, HEAD") != NULL);
    reply_free(&r);

    tm_metrics *reg = tm_metrics_new();
    tm_metric *c = tm_metrics_counter(reg, "hits_total", "Hits.", TM_LABELS("path"), &err);
    tm_metrics_add(c, TM_LABELS("/x"), 3);
    CHECK_INT(tm_httpd_enable_metrics(srv, NULL, &err), -1);
    CHECK_INT(tm_httpd_enable_metrics(srv, reg, &err), 0);
    r = request(port, "GET", "/metrics", NULL, 0, NULL);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "# HELP hits_total Hits.\n# TYPE hits_total counter\n"
                      "hits_total{path=\"/x\"} 3\n");
    CHECK(strstr(r.headers, "Content-Type: text/plain; version=0.0.4; charset=utf-8") != NULL);
    reply_free(&r);
    tm_httpd_free(srv);
    tm_metrics_free(reg);

    /* the readiness callback may be NULL: always ready */
    srv = start(0);
    if (!srv)
        return;
    CHECK_INT(tm_httpd_enable_health(srv, NULL, NULL, &err), 0);
    r = request(tm_httpd_port(srv), "GET", "/readyz", NULL, 0, NULL);
    CHECK_INT(r.status, 200);
    reply_free(&r);
    tm_httpd_free(srv);
}

/* Writes raw bytes to the server and returns what comes back before it closes (or 2 s). */
static void raw_exchange(int port, const char *data, char *out, size_t size) {
    out[0] = '\0';
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        ssize_t w = write(fd, data, strlen(data));
        (void)w;
        size_t used = 0;
        ssize_t n;
        while (used + 1 < size && (n = read(fd, out + used, size - 1 - used)) > 0)
            used += (size_t)n;
        out[used] = '\0';
    }
    close(fd);
}

static void test_malformed_requests(void) {
    tm_httpd *srv = start(0);
    if (!srv)
        return;
    int port = tm_httpd_port(srv);
    tm_err err = {0};
    tm_httpd_enable_health(srv, NULL, NULL, &err);
    char out[4096];
    raw_exchange(port, "GARBAGE\r\n\r\n", out, sizeof out);
    /* libmicrohttpd closes on a request line it cannot parse at all */
    CHECKF(out[0] == '\0' || strncmp(out, "HTTP/1.1 400", 12) == 0, "got: %.60s", out);
    raw_exchange(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n", out,
                 sizeof out);
    CHECKF(strncmp(out, "HTTP/1.1 400", 12) == 0, "got: %.60s", out);
    raw_exchange(port, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab", out,
                 sizeof out); /* truncated body, then the client goes away */
    raw_exchange(port, "\x01\x02\x03\xff\r\n\r\n", out, sizeof out);
    reply r = request(port, "GET", "/healthz", NULL, 0, NULL); /* still alive */
    CHECK_INT(r.status, 200);
    reply_free(&r);
    tm_httpd_free(srv);
}

static void test_start_errors(void) {
    tm_err err = {0};
    tm_httpd_opts o = {.bind_addr = "not-an-ip"};
    CHECK(tm_httpd_start(&o, &err) == NULL);
    CHECK(strstr(err.msg, "\"not-an-ip\"") != NULL);
    o = (tm_httpd_opts){.port = 70000};
    CHECK(tm_httpd_start(&o, &err) == NULL);
    CHECK(strstr(err.msg, "70000") != NULL);

    tm_httpd *a = start(0);
    if (!a)
        return;
    o = (tm_httpd_opts){.port = tm_httpd_port(a)}; /* already in use */
    tm_httpd *b = tm_httpd_start(&o, &err);
    CHECK(b == NULL);
    char want[64];
    snprintf(want, sizeof want, "http listen 127.0.0.1:%d: ", tm_httpd_port(a));
    CHECKF(strncmp(err.msg, want, strlen(want)) == 0 && strlen(err.msg) > strlen(want), "%s",
           err.msg);
    tm_httpd_free(b);
    tm_httpd_stop(a);
    tm_httpd_stop(a); /* idempotent */
    tm_httpd_free(a);
    tm_httpd_free(NULL);

    /* NULL options: all defaults */
    tm_httpd *d = tm_httpd_start(NULL, &err);
    CHECKF(d != NULL, "%s", err.msg);
    CHECK(tm_httpd_port(d) > 0);
    tm_httpd_free(d);
}

static void on_slow(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    atomic_int *entered = ud;
    atomic_store(entered, 1);
    usleep(300 * 1000);
    tm_httpd_text(resp, 200, "slow done");
}

static void *slow_client(void *p) {
    int port = *(int *)p;
    reply r = request(port, "GET", "/slow", NULL, 0, NULL);
    *(int *)p = (int)r.status;
    reply_free(&r);
    return NULL;
}

/* Stopping must neither hang on an idle keep-alive connection nor cut off a running handler. */
static void test_stop_with_open_connections(void) {
    tm_httpd *srv = start(0);
    if (!srv)
        return;
    int port = tm_httpd_port(srv);
    tm_err err = {0};
    atomic_int entered;
    atomic_init(&entered, 0);
    tm_httpd_enable_health(srv, NULL, NULL, &err);
    tm_httpd_route(srv, "GET", "/slow", on_slow, &entered, &err);

    CURL *idle = curl_easy_init(); /* keeps its connection open after the request */
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", port);
    reply r = {.body = calloc(1, 1)};
    curl_easy_setopt(idle, CURLOPT_URL, url);
    curl_easy_setopt(idle, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(idle, CURLOPT_WRITEDATA, &r);
    CHECK_INT(curl_easy_perform(idle), CURLE_OK);
    reply_free(&r);

    int slow_status = port;
    pthread_t th;
    pthread_create(&th, NULL, slow_client, &slow_status);
    for (int i = 0; i < 2000 && !atomic_load(&entered); i++)
        usleep(1000);
    CHECK_INT(atomic_load(&entered), 1);
    tm_httpd_stop(srv); /* returns once the slow handler is done */
    pthread_join(th, NULL);
    CHECK_INT(slow_status, 200);
    reply after = request(port, "GET", "/healthz", NULL, 0, NULL);
    CHECK_INT(after.status, -1); /* nothing listens any more */
    reply_free(&after);
    curl_easy_cleanup(idle);
    tm_httpd_free(srv);
}

enum { NCLIENTS = 8, NPER = 40 };

typedef struct {
    int port, id, ok;
} client_arg;

static void *client(void *p) {
    client_arg *a = p;
    for (int i = 0; i < NPER; i++) {
        char body[32];
        snprintf(body, sizeof body, "c%d-%d", a->id, i);
        reply r = request(a->port, "POST", "/count", body, strlen(body), NULL);
        if (r.status == 200 && strncmp(r.body, body, strlen(body)) == 0 &&
            r.body[strlen(body)] == '#')
            a->ok++;
        reply_free(&r);
    }
    return NULL;
}

static void test_concurrent_clients(void) {
    tm_httpd *srv = start(0);
    if (!srv)
        return;
    atomic_int count;
    atomic_init(&count, 0);
    tm_err err = {0};
    tm_httpd_route(srv, "POST", "/count", on_count, &count, &err);
    pthread_t th[NCLIENTS];
    client_arg args[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++) {
        args[i] = (client_arg){.port = tm_httpd_port(srv), .id = i};
        pthread_create(&th[i], NULL, client, &args[i]);
    }
    /* routes added while clients are being served */
    for (int i = 0; i < 20; i++) {
        char path[32];
        snprintf(path, sizeof path, "/late%d", i);
        tm_httpd_route(srv, "GET", path, on_tagged, "late", &err);
    }
    int ok = 0;
    for (int i = 0; i < NCLIENTS; i++) {
        pthread_join(th[i], NULL);
        ok += args[i].ok;
    }
    CHECK_INT(ok, NCLIENTS * NPER);
    CHECK_INT(atomic_load(&count), NCLIENTS * NPER);
    reply r = request(tm_httpd_port(srv), "GET", "/late19", NULL, 0, NULL);
    CHECK_STR(r.body, "late /late19");
    reply_free(&r);
    tm_httpd_free(srv);
}

int main(void) {
    tm_log_configure("error", "text"); /* keep the expected warnings out of the output */
    curl_global_init(CURL_GLOBAL_ALL);
    RUN(test_routes);
    RUN(test_prefix_routes);
    RUN(test_body_limits);
    RUN(test_json_and_handler_results);
    RUN(test_builtins);
    RUN(test_malformed_requests);
    RUN(test_start_errors);
    RUN(test_concurrent_clients);
    RUN(test_stop_with_open_connections);
    curl_global_cleanup();
    return TEST_SUMMARY();
}
