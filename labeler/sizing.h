/* sizing.h: how much of one resource to allocate to a workflow task, learnt from the peaks of
 * the tasks that finished before it (pure: no I/O, no globals).
 *
 * Strategies (Phung et al., "Not All Tasks Are Created Equal", WORKS 2021, section V; the paper
 * is ../shared/papers/task-resource-bucketing.txt):
 *   whole-machine  every attempt gets the whole machine.
 *   double         first attempt 1/8 of a machine, doubled after each failure, capped at the
 *                  machine (1/8, 1/4, 1/2, 1).
 *   declared       the user's declaration (the evaluation sets it 5 % over the true maximum);
 *                  a failure is retried on a whole machine.
 *   quantized      buckets from the sorted history: bucket i of n ends at the value at the
 *                  (i/n)-th percentile (nearest rank); the sequence is the upper delimiters.
 *   kmeans         n even buckets of the sorted history, then Lloyd iterations (bucket means,
 *                  every value to the closest mean) until stable; delimiters = bucket maxima.
 *   greedy         (beyond the paper: cctools' greedy bucketing, reimplemented from its
 *                  published description) top-down splitting of the history: a bucket is split
 *                  at the value that lowers the expected waste of the retry chain most, while
 *                  any split lowers it.
 *   exhaustive     (cctools' exhaustive bucketing) the delimiters, among at most
 *                  SZ_EXHAUSTIVE_CANDIDATES candidate values, whose retry chain has the lowest
 *                  expected waste: an exact dynamic programme over all bucket counts.
 *   vpa            Kubernetes VPA recommender's rule: P90 of the recorded peaks x 1.15; an OOM
 *                  bumps to max(failed + bump_min, failed x 1.2) and records that as a sample.
 * Every history strategy (quantized .. vpa) allocates the whole machine to the first
 * cold_start tasks (10 in the paper), buckets are recomputed whenever a task finished since the
 * last allocation, a failed task gets the next bucket above the allocation it failed with and
 * the whole machine after the last bucket.
 *
 * Expected waste of a chain d_1 < ... < d_k (greedy, exhaustive): a task whose peak v lies in
 * (d_{j-1}, d_j] fails on d_1..d_{j-1} and succeeds on d_j, wasting
 * (d_1 + ... + d_{j-1} + d_j - v) x t (the paper's failed allocation + internal fragmentation).
 * Summed over the history with runtime weights w = t this is
 *   sum_i d_i x W(v > d_{i-1}) - sum w v        (d_0 = -inf),
 * so a delimiter costs its value times the runtime of every task that reaches it.
 *
 * Bad input never crashes and never yields more than the machine: a NaN, infinite or negative
 * peak is refused (sz_alloc_record returns -1, the history is unchanged), a peak above the
 * machine is recorded as the machine, a missing or bad runtime weighs 1, a missing or bad
 * declaration falls back to the whole machine, and every allocation is clamped to
 * [0, machine]. */
#ifndef TAREMA_LABELER_SIZING_H
#define TAREMA_LABELER_SIZING_H

#include <stdbool.h>
#include <stddef.h>

#include "labeler/sizing_bucketing.h"
#include "lib/error.h"

typedef enum {
    SZ_WHOLE_MACHINE = 0,
    SZ_DOUBLE,
    SZ_DECLARED,
    SZ_QUANTIZED,
    SZ_KMEANS,
    SZ_GREEDY,
    SZ_EXHAUSTIVE,
    SZ_VPA,
    SZ_NSTRATEGIES
} sz_strategy;

/* "whole-machine", "double", ... as in the JSON of `tarema-sim sizing`. */
const char *sz_strategy_name(sz_strategy s);
/* The strategy of that name, or -1. */
int sz_strategy_parse(const char *name);
/* True for the strategies whose allocation depends on the history (quantized .. vpa). */
bool sz_strategy_uses_history(sz_strategy s);
/* True for the strategies that take a bucket count n (quantized, kmeans). */
bool sz_strategy_uses_buckets(sz_strategy s);

typedef struct sz_config {
    sz_strategy strategy;
    double machine;      /* one machine's capacity in this resource, finite and > 0 */
    double declared;     /* the user's declaration for this key; NAN when there is none */
    int buckets;         /* n of quantized and kmeans, 1..SZ_MAX_BUCKETS */
    int cold_start;      /* tasks given the whole machine before the history is used, >= 0 */
    double double_first; /* double's first attempt as a fraction of the machine, (0, 1] */
    double vpa_bump_min; /* VPA's absolute OOM bump in this resource's unit (100 MiB), >= 0 */
    double vpa_margin;   /* VPA's safety margin factor (1.15) */
    double vpa_pct;      /* VPA's target percentile (0.9) */
} sz_config;

/* The paper's settings: n = 1, cold start 10, double from 1/8, VPA P90 x 1.15 with no
 * absolute bump (set vpa_bump_min to 100 MiB in bytes for memory). */
void sz_config_default(sz_config *c, sz_strategy s, double machine);

/* The allocation state of one (key, resource): key is a workflow (levels 1, 2) or a process
 * (level 3). */
typedef struct sz_alloc sz_alloc;

/* A new state, or NULL with err naming the bad setting. */
sz_alloc *sz_alloc_new(const sz_config *c, tm_err *err);
void sz_alloc_free(sz_alloc *a);

/* Feeds one finished attempt: its peak, runtime in any unit (the weight of greedy and
 * exhaustive), and whether it succeeded. A failed attempt's peak is the allocation it was
 * killed at (only VPA learns from it). Returns 0, or -1 for a refused peak. */
int sz_alloc_record(sz_alloc *a, double peak, double runtime, bool success);

/* The allocation of a new task's first attempt. */
double sz_alloc_first(sz_alloc *a);
/* The allocation of the next attempt of a task whose last attempt failed with `failed`:
 * always more than failed (up to the machine), the machine when nothing is above. */
double sz_alloc_retry(sz_alloc *a, double failed);

/* Successful samples recorded so far (VPA also counts its OOM samples). */
size_t sz_alloc_count(const sz_alloc *a);
/* The current sequence of first-attempt-and-retry allocations below the machine (the
 * buckets' upper delimiters, increasing) into out[0..max-1]; returns how many there are (0
 * during the cold start and for the info-oblivious strategies). */
int sz_alloc_buckets(sz_alloc *a, double *out, int max);

#endif
