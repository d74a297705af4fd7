/* gates.h: the scheduling gate names tarema's components agree on, and the annotation that goes
 * with the order gate (one definition: the planner sets them, the scheduler and the labeler's
 * waits feed read them). */
#ifndef TAREMA_LIB_GATES_H
#define TAREMA_LIB_GATES_H

/* A proactive step's second gate (docs/asa.md): the pod has joined tarema-scheduler's queue but
 * is not tried until the planner removes it, when every predecessor succeeded. */
#define TM_GATE_ORDER "tarema.io/after-predecessors"

/* On a pod held by that gate: RFC 3339 UTC, when its predecessors are expected to end (the
 * planner keeps it current; its step's status.predictedStart). tarema-scheduler's backfill plan
 * gives the pod a shadow from then, so the capacity it needs is free when the gate goes
 * (docs/backfill.md, "Pods released early"). */
#define TM_ANN_NOT_BEFORE "tarema.io/not-before"

/* On a proactive step's pod, written with its release: RFC 3339 UTC, ASA's release point (the
 * predecessors' predicted end minus the learned wait). A step released earlier (the planner's
 * release on start) has joined the queue before it: the labeler's waits feed counts a held
 * pod's wait from the later of the two, so that what ASA learns stays the wait of a request
 * that joins at ASA's point, not that plus the predecessors' run (docs/asa.md). */
#define TM_ANN_ASA_RELEASE "tarema.io/asa-release-at"

#endif
