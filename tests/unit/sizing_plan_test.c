/* sizing_plan_test.c: a process's sizing plan (labeler/sizing_plan.h, sizing_samples.h): the
 * strategy chosen by replay, the cold start, bad figures, the machine bound, the status JSON. */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "labeler/sizing_plan.h"
#include "labeler/sizing_samples.h"

#define GIB 1073741824.0

static sz_plan_opts opts(int strategy, int cold) {
    sz_plan_opts o;
    sz_plan_opts_default(&o, 16, 64 * GIB);
    o.strategy = strategy;
    o.cold_start = cold;
    return o;
}

/* Quantized with n = 1 allocates the maximum so far: 2, 4, 6 GiB peaks -> 6 GiB first; after a
 * failure at 6 there is no bucket above: the machine. */
static void test_fixed_strategy(void) {
    double mem[] = {2 * GIB, 4 * GIB, 6 * GIB}, cores[] = {1, 2, 1};
    sz_plan_opts o = opts(SZ_QUANTIZED, 2);
    sz_plan p;
    tm_err err = {0};
    CHECK_INT(sz_plan_build(&p, &o, cores, mem, NULL, 3, &err), 0);
    CHECK(p.ready);
    CHECK_INT(p.samples, 3);
    CHECK_NEAR(sz_plan_first(&p, SZ_RES_MEMORY), 6 * GIB, 1);
    CHECK_NEAR(sz_plan_first(&p, SZ_RES_CORES), 2, 1e-9);
    CHECK_NEAR(sz_plan_retry(&p, SZ_RES_MEMORY, 6 * GIB), 64 * GIB, 1);
    sz_plan_free(&p);
}

/* Empty and single-sample histories are not ready (cold start 2): no recommendation. */
static void test_cold_start(void) {
    double mem[] = {2 * GIB}, cores[] = {1};
    sz_plan_opts o = opts(SZ_STRATEGY_BEST, 2);
    sz_plan p;
    tm_err err = {0};
    CHECK_INT(sz_plan_build(&p, &o, cores, mem, NULL, 0, &err), 0);
    CHECK(!p.ready);
    CHECK(isnan(sz_plan_first(&p, SZ_RES_MEMORY)));
    sz_plan_free(&p);
    CHECK_INT(sz_plan_build(&p, &o, cores, mem, NULL, 1, &err), 0);
    CHECK(!p.ready);
    CHECK(isnan(sz_plan_first(&p, SZ_RES_MEMORY)));
    CHECK(isnan(sz_plan_retry(&p, SZ_RES_MEMORY, GIB)));
    json_t *j = sz_plan_json(&p);
    CHECK(json_is_null(json_object_get(j, "recommendation")));
    CHECK(json_is_false(json_object_get(j, "ready")));
    json_decref(j);
    sz_plan_free(&p);
}

/* Absurd figures: NaN, negative and infinite peaks are skipped (3 usable of 6, so ready), a
 * peak above the machine counts as the machine: nothing above the machine comes out. */
static void test_bad_figures(void) {
    double mem[] = {NAN, -5, INFINITY, 1 * GIB, 1e30, 2 * GIB};
    double cores[] = {-1, NAN, 1, 1, 1e9, 2};
    double rt[] = {0, -1, NAN, 10, 10, 10};
    sz_plan_opts o = opts(SZ_STRATEGY_BEST, 2);
    sz_plan p;
    tm_err err = {0};
    CHECK_INT(sz_plan_build(&p, &o, cores, mem, rt, 6, &err), 0);
    CHECK_INT(p.samples, 3);
    CHECK(p.ready);
    for (int r = 0; r < SZ_RES_N; r++) {
        double f = sz_plan_first(&p, r);
        CHECKF(f > 0 && f <= o.machine[r], "resource %d first %g", r, f);
        double g = sz_plan_retry(&p, r, f);
        CHECKF(g > f || g == o.machine[r], "resource %d retry %g after %g", r, g, f);
        CHECK(g <= o.machine[r]);
    }
    sz_plan_free(&p);
    /* bad options are refused with the figure named */
    o.machine[SZ_RES_MEMORY] = 0;
    CHECK_INT(sz_plan_build(&p, &o, cores, mem, rt, 6, &err), -1);
    CHECK(strstr(err.msg, "memory") != NULL);
    o = opts(SZ_DOUBLE, 2);
    CHECK_INT(sz_plan_build(&p, &o, cores, mem, rt, 6, &err), -1);
    CHECK(strstr(err.msg, "history") != NULL);
}

/* "best" replays the history: on a bimodal history (many 1 GiB tasks, some 10 GiB) a single
 * bucket at the maximum (quantized n = 1, first 10 GiB) wastes more than a two-bucket chain
 * (greedy/exhaustive: 1 GiB, then 10 GiB), so best picks one of the latter and its first
 * allocation is the small bucket. */
static void test_best_replay(void) {
    double mem[60], cores[60];
    for (int i = 0; i < 60; i++) {
        mem[i] = (i % 6 == 5 ? 10 : 1) * GIB;
        cores[i] = 1;
    }
    sz_plan_opts o = opts(SZ_STRATEGY_BEST, 2);
    sz_plan p;
    tm_err err = {0};
    CHECK_INT(sz_plan_build(&p, &o, cores, mem, NULL, 60, &err), 0);
    CHECKF(p.strategy[SZ_RES_MEMORY] == SZ_GREEDY || p.strategy[SZ_RES_MEMORY] == SZ_EXHAUSTIVE,
           "chose %s", sz_strategy_name(p.strategy[SZ_RES_MEMORY]));
    CHECK_NEAR(sz_plan_first(&p, SZ_RES_MEMORY), 1 * GIB, 1);
    CHECK_NEAR(sz_plan_retry(&p, SZ_RES_MEMORY, 1 * GIB), 10 * GIB, 1);
    json_t *j = sz_plan_json(&p);
    CHECK_INT(json_array_size(json_object_get(json_object_get(j, "buckets"), "memoryBytes")), 2);
    CHECK_NEAR(
        json_number_value(json_object_get(json_object_get(j, "recommendation"), "memoryBytes")),
        1 * GIB, 1);
    json_decref(j);
    sz_plan_free(&p);
}

/* "paper" (the default) chooses among the paper's quantized and k-means with 1-4 buckets: on
 * the same bimodal history one bucket (10 GiB for everything) loses to two (1 GiB, then
 * 10 GiB), so the plan has n >= 2 and starts at 1 GiB. */
static void test_paper_replay(void) {
    double mem[60], cores[60];
    for (int i = 0; i < 60; i++) {
        mem[i] = (i % 6 == 5 ? 10 : 1) * GIB;
        cores[i] = 1;
    }
    sz_plan_opts o;
    sz_plan_opts_default(&o, 16, 64 * GIB);
    CHECK_INT(o.strategy, SZ_STRATEGY_PAPER);
    sz_plan p;
    tm_err err = {0};
    CHECK_INT(sz_plan_build(&p, &o, cores, mem, NULL, 60, &err), 0);
    CHECK(p.strategy[SZ_RES_MEMORY] == SZ_QUANTIZED || p.strategy[SZ_RES_MEMORY] == SZ_KMEANS);
    CHECK(p.n[SZ_RES_MEMORY] >= 2);
    CHECK_NEAR(sz_plan_first(&p, SZ_RES_MEMORY), 1 * GIB, 1);
    CHECK_NEAR(sz_plan_retry(&p, SZ_RES_MEMORY, 1 * GIB), 10 * GIB, 1);
    json_t *j = sz_plan_json(&p);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "n"), "memory")),
              p.n[SZ_RES_MEMORY]);
    json_decref(j);
    sz_plan_free(&p);
    CHECK_INT(sz_plan_strategy_parse("paper"), SZ_STRATEGY_PAPER);
    CHECK_INT(sz_plan_strategy_parse("best"), SZ_STRATEGY_BEST);
    CHECK_INT(sz_plan_strategy_parse("vpa"), SZ_VPA);
    CHECK_INT(sz_plan_strategy_parse("double"), -3);
    CHECK_INT(sz_plan_strategy_parse(NULL), -3);
    CHECK_STR(sz_plan_strategy_name(SZ_STRATEGY_PAPER), "paper");
}

/* From the store's samples: only the named process, cores from %cpu. */
static void test_from_samples(void) {
    lab_sample v[] = {
        {"A", {200, 1 * GIB, NAN}, 1000},
        {"B", {100, 9 * GIB, NAN}, 1000},
        {"A", {100, 2 * GIB, NAN}, 1000},
        {"A", {NAN, NAN, NAN}, NAN},
    };
    sz_plan_opts o = opts(SZ_QUANTIZED, 2);
    sz_plan p;
    tm_err err = {0};
    CHECK_INT(lab_sizing_plan(v, 4, "A", &o, &p, &err), 0);
    CHECK_INT(p.samples, 2);
    CHECK_NEAR(sz_plan_first(&p, SZ_RES_MEMORY), 2 * GIB, 1);
    CHECK_NEAR(sz_plan_first(&p, SZ_RES_CORES), 2, 1e-9);
    sz_plan_free(&p);
    CHECK_INT(lab_sizing_plan(v, 4, "C", &o, &p, &err), 0);
    CHECK(!p.ready);
    sz_plan_free(&p);
}

/* TaskProfile status.sizing: the plan's JSON, null recommendation until ready. */
static void test_status(void) {
    lab_sample v[] = {{"A", {100, 1 * GIB, NAN}, 1000},
                      {"A", {100, 1 * GIB, NAN}, 1000},
                      {"A", {100, 1 * GIB, NAN}, 1000},
                      {"A", {100, 8 * GIB, NAN}, 1000}};
    json_t *j = lab_sizing_status(v, 4, "A");
    CHECK(json_is_true(json_object_get(j, "ready")));
    CHECK_INT(json_integer_value(json_object_get(j, "samples")), 4);
    json_t *mb = json_object_get(json_object_get(j, "buckets"), "memoryBytes");
    CHECK(json_array_size(mb) >= 1);
    CHECK_NEAR(
        json_number_value(json_object_get(json_object_get(j, "recommendation"), "memoryBytes")),
        json_number_value(json_array_get(mb, 0)), 0);
    json_decref(j);
    j = lab_sizing_status(v, 1, "A");
    CHECK(json_is_false(json_object_get(j, "ready")));
    CHECK(json_is_null(json_object_get(j, "recommendation")));
    json_decref(j);
}

int main(void) {
    RUN(test_fixed_strategy);
    RUN(test_cold_start);
    RUN(test_bad_figures);
    RUN(test_best_replay);
    RUN(test_paper_replay);
    RUN(test_from_samples);
    RUN(test_status);
    return TEST_SUMMARY();
}
