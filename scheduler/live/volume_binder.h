/* volume_binder.h: VolumeBinding's PreBind in the live scheduler, asynchronous like the binds
 * (binder.h) so the scheduling loop never waits on it. For a pod whose Reserve chose volumes
 * (volume_binding.h's plan) it writes the choice to the API server, as kube-scheduler's
 * BindPodVolumes does:
 *   - a PV to bind: the PV's spec.claimRef (and pv.kubernetes.io/bound-by-controller), written
 *     conditionally on the PV's resourceVersion; the PV controller then binds the claim;
 *   - a claim to provision: annotation volume.kubernetes.io/selected-node on the claim; the
 *     provisioner then creates the PV there and the PV controller binds it.
 * It then waits until every claim of the plan is fully bound (kube's checkBindings, read from
 * the cache's tables on every loop turn) and binds the pod. On a failed write, a provisioner
 * that gave the node back, a claim or PV gone, or after the timeout (kube's
 * bindTimeoutSeconds, volumeBindTimeoutSeconds in the config), it undoes the choice: the claims
 * not bound yet lose the selected-node annotation this process wrote, the PVs it pointed at them
 * lose that claimRef, the assumption leaves the tables; then the failure callback requeues the
 * pod with a FailedScheduling event. (kube-scheduler only forgets its assumption; writing the
 * undo lets another node be chosen at once instead of waiting for the provisioner to give up.)
 * All on the loop thread, cache lock held for the table reads. */
#ifndef TAREMA_SCHED_VOLUME_BINDER_H
#define TAREMA_SCHED_VOLUME_BINDER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/kube.h"
#include "scheduler/backend/cache.h"
#include "scheduler/backend/volumes.h"
#include "scheduler/live/binder.h"

typedef struct sched_volume_binder sched_volume_binder;

/* The volumes of pod uid could not be bound (msg: kube-scheduler's PreBind failure words). The
 * pod is not bound; its assumed volumes were reverted; the caller forgets its reservation and
 * requeues it. Loop thread, cache lock held. */
typedef void (*sched_volume_failed_fn)(void *ud, const char *ns, const char *name, const char *uid,
                                       const char *msg);

/* k, cache and binder borrowed. NULL on OOM. */
sched_volume_binder *sched_volume_binder_new(tm_kube *k, sched_cache *cache, sched_binder *binder,
                                             int64_t timeout_ms, sched_volume_failed_fn failed,
                                             void *ud);
/* Frees it after tm_kube_free (pending operations are dropped without undo). */
void sched_volume_binder_free(sched_volume_binder *vb);

/* Starts PreBind for p (reserved on plan->node) with plan (taken: freed by the binder).
 * 0, or -1 with err (nothing started; plan freed, its assumption reverted). */
int sched_volume_binder_start(sched_volume_binder *vb, const sched_pod *p, sched_volume_plan *plan,
                              int64_t now_ms, tm_err *err);
/* Checks the waiting pods (call each loop turn, cache lock held): binds those whose claims are
 * bound, fails those that failed or timed out. Returns how long until the next deadline (ms),
 * -1 when nothing waits. */
int64_t sched_volume_binder_tick(sched_volume_binder *vb, int64_t now_ms);
size_t sched_volume_binder_waiting(const sched_volume_binder *vb);

#endif
