/* asa_scenario.h: the convergence scenario of the ASA paper's Figure 5 (section 4.4): 1000
 * requests to a simulated queue whose true wait changes at iterations 0, 200, 400, 600 and 800;
 * each request is submitted with an estimate sampled from the learner, then its true wait is
 * observed and fed back. Records the estimate against the truth and the hit ratio per segment. */
#ifndef TAREMA_SIM_ASA_SCENARIO_H
#define TAREMA_SIM_ASA_SCENARIO_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "labeler/asa.h"

#define ASA_FIG5_ITERATIONS 1000
#define ASA_FIG5_SEGMENTS   5
/* A segment has converged once this many estimates in a row are hits. */
#define ASA_FIG5_RUN 10

typedef struct asa_fig5_iter {
    double true_s, estimate_s;
    int hit; /* the estimate is the alternative closest to the truth (definition (3) loss 0) */
} asa_fig5_iter;

typedef struct asa_fig5_segment {
    int start, end;      /* iterations [start, end) */
    double true_s;       /* the queue's true wait in this segment */
    double optimal_s;    /* the alternative closest to it */
    double hit_ratio;    /* estimates equal to optimal_s */
    double over_ratio;   /* estimates above the truth: Table 2's "miss" (re-submission) */
    double under_ratio;  /* estimates below the truth: only extra perceived wait */
    int converged_after; /* iterations from start to the first ASA_FIG5_RUN hits in a row; -1 */
} asa_fig5_segment;

typedef struct asa_fig5 {
    asa_config cfg;
    uint64_t seed;
    asa_fig5_iter it[ASA_FIG5_ITERATIONS];
    asa_fig5_segment seg[ASA_FIG5_SEGMENTS];
    double hit_ratio, over_ratio;
} asa_fig5;

/* Runs the scenario with a fresh learner: deterministic for a given config and seed. */
int asa_fig5_run(asa_fig5 *out, const asa_config *cfg, uint64_t seed, tm_err *err);

/* {"scenario", "policy", "loss", "seed", "alternatives_s", "iterations": [{"i", "true_s",
 *  "estimate_s", "hit"}], "hit_ratio", "over_ratio", "segments": [...]}: new reference. */
json_t *asa_fig5_json(const asa_fig5 *f);
void asa_fig5_table(FILE *out, const asa_fig5 *f);
/* The truth (blue dashed steps) and the estimate on a log time axis, as an SVG file. */
int asa_fig5_svg(const char *path, const asa_fig5 *f, tm_err *err);

#endif
