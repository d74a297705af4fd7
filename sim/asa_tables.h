/* asa_tables.h: the ASA paper's Tables 1 and 2 as a simulation (issue 18, docs/asa.md):
 * workflows shaped like Montage (9 stages), BLAST (2) and Statistics (4) at six peak sizes (28,
 * 56, 112, 160, 320, 640 cores), each run under four strategies against the same simulated
 * queue draws:
 *   bigjob     one request of the peak size held for the whole workflow;
 *   perstage   each stage requested when its predecessor completes (on completion);
 *   asa        each stage's request released (ungated) at the predicted end of its predecessor
 *              minus the wait ASA estimates for its shape (tuned learner per shape, fed by every
 *              wait observed, warmed on the queue first as ASA learns from other users); a grant
 *              before the predecessor ends is held idle until it does (never out of order);
 *   reserve    the planner's reservations: one wait for the peak size, then every stage at its
 *              planned time, each held for its runtime rounded up to the planner's slot.
 * Measures makespan (submit to end), core-hours held, total perceived wait, and for ASA the hit
 * and miss (over-prediction) ratios and the idle core-hours misses cost. Pure: no I/O. */
#ifndef TAREMA_SIM_ASA_TABLES_H
#define TAREMA_SIM_ASA_TABLES_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"

#define ASA_TAB_WORKFLOWS  3
#define ASA_TAB_SIZES      6
#define ASA_TAB_STRATEGIES 4

typedef enum { ASA_TAB_BIGJOB, ASA_TAB_PERSTAGE, ASA_TAB_ASA, ASA_TAB_RESERVE } asa_tab_strategy;

typedef struct asa_tab_cell {
    double twt_s;      /* total perceived queue wait per run (mean) */
    double makespan_s; /* submit to end (mean) */
    double core_h;     /* core-hours held (mean) */
} asa_tab_cell;

typedef struct asa_tab_asa {
    double real_wt_s, est_wt_s, pwt_s; /* per stage request: true wait, ASA's estimate, perceived */
    double hit, miss;                  /* ratios over stage requests after the first */
    double oh_core_h;                  /* idle held core-hours per run from early grants (mean) */
} asa_tab_asa;

typedef struct asa_tables {
    int runs;
    int policy;     /* asa_policy of the learners */
    int free_early; /* an early grant costs nothing until the predecessor ends (Slurm's job
                       dependencies, the paper's setting) instead of holding its cores */
    uint64_t seed;
    asa_tab_cell cell[ASA_TAB_WORKFLOWS][ASA_TAB_SIZES][ASA_TAB_STRATEGIES];
    asa_tab_asa asa[ASA_TAB_WORKFLOWS][ASA_TAB_SIZES];
} asa_tables;

const char *asa_tab_workflow_name(int w);
const char *asa_tab_strategy_name(int s);
int asa_tab_size(int i); /* peak cores */

/* Runs every workflow x size x strategy `runs` times (1..1000) with ASA learners of the given
 * asa_policy (labeler/asa.h). Deterministic per seed. */
int asa_tables_run(asa_tables *t, int runs, uint64_t seed, int policy, int free_early, tm_err *err);
json_t *asa_tables_json(const asa_tables *t);
void asa_tables_print(FILE *out, const asa_tables *t);

#endif
