/* kube.h: the Kubernetes API client of libtarema (libcurl + jansson).
 *
 * Two ways to talk to the API server, on one client:
 *  - synchronous calls (tm_kube_get/list/create/patch/delete/...): block the calling thread on a
 *    private curl handle; for CLIs (profiler apply, labeler) and start-up code. Thread-safe.
 *  - an event loop (tm_kube_run) driving a curl multi handle on one thread: asynchronous
 *    requests, informers (list+watch), timers and leader election all share it, so a scheduler
 *    keeps many watches and binds in flight on one thread, over HTTP/2 where offered.
 *    Everything named _async, tm_informer_*, tm_timer_*, tm_leader_* must be called on the
 *    thread that runs the loop; only tm_kube_wakeup() may be called from other threads.
 *
 * Errors carry the API server's Status message and the HTTP status (tm_err.http_status). */
#ifndef TAREMA_KUBE_H
#define TAREMA_KUBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* ---- configuration ------------------------------------------------------------------------ */

typedef struct tm_kube_config {
    char *server;     /* "https://127.0.0.1:6443" */
    char *ca_file;    /* PEM CA bundle path, or NULL */
    char *ca_data;    /* PEM bytes (already base64-decoded), or NULL */
    char *cert_file;  /* client certificate (PEM) path, or NULL */
    char *cert_data;  /* client certificate PEM bytes, or NULL */
    char *key_file;   /* client key path, or NULL */
    char *key_data;   /* client key PEM bytes, or NULL */
    char *token;      /* bearer token, or NULL */
    char *token_file; /* bearer token file, re-read when it changes (rotation), or NULL */
    bool insecure;    /* skip server certificate verification */
    char *namespace;  /* the context's namespace (or in-cluster namespace); "default" if unset */
    char *context;    /* name of the context in use (NULL in-cluster) */
    double qps;       /* client-side rate limit for requests (not watches); 0 = unlimited */
    int burst;        /* token bucket size for qps; 0 = max(1, qps) */
    int max_active;   /* asynchronous requests handed to curl at once (watches excluded); more
                       * wait in order. 0 = TM_KUBE_DEFAULT_MAX_ACTIVE */
    char *user_agent; /* NULL = "tarema/<version>" */
    /* Informers of pods and nodes ask for protobuf (application/vnd.kubernetes.protobuf, as
     * kube-scheduler does: a third of JSON's bytes, a tenth of its decode CPU) unless this is
     * set; kube-scheduler's clientConnection.contentType "application/json" does the same. */
    bool json_only;
    /* Informers stream their initial lists (a watch with sendInitialEvents=true, as client-go's
     * WatchListClient: no pages, no list held whole) unless this is set, or the server refuses
     * (then they turn to paged lists by themselves). */
    bool paged_lists;
} tm_kube_config;

/* Loads a kubeconfig. path NULL: the first file of $KUBECONFIG, else ~/.kube/config. context
 * NULL: current-context. Supports client-certificate(-data), client-key(-data), token,
 * tokenFile, certificate-authority(-data), insecure-skip-tls-verify, relative paths (resolved
 * against the kubeconfig's directory). Caller frees with tm_kube_config_free. */
tm_kube_config *tm_kube_config_load(const char *path, const char *context, tm_err *err);

/* In-cluster configuration: KUBERNETES_SERVICE_HOST/PORT, the service account token file
 * (re-read on rotation), CA and namespace under `root` (NULL:
 * /var/run/secrets/kubernetes.io/serviceaccount). */
tm_kube_config *tm_kube_config_in_cluster(const char *root, tm_err *err);

/* What a component does by default: an explicit kubeconfig path wins; else in-cluster when
 * KUBERNETES_SERVICE_HOST is set; else $KUBECONFIG / ~/.kube/config. */
tm_kube_config *tm_kube_config_auto(const char *path, const char *context, tm_err *err);

void tm_kube_config_free(tm_kube_config *cfg);

/* ---- client --------------------------------------------------------------------------------- */

/* Why a cap on requests at the wire: curl visits every transfer of a multi handle on each pass
 * of its loop (a poll(2) and a clock read each), so an unbounded burst (binds plus their events
 * during a storm) costs the client more per answer the larger it gets. Why not lower: a busy API
 * server answers a bind in a second or more, and the requests at the wire bound the rate. On a
 * 5,000-node kwok cluster 200 gave 196-218 binds/s with a p50 of 17-19 s, 1,000 gave 266-302
 * with 4.3-4.7 s (docs/performance.md). The API server allows 250 streams per HTTP/2
 * connection, so 1,000 is four connections. */
#define TM_KUBE_DEFAULT_MAX_ACTIVE 1000

typedef struct tm_kube tm_kube;

/* Copies what it needs from cfg. Caller frees with tm_kube_free (stops informers, timers,
 * leader election and in-flight requests first, without calling their callbacks). A callback
 * running on the loop may free the client too: everything stops at once and the memory is
 * released when tm_kube_run returns (do not call tm_kube_run again). */
tm_kube *tm_kube_new(const tm_kube_config *cfg, tm_err *err);
void tm_kube_free(tm_kube *k);
const char *tm_kube_namespace(const tm_kube *k); /* the configured default namespace */

/* Builds an API path; caller frees. group_version "v1" gives /api/v1/..., "apps/v1" gives
 * /apis/apps/v1/...; ns NULL for cluster-scoped or all-namespace collections; name and
 * subresource optional. Components are URL-escaped. */
char *tm_kube_path(const char *group_version, const char *resource, const char *ns,
                   const char *name, const char *subresource);

/* ---- synchronous calls (any thread) --------------------------------------------------------- */

typedef enum {
    TM_PATCH_MERGE,     /* application/merge-patch+json */
    TM_PATCH_STRATEGIC, /* application/strategic-merge-patch+json */
    TM_PATCH_JSON,      /* application/json-patch+json */
} tm_patch_type;

/* Generic request: body may be NULL; content_type NULL means application/json. On 2xx returns
 * the parsed response (json null for an empty body; new reference, caller decrefs) and sets
 * *status if non-NULL. Otherwise NULL, err->msg from the Status object, err->http_status. */
json_t *tm_kube_request(tm_kube *k, const char *method, const char *path, const json_t *body,
                        const char *content_type, int *status, tm_err *err);

json_t *tm_kube_get(tm_kube *k, const char *path, tm_err *err);
json_t *tm_kube_create(tm_kube *k, const char *path, const json_t *obj, tm_err *err);
json_t *tm_kube_replace(tm_kube *k, const char *path, const json_t *obj, tm_err *err); /* PUT */
json_t *tm_kube_patch(tm_kube *k, const char *path, tm_patch_type type, const json_t *patch,
                      tm_err *err);
int tm_kube_delete(tm_kube *k, const char *path, tm_err *err); /* 404 counts as success */

typedef struct tm_list_opts {
    const char *label_selector; /* optional */
    const char *field_selector; /* optional */
    int limit;                  /* page size; 0 = 500 */
} tm_list_opts;

/* Lists a collection, following `continue` tokens until the end. Returns a new JSON array of
 * items; *resource_version (optional, caller frees) gets the list's resourceVersion. A 410 on
 * a continue token (expired by compaction) restarts the list once, unpaged. */
json_t *tm_kube_list(tm_kube *k, const char *path, const tm_list_opts *opts,
                     char **resource_version, tm_err *err);

/* POST /api/v1/namespaces/{ns}/pods/{pod}/binding. pod_uid optional (precondition). */
int tm_kube_bind(tm_kube *k, const char *ns, const char *pod, const char *pod_uid, const char *node,
                 tm_err *err);

/* An events.k8s.io/v1 Event about `regarding` (a full object: kind, apiVersion, metadata)
 * as kube-scheduler writes them. type "Normal"/"Warning". New reference. */
json_t *tm_kube_event_new(const json_t *regarding, const char *type, const char *reason,
                          const char *action, const char *note, const char *controller,
                          const char *instance);
/* Posts an event built by tm_kube_event_new to its namespace. */
int tm_kube_event_post(tm_kube *k, const json_t *event, tm_err *err);

/* ---- event loop (one thread) ------------------------------------------------------------- */

/* Drives transfers, informers and timers for at most timeout_ms (returns early when something
 * happened). Returns 0, or -1 with err on an unrecoverable loop error. */
int tm_kube_run(tm_kube *k, int timeout_ms, tm_err *err);
/* Wakes a tm_kube_run blocked in another thread. The only thread-safe loop function. */
void tm_kube_wakeup(tm_kube *k);
/* Number of asynchronous requests in flight (not counting watches). */
int tm_kube_inflight(const tm_kube *k);
/* How many of those are at the wire (handed to curl); never more than max_active. */
int tm_kube_active(const tm_kube *k);

/* Called on the loop thread when an async request completes. body is borrowed (NULL if none or
 * unparsable); err is NULL on 2xx, else the Status message and http_status. */
typedef void (*tm_kube_done_fn)(void *ud, int status, json_t *body, const tm_err *err);

/* Starts a request on the loop; body is serialised immediately (caller keeps ownership).
 * Subject to the qps limit: queued, never dropped. Returns -1 only on invalid arguments. */
int tm_kube_request_async(tm_kube *k, const char *method, const char *path, const json_t *body,
                          const char *content_type, tm_kube_done_fn done, void *ud);
/* The same for a write whose answer the caller does not read on success (a PATCH or DELETE
 * sends back the whole object: parsing it was 5 % of the scheduler's CPU while it preempted):
 * done gets JSON null as the body of a 2xx; an error's body is parsed as for any request. */
int tm_kube_write_async(tm_kube *k, const char *method, const char *path, const json_t *body,
                        const char *content_type, tm_kube_done_fn done, void *ud);
/* A bind and an event: no caller reads what the server sends back on success (the Status of a
 * bind, the whole Event), so a 2xx answer is not parsed and done gets JSON null as its body;
 * an error's body is parsed as for any request. */
int tm_kube_bind_async(tm_kube *k, const char *ns, const char *pod, const char *pod_uid,
                       const char *node, tm_kube_done_fn done, void *ud);
int tm_kube_event_post_async(tm_kube *k, const json_t *event, tm_kube_done_fn done, void *ud);

typedef struct tm_timer tm_timer;
/* The loop's monotonic clock in milliseconds: the clock tm_timer_add's delays count in. */
int64_t tm_kube_now_ms(void);
/* Formats a Kubernetes MicroTime ("2024-01-02T03:04:05.123456Z") of the wall clock into buf
 * (at least 32 bytes): event times, Lease renewals, annotations that only need to change. */
void tm_kube_microtime(char *buf, size_t len);
/* One-shot timer on the loop. The handle is valid until the callback starts or cancel. */
tm_timer *tm_timer_add(tm_kube *k, int64_t delay_ms, void (*fn)(void *ud), void *ud);
void tm_timer_cancel(tm_kube *k, tm_timer *t);

/* ---- informers: list + watch with a local store ------------------------------------------ */

typedef enum { TM_WATCH_ADDED, TM_WATCH_MODIFIED, TM_WATCH_DELETED } tm_watch_type;

typedef struct tm_informer_opts {
    const char *path; /* collection, e.g. "/api/v1/pods", "/apis/tarema.io/v1alpha1/taskprofiles" */
    const char *label_selector; /* optional */
    const char *field_selector; /* optional, e.g. "spec.schedulerName=tarema" */
    int page_size;              /* list limit; 0 = 500 */
    /* obj and old are borrowed for the call (old: the previous stored version for MODIFIED and
     * DELETED, else NULL). After a re-list the informer diffs against its store and reports
     * what changed while it was not watching, deletions included. */
    void (*on_event)(void *ud, tm_watch_type type, json_t *obj, json_t *old);
    void (*on_synced)(void *ud); /* after the first list has been delivered (and each re-list) */
    void *ud;
    /* Optional, like client-go's SetTransform: called on every listed or watched object
     * (BOOKMARKs excepted) before it is stored or delivered, so that a large cluster's store
     * holds only what the caller reads. Takes ownership of obj (a reference) and returns the
     * reference to keep: obj itself after in-place edits, or a new object (then it decrefs obj);
     * NULL drops the object (as if it were never seen: a stored earlier version is deleted).
     * The result must keep metadata.name, metadata.namespace and metadata.resourceVersion: the
     * store is keyed and diffed by them. transform_ud is passed as its first argument. */
    json_t *(*transform)(void *transform_ud, json_t *obj);
    void *transform_ud;
    /* Keep each stored object as its compact JSON text rather than a parsed tree: a fifth of
     * the memory or less, for the price of a parse when an event needs the previous version
     * (MODIFIED, DELETED), at a re-list and in tm_informer_get/foreach (the scheduler's pods:
     * tens of thousands, read back only on change). */
    bool compact_store;
} tm_informer_opts;

typedef struct tm_informer tm_informer;

/* Lists then watches (allowWatchBookmarks, resourceVersion), re-lists on 410 Gone (HTTP 410 or
 * an ERROR event in the stream). A watch the server ends normally is resumed at once from the
 * last resourceVersion (as client-go does; only streams that repeatedly end at once without a
 * single event back off); errors reconnect with jittered exponential backoff. Runs on the
 * loop. Caller stops with tm_informer_stop. */
tm_informer *tm_informer_start(tm_kube *k, const tm_informer_opts *opts, tm_err *err);
void tm_informer_stop(tm_informer *inf);
bool tm_informer_synced(const tm_informer *inf);
/* Borrowed: valid until the object changes, or with compact_store until the next call. */
json_t *tm_informer_get(const tm_informer *inf, const char *ns, const char *name);
size_t tm_informer_size(const tm_informer *inf);
/* Calls fn for every stored object (borrowed). */
void tm_informer_foreach(const tm_informer *inf, void (*fn)(void *ud, json_t *obj), void *ud);
/* Counters for tests and metrics: watch (re)connects and full re-lists so far. */
unsigned tm_informer_relists(const tm_informer *inf);
unsigned tm_informer_reconnects(const tm_informer *inf);
/* "protobuf" when the last list page or watch stream came in protobuf, else "json". */
const char *tm_informer_encoding(const tm_informer *inf);
/* Times it waited out a backoff before listing or watching again (errors, or a run of streams
 * that ended at once without an event). */
unsigned tm_informer_backoffs(const tm_informer *inf);

/* ---- leader election (coordination.k8s.io/v1 Lease, client-go semantics) ---------------- */

typedef struct tm_leader_opts {
    const char *ns, *name; /* the Lease */
    const char *identity;  /* this replica, e.g. hostname_pid */
    int lease_ms;          /* 0 = 15000 */
    int renew_deadline_ms; /* 0 = 10000: give up leadership if not renewed within this */
    int retry_ms;          /* 0 = 2000 */
    void (*on_started_leading)(void *ud);
    void (*on_stopped_leading)(void *ud); /* called at once when leadership is lost or a renew
                                             gets 409 Conflict; stop acting immediately */
    void (*on_new_leader)(void *ud, const char *identity);
    void *ud;
} tm_leader_opts;

typedef struct tm_leader tm_leader;
tm_leader *tm_leader_start(tm_kube *k, const tm_leader_opts *opts, tm_err *err);
bool tm_leader_is_leader(const tm_leader *l);
/* Stops; when leading and release is true, clears holderIdentity so another replica can take
 * over at once. */
void tm_leader_stop(tm_leader *l, bool release);

#endif
