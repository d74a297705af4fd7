/* sizing_plan.h: one process's sizing plan, learnt from its history (pure: no I/O, no globals).
 *
 * A plan holds, per resource (cores, memory), the allocation state of sizing.h after feeding
 * it the process's successful runs, for the strategy chosen by configuration, or chosen on
 * that history: the candidate whose replay of the same history wasted least (the paper's
 * simulation: tasks in history order, each retried until it fits, waste = failed allocations +
 * internal fragmentation, each times the runtime), per resource. Two candidate sets:
 *   "paper" (the default): the paper's history strategies, quantized and k-means, each with
 *           n = 1..SZ_PLAN_PAPER_MAX_N buckets;
 *   "best": every history strategy (quantized and k-means with the configured n, and beyond
 *           the paper greedy, exhaustive and VPA's rule). The machine is the largest node, so
 * nothing a plan answers is larger than the largest node.
 *
 * Used by the admission webhook (labeler/webhook.c: what a task pod requests) and by the
 * TaskProfile writer (status.sizing: the buckets and the current recommendation). */
#ifndef TAREMA_LABELER_SIZING_PLAN_H
#define TAREMA_LABELER_SIZING_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "labeler/sizing.h"
#include "lib/error.h"

enum { SZ_RES_CORES = 0, SZ_RES_MEMORY, SZ_RES_N };

/* Chosen by replay among every history strategy ("best") or the paper's ("paper"). */
#define SZ_STRATEGY_BEST    (-1)
#define SZ_STRATEGY_PAPER   (-2)
#define SZ_PLAN_PAPER_MAX_N 4

/* "best", "paper" or a history strategy's name -> its value; -3 for anything else. */
int sz_plan_strategy_parse(const char *name);
const char *sz_plan_strategy_name(int strategy);

/* At most this many of the latest samples are replayed to choose a strategy (the choice costs
 * samples x strategies allocations; exhaustive, the slowest, recomputes its chain per sample). */
#define SZ_PLAN_MAX_REPLAY 500

typedef struct sz_plan_opts {
    int strategy;        /* a history sz_strategy, SZ_STRATEGY_BEST or SZ_STRATEGY_PAPER */
    double machine[2];   /* the largest node's allocatable cores and memory bytes, > 0 */
    int cold_start;      /* fewer successful samples than this: no recommendation (>= 1) */
    int buckets;         /* n of quantized and kmeans */
    double vpa_bump_min; /* memory: VPA's +100 MiB */
} sz_plan_opts;

/* The defaults: paper, cold start 2 (a single sample is no history), 1 bucket, VPA +100 MiB. */
void sz_plan_opts_default(sz_plan_opts *o, double machine_cores, double machine_bytes);

typedef struct sz_plan {
    long samples;                   /* successful runs with a usable figure (memory) */
    sz_strategy strategy[SZ_RES_N]; /* the strategy each resource uses */
    int n[SZ_RES_N];                /* its bucket count (quantized, kmeans; else 0) */
    sz_alloc *a[SZ_RES_N];          /* NULL for a resource without usable samples */
    double machine[SZ_RES_N];
    bool ready; /* samples >= cold_start: the plan recommends */
} sz_plan;

/* Builds the plan of one process from its successful runs: cores[i] (cores used, %cpu/100),
 * bytes[i] (peak RSS), runtime[i] (any unit; NULL or a bad value weighs 1). NaN, negative or
 * infinite figures are skipped (absurd store rows); figures above the machine count as the
 * machine. Returns 0, or -1 with err on bad options (nothing to free then). After a successful
 * build the plan is read-only: sz_plan_first/retry may be called from several threads. */
int sz_plan_build(sz_plan *p, const sz_plan_opts *o, const double *cores, const double *bytes,
                  const double *runtime, size_t n, tm_err *err);
void sz_plan_free(sz_plan *p);

/* A new task's first allocation of resource r; NAN when the plan is not ready or the resource
 * has no samples. */
double sz_plan_first(const sz_plan *p, int r);
/* The allocation after an attempt failed with `failed` in resource r: the next bucket above,
 * the machine after the last (never more than the machine); NAN when not ready. */
double sz_plan_retry(const sz_plan *p, int r, double failed);

/* {"strategy": {"cores", "memory"}, "n": {"cores", "memory"} (null but for quantized and
 * kmeans), "samples", "ready", "buckets": {"cores": [...], "memoryBytes": [...]},
 * "recommendation": {"cores", "memoryBytes"} (null when not ready)}:
 * what TaskProfile status.sizing carries. New reference. */
json_t *sz_plan_json(const sz_plan *p);

#endif
