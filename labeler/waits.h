/* waits.h: what tarema keeps per job shape about queue waits: the shape's ASA learner
 * (labeler/asa.h) and the record of how its estimates fared (hits, over-predictions and the
 * idle time they would have cost, the observed waits). Pure code: the store (labeler/waits_store)
 * persists a record as JSON, one row per shape; the feed and `tarema-planner waits` use it.
 *
 *   waits_record r; waits_record_init(&r, &key);
 *   waits_observe(&r, &cfg, observed_wait_s, &rng, &err);   // scores the estimate, then learns
 *   double lead_s = waits_estimate(&r);                      // never negative, never NaN
 *   char *json = waits_state_to_json(&r); ... waits_state_from_json(json, &r2, &err);
 *
 * The estimate is the mode of p (the most probable alternative), not a draw: a prediction
 * shown to a user or written on a pod must not change from one look to the next. */
#ifndef TAREMA_LABELER_WAITS_H
#define TAREMA_LABELER_WAITS_H

#include "labeler/asa.h"
#include "labeler/asa_table.h"

/* The JSON document's version (a record per row). */
#define WAITS_STATE_VERSION 1

typedef struct waits_stats {
    long long observations; /* waits fed */
    long long scored;       /* of those, fed while the shape already had a learned estimate */
    long long hits;         /* scored ones whose estimate was the alternative closest to the wait
                               (definition (3)'s zero loss; Table 2's "hit") */
    long long overs;        /* scored ones whose estimate was above the wait (Table 2's "miss":
                               a request submitted that early holds idle capacity) */
    double over_s;          /* sum of estimate - wait over the overs */
    double under_s;         /* sum of wait - estimate over the scored ones below the wait */
    double wait_min_s, wait_max_s, wait_sum_s, last_wait_s; /* observed waits */
    double last_estimate_s; /* the estimate the last was scored on */
} waits_stats;

typedef struct waits_record {
    asa_key key;
    asa_learner l;
    waits_stats st;
} waits_record;

/* A fresh record: uniform learner, no observation. */
void waits_record_init(waits_record *r, const asa_key *k);

/* The lead time to predict for the shape: the most probable alternative once a wait was
 * observed, else ASA_DEFAULT_ESTIMATE_S. Never negative, never NaN. */
double waits_estimate(const waits_record *r);

/* The alternative at which p's cumulative probability first reaches q (0 < q <= 1): the
 * distribution's quantiles in seconds. */
double waits_quantile(const asa_learner *l, double q);

/* Scores the current estimate against wait_s (when the shape had one), then feeds the wait to
 * the learner (asa_observe, acted -1: the request carried no estimate). -1 with err and nothing
 * changed when wait_s is negative, NaN, infinite or beyond a year. */
int waits_observe(waits_record *r, const asa_config *c, double wait_s, asa_rng *rng, tm_err *err);

/* The hit and miss (over-prediction) ratios of the scored estimates, 0 when none was scored;
 * the over-prediction overhead in core-hours (idle time x pods x cores per pod). */
double waits_hit_ratio(const waits_record *r);
double waits_miss_ratio(const waits_record *r);
double waits_overhead_core_h(const waits_record *r);

/* The learner and the record (not the key, which the store keeps in columns) as a JSON
 * document, malloc'd (the caller frees); NULL when memory runs out. */
char *waits_state_to_json(const waits_record *r);

/* Reads a document of waits_state_to_json into r (whose key the caller set). -1 with err naming
 * what is wrong when it is not JSON, of another version or grid, or holds a state the algorithm
 * cannot reach (asa_learner_check) or absurd figures (negative counts, more hits than scored,
 * waits negative, NaN or min above max): r is then left a fresh record for its key. */
int waits_state_from_json(const char *text, waits_record *r, tm_err *err);

#endif
