/* solve.c: heuristic first, then the ILP when asked and small enough (solve.h). */
#include "planner/solve.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "planner/heuristic.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int pl_solve(const pl_problem *p, pl_solver solver, double time_limit_s, pl_plan *plan,
             pl_outcome *out, tm_err *err) {
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    if (pl_heuristic(p, plan, err) < 0)
        return -1;
    if (pl_plan_check(p, plan, err) < 0)
        return tm_err_wrap(err, "heuristic plan failed its check (a planner bug)");
    out->solver = "heuristic";
    out->heuristic_score = pl_plan_score(p, plan);
    out->bound = p->lower;
    out->bound_from = p->critical >= p->work_bound ? "critical-path" : "work";
    if (solver != PL_SOLVER_HEURISTIC) {
        pl_plan ilp_plan;
        if (pl_plan_init(&ilp_plan, p) < 0)
            return tm_err_set(err, "planner: out of memory");
        out->ilp_tried = 1;
        long cut = solver == PL_SOLVER_AUTO ? PL_ILP_MAX_COLS : PL_ILP_HARD_MAX_COLS;
        if (pl_ilp_solve(p, plan, time_limit_s, cut, &ilp_plan, &out->ilp, err) < 0) {
            pl_plan_free(&ilp_plan);
            return -1;
        }
        int have = out->ilp.status == PL_ILP_OPTIMAL || out->ilp.status == PL_ILP_FEASIBLE;
        if (have && pl_plan_check(p, &ilp_plan, err) < 0) {
            pl_plan_free(&ilp_plan);
            return tm_err_wrap(err, "ILP plan failed its check (a planner bug)");
        }
        if (have && pl_plan_score(p, &ilp_plan) <= out->heuristic_score + 1e-9) {
            pl_plan_free(plan);
            *plan = ilp_plan;
            out->solver = "ilp";
        } else {
            pl_plan_free(&ilp_plan);
        }
        if (out->ilp.bound > out->bound) {
            out->bound = out->ilp.bound;
            out->bound_from = "ilp";
        }
        if (solver == PL_SOLVER_ILP && !have) {
            if (out->ilp.status == PL_ILP_TOO_LARGE)
                return tm_err_set(err,
                                  "ILP: the model would have %ld columns, more than the %ld the "
                                  "planner builds; use --solver heuristic or auto",
                                  out->ilp.cols, PL_ILP_HARD_MAX_COLS);
            return tm_err_set(err,
                              "ILP: no plan within the time limit of %.0f s (try a longer "
                              "--time-limit or --solver auto)",
                              time_limit_s);
        }
        if (out->ilp.status == PL_ILP_OPTIMAL && !strcmp(out->solver, "ilp"))
            out->optimal = 1;
    }
    /* The objective in whole slots reaching the bound proves optimality for any solver. */
    if ((int)floor(pl_plan_score(p, plan) + 1e-9) <= out->bound)
        out->optimal = 1;
    out->seconds = now_s() - t0;
    return 0;
}
