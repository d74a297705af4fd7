/* asa.h: one ASA learner (Souza et al., "ASA - The Adaptive Scheduling Algorithm", Algorithm 1):
 * a distribution p over m = 53 candidate queue waiting times, learned in rounds from the loss of
 * the sampled candidate. Pure code: no I/O, no globals; the caller owns the random state.
 *
 *   asa_learner l; asa_learner_init(&l);
 *   asa_config c; asa_config_default(&c, ASA_POLICY_TUNED);
 *   int a = asa_sample(&l, &rng);                // the estimate acted on: asa_alternative(a)
 *   ... submit the request asa_alternative(a) seconds ahead, later observe its true wait ...
 *   asa_observe(&l, &c, a, true_wait_s, &rng, &err);
 *
 * Every constant and where it comes from in the paper: docs/asa.md. */
#ifndef TAREMA_LABELER_ASA_H
#define TAREMA_LABELER_ASA_H

#include <stdint.h>

#include "lib/error.h"

/* Section 4.3: m = 53 alternatives, the largest ~28 h (100k s). */
#define ASA_M          53
#define ASA_MAX_WAIT_S 100000.0
/* Algorithm 1 line 3: a round collects cases while max_a l_ta <= 1. */
#define ASA_ROUND_BOUND 1.0
/* Section 4.5: the tuned policy's repetition parameter, "same value used for ... Figure 5". */
#define ASA_TUNED_REPETITIONS 50
/* Not in the paper: the estimate for a shape never observed is 0 s, i.e. submit on completion
 * (the per-stage strategy), which never holds idle capacity. */
#define ASA_DEFAULT_ESTIMATE_S 0.0
/* Not in the paper: a numeric guard so that no alternative's probability reaches exactly 0 (a
 * zero can never grow back under a multiplicative update, which would end the adaptation to a
 * changed queue that Figure 5 shows). 1e-12 is ~5e-11 per draw over all 53: invisible. */
#define ASA_P_FLOOR 1e-12

typedef enum {
    ASA_POLICY_NAIVE, /* section 4.4 "ASA's default": one sampled case per observed wait */
    ASA_POLICY_TUNED, /* section 4.4 "ASA tuned": each observed wait is replayed as
                         `repetitions` sampled cases */
    ASA_POLICY_FULL,  /* not in the paper: every alternative is charged its loss against each
                         observed wait (the wait is known, so the feedback is full, not a
                         bandit's), one observed wait per round, then line 7's update. Algorithm 1
                         charges only sampled alternatives and does not weight by p, so with a
                         noisy queue p stays near uniform (docs/asa.md, "Tables 1 and 2");
                         this one settles on the alternative with the least loss. */
} asa_policy;

typedef enum {
    ASA_LOSS_HIT,  /* definition (3): 0 when the sampled alternative is the one closest to the
                      true wait, else 1 (the loss of the paper's evaluation and Figure 5) */
    ASA_LOSS_TIME, /* section 3.2: idle allocated time when the request started too early,
                      extra makespan when too late, relative to the larger of the two times so
                      it lies in [0, 1] like definition (3) (the proof needs bounded losses);
                      0 for the closest alternative, as in definition (3) */
} asa_loss_kind;

typedef struct asa_config {
    asa_policy policy;
    asa_loss_kind loss;
    int repetitions; /* cases per observed wait: 1 for naive, ASA_TUNED_REPETITIONS for tuned */
    /* gamma_t = max(gamma_min, gamma0 * t^-gamma_decay) for round t >= 1: non-increasing as
     * section 3.2 requires. Default gamma0 = 1, decay 0: the constant 1 of appendix A's proof. */
    double gamma0, gamma_decay, gamma_min;
} asa_config;

typedef struct asa_learner {
    double p[ASA_M];          /* the distribution over the alternatives, sums to 1 */
    double round_loss[ASA_M]; /* l_ta of the current round, each <= ASA_ROUND_BOUND */
    long long round;          /* t of Algorithm 1, from 1 */
    long long cases;          /* observed waits fed in */
    long long samples;        /* sampled cases (with the tuned policy's replays) */
} asa_learner;

/* The random state: splitmix64, owned by the caller (one per thread). */
typedef struct asa_rng {
    uint64_t s;
} asa_rng;

void asa_rng_seed(asa_rng *r, uint64_t seed);
double asa_rng_uniform(asa_rng *r); /* [0, 1) */

/* The i-th alternative in seconds (0 <= i < ASA_M, ascending); 0 when i is out of range. */
double asa_alternative(int i);
/* The index of the alternative closest to wait_s (ties go to the smaller: an under-estimate
 * only costs wait, an over-estimate holds capacity); -1 when wait_s is negative or NaN. */
int asa_closest(double wait_s);
/* The loss of acting on alternative `action` when the request really waited wait_s: in [0, 1];
 * 1 (the worst) for an invalid action or wait. */
double asa_loss(asa_loss_kind kind, int action, double wait_s);

void asa_config_default(asa_config *c, asa_policy policy);
int asa_config_check(const asa_config *c, tm_err *err);
/* gamma_t for round t (t < 1 is taken as 1). */
double asa_gamma(const asa_config *c, long long t);

const char *asa_policy_name(asa_policy p);
int asa_policy_parse(const char *name, asa_policy *out);
const char *asa_loss_name(asa_loss_kind k);
int asa_loss_parse(const char *name, asa_loss_kind *out);

/* p uniform (Algorithm 1 line 0), round 1, no loss. */
void asa_learner_init(asa_learner *l);
/* Algorithm 1 line 4: draws an alternative's index according to p. */
int asa_sample(const asa_learner *l, asa_rng *r);
/* The most probable alternative (lowest index on ties). */
int asa_mode(const asa_learner *l);
/* Feeds one observed wait: the loss of `acted` (the alternative the request was submitted with;
 * -1 when none was, e.g. another user's pod: one is sampled, as line 4 does) and, with the tuned
 * policy, repetitions - 1 more cases sampled from the current p and scored against the same
 * wait. Whenever an alternative's round loss exceeds the bound the round ends: p is updated
 * (line 7) and the round reset. Returns the number of rounds ended, or -1 (state unchanged)
 * when wait_s is negative, NaN or infinite, acted is out of range, or the config is invalid. */
int asa_observe(asa_learner *l, const asa_config *c, int acted, double wait_s, asa_rng *r,
                tm_err *err);
/* Line 7 alone: p_a <- exp(-gamma_t l_ta) p_a / N_t, the round's losses reset, t + 1. */
void asa_end_round(asa_learner *l, const asa_config *c);
/* Whether a state (e.g. loaded from a store) is one the algorithm can reach: every p finite and
 * > 0, summing to 1 within 1e-6, every round loss finite in [0, bound], counters >= 0. */
int asa_learner_check(const asa_learner *l, tm_err *err);

#endif
