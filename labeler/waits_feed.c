/* waits_feed.c: see waits_feed.h. Everything below runs on the feed's own thread (its tm_kube
 * loop), except start and stop. */
#include "labeler/waits_feed.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "labeler/waits_pod.h"
#include "labeler/waits_store.h"
#include "labeler/waits_track.h"
#include "lib/kube.h"
#include "lib/log.h"

#define TICK_MS        500
#define RECONNECT_S    5
#define ANNOTATE_MS    2000
#define PRUNE_S        3600
#define DEFAULT_SLOT_S 60
/* Times an observation the server refuses with a transient error is tried before it is dropped
 * (an error that persists must not hold the backlog forever). */
#define FLUSH_TRIES 10

struct lab_waits_feed {
    lab_waits_feed_opts o;
    char *db;
    pthread_t thread;
    atomic_int stop;
    tm_kube *kube;
    tm_informer *inf;
    lab_waits_store *store; /* NULL while the database is unreachable */
    time_t next_connect, next_prune;
    struct timespec next_annotate;
    lab_waits_tracker *tr;
    lab_waits_obs *backlog;
    size_t nb;
    long long dropped;
    int head_tries;    /* failed tries of backlog[0] (transient server errors) */
    json_t *estimates; /* shape key -> estimate in seconds, from the store */
    json_t *sent;      /* pod uid -> predicted start last patched (not yet seen back) */
    bool loaded;       /* estimates were read from the store at least once */
    asa_config cfg;
    asa_rng rng;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void key_text(const asa_key *k, char *out, size_t size) {
    snprintf(out, size, "%s|%s|%d|%lld|%lld", k->ns, k->group, k->pods, k->cpu_milli, k->mem_bytes);
}

static void on_store_warn(void *ud, const char *msg) {
    (void)ud;
    tm_warn("%s", msg);
}

static void remember(lab_waits_feed *f, const waits_record *r) {
    char k[256];
    key_text(&r->key, k, sizeof k);
    json_object_set_new(f->estimates, k, json_real(waits_estimate(r)));
}

static void drop_store(lab_waits_feed *f, const char *why) {
    tm_warn("waits feed: database unavailable, %zu observations wait in memory: %s", f->nb, why);
    lab_waits_store_close(f->store);
    f->store = NULL;
    f->next_connect = time(NULL) + RECONNECT_S;
}

static void connect_db(lab_waits_feed *f) {
    if (f->store || time(NULL) < f->next_connect)
        return;
    int t_ms = (f->o.db_timeout_s > 0 ? f->o.db_timeout_s : 10) * 1000;
    tm_pg_limits lim = {.statement_ms = t_ms, .lock_ms = t_ms / 2, .answer_ms = t_ms + 2000};
    tm_err err = {0};
    f->store = lab_waits_store_open(f->db, &lim, on_store_warn, f, &err);
    if (!f->store) {
        f->next_connect = time(NULL) + RECONNECT_S;
        tm_debug("waits feed: database not reachable yet: %s", err.msg);
        return;
    }
    waits_record *v;
    size_t n;
    if (lab_waits_store_list(f->store, NULL, &v, &n, &err) < 0) {
        drop_store(f, err.msg);
        return;
    }
    for (size_t i = 0; i < n; i++)
        remember(f, &v[i]);
    free(v);
    f->loaded = true;
    tm_info("waits feed: database connected, %zu shapes learned so far", n);
}

static void push(lab_waits_feed *f, const lab_waits_obs *o) {
    if (f->nb == LAB_WAITS_FEED_BACKLOG) {
        lab_waits_obs_clear(&f->backlog[0]);
        memmove(f->backlog, f->backlog + 1, (f->nb - 1) * sizeof *f->backlog);
        f->nb--;
        if (f->dropped++ % 1000 == 0)
            tm_warn("waits feed: %d observations wait for the database: dropping the oldest "
                    "(%lld so far)",
                    LAB_WAITS_FEED_BACKLOG, f->dropped);
    }
    f->backlog[f->nb++] = *o;
}

/* Writes the waiting observations in order; stops at the first connection trouble. */
static void flush(lab_waits_feed *f) {
    size_t done = 0;
    while (f->store && done < f->nb) {
        const lab_waits_obs *o = &f->backlog[done];
        tm_err err = {0};
        waits_record rec;
        int rc = lab_waits_store_observe(f->store, &o->key, o->request_id, o->members, o->censored,
                                         o->wait_s, &f->cfg, &f->rng, &rec, &err);
        if (rc < 0 && lab_waits_store_retryable(f->store, &err)) {
            if (!lab_waits_store_ensure(f->store)) {
                drop_store(f, err.msg);
                break;
            }
            /* The server refused it for now (a lock or statement timeout, a deadlock) on a
             * connection that is fine: it stays first in line for the next tick. It used to be
             * dropped as if it were invalid (asa_waits_test, a row locked for 8 s). */
            if (strstr(err.msg, "(SQLSTATE ") && ++f->head_tries < FLUSH_TRIES) {
                tm_warn("waits feed: wait of %s not stored yet (try %d of %d): %s", o->request_id,
                        f->head_tries, FLUSH_TRIES, err.msg);
                break;
            }
        }
        f->head_tries = 0;
        if (rc < 0)
            tm_warn("waits feed: wait of %s not stored: %s", o->request_id, err.msg);
        else if (rc == 1) {
            remember(f, &rec);
            tm_debug("waits feed: %s waited %.0f s (namespace %s, %d pods); estimate for its "
                     "shape now %.0f s",
                     o->request_id, o->wait_s, o->key.ns, o->key.pods, waits_estimate(&rec));
        }
        lab_waits_obs_clear(&f->backlog[done]);
        done++;
    }
    memmove(f->backlog, f->backlog + done, (f->nb - done) * sizeof *f->backlog);
    f->nb -= done;
}

static void on_pod(void *ud, tm_watch_type type, json_t *obj, json_t *old) {
    (void)old;
    lab_waits_feed *f = ud;
    lab_waits_pod p;
    tm_err err = {0};
    if (lab_waits_pod_parse(obj, &p, &err) < 0) {
        tm_debug("waits feed: pod skipped: %s", err.msg);
        return;
    }
    if (type == TM_WATCH_DELETED) {
        lab_waits_tracker_delete(f->tr, &p);
        json_object_del(f->sent, p.uid);
        return;
    }
    lab_waits_obs o;
    int rc = lab_waits_tracker_update(f->tr, &p, now_s(), &o, &err);
    if (rc < 0)
        tm_debug("waits feed: pod %s/%s skipped: %s", p.ns, p.name, err.msg);
    else if (rc == 1)
        push(f, &o);
}

static void on_synced(void *ud) {
    lab_waits_feed *f = ud;
    lab_waits_obs o[64];
    int n;
    do { /* at most 64 at a time: every gang is judged once the list is in */
        n = lab_waits_tracker_synced(f->tr, now_s(), o, 64);
        for (int i = 0; i < n; i++)
            push(f, &o[i]);
    } while (n == 64);
}

static void on_patched(void *ud, int status, json_t *body, const tm_err *err) {
    (void)ud;
    (void)body;
    if (err && status != 404)
        tm_warn("waits feed: predicted start not written: %s", err->msg);
}

/* Patches one pending pod when its prediction is missing or moved by more than a slot. */
static void annotate_one(void *ud, json_t *obj) {
    lab_waits_feed *f = ud;
    lab_waits_pod p;
    asa_key k;
    double queued;
    if (lab_waits_pod_parse(obj, &p, NULL) < 0 ||
        !lab_waits_tracker_pending(f->tr, &p, &k, &queued))
        return;
    char kt[256];
    key_text(&k, kt, sizeof kt);
    const json_t *e = json_object_get(f->estimates, kt);
    double est = e ? json_number_value(e) : ASA_DEFAULT_ESTIMATE_S;
    if (!(est >= 0))
        est = ASA_DEFAULT_ESTIMATE_S;
    double target = floor(queued + est);
    double slot = f->o.slot_s > 0 ? f->o.slot_s : DEFAULT_SLOT_S;
    const json_t *sent = json_object_get(f->sent, p.uid);
    if (sent && json_number_value(sent) == target)
        return; /* patched already, the watch has not shown it yet */
    if (!lab_waits_prediction_stale(&p, queued, target, slot))
        return;
    char start[32], q[32], w[64];
    lab_waits_time_format(target, start, sizeof start);
    lab_waits_time_format(queued, q, sizeof q);
    snprintf(w, sizeof w, "%.0fs %s", est, e ? "learned" : "default");
    json_t *patch =
        json_pack("{s:{s:{s:s, s:s, s:s}}}", "metadata", "annotations", LAB_WAITS_ANN_START, start,
                  LAB_WAITS_ANN_QUEUED, q, LAB_WAITS_ANN_WAIT, w);
    char *path = tm_kube_path("v1", "pods", p.ns, p.name, NULL);
    if (patch && path &&
        tm_kube_write_async(f->kube, "PATCH", path, patch, "application/merge-patch+json",
                            on_patched, f) == 0)
        json_object_set_new(f->sent, p.uid, json_real(target));
    free(path);
    json_decref(patch);
}

static bool due(struct timespec *next, int every_ms) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec < next->tv_sec || (now.tv_sec == next->tv_sec && now.tv_nsec < next->tv_nsec))
        return false;
    long long ns = (long long)now.tv_nsec + (long long)every_ms * 1000000LL;
    next->tv_sec = now.tv_sec + (time_t)(ns / 1000000000LL);
    next->tv_nsec = (long)(ns % 1000000000LL);
    return true;
}

static void tick(lab_waits_feed *f) {
    connect_db(f);
    flush(f);
    if (f->store && time(NULL) >= f->next_prune) {
        tm_err err = {0};
        f->next_prune = time(NULL) + PRUNE_S;
        if (lab_waits_store_prune(f->store, &err) < 0)
            tm_warn("waits feed: pruning old request ids: %s", err.msg);
    }
    if (f->o.annotate && f->loaded && f->inf && tm_informer_synced(f->inf) &&
        due(&f->next_annotate, ANNOTATE_MS))
        tm_informer_foreach(f->inf, annotate_one, f);
}

static void *run(void *arg) {
    lab_waits_feed *f = arg;
    tm_informer_opts io = {.path = "/api/v1/pods",
                           .on_event = on_pod,
                           .on_synced = on_synced,
                           .ud = f,
                           .transform = lab_waits_pod_transform};
    tm_err err = {0};
    f->inf = tm_informer_start(f->kube, &io, &err);
    if (!f->inf)
        tm_error("waits feed: cannot watch pods: %s", err.msg);
    while (!atomic_load(&f->stop)) {
        if (tm_kube_run(f->kube, TICK_MS, &err) < 0) {
            tm_error("waits feed: kube event loop: %s", err.msg);
            struct timespec ts = {0, TICK_MS * 1000000L};
            nanosleep(&ts, NULL);
        }
        tick(f);
    }
    return NULL;
}

static void feed_free(lab_waits_feed *f) {
    if (!f)
        return;
    tm_kube_free(f->kube); /* stops the informer too */
    lab_waits_store_close(f->store);
    lab_waits_tracker_free(f->tr);
    json_decref(f->estimates);
    json_decref(f->sent);
    for (size_t i = 0; f->backlog && i < f->nb; i++)
        lab_waits_obs_clear(&f->backlog[i]);
    free(f->backlog);
    free(f->db);
    free(f);
}

lab_waits_feed *lab_waits_feed_start(const lab_waits_feed_opts *o, tm_err *err) {
    lab_waits_feed *f = calloc(1, sizeof *f);
    if (!f) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    f->o = *o;
    f->db = o->db ? strdup(o->db) : NULL;
    f->o.db = f->db;
    f->o.kubeconfig = NULL;
    atomic_init(&f->stop, 0);
    /* Full feedback: a cluster's waits are noisy, and Algorithm 1's bandit update (naive or
     * tuned) keeps p near uniform on a noisy queue (docs/asa.md, "Tables 1 and 2"). */
    asa_config_default(&f->cfg, ASA_POLICY_FULL);
    asa_rng_seed(&f->rng, (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)f);
    f->tr = lab_waits_tracker_new();
    f->estimates = json_object();
    f->sent = json_object();
    f->backlog = calloc(LAB_WAITS_FEED_BACKLOG, sizeof *f->backlog);
    tm_kube_config *cfg = tm_kube_config_auto(o->kubeconfig, NULL, err);
    if (cfg) {
        f->kube = tm_kube_new(cfg, err);
        tm_kube_config_free(cfg);
    }
    if (!f->kube || !f->tr || !f->estimates || !f->sent || !f->backlog ||
        pthread_create(&f->thread, NULL, run, f) != 0) {
        if (f->kube)
            tm_err_set(err, "waits feed: cannot start its thread");
        feed_free(f);
        return NULL;
    }
    return f;
}

void lab_waits_feed_stop(lab_waits_feed *f) {
    if (!f)
        return;
    atomic_store(&f->stop, 1);
    tm_kube_wakeup(f->kube);
    pthread_join(f->thread, NULL);
    feed_free(f);
}
