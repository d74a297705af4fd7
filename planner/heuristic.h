/* heuristic.h: the planner's fast, always feasible solver.
 *
 * Serial schedule generation: steps in a precedence-feasible list ordered by critical-path
 * priority (longest path from the step to the workflow's end first); each step starts at the
 * earliest slot, at or after its predecessors' ends, where its whole gang fits on nodes for its
 * whole walltime. Then forward-backward improvement (justification, Valls et al. 2005): a
 * backward pass moves every step as late as its successors allow (in decreasing end order), a
 * forward pass moves it back as early as its predecessors allow (in increasing start order,
 * not before the backward plan's first start when the objective is the makespan); the best plan
 * by the objective is kept, and passes repeat while they improve it. The backward pass is what
 * closes WARP's gaps: a step that would wait for its successor's capacity is started later
 * instead. Pure code. */
#ifndef TAREMA_PLANNER_HEURISTIC_H
#define TAREMA_PLANNER_HEURISTIC_H

#include "planner/problem.h"

/* Fills plan (pl_plan_init'ed by the caller). Returns 0, or -1 with err (out of memory). */
int pl_heuristic(const pl_problem *p, pl_plan *plan, tm_err *err);

#endif
