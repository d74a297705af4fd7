/* report.h: what the simulator prints: one policy's result as a table or JSON, the comparison
 * of several policies on the same input, and the Gantt chart SVG.
 *
 * Relative differences follow the paper: "tarema decreases the runtime by x %" with
 * x = 100 * (1 - tarema / other) per workflow (mean makespan over its runs), and the summary
 * over workflows is 100 * (1 - geometric mean of the ratios). */
#ifndef TAREMA_SIM_REPORT_H
#define TAREMA_SIM_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "lib/error.h"
#include "sim/engine.h"

void sim_report_table(FILE *out, const sim_result *r);
/* New reference. */
json_t *sim_report_json(const sim_result *r);

/* 1 - geometric mean over workflows of a.makespan / b.makespan (both results of the same
 * workload); positive when a is faster. */
double sim_report_decrease(const sim_result *a, const sim_result *b);

/* The headroom against b: 1 - the lower bound of the geometric mean over workflows of their
 * makespans (sim_result.bound_geomean, sim/bound.h) / b's, the largest geometric-mean decrease
 * against b that any policy could reach on this input. Where it is below a target, no policy
 * can meet that target here. (Per workflow, the tables use each workflow's own runs' bound.) */
double sim_report_headroom(const sim_result *b);

/* Comparison of results of different policies on the same workload; the reference policy (the
 * one the others are compared with) is "tarema" when present, else the first. */
void sim_report_compare_table(FILE *out, sim_result *const *rs, int n);
json_t *sim_report_compare_json(sim_result *const *rs, int n);

/* Results of n policies under nseeds seeds, rs[seed * n + policy]: mean makespans and the
 * decrease of tarema and of adaptive (when present) against every other policy, per workflow,
 * geometric mean and pooled standard baselines, each as mean and sample standard deviation
 * over the seeds; then the headroom (the lower bound's decrease) against every policy the same
 * way ("headroom" in the JSON). */
void sim_report_seeds_table(FILE *out, sim_result *const *rs, int n, int nseeds);
json_t *sim_report_seeds_json(sim_result *const *rs, int n, int nseeds);

/* Gantt chart of a result recorded with record_tasks: one row per node, nodes grouped by node
 * group (strongest on top), one lane per concurrently running task, a rectangle per task
 * coloured by process, time axis with ticks and a legend. Returns 0 or -1 with err. */
int sim_report_gantt(const char *path, const sim_result *r, tm_err *err);

#endif
