/* gates.h: the scheduling gate names tarema's components agree on (one definition: the
 * planner sets them, the scheduler and the labeler's waits feed read them). */
#ifndef TAREMA_LIB_GATES_H
#define TAREMA_LIB_GATES_H

/* A proactive step's second gate (docs/asa.md): the pod has joined tarema-scheduler's queue but
 * is not tried until the planner removes it, when every predecessor succeeded. */
#define TM_GATE_ORDER "tarema.io/after-predecessors"

#endif
