/* bound.h: the shortest makespan any policy could reach for a workflow run, so that a result can
 * say how much room a workload leaves (issue 16: is a target reachable at all here?).
 *
 * Every runtime model of the simulator only slows a task down (each contention factor is >= 1)
 * and a task's noise draw does not depend on its node, so no task can run faster than its
 * runtime on the fastest node type it fits. The scheduler never places more requests on a node
 * than it holds. And under contention a node never processes more cpu-bound work than its cores:
 * with demand D above the cores C, task i runs at rate 1 / (1 + w_i (D / C - 1)) or slower, so
 *   sum_i u_i min(1, w_i) rate_i  <=  sum_i u_i / (D / C)  =  C,
 * u_i the cores it uses and w_i its compute share (the calibrated model's fitted sensitivity, the
 * ideal model's declared one); below C it is at most D < C. So a run cannot end before
 *   max( its critical path with every task at that fastest runtime,
 *        sum of requested cores x fastest runtime / the cluster's cores,
 *        sum of requested memory x fastest runtime / the cluster's memory,
 *        with contention: sum of u x min(1, w) x runtime (least over the types it fits)
 *                         / the cluster's cores )
 * after its arrival. The bound ignores queueing behind other runs, gangs and reservations, so it
 * is loose where those bite (shared runs above all); loose is still sound: no policy beats it. */
#ifndef TAREMA_SIM_BOUND_H
#define TAREMA_SIM_BOUND_H

#include <stdbool.h>

#include "sim/model.h"

/* What instance inst of p needs at least, before its noise draw (the caller multiplies both by
 * it): *fastest_s, its runtime (sim_runtime_fitted when calibrated, else sim_runtime) on the
 * fastest node type of c whose cores and memory hold its requests, and *cpu_work, the least
 * u x min(1, w) x runtime over those types (core-seconds; 0 without contention, when nothing
 * bounds it). Both NAN when no type holds its requests. */
void sim_bound_task(const sim_cluster *c, const sim_workflow *wf, const sim_process *p, int inst,
                    bool calibrated, bool contention, double *fastest_s, double *cpu_work);

/* One run's bound and the work behind it. */
typedef struct sim_bound_run {
    double bound_s;  /* the bound above */
    double core_s;   /* requested cores x fastest runtime, summed */
    double mem_s;    /* requested bytes x fastest runtime, summed */
    double cpu_work; /* the cpu work term's numerator (0 without contention) */
} sim_bound_run;

/* The bound above for one run of wf on a cluster of cores and memory (sim_bound_capacity).
 * fastest[k] and cpu_work[k] are task k's, tasks laid out as one run's are: process p's
 * instances from off[p] on (the sum of the earlier processes' instances). finish is scratch of
 * one double per task of the run (each task's earliest finish is left there). */
sim_bound_run sim_bound_run_of(const sim_workflow *wf, const long *off, double cores, double memory,
                               const double *fastest, const double *cpu_work, double *finish);

/* The cluster's cores (in whole millicores, as the scheduler counts them) and memory (bytes),
 * the capacities the bounds divide by. */
void sim_bound_capacity(const sim_cluster *c, double *cores, double *memory);

/* Workflows sharing the cluster, each with chained runs (start, then each run `gap` after the
 * previous one ended): however a policy orders them, the j-th workflow to finish its measured
 * runs has done at least the j smallest workloads (in each of core, memory and cpu work) since
 * the earliest start, so with completion rank j workflow i's mean makespan is at least
 *   (earliest start + that work / capacity - start_i - (runs_i - 1) gap_i) / runs_i,
 * and never below its runs' own mean bound. This returns the least geometric mean of the
 * workflows' mean makespans those two facts allow, over every completion order (exact, by
 * dynamic programming over subsets): a lower bound of any policy's geometric mean, tighter than
 * the runs' own bounds when the workflows compete for the cluster.
 * w[i] describes workflow i: mean_bound (its runs' mean bound, > 0), the sums over its measured
 * runs of core_s, mem_s and cpu_work, offset = start_i + (runs_i - 1) gap_i relative to the
 * earliest start, runs. NAN when n is 0 or above SIM_BOUND_JOINT_MAX, a mean bound is not
 * positive, a workflow has no run, or memory runs out: the caller then falls back to the runs'
 * own bounds, sound either way, only looser. */
#define SIM_BOUND_JOINT_MAX 16
typedef struct sim_bound_wf {
    double mean_bound, core_s, mem_s, cpu_work, offset;
    int runs;
} sim_bound_wf;
double sim_bound_joint_geomean(const sim_bound_wf *w, int n, double cores, double memory);

#endif
