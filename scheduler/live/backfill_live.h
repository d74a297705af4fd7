/* backfill_live.h: time-aware backfill in the running scheduler (issue 32, docs/backfill.md).
 * The planning and the rule are pure (scheduler/plugins/backfill); this side feeds them from
 * live state and writes what comes out:
 *
 *   - the Backfill Filter plugin joins the live framework, keyed by job ("pod ns/name", or
 *     "gang <gang key>" for every member of a gang), so its reason names whom a node is held for;
 *   - at most once per backfill.resolution, when the queue or the cluster changed since the last
 *     plan (and at least every 10 resolutions, so overruns move the shadows), the plan is made
 *     over the cache's snapshot: every waiting pod of the queue in queue order (active, backoff
 *     and unschedulable; the waiting members of a gang as one job at its first member's place),
 *     at most maxJobTest jobs, each with the nodes its filters other than resources allow; every
 *     pod on a node with its expected end (resv_expected_end's rule from its start); the admitted
 *     Reservations' holds less what their owners' pods use;
 *   - each shadowed pod gets the annotation tarema.io/expected-start (RFC 3339 UTC), patched
 *     when it is new or moved by at least the resolution;
 *   - metrics: tarema_backfill_shadows, tarema_backfill_pods_total,
 *     tarema_backfill_plan_duration_seconds.
 *
 * Loop thread only, with the cache lock held. Only created when reserveDepth is not 0: with 0
 * the live scheduler runs exactly as without backfill. */
#ifndef TAREMA_SCHED_BACKFILL_LIVE_H
#define TAREMA_SCHED_BACKFILL_LIVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/gates.h"
#include "lib/error.h"
#include "lib/kube.h"
#include "lib/metrics.h"
#include "scheduler/backend/cache.h"
#include "scheduler/backend/queue.h"
#include "scheduler/live/config.h"
#include "scheduler/live/resv_controller.h"
#include "scheduler/plugins/gang/gang.h"

#define SCHED_EXPECTED_START_ANNOTATION "tarema.io/expected-start"
/* On a pod held by the order gate: when its predecessors are expected to end (lib/gates.h). The
 * plan gives such a pod a shadow from then (bf_job.not_before_ms). */
#define SCHED_NOT_BEFORE_ANNOTATION TM_ANN_NOT_BEFORE

typedef struct sched_backfill_live sched_backfill_live;

/* Adds the Backfill plugin to fw and registers the metrics in reg. Everything is borrowed and
 * must outlive it (gangs and resv may be NULL). NULL with err. */
sched_backfill_live *sched_backfill_live_new(const sched_config *cfg, tm_kube *k,
                                             sched_cache *cache, sched_queue *q,
                                             sched_framework *fw, sched_gang_registry *gangs,
                                             const resv_controller *resv, tm_metrics *reg,
                                             tm_err *err);
void sched_backfill_live_free(sched_backfill_live *b);

/* The queue is another scheduler's, observed (the extender's: kube-scheduler tries the pods):
 * none of its pods is ever found unschedulable here, so the plan is made whenever due, never
 * skipped as idle; and a job that held a shadow holds what it needs from now once it fits
 * (bf_job.hold_now) until it is bound, since kube-scheduler may try the pods behind it first. */
void sched_backfill_live_observe(sched_backfill_live *b);
/* quiet: plan (the Filter needs the plan) but write no tarema.io/expected-start. Extender
 * replicas all answer kube-scheduler from their own plans; only the holder of the Lease writes,
 * so that two replicas do not both patch every pod whose start moves. Since the annotation as
 * seen is tracked either way, a replica that takes over writes only the starts that moved. */
void sched_backfill_live_quiet(sched_backfill_live *b, bool quiet);
/* The Backfill Filter over this planner's plan in another framework (the extender's per-request
 * ones, called with the cache lock held): kube-scheduler's pods are kept off nodes where they
 * would delay a shadow (backfill_plugin.h, bf_plugin_add_borrowed). 0 or -1 with err. */
int sched_backfill_live_add_plugin(sched_backfill_live *b, sched_framework *fw, tm_err *err);
/* A pod informer event (cache lock held): expected durations, the annotation as written. */
void sched_backfill_live_pod_event(sched_backfill_live *b, tm_watch_type t, const json_t *obj);
/* Something the plan depends on changed (a node, a reservation, the queue). */
void sched_backfill_live_touch(sched_backfill_live *b);
/* Whether the last plan holds any shadow (false for NULL). */
bool sched_backfill_live_holding(const sched_backfill_live *b);
/* Plans the shadows when due (see above) before a batch of cycles; mono_ms for the rate,
 * wall_ms the plan's clock. true when it planned. */
bool sched_backfill_live_plan(sched_backfill_live *b, int64_t mono_ms, int64_t wall_ms);
/* A pod tried in this batch fits nowhere, and no preemption nominated it a node. The pods
 * behind it in the same batch would be tried against a plan that never saw it (the plan before
 * the batch is skipped while nothing had failed), and narrow pods created with a wide one would
 * take what it needs once. So plan now, before the next pod of the batch: at most once per
 * batch, and only when the plan has room for another shadow (reserveDepth) and its last
 * computation did not consider this pod's job (if it did, the pod has its shadow or cannot have
 * one). true when it planned. */
bool sched_backfill_live_unschedulable(sched_backfill_live *b, const sched_pod *pod,
                                       int64_t mono_ms, int64_t wall_ms);
/* After a batch: the backfilled-pods counter catches up with the plugin's count. */
void sched_backfill_live_after_batch(sched_backfill_live *b);

/* What the extender's Reserve did for one bind, for sched_backfill_live_bind_done. */
typedef struct sched_backfill_taken {
    bool placed;  /* remembered as bound until the informer sees it so (a plan counts it) */
    bool taken;   /* taken from the plan's shadows' spare */
    bool ahead;   /* a shadow of an earlier job was held: a backfilled pod once bound */
    uint64_t gen; /* the plan it was taken from (a later plan has nothing of it to give back) */
    int node;
    sched_resources req;
    int64_t end_ms;
    char key[600]; /* the job's key (the shadows' own key buffers are the plan's) */
    char uid[64];
} sched_backfill_taken;

/* The extender's Reserve, at its bind verb (kube-scheduler has chosen node for the pod of uid,
 * which this extender's informer saw wait; cache lock held, any thread). /filter passes a pod
 * against the plan as it is, but kube-scheduler may pass several before it binds any, and the
 * informer sees a bound pod only later: each of them alone would fit in a shadow's spare,
 * together they delay it. So the bind checks the pod against the plan on that node again, with
 * every pod bound through it since the plan taken from it, and takes this one (bf_plan_take);
 * until the informer sees it bound, every plan made meanwhile counts it on that node from now
 * (as a nominated pod), not as a waiting job. 1 with why (the shadow it would delay) when it
 * must not bind there, 0 otherwise (pods of a reservation's owner, not seen by the informer
 * yet, or for a node unknown here pass untouched). Per process: replicas behind one Service
 * each know the binds they made. */
int sched_backfill_live_bind_reserve(sched_backfill_live *b, const char *uid, const char *node,
                                     int64_t wall_ms, sched_backfill_taken *taken, char *why,
                                     size_t why_size);
/* After the bind (cache lock held): bound, the pod counts as backfilled when a shadow of an
 * earlier job was held; failed, what sched_backfill_live_bind_reserve took is given back (unless
 * a new plan has been made since) and the pod is a waiting job again. */
void sched_backfill_live_bind_done(sched_backfill_live *b, const sched_backfill_taken *t,
                                   bool bound);

#endif
