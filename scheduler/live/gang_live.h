/* gang_live.h: gangs in the running scheduler: what the loop calls at each point of a gang's
 * life. The functions map one-to-one onto kube-scheduler's extension points, so they can be
 * registered as plugins once the framework has them:
 *
 *   pre_enqueue  (the Gang plugin, gang_plugin.h) a pod of a missing or invalid gang, or of a
 *                gang with fewer pods than minMember, waits; sched_gang_live_rejected records why
 *   permit       the gang's decision: every waiting member is taken from the queue and placed
 *                together on one snapshot (sched_gang_place); all bound, or none and all wait
 *                (unschedulable until the cluster changes; after scheduleTimeoutSeconds the
 *                whole gang goes to backoff and a Timeout event says why)
 *   unreserve    a bind failure of the gang's first member undoes the reservations of the
 *                others (not bound yet: their binds start only after the first succeeded) and
 *                requeues the whole gang with backoff
 *
 * plus the informer side (PodGroups, Workloads, member pods) and the reports: PodGroup status
 * (phase, scheduled, running, succeeded, failed, message) by merge patch when it changed,
 * events on the PodGroup or Workload and on the pods, and the metrics
 * tarema_gangs_scheduled_total, tarema_gang_wait_seconds, tarema_gang_attempts_total{result}.
 *
 * Loop thread only, with the cache lock held (as the rest of the scheduling cycle). */
#ifndef TAREMA_SCHED_GANG_LIVE_H
#define TAREMA_SCHED_GANG_LIVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/kube.h"
#include "lib/metrics.h"
#include "scheduler/live/binder.h"
#include "scheduler/live/preemptor.h"
#include "scheduler/backend/cache.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/plugins/gang/native.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/queue.h"

/* SCHED_PODGROUP_API (scheduler-plugins' group/version): plugins/gang/podgroup.h */
#define SCHED_WORKLOAD_API "scheduling.k8s.io/v1alpha1"

typedef struct sched_gang_live sched_gang_live;

/* Borrowed, must outlive the gang side. reg: its metrics are registered there. NULL with err. */
sched_gang_live *sched_gang_live_new(sched_queue *q, sched_cache *c, sched_framework *fw,
                                     sched_binder *b, tm_metrics *reg, tm_err *err);
/* An extender's gang side (issue 32): the registry alone, kept by the same informer events, so
 * that backfill plans each gang of kube-scheduler's queue as one job; fw: the loop's framework
 * (its backfill plan), k: the PodGroups' expected start (sched_gang_live_sync_status writes
 * that, and nothing else). It never takes pods, reports, times out or preempts: kube-scheduler
 * places the gangs (its GangScheduling plugin for native PodGroups). NULL with err. */
sched_gang_live *sched_gang_live_observer_new(sched_cache *c, sched_framework *fw, tm_kube *k,
                                              tm_err *err);
void sched_gang_live_free(sched_gang_live *gl);
/* Lets gangs preempt as one unit (plugins/gang/gang_preempt.h) through pr (borrowed; NULL:
 * they never preempt). */
void sched_gang_live_set_preemptor(sched_gang_live *gl, sched_preemptor *pr);
sched_gang_registry *sched_gang_live_registry(sched_gang_live *gl);
/* Lets a single pod's preemption (DefaultPreemption in the gang side's framework) take a
 * running gang as one victim, whole or not at all (preemption.h, units): each placed pod's
 * unit is its gang in the live registry. 0, or -1 with err (no preemption plugin). */
int sched_gang_live_set_preemption_units(sched_gang_live *gl, tm_err *err);
/* A single pod p preempted victims v[0..n-1] (sched_preemption_last): each gang among them
 * hears it on its PodGroup or Workload, once, as a Warning "Preempted" event ("preempted whole
 * by pod ns/name (priority P): ..."), as the gangs a gang preempts do. */
void sched_gang_live_victims_preempted(sched_gang_live *gl, const sched_pod *p,
                                       const sched_victim *v, size_t n);

/* Informer events (obj borrowed). Pod events go here before the cache sees them, so that a pod
 * is known as a member when it is queued. The PodGroup and Workload events return true when a
 * waiting gang may be schedulable now (the caller retries unschedulable pods). */
void sched_gang_live_pod_event(sched_gang_live *gl, tm_watch_type t, const json_t *pod,
                               int64_t now_ms);
bool sched_gang_live_podgroup_event(sched_gang_live *gl, tm_watch_type t, const json_t *obj,
                                    int64_t now_ms);
bool sched_gang_live_workload_event(sched_gang_live *gl, tm_watch_type t, const json_t *obj);

/* Kubernetes 1.36+ PodGroups (scheduling.k8s.io, native.h): which version the API server serves
 * (sched_gang_native_discover; conditions and events use it), and their informer events. */
void sched_gang_live_set_native_api(sched_gang_live *gl, const sched_native_api *api);
bool sched_gang_live_native_podgroup_event(sched_gang_live *gl, tm_watch_type t, const json_t *obj,
                                           int64_t now_ms);
/* Reads the API server's discovery of scheduling.k8s.io: *out = the newest version tarema knows
 * that serves PodGroups, else one serving Workloads (1.35's v1alpha1); out->version "" when none
 * is served (not an error). -1 with err when the API server did not answer. */
int sched_gang_native_discover(tm_kube *k, sched_native_api *out, tm_err *err);

/* The cycle of a popped pod (in flight). false: not a gang member, schedule it alone. true: the
 * gang side handled it and every member it took (bound, waiting or backing off). */
bool sched_gang_live_cycle(sched_gang_live *gl, sched_pod *pod, int64_t now_ms);

/* PreEnqueue refused a pod (why: the framework's message): when it is a gang member, the
 * gang's message, wait clock (timeouts) and event follow. true when the gang only waits for
 * gated members (sched_gang_waits_for_gates): it waits quietly, the caller posts no
 * FailedScheduling for the pod. */
bool sched_gang_live_rejected(sched_gang_live *gl, const sched_pod *pod, const char *why,
                              int64_t now_ms);

/* A bind of ours finished (before the loop's own handling of that pod). */
void sched_gang_live_bind_result(sched_gang_live *gl, const char *uid, bool ok, int status,
                                 int64_t now_ms);

/* Gangs whose wait passed scheduleTimeoutSeconds: Timeout event, members to backoff. */
void sched_gang_live_check_timeouts(sched_gang_live *gl, int64_t now_ms);

/* Writes the PodGroup statuses that changed and backfill's expected starts (gang_start.h); an
 * observer writes the expected starts only. Cheap when nothing changed. */
void sched_gang_live_sync_status(sched_gang_live *gl);

/* explain: the gang of pod (JSON as read from the API server) read from the API server (its
 * PodGroup or Workload, its member pods) and the gang's decision on snap without keeping
 * anything: sched_gang_describe's document with "message" (why it waits now), "attempt" (the
 * decision) and, for a PodGroup, "statusMessage" (what the running scheduler last wrote).
 * json null when the pod is no gang member; NULL with err on an API or memory failure. */
json_t *sched_gang_explain(tm_kube *k, sched_framework *fw, sched_snapshot *snap, const json_t *pod,
                           const sched_keys *keys, tm_err *err);

/* explain: a single pod's preemption as the live scheduler runs it, a running gang a victim
 * only as a whole (sched_gang_live_set_preemption_units): reads every placed gang member and
 * its PodGroup or Workload from the API server into r (empty, the caller's, to be freed after
 * fw), adds DefaultPreemption to fw when missing and sets its units over r. 0, or -1 with err. */
int sched_gang_explain_units(tm_kube *k, sched_framework *fw, sched_gang_registry *r, tm_err *err);

#endif
