/* sizing_eval.h: `tarema-sim sizing`: replays a dataset of task peaks through every sizing
 * strategy (labeler/sizing.h) at the paper's levels of information and scores them with the
 * paper's Waste Reduction Ratio and Average Task Efficiency.
 *
 * Replay (the paper's simulation, section VI): tasks run one after the other in dataset order;
 * each task is allocated from the history of the tasks before it, retried until it fits, and
 * its peak enters the history when it succeeds. An attempt fails when any resource's peak
 * exceeds its allocation; the next attempt moves every resource to its next allocation. Per
 * resource r and task i with runtime t, peak p and attempts a_1..a_k (a_k the successful one):
 *   waste_i = (a_1 + ... + a_{k-1}) t + (a_k - p) t       (failed allocation + fragmentation)
 *   WRR     = 1 - sum waste (strategy) / sum waste (whole machine)
 *   ATE     = mean over tasks of p t / ((a_1 + ... + a_k) t)
 * (the paper's c_i / a_i, the allocation counting every attempt: that is what reproduces its
 * double-allocation row; see docs/sizing.md). Both in percent.
 *
 * Levels (section VI): 1 = no information (one history per workflow, n = 1 bucket); 2 = the
 * number of task types known (one history, n = number of types); 3 = every task's type known
 * (one history per type, n = 1). The info-oblivious strategies and the user declaration have no
 * level (NULL in JSON, -1 here); greedy, exhaustive and VPA take no n, so they are scored at
 * levels 1 and 3 (their level 2 is level 1). */
#ifndef TAREMA_SIM_SIZING_EVAL_H
#define TAREMA_SIM_SIZING_EVAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "labeler/sizing.h"
#include "lib/error.h"

enum { SZ_CORES = 0, SZ_MEMORY, SZ_DISK, SZ_NRES };

typedef struct sim_sz_task {
    int type;             /* index into the dataset's types */
    double runtime;       /* seconds, > 0 */
    double peak[SZ_NRES]; /* cores, bytes, bytes; NAN when not measured */
} sim_sz_task;

typedef struct sim_sz_dataset {
    char name[256];
    int ntypes;
    char (*types)[128]; /* process names, or "mode-1".. for the synthetic mixtures */
    size_t n, cap;
    sim_sz_task *tasks;
    double machine[SZ_NRES]; /* 16 cores, 64 GiB, 64 GiB */
    int cold_start;          /* tasks per key on the whole machine before the history is
                                used; 0 = the paper's 10 (the webhook's default is 2) */
} sim_sz_dataset;

/* Names of the synthetic datasets, NULL-terminated. */
const char *const *sim_sz_synthetic_names(void);
/* The named synthetic dataset (2,000 tasks, memory drawn from the distribution documented in
 * docs/sizing.md, every task using `cores` cores and 60 s), or -1 with err. */
int sim_sz_synthetic(sim_sz_dataset *d, const char *name, uint64_t seed, double cores, tm_err *err);
/* A Nextflow trace or lotaru CSV (by extension, as the simulator reads them: sim_meas_read):
 * one task per completed row in file order, typed by process; cores = %cpu / 100, memory =
 * peak_rss. Rows without a peak_rss are skipped. Returns 0 or -1 with err. */
int sim_sz_load_file(sim_sz_dataset *d, const char *path, tm_err *err);
/* Appends a task of the named type (made on first use). Returns 0 or -1 with err. */
int sim_sz_add(sim_sz_dataset *d, const char *type, double runtime, const double peak[SZ_NRES],
               tm_err *err);
void sim_sz_dataset_free(sim_sz_dataset *d);

typedef struct sim_sz_result {
    sz_strategy strategy;
    int level;                         /* 1..3, or -1 for none */
    double wrr[SZ_NRES], ate[SZ_NRES]; /* percent; NAN for an unmeasured resource */
    long failures;                     /* failed attempts over all tasks */
    double waste[SZ_NRES];             /* total waste, unit x seconds (bytes x s for memory);
                                          NAN for an unmeasured resource */
    long oom;                          /* failed attempts in which memory ran out (the OOM
                                          kills a cluster would see) */
} sim_sz_result;

/* Scores one strategy at one level (-1 when it takes none). Returns 0 or -1 with err. */
int sim_sz_evaluate(const sim_sz_dataset *d, sz_strategy s, int level, sim_sz_result *out,
                    tm_err *err);
/* Every strategy at every level it has, into out (room for SIM_SZ_MAX_RESULTS); returns how
 * many, or -1 with err. */
#define SIM_SZ_MAX_RESULTS 16
int sim_sz_evaluate_all(const sim_sz_dataset *d, sim_sz_result *out, tm_err *err);

/* The allocation chain each process would get next after the whole dataset (level 3): its
 * greedy buckets and its VPA target, memory and cores. */
typedef struct sim_sz_recommendation {
    const char *type;
    long tasks;
    double max_peak[SZ_NRES];
    int nbuckets[SZ_NRES];
    double buckets[SZ_NRES][8];
    double vpa[SZ_NRES];
} sim_sz_recommendation;
/* One per type into out[0..d->ntypes-1]. Returns 0 or -1 with err. */
int sim_sz_recommend(const sim_sz_dataset *d, sim_sz_recommendation *out, tm_err *err);

void sim_sz_report_table(FILE *f, const sim_sz_dataset *d, const sim_sz_result *r, int n,
                         const sim_sz_recommendation *rec);
/* {"dataset": ..., "tasks": ..., "results": [...], "recommendations": [...]}; new reference. */
json_t *sim_sz_report_json(const sim_sz_dataset *d, const sim_sz_result *r, int n,
                           const sim_sz_recommendation *rec);
/* The paper's Figure 6: every task's memory peak in dataset order and the delimiters of
 * quantized and k-means bucketing (n = number of types, at least 2) as they evolve, one
 * panel each. Returns 0 or -1 with err. */
int sim_sz_svg(const char *path, const sim_sz_dataset *d, tm_err *err);

#endif
