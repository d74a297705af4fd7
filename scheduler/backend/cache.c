/* cache.c: informer events -> incremental snapshot updates, our pending pods -> queue hooks,
 * and the set of assumed (reserved, bind in flight) pods. */
#include "scheduler/backend/cache.h"

#include <pthread.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/log.h"
#include "lib/quantity.h"
#include "scheduler/backend/volumes.h"

struct sched_cache {
    pthread_mutex_t mu;
    sched_snapshot *snap;
    char **names;      /* the profiles' spec.schedulerName, NULL-terminated (names[0] first) */
    char **namespaces; /* NULL-terminated */
    char *process_label, *workflow_key;
    sched_keys keys;
    sched_cache_hooks hooks;
    void *assumed; /* tsearch tree of malloc'd uid strings */
    size_t n_assumed;
};

static int cmp_str(const void *a, const void *b) {
    return strcmp(a, b);
}

sched_cache *sched_cache_new(const char *scheduler_name, const char *const *namespaces,
                             const sched_keys *keys, const sched_cache_hooks *hooks, tm_err *err) {
    sched_cache *c = calloc(1, sizeof *c);
    if (!c) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    sched_keys dk = sched_keys_default();
    if (!keys)
        keys = &dk;
    size_t n = 0;
    while (namespaces && namespaces[n])
        n++;
    /* the names: keys->profiles when given (the first is scheduler_name), else that alone */
    size_t nn = 0;
    while (keys->profiles && keys->profiles[nn])
        nn++;
    c->snap = sched_snapshot_new();
    c->names = calloc((nn ? nn : 1) + 1, sizeof *c->names);
    c->namespaces = calloc(n + 1, sizeof *c->namespaces);
    c->process_label = strdup(keys->process_label);
    c->workflow_key = strdup(keys->workflow_key);
    bool bad = !c->snap || !c->names || !c->namespaces || !c->process_label || !c->workflow_key;
    for (size_t i = 0; !bad && i < n; i++)
        bad = !(c->namespaces[i] = strdup(namespaces[i]));
    for (size_t i = 0; !bad && i < (nn ? nn : 1); i++)
        bad = !(c->names[i] = strdup(nn ? keys->profiles[i] : scheduler_name));
    if (bad) {
        sched_cache_free(c);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    c->keys.process_label = c->process_label;
    c->keys.workflow_key = c->workflow_key;
    c->keys.profiles = (const char *const *)c->names;
    if (hooks)
        c->hooks = *hooks;
    return c;
}

void sched_cache_free(sched_cache *c) {
    if (!c)
        return;
    tdestroy(c->assumed, free);
    if (c->snap) {
        sched_volumes_free(sched_snapshot_volumes(c->snap));
        sched_owner_sels_free(sched_snapshot_owner_selectors(c->snap));
    }
    sched_snapshot_free(c->snap);
    for (size_t i = 0; c->names && c->names[i]; i++)
        free(c->names[i]);
    free(c->names);
    for (size_t i = 0; c->namespaces && c->namespaces[i]; i++)
        free(c->namespaces[i]);
    free(c->namespaces);
    free(c->process_label);
    free(c->workflow_key);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void sched_cache_lock(sched_cache *c) {
    pthread_mutex_lock(&c->mu);
}

void sched_cache_unlock(sched_cache *c) {
    pthread_mutex_unlock(&c->mu);
}

sched_snapshot *sched_cache_snapshot(sched_cache *c) {
    return c->snap;
}

const sched_keys *sched_cache_keys(const sched_cache *c) {
    return &c->keys;
}

/* ---- nodes --------------------------------------------------------------------------------- */

static const char *ready_status(const json_t *node) {
    json_t *conds = tm_json_path(node, "status.conditions");
    size_t i;
    json_t *cnd;
    json_array_foreach(conds, i, cnd) {
        if (strcmp(tm_json_str(cnd, "type", ""), "Ready") == 0)
            return tm_json_str(cnd, "status", "");
    }
    return "";
}

static bool same_json(const json_t *a, const json_t *b) {
    if (!a || !b)
        return a == b;
    return json_equal((json_t *)a, (json_t *)b);
}

/* What the filters and scores read of a node (images: ImageLocality); a change elsewhere
 * (heartbeat timestamps, addresses) does not touch the snapshot. */
static bool node_relevant_change(const json_t *a, const json_t *b) {
    return !same_json(tm_json_path(a, "metadata.labels"), tm_json_path(b, "metadata.labels")) ||
           !same_json(json_object_get(a, "spec"), json_object_get(b, "spec")) ||
           !same_json(tm_json_path(a, "status.allocatable"),
                      tm_json_path(b, "status.allocatable")) ||
           !same_json(tm_json_path(a, "status.images"), tm_json_path(b, "status.images")) ||
           strcmp(ready_status(a), ready_status(b)) != 0;
}

/* Whether obj's allocatable has more of some resource than old's (or one old did not have; an
 * unreadable quantity counts as more: the cautious answer). */
static bool allocatable_grew(const json_t *old, const json_t *obj) {
    const json_t *oa = tm_json_path(old, "status.allocatable"),
                 *na = tm_json_path(obj, "status.allocatable");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)na, k, v) {
        const char *was = json_string_value(json_object_get(oa, k)), *now = json_string_value(v);
        int64_t a, b;
        tm_err e = {0};
        if (!was || !now || tm_quantity_parse_milli(was, &a, &e) ||
            tm_quantity_parse_milli(now, &b, &e) || b > a)
            return true;
    }
    return false;
}

/* Whether taint t (key, value and effect) is among taints. */
static bool has_taint(const json_t *taints, const json_t *t) {
    size_t i;
    json_t *u;
    json_array_foreach((json_t *)taints, i, u) {
        if (same_json(json_object_get(u, "key"), json_object_get(t, "key")) &&
            same_json(json_object_get(u, "value"), json_object_get(t, "value")) &&
            same_json(json_object_get(u, "effect"), json_object_get(t, "effect")))
            return true;
    }
    return false;
}

/* Whether the node lost a taint that filters read (NoSchedule, NoExecute): a pod that did not
 * tolerate it may fit now. */
static bool filter_taint_lost(const json_t *old, const json_t *obj) {
    const json_t *was = tm_json_path(old, "spec.taints"), *now = tm_json_path(obj, "spec.taints");
    size_t i;
    json_t *t;
    json_array_foreach((json_t *)was, i, t) {
        const char *effect = tm_json_str(t, "effect", "");
        if ((strcmp(effect, "NoSchedule") == 0 || strcmp(effect, "NoExecute") == 0) &&
            !has_taint(now, t))
            return true;
    }
    return false;
}

/* Whether obj has a taint (any effect) old did not have. */
static bool taint_gained(const json_t *old, const json_t *obj) {
    const json_t *was = tm_json_path(old, "spec.taints"), *now = tm_json_path(obj, "spec.taints");
    size_t i;
    json_t *t;
    json_array_foreach((json_t *)now, i, t) {
        if (!has_taint(was, t))
            return true;
    }
    return false;
}

typedef enum { NODE_HELPS_NONE, NODE_HELPS_SPREAD, NODE_HELPS_USABLE, NODE_HELPS_ALL } node_help;

/* Which waiting pods a relevant change of a known node (node_relevant_change) can let fit, as
 * kube-scheduler's queueing hints answer for the plugins that read it:
 *  - all: new labels (selectors, affinity, spread domains), more capacity (NodeResourcesFit);
 *  - usable: Ready again, uncordoned, a taint that filters read gone (TaintToleration: the pod
 *    may tolerate the node now), and nothing of the above: the node-scoped hook asks which
 *    pods the node can help (a preemptor waiting for its victims elsewhere only if it fits
 *    there outright: usable_hint.h);
 *  - spread: only taints gained or PreferNoSchedule ones changed. No pod tolerates the node
 *    where it did not, but a spread constraint with nodeTaintsPolicy Honor stops counting the
 *    node's domain, which may lift its minimum (PodTopologySpread's hint queues on any taint
 *    change, for the pods with spread constraints);
 *  - none: NotReady, cordoned, less capacity, new images (a score only).
 * With kwok nodes flapping under load, each NotReady, and each not-ready taint the node
 * lifecycle controller adds then, had sent every waiting preemptor through all nodes again. */
static node_help node_change_helps(const json_t *old, const json_t *obj) {
    if (!same_json(tm_json_path(old, "metadata.labels"), tm_json_path(obj, "metadata.labels")) ||
        allocatable_grew(old, obj))
        return NODE_HELPS_ALL;
    if (filter_taint_lost(old, obj)) /* one gained as well: spread domains changed */
        return taint_gained(old, obj) ? NODE_HELPS_ALL : NODE_HELPS_USABLE;
    if (strcmp(ready_status(obj), "True") == 0 && strcmp(ready_status(old), "True") != 0)
        return NODE_HELPS_USABLE;
    if (json_is_true(tm_json_path(old, "spec.unschedulable")) &&
        !json_is_true(tm_json_path(obj, "spec.unschedulable")))
        return NODE_HELPS_USABLE;
    if (!same_json(tm_json_path(old, "spec.taints"), tm_json_path(obj, "spec.taints")))
        return NODE_HELPS_SPREAD;
    return NODE_HELPS_NONE;
}

int sched_cache_node_event(sched_cache *c, tm_watch_type type, const json_t *obj, const json_t *old,
                           tm_err *err) {
    const char *name = tm_json_str(obj, "metadata.name", NULL);
    if (!name)
        return tm_err_set(err, "node event without metadata.name");
    if (type == TM_WATCH_DELETED) {
        /* -1 when never added: nothing to do. A node gone can help a spread-blocked pod (its
         * domain no longer counts), as kube-scheduler's PodTopologySpread hint says. */
        if (sched_snapshot_remove_node(c->snap, name) == 0 && c->hooks.cluster_changed)
            c->hooks.cluster_changed(c->hooks.ud);
        return 0;
    }
    if (type == TM_WATCH_MODIFIED && old && !node_relevant_change(old, obj) &&
        sched_snapshot_node_by_name(c->snap, name))
        return 0;
    sched_node *n = sched_node_from_json(c->snap, obj, err);
    if (!n)
        return -1;
    bool known = type == TM_WATCH_MODIFIED && old && sched_snapshot_node_by_name(c->snap, name);
    if (sched_snapshot_put_node(c->snap, n, err))
        return tm_err_wrap(err, "node %s", name);
    node_help helps = known ? node_change_helps(old, obj) : NODE_HELPS_ALL;
    if (helps == NODE_HELPS_SPREAD && c->hooks.node_taints_gained)
        c->hooks.node_taints_gained(c->hooks.ud);
    else if (helps == NODE_HELPS_USABLE && c->hooks.node_usable)
        c->hooks.node_usable(c->hooks.ud, name);
    else if (helps == NODE_HELPS_NONE && c->hooks.node_worsened)
        c->hooks.node_worsened(c->hooks.ud);
    else if (c->hooks.cluster_changed)
        c->hooks.cluster_changed(c->hooks.ud);
    return 0;
}

/* ---- pods ---------------------------------------------------------------------------------- */

/* A bound pod of priority prio released requests on node: the node-scoped hook when there is
 * one (and the node is known), else the cluster-wide one. */
static void released_on(sched_cache *c, const char *node, int32_t prio) {
    if (c->hooks.pod_released && node && node[0])
        c->hooks.pod_released(c->hooks.ud, node, prio);
    else if (c->hooks.cluster_changed)
        c->hooks.cluster_changed(c->hooks.ud);
}

static bool watched_ns(const sched_cache *c, const char *ns) {
    if (!c->namespaces[0])
        return true;
    for (size_t i = 0; c->namespaces[i]; i++)
        if (strcmp(c->namespaces[i], ns) == 0)
            return true;
    return false;
}

bool sched_cache_is_ours(const sched_cache *c, const json_t *pod) {
    const char *sn = tm_json_str(pod, "spec.schedulerName", "default-scheduler");
    return sched_profile_index(c->keys.profiles, sn) >= 0 &&
           watched_ns(c, tm_json_str(pod, "metadata.namespace", ""));
}

static void drop_assumed(sched_cache *c, const char *uid) {
    void *found = tfind(uid, &c->assumed, cmp_str);
    if (!found)
        return;
    char *key = *(char **)found;
    tdelete(uid, &c->assumed, cmp_str);
    free(key);
    c->n_assumed--;
}

/* Spec, labels and annotations: what the policy reads of a pending pod. */
static bool pod_relevant_change(const json_t *a, const json_t *b) {
    return !same_json(json_object_get(a, "spec"), json_object_get(b, "spec")) ||
           !same_json(tm_json_path(a, "metadata.labels"), tm_json_path(b, "metadata.labels")) ||
           !same_json(tm_json_path(a, "metadata.annotations"),
                      tm_json_path(b, "metadata.annotations"));
}

/* Whether any resource requested on a node went down from a to b. */
static bool requests_dropped(const sched_resources *a, const sched_resources *b, int n_res) {
    for (int r = 0; r < n_res; r++)
        if (b->v[r] < a->v[r])
            return true;
    return false;
}

/* What the record of a bound pod holds: its spec, labels, whether it is terminating, and the
 * resources its status reports after an in-place resize (the transform keeps only those). */
static bool bound_pod_relevant_change(const json_t *a, const json_t *b) {
    return !same_json(json_object_get(a, "spec"), json_object_get(b, "spec")) ||
           !same_json(tm_json_path(a, "status.containerStatuses"),
                      tm_json_path(b, "status.containerStatuses")) ||
           !same_json(tm_json_path(a, "status.initContainerStatuses"),
                      tm_json_path(b, "status.initContainerStatuses")) ||
           !same_json(tm_json_path(a, "status.conditions"), tm_json_path(b, "status.conditions")) ||
           !same_json(tm_json_path(a, "metadata.labels"), tm_json_path(b, "metadata.labels")) ||
           !same_json(tm_json_path(a, "metadata.deletionTimestamp"),
                      tm_json_path(b, "metadata.deletionTimestamp"));
}

/* The claims a bound pod uses (persistentVolumeClaim.claimName; a generic ephemeral volume's
 * <pod>-<volume>), recorded for VolumeRestrictions and NodeVolumeLimits. 0, -1 on OOM. */
static int record_claim_uses(sched_cache *c, const char *uid, const char *ns, const char *name,
                             const char *node, const json_t *obj) {
    sched_volumes *v = sched_snapshot_volumes(c->snap);
    if (!v)
        return 0;
    char *claims[64], buf[64][256];
    size_t n = 0, i;
    const json_t *vol;
    json_array_foreach(tm_json_path(obj, "spec.volumes"), i, vol) {
        const char *cn = tm_json_str(vol, "persistentVolumeClaim.claimName", NULL);
        if (!cn && json_object_get(vol, "ephemeral"))
            snprintf(buf[n], sizeof buf[n], "%s-%s", name, tm_json_str(vol, "name", ""));
        else if (cn)
            snprintf(buf[n], sizeof buf[n], "%s", cn);
        else
            continue;
        claims[n] = buf[n];
        if (++n == 64)
            break;
    }
    return sched_volumes_pod_use(v, uid, ns, node, claims, n);
}

int sched_cache_pod_event(sched_cache *c, tm_watch_type type, const json_t *obj, const json_t *old,
                          tm_err *err) {
    const char *uid = tm_json_str(obj, "metadata.uid", NULL);
    const char *ns = tm_json_str(obj, "metadata.namespace", "");
    const char *name = tm_json_str(obj, "metadata.name", "");
    if (!uid)
        return tm_err_set(err, "pod %s/%s: event without metadata.uid", ns, name);
    const char *node = tm_json_str(obj, "spec.nodeName", "");
    bool ours = sched_cache_is_ours(c, obj);
    if (type == TM_WATCH_DELETED || sched_pod_json_terminal(obj)) {
        /* where it was and its priority, for the node-scoped requeue (pod_released) */
        const char *at = sched_snapshot_pod_node(c->snap, uid);
        const sched_pod_meta *m = sched_snapshot_pod_meta(c->snap, uid);
        char was[256];
        snprintf(was, sizeof was, "%s", at ? at : "");
        int32_t prio = m ? m->priority : INT32_MAX; /* unknown: one no pod can evict */
        bool released = sched_snapshot_remove_pod(c->snap, uid) == 0;
        if (sched_snapshot_volumes(c->snap))
            sched_volumes_pod_use(sched_snapshot_volumes(c->snap), uid, "", "", NULL, 0);
        drop_assumed(c, uid);
        if (ours && c->hooks.pod_gone)
            c->hooks.pod_gone(c->hooks.ud, uid, NULL);
        if (released)
            released_on(c, was, prio);
        return 0;
    }
    if (node[0]) {
        /* Every bound pod, whoever placed it and whenever, is recorded with what the inter-pod
         * plugins read (podspec.h: the record Reserve makes of our own pods), so that a
         * restart or a leader change rebuilds the same state. A status-only update (phase,
         * conditions) changes nothing recorded. */
        int rc = 0;
        tm_err perr = {{0}, 0};
        const char *was = sched_snapshot_pod_node(c->snap, uid);
        bool same_node = was && strcmp(was, node) == 0;
        bool recorded = !(type == TM_WATCH_MODIFIED && old && same_node &&
                          !sched_cache_is_assumed(c, uid) && !bound_pod_relevant_change(old, obj));
        const sched_node *on = same_node ? sched_snapshot_node_by_name(c->snap, node) : NULL;
        sched_resources before = on ? on->requested : (sched_resources){{0}};
        /* and what the node's pods use of the resources kept sparsely (snapshot.h); NULL when
         * out of memory: counted as dropped (a requeue too many, never one too few) */
        int64_t *xbefore = on && on->n_xalloc ? malloc(on->n_xalloc * sizeof *xbefore) : NULL;
        if (xbefore)
            memcpy(xbefore, on->xused, on->n_xalloc * sizeof *xbefore);
        bool xdropped = on && on->n_xalloc && !xbefore;
        if (recorded)
            rc = sched_snapshot_add_pod_json(c->snap, obj, node, &perr);
        for (uint32_t k = 0; xbefore && k < on->n_xalloc; k++)
            xdropped = xdropped || on->xused[k] < xbefore[k];
        free(xbefore);
        if (recorded && record_claim_uses(c, uid, ns, name, node, obj) != 0)
            return tm_err_set(err, "pod %s/%s: out of memory recording its claims", ns, name);
        if (rc && !sched_snapshot_pod_node(c->snap, uid)) /* not recorded at all */
            return tm_err_set(err, "pod %s/%s: %s", ns, name, perr.msg);
        /* a bound pod whose labels changed may no longer match an anti-affinity or a spread
         * constraint, and one resized down (in place) frees capacity, as kube-scheduler's
         * NodeResourcesFit hint says of a scaled-down pod: any unschedulable pod may fit; a new
         * one helps those it matches */
        bool relabelled =
            recorded && old && same_node &&
            !same_json(tm_json_path(old, "metadata.labels"), tm_json_path(obj, "metadata.labels"));
        bool shrunk = recorded && old && same_node && on &&
                      (xdropped || requests_dropped(&before, &on->requested,
                                                    sched_snapshot_resource_count(c->snap)));
        if (relabelled && c->hooks.cluster_changed)
            c->hooks.cluster_changed(c->hooks.ud);
        else if (shrunk) {
            const sched_pod_meta *m = sched_snapshot_pod_meta(c->snap, uid);
            released_on(c, node, m ? m->priority : INT32_MAX);
        } else if (recorded && c->hooks.pod_bound)
            c->hooks.pod_bound(c->hooks.ud, sched_snapshot_pod_meta(c->snap, uid));
        drop_assumed(c, uid);
        if (ours && c->hooks.pod_gone)
            c->hooks.pod_gone(c->hooks.ud, uid, node);
        if (rc) /* recorded with its requests only */
            return tm_err_set(err, "pod %s/%s: %s", ns, name, perr.msg);
        return 0;
    }
    if (!ours)
        return 0; /* another scheduler's pending pod holds nothing yet */
    if (tm_json_path(obj, "metadata.deletionTimestamp")) {
        if (c->hooks.pod_gone)
            c->hooks.pod_gone(c->hooks.ud, uid, NULL);
        return 0;
    }
    if (type == TM_WATCH_MODIFIED && old && !pod_relevant_change(old, obj))
        return 0;
    sched_pod *p = sched_pod_from_json(c->snap, obj, &c->keys, err);
    if (!p)
        return -1;
    if (c->hooks.pod_pending)
        c->hooks.pod_pending(c->hooks.ud, p);
    else
        sched_pod_free(p);
    return 0;
}

/* ---- informer transforms ------------------------------------------------------------------- */

/* Copies (by reference) the listed members of src that are present into a new object. A fresh
 * object is smaller than one with members deleted: jansson's tables never shrink. */
static json_t *pick(const json_t *src, const char *const *keys) {
    json_t *o = json_object();
    for (size_t i = 0; o && keys[i]; i++) {
        json_t *v = json_object_get(src, keys[i]);
        if (v)
            json_object_set(o, keys[i], v);
    }
    return o;
}

/* Sets key to v (a new reference) unless v is NULL or an empty object. */
static void put(json_t *o, const char *key, json_t *v) {
    if (v && json_is_object(v) && json_object_size(v) == 0) {
        json_decref(v);
        return;
    }
    if (v)
        json_object_set_new(o, key, v);
}

json_t *sched_cache_node_transform(void *cache, json_t *obj) {
    (void)cache;
    if (!json_is_object(obj))
        return obj;
    static const char *const meta_keys[] = {"name", "resourceVersion", "labels", NULL};
    static const char *const spec_keys[] = {"unschedulable", "taints", NULL};
    json_t *n = json_object();
    put(n, "metadata", pick(json_object_get(obj, "metadata"), meta_keys));
    put(n, "spec", pick(json_object_get(obj, "spec"), spec_keys));
    const json_t *st = json_object_get(obj, "status");
    json_t *status = json_object();
    const json_t *alloc = json_object_get(st, "allocatable");
    if (json_is_object(alloc) && json_object_size(alloc))
        json_object_set(status, "allocatable", (json_t *)alloc);
    else if (json_object_get(st, "capacity"))
        json_object_set(status, "capacity", json_object_get(st, "capacity"));
    size_t i;
    json_t *cnd;
    if (json_array_size(json_object_get(st, "images"))) { /* names and sizes: ImageLocality */
        static const char *const image_keys[] = {"names", "sizeBytes", NULL};
        json_t *arr = json_array();
        json_array_foreach(json_object_get(st, "images"), i, cnd)
            json_array_append_new(arr, pick(cnd, image_keys));
        json_object_set_new(status, "images", arr);
    }
    json_array_foreach(json_object_get(st, "conditions"), i, cnd) {
        if (strcmp(tm_json_str(cnd, "type", ""), "Ready") == 0) {
            static const char *const cond_keys[] = {"type", "status", NULL};
            json_t *arr = json_array();
            json_array_append_new(arr, pick(cnd, cond_keys));
            json_object_set_new(status, "conditions", arr);
            break;
        }
    }
    put(n, "status", status);
    json_decref(obj);
    return n;
}

/* Of a container: what requests, host ports, sidecar accounting and ImageLocality read. */
static json_t *trim_containers(const json_t *arr) {
    if (!json_is_array(arr))
        return NULL;
    static const char *const ctr_keys[] = {"name", "image", "ports", "restartPolicy", NULL};
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(arr, i, c) {
        json_t *t = pick(c, ctr_keys);
        json_t *req = tm_json_path(c, "resources.requests");
        if (req)
            json_object_set_new(t, "resources", json_pack("{s:O}", "requests", req));
        json_array_append_new(out, t);
    }
    return out;
}

/* Of the volumes: those that name a claim (persistentVolumeClaim, generic ephemeral). */
static json_t *trim_volumes(const json_t *arr) {
    if (!json_is_array(arr))
        return NULL;
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        json_t *pvc = json_object_get(v, "persistentVolumeClaim");
        if (pvc)
            json_array_append_new(out,
                                  json_pack("{s:O?, s:{s:O?}}", "name", json_object_get(v, "name"),
                                            "persistentVolumeClaim", "claimName",
                                            json_object_get(pvc, "claimName")));
        else if (json_object_get(v, "ephemeral"))
            json_array_append_new(
                out, json_pack("{s:O?, s:{}}", "name", json_object_get(v, "name"), "ephemeral"));
    }
    if (json_array_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* Of the container statuses: those that report resources after an in-place resize (name,
 * resources.requests, allocatedResources), NULL when none does. */
static json_t *trim_container_statuses(const json_t *arr) {
    json_t *out = NULL;
    size_t i;
    json_t *cs;
    json_array_foreach(arr, i, cs) {
        json_t *res = json_object_get(cs, "resources");
        json_t *alloc = json_object_get(cs, "allocatedResources");
        if ((!res || json_is_null(res)) && !alloc)
            continue;
        json_t *t = json_pack("{s:O?}", "name", json_object_get(cs, "name"));
        if (res && !json_is_null(res)) {
            json_t *req = json_object_get(res, "requests");
            json_object_set_new(t, "resources",
                                req ? json_pack("{s:O}", "requests", req) : json_object());
        }
        if (alloc)
            json_object_set(t, "allocatedResources", alloc);
        if (!out)
            out = json_array();
        json_array_append_new(out, t);
    }
    return out;
}

/* Of the status: the phase, the container statuses that report resources and the
 * PodResizePending condition (what the effective requests read, podspec.h). */
static json_t *trim_status(const json_t *st) {
    /* nominatedNodeName and startTime: what preemption reads (nominations survive a restart;
     * victims are ordered by start) */
    static const char *const keys[] = {"phase", "nominatedNodeName", "startTime", NULL};
    json_t *o = pick(st, keys);
    json_t *v = trim_container_statuses(json_object_get(st, "containerStatuses"));
    if (v)
        json_object_set_new(o, "containerStatuses", v);
    if ((v = trim_container_statuses(json_object_get(st, "initContainerStatuses"))))
        json_object_set_new(o, "initContainerStatuses", v);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(st, "conditions"), i, c) {
        if (strcmp(tm_json_str(c, "type", ""), "PodResizePending") == 0) {
            static const char *const cond_keys[] = {"type", "reason", NULL};
            json_t *arr = json_array();
            json_array_append_new(arr, pick(c, cond_keys));
            json_object_set_new(o, "conditions", arr);
            break;
        }
    }
    return o;
}

json_t *sched_cache_pod_transform(void *cache, json_t *obj) {
    const sched_cache *c = cache;
    if (!json_is_object(obj))
        return obj;
    /* Another scheduler's pod that is not on a node yet holds no capacity and is never ours to
     * place: not kept (on a large cluster these are most of the listed pods). Once bound it
     * comes back as an update, which the informer delivers as an add. */
    const char *node = tm_json_str(obj, "spec.nodeName", "");
    if (!node[0] && !sched_cache_is_ours(c, obj)) {
        json_decref(obj);
        return NULL;
    }
    static const char *const meta_keys[] = {
        "name",   "namespace",  "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
        "labels", "generation", /* observedGeneration of the conditions we write */
        NULL};
    static const char *const spec_keys[] = {"nodeName",
                                            "activeDeadlineSeconds", /* reservations' backfill */
                                            "schedulerName",
                                            "priority",
                                            "priorityClassName",
                                            "preemptionPolicy",
                                            "tolerations",
                                            "nodeSelector",
                                            "affinity",
                                            "topologySpreadConstraints",
                                            "overhead",
                                            "schedulingGates",
                                            "runtimeClassName",
                                            "hostNetwork",
                                            "workloadRef",     /* gang membership (gang.h) */
                                            "schedulingGroup", /* the same from 1.36 */
                                            "resources",       /* pod-level requests */
                                            "resourceClaims",  /* DRA: never placed by us */
                                            NULL};
    /* Of a placed pod, only what is read of the pods on nodes: not what places a pod
     * (tolerations, node selector and affinity, spread constraints, gates), which a pod on a
     * node no longer uses. On a cluster of 50,000 placed pods that is a third of what the pod
     * informer's store holds of each (docs/performance.md). */
    static const char *const placed_spec_keys[] = {"nodeName",
                                                   "activeDeadlineSeconds",
                                                   "schedulerName",
                                                   "priority",
                                                   "priorityClassName",
                                                   "overhead",
                                                   "runtimeClassName",
                                                   "hostNetwork",
                                                   "workloadRef",
                                                   "schedulingGroup",
                                                   "resources",
                                                   "resourceClaims",
                                                   NULL};
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *m = pick(meta, meta_keys);
    /* Only the annotations the policy reads: kubectl's last-applied-configuration alone can be
     * larger than everything else kept. */
    json_t *ann = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(meta, "annotations"), k, v) {
        if (strcmp(k, c->keys.workflow_key) == 0 || strncmp(k, "tarema.io/", 10) == 0)
            json_object_set(ann, k, v);
    }
    put(m, "annotations", ann);
    /* Of a pod still to place, its controller reference: PodTopologySpread's default
     * constraints select the pods its ReplicaSet, StatefulSet or ReplicationController selects.
     * Placed pods do not need it (they are counted by their labels). */
    size_t ri;
    json_t *ref;
    json_array_foreach(json_object_get(meta, "ownerReferences"), ri, ref) {
        if (node[0] || !json_is_true(json_object_get(ref, "controller")))
            continue;
        static const char *const ref_keys[] = {"apiVersion", "kind", "name", "controller", NULL};
        json_t *refs = json_array();
        json_array_append_new(refs, pick(ref, ref_keys));
        json_object_set_new(m, "ownerReferences", refs);
        break;
    }
    json_t *p = json_object();
    put(p, "metadata", m);
    const json_t *spec = json_object_get(obj, "spec");
    if (json_is_object(spec)) {
        json_t *s = pick(spec, node[0] ? placed_spec_keys : spec_keys);
        if (node[0]) { /* the pod (anti-)affinity of pods on nodes counts, node affinity not */
            static const char *const pod_aff_keys[] = {"podAffinity", "podAntiAffinity", NULL};
            json_t *aff = pick(json_object_get(spec, "affinity"), pod_aff_keys);
            if (json_object_size(aff))
                json_object_set_new(s, "affinity", aff);
            else
                json_decref(aff);
        }
        put(s, "containers", trim_containers(json_object_get(spec, "containers")));
        put(s, "initContainers", trim_containers(json_object_get(spec, "initContainers")));
        /* VolumeBinding reads the claims of the pods it places; VolumeRestrictions and
         * NodeVolumeLimits those of the pods on nodes */
        put(s, "volumes", trim_volumes(json_object_get(spec, "volumes")));
        json_object_set_new(p, "spec", s);
    }
    put(p, "status", trim_status(json_object_get(obj, "status")));
    json_decref(obj);
    return p;
}

/* ---- task profiles --------------------------------------------------------------------------- */

int sched_cache_task_event(sched_cache *c, tm_watch_type type, const json_t *obj, tm_err *err) {
    const char *wf, *proc;
    sched_task_profile tp;
    tm_err warn = {{0}, 0};
    if (sched_task_profile_from_json_warn(obj, &wf, &proc, &tp, &warn, err))
        return tm_err_wrap(err, "TaskProfile %s/%s", tm_json_str(obj, "metadata.namespace", ""),
                           tm_json_str(obj, "metadata.name", "?"));
    if (warn.msg[0] && type != TM_WATCH_DELETED)
        tm_warn("%s (namespace %s)", warn.msg, tm_json_str(obj, "metadata.namespace", ""));
    if (type == TM_WATCH_DELETED) {
        sched_snapshot_remove_task(c->snap, wf, proc);
        return 0;
    }
    return sched_snapshot_set_task(c->snap, wf, proc, &tp, err);
}

/* ---- Service and controller selectors (PodTopologySpread's default constraints) ---------- */

int sched_cache_track_owner_selectors(sched_cache *c, tm_err *err) {
    if (sched_snapshot_owner_selectors(c->snap))
        return 0;
    sched_owner_sels *t = sched_owner_sels_new();
    if (!t)
        return tm_err_set(err, "out of memory");
    sched_snapshot_set_owner_selectors(c->snap, t);
    return 0;
}

int sched_cache_owner_event(sched_cache *c, sched_owner_kind k, tm_watch_type type,
                            const json_t *obj, tm_err *err) {
    sched_owner_sels *t = sched_snapshot_owner_selectors(c->snap);
    if (!t)
        return 0;
    if (type == TM_WATCH_DELETED) {
        const char *ns = tm_json_str(obj, "metadata.namespace", "default");
        sched_owner_sels_remove(t, k, ns[0] ? ns : "default",
                                tm_json_str(obj, "metadata.name", ""));
        return 0;
    }
    /* a soft preference only: no pod becomes schedulable by it, so nothing is requeued */
    return sched_owner_sels_put_json(t, k, obj, err);
}

json_t *sched_cache_owner_transform(void *cache, json_t *obj) {
    (void)cache;
    if (!json_is_object(obj))
        return obj;
    static const char *const meta_keys[] = {"name", "namespace", "resourceVersion", NULL};
    static const char *const spec_keys[] = {"selector", NULL};
    json_t *o = json_object();
    put(o, "metadata", pick(json_object_get(obj, "metadata"), meta_keys));
    put(o, "spec", pick(json_object_get(obj, "spec"), spec_keys));
    json_decref(obj);
    return o;
}

/* ---- volumes --------------------------------------------------------------------------------- */

int sched_cache_track_volumes(sched_cache *c, tm_err *err) {
    if (sched_snapshot_volumes(c->snap))
        return 0;
    sched_volumes *v = sched_volumes_new();
    if (!v)
        return tm_err_set(err, "out of memory");
    sched_snapshot_set_volumes(c->snap, v);
    return 0;
}

void sched_cache_untrack_volumes(sched_cache *c) {
    sched_volumes *v = sched_snapshot_volumes(c->snap);
    sched_snapshot_set_volumes(c->snap, NULL);
    sched_volumes_free(v);
}

/* What VolumeBinding reads of a claim or volume; other changes (status, annotations) are not
 * worth retrying unschedulable pods for. */
static bool volume_relevant_change(bool claim, const json_t *a, const json_t *b) {
    return !same_json(tm_json_path(a, "spec.volumeName"), tm_json_path(b, "spec.volumeName")) ||
           !same_json(tm_json_path(a, "spec.claimRef"), tm_json_path(b, "spec.claimRef")) ||
           /* a PV becoming Available may take a claim; a claim's phase follows its binding */
           (!claim &&
            !same_json(tm_json_path(a, "status.phase"), tm_json_path(b, "status.phase"))) ||
           !same_json(tm_json_path(a, "metadata.annotations"),
                      tm_json_path(b, "metadata.annotations")) ||
           sched_volumes_claim_bind_completed(a) != sched_volumes_claim_bind_completed(b) ||
           !same_json(tm_json_path(a, "spec.nodeAffinity"), tm_json_path(b, "spec.nodeAffinity")) ||
           !same_json(tm_json_path(a, "metadata.deletionTimestamp"),
                      tm_json_path(b, "metadata.deletionTimestamp"));
}

static int volume_event(sched_cache *c, bool claim, tm_watch_type type, const json_t *obj,
                        const json_t *old, tm_err *err) {
    sched_volumes *v = sched_snapshot_volumes(c->snap);
    if (!v)
        return 0; /* not tracked */
    if (type == TM_WATCH_DELETED) {
        const char *name = tm_json_str(obj, "metadata.name", "");
        if (claim)
            sched_volumes_remove_claim(v, tm_json_str(obj, "metadata.namespace", ""), name);
        else
            sched_volumes_remove_volume(v, name);
        return 0; /* a claim or volume gone lets no pod fit that did not */
    }
    /* always kept current (the resourceVersion the PreBind writes are conditional on), but
     * only what the volume plugins read retries unschedulable pods */
    if ((claim ? sched_volumes_put_claim(v, obj, err) : sched_volumes_put_volume(v, obj, err)) != 0)
        return -1;
    if (type == TM_WATCH_MODIFIED && old && !volume_relevant_change(claim, old, obj))
        return 0;
    if (c->hooks.cluster_changed)
        c->hooks.cluster_changed(c->hooks.ud);
    return 0;
}

int sched_cache_claim_event(sched_cache *c, tm_watch_type type, const json_t *obj,
                            const json_t *old, tm_err *err) {
    return volume_event(c, true, type, obj, old, err);
}

int sched_cache_volume_event(sched_cache *c, tm_watch_type type, const json_t *obj,
                             const json_t *old, tm_err *err) {
    return volume_event(c, false, type, obj, old, err);
}

/* StorageClasses and CSINodes: a new or changed one may let a pod fit (a class to provision
 * from, a higher attach limit); one gone lets no pod fit that did not. */
static int storage_event(sched_cache *c, bool class, tm_watch_type type, const json_t *obj,
                         tm_err *err) {
    sched_volumes *v = sched_snapshot_volumes(c->snap);
    if (!v)
        return 0;
    const char *name = tm_json_str(obj, "metadata.name", "");
    if (type == TM_WATCH_DELETED) {
        if (class)
            sched_volumes_remove_class(v, name);
        else
            sched_volumes_remove_csinode(v, name);
        return 0;
    }
    if ((class ? sched_volumes_put_class(v, obj, err) : sched_volumes_put_csinode(v, obj, err)) !=
        0)
        return -1;
    if (c->hooks.cluster_changed)
        c->hooks.cluster_changed(c->hooks.ud);
    return 0;
}

int sched_cache_class_event(sched_cache *c, tm_watch_type type, const json_t *obj, tm_err *err) {
    return storage_event(c, true, type, obj, err);
}

int sched_cache_csinode_event(sched_cache *c, tm_watch_type type, const json_t *obj, tm_err *err) {
    return storage_event(c, false, type, obj, err);
}

/* ---- assumptions ----------------------------------------------------------------------------- */

/* Adds uid to the assumed set (once). 0, or -1 with err when out of memory. */
static int remember_assumed(sched_cache *c, const char *uid, tm_err *err) {
    if (tfind(uid, &c->assumed, cmp_str))
        return 0;
    char *key = strdup(uid);
    if (!key || !tsearch(key, &c->assumed, cmp_str)) {
        free(key);
        return tm_err_set(err, "out of memory");
    }
    c->n_assumed++;
    return 0;
}

int sched_cache_assume_placed(sched_cache *c, const char *uid, tm_err *err) {
    if (!sched_snapshot_pod_node(c->snap, uid))
        return tm_err_set(err, "pod %s is not reserved on a node", uid);
    return remember_assumed(c, uid, err);
}

bool sched_cache_forget(sched_cache *c, const char *uid) {
    if (!tfind(uid, &c->assumed, cmp_str))
        return false;
    drop_assumed(c, uid);
    sched_snapshot_remove_pod(c->snap, uid);
    return true;
}

bool sched_cache_is_assumed(const sched_cache *c, const char *uid) {
    return tfind(uid, &c->assumed, cmp_str) != NULL;
}

size_t sched_cache_assumed_count(const sched_cache *c) {
    return c->n_assumed;
}
