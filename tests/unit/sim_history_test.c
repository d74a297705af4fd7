/* sim_history_test.c: the simulator's incremental history gives exactly the labels and mean
 * runtimes the labeler's lab_label_compute gives on the same samples, after every insertion:
 * random histories with ties, missing values and one to four node classes, and the real
 * lotaru-shaped case of a value sitting exactly on a bound. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "labeler/labels.h"
#include "sim/history.h"

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static const char *const procs[] = {"A", "B", "C", "D", "E", "F", "G"};
#define NPROCS 7

/* Values are multiples of 0.5 in a small range so ties are common and sums exact. */
static double draw(uint64_t *s, int f) {
    if (next(s) % 11 == 0)
        return NAN; /* not measured */
    return 0.5 * (double)(next(s) % (f == LAB_IO ? 5 : 40));
}

/* Compares every process's labels and mean runtime of h with lab_label_compute's; returns the
 * number of mismatches (and prints the first). */
static int compare(sim_history *h, int nprocs, const lab_sample *smp, size_t n,
                   const lab_classes *cls) {
    tm_err err = {0};
    lab_labeling *l = lab_label_compute(smp, n, cls, &err);
    if (!l) {
        printf("    lab_label_compute: %s\n", err.msg);
        return 1;
    }
    int bad = 0;
    for (int p = 0; p < nprocs; p++) {
        int lab[LAB_NFEATURES];
        double rt;
        long runs = sim_history_label(h, p, lab, &rt);
        const lab_process_label *want = NULL;
        for (size_t k = 0; k < l->nprocs; k++)
            if (strcmp(l->procs[k].process, procs[p]) == 0)
                want = &l->procs[k];
        if (!want) {
            bad += runs != 0;
            continue;
        }
        int same = runs == want->runs &&
                   (rt == want->mean_realtime_ms || (isnan(rt) && isnan(want->mean_realtime_ms)));
        for (int f = 0; f < LAB_NFEATURES; f++)
            same &= lab[f] == want->label[f];
        if (!same && bad++ == 0)
            printf(
                "    after %zu samples, %s: labels %d %d %d runs %ld, labeler %d %d %d runs %ld\n",
                n, procs[p], lab[0], lab[1], lab[2], runs, want->label[0], want->label[1],
                want->label[2], want->runs);
    }
    lab_labeling_free(l);
    return bad;
}

static void run_case(int nclasses, uint64_t seed, size_t nsamples) {
    static const double cores[] = {40, 32, 32, 16};
    lab_classes cls[LAB_NFEATURES];
    for (int f = 0; f < LAB_NFEATURES; f++) {
        memset(&cls[f], 0, sizeof cls[f]);
        cls[f].n = f == LAB_IO ? 1 : nclasses; /* io: equal on every node, as in the paper */
        for (int i = 0; i < cls[f].n; i++)
            cls[f].cores[i] = cores[i];
    }
    /* the universe: every value draw() can produce */
    double uv[LAB_NFEATURES][41];
    const double *u[LAB_NFEATURES] = {uv[0], uv[1], uv[2]};
    size_t nu[LAB_NFEATURES] = {41, 41, 41};
    for (int f = 0; f < LAB_NFEATURES; f++) {
        for (int i = 0; i < 40; i++)
            uv[f][i] = 0.5 * i;
        uv[f][40] = NAN;
    }
    tm_err err = {0};
    sim_history *h = sim_history_new(NPROCS, cls, u, nu, &err);
    CHECKF(h != NULL, "%s", err.msg);
    lab_sample *smp = calloc(nsamples, sizeof *smp);
    if (!h || !smp) {
        sim_history_free(h);
        free(smp);
        return;
    }
    uint64_t s = seed;
    int bad = 0;
    for (size_t i = 0; i < nsamples && !bad; i++) {
        int p = (int)(next(&s) % NPROCS);
        smp[i].process = procs[p];
        for (int f = 0; f < LAB_NFEATURES; f++)
            smp[i].value[f] = draw(&s, f);
        smp[i].realtime_ms = (double)(1000 * (1 + next(&s) % 50));
        CHECK(sim_history_add(h, p, smp[i].value, smp[i].realtime_ms, &err) == 0);
        CHECK_INT((long)sim_history_count(h), (long)i + 1);
        bad = compare(h, NPROCS, smp, i + 1, cls);
    }
    CHECKF(bad == 0, "%d classes, seed %llu: %d mismatches", nclasses, (unsigned long long)seed,
           bad);
    sim_history_free(h);
    free(smp);
}

static void test_matches_labeler(void) {
    for (int k = 1; k <= 4; k++)
        for (uint64_t seed = 1; seed <= 3; seed++)
            run_case(k, seed * 7919 + (uint64_t)k, 300);
}

/* Three equal classes (the 5;5;5 cluster) and samples 10, 20, 30: the bounds sit at the 1/3
 * and 2/3 quantiles, exactly on 20 (1/3 + 1/3 lands a hair off; the labeler snaps it), so a
 * process measuring 20 goes up to label 2 in both. */
static void test_value_on_bound(void) {
    lab_classes cls[LAB_NFEATURES];
    for (int f = 0; f < LAB_NFEATURES; f++)
        cls[f] = (lab_classes){3, {40, 40, 40}};
    const double vals[] = {10, 20, 30};
    const double *u[LAB_NFEATURES] = {vals, vals, vals};
    size_t nu[LAB_NFEATURES] = {3, 3, 3};
    tm_err err = {0};
    sim_history *h = sim_history_new(3, cls, u, nu, &err);
    CHECKF(h != NULL, "%s", err.msg);
    if (!h)
        return;
    lab_sample smp[3];
    for (int i = 0; i < 3; i++) {
        smp[i] = (lab_sample){procs[i], {vals[i], vals[i], vals[i]}, 1000.0 * (i + 1)};
        CHECK(sim_history_add(h, i, smp[i].value, smp[i].realtime_ms, &err) == 0);
    }
    CHECK_INT(compare(h, 3, smp, 3, cls), 0);
    int lab[LAB_NFEATURES];
    double rt;
    CHECK_INT(sim_history_label(h, 1, lab, &rt), 1);
    CHECK_INT(lab[LAB_CPU], 2);
    CHECK_NEAR(rt, 2000, 1e-9);
    /* a value nobody announced is refused, not silently misplaced */
    const double odd[LAB_NFEATURES] = {15, NAN, NAN};
    CHECK(sim_history_add(h, 0, odd, 1, &err) < 0);
    CHECKF(strstr(err.msg, "15") != NULL, "%s", err.msg);
    /* a process out of range has no samples (and is no out-of-bounds read) */
    CHECK_INT(sim_history_label(h, 3, lab, &rt), 0);
    /* a process without samples is unlabeled and has no runtime */
    sim_history *e = sim_history_new(1, cls, u, nu, &err);
    CHECK(e != NULL);
    if (e) {
        CHECK_INT(sim_history_label(e, 0, lab, &rt), 0);
        CHECK_INT(lab[LAB_CPU], 0);
        CHECK(isnan(rt));
    }
    sim_history_free(e);
    sim_history_free(h);
}

/* Where the labeler's snap matters: classes of 7, 11 and 7 cores and 26 samples put the first
 * bound at h = 25 * 7/25 = 7.000000000000001, a hair above the order statistic 7. Snapped, the
 * bound is exactly sorted[7] = 8 and a process measuring 8 goes up to label 2; unsnapped it
 * would be 8 + 1e-12 and label 1. */
static void test_snap_on_bound(void) {
    lab_classes cls[LAB_NFEATURES];
    for (int f = 0; f < LAB_NFEATURES; f++)
        cls[f] = (lab_classes){3, {7, 11, 7}};
    double vals[26];
    for (int i = 0; i < 26; i++)
        vals[i] = i < 8 ? i + 1 : 992 + i; /* 1..8, then 1000..1017 */
    const double *u[LAB_NFEATURES] = {vals, vals, vals};
    size_t nu[LAB_NFEATURES] = {26, 26, 26};
    tm_err err = {0};
    sim_history *h = sim_history_new(3, cls, u, nu, &err);
    CHECKF(h != NULL, "%s", err.msg);
    if (!h)
        return;
    lab_sample smp[26];
    for (int i = 0; i < 26; i++) {
        int p = vals[i] == 8 ? 0 : vals[i] < 8 ? 1 : 2;
        smp[i] = (lab_sample){procs[p], {vals[i], vals[i], vals[i]}, 1000};
        CHECK(sim_history_add(h, p, smp[i].value, 1000, &err) == 0);
    }
    CHECK_INT(compare(h, 3, smp, 26, cls), 0);
    int lab[LAB_NFEATURES];
    double rt;
    sim_history_label(h, 0, lab, &rt);
    CHECK_INT(lab[LAB_CPU], 2);
    sim_history_free(h);
}

static void test_bad_classes(void) {
    lab_classes cls[LAB_NFEATURES];
    for (int f = 0; f < LAB_NFEATURES; f++)
        cls[f] = (lab_classes){2, {8, 0}};
    const double vals[] = {1};
    const double *u[LAB_NFEATURES] = {vals, vals, vals};
    size_t nu[LAB_NFEATURES] = {1, 1, 1};
    tm_err err = {0};
    sim_history *h = sim_history_new(1, cls, u, nu, &err);
    CHECK(h == NULL);
    CHECKF(strstr(err.msg, "cores") != NULL, "%s", err.msg);
    sim_history_free(h);
}

int main(void) {
    RUN(test_matches_labeler);
    RUN(test_value_on_bound);
    RUN(test_snap_on_bound);
    RUN(test_bad_classes);
    return TEST_SUMMARY();
}
