/* binder.c: asynchronous binds, Scheduled/FailedScheduling events and the PodScheduled
 * condition. Each request carries a small context; the contexts of unanswered requests are kept
 * on a list so that freeing the binder after the client frees them all. */
#include "scheduler/binder.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"

typedef struct bind_ctx {
    sched_binder *b;
    char *ns, *name, *uid, *node;
    struct bind_ctx *prev, *next;
} bind_ctx;

struct sched_binder {
    tm_kube *k;
    char *controller, *instance;
    sched_bind_result_fn on_result;
    void *ud;
    bind_ctx *ctxs; /* unanswered binds */
    size_t inflight;
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

size_t sched_binder_inflight(const sched_binder *b) {
    return b->inflight;
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

static void post_event(sched_binder *b, const char *ns, const char *name, const char *uid,
                       const char *type, const char *reason, const char *action, const char *note) {
    json_t *reg = regarding(ns, name, uid);
    json_t *ev =
        reg ? tm_kube_event_new(reg, type, reason, action, note, b->controller, b->instance) : NULL;
    /* reason is a string literal of the callers, so it outlives the request. */
    if (!ev || tm_kube_event_post_async(b->k, ev, event_done, (void *)reason))
        tm_warn("event not recorded pod=%s/%s reason=%s err=\"cannot start the request\"", ns, name,
                reason);
    json_decref(ev);
    json_decref(reg);
}

static void bind_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    bind_ctx *c = ud;
    sched_binder *b = c->b;
    if (c->prev)
        c->prev->next = c->next;
    else
        b->ctxs = c->next;
    if (c->next)
        c->next->prev = c->prev;
    b->inflight--;
    if (!err) {
        char note[1024];
        snprintf(note, sizeof note, "Successfully assigned %s/%s to %s", c->ns, c->name, c->node);
        post_event(b, c->ns, c->name, c->uid, "Normal", "Scheduled", "Binding", note);
    }
    if (b->on_result)
        b->on_result(b->ud, c->ns, c->name, c->uid, c->node, status, err);
    ctx_free(c);
}

int sched_binder_bind(sched_binder *b, const sched_pod *p, const char *node, tm_err *err) {
    bind_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return tm_err_set(err, "out of memory");
    c->b = b;
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

json_t *sched_binder_condition_patch(const char *message, const char *now_rfc3339) {
    return json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s, s:n}]}}", "status", "conditions", "type",
                     "PodScheduled", "status", "False", "reason", "Unschedulable", "message",
                     message, "lastTransitionTime", now_rfc3339, "lastProbeTime");
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
    json_t *patch = sched_binder_condition_patch(message, now);
    char *path = tm_kube_path("v1", "pods", p->ns, p->name, "status");
    int rc = patch && path ? tm_kube_request_async(b->k, "PATCH", path, patch,
                                                   "application/strategic-merge-patch+json",
                                                   status_done, NULL)
                           : -1;
    json_decref(patch);
    free(path);
    if (rc)
        return tm_err_set(err, "pod %s/%s: the status patch could not be started", p->ns, p->name);
    post_event(b, p->ns, p->name, p->uid, "Warning", "FailedScheduling", "Scheduling", message);
    return 0;
}
