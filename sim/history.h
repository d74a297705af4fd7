/* history.h: one workflow's simulated monitoring history and the task labels the labeler
 * derives from it, kept incrementally so they are exact after every completed task.
 *
 * The live labeler relabels a workflow on every stored task run (labeler/serve.h), so the
 * simulator must too; calling lab_label_compute on the whole history after every completion
 * sorts it each time (O(n^2 log n) per workflow, most of a paper-sized run). Here every
 * feature's values sit in an order-statistics tree (a Fenwick tree over the values a sample
 * can take, which the simulator knows up front: a task's usage depends only on its process,
 * instance and node type), so an interval bound is O(log n) and a label O(groups).
 *
 * The arithmetic is the labeler's (labeler/labels.h): the percentile positions p_i come from
 * lab_bounds itself, a bound is the R type-7 quantile at p_i of the feature's samples (what
 * lab_quantile computes on the sorted values, reproduced here over the tree), a process's
 * estimate is the mean of its own samples and its label is lab_label of that estimate.
 * tests/unit/sim_history_test.c checks the result equals lab_label_compute on the same
 * samples after every insertion. */
#ifndef TAREMA_SIM_HISTORY_H
#define TAREMA_SIM_HISTORY_H

#include <stddef.h>

#include "labeler/labels.h"
#include "lib/error.h"

typedef struct sim_history sim_history;

/* A history for processes 0..nprocs-1 labelled against classes. universe[f] lists every value
 * feature f of a sample may carry (any order; duplicates and NANs are ignored), nuniverse[f]
 * entries. Returns a new history (free with sim_history_free) or NULL with err. */
sim_history *sim_history_new(int nprocs, const lab_classes classes[LAB_NFEATURES],
                             const double *const universe[LAB_NFEATURES],
                             const size_t nuniverse[LAB_NFEATURES], tm_err *err);
void sim_history_free(sim_history *h);

/* Records one completed run of process proc: its feature values (NAN when not measured) and
 * its realtime in ms. Returns 0, or -1 with err when a value is outside the universe. */
int sim_history_add(sim_history *h, int proc, const double value[LAB_NFEATURES], double realtime_ms,
                    tm_err *err);

/* Samples recorded so far. */
size_t sim_history_count(const sim_history *h);

/* Process proc's labels (1..n, 0 = unlabeled feature) and mean realtime (NAN without samples)
 * from the whole history, as lab_label_compute gives them. Returns proc's sample count (0, with
 * labels 0, for a process out of range). */
long sim_history_label(sim_history *h, int proc, int label[LAB_NFEATURES],
                       double *mean_realtime_ms);

#endif
