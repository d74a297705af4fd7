/* predict.h: planning inputs from history and load (pure).
 *
 * Walltimes of `task: WORKFLOW/PROCESS` steps come from that TaskProfile's mean runtime
 * (status.mean.realtimeMs, written by tarema-labeler). The TaskProfile holds one mean over all
 * node groups today, so every group gets the same prediction; pl_step_slots (problem.h) is
 * where a per-group runtime would enter the model.
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

/* Share (0..1) of the cluster's milli-cores the busy entries hold over slots [0, window). */
double pl_predicted_load(const pl_problem *p, int window);

#endif
