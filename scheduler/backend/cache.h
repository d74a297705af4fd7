/* cache.h: the live scheduler's view of the cluster: informer events (nodes, pods, TaskProfiles)
 * applied incrementally to one sched_snapshot, plus the pods we assumed onto nodes whose binds
 * have not been confirmed yet.
 *
 *   node ADDED/MODIFIED  -> that node is replaced in the snapshot (its pods' requests are kept);
 *                           status-only updates (heartbeats) are ignored
 *   node DELETED         -> removed
 *   pod with a node      -> its requests count on that node (ours and others' alike); an
 *                           assumption for it is confirmed
 *                           (pod_bound: the unschedulable pods it can help are retried)
 *   pod finished/deleted -> its requests are released
 *   our pod without node -> handed to the queue through the pod_pending hook (only when new or
 *                           its spec, labels or annotations changed: status updates, such as our
 *                           own PodScheduled condition, do not requeue it)
 *   TaskProfile          -> the snapshot's task table
 *   claim / volume       -> the snapshot's volume tables, when tracked (sched_cache_track_volumes)
 *
 * Locking: the cache owns one mutex. The scheduler's loop thread holds it while applying events
 * and while running a batch of scheduling cycles; the HTTP handler threads (explain, extender)
 * hold it while reading the snapshot. Every function below except sched_cache_new/free/lock/
 * unlock expects the caller to hold the lock. Hooks are called with the lock held and must not
 * take it again.
 *
 * No I/O: JSON in, snapshot and hook calls out, so it is unit-tested with plain JSON. */
#ifndef TAREMA_SCHED_CACHE_H
#define TAREMA_SCHED_CACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "lib/kube.h"
#include "scheduler/backend/pod.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/snapshot.h"

typedef struct sched_cache_hooks {
    /* Our unbound pod is new or changed: the hook takes ownership of pod. */
    void (*pod_pending)(void *ud, sched_pod *pod);
    /* Our pod no longer needs scheduling: bound (node set) or deleted/finished (node NULL). */
    void (*pod_gone)(void *ud, const char *uid, const char *node);
    /* Something changed that may let unschedulable pods fit: a node added or changed, a pod
     * released its requests. */
    void (*cluster_changed)(void *ud);
    /* A pod was recorded bound on a node (new, or its record changed); m is its metadata
     * (borrowed for the call; NULL when it has none): unschedulable pods it can help, such as
     * those waiting for affinity to it (sched_pod_helped_by), may fit now. May be NULL. */
    void (*pod_bound)(void *ud, const sched_pod_meta *m);
    /* A bound pod of priority prio released requests on node (deleted, finished, resized
     * down) and nothing else changed that a waiting pod could need: a pod waiting for capacity
     * alone can fit only there, or preempt there when the released pod was one it could not
     * evict (the loop's node-scoped requeue). May be NULL: cluster_changed is called instead. */
    void (*pod_released)(void *ud, const char *node, int32_t prio);
    /* A node changed in a way that lets no waiting pod fit: it went NotReady, was cordoned,
     * lost capacity (kube-scheduler's queueing hints answer QueueSkip for those).
     * What was planned over it is stale, but no pod needs a retry. May be NULL: cluster_changed
     * is called instead. */
    void (*node_worsened)(void *ud);
    /* A node's taints changed and it lost none that filters read (it gained one, or a
     * PreferNoSchedule one changed): no pod tolerates it where it did not, but a pod whose
     * spread constraint honours taints may fit now (its domains changed). May be NULL:
     * cluster_changed is called instead. */
    void (*node_taints_gained)(void *ud);
    /* A known node became usable where it was not (Ready again, uncordoned, a NoSchedule or
     * NoExecute taint gone) and nothing else changed that every pod could need (labels,
     * capacity): pods may fit, or preempt, there. May be NULL: cluster_changed is called
     * instead. */
    void (*node_usable)(void *ud, const char *node);
    void *ud;
} sched_cache_hooks;

typedef struct sched_cache sched_cache;

/* scheduler_name: spec.schedulerName of our pods; with several profiles keys->profiles names
 * them all (scheduler_name first) and a pod of any of them is ours. namespaces: NULL-terminated
 * list of the namespaces whose pods we schedule (NULL or empty = all); copied. keys NULL = defaults
 * (copied). hooks may be NULL (a cache that only tracks capacity, as the explain CLI and extender
 * use). NULL with err on OOM. Free with sched_cache_free. */
sched_cache *sched_cache_new(const char *scheduler_name, const char *const *namespaces,
                             const sched_keys *keys, const sched_cache_hooks *hooks, tm_err *err);
void sched_cache_free(sched_cache *c);

void sched_cache_lock(sched_cache *c);
void sched_cache_unlock(sched_cache *c);

/* The snapshot (borrowed; read or schedule on it only while holding the lock). */
sched_snapshot *sched_cache_snapshot(sched_cache *c);
const sched_keys *sched_cache_keys(const sched_cache *c);

/* Informer events (obj and old borrowed; old NULL for ADDED). 0, or -1 with err naming the
 * object when its JSON cannot be understood (the event is then skipped). */
int sched_cache_node_event(sched_cache *c, tm_watch_type type, const json_t *obj, const json_t *old,
                           tm_err *err);
int sched_cache_pod_event(sched_cache *c, tm_watch_type type, const json_t *obj, const json_t *old,
                          tm_err *err);
int sched_cache_task_event(sched_cache *c, tm_watch_type type, const json_t *obj, tm_err *err);

/* Makes the snapshot keep PersistentVolumeClaims and PersistentVolumes (volumes.h), so that the
 * VolumeBinding filter runs; then feed it their events (ignored while not tracking). A changed
 * claim binding or volume node affinity counts as a cluster change. 0, or -1 with err. */
int sched_cache_track_volumes(sched_cache *c, tm_err *err);
/* Stops tracking them (the filter no longer runs) and frees the tables. */
void sched_cache_untrack_volumes(sched_cache *c);
int sched_cache_claim_event(sched_cache *c, tm_watch_type type, const json_t *obj,
                            const json_t *old, tm_err *err);
int sched_cache_volume_event(sched_cache *c, tm_watch_type type, const json_t *obj,
                             const json_t *old, tm_err *err);
/* StorageClasses (binding mode, provisioner, allowedTopologies) and CSINodes (attach limits). */
int sched_cache_class_event(sched_cache *c, tm_watch_type type, const json_t *obj, tm_err *err);
int sched_cache_csinode_event(sched_cache *c, tm_watch_type type, const json_t *obj, tm_err *err);

/* Makes the snapshot keep the selectors of Services, ReplicationControllers, ReplicaSets and
 * StatefulSets (owner_selectors.h), so that PodTopologySpread applies its default constraints
 * to their pods; then feed it their events (k: which kind; ignored while not tracking). A
 * selector that does not parse is kept as selecting nothing: 1 with err (to warn about). 0, or
 * -1 with err. The transform keeps metadata name/namespace/resourceVersion and spec.selector. */
int sched_cache_track_owner_selectors(sched_cache *c, tm_err *err);
int sched_cache_owner_event(sched_cache *c, sched_owner_kind k, tm_watch_type type,
                            const json_t *obj, tm_err *err);
json_t *sched_cache_owner_transform(void *cache, json_t *obj);

/* Informer transforms (tm_informer_opts.transform, transform_ud = the cache): they rebuild a
 * node or pod with only what the cache, the filters and the scores read, so the informers'
 * stores stay small (managedFields, images, volumes, env, probes and most of status are most
 * of an object's size).
 *   node: metadata name/resourceVersion/labels; spec.unschedulable/taints; status.allocatable
 *         (status.capacity when there is none) and the Ready condition (type and status)
 *   pod:  metadata name/namespace/uid/resourceVersion/creationTimestamp/deletionTimestamp/
 *         labels and the annotations the policy reads (the workflow key and tarema.io/...);
 *         of a pod without a node, its controller ownerReference (apiVersion, kind, name);
 *         spec scheduling fields (nodeName, schedulerName, priority, tolerations,
 *         nodeSelector, affinity, topologySpreadConstraints, overhead, workloadRef, ...) and of
 * each container its name, resources.requests, ports and restartPolicy; pod-level resources and
 * resourceClaims; status.phase, the container statuses that report resources (in-place resize:
 * name, resources.requests, allocatedResources) and the PodResizePending condition; for a pod not
 * the volumes that name a claim (name and claimName; of every pod: the volume plugins count
 * the claims in use) They take ownership of obj and
 * return the new object (obj itself when it is not a JSON object). They read only the cache's fixed
 * configuration, so they need not hold the lock. */
json_t *sched_cache_node_transform(void *cache, json_t *obj);
json_t *sched_cache_pod_transform(void *cache, json_t *obj);

/* True when the pod is one we schedule: spec.schedulerName is ours and its namespace is
 * watched. */
bool sched_cache_is_ours(const sched_cache *c, const json_t *pod);

/* Remembers as assumed a pod already reserved in the snapshot (by sched_framework_reserve, or a
 * gang placed all at once by sched_gang_place with keep) until the pod's watch event shows it
 * bound, or sched_cache_forget undoes it. 0, or -1 with err when uid is not reserved or out of
 * memory. The cache calls no framework: the caller reserves, the cache remembers. */
int sched_cache_assume_placed(sched_cache *c, const char *uid, tm_err *err);
/* Undoes an assumption (bind failed). A pod the watch already showed bound is left alone, so
 * a late failure never erases real usage. Returns true when something was undone. */
bool sched_cache_forget(sched_cache *c, const char *uid);
bool sched_cache_is_assumed(const sched_cache *c, const char *uid);
size_t sched_cache_assumed_count(const sched_cache *c);

#endif
