/* backfill_sim.h: a job mix of narrow pods and wide pods and gangs on a cluster of identical
 * nodes, scheduled by the scheduler's own framework and Backfill plugin
 * (scheduler/plugins/backfill/backfill_plugin.h) under four queue disciplines, to measure what
 * holding the head of the queue costs and brings (docs/backfill.md):
 *   first-fit     every pending job in queue order that fits now starts; nothing is held (what
 *                 kube-scheduler does: a wide job waits until a gap happens to open)
 *   fifo          strict first come, first served: the queue stops at the first job that does
 *                 not fit
 *   easy          backfill.reserveDepth 1: the first job that does not fit gets a shadow, any
 *                 other starts only where it delays it
 *   conservative  reserveDepth all: every waiting job gets a shadow
 * Jobs arrive as a Poisson stream; users give an expected runtime (the pods' annotation
 * tarema.io/expected-duration) that over-estimates the real one by a factor drawn from
 * [1, overestimate]; the plan uses the estimate, the clock the real runtime. A gang starts
 * whole or not at all. Deterministic for a seed. */
#ifndef TAREMA_SIM_BACKFILL_SIM_H
#define TAREMA_SIM_BACKFILL_SIM_H

#include <stdint.h>

#include "lib/error.h"

typedef enum { SIM_BF_FIRST_FIT = 0, SIM_BF_FIFO, SIM_BF_EASY, SIM_BF_CONSERVATIVE } sim_bf_mode;
#define SIM_BF_MODES 4
const char *sim_bf_mode_name(sim_bf_mode m);

typedef struct sim_bf_mix {
    int nodes, cores;    /* identical nodes of `cores` cores */
    int jobs;            /* how many jobs arrive */
    double load;         /* offered load: core-seconds arriving per second / total cores */
    double wide_share;   /* share of jobs that are wide (a whole-node pod or a gang) */
    double overestimate; /* estimates are real x U[1, overestimate] */
    uint64_t seed;
    const char *policy; /* node choice among the feasible (sched_policy_names) */
} sim_bf_mix;

/* 16 nodes of 8 cores, 2,000 jobs at load 0.9, 10 % wide, estimates up to 3x, fill-nodes. */
sim_bf_mix sim_bf_mix_default(void);

typedef struct sim_bf_result {
    sim_bf_mode mode;
    double makespan_s;                        /* first arrival to last end */
    double utilisation;                       /* core-seconds used / (cores x makespan) */
    double wait_mean_s, wait_p99_s;           /* every job */
    double wide_wait_mean_s, wide_wait_max_s; /* wide jobs only */
    double narrow_wait_mean_s;
    long backfilled; /* jobs started while an earlier job of the queue was waiting */
} sim_bf_result;

/* Runs the mix under one mode. 0, or -1 with err. */
int sim_bf_run(const sim_bf_mix *mix, sim_bf_mode mode, sim_bf_result *out, tm_err *err);

/* tarema-sim backfill [...]: argv[0] is "backfill" (sim/backfill_cli.c). */
int sim_backfill_main(int argc, char **argv);

#endif
