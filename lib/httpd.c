/* httpd.c: the HTTP server behind httpd.h, on libmicrohttpd in thread-per-connection mode.
 *
 * libmicrohttpd calls on_request several times per request: once when the headers are in (we
 * attach a req_ctx and may refuse an announced oversized body right away), once per chunk of
 * body (appended to the buffer), and once at the end, when the route's handler runs and its
 * response is queued. on_completed frees the req_ctx whatever happened in between. */
#include "httpd.h"

#include <arpa/inet.h>
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

#include "log.h"

#define DEFAULT_MAX_BODY  ((size_t)8 << 20)
#define DEFAULT_MAX_CONNS 256
#define DEFAULT_TIMEOUT_S 30
#define STOP_GRACE_MS     10000.0

typedef struct route {
    char *method; /* NULL: any method */
    char *pattern;
    size_t plen; /* pattern length without the trailing '*' */
    bool prefix;
    tm_httpd_handler fn;
    void *ud;
} route;

struct tm_httpd {
    struct MHD_Daemon *daemon;
    char name[32];
    char bind_addr[INET6_ADDRSTRLEN];
    int port;
    size_t max_body;
    pthread_rwlock_t routes_mu; /* guards routes, nroutes, cap */
    route *routes;
    size_t nroutes, cap;
    tm_httpd_ready_fn ready;
    void *ready_ud;
    tm_metrics *metrics;
    atomic_int inflight;  /* requests between their headers and their completed response */
    atomic_bool starting; /* MHD errors go into start_err instead of the log */
    char start_err[256];
};

typedef struct hdr {
    char *name, *value;
    struct hdr *next;
} hdr;

struct tm_httpd_resp {
    int status;
    char *content_type;
    char *body; /* malloc'd; handed to libmicrohttpd, which frees it */
    size_t len;
    hdr *headers;
};

/* Per-request state from the first on_request call to on_completed. */
typedef struct req_ctx {
    char *body;
    size_t len, cap;
    bool too_large;
    struct timespec start;
} req_ctx;

/* ---- responses ---- */

static void resp_reset_body(tm_httpd_resp *resp) {
    free(resp->body);
    free(resp->content_type);
    resp->body = NULL;
    resp->content_type = NULL;
    resp->len = 0;
}

void tm_httpd_body(tm_httpd_resp *resp, int status, const char *content_type, const char *data,
                   size_t len) {
    resp_reset_body(resp);
    resp->status = status;
    resp->content_type = content_type ? strdup(content_type) : NULL;
    if (len) {
        resp->body = malloc(len);
        if (!resp->body) { /* nothing better to send than an empty 500 */
            resp->status = 500;
            return;
        }
        memcpy(resp->body, data, len);
        resp->len = len;
    }
}

void tm_httpd_text(tm_httpd_resp *resp, int status, const char *text) {
    tm_httpd_body(resp, status, "text/plain; charset=utf-8", text ? text : "",
                  text ? strlen(text) : 0);
}

void tm_httpd_json(tm_httpd_resp *resp, int status, json_t *body) {
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(body);
    if (!text) {
        tm_httpd_error(resp, 500, "handler produced no JSON response");
        return;
    }
    resp_reset_body(resp);
    resp->status = status;
    resp->content_type = strdup("application/json");
    resp->body = text;
    resp->len = strlen(text);
}

static void set_error_v(tm_httpd_resp *resp, int status, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    json_t *j = json_pack("{s:s}", "error", msg);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text) { /* msg was not valid UTF-8, or no memory: keep the status, plain message */
        tm_httpd_text(resp, status, "request failed");
        return;
    }
    resp_reset_body(resp);
    resp->status = status;
    resp->content_type = strdup("application/json");
    resp->body = text;
    resp->len = strlen(text);
}

void tm_httpd_error(tm_httpd_resp *resp, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(resp, status, fmt, ap);
    va_end(ap);
}

void tm_httpd_header_set(tm_httpd_resp *resp, const char *name, const char *value) {
    hdr *h = calloc(1, sizeof *h);
    if (!h)
        return;
    h->name = strdup(name);
    h->value = strdup(value);
    if (!h->name || !h->value) {
        free(h->name);
        free(h->value);
        free(h);
        return;
    }
    h->next = resp->headers;
    resp->headers = h;
}

static void resp_clear(tm_httpd_resp *resp) {
    resp_reset_body(resp);
    while (resp->headers) {
        hdr *h = resp->headers;
        resp->headers = h->next;
        free(h->name);
        free(h->value);
        free(h);
    }
}

/* Queues resp on conn; the body moves to libmicrohttpd. */
static enum MHD_Result send_resp(struct MHD_Connection *conn, tm_httpd_resp *resp) {
    struct MHD_Response *r;
    if (resp->len) {
        r = MHD_create_response_from_buffer(resp->len, resp->body, MHD_RESPMEM_MUST_FREE);
        if (r)
            resp->body = NULL;
    } else {
        r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    }
    if (!r) {
        resp_clear(resp);
        return MHD_NO; /* libmicrohttpd closes the connection */
    }
    if (resp->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
    for (hdr *h = resp->headers; h; h = h->next)
        MHD_add_response_header(r, h->name, h->value);
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    resp_clear(resp);
    return ok;
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

/* Finds the handler for method and path. On no match, fills allow (comma-separated methods
 * of routes matching the path; empty for an unknown path). Called with routes_mu held. */
static const route *find_route(const tm_httpd *srv, const char *method, const char *path,
                               char *allow, size_t allow_size) {
    const route *best = NULL;
    allow[0] = '\0';
    for (size_t i = 0; i < srv->nroutes; i++) {
        const route *rt = &srv->routes[i];
        if (!path_matches(rt, path))
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

int tm_httpd_route(tm_httpd *srv, const char *method, const char *pattern, tm_httpd_handler fn,
                   void *ud, tm_err *err) {
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
    resp_reset_body(resp);
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
    if (tm_httpd_route(srv, "GET", "/healthz", on_healthz, srv, err) < 0 ||
        tm_httpd_route(srv, "GET", "/readyz", on_readyz, srv, err) < 0)
        return -1;
    return 0;
}

int tm_httpd_enable_metrics(tm_httpd *srv, tm_metrics *reg, tm_err *err) {
    if (!reg)
        return tm_err_set(err, "http /metrics: no metrics registry given");
    pthread_rwlock_wrlock(&srv->routes_mu);
    srv->metrics = reg;
    pthread_rwlock_unlock(&srv->routes_mu);
    return tm_httpd_route(srv, "GET", "/metrics", on_metrics, srv, err);
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
    json_t *j = json_loadb(req->body, req->body_len, 0, &jerr);
    if (!j)
        tm_httpd_error(resp, 400, "invalid JSON body: %s at line %d column %d", jerr.text,
                       jerr.line, jerr.column);
    return j;
}

/* ---- libmicrohttpd callbacks ---- */

static double elapsed_ms(const struct timespec *start) {
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

/* Runs the handler for a complete request and queues its response. */
static enum MHD_Result dispatch(tm_httpd *srv, struct MHD_Connection *conn, const char *method,
                                const char *url, req_ctx *ctx) {
    tm_httpd_resp resp = {.status = 200};
    char allow[256];
    pthread_rwlock_rdlock(&srv->routes_mu);
    const route *rt = find_route(srv, method, url, allow, sizeof allow);
    tm_httpd_handler fn = rt ? rt->fn : NULL;
    void *ud = rt ? rt->ud : NULL;
    pthread_rwlock_unlock(&srv->routes_mu);

    if (ctx->too_large) {
        tm_httpd_error(&resp, 413, "request body larger than the limit of %zu bytes",
                       srv->max_body);
    } else if (fn) {
        char addr[INET6_ADDRSTRLEN];
        remote_addr(conn, addr, sizeof addr);
        tm_httpd_req req = {.method = method,
                            .path = url,
                            .body = ctx->body ? ctx->body : "",
                            .body_len = ctx->len,
                            .remote_addr = addr,
                            .conn_ = conn};
        fn(&req, &resp, ud);
    } else if (allow[0]) {
        tm_httpd_error(&resp, 405, "method %s not allowed for %s; allowed: %s", method, url, allow);
        tm_httpd_header_set(&resp, MHD_HTTP_HEADER_ALLOW, allow);
    } else {
        tm_httpd_error(&resp, 404, "no such endpoint: %s %s", method, url);
    }
    if (resp.status < 100 || resp.status > 599) {
        tm_warn("http handler returned an invalid status server=%s path=%s status=%d", srv->name,
                url, resp.status);
        tm_httpd_error(&resp, 500, "handler returned invalid HTTP status %d", resp.status);
    }
    tm_debug("http request server=%s method=%s path=%s status=%d body_bytes=%zu ms=%.3f", srv->name,
             method, url, resp.status, ctx->len, elapsed_ms(&ctx->start));
    return send_resp(conn, &resp);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    tm_httpd *srv = cls;
    req_ctx *ctx = *con_cls;
    if (!ctx) { /* headers are in; the body, if any, follows in later calls */
        ctx = calloc(1, sizeof *ctx);
        if (!ctx)
            return MHD_NO;
        clock_gettime(CLOCK_MONOTONIC, &ctx->start);
        *con_cls = ctx;
        atomic_fetch_add(&srv->inflight, 1);
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > srv->max_body) {
            /* Refuse before reading: libmicrohttpd then closes the connection. */
            ctx->too_large = true;
            return dispatch(srv, conn, method, url, ctx);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (ctx->too_large || n > srv->max_body - ctx->len) {
            ctx->too_large = true; /* keep draining so the 413 can be sent at the end */
            free(ctx->body);
            ctx->body = NULL;
            ctx->len = ctx->cap = 0;
            return MHD_YES;
        }
        if (ctx->len + n + 1 > ctx->cap) {
            size_t cap = ctx->cap ? ctx->cap : 4096;
            while (cap < ctx->len + n + 1)
                cap *= 2;
            char *grown = realloc(ctx->body, cap);
            if (!grown)
                return MHD_NO;
            ctx->body = grown;
            ctx->cap = cap;
        }
        memcpy(ctx->body + ctx->len, upload_data, n);
        ctx->len += n;
        ctx->body[ctx->len] = '\0';
        return MHD_YES;
    }
    return dispatch(srv, conn, method, url, ctx);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    tm_httpd *srv = cls;
    req_ctx *ctx = *con_cls;
    if (!ctx)
        return;
    free(ctx->body);
    free(ctx);
    *con_cls = NULL;
    atomic_fetch_sub(&srv->inflight, 1);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    tm_httpd *srv = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    if (atomic_load(&srv->starting))
        snprintf(srv->start_err, sizeof srv->start_err, "%s", msg);
    else
        tm_warn("http server message server=%s msg=\"%s\"", srv->name, msg);
}

/* ---- lifecycle ---- */

tm_httpd *tm_httpd_start(const tm_httpd_opts *opts, tm_err *err) {
    tm_httpd_opts o = opts ? *opts : (tm_httpd_opts){0};
    const char *addr = o.bind_addr ? o.bind_addr : "127.0.0.1";
    if (o.port < 0 || o.port > 65535)
        return tm_err_set(err, "http listen %s:%d: port must be 0..65535", addr, o.port), NULL;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o.port)};
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)o.port)};
    bool v6 = false;
    if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
        if (inet_pton(AF_INET6, addr, &sin6.sin6_addr) != 1)
            return tm_err_set(err,
                              "http listen address \"%s\" is not an IPv4 or IPv6 address "
                              "(e.g. 127.0.0.1, 0.0.0.0, ::1)",
                              addr),
                   NULL;
        v6 = true;
    }
    tm_httpd *srv = calloc(1, sizeof *srv);
    if (!srv)
        return tm_err_set(err, "http server: out of memory"), NULL;
    snprintf(srv->name, sizeof srv->name, "%s", o.name ? o.name : "httpd");
    snprintf(srv->bind_addr, sizeof srv->bind_addr, "%s", addr);
    srv->max_body = o.max_body ? o.max_body : DEFAULT_MAX_BODY;
    pthread_rwlock_init(&srv->routes_mu, NULL);
    atomic_init(&srv->starting, true);

    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_AUTO | MHD_USE_ERROR_LOG | MHD_USE_ITC | (v6 ? MHD_USE_IPv6 : 0);
    const struct sockaddr *sa = v6 ? (const struct sockaddr *)&sin6 : (const struct sockaddr *)&sin;
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)o.port, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, sa,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)(o.max_conns ? o.max_conns : DEFAULT_MAX_CONNS),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(o.timeout_s ? o.timeout_s : DEFAULT_TIMEOUT_S),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
        MHD_OPTION_END);
    if (!srv->daemon) {
        tm_err_set(err, "http listen %s%s%s:%d: %s", v6 ? "[" : "", addr, v6 ? "]" : "", o.port,
                   srv->start_err[0] ? srv->start_err : "libmicrohttpd could not start");
        pthread_rwlock_destroy(&srv->routes_mu);
        free(srv);
        return NULL;
    }
    atomic_store(&srv->starting, false);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : o.port;
    tm_info("http server listening server=%s addr=%s port=%d", srv->name, addr, srv->port);
    return srv;
}

int tm_httpd_port(const tm_httpd *srv) {
    return srv ? srv->port : 0;
}

void tm_httpd_stop(tm_httpd *srv) {
    if (!srv || !srv->daemon)
        return;
    /* Stop accepting, then let requests in progress finish sending their responses before
     * MHD_stop_daemon closes every connection; idle keep-alive connections hold no request. */
    MHD_socket lfd = MHD_quiesce_daemon(srv->daemon);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&srv->inflight) > 0 && elapsed_ms(&t0) < STOP_GRACE_MS) {
        struct timespec tick = {.tv_nsec = 5 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    if (atomic_load(&srv->inflight) > 0)
        tm_warn("http server stopping with requests still in progress server=%s requests=%d",
                srv->name, atomic_load(&srv->inflight));
    MHD_stop_daemon(srv->daemon); /* joins every connection thread */
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd); /* a quiesced daemon leaves its listening socket to us */
    srv->daemon = NULL;
    tm_info("http server stopped server=%s port=%d", srv->name, srv->port);
}

void tm_httpd_free(tm_httpd *srv) {
    if (!srv)
        return;
    tm_httpd_stop(srv);
    for (size_t i = 0; i < srv->nroutes; i++) {
        free(srv->routes[i].method);
        free(srv->routes[i].pattern);
    }
    free(srv->routes);
    pthread_rwlock_destroy(&srv->routes_mu);
    free(srv);
}
