/* labeler_sizing_test.c: the sizing strategies (labeler/sizing.h) on small sequences whose
 * buckets and allocations are computed by hand in the comments, and bad input. */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "labeler/sizing.h"
#include "labeler/sizing_bucketing.h"

static sz_alloc *make(sz_strategy s, double machine, int buckets, int cold) {
    sz_config c;
    sz_config_default(&c, s, machine);
    c.buckets = buckets;
    c.cold_start = cold;
    tm_err err = {0};
    sz_alloc *a = sz_alloc_new(&c, &err);
    if (!a)
        printf("    sz_alloc_new: %s\n", err.msg);
    return a;
}

static void test_names(void) {
    for (int s = 0; s < SZ_NSTRATEGIES; s++)
        CHECK_INT(sz_strategy_parse(sz_strategy_name((sz_strategy)s)), s);
    CHECK_STR(sz_strategy_name(SZ_WHOLE_MACHINE), "whole-machine");
    CHECK_INT(sz_strategy_parse("nope"), -1);
    CHECK_INT(sz_strategy_parse(NULL), -1);
}

static void test_quantized_buckets(void) {
    double v[] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    /* n = 8, 2 buckets: ranks ceil(1*8/2) = 4 -> v[3] = 4, ceil(2*8/2) = 8 -> 8 */
    CHECK_INT(sz_buckets_quantized(v, 8, 2, out, 8), 2);
    CHECK_NEAR(out[0], 4, 0);
    CHECK_NEAR(out[1], 8, 0);
    /* 3 buckets: ranks ceil(8/3) = 3 -> 3, ceil(16/3) = 6 -> 6, 8 -> 8 */
    CHECK_INT(sz_buckets_quantized(v, 8, 3, out, 8), 3);
    CHECK_NEAR(out[0], 3, 0);
    CHECK_NEAR(out[1], 6, 0);
    CHECK_NEAR(out[2], 8, 0);
    /* duplicates collapse: [5, 5, 5], 3 buckets -> one delimiter 5 */
    double d[] = {5, 5, 5};
    CHECK_INT(sz_buckets_quantized(d, 3, 3, out, 8), 1);
    CHECK_NEAR(out[0], 5, 0);
    /* more buckets than values: [1, 2], 4 buckets: ranks 1, 1, 2, 2 -> [1, 2] */
    CHECK_INT(sz_buckets_quantized(v, 2, 4, out, 8), 2);
    CHECK_INT(sz_buckets_quantized(v, 0, 2, out, 8), 0);
}

static void test_kmeans_buckets(void) {
    double out[8];
    /* even split [1 2 3 | 10 11 12], means 2 and 11, midpoint 6.5: stable -> maxima 3, 12 */
    double a[] = {1, 2, 3, 10, 11, 12};
    CHECK_INT(sz_buckets_kmeans(a, 6, 2, out, 8), 2);
    CHECK_NEAR(out[0], 3, 0);
    CHECK_NEAR(out[1], 12, 0);
    /* a value moves: even split of 5 values at index 2: [1 2 | 3 4 20], means 1.5 and 9,
     * midpoint 5.25 -> [1 2 3 4 | 20], means 2.5 and 20, midpoint 11.25: stable -> 4, 20
     * (quantized would say v[ceil(5/2)-1] = 3, 20) */
    double b[] = {1, 2, 3, 4, 20};
    CHECK_INT(sz_buckets_kmeans(b, 5, 2, out, 8), 2);
    CHECK_NEAR(out[0], 4, 0);
    CHECK_NEAR(out[1], 20, 0);
    CHECK_INT(sz_buckets_quantized(b, 5, 2, out, 8), 2);
    CHECK_NEAR(out[0], 3, 0);
    /* one bucket is the maximum */
    CHECK_INT(sz_buckets_kmeans(b, 5, 1, out, 8), 1);
    CHECK_NEAR(out[0], 20, 0);
    /* identical values: the empty bucket vanishes */
    double c[] = {7, 7, 7, 7};
    CHECK_INT(sz_buckets_kmeans(c, 4, 3, out, 8), 1);
    CHECK_NEAR(out[0], 7, 0);
}

static void test_greedy_buckets(void) {
    double out[8];
    /* [1 1 1 10], weights 1: one bucket costs 10 * 4 = 40. Adding c = 1 changes the cost by
     * 1 * 4 - 10 * W(v <= 1) = 4 - 30 = -26 < 0: split; the halves have no inner candidate.
     * Chain [1, 10]: the 1s waste 0, the 10 wastes 1 + 10 - 10 = 1: mean 1/4. */
    double a[] = {1, 1, 1, 10};
    CHECK_INT(sz_buckets_greedy(a, NULL, 4, out, 8), 2);
    CHECK_NEAR(out[0], 1, 0);
    CHECK_NEAR(out[1], 10, 0);
    CHECK_NEAR(sz_chain_cost(a, NULL, 4, out, 2, 64), 0.25, 1e-12);
    /* [9 10]: c = 9 changes the cost by 9 * 2 - 10 * 1 = 8 > 0: no split */
    double b[] = {9, 10};
    CHECK_INT(sz_buckets_greedy(b, NULL, 2, out, 8), 1);
    CHECK_NEAR(out[0], 10, 0);
    /* [1 2 10]: c = 1: 1*3 - 10*1 = -7, c = 2: 2*3 - 10*2 = -14 -> split at 2; inside
     * (-inf, 2] c = 1: 1*3 - 2*1 = 1 > 0 -> [2, 10] */
    double c[] = {1, 2, 10};
    CHECK_INT(sz_buckets_greedy(c, NULL, 3, out, 8), 2);
    CHECK_NEAR(out[0], 2, 0);
    CHECK_NEAR(out[1], 10, 0);
}

static void test_exhaustive_buckets(void) {
    double out[8];
    /* [1 2 10]: sum_i d_i W(v > d_{i-1}) for every chain ending at 10:
     *   [10] 30, [1 10] 3 + 20 = 23, [2 10] 6 + 10 = 16, [1 2 10] 3 + 4 + 10 = 17 -> [2 10] */
    double c[] = {1, 2, 10};
    CHECK_INT(sz_buckets_exhaustive(c, NULL, 3, out, 8), 2);
    CHECK_NEAR(out[0], 2, 0);
    CHECK_NEAR(out[1], 10, 0);
    /* runtimes weigh: [1 10] with w = [1, 100]: [10] 10 * 101 = 1010, [1 10] 101 + 1000 = 1101
     * -> [10]; with w = [100, 1]: [10] 1010, [1 10] 101 + 10 = 111 -> [1 10] */
    double v[] = {1, 10}, w1[] = {1, 100}, w2[] = {100, 1};
    CHECK_INT(sz_buckets_exhaustive(v, w1, 2, out, 8), 1);
    CHECK_NEAR(out[0], 10, 0);
    CHECK_INT(sz_buckets_exhaustive(v, w2, 2, out, 8), 2);
    CHECK_NEAR(out[0], 1, 0);
    /* the optimum is never worse than greedy's on its own history */
    unsigned s = 7;
    for (int round = 0; round < 50; round++) {
        double x[60], g[64], e[64];
        int n = 5 + round % 50;
        for (int i = 0; i < n; i++) {
            s = s * 1103515245u + 12345u;
            x[i] = (double)((s >> 8) % 1000) / 10.0 + (round % 3 == 0 && i % 2 ? 50 : 0);
        }
        for (int i = 1; i < n; i++) /* insertion sort */
            for (int j = i; j > 0 && x[j - 1] > x[j]; j--) {
                double t = x[j];
                x[j] = x[j - 1];
                x[j - 1] = t;
            }
        int kg = sz_buckets_greedy(x, NULL, (size_t)n, g, 64);
        int ke = sz_buckets_exhaustive(x, NULL, (size_t)n, e, 64);
        CHECK(sz_chain_cost(x, NULL, (size_t)n, e, ke, 200) <=
              sz_chain_cost(x, NULL, (size_t)n, g, kg, 200) + 1e-9);
        CHECK_NEAR(e[ke - 1], x[n - 1], 0);
        CHECK_NEAR(g[kg - 1], x[n - 1], 0);
    }
}

static void test_oblivious_chains(void) {
    /* whole machine: always 64 */
    sz_alloc *w = make(SZ_WHOLE_MACHINE, 64, 1, 10);
    CHECK_NEAR(sz_alloc_first(w), 64, 0);
    CHECK_NEAR(sz_alloc_retry(w, 64), 64, 0);
    sz_alloc_free(w);
    /* double: 64 / 8 = 8, then 16, 32, 64, and 64 stays */
    sz_alloc *d = make(SZ_DOUBLE, 64, 1, 10);
    CHECK_NEAR(sz_alloc_first(d), 8, 0);
    CHECK_NEAR(sz_alloc_retry(d, 8), 16, 0);
    CHECK_NEAR(sz_alloc_retry(d, 16), 32, 0);
    CHECK_NEAR(sz_alloc_retry(d, 32), 64, 0);
    CHECK_NEAR(sz_alloc_retry(d, 64), 64, 0);
    CHECK_NEAR(sz_alloc_retry(d, 40), 64, 0); /* 80 capped */
    sz_alloc_free(d);
    /* declared 10: first 10, retry on the whole machine; above the machine: the machine */
    sz_config c;
    sz_config_default(&c, SZ_DECLARED, 64);
    c.declared = 10;
    sz_alloc *u = sz_alloc_new(&c, NULL);
    CHECK_NEAR(sz_alloc_first(u), 10, 0);
    CHECK_NEAR(sz_alloc_retry(u, 10), 64, 0);
    sz_alloc_free(u);
    c.declared = 100;
    u = sz_alloc_new(&c, NULL);
    CHECK_NEAR(sz_alloc_first(u), 64, 0);
    sz_alloc_free(u);
}

static void test_cold_start_and_chain(void) {
    /* quantized, 2 buckets, cold start 10: peaks 1..9 -> still the machine; the 10th peak
     * (10) makes buckets: ranks ceil(10/2) = 5 -> 5 and 10 -> [5, 10] */
    sz_alloc *q = make(SZ_QUANTIZED, 64, 2, 10);
    for (int i = 1; i <= 9; i++) {
        CHECK_NEAR(sz_alloc_first(q), 64, 0);
        CHECK_INT(sz_alloc_record(q, i, 1, true), 0);
    }
    CHECK_NEAR(sz_alloc_first(q), 64, 0);
    sz_alloc_record(q, 10, 1, true);
    CHECK_NEAR(sz_alloc_first(q), 5, 0);
    CHECK_NEAR(sz_alloc_retry(q, 5), 10, 0);
    CHECK_NEAR(sz_alloc_retry(q, 10), 64, 0); /* after the last bucket: the machine */
    CHECK_NEAR(sz_alloc_retry(q, 7), 10, 0);  /* the next bucket above whatever failed */
    double b[4];
    CHECK_INT(sz_alloc_buckets(q, b, 4), 2);
    /* recomputed as tasks finish: an 11th peak of 20 -> ranks ceil(11/2) = 6 -> 6, 20 */
    sz_alloc_record(q, 20, 1, true);
    CHECK_NEAR(sz_alloc_first(q), 6, 0);
    CHECK_NEAR(sz_alloc_retry(q, 6), 20, 0);
    /* failed attempts do not enter a bucketing history */
    sz_alloc_record(q, 30, 1, false);
    CHECK_INT(sz_alloc_count(q), 11);
    sz_alloc_free(q);
}

static void test_vpa(void) {
    sz_config c;
    sz_config_default(&c, SZ_VPA, 64);
    c.vpa_bump_min = 0.5;
    sz_alloc *v = sz_alloc_new(&c, NULL);
    for (int i = 1; i <= 10; i++)
        sz_alloc_record(v, i, 1, true);
    /* P90 of 1..10 by nearest rank: ceil(0.9 * 10) = 9 -> 9; x 1.15 = 10.35 */
    CHECK_NEAR(sz_alloc_first(v), 10.35, 1e-12);
    /* OOM bump: max(10.35 + 0.5, 10.35 * 1.2 = 12.42) */
    CHECK_NEAR(sz_alloc_retry(v, 10.35), 12.42, 1e-12);
    /* small figures: the absolute bump wins: max(1 + 0.5, 1.2) = 1.5 */
    CHECK_NEAR(sz_alloc_retry(v, 1), 1.5, 1e-12);
    /* an OOM at 12 is recorded as max(12.5, 14.4) = 14.4: 11 samples, rank ceil(9.9) = 10 ->
     * 10 x 1.15 = 11.5 */
    sz_alloc_record(v, 12, 1, false);
    CHECK_INT(sz_alloc_count(v), 11);
    CHECK_NEAR(sz_alloc_first(v), 11.5, 1e-12);
    sz_alloc_free(v);
}

static void test_bad_input(void) {
    tm_err err = {0};
    sz_config c;
    sz_config_default(&c, SZ_KMEANS, 0);
    CHECK(sz_alloc_new(&c, &err) == NULL);
    CHECK(strstr(err.msg, "machine capacity") != NULL);
    c.machine = NAN;
    CHECK(sz_alloc_new(&c, &err) == NULL);
    c.machine = 64;
    c.buckets = 0;
    CHECK(sz_alloc_new(&c, &err) == NULL);
    CHECK(strstr(err.msg, "buckets") != NULL);
    c.buckets = 1;
    c.cold_start = -1;
    CHECK(sz_alloc_new(&c, &err) == NULL);
    c.cold_start = 0;
    c.strategy = (sz_strategy)99;
    CHECK(sz_alloc_new(&c, &err) == NULL);

    /* empty history without a cold start: the machine; one sample: that sample, then the
     * machine */
    sz_alloc *a = make(SZ_KMEANS, 64, 2, 0);
    CHECK_NEAR(sz_alloc_first(a), 64, 0);
    CHECK_INT(sz_alloc_record(a, 3, 1, true), 0);
    CHECK_NEAR(sz_alloc_first(a), 3, 0);
    CHECK_NEAR(sz_alloc_retry(a, 3), 64, 0);
    /* refused peaks leave the history alone */
    CHECK_INT(sz_alloc_record(a, NAN, 1, true), -1);
    CHECK_INT(sz_alloc_record(a, -1, 1, true), -1);
    CHECK_INT(sz_alloc_record(a, INFINITY, 1, true), -1);
    CHECK_INT(sz_alloc_count(a), 1);
    /* a peak above the machine counts as the machine: the chain never exceeds it */
    CHECK_INT(sz_alloc_record(a, 1e30, NAN, true), 0);
    CHECK(sz_alloc_first(a) <= 64);
    CHECK_NEAR(sz_alloc_retry(a, NAN), 64, 0);
    CHECK_NEAR(sz_alloc_retry(a, -5), 64, 0); /* a nonsense failed figure: the machine */
    sz_alloc_free(a);
    CHECK(isnan(sz_alloc_first(NULL)));
    CHECK_INT(sz_alloc_record(NULL, 1, 1, true), -1);
    sz_alloc_free(NULL);

    /* declared NaN or negative: the machine */
    sz_config_default(&c, SZ_DECLARED, 64);
    c.declared = -3;
    sz_alloc *u = sz_alloc_new(&c, NULL);
    CHECK_NEAR(sz_alloc_first(u), 64, 0);
    sz_alloc_free(u);

    /* every strategy, absurd sequences: allocations stay in [0, machine] and retries climb */
    unsigned s = 1;
    for (int st = 0; st < SZ_NSTRATEGIES; st++) {
        sz_alloc *x = make((sz_strategy)st, 16, 3, 2);
        for (int i = 0; i < 300; i++) {
            s = s * 1103515245u + 12345u;
            double peak = (s >> 16) % 7 == 0 ? 1e9 : (double)((s >> 8) % 2000) / 100.0 - 1;
            double first = sz_alloc_first(x);
            CHECKF(first >= 0 && first <= 16, "%s first %g", sz_strategy_name(st), first);
            double r = first;
            for (int k = 0; k < 70 && r < 16; k++) {
                double next = sz_alloc_retry(x, r);
                CHECKF(next > r && next <= 16, "%s retry %g -> %g", sz_strategy_name(st), r, next);
                r = next;
            }
            CHECKF(r == 16, "%s chain ends at %g", sz_strategy_name(st), r);
            sz_alloc_record(x, peak, (double)(s % 5) - 1, (s >> 3) % 4 != 0);
        }
        sz_alloc_free(x);
    }
}

int main(void) {
    RUN(test_names);
    RUN(test_quantized_buckets);
    RUN(test_kmeans_buckets);
    RUN(test_greedy_buckets);
    RUN(test_exhaustive_buckets);
    RUN(test_oblivious_chains);
    RUN(test_cold_start_and_chain);
    RUN(test_vpa);
    RUN(test_bad_input);
    return TEST_SUMMARY();
}
