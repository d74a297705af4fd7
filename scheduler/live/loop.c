/* loop.c: the scheduling cycle of tarema-scheduler on the kube loop thread.
 *
 * Why one thread: informer events, scheduling decisions and bind completions all mutate the
 * snapshot and the queue; doing them on one thread keeps decisions deterministic and lock-free
 * among themselves. Decisions are CPU-only (the snapshot is in memory), binds are asynchronous,
 * so the network never stalls a decision. The cache mutex only guards the snapshot against the
 * HTTP threads (extender routes). */
#include "scheduler/live/loop.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/duration.h"
#include "lib/log.h"
#include "scheduler/live/backfill_live.h"
#include "scheduler/live/binder.h"
#include "scheduler/live/fw_metrics.h"
#include "scheduler/live/gang_live.h"
#include "scheduler/live/preemptor.h"
#include "scheduler/live/release_hint.h"
#include "scheduler/live/usable_hint.h"
#include "scheduler/backend/nominated.h"
#include "scheduler/plugins/gang/gang_plugin.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/preemption/preemption.h"
#include "scheduler/plugins/filters.h"
#include "scheduler/plugins/spread_defaults.h"
#include "scheduler/backend/queue.h"
#include "scheduler/live/resv_controller.h"
#include "scheduler/live/volume_binder.h"
#include "scheduler/plugins/volume_binding.h"
#include "scheduler/plugins/scheduling_gates.h"

/* Cycles per batch: enough to amortise the lock and the loop turn, small enough that watch
 * events and bind completions are handled promptly. A batch also ends after BATCH_MS: the API
 * server closes watchers that stop reading during bursts. */
#define BATCH    256
#define BATCH_MS 20
/* How long to wait for TaskProfiles whose list failed (RBAC, a broken CRD; the informer retries)
 * after nodes and pods are listed before scheduling anyway: tasks are then unknown until it
 * succeeds, which the policy handles. A list that is merely slow is waited for, as kube-scheduler
 * waits for every informer: a pod placed before its TaskProfile is placed on the wrong rank. */
#define TASKS_GRACE_MS 3000
/* ... and how long one that has not failed is waited for at most (a list that an intermediary
 * keeps cutting short restarts without a backoff): past it, scheduling starts with a warning. */
#define TASKS_WAIT_MAX_MS 60000
/* Nodes remembered between two moves for the node-scoped requeue (hook_released); past that
 * many, every unschedulable pod moves. */
#define LOOP_RELEASED_MAX 64
/* Nodes usable again remembered between two moves: with kwok nodes flapping at 5,000 nodes,
 * dozens come back per batch; past this many every pod moves (the hint's cost is the waiting
 * preemptors times these nodes). */
#define LOOP_USABLE_MAX 512
/* view_fn runs at most once per this many ms: under churn every loop turn changes the view,
 * and each run evaluates up to SCHED_EXTENDER_RETRY_BATCH refused pods under the cache lock.
 * A change within the gap is not lost: view_changed stays set and the wait ends with the gap. */
#define LOOP_VIEW_GAP_MS 50

/* An unchanged FailedScheduling is reported again after this long (events expire after an
 * hour; the condition stays). */
#define REPORT_REPEAT_MS (5 * 60 * 1000)
/* Gang and reservation APIs not served are looked for again this often: a CRD may be installed
 * after the scheduler started (the planner's chart, an operator). TAREMA_API_RECHECK_MS
 * overrides it (the e2e test). */
#define API_RECHECK_MS 30000

struct sched_loop {
    const sched_config *cfg;
    tm_kube *k;
    sched_cache *cache;
    sched_queue *queue;
    /* extender mode with backfill: kube-scheduler's pending pods of this scheduler name in queue
     * order, never popped (kube-scheduler places them): what the backfill planner plans, so that
     * the extender's Filter keeps its pods off the shadows of the head (backfill_live.h) */
    sched_queue *watchq;
    sched_framework *fw;
    /* kube-scheduler's framework timings (fw_metrics.h): shared with the extender; rec is the
     * scheduling thread's recorder, flushed after each batch */
    sched_fw_metrics *fwm;
    sched_fw_recorder *rec;
    sched_binder *binder;
    tm_informer *nodes, *pods, *tasks, *claims, *volumes; /* the last two: scheduler mode */
    tm_informer *classes, *csinodes;    /* StorageClasses, CSINodes: scheduler mode */
    sched_volume_binder *vols;          /* VolumeBinding's PreBind (volume_binder.h) */
    tm_informer *podgroups, *workloads; /* gangs (gang_live.h); NULL when the API is absent */
    tm_informer *native_pgs; /* scheduling.k8s.io PodGroups (1.36+), at the version discovered */
    tm_informer *pdbs;       /* PodDisruptionBudgets (preemption), scheduler mode */
    /* Services, ReplicationControllers, ReplicaSets, StatefulSets (PodTopologySpread's default
     * constraints), scheduler mode; NULL while the API is not readable (forbidden, absent) */
    tm_informer *owners[SCHED_OWNER_KINDS];
    struct owner_ud {
        sched_loop *l;
        sched_owner_kind k;
    } owner_ud[SCHED_OWNER_KINDS];
    atomic_int owners_synced;   /* bit k: kind k listed, or not watched */
    sched_preemptor *preemptor; /* scheduler mode (preemptor.h) */
    sched_gang_live *gangs;     /* scheduler mode */
    sched_backfill_live *bf;    /* scheduler mode with backfill.reserveDepth != 0, else NULL */
    int64_t last_gang_sync_ms;
    tm_leader *leader;
    atomic_bool leading, synced;
    bool tasks_changed;          /* a TaskProfile event since the queue was last re-sorted */
    atomic_int sync_state;       /* bit 0 nodes, bit 1 pods, bit 2 tasks, 3 claims, 4 volumes,
                                  * 5 classes, 6 CSINodes, 7 PDBs, 8 Services and controllers */
    int64_t listed_ms;           /* when nodes and pods were first synced, 0 before */
    bool changed;                /* cluster changed since the last move of unschedulable pods */
    bool defaults_honour_taints; /* a hard default spread constraint honours taints */
    /* bound pods released capacity on these nodes (the highest priority among them per node)
     * since the last move, and nothing else changed: hook_released, schedule_batch */
    sched_release released[LOOP_RELEASED_MAX];
    size_t n_released;
    /* nodes usable again (Ready, uncordoned, a taint gone) since the last move, and nothing
     * else changed: hook_node_usable, schedule_batch */
    char *usable[LOOP_USABLE_MAX];
    size_t n_usable;
    bool view_changed; /* the cluster or the backfill plan changed, since the last view_fn */
    void (*view_fn)(void *ud);
    void *view_ud;
    int64_t last_view_ms; /* mono, when view_fn last ran */
    int64_t last_flush_ms;
    sched_loop_stats stats;
    /* with several profiles, kube-scheduler's names by profile (else aliases of tarema's) */
    tm_metric *m_kube_attempts, *m_kube_attempt_s;
    tm_metric *m_attempts, *m_attempt_s, *m_e2e_s, *m_pending, *m_binds_inflight, *m_binds,
        *m_binds_unknown, *m_leader, *m_nodes, *m_pods, *m_api;
    resv_controller *resv; /* reservations (read-only in extender mode), resv_controller.h */
    int64_t last_resv_tick_ms;
    int64_t api_recheck_ms, last_api_check_ms; /* APIs not served: looked for again */
};

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- cache hooks (loop thread, cache lock held) -------------------------------------------- */

static void hook_pending(void *ud, sched_pod *pod) {
    sched_loop *l = ud;
    /* An assumed pod the queue no longer holds was bound (its bind answered 2xx) and waits for
     * the watch to show it so: a pending copy of it now is older than that bind (a re-list
     * from a snapshot taken before it, as after an API server restart). Queued again, it was
     * scheduled a second time; that bind failed with 409 and undoing its reservation took the
     * pod off the node it really is on (seen: a node over its allocatable). kube-scheduler
     * skips such updates of assumed pods too (skipPodUpdate). */
    if (l->queue && sched_cache_is_assumed(l->cache, pod->uid) &&
        !sched_queue_get(l->queue, pod->uid)) {
        tm_debug("pending copy of a bound pod skipped pod=%s/%s", pod->ns, pod->name);
        sched_pod_free(pod);
        return;
    }
    if (l->queue && sched_queue_add(l->queue, pod, mono_ms()))
        tm_error("queue: out of memory adding a pod");
    else if (!l->queue)
        sched_pod_free(pod);
}

static void hook_gone(void *ud, const char *uid, const char *node) {
    (void)node;
    sched_loop *l = ud;
    if (l->queue)
        sched_queue_remove(l->queue, uid);
}

static void hook_changed(void *ud) {
    sched_loop *l = ud;
    l->changed = true;
    l->view_changed = true;
    sched_backfill_live_touch(l->bf);
}

/* A node got worse for every pod (cache.h): no pod's filters pass more than before. But while
 * the backfill plan holds shadows, a shadow that moves off that node can free other nodes for
 * the pods the Backfill filter refused there: those are retried as on any change. */
static void hook_node_worsened(void *ud) {
    sched_loop *l = ud;
    if (sched_backfill_live_holding(l->bf)) {
        hook_changed(ud);
        return;
    }
    sched_backfill_live_touch(l->bf);
}

static bool honours_taints(void *ud, const sched_pod *p) {
    return sched_pod_spread_honours_taints(p, ((const sched_loop *)ud)->defaults_honour_taints);
}

/* A node gained a taint (cache.h): as a worsened node, except for the pods whose spread
 * constraints honour taints (the node's domain may no longer count): those are retried. */
static void hook_node_taints_gained(void *ud) {
    sched_loop *l = ud;
    hook_node_worsened(ud);
    if (l->changed || !l->queue || !sched_queue_count(l->queue, SCHED_Q_UNSCHEDULABLE))
        return;
    size_t moved = sched_queue_move_matching(l->queue, mono_ms(), honours_taints, l);
    if (moved)
        tm_debug("node taints changed: unschedulable pods whose spread honours taints retried "
                 "count=%zu",
                 moved);
}

static void forget_released(sched_loop *l) {
    for (size_t i = 0; i < l->n_released; i++)
        free(l->released[i].node);
    l->n_released = 0;
    for (size_t i = 0; i < l->n_usable; i++)
        free(l->usable[i]);
    l->n_usable = 0;
}

/* A node became usable again (cache.h) and nothing else changed: remembered for the next move
 * (schedule_batch), which spares only the preemptors waiting for their victims elsewhere that
 * do not fit there outright (usable_hint.h). */
static void hook_node_usable(void *ud, const char *node) {
    sched_loop *l = ud;
    /* (with shadows held, a shadow that moves onto the node can free another node for a pod
     * the Backfill filter refused there, as in hook_node_worsened) */
    if (!l->queue || l->changed || sched_backfill_live_holding(l->bf)) {
        hook_changed(ud);
        return;
    }
    l->view_changed = true;
    sched_backfill_live_touch(l->bf);
    for (size_t i = 0; i < l->n_usable; i++)
        if (strcmp(l->usable[i], node) == 0)
            return;
    char *dup = l->n_usable < LOOP_USABLE_MAX ? strdup(node) : NULL;
    if (!dup) { /* too many nodes to ask about, or no memory: every pod moves */
        hook_changed(ud);
        return;
    }
    l->usable[l->n_usable++] = dup;
}

/* A bound pod of priority prio released capacity on node and nothing else changed: remembered
 * for the next move (schedule_batch), which asks only the pods waiting for capacity alone
 * whether that node can help them (release_hint.h). */
static void hook_released(void *ud, const char *node, int32_t prio) {
    sched_loop *l = ud;
    l->view_changed = true;
    sched_backfill_live_touch(l->bf);
    if (!l->queue || l->changed) {
        hook_changed(ud);
        return;
    }
    for (size_t i = 0; i < l->n_released; i++)
        if (strcmp(l->released[i].node, node) == 0) {
            if (prio > l->released[i].prio)
                l->released[i].prio = prio;
            return;
        }
    char *dup = l->n_released < LOOP_RELEASED_MAX ? strdup(node) : NULL;
    if (!dup) { /* too many nodes to ask about, or no memory: every pod moves */
        hook_changed(ud);
        return;
    }
    l->released[l->n_released++] = (sched_release){dup, prio};
}

/* A nomination ended or moved: its node's room is free again for the pods it kept out, as if
 * a pod had left, unless the nominee took it itself (bound or assumed there: nothing freed). */
static void nomination_ended(void *ud, const char *uid, const char *node, int32_t prio) {
    sched_loop *l = ud;
    const char *at = sched_snapshot_pod_node(sched_cache_snapshot(l->cache), uid);
    if (!at || strcmp(at, node) != 0)
        hook_released(ud, node, prio);
}

static bool release_helps(void *ud, const sched_pod *pod) {
    return sched_release_hint_helps(ud, pod);
}

static bool usable_helps(void *ud, const sched_pod *pod) {
    return sched_usable_hint_helps(ud, pod);
}

/* The same hooks in extender mode with backfill: the pods only join and leave watchq. */
static void watch_pending(void *ud, sched_pod *pod) {
    sched_loop *l = ud;
    if (sched_queue_add(l->watchq, pod, mono_ms()))
        tm_error("queue: out of memory adding a pod");
    sched_backfill_live_touch(l->bf);
}

static void watch_gone(void *ud, const char *uid, const char *node) {
    (void)node;
    sched_loop *l = ud;
    sched_queue_remove(l->watchq, uid);
    sched_backfill_live_touch(l->bf);
}

static bool helped(void *m, const sched_pod *p) {
    return sched_pod_helped_by(p, m);
}

/* A pod was bound (anyone's): the unschedulable pods waiting for a pod like it (affinity,
 * spread) are retried now, not at the next periodic flush. */
static void hook_bound(void *ud, const sched_pod_meta *m) {
    sched_loop *l = ud;
    if (!m || !sched_queue_count(l->queue, SCHED_Q_UNSCHEDULABLE))
        return;
    size_t moved = sched_queue_move_matching(l->queue, mono_ms(), helped, (void *)m);
    if (moved)
        tm_debug("pod bound: unschedulable pods it may help retried count=%zu", moved);
}

/* The queue's gate hook: the SchedulingGates plugin's check when a pod is added or updated, so
 * that a gated pod is never tried (kube-scheduler runs PreEnqueue at add time too). */
static bool queue_gate(void *ud, const sched_pod *pod) {
    (void)ud;
    return sched_scheduling_gated(pod, NULL, 0);
}

/* The queue's held hook: a pod gated by the planner's order gate alone has joined the queue
 * (its age counts) though it is not tried yet (scheduling_gates.h). */
static bool queue_held(void *ud, const sched_pod *pod) {
    (void)ud;
    return sched_scheduling_held(pod);
}

/* The queues' sort: the framework's QueueSort; pods it does not tell apart (one priority and
 * order, created in the same second) keep the order they joined the queue, the order the API
 * server created them in (its watch sends them so; after a list, the list's name order). Ordered by
 * name instead, a pod created a moment after the head of the queue went ahead of it when its name
 * sorted first, and the backfill plan gave it the head's shadow (scheduler_extender_backfill_test,
 * 1 run in 6). */
static int queue_cmp(void *ud, const sched_pod *a, const sched_pod *b) {
    sched_loop *l = ud;
    return sched_framework_queue_order(l->fw, sched_cache_snapshot(l->cache), a, b);
}

/* ---- binds --------------------------------------------------------------------------------- */

static void on_bind(void *ud, const char *ns, const char *name, const char *uid, const char *node,
                    int status, const tm_err *err) {
    sched_loop *l = ud;
    sched_cache_lock(l->cache);
    if (l->gangs)
        sched_gang_live_bind_result(l->gangs, uid, err == NULL, status, mono_ms());
    if (!err) {
        l->stats.bound++;
        tm_metrics_inc(l->m_binds, TM_LABELS("ok"));
        sched_queue_done(l->queue, uid);
        tm_debug("bound pod=%s/%s node=%s", ns, name, node);
    } else {
        l->stats.bind_failures++;
        bool conflict = status == 409;
        if (conflict)
            l->stats.conflicts++;
        tm_metrics_inc(l->m_binds, TM_LABELS(conflict ? "conflict" : "error"));
        if (sched_cache_forget(l->cache, uid))
            l->changed = true; /* the reservation is free again */
        if (status == 404) {
            sched_queue_remove(l->queue, uid);
        } else {
            /* 409: bound elsewhere or changed; the pod watch brings the truth, and the retry
             * after backoff only happens if it is still pending then. */
            sched_queue_backoff(l->queue, uid, mono_ms());
        }
        tm_warn("bind failed pod=%s/%s node=%s status=%d err=\"%s\"", ns, name, node, status,
                err->msg);
    }
    sched_cache_unlock(l->cache);
}

/* ---- informer callbacks (loop thread) ------------------------------------------------------ */

/* One line per resource name past the snapshot's fixed slots (snapshot.h), not one per event:
 * such a name is kept sparsely, checked as every other, but outside the column scan and the
 * capacity plans of backfill and reservations (docs/operations.md, "Resources"). */
static void note_sparse(sched_loop *l) {
    sched_snapshot *s = sched_cache_snapshot(l->cache);
    for (const char *name; (name = sched_snapshot_xres_next(s));)
        tm_info("resource kept sparsely name=\"%s\" fixed_slots=%d: more distinct extended "
                "resources than fixed slots; NodeResourcesFit checks it, backfill and "
                "reservations do not plan it",
                name, SCHED_RES_MAX - SCHED_RES_FIRST_EXT);
}

static void on_node(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    sched_loop *l = ud;
    tm_err err = {0};
    sched_cache_lock(l->cache);
    if (sched_cache_node_event(l->cache, t, obj, old, &err))
        tm_warn("node skipped err=\"%s\"", err.msg);
    note_sparse(l);
    sched_backfill_live_touch(l->bf);
    sched_cache_unlock(l->cache);
}

static void on_pod(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    sched_loop *l = ud;
    tm_err err = {0};
    sched_cache_lock(l->cache);
    /* membership first: the cache queues the pod, and the cycle must know it is a member */
    if (l->gangs)
        sched_gang_live_pod_event(l->gangs, t, obj, mono_ms());
    if (sched_cache_pod_event(l->cache, t, obj, old, &err))
        tm_warn("pod skipped err=\"%s\"", err.msg);
    note_sparse(l);
    resv_controller_pod_event(l->resv, t, obj);           /* owners' pods, expected ends */
    sched_preemptor_pod_event(l->preemptor, t, obj, old); /* status.nominatedNodeName */
    sched_backfill_live_pod_event(l->bf, t, obj);         /* expected runtimes, expected-start */
    sched_cache_unlock(l->cache);
}

static void on_claim(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    sched_loop *l = ud;
    tm_err err = {0};
    sched_cache_lock(l->cache);
    if (sched_cache_claim_event(l->cache, t, obj, old, &err))
        tm_warn("PersistentVolumeClaim skipped err=\"%s\"", err.msg);
    sched_cache_unlock(l->cache);
}

static void on_volume(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    sched_loop *l = ud;
    tm_err err = {0};
    sched_cache_lock(l->cache);
    if (sched_cache_volume_event(l->cache, t, obj, old, &err))
        tm_warn("PersistentVolume skipped err=\"%s\"", err.msg);
    sched_cache_unlock(l->cache);
}

static void on_class(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    sched_loop *l = ud;
    tm_err err = {0};
    sched_cache_lock(l->cache);
    if (sched_cache_class_event(l->cache, t, obj, &err))
        tm_warn("StorageClass skipped err=\"%s\"", err.msg);
    sched_cache_unlock(l->cache);
}

static void on_csinode(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    sched_loop *l = ud;
    tm_err err = {0};
    sched_cache_lock(l->cache);
    if (sched_cache_csinode_event(l->cache, t, obj, &err))
        tm_warn("CSINode skipped err=\"%s\"", err.msg);
    sched_cache_unlock(l->cache);
}

/* PreBind of a pod's volumes failed (volume_binder.h): as a failed bind, plus the
 * FailedScheduling event kube-scheduler reports for a PreBind error. Cache lock held. */
static void on_volume_failed(void *ud, const char *ns, const char *name, const char *uid,
                             const char *msg) {
    sched_loop *l = ud;
    l->stats.bind_failures++;
    tm_metrics_inc(l->m_binds, TM_LABELS("error"));
    if (sched_cache_forget(l->cache, uid))
        l->changed = true;
    sched_pod p = {0};
    p.ns = (char *)ns;
    p.name = (char *)name;
    p.uid = (char *)uid;
    tm_err err = {0};
    if (sched_binder_unschedulable(l->binder, &p, msg, &err))
        tm_warn("%s", err.msg);
    sched_queue_backoff(l->queue, uid, mono_ms());
}

static void on_pdb(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    (void)old;
    sched_loop *l = ud;
    sched_cache_lock(l->cache);
    sched_preemptor_pdb_event(l->preemptor, t, obj);
    sched_cache_unlock(l->cache);
}

static void on_owner(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    (void)old;
    const struct owner_ud *o = ud;
    tm_err err = {0};
    sched_cache_lock(o->l->cache);
    if (sched_cache_owner_event(o->l->cache, o->k, t, obj, &err))
        tm_warn("%s: %s", sched_owner_kind_name(o->k), err.msg);
    sched_cache_unlock(o->l->cache);
}

static void owner_synced(sched_loop *l, sched_owner_kind k) {
    int all = (1 << SCHED_OWNER_KINDS) - 1;
    if ((atomic_fetch_or(&l->owners_synced, 1 << k) | (1 << k)) == all)
        atomic_fetch_or(&l->sync_state, 256);
}

static void synced_owner(void *ud) {
    const struct owner_ud *o = ud;
    owner_synced(o->l, o->k);
}

/* As an extender, a gang's object changed (declared, resized, invalid, gone): backfill plans
 * again, since which waiting pods form one job (and whether it can start) follows it, and the
 * pods /filter refused are evaluated again. (The scheduler's own loop retries on l->changed and
 * plans as its cycles need.) Cache lock held. */
static void gang_declaration_changed(sched_loop *l) {
    if (l->queue)
        return;
    sched_backfill_live_touch(l->bf);
    l->view_changed = true;
}

static void on_podgroup(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    (void)old;
    sched_loop *l = ud;
    sched_cache_lock(l->cache);
    if (sched_gang_live_podgroup_event(l->gangs, t, obj, mono_ms()))
        l->changed = true; /* its waiting members may be schedulable now */
    gang_declaration_changed(l);
    sched_cache_unlock(l->cache);
}

static void on_native_podgroup(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    (void)old;
    sched_loop *l = ud;
    sched_cache_lock(l->cache);
    if (sched_gang_live_native_podgroup_event(l->gangs, t, obj, mono_ms()))
        l->changed = true;
    gang_declaration_changed(l);
    sched_cache_unlock(l->cache);
}

static void on_workload(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    (void)old;
    sched_loop *l = ud;
    sched_cache_lock(l->cache);
    if (sched_gang_live_workload_event(l->gangs, t, obj))
        l->changed = true;
    gang_declaration_changed(l);
    sched_cache_unlock(l->cache);
}

static void on_task(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    (void)old;
    sched_loop *l = ud;
    tm_err err = {0};
    sched_cache_lock(l->cache);
    if (sched_cache_task_event(l->cache, t, obj, &err))
        tm_warn("TaskProfile skipped err=\"%s\"", err.msg);
    sched_cache_unlock(l->cache);
    l->tasks_changed = true; /* the queue order may read it (adaptive: runtime + tail) */
}

static void synced_nodes(void *ud) {
    atomic_fetch_or(&((sched_loop *)ud)->sync_state, 1);
}
static void synced_pods(void *ud) {
    atomic_fetch_or(&((sched_loop *)ud)->sync_state, 2);
}
static void synced_tasks(void *ud) {
    atomic_fetch_or(&((sched_loop *)ud)->sync_state, 4);
}
static void synced_claims(void *ud) {
    atomic_fetch_or(&((sched_loop *)ud)->sync_state, 8);
}
static void synced_volumes(void *ud) {
    atomic_fetch_or(&((sched_loop *)ud)->sync_state, 16);
}
static void synced_classes(void *ud) {
    atomic_fetch_or(&((sched_loop *)ud)->sync_state, 32);
}
static void synced_csinodes(void *ud) {
    atomic_fetch_or(&((sched_loop *)ud)->sync_state, 64);
}
static void synced_pdbs(void *ud) {
    atomic_fetch_or(&((sched_loop *)ud)->sync_state, 128);
}

/* ---- leader election ----------------------------------------------------------------------- */

static void started_leading(void *ud) {
    sched_loop *l = ud;
    atomic_store(&l->leading, true);
    tm_metrics_set(l->m_leader, NULL, 1);
    /* an extender's new holder writes at its next plan, not at the next idle replan */
    sched_backfill_live_quiet(l->bf, false);
    sched_backfill_live_touch(l->bf);
    tm_info("leading: %s identity=%s",
            l->queue ? "scheduling starts" : "writing expected starts (extender)",
            l->cfg->identity);
}

static void stopped_leading(void *ud) {
    sched_loop *l = ud;
    atomic_store(&l->leading, false);
    sched_backfill_live_quiet(l->bf, true);
    tm_metrics_set(l->m_leader, NULL, 0);
    tm_warn("lost the lease: %s identity=%s",
            l->queue ? "binding stops" : "expected starts no longer written (extender)",
            l->cfg->identity);
}

static void new_leader(void *ud, const char *identity) {
    (void)ud;
    tm_info("leader is now identity=%s", identity ? identity : "");
}

/* ---- life cycle ---------------------------------------------------------------------------- */

/* kube-scheduler's names for the same series (aliases: counted once, shown twice), so that
 * dashboards and alerts written for kube-scheduler work unchanged. profile is kube-scheduler's
 * label for the scheduler name. Only the durations of scheduled attempts are observed, hence
 * the constant result label; the SLI histogram has no attempts label (docs/operations.md). */
static int register_kube_names(sched_loop *l, tm_metrics *reg, tm_err *err) {
    const char *profile = l->cfg->scheduler_name;
    if (l->cfg->n_profiles) { /* each profile its own series, as kube-scheduler's */
        double lat[16];
        tm_metrics_exp_buckets(0.00001, 2, 16, lat);
        l->m_kube_attempts = tm_metrics_counter(
            reg, "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the profile and the result (kube-scheduler's "
            "name; tarema_schedule_attempts_total counts all profiles).",
            TM_LABELS("profile", "result"), err);
        l->m_kube_attempt_s =
            l->m_kube_attempts
                ? tm_metrics_histogram(reg, "scheduler_scheduling_attempt_duration_seconds",
                                       "Scheduling attempt latency in seconds, by the profile "
                                       "(kube-scheduler's name).",
                                       TM_LABELS("profile", "result"), lat, 16, err)
                : NULL;
        if (!l->m_kube_attempt_s)
            return -1;
    }
    return (l->m_kube_attempts ||
            tm_metrics_alias(reg, l->m_attempts, "scheduler_schedule_attempts_total",
                             "Number of attempts to schedule pods, by the result (kube-scheduler's "
                             "name for tarema_schedule_attempts_total).",
                             TM_LABELS("profile", profile), err)) &&
                   (l->m_kube_attempt_s ||
                    tm_metrics_alias(reg, l->m_attempt_s,
                                     "scheduler_scheduling_attempt_duration_seconds",
                                     "Scheduling attempt latency in seconds (kube-scheduler's name "
                                     "for tarema_scheduling_attempt_duration_seconds).",
                                     TM_LABELS("profile", profile, "result", "scheduled"), err)) &&
                   tm_metrics_alias(reg, l->m_e2e_s,
                                    "scheduler_pod_scheduling_sli_duration_seconds",
                                    "Latency of a pod being scheduled, from its creation, over "
                                    "every attempt (kube-scheduler's name for "
                                    "tarema_pod_scheduling_duration_seconds).",
                                    NULL, err) &&
                   tm_metrics_alias(reg, l->m_pending, "scheduler_pending_pods",
                                    "Number of pending pods, by the queue type (kube-scheduler's "
                                    "name for tarema_pending_pods).",
                                    NULL, err)
               ? 0
               : -1;
}

/* The spec.schedulerName of pod's profile. */
static const char *profile_name(const sched_loop *l, const sched_pod *pod) {
    const char *name = sched_profile_name(sched_cache_keys(l->cache)->profiles, pod->profile);
    return name ? name : l->cfg->scheduler_name;
}

static void count_attempt(sched_loop *l, const sched_pod *pod, const char *result) {
    tm_metrics_inc(l->m_attempts, TM_LABELS(result));
    if (l->m_kube_attempts)
        tm_metrics_inc(l->m_kube_attempts, TM_LABELS(profile_name(l, pod), result));
}

static int register_metrics(sched_loop *l, tm_metrics *reg, tm_err *err) {
    double lat[16], e2e[20];
    tm_metrics_exp_buckets(0.00001, 2, 16, lat); /* 10 us .. 0.33 s */
    tm_metrics_exp_buckets(0.001, 2, 20, e2e);   /* 1 ms .. 524 s */
    l->m_attempts = tm_metrics_counter(reg, "tarema_schedule_attempts_total",
                                       "Scheduling attempts by result (scheduled, "
                                       "unschedulable, error).",
                                       TM_LABELS("result"), err);
    if (!l->m_attempts)
        return -1;
    l->m_attempt_s = tm_metrics_histogram(reg, "tarema_scheduling_attempt_duration_seconds",
                                          "Time of one scheduling cycle (filter, score, "
                                          "reserve), network excluded.",
                                          NULL, lat, 16, err);
    if (!l->m_attempt_s)
        return -1;
    l->m_e2e_s = tm_metrics_histogram(reg, "tarema_pod_scheduling_duration_seconds",
                                      "Time from pod creation to the scheduling decision "
                                      "(the bind is started then).",
                                      NULL, e2e, 20, err);
    if (!l->m_e2e_s)
        return -1;
    l->m_pending = tm_metrics_gauge(reg, "tarema_pending_pods",
                                    "Pods in the scheduling queue by state (active, backoff, "
                                    "unschedulable, inflight, gated).",
                                    TM_LABELS("queue"), err);
    if (!l->m_pending)
        return -1;
    l->m_binds_inflight = tm_metrics_gauge(reg, "tarema_binds_in_flight",
                                           "Binds sent and not answered yet.", NULL, err);
    if (!l->m_binds_inflight)
        return -1;
    l->m_binds = tm_metrics_counter(
        reg, "tarema_binds_total", "Bind results (ok, conflict, error).", TM_LABELS("result"), err);
    if (!l->m_binds)
        return -1;
    l->m_binds_unknown = tm_metrics_gauge(reg, "tarema_binds_outcome_unknown",
                                          "Binds whose answer was lost (no HTTP status, or 5xx), "
                                          "their node capacity held until the pod is read back.",
                                          NULL, err);
    if (!l->m_binds_unknown)
        return -1;
    l->m_leader =
        tm_metrics_gauge(reg, "tarema_leader", "1 while this replica is active.", NULL, err);
    if (!l->m_leader)
        return -1;
    l->m_nodes = tm_metrics_gauge(reg, "tarema_cache_nodes", "Nodes in the cache.", NULL, err);
    if (!l->m_nodes)
        return -1;
    l->m_api = tm_metrics_gauge(reg, "tarema_api_requests",
                                "API requests of this process not answered yet, by state (wire: "
                                "sent; queued: held by the client's qps limit or its cap on "
                                "requests at the wire).",
                                TM_LABELS("state"), err);
    if (!l->m_api)
        return -1;
    l->m_pods =
        tm_metrics_gauge(reg, "tarema_cache_pods",
                         "Pods counted on nodes in the cache (bound and assumed).", NULL, err);
    if (!l->m_pods)
        return -1;
    return register_kube_names(l, reg, err);
}

sched_loop *sched_loop_new(const sched_config *cfg, tm_kube *k, tm_metrics *reg, tm_err *err) {
    sched_loop *l = calloc(1, sizeof *l);
    if (!l) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    l->cfg = cfg;
    l->k = k;
    sched_keys keys = sched_config_keys(cfg);
    sched_cache_hooks hooks = {.pod_pending = hook_pending,
                               .pod_gone = hook_gone,
                               .cluster_changed = hook_changed,
                               .pod_bound = hook_bound,
                               .pod_released = hook_released,
                               .node_worsened = hook_node_worsened,
                               .node_taints_gained = hook_node_taints_gained,
                               .node_usable = hook_node_usable,
                               .ud = l};
    bool sched = cfg->mode == SCHED_MODE_SCHEDULER;
    /* an extender plans kube-scheduler's pods of this name for backfill (watchq) */
    bool watch = !sched && cfg->backfill.reserve_depth != 0;
    sched_cache_hooks watch_hooks = {.pod_pending = watch_pending,
                                     .pod_gone = watch_gone,
                                     .cluster_changed = hook_changed,
                                     .node_worsened = hook_node_worsened,
                                     .ud = l};
    /* an extender without backfill: only that the view changed (the extender's retries) */
    sched_cache_hooks view_hooks = {
        .cluster_changed = hook_changed, .node_worsened = hook_node_worsened, .ud = l};
    l->cache = sched_cache_new(cfg->scheduler_name, (const char *const *)cfg->namespaces, &keys,
                               sched   ? &hooks
                               : watch ? &watch_hooks
                                       : &view_hooks,
                               err);
    if (!l->cache)
        goto fail;
    l->fw = sched_policy_new(cfg->policy, err);
    if (!l->fw || sched_framework_apply_weights(l->fw, &cfg->score_weights, err) != 0 ||
        sched_config_add_profiles(cfg, l->fw, err) != 0 ||
        sched_config_apply_spread(cfg, l->fw, err) != 0)
        goto fail;
    const sched_spread_state *spread = sched_framework_plugin_state(l->fw, "PodTopologySpread");
    l->defaults_honour_taints =
        spread && sched_spread_defaults_honour_taints(sched_spread_get_defaults(spread));
    /* reservations: its Filter plugin joins the framework */
    if (sched && !(l->resv = resv_controller_new(cfg, k, l->cache, l->fw, err)))
        goto fail;
    /* extender: the same table, read-only; the extender adds the plugin per request */
    if (!sched && !(l->resv = resv_controller_new_readonly(cfg, k, l->cache, err)))
        goto fail;
    if (sched) {
        l->queue =
            sched_queue_new(queue_cmp, l, cfg->pod_initial_backoff_ms, cfg->pod_max_backoff_ms);
        l->binder = sched_binder_new(k, cfg->scheduler_name, cfg->identity, on_bind, l);
        if (l->binder)
            sched_binder_set_profiles(l->binder, sched_cache_keys(l->cache)->profiles);
        l->vols = l->binder ? sched_volume_binder_new(k, l->cache, l->binder,
                                                      (int64_t)cfg->volume_bind_timeout_s * 1000,
                                                      on_volume_failed, l)
                            : NULL;
        if (!l->queue || !l->binder || !l->vols) {
            tm_err_set(err, "out of memory");
            goto fail;
        }
        sched_queue_set_gate(l->queue, queue_gate, l);
        sched_queue_set_held(l->queue, queue_held, l);
        sched_queue_set_wall_offset(l->queue, tm_wall_ms() - mono_ms()); /* it gets mono_ms */
    }
    if (watch) {
        l->watchq =
            sched_queue_new(queue_cmp, l, cfg->pod_initial_backoff_ms, cfg->pod_max_backoff_ms);
        if (!l->watchq) {
            tm_err_set(err, "out of memory");
            goto fail;
        }
        /* gated pods are not kube-scheduler's to place yet; held ones (a not-before) are planned */
        sched_queue_set_gate(l->watchq, queue_gate, l);
        sched_queue_set_held(l->watchq, queue_held, l);
        sched_queue_set_wall_offset(l->watchq, tm_wall_ms() - mono_ms());
    }
    if (register_metrics(l, reg, err))
        goto fail;
    if (!(l->fwm = sched_fw_metrics_new(reg, cfg->scheduler_name,
                                        cfg->plugin_metrics_sample_percent, err)))
        goto fail;
    if (sched && !(l->rec = sched_fw_recorder_new(l->fwm))) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    if (sched) /* every cycle of this framework (gangs' and preemption's too) is timed */
        sched_framework_set_observer(l->fw, sched_fw_recorder_observer(l->rec));
    if (sched && !(l->gangs = sched_gang_live_new(l->queue, l->cache, l->fw, l->binder, reg, err)))
        goto fail;
    /* the Gang plugin at PreEnqueue, QueueSort and Permit, over the live registry */
    if (sched && sched_gang_plugin_add(l->fw, sched_gang_live_registry(l->gangs), err) < 0)
        goto fail;
    /* DefaultPreemption at PostFilter, carried out against the API by the preemptor */
    if (sched && !sched_framework_plugin_state(l->fw, SCHED_PREEMPTION_PLUGIN) &&
        sched_preemption_plugin_add(l->fw, err) < 0)
        goto fail;
    if (sched && !(l->preemptor = sched_preemptor_new(k, l->cache, cfg->scheduler_name,
                                                      cfg->identity, reg, err)))
        goto fail;
    /* a nomination that ends frees its node for the pods it kept out, as a pod leaving does */
    if (sched)
        sched_nominated_on_end(sched_snapshot_nominated(sched_cache_snapshot(l->cache)),
                               nomination_ended, l);
    if (sched) /* a gang preempts as one unit, through the same preemptor */
        sched_gang_live_set_preemptor(l->gangs, l->preemptor);
    /* a single pod's preemption takes a running gang whole or not at all (issue 31) */
    if (sched && sched_gang_live_set_preemption_units(l->gangs, err) < 0)
        goto fail;
    if (sched) /* a window that opens evicts pods overrunning into it (resv_overrun.h) */
        resv_controller_set_preemptor(l->resv, l->preemptor);
    /* backfill (issue 32): its Filter plugin last; reserveDepth 0 adds nothing at all. As an
     * extender the plan is made here over watchq, and each request borrows it */
    if (sched && cfg->backfill.reserve_depth != 0 &&
        !(l->bf = sched_backfill_live_new(cfg, k, l->cache, l->queue, l->fw,
                                          sched_gang_live_registry(l->gangs), l->resv, reg, err)))
        goto fail;
    /* kube-scheduler's gangs, each one job of the plan: the registry alone (its informers start
     * with the loop), kube-scheduler places them */
    if (watch && !(l->gangs = sched_gang_live_observer_new(l->cache, l->fw, k, err)))
        goto fail;
    if (watch &&
        !(l->bf = sched_backfill_live_new(cfg, k, l->cache, l->watchq, l->fw,
                                          sched_gang_live_registry(l->gangs), l->resv, reg, err)))
        goto fail;
    if (watch)
        sched_backfill_live_observe(l->bf);
    atomic_init(&l->leading, !sched_config_elects(cfg));
    /* every extender replica plans (each answers kube-scheduler), the Lease holder alone writes
     * expected starts: quiet until it leads (started_leading, stopped_leading) */
    sched_backfill_live_quiet(l->bf, !atomic_load(&l->leading));
    atomic_init(&l->synced, false);
    atomic_init(&l->sync_state, 0);
    atomic_init(&l->owners_synced, 0);
    tm_metrics_set(l->m_leader, NULL, sched_config_elects(cfg) ? 0 : 1);
    return l;
fail:
    sched_loop_free(l);
    return NULL;
}

bool sched_api_served(tm_kube *k, const char *path, tm_err *err) {
    char p[256];
    snprintf(p, sizeof p, "%s?limit=1", path);
    json_t *r = tm_kube_get(k, p, err);
    json_decref(r);
    return r != NULL;
}

/* An optional API (gangs, TaskProfiles) is taken as served unless it is absent (404) or the
 * server did not answer: any other refusal (e.g. 403) is left to the informer to report. */
static bool gang_api_served(tm_kube *k, const char *path) {
    tm_err err = {0};
    return sched_api_served(k, path, &err) || (err.http_status != 404 && err.http_status != 0);
}

/* Gangs: PodGroups (scheduler-plugins' CRD) and Workloads (Kubernetes 1.35, alpha). Each stays
 * off while its API is not served (logged at start, and once when it appears): pods that name
 * one then wait. first: the start (later calls only look for the missing ones, quietly). */
static int start_gang_informers(sched_loop *l, bool first, tm_err *err) {
    static const char *const pg_path = "/apis/" SCHED_PODGROUP_API "/podgroups";
    static const char *const wl_path = "/apis/" SCHED_WORKLOAD_API "/workloads";
    if (!l->podgroups && gang_api_served(l->k, pg_path)) {
        tm_informer_opts o = {.path = pg_path, .on_event = on_podgroup, .ud = l};
        if (!(l->podgroups = tm_informer_start(l->k, &o, err)))
            return tm_err_wrap(err, "watching PodGroups");
        if (!first)
            tm_info("PodGroup API %s served now: PodGroup gangs on", SCHED_PODGROUP_API);
    } else if (first && !l->podgroups) {
        tm_warn("PodGroup API %s not served (CRD not installed?): PodGroup gangs off until it is",
                SCHED_PODGROUP_API);
    }
    if (!l->workloads && gang_api_served(l->k, wl_path)) {
        tm_informer_opts o = {.path = wl_path, .on_event = on_workload, .ud = l};
        if (!(l->workloads = tm_informer_start(l->k, &o, err)))
            return tm_err_wrap(err, "watching Workloads");
        if (!first)
            tm_info("Workload API %s served now: Workload gangs on", SCHED_WORKLOAD_API);
    } else if (first && !l->workloads) {
        tm_info("Workload API %s not served (feature gate GenericWorkload off?): Workload gangs "
                "off until it is",
                SCHED_WORKLOAD_API);
    }
    /* 1.36+: PodGroup objects at whichever version the API server serves (discovered). */
    sched_native_api napi;
    tm_err de = {0};
    if (!l->native_pgs && sched_gang_native_discover(l->k, &napi, &de) == 0 && napi.podgroups) {
        char path[96];
        snprintf(path, sizeof path, "/apis/%s/podgroups", napi.group_version);
        sched_gang_live_set_native_api(l->gangs, &napi);
        tm_informer_opts o = {.path = path, .on_event = on_native_podgroup, .ud = l};
        if (!(l->native_pgs = tm_informer_start(l->k, &o, err)))
            return tm_err_wrap(err, "watching %s PodGroups", napi.group_version);
        tm_info("PodGroup API %s served: native gangs on (condition %s)", napi.group_version,
                napi.condition ? napi.condition : "none");
    } else if (first && !l->native_pgs) {
        tm_info("no PodGroup API of %s served (Kubernetes 1.36+ with GenericWorkload): native "
                "PodGroup gangs off until it is%s%s",
                SCHED_NATIVE_GROUP, de.msg[0] ? ": " : "", de.msg);
    }
    return 0;
}

/* TaskProfiles (the labeler's CRD). While the API is not served (reported once at the start,
 * and once when it appears) tasks are unlabeled and the API is looked for again every
 * api_recheck_ms, quietly: an informer on an absent resource would re-list every few seconds
 * and warn each time. first: the start. */
static int start_task_informer(sched_loop *l, bool first, tm_err *err) {
    static const char *const path = "/apis/tarema.io/v1alpha1/taskprofiles";
    if (l->tasks)
        return 0;
    if (!gang_api_served(l->k, path)) {
        if (first) {
            tm_warn("TaskProfile API tarema.io/v1alpha1 not served (CRD not installed?): tasks "
                    "are unlabeled until it is");
            atomic_fetch_or(&l->sync_state, 4); /* nothing to wait for */
        }
        return 0;
    }
    tm_informer_opts o = {.path = path, .on_event = on_task, .on_synced = synced_tasks, .ud = l};
    if (!(l->tasks = tm_informer_start(l->k, &o, err)))
        return tm_err_wrap(err, "watching TaskProfiles");
    if (!first)
        tm_info("TaskProfile API tarema.io/v1alpha1 served now: task profiles on");
    return 0;
}

/* Watches the Services and controllers whose selectors make the default spread constraints.
 * One that cannot be read (RBAC without the right, an API server without the resource) is
 * reported once at the start and left out: the scheduler runs without it (its pods get no
 * default spreading from it), and looks for it again quietly every api_recheck_ms. */
static int start_owner_informers(sched_loop *l, bool first, tm_err *err) {
    for (int k = 0; k < SCHED_OWNER_KINDS; k++) {
        if (l->owners[k])
            continue;
        tm_err e = {0};
        if (!sched_api_served(l->k, sched_owner_kind_path((sched_owner_kind)k), &e)) {
            if (first) {
                tm_warn("%ss not readable (%s): PodTopologySpread's default constraints run "
                        "without them until they are",
                        sched_owner_kind_name((sched_owner_kind)k), e.msg);
                owner_synced(l, (sched_owner_kind)k); /* nothing to wait for */
            }
            continue;
        }
        l->owner_ud[k] = (struct owner_ud){l, (sched_owner_kind)k};
        tm_informer_opts o = {.path = sched_owner_kind_path((sched_owner_kind)k),
                              .on_event = on_owner,
                              .on_synced = synced_owner,
                              .ud = &l->owner_ud[k],
                              .transform = sched_cache_owner_transform,
                              .transform_ud = l->cache};
        if (!(l->owners[k] = tm_informer_start(l->k, &o, err)))
            return tm_err_wrap(err, "watching %ss", sched_owner_kind_name((sched_owner_kind)k));
        if (!first)
            tm_info("%ss readable now: default topology spreading uses them",
                    sched_owner_kind_name((sched_owner_kind)k));
    }
    return 0;
}

/* Looks again, every api_recheck_ms, for the APIs that were not served (no lock held: the
 * checks are blocking GETs; the reservation controller takes the cache lock to replay pods). */
static void recheck_apis(sched_loop *l, int64_t now) {
    if (now - l->last_api_check_ms < l->api_recheck_ms)
        return;
    l->last_api_check_ms = now;
    tm_err err = {0};
    if (!l->tasks && start_task_informer(l, false, &err))
        tm_warn("%s", err.msg);
    err = (tm_err){0};
    if (l->gangs && (!l->podgroups || !l->workloads || !l->native_pgs) &&
        start_gang_informers(l, false, &err))
        tm_warn("%s", err.msg);
    err = (tm_err){0};
    bool owners_missing = false;
    for (int k = 0; k < SCHED_OWNER_KINDS; k++)
        owners_missing |= l->cfg->mode == SCHED_MODE_SCHEDULER && !l->owners[k];
    if (owners_missing && start_owner_informers(l, false, &err))
        tm_warn("%s", err.msg);
    err = (tm_err){0};
    if (l->resv && resv_controller_recheck(l->resv, l->pods, &err))
        tm_warn("%s", err.msg);
}

int sched_loop_start(sched_loop *l, tm_err *err) {
    /* The transforms keep only what the cache reads of each object: without them the stores
     * (managedFields, images, full status and spec) are most of the scheduler's memory. */
    tm_informer_opts o = {.path = "/api/v1/nodes",
                          .on_event = on_node,
                          .on_synced = synced_nodes,
                          .ud = l,
                          .transform = sched_cache_node_transform,
                          .transform_ud = l->cache,
                          .compact_store = true}; /* read back only as `old` */
    if (!(l->nodes = tm_informer_start(l->k, &o, err)))
        return tm_err_wrap(err, "watching nodes");
    /* Finished pods hold no resources: leave them out, as kube-scheduler does. */
    o = (tm_informer_opts){.path = "/api/v1/pods",
                           .field_selector = "status.phase!=Succeeded,status.phase!=Failed",
                           .on_event = on_pod,
                           .on_synced = synced_pods,
                           .ud = l,
                           .transform = sched_cache_pod_transform,
                           .transform_ud = l->cache,
                           /* every bound pod of the cluster: kept as text (the cache holds
                            * what the plugins read of each, sched_pod_meta) */
                           .compact_store = true};
    if (!(l->pods = tm_informer_start(l->k, &o, err)))
        return tm_err_wrap(err, "watching pods");
    if (start_task_informer(l, true, err))
        return -1;
    if (l->resv && resv_controller_start(l->resv, err))
        return -1;
    /* VolumeBinding: only when we bind. As an extender, kube-scheduler checks volumes itself. */
    if (l->cfg->mode == SCHED_MODE_SCHEDULER) {
        sched_cache_lock(l->cache);
        int rc = sched_cache_track_volumes(l->cache, err);
        sched_cache_unlock(l->cache);
        if (rc)
            return -1;
        o = (tm_informer_opts){.path = "/api/v1/persistentvolumeclaims",
                               .on_event = on_claim,
                               .on_synced = synced_claims,
                               .ud = l};
        if (!(l->claims = tm_informer_start(l->k, &o, err)))
            return tm_err_wrap(err, "watching PersistentVolumeClaims");
        o = (tm_informer_opts){.path = "/api/v1/persistentvolumes",
                               .on_event = on_volume,
                               .on_synced = synced_volumes,
                               .ud = l};
        if (!(l->volumes = tm_informer_start(l->k, &o, err)))
            return tm_err_wrap(err, "watching PersistentVolumes");
        o = (tm_informer_opts){.path = "/apis/storage.k8s.io/v1/storageclasses",
                               .on_event = on_class,
                               .on_synced = synced_classes,
                               .ud = l};
        if (!(l->classes = tm_informer_start(l->k, &o, err)))
            return tm_err_wrap(err, "watching StorageClasses");
        o = (tm_informer_opts){.path = "/apis/storage.k8s.io/v1/csinodes",
                               .on_event = on_csinode,
                               .on_synced = synced_csinodes,
                               .ud = l};
        if (!(l->csinodes = tm_informer_start(l->k, &o, err)))
            return tm_err_wrap(err, "watching CSINodes");
        /* preemption respects them (best effort): known before the first cycle */
        o = (tm_informer_opts){.path = "/apis/policy/v1/poddisruptionbudgets",
                               .on_event = on_pdb,
                               .on_synced = synced_pdbs,
                               .ud = l};
        if (!(l->pdbs = tm_informer_start(l->k, &o, err)))
            return tm_err_wrap(err, "watching PodDisruptionBudgets");
        /* default topology spreading: the selectors known before the first cycle */
        sched_cache_lock(l->cache);
        rc = sched_cache_track_owner_selectors(l->cache, err);
        sched_cache_unlock(l->cache);
        if (rc || start_owner_informers(l, true, err))
            return -1;
    } else { /* as an extender, kube-scheduler spreads by default itself */
        atomic_fetch_or(&l->sync_state, 8 | 16 | 32 | 64 | 128 | 256);
    }
    if (l->gangs && start_gang_informers(l, true, err))
        return -1;
    const char *re = getenv("TAREMA_API_RECHECK_MS");
    l->api_recheck_ms = re && atoll(re) > 0 ? atoll(re) : API_RECHECK_MS;
    l->last_api_check_ms = mono_ms();
    if (sched_config_elects(l->cfg)) {
        tm_leader_opts lo = {.ns = l->cfg->lease_namespace,
                             .name = sched_config_lease_name(l->cfg),
                             .identity = l->cfg->identity,
                             .lease_ms = l->cfg->lease_ms,
                             .renew_deadline_ms = l->cfg->renew_deadline_ms,
                             .retry_ms = l->cfg->retry_ms,
                             .on_started_leading = started_leading,
                             .on_stopped_leading = stopped_leading,
                             .on_new_leader = new_leader,
                             .ud = l};
        if (!(l->leader = tm_leader_start(l->k, &lo, err)))
            return -1;
    }
    tm_info("scheduler started name=%s policy=%s mode=%s namespaces=%zu lease=%s",
            l->cfg->scheduler_name, l->cfg->policy,
            l->cfg->mode == SCHED_MODE_SCHEDULER ? "scheduler" : "extender", l->cfg->n_namespaces,
            sched_config_elects(l->cfg) ? sched_config_lease_name(l->cfg) : "false");
    return 0;
}

/* Synced once nodes, pods, claims and volumes are listed and TaskProfiles too (or their grace
 * time passed). */
static void check_synced(sched_loop *l, int64_t now) {
    if (atomic_load(&l->synced))
        return;
    int s = atomic_load(&l->sync_state);
    const int need = 1 | 2 | 8 | 16 | 32 | 64 | 128 | 256;
    if ((s & need) != need)
        return;
    if (!l->listed_ms)
        l->listed_ms = now;
    bool tasks_failing = !l->tasks || tm_informer_backoffs(l->tasks) > 0;
    if (!(s & 4) && now - l->listed_ms < (tasks_failing ? TASKS_GRACE_MS : TASKS_WAIT_MAX_MS))
        return;
    if (!resv_controller_synced(l->resv)) /* held capacity known before the first cycle */
        return;
    atomic_store(&l->synced, true);
    sched_cache_lock(l->cache);
    sched_snapshot *snap = sched_cache_snapshot(l->cache);
    const char *tasks = (s & 4)         ? "listed"
                        : tasks_failing ? "not listed, their list failed (the informer's warning "
                                          "says why): pods ranked without them until they are"
                                        : "not listed after 60 s: pods ranked without them until "
                                          "they are";
    tm_log((s & 4) ? TM_LOG_INFO : TM_LOG_WARN,
           "cache synced nodes=%zu pods=%zu pending=%zu task_profiles=%s",
           sched_snapshot_node_count(snap), sched_snapshot_pod_count(snap),
           l->queue ? sched_queue_count(l->queue, SCHED_Q_ACTIVE) : 0, tasks);
    sched_cache_unlock(l->cache);
}

/* Permit for a single pod reserved on node: true when allowed. Otherwise the reservation is
 * undone and the pod requeued: unschedulable with the reason (a reject), backoff (a wait, which
 * the live loop does not hold pods for, or a failing hook). */
static bool permit_one(sched_loop *l, sched_pod *pod, int node, int64_t now) {
    char msg[512];
    tm_err err = {0};
    sched_snapshot *snap = sched_cache_snapshot(l->cache);
    sched_status st =
        sched_framework_permit(l->fw, snap, pod, node, tm_wall_ms(), NULL, msg, sizeof msg, &err);
    if (st == SCHED_STATUS_OK)
        return true;
    if (st == SCHED_STATUS_WAIT)
        sched_framework_waiting_forget(l->fw, pod->uid);
    if (st != SCHED_STATUS_UNSCHEDULABLE) /* a reject was unreserved by the framework */
        sched_framework_unreserve(l->fw, snap, pod, node, tm_wall_ms());
    sched_cache_forget(l->cache, pod->uid);
    if (st == SCHED_STATUS_UNSCHEDULABLE) {
        l->stats.unschedulable++;
        count_attempt(l, pod, "unschedulable");
        if (sched_queue_should_report(l->queue, pod->uid, msg, now, REPORT_REPEAT_MS) &&
            sched_binder_unschedulable(l->binder, pod, msg, &err))
            tm_warn("%s", err.msg);
        sched_queue_unschedulable(l->queue, pod->uid, now);
    } else {
        l->stats.errors++;
        count_attempt(l, pod, "error");
        tm_warn("permit did not allow pod=%s/%s status=%d err=\"%s\"", pod->ns, pod->name, st,
                st == SCHED_STATUS_ERROR ? err.msg : "a plugin asked it to wait");
        sched_queue_backoff(l->queue, pod->uid, now);
    }
    return false;
}

static void schedule_one(sched_loop *l, sched_snapshot *snap, sched_pod *pod, int64_t now) {
    tm_err err = {0};
    sched_decision d;
    int64_t t0 = mono_ms();
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = sched_framework_schedule(l->fw, snap, pod, tm_wall_ms(), &d, &err);
    if (rc) {
        l->stats.errors++;
        count_attempt(l, pod, "error");
        tm_error("scheduling failed pod=%s/%s err=\"%s\"", pod->ns, pod->name, err.msg);
        sched_queue_backoff(l->queue, pod->uid, t0);
        return;
    }
    if (d.node < 0) {
        char msg[1024], pmsg[300];
        sched_framework_fit_message(l->fw, snap, msg, sizeof msg);
        bool capacity_only = sched_framework_capacity_only(l->fw); /* before PostFilter's runs */
        /* PostFilter: preemption. Made room: the pod waits for its victims to go (the
         * FailedScheduling still says why it did not fit, as kube-scheduler's does); else
         * the message says why preemption could not help. */
        if (sched_preemptor_run(l->preemptor, l->fw, pod, pmsg, sizeof pmsg)) {
            /* the gangs among the victims, evicted whole, say so on their PodGroups */
            const sched_preemption_result *pr = sched_preemption_last(l->fw);
            if (pr)
                sched_gang_live_victims_preempted(l->gangs, pod, pr->victims, pr->n_victims);
        } else if (pmsg[0]) {
            size_t len = strlen(msg);
            snprintf(msg + len, sizeof msg - len, " %s", pmsg);
        }
        l->stats.unschedulable++;
        count_attempt(l, pod, "unschedulable");
        if (sched_queue_should_report(l->queue, pod->uid, msg, now, REPORT_REPEAT_MS)) {
            tm_info("unschedulable pod=%s/%s msg=\"%s\"", pod->ns, pod->name, msg);
            if (sched_binder_unschedulable(l->binder, pod, msg, &err))
                tm_warn("%s", err.msg);
        } else {
            tm_debug("unschedulable (unchanged, not reported again) pod=%s/%s", pod->ns, pod->name);
        }
        sched_queue_unschedulable(l->queue, pod->uid, now);
        if (capacity_only) /* retried when capacity is released where it can help */
            sched_queue_set_capacity_only(l->queue, pod->uid);
        return;
    }
    char node[256];
    snprintf(node, sizeof node, "%s", d.node_name);
    int assumed = sched_framework_reserve(l->fw, sched_cache_snapshot(l->cache), pod, d.node, &err);
    if (assumed == 0 && sched_cache_assume_placed(l->cache, pod->uid, &err)) {
        sched_snapshot_remove_pod(sched_cache_snapshot(l->cache), pod->uid);
        assumed = -1;
    }
    if (assumed == 0)
        sched_preemptor_assumed(l->preemptor, pod->uid); /* placed: its nomination ends */
    if (assumed == 0 && !permit_one(l, pod, d.node, now))
        return;
    /* PreBind: a pod whose Reserve chose volumes is bound once they are (volume_binder.h) */
    sched_volume_plan *vp = sched_volume_binding_take(
        sched_framework_plugin_state(l->fw, SCHED_VOLUME_BINDING_NAME), pod->uid);
    if (vp && assumed) {
        sched_volumes_revert(sched_snapshot_volumes(snap), vp);
        sched_volume_plan_free(vp);
        vp = NULL;
    }
    if (assumed || (vp ? sched_volume_binder_start(l->vols, pod, vp, mono_ms(), &err)
                       : sched_binder_bind(l->binder, pod, node, &err))) {
        sched_cache_forget(l->cache, pod->uid);
        l->stats.errors++;
        count_attempt(l, pod, "error");
        tm_error("bind not started pod=%s/%s err=\"%s\"", pod->ns, pod->name, err.msg);
        sched_queue_backoff(l->queue, pod->uid, now);
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    l->stats.scheduled++;
    count_attempt(l, pod, "scheduled");
    double took = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    tm_metrics_observe(l->m_attempt_s, NULL, took);
    if (l->m_kube_attempt_s)
        tm_metrics_observe(l->m_kube_attempt_s, TM_LABELS(profile_name(l, pod), "scheduled"), took);
    if (pod->created_ms > 0)
        tm_metrics_observe(l->m_e2e_s, NULL, (double)(tm_wall_ms() - pod->created_ms) / 1000.0);
    tm_debug("assumed pod=%s/%s node=%s score=%lld feasible=%zu/%zu", pod->ns, pod->name, node,
             (long long)d.score, d.n_feasible, d.n_nodes);
}

/* Returns true when more pods are ready (the caller should not sleep). */
static bool schedule_batch(sched_loop *l) {
    int64_t now = mono_ms();
    sched_cache_lock(l->cache);
    if (l->changed) {
        l->changed = false;
        forget_released(l);
        size_t moved = sched_queue_move_all(l->queue, now);
        if (moved)
            tm_debug("cluster changed: unschedulable pods retried count=%zu", moved);
    } else if (l->n_released || l->n_usable) {
        /* only the pods the releases can help (release_hint.h); without memory, all */
        if (l->n_released) {
            sched_release_hint *h =
                sched_release_hint_new(sched_cache_snapshot(l->cache), l->released, l->n_released);
            size_t moved = h ? sched_queue_move_released(l->queue, now, release_helps, h)
                             : sched_queue_move_all(l->queue, now);
            sched_release_hint_free(h);
            if (moved)
                tm_debug("capacity released on %zu node(s): unschedulable pods retried count=%zu",
                         l->n_released, moved);
        }
        /* and those nodes usable again can help (usable_hint.h); without memory, all */
        if (l->n_usable && sched_queue_count(l->queue, SCHED_Q_UNSCHEDULABLE)) {
            sched_usable_hint *h = sched_usable_hint_new(
                sched_cache_snapshot(l->cache), (const char *const *)l->usable, l->n_usable);
            size_t moved = h ? sched_queue_move_released(l->queue, now, usable_helps, h)
                             : sched_queue_move_all(l->queue, now);
            if (moved || sched_usable_hint_spared(h))
                tm_debug("%zu node(s) usable again: unschedulable pods retried count=%zu, "
                         "preemptors waiting for their victims spared=%zu",
                         l->n_usable, moved, sched_usable_hint_spared(h));
            sched_usable_hint_free(h);
        }
        forget_released(l);
    }
    if (now - l->last_flush_ms >= 1000) {
        l->last_flush_ms = now;
        sched_queue_flush_unschedulable(l->queue, now, l->cfg->unschedulable_flush_ms);
    }
    /* backfill: the shadows of the head of the queue, when due (backfill_live.h) */
    sched_backfill_live_plan(l->bf, now, tm_wall_ms());
    sched_snapshot *snap = sched_cache_snapshot(l->cache);
    bool more = false;
    int tried = 0;
    for (int i = 0; i < BATCH; i++) {
        if (sched_binder_inflight(l->binder) >= (size_t)l->cfg->max_binds_in_flight)
            break;
        /* Checked per pod: a lost lease stops the very next decision. */
        if (!atomic_load(&l->leading))
            break;
        sched_pod *pod = sched_queue_pop(l->queue, now);
        if (!pod)
            break;
        /* kube's ScheduleOne: whether this pod's plugin calls are timed, decided per cycle */
        sched_framework_sample(l->fw, sched_fw_metrics_sample(l->fwm));
        /* PreEnqueue (the Gang plugin: a gang that cannot be tried yet waits whole) */
        char why[512];
        sched_status pe =
            sched_framework_pre_enqueue(l->fw, snap, pod, tm_wall_ms(), why, sizeof why);
        if (pe != SCHED_STATUS_OK) {
            if (pe == SCHED_STATUS_GATED) {
                /* gated after all (the hook let it in): no attempt, no event, no backoff */
                sched_queue_gate(l->queue, pod->uid);
                continue;
            }
            l->stats.unschedulable++;
            count_attempt(l, pod, "unschedulable");
            /* WAIT: kept back quietly for a bounded time while what it waits for is due (the
             * Reservation plugin: its reservation's admission); a gang member may be too */
            bool quiet =
                sched_gang_live_rejected(l->gangs, pod, why, now) || pe == SCHED_STATUS_WAIT;
            tm_err err = {0};
            if (!quiet &&
                sched_queue_should_report(l->queue, pod->uid, why, now, REPORT_REPEAT_MS) &&
                sched_binder_unschedulable(l->binder, pod, why, &err))
                tm_warn("%s", err.msg);
            sched_queue_unschedulable(l->queue, pod->uid, now);
            continue;
        }
        /* a gang member: the gang's cycle takes and places its waiting members together */
        tried++;
        char uid[128];
        snprintf(uid, sizeof uid, "%s", pod->uid);
        if (!sched_gang_live_cycle(l->gangs, pod, now))
            schedule_one(l, snap, pod, now);
        /* it fits nowhere and nothing was preempted for it: the rest of this batch must see
         * its shadow (backfill_live.h); no lookups at all with backfill off */
        if (l->bf && sched_queue_state(l->queue, uid) == SCHED_Q_UNSCHEDULABLE) {
            sched_nominated *nom = sched_snapshot_nominated(snap);
            if (!(nom && sched_nominated_node(nom, uid)))
                sched_backfill_live_unschedulable(l->bf, sched_queue_get(l->queue, uid), mono_ms(),
                                                  tm_wall_ms());
        }
        more = i == BATCH - 1;
        if ((i & 15) == 15 && mono_ms() - now >= BATCH_MS) {
            more = true;
            break;
        }
    }
    if (tried) /* the queue changed: the next plan (at most one per resolution) sees it */
        sched_backfill_live_touch(l->bf);
    sched_backfill_live_after_batch(l->bf);
    sched_cache_unlock(l->cache);
    sched_fw_recorder_flush(l->rec); /* the batch's timings reach /metrics */
    return more;
}

static void update_gauges(sched_loop *l) {
    if (l->queue) {
        tm_metrics_set(l->m_pending, TM_LABELS("active"),
                       (double)sched_queue_count(l->queue, SCHED_Q_ACTIVE));
        tm_metrics_set(l->m_pending, TM_LABELS("backoff"),
                       (double)sched_queue_count(l->queue, SCHED_Q_BACKOFF));
        tm_metrics_set(l->m_pending, TM_LABELS("unschedulable"),
                       (double)sched_queue_count(l->queue, SCHED_Q_UNSCHEDULABLE));
        tm_metrics_set(l->m_pending, TM_LABELS("inflight"),
                       (double)sched_queue_count(l->queue, SCHED_Q_IN_FLIGHT));
        tm_metrics_set(l->m_pending, TM_LABELS("gated"),
                       (double)sched_queue_count(l->queue, SCHED_Q_GATED));
        tm_metrics_set(l->m_binds_inflight, NULL, (double)sched_binder_inflight(l->binder));
        tm_metrics_set(l->m_binds_unknown, NULL, (double)sched_binder_verifying(l->binder));
    }
    int wire = tm_kube_active(l->k);
    tm_metrics_set(l->m_api, TM_LABELS("wire"), (double)wire);
    tm_metrics_set(l->m_api, TM_LABELS("queued"), (double)(tm_kube_inflight(l->k) - wire));
    sched_snapshot *snap = sched_cache_snapshot(l->cache);
    tm_metrics_set(l->m_nodes, NULL, (double)sched_snapshot_node_count(snap));
    tm_metrics_set(l->m_pods, NULL, (double)sched_snapshot_pod_count(snap));
}

int sched_loop_step(sched_loop *l, int max_wait_ms, tm_err *err) {
    int64_t now = mono_ms();
    check_synced(l, now);
    int wait = max_wait_ms;
    if (l->queue && atomic_load(&l->synced) && atomic_load(&l->leading)) {
        if (l->tasks_changed) { /* pods queued before their TaskProfile came ranked without it */
            sched_cache_lock(l->cache);
            sched_queue_reorder(l->queue);
            sched_cache_unlock(l->cache);
            l->tasks_changed = false;
        }
        if (schedule_batch(l))
            wait = 0;
        int64_t nb = sched_queue_next_backoff_ms(l->queue, mono_ms());
        if (nb >= 0 && nb < wait)
            wait = (int)nb;
        if (l->changed)
            wait = 0;
        if (l->vols && sched_volume_binder_waiting(l->vols) && wait > 500)
            wait = 500; /* claims bound and deadlines are looked at each turn */
    } else if (!atomic_load(&l->synced) && wait > 100) {
        wait = 100; /* re-check the sync state soon */
    }
    if (l->watchq && wait > 200)
        wait = 200; /* an extender's backfill plan is made on this thread, once per resolution */
    if (l->view_changed && l->view_fn) { /* a change held back by the gap below runs after it */
        int64_t left = l->last_view_ms + LOOP_VIEW_GAP_MS - now;
        if (left < wait)
            wait = left > 0 ? (int)left : 0;
    }
    int rc = tm_kube_run(l->k, wait, err);
    recheck_apis(l, mono_ms());
    sched_cache_lock(l->cache);
    if (l->watchq && atomic_load(&l->synced) && /* the shadows the extender's Filter keeps */
        sched_backfill_live_plan(l->bf, mono_ms(), tm_wall_ms()))
        l->view_changed = true;
    /* reservations: admit, activate, release (wall clock: windows are absolute times) */
    int64_t tr = mono_ms();
    if (l->resv && atomic_load(&l->synced) && (atomic_load(&l->leading) || !l->queue) &&
        tr - l->last_resv_tick_ms >= 500) {
        l->last_resv_tick_ms = tr;
        if (resv_controller_tick(l->resv, tm_wall_ms())) {
            l->changed = true;
            l->view_changed = true;
            sched_backfill_live_touch(l->bf);
        }
    }
    update_gauges(l);
    if (l->vols && sched_volume_binder_waiting(l->vols))
        sched_volume_binder_tick(l->vols, mono_ms());
    int64_t t = mono_ms();
    if (l->gangs && atomic_load(&l->leading) && t - l->last_gang_sync_ms >= 200) {
        l->last_gang_sync_ms = t;
        sched_gang_live_check_timeouts(l->gangs, t);
        sched_gang_live_sync_status(l->gangs);
    }
    sched_cache_unlock(l->cache);
    int64_t tv = mono_ms();
    if (l->view_changed && l->view_fn && tv - l->last_view_ms >= LOOP_VIEW_GAP_MS) {
        l->view_changed = false;
        l->last_view_ms = tv;
        l->view_fn(l->view_ud);
    }
    return rc;
}

void sched_loop_on_view_change(sched_loop *l, void (*fn)(void *ud), void *ud) {
    l->view_fn = fn;
    l->view_ud = ud;
}

void sched_loop_stop(sched_loop *l) {
    if (!l)
        return;
    if (l->leader) {
        tm_leader_stop(l->leader, true);
        l->leader = NULL;
    }
    atomic_store(&l->leading, false);
    resv_controller_stop(l->resv);
    tm_informer_stop(l->nodes);
    tm_informer_stop(l->pods);
    tm_informer_stop(l->tasks);
    tm_informer_stop(l->claims);
    tm_informer_stop(l->volumes);
    tm_informer_stop(l->classes);
    tm_informer_stop(l->csinodes);
    l->classes = l->csinodes = NULL;
    tm_informer_stop(l->podgroups);
    tm_informer_stop(l->workloads);
    tm_informer_stop(l->native_pgs);
    tm_informer_stop(l->pdbs);
    for (int k = 0; k < SCHED_OWNER_KINDS; k++) {
        tm_informer_stop(l->owners[k]);
        l->owners[k] = NULL;
    }
    l->nodes = l->pods = l->tasks = l->claims = l->volumes = l->pdbs = NULL;
    l->podgroups = l->workloads = l->native_pgs = NULL;
}

void sched_loop_free(sched_loop *l) {
    if (!l)
        return;
    sched_backfill_live_free(l->bf); /* before fw: its plugin's key function reads it */
    sched_gang_live_free(l->gangs);
    sched_volume_binder_free(l->vols);
    sched_preemptor_free(l->preemptor);
    sched_binder_free(l->binder);
    sched_queue_free(l->queue);
    resv_controller_free(l->resv); /* its plugin in fw has no free_state */
    sched_framework_free(l->fw);
    sched_fw_recorder_free(l->rec);
    sched_fw_metrics_free(l->fwm);
    sched_cache_free(l->cache);
    sched_queue_free(l->watchq); /* after the cache, whose hooks add to it */
    forget_released(l);
    free(l);
}

sched_fw_metrics *sched_loop_fw_metrics(sched_loop *l) {
    return l ? l->fwm : NULL;
}

bool sched_loop_ready(void *loop, char *reason, size_t reason_size) {
    sched_loop *l = loop;
    if (atomic_load(&l->synced))
        return true;
    int s = atomic_load(&l->sync_state);
    snprintf(reason, reason_size,
             "cache not synced yet: nodes %s, pods %s, persistentvolumeclaims %s, "
             "persistentvolumes %s, storageclasses %s, csinodes %s, poddisruptionbudgets %s, "
             "services and controllers %s, taskprofiles %s",
             (s & 1) ? "listed" : "not listed", (s & 2) ? "listed" : "not listed",
             (s & 8) ? "listed" : "not listed", (s & 16) ? "listed" : "not listed",
             (s & 32) ? "listed" : "not listed", (s & 64) ? "listed" : "not listed",
             (s & 128) ? "listed" : "not listed", (s & 256) ? "listed" : "not listed",
             (s & 4) ? "listed" : "not listed");
    return false;
}

bool sched_loop_leading(const sched_loop *l) {
    return atomic_load(&l->leading);
}

sched_cache *sched_loop_cache(sched_loop *l) {
    return l->cache;
}

sched_backfill_live *sched_loop_backfill(sched_loop *l) {
    return l->bf;
}

resv_controller *sched_loop_resv(sched_loop *l) {
    return l->resv;
}

sched_loop_stats sched_loop_get_stats(const sched_loop *l) {
    return l->stats;
}
