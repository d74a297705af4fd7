/* asa.c: Algorithm 1 of the ASA paper as published (see asa.h and docs/asa.md). */
#include "labeler/asa.h"

#include <math.h>
#include <string.h>

/* Section 4.3: 53 alternatives up to 100k s, "multiples of 10's, 100's, 1k's, 10k's, and 100k
 * ... with higher number of alternatives assigned to values 10's and 100's". The paper does
 * not list them; this is the one grid that fits all three statements with a regular step:
 * steps of 5 s in the tens (17), of 50 s in the hundreds (17), then 1k..9k (9), 10k..90k (9)
 * and 100k (1). */
static const double ASA_ALTERNATIVES[ASA_M] = {
    10,   15,    20,    25,    30,    35,    40,    45,    50,    55,    60,    65,   70,   75,
    80,   85,    90,    100,   150,   200,   250,   300,   350,   400,   450,   500,  550,  600,
    650,  700,   750,   800,   850,   900,   1000,  2000,  3000,  4000,  5000,  6000, 7000, 8000,
    9000, 10000, 20000, 30000, 40000, 50000, 60000, 70000, 80000, 90000, 100000};

void asa_rng_seed(asa_rng *r, uint64_t seed) {
    r->s = seed;
}

double asa_rng_uniform(asa_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

double asa_alternative(int i) {
    return i >= 0 && i < ASA_M ? ASA_ALTERNATIVES[i] : 0.0;
}

int asa_closest(double wait_s) {
    if (!(wait_s >= 0)) /* also NaN */
        return -1;
    /* beyond the grid every distance rounds to the same double: the end is the closest */
    if (wait_s >= ASA_ALTERNATIVES[ASA_M - 1])
        return ASA_M - 1;
    int best = 0;
    for (int i = 1; i < ASA_M; i++)
        if (fabs(ASA_ALTERNATIVES[i] - wait_s) < fabs(ASA_ALTERNATIVES[best] - wait_s))
            best = i;
    return best;
}

double asa_loss(asa_loss_kind kind, int action, double wait_s) {
    if (action < 0 || action >= ASA_M || !(wait_s >= 0) || isinf(wait_s))
        return 1.0;
    if (action == asa_closest(wait_s))
        return 0.0; /* the best the grid can do: definition (3)'s zero, for both kinds */
    if (kind == ASA_LOSS_HIT)
        return 1.0;
    double a = ASA_ALTERNATIVES[action];
    /* a > wait: submitted a - wait too early, the allocation idles that long;
     * a < wait: submitted wait - a too late, the makespan grows by that much. */
    double idle = a > wait_s ? a - wait_s : 0, late = wait_s > a ? wait_s - a : 0;
    return (idle + late) / fmax(a, wait_s); /* a >= 10, so never 0/0 */
}

void asa_config_default(asa_config *c, asa_policy policy) {
    c->policy = policy;
    c->loss = ASA_LOSS_HIT;
    c->repetitions = policy == ASA_POLICY_TUNED ? ASA_TUNED_REPETITIONS : 1;
    c->gamma0 = 1.0;
    c->gamma_decay = 0.0;
    c->gamma_min = 1.0;
}

int asa_config_check(const asa_config *c, tm_err *err) {
    if (c->policy != ASA_POLICY_NAIVE && c->policy != ASA_POLICY_TUNED &&
        c->policy != ASA_POLICY_FULL)
        return tm_err_set(err, "asa: unknown policy %d", (int)c->policy);
    if (c->loss != ASA_LOSS_HIT && c->loss != ASA_LOSS_TIME)
        return tm_err_set(err, "asa: unknown loss %d", (int)c->loss);
    if (c->repetitions < 1 || c->repetitions > 10000)
        return tm_err_set(err, "asa: repetitions %d not in 1..10000", c->repetitions);
    if (!(c->gamma0 > 0 && c->gamma0 <= 100))
        return tm_err_set(err, "asa: gamma0 %g not in (0, 100]", c->gamma0);
    if (!(c->gamma_decay >= 0 && c->gamma_decay <= 1))
        return tm_err_set(err, "asa: gamma decay %g not in [0, 1]", c->gamma_decay);
    if (!(c->gamma_min > 0 && c->gamma_min <= c->gamma0))
        return tm_err_set(err, "asa: gamma_min %g not in (0, gamma0 = %g]", c->gamma_min,
                          c->gamma0);
    return 0;
}

double asa_gamma(const asa_config *c, long long t) {
    double g = c->gamma0 * pow((double)(t < 1 ? 1 : t), -c->gamma_decay);
    return g > c->gamma_min ? g : c->gamma_min;
}

const char *asa_policy_name(asa_policy p) {
    return p == ASA_POLICY_TUNED ? "tuned" : p == ASA_POLICY_FULL ? "full" : "naive";
}

int asa_policy_parse(const char *name, asa_policy *out) {
    if (strcmp(name, "naive") == 0)
        *out = ASA_POLICY_NAIVE;
    else if (strcmp(name, "tuned") == 0)
        *out = ASA_POLICY_TUNED;
    else if (strcmp(name, "full") == 0)
        *out = ASA_POLICY_FULL;
    else
        return -1;
    return 0;
}

const char *asa_loss_name(asa_loss_kind k) {
    return k == ASA_LOSS_TIME ? "time" : "hit";
}

int asa_loss_parse(const char *name, asa_loss_kind *out) {
    if (strcmp(name, "hit") == 0)
        *out = ASA_LOSS_HIT;
    else if (strcmp(name, "time") == 0)
        *out = ASA_LOSS_TIME;
    else
        return -1;
    return 0;
}

void asa_learner_init(asa_learner *l) {
    memset(l, 0, sizeof *l);
    for (int i = 0; i < ASA_M; i++)
        l->p[i] = 1.0 / ASA_M;
    l->round = 1;
}

int asa_sample(const asa_learner *l, asa_rng *r) {
    double u = asa_rng_uniform(r), acc = 0, total = 0;
    for (int i = 0; i < ASA_M; i++)
        total += l->p[i];
    u *= total; /* p sums to 1 up to rounding: never fall off the end */
    for (int i = 0; i < ASA_M; i++) {
        acc += l->p[i];
        if (u < acc)
            return i;
    }
    return ASA_M - 1;
}

int asa_mode(const asa_learner *l) {
    int best = 0;
    for (int i = 1; i < ASA_M; i++)
        if (l->p[i] > l->p[best])
            best = i;
    return best;
}

void asa_end_round(asa_learner *l, const asa_config *c) {
    double g = asa_gamma(c, l->round), sum = 0;
    /* Dividing by the largest factor first keeps the biggest weight at 1: no underflow of the
     * whole vector however large gamma * loss is. */
    double w[ASA_M], wmax = 0;
    for (int i = 0; i < ASA_M; i++) {
        w[i] = log(l->p[i]) - g * l->round_loss[i];
        if (i == 0 || w[i] > wmax)
            wmax = w[i];
    }
    for (int i = 0; i < ASA_M; i++)
        sum += (w[i] = exp(w[i] - wmax));
    double floored = 0;
    for (int i = 0; i < ASA_M; i++)
        floored += (w[i] = fmax(w[i] / sum, ASA_P_FLOOR));
    for (int i = 0; i < ASA_M; i++) {
        l->p[i] = w[i] / floored;
        l->round_loss[i] = 0;
    }
    l->round++;
}

/* Line 5 for one case, and line 3's test: returns 1 when the case ended the round. */
static int add_case(asa_learner *l, const asa_config *c, int action, double wait_s) {
    l->round_loss[action] += asa_loss(c->loss, action, wait_s);
    l->samples++;
    if (l->round_loss[action] <= ASA_ROUND_BOUND)
        return 0;
    asa_end_round(l, c);
    return 1;
}

int asa_observe(asa_learner *l, const asa_config *c, int acted, double wait_s, asa_rng *r,
                tm_err *err) {
    if (asa_config_check(c, err) < 0)
        return -1;
    if (!(wait_s >= 0) || isinf(wait_s))
        return tm_err_set(err, "asa: observed wait %g s is not a finite non-negative time", wait_s);
    if (acted < -1 || acted >= ASA_M)
        return tm_err_set(err, "asa: acted alternative %d not in -1..%d", acted, ASA_M - 1);
    int ended = 0;
    if (c->policy == ASA_POLICY_FULL) {
        /* Line 5 for every alternative. Each charge is at most the bound, so a round of one
         * observed wait keeps line 3's bound; the round ends at once (line 7). */
        for (int a = 0; a < ASA_M; a++)
            l->round_loss[a] = asa_loss(c->loss, a, wait_s);
        l->samples++;
        l->cases++;
        asa_end_round(l, c);
        return 1;
    }
    ended = add_case(l, c, acted >= 0 ? acted : asa_sample(l, r), wait_s);
    for (int k = 1; k < c->repetitions; k++)
        ended += add_case(l, c, asa_sample(l, r), wait_s);
    l->cases++;
    return ended;
}

int asa_learner_check(const asa_learner *l, tm_err *err) {
    double sum = 0;
    for (int i = 0; i < ASA_M; i++) {
        if (!(l->p[i] > 0 && l->p[i] <= 1))
            return tm_err_set(err, "p[%d] = %g is not in (0, 1]", i, l->p[i]);
        if (!(l->round_loss[i] >= 0 && l->round_loss[i] <= ASA_ROUND_BOUND))
            return tm_err_set(err, "round loss[%d] = %g is not in [0, %g]", i, l->round_loss[i],
                              ASA_ROUND_BOUND);
        sum += l->p[i];
    }
    if (fabs(sum - 1) > 1e-6)
        return tm_err_set(err, "p sums to %.9g, not 1", sum);
    if (l->round < 1 || l->cases < 0 || l->samples < l->cases)
        return tm_err_set(err, "counters round %lld, cases %lld, samples %lld are inconsistent",
                          l->round, l->cases, l->samples);
    return 0;
}
