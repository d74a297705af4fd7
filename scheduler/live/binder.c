/* binder.c: asynchronous binds, Scheduled/FailedScheduling events and the PodScheduled
 * condition. Each request carries a small context; the contexts of unanswered requests are kept
 * on a list so that freeing the binder after the client frees them all.
 *
 * A bind whose outcome is unknown (no HTTP status: the connection broke or timed out; or a 5xx,
 * which the API server also answers when etcd committed and the reply was lost) may have bound
 * the pod. Reporting it as failed would free the node's capacity for other pods while the pod
 * may sit there (seen: 1,131 pods on capacity for 1,080 after an API server kill -9). So the
 * binder reads the pod back (GET, retried until the API server answers) and reports what it
 * finds: bound there = success, not bound = failure, bound elsewhere = 409, gone = 404. Until
 * then the bind counts as in flight, and the caller keeps its reservation. A 2xx status is a
 * success even when the transfer broke after it (the body of a binding says nothing more). */
#include "scheduler/live/binder.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "lib/log.h"
#include "scheduler/backend/podspec.h"

/* Reading pods back after unknown outcomes. They wait in one FIFO, and only a few are being read
 * (or waiting to retry) at once while the API server does not answer (VERIFY_PARALLEL_DOWN):
 * after an API server crash there are hundreds, and hundreds of requests a second against a
 * server that is starting slow its start. Once it answers, VERIFY_PARALLEL at a time. While
 * the server does not answer, each slot retries after VERIFY_FIRST_MS doubling up to
 * VERIFY_MAX_MS, so the truth is known within half a second of its return; once it answers,
 * the queue drains without pauses. */
#define VERIFY_FIRST_MS      250
#define VERIFY_MAX_MS        500
#define VERIFY_PARALLEL      64
#define VERIFY_PARALLEL_DOWN 8

typedef struct bind_ctx {
    sched_binder *b;
    char *ns, *name, *uid, *node;
    int first_status;       /* the bind's answer when its outcome was unknown */
    int verify_tries;       /* GETs sent so far */
    struct bind_ctx *vnext; /* the verification FIFO */
    char why[256];          /* the bind's error, for the log and the final report */
    uint8_t profile;        /* the pod's profile (sched_pod.profile): its events' controller */
    struct bind_ctx *prev, *next;
} bind_ctx;

struct sched_binder {
    tm_kube *k;
    char *controller, *instance;
    const char *const *profiles; /* sched_binder_set_profiles, NULL: controller alone */
    sched_bind_result_fn on_result;
    void *ud;
    bind_ctx *ctxs; /* unanswered or unverified binds */
    size_t inflight, verifying;
    bind_ctx *vq_head, *vq_tail; /* waiting for a verification slot */
    int vslots;                  /* verifications being read or waiting to retry */
    bool api_answers;            /* the last read-back got an answer from the API server */
    size_t unknown_total;        /* binds whose outcome had to be read back */
};

sched_binder *sched_binder_new(tm_kube *k, const char *scheduler_name, const char *identity,
                               sched_bind_result_fn on_result, void *ud) {
    sched_binder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->k = k;
    b->controller = strdup(scheduler_name);
    b->instance = strdup(identity);
    b->on_result = on_result;
    b->ud = ud;
    if (!b->controller || !b->instance) {
        sched_binder_free(b);
        return NULL;
    }
    return b;
}

static void ctx_free(bind_ctx *c) {
    free(c->ns);
    free(c->name);
    free(c->uid);
    free(c->node);
    free(c);
}

void sched_binder_free(sched_binder *b) {
    if (!b)
        return;
    while (b->ctxs) {
        bind_ctx *c = b->ctxs;
        b->ctxs = c->next;
        ctx_free(c);
    }
    free(b->controller);
    free(b->instance);
    free(b);
}

tm_kube *sched_binder_kube(const sched_binder *b) {
    return b ? b->k : NULL;
}

size_t sched_binder_inflight(const sched_binder *b) {
    return b->inflight;
}

size_t sched_binder_verifying(const sched_binder *b) {
    return b->verifying;
}

size_t sched_binder_unknown_total(const sched_binder *b) {
    return b->unknown_total;
}

bool sched_binder_outcome_unknown(int status) {
    /* 0: no answer. 5xx: the server failed somewhere, possibly after etcd committed (a 504
     * "Timeout" is exactly that case). A 4xx is a refusal: the pod was not bound by us. */
    return status == 0 || status >= 500;
}

static json_t *regarding(const char *ns, const char *name, const char *uid) {
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "kind", "Pod", "apiVersion", "v1", "metadata",
                     "name", name, "namespace", ns, "uid", uid);
}

static void event_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    if (err)
        tm_warn("event not recorded reason=%s status=%d err=\"%s\"", (const char *)ud, status,
                err->msg);
}

void sched_binder_set_profiles(sched_binder *b, const char *const *names) {
    b->profiles = names;
}

/* The reportingController of a pod's events: its profile's scheduler name, as kube-scheduler's
 * per-profile event recorders. */
static const char *controller_of(const sched_binder *b, uint8_t profile) {
    const char *name = sched_profile_name(b->profiles, profile);
    return name ? name : b->controller;
}

static void post_event(sched_binder *b, const char *ns, const char *name, const char *uid,
                       uint8_t profile, const char *type, const char *reason, const char *action,
                       const char *note) {
    json_t *reg = regarding(ns, name, uid);
    json_t *ev = reg ? tm_kube_event_new(reg, type, reason, action, note, controller_of(b, profile),
                                         b->instance)
                     : NULL;
    /* reason is a string literal of the callers, so it outlives the request. */
    if (!ev || tm_kube_event_post_async(b->k, ev, event_done, (void *)reason))
        tm_warn("event not recorded pod=%s/%s reason=%s err=\"cannot start the request\"", ns, name,
                reason);
    json_decref(ev);
    json_decref(reg);
}

static void unlink_ctx(bind_ctx *c) {
    sched_binder *b = c->b;
    if (c->prev)
        c->prev->next = c->next;
    else
        b->ctxs = c->next;
    if (c->next)
        c->next->prev = c->prev;
    b->inflight--;
}

/* The final outcome of a bind: reported once, then the context goes. */
static void finish(bind_ctx *c, int status, const tm_err *err) {
    sched_binder *b = c->b;
    unlink_ctx(c);
    if (!err) {
        char note[1024];
        snprintf(note, sizeof note, "Successfully assigned %s/%s to %s", c->ns, c->name, c->node);
        post_event(b, c->ns, c->name, c->uid, c->profile, "Normal", "Scheduled", "Binding", note);
    }
    if (b->on_result)
        b->on_result(b->ud, c->ns, c->name, c->uid, c->node, status, err);
    ctx_free(c);
}

static void verify_start(void *ud);
static void verify_pump(sched_binder *b);

/* Back into the FIFO for another read later. */
static void verify_enqueue(bind_ctx *c) {
    sched_binder *b = c->b;
    c->vnext = NULL;
    if (b->vq_tail)
        b->vq_tail->vnext = c;
    else
        b->vq_head = c;
    b->vq_tail = c;
}

/* Gives free slots to the oldest waiting verifications. */
static void verify_pump(sched_binder *b) {
    while (b->vslots < (b->api_answers ? VERIFY_PARALLEL : VERIFY_PARALLEL_DOWN) && b->vq_head) {
        bind_ctx *c = b->vq_head;
        b->vq_head = c->vnext;
        if (!b->vq_head)
            b->vq_tail = NULL;
        int64_t d = 0;
        if (!b->api_answers || c->verify_tries == 0) {
            d = VERIFY_FIRST_MS;
            for (int i = 1; i < c->verify_tries && d < VERIFY_MAX_MS; i++)
                d *= 2;
            if (d > VERIFY_MAX_MS)
                d = VERIFY_MAX_MS;
        }
        if (!tm_timer_add(b->k, d, verify_start, c)) {
            /* No timer (out of memory): try again at the next pump. */
            verify_enqueue(c);
            return;
        }
        b->vslots++;
    }
}

static void verify_done(void *ud, int status, json_t *body, const tm_err *err) {
    bind_ctx *c = ud;
    sched_binder *b = c->b;
    const char *uid = tm_json_str(body, "metadata.uid", "");
    b->vslots--;
    if (err && status != 404) {
        if (c->verify_tries == 1 || c->verify_tries % 20 == 0)
            tm_warn("bind outcome still unknown pod=%s/%s node=%s tries=%d err=\"%s\"", c->ns,
                    c->name, c->node, c->verify_tries, err->msg);
        b->api_answers = status > 0 && status < 500;
        verify_enqueue(c);
        verify_pump(b);
        return;
    }
    b->api_answers = true;
    b->verifying--;
    verify_pump(b);
    tm_err e = {0};
    if (status == 404 || strcmp(uid, c->uid) != 0) {
        tm_err_set(&e, "bind %s/%s: outcome unknown (%s), and the pod is gone", c->ns, c->name,
                   c->why);
        tm_info("bind outcome resolved: pod gone pod=%s/%s", c->ns, c->name);
        finish(c, 404, &e);
        return;
    }
    const char *on = tm_json_str(body, "spec.nodeName", "");
    if (strcmp(on, c->node) == 0) {
        tm_info("bind outcome resolved: bound pod=%s/%s node=%s", c->ns, c->name, c->node);
        finish(c, 201, NULL);
    } else if (on[0]) {
        tm_err_set(&e, "bind %s/%s to %s: outcome unknown (%s); the pod is bound to %s", c->ns,
                   c->name, c->node, c->why, on);
        tm_info("bind outcome resolved: bound elsewhere pod=%s/%s node=%s", c->ns, c->name, on);
        finish(c, 409, &e);
    } else {
        tm_err_set(&e, "bind %s/%s to %s: outcome unknown (%s); the pod is not bound", c->ns,
                   c->name, c->node, c->why);
        tm_info("bind outcome resolved: not bound pod=%s/%s", c->ns, c->name);
        finish(c, c->first_status, &e);
    }
}

static void verify_start(void *ud) {
    bind_ctx *c = ud;
    sched_binder *b = c->b;
    char *path = tm_kube_path("v1", "pods", c->ns, c->name, NULL);
    c->verify_tries++;
    if (!path || tm_kube_request_async(b->k, "GET", path, NULL, NULL, verify_done, c)) {
        b->vslots--;
        verify_enqueue(c);
        verify_pump(b);
    }
    free(path);
}

static void bind_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    bind_ctx *c = ud;
    sched_binder *b = c->b;
    if (status >= 200 && status < 300) {
        /* The API server sends its status only after etcd committed the binding; a transfer
         * that breaks after it (an API server killed mid-answer: curl reports the 201 with
         * "stream not closed cleanly") still bound the pod. Reported as a failure, the node's
         * capacity was freed and given to another pod while this one sat there (seen: a node
         * over its allocatable after a kill -9). */
        if (err)
            tm_info("bind answered %d before the connection broke: bound pod=%s/%s node=%s", status,
                    c->ns, c->name, c->node);
        finish(c, status, NULL);
        return;
    }
    if (err && sched_binder_outcome_unknown(status)) {
        c->first_status = status;
        snprintf(c->why, sizeof c->why, "status %d: %.200s", status, err->msg);
        b->verifying++;
        b->unknown_total++;
        tm_warn("bind outcome unknown, node capacity stays reserved until the pod is read back "
                "pod=%s/%s node=%s status=%d err=\"%s\"",
                c->ns, c->name, c->node, status, err->msg);
        verify_enqueue(c);
        verify_pump(b);
        return;
    }
    finish(c, status, err);
}

int sched_binder_bind(sched_binder *b, const sched_pod *p, const char *node, tm_err *err) {
    bind_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return tm_err_set(err, "out of memory");
    c->b = b;
    c->profile = p->profile;
    c->ns = strdup(p->ns);
    c->name = strdup(p->name);
    c->uid = strdup(p->uid);
    c->node = strdup(node);
    if (!c->ns || !c->name || !c->uid || !c->node) {
        ctx_free(c);
        return tm_err_set(err, "out of memory");
    }
    if (tm_kube_bind_async(b->k, p->ns, p->name, p->uid, node, bind_done, c)) {
        ctx_free(c);
        return tm_err_set(err, "bind %s/%s to %s: the request could not be started", p->ns, p->name,
                          node);
    }
    c->next = b->ctxs;
    if (b->ctxs)
        b->ctxs->prev = c;
    b->ctxs = c;
    b->inflight++;
    return 0;
}

json_t *sched_binder_condition_patch(const char *message, const char *now_rfc3339,
                                     int64_t generation) {
    json_t *cond = json_pack("{s:s, s:s, s:s, s:s, s:s, s:n}", "type", "PodScheduled", "status",
                             "False", "reason", "Unschedulable", "message", message,
                             "lastTransitionTime", now_rfc3339, "lastProbeTime");
    /* kube-scheduler 1.35 (PodObservedGenerationTracking, GA): the generation it saw */
    if (cond && generation > 0)
        json_object_set_new(cond, "observedGeneration", json_integer(generation));
    return cond ? json_pack("{s:{s:[o]}}", "status", "conditions", cond) : NULL;
}

static void status_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    (void)ud;
    if (err && status != 404) /* a pod deleted meanwhile needs no condition */
        tm_warn("PodScheduled condition not set status=%d err=\"%s\"", status, err->msg);
}

int sched_binder_unschedulable(sched_binder *b, const sched_pod *p, const char *message,
                               tm_err *err) {
    char now[32];
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    json_t *patch = sched_binder_condition_patch(message, now, p->generation);
    char *path = tm_kube_path("v1", "pods", p->ns, p->name, "status");
    int rc = patch && path
                 ? tm_kube_write_async(b->k, "PATCH", path, patch,
                                       "application/strategic-merge-patch+json", status_done, NULL)
                 : -1;
    json_decref(patch);
    free(path);
    if (rc)
        return tm_err_set(err, "pod %s/%s: the status patch could not be started", p->ns, p->name);
    post_event(b, p->ns, p->name, p->uid, p->profile, "Warning", "FailedScheduling", "Scheduling",
               message);
    return 0;
}

/* ---- gangs: events on any object, status patches of PodGroups -------------------------------- */

int sched_binder_event(sched_binder *b, const char *api_version, const char *kind, const char *ns,
                       const char *name, const char *uid, const char *type, const char *reason,
                       const char *note, tm_err *err) {
    json_t *reg = json_pack("{s:s, s:s, s:{s:s, s:s}}", "kind", kind, "apiVersion", api_version,
                            "metadata", "name", name, "namespace", ns);
    if (reg && uid && uid[0])
        json_object_set_new(json_object_get(reg, "metadata"), "uid", json_string(uid));
    json_t *ev =
        reg ? tm_kube_event_new(reg, type, reason, "Scheduling", note, b->controller, b->instance)
            : NULL;
    /* reason is a string literal of the callers, so it outlives the request. */
    int rc = ev ? tm_kube_event_post_async(b->k, ev, event_done, (void *)reason) : -1;
    json_decref(ev);
    json_decref(reg);
    if (rc)
        return tm_err_set(err, "%s %s/%s: event %s could not be started", kind, ns, name, reason);
    return 0;
}

static void merge_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    (void)ud;
    if (err && status != 404) /* deleted meanwhile: nothing to report on */
        tm_warn("merge patch failed status=%d err=\"%s\"", status, err->msg);
}

int sched_merge_patch_async(tm_kube *k, const char *path, const json_t *patch, tm_err *err) {
    if (tm_kube_write_async(k, "PATCH", path, patch, "application/merge-patch+json", merge_done,
                            NULL))
        return tm_err_set(err, "%s: the patch could not be started", path);
    return 0;
}

int sched_binder_merge_patch(sched_binder *b, const char *path, const json_t *patch, tm_err *err) {
    return sched_merge_patch_async(b->k, path, patch, err);
}
