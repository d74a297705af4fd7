/* sim_bound_test.c: the lower bound of a run's makespan (sim/bound.h) and the headroom the
 * reports derive from it. The bound must be exact where it can be worked out by hand (critical
 * path, request area, cpu work under contention, the fastest type the task FITS), and sound
 * everywhere: no policy's run may end earlier, under the calibrated model (contention and noise)
 * as under the ideal one, shared or isolated. */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "scheduler/plugins/policy/policy.h"
#include "sim/bound.h"
#include "sim/engine.h"
#include "sim/report.h"
#include "sim_yaml.h"

/* Two types of 4 cores: one node of each. */
#define CLUSTER                                                                                    \
    "node_types:\n"                                                                                \
    "  - {name: slow, count: 1, cores: 4, memory: 8Gi,\n"                                          \
    "     bench: {cpu: 200, mem: 8000, io: 500}}\n"                                                \
    "  - {name: fast, count: 1, cores: 4, memory: 8Gi,\n"                                          \
    "     bench: {cpu: 400, mem: 16000, io: 500}}\n"

/* The bound of wf's first run, every task worked out by sim_bound_task as the engine does
 * (no noise). */
static double bound_of(const sim_cluster *c, const sim_workflow *wf, bool contention) {
    size_t n = (size_t)wf->tasks_per_run + 1;
    double *fast = calloc(n, sizeof *fast), *work = calloc(n, sizeof *work),
           *fin = calloc(n, sizeof *fin);
    long *off = calloc((size_t)wf->nprocs + 1, sizeof *off);
    long k = 0;
    for (int p = 0; fast && work && fin && off && p < wf->nprocs; p++) {
        off[p] = k;
        for (int i = 0; i < wf->procs[p].instances; i++, k++)
            sim_bound_task(c, wf, &wf->procs[p], i, false, contention, &fast[k], &work[k]);
    }
    double cores, memory, b = NAN;
    sim_bound_capacity(c, &cores, &memory);
    if (fast && work && fin && off)
        b = sim_bound_run_of(wf, off, cores, memory, fast, work, fin).bound_s;
    free(fast);
    free(work);
    free(fin);
    free(off);
    return b;
}

/* The models the checks run under. */
enum { CALIBRATED, IDEAL, IDEAL_CONTENTION };

/* policy on c and w under model, seed, shared or isolated; NULL (and a failed check naming the
 * policy) when the simulation fails. */
static sim_result *simulate(const sim_cluster *c, const sim_workload *w, const char *policy,
                            int model, uint64_t seed, bool isolate) {
    sim_opts o;
    if (model == CALIBRATED)
        sim_opts_default(&o);
    else
        sim_opts_ideal(&o);
    o.contention = model != IDEAL;
    o.policy = policy;
    o.seed = seed;
    tm_err err = {0};
    sim_result *r = isolate ? sim_run_isolated(c, w, &o, &err) : sim_run(c, w, &o, &err);
    CHECKF(r != NULL, "%s: %s", policy, err.msg);
    return r;
}

/* A chain A -> B (after_each) beside an independent C: the longest path, each task at its
 * fastest type (A 4 s, B 10 s; C 6 s alone), is 14 s; the request area (2 cores x 20 s / 8
 * cores) is 5 s. */
static void test_critical_path(void) {
    sim_cluster *c;
    sim_workload *w;
    bool ok = sim_yaml_load(CLUSTER,
                            "workflows:\n"
                            "  - name: chain\n"
                            "    requests: {cpu: 2, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: A, instances: 1, runtime: {fast: 4, slow: 8}}\n"
                            "      - {name: B, instances: 1, runtime: {fast: 10, slow: 20},\n"
                            "         after_each: [A]}\n"
                            "      - {name: C, instances: 1, runtime: {fast: 6, slow: 12}}\n",
                            &c, &w);
    CHECK(ok);
    if (ok) {
        double f, x;
        sim_bound_task(c, &w->wfs[0], &w->wfs[0].procs[0], 0, false, false, &f, &x);
        CHECK_NEAR(f, 4, 1e-9);
        CHECK_NEAR(x, 0, 1e-9); /* without contention nothing bounds the cpu work */
        CHECK_NEAR(bound_of(c, &w->wfs[0], false), 14, 1e-9);
        /* attained: a policy that runs A and B on the fast node ends the run at 14 s; under the
         * calibrated model at A's and B's noise draws, which the bound must carry (a run that
         * drew below 1 would otherwise end before a noise-free bound) */
        double best = INFINITY;
        int attained = 0, below = 0;
        const char *const *names = sched_policy_names();
        for (int model = 0; model < 2; model++)
            for (uint64_t seed = 1; seed <= 4; seed++)
                for (int i = 0; names[i]; i++) {
                    sim_result *r =
                        simulate(c, w, names[i], model == 0 ? IDEAL : CALIBRATED, seed, false);
                    for (int k = 0; r && k < r->nruns; k++) {
                        double m = r->runs[k].end - r->runs[k].arrival, b = r->runs[k].bound;
                        if (model == 0) {
                            CHECK_NEAR(b, 14, 1e-9);
                            best = fmin(best, m);
                        }
                        attained += model == 1 && fabs(m - b) < 1e-6;
                        below += !(m >= b - 1e-9);
                    }
                    sim_result_free(r);
                }
        CHECK_NEAR(best, 14, 1e-9);
        CHECKF(attained > 0, "no calibrated run attained its bound");
        CHECKF(below == 0, "%d runs ended before their bound", below);
    }
    sim_yaml_free(NULL, w, c);
}

/* Eight independent 2-core tasks of 10 s on the fast type: the path is 10 s, but 8 cores hold
 * at most four at a time: 8 x 2 x 10 / 8 = 20 s. With `after` (B waits for every A) the path
 * adds B's 5 s after the last A: 15 s, still below the area (8 x 2 x 10 + 2 x 5) / 8 = 21.25. */
static void test_request_area(void) {
    sim_cluster *c;
    sim_workload *w;
    bool ok = sim_yaml_load(CLUSTER,
                            "workflows:\n"
                            "  - name: wide\n"
                            "    requests: {cpu: 2, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: A, instances: 8, runtime: {fast: 10, slow: 20}}\n"
                            "      - {name: B, instances: 1, runtime: {fast: 5, slow: 10},\n"
                            "         after: [A]}\n",
                            &c, &w);
    CHECK(ok);
    if (ok)
        CHECK_NEAR(bound_of(c, &w->wfs[0], false), 21.25, 1e-9);
    sim_yaml_free(NULL, w, c);
}

/* Under contention a node processes at most its cores of cpu-bound work: four 1-core requests
 * that each use 4 cores (cpu-bound, sensitivity 1) for 10 s need 4 x 4 x 10 / 8 = 20 s, where
 * the path and the request area say 10 s and 5 s. Without contention the bound stays 10 s. */
static void test_cpu_work(void) {
    sim_cluster *c;
    sim_workload *w;
    bool ok = sim_yaml_load(CLUSTER,
                            "workflows:\n"
                            "  - name: hungry\n"
                            "    requests: {cpu: 1, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: A, instances: 4, runtime: {fast: 10, slow: 20},\n"
                            "         usage: {cpu_pct: 400}, sensitivity: {cpu: 1}}\n",
                            &c, &w);
    CHECK(ok);
    if (ok) {
        CHECK_NEAR(bound_of(c, &w->wfs[0], true), 20, 1e-9);
        CHECK_NEAR(bound_of(c, &w->wfs[0], false), 10, 1e-9);
    }
    sim_yaml_free(NULL, w, c);
}

/* Only the compute share waits for cores: eight such tasks with sensitivity 0.5 need 8 x 4 x 0.5
 * x 10 / 8 = 20 s of the cluster (not 40), and no policy ends them earlier under the ideal
 * model's contention, whose slowdown uses the same declared share. */
static void test_cpu_work_share(void) {
    sim_cluster *c;
    sim_workload *w;
    bool ok = sim_yaml_load(CLUSTER,
                            "workflows:\n"
                            "  - name: half\n"
                            "    requests: {cpu: 1, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: A, instances: 8, runtime: {fast: 10, slow: 20},\n"
                            "         usage: {cpu_pct: 400}, sensitivity: {cpu: 0.5}}\n",
                            &c, &w);
    CHECK(ok);
    if (ok)
        CHECK_NEAR(bound_of(c, &w->wfs[0], true), 20, 1e-9);
    const char *const *names = sched_policy_names();
    for (int i = 0; ok && names[i]; i++) {
        sim_result *r = simulate(c, w, names[i], IDEAL_CONTENTION, 1, false);
        for (int k = 0; r && k < r->nruns; k++) {
            CHECK_NEAR(r->runs[k].bound, 20, 1e-9);
            CHECKF(r->runs[k].end - r->runs[k].arrival >= 20 - 1e-9, "%s ended at %g", names[i],
                   r->runs[k].end - r->runs[k].arrival);
        }
        sim_result_free(r);
    }
    sim_yaml_free(NULL, w, c);
}

/* Requests count as the scheduler counts them, in whole millicores: four 1.0004-core tasks fit
 * one 4-core node together (1000m each), so the run can end at 10 s and the bound must not say
 * 10.004. */
static void test_millicores(void) {
    sim_cluster *c;
    sim_workload *w;
    bool ok = sim_yaml_load("node_types:\n"
                            "  - {name: one, count: 1, cores: 4, memory: 8Gi, speed: {cpu: 1}}\n",
                            "workflows:\n"
                            "  - name: odd\n"
                            "    requests: {cpu: 1.0004, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: A, instances: 4, runtime: {one: 10}}\n",
                            &c, &w);
    CHECK(ok);
    const char *const *names = sched_policy_names();
    for (int i = 0; ok && names[i]; i++) {
        sim_result *r = simulate(c, w, names[i], IDEAL, 1, false);
        for (int k = 0; r && k < r->nruns; k++) {
            CHECK_NEAR(r->runs[k].bound, 10, 1e-9);
            CHECK_NEAR(r->runs[k].end - r->runs[k].arrival, 10, 1e-9);
        }
        sim_result_free(r);
    }
    sim_yaml_free(NULL, w, c);
}

/* A task only counts the types it fits: on a 2-core type it would take 3 s, but it requests 4
 * cores, so its least runtime is the 4-core type's 9 s. */
static void test_fastest_type_it_fits(void) {
    sim_cluster *c;
    sim_workload *w;
    bool ok = sim_yaml_load("node_types:\n"
                            "  - {name: small, count: 2, cores: 2, memory: 8Gi, speed: {cpu: 3}}\n"
                            "  - {name: big, count: 1, cores: 4, memory: 8Gi, speed: {cpu: 1}}\n"
                            "reference: big\n",
                            "workflows:\n"
                            "  - name: fat\n"
                            "    requests: {cpu: 4, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: A, instances: 1, runtime: {small: 3, big: 9}}\n",
                            &c, &w);
    CHECK(ok);
    if (ok)
        CHECK_NEAR(bound_of(c, &w->wfs[0], false), 9, 1e-9);
    sim_yaml_free(NULL, w, c);
}

/* Sound: with every policy, under the calibrated model (contention and noise, several seeds)
 * and the ideal one, shared and isolated, no run ends before its bound and no geometric mean of
 * the workflows' makespans falls below the geometric mean bound; a workload whose tasks
 * crowd the nodes (uses above requests) and chain, so every term of the bound matters. */
static const char MIXED[] = "workflows:\n"
                            "  - name: crowd\n"
                            "    runs: 3\n"
                            "    requests: {cpu: 1, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: A, instances: 6, runtime: {fast: 10, slow: 25},\n"
                            "         usage: {cpu_pct: 300, peak_rss: 2Gi}}\n"
                            "      - {name: B, instances: 6, runtime: {fast: 8, slow: 12},\n"
                            "         after_each: [A], usage: {cpu_pct: 90, peak_rss: 1Gi}}\n"
                            "      - {name: C, instances: 1, runtime: {fast: 5, slow: 9},\n"
                            "         after: [B], requests: {cpu: 3, memory: 2Gi}}\n"
                            "  - name: side\n"
                            "    runs: 2\n"
                            "    start: 3\n"
                            "    gap: 4\n"
                            "    requests: {cpu: 2, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: S, instances: 3, runtime: {fast: 7, slow: 14},\n"
                            "         usage: {cpu_pct: 180}}\n";

static void test_no_policy_beats_it(void) {
    sim_cluster *c;
    sim_workload *w;
    bool ok = sim_yaml_load(CLUSTER, MIXED, &c, &w);
    CHECK(ok);
    const char *const *names = sched_policy_names();
    int runs = 0, below = 0, tight = 0, npolicies = 0;
    double closest = INFINITY;
    while (names[npolicies])
        npolicies++;
    for (int model = CALIBRATED; ok && model <= IDEAL_CONTENTION; model++)
        for (int iso = 0; iso < 2; iso++)
            for (uint64_t seed = 1; seed <= 3; seed++)
                for (int i = 0; names[i]; i++) {
                    sim_result *r = simulate(c, w, names[i], model, seed, iso);
                    if (r) {
                        double g = sqrt(r->wf[0].makespan_mean * r->wf[1].makespan_mean);
                        below += !(g >= r->bound_geomean - 1e-9);
                    }
                    for (int k = 0; r && k < r->nruns; k++) {
                        double m = r->runs[k].end - r->runs[k].arrival, b = r->runs[k].bound;
                        runs++;
                        below += !(m >= b - 1e-9);
                        tight += m < 2 * b;
                        closest = fmin(closest, m / b);
                    }
                    sim_result_free(r);
                }
    CHECKF(!ok || runs == 3 * 2 * 3 * npolicies * 5, "%d runs", runs); /* 3 + 2 per simulation */
    CHECKF(below == 0, "%d runs or geometric means (of %d runs) below their bound", below, runs);
    /* and not vacuous here, where crowding and the slow node cost every policy: some run comes
     * within twice its bound (test_critical_path shows it attained) */
    CHECKF(tight > 0, "no run within 2x its bound (%d runs, closest %.3f)", runs, closest);
    sim_yaml_free(NULL, w, c);
}

/* The headroom is 1 - the geometric mean bound / the geometric mean makespan; the geometric mean
 * bound is never below that of the workflows' own bounds, each the mean of its runs' bounds. */
static void test_headroom(void) {
    sim_cluster *c;
    sim_workload *w;
    bool ok = sim_yaml_load(CLUSTER, MIXED, &c, &w);
    CHECK(ok);
    sim_result *r = ok ? simulate(c, w, "round-robin", CALIBRATED, 1, false) : NULL;
    CHECK(r != NULL);
    if (r) {
        double own = 0, made = 0;
        for (int i = 0; i < 2; i++) {
            double sum = 0;
            int n = 0;
            for (int k = 0; k < r->nruns; k++)
                if (r->runs[k].wf == i) {
                    sum += r->runs[k].bound;
                    n++;
                }
            CHECK_NEAR(r->wf[i].makespan_bound_mean, sum / n, 1e-9);
            own += log(r->wf[i].makespan_bound_mean) / 2;
            made += log(r->wf[i].makespan_mean) / 2;
        }
        CHECK(r->bound_geomean >= exp(own) - 1e-9);
        CHECK_NEAR(sim_report_headroom(r), 1 - r->bound_geomean / exp(made), 1e-12);
        CHECK(sim_report_headroom(r) >= 0);
    }
    sim_yaml_free(r, w, c);
}

/* Two workflows sharing the cluster, each four 2-core tasks of 10 s (8 cores): alone each could
 * end at 10 s, but together one of them ends at 20 s at the earliest, so the geometric mean is
 * at least sqrt(10 x 20); isolated, each alone, it is 10. Every policy stays at or above it. */
static void test_sharing_workflows(void) {
    sim_cluster *c;
    sim_workload *w;
    bool ok = sim_yaml_load(CLUSTER,
                            "workflows:\n"
                            "  - name: one\n"
                            "    requests: {cpu: 2, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: A, instances: 4, runtime: {fast: 10, slow: 10}}\n"
                            "  - name: two\n"
                            "    requests: {cpu: 2, memory: 1Gi}\n"
                            "    processes:\n"
                            "      - {name: B, instances: 4, runtime: {fast: 10, slow: 10}}\n",
                            &c, &w);
    CHECK(ok);
    const char *const *names = sched_policy_names();
    for (int i = 0; ok && names[i]; i++) {
        sim_result *shared = simulate(c, w, names[i], IDEAL, 1, false);
        sim_result *iso = simulate(c, w, names[i], IDEAL, 1, true);
        if (shared && iso) {
            CHECK_NEAR(shared->wf[0].makespan_bound_mean, 10, 1e-9);
            CHECK_NEAR(shared->bound_geomean, sqrt(200.0), 1e-9);
            CHECK_NEAR(iso->bound_geomean, 10, 1e-9);
            double g = sqrt(shared->wf[0].makespan_mean * shared->wf[1].makespan_mean);
            CHECKF(g >= shared->bound_geomean - 1e-9, "%s: %g below %g", names[i], g,
                   shared->bound_geomean);
        }
        sim_result_free(shared);
        sim_result_free(iso);
    }
    /* the order argument by hand: workloads 80 and 80 core-seconds on 8 cores, one run each */
    sim_bound_wf wb[2] = {{10, 80, 0, 0, 0, 1}, {10, 80, 0, 0, 0, 1}};
    CHECK_NEAR(sim_bound_joint_geomean(wb, 2, 8, 0), sqrt(200.0), 1e-9);
    /* later runs: with 3 runs of one workflow chained 5 s apart, the last ends at least 240 / 8
     * = 30 s after the start; less the two gaps, three runs average at least 20/3 s, below its
     * own mean bound of 10: the own bound holds */
    sim_bound_wf one = {10, 240, 0, 0, 10, 3};
    CHECK_NEAR(sim_bound_joint_geomean(&one, 1, 8, 0), 10, 1e-9);
    CHECK(isnan(sim_bound_joint_geomean(wb, SIM_BOUND_JOINT_MAX + 1, 8, 0)));
    /* unequal workloads, 80 and 160: the smaller first (10, then 30) beats the other order
     * (20, then 30): sqrt(300) */
    sim_bound_wf uneq[2] = {{10, 80, 0, 0, 0, 1}, {20, 160, 0, 0, 0, 1}};
    CHECK_NEAR(sim_bound_joint_geomean(uneq, 2, 8, 0), sqrt(300.0), 1e-9);
    /* a second workflow of three runs chained 10 s apart (offset 20) and 240 core-seconds: when
     * it finishes second, at 40 s at the earliest, its runs average (40 - 20) / 3; first, its
     * own 5. Best: the one-run workflow first (10) and it second (20/3), geometric mean
     * sqrt(200/3); without the gaps' offset it would be sqrt(10 x 40/3) */
    sim_bound_wf gaps[2] = {{10, 80, 0, 0, 0, 1}, {5, 240, 0, 0, 20, 3}};
    CHECK_NEAR(sim_bound_joint_geomean(gaps, 2, 8, 0), sqrt(200.0 / 3), 1e-9);
    sim_yaml_free(NULL, w, c);
}

int main(void) {
    RUN(test_critical_path);
    RUN(test_request_area);
    RUN(test_cpu_work);
    RUN(test_cpu_work_share);
    RUN(test_millicores);
    RUN(test_fastest_type_it_fits);
    RUN(test_no_policy_beats_it);
    RUN(test_headroom);
    RUN(test_sharing_workflows);
    return TEST_SUMMARY();
}
