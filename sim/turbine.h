/* turbine.h: WARP's turbine example in the simulator (docs/planner.md "The turbine example").
 *
 * 14 nodes of one type (36 cores, as WARP's test partition), background load from WARP's
 * generator (section 5.1: exponential inter-arrival at rate 1.30e-3/s, 1-4 nodes per job,
 * walltime from a two-component Gaussian mixture with means 12 and 60 minutes, capped at 60),
 * and the turbine workflow (LES: 2 nodes 15 min, then HPDA: 5 nodes 30 min) submitted at a fixed
 * time into that load, run two ways with the same engine, scheduler and load:
 *   planned: the planner's solver (pl_solve) plans both steps over the occupancy at submission
 *            (the running jobs until their walltimes end) and the simulator holds the planned
 *            windows with Reservations (the sim's reservation support), so the steps start in
 *            their windows;
 *   plain:   each step's gang is submitted when its predecessor ends (no reservations).
 * Every job, background or step, takes whole nodes (one pod of 30 cores per node). */
#ifndef TAREMA_SIM_TURBINE_H
#define TAREMA_SIM_TURBINE_H

#include <stdint.h>

#include "lib/error.h"

#define SIM_TURBINE_NODES    14
#define SIM_TURBINE_RATE     1.30e-3     /* background arrivals per second */
#define SIM_TURBINE_SUBMIT_S (12 * 3600) /* the workflow's submission: 12 h into the load */
#define SIM_TURBINE_TAIL_S   (4 * 3600)  /* background arrivals go on this long after it */

/* One step as it ran; window = the planned reservation (NAN for plain). */
typedef struct sim_turbine_step {
    double ready, start, end;
    double win_start, win_end;
    char phase[16]; /* reservation phase (Released, Expired, Failed), "" for plain */
} sim_turbine_step;

typedef struct sim_turbine_run {
    sim_turbine_step les, hpda;
    double makespan;      /* HPDA end - LES start, seconds */
    double submit_to_end; /* HPDA end - submission, seconds */
} sim_turbine_run;

typedef struct sim_turbine_result {
    uint64_t seed;
    int background_jobs;
    int busy_nodes_at_submit; /* nodes running background jobs at submission */
    double planned_end_s;     /* the plan's HPDA end, seconds after submission */
    const char *solver;       /* "ilp" or "heuristic" */
    int optimal;
    sim_turbine_run planned, plain;
} sim_turbine_result;

/* One seed of the experiment. 0, or -1 with err. */
int sim_turbine_run_seed(uint64_t seed, sim_turbine_result *out, tm_err *err);

/* tarema-sim turbine [--seeds N] [--seed N] [--json] [--svg FILE]: argv[0] is "turbine". */
int sim_turbine_main(int argc, char **argv);

#endif
