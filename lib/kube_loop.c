/* kube_loop.c: the one-thread event loop of the client: a curl multi handle (HTTP/2
 * multiplexing) carrying asynchronous requests and watch streams, the rate-limit queue in
 * front of it, and a timer heap. User callbacks only ever run from tm_kube_run, outside any
 * curl callback, so they may start, cancel and stop anything.
 *
 * Transfer lifetime: a tm_xfer has one reference held by the loop while it is queued, running
 * or being completed; code that calls out while iterating takes an extra one. Cancel drops the
 * loop's reference unless the loop is in the middle of completing it. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "kube_proto.h"

#define DEFAULT_TIMEOUT_S 60

struct tm_timer {
    int64_t when;
    uint64_t seq;
    size_t idx;
    void (*fn)(void *ud);
    void *ud;
};

/* ---- timer heap -------------------------------------------------------------------------- */

static bool timer_less(const struct tm_timer *a, const struct tm_timer *b) {
    return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static void heap_swap(tm_kube *k, size_t i, size_t j) {
    struct tm_timer *t = k->timers[i];
    k->timers[i] = k->timers[j];
    k->timers[j] = t;
    k->timers[i]->idx = i;
    k->timers[j]->idx = j;
}

static void sift_up(tm_kube *k, size_t i) {
    while (i > 0 && timer_less(k->timers[i], k->timers[(i - 1) / 2])) {
        heap_swap(k, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void sift_down(tm_kube *k, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < k->ntimers && timer_less(k->timers[l], k->timers[m]))
            m = l;
        if (r < k->ntimers && timer_less(k->timers[r], k->timers[m]))
            m = r;
        if (m == i)
            return;
        heap_swap(k, i, m);
        i = m;
    }
}

static void heap_remove(tm_kube *k, size_t i) {
    k->ntimers--;
    if (i != k->ntimers) {
        k->timers[i] = k->timers[k->ntimers];
        k->timers[i]->idx = i;
        sift_down(k, i);
        sift_up(k, i);
    }
}

tm_timer *tm_timer_add(tm_kube *k, int64_t delay_ms, void (*fn)(void *ud), void *ud) {
    if (!k || !fn)
        return NULL;
    if (k->ntimers == k->timers_cap) {
        size_t cap = k->timers_cap ? k->timers_cap * 2 : 16;
        struct tm_timer **nt = realloc(k->timers, cap * sizeof *nt);
        if (!nt)
            return NULL;
        k->timers = nt;
        k->timers_cap = cap;
    }
    struct tm_timer *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    t->when = tm_kube_now_ms() + (delay_ms > 0 ? delay_ms : 0);
    t->seq = k->timer_seq++;
    t->fn = fn;
    t->ud = ud;
    t->idx = k->ntimers;
    k->timers[k->ntimers++] = t;
    sift_up(k, t->idx);
    return t;
}

void tm_timer_cancel(tm_kube *k, tm_timer *t) {
    if (!k || !t)
        return;
    heap_remove(k, t->idx);
    free(t);
}

/* Runs the timers due now; timers added by these callbacks wait for the next round, so a
 * zero-delay timer that re-arms itself cannot starve the loop. Returns how many ran. */
static int fire_timers(tm_kube *k) {
    int64_t now = tm_kube_now_ms();
    uint64_t cutoff = k->timer_seq;
    int n = 0;
    while (k->ntimers > 0 && k->timers[0]->when <= now && k->timers[0]->seq < cutoff) {
        struct tm_timer *t = k->timers[0];
        heap_remove(k, 0);
        void (*fn)(void *) = t->fn;
        void *ud = t->ud;
        free(t);
        fn(ud);
        n++;
    }
    return n;
}

/* ---- transfers --------------------------------------------------------------------------- */

static void xfer_destroy(tm_xfer *x) {
    if (x->easy && x->k->multi)
        tm_easy_pool_put(&x->k->idle, x->easy);
    else if (x->easy)
        curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hdrs);
    free(x->method);
    free(x->path);
    free(x->url);
    free(x->body);
    free(x->content_type);
    tm_kbuf_free(&x->resp);
    tm_watchstream_free(x->ws);
    tm_kpwatch_free(x->kpw);
    free(x);
}

static void xfer_unref(tm_xfer *x) {
    if (--x->refs == 0)
        xfer_destroy(x);
}

/* Takes x out of a doubly linked list (the active list has no tail pointer). */
static void list_unlink(tm_xfer **head, tm_xfer **tail, tm_xfer *x) {
    if (x->prev)
        x->prev->next = x->next;
    else
        *head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else if (tail)
        *tail = x->prev;
    x->prev = x->next = NULL;
}

static void active_unlink(tm_kube *k, tm_xfer *x) {
    list_unlink(&k->active, NULL, x);
}

static void pending_unlink(tm_kube *k, tm_xfer *x) {
    list_unlink(&k->pending, &k->pending_tail, x);
    x->queued = false;
}

/* Queues x by start time (rate-limit reservations arrive in order, so this is almost always
 * an append; 429 retries may land earlier). */
static void pending_insert(tm_kube *k, tm_xfer *x) {
    tm_xfer *after = k->pending_tail;
    while (after && after->start_at_ms > x->start_at_ms)
        after = after->prev;
    x->queued = true;
    x->prev = after;
    x->next = after ? after->next : k->pending;
    if (x->next)
        x->next->prev = x;
    else
        k->pending_tail = x;
    if (after)
        after->next = x;
    else
        k->pending = x;
}

/* Whether the answer is protobuf, by its Content-Type (a watch's is
 * "application/vnd.kubernetes.protobuf;stream=watch"). */
static bool answered_protobuf(tm_xfer *x) {
    const char *ct = NULL;
    curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
    return ct && strncmp(ct, TM_KP_MEDIA_TYPE, strlen(TM_KP_MEDIA_TYPE)) == 0;
}

static size_t xfer_write(char *p, size_t size, size_t n, void *ud) {
    tm_xfer *x = ud;
    size_t len = size * n;
    if (!x->status)
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
    if (x->watch && x->status == 200) {
        if (x->proto && !x->kpw && !x->has_data && answered_protobuf(x)) {
            x->kpw = tm_kpwatch_new(x->proto, 0);
            if (!x->kpw)
                return 0;
        }
        if (x->kpw ? tm_kpwatch_feed(x->kpw, p, len, NULL) < 0
                   : tm_watchstream_feed(x->ws, p, len, NULL) < 0)
            return 0; /* aborts the transfer: the owner reconnects */
        x->has_data = true;
        x->k->watch_data = true;
        return len;
    }
    if (x->watch && x->resp.len > (1 << 20))
        return len; /* an error body this long tells nothing more */
    if (x->body_unused && x->status >= 200 && x->status < 300)
        return len; /* never read (user_done): not kept either */
    return tm_kbuf_append(&x->resp, p, len) == 0 ? len : 0;
}

/* Hands x to curl. Its easy handle is taken now, not when it was queued: a queued request holds
 * none (a libcurl 7.88 handle is about 22 KB with its receive buffer; a preemption of 5,000 pods
 * queues tens of thousands of evictions, patches and events at the client's rate limit, and
 * holding a handle each took the scheduler to 1.5 GB). false when no handle can be made. */
static bool xfer_begin(tm_kube *k, tm_xfer *x) {
    if (!x->easy && !(x->easy = tm_easy_pool_take(&k->idle)))
        return false;
    /* Headers (and so the token) are built now, not when queued: a rotated token is used. */
    tm_kube_setup_easy(k, x->easy, x->method, x->url, x->body, x->body_len, x->content_type,
                       x->watch, x->proto != NULL, x->timeout_s, &x->hdrs, x->errbuf, NULL);
    curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, xfer_write);
    curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
    /* Wait for a connection that can multiplex instead of opening a new one per request. Only
     * over TLS (HTTP/2 by ALPN): a plain http:// server (kubectl proxy) speaks HTTP/1.1, where
     * a waiting request queued behind a watch that never ends. */
    if (strncmp(k->server, "http://", 7) != 0)
        curl_easy_setopt(x->easy, CURLOPT_PIPEWAIT, 1L);
    x->started_ms = tm_kube_now_ms();
    x->prev = NULL;
    x->next = k->active;
    if (k->active)
        k->active->prev = x;
    k->active = x;
    x->in_multi = true;
    if (!x->watch)
        k->nactive++;
    curl_multi_add_handle(k->multi, x->easy);
    return true;
}

/* Leaves curl: the transfer is done, cancelled or going back to the queue (429). */
static void xfer_leave_multi(tm_kube *k, tm_xfer *x) {
    curl_multi_remove_handle(k->multi, x->easy);
    x->in_multi = false;
    if (!x->watch)
        k->nactive--;
    active_unlink(k, x);
}

/* Whether a queued request may be handed to curl now (see TM_KUBE_DEFAULT_MAX_ACTIVE). */
static bool may_begin(const tm_kube *k) {
    return k->nactive < k->max_active;
}

static tm_xfer *xfer_start(tm_kube *k, const char *method, const char *path, const char *body,
                           size_t body_len, const char *content_type, bool watch, bool exempt,
                           long timeout_s, const struct tm_kp_kind *proto, const tm_xfer_ops *ops,
                           void *ud) {
    tm_xfer *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->k = k;
    x->refs = 1;
    x->method = strdup(method);
    x->path = strdup(path);
    x->url = tm_kube_url(k, path);
    x->watch = watch;
    x->proto = k->json_only ? NULL : proto;
    x->ops = ops;
    x->ud = ud;
    if (body) {
        x->body = malloc(body_len + 1);
        memcpy(x->body, body, body_len);
        x->body[body_len] = '\0';
        x->body_len = body_len;
    }
    if (watch)
        x->ws = tm_watchstream_new(0);
    if (!x->method || !x->path || !x->url || (body && !x->body) || (watch && !x->ws)) {
        xfer_destroy(x);
        return NULL;
    }
    x->content_type = content_type ? strdup(content_type) : NULL;
    x->timeout_s = timeout_s > 0 ? timeout_s : (watch ? 0 : DEFAULT_TIMEOUT_S);
    if (watch) { /* watches are not rate limited, as in client-go */
        if (xfer_begin(k, x))
            return x;
        xfer_destroy(x);
        return NULL;
    }
    x->exempt = exempt;
    int64_t wait = exempt ? 0 : tm_kube_ratelimit_reserve(k);
    x->start_at_ms = tm_kube_now_ms() + wait;
    /* exempt: neither the rate limit nor the queue (tm_xfer_start_exempt) */
    if (exempt || (wait <= 0 && !k->pending && may_begin(k))) {
        if (!xfer_begin(k, x)) {
            xfer_destroy(x);
            return NULL;
        }
    } else {
        pending_insert(k, x);
    }
    k->inflight++;
    return x;
}

tm_xfer *tm_xfer_start(tm_kube *k, const char *method, const char *path, const char *body,
                       size_t body_len, const char *content_type, bool watch, long timeout_s,
                       const struct tm_kp_kind *proto, const tm_xfer_ops *ops, void *ud) {
    return xfer_start(k, method, path, body, body_len, content_type, watch, false, timeout_s, proto,
                      ops, ud);
}

tm_xfer *tm_xfer_start_exempt(tm_kube *k, const char *method, const char *path, const char *body,
                              size_t body_len, const char *content_type, long timeout_s,
                              const tm_xfer_ops *ops, void *ud) {
    return xfer_start(k, method, path, body, body_len, content_type, false, true, timeout_s, NULL,
                      ops, ud);
}

static void finish_xfer(tm_kube *k, tm_xfer *x, CURLcode rc);

static int start_due(tm_kube *k) {
    int64_t now = tm_kube_now_ms();
    int n = 0;
    while (k->pending && k->pending->start_at_ms <= now && may_begin(k)) {
        tm_xfer *x = k->pending;
        pending_unlink(k, x);
        if (!xfer_begin(k, x)) /* no handle: it ends here, with the error */
            finish_xfer(k, x, CURLE_OUT_OF_MEMORY);
        n++;
    }
    return n;
}

void tm_xfer_cancel(tm_xfer *x) {
    if (!x || x->cancelled)
        return;
    tm_kube *k = x->k;
    x->cancelled = true;
    if (!x->watch)
        k->inflight--;
    if (x->queued) {
        pending_unlink(k, x);
        xfer_unref(x);
    } else if (x->in_multi) {
        xfer_leave_multi(k, x);
        xfer_unref(x);
    }
    /* else: the loop is completing it and drops the reference itself. */
}

/* Hands new watch bytes to their owners. Only after a watch got some (k->watch_data): the
 * active list holds every request at the wire too (hundreds while preemptions and binds are
 * written), and walking it at each turn of the loop was 5 % of the scheduler's CPU in
 * bench/preemption_bench.sh at 500 nodes. */
static int drain_watches(tm_kube *k) {
    if (!k->watch_data)
        return 0;
    k->watch_data = false;
    size_t n = 0, cap = 0;
    tm_xfer **snap = NULL;
    for (tm_xfer *x = k->active; x; x = x->next) {
        if (!x->watch || !x->has_data)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            tm_xfer **ns = realloc(snap, cap * sizeof *ns);
            if (!ns) {
                k->watch_data = true; /* the rest at the next turn */
                break;
            }
            snap = ns;
        }
        x->refs++;
        snap[n++] = x;
    }
    for (size_t i = 0; i < n; i++) {
        tm_xfer *x = snap[i];
        if (!x->cancelled && x->has_data) {
            x->has_data = false;
            if (x->ops && x->ops->on_data)
                x->ops->on_data(x->ud, x);
        }
        xfer_unref(x);
    }
    free(snap);
    return (int)n;
}

/* Ends one transfer curl reported done: a 429 goes back into the queue, anything else is
 * handed to its owner. */
static void finish_xfer(tm_kube *k, tm_xfer *x, CURLcode rc) {
    /* an exempt request's 429 goes to its owner, who retries on its own clock: requeued here
     * it would wait behind the rate limit it is exempt from */
    int64_t retry = x->cancelled || x->watch || x->exempt || rc != CURLE_OK
                        ? -1
                        : tm_kube_retry_after_ms(x->easy, x->status, x->retries);
    if (retry >= 0) {
        /* 429: the server asked us to come back later; the loop keeps its reference. */
        x->retries++;
        curl_slist_free_all(x->hdrs);
        x->hdrs = NULL;
        tm_easy_pool_put(&k->idle, x->easy); /* it waits without one (xfer_begin) */
        x->easy = NULL;
        tm_kbuf_free(&x->resp);
        x->status = 0;
        int64_t wait = tm_kube_ratelimit_reserve(k);
        x->start_at_ms = tm_kube_now_ms() + (wait > retry ? wait : retry);
        pending_insert(k, x);
        return;
    }
    if (!x->cancelled && x->watch && x->has_data && x->ops && x->ops->on_data) {
        x->has_data = false;
        x->ops->on_data(x->ud, x); /* events that arrived just before the end */
    }
    if (!x->cancelled) {
        x->cancelled = true; /* no cancel after this point */
        if (!x->watch)
            k->inflight--;
        if (x->ops && x->ops->on_done)
            x->ops->on_done(x->ud, x, rc, x->status);
    }
    xfer_unref(x);
}

/* Callbacks run between messages; that is safe because a transfer they cancel is removed from
 * the multi handle, which drops its pending message too. */
static int complete_done(tm_kube *k) {
    int n = 0, left;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(k->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *e = msg->easy_handle;
        CURLcode rc = msg->data.result; /* msg is invalid after remove_handle */
        tm_xfer *x = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&x);
        if (!x) {
            curl_multi_remove_handle(k->multi, e);
            continue;
        }
        xfer_leave_multi(k, x);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &x->status);
        finish_xfer(k, x, rc);
        n++;
    }
    return n;
}

/* ---- public async requests --------------------------------------------------------------- */

static void user_done(void *ud, tm_xfer *x, CURLcode rc, long status) {
    (void)ud;
    json_t *body = NULL;
    tm_err err = {0};
    bool ok = rc == CURLE_OK && status >= 200 && status < 300;
    if (x->resp.len && !(ok && x->body_unused))
        body = json_loadb(x->resp.data, x->resp.len, 0, NULL);
    else if (ok)
        body = json_null();
    if (!ok)
        tm_kube_fill_error(&err, x->method, x->path, x->k->server, rc, x->errbuf, status,
                           x->resp.data, x->resp.len);
    if (x->user_done)
        x->user_done(x->user_ud, (int)status, body, ok ? NULL : &err);
    json_decref(body);
}

static const tm_xfer_ops user_ops = {NULL, user_done};

static int request_async(tm_kube *k, const char *method, const char *path, const json_t *body,
                         const char *content_type, bool body_unused, tm_kube_done_fn done,
                         void *ud) {
    if (!k || !method || !path || !*method || !*path)
        return -1;
    char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !b)
        return -1;
    tm_xfer *x = tm_xfer_start(k, method, path, b, b ? strlen(b) : 0,
                               body ? (content_type ? content_type : "application/json") : NULL,
                               false, 0, NULL, &user_ops, NULL);
    free(b);
    if (!x)
        return -1;
    x->user_done = done;
    x->user_ud = ud;
    x->body_unused = body_unused;
    return 0;
}

int tm_kube_request_async(tm_kube *k, const char *method, const char *path, const json_t *body,
                          const char *content_type, tm_kube_done_fn done, void *ud) {
    return request_async(k, method, path, body, content_type, false, done, ud);
}

int tm_kube_write_async(tm_kube *k, const char *method, const char *path, const json_t *body,
                        const char *content_type, tm_kube_done_fn done, void *ud) {
    return request_async(k, method, path, body, content_type, true, done, ud);
}

int tm_kube_bind_async(tm_kube *k, const char *ns, const char *pod, const char *pod_uid,
                       const char *node, tm_kube_done_fn done, void *ud) {
    if (!ns || !pod || !node || !*ns || !*pod || !*node)
        return -1;
    json_t *body;
    char *path = tm_kube_binding_request(ns, pod, pod_uid, node, &body);
    int rc = request_async(k, "POST", path, body, NULL, true, done, ud);
    json_decref(body);
    free(path);
    return rc;
}

int tm_kube_event_post_async(tm_kube *k, const json_t *event, tm_kube_done_fn done, void *ud) {
    if (!json_is_object(event))
        return -1;
    char *path = tm_kube_event_path(event);
    int rc = request_async(k, "POST", path, event, NULL, true, done, ud);
    free(path);
    return rc;
}

/* ---- the loop ---------------------------------------------------------------------------- */

int tm_kube_loop_init(tm_kube *k, tm_err *err) {
    k->multi = curl_multi_init();
    if (!k->multi)
        return tm_err_set(err, "kube client: cannot create a curl multi handle");
    curl_multi_setopt(k->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* curl's own default is 100 streams per connection, so more requests than that opened more
     * connections (each a TLS handshake). The server's SETTINGS still apply (250 by default). */
    curl_multi_setopt(k->multi, CURLMOPT_MAX_CONCURRENT_STREAMS, 1000L);
    return 0;
}

void tm_kube_loop_stop(tm_kube *k) {
    while (k->pending)
        tm_xfer_cancel(k->pending);
    while (k->active)
        tm_xfer_cancel(k->active);
    for (size_t i = 0; i < k->ntimers; i++)
        free(k->timers[i]);
    k->ntimers = 0;
}

void tm_kube_loop_free(tm_kube *k) {
    tm_kube_loop_stop(k);
    free(k->timers);
    k->timers = NULL;
    k->timers_cap = 0;
    if (k->multi)
        curl_multi_cleanup(k->multi);
    k->multi = NULL;
    tm_easy_pool_clear(&k->idle);
}

/* The least time between two curl_multi_perform calls, in ms: 1 per 100 requests at the wire,
 * at most 5; none below 100. A perform visits every transfer, and libcurl (7.88) checks each
 * one's socket with a poll of its own even when they share one HTTP/2 connection, so its cost
 * grows with the transfers at the wire. A busy scheduler has hundreds there (binds, whose
 * answers take the API server up to a second under load) and turned about 1,000 times a
 * second, each turn with something to read: a fifth of its CPU went to those polls
 * (docs/performance.md, the profile). Answers that come within the gap are taken together by
 * the next perform; a bind gains at most 5 ms. */
static int64_t perform_gap_ms(const tm_kube *k) {
    int64_t gap = k->nactive / 100;
    return gap < 5 ? gap : 5;
}

/* Whether curl has work now: one of its timers is due (a handle just added is due at once, so
 * is a stream whose data another stream's read brought in) or a socket is ready. One poll of
 * every socket, where a perform with nothing to do costs one per transfer. curl_multi_wait,
 * not curl_multi_poll: the latter would consume a tm_kube_wakeup meant to end the wait that
 * follows (the labeler's HTTP handlers wake its loop so), and the caller would sleep its full
 * tick instead. */
static bool curl_due(tm_kube *k) {
    long ct = -1;
    curl_multi_timeout(k->multi, &ct);
    if (ct == 0)
        return true;
    int ready = 0;
    return curl_multi_wait(k->multi, NULL, 0, 0, &ready) != CURLM_OK || ready > 0;
}

/* One turn: curl's transfers (once the gap since the last perform has passed, and after a
 * wait or when curl has work), then what they finished, then timers and queued requests. */
static int process(tm_kube *k, bool waited, tm_err *err) {
    int still;
    CURLMcode mc = CURLM_OK;
    int64_t now = tm_kube_now_ms();
    if (now - k->performed_ms >= perform_gap_ms(k) && (waited || curl_due(k))) {
        mc = curl_multi_perform(k->multi, &still);
        k->performed_ms = now;
    }
    if (mc != CURLM_OK)
        return tm_err_set(err, "kube loop: curl_multi_perform: %s", curl_multi_strerror(mc));
    int n = drain_watches(k);
    n += complete_done(k);
    n += fire_timers(k);
    n += start_due(k);
    return n;
}

static int run_once(tm_kube *k, int timeout_ms, tm_err *err) {
    int64_t deadline = tm_kube_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    start_due(k);
    int n = process(k, false, err);
    if (n < 0)
        return -1;
    if (n > 0 || timeout_ms <= 0 || k->dying)
        return 0;
    int64_t now = tm_kube_now_ms();
    int64_t wait = deadline - now;
    if (k->ntimers > 0 && k->timers[0]->when - now < wait)
        wait = k->timers[0]->when - now;
    /* A queue held back by the cap moves when a transfer ends, which wakes the poll. */
    if (k->pending && may_begin(k) && k->pending->start_at_ms - now < wait)
        wait = k->pending->start_at_ms - now;
    if (wait < 0)
        wait = 0;
    int64_t rest = k->performed_ms + perform_gap_ms(k) - now;
    if (rest > 0) {
        /* Inside the gap: curl's own timeout is due at once most of the time and a busy
         * connection is always readable, so waiting on either would spin; sleep the rest of it
         * (a tm_kube_wakeup meanwhile is seen when it ends), then take whatever came. */
        poll(NULL, 0, (int)(rest < wait ? rest : wait));
    } else {
        long ct = -1;
        curl_multi_timeout(k->multi, &ct);
        if (ct >= 0 && ct < wait)
            wait = ct;
        CURLMcode mc = curl_multi_poll(k->multi, NULL, 0, (int)wait, NULL);
        if (mc != CURLM_OK)
            return tm_err_set(err, "kube loop: curl_multi_poll: %s", curl_multi_strerror(mc));
    }
    return process(k, true, err) < 0 ? -1 : 0;
}

/* A callback may free the client (tm_kube_free from inside the loop): everything is stopped at
 * once, and the memory goes when the outermost tm_kube_run returns. */
int tm_kube_run(tm_kube *k, int timeout_ms, tm_err *err) {
    k->running++;
    int rc = run_once(k, timeout_ms, err);
    if (--k->running == 0 && k->dying) {
        tm_kube_free(k);
        return 0;
    }
    return rc;
}

void tm_kube_wakeup(tm_kube *k) {
    if (k && k->multi)
        curl_multi_wakeup(k->multi);
}

int tm_kube_inflight(const tm_kube *k) {
    return k->inflight;
}

int tm_kube_active(const tm_kube *k) {
    return k->nactive;
}
