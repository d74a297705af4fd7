/* httpd.h: a small HTTP/1.1 server over libmicrohttpd for tarema's endpoints (scheduler
 * extender, health, metrics, labeler weblog).
 *
 *   tm_httpd_opts o = {.port = 10259};
 *   tm_httpd *srv = tm_httpd_start(&o, &err);
 *   tm_httpd_route(srv, "POST", "/filter", on_filter, ctx);
 *   tm_httpd_route(srv, "POST", "/weblog*", on_weblog, ctx);   // prefix route
 *   tm_httpd_enable_health(srv, is_ready, ctx);                // /healthz, /readyz
 *   tm_httpd_enable_metrics(srv, registry);                    // /metrics
 *   ...
 *   tm_httpd_free(srv);                                        // stops, waits, frees
 *
 * Threads: a small pool of worker threads, each polling its share of the connections with
 * epoll, so idle or slow connections cost memory (MHD's per-connection pool), not a thread.
 * HANDLERS ARE CALLED CONCURRENTLY FROM SEVERAL THREADS and must protect any state they share;
 * a handler that blocks holds up the other connections of its thread, so handlers must not
 * block for long. The whole body is read before the handler runs. Routes may be added at any
 * time, also while serving.
 *
 * Limits (defence against slow and large requests):
 *   - max_body per route (413 before reading when Content-Length says so, else the connection
 *     is closed once the body passes it);
 *   - memory_budget: request bodies and the JSON parsed from them (tm_httpd_req_json), across
 *     all requests of the server, counted as they arrive; a request that would pass it gets
 *     503 at once (announced length) or is closed (chunked), a JSON parse 503;
 *   - max_conns connections, per_ip_conns per client address, timeout_s idle time per
 *     connection (slowloris: a client trickling headers holds one pool slot at most that long
 *     per byte, and one address at most per_ip_conns of them);
 *   - health_port: /healthz, /readyz and /metrics also on a second, plain-HTTP listener with
 *     its own thread and connection slots, so probes are answered while every slot of the main
 *     listener is taken or its workers are busy.
 *
 * TLS: tls_cert_file + tls_key_file (PEM) serve HTTPS on the main listener. client_ca_file
 * asks clients for a certificate; one that verifies against that CA authenticates the request
 * (mTLS; requests without one may still authenticate with a token). The three files are
 * checked every tls_reload_s and re-read when one changed (cert-manager renews them in place):
 * a new daemon with the new certificate takes over the listening socket; files that cannot be
 * read or do not fit together leave the current certificate in place (logged).
 *
 * Authentication: when the server has an auth token (opts.auth) or a client CA, every route
 * requires it except those added with .open (the built-in health and metrics routes). A
 * request is authenticated by a verified client certificate, or by the token in
 * "Authorization: Bearer T", in Basic credentials' password, or (routes with .token_in_query
 * only) in ?token=T. Others get 401 before their body is read. tm_httpd_start refuses a
 * non-loopback bind address without any authentication unless opts.insecure_no_auth.
 *
 * Routing: exact path match ("/filter"), or a prefix when the pattern ends with '*' ("/weblog*"
 * matches "/weblog", "/weblog/abc"). An exact match beats a prefix, a longer prefix beats a
 * shorter one. method NULL or "*" accepts any method; HEAD is served by GET routes. An unknown
 * path gets 404, a known path with another method 405 with an Allow header; both with a JSON body
 * {"error": "..."}. Requests libmicrohttpd cannot parse (bad request line, bad Content-Length)
 * are answered 400 or closed by libmicrohttpd itself, without reaching any handler. */
#ifndef TAREMA_HTTPD_H
#define TAREMA_HTTPD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "metrics.h"

typedef struct tm_httpd tm_httpd;

typedef struct tm_auth tm_auth;

typedef struct tm_httpd_opts {
    const char *bind_addr;      /* IPv4 or IPv6 literal; NULL = "127.0.0.1"; "0.0.0.0" for all */
    int port;                   /* 0 = a free port chosen by the kernel (see tm_httpd_port) */
    size_t max_body;            /* default per-route body limit, bytes; 0 = 8 MiB */
    size_t memory_budget;       /* bodies + parsed JSON of all requests at once; 0 = 64 MiB */
    unsigned max_conns;         /* concurrent connections of the main listener; 0 = 1024 */
    unsigned per_ip_conns;      /* concurrent connections from one address; 0 = 64 */
    unsigned timeout_s;         /* idle connection timeout; 0 = 10 s */
    unsigned threads;           /* worker threads of the main listener; 0 = 4 */
    int health_port;            /* second listener for health and metrics: 0 none, -1 a free port */
    const char *tls_cert_file;  /* PEM server certificate (chain); NULL = plain HTTP */
    const char *tls_key_file;   /* PEM private key of tls_cert_file */
    const char *client_ca_file; /* PEM CA: client certificates it signed authenticate */
    unsigned tls_reload_s;      /* TLS files checked for changes this often; 0 = 10 s */
    tm_auth *auth;              /* shared token (borrowed, must outlive the server); NULL none */
    bool insecure_no_auth;      /* allow a non-loopback address without authentication */
    const char *name;           /* for log lines ("extender", "weblog"); NULL = "httpd" */
} tm_httpd_opts;

/* Per-route options (tm_httpd_route_ex). Zero = authenticated, the server's max_body. */
typedef struct tm_httpd_route_opts {
    bool open;           /* no authentication even when the server has it */
    bool token_in_query; /* also accept ?token=T (clients that can only set a URL) */
    size_t max_body;     /* bytes; 0 = the server's max_body */
} tm_httpd_route_opts;

/* One request, valid only during the handler call. body is the whole body with a NUL appended
 * (body_len excludes it); "" when there was none. */
typedef struct tm_httpd_req {
    const char *method;
    const char *path; /* without the query string, already percent-decoded */
    const char *body;
    size_t body_len;
    const char *remote_addr; /* "127.0.0.1" or "::1", "" when unknown */
    const char *auth_by;     /* "client-cert", "token", or NULL when no auth is configured */
    void *conn_;             /* internal: the libmicrohttpd connection */
    void *ctx_;              /* internal: the request's state */
} tm_httpd_req;

/* The response a handler fills. Use the setters below; a handler that sets nothing answers
 * 200 with an empty body. Setting again replaces the earlier body. */
typedef struct tm_httpd_resp tm_httpd_resp;

typedef void (*tm_httpd_handler)(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud);

/* Starts serving in background threads. Returns NULL with err (e.g. "listen 127.0.0.1:80:
 * permission denied") on failure. opts may be NULL for all defaults. */
tm_httpd *tm_httpd_start(const tm_httpd_opts *opts, tm_err *err);
int tm_httpd_port(const tm_httpd *srv);        /* the port actually bound */
int tm_httpd_health_port(const tm_httpd *srv); /* the health listener's, 0 when none */
bool tm_httpd_is_tls(const tm_httpd *srv);
bool tm_httpd_has_auth(const tm_httpd *srv); /* a token or a client CA is configured */
/* Bytes of the memory budget in use now (bodies and parsed JSON). */
size_t tm_httpd_budget_used(const tm_httpd *srv);
/* Stops accepting, lets requests in progress finish (up to 10 s), closes every connection and
 * joins the threads. Handlers are not called after it returns. Idempotent. */
void tm_httpd_stop(tm_httpd *srv);
void tm_httpd_free(tm_httpd *srv); /* stops if needed, then frees; NULL is fine */

/* Adds a route (see the header comment for matching). Re-adding the same method and pattern
 * replaces the handler. Returns -1 with err on a pattern not starting with '/'. */
int tm_httpd_route(tm_httpd *srv, const char *method, const char *pattern, tm_httpd_handler fn,
                   void *ud, tm_err *err);
/* The same with per-route options (ro NULL = defaults). */
int tm_httpd_route_ex(tm_httpd *srv, const char *method, const char *pattern, tm_httpd_handler fn,
                      void *ud, const tm_httpd_route_opts *ro, tm_err *err);

/* Readiness callback: returns true when ready; otherwise writes a reason for humans. */
typedef bool (*tm_httpd_ready_fn)(void *ud, char *reason, size_t reason_size);
/* GET /healthz answers 200 "ok" while the server runs. GET /readyz answers 200 "ok", or 503
 * with the reason as text when ready returns false. ready NULL = always ready. */
int tm_httpd_enable_health(tm_httpd *srv, tm_httpd_ready_fn ready, void *ud, tm_err *err);
/* GET /metrics renders reg (borrowed: must outlive the server). */
int tm_httpd_enable_metrics(tm_httpd *srv, tm_metrics *reg, tm_err *err);

/* Request accessors; returned strings are borrowed for the handler call, NULL when absent. */
const char *tm_httpd_query(const tm_httpd_req *req, const char *key);   /* decoded ?key=value */
const char *tm_httpd_header(const tm_httpd_req *req, const char *name); /* case-insensitive */
/* Parses the body as JSON, charging the memory it takes to the server's budget until the
 * request ends. On failure sets resp to 400 {"error": "invalid JSON body: <why> at line L
 * column C"} (or 503 when the budget ran out) and returns NULL; the handler then just returns.
 * New reference. */
json_t *tm_httpd_req_json(const tm_httpd_req *req, tm_httpd_resp *resp);

/* Response setters. tm_httpd_json steals the reference to body (NULL becomes a 500). */
void tm_httpd_json(tm_httpd_resp *resp, int status, json_t *body);
void tm_httpd_text(tm_httpd_resp *resp, int status, const char *text); /* copied, text/plain */
/* Copies len bytes of data with the given content type. */
void tm_httpd_body(tm_httpd_resp *resp, int status, const char *content_type, const char *data,
                   size_t len);
/* {"error": "<formatted message>"} with the given status. */
void tm_httpd_error(tm_httpd_resp *resp, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds a response header (both strings copied). */
void tm_httpd_header_set(tm_httpd_resp *resp, const char *name, const char *value);

#endif
