/* httpd.c: the HTTP server behind httpd.h, on libmicrohttpd: a pool of epoll worker threads
 * for the main listener, one more thread for the optional health listener.
 *
 * libmicrohttpd calls on_request several times per request: once when the headers are in (we
 * attach a req_ctx, pick the route, authenticate, and refuse an oversized or over-budget body
 * right away), once per chunk of body (appended to the buffer), and once at the end, when the
 * route's handler runs and its response is queued. on_completed frees the req_ctx and returns
 * what it held to the memory budget whatever happened in between. Responses are built in
 * httpd_resp.c, the TLS files loaded and reloaded in httpd_tls.c. */
#include "httpd.h"
#include "httpd_internal.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "log.h"

#define DEFAULT_MAX_BODY  ((size_t)8 << 20)
#define DEFAULT_BUDGET    ((size_t)64 << 20)
#define DEFAULT_MAX_CONNS 1024
#define DEFAULT_PER_IP    64
#define DEFAULT_TIMEOUT_S 10
#define DEFAULT_THREADS   4
#define DEFAULT_RELOAD_S  10
#define HEALTH_MAX_CONNS  64
#define HEALTH_PER_IP     16
#define HEALTH_TIMEOUT_S  5
#define STOP_GRACE_MS     10000.0
#define JSON_CHARGE_CHUNK ((size_t)64 << 10)
#define MALLOC_OVERHEAD   16 /* glibc's per-block header, counted with every JSON block */
#define TOKEN_BUF         1024

/* Per-request state from the first on_request call to on_completed. */
typedef struct req_ctx {
    tm_httpd *srv;
    char *body;
    size_t len, cap;
    size_t max_body;
    size_t charged; /* bytes of the budget this request holds (body buffer and JSON) */
    int reject;     /* non-zero: the status to answer once the body is drained (413, 503) */
    tm_httpd_handler fn;
    void *ud;
    const char *auth_by;
    struct timespec start;
} req_ctx;

/* ---- memory budget ---- */

static bool budget_charge(tm_httpd *srv, req_ctx *ctx, size_t n) {
    size_t cur = atomic_load(&srv->used);
    do {
        if (n > srv->budget || cur > srv->budget - n)
            return false;
    } while (!atomic_compare_exchange_weak(&srv->used, &cur, cur + n));
    ctx->charged += n;
    return true;
}

static void budget_release(tm_httpd *srv, req_ctx *ctx) {
    if (ctx->charged)
        atomic_fetch_sub(&srv->used, ctx->charged);
    ctx->charged = 0;
}

size_t tm_httpd_budget_used(const tm_httpd *srv) {
    return srv ? atomic_load(&((tm_httpd *)srv)->used) : 0;
}

/* JSON parsing is charged through jansson's allocator: jansson has one process-wide allocator
 * hook, so it is installed once, and it counts only on a thread that is parsing a request body
 * (tl_meter set by tm_httpd_req_json), passing straight to malloc everywhere else. A 5 MB body
 * can take 11x (objects) to 46x (arrays of empty arrays) its size once parsed, which is why
 * bounding body sizes alone does not bound memory. */
typedef struct json_meter {
    req_ctx *ctx;
    size_t avail; /* charged but not yet used by this parse */
    bool exhausted;
} json_meter;

static _Thread_local json_meter *tl_meter;

static void *metered_malloc(size_t n) {
    json_meter *m = tl_meter;
    if (m) {
        size_t need = n + MALLOC_OVERHEAD;
        if (need > m->avail) {
            size_t chunk = need > JSON_CHARGE_CHUNK ? need : JSON_CHARGE_CHUNK;
            if (!budget_charge(m->ctx->srv, m->ctx, chunk)) {
                m->exhausted = true;
                return NULL;
            }
            m->avail += chunk;
        }
        m->avail -= need;
    }
    return malloc(n);
}

static void install_json_meter(void) {
    json_set_alloc_funcs(metered_malloc, free);
}

/* ---- routing ---- */

static bool method_matches(const route *rt, const char *method) {
    if (!rt->method)
        return true;
    return strcmp(rt->method, method) == 0 ||
           (strcmp(method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0);
}

static bool path_matches(const route *rt, const char *path) {
    if (rt->prefix)
        return strncmp(path, rt->pattern, rt->plen) == 0;
    return strcmp(path, rt->pattern) == 0;
}

/* Match strength: exact beats any prefix, a longer prefix beats a shorter one. */
static size_t strength(const route *rt) {
    return rt->prefix ? rt->plen : SIZE_MAX;
}

/* Finds the handler for method and path (only built-in routes when builtin_only). On no
 * match, fills allow (comma-separated methods of routes matching the path; empty for an
 * unknown path). Called with routes_mu held. */
static const route *find_route(const tm_httpd *srv, const char *method, const char *path,
                               bool builtin_only, char *allow, size_t allow_size) {
    const route *best = NULL;
    allow[0] = '\0';
    for (size_t i = 0; i < srv->nroutes; i++) {
        const route *rt = &srv->routes[i];
        if ((builtin_only && !rt->builtin) || !path_matches(rt, path))
            continue;
        if (method_matches(rt, method)) {
            if (!best || strength(rt) > strength(best))
                best = rt;
            continue;
        }
        size_t used = strlen(allow);
        if (!strstr(allow, rt->method))
            snprintf(allow + used, allow_size - used, "%s%s", used ? ", " : "", rt->method);
        if (strcmp(rt->method, "GET") == 0 && !strstr(allow, "HEAD")) {
            used = strlen(allow);
            snprintf(allow + used, allow_size - used, ", HEAD");
        }
    }
    return best;
}

static int route_add(tm_httpd *srv, const char *method, const char *pattern, tm_httpd_handler fn,
                     void *ud, const tm_httpd_route_opts *ro, bool builtin, tm_err *err) {
    if (!pattern || pattern[0] != '/')
        return tm_err_set(err, "http route \"%s\": path must start with '/'",
                          pattern ? pattern : "(null)");
    if (!fn)
        return tm_err_set(err, "http route %s: no handler", pattern);
    size_t len = strlen(pattern);
    bool prefix = pattern[len - 1] == '*';
    if (memchr(pattern, '*', len - (prefix ? 1 : 0)))
        return tm_err_set(err, "http route \"%s\": '*' is only allowed at the end", pattern);
    bool any = !method || strcmp(method, "*") == 0;
    pthread_rwlock_wrlock(&srv->routes_mu);
    for (size_t i = 0; i < srv->nroutes; i++) {
        route *rt = &srv->routes[i];
        bool same_method = any ? !rt->method : rt->method && strcmp(rt->method, method) == 0;
        if (same_method && strcmp(rt->pattern, pattern) == 0) {
            rt->fn = fn;
            rt->ud = ud;
            rt->ro = ro ? *ro : (tm_httpd_route_opts){0};
            rt->builtin = builtin;
            pthread_rwlock_unlock(&srv->routes_mu);
            return 0;
        }
    }
    if (srv->nroutes == srv->cap) {
        size_t cap = srv->cap ? srv->cap * 2 : 8;
        route *grown = realloc(srv->routes, cap * sizeof *grown);
        if (!grown) {
            pthread_rwlock_unlock(&srv->routes_mu);
            return tm_err_set(err, "http route %s: out of memory", pattern);
        }
        srv->routes = grown;
        srv->cap = cap;
    }
    route rt = {.method = any ? NULL : strdup(method),
                .pattern = strdup(pattern),
                .plen = len - (prefix ? 1 : 0),
                .prefix = prefix,
                .builtin = builtin,
                .ro = ro ? *ro : (tm_httpd_route_opts){0},
                .fn = fn,
                .ud = ud};
    if (!rt.pattern || (!any && !rt.method)) {
        pthread_rwlock_unlock(&srv->routes_mu);
        free(rt.method);
        free(rt.pattern);
        return tm_err_set(err, "http route %s: out of memory", pattern);
    }
    srv->routes[srv->nroutes++] = rt;
    pthread_rwlock_unlock(&srv->routes_mu);
    return 0;
}

int tm_httpd_route_ex(tm_httpd *srv, const char *method, const char *pattern, tm_httpd_handler fn,
                      void *ud, const tm_httpd_route_opts *ro, tm_err *err) {
    return route_add(srv, method, pattern, fn, ud, ro, false, err);
}

int tm_httpd_route(tm_httpd *srv, const char *method, const char *pattern, tm_httpd_handler fn,
                   void *ud, tm_err *err) {
    return route_add(srv, method, pattern, fn, ud, NULL, false, err);
}

/* ---- built-in endpoints ---- */

static void on_healthz(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    tm_httpd_text(resp, 200, "ok\n");
}

static void on_readyz(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    tm_httpd *srv = ud;
    char reason[512] = "";
    pthread_rwlock_rdlock(&srv->routes_mu); /* enable_health may swap the callback */
    tm_httpd_ready_fn ready = srv->ready;
    void *ready_ud = srv->ready_ud;
    pthread_rwlock_unlock(&srv->routes_mu);
    if (!ready || ready(ready_ud, reason, sizeof reason)) {
        tm_httpd_text(resp, 200, "ok\n");
        return;
    }
    reason[sizeof reason - 1] = '\0';
    char text[sizeof reason + 16];
    snprintf(text, sizeof text, "not ready: %s\n", reason[0] ? reason : "(no reason given)");
    tm_httpd_text(resp, 503, text);
}

static void on_metrics(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    tm_httpd *srv = ud;
    pthread_rwlock_rdlock(&srv->routes_mu);
    tm_metrics *reg = srv->metrics;
    pthread_rwlock_unlock(&srv->routes_mu);
    char *text = tm_metrics_render(reg);
    if (!text) {
        tm_httpd_error(resp, 500, "rendering metrics failed: out of memory");
        return;
    }
    tm_httpd_resp_reset_body(resp);
    resp->status = 200;
    resp->content_type = strdup(TM_METRICS_CONTENT_TYPE);
    resp->body = text;
    resp->len = strlen(text);
}

int tm_httpd_enable_health(tm_httpd *srv, tm_httpd_ready_fn ready, void *ud, tm_err *err) {
    pthread_rwlock_wrlock(&srv->routes_mu);
    srv->ready = ready;
    srv->ready_ud = ud;
    pthread_rwlock_unlock(&srv->routes_mu);
    tm_httpd_route_opts open = {.open = true};
    if (route_add(srv, "GET", "/healthz", on_healthz, srv, &open, true, err) < 0 ||
        route_add(srv, "GET", "/readyz", on_readyz, srv, &open, true, err) < 0)
        return -1;
    return 0;
}

int tm_httpd_enable_metrics(tm_httpd *srv, tm_metrics *reg, tm_err *err) {
    if (!reg)
        return tm_err_set(err, "http /metrics: no metrics registry given");
    pthread_rwlock_wrlock(&srv->routes_mu);
    srv->metrics = reg;
    pthread_rwlock_unlock(&srv->routes_mu);
    /* Open: aggregate counters Prometheus scrapes without credentials (see httpd.h). */
    tm_httpd_route_opts open = {.open = true};
    return route_add(srv, "GET", "/metrics", on_metrics, srv, &open, true, err);
}

/* ---- request accessors ---- */

const char *tm_httpd_query(const tm_httpd_req *req, const char *key) {
    return MHD_lookup_connection_value(req->conn_, MHD_GET_ARGUMENT_KIND, key);
}

const char *tm_httpd_header(const tm_httpd_req *req, const char *name) {
    return MHD_lookup_connection_value(req->conn_, MHD_HEADER_KIND, name);
}

json_t *tm_httpd_req_json(const tm_httpd_req *req, tm_httpd_resp *resp) {
    if (req->body_len == 0) {
        tm_httpd_error(resp, 400, "invalid JSON body: the request has no body");
        return NULL;
    }
    json_error_t jerr;
    json_meter m = {.ctx = req->ctx_};
    tl_meter = req->ctx_ ? &m : NULL;
    json_t *j = json_loadb(req->body, req->body_len, 0, &jerr);
    tl_meter = NULL;
    if (!j && m.exhausted)
        tm_httpd_error(resp, 503, "server busy: the memory for request bodies is in use, retry");
    else if (!j)
        tm_httpd_error(resp, 400, "invalid JSON body: %s at line %d column %d", jerr.text,
                       jerr.line, jerr.column);
    return j;
}

/* ---- libmicrohttpd callbacks ---- */

double tm_httpd_elapsed_ms(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) * 1e3 +
           (double)(now.tv_nsec - start->tv_nsec) / 1e6;
}

static void remote_addr(struct MHD_Connection *conn, char *buf, size_t size) {
    buf[0] = '\0';
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
                  (socklen_t)size);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf,
                  (socklen_t)size);
}

/* True when the connection's TLS client presented a certificate that verifies against the
 * client CA (libmicrohttpd asks for one but leaves the verdict to us). */
static bool client_cert_ok(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session)
        return false;
    gnutls_session_t session = (gnutls_session_t)ci->tls_session;
    unsigned int n = 0;
    if (!gnutls_certificate_get_peers(session, &n) || n == 0)
        return false;
    unsigned int status = 0;
    return gnutls_certificate_verify_peers2(session, &status) == 0 && status == 0;
}

/* Authenticates a request to a protected route; NULL when it is not. */
static const char *authenticate(tm_httpd *srv, struct MHD_Connection *conn, const route *rt) {
    if (srv->client_ca && client_cert_ok(conn))
        return "client-cert";
    if (!srv->auth)
        return NULL;
    char buf[TOKEN_BUF];
    size_t len = 0;
    const char *tok = tm_auth_from_header(
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), buf,
        sizeof buf, &len);
    if (!tok && rt->ro.token_in_query) {
        tok = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
        len = tok ? strlen(tok) : 0;
    }
    bool ok = tok && tm_auth_check(srv->auth, tok, len);
    memset(buf, 0, sizeof buf);
    return ok ? "token" : NULL;
}

/* Answers resp at once (before the body is read: libmicrohttpd closes the connection after). */
static enum MHD_Result finish(tm_httpd *srv, struct MHD_Connection *conn, const char *method,
                              const char *url, req_ctx *ctx, tm_httpd_resp *resp) {
    if (resp->status < 100 || resp->status > 599) {
        tm_warn("http handler returned an invalid status server=%s path=%s status=%d", srv->name,
                url, resp->status);
        tm_httpd_error(resp, 500, "handler returned invalid HTTP status %d", resp->status);
    }
    tm_debug("http request server=%s method=%s path=%s status=%d body_bytes=%zu auth=%s ms=%.3f",
             srv->name, method, url, resp->status, ctx->len, ctx->auth_by ? ctx->auth_by : "-",
             tm_httpd_elapsed_ms(&ctx->start));
    return tm_httpd_send_resp(conn, resp);
}

/* The headers are in: route, authenticate, check the announced body. Answers at once when the
 * request cannot succeed, so a refused body is never read into memory. */
static enum MHD_Result on_headers(const listener *l, struct MHD_Connection *conn,
                                  const char *method, const char *url, req_ctx *ctx) {
    tm_httpd *srv = l->srv;
    tm_httpd_resp resp = {.status = 200};
    char allow[256];
    pthread_rwlock_rdlock(&srv->routes_mu);
    const route *found = find_route(srv, method, url, l->health_only, allow, sizeof allow);
    route rt = found ? *found : (route){0};
    pthread_rwlock_unlock(&srv->routes_mu);
    if (!found) {
        if (allow[0]) {
            tm_httpd_error(&resp, 405, "method %s not allowed for %s; allowed: %s", method, url,
                           allow);
            tm_httpd_header_set(&resp, MHD_HTTP_HEADER_ALLOW, allow);
        } else {
            tm_httpd_error(&resp, 404, "no such endpoint: %s %s", method, url);
        }
        return finish(srv, conn, method, url, ctx, &resp);
    }
    ctx->fn = rt.fn;
    ctx->ud = rt.ud;
    ctx->max_body = rt.ro.max_body ? rt.ro.max_body : srv->max_body;
    if (!rt.ro.open && (srv->auth || srv->client_ca)) {
        ctx->auth_by = authenticate(srv, conn, &rt);
        if (!ctx->auth_by) {
            tm_httpd_error(&resp, 401, "authentication required: %s",
                           srv->client_ca && srv->auth
                               ? "a client certificate of the configured CA or a bearer token"
                           : srv->client_ca ? "a client certificate of the configured CA"
                                            : "a bearer token");
            tm_httpd_header_set(&resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"tarema\"");
            return finish(srv, conn, method, url, ctx, &resp);
        }
    }
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long announced = cl ? strtoull(cl, NULL, 10) : 0;
    if (announced > ctx->max_body) {
        tm_httpd_error(&resp, 413, "request body larger than the limit of %zu bytes",
                       ctx->max_body);
        return finish(srv, conn, method, url, ctx, &resp);
    }
    if (announced) { /* one buffer of the announced size, charged before a byte is read */
        if (!budget_charge(srv, ctx, (size_t)announced + 1)) {
            tm_httpd_error(&resp, 503,
                           "server busy: the memory for request bodies is in use, "
                           "retry");
            tm_httpd_header_set(&resp, "Retry-After", "1");
            return finish(srv, conn, method, url, ctx, &resp);
        }
        ctx->body = malloc((size_t)announced + 1);
        if (!ctx->body)
            return MHD_NO;
        ctx->cap = (size_t)announced + 1;
    }
    return MHD_YES;
}

/* One chunk of body. Chunked bodies (no Content-Length) grow their buffer, charging the
 * budget for every growth; past the route's limit or the budget they are drained unstored and
 * answered 413 or 503 at the end. */
static void on_body_chunk(tm_httpd *srv, req_ctx *ctx, const char *data, size_t n) {
    if (ctx->reject)
        return;
    if (n > ctx->max_body - ctx->len) {
        ctx->reject = 413;
    } else if (ctx->len + n + 1 > ctx->cap) {
        size_t cap = ctx->cap ? ctx->cap * 2 : 4096;
        while (cap < ctx->len + n + 1)
            cap *= 2;
        if (cap > ctx->max_body + 1)
            cap = ctx->max_body + 1;
        char *grown = budget_charge(srv, ctx, cap - ctx->cap) ? realloc(ctx->body, cap) : NULL;
        if (!grown) {
            ctx->reject = 503;
        } else {
            ctx->body = grown;
            ctx->cap = cap;
        }
    }
    if (ctx->reject) {
        free(ctx->body);
        ctx->body = NULL;
        ctx->len = ctx->cap = 0;
        budget_release(srv, ctx);
        return;
    }
    memcpy(ctx->body + ctx->len, data, n);
    ctx->len += n;
    ctx->body[ctx->len] = '\0';
}

/* The whole request is in: run the handler (or answer the rejection) and queue the response. */
static enum MHD_Result dispatch(tm_httpd *srv, struct MHD_Connection *conn, const char *method,
                                const char *url, req_ctx *ctx) {
    tm_httpd_resp resp = {.status = 200};
    if (ctx->reject == 413) {
        tm_httpd_error(&resp, 413, "request body larger than the limit of %zu bytes",
                       ctx->max_body);
    } else if (ctx->reject) {
        tm_httpd_error(&resp, 503, "server busy: the memory for request bodies is in use, retry");
        tm_httpd_header_set(&resp, "Retry-After", "1");
    } else {
        char addr[INET6_ADDRSTRLEN];
        remote_addr(conn, addr, sizeof addr);
        tm_httpd_req req = {.method = method,
                            .path = url,
                            .body = ctx->body ? ctx->body : "",
                            .body_len = ctx->len,
                            .remote_addr = addr,
                            .auth_by = ctx->auth_by,
                            .conn_ = conn,
                            .ctx_ = ctx};
        ctx->fn(&req, &resp, ctx->ud);
    }
    return finish(srv, conn, method, url, ctx, &resp);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    const listener *l = cls;
    tm_httpd *srv = l->srv;
    req_ctx *ctx = *con_cls;
    if (!ctx) { /* headers are in; the body, if any, follows in later calls */
        ctx = calloc(1, sizeof *ctx);
        if (!ctx)
            return MHD_NO;
        ctx->srv = srv;
        clock_gettime(CLOCK_MONOTONIC, &ctx->start);
        *con_cls = ctx;
        atomic_fetch_add(&srv->inflight, 1);
        return on_headers(l, conn, method, url, ctx);
    }
    if (*upload_data_size) {
        on_body_chunk(srv, ctx, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    return dispatch(srv, conn, method, url, ctx);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    const listener *l = cls;
    tm_httpd *srv = l->srv;
    req_ctx *ctx = *con_cls;
    if (!ctx)
        return;
    free(ctx->body);
    budget_release(srv, ctx);
    free(ctx);
    *con_cls = NULL;
    atomic_fetch_sub(&srv->inflight, 1);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    tm_httpd *srv = cls;
    char msg[sizeof srv->start_err];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    if (atomic_load(&srv->starting))
        memcpy(srv->start_err, msg, n + 1);
    else
        tm_warn("http server message server=%s msg=\"%s\"", srv->name, msg);
}

/* ---- lifecycle ---- */

static bool is_loopback(const char *addr) {
    return strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0 ||
           strcmp(addr, "localhost") == 0;
}

/* Starts the main daemon: on sa:port, or on an already listening socket (fd, when TLS files
 * are reloaded: the new daemon takes over the old one's socket, so no connection attempt is
 * refused meanwhile). */
struct MHD_Daemon *tm_httpd_start_main(tm_httpd *srv, const struct sockaddr *sa, int port,
                                       MHD_socket fd) {
    /* poll(), not epoll (MHD_USE_AUTO picks epoll on Linux): libmicrohttpd 0.9.75's
     * MHD_quiesce_daemon (stop, TLS reload) removes the listening socket from each worker's
     * epoll set without a lock, while a worker at its connection limit takes it out and puts
     * it back itself; when both did, it aborted the process ("Failed to remove listen FD from
     * epoll set", lib_httpd_test under the sanitizers, 1 run). A handful of connections from
     * kube-scheduler and Prometheus gain nothing from epoll. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC | (srv->v6 ? MHD_USE_IPv6 : 0) | (srv->tls ? MHD_USE_TLS : 0);
    struct MHD_OptionItem extra[] = {
        {srv->tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, srv->cert_pem},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, srv->key_pem},
        {srv->ca_pem ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, srv->ca_pem},
        {MHD_OPTION_END, 0, NULL}};
    struct MHD_OptionItem where[] = {
        {fd != MHD_INVALID_SOCKET ? MHD_OPTION_LISTEN_SOCKET : MHD_OPTION_SOCK_ADDR,
         fd != MHD_INVALID_SOCKET ? (intptr_t)fd : 0, fd != MHD_INVALID_SOCKET ? NULL : (void *)sa},
        {MHD_OPTION_END, 0, NULL}};
    return MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, on_request, &srv->main_l, MHD_OPTION_ARRAY, where,
        MHD_OPTION_THREAD_POOL_SIZE, srv->threads, MHD_OPTION_CONNECTION_LIMIT, srv->max_conns,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, srv->per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
        srv->timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, &srv->main_l,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_ARRAY, extra, MHD_OPTION_END);
}

/* The bind address as a sockaddr; -1 with err when it is not an IP literal. */
static int parse_addr(const char *addr, int port, struct sockaddr_in *sin,
                      struct sockaddr_in6 *sin6, bool *v6, tm_err *err) {
    *sin = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    *sin6 = (struct sockaddr_in6){.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    *v6 = false;
    if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1)
        return 0;
    if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
        *v6 = true;
        return 0;
    }
    return tm_err_set(err,
                      "http listen address \"%s\" is not an IPv4 or IPv6 address "
                      "(e.g. 127.0.0.1, 0.0.0.0, ::1)",
                      addr);
}

static void free_srv(tm_httpd *srv) {
    for (int i = 0; i < 3; i++)
        free(srv->tls_path[i]);
    pthread_mutex_destroy(&srv->watch_mu);
    pthread_cond_destroy(&srv->watch_cv);
    free(srv->cert_pem);
    free(srv->key_pem);
    free(srv->ca_pem);
    for (size_t i = 0; i < srv->nroutes; i++) {
        free(srv->routes[i].method);
        free(srv->routes[i].pattern);
    }
    free(srv->routes);
    pthread_rwlock_destroy(&srv->routes_mu);
    free(srv);
}

/* The health listener: plain HTTP, one thread, few slots, short timeout. */
static int start_health(tm_httpd *srv, const tm_httpd_opts *o, bool v6, tm_err *err) {
    int port = o->health_port < 0 ? 0 : o->health_port;
    struct sockaddr_in sin;
    struct sockaddr_in6 sin6;
    if (parse_addr(srv->bind_addr, port, &sin, &sin6, &v6, err))
        return -1;
    const struct sockaddr *sa = v6 ? (const struct sockaddr *)&sin6 : (const struct sockaddr *)&sin;
    srv->start_err[0] = '\0';
    srv->health = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC |
            (v6 ? MHD_USE_IPv6 : 0), /* poll: tm_httpd_start_main says why */
        (uint16_t)port, NULL, NULL, on_request, &srv->health_l, MHD_OPTION_SOCK_ADDR, sa,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)HEALTH_MAX_CONNS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)HEALTH_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HEALTH_TIMEOUT_S,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, &srv->health_l, MHD_OPTION_EXTERNAL_LOGGER,
        on_mhd_log, srv, MHD_OPTION_END);
    if (!srv->health)
        return tm_err_set(err, "http health listener %s:%d: %s", srv->bind_addr, port,
                          srv->start_err[0] ? srv->start_err : "libmicrohttpd could not start");
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->health, MHD_DAEMON_INFO_BIND_PORT);
    srv->health_port = di ? di->port : port;
    return 0;
}

tm_httpd *tm_httpd_start(const tm_httpd_opts *opts, tm_err *err) {
    static pthread_once_t meter_once = PTHREAD_ONCE_INIT;
    pthread_once(&meter_once, install_json_meter);
    tm_httpd_opts o = opts ? *opts : (tm_httpd_opts){0};
    const char *addr = o.bind_addr ? o.bind_addr : "127.0.0.1";
    const char *name = o.name ? o.name : "httpd";
    if (o.port < 0 || o.port > 65535)
        return tm_err_set(err, "http listen %s:%d: port must be 0..65535", addr, o.port), NULL;
    if (o.health_port < -1 || o.health_port > 65535)
        return tm_err_set(err, "http health port %d: must be 1..65535, 0 (none) or -1 (any)",
                          o.health_port),
               NULL;
    struct sockaddr_in sin;
    struct sockaddr_in6 sin6;
    bool v6;
    if (parse_addr(addr, o.port, &sin, &sin6, &v6, err))
        return NULL;
    bool loopback = is_loopback(addr);
    bool has_auth = o.auth || o.client_ca_file;
    if (!loopback && !has_auth && !o.insecure_no_auth)
        return tm_err_set(err,
                          "refusing to serve %s on %s without authentication: anyone who reaches "
                          "the port could use its state-changing routes; give an auth token file "
                          "and/or a client CA (mTLS), bind to 127.0.0.1, or accept the risk "
                          "explicitly with --insecure-no-auth",
                          name, addr),
               NULL;
    tm_httpd *srv = calloc(1, sizeof *srv);
    if (!srv)
        return tm_err_set(err, "http server: out of memory"), NULL;
    snprintf(srv->name, sizeof srv->name, "%s", name);
    snprintf(srv->bind_addr, sizeof srv->bind_addr, "%s", addr);
    srv->max_body = o.max_body ? o.max_body : DEFAULT_MAX_BODY;
    srv->budget = o.memory_budget ? o.memory_budget : DEFAULT_BUDGET;
    srv->auth = o.auth;
    srv->main_l = (listener){.srv = srv, .health_only = false};
    srv->health_l = (listener){.srv = srv, .health_only = true};
    atomic_init(&srv->used, 0);
    pthread_rwlock_init(&srv->routes_mu, NULL);
    pthread_mutex_init(&srv->watch_mu, NULL);
    pthread_cond_init(&srv->watch_cv, NULL);
    atomic_init(&srv->starting, true);
    if (tm_httpd_load_tls(srv, &o, err)) {
        free_srv(srv);
        return NULL;
    }

    srv->v6 = v6;
    srv->threads = o.threads ? o.threads : DEFAULT_THREADS;
    srv->max_conns = o.max_conns ? o.max_conns : DEFAULT_MAX_CONNS;
    srv->per_ip = o.per_ip_conns ? o.per_ip_conns : DEFAULT_PER_IP;
    srv->timeout_s = o.timeout_s ? o.timeout_s : DEFAULT_TIMEOUT_S;
    srv->reload_s = o.tls_reload_s ? o.tls_reload_s : DEFAULT_RELOAD_S;
    const struct sockaddr *sa = v6 ? (const struct sockaddr *)&sin6 : (const struct sockaddr *)&sin;
    srv->daemon = tm_httpd_start_main(srv, sa, o.port, MHD_INVALID_SOCKET);
    if (!srv->daemon) {
        tm_err_set(err, "http listen %s%s%s:%d%s: %s", v6 ? "[" : "", addr, v6 ? "]" : "", o.port,
                   srv->tls ? " (TLS)" : "",
                   srv->start_err[0] ? srv->start_err : "libmicrohttpd could not start");
        free_srv(srv);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : o.port;
    if (o.health_port && start_health(srv, &o, v6, err)) {
        MHD_stop_daemon(srv->daemon);
        free_srv(srv);
        return NULL;
    }
    atomic_store(&srv->starting, false);
    if (srv->tls && pthread_create(&srv->watcher, NULL, tm_httpd_tls_watch_main, srv) == 0)
        srv->watching = true;
    if (!loopback && !has_auth)
        tm_warn("INSECURE: http server %s on %s:%d has NO AUTHENTICATION (--insecure-no-auth): "
                "anyone who reaches this port can use every route",
                srv->name, addr, srv->port);
    else if (!loopback && !srv->tls)
        tm_warn("http server %s on %s:%d checks tokens over plain HTTP: they travel in clear; "
                "configure a TLS certificate",
                srv->name, addr, srv->port);
    tm_info("http server listening server=%s addr=%s port=%d tls=%s auth=%s%s health_port=%d",
            srv->name, addr, srv->port, srv->tls ? "on" : "off", o.auth ? "token" : "",
            srv->client_ca ? (o.auth ? "+client-cert" : "client-cert") : (o.auth ? "" : "none"),
            srv->health_port);
    return srv;
}

int tm_httpd_port(const tm_httpd *srv) {
    return srv ? srv->port : 0;
}

int tm_httpd_health_port(const tm_httpd *srv) {
    return srv ? srv->health_port : 0;
}

bool tm_httpd_is_tls(const tm_httpd *srv) {
    return srv && srv->tls;
}

bool tm_httpd_has_auth(const tm_httpd *srv) {
    return srv && (srv->auth || srv->client_ca);
}

void tm_httpd_stop(tm_httpd *srv) {
    if (!srv || !srv->daemon)
        return;
    if (srv->watching) { /* no reload may swap the daemon from here on */
        pthread_mutex_lock(&srv->watch_mu);
        srv->watch_stop = true;
        pthread_cond_signal(&srv->watch_cv);
        pthread_mutex_unlock(&srv->watch_mu);
        pthread_join(srv->watcher, NULL);
        srv->watching = false;
    }
    /* Stop accepting, then let requests in progress finish sending their responses before
     * MHD_stop_daemon closes every connection; idle keep-alive connections hold no request. */
    MHD_socket lfd = MHD_quiesce_daemon(srv->daemon);
    MHD_socket hfd = srv->health ? MHD_quiesce_daemon(srv->health) : MHD_INVALID_SOCKET;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&srv->inflight) > 0 && tm_httpd_elapsed_ms(&t0) < STOP_GRACE_MS) {
        struct timespec tick = {.tv_nsec = 5 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    if (atomic_load(&srv->inflight) > 0)
        tm_warn("http server stopping with requests still in progress server=%s requests=%d",
                srv->name, atomic_load(&srv->inflight));
    MHD_stop_daemon(srv->daemon); /* joins the worker threads */
    if (srv->health)
        MHD_stop_daemon(srv->health);
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd); /* a quiesced daemon leaves its listening socket to us */
    if (hfd != MHD_INVALID_SOCKET)
        close(hfd);
    srv->daemon = NULL;
    srv->health = NULL;
    tm_info("http server stopped server=%s port=%d", srv->name, srv->port);
}

void tm_httpd_free(tm_httpd *srv) {
    if (!srv)
        return;
    tm_httpd_stop(srv);
    free_srv(srv);
}
