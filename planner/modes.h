/* modes.h: how a workflow step is started (issue 18, Use). Pure decisions, no I/O:
 *  - reserve:       the planner's PodGroup + Reservation; gate removed when the window opens;
 *  - proactive:     ASA: pods created gated, the planner's gate removed at the predecessors'
 *                   predicted end minus the estimated queue wait of the step's shape, while a
 *                   second gate (PL_GATE_ORDER) keeps them from binding until every
 *                   predecessor succeeded: order is never violated;
 *  - on-completion: pods ungated once every predecessor succeeded (plain per-step).
 * A step without `mode` (auto) runs reserve when the cluster holds the workflow within the load
 * threshold, else proactive. */
#ifndef TAREMA_PLANNER_MODES_H
#define TAREMA_PLANNER_MODES_H

#include <stddef.h>
#include <stdint.h>

#include "labeler/waits.h"
#include "lib/gates.h"

/* The second gate of a proactive step: removed when every predecessor succeeded. */
#define PL_GATE_ORDER TM_GATE_ORDER

typedef enum pl_mode {
    PL_MODE_AUTO = 0,
    PL_MODE_RESERVE,
    PL_MODE_PROACTIVE,
    PL_MODE_ON_COMPLETION
} pl_mode;

/* "reserve", "proactive", "on-completion"; NULL or "" is auto. -1 for anything else. */
int pl_mode_parse(const char *s, pl_mode *out);
const char *pl_mode_name(pl_mode m);

/* The mode a step runs in: requested unless auto; auto is reserve when the threshold is off
 * (<= 0) or the predicted load is below it, else proactive. A NaN load counts as above. */
pl_mode pl_mode_choose(pl_mode requested, double predicted_load, double threshold);

/* When a proactive step's planner gate goes: the latest predicted end of its predecessors
 * minus the estimate, never before submitted (a step without predecessors: submitted). A
 * negative, NaN or infinite estimate counts as 0. */
int64_t pl_proactive_ungate_at(int64_t submitted, const int64_t *pred_end, int npred,
                               double estimate_s);

/* Which rule released a proactive step (the Released event says it). */
typedef enum { PL_RELEASE_ASA = 0, PL_RELEASE_ON_START = 1, PL_RELEASE_LEAD = 2 } pl_release_rule;

/* When a proactive step is released with release on start (the planner's --release-on-start, on
 * by default), given its ASA point asa_at (pl_proactive_ungate_at): once every
 * predecessor has started (pred_start[i] >= 0; a succeeded one counts with its start or end),
 * the step is released no later than the latest of those starts. Released, its pods stay behind
 * the order gate and hold no capacity, but they are in tarema-scheduler's queue with their
 * not-before, so its backfill keeps the cores they need from pods that would still run at their
 * predecessors' end: the earlier they are in, the fewer such pods (docs/asa.md, "Release on
 * start"). ASA's point (pl_proactive_ungate_at) stays when it is earlier. *rule (may be NULL):
 * the rule that decided, PL_RELEASE_ON_START or PL_RELEASE_ASA. */
int64_t pl_proactive_release_at(int64_t asa_at, int64_t submitted, const int64_t *pred_start,
                                int npred, pl_release_rule *rule);

/* The operator's lead (--release-lead): at, or lead_s before the predecessors' latest predicted
 * end when that is earlier (never before submitted), with *rule set to PL_RELEASE_LEAD then.
 * lead_s <= 0: at. */
int64_t pl_proactive_lead_at(int64_t at, int64_t submitted, const int64_t *pred_end, int npred,
                             int64_t lead_s, pl_release_rule *rule);

/* May the order gate go (the pods bind)? Only when every predecessor succeeded. */
int pl_order_satisfied(const int *pred_succeeded, int npred);

/* The estimate for shape k among recs (the store's list): the learned one of its record, else
 * ASA_DEFAULT_ESTIMATE_S; *learned (may be NULL) says which. Never negative, never NaN. */
double pl_mode_estimate(const waits_record *recs, size_t n, const asa_key *k, int *learned);

#endif
