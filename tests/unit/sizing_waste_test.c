/* sizing_waste_test.c: the total waste and OOM retries `tarema-sim sizing` reports beside WRR
 * and ATE (sim/sizing_eval.h), on tasks computed by hand in the comments. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "sim/sizing_eval.h"

static void dataset(sim_sz_dataset *d) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "hand");
    d->machine[SZ_CORES] = 16;
    d->machine[SZ_MEMORY] = 8;
    d->machine[SZ_DISK] = 8;
}

/* Memory only, machine 8: tasks (peak 0.5, t 2) and (peak 3, t 1).
 * whole machine: waste (8 - 0.5) 2 + (8 - 3) 1 = 20, no failure.
 * double (1, 2, 4, 8): task 1 fits 1: 0.5 x 2 = 1; task 2 fails 1 and 2 (two OOMs), fits 4:
 *   (1 + 2 + 4 - 3) x 1 = 4; total 5, 2 OOM retries. */
static void test_memory_waste(void) {
    sim_sz_dataset d;
    dataset(&d);
    double p1[SZ_NRES] = {NAN, 0.5, NAN}, p2[SZ_NRES] = {NAN, 3, NAN};
    CHECK_INT(sim_sz_add(&d, "a", 2, p1, NULL), 0);
    CHECK_INT(sim_sz_add(&d, "a", 1, p2, NULL), 0);
    sim_sz_result r;
    CHECK_INT(sim_sz_evaluate(&d, SZ_WHOLE_MACHINE, -1, &r, NULL), 0);
    CHECK_NEAR(r.waste[SZ_MEMORY], 20, 1e-9);
    CHECK_INT(r.oom, 0);
    CHECK(isnan(r.waste[SZ_CORES]));
    CHECK_INT(sim_sz_evaluate(&d, SZ_DOUBLE, -1, &r, NULL), 0);
    CHECK_NEAR(r.waste[SZ_MEMORY], 5, 1e-9);
    CHECK_INT(r.oom, 2);
    CHECK_INT(r.failures, 2);
    sim_sz_dataset_free(&d);
}

/* A failure on cores alone is a failure but not an OOM: one task, 3 cores of 16 and memory 0.5
 * of 8, t 1. double: first 2 cores and 1 memory: cores exceeded (memory fits), then 4 cores and
 * 2 memory fit. failures 1, oom 0; memory waste (1 + 2 - 0.5) x 1 = 2.5. */
static void test_cores_failure_is_not_oom(void) {
    sim_sz_dataset d;
    dataset(&d);
    double p[SZ_NRES] = {3, 0.5, NAN};
    CHECK_INT(sim_sz_add(&d, "a", 1, p, NULL), 0);
    sim_sz_result r;
    CHECK_INT(sim_sz_evaluate(&d, SZ_DOUBLE, -1, &r, NULL), 0);
    CHECK_INT(r.failures, 1);
    CHECK_INT(r.oom, 0);
    CHECK_NEAR(r.waste[SZ_MEMORY], 2.5, 1e-9);
    CHECK_NEAR(r.waste[SZ_CORES], (2 + 4 - 3) * 1.0, 1e-9);
    sim_sz_dataset_free(&d);
}

/* --cold-start: two tasks of peak 3 (t 1), machine 8, quantized level 3. The paper's cold
 * start (10) puts both on the machine: waste 5 + 5 = 10; a cold start of 1 only the first,
 * the second gets the history's 3: waste 5. */
static void test_cold_start(void) {
    sim_sz_dataset d;
    dataset(&d);
    double p[SZ_NRES] = {NAN, 3, NAN};
    CHECK_INT(sim_sz_add(&d, "a", 1, p, NULL), 0);
    CHECK_INT(sim_sz_add(&d, "a", 1, p, NULL), 0);
    sim_sz_result r;
    CHECK_INT(sim_sz_evaluate(&d, SZ_QUANTIZED, 3, &r, NULL), 0);
    CHECK_NEAR(r.waste[SZ_MEMORY], 10, 1e-9);
    d.cold_start = 1;
    CHECK_INT(sim_sz_evaluate(&d, SZ_QUANTIZED, 3, &r, NULL), 0);
    CHECK_NEAR(r.waste[SZ_MEMORY], 5, 1e-9);
    sim_sz_dataset_free(&d);
}

int main(void) {
    RUN(test_memory_waste);
    RUN(test_cores_failure_is_not_oom);
    RUN(test_cold_start);
    return TEST_SUMMARY();
}
