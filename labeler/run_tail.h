/* run_tail.h: each process's expected time from its task's end to the end of its workflow run,
 * from completed workflow runs (issue 16; TaskProfile status.tailSeconds, which the adaptive
 * policy adds to the task's runtime to rank the queue: the critical path first).
 *
 * A workflow run's end is its last task completion (any status: a failed task that ended last
 * still ended last). For process P and run r, tail(P, r) is the mean over P's COMPLETED tasks
 * in r of (end(r) - the task's completion); P's tail is the mean of tail(P, r) over the runs
 * where P completed a task, so a run with 100 samples weighs as much as one with 2.
 *
 * Why it estimates the tail of the critical path: everything still running when P's task ends
 * depends on P's output or runs beside it; the run ends when the longest chain of work after
 * P's task ends, and that chain is exactly what HEFT's upward rank (the simulator's
 * upward_tails: the longest expected path of successors) measures. Where it differs: the
 * measured time also contains queueing (successors waiting for room on a busy cluster), and
 * work independent of P that happened to end last (a sibling branch), so on a loaded cluster
 * or a wide workflow it overestimates the successor path; it never needs the DAG itself. The
 * same bias hits every process of the run, so the ranking between processes on one path (an
 * early one before a late one) still holds. Pure: no I/O. */
#ifndef TAREMA_LABELER_RUN_TAIL_H
#define TAREMA_LABELER_RUN_TAIL_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"

/* One stored task of a complete workflow run (the store decides completeness). */
typedef struct lab_tail_row {
    const char *run;     /* the workflow run (task_runs.run_name), borrowed */
    const char *process; /* borrowed */
    double complete_ms;  /* completion time (epoch ms); NAN when unknown: the row is skipped */
    bool completed;      /* status COMPLETED: only these get a tail */
} lab_tail_row;

typedef struct lab_tail {
    const char *process; /* borrowed from the rows */
    long runs;           /* complete workflow runs it comes from */
    double mean_s;       /* seconds */
} lab_tail;

/* The tail of every process with a completed task among rows[0..n), sorted by process name
 * (*nout of them; free the array with free()). NULL with err only when out of memory (n == 0
 * gives an empty, non-NULL array). */
lab_tail *lab_run_tails(const lab_tail_row *rows, size_t n, size_t *nout, tm_err *err);

/* The entry of process in tails[0..n) (sorted as lab_run_tails returns them), or NULL. */
const lab_tail *lab_run_tail_find(const lab_tail *tails, size_t n, const char *process);

#endif
