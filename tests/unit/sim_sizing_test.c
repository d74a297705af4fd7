/* sim_sizing_test.c: WRR and ATE (sim/sizing_eval.h) on tiny datasets computed by hand in the
 * comments, the three levels, the synthetic datasets' means, and bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "sim/sizing_eval.h"

/* A dataset measuring memory only on a machine of 8 units. */
static void tiny(sim_sz_dataset *d) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "tiny");
    d->machine[SZ_CORES] = 16;
    d->machine[SZ_MEMORY] = 8;
    d->machine[SZ_DISK] = 8;
}

static void add(sim_sz_dataset *d, const char *type, double rt, double mem) {
    double p[SZ_NRES] = {NAN, mem, NAN};
    CHECK_INT(sim_sz_add(d, type, rt, p, NULL), 0);
}

static void test_wrr_ate_by_hand(void) {
    /* two tasks: (peak 0.5, t 2) and (peak 3, t 1); machine 8.
     * whole machine: waste (8 - 0.5) 2 + (8 - 3) 1 = 20; ATE (0.5/8 + 3/8) / 2 = 21.875 %.
     * double (first 8/8 = 1): task 1 fits 1: waste 0.5 x 2 = 1, eff 0.5; task 2 fails 1 and 2,
     *   fits 4: waste (1 + 2 + 4 - 3) x 1 = 4, eff 3/7. WRR 1 - 5/20 = 75 %;
     *   ATE (0.5 + 3/7) / 2 = 46.428571 %; 2 failures.
     * declared (1.05 x 3 = 3.15): waste 2.65 x 2 + 0.15 = 5.45, WRR 1 - 5.45/20 = 72.75 %;
     *   ATE (0.5 + 3) / 3.15 / 2 = 55.555556 %. */
    sim_sz_dataset d;
    tiny(&d);
    add(&d, "a", 2, 0.5);
    add(&d, "a", 1, 3);
    sim_sz_result r;
    CHECK_INT(sim_sz_evaluate(&d, SZ_WHOLE_MACHINE, -1, &r, NULL), 0);
    CHECK_NEAR(r.wrr[SZ_MEMORY], 0, 1e-9);
    CHECK_NEAR(r.ate[SZ_MEMORY], 21.875, 1e-9);
    CHECK(isnan(r.ate[SZ_CORES]));
    CHECK_INT(sim_sz_evaluate(&d, SZ_DOUBLE, -1, &r, NULL), 0);
    CHECK_NEAR(r.wrr[SZ_MEMORY], 75, 1e-9);
    CHECK_NEAR(r.ate[SZ_MEMORY], 100 * (0.5 + 3.0 / 7) / 2, 1e-9);
    CHECK_INT(r.failures, 2);
    CHECK_INT(sim_sz_evaluate(&d, SZ_DECLARED, -1, &r, NULL), 0);
    CHECK_NEAR(r.wrr[SZ_MEMORY], 72.75, 1e-9);
    CHECK_NEAR(r.ate[SZ_MEMORY], 100 * 3.5 / 3.15 / 2, 1e-9);
    CHECK_INT(r.failures, 0);
    sim_sz_dataset_free(&d);
}

static void test_levels_by_hand(void) {
    /* 22 tasks alternating A (peak 1) and B (peak 6), t = 1, machine 8, cold start 10.
     * Whole machine waste: 11 x 7 + 11 x 2 = 99.
     * Quantized level 3 (a history per type, n = 1): 10 of each on the machine (waste
     *   10 x 7 + 10 x 2 = 90), the 11th of each exactly fits: WRR 1 - 90/99 = 9.0909 %;
     *   ATE (10/8 + 1 + 60/8 + 1) / 22 = 10.75/22 = 48.8636 %.
     * Level 1 (one history, n = 1): 5 A and 5 B on the machine (waste 35 + 10 = 45), then
     *   the bucket is the maximum 6: 6 A waste 5 each, 6 B fit: WRR 1 - 75/99 = 24.2424 %;
     *   ATE (5/8 + 30/8 + 6/6 + 6) / 22 = 11.375/22 = 51.7045 %.
     * Level 2 (one history, n = 2): the history never has more B than A, so the median
     *   delimiter (rank ceil(n/2)) is 1: buckets [1, 6]; A fits 1, B fails 1 then fits 6
     *   (waste 1, eff 6/7): WRR 1 - (45 + 6)/99 = 48.4848 %;
     *   ATE (4.375 + 6 + 36/7) / 22 = 70.5357 %, 6 failures. */
    sim_sz_dataset d;
    tiny(&d);
    for (int i = 0; i < 11; i++) {
        add(&d, "A", 1, 1);
        add(&d, "B", 1, 6);
    }
    sim_sz_result r;
    CHECK_INT(sim_sz_evaluate(&d, SZ_QUANTIZED, 3, &r, NULL), 0);
    CHECK_NEAR(r.wrr[SZ_MEMORY], 100 * (1 - 90.0 / 99), 1e-9);
    CHECK_NEAR(r.ate[SZ_MEMORY], 100 * 10.75 / 22, 1e-9);
    CHECK_INT(sim_sz_evaluate(&d, SZ_QUANTIZED, 1, &r, NULL), 0);
    CHECK_NEAR(r.wrr[SZ_MEMORY], 100 * (1 - 75.0 / 99), 1e-9);
    CHECK_NEAR(r.ate[SZ_MEMORY], 100 * 11.375 / 22, 1e-9);
    CHECK_INT(sim_sz_evaluate(&d, SZ_QUANTIZED, 2, &r, NULL), 0);
    CHECK_NEAR(r.wrr[SZ_MEMORY], 100 * (1 - 51.0 / 99), 1e-9);
    CHECK_NEAR(r.ate[SZ_MEMORY], 100 * (4.375 + 6 + 36.0 / 7) / 22, 1e-9);
    CHECK_INT(r.failures, 6);
    /* k-means with two well separated values finds the same two buckets */
    CHECK_INT(sim_sz_evaluate(&d, SZ_KMEANS, 2, &r, NULL), 0);
    CHECK_NEAR(r.wrr[SZ_MEMORY], 100 * (1 - 51.0 / 99), 1e-9);
    tm_err err = {0};
    CHECK_INT(sim_sz_evaluate(&d, SZ_KMEANS, 4, &r, &err), -1);
    CHECK(strstr(err.msg, "level 4") != NULL);
    sim_sz_dataset_free(&d);
}

static void test_synthetic_means(void) {
    /* the whole-machine ATE is the mean over 64 GiB: the paper's row within half a point */
    static const double want[] = {12.4, 39.1, 15.7, 31.3, 30.7};
    const char *const *names = sim_sz_synthetic_names();
    for (int i = 0; names[i]; i++) {
        sim_sz_dataset d;
        CHECK_INT(sim_sz_synthetic(&d, names[i], 1, 3, NULL), 0);
        CHECK_INT(d.n, 2000);
        sim_sz_result r;
        CHECK_INT(sim_sz_evaluate(&d, SZ_WHOLE_MACHINE, -1, &r, NULL), 0);
        CHECKF(fabs(r.ate[SZ_MEMORY] - want[i]) < 0.5, "%s: %g", names[i], r.ate[SZ_MEMORY]);
        /* no peak above the machine, none negative */
        for (size_t k = 0; k < d.n; k++)
            CHECK(d.tasks[k].peak[SZ_MEMORY] > 0 &&
                  d.tasks[k].peak[SZ_MEMORY] <= d.machine[SZ_MEMORY]);
        sim_sz_result all[SIM_SZ_MAX_RESULTS];
        int n = sim_sz_evaluate_all(&d, all, NULL);
        CHECK_INT(n, 15);
        sim_sz_dataset_free(&d);
    }
    sim_sz_dataset d;
    tm_err err = {0};
    CHECK_INT(sim_sz_synthetic(&d, "gamma", 1, 3, &err), -1);
    CHECK(strstr(err.msg, "unknown dataset 'gamma'") != NULL);
}

static void test_bad_files(void) {
    sim_sz_dataset d;
    tm_err err = {0};
    CHECK_INT(sim_sz_load_file(&d, "/nonexistent/trace.txt", &err), -1);
    CHECK(strstr(err.msg, "cannot open") != NULL);
    char path[] = "/tmp/sim_sizing_testXXXXXX.csv";
    int fd = mkstemps(path, 4);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    /* a lotaru header and only a row without a usable peak: no tasks, an error */
    fputs("Label,Machine,Workflow,Task,Realtime,%cpu,peak_rss,rchar,wchar,TaskInputSize\n", f);
    fclose(f);
    CHECK_INT(sim_sz_load_file(&d, path, &err), -1);
    CHECK(strstr(err.msg, "no completed task") != NULL);
    /* a negative peak: the simulator's reader refuses the file as corrupt, naming the line */
    f = fopen(path, "w");
    fputs("Label,Machine,Workflow,Task,Realtime,%cpu,peak_rss,rchar,wchar,TaskInputSize\n"
          "t,n1,w,Q,1000,100,-5,0,0,0\n",
          f);
    fclose(f);
    CHECK_INT(sim_sz_load_file(&d, path, &err), -1);
    CHECK(strstr(err.msg, ":2: negative") != NULL);
    /* absurd peaks (1e30 bytes, 50 cores): clamped to the machine, the run works */
    f = fopen(path, "w");
    fputs("Label,Machine,Workflow,Task,Realtime,%cpu,peak_rss,rchar,wchar,TaskInputSize\n"
          "t,n1,w,P,1000,100,1e30,0,0,0\n"
          "t,n1,w,P,1000,5000,1000,0,0,0\n",
          f);
    fclose(f);
    if (sim_sz_load_file(&d, path, &err) == 0) {
        CHECK_INT(d.n, 2);
        sim_sz_result all[SIM_SZ_MAX_RESULTS];
        int n = sim_sz_evaluate_all(&d, all, &err);
        CHECK_INT(n, 15);
        for (int i = 0; i < n; i++)
            CHECK(all[i].ate[SZ_MEMORY] > 0 && all[i].ate[SZ_MEMORY] <= 100);
        sim_sz_recommendation rec[4];
        CHECK_INT(sim_sz_recommend(&d, rec, &err), 0);
        CHECK(rec[0].max_peak[SZ_MEMORY] <= d.machine[SZ_MEMORY]);
        CHECK(rec[0].vpa[SZ_MEMORY] <= d.machine[SZ_MEMORY]);
        CHECK(rec[0].vpa[SZ_CORES] <= d.machine[SZ_CORES]);
        sim_sz_dataset_free(&d);
    } else {
        CHECKF(0, "load: %s", err.msg);
    }
    unlink(path);
}

static void test_json_shape(void) {
    sim_sz_dataset d;
    CHECK_INT(sim_sz_synthetic(&d, "bimodal", 2, 3, NULL), 0);
    sim_sz_result r[SIM_SZ_MAX_RESULTS];
    int n = sim_sz_evaluate_all(&d, r, NULL);
    json_t *j = sim_sz_report_json(&d, r, n, NULL);
    CHECK_STR(json_string_value(json_object_get(j, "dataset")), "bimodal");
    json_t *res = json_object_get(j, "results");
    CHECK_INT(json_array_size(res), 15);
    json_t *first = json_array_get(res, 0);
    CHECK_STR(json_string_value(json_object_get(first, "strategy")), "whole-machine");
    CHECK(json_is_null(json_object_get(first, "level")));
    CHECK(json_is_number(json_object_get(first, "wrr")));
    json_t *km = json_array_get(res, 7); /* whole, double, declared, quantized x3, kmeans 1, 2 */
    CHECK_STR(json_string_value(json_object_get(km, "strategy")), "kmeans");
    CHECK_INT(json_integer_value(json_object_get(km, "level")), 2);
    json_decref(j);
    sim_sz_dataset_free(&d);
}

int main(void) {
    RUN(test_wrr_ate_by_hand);
    RUN(test_levels_by_hand);
    RUN(test_synthetic_means);
    RUN(test_bad_files);
    RUN(test_json_shape);
    return TEST_SUMMARY();
}
