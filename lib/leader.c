/* leader.c: Lease-based leader election (tm_leader_* of lib/kube.h) with client-go's
 * semantics, on the client's loop.
 *
 * Every retry period each candidate GETs the Lease. It may take or renew the lease when it is
 * the holder, when the holder is empty, or when the record has not changed for a whole lease
 * duration as measured by the local clock since this candidate saw it change (remote
 * timestamps are never compared with the local clock: clocks of replicas differ). Writing is
 * a PUT carrying the resourceVersion read, so two candidates racing cannot both win: the loser
 * gets 409 Conflict. A leader that gets 409 or cannot renew within the renew deadline stops
 * leading at once. Callbacks may stop the elector: it is freed when the callback returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "jsonutil.h"
#include "kube_internal.h"
#include "log.h"

/* client-go's JitterUntil factor for candidates that do not lead. */
#define RETRY_JITTER 1.2

struct tm_leader {
    tm_kube *k;
    char *ns, *name, *identity, *path, *collection;
    int lease_ms, renew_deadline_ms, retry_ms;
    void (*on_started_leading)(void *ud);
    void (*on_stopped_leading)(void *ud);
    void (*on_new_leader)(void *ud, const char *identity);
    void *ud;

    bool leading, stopped;
    int busy;
    tm_xfer *xfer;
    tm_timer *timer, *deadline;
    tm_backoff rng;
    json_t *lease;    /* last Lease read or written (for PUT and release) */
    char *obs_record; /* its spec, serialised: a change restarts the expiry clock */
    int64_t obs_ms;   /* local time the record was last seen to change */
    int64_t renewed_ms;
    char *reported;
    tm_kube_attachment att; /* torn down by tm_kube_free */
};

static void cycle(tm_leader *l);

static void leader_destroy(tm_leader *l) {
    json_decref(l->lease);
    free(l->obs_record);
    free(l->reported);
    free(l->ns);
    free(l->name);
    free(l->identity);
    free(l->path);
    free(l->collection);
    free(l);
}

static bool leave(tm_leader *l) {
    if (--l->busy == 0 && l->stopped) {
        leader_destroy(l);
        return true;
    }
    return l->stopped;
}

static void report_leader(tm_leader *l, const char *holder) {
    if (!holder || !*holder || (l->reported && strcmp(l->reported, holder) == 0))
        return;
    free(l->reported);
    l->reported = strdup(holder);
    tm_info("leader election: new leader lease=%s/%s leader=%s", l->ns, l->name, holder);
    if (l->on_new_leader && !l->stopped)
        l->on_new_leader(l->ud, holder);
}

static void lose(tm_leader *l, const char *why) {
    if (!l->leading)
        return;
    l->leading = false;
    if (l->deadline)
        tm_timer_cancel(l->k, l->deadline);
    l->deadline = NULL;
    tm_warn("leader election: stopped leading lease=%s/%s identity=%s reason=\"%s\"", l->ns,
            l->name, l->identity, why);
    if (l->on_stopped_leading && !l->stopped)
        l->on_stopped_leading(l->ud);
}

static void on_timer(void *ud) {
    tm_leader *l = ud;
    l->timer = NULL;
    cycle(l);
}

static void schedule(tm_leader *l, int64_t ms) {
    if (l->stopped)
        return;
    if (l->timer)
        tm_timer_cancel(l->k, l->timer);
    l->timer = tm_timer_add(l->k, ms, on_timer, l);
}

static int64_t jittered_retry(tm_leader *l) {
    return l->retry_ms + (int64_t)(tm_backoff_rand(&l->rng) * RETRY_JITTER * l->retry_ms);
}

static void on_deadline(void *ud) {
    tm_leader *l = ud;
    l->deadline = NULL;
    l->busy++;
    if (l->leading && tm_kube_now_ms() - l->renewed_ms >= l->renew_deadline_ms)
        lose(l, "could not renew the lease within the renew deadline");
    leave(l);
}

/* Remembers the record read or written; a changed record restarts the local expiry clock. */
static void observe(tm_leader *l, json_t *lease) {
    char *rec = json_dumps(json_object_get(lease, "spec"), JSON_COMPACT | JSON_SORT_KEYS);
    if (!rec)
        rec = strdup("");
    if (!l->obs_record || strcmp(rec, l->obs_record) != 0) {
        free(l->obs_record);
        l->obs_record = rec;
        l->obs_ms = tm_kube_now_ms();
    } else {
        free(rec);
    }
    json_decref(l->lease);
    l->lease = json_incref(lease);
}

static void succeeded(tm_leader *l) {
    int64_t now = tm_kube_now_ms();
    l->renewed_ms = now;
    if (l->deadline)
        tm_timer_cancel(l->k, l->deadline);
    l->deadline = tm_timer_add(l->k, l->renew_deadline_ms, on_deadline, l);
    if (!l->leading) {
        l->leading = true;
        tm_info("leader election: started leading lease=%s/%s identity=%s", l->ns, l->name,
                l->identity);
        report_leader(l, l->identity);
        if (l->on_started_leading && !l->stopped)
            l->on_started_leading(l->ud);
    }
    schedule(l, l->retry_ms);
}

/* status: the HTTP status (0 when the server was not reached). A 409 is the expected outcome
 * of a lost race and not worth a warning; anything else (unreachable, 403 from RBAC) is, or a
 * replica would retry silently forever. */
static void failed(tm_leader *l, long status, const char *why) {
    if (status != 409)
        tm_warn("leader election: lease request failed lease=%s/%s error=\"%s\"", l->ns, l->name,
                why);
    if (l->leading) {
        if (status == 409)
            lose(l, "lease update conflict (409): another replica holds the lease");
        else if (tm_kube_now_ms() - l->renewed_ms >= l->renew_deadline_ms)
            lose(l, why);
    }
    schedule(l, l->leading ? l->retry_ms : jittered_retry(l));
}

static void write_done(void *ud, tm_xfer *x, CURLcode rc, long status) {
    tm_leader *l = ud;
    l->xfer = NULL;
    l->busy++;
    json_t *lease = NULL;
    if (rc == CURLE_OK && (status == 200 || status == 201))
        lease = json_loadb(x->resp.data ? x->resp.data : "", x->resp.len, 0, NULL);
    if (lease) {
        observe(l, lease);
        succeeded(l);
    } else {
        tm_err err = {0};
        tm_kube_fill_error(&err, x->method, x->path, l->k->server, rc, x->errbuf, status,
                           x->resp.data, x->resp.len);
        failed(l, rc == CURLE_OK ? status : 0, err.msg);
    }
    json_decref(lease);
    leave(l);
}

static const tm_xfer_ops write_ops = {NULL, write_done};

static void write_lease(tm_leader *l, const char *method, const char *path, json_t *lease) {
    if (l->stopped) /* a callback stopped the elector: it must not write any more */
        return;
    char *body = json_dumps(lease, JSON_COMPACT);
    long timeout = (l->renew_deadline_ms + 999) / 1000;
    l->xfer = tm_xfer_start_exempt(l->k, method, path, body, strlen(body), "application/json",
                                   timeout, &write_ops, l);
    free(body);
    if (!l->xfer)
        failed(l, 0, "out of memory");
}

/* Sets the spec for this candidate holding the lease; keeps acquireTime and transitions when
 * it already held it. */
static void claim(tm_leader *l, json_t *lease, const char *holder) {
    char now[40];
    tm_kube_microtime(now, sizeof now);
    json_t *spec = json_object_get(lease, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(lease, "spec", spec);
    }
    bool mine = holder && strcmp(holder, l->identity) == 0;
    long long transitions = tm_json_int(spec, "leaseTransitions", 0);
    if (!mine) {
        json_object_set_new(spec, "acquireTime", json_string(now));
        if (holder && *holder)
            transitions++;
    }
    json_object_set_new(spec, "holderIdentity", json_string(l->identity));
    json_object_set_new(spec, "leaseDurationSeconds", json_integer((l->lease_ms + 999) / 1000));
    json_object_set_new(spec, "renewTime", json_string(now));
    json_object_set_new(spec, "leaseTransitions", json_integer(transitions));
}

static void get_done(void *ud, tm_xfer *x, CURLcode rc, long status) {
    tm_leader *l = ud;
    l->xfer = NULL;
    l->busy++;
    if (rc == CURLE_OK && status == 404) {
        json_t *lease =
            json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "coordination.k8s.io/v1", "kind",
                      "Lease", "metadata", "name", l->name, "namespace", l->ns);
        claim(l, lease, NULL);
        write_lease(l, "POST", l->collection, lease);
        json_decref(lease);
        leave(l);
        return;
    }
    json_t *lease = NULL;
    if (rc == CURLE_OK && status == 200)
        lease = json_loadb(x->resp.data ? x->resp.data : "", x->resp.len, 0, NULL);
    if (!lease) {
        tm_err err = {0};
        tm_kube_fill_error(&err, x->method, x->path, l->k->server, rc, x->errbuf, status,
                           x->resp.data, x->resp.len);
        failed(l, rc == CURLE_OK ? status : 0, err.msg);
        leave(l);
        return;
    }
    observe(l, lease);
    const char *holder = tm_json_str(lease, "spec.holderIdentity", "");
    long long dur_s = tm_json_int(lease, "spec.leaseDurationSeconds", 0);
    int64_t dur_ms = dur_s > 0 ? dur_s * 1000 : l->lease_ms;
    int64_t now = tm_kube_now_ms();
    bool other = *holder && strcmp(holder, l->identity) != 0;
    report_leader(l, holder);
    if (l->stopped) {
        /* on_new_leader stopped the elector: no claim, nothing more in flight. */
    } else if (other && l->obs_ms + dur_ms > now) {
        if (l->leading)
            lose(l, "the lease is held by another replica");
        /* Try again as soon as the lease would expire if the holder stays silent. */
        int64_t until = l->obs_ms + dur_ms - now + 20;
        int64_t next = jittered_retry(l);
        schedule(l, until < next ? until : next);
    } else {
        json_t *upd = json_deep_copy(lease);
        claim(l, upd, holder);
        write_lease(l, "PUT", l->path, upd);
        json_decref(upd);
    }
    json_decref(lease);
    leave(l);
}

static const tm_xfer_ops get_ops = {NULL, get_done};

static void cycle(tm_leader *l) {
    if (l->stopped)
        return;
    long timeout = (l->renew_deadline_ms + 999) / 1000;
    l->xfer = tm_xfer_start_exempt(l->k, "GET", l->path, NULL, 0, NULL, timeout, &get_ops, l);
    if (!l->xfer)
        schedule(l, l->retry_ms);
}

static void leader_teardown(void *owner) {
    tm_leader_stop(owner, false);
}

tm_leader *tm_leader_start(tm_kube *k, const tm_leader_opts *opts, tm_err *err) {
    if (!k || !opts || !opts->ns || !*opts->ns || !opts->name || !*opts->name || !opts->identity ||
        !*opts->identity) {
        tm_err_set(err, "leader election: the lease namespace, name and this replica's "
                        "identity are all required");
        return NULL;
    }
    tm_leader *l = calloc(1, sizeof *l);
    l->k = k;
    l->ns = strdup(opts->ns);
    l->name = strdup(opts->name);
    l->identity = strdup(opts->identity);
    l->lease_ms = opts->lease_ms > 0 ? opts->lease_ms : 15000;
    l->renew_deadline_ms = opts->renew_deadline_ms > 0 ? opts->renew_deadline_ms : 10000;
    l->retry_ms = opts->retry_ms > 0 ? opts->retry_ms : 2000;
    if (l->lease_ms <= l->renew_deadline_ms || l->renew_deadline_ms <= l->retry_ms) {
        tm_err_set(err,
                   "leader election: need lease (%d ms) > renew deadline (%d ms) > retry "
                   "(%d ms), as client-go requires",
                   l->lease_ms, l->renew_deadline_ms, l->retry_ms);
        leader_destroy(l);
        return NULL;
    }
    l->on_started_leading = opts->on_started_leading;
    l->on_stopped_leading = opts->on_stopped_leading;
    l->on_new_leader = opts->on_new_leader;
    l->ud = opts->ud;
    l->path = tm_kube_path("coordination.k8s.io/v1", "leases", l->ns, l->name, NULL);
    l->collection = tm_kube_path("coordination.k8s.io/v1", "leases", l->ns, NULL, NULL);
    tm_backoff_init(&l->rng, TM_BACKOFF_FULL_JITTER, 1, 1, 0,
                    (uint64_t)tm_kube_now_ms() ^ ((uint64_t)(uintptr_t)l << 8) ^
                        (uint64_t)getpid());
    l->att.teardown = leader_teardown;
    l->att.owner = l;
    tm_kube_attach(k, &l->att);
    cycle(l);
    return l;
}

bool tm_leader_is_leader(const tm_leader *l) {
    return l && l->leading && !l->stopped;
}

/* Gives the lease up as client-go's ReleaseOnCancel does: empty holder, 1 s duration. A
 * synchronous request: stop is called once, at shutdown. */
static void release(tm_leader *l) {
    if (!l->lease)
        return;
    json_t *upd = json_deep_copy(l->lease);
    json_t *spec = json_object_get(upd, "spec");
    char now[40];
    tm_kube_microtime(now, sizeof now);
    if (json_is_object(spec)) {
        json_object_set_new(spec, "holderIdentity", json_string(""));
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
        json_object_set_new(spec, "renewTime", json_string(now));
        json_object_set_new(spec, "acquireTime", json_string(now));
        tm_err err = {0};
        json_t *r = tm_kube_replace(l->k, l->path, upd, &err);
        if (r)
            tm_info("leader election: released lease=%s/%s", l->ns, l->name);
        else
            tm_warn("leader election: could not release lease=%s/%s error=\"%s\"", l->ns, l->name,
                    err.msg);
        json_decref(r);
    }
    json_decref(upd);
}

/* Stopping does not call on_stopped_leading: the caller is the one stopping. */
void tm_leader_stop(tm_leader *l, bool release_lease) {
    if (!l || l->stopped)
        return;
    tm_kube *k = l->k;
    if (l->xfer)
        tm_xfer_cancel(l->xfer);
    l->xfer = NULL;
    if (l->leading && release_lease)
        release(l);
    l->leading = false;
    l->stopped = true;
    if (l->timer)
        tm_timer_cancel(k, l->timer);
    if (l->deadline)
        tm_timer_cancel(k, l->deadline);
    l->timer = l->deadline = NULL;
    tm_kube_detach(k, &l->att);
    if (l->busy == 0)
        leader_destroy(l);
}
