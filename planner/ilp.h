/* ilp.h: the planner's exact solver: WARP's ILP (1a)-(1l) extended to heterogeneous nodes and
 * to cores and memory per node, solved with GLPK's branch and cut under a time limit.
 *
 * Variables (H slots, horizon from the heuristic's plan, see ilp.c):
 *   s[i,d,t] binary, step i starts in slot t and lasts d slots, d one of its walltimes per
 *            node group (pl_step_walltimes; one d when every group has the same, WARP's s[i,t]),
 *            t in [ES_i, LS_i - (d - w_i)] (its dependency window); WARP's z[i,s] (running in
 *            slot s) follows as the sum of s[i,d,t] over t in (s - d, s], so (1b) and (1i),
 *            "exactly d slots", hold by construction. A pod on a group slower than d rules d
 *            out (x[i,n] <= cap * starts with d >= w_n): a gang lasts its slowest group's
 *            walltime
 *   x[i,n]   integer, pods of step i on node n (nodes where one pod fits, any node group)
 *   q[i,n,u] continuous, = x[i,n] when i runs in slot u, else 0 (linearised product), only for
 *            (node, slot) pairs where the steps that might run there could overload it
 *   T, t     end and start of the workflow, (1c) (1d) (1l)
 * Constraints: each step starts once; its gang is placed (sum_n x = pods); dependencies
 * S_k >= S_i + w_i (1e); capacity per node per slot in milli-cores and KiB (1h); T >= S_i + w_i;
 * t <= S_i. Objective (1a): min T - t + eps*T (of the compact plans the earliest), or with
 * objective end: min T + eps*(T - t). eps < 1/H so it never trades a whole slot. */
#ifndef TAREMA_PLANNER_ILP_H
#define TAREMA_PLANNER_ILP_H

#include "planner/problem.h"

typedef enum {
    PL_ILP_OPTIMAL = 0, /* proven optimal */
    PL_ILP_FEASIBLE,    /* a plan, optimality not proven in time */
    PL_ILP_NONE,        /* no plan in time (or the LP relaxation did not finish) */
    PL_ILP_TOO_LARGE    /* over the size cut-off, not attempted */
} pl_ilp_status;

/* Auto mode does not try the ILP when it would have more than this many columns: GLPK's LP
 * relaxation alone takes seconds beyond it (measured in bench/planner_bench.c). */
#define PL_ILP_MAX_COLS 20000L
/* Even when asked for (--solver ilp), no larger model is built: one of 320,000 columns (300
 * steps on 14 nodes) took 17 s (7 s CPU) to build and not finish its LP relaxation under a
 * 10 s limit; building is not interrupted by the limit. */
#define PL_ILP_HARD_MAX_COLS 200000L

typedef struct pl_ilp_result {
    pl_ilp_status status;
    int bound;       /* lower bound on the objective (makespan or end) in slots, or -1 */
    long cols, rows; /* model size */
    int horizon;     /* slots */
    double seconds;  /* wall time of the solve */
} pl_ilp_result;

/* Estimated columns of the model for a seed plan (before building it). */
long pl_ilp_estimate_cols(const pl_problem *p, const pl_plan *seed);

/* Solves the ILP with seed (a feasible plan, the heuristic's) as the first incumbent and to set
 * the horizon. max_cols <= 0: no cut-off. out (pl_plan_init'ed) gets the ILP's plan when the
 * status is OPTIMAL or FEASIBLE. Returns 0, or -1 with err (out of memory, GLPK failure). */
int pl_ilp_solve(const pl_problem *p, const pl_plan *seed, double time_limit_s, long max_cols,
                 pl_plan *out, pl_ilp_result *res, tm_err *err);

#endif
