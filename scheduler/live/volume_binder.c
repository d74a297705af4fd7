/* volume_binder.c: PreBind of the pods whose Reserve chose volumes (volume_binder.h). One
 * operation per pod, on a list; the API writes are counted per operation, and an answer after
 * the operation ended (its writes still in flight when it failed) finds it by id, not pointer. */
#include "scheduler/live/volume_binder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/log.h"

typedef struct vb_op {
    uint64_t id;
    char *ns, *name, *uid;
    sched_volume_plan *plan;
    int64_t deadline_ms;
    int writes; /* unanswered */
    char failed[512];
    struct vb_op *next;
} vb_op;

struct sched_volume_binder {
    tm_kube *k;
    sched_cache *cache;
    sched_binder *binder;
    int64_t timeout_ms;
    sched_volume_failed_fn failed;
    void *ud;
    vb_op *ops;
    size_t n_ops;
    uint64_t next_id;
};

/* What an answer needs: the operation's id (it may be gone). */
typedef struct write_ctx {
    sched_volume_binder *vb;
    uint64_t id;
    char what[320];
} write_ctx;

sched_volume_binder *sched_volume_binder_new(tm_kube *k, sched_cache *cache, sched_binder *binder,
                                             int64_t timeout_ms, sched_volume_failed_fn failed,
                                             void *ud) {
    sched_volume_binder *vb = calloc(1, sizeof *vb);
    if (!vb)
        return NULL;
    *vb = (sched_volume_binder){k, cache, binder, timeout_ms, failed, ud, NULL, 0, 1};
    return vb;
}

static void op_free(vb_op *op) {
    free(op->ns);
    free(op->name);
    free(op->uid);
    sched_volume_plan_free(op->plan);
    free(op);
}

void sched_volume_binder_free(sched_volume_binder *vb) {
    if (!vb)
        return;
    while (vb->ops) {
        vb_op *op = vb->ops;
        vb->ops = op->next;
        op_free(op);
    }
    free(vb);
}

size_t sched_volume_binder_waiting(const sched_volume_binder *vb) {
    return vb->n_ops;
}

static vb_op *find_op(sched_volume_binder *vb, uint64_t id) {
    for (vb_op *op = vb->ops; op; op = op->next)
        if (op->id == id)
            return op;
    return NULL;
}

static void write_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    write_ctx *w = ud;
    sched_cache_lock(w->vb->cache);
    vb_op *op = find_op(w->vb, w->id);
    if (op) {
        op->writes--;
        if (err && !op->failed[0]) {
            int n = snprintf(op->failed, sizeof op->failed, "%s: status %d: ", w->what, status);
            if (n > 0 && (size_t)n < sizeof op->failed) { /* the error's text, cut to fit */
                size_t room = sizeof op->failed - (size_t)n - 1, l = strlen(err->msg);
                memcpy(op->failed + n, err->msg, l < room ? l : room);
                op->failed[(size_t)n + (l < room ? l : room)] = '\0';
            }
        }
    } else if (err && status != 404) {
        tm_warn("volume write after its pod's PreBind ended failed what=\"%s\" status=%d", w->what,
                status);
    }
    sched_cache_unlock(w->vb->cache);
    free(w);
}

/* A merge patch of path; counted on op when op is given. 0, or -1 (not started). */
static int patch(sched_volume_binder *vb, vb_op *op, const char *path, json_t *body,
                 const char *what) {
    write_ctx *w = calloc(1, sizeof *w);
    if (!w) {
        json_decref(body);
        return -1;
    }
    w->vb = vb;
    w->id = op ? op->id : 0;
    snprintf(w->what, sizeof w->what, "%s", what);
    int rc = body && path ? tm_kube_write_async(vb->k, "PATCH", path, body,
                                                "application/merge-patch+json", write_done, w)
                          : -1;
    json_decref(body);
    if (rc) {
        free(w);
        return -1;
    }
    if (op)
        op->writes++;
    return 0;
}

/* The PV bound to the claim, as kube's GetBindVolumeToClaim writes it; resourceVersion makes
 * the write fail (409) if the PV changed since the scheduler saw it free. */
static json_t *bind_pv_body(const sched_volume_bind *b) {
    return json_pack("{s:{s:s, s:{s:s}}, s:{s:{s:s, s:s, s:s, s:s, s:s}}}", "metadata",
                     "resourceVersion", b->pv_rv, "annotations",
                     "pv.kubernetes.io/bound-by-controller", "yes", "spec", "claimRef", "kind",
                     "PersistentVolumeClaim", "apiVersion", "v1", "namespace", b->ns, "name",
                     b->claim, "uid", b->claim_uid);
}

int sched_volume_binder_start(sched_volume_binder *vb, const sched_pod *p, sched_volume_plan *plan,
                              int64_t now_ms, tm_err *err) {
    vb_op *op = calloc(1, sizeof *op);
    if (!op || !(op->ns = strdup(p->ns)) || !(op->name = strdup(p->name)) ||
        !(op->uid = strdup(p->uid))) {
        if (op)
            op_free(op);
        sched_volumes_revert(sched_snapshot_volumes(sched_cache_snapshot(vb->cache)), plan);
        sched_volume_plan_free(plan);
        return tm_err_set(err, "out of memory");
    }
    op->id = vb->next_id++;
    op->plan = plan;
    op->deadline_ms = now_ms + vb->timeout_ms;
    op->next = vb->ops;
    vb->ops = op;
    vb->n_ops++;
    for (size_t i = 0; i < plan->n && !op->failed[0]; i++) {
        const sched_volume_bind *b = &plan->b[i];
        char what[320];
        char *path;
        json_t *body;
        if (b->pv) {
            snprintf(what, sizeof what, "binding pv \"%s\" to claim %s/%s", b->pv, b->ns, b->claim);
            path = tm_kube_path("v1", "persistentvolumes", NULL, b->pv, NULL);
            body = bind_pv_body(b);
        } else {
            snprintf(what, sizeof what, "selecting node %s for claim %s/%s", plan->node, b->ns,
                     b->claim);
            path = tm_kube_path("v1", "persistentvolumeclaims", b->ns, b->claim, NULL);
            body = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "resourceVersion", b->claim_rv,
                             "annotations", "volume.kubernetes.io/selected-node", plan->node);
        }
        if (patch(vb, op, path, body, what) != 0)
            snprintf(op->failed, sizeof op->failed, "%s: the request could not be started", what);
        free(path);
        tm_debug("PreBind VolumeBinding pod=%s/%s %s", p->ns, p->name, what);
    }
    return 0;
}

/* Undo the writes of a failed operation where they still stand and nothing was bound, then the
 * assumption. */
static void undo(sched_volume_binder *vb, vb_op *op) {
    sched_volumes *v = sched_snapshot_volumes(sched_cache_snapshot(vb->cache));
    const sched_volume_plan *pl = op->plan;
    for (size_t i = 0; v && i < pl->n; i++) {
        const sched_volume_bind *b = &pl->b[i];
        if (!sched_volumes_plan_undoable(v, pl, i))
            continue;
        char what[320];
        char *path;
        json_t *body;
        if (b->pv) {
            snprintf(what, sizeof what, "unbinding pv \"%s\"", b->pv);
            path = tm_kube_path("v1", "persistentvolumes", NULL, b->pv, NULL);
            body = json_pack("{s:{s:n}}", "spec", "claimRef");
        } else {
            snprintf(what, sizeof what, "removing the selected node of claim %s/%s", b->ns,
                     b->claim);
            path = tm_kube_path("v1", "persistentvolumeclaims", b->ns, b->claim, NULL);
            body = json_pack("{s:{s:{s:n}}}", "metadata", "annotations",
                             "volume.kubernetes.io/selected-node");
        }
        if (patch(vb, NULL, path, body, what) != 0)
            tm_warn("volume undo not started what=\"%s\"", what);
        else
            tm_info("volume choice undone pod=%s/%s what=\"%s\"", op->ns, op->name, what);
        free(path);
    }
    if (v) {
        sched_volumes_revert(v, pl);
        sched_volumes_pod_use(v, op->uid, "", "", NULL, 0);
    }
}

static void unlink_op(sched_volume_binder *vb, vb_op *op) {
    for (vb_op **pp = &vb->ops; *pp; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            vb->n_ops--;
            return;
        }
}

int64_t sched_volume_binder_tick(sched_volume_binder *vb, int64_t now_ms) {
    const sched_volumes *v = sched_snapshot_volumes(sched_cache_snapshot(vb->cache));
    int64_t next = -1;
    vb_op *op = vb->ops;
    while (op) {
        vb_op *nx = op->next;
        char why[512] = "";
        int st = 0;
        if (op->failed[0]) {
            snprintf(why, sizeof why, "%s", op->failed);
            st = -1;
        } else if (!op->writes) {
            st = v ? sched_volumes_plan_status(v, op->plan, why, sizeof why) : -1;
        }
        if (st == 0 && now_ms >= op->deadline_ms) {
            snprintf(why, sizeof why,
                     "context deadline exceeded (the claims were not bound "
                     "within the volume bind timeout)");
            st = -1;
        }
        if (st == 0) {
            int64_t d = op->deadline_ms - now_ms;
            next = next < 0 || d < next ? d : next;
            op = nx;
            continue;
        }
        unlink_op(vb, op);
        if (st > 0) {
            sched_pod p = {0};
            p.ns = op->ns;
            p.name = op->name;
            p.uid = op->uid;
            tm_err err = {0};
            tm_info("volumes bound pod=%s/%s node=%s", op->ns, op->name, op->plan->node);
            if (sched_binder_bind(vb->binder, &p, op->plan->node, &err) != 0 && vb->failed)
                vb->failed(vb->ud, op->ns, op->name, op->uid, err.msg);
        } else {
            char msg[1024];
            snprintf(msg, sizeof msg,
                     "running PreBind plugin \"VolumeBinding\": binding volumes: %s", why);
            tm_warn("volume binding failed pod=%s/%s node=%s err=\"%s\"", op->ns, op->name,
                    op->plan->node, why);
            undo(vb, op);
            if (vb->failed)
                vb->failed(vb->ud, op->ns, op->name, op->uid, msg);
        }
        op_free(op);
        op = nx;
    }
    return next;
}
