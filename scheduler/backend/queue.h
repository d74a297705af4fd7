/* queue.h: the scheduling queue of the live scheduler, kube-scheduler's three queues in one:
 *
 *   active         pods ready to be tried, a heap ordered by the policy's queue-sort
 *   backoff        pods that failed recently, waiting until attempts-based backoff expires
 *                  (initial * 2^(attempts-1), capped at max), ordered by that time
 *   unschedulable  pods for which no node fitted; they wait for a cluster change
 *                  (sched_queue_move_all) or the periodic flush, then go through backoff
 *
 *   gated          pods a PreEnqueue check (the gate hook: SchedulingGates) keeps out of the
 *                  queue; only an update of the pod itself that passes the check lets it in,
 *                  straight to active without backoff (cluster changes and flushes ignore it)
 *
 * Queue age (issue 18, ASA's pro-active submission): the queue-sort compares created_ms, and
 * the queue's copy of a pod carries there the time the pod joined the queue: its creation for
 * a pod never gated; for a pod created gated, the moment the queue first saw it free of every
 * gate but the ones the held hook accepts (the planner's order gate): such a "held" pod stays
 * gated (never tried, never bound) but its age counts from then, so when its last gate goes it
 * is placed ahead of every pod that joined after it, and a pod ungated late (on-completion)
 * queues behind the pods that arrived meanwhile. The joining time is set once per uid.
 *
 * plus the pods currently being scheduled or bound ("in flight"), which stay known so that a
 * watch update of such a pod does not queue it a second time. Each pod is in exactly one of
 * these states. Keyed by pod uid.
 *
 * Pure data structure: no I/O, no locks, no clock (now_ms comes in). One thread uses it (the
 * loop thread of the scheduler). */
#ifndef TAREMA_SCHED_QUEUE_H
#define TAREMA_SCHED_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/backend/pod.h"

typedef enum {
    SCHED_Q_NONE = 0, /* not in the queue */
    SCHED_Q_ACTIVE,
    SCHED_Q_BACKOFF,
    SCHED_Q_UNSCHEDULABLE,
    SCHED_Q_IN_FLIGHT,
    SCHED_Q_GATED
} sched_q_state;

/* Order of the active heap: negative when a goes first. */
typedef int (*sched_queue_cmp_fn)(void *ud, const sched_pod *a, const sched_pod *b);

typedef struct sched_queue sched_queue;

/* initial_backoff_ms/max_backoff_ms as in the config. NULL on OOM. Free with sched_queue_free
 * (frees every pod it holds). */
sched_queue *sched_queue_new(sched_queue_cmp_fn cmp, void *ud, int64_t initial_backoff_ms,
                             int64_t max_backoff_ms);
void sched_queue_free(sched_queue *q);

/* The gate hook: true when pod must wait out of the queue (kube-scheduler's PreEnqueue at
 * add time). NULL (the default) gates nothing. */
typedef bool (*sched_queue_gate_fn)(void *ud, const sched_pod *pod);
void sched_queue_set_gate(sched_queue *q, sched_queue_gate_fn gate, void *ud);

/* The held hook: true for a gated pod that already counts as queued (its age starts, it stays
 * gated). NULL (the default): no gated pod counts as queued before its last gate goes. */
void sched_queue_set_held(sched_queue *q, sched_queue_gate_fn held, void *ud);

/* The wall clock of the joining times: wall ms = now_ms + offset_ms (default 0: the now_ms
 * given to the queue are wall times). created_ms is a wall time. */
void sched_queue_set_wall_offset(sched_queue *q, int64_t offset_ms);

/* When the pod joined the queue (wall ms, queue age above); 0 when unknown or not yet. */
int64_t sched_queue_since(const sched_queue *q, const char *uid);

/* Adds a pending pod, or updates one already known (same uid): the queue takes ownership of
 * pod in both cases (the older copy is freed). A new pod goes to active; an updated pod keeps
 * its state, except that an unschedulable pod whose spec changed may fit now and moves to
 * backoff (or active when its backoff has expired), as kube-scheduler does on pod updates.
 * A pod the gate hook holds goes (or stays) gated, whatever its state except in flight; a gated
 * pod the hook lets through goes to active at once.
 * Returns 0, or -1 on OOM (pod freed). */
int sched_queue_add(sched_queue *q, sched_pod *pod, int64_t now_ms);

/* Forgets a pod (deleted, bound, or no longer ours) in whatever state. 0, -1 when unknown. */
int sched_queue_remove(sched_queue *q, const char *uid);

/* Moves backoff pods whose time has come to active, then takes the first active pod and marks
 * it in flight. With no active pod, the backoff pod that was unschedulable and whose backoff
 * ends first is taken at once (kube-scheduler's SchedulerPopFromBackoffQ, KEP-5142, on by
 * default since 1.33: backoff spaces out retries while other pods wait, it does not keep an
 * idle scheduler idle); a pod backing off after an error waits its backoff out. Returns the
 * pod (borrowed: valid until the pod is updated, removed or freed) or NULL when no pod is
 * ready. */
sched_pod *sched_queue_pop(sched_queue *q, int64_t now_ms);
/* Pop from backoff as above (true, the default) or only once backoff ends (false). */
void sched_queue_set_pop_from_backoff(sched_queue *q, bool on);
/* Re-sorts the active heap after what the order depends on changed outside the queue (the
 * adaptive policy's rank reads TaskProfiles, which may arrive after the pods they rank). */
void sched_queue_reorder(sched_queue *q);

/* Takes one queued pod (active, backoff or unschedulable, whatever its backoff) and marks it in
 * flight, as pop does: a gang's cycle takes every waiting member together with the popped one.
 * NULL when the uid is unknown or already in flight. */
sched_pod *sched_queue_take(sched_queue *q, const char *uid);

/* Takes an in-flight pod out of the queue until an update lets it through the gate hook
 * (PreEnqueue found it gated at pop time): no attempt counted, no backoff. -1 when the uid is
 * unknown or not in flight. */
int sched_queue_gate(sched_queue *q, const char *uid);

/* Outcomes of an in-flight pod (no-ops returning -1 when the uid is unknown or not in flight,
 * e.g. the pod was deleted meanwhile):
 *  done           bound: forget it
 *  backoff        an error (bind failed, conflict): retry after its backoff
 *  unschedulable  nothing fitted: wait for a cluster change */
int sched_queue_done(sched_queue *q, const char *uid);
int sched_queue_backoff(sched_queue *q, const char *uid, int64_t now_ms);
int sched_queue_unschedulable(sched_queue *q, const char *uid, int64_t now_ms);

/* Whether a FailedScheduling outcome with this message should be reported (event and
 * PodScheduled condition) now: yes the first time, when the message changed, or when the same
 * one was last reported repeat_ms ago or more; records it when yes. Like kube-scheduler, which
 * does not rewrite an unchanged condition and folds repeated events into a series: a pod
 * retried after every cluster change would otherwise cost two API calls per retry. */
bool sched_queue_should_report(sched_queue *q, const char *uid, const char *message, int64_t now_ms,
                               int64_t repeat_ms);

/* The cluster changed (capacity freed, a node added or changed): every unschedulable pod
 * moves to backoff (active if its backoff already expired). Returns how many moved. */
size_t sched_queue_move_all(sched_queue *q, int64_t now_ms);
/* The same for the unschedulable pods match(ud, pod) says yes for (kube-scheduler's queueing
 * hints: only the pods an event can help). */
size_t sched_queue_move_matching(sched_queue *q, int64_t now_ms,
                                 bool (*match)(void *ud, const sched_pod *p), void *ud);
/* The pod (unschedulable now) failed for capacity alone: on every node NodeResourcesFit, or a
 * filter no pod's leaving changes (readiness, unschedulable, taints, node affinity). Cleared
 * by its next failure (sched_queue_unschedulable). */
void sched_queue_set_capacity_only(sched_queue *q, const char *uid);
/* Bound pods released capacity and nothing else changed: the capacity-only pods move when
 * helps(ud, pod) says the release can help them (a node where they fit now, ...), every other
 * unschedulable pod moves (kube-scheduler's NodeResourcesFit hint, narrowed to the nodes that
 * changed for the pods nothing else holds back). Returns how many moved. */
size_t sched_queue_move_released(sched_queue *q, int64_t now_ms,
                                 bool (*helps)(void *ud, const sched_pod *p), void *ud);
/* Moves the pods unschedulable since at least max_age_ms ago, as the periodic flush does. */
size_t sched_queue_flush_unschedulable(sched_queue *q, int64_t now_ms, int64_t max_age_ms);

/* Milliseconds until the first backoff pod is due (0 when one is due now), -1 when none. */
int64_t sched_queue_next_backoff_ms(const sched_queue *q, int64_t now_ms);

/* The pods waiting to be placed (active, backoff and unschedulable: not gated, not in flight),
 * in queue order (the queue-sort, as if all were active; ties in the order the pods joined the
 * queue), at most cap of them into out (borrowed: valid until the queue changes). Returns how
 * many were written. For the backfill planner (issue 32), which needs the whole queue in order,
 * not only the next pod. */
size_t sched_queue_waiting(const sched_queue *q, const sched_pod **out, size_t cap);

/* The same with the held pods among them (gated, but already queued: sched_queue_set_held),
 * in their queue place: for the backfill plan of pods released early (bf_job.not_before_ms). */
size_t sched_queue_waiting_held(const sched_queue *q, const sched_pod **out, size_t cap);
sched_q_state sched_queue_state(const sched_queue *q, const char *uid);
const sched_pod *sched_queue_get(const sched_queue *q, const char *uid); /* borrowed, NULL */
int sched_queue_attempts(const sched_queue *q, const char *uid); /* failed attempts so far */
size_t sched_queue_count(const sched_queue *q, sched_q_state state);

/* Backoff of a pod after `attempts` failures: initial * 2^(attempts-1), capped. */
int64_t sched_queue_backoff_ms(const sched_queue *q, int attempts);

#endif
