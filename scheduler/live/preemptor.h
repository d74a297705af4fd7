/* preemptor.h: the live half of preemption (issue 31). The DefaultPreemption PostFilter plugin
 * (plugins/preemption/preemption.h) is pure: it chooses a node and the victims. This carries
 * the choice out against the API server, as kube-scheduler's preemption executor does:
 *   - the preemptor: status.nominatedNodeName patched (pods/status), and the nomination
 *     recorded at once in the nominated-pods table, so that the cycles that follow keep the
 *     room for it (lower-priority pods no longer fit there);
 *   - each victim, marked terminating in the snapshot at once (no later cycle chooses it
 *     again): its status gets DisruptionTarget=True reason PreemptionByScheduler ("<scheduler>:
 *     preempting to accommodate a higher priority pod"), then it is deleted with a uid
 *     precondition (a pod recreated under the same name is not touched), then a Normal
 *     "Preempted" event about it, related to the preemptor: "Preempted by pod <uid> on node
 *     <node>";
 *   - pods of lower priority nominated to the same node lose their nomination (status cleared),
 *     since they may no longer fit there.
 * It also keeps the two tables preemption reads current from the informers: the nominated pods
 * (every pending pod of ours with status.nominatedNodeName: a restarted scheduler finds its
 * preemptions where it left them) and the PodDisruptionBudgets (policy/v1).
 * Every request is asynchronous on the kube loop and best effort, as in kube-scheduler: a
 * failure is logged and counted; the preemptor is retried anyway and preempts again only if
 * still nothing fits and its nominated node holds no victim still terminating. Loop thread,
 * cache lock held. */
#ifndef TAREMA_SCHED_LIVE_PREEMPTOR_H
#define TAREMA_SCHED_LIVE_PREEMPTOR_H

#include <jansson.h>

#include "lib/error.h"
#include "lib/kube.h"
#include "lib/metrics.h"
#include "scheduler/backend/cache.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/preemption/preemption.h"

typedef struct sched_preemptor sched_preemptor;

/* Lends its nominated-pods and PDB tables to the cache's snapshot. scheduler_name and identity
 * go into the events and the DisruptionTarget message. k, cache and reg are borrowed. NULL
 * with err (out of memory, metrics already registered). */
sched_preemptor *sched_preemptor_new(tm_kube *k, sched_cache *cache, const char *scheduler_name,
                                     const char *identity, tm_metrics *reg, tm_err *err);
/* Takes the tables back from the snapshot and frees them (after the client is freed: no
 * request calls back any more). */
void sched_preemptor_free(sched_preemptor *pr);

/* A pod event as the informer delivers it (the transformed object, see
 * sched_cache_pod_transform, which keeps status.nominatedNodeName; old: its previous version,
 * NULL when none): records, moves or ends the pod's nomination. An update without
 * nominatedNodeName ends it only when the previous version had one (kube's nominator). */
void sched_preemptor_pod_event(sched_preemptor *pr, tm_watch_type t, const json_t *obj,
                               const json_t *old);
/* A PodDisruptionBudget event. Returns true when the table changed. */
bool sched_preemptor_pdb_event(sched_preemptor *pr, tm_watch_type t, const json_t *obj);
/* A pod of ours was assumed on a node: its nomination (if any) ends there, as kube's does. */
void sched_preemptor_assumed(sched_preemptor *pr, const char *uid);

/* PostFilter for pod p after fw's last cycle found no node. When the preemption plugin made
 * room, carries it out (above) and returns true; the caller then requeues p as unschedulable
 * (it lands once the victims are gone). Otherwise false, and msg (may be NULL) gets the
 * plugin's reason ("preemption: ..."), to append to the FailedScheduling message. */
bool sched_preemptor_run(sched_preemptor *pr, sched_framework *fw, const sched_pod *p, char *msg,
                         size_t size);

/* A gang's preemption (plugins/gang/gang_preempt.h) carried out: each waiting member
 * pods[i] with nodes[i] >= 0 nominated there (recorded at once, status patched), then each
 * victim marked terminating and evicted as for a pod (DisruptionTarget, delete, a Preempted
 * event related to the member that takes its node). Loop thread, cache lock held. */
void sched_preemptor_run_gang(sched_preemptor *pr, const char *gang, sched_pod *const *pods,
                              size_t n, const int *nodes, const sched_victim *victims,
                              size_t n_victims);
/* A pod that ran past the expected end it was let into a Reservation's held capacity on, the
 * window now open (resv_overrun.h): evicted as a victim is (marked terminating in the snapshot,
 * DisruptionTarget=True reason PreemptionByScheduler with v->why, deleted with a uid
 * precondition, a Normal "Preempted" event related to the Reservation resv_ns/resv_name).
 * Counted in tarema_preemption_victims_total{reason="reservation_overrun"}. Loop thread, cache
 * lock held; pr NULL: nothing. */
void sched_preemptor_evict_overrun(sched_preemptor *pr, const sched_victim *v, const char *resv_ns,
                                   const char *resv_name, const char *resv_uid);
#endif
