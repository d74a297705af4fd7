/* planner_asa_test.c: the ASA learner (labeler/asa.c) and its table (labeler/asa_table.c): the
 * grid of alternatives, the two losses, update steps worked out by hand in the comments, gamma_t,
 * the round reset, the tuned policy's replays, the key table, the JSON state (round trip and
 * corrupt documents) and that no input gives a negative or NaN estimate. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "labeler/asa.h"
#include "labeler/asa_table.h"

static int idx_of(double seconds) {
    for (int i = 0; i < ASA_M; i++)
        if (asa_alternative(i) == seconds)
            return i;
    return -1;
}

static asa_config naive(void) {
    asa_config c;
    asa_config_default(&c, ASA_POLICY_NAIVE);
    return c;
}

static double psum(const asa_learner *l) {
    double s = 0;
    for (int i = 0; i < ASA_M; i++)
        s += l->p[i];
    return s;
}

/* Section 4.3: 53 alternatives, 10 s .. 100k s, twice as dense in the tens and hundreds. */
static void test_alternatives_grid(void) {
    int tens = 0, hundreds = 0, thousands = 0, tenk = 0;
    for (int i = 0; i < ASA_M; i++) {
        double a = asa_alternative(i);
        if (i > 0)
            CHECKF(a > asa_alternative(i - 1), "alternative %d = %g not ascending", i, a);
        tens += a < 100;
        hundreds += a >= 100 && a < 1000;
        thousands += a >= 1000 && a < 10000;
        tenk += a >= 10000 && a < 100000;
    }
    CHECK_INT(tens, 17);
    CHECK_INT(hundreds, 17);
    CHECK_INT(thousands, 9);
    CHECK_INT(tenk, 9);
    CHECK(asa_alternative(0) == 10);
    CHECK(asa_alternative(ASA_M - 1) == ASA_MAX_WAIT_S);
    CHECK(asa_alternative(-1) == 0 && asa_alternative(ASA_M) == 0);
}

static void test_closest(void) {
    CHECK_INT(asa_closest(420), idx_of(400));
    CHECK_INT(asa_closest(2700), idx_of(3000)); /* 300 away vs 700 */
    CHECK_INT(asa_closest(14000), idx_of(10000));
    CHECK_INT(asa_closest(95), idx_of(90)); /* tie between 90 and 100: the smaller */
    CHECK_INT(asa_closest(0), 0);
    CHECK_INT(asa_closest(1e300), ASA_M - 1);
    CHECK_INT(asa_closest(-1), -1);
    CHECK_INT(asa_closest(NAN), -1);
}

static void test_losses(void) {
    /* definition (3): 0 only for the closest alternative */
    CHECK(asa_loss(ASA_LOSS_HIT, idx_of(400), 420) == 0);
    CHECK(asa_loss(ASA_LOSS_HIT, idx_of(450), 420) == 1);
    /* section 3.2: 400 s ahead, waited 500: started 100 s late, 100/500 = 0.2 */
    CHECK_NEAR(asa_loss(ASA_LOSS_TIME, idx_of(400), 500), 0.2, 1e-12);
    /* 400 s ahead, waited 300: the allocation idles 100 s, 100/400 = 0.25 */
    CHECK_NEAR(asa_loss(ASA_LOSS_TIME, idx_of(400), 300), 0.25, 1e-12);
    CHECK(asa_loss(ASA_LOSS_TIME, idx_of(400), 400) == 0);
    /* the closest alternative costs 0 with either loss, even off the grid (2700 s: 3000 is
     * the closest); without that zero Algorithm 1, which only charges sampled alternatives,
     * does not settle when the truth lies between two alternatives (docs/asa.md) */
    CHECK(asa_loss(ASA_LOSS_TIME, idx_of(3000), 2700) == 0);
    CHECK_NEAR(asa_loss(ASA_LOSS_TIME, idx_of(2000), 2700), 700.0 / 2700, 1e-12);
    /* zero and huge waits stay in [0, 1]: 15 s ahead, no wait: idles 15 s, 15/15 */
    CHECK(asa_loss(ASA_LOSS_TIME, 0, 0) == 0);
    CHECK_NEAR(asa_loss(ASA_LOSS_TIME, 1, 0), 1.0, 1e-12);
    double huge = asa_loss(ASA_LOSS_TIME, ASA_M - 1, DBL_MAX);
    CHECK(huge >= 0 && huge <= 1);
    /* invalid input is the worst loss, never NaN */
    CHECK(asa_loss(ASA_LOSS_TIME, 0, NAN) == 1 && asa_loss(ASA_LOSS_HIT, -1, 5) == 1);
}

/* One round, naive, loss (3), true wait 420 s (optimal 400 s), gamma = 1, p uniform 1/53.
 * Case 1 acts on 10 s: miss, l_10 = 1 <= 1, the round goes on. Case 2 acts on 10 s again:
 * l_10 = 2 > 1 ends the round. Update: p_10 = e^-2 / N, every other 1 / N, N = 52 + e^-2:
 * p_10 = 0.135335 / 52.135335 = 0.0025958456, others 1 / 52.135335 = 0.0191808491. */
static void test_one_round_by_hand(void) {
    asa_config c = naive();
    asa_learner l;
    asa_learner_init(&l);
    asa_rng r;
    asa_rng_seed(&r, 1);
    tm_err err = {0};
    CHECK_INT(asa_observe(&l, &c, 0, 420, &r, &err), 0);
    CHECK(l.round_loss[0] == 1 && l.round == 1);
    CHECK_NEAR(l.p[0], 1.0 / 53, 1e-15); /* p is fixed within a round */
    CHECK_INT(asa_observe(&l, &c, 0, 420, &r, &err), 1);
    CHECK_NEAR(l.p[0], 0.0025958456486637, 1e-12);
    for (int i = 1; i < ASA_M; i++)
        CHECK_NEAR(l.p[i], 0.0191808491221411, 1e-12);
    CHECK_INT(l.round, 2);
    for (int i = 0; i < ASA_M; i++) /* the round reset */
        CHECK(l.round_loss[i] == 0);
    CHECK_INT(l.cases, 2);
    CHECK_INT(l.samples, 2);
    CHECK_NEAR(psum(&l), 1, 1e-12);
}

/* A round with losses on two alternatives and a hit: cases 10 s (l=1), 15 s (l=1), 400 s (hit,
 * l=0), 15 s (l=2 > 1: end). Weights e^-1, e^-2 and 51 x 1, N = 51.5032147244:
 * p_10 = 0.3678794 / N = 0.0071428443, p_15 = 0.1353353 / N = 0.0026277056,
 * p_400 and the other 50: 1 / N = 0.0194162637 (a hit is never penalised). */
static void test_round_two_alternatives_by_hand(void) {
    asa_config c = naive();
    asa_learner l;
    asa_learner_init(&l);
    asa_rng r;
    asa_rng_seed(&r, 1);
    int acts[] = {0, 1, idx_of(400), 1};
    int ended = 0;
    for (int k = 0; k < 4; k++)
        ended += asa_observe(&l, &c, acts[k], 420, &r, NULL);
    CHECK_INT(ended, 1);
    CHECK_NEAR(l.p[0], 0.0071428442504017, 1e-12);
    CHECK_NEAR(l.p[1], 0.0026277055512124, 1e-12);
    CHECK_NEAR(l.p[idx_of(400)], 0.0194162637293801, 1e-12);
    CHECK_NEAR(l.p[ASA_M - 1], 0.0194162637293801, 1e-12);
}

/* gamma_t non-increasing; the default is appendix A's constant 1; gamma scales the update:
 * gamma 0.5 and l_10 = 2 give p_10 = e^-1 / (52 + e^-1) = 0.0070249062. */
static void test_gamma(void) {
    asa_config c = naive();
    for (long long t = 1; t <= 1000; t++)
        CHECK(asa_gamma(&c, t) == 1.0);
    c.gamma_decay = 0.5;
    c.gamma_min = 0.1;
    CHECK(asa_config_check(&c, NULL) == 0);
    CHECK_NEAR(asa_gamma(&c, 1), 1.0, 1e-15);
    CHECK_NEAR(asa_gamma(&c, 4), 0.5, 1e-15);
    CHECK_NEAR(asa_gamma(&c, 10000), 0.1, 1e-15);
    double prev = asa_gamma(&c, 0);
    for (long long t = 1; t <= 100000; t++) {
        double g = asa_gamma(&c, t);
        CHECKF(g <= prev && g > 0, "gamma_%lld = %g after %g", t, g, prev);
        prev = g;
    }
    asa_config h = naive();
    h.gamma0 = h.gamma_min = 0.5;
    asa_learner l;
    asa_learner_init(&l);
    asa_rng r;
    asa_rng_seed(&r, 1);
    asa_observe(&l, &h, 0, 420, &r, NULL);
    asa_observe(&l, &h, 0, 420, &r, NULL);
    CHECK_NEAR(l.p[0], 0.0070249062039013, 1e-12);
    /* an increasing or unbounded schedule is refused */
    asa_config bad = naive();
    bad.gamma_min = 2; /* above gamma0 */
    tm_err err = {0};
    CHECK(asa_config_check(&bad, &err) < 0 && strstr(err.msg, "gamma_min"));
    bad = naive();
    bad.gamma_decay = -1;
    CHECK(asa_config_check(&bad, NULL) < 0);
}

/* Hits never end a round: p stays uniform however many optimal cases come. */
static void test_hits_keep_round_open(void) {
    asa_config c = naive();
    asa_learner l;
    asa_learner_init(&l);
    asa_rng r;
    asa_rng_seed(&r, 1);
    for (int k = 0; k < 1000; k++)
        CHECK_INT(asa_observe(&l, &c, idx_of(400), 420, &r, NULL), 0);
    CHECK_INT(l.round, 1);
    CHECK_NEAR(l.p[0], 1.0 / 53, 1e-15);
}

/* The tuned policy replays each observed wait as 50 cases; on a stationary queue it settles on
 * the optimal alternative (the acted case counts as one of the 50). */
static void test_tuned_replays_and_converges(void) {
    asa_config c;
    asa_config_default(&c, ASA_POLICY_TUNED);
    CHECK_INT(c.repetitions, ASA_TUNED_REPETITIONS);
    asa_learner l;
    asa_learner_init(&l);
    asa_rng r;
    asa_rng_seed(&r, 7);
    CHECK(asa_observe(&l, &c, -1, 420, &r, NULL) >= 1);
    CHECK_INT(l.cases, 1);
    CHECK_INT(l.samples, 50);
    for (int k = 0; k < 30; k++)
        asa_observe(&l, &c, asa_sample(&l, &r), 420, &r, NULL);
    CHECK_INT(asa_mode(&l), idx_of(400));
    CHECKF(l.p[idx_of(400)] > 0.9, "p(400 s) = %g", l.p[idx_of(400)]);
    CHECK(asa_learner_check(&l, NULL) == 0);
}

/* Refused observations change nothing and say why. */
static void test_bad_observations(void) {
    asa_config c = naive();
    asa_learner l, before;
    asa_learner_init(&l);
    before = l;
    asa_rng r;
    asa_rng_seed(&r, 1);
    tm_err err = {0};
    CHECK(asa_observe(&l, &c, 0, NAN, &r, &err) < 0 && strstr(err.msg, "not a finite"));
    CHECK(asa_observe(&l, &c, 0, -1, &r, &err) < 0);
    CHECK(asa_observe(&l, &c, 0, INFINITY, &r, &err) < 0);
    CHECK(asa_observe(&l, &c, ASA_M, 10, &r, &err) < 0 && strstr(err.msg, "acted"));
    CHECK(asa_observe(&l, &c, -2, 10, &r, &err) < 0);
    CHECK(memcmp(&l, &before, sizeof l) == 0);
}

/* Zero, tiny and huge waits, the time loss and the largest gamma: p stays a distribution and
 * every estimate is an alternative (never negative, never NaN). */
static void test_no_nan_on_extremes(void) {
    double waits[] = {0, 1e-300, 5, 1e5, 1e9, 1e300, DBL_MAX};
    for (int kind = 0; kind < 2; kind++) {
        asa_config c;
        asa_config_default(&c, ASA_POLICY_TUNED);
        c.loss = kind ? ASA_LOSS_TIME : ASA_LOSS_HIT;
        c.gamma0 = c.gamma_min = 100;
        asa_learner l;
        asa_learner_init(&l);
        asa_rng r;
        asa_rng_seed(&r, 3);
        for (int k = 0; k < 2000; k++) {
            double w = waits[k % 7];
            CHECK(asa_observe(&l, &c, asa_sample(&l, &r), w, &r, NULL) >= 0);
        }
        tm_err err = {0};
        CHECKF(asa_learner_check(&l, &err) == 0, "%s", err.msg);
        for (int k = 0; k < 100; k++) {
            double e = asa_alternative(asa_sample(&l, &r));
            CHECK(isfinite(e) && e >= 10);
        }
    }
}

static asa_key key(const char *ns, const char *group, int pods) {
    asa_key k;
    tm_err err = {0};
    if (asa_key_make(&k, ns, group, pods, 2000, 4LL << 30, &err) < 0)
        printf("    key: %s\n", err.msg);
    return k;
}

static void test_key_table(void) {
    asa_config c = naive();
    asa_table *t = asa_table_new(&c);
    asa_rng r;
    asa_rng_seed(&r, 1);
    asa_key a = key("ns-a", "g1", 4), b = key("ns-b", "g1", 4), a8 = key("ns-a", "g1", 8);
    int act = 99;
    /* unknown shape: the documented default, no alternative */
    CHECK(asa_table_estimate(t, &a, &r, &act) == ASA_DEFAULT_ESTIMATE_S);
    CHECK_INT(act, -1);
    CHECK(asa_table_observe(t, &a, 0, 420, &r, NULL) == 0);
    CHECK(asa_table_observe(t, &a, 0, 420, &r, NULL) == 0); /* ends a round (see by hand) */
    CHECK_INT(asa_table_size(t), 1);
    CHECK(asa_table_find(t, &b) == NULL && asa_table_find(t, &a8) == NULL);
    CHECK_NEAR(asa_table_find(t, &a)->p[0], 0.0025958456486637, 1e-12);
    double e = asa_table_estimate(t, &a, &r, &act);
    CHECK(act >= 0 && e == asa_alternative(act));
    CHECK(asa_table_estimate(t, &b, &r, &act) == ASA_DEFAULT_ESTIMATE_S);
    CHECK(asa_table_observe(t, &b, -1, 60, &r, NULL) == 0);
    CHECK_INT(asa_table_size(t), 2);
    CHECK_INT(asa_table_find(t, &b)->cases, 1);
    CHECK_INT(asa_table_find(t, &a)->cases, 2);
    /* a refused observation of an unknown shape leaves no learner behind */
    tm_err err = {0};
    CHECK(asa_table_observe(t, &a8, 0, NAN, &r, &err) < 0);
    CHECK(asa_table_find(t, &a8) == NULL);
    /* bad keys */
    asa_key k;
    CHECK(asa_key_make(&k, "", "g", 1, 1000, 0, &err) < 0 && strstr(err.msg, "namespace"));
    CHECK(asa_key_make(&k, "ns", "g", 0, 1000, 0, &err) < 0 && strstr(err.msg, "pods"));
    CHECK(asa_key_make(&k, "ns", "g", 1, -1, 0, &err) < 0 && strstr(err.msg, "cpu"));
    CHECK(asa_key_make(&k, "ns", "g", 1, 0, 0, &err) == 0); /* BestEffort: no cpu request */
    CHECK(asa_key_make(&k, "ns", "g", 1, 1000, -1, &err) < 0 && strstr(err.msg, "memory"));
    char longname[80];
    memset(longname, 'x', 70);
    longname[70] = 0;
    CHECK(asa_key_make(&k, longname, "g", 1, 1000, 0, &err) < 0);
    CHECK(asa_key_make(&k, "ns", NULL, 1, 1000, 0, &err) == 0 && k.group[0] == 0);
    asa_table_free(t);
}

/* A full table makes room by dropping the shape observed least recently. */
static void test_table_eviction(void) {
    asa_config c = naive();
    asa_table *t = asa_table_new(&c);
    asa_rng r;
    asa_rng_seed(&r, 1);
    for (int i = 1; i <= ASA_TABLE_MAX; i++) {
        asa_key k = key("ns", "g", i);
        asa_table_observe(t, &k, -1, 60, &r, NULL);
    }
    asa_key first = key("ns", "g", 1), second = key("ns", "g", 2);
    asa_table_observe(t, &first, -1, 60, &r, NULL); /* now shape 2 is the oldest */
    asa_key extra = key("ns", "g", ASA_TABLE_MAX + 1);
    asa_table_observe(t, &extra, -1, 60, &r, NULL);
    CHECK_INT(asa_table_size(t), ASA_TABLE_MAX);
    CHECK(asa_table_find(t, &first) != NULL);
    CHECK(asa_table_find(t, &second) == NULL);
    CHECK(asa_table_find(t, &extra) != NULL);
    asa_table_free(t);
}

static asa_table *sample_table(void) {
    asa_config c;
    asa_config_default(&c, ASA_POLICY_TUNED);
    asa_table *t = asa_table_new(&c);
    asa_rng r;
    asa_rng_seed(&r, 5);
    asa_key a = key("ns-a", "fast", 4), b = key("ns-b", "", 1);
    for (int k = 0; k < 7; k++) {
        asa_table_observe(t, &a, -1, 420, &r, NULL);
        asa_table_observe(t, &b, -1, 9000, &r, NULL);
    }
    return t;
}

static void test_json_round_trip(void) {
    asa_table *t = sample_table();
    char *s = asa_table_to_json(t);
    asa_config c;
    asa_config_default(&c, ASA_POLICY_TUNED);
    char warn[512];
    asa_table *u = asa_table_from_json(s, &c, warn, sizeof warn);
    CHECK_STR(warn, "");
    CHECK_INT(asa_table_size(u), 2);
    for (size_t i = 0; i < asa_table_size(t); i++) {
        const asa_learner *x = asa_table_learner(t, i), *y = asa_table_find(u, asa_table_key(t, i));
        CHECK(y != NULL);
        if (!y)
            continue;
        CHECK(memcmp(x->p, y->p, sizeof x->p) == 0); /* 17 digits: exact */
        CHECK(memcmp(x->round_loss, y->round_loss, sizeof x->round_loss) == 0);
        CHECK(x->round == y->round && x->cases == y->cases && x->samples == y->samples);
    }
    char *s2 = asa_table_to_json(u);
    CHECK_STR(s2, s);
    free(s);
    free(s2);
    asa_table_free(t);
    asa_table_free(u);
}

/* Replaces the first occurrence of `from` in doc with `to` (the caller frees). */
static char *edit(const char *doc, const char *from, const char *to) {
    const char *at = strstr(doc, from);
    if (!at)
        return NULL;
    size_t n = strlen(doc) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - doc), doc, to, at + strlen(from));
    return out;
}

/* Loads doc and checks the number of shapes kept and that the warning mentions `why`. */
static void load_expect(const char *doc, size_t kept, const char *why) {
    asa_config c;
    asa_config_default(&c, ASA_POLICY_TUNED);
    char warn[1024];
    asa_table *t = asa_table_from_json(doc, &c, warn, sizeof warn);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECKF(asa_table_size(t) == kept, "kept %zu, expected %zu (%s)", asa_table_size(t), kept, warn);
    CHECKF(strstr(warn, why) != NULL, "warning '%s' does not mention '%s'", warn, why);
    for (size_t i = 0; i < asa_table_size(t); i++)
        CHECK(asa_learner_check(asa_table_learner(t, i), NULL) == 0);
    asa_table_free(t);
}

static void test_corrupt_json_rejected(void) {
    asa_table *t = sample_table();
    char *s = asa_table_to_json(t);
    asa_table_free(t);
    load_expect("{not json", 0, "not JSON");
    load_expect("", 0, "not JSON");
    load_expect("[]", 0, "version");
    char *e;
    CHECK((e = edit(s, "\"version\":1", "\"version\":2")) != NULL);
    load_expect(e, 0, "version");
    free(e);
    /* another grid: the stored p would mean other waiting times */
    CHECK((e = edit(s, "[10.0,15.0", "[10.0,16.0")) != NULL);
    load_expect(e, 0, "alternatives");
    free(e);
    /* a negative probability in the first entry: that entry only is skipped */
    CHECK((e = edit(s, "\"p\":[", "\"p\":[-0.5,")) != NULL);
    load_expect(e, 1, "entry 0 skipped");
    free(e);
    /* p of the wrong length, a string in p, an absurd round loss, a bad key */
    CHECK((e = edit(s, "\"round_loss\":[", "\"round_loss\":[7.0,")) != NULL);
    load_expect(e, 1, "entry 0 skipped");
    free(e);
    CHECK((e = edit(s, "\"pods\":4", "\"pods\":-4")) != NULL);
    load_expect(e, 1, "pods");
    free(e);
    CHECK((e = edit(s, "\"namespace\":\"ns-a\"", "\"namespace\":7")) != NULL);
    load_expect(e, 1, "namespace");
    free(e);
    CHECK((e = edit(s, "\"round\":", "\"round\":-")) != NULL);
    load_expect(e, 1, "counters");
    free(e);
    /* a second copy of the same shape */
    CHECK((e = edit(s, "\"namespace\":\"ns-b\"", "\"namespace\":\"ns-a\"")) != NULL);
    if (e) {
        char *f = edit(e, "\"node_group\":\"\"", "\"node_group\":\"fast\"");
        char *g = f ? edit(f, "\"pods\":1", "\"pods\":4") : NULL;
        CHECK(g != NULL);
        if (g)
            load_expect(g, 1, "duplicate");
        free(f);
        free(g);
    }
    free(e);
    /* 54 values in p */
    CHECK((e = edit(s, "\"p\":[", "\"p\":[0.9,")) != NULL);
    load_expect(e, 1, "not 53 finite numbers");
    free(e);
    /* 53 values that do not sum to 1: the first entry's p[0] set to 0.9 */
    const char *p0 = strstr(s, "\"p\":[");
    const char *comma = p0 ? strchr(p0, ',') : NULL;
    CHECK(comma != NULL);
    if (comma) {
        char from[64];
        snprintf(from, sizeof from, "%.*s", (int)(comma - p0), p0);
        CHECK((e = edit(s, from, "\"p\":[0.9")) != NULL);
        load_expect(e, 1, "sums to");
        free(e);
    }
    free(s);
}

/* A hand-made state whose p does not sum to 1 is refused by the check the loader uses. */
static void test_learner_check(void) {
    asa_learner l;
    asa_learner_init(&l);
    tm_err err = {0};
    CHECK(asa_learner_check(&l, &err) == 0);
    l.p[3] *= 2;
    CHECK(asa_learner_check(&l, &err) < 0 && strstr(err.msg, "sums to"));
    asa_learner_init(&l);
    l.p[0] = NAN;
    CHECK(asa_learner_check(&l, &err) < 0 && strstr(err.msg, "p[0]"));
    asa_learner_init(&l);
    l.round_loss[5] = 1.5;
    CHECK(asa_learner_check(&l, &err) < 0 && strstr(err.msg, "round loss[5]"));
}

/* A noisy queue (log-normal waits, mean 150 s, CV 0.6): the published update (tuned) keeps p
 * near uniform, because only sampled alternatives are charged and nothing is divided by p;
 * full feedback puts most of p on one or two alternatives near the waits within 100 of them
 * (the last wait tilts between neighbours, hence > 0.4, not ~1). By hand: one
 * wait of 150 s under `full` charges every alternative but 150 s (loss 1) and leaves 150 s at
 * 0, so p(150) becomes e / (e + 52) = 0.0497 from 1/53 (checked below). */
static double lognormal150(asa_rng *r) {
    double u1 = asa_rng_uniform(r), u2 = asa_rng_uniform(r);
    double z = sqrt(-2 * log(u1 > 0 ? u1 : 1e-300)) * cos(2 * M_PI * u2), s2 = log(1.36);
    return 150 * exp(sqrt(s2) * z - s2 / 2);
}

static void test_full_feedback_noisy_queue(void) {
    asa_config full, tuned;
    asa_config_default(&full, ASA_POLICY_FULL);
    asa_config_default(&tuned, ASA_POLICY_TUNED);
    tm_err err = {0};
    CHECKF(asa_config_check(&full, &err) == 0, "%s", err.msg);
    asa_learner one;
    asa_learner_init(&one);
    asa_rng r;
    asa_rng_seed(&r, 1);
    CHECK(asa_observe(&one, &full, -1, 150, &r, NULL) == 1);
    CHECK_NEAR(one.p[asa_closest(150)], exp(1) / (exp(1) + 52), 1e-12);
    CHECK(one.round == 2 && one.cases == 1);
    for (int seed = 1; seed <= 5; seed++) {
        asa_learner f, t;
        asa_learner_init(&f);
        asa_learner_init(&t);
        asa_rng_seed(&r, (uint64_t)seed);
        for (int i = 0; i < 100; i++) {
            double w = lognormal150(&r);
            asa_observe(&f, &full, -1, w, &r, NULL);
            asa_observe(&t, &tuned, -1, w, &r, NULL);
        }
        double fm = asa_alternative(asa_mode(&f));
        CHECKF(f.p[asa_mode(&f)] > 0.4 && fm >= 100 && fm <= 200, "seed %d: full mode %g p %g",
               seed, fm, f.p[asa_mode(&f)]);
        CHECKF(t.p[asa_mode(&t)] < 0.2, "seed %d: tuned p(mode) %g", seed, t.p[asa_mode(&t)]);
        CHECK(asa_learner_check(&f, NULL) == 0);
    }
}

int main(void) {
    RUN(test_full_feedback_noisy_queue);
    RUN(test_alternatives_grid);
    RUN(test_closest);
    RUN(test_losses);
    RUN(test_one_round_by_hand);
    RUN(test_round_two_alternatives_by_hand);
    RUN(test_gamma);
    RUN(test_hits_keep_round_open);
    RUN(test_tuned_replays_and_converges);
    RUN(test_bad_observations);
    RUN(test_no_nan_on_extremes);
    RUN(test_key_table);
    RUN(test_table_eviction);
    RUN(test_json_round_trip);
    RUN(test_corrupt_json_rejected);
    RUN(test_learner_check);
    return TEST_SUMMARY();
}
