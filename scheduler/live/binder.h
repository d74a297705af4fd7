/* binder.h: the scheduler's writes to the API server, all asynchronous on the kube loop so a
 * scheduling decision never waits on the network:
 *   - bind: POST pods/{name}/binding, then a `Scheduled` event (events.k8s.io/v1) on success;
 *   - unschedulable: PodScheduled=False reason Unschedulable on the pod's status (strategic
 *     merge patch of pods/{name}/status, merged by condition type) and a `FailedScheduling`
 *     Warning event carrying kube-scheduler's "0/N nodes are available: ..." message.
 * Many binds are in flight at once; the outcome of each comes back through the result callback
 * on the loop thread. A bind whose outcome is unknown (no HTTP status, or a 5xx) may have bound
 * the pod: the binder reads the pod back (retrying until the API server answers) and reports
 * what it finds, so the caller keeps its reservation until the truth is known. Events and status
 * patches are best effort (a failure is logged, never retried), as in kube-scheduler. */
#ifndef TAREMA_SCHED_BINDER_H
#define TAREMA_SCHED_BINDER_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "lib/kube.h"
#include "scheduler/framework/framework.h"

/* A bind finished. err NULL: the pod is bound to node (status 201, also when an unknown outcome
 * was read back as bound). Otherwise the pod is not bound to node: status is the refusal's HTTP
 * status (409 also when a read-back found it bound elsewhere, 404 when the pod is gone), or the
 * unknown outcome's status (0 or 5xx) when the read-back found it unbound. Loop thread. */
typedef void (*sched_bind_result_fn)(void *ud, const char *ns, const char *name, const char *uid,
                                     const char *node, int status, const tm_err *err);

typedef struct sched_binder sched_binder;

/* scheduler_name and identity go into the events (reportingController, reportingInstance).
 * k is borrowed. NULL on OOM. Free with sched_binder_free after tm_kube_free (a freed client
 * never calls back, and the binder then frees what the unanswered requests held). */
sched_binder *sched_binder_new(tm_kube *k, const char *scheduler_name, const char *identity,
                               sched_bind_result_fn on_result, void *ud);
void sched_binder_free(sched_binder *b);
/* Several profiles: names[i] (borrowed, NULL-terminated) reports the events of the pods of
 * profile i (sched_pod.profile), as kube-scheduler's per-profile recorders. */
void sched_binder_set_profiles(sched_binder *b, const char *const *names);

/* Starts binding p to node (strings copied). 0, or -1 with err when the request could not be
 * started (the result callback is then not called). */
int sched_binder_bind(sched_binder *b, const sched_pod *p, const char *node, tm_err *err);

/* Reports that p fits nowhere: condition + event with message (kube-scheduler's wording). */
int sched_binder_unschedulable(sched_binder *b, const sched_pod *p, const char *message,
                               tm_err *err);

/* Gangs: an event (events.k8s.io/v1) about any object (a PodGroup, a Workload, a pod; uid may
 * be NULL), and a JSON merge patch of path (a PodGroup's status subresource). Best effort like
 * the rest: a failure of the request is logged. 0, or -1 with err when it cannot be started. */
int sched_binder_event(sched_binder *b, const char *api_version, const char *kind, const char *ns,
                       const char *name, const char *uid, const char *type, const char *reason,
                       const char *note, tm_err *err);
int sched_binder_merge_patch(sched_binder *b, const char *path, const json_t *patch, tm_err *err);
/* The same merge patch through any client (the extender has no binder). */
int sched_merge_patch_async(tm_kube *k, const char *path, const json_t *patch, tm_err *err);

/* The client the binder writes through (borrowed; NULL for b NULL). */
tm_kube *sched_binder_kube(const sched_binder *b);

/* Binds started whose outcome is not known yet (unanswered, or being read back). */
size_t sched_binder_inflight(const sched_binder *b);
/* Of those, the ones whose answer left the outcome unknown and are being read back. */
size_t sched_binder_verifying(const sched_binder *b);
/* Binds so far whose outcome had to be read back. */
size_t sched_binder_unknown_total(const sched_binder *b);
/* Does a bind answered with this HTTP status (0 = none) leave its outcome unknown? */
bool sched_binder_outcome_unknown(int status);

/* The PodScheduled=False status patch body (new reference), exposed for tests; generation > 0
 * is written as the condition's observedGeneration. */
json_t *sched_binder_condition_patch(const char *message, const char *now_rfc3339,
                                     int64_t generation);

#endif
