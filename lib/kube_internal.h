/* kube_internal.h: what the files of the Kubernetes client (kube.c, kubeconfig.c, kube_loop.c,
 * informer.c, leader.c) share and nobody else should use: the client struct, the transfer
 * object the loop drives, the rate limiter and small helpers. Not part of the public surface
 * (that is lib/kube.h). */
#ifndef TAREMA_KUBE_INTERNAL_H
#define TAREMA_KUBE_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kube.h"
#include "watchstream.h"

struct tm_kp_kind;                    /* kube_proto.h */
typedef struct tm_kpwatch tm_kpwatch; /* kube_proto.h */

/* A growable byte buffer (always NUL-terminated when data is non-NULL). */
typedef struct tm_kbuf {
    char *data;
    size_t len, cap;
} tm_kbuf;
int tm_kbuf_append(tm_kbuf *b, const void *p, size_t n);
void tm_kbuf_free(tm_kbuf *b);

/* Decodes standard base64 (padding optional, whitespace ignored). Returns a NUL-terminated
 * malloc'd buffer the caller frees, *out_len the byte count; NULL on a malformed input. */
char *tm_kube_base64_decode(const char *in, size_t *out_len);

/* Fills kind/apiVersion of a list item from its list ("PodList" -> "Pod"). */
void tm_kube_fill_kind(json_t *item, const json_t *list);
/* Path and body (new reference) of a pods/binding request; caller frees the path. */
char *tm_kube_binding_request(const char *ns, const char *pod, const char *pod_uid,
                              const char *node, json_t **body);
/* Collection path for an event built by tm_kube_event_new; caller frees. */
char *tm_kube_event_path(const json_t *event);

typedef struct tm_xfer tm_xfer;

/* What a transfer's owner gets told. on_data is for watches: called from the loop (never from
 * inside curl) after new bytes were fed to x->ws. on_done is called once when the transfer
 * ends (curl result and HTTP status), never after tm_xfer_cancel. */
typedef struct tm_xfer_ops {
    void (*on_data)(void *ud, tm_xfer *x);
    void (*on_done)(void *ud, tm_xfer *x, CURLcode rc, long status);
} tm_xfer_ops;

struct tm_xfer {
    tm_kube *k;
    CURL *easy; /* NULL while queued (xfer_begin takes one), and in an on_done for
                   CURLE_OUT_OF_MEMORY */
    struct curl_slist *hdrs;
    char *method, *path, *url;
    char *content_type; /* of body, or NULL */
    long timeout_s;     /* whole-transfer limit (0 = none) */
    char *body;         /* request body (owned) */
    size_t body_len;
    tm_kbuf resp; /* response body (requests, and error bodies of watches) */
    long status;  /* HTTP status once headers arrived */
    bool watch;   /* long-lived stream: not rate limited, body fed to ws */
    bool in_multi, cancelled, has_data, queued;
    int refs;
    int retries;         /* 429 Too Many Requests answers retried so far */
    int64_t start_at_ms; /* when the rate limiter lets it start */
    int64_t started_ms;  /* when it was handed to curl */
    tm_watchstream *ws;  /* watches only: the JSON stream */
    bool exempt;         /* tm_xfer_start_exempt: never rate limited or queued, a 429 not retried */
    /* Set when the request asked for protobuf (tm_xfer_start's proto): the watched kind, and
     * the protobuf stream, made when a watch's answer says it is protobuf (Content-Type);
     * a server that answers JSON feeds ws instead. */
    const struct tm_kp_kind *proto;
    tm_kpwatch *kpw;
    char errbuf[CURL_ERROR_SIZE];
    const tm_xfer_ops *ops;
    void *ud;
    tm_kube_done_fn user_done; /* public async requests */
    void *user_ud;
    bool body_unused; /* a 2xx answer is neither kept nor parsed: its done gets JSON null */
    tm_xfer *prev, *next;
};

/* Starts a transfer on the loop. body may be NULL (copied). timeout_s 0 = default request
 * timeout. proto: NULL asks for JSON; a kind (tm_kp_kind_pod, ...) asks for protobuf first
 * (JSON second, which a server that cannot encode protobuf answers), and is the item kind a
 * protobuf watch stream is decoded as. Returns the handle (owned by the loop; valid until
 * on_done returns or cancel). */
tm_xfer *tm_xfer_start(tm_kube *k, const char *method, const char *path, const char *body,
                       size_t body_len, const char *content_type, bool watch, long timeout_s,
                       const struct tm_kp_kind *proto, const tm_xfer_ops *ops, void *ud);
/* A request that must not wait behind the client's own traffic: started at once, outside the
 * rate limit and the queue of requests waiting for a slot (a 429 goes to on_done: the owner
 * retries on its own clock). The leader
 * elector's Lease reads and renewals: queued behind thousands of evictions and binds reserved at
 * the configured QPS, a renewal could start seconds late and miss its deadline. kube-scheduler
 * gets the same from a client of its own for leader election, with its own rate limiter. */
tm_xfer *tm_xfer_start_exempt(tm_kube *k, const char *method, const char *path, const char *body,
                              size_t body_len, const char *content_type, long timeout_s,
                              const tm_xfer_ops *ops, void *ud);
/* Stops a transfer; no callback is made afterwards. Safe from inside callbacks. */
void tm_xfer_cancel(tm_xfer *x);

/* Fills err from a failed transfer or response: the Status message when the body is one. */
void tm_kube_fill_error(tm_err *err, const char *method, const char *path, const char *server,
                        CURLcode rc, const char *curl_msg, long status, const char *body,
                        size_t body_len);

/* Applies the common options (URL, TLS, auth, headers, HTTP/2) to an easy handle. *hdrs gets
 * the header list the caller frees after the transfer. protobuf: prefer protobuf in Accept
 * (a watch's stream form when watch). */
int tm_kube_setup_easy(tm_kube *k, CURL *e, const char *method, const char *url, const char *body,
                       size_t body_len, const char *content_type, bool watch, bool protobuf,
                       long timeout_s, struct curl_slist **hdrs, char *errbuf, tm_err *err);

/* How long to wait before retrying a 429 answer (its Retry-After, 1..30 s), or -1 when the
 * request should not be retried (not a 429, or `attempt` retries were made already). */
int64_t tm_kube_retry_after_ms(CURL *e, long status, int attempt);

/* Reserves one token of the rate limiter; returns how long (ms) the caller must wait before
 * using it (0 when unlimited or a token was there). */
int64_t tm_kube_ratelimit_reserve(tm_kube *k);

/* The full URL of path (server + path); caller frees. */
char *tm_kube_url(const tm_kube *k, const char *path);

/* Appends "?key=value" or "&key=value" (value URL-escaped) to a malloc'd string. */
char *tm_kube_query_add(char *path, const char *key, const char *value);

/* Something built on a client (an informer, a leader) that tm_kube_free must tear down first.
 * Its owner embeds one, registers it with tm_kube_attach when it starts and unlinks it with
 * tm_kube_detach when it stops; teardown(owner) must stop the owner, which detaches it. The
 * client knows only this list, not what its users are. */
typedef struct tm_kube_attachment {
    void (*teardown)(void *owner);
    void *owner;
    struct tm_kube_attachment *prev, *next;
} tm_kube_attachment;

/* Links a (filled by the caller: teardown, owner) into k's list. */
void tm_kube_attach(tm_kube *k, tm_kube_attachment *a);
/* Unlinks a from k's list. */
void tm_kube_detach(tm_kube *k, tm_kube_attachment *a);

/* Idle curl easy handles kept for reuse: a reused handle spares curl's per-handle allocations
 * (several large buffers) and keeps its connection cache. Not locked: the caller serialises. */
typedef struct tm_easy_pool {
    CURL *idle[64];
    int n;
    int cap; /* at most this many kept (<= 64); 0 keeps none */
} tm_easy_pool;

/* A reset idle handle, or a new one; NULL when curl cannot make one. */
CURL *tm_easy_pool_take(tm_easy_pool *p);
/* Keeps e for reuse, or cleans it up when the pool is full. */
void tm_easy_pool_put(tm_easy_pool *p, CURL *e);
/* Cleans up every kept handle. */
void tm_easy_pool_clear(tm_easy_pool *p);

struct tm_kube {
    char *server, *ca_file, *cert_file, *key_file, *token_file, *namespace, *user_agent;
    char *ca_data, *cert_data, *key_data;
    size_t ca_len, cert_len, key_len;
    bool insecure;
    bool json_only;   /* never ask for protobuf (tm_kube_config.json_only) */
    bool paged_lists; /* informers list by pages (tm_kube_config.paged_lists) */

    pthread_mutex_t mu; /* guards everything below up to `multi` (sync calls are any-thread) */
    char *token;        /* static token, or the cached content of token_file */
    dev_t token_dev;
    ino_t token_ino;
    struct timespec token_mtime;
    off_t token_size;
    double qps, burst, tokens;
    int64_t bucket_ms;
    tm_easy_pool sync_pool; /* synchronous calls' handles: keep their own connections */

    /* loop state: loop thread only */
    CURLM *multi;
    tm_xfer *pending; /* waiting for the rate limiter or the cap, in start order */
    tm_xfer *pending_tail;
    tm_xfer *active;          /* handed to curl */
    int inflight;             /* requests started and not finished (queued or at the wire) */
    int nactive;              /* requests (not watches) handed to curl */
    int max_active;           /* cap on nactive */
    int64_t performed_ms;     /* when curl_multi_perform last ran (kube_loop.c, perform_gap_ms) */
    bool watch_data;          /* a watch got bytes since the last drain_watches: walk active */
    tm_easy_pool idle;        /* the loop's handles (its connections are the multi's) */
    struct tm_timer **timers; /* binary heap by (when, seq) */
    size_t ntimers, timers_cap;
    uint64_t timer_seq;
    tm_kube_attachment *attached; /* what is built on the client: tm_kube_free tears it down */
    int running;                  /* tm_kube_run calls on the stack */
    bool dying; /* tm_kube_free was called from a callback: free when the loop returns */
};

/* Cancels every transfer and timer (no callbacks); the multi handle stays usable. */
void tm_kube_loop_stop(tm_kube *k);
void tm_kube_loop_free(tm_kube *k);
int tm_kube_loop_init(tm_kube *k, tm_err *err);

#endif
