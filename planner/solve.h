/* solve.h: choosing the solver and the answer's figures (pure).
 *
 * The heuristic always runs first: its plan is the ILP's first incumbent and sets the ILP's
 * horizon. auto: the ILP when the model is within PL_ILP_MAX_COLS, its plan when it has one in
 * the time limit, else the heuristic's; ilp: the ILP whatever its size, an error when it finds
 * no plan in time; heuristic: the heuristic only. The lower bound is the best of the critical
 * path, the work bound (core- and memory-slots over the cluster's capacity) and the ILP's best
 * bound. */
#ifndef TAREMA_PLANNER_SOLVE_H
#define TAREMA_PLANNER_SOLVE_H

#include "planner/ilp.h"
#include "planner/problem.h"

typedef enum { PL_SOLVER_AUTO = 0, PL_SOLVER_ILP, PL_SOLVER_HEURISTIC } pl_solver;

typedef struct pl_outcome {
    const char *solver;     /* "ilp" or "heuristic": which produced the plan */
    int optimal;            /* proven optimal for the objective */
    int bound;              /* lower bound on the objective in slots */
    const char *bound_from; /* "ilp", "critical-path" or "work" */
    int ilp_tried;
    pl_ilp_result ilp;
    double heuristic_score; /* the heuristic's objective in slots (tie-break included) */
    double seconds;
} pl_outcome;

/* plan must be pl_plan_init'ed. Returns 0, or -1 with err. */
int pl_solve(const pl_problem *p, pl_solver solver, double time_limit_s, pl_plan *plan,
             pl_outcome *out, tm_err *err);

#endif
