/* informer.c: list+watch with a local store (tm_informer_* of lib/kube.h), on the client's
 * loop. State machine:
 *
 *   list (paged) --done--> diff against store, emit, synced --> watch from the list's RV
 *   watch: events update store and RV; BOOKMARK updates RV only
 *   watch ends normally (server timeout, or the server shedding watchers during a burst)
 *       --> watch again at once from the last RV, no re-list (client-go does the same); only a
 *       stream that ended quickly without a single event, several times in a row, backs off,
 *       so that a server answering every watch with an empty 200 is not hammered
 *   watch fails (connection refused, reset, 5xx) --> backoff, watch again from the last RV;
 *       while the server is down (connection refused, 503) the wait stays under a second, so
 *       watches resume promptly once it answers again: a refused connection costs the server
 *       nothing, and an API server restart otherwise left the pod watch at its 10 s cap
 *
 * Initial list: streamed by default (a watch with sendInitialEvents=true, as client-go's
 * WatchListClient: the server sends every object as ADDED, then a BOOKMARK annotated
 * k8s.io/initial-events-end; the same stream then goes on as the watch). Nothing is delivered
 * until that bookmark: the objects are gathered and diffed against the store as a paged list's
 * are. A server that refuses the parameter (4xx: the WatchList feature off), or a stream that
 * goes quiet before the bookmark (a server that ignored it), turns the informer to paged lists
 * for good (tm_kube_config.paged_lists does so from the start).
 *
 * Wire format: pods and nodes are asked for in protobuf (as kube-scheduler does), everything
 * else in JSON; the decoder is picked by what the server answered (a server that cannot encode
 * protobuf answers JSON). Protobuf objects are converted to the JSON the server would have sent
 * (lib/kube_proto_json.h), so callbacks, transforms and the store see the same objects either
 * way. An object or frame that does not decode or convert is not skipped: the informer says
 * why, goes back to JSON for good and re-lists, so no change is lost.
 *
 * Every listed or watched object passes through the caller's transform (if any) before it is
 * stored or delivered, so the store holds only what the caller reads.
 *   HTTP 410 or an ERROR event with code 410 --> re-list at once (the RV is too old)
 *   list fails --> backoff, list again
 *
 * The diff on re-list is what makes an informer see every change made while it was not
 * watching (an API server restart), deletions included. Callbacks may stop the informer: it
 * is then freed when the callback returns (`busy`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "jsonutil.h"
#include "kube_internal.h"
#include "kube_proto.h"
#include "kube_proto_json.h"
#include "log.h"

/* client-go watches for a random 5..10 minutes so that servers are not hit in lockstep. */
#define WATCH_MIN_S      300
#define BACKOFF_BASE_MS  500
#define BACKOFF_CAP_MS   10000
#define BACKOFF_RESET_MS 60000
/* A stream that ends sooner than this without any event is "empty"; after QUICK_EMPTY_FREE
 * empty streams in a row, the next re-watches back off as after a failure. */
#define WATCH_HEALTHY_MS 1000
#define QUICK_EMPTY_FREE 2
/* The wait after a failure that says the server is down or starting (connection refused, 503):
 * DOWN_BASE_MS plus up to DOWN_JITTER_MS, whatever the backoff reached. */
#define DOWN_BASE_MS   200
#define DOWN_JITTER_MS 600

struct tm_informer {
    tm_kube *k;
    char *path, *label_selector, *field_selector;
    int page_size;
    void (*on_event)(void *ud, tm_watch_type type, json_t *obj, json_t *old);
    void (*on_synced)(void *ud);
    void *ud;
    json_t *(*transform)(void *tud, json_t *obj);
    void *transform_ud;

    json_t *store;   /* "ns/name" (or "name") -> object, or its JSON text (compact) */
    json_t *seen;    /* a list in progress: the keys listed so far (values null) */
    bool compact;    /* the store keeps text (tm_informer_opts.compact_store) */
    json_t *scratch; /* compact: what tm_informer_get returned last */
    char *rv, *cont;
    bool synced, stopped, list_restarted;
    int busy;
    unsigned lists, watches;
    tm_xfer *xfer;
    tm_timer *timer;
    tm_backoff bo;
    unsigned backoffs; /* waits scheduled by retry_later (tm_informer_backoffs) */
    int64_t watch_started_ms;
    unsigned watch_events;  /* events (bookmarks included) of the current stream */
    unsigned quick_empty;   /* streams in a row that ended quickly without an event */
    tm_kube_attachment att; /* torn down by tm_kube_free */
    /* The kinds asked for in protobuf (NULL: JSON only, for other kinds or after a fallback) */
    const tm_kp_kind *kp_item, *kp_list;
    bool last_protobuf;       /* the last list page or watch stream came in protobuf */
    bool paged;               /* list by pages (the server refused streamed lists, or configured) */
    bool initial;             /* a streamed list in progress: its objects are list items */
    int64_t initial_heard_ms; /* when the streamed list last received anything */
    tm_timer *quiet_timer;    /* checks that the streamed list is not silently ignored */
};

static void start_list(tm_informer *inf);
static void start_watch(tm_informer *inf);

static void informer_destroy(tm_informer *inf) {
    json_decref(inf->store);
    json_decref(inf->seen);
    json_decref(inf->scratch);
    free(inf->rv);
    free(inf->cont);
    free(inf->path);
    free(inf->label_selector);
    free(inf->field_selector);
    free(inf);
}

/* Returns true if the informer was stopped by a callback (and must not be touched again). */
static bool leave(tm_informer *inf) {
    if (--inf->busy == 0 && inf->stopped) {
        informer_destroy(inf);
        return true;
    }
    return inf->stopped;
}

/* ---- the store ----------------------------------------------------------------------------
 * A compact store keeps each object as its compact JSON text: a kilobyte where the parsed tree
 * of the same object takes several (jansson allocates every object, key and value apart). The
 * text is parsed again only when an event needs the previous version (MODIFIED, DELETED), at a
 * re-list's diff and for tm_informer_get/foreach. */

/* The stored version under key (a new reference), NULL when none. */
static json_t *store_get(const tm_informer *inf, const char *key) {
    json_t *v = json_object_get(inf->store, key);
    if (!v || !inf->compact)
        return json_incref(v);
    json_t *obj = json_loadb(json_string_value(v), json_string_length(v), 0, NULL);
    if (!obj)
        tm_warn("informer path=%s: the stored text of %s does not parse", inf->path, key);
    return obj;
}

static void store_put(tm_informer *inf, const char *key, json_t *obj) {
    if (!inf->compact) {
        json_object_set(inf->store, key, obj);
        return;
    }
    char *text = json_dumps(obj, JSON_COMPACT);
    if (text)
        json_object_set_new_nocheck(inf->store, key, json_stringn_nocheck(text, strlen(text)));
    free(text);
}

static void obj_key(const json_t *obj, char *buf, size_t len) {
    const char *ns = tm_json_str(obj, "metadata.namespace", NULL);
    const char *name = tm_json_str(obj, "metadata.name", "");
    if (ns && *ns)
        snprintf(buf, len, "%s/%s", ns, name);
    else
        snprintf(buf, len, "%s", name);
}

static const char *obj_rv(const json_t *obj) {
    return tm_json_str(obj, "metadata.resourceVersion", "");
}

static void set_rv(tm_informer *inf, const char *rv) {
    if (rv && *rv) {
        free(inf->rv);
        inf->rv = strdup(rv);
    }
}

/* The caller's transform: takes obj (a reference), returns the reference to keep or NULL. */
static json_t *keep(tm_informer *inf, json_t *obj) {
    return inf->transform ? inf->transform(inf->transform_ud, obj) : obj;
}

static void emit(tm_informer *inf, tm_watch_type t, json_t *obj, json_t *old) {
    if (inf->on_event && !inf->stopped)
        inf->on_event(inf->ud, t, obj, old);
}

static char *with_selectors(tm_informer *inf, char *p) {
    if (inf->label_selector)
        p = tm_kube_query_add(p, "labelSelector", inf->label_selector);
    if (inf->field_selector)
        p = tm_kube_query_add(p, "fieldSelector", inf->field_selector);
    return p;
}

static void on_timer_list(void *ud) {
    tm_informer *inf = ud;
    inf->timer = NULL;
    start_list(inf);
}

static void on_timer_watch(void *ud) {
    tm_informer *inf = ud;
    inf->timer = NULL;
    start_watch(inf);
}

/* Does this failure say the server is down or starting, rather than overloaded or refusing? */
static bool server_down(CURLcode rc, long status) {
    return rc == CURLE_COULDNT_CONNECT || (rc == CURLE_OK && status == 503);
}

static void retry_later(tm_informer *inf, void (*fn)(void *), const char *what, const char *why,
                        bool down) {
    int64_t d = tm_backoff_next(&inf->bo, tm_kube_now_ms());
    if (down) {
        int64_t quick = DOWN_BASE_MS + (int64_t)(tm_backoff_rand(&inf->bo) * DOWN_JITTER_MS);
        if (d > quick)
            d = quick;
    }
    inf->backoffs++;
    tm_warn("informer %s failed path=%s retry_ms=%lld error=\"%s\"", what, inf->path, (long long)d,
            why);
    inf->timer = tm_timer_add(inf->k, d, fn, inf);
}

/* ---- list -------------------------------------------------------------------------------- */

static void list_page(tm_informer *inf);

/* A listed object (a reference, taken), compared with the store as it comes: new -> ADDED,
 * another resourceVersion -> MODIFIED, the same -> nothing. A list is thus diffed against the
 * store without ever holding the whole list: only the keys seen so far. */
static void list_item(tm_informer *inf, json_t *obj) {
    char key[600];
    obj_key(obj, key, sizeof key);
    json_t *kept = keep(inf, obj);
    if (!kept)
        return; /* dropped by the transform: if it was stored, the list's end deletes it */
    json_object_set_new_nocheck(inf->seen, key, json_null());
    json_t *prev = store_get(inf, key);
    if (!prev || strcmp(obj_rv(prev), obj_rv(kept)) != 0) {
        store_put(inf, key, kept);
        emit(inf, prev ? TM_WATCH_MODIFIED : TM_WATCH_ADDED, kept, prev);
    }
    json_decref(prev);
    json_decref(kept);
}

/* The list is complete: whatever the store holds that it did not list is gone (a deletion
 * made while the informer was not watching). Returns true when a callback stopped it. */
static bool list_end(tm_informer *inf) {
    inf->busy++;
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(inf->store, tmp, key, v) {
        if (inf->stopped)
            break;
        if (json_object_get(inf->seen, key))
            continue;
        json_t *old = store_get(inf, key);
        json_object_del(inf->store, key);
        if (old)
            emit(inf, TM_WATCH_DELETED, old, old);
        json_decref(old);
    }
    json_object_clear(inf->seen);
    inf->synced = true;
    if (!inf->stopped && inf->on_synced)
        inf->on_synced(inf->ud);
    return leave(inf);
}

static void apply_list(tm_informer *inf) {
    if (!list_end(inf))
        start_watch(inf);
}

/* Protobuf could not be read: say why, speak JSON from now on, list again at once. */
static void fall_back_to_json(tm_informer *inf, const char *why) {
    tm_warn("informer falls back to JSON and re-lists path=%s error=\"%s\"", inf->path, why);
    inf->kp_item = inf->kp_list = NULL;
}

/* Takes the continue token and, on the last page, the list's resourceVersion; then fetches
 * the next page or applies the list. */
static void list_page_end(tm_informer *inf, const char *rv, const char *cont) {
    free(inf->cont);
    inf->cont = cont && *cont ? strdup(cont) : NULL;
    if (!inf->cont)
        set_rv(inf, rv);
}

/* A page in protobuf: each item converted to the server's JSON. Returns false after a fall
 * back to JSON (the list is then started again). */
static bool list_protobuf_page(tm_informer *inf, tm_xfer *x) {
    tm_err err = {0};
    ProtobufCMessage *list = tm_kp_decode(x->resp.data, x->resp.len, inf->kp_list, &err);
    tm_kbuf_free(&x->resp); /* protobuf-c copied what it kept */
    if (!list) {
        fall_back_to_json(inf, err.msg);
        return false;
    }
    ProtobufCMessage *const *items;
    size_t n = tm_kp_list_items(list, &items);
    for (size_t i = 0; i < n && !inf->stopped; i++) {
        json_t *obj =
            tm_kp_to_json(items[i], inf->kp_item, TM_KPJ_NO_MANAGED_FIELDS | TM_KPJ_STRICT, &err);
        if (!obj) {
            tm_kp_free(list);
            fall_back_to_json(inf, err.msg);
            return false;
        }
        list_item(inf, obj);
    }
    const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ListMeta *lm = tm_kp_list_meta(list);
    list_page_end(inf, lm ? lm->resourceversion : NULL, lm ? lm->continue_ : NULL);
    tm_kp_free(list);
    inf->last_protobuf = true;
    return true;
}

typedef enum {
    PAGE_READ,    /* its items were taken: the next page, or the list's end */
    PAGE_RELIST,  /* start the list again (a fall back to JSON) */
    PAGE_UNPAGED, /* the continue token expired: the list again, unpaged */
    PAGE_RETRY,   /* a failure: retry_later was called */
} page_result;

static page_result read_page(tm_informer *inf, tm_xfer *x, CURLcode rc, long status) {
    if (rc == CURLE_OK && status == 200 && inf->kp_list &&
        tm_kp_is_protobuf(x->resp.data, x->resp.len))
        return list_protobuf_page(inf, x) ? PAGE_READ : PAGE_RELIST;
    json_t *page = NULL;
    if (rc == CURLE_OK && status == 200)
        page = json_loadb(x->resp.data ? x->resp.data : "", x->resp.len, 0, NULL);
    if (!page || !json_is_array(json_object_get(page, "items"))) {
        json_decref(page);
        if (rc == CURLE_OK && status == 410 && inf->cont && !inf->list_restarted)
            return PAGE_UNPAGED;
        tm_err err = {0};
        if (rc == CURLE_OK && status == 200)
            tm_err_set(&err, "GET %s: response is not a list", x->path);
        else
            tm_kube_fill_error(&err, x->method, x->path, inf->k->server, rc, x->errbuf, status,
                               x->resp.data, x->resp.len);
        retry_later(inf, on_timer_list, "list", err.msg, server_down(rc, status));
        return PAGE_RETRY;
    }
    /* The page's text is not needed once parsed: free it before the next page is fetched. */
    tm_kbuf_free(&x->resp);
    size_t i;
    json_t *it;
    json_t *items = json_object_get(page, "items");
    json_array_foreach(items, i, it) {
        if (inf->stopped)
            break;
        tm_kube_fill_kind(it, page);
        json_incref(it);
        /* drop the page's reference now: an object the transform replaced is freed at once */
        json_array_set_new(items, i, json_null());
        list_item(inf, it);
    }
    list_page_end(inf, tm_json_str(page, "metadata.resourceVersion", NULL),
                  tm_json_str(page, "metadata.continue", NULL));
    inf->last_protobuf = false;
    json_decref(page);
    return PAGE_READ;
}

static void list_done(void *ud, tm_xfer *x, CURLcode rc, long status) {
    tm_informer *inf = ud;
    inf->xfer = NULL;
    inf->busy++; /* the items' events may stop the informer */
    page_result r = read_page(inf, x, rc, status);
    if (leave(inf) || r == PAGE_RETRY)
        return;
    if (r == PAGE_RELIST) {
        start_list(inf);
    } else if (r == PAGE_UNPAGED) {
        /* The continue token expired (etcd compacted past it): start over once, in one
         * unpaged request that no compaction can break, as client-go's pager does. */
        inf->list_restarted = true;
        json_object_clear(inf->seen);
        free(inf->cont);
        inf->cont = NULL;
        list_page(inf);
    } else if (inf->cont) {
        list_page(inf);
    } else {
        apply_list(inf);
    }
}

static const tm_xfer_ops list_ops = {NULL, list_done};

static void list_page(tm_informer *inf) {
    char num[32];
    snprintf(num, sizeof num, "%d", inf->page_size);
    char *p = strdup(inf->path);
    if (!inf->list_restarted)
        p = tm_kube_query_add(p, "limit", num);
    p = with_selectors(inf, p);
    if (inf->cont)
        p = tm_kube_query_add(p, "continue", inf->cont);
    inf->xfer =
        tm_xfer_start(inf->k, "GET", p, NULL, 0, NULL, false, 0, inf->kp_item, &list_ops, inf);
    free(p);
    if (!inf->xfer)
        retry_later(inf, on_timer_list, "list", "out of memory", false);
}

static void start_stream_list(tm_informer *inf);
static void turn_to_paged(tm_informer *inf, tm_xfer *x, const char *why);

static void start_list(tm_informer *inf) {
    if (inf->lists++ > 0)
        tm_info("informer re-list path=%s", inf->path);
    json_object_clear(inf->seen);
    free(inf->cont);
    inf->cont = NULL;
    inf->list_restarted = false;
    if (inf->paged)
        list_page(inf);
    else
        start_stream_list(inf);
}

/* Paged lists from now on, and one at once (the streamed one is abandoned). */
static void turn_to_paged(tm_informer *inf, tm_xfer *x, const char *why) {
    tm_warn("informer lists by pages from now on path=%s reason=\"%s\"", inf->path, why);
    inf->paged = true;
    inf->initial = false;
    if (x) {
        if (inf->xfer == x)
            inf->xfer = NULL;
        tm_xfer_cancel(x);
    }
    inf->lists--; /* the same list, by other means: not a re-list */
    start_list(inf);
}

/* A server that does not know sendInitialEvents starts a plain watch from now: no objects, no
 * closing bookmark, ever. A streamed list that hears nothing for this long is given up. */
#define STREAM_QUIET_MS 30000

static void on_quiet_check(void *ud) {
    tm_informer *inf = ud;
    inf->quiet_timer = NULL;
    if (!inf->initial || inf->stopped)
        return;
    int64_t quiet = tm_kube_now_ms() - inf->initial_heard_ms;
    if (quiet >= STREAM_QUIET_MS && inf->xfer) {
        char why[160];
        snprintf(why, sizeof why, "no initial-events-end bookmark, nothing heard for %lld ms",
                 (long long)quiet);
        turn_to_paged(inf, inf->xfer, why);
        return;
    }
    /* between tries (a backoff) nothing is being heard: check again a while after the next */
    int64_t delay = STREAM_QUIET_MS - quiet + 100;
    inf->quiet_timer = tm_timer_add(inf->k, delay < 1000 ? 1000 : delay, on_quiet_check, inf);
}

static void start_stream_list(tm_informer *inf) {
    inf->initial = true;
    inf->initial_heard_ms = tm_kube_now_ms();
    if (!inf->quiet_timer)
        inf->quiet_timer = tm_timer_add(inf->k, STREAM_QUIET_MS + 100, on_quiet_check, inf);
    start_watch(inf);
}

/* ---- watch ------------------------------------------------------------------------------- */

static void relist_now(tm_informer *inf, tm_xfer *x) {
    if (inf->xfer == x)
        inf->xfer = NULL;
    tm_xfer_cancel(x);
    start_list(inf);
}

/* The bookmark annotation that ends a streamed list's initial events ("" when absent). The key
 * has dots, so it is looked up by hand rather than by a tm_json_str path. */
static const char *initial_end_annotation(const json_t *obj) {
    const json_t *a = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const json_t *v = json_object_get(a, "k8s.io/initial-events-end");
    return json_is_string(v) ? json_string_value(v) : "";
}

/* An event of a streamed list's initial part: a list item; the bookmark that ends it ends the
 * list. Returns true when a callback stopped the informer. */
static bool handle_initial(tm_informer *inf, tm_watch_event *ev) {
    inf->initial_heard_ms = tm_kube_now_ms();
    if (ev->type == TM_WS_BOOKMARK) {
        set_rv(inf, obj_rv(ev->object));
        if (strcmp(initial_end_annotation(ev->object), "true") != 0)
            return false;
        inf->initial = false;
        return list_end(inf);
    }
    if (ev->type == TM_WS_DELETED) { /* not sent in the initial part; read as not listed */
        char key[600];
        obj_key(ev->object, key, sizeof key);
        json_object_del(inf->seen, key);
        return false;
    }
    list_item(inf, json_incref(ev->object));
    return false;
}

static void handle_event(tm_informer *inf, tm_watch_event *ev) {
    char key[600];
    if (ev->type == TM_WS_BOOKMARK || ev->type == TM_WS_ERROR) {
        set_rv(inf, obj_rv(ev->object));
        return;
    }
    obj_key(ev->object, key, sizeof key);
    /* ev->object stays alive (the stream's reference) while the transformed copy is used */
    json_t *obj = keep(inf, json_incref(ev->object));
    json_t *old = store_get(inf, key);
    if (!obj) {
        /* dropped by the transform: an earlier stored version goes, as a re-list would do */
        set_rv(inf, obj_rv(ev->object));
        if (old) {
            json_object_del(inf->store, key);
            emit(inf, TM_WATCH_DELETED, old, old);
        }
        json_decref(old);
        return;
    }
    switch (ev->type) {
    case TM_WS_ADDED:
    case TM_WS_MODIFIED:
        set_rv(inf, obj_rv(obj));
        if (old && strcmp(obj_rv(old), obj_rv(obj)) == 0)
            break; /* already seen (e.g. listed just before the watch began) */
        store_put(inf, key, obj);
        emit(inf, old ? TM_WATCH_MODIFIED : TM_WATCH_ADDED, obj, old);
        break;
    case TM_WS_DELETED:
        set_rv(inf, obj_rv(obj));
        if (old) {
            json_object_del(inf->store, key);
            emit(inf, TM_WATCH_DELETED, obj, old);
        }
        break;
    case TM_WS_BOOKMARK:
    case TM_WS_ERROR:
        break;
    }
    json_decref(old);
    json_decref(obj);
}

/* The next event of either stream, its object as JSON: 1, 0 (none buffered) or -1 with err. */
static int next_event(tm_informer *inf, tm_xfer *x, tm_watch_event *ev, tm_err *err) {
    if (!x->kpw)
        return tm_watchstream_next(x->ws, ev, err);
    inf->last_protobuf = true;
    tm_kp_event kev;
    int r = tm_kpwatch_next(x->kpw, &kev, err);
    if (r <= 0)
        return r;
    ev->type = kev.type;
    ev->code = kev.code;
    ev->object =
        tm_kp_to_json(kev.object, kev.type == TM_WS_ERROR ? &tm_kp_kind_status : inf->kp_item,
                      TM_KPJ_NO_MANAGED_FIELDS | TM_KPJ_STRICT, err);
    tm_kp_free(kev.object);
    return ev->object ? 1 : -1;
}

static void watch_data(void *ud, tm_xfer *x) {
    tm_informer *inf = ud;
    tm_backoff_ok(&inf->bo, inf->watch_started_ms);
    inf->busy++;
    tm_watch_event ev;
    tm_err err = {0};
    int r;
    while (!inf->stopped && (r = next_event(inf, x, &ev, &err)) != 0) {
        if (r < 0 && x->kpw) {
            /* A JSON line that does not parse is one bad event; a protobuf frame that does not
             * decode may be a type this build does not know: JSON from now on, re-list. */
            fall_back_to_json(inf, err.msg);
            relist_now(inf, x);
            break;
        }
        if (r < 0) {
            tm_warn("informer skipped a bad watch event path=%s error=\"%s\"", inf->path, err.msg);
            continue;
        }
        if (ev.type == TM_WS_ERROR) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s", tm_json_str(ev.object, "message", ""));
            json_decref(ev.object);
            if (ev.code == 410) {
                tm_info("informer watch expired, re-listing path=%s msg=\"%s\"", inf->path, msg);
                relist_now(inf, x);
            } else {
                if (inf->xfer == x)
                    inf->xfer = NULL;
                tm_xfer_cancel(x);
                char why[700];
                snprintf(why, sizeof why, "watch ERROR event code=%d: %s", ev.code, msg);
                /* a streamed list cut short is listed again, whole */
                retry_later(inf, inf->initial ? on_timer_list : on_timer_watch, "watch", why,
                            false);
            }
            break;
        }
        inf->watch_events++;
        if (inf->initial)
            handle_initial(inf, &ev); /* a callback that stops the informer ends the loop */
        else
            handle_event(inf, &ev);
        json_decref(ev.object);
    }
    leave(inf);
}

static void watch_done(void *ud, tm_xfer *x, CURLcode rc, long status) {
    tm_informer *inf = ud;
    inf->xfer = NULL;
    if (rc == CURLE_OK && status == 410) {
        tm_info("informer watch got 410 Gone, re-listing path=%s", inf->path);
        start_list(inf);
        return;
    }
    if (inf->initial) {
        tm_err err = {0};
        tm_kube_fill_error(&err, x->method, x->path, inf->k->server, rc, x->errbuf, status,
                           x->resp.data, x->resp.len);
        if (rc == CURLE_OK && status >= 400 && status < 500 && status != 429) {
            /* the server refuses sendInitialEvents (its WatchList feature is off) */
            turn_to_paged(inf, NULL, err.msg);
        } else if (rc == CURLE_OK && status == 200) {
            /* the stream ended before the list did (the server's timeout, or shedding load) */
            if (inf->watch_events > 0)
                start_list(inf);
            else
                retry_later(inf, on_timer_list, "streamed list",
                            "the stream ended before its first event", false);
        } else {
            retry_later(inf, on_timer_list, "streamed list", err.msg, server_down(rc, status));
        }
        return;
    }
    int64_t lasted = tm_kube_now_ms() - inf->watch_started_ms;
    tm_err err = {0};
    if (rc == CURLE_OK && status == 200) {
        /* A normal end (the server's timeout, or the server closing watches to shed load):
         * resume from the last RV at once. Waiting here delays every change made meanwhile. */
        if (inf->watch_events > 0 || lasted >= WATCH_HEALTHY_MS)
            inf->quick_empty = 0;
        else
            inf->quick_empty++;
        if (inf->quick_empty <= QUICK_EMPTY_FREE) {
            tm_backoff_ok(&inf->bo, inf->watch_started_ms);
            start_watch(inf);
            return;
        }
        tm_err_set(&err, "watch %s ended after %lld ms without an event, %u times in a row",
                   inf->path, (long long)lasted, inf->quick_empty);
    } else
        tm_kube_fill_error(&err, x->method, x->path, inf->k->server, rc, x->errbuf, status,
                           x->resp.data, x->resp.len);
    retry_later(inf, on_timer_watch, "watch", err.msg, server_down(rc, status));
}

static const tm_xfer_ops watch_ops = {watch_data, watch_done};

static void start_watch(tm_informer *inf) {
    long timeout = WATCH_MIN_S + (long)(tm_backoff_rand(&inf->bo) * WATCH_MIN_S);
    char num[32];
    snprintf(num, sizeof num, "%ld", timeout);
    char *p = tm_kube_query_add(strdup(inf->path), "watch", "1");
    p = tm_kube_query_add(p, "allowWatchBookmarks", "true");
    if (inf->initial) {
        /* the current state first (a consistent read, no resourceVersion), then the changes */
        p = tm_kube_query_add(p, "sendInitialEvents", "true");
        p = tm_kube_query_add(p, "resourceVersionMatch", "NotOlderThan");
    } else if (inf->rv) {
        p = tm_kube_query_add(p, "resourceVersion", inf->rv);
    }
    p = tm_kube_query_add(p, "timeoutSeconds", num);
    p = with_selectors(inf, p);
    if (inf->watches++ > 0)
        tm_debug("informer watch reconnect path=%s rv=%s", inf->path, inf->rv ? inf->rv : "");
    inf->watch_started_ms = tm_kube_now_ms();
    inf->watch_events = 0;
    /* The transfer limit backs up the server's timeout against half-open connections. */
    inf->xfer = tm_xfer_start(inf->k, "GET", p, NULL, 0, NULL, true, timeout + 30, inf->kp_item,
                              &watch_ops, inf);
    free(p);
    if (!inf->xfer)
        retry_later(inf, on_timer_watch, "watch", "out of memory", false);
}

/* ---- public ------------------------------------------------------------------------------ */

static void informer_teardown(void *owner) {
    tm_informer_stop(owner);
}

tm_informer *tm_informer_start(tm_kube *k, const tm_informer_opts *opts, tm_err *err) {
    if (!k || !opts || !opts->path || opts->path[0] != '/' || strchr(opts->path, '?')) {
        tm_err_set(err,
                   "informer: path must be a collection path such as /api/v1/pods, "
                   "without a query (got '%s')",
                   opts && opts->path ? opts->path : "(null)");
        return NULL;
    }
    if (opts->page_size < 0) {
        tm_err_set(err, "informer %s: page_size %d must not be negative", opts->path,
                   opts->page_size);
        return NULL;
    }
    tm_informer *inf = calloc(1, sizeof *inf);
    inf->k = k;
    inf->path = strdup(opts->path);
    inf->label_selector =
        opts->label_selector && *opts->label_selector ? strdup(opts->label_selector) : NULL;
    inf->field_selector =
        opts->field_selector && *opts->field_selector ? strdup(opts->field_selector) : NULL;
    inf->page_size = opts->page_size > 0 ? opts->page_size : 500;
    inf->on_event = opts->on_event;
    inf->on_synced = opts->on_synced;
    inf->ud = opts->ud;
    inf->transform = opts->transform;
    inf->transform_ud = opts->transform_ud;
    inf->paged = k->paged_lists;
    if (!k->json_only && tm_kp_kinds_for_path(inf->path, &inf->kp_item, &inf->kp_list) < 0)
        inf->kp_item = inf->kp_list = NULL;
    inf->store = json_object();
    inf->seen = json_object();
    inf->compact = opts->compact_store;
    tm_backoff_init(
        &inf->bo, TM_BACKOFF_DECORRELATED, BACKOFF_BASE_MS, BACKOFF_CAP_MS, BACKOFF_RESET_MS,
        (uint64_t)tm_kube_now_ms() ^ ((uint64_t)(uintptr_t)inf << 16) ^ (uint64_t)getpid());
    inf->att.teardown = informer_teardown;
    inf->att.owner = inf;
    tm_kube_attach(k, &inf->att);
    start_list(inf);
    return inf;
}

void tm_informer_stop(tm_informer *inf) {
    if (!inf || inf->stopped)
        return;
    tm_kube *k = inf->k;
    inf->stopped = true;
    if (inf->xfer)
        tm_xfer_cancel(inf->xfer);
    inf->xfer = NULL;
    if (inf->timer)
        tm_timer_cancel(k, inf->timer);
    inf->timer = NULL;
    if (inf->quiet_timer)
        tm_timer_cancel(k, inf->quiet_timer);
    inf->quiet_timer = NULL;
    tm_kube_detach(k, &inf->att);
    if (inf->busy == 0)
        informer_destroy(inf);
}

bool tm_informer_synced(const tm_informer *inf) {
    return inf && inf->synced;
}

json_t *tm_informer_get(const tm_informer *inf, const char *ns, const char *name) {
    if (!inf || !name)
        return NULL;
    char key[600];
    if (ns && *ns)
        snprintf(key, sizeof key, "%s/%s", ns, name);
    else
        snprintf(key, sizeof key, "%s", name);
    if (!inf->compact)
        return json_object_get(inf->store, key);
    /* a parsed copy, kept until the next call (the store itself holds text) */
    tm_informer *mut = (tm_informer *)inf;
    json_decref(mut->scratch);
    mut->scratch = store_get(inf, key);
    return mut->scratch;
}

size_t tm_informer_size(const tm_informer *inf) {
    return inf ? json_object_size(inf->store) : 0;
}

void tm_informer_foreach(const tm_informer *inf, void (*fn)(void *ud, json_t *obj), void *ud) {
    if (!inf || !fn)
        return;
    const char *key;
    json_t *obj;
    json_object_foreach(inf->store, key, obj) {
        if (!inf->compact) {
            fn(ud, obj);
            continue;
        }
        json_t *parsed = store_get(inf, key);
        if (parsed)
            fn(ud, parsed);
        json_decref(parsed);
    }
}

const char *tm_informer_encoding(const tm_informer *inf) {
    return inf && inf->last_protobuf ? "protobuf" : "json";
}

/* Re-lists after the first list. */
unsigned tm_informer_relists(const tm_informer *inf) {
    return inf && inf->lists > 0 ? inf->lists - 1 : 0;
}

unsigned tm_informer_backoffs(const tm_informer *inf) {
    return inf ? inf->backoffs : 0;
}

/* Watch connections after the first. */
unsigned tm_informer_reconnects(const tm_informer *inf) {
    return inf && inf->watches > 0 ? inf->watches - 1 : 0;
}
