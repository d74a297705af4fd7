/* sim_turbine_test.c: WARP's turbine example in the simulator (sim/turbine.h) with fixed seeds:
 * the planned steps start inside the windows the planner's solver chose and the simulator held
 * with Reservations, HPDA starts right at LES's end, both steps run their walltimes, and plain
 * per-step submission submits HPDA when LES ends. Seed 7 is one where the load makes plain
 * HPDA wait (its 5 nodes are not free when LES ends), so the two strategies differ there. */
#include <math.h>

#include "harness.h"
#include "sim/turbine.h"

static void check_planned(uint64_t seed) {
    sim_turbine_result r;
    tm_err err = {0};
    CHECKF(sim_turbine_run_seed(seed, &r, &err) == 0, "seed %llu: %s", (unsigned long long)seed,
           err.msg);
    const sim_turbine_run *p = &r.planned;
    /* the windows are the plan's: LES's starts no earlier than the submission, HPDA's at LES's
     * planned end */
    CHECK(!isnan(p->les.win_start) && !isnan(p->hpda.win_start));
    CHECK(p->les.win_start >= SIM_TURBINE_SUBMIT_S);
    CHECK_NEAR(p->les.win_end - p->les.win_start, 900, 1e-6);
    CHECK_NEAR(p->hpda.win_end - p->hpda.win_start, 1800, 1e-6);
    CHECK_NEAR(p->hpda.win_start, p->les.win_end, 1e-6);
    CHECK_NEAR(r.planned_end_s, p->hpda.win_end - SIM_TURBINE_SUBMIT_S, 1e-6);
    /* the steps start inside (at the opening of) their windows */
    CHECKF(p->les.start >= p->les.win_start && p->les.start < p->les.win_end,
           "LES started %.0f outside [%.0f, %.0f)", p->les.start, p->les.win_start, p->les.win_end);
    CHECKF(p->hpda.start >= p->hpda.win_start && p->hpda.start < p->hpda.win_end,
           "HPDA started %.0f outside [%.0f, %.0f)", p->hpda.start, p->hpda.win_start,
           p->hpda.win_end);
    CHECK_NEAR(p->les.start, p->les.win_start, 1e-6);
    /* HPDA right at LES's end: no wait between the steps */
    CHECK_NEAR(p->hpda.start, p->les.end, 1e-6);
    CHECK_NEAR(p->les.end - p->les.start, 900, 1e-6);
    CHECK_NEAR(p->hpda.end - p->hpda.start, 1800, 1e-6);
    CHECK_NEAR(p->makespan, 2700, 1e-6);
    /* plain: LES at once or when nodes free up, HPDA submitted at LES's end */
    const sim_turbine_run *q = &r.plain;
    CHECK(isnan(q->les.win_start) && isnan(q->hpda.win_start));
    CHECK(q->les.start >= SIM_TURBINE_SUBMIT_S);
    CHECK_NEAR(q->hpda.ready, q->les.end, 1e-6);
    CHECK(q->hpda.start >= q->hpda.ready);
    CHECK(q->makespan >= 2700 - 1e-6);
    CHECK(r.background_jobs > 0);
}

static void planned_steps_start_in_their_windows(void) {
    for (uint64_t seed = 1; seed <= 3; seed++)
        check_planned(seed);
}

static void plain_waits_where_planned_does_not(void) {
    sim_turbine_result r;
    tm_err err = {0};
    CHECKF(sim_turbine_run_seed(7, &r, &err) == 0, "%s", err.msg);
    check_planned(7);
    CHECKF(r.plain.hpda.start > r.plain.hpda.ready + 60, "plain HPDA waited %.0f s",
           r.plain.hpda.start - r.plain.hpda.ready);
    CHECK(r.plain.makespan > r.planned.makespan);
}

static void deterministic_per_seed(void) {
    sim_turbine_result a, b;
    tm_err err = {0};
    CHECK(sim_turbine_run_seed(5, &a, &err) == 0);
    CHECK(sim_turbine_run_seed(5, &b, &err) == 0);
    CHECK_NEAR(a.plain.makespan, b.plain.makespan, 0);
    CHECK_NEAR(a.planned.submit_to_end, b.planned.submit_to_end, 0);
    CHECK_INT(a.background_jobs, b.background_jobs);
}

int main(void) {
    RUN(planned_steps_start_in_their_windows);
    RUN(plain_waits_where_planned_does_not);
    RUN(deterministic_per_seed);
    return TEST_SUMMARY();
}
