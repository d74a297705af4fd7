/* volumes.h: the VolumeBinding filter and what it knows of storage: which PersistentVolumeClaims
 * exist and which volume each is bound to, and the nodes each PersistentVolume can be used from
 * (spec.nodeAffinity.required: local volumes, zonal disks).
 *
 * kube-scheduler refuses a pod whose claim is missing or being deleted, and every node outside
 * the node affinity of a volume the pod's claims are bound to. tarema does the same. It does not
 * bind or provision volumes (kube-scheduler's PreBind), so a pod with an unbound claim, also a
 * WaitForFirstConsumer one that kube-scheduler would provision, is unschedulable here, with a
 * message that says so: bind the claim first, or keep kube-scheduler and run tarema as its
 * extender. Refusing more than kube-scheduler is safe; accepting a node it would refuse is not.
 *
 * The tables hang off the snapshot (sched_snapshot_set_volumes) only where someone keeps them
 * current: the live scheduler's cache, the explain CLI. A snapshot without them (extender,
 * where kube-scheduler checks volumes itself; simulator) runs no volume filter at all. */
#ifndef TAREMA_SCHED_VOLUMES_H
#define TAREMA_SCHED_VOLUMES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "scheduler/backend/pod.h"
#include "scheduler/backend/snapshot.h"

typedef struct sched_volumes sched_volumes;

sched_volumes *sched_volumes_new(void); /* NULL on OOM */
void sched_volumes_free(sched_volumes *v);

/* PersistentVolumeClaim / PersistentVolume JSON -> the tables (replacing an entry of the same
 * name). 0, or -1 with err naming the object and field (nothing is changed then). */
int sched_volumes_put_claim(sched_volumes *v, const json_t *pvc, tm_err *err);
/* Whether a claim's binding has completed (annotation pv.kubernetes.io/bind-completed, which
 * the PV controller sets with spec.volumeName before status.phase becomes Bound): kube-
 * scheduler's isPVCFullyBound. A claim with spec.volumeName but without it counts as unbound. */
bool sched_volumes_claim_bind_completed(const json_t *pvc);
int sched_volumes_put_volume(sched_volumes *v, const json_t *pv, tm_err *err);
/* Forget one; -1 when unknown. */
int sched_volumes_remove_claim(sched_volumes *v, const char *ns, const char *name);
int sched_volumes_remove_volume(sched_volumes *v, const char *name);
size_t sched_volumes_claim_count(const sched_volumes *v);
size_t sched_volumes_volume_count(const sched_volumes *v);

/* Why VolumeBinding rejected a node (sched_filter_id SCHED_FILTER_VOLUME): the low byte of the
 * detail; for the claim problems the pod's claim index is in the bits above (detail >> 8). */
enum {
    SCHED_VOLUME_NODE_CONFLICT = 0, /* a bound volume's node affinity excludes the node */
    SCHED_VOLUME_CLAIM_MISSING = 1, /* the claim does not exist */
    SCHED_VOLUME_CLAIM_DELETING = 2,
    SCHED_VOLUME_CLAIM_UNBOUND = 3,
    SCHED_VOLUME_PV_MISSING = 4 /* bound to a volume that does not exist */
};

/* The filter's per-cycle state (its PreFilter): the pod's claims resolved once, then each node
 * checked against the bound volumes' node affinity. Borrowed pointers into the snapshot's
 * tables: valid until they change. */
typedef struct sched_volume_state sched_volume_state;
sched_volume_state *sched_volume_state_new(void); /* NULL on OOM */
void sched_volume_state_free(sched_volume_state *st);
/* Resolves p's claims against s's tables; *on false when the filter has nothing to check (no
 * tables, no claims, or no bound volume with node affinity and no claim problem). 0, or -1 with
 * err (out of memory). */
int sched_volume_prefilter(sched_volume_state *st, const sched_snapshot *s, const sched_pod *p,
                           bool *on, tm_err *err);
/* -1 when node n passes, else the detail (SCHED_VOLUME_* | claim index << 8). */
int sched_volume_filter(const sched_volume_state *st, const sched_node *n);

/* The reason text for a detail, with the claim's name when p is given. */
void sched_volume_reason(const sched_pod *p, uint32_t detail, char *buf, size_t size);

#endif
