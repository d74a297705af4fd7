/* resv_controller.c: Reservations in the live scheduler (resv_controller.h). The decisions are
 * resv_plan.h's pure functions; this file keeps their inputs current from the informers and
 * writes their outcomes (status merge patches, events). */
#include "scheduler/live/resv_controller.h"

#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/log.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/reservation/reservation.h"
#include "scheduler/plugins/reservation/resv_overrun.h"
#include "scheduler/plugins/reservation/resv_plan.h"
#include "scheduler/plugins/reservation/resv_plugin.h"

#define RESV_PATH      "/apis/" RESV_API "/reservations"
#define PODGROUP_PATH  "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
#define WORKLOAD_PATH  "/apis/scheduling.k8s.io/v1alpha1/workloads"
#define PRIOCLASS_PATH "/apis/scheduling.k8s.io/v1/priorityclasses"

/* A pod the scheduler knows (any scheduler's, bound or pending): what admission, the owner
 * bookkeeping and the Filter read. */
typedef struct rpod {
    char *uid, *ns, *name;
    char *node; /* NULL while pending */
    sched_resources req;
    int64_t end_ms;     /* expected end, -1 unknown */
    int64_t created_ms; /* the start end_ms was counted from (status.startTime may come later) */
    bool evicted;       /* evicted for overrunning a window (its deletion may not show yet) */
    bool gated;         /* spec.schedulingGates: not waiting for a node yet */
    json_t *labels;     /* owned reference, may be NULL */
    char *workload;     /* spec.workloadRef.name, NULL when none */
    size_t idx;         /* position in pods[] */
} rpod;

/* One Reservation object. */
typedef struct rentry {
    char *key;               /* ns/name */
    json_t *obj;             /* the last version seen (owned) */
    reservation *r;          /* parsed; NULL when invalid (bad says why) */
    char *bad;               /* parse error */
    resv_phase phase;        /* effective phase: ours when a patch is not visible yet */
    bool pending_write;      /* a status patch of ours is not visible yet */
    resv_phase written;      /* what that patch wrote */
    bool owner_started;      /* an owner's pod ran in the window (ours or status') */
    bool reported_unchanged; /* the invalid/failed event was posted */
    int32_t priority;        /* spec.priorityClassName's value, the last one resolved */
    char *displaced_by;      /* "ns/name (priority P over Q)" that displaced it, until planned */
    char *displaced_by_key;  /* that one's key: its Admitted waits for our Pending to show */
    char *displaced_note;    /* "; displaced a, b": what its own admission displaced */
} rentry;

struct resv_controller {
    const sched_config *cfg;
    tm_kube *k;
    sched_cache *cache;
    sched_framework *plan_fw; /* planning only: its plugin state sees template pods */
    resv_plan *plan;
    sched_keys keys;
    tm_informer *resvs, *podgroups, *workloads;
    tm_informer *classes; /* PriorityClasses: a reservation's priority (NULL: not readable) */
    bool on, pg_api, wl_api, synced;
    bool restored;   /* the list was delivered: the held reservations are in the table */
    bool readonly;   /* extender mode: follow the status, write nothing (resv_controller.h) */
    unsigned warned; /* API paths already warned about (bit per path): the re-check repeats */
    rentry **ents;
    size_t n_ents, cap_ents;
    rpod **pods;
    size_t n_pods, cap_pods;
    void *pod_tree; /* tsearch: rpod by uid */
    bool changed;
    sched_preemptor *preemptor; /* evicts overrunning pods (resv_overrun.h); NULL: none */
};

static int cmp_pod(const void *a, const void *b) {
    return strcmp(((const rpod *)a)->uid, ((const rpod *)b)->uid);
}

/* ---- pods ---------------------------------------------------------------------------------- */

static rpod *pod_find(const resv_controller *c, const char *uid) {
    rpod key = {.uid = (char *)uid};
    void *f = tfind(&key, &c->pod_tree, cmp_pod);
    return f ? *(rpod **)f : NULL;
}

static void rpod_free(rpod *p) {
    if (!p)
        return;
    free(p->uid);
    free(p->ns);
    free(p->name);
    free(p->node);
    json_decref(p->labels);
    free(p->workload);
    free(p);
}

static void pod_remove(resv_controller *c, const char *uid) {
    rpod *p = pod_find(c, uid);
    if (!p)
        return;
    tdelete(p, &c->pod_tree, cmp_pod);
    c->pods[p->idx] = c->pods[--c->n_pods];
    c->pods[p->idx]->idx = p->idx;
    rpod_free(p);
}

void resv_controller_pod_event(resv_controller *c, tm_watch_type type, const json_t *obj) {
    if (!c || !c->on) /* decided before the informers deliver anything */
        return;
    const char *uid = tm_json_str(obj, "metadata.uid", NULL);
    if (!uid)
        return;
    if (type == TM_WATCH_DELETED || sched_pod_json_terminal(obj)) {
        pod_remove(c, uid);
        return;
    }
    sched_snapshot *snap = sched_cache_snapshot(c->cache);
    tm_err err = {0};
    sched_pod *sp = sched_pod_from_json(snap, obj, &c->keys, &err);
    if (!sp) { /* the cache reports it; here it simply does not count */
        pod_remove(c, uid);
        return;
    }
    rpod *p = pod_find(c, uid);
    if (!p) {
        if (c->n_pods == c->cap_pods) {
            size_t nc = c->cap_pods ? c->cap_pods * 2 : 256;
            rpod **np = realloc(c->pods, nc * sizeof *np);
            if (!np)
                goto oom;
            c->pods = np;
            c->cap_pods = nc;
        }
        p = calloc(1, sizeof *p);
        if (!p || !(p->uid = strdup(uid)) || !tsearch(p, &c->pod_tree, cmp_pod)) {
            rpod_free(p);
            goto oom;
        }
        p->idx = c->n_pods;
        c->pods[c->n_pods++] = p;
    }
    free(p->ns);
    free(p->name);
    free(p->node);
    free(p->workload);
    json_decref(p->labels);
    const char *node = tm_json_str(obj, "spec.nodeName", "");
    const char *wl = tm_json_str(obj, "spec.workloadRef.name", NULL);
    p->ns = strdup(sp->ns);
    p->name = strdup(sp->name);
    p->node = node[0] ? strdup(node) : NULL;
    p->workload = wl ? strdup(wl) : NULL;
    p->labels = json_incref(tm_json_path(obj, "metadata.labels"));
    p->req = sp->requests;
    p->gated = sp->scheduling_gates != NULL;
    p->end_ms = -1;
    if (p->node) {
        /* started about when it was created (kube-scheduler binds within seconds) */
        int64_t start = sp->created_ms;
        p->end_ms = resv_expected_end(snap, sp, sched_snapshot_node_by_name(snap, node), start);
        p->created_ms = start;
    }
    sched_pod_free(sp);
    return;
oom:
    sched_pod_free(sp);
    tm_error("reservations: out of memory tracking pod uid=%s", uid);
}

static bool owns(const reservation *r, const rpod *p) {
    return reservation_owns(r, p->ns, p->labels, p->workload);
}

/* ---- writing status and events ------------------------------------------------------------- */

typedef struct write_ctx {
    resv_controller *c;
    char key[600];
} write_ctx;

static rentry *ent_find(const resv_controller *c, const char *key, size_t *idx) {
    for (size_t i = 0; i < c->n_ents; i++)
        if (strcmp(c->ents[i]->key, key) == 0) {
            if (idx)
                *idx = i;
            return c->ents[i];
        }
    return NULL;
}

static void patch_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    write_ctx *w = ud;
    if (err) {
        tm_warn("reservation status not written reservation=%s status=%d err=\"%s\"", w->key,
                status, err->msg);
        sched_cache_lock(w->c->cache);
        rentry *e = ent_find(w->c, w->key, NULL);
        if (e) { /* back to what the API says: the next tick decides and writes again */
            e->pending_write = false;
            if (resv_phase_parse(tm_json_str(e->obj, "status.phase", NULL), &e->phase))
                e->phase = RESV_FAILED;
        }
        sched_cache_unlock(w->c->cache);
    }
    free(w);
}

static void event_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    if (err)
        tm_debug("reservation event not recorded reason=%s status=%d err=\"%s\"", (const char *)ud,
                 status, err->msg);
}

static void post_event(resv_controller *c, const rentry *e, const char *type, const char *reason,
                       const char *note) {
    json_t *reg = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "kind", "Reservation", "apiVersion",
                            RESV_API, "metadata", "name", tm_json_str(e->obj, "metadata.name", ""),
                            "namespace", tm_json_str(e->obj, "metadata.namespace", ""), "uid",
                            tm_json_str(e->obj, "metadata.uid", ""));
    json_t *ev = reg ? tm_kube_event_new(reg, type, reason, "Reserve", note, c->cfg->scheduler_name,
                                         c->cfg->identity)
                     : NULL;
    /* reason is always a string literal, so it outlives the request */
    if (!ev || tm_kube_event_post_async(c->k, ev, event_done, (void *)reason))
        tm_warn("reservation event not recorded reservation=%s reason=%s", e->key, reason);
    json_decref(ev);
    json_decref(reg);
}

/* Writes phase and message (and holds when set_holds) to the status subresource. */
static void write_status(resv_controller *c, rentry *e, resv_phase phase, const char *msg,
                         const resv_hold *holds, size_t n, bool set_holds) {
    int64_t hs = 0, he = 0; /* the admitted window, when the table holds it */
    if (set_holds && n)
        resv_plan_window(c->plan, e->key, &hs, &he);
    json_t *patch = reservation_status_patch(sched_cache_snapshot(c->cache), phase, msg, holds, n,
                                             set_holds, e->owner_started, hs, he);
    char *path =
        tm_kube_path(RESV_API, "reservations", tm_json_str(e->obj, "metadata.namespace", ""),
                     tm_json_str(e->obj, "metadata.name", ""), "status");
    write_ctx *w = calloc(1, sizeof *w);
    if (w) {
        w->c = c;
        snprintf(w->key, sizeof w->key, "%s", e->key);
    }
    if (!patch || !path || !w ||
        tm_kube_write_async(c->k, "PATCH", path, patch, "application/merge-patch+json", patch_done,
                            w)) {
        tm_warn("reservation status patch not started reservation=%s", e->key);
        free(w);
    } else {
        e->pending_write = true;
        e->written = phase;
        e->phase = phase;
    }
    json_decref(patch);
    free(path);
    tm_info("reservation=%s phase=%s msg=\"%s\"", e->key, resv_phase_name(phase), msg ? msg : "");
}

/* ---- the Reservation informer --------------------------------------------------------------- */

static void ent_free(rentry *e) {
    if (!e)
        return;
    free(e->key);
    json_decref(e->obj);
    reservation_free(e->r);
    free(e->bad);
    free(e->displaced_by);
    free(e->displaced_by_key);
    free(e->displaced_note);
    free(e);
}

static void ent_parse(resv_controller *c, rentry *e, json_t *obj) {
    json_decref(e->obj);
    e->obj = json_incref(obj);
    reservation_free(e->r);
    free(e->bad);
    e->bad = NULL;
    tm_err err = {0};
    e->r = reservation_from_json(sched_cache_snapshot(c->cache), obj, &err);
    if (!e->r)
        e->bad = strdup(err.msg);
    resv_phase api = RESV_PENDING;
    if (resv_phase_parse(tm_json_str(obj, "status.phase", NULL), &api))
        api = RESV_FAILED;
    if (e->pending_write && api != e->written)
        return; /* our patch is not visible yet: keep what we wrote */
    e->pending_write = false;
    e->phase = api;
    e->owner_started |= tm_json_bool(obj, "status.ownerStarted", false);
}

/* Ours: spec.schedulerName is one of our profiles' and the namespace is one we schedule (as
 * for pods). */
static bool resv_ours(const resv_controller *c, const json_t *obj) {
    if (sched_profile_index(c->keys.profiles, reservation_scheduler_name(obj)) < 0)
        return false; /* c->keys: the cache's, every profile's name (the first one's first) */
    if (!c->cfg->n_namespaces)
        return true;
    const char *ns = tm_json_str(obj, "metadata.namespace", "");
    for (size_t i = 0; i < c->cfg->n_namespaces; i++)
        if (strcmp(c->cfg->namespaces[i], ns) == 0)
            return true;
    return false;
}

static void on_resv(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    (void)old;
    resv_controller *c = ud;
    if (!resv_ours(c, obj) && !(old && resv_ours(c, old)))
        return; /* another scheduler's */
    if (!resv_ours(c, obj))
        t = TM_WATCH_DELETED; /* handed to another scheduler: forget it here */
    char key[600];
    snprintf(key, sizeof key, "%s/%s", tm_json_str(obj, "metadata.namespace", ""),
             tm_json_str(obj, "metadata.name", ""));
    sched_cache_lock(c->cache);
    size_t i;
    rentry *e = ent_find(c, key, &i);
    if (t == TM_WATCH_DELETED) {
        /* release path: the reservation was deleted */
        if (resv_plan_remove(c->plan, key) == 0) {
            tm_info("reservation=%s released: the reservation was deleted", key);
            c->changed = true;
        }
        if (e) {
            c->ents[i] = c->ents[--c->n_ents];
            ent_free(e);
        }
        sched_cache_unlock(c->cache);
        return;
    }
    if (!e) {
        if (c->n_ents == c->cap_ents) {
            size_t nc = c->cap_ents ? c->cap_ents * 2 : 16;
            rentry **ne = realloc(c->ents, nc * sizeof *ne);
            if (!ne)
                goto oom;
            c->ents = ne;
            c->cap_ents = nc;
        }
        e = calloc(1, sizeof *e);
        if (!e || !(e->key = strdup(key))) {
            ent_free(e);
            goto oom;
        }
        c->ents[c->n_ents++] = e;
    }
    ent_parse(c, e, obj);
    sched_cache_unlock(c->cache);
    return;
oom:
    sched_cache_unlock(c->cache);
    tm_error("reservations: out of memory keeping reservation=%s", key);
}

/* Puts an Admitted or Active reservation's holds (its status.nodes) into the table when it is
 * not there: after a restart, before anything else is placed or admitted. */
static void restore(resv_controller *c, rentry *e) {
    const reservation *r = e->r;
    /* displaced: its Admitted status is stale (the Pending write failed or is in flight) */
    if (!r || !resv_phase_holds(e->phase) || resv_plan_has(c->plan, e->key) || e->displaced_by)
        return;
    tm_err err = {0};
    int64_t start, end; /* the admitted window, not a spec moved since */
    reservation_held_window(r, &start, &end);
    if (resv_plan_put(c->plan, e->key, start, end, r->holds, r->n_holds, &err)) {
        tm_error("reservation=%s not restored err=\"%s\"", e->key, err.msg);
        return;
    }
    tm_info("reservation=%s restored phase=%s nodes=%zu", e->key, resv_phase_name(e->phase),
            r->n_holds);
    c->changed = true;
}

static void on_resv_synced(void *ud) {
    resv_controller *c = ud;
    sched_cache_lock(c->cache);
    for (size_t i = 0; i < c->n_ents; i++)
        restore(c, c->ents[i]);
    if (!c->synced)
        tm_info("reservations listed count=%zu held=%zu", c->n_ents, resv_plan_count(c->plan));
    c->synced = true;
    c->restored = true;
    sched_cache_unlock(c->cache);
}

static void on_ignore(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    (void)ud, (void)t, (void)obj, (void)old;
}

/* Owners only need to exist: keep name and namespace (and what the store keys on). */
static json_t *owner_transform(void *ud, json_t *obj) {
    (void)ud;
    json_t *meta = json_object_get(obj, "metadata");
    json_t *keep =
        json_pack("{s:{s:O?, s:O?, s:O?, s:O?}}", "metadata", "name", json_object_get(meta, "name"),
                  "namespace", json_object_get(meta, "namespace"), "resourceVersion",
                  json_object_get(meta, "resourceVersion"), "uid", json_object_get(meta, "uid"));
    json_decref(obj);
    return keep;
}

/* PriorityClasses: their value and whether they are the default, nothing else. */
static json_t *class_transform(void *ud, json_t *obj) {
    (void)ud;
    json_t *meta = json_object_get(obj, "metadata");
    json_t *keep = json_pack("{s:{s:O?, s:O?, s:O?}, s:O?, s:O?}", "metadata", "name",
                             json_object_get(meta, "name"), "resourceVersion",
                             json_object_get(meta, "resourceVersion"), "uid",
                             json_object_get(meta, "uid"), "value", json_object_get(obj, "value"),
                             "globalDefault", json_object_get(obj, "globalDefault"));
    json_decref(obj);
    return keep;
}

typedef struct default_class {
    const json_t *found;
} default_class;

static void find_default(void *ud, json_t *obj) {
    default_class *d = ud;
    if (tm_json_bool(obj, "globalDefault", false))
        d->found = obj;
}

/* A reservation's priority as a pod's is resolved by the Priority admission plugin: its
 * spec.priorityClassName's value, else the globalDefault class' value, else 0. 1 with *out set,
 * 0 when the class does not exist (why says so), -1 while the classes are not listed yet, or
 * cannot be read at all (looked for again every 30 s, resv_controller_recheck: a class named
 * is then waited for, not failed on). */
static int resolve_priority(const resv_controller *c, const reservation *r, int32_t *out, char *why,
                            size_t size) {
    *out = 0;
    if (!c->classes)
        return r->priority_class ? -1 : 1;
    if (!tm_informer_synced(c->classes))
        return -1;
    const json_t *pc;
    if (r->priority_class) {
        if (!(pc = tm_informer_get(c->classes, NULL, r->priority_class))) {
            snprintf(why, size, "spec.priorityClassName: no PriorityClass named %s",
                     r->priority_class);
            return 0;
        }
    } else {
        default_class d = {NULL};
        tm_informer_foreach(c->classes, find_default, &d);
        if (!(pc = d.found))
            return 1;
    }
    *out = (int32_t)json_integer_value(json_object_get(pc, "value"));
    return 1;
}

/* ---- the Filter plugin's view of the controller (resv_plugin.h) ---------------------------- */

static void src_each(void *ud, resv_each_fn fn, void *arg) {
    const resv_controller *c = ud;
    /* by the effective phase: a failure of ours whose status is not visible yet is over */
    for (size_t i = 0; i < c->n_ents; i++)
        if (c->ents[i]->r &&
            (c->ents[i]->phase == RESV_PENDING || resv_phase_holds(c->ents[i]->phase)))
            fn(arg, c->ents[i]->key, c->ents[i]->r);
}

/* The pod informer knows the pod's workloadRef (sched_pod does not). */
static void src_identity(void *ud, const sched_pod *pod, const json_t **labels,
                         const char **workload) {
    const rpod *p = pod_find(ud, pod->uid);
    *labels = p ? p->labels : pod->pod_labels;
    *workload = p ? p->workload : NULL;
}

/* Off (no CRD), or the held reservations are in the table. */
static bool src_ready(void *ud) {
    const resv_controller *c = ud;
    return !c->on || c->restored;
}

/* ---- life cycle ----------------------------------------------------------------------------- */

static resv_controller *controller_new(const sched_config *cfg, tm_kube *k, sched_cache *cache,
                                       bool readonly, tm_err *err) {
    resv_controller *c = calloc(1, sizeof *c);
    if (!c) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    c->cfg = cfg;
    c->k = k;
    c->cache = cache;
    c->readonly = readonly;
    c->keys = *sched_cache_keys(cache);
    if (!(c->plan = resv_plan_new())) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    /* admission only: a read-only controller plans nothing */
    if (!readonly && !(c->plan_fw = sched_policy_new(cfg->policy, err)))
        goto fail;
    return c;
fail:
    resv_controller_free(c);
    return NULL;
}

int resv_controller_add_plugin(resv_controller *c, sched_framework *fw, tm_err *err) {
    resv_plugin_source src = {
        .each = src_each, .identity = src_identity, .ready = src_ready, .ud = c};
    sched_plugin pl;
    if (resv_plugin_make(c->plan, &src, &pl, err))
        return -1;
    return sched_framework_add_plugin(fw, &pl, err);
}

resv_controller *resv_controller_new(const sched_config *cfg, tm_kube *k, sched_cache *cache,
                                     sched_framework *fw, tm_err *err) {
    resv_controller *c = controller_new(cfg, k, cache, false, err);
    if (c && resv_controller_add_plugin(c, fw, err)) {
        resv_controller_free(c);
        return NULL;
    }
    return c;
}

resv_controller *resv_controller_new_readonly(const sched_config *cfg, tm_kube *k,
                                              sched_cache *cache, tm_err *err) {
    return controller_new(cfg, k, cache, true, err);
}

/* Whether the API server serves a collection to us: a CRD may be absent (404), RBAC may not
 * allow it (403). Either way the feature stays off: waiting for a list that never comes would
 * keep the scheduler from ever becoming ready. */
static bool api_served(resv_controller *c, const char *path, unsigned bit) {
    char p[256];
    snprintf(p, sizeof p, "%s?limit=1", path);
    tm_err err = {0};
    json_t *r = tm_kube_get(c->k, p, &err);
    json_decref(r);
    if (!r && err.http_status != 404 && !(c->warned & bit)) { /* once: re-checked every 30 s */
        tm_warn("%s not readable status=%d err=\"%s\" (looked for again quietly)", path,
                err.http_status, err.msg);
        c->warned |= bit;
    }
    return r != NULL;
}

/* Starts the owner informers whose API is served and not watched yet. */
static int start_owner_informers(resv_controller *c, tm_err *err) {
    tm_informer_opts o;
    if (!c->pg_api && (c->pg_api = api_served(c, PODGROUP_PATH, 1u))) {
        o = (tm_informer_opts){
            .path = PODGROUP_PATH, .on_event = on_ignore, .ud = c, .transform = owner_transform};
        if (!(c->podgroups = tm_informer_start(c->k, &o, err))) {
            c->pg_api = false;
            return tm_err_wrap(err, "watching PodGroups for reservations");
        }
    }
    if (!c->wl_api && (c->wl_api = api_served(c, WORKLOAD_PATH, 2u))) {
        o = (tm_informer_opts){
            .path = WORKLOAD_PATH, .on_event = on_ignore, .ud = c, .transform = owner_transform};
        if (!(c->workloads = tm_informer_start(c->k, &o, err))) {
            c->wl_api = false;
            return tm_err_wrap(err, "watching Workloads for reservations");
        }
    }
    return 0;
}

/* Starts the PriorityClass informer when the classes can be listed (RBAC may not allow it yet).
 * Only the admitting scheduler resolves priorities: the read-only one follows the status. */
static int start_classes(resv_controller *c, tm_err *err) {
    if (c->readonly || c->classes || !api_served(c, PRIOCLASS_PATH, 8u))
        return 0;
    tm_informer_opts o = {
        .path = PRIOCLASS_PATH, .on_event = on_ignore, .ud = c, .transform = class_transform};
    if (!(c->classes = tm_informer_start(c->k, &o, err)))
        return tm_err_wrap(err, "watching PriorityClasses for reservations");
    return 0;
}

/* Starts the Reservation informer and the owners' when the API is served (else 1, off). */
static int start_informers(resv_controller *c, tm_err *err) {
    if (!api_served(c, RESV_PATH, 4u))
        return 1;
    tm_informer_opts o = {
        .path = RESV_PATH, .on_event = on_resv, .on_synced = on_resv_synced, .ud = c};
    if (!(c->resvs = tm_informer_start(c->k, &o, err)))
        return tm_err_wrap(err, "watching Reservations");
    c->on = true;
    if (start_classes(c, err))
        return -1;
    return start_owner_informers(c, err); /* owners: only whether they exist */
}

int resv_controller_start(resv_controller *c, tm_err *err) {
    int rc = start_informers(c, err);
    if (rc > 0) {
        tm_warn("Reservation API %s not served (CRD not installed?): reservations off until it is",
                RESV_API);
        return 0;
    }
    if (rc)
        return -1;
    tm_info("reservations on podgroup_api=%s workload_api=%s", c->pg_api ? "yes" : "no",
            c->wl_api ? "yes" : "no");
    return 0;
}

static void replay_pod(void *ud, json_t *obj) {
    resv_controller_pod_event(ud, TM_WATCH_ADDED, obj);
}

int resv_controller_recheck(resv_controller *c, const tm_informer *pods, tm_err *err) {
    if (c && c->on && !c->classes && start_classes(c, err))
        return -1;
    if (!c || (c->on && c->pg_api && c->wl_api))
        return 0;
    if (c->on) { /* an owner API appeared: admission can tell whether owners exist */
        bool pg = c->pg_api, wl = c->wl_api;
        int rc = start_owner_informers(c, err);
        if (c->pg_api != pg || c->wl_api != wl)
            tm_info("reservations: owner API served now podgroup_api=%s workload_api=%s",
                    c->pg_api ? "yes" : "no", c->wl_api ? "yes" : "no");
        return rc;
    }
    int rc = start_informers(c, err);
    if (rc > 0)
        return 0;
    if (c->on) { /* the pods seen while off: the owners' pods and running pods' ends */
        sched_cache_lock(c->cache);
        if (pods)
            tm_informer_foreach(pods, replay_pod, c);
        sched_cache_unlock(c->cache);
        tm_info("Reservation API %s served now: reservations on podgroup_api=%s workload_api=%s",
                RESV_API, c->pg_api ? "yes" : "no", c->wl_api ? "yes" : "no");
    }
    return rc < 0 ? -1 : 0;
}

bool resv_controller_synced(const resv_controller *c) {
    return !c || !c->on || c->synced;
}

void resv_controller_stop(resv_controller *c) {
    if (!c)
        return;
    tm_informer_stop(c->resvs);
    tm_informer_stop(c->podgroups);
    tm_informer_stop(c->workloads);
    tm_informer_stop(c->classes);
    c->resvs = c->podgroups = c->workloads = c->classes = NULL;
}

static void noop_free(void *p) {
    (void)p;
}

void resv_controller_free(resv_controller *c) {
    if (!c)
        return;
    resv_controller_stop(c);
    for (size_t i = 0; i < c->n_ents; i++)
        ent_free(c->ents[i]);
    free(c->ents);
    tdestroy(c->pod_tree, noop_free);
    for (size_t i = 0; i < c->n_pods; i++)
        rpod_free(c->pods[i]);
    free(c->pods);
    resv_plan_free(c->plan);
    sched_framework_free(c->plan_fw);
    free(c);
}

/* ---- the controller: admission, activation, release ----------------------------------------- */

/* 1 when the owner exists, 0 when it is known not to, -1 when not known (yet), -2 when its
 * API is not served (then it cannot be admitted, but a held reservation is not released for
 * it: the CRD may be back soon). why gets a reason for 0 and -2. */
static int owner_exists(const resv_controller *c, const reservation *r, char *why, size_t size) {
    if (r->owner_kind == RESV_OWNER_SELECTOR)
        return 1;
    bool pg = r->owner_kind == RESV_OWNER_PODGROUP;
    const tm_informer *inf = pg ? c->podgroups : c->workloads;
    const char *kind = pg ? "PodGroup" : "Workload";
    if (!inf) {
        snprintf(why, size, "owner %s %s/%s: the %s API is not served", kind, r->ns, r->owner_name,
                 kind);
        return -2;
    }
    if (!tm_informer_synced(inf))
        return -1;
    if (tm_informer_get(inf, r->ns, r->owner_name))
        return 1;
    snprintf(why, size, "owner %s %s/%s does not exist", kind, r->ns, r->owner_name);
    return 0;
}

/* Whether e can be planned now: its owner exists (else it fails here, or waits while the
 * owners are not listed yet). */
static bool admissible_owner(resv_controller *c, rentry *e) {
    char why[512];
    int ex = owner_exists(c, e->r, why, sizeof why);
    if (ex == -1)
        return false;
    if (ex == 0 || ex == -2) {
        c->changed = true; /* pods waiting for its admission go on without it */
        write_status(c, e, RESV_FAILED, why, NULL, 0, true);
        post_event(c, e, "Warning", "OwnerNotFound", why);
        return false;
    }
    return true;
}

/* The reservations e's admission displaced (out of the table now): back to Pending, planned
 * again once e is admitted; status and an event on both sides. Their keys are appended to msg. */
static void write_displaced(resv_controller *c, rentry *e, const resv_admission *a, char *msg,
                            size_t size) {
    size_t off = strlen(msg);
    for (size_t i = 0; i < a->n_displaced; i++) {
        const resv_displaced *v = &a->displaced[i];
        char by[700], why[800];
        snprintf(by, sizeof by, "%s (priority %d over %d)", e->key, (int)e->priority,
                 (int)v->priority);
        snprintf(why, sizeof why, "displaced by %s: planned again", by);
        tm_info("reservation=%s displaced by=%s priority=%d over=%d", v->key, e->key,
                (int)e->priority, (int)v->priority);
        char note[700];
        snprintf(note, sizeof note,
                 "displaced %s (priority %d): its window overlaps and has not opened", v->key,
                 (int)v->priority);
        post_event(c, e, "Normal", "Displaced", note);
        if (off < size)
            off +=
                (size_t)snprintf(msg + off, size - off, "%s %s", i ? "," : "; displaced", v->key);
        rentry *d = ent_find(c, v->key, NULL);
        if (!d)
            continue; /* deleted meanwhile: nothing to tell */
        free(d->displaced_by);
        d->displaced_by = strdup(by);
        free(d->displaced_by_key);
        d->displaced_by_key = strdup(e->key);
        write_status(c, d, RESV_PENDING, why, NULL, 0, true);
        post_event(c, d, "Warning", "Displaced", why);
    }
}

/* Whether a reservation e displaced is not yet seen Pending in the API (its write in flight, or
 * failed and to be written again): e's Admitted waits for it. */
static bool displacement_pending(const resv_controller *c, const rentry *e) {
    for (size_t i = 0; i < c->n_ents; i++) {
        const rentry *d = c->ents[i];
        if (d->displaced_by_key && strcmp(d->displaced_by_key, e->key) == 0 &&
            (d->pending_write || d->phase != RESV_PENDING))
            return true;
    }
    return false;
}

/* Whether e's priority is known (then e->priority and e->r->priority hold it). A class that
 * does not exist fails the reservation, as the Priority admission plugin refuses such a pod. */
static bool admissible_priority(resv_controller *c, rentry *e) {
    char why[512];
    int32_t pr;
    int rc = resolve_priority(c, e->r, &pr, why, sizeof why);
    if (rc < 0)
        return false;
    if (rc == 0) {
        c->changed = true;
        write_status(c, e, RESV_FAILED, why, NULL, 0, true);
        post_event(c, e, "Warning", "PriorityClassNotFound", why);
        return false;
    }
    e->priority = e->r->priority = pr;
    return true;
}

/* Writes the outcome of e's admission. */
static void admitted(resv_controller *c, rentry *e, const resv_admission *a) {
    const reservation *r = e->r;
    /* the owner's pods that wait for the admission (resv_plugin.h) are retried: they wait for
     * the window now, or go on without the reservation */
    c->changed = true;
    if (a->ok && a->n_displaced) {
        /* Two steps, so that no restart ever finds two Admitted reservations on the same
         * capacity: the displaced ones are written Pending now; this one keeps its holds in the
         * table (no pod takes them meanwhile) but is written Admitted only by a later tick, once
         * their Pending shows (displacement_pending), planned again then. */
        char note[512] = "";
        write_displaced(c, e, a, note, sizeof note);
        free(e->displaced_note);
        e->displaced_note = strdup(note);
        tm_info("reservation=%s admission waits for the status of the %zu it displaced", e->key,
                a->n_displaced);
        return;
    }
    char *by = e->displaced_by; /* planned again after a displacement: say so */
    e->displaced_by = NULL;
    free(e->displaced_by_key);
    e->displaced_by_key = NULL;
    if (!a->ok) {
        char why[1024];
        if (by)
            snprintf(why, sizeof why, "displaced by %s, then not admissible again: %s", by,
                     a->reason);
        else
            snprintf(why, sizeof why, "%s", a->reason);
        write_status(c, e, RESV_FAILED, why, NULL, 0, true);
        post_event(c, e, "Warning", "NotAdmissible", why);
        free(by);
        return;
    }
    free(by);
    char msg[1024], st[32], en[32];
    size_t off = (size_t)snprintf(msg, 512, "holds from %s to %s on",
                                  resv_format_time(r->start_ms, st, sizeof st),
                                  resv_format_time(r->end_ms, en, sizeof en));
    for (size_t i = 0; i < a->n_holds && off < 512; i++)
        off +=
            (size_t)snprintf(msg + off, 512 - off, "%s %s (%d pod%s)", i ? "," : "",
                             a->holds[i].node, a->holds[i].pods, a->holds[i].pods == 1 ? "" : "s");
    if (e->displaced_note && off < sizeof msg)
        snprintf(msg + off, sizeof msg - off, "%s", e->displaced_note);
    free(e->displaced_note);
    e->displaced_note = NULL;
    write_status(c, e, RESV_ADMITTED, msg, a->holds, a->n_holds, true);
    post_event(c, e, "Normal", "Admitted", msg);
}

/* Higher priority first (as the scheduling queue), then first come, first served: creation
 * time, then namespace/name. */
static int cmp_created(const void *a, const void *b) {
    const rentry *x = *(rentry *const *)a, *y = *(rentry *const *)b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    int c = strcmp(tm_json_str(x->obj, "metadata.creationTimestamp", ""),
                   tm_json_str(y->obj, "metadata.creationTimestamp", ""));
    return c ? c : strcmp(x->key, y->key);
}

/* Admits the pending reservations in pend (in order, each against those before it) against
 * the bound pods. */
static void admit_pending(resv_controller *c, rentry **pend, size_t n, int64_t now) {
    resv_running *run = calloc(c->n_pods ? c->n_pods : 1, sizeof *run);
    const reservation **rs = calloc(n, sizeof *rs);
    resv_admission *outs = calloc(n, sizeof *outs);
    if (!run || !rs || !outs) {
        tm_error("reservations: out of memory admitting count=%zu", n);
        goto out;
    }
    size_t nr = 0;
    for (size_t i = 0; i < c->n_pods; i++) {
        if (!c->pods[i]->node)
            continue;
        run[nr].node = c->pods[i]->node;
        run[nr].req = c->pods[i]->req;
        run[nr].end_ms = c->pods[i]->end_ms;
        nr++;
    }
    for (size_t i = 0; i < n; i++)
        rs[i] = pend[i]->r;
    tm_err err = {0};
    if (resv_plan_admit_batch(c->plan, c->plan_fw, sched_cache_snapshot(c->cache), rs, n, &c->keys,
                              run, nr, now, outs, &err))
        tm_error("reservations: admission failed err=\"%s\"", err.msg);
    for (size_t i = 0; i < n; i++) {
        /* after a failure, the ones not reached are tried again next tick */
        if (outs[i].ok || outs[i].reason[0])
            admitted(c, pend[i], &outs[i]);
        resv_admission_clear(&outs[i]);
    }
out:
    free(run);
    free(rs);
    free(outs);
}

/* The owner's pods: how many are left (*owner_pods), whether one runs in the window
 * (*started_now), whether one waits for a node (*waiting, may be NULL; gated pods do not yet),
 * and what they use of each hold (into the table). false on OOM. */
static bool count_owner_pods(resv_controller *c, rentry *e, int64_t now, size_t *owner_pods,
                             bool *started_now, bool *waiting) {
    const reservation *r = e->r;
    int64_t start = r->start_ms, end;
    resv_plan_window(c->plan, e->key, &start, &end); /* the admitted window, when held */
    *owner_pods = 0;
    *started_now = false;
    if (waiting)
        *waiting = false;
    sched_resources *used = calloc(r->n_holds ? r->n_holds : 1, sizeof *used);
    if (!used)
        return false;
    for (size_t i = 0; i < c->n_pods; i++) {
        const rpod *p = c->pods[i];
        if (!owns(r, p))
            continue;
        (*owner_pods)++;
        *started_now |= p->node != NULL && now >= start;
        if (waiting)
            *waiting |= !p->node && !p->gated;
        for (size_t h = 0; p->node && h < r->n_holds; h++)
            if (strcmp(p->node, r->holds[h].node) == 0) {
                for (int k = 0; k < SCHED_RES_MAX; k++)
                    used[h].v[k] += p->req.v[k];
                break;
            }
    }
    for (size_t h = 0; h < r->n_holds; h++)
        resv_plan_set_used(c->plan, e->key, r->holds[h].node, &used[h]);
    free(used);
    return true;
}

void resv_controller_set_preemptor(resv_controller *c, sched_preemptor *pr) {
    if (c)
        c->preemptor = pr;
}

/* Whether p belongs to the owner of a reservation the table holds: it runs by right of its own
 * reservation, not on a bet on its end (a planner's step that overruns into the next step's
 * window; the planner moves its later steps instead, docs/planner.md). */
static bool owner_of_held(const resv_controller *c, const rpod *p) {
    for (size_t i = 0; i < c->n_ents; i++) {
        const rentry *e = c->ents[i];
        if (e->r && resv_plan_has(c->plan, e->key) && owns(e->r, p))
            return true;
    }
    return false;
}

/* The window of e is open and its owner has a pod waiting: on each held node, the pods that
 * were let into the held capacity on ending before the window and still run are evicted, as
 * many as the owner's unused hold needs (resv_overrun.h). */
static void evict_overruns(resv_controller *c, rentry *e, int64_t start, int64_t now) {
    const reservation *r = e->r;
    if (!c->preemptor || !r->evict_overrunning || now < start)
        return;
    sched_snapshot *snap = sched_cache_snapshot(c->cache);
    for (size_t h = 0; h < r->n_holds; h++) {
        int ni = sched_snapshot_node_index(snap, r->holds[h].node);
        if (ni < 0)
            continue;
        const sched_node *node = sched_snapshot_node(snap, (size_t)ni);
        size_t n = sched_snapshot_node_pod_count(snap, (size_t)ni), m = 0;
        resv_overrun_pod *ps = calloc(n ? n : 1, sizeof *ps);
        rpod **rp = calloc(n ? n : 1, sizeof *rp);
        const sched_pod_meta **metas = calloc(n ? n : 1, sizeof *metas);
        size_t *pick = calloc(n ? n : 1, sizeof *pick);
        if (!ps || !rp || !metas || !pick) {
            tm_error("reservations: out of memory looking for overruns reservation=%s", e->key);
            free(ps), free(rp), free(metas), free(pick);
            return;
        }
        sched_resources free_now, used = {0};
        sched_node_room(node, &free_now);
        for (size_t i = 0; i < n; i++) {
            const char *uid = NULL;
            const sched_pod_meta *meta = sched_snapshot_node_pod(snap, (size_t)ni, i, &uid);
            rpod *p = uid ? pod_find(c, uid) : NULL;
            if (!p || !meta || !p->node || strcmp(p->node, node->name) != 0)
                continue; /* not seen bound there yet, or not known well enough to evict */
            if (owns(r, p)) {
                for (int k = 0; k < SCHED_RES_MAX; k++)
                    used.v[k] += p->req.v[k];
                continue;
            }
            if (owner_of_held(c, p))
                continue;
            int64_t end = p->end_ms; /* counted from its creation; from its start when known */
            if (end >= 0 && meta->start_ms > 0)
                end += meta->start_ms - p->created_ms;
            ps[m] = (resv_overrun_pod){.req = p->req,
                                       .end_ms = end,
                                       .owner = false,
                                       .terminating = meta->terminating || p->evicted};
            rp[m] = p;
            metas[m++] = meta;
        }
        size_t nv =
            resv_overrun_victims(&free_now, &r->holds[h].res, &used, start, now, ps, m, pick);
        for (size_t i = 0; i < nv; i++) {
            rpod *p = rp[pick[i]];
            p->evicted = true; /* once: a status update may show it running a while longer */
            char st[32], en[32];
            sched_victim v = {.uid = p->uid,
                              .ns = p->ns,
                              .name = p->name,
                              .node = p->node,
                              .priority = metas[pick[i]]->priority,
                              .generation = metas[pick[i]]->generation,
                              .start_ms = metas[pick[i]]->start_ms};
            snprintf(v.why, sizeof v.why,
                     "expected to end by %s, still running at the window's start %s",
                     resv_format_time(ps[pick[i]].end_ms, en, sizeof en),
                     resv_format_time(start, st, sizeof st));
            char note[400];
            snprintf(note, sizeof note, "evicting pod %s/%s on %s: %s", p->ns, p->name, p->node,
                     v.why);
            post_event(c, e, "Normal", "EvictingOverrun", note);
            sched_preemptor_evict_overrun(c->preemptor, &v, r->ns, r->name, r->uid ? r->uid : "");
        }
        free(ps), free(rp), free(metas), free(pick);
    }
}

/* Admitted or Active: restore into the table after a restart, count the owner's pods, decide. */
static void keep(resv_controller *c, rentry *e, int64_t now) {
    reservation *r = e->r;
    restore(c, e);
    if (!resv_plan_has(c->plan, e->key))
        return;
    size_t owner_pods;
    bool started_now, waiting;
    if (!count_owner_pods(c, e, now, &owner_pods, &started_now, &waiting))
        return;
    /* The window it was admitted with (the holds') decides the phase, not the spec's: a spec
     * changed after admission (the planner patches startTime/endTime when its plan moves)
     * changes nothing held (docs/reservations.md, Limits). Following the spec's times made it
     * Active before its holds' window opened (the owner's pods were then refused on their own
     * holds as "no backfill") and Expired before it closed (the pods then bound anywhere). */
    int64_t start = r->start_ms, end = r->end_ms;
    resv_plan_window(c->plan, e->key, &start, &end);
    char why[512];
    resv_facts f = {.phase = e->phase,
                    .start_ms = start,
                    .end_ms = end,
                    .now_ms = now,
                    .deleted = r->deleting,
                    .owner_missing = owner_exists(c, r, why, sizeof why) == 0,
                    .owner_started = e->owner_started || started_now,
                    .owner_pods_now = owner_pods};
    bool newly_started = started_now && !e->owner_started;
    e->owner_started = f.owner_started;
    resv_decision d = resv_decide(&f);
    if (d.release) {
        resv_plan_remove(c->plan, e->key);
        c->changed = true;
        write_status(c, e, d.phase, d.message, NULL, 0, true);
        post_event(c, e, "Normal", d.phase == RESV_EXPIRED ? "Expired" : "Released", d.message);
    } else if (d.phase != e->phase) {
        c->changed = true; /* the window opened: the owner's pods may fit now */
        write_status(c, e, d.phase, d.message, NULL, 0, false);
        post_event(c, e, "Normal", "Activated", d.message);
    } else if (newly_started && !e->pending_write) {
        write_status(c, e, e->phase, "the owner's pods are running", NULL, 0, false);
    }
    if (!d.release && waiting) /* an owner's pod waits: the window's overruns go */
        evict_overruns(c, e, start, now);
}

/* Read-only: the table follows the status the binding scheduler writes. Held (Admitted,
 * Active, not being deleted) reservations are restored from status.nodes with their owners'
 * use; every other one leaves the table. */
static bool follow(resv_controller *c, int64_t now) {
    for (size_t i = 0; i < c->n_ents; i++) {
        rentry *e = c->ents[i];
        size_t owner_pods;
        bool started;
        if (e->r && resv_phase_holds(e->phase) && !e->r->deleting) {
            restore(c, e);
            count_owner_pods(c, e, now, &owner_pods, &started, NULL);
        } else if (resv_plan_remove(c->plan, e->key) == 0) {
            tm_info("reservation=%s no longer held phase=%s", e->key, resv_phase_name(e->phase));
            c->changed = true;
        }
    }
    bool ch = c->changed;
    c->changed = false;
    return ch;
}

bool resv_controller_tick(resv_controller *c, int64_t now) {
    if (!c || !c->on || !c->synced)
        return false;
    if (c->readonly)
        return follow(c, now);
    /* first every held reservation (restored after a restart), then admissions against them */
    for (size_t i = 0; i < c->n_ents; i++) {
        rentry *e = c->ents[i];
        if (!e->r) {
            if (e->phase != RESV_FAILED && !e->pending_write) {
                write_status(c, e, RESV_FAILED, e->bad, NULL, 0, true);
                post_event(c, e, "Warning", "InvalidReservation", e->bad);
            }
            if (resv_plan_remove(c->plan, e->key) == 0)
                c->changed = true;
            continue;
        }
        if (e->displaced_by && resv_phase_holds(e->phase) && !e->pending_write) {
            /* displaced, but the write of Pending failed: nothing is held, write it again */
            char why[800];
            snprintf(why, sizeof why, "displaced by %s: planned again", e->displaced_by);
            if (resv_plan_remove(c->plan, e->key) == 0)
                c->changed = true;
            write_status(c, e, RESV_PENDING, why, NULL, 0, true);
            continue;
        }
        if (resv_phase_holds(e->phase)) {
            keep(c, e, now);
            /* what an admission of higher priority may displace (restored entries come in at 0) */
            int32_t pr;
            char why[512];
            if (resolve_priority(c, e->r, &pr, why, sizeof why) == 1)
                e->priority = pr; /* else the last value known: a class deleted since */
            resv_plan_set_priority(c->plan, e->key, e->priority);
        } else if (e->phase != RESV_PENDING && resv_plan_remove(c->plan, e->key) == 0)
            c->changed = true; /* terminal: nothing held */
    }
    rentry **pend = calloc(c->n_ents ? c->n_ents : 1, sizeof *pend);
    size_t np = 0;
    for (size_t i = 0; pend && i < c->n_ents; i++) {
        rentry *e = c->ents[i];
        if (e->r && e->phase == RESV_PENDING && !e->pending_write && !e->r->deleting &&
            !displacement_pending(c, e) && admissible_priority(c, e) && admissible_owner(c, e))
            pend[np++] = e;
    }
    if (np) {
        qsort(pend, np, sizeof *pend, cmp_created);
        admit_pending(c, pend, np, now);
    }
    free(pend);
    bool ch = c->changed;
    c->changed = false;
    return ch;
}

const resv_plan *resv_controller_plan(const resv_controller *c) {
    return c ? c->plan : NULL;
}

bool resv_controller_holds_for(const resv_controller *c, const sched_pod *pod) {
    if (!c || !c->on || !resv_plan_count(c->plan))
        return false;
    const json_t *labels = NULL;
    const char *workload = NULL;
    src_identity((void *)c, pod, &labels, &workload);
    for (size_t i = 0; i < c->n_ents; i++) {
        const rentry *e = c->ents[i];
        if (e->r && resv_plan_has(c->plan, e->key) &&
            reservation_owns(e->r, pod->ns, labels, workload))
            return true;
    }
    return false;
}
