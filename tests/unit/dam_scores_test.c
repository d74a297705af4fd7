/* dam_scores_test.c: each DAM score and the weighted mean on hand-computed examples. */
#include <math.h>

#include "dam/scores.h"
#include "harness.h"

static void test_load(void) {
    CHECK_NEAR(dam_score_load(0, 100), 1.0, 1e-12);       /* 1/(1+0) */
    CHECK_NEAR(dam_score_load(50, 100), 2.0 / 3, 1e-12);  /* 1/(1+0.5) */
    CHECK_NEAR(dam_score_load(100, 100), 0.5, 1e-12);     /* 1/(1+1) */
    CHECK_NEAR(dam_score_load(300, 400), 4.0 / 7, 1e-12); /* 1/(1+0.75) = 0.5714 */
}

static void test_perf(void) {
    CHECK_NEAR(dam_score_perf(523, 523), 1.0, 1e-12);
    CHECK_NEAR(dam_score_perf(418, 523), 418.0 / 523, 1e-12); /* 0.7992 */
    CHECK_NEAR(dam_score_perf(5, 0), 1.0, 1e-12); /* nothing measured: no one is faster */
}

static void test_wait(void) {
    CHECK_NEAR(dam_score_wait(3600, 0), 1.0, 1e-12);
    CHECK_NEAR(dam_score_wait(3600, 3600), 0.5, 1e-12);
    CHECK_NEAR(dam_score_wait(6195, 600), 6195.0 / 6795, 1e-12); /* 0.9117 */
    CHECK_NEAR(dam_score_wait(0, 0), 1.0, 1e-12);
}

static void test_data(void) {
    CHECK_NEAR(dam_score_data(0), 1.0, 1e-12);
    CHECK_NEAR(dam_score_data(1), 0.36787944117, 1e-10); /* e^-1 */
    CHECK_NEAR(dam_score_data(2), 0.13533528324, 1e-10); /* e^-2 */
}

static void test_data_x(void) {
    dam_dataset a = {"a", "lrz-dss", "lrz", 30}, b = {"b", "it4i-lustre", "it4i", 10};
    const dam_dataset *ds[] = {&a, &b};
    /* paper classes: at it4i-lustre, a is at another site (2), b local (0): 0.75*2 + 0.25*0 */
    CHECK_NEAR(dam_data_x(ds, 2, NULL, 0, "it4i-lustre", "it4i", 100), 1.5, 1e-12);
    /* at lrz-other (site lrz): a same site (1), b other site (2): 0.75*1 + 0.25*2 = 1.25 */
    CHECK_NEAR(dam_data_x(ds, 2, NULL, 0, "lrz-other", "lrz", 100), 1.25, 1e-12);
    /* a speed from lrz-dss to it4i-lustre: a takes 30/3 = 10 s of a 100 s run: x_a = 0.1;
     * 0.75*0.1 + 0.25*0 = 0.075 */
    dam_transfer t = {"lrz-dss", "it4i-lustre", 3};
    CHECK_NEAR(dam_data_x(ds, 2, &t, 1, "it4i-lustre", "it4i", 100), 0.075, 1e-12);
    CHECK_NEAR(dam_data_x(ds, 0, NULL, 0, "x", "y", 100), 0, 1e-12);
    /* sizes all 0 weigh equally: (2 + 0) / 2 */
    dam_dataset z1 = {"z1", "lrz-dss", "lrz", 0}, z2 = {"z2", "it4i-lustre", "it4i", 0};
    const dam_dataset *zs[] = {&z1, &z2};
    CHECK_NEAR(dam_data_x(zs, 2, NULL, 0, "it4i-lustre", "it4i", 100), 1.0, 1e-12);
}

static void test_perf_from_groups(void) {
    /* the node-groups example: 20 cores at 369, 20 at 467, 40 at 523:
     * (20*369 + 20*467 + 40*523) / 80 = (7380 + 9340 + 20920) / 80 = 470.5 */
    double cores[] = {20, 20, 40}, perf[] = {369, 467, 523};
    CHECK_NEAR(dam_perf_from_groups(cores, perf, 3), 470.5, 1e-9);
    double none[] = {0, 0, 0};
    CHECK(dam_perf_from_groups(cores, none, 3) <= 0);
}

static void test_weighted_mean(void) {
    double s[] = {0.8, 1.0, 0.5, 0.2};
    double w1[] = {1, 1, 1, 1}; /* (0.8 + 1 + 0.5 + 0.2) / 4 = 0.625 */
    CHECK_NEAR(dam_weighted_mean(s, w1, 4), 0.625, 1e-12);
    double w2[] = {1, 0.25, 1, 1}; /* (0.8 + 0.25 + 0.5 + 0.2) / 3.25 = 1.75 / 3.25 */
    CHECK_NEAR(dam_weighted_mean(s, w2, 4), 1.75 / 3.25, 1e-12);
    double w0[] = {0, 0, 0, 0};
    CHECK_NEAR(dam_weighted_mean(s, w0, 4), 0, 1e-12);
}

int main(void) {
    RUN(test_load);
    RUN(test_perf);
    RUN(test_wait);
    RUN(test_data);
    RUN(test_data_x);
    RUN(test_perf_from_groups);
    RUN(test_weighted_mean);
    return TEST_SUMMARY();
}
