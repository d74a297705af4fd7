/* federation.h: the LEXIS DAM paper's simulation (Vitali et al., CISIS 2022, section 3.2):
 * 100 identical workflows of three linear jobs (pre-processing on a cloud partition, the
 * simulation on an HPC cluster, post-processing on a cloud partition) over a simulated
 * federation of two datacentres, placed by the greedy weighted mean (dam/rank.h, the same code
 * tarema-dam runs), at random, or round robin. Cluster occupancy and queue waits follow normal
 * distributions updated at Poisson times, as the paper's Monte Carlo model. docs/dam.md lists
 * every parameter the paper leaves unstated and our choice for it. */
#ifndef TAREMA_SIM_FEDERATION_H
#define TAREMA_SIM_FEDERATION_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

typedef enum { FED_GREEDY, FED_RANDOM, FED_ROUND_ROBIN, FED_NSTRATEGIES } fed_strategy;
const char *fed_strategy_name(fed_strategy s); /* "greedy", "random", "round-robin" */

#define FED_WORKFLOWS 100

typedef struct fed_result {
    double mean_s, stddev_s; /* over the workflows' times to solution */
    double time_s[FED_WORKFLOWS];
    int hpc_choices[16]; /* how many simulation jobs went to each HPC cluster */
} fed_result;

/* Runs one strategy on setup 1 or 2 with seed (the environment's random streams depend only on
 * the seed, so every strategy meets the same occupancy and queues). 0 or -1 with err. */
int fed_run(int setup, fed_strategy s, uint64_t seed, fed_result *out, tm_err *err);

/* The HPC clusters of the platform, in the order of fed_result.hpc_choices. */
size_t fed_hpc_count(void);
const char *fed_hpc_name(size_t i);

/* `tarema-sim federation --setup 1|2 [--seed N] [--json]`; argv[0] is "federation". Returns the
 * exit status (0, 1 failure, 2 usage). */
int sim_federation_main(int argc, char **argv);

#endif
