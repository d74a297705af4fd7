/* lib_httpd_security_test.c: authentication, TLS, mTLS and resource limits of lib/httpd on
 * 127.0.0.1 (fixtures in tests/fixtures/tls, made by regen.sh there): a protected route
 * refuses requests without credentials (401) and takes a Bearer token, Basic credentials and
 * (where allowed) ?token=; health stays open; client certificates of the configured CA
 * authenticate, others do not; a non-loopback address without auth is refused; the memory
 * budget answers 503 to bodies and JSON parses that would pass it; the health listener answers
 * while the main listener's slots are taken; a rotated token file takes effect. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "lib/auth.h"
#include "lib/httpd.h"
#include "lib/log.h"

#define TLS   "tests/fixtures/tls/"
#define TOKEN "test-token-0123456789abcdef"

typedef struct {
    const char *scheme; /* "http" or "https" */
    const char *header; /* extra header or NULL */
    const char *cert;   /* client certificate (and .key next to it) or NULL */
    const char *key;
    const char *userpwd; /* Basic credentials or NULL */
    long timeout_s;      /* 0 = 10 */
    const char *cainfo;  /* CA to verify the server with; NULL = the test CA */
} client;

static size_t sink(char *p, size_t sz, size_t n, void *ud) {
    return sz * n;
}

/* Status of one request, -1 when the transfer failed. */
static long req(int port, const client *c, const char *method, const char *path, const char *body,
                size_t len) {
    char url[512];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d%s", c->scheme, port, path);
    CURL *h = curl_easy_init();
    struct curl_slist *hl = c->header ? curl_slist_append(NULL, c->header) : NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, c->timeout_s ? c->timeout_s : 10L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CAINFO, c->cainfo ? c->cainfo : TLS "ca.crt");
    if (c->cert) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert);
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->key);
    }
    if (c->userpwd) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERPWD, c->userpwd);
    }
    long status = -1;
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    else
        printf("    curl %s %s: %s\n", method, url, curl_easy_strerror(rc));
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    return status;
}

static void on_ok(const tm_httpd_req *r, tm_httpd_resp *resp, void *ud) {
    tm_httpd_text(resp, 200, r->auth_by ? r->auth_by : "none");
}

static void on_json(const tm_httpd_req *r, tm_httpd_resp *resp, void *ud) {
    json_t *j = tm_httpd_req_json(r, resp);
    if (j)
        tm_httpd_text(resp, 200, "parsed");
    json_decref(j);
}

static tm_httpd *serve(tm_httpd_opts *o) {
    tm_err err = {0};
    o->name = "sec";
    tm_httpd *srv = tm_httpd_start(o, &err);
    CHECKF(srv != NULL, "%s", err.msg);
    if (!srv)
        return NULL;
    tm_httpd_route_opts q = {.token_in_query = true};
    CHECK(tm_httpd_route(srv, "POST", "/verb", on_ok, NULL, &err) == 0);
    CHECK(tm_httpd_route_ex(srv, "POST", "/weblog*", on_ok, NULL, &q, &err) == 0);
    CHECK(tm_httpd_route(srv, "POST", "/json", on_json, NULL, &err) == 0);
    CHECK(tm_httpd_enable_health(srv, NULL, NULL, &err) == 0);
    return srv;
}

static void test_token_auth(void) {
    tm_err err = {0};
    tm_auth *a = tm_auth_new(TLS "token", &err);
    CHECKF(a != NULL, "%s", err.msg);
    tm_httpd_opts o = {.auth = a};
    tm_httpd *srv = serve(&o);
    if (!srv) {
        tm_auth_free(a);
        return;
    }
    int p = tm_httpd_port(srv);
    client none = {.scheme = "http"};
    client bearer = {.scheme = "http", .header = "Authorization: Bearer " TOKEN};
    client wrong = {.scheme = "http", .header = "Authorization: Bearer " TOKEN "x"};
    client prefix = {.scheme = "http", .header = "Authorization: Bearer test-token"};
    client basic = {.scheme = "http", .userpwd = "nextflow:" TOKEN};
    client basic_bad = {.scheme = "http", .userpwd = "nextflow:nope-nope-nope-nope"};
    CHECK(req(p, &none, "POST", "/verb", "{}", 2) == 401);
    CHECK(req(p, &wrong, "POST", "/verb", "{}", 2) == 401);
    CHECK(req(p, &prefix, "POST", "/verb", "{}", 2) == 401);
    CHECK(req(p, &bearer, "POST", "/verb", "{}", 2) == 200);
    CHECK(req(p, &basic, "POST", "/verb", "{}", 2) == 200);
    CHECK(req(p, &basic_bad, "POST", "/verb", "{}", 2) == 401);
    /* ?token= only where the route allows it (Nextflow's weblog URL) */
    CHECK(req(p, &none, "POST", "/verb?token=" TOKEN, "{}", 2) == 401);
    CHECK(req(p, &none, "POST", "/weblog?token=" TOKEN, "{}", 2) == 200);
    CHECK(req(p, &none, "POST", "/weblog?token=wrong-wrong-wrong-wrong", "{}", 2) == 401);
    CHECK(req(p, &none, "POST", "/weblog", "{}", 2) == 401);
    /* health stays open, unknown paths are still 404 */
    CHECK(req(p, &none, "GET", "/healthz", NULL, 0) == 200);
    CHECK(req(p, &none, "GET", "/readyz", NULL, 0) == 200);
    CHECK(req(p, &none, "POST", "/nothing", "{}", 2) == 404);
    /* a refused request with a large body is answered before the body is read */
    size_t big = 4 << 20;
    char *b = calloc(1, big);
    CHECK(req(p, &none, "POST", "/verb", b, big) == 401);
    free(b);
    tm_httpd_free(srv);
    tm_auth_free(a);
}

static void test_token_file_rotation(void) {
    char path[] = "/tmp/tarema-token-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, "first-token-0123456789\n", 23) == 23);
    close(fd);
    tm_err err = {0};
    tm_auth *a = tm_auth_new(path, &err);
    CHECKF(a != NULL, "%s", err.msg);
    CHECK(tm_auth_check(a, "first-token-0123456789", 22));
    CHECK(!tm_auth_check(a, "first-token-012345678", 21));
    sleep(1); /* a different mtime, and past the once-a-second recheck */
    FILE *f = fopen(path, "w");
    fputs("second-token-0123456789", f);
    fclose(f);
    usleep(1100 * 1000);
    CHECK(tm_auth_check(a, "second-token-0123456789", 23));
    CHECK(!tm_auth_check(a, "first-token-0123456789", 22));
    /* a broken rewrite keeps the last good token */
    sleep(1);
    f = fopen(path, "w");
    fputs("short", f);
    fclose(f);
    usleep(1100 * 1000);
    CHECK(tm_auth_check(a, "second-token-0123456789", 23));
    tm_auth_free(a);
    unlink(path);
    /* a too short token is refused at start */
    CHECK(tm_auth_new("/nonexistent/token", &err) == NULL);
    CHECK(strstr(err.msg, "/nonexistent/token") != NULL);
    /* header parsing */
    char buf[256];
    size_t len;
    const char *t = tm_auth_from_header("Bearer abc", buf, sizeof buf, &len);
    CHECK(t && len == 3 && strncmp(t, "abc", 3) == 0);
    t = tm_auth_from_header("Basic dXNlcjpzZWNyZXQ=", buf, sizeof buf, &len); /* user:secret */
    CHECK(t && len == 6 && strncmp(t, "secret", 6) == 0);
    CHECK(tm_auth_from_header("Digest x", buf, sizeof buf, &len) == NULL);
    CHECK(tm_auth_from_header("Basic !!!", buf, sizeof buf, &len) == NULL);
    CHECK(tm_auth_from_header(NULL, buf, sizeof buf, &len) == NULL);
}

static void test_tls_and_client_certs(void) {
    tm_httpd_opts o = {.tls_cert_file = TLS "server.crt",
                       .tls_key_file = TLS "server.key",
                       .client_ca_file = TLS "ca.crt"};
    tm_httpd *srv = serve(&o);
    if (!srv)
        return;
    int p = tm_httpd_port(srv);
    CHECK(tm_httpd_is_tls(srv) && tm_httpd_has_auth(srv));
    client plain = {.scheme = "http"};
    client anon = {.scheme = "https"};
    client mtls = {.scheme = "https", .cert = TLS "client.crt", .key = TLS "client.key"};
    client rogue = {
        .scheme = "https", .cert = TLS "rogue-client.crt", .key = TLS "rogue-client.key"};
    CHECK(req(p, &plain, "GET", "/healthz", NULL, 0) == -1); /* no plain HTTP on a TLS port */
    CHECK(req(p, &anon, "GET", "/healthz", NULL, 0) == 200);
    CHECK(req(p, &anon, "POST", "/verb", "{}", 2) == 401);
    CHECK(req(p, &mtls, "POST", "/verb", "{}", 2) == 200);
    long r = req(p, &rogue, "POST", "/verb", "{}", 2);
    CHECKF(r == 401 || r == -1, "rogue client certificate got %ld", r);
    tm_httpd_free(srv);

    /* certificate without key, CA without TLS, unreadable files: errors at start */
    tm_err err = {0};
    o = (tm_httpd_opts){.tls_cert_file = TLS "server.crt"};
    CHECK(tm_httpd_start(&o, &err) == NULL && strstr(err.msg, "key") != NULL);
    o = (tm_httpd_opts){.client_ca_file = TLS "ca.crt"};
    CHECK(tm_httpd_start(&o, &err) == NULL && strstr(err.msg, "TLS") != NULL);
    o = (tm_httpd_opts){.tls_cert_file = TLS "missing.crt", .tls_key_file = TLS "server.key"};
    CHECK(tm_httpd_start(&o, &err) == NULL && strstr(err.msg, "missing.crt") != NULL);
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[8192];
    size_t n;
    int rc = in && out ? 0 : -1;
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0)
        rc |= fwrite(buf, 1, n, out) == n ? 0 : -1;
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    return rc;
}

/* cert-manager renews certificates in place: the server picks the new pair up without a
 * restart, and keeps the working one when the new files do not fit together. */
static void test_tls_reload(void) {
    char dir[] = "/tmp/tarema-tls-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char crt[256], key[256];
    snprintf(crt, sizeof crt, "%s/tls.crt", dir);
    snprintf(key, sizeof key, "%s/tls.key", dir);
    CHECK(copy_file(TLS "server.crt", crt) == 0 && copy_file(TLS "server.key", key) == 0);
    tm_httpd_opts o = {.tls_cert_file = crt, .tls_key_file = key, .tls_reload_s = 1};
    tm_httpd *srv = serve(&o);
    if (!srv)
        return;
    int p = tm_httpd_port(srv);
    client old_ca = {.scheme = "https", .timeout_s = 3};
    client new_ca = {.scheme = "https", .cainfo = TLS "rogue-ca.crt", .timeout_s = 3};
    CHECK(req(p, &old_ca, "GET", "/healthz", NULL, 0) == 200);
    CHECK(req(p, &new_ca, "GET", "/healthz", NULL, 0) == -1);
    sleep(1); /* a different mtime */
    CHECK(copy_file(TLS "server2.key", key) == 0 && copy_file(TLS "server2.crt", crt) == 0);
    long st = -1;
    for (int i = 0; i < 40 && st != 200; i++) {
        usleep(100 * 1000);
        st = req(p, &new_ca, "GET", "/healthz", NULL, 0);
    }
    CHECKF(st == 200, "the renewed certificate is not served (%ld)", st);
    CHECK(req(p, &old_ca, "GET", "/healthz", NULL, 0) == -1);
    CHECK(tm_httpd_port(srv) == p);
    /* a key that does not match: the current pair stays */
    sleep(1);
    CHECK(copy_file(TLS "server.key", key) == 0);
    sleep(3);
    CHECK(req(p, &new_ca, "GET", "/healthz", NULL, 0) == 200);
    tm_httpd_free(srv);
    unlink(crt);
    unlink(key);
    rmdir(dir);
}

static void test_refuses_exposed_without_auth(void) {
    tm_err err = {0};
    tm_httpd_opts o = {.bind_addr = "0.0.0.0"};
    tm_httpd *srv = tm_httpd_start(&o, &err);
    CHECK(srv == NULL);
    CHECK(strstr(err.msg, "without authentication") != NULL);
    tm_httpd_free(srv);
    o.insecure_no_auth = true;
    srv = tm_httpd_start(&o, &err);
    CHECKF(srv != NULL, "%s", err.msg);
    tm_httpd_free(srv);
    o = (tm_httpd_opts){.bind_addr = "0.0.0.0",
                        .tls_cert_file = TLS "server.crt",
                        .tls_key_file = TLS "server.key",
                        .client_ca_file = TLS "ca.crt"};
    srv = tm_httpd_start(&o, &err);
    CHECKF(srv != NULL, "%s", err.msg);
    tm_httpd_free(srv);
}

static void test_memory_budget(void) {
    tm_httpd_opts o = {.max_body = 4 << 20, .memory_budget = 2 << 20};
    tm_httpd *srv = serve(&o);
    if (!srv)
        return;
    int p = tm_httpd_port(srv);
    client c = {.scheme = "http"};
    size_t n = (4 << 20) + 1;
    char *b = malloc(n);
    memset(b, ' ', n);
    CHECK(req(p, &c, "POST", "/verb", b, n) == 413);       /* over the route's limit */
    CHECK(req(p, &c, "POST", "/verb", b, 3 << 20) == 503); /* under it, over the budget */
    CHECK(req(p, &c, "POST", "/verb", b, 1 << 20) == 200);
    /* 300 KB of "[[],[],...]" parses into ~14 MB: the parse is refused, not the body */
    size_t jn = 300000;
    char *j = malloc(jn + 1);
    j[0] = '[';
    size_t k = 1;
    while (k + 4 < jn) {
        memcpy(j + k, "[],", 3);
        k += 3;
    }
    j[k++] = '[';
    j[k++] = ']';
    j[k++] = ']';
    CHECK(req(p, &c, "POST", "/json", j, k) == 503);
    /* the budget comes back when the request completes, just after its answer was sent */
    for (int i = 0; i < 200 && tm_httpd_budget_used(srv) > 0; i++)
        usleep(10 * 1000);
    CHECK(tm_httpd_budget_used(srv) == 0);
    CHECK(req(p, &c, "POST", "/json", "{\"a\": [1, 2, 3]}", 16) == 200);
    free(j);
    free(b);
    tm_httpd_free(srv);
}

static int raw_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    (void)!write(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n", 32); /* never finished */
    return fd;
}

static void test_health_listener_when_slots_taken(void) {
    tm_httpd_opts o = {.max_conns = 8, .per_ip_conns = 8, .health_port = -1, .timeout_s = 30};
    tm_httpd *srv = serve(&o);
    if (!srv)
        return;
    int p = tm_httpd_port(srv), hp = tm_httpd_health_port(srv);
    CHECK(hp > 0 && hp != p);
    int fds[8];
    for (int i = 0; i < 8; i++)
        fds[i] = raw_connect(p);
    usleep(200 * 1000);
    client c = {.scheme = "http", .timeout_s = 2};
    long main_status = req(p, &c, "GET", "/healthz", NULL, 0);
    CHECKF(main_status == -1, "main listener should be full, got %ld", main_status);
    CHECK(req(hp, &c, "GET", "/healthz", NULL, 0) == 200);
    CHECK(req(hp, &c, "GET", "/readyz", NULL, 0) == 200);
    CHECK(req(hp, &c, "POST", "/verb", "{}", 2) == 404); /* only health and metrics there */
    for (int i = 0; i < 8; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    tm_httpd_free(srv);
}

int main(void) {
    tm_log_configure("error", "text");
    curl_global_init(CURL_GLOBAL_ALL);
    RUN(test_token_auth);
    RUN(test_token_file_rotation);
    RUN(test_tls_and_client_certs);
    RUN(test_tls_reload);
    RUN(test_refuses_exposed_without_auth);
    RUN(test_memory_budget);
    RUN(test_health_listener_when_slots_taken);
    curl_global_cleanup();
    return TEST_SUMMARY();
}
