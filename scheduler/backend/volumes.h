/* volumes.h: what the volume plugins know of storage, and the rules of kube-scheduler's
 * VolumeBinding over it.
 *
 * Tables: PersistentVolumeClaims (class, request, access modes, volume mode, binding, the
 * selected-node annotation, owner), PersistentVolumes (capacity, class, access modes, node
 * affinity, claimRef, phase, zone labels, CSI driver), StorageClasses (provisioner, binding
 * mode, allowedTopologies), CSINodes (attach limits per driver) and which bound pods use which
 * claims (for ReadWriteOncePod and attach counts).
 *
 * VolumeBinding, as kube-scheduler 1.35's: a claim counts as bound only once its binding
 * completed (isPVCFullyBound); a missing or deleting claim, a generic ephemeral volume's claim
 * not created yet (or not owned by the pod), and an unbound claim whose StorageClass binds
 * immediately make the pod unschedulable on every node. An unbound claim of a
 * WaitForFirstConsumer class is matched per node to the smallest available PV that fits (class,
 * capacity, access modes, volume mode, selector, node affinity: FindMatchingVolume), else, when
 * the class has a provisioner whose allowedTopologies admit the node, to be provisioned there.
 * Reserve assumes the choice in the tables (sched_volumes_assume: the PV's claimRef, the claim's
 * selected node) so the next pod sees it; the live scheduler writes it (PV claimRef, claim
 * annotation volume.kubernetes.io/selected-node) and waits for the claims to be fully bound
 * before binding the pod (scheduler/live/volume_binder.c).
 *
 * The tables hang off the snapshot (sched_snapshot_set_volumes) only where someone keeps them
 * current: the live scheduler's cache, the explain CLI. A snapshot without them (extender,
 * where kube-scheduler checks volumes itself; simulator) runs no volume filter at all. */
#ifndef TAREMA_SCHED_VOLUMES_H
#define TAREMA_SCHED_VOLUMES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/backend/pod.h"
#include "scheduler/backend/snapshot.h"

typedef struct sched_volumes sched_volumes;

sched_volumes *sched_volumes_new(void); /* NULL on OOM */
void sched_volumes_free(sched_volumes *v);

/* PersistentVolumeClaim / PersistentVolume / StorageClass / CSINode JSON -> the tables
 * (replacing an entry of the same name; what this process assumed of it and the API does not
 * show yet is kept). 0, or -1 with err naming the object and field (nothing is changed then). */
int sched_volumes_put_claim(sched_volumes *v, const json_t *pvc, tm_err *err);
int sched_volumes_put_volume(sched_volumes *v, const json_t *pv, tm_err *err);
int sched_volumes_put_class(sched_volumes *v, const json_t *sc, tm_err *err);
int sched_volumes_put_csinode(sched_volumes *v, const json_t *csinode, tm_err *err);
/* Whether a claim's binding has completed (annotation pv.kubernetes.io/bind-completed, which
 * the PV controller sets with spec.volumeName before status.phase becomes Bound): kube-
 * scheduler's isPVCFullyBound. A claim with spec.volumeName but without it counts as unbound. */
bool sched_volumes_claim_bind_completed(const json_t *pvc);
/* Forget one; -1 when unknown. */
int sched_volumes_remove_claim(sched_volumes *v, const char *ns, const char *name);
int sched_volumes_remove_volume(sched_volumes *v, const char *name);
int sched_volumes_remove_class(sched_volumes *v, const char *name);
int sched_volumes_remove_csinode(sched_volumes *v, const char *name);
size_t sched_volumes_claim_count(const sched_volumes *v);
size_t sched_volumes_volume_count(const sched_volumes *v);

/* A bound (or assumed) pod uses claims[0..n) of namespace ns on node: recorded by uid,
 * replacing what that uid used before. n 0 forgets it. 0, or -1 on OOM. */
int sched_volumes_pod_use(sched_volumes *v, const char *uid, const char *ns, const char *node,
                          char *const *claims, size_t n);
/* How many recorded pods other than except_uid (may be NULL) use claim ns/name. */
size_t sched_volumes_claim_users(const sched_volumes *v, const char *ns, const char *name,
                                 const char *except_uid);

/* Why VolumeBinding rejected a node (sched_filter_id SCHED_FILTER_VOLUME): the low byte of the
 * detail; for the claim problems the pod's claim index is in the bits above (detail >> 8). */
enum {
    SCHED_VOLUME_NODE_CONFLICT = 0, /* a bound volume's node affinity excludes the node */
    SCHED_VOLUME_CLAIM_MISSING = 1, /* the claim does not exist */
    SCHED_VOLUME_CLAIM_DELETING = 2,
    SCHED_VOLUME_IMMEDIATE_UNBOUND = 3, /* unbound, its class binds immediately */
    SCHED_VOLUME_PV_MISSING = 4,        /* bound to a volume that does not exist */
    SCHED_VOLUME_BIND_CONFLICT = 5,     /* no PV to bind, nothing to provision here */
    SCHED_VOLUME_EPHEMERAL_WAIT = 6,    /* generic ephemeral: its claim is not created yet */
    SCHED_VOLUME_EPHEMERAL_OWNER = 7    /* ... a claim of that name not owned by the pod */
};

/* What Reserve chose for a pod on a node: the PV each claim is bound to (static) and the claims
 * to provision there. Strings owned. */
typedef struct sched_volume_bind {
    char *ns, *claim, *claim_uid;
    char *pv;       /* static binding: the PV; NULL: provision on node */
    char *pv_rv;    /* the PV's resourceVersion seen (the write is conditional on it) */
    char *claim_rv; /* the claim's */
} sched_volume_bind;
typedef struct sched_volume_plan {
    char *node;
    sched_volume_bind *b;
    size_t n;
} sched_volume_plan;
void sched_volume_plan_free(sched_volume_plan *pl); /* also the struct; NULL is fine */

/* The filter's per-cycle state (its PreFilter): the pod's claims resolved once, then each node
 * checked. Borrowed pointers into the snapshot's tables: valid until they change. */
typedef struct sched_volume_state sched_volume_state;
sched_volume_state *sched_volume_state_new(void); /* NULL on OOM */
void sched_volume_state_free(sched_volume_state *st);
/* Resolves p's claims against s's tables; *on false when the filter has nothing to check (no
 * tables, no claims, or only bound volumes without node affinity). 0, or -1 with err (OOM). */
int sched_volume_prefilter(sched_volume_state *st, const sched_snapshot *s, const sched_pod *p,
                           bool *on, tm_err *err);
/* -1 when node n passes, else the detail (SCHED_VOLUME_* | claim index << 8). */
int sched_volume_filter(const sched_volume_state *st, const sched_node *n);
/* The choice for node n after a prefilter for p (NULL: nothing to bind or provision, or OOM:
 * *err set then). */
sched_volume_plan *sched_volume_state_plan(const sched_volume_state *st, const sched_node *n,
                                           tm_err *err);

/* Assume a plan in the tables (PVs' claimRef, claims' selected node) / undo it. */
void sched_volumes_assume(sched_volumes *v, const sched_volume_plan *pl);
void sched_volumes_revert(sched_volumes *v, const sched_volume_plan *pl);

/* Where a written plan stands (kube's checkBindings): 1 every claim is fully bound (to a PV
 * that exists), 0 still waiting, -1 it failed (msg says why: the provisioner dropped the
 * selected node, the PV went to another claim, a claim was deleted). */
int sched_volumes_plan_status(const sched_volumes *v, const sched_volume_plan *pl, char *msg,
                              size_t size);

/* Whether entry i of a failed plan still stands as written and nothing was bound: the PV's
 * claimRef names the claim, or the claim's selected node is the plan's, and the claim has no
 * volume yet. Only then is undoing it safe. */
bool sched_volumes_plan_undoable(const sched_volumes *v, const sched_volume_plan *pl, size_t i);

/* The reason text for a detail, with the claim's name when p is given. */
void sched_volume_reason(const sched_pod *p, uint32_t detail, char *buf, size_t size);

/* ---- for VolumeRestrictions, VolumeZone, NodeVolumeLimits (their own plugin files) ---- */

enum { SCHED_ACCESS_RWO = 1, SCHED_ACCESS_ROX = 2, SCHED_ACCESS_RWX = 4, SCHED_ACCESS_RWOP = 8 };
/* A claim's access modes (SCHED_ACCESS_* bits), -1 when the claim is unknown. */
int sched_volumes_claim_access(const sched_volumes *v, const char *ns, const char *name);
/* The PV a claim names in spec.volumeName ("" none), its class ("" none); NULL when unknown. */
const char *sched_volumes_claim_volume_name(const sched_volumes *v, const char *ns,
                                            const char *name);
const char *sched_volumes_claim_class(const sched_volumes *v, const char *ns, const char *name);
/* A class: true when known; *wffc its binding mode is WaitForFirstConsumer, *provisioner. */
bool sched_volumes_class(const sched_volumes *v, const char *name, bool *wffc,
                         const char **provisioner);
bool sched_volumes_volume_exists(const sched_volumes *v, const char *pv);
/* The PV's zone/region labels (topology.kubernetes.io/{zone,region} and the failure-domain
 * beta ones): calls fn(key, value) for each; 0 when the PV is unknown. */
size_t sched_volumes_volume_topology(const sched_volumes *v, const char *pv,
                                     void (*fn)(void *arg, const char *key, const char *value),
                                     void *arg);
/* The CSI driver and handle of a PV (NULL when it is no CSI volume or unknown). */
const char *sched_volumes_volume_csi(const sched_volumes *v, const char *pv, const char **handle);
/* A node's attach limit for a CSI driver from its CSINode (-1: no limit known). */
int64_t sched_volumes_csi_limit(const sched_volumes *v, const char *node, const char *driver);
/* Calls fn for every recorded pod use of a claim (the pod's node, namespace, claim). */
void sched_volumes_each_use(const sched_volumes *v,
                            void (*fn)(void *arg, const char *node, const char *ns,
                                       const char *claim),
                            void *arg);

#endif
