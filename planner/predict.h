/* predict.h: planning inputs from history and load (pure).
 *
 * Walltimes of `task: WORKFLOW/PROCESS` steps come from that TaskProfile: the mean runtime
 * (status.mean.realtimeMs, written by tarema-labeler) as the step's duration, and per node
 * group with runs (status.runtimeByGroup: runs >= 1, meanSeconds) that group's mean, rounded up
 * to a second. A group without runs gets the process mean: the planner never assumes a group
 * faster than runs measured on it (no extrapolation by group power). pl_step_slots (problem.h)
 * turns these into walltimes per group.
 *
 * WARP's load threshold (section 5): a workflow is planned only while the predicted load of
 * the cluster, the share of its cores already held over the workflow's critical path from
 * now, is below the threshold (WARP: 50 %). Off by default. */
#ifndef TAREMA_PLANNER_PREDICT_H
#define TAREMA_PLANNER_PREDICT_H

#include <jansson.h>

#include "planner/problem.h"
#include "planner/workflow.h"

/* Fills duration_s of every task step with a mean runtime in profiles (an array of
 * TaskProfile objects, may be NULL); returns how many task steps stayed unpredicted. */
int pl_predict_durations(pl_workflow *wf, const json_t *profiles);

/* Fills s->group_s from profile's status.runtimeByGroup (the measured groups only; entries
 * without a group id of 1-15 characters, runs >= 1 and meanSeconds in [0, a year], repeats and
 * those past PL_GROUPS_MAX are skipped); returns how many. */
int pl_predict_group_runtimes(pl_step *s, const json_t *profile);

/* Step s's walltime in seconds with its pods on these node groups (n of them): the slowest
 * group's (its runtime there, else duration_s); duration_s when n is 0. */
int64_t pl_step_seconds_on(const pl_step *s, const char *const *groups, int n);
/* Its walltime on its slowest group: the longest of duration_s and its group runtimes. */
int64_t pl_step_seconds_max(const pl_step *s);

/* Share (0..1) of the cluster's milli-cores the busy entries hold over slots [0, window). */
double pl_predicted_load(const pl_problem *p, int window);

#endif
