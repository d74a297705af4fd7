/* Unit tests for lib/backoff.c: bounds of full and decorrelated jitter, growth, the cap,
 * reset after a stable period, reproducibility from the seed, and actual spread. */
#include "harness.h"
#include "lib/backoff.h"

static void test_full_jitter_bounds_and_growth(void) {
    tm_backoff b;
    tm_backoff_init(&b, TM_BACKOFF_FULL_JITTER, 100, 5000, 0, 42);
    int64_t now = 0;
    for (int attempt = 0; attempt < 12; attempt++) {
        int64_t ceil = 100LL << attempt;
        if (ceil > 5000)
            ceil = 5000;
        int64_t d = tm_backoff_next(&b, now);
        CHECKF(d >= 0 && d <= ceil, "attempt %d: %lld > %lld", attempt, (long long)d,
               (long long)ceil);
    }
    /* Deep in the cap the mean is about cap/2: the jitter is spread, not stuck. */
    double sum = 0;
    int64_t lo = 5000, hi = 0;
    for (int i = 0; i < 2000; i++) {
        int64_t d = tm_backoff_next(&b, now);
        sum += (double)d;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    CHECK_NEAR(sum / 2000, 2500, 250);
    CHECK(lo < 500 && hi > 4500);
}

static void test_decorrelated_bounds(void) {
    tm_backoff b;
    tm_backoff_init(&b, TM_BACKOFF_DECORRELATED, 500, 10000, 0, 7);
    int64_t prev = 500;
    int at_cap = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t d = tm_backoff_next(&b, 0);
        CHECKF(d >= 500 && d <= 10000, "%lld", (long long)d);
        CHECKF(d <= prev * 3, "%lld after %lld", (long long)d, (long long)prev);
        at_cap += d == 10000;
        prev = d;
    }
    CHECK(at_cap > 0);
}

static void test_reset_after_stable_period(void) {
    tm_backoff b;
    tm_backoff_init(&b, TM_BACKOFF_FULL_JITTER, 100, 100000, 60000, 1);
    for (int i = 0; i < 8; i++)
        tm_backoff_next(&b, 0);
    CHECK_INT(b.attempt, 8);
    /* Healthy for 10 s only: growth continues. */
    tm_backoff_ok(&b, 1000);
    tm_backoff_next(&b, 11000);
    CHECK_INT(b.attempt, 9);
    /* Healthy for 60 s: back to the base range. */
    tm_backoff_ok(&b, 20000);
    tm_backoff_ok(&b, 50000); /* a later ok does not restart the healthy period */
    int64_t d = tm_backoff_next(&b, 80000);
    CHECK(d <= 100);
    CHECK_INT(b.attempt, 1);
    tm_backoff_reset(&b);
    CHECK_INT(b.attempt, 0);
}

static void test_seed_reproducible_and_distinct(void) {
    tm_backoff a, b, c;
    tm_backoff_init(&a, TM_BACKOFF_DECORRELATED, 10, 100000, 0, 99);
    tm_backoff_init(&b, TM_BACKOFF_DECORRELATED, 10, 100000, 0, 99);
    tm_backoff_init(&c, TM_BACKOFF_DECORRELATED, 10, 100000, 0, 100);
    int same = 0, diff = 0;
    for (int i = 0; i < 20; i++) {
        int64_t x = tm_backoff_next(&a, 0), y = tm_backoff_next(&b, 0), z = tm_backoff_next(&c, 0);
        same += x == y;
        diff += x != z;
    }
    CHECK_INT(same, 20);
    CHECK(diff > 10);
    tm_backoff_init(&a, TM_BACKOFF_FULL_JITTER, 1, 10, 0, 0); /* seed 0 still works */
    double r = tm_backoff_rand(&a);
    CHECK(r >= 0 && r < 1);
}

static void test_bad_parameters_clamped(void) {
    tm_backoff b;
    tm_backoff_init(&b, TM_BACKOFF_FULL_JITTER, 0, -5, 0, 3);
    CHECK_INT(b.base_ms, 1);
    CHECK_INT(b.cap_ms, 1);
    for (int i = 0; i < 100; i++) {
        int64_t d = tm_backoff_next(&b, 0);
        CHECK(d >= 0 && d <= 1);
    }
}

/* A cap near INT64_MAX ("practically unbounded") must not overflow the growth arithmetic:
 * every delay stays within [0, cap] (or [base, cap]) and the ceiling keeps growing. */
static void test_huge_cap_no_overflow(void) {
    tm_backoff b;
    tm_backoff_init(&b, TM_BACKOFF_FULL_JITTER, 1000, INT64_MAX, 0, 11);
    int64_t biggest = 0;
    for (int i = 0; i < 200; i++) {
        int64_t d = tm_backoff_next(&b, 0);
        CHECKF(d >= 0, "attempt %d: delay %lld", i, (long long)d);
        if (d > biggest)
            biggest = d;
    }
    CHECKF(biggest > ((int64_t)1 << 50), "largest delay %lld", (long long)biggest);
    tm_backoff_init(&b, TM_BACKOFF_DECORRELATED, 1000, INT64_MAX - 1, 0, 12);
    for (int i = 0; i < 200; i++) {
        int64_t d = tm_backoff_next(&b, 0);
        CHECKF(d >= 1000 && d <= INT64_MAX - 1, "attempt %d: delay %lld", i, (long long)d);
    }
    tm_backoff_init(&b, TM_BACKOFF_DECORRELATED, INT64_MAX / 2, INT64_MAX, 0, 13);
    for (int i = 0; i < 50; i++) {
        int64_t d = tm_backoff_next(&b, 0);
        CHECKF(d >= INT64_MAX / 2, "attempt %d: delay %lld", i, (long long)d);
    }
}

int main(void) {
    RUN(test_full_jitter_bounds_and_growth);
    RUN(test_huge_cap_no_overflow);
    RUN(test_decorrelated_bounds);
    RUN(test_reset_after_stable_period);
    RUN(test_seed_reproducible_and_distinct);
    RUN(test_bad_parameters_clamped);
    return TEST_SUMMARY();
}
