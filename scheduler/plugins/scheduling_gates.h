/* scheduling_gates.h: the SchedulingGates plugin (scheduling_gates.c), kube-scheduler's
 * PreEnqueue plugin of that name: a pod with a non-empty spec.schedulingGates is not
 * scheduled (no attempt, no FailedScheduling event, no bind the API server would refuse with
 * 409) until the last gate is removed; then it goes to the active queue at once, without
 * backoff. The planner gates the pods of a step with tarema.io/planned and lifts the gate when
 * the step's window opens (issue 15).
 *
 * The live loop checks sched_scheduling_gated when a pod is added or updated, so a gated pod is
 * never queued (queue.h's gate hook); the plugin, registered on every framework by
 * sched_framework_new, is the same check at PreEnqueue for the other callers (simulator,
 * extender, explain).
 *
 * One gate counts differently in the queue (issue 18): a pod whose only gate is the planner's
 * order gate (SCHED_ORDER_GATE, a proactive step's pods once the planner's own gate went) is
 * "held": it is still gated here, never tried and never bound (the API server refuses a bind to
 * a gated pod), but it has joined tarema's queue and its age counts from then (queue.h, queue
 * age), so that ASA's early submission saves queue time. Every other gate keeps the meaning
 * above. Pure. */
#ifndef TAREMA_SCHED_SCHEDULING_GATES_H
#define TAREMA_SCHED_SCHEDULING_GATES_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "lib/gates.h"
#include "scheduler/framework/framework.h"

#define SCHED_SCHEDULING_GATES_PLUGIN "SchedulingGates"

/* The planner's order gate (lib/gates.h, shared with planner/modes.h PL_GATE_ORDER). */
#define SCHED_ORDER_GATE TM_GATE_ORDER

/* Whether p is held: gated by the order gate alone. */
bool sched_scheduling_held(const sched_pod *p);

/* Whether p is gated; when yes and msg is not NULL, msg says by which gates. */
bool sched_scheduling_gated(const sched_pod *p, char *msg, size_t size);

/* Adds the plugin (PreEnqueue only) to fw. 0, or -1 with err. */
int sched_scheduling_gates_plugin_add(sched_framework *fw, tm_err *err);

#endif
