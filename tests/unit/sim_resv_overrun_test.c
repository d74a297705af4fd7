/* sim_resv_overrun_test.c: a reservation's window evicts the tasks that overran into it, in the
 * simulator as in the live scheduler (resv_overrun_victims; docs/simulation.md, "Gangs and
 * reservations"). One node of 4 cores; the ideal model keeps runtimes exact, so every time below
 * is worked out by hand.
 *
 * hog (2 cores) declares walltime 40 but runs 200 s; step (4 cores, the whole node) holds the
 * node from 50 to 350. hog's expected end 40 is before the window: it backfills at 0.
 * - evict_overrunning true (the default): at 50 the window opens, step waits, hog still runs
 *   past its expected end: it is evicted, step runs 50..70 (released then), hog loses its work
 *   and runs again 70..270.
 * - false: hog runs 0..200 undisturbed, step waits for it and runs 200..220.
 * - --preemption changes nothing here (the live controller evicts overruns without it), and is
 *   no longer refused with reservations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sim/engine.h"
#include "sim/model.h"
#include "sim_yaml.h"

static const char *one_node = "node_types:\n"
                              "  - {name: a, count: 1, cores: 4, memory: 8Gi,\n"
                              "     bench: {cpu: 300, mem: 10000, io: 500}}\n";

/* The workload with extra appended inside step's reservation mapping. */
#define OVERRUN(extra)                                                                             \
    "workflows:\n"                                                                                 \
    "  - name: w\n"                                                                                \
    "    requests: {cpu: 2, memory: 1Gi}\n"                                                        \
    "    processes:\n"                                                                             \
    "      - {name: hog, instances: 1, runtime: {a: 200}, walltime: 40}\n"                         \
    "      - {name: step, instances: 1, requests: {cpu: 4, memory: 1Gi}, runtime: {a: 20},\n"      \
    "         reservation: {start: 50, duration: 300" extra "}}\n"

typedef struct fixture {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r;
} fixture;

static bool simulate(fixture *f, const char *workload, bool preemption) {
    memset(f, 0, sizeof *f);
    if (!sim_yaml_load(one_node, workload, &f->c, &f->w))
        return false;
    sim_opts o;
    sim_opts_ideal(&o);
    o.shuffle = false;
    o.record_tasks = true;
    o.preemption = preemption;
    tm_err err = {0};
    f->r = sim_run(f->c, f->w, &o, &err);
    if (!f->r)
        printf("    run: %s\n", err.msg);
    return f->r != NULL;
}

static void release(fixture *f) {
    sim_yaml_free(f->r, f->w, f->c);
}

/* The recorded task (process name, instance): its last run. */
static const sim_task_rec *task(const fixture *f, const char *proc, int inst) {
    for (long i = 0; i < f->r->tasks; i++) {
        const sim_task_rec *t = &f->r->task_recs[i];
        if (t->inst == inst && strcmp(f->w->wfs[t->wf].procs[t->proc].name, proc) == 0)
            return t;
    }
    return NULL;
}

#define SIMULATE_OR_RETURN(f, workload, preemption)                                                \
    do {                                                                                           \
        if (!simulate(f, workload, preemption)) {                                                  \
            CHECK(0);                                                                              \
            release(f);                                                                            \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* evict_overrunning true, by default and when written out; with and without --preemption. */
static void check_evicted(const char *workload, bool preemption) {
    fixture f;
    SIMULATE_OR_RETURN(&f, workload, preemption);
    const sim_task_rec *hog = task(&f, "hog", 0), *step = task(&f, "step", 0);
    CHECK(hog && step);
    if (hog && step) {
        CHECKF(fabs(step->start - 50) < 1e-9, "step started at %g, not at its window (50)",
               step->start);
        CHECKF(fabs(hog->start - 70) < 1e-9 && fabs(hog->end - 270) < 1e-9,
               "hog ran %g..%g, not again from the start after the step (70..270)", hog->start,
               hog->end);
        CHECK(fabs(hog->ready - 0) < 1e-9);
    }
    CHECK_INT(f.r->overrun_evictions, 1);
    CHECK_INT(f.r->evictions, 0); /* preemption's counter stays its own */
    CHECK_INT(f.r->preemptions, 0);
    CHECK(f.r->nresvs == 1);
    if (f.r->nresvs == 1) {
        CHECK_STR(f.r->resvs[0].phase, "Released");
        CHECK(fabs(f.r->resvs[0].released - 70) < 1e-9);
        CHECK_INT(f.r->resvs[0].overrun_evictions, 1);
    }
    CHECK(fabs(f.r->horizon - 270) < 1e-9);
    release(&f);
}

static void test_evicted_by_default(void) {
    check_evicted(OVERRUN(""), false);
}

static void test_evicted_when_true(void) {
    check_evicted(OVERRUN(", evict_overrunning: true"), false);
}

/* The live controller evicts overruns whether or not pods preempt; --preemption with
 * reservations runs (it was refused) and changes nothing here (one priority). */
static void test_evicted_with_preemption(void) {
    check_evicted(OVERRUN(""), true);
}

static void test_kept_when_false(void) {
    fixture f;
    SIMULATE_OR_RETURN(&f, OVERRUN(", evict_overrunning: false"), false);
    const sim_task_rec *hog = task(&f, "hog", 0), *step = task(&f, "step", 0);
    CHECK(hog && step);
    if (hog && step) {
        CHECKF(fabs(hog->start - 0) < 1e-9 && fabs(hog->end - 200) < 1e-9, "hog ran %g..%g",
               hog->start, hog->end);
        CHECKF(fabs(step->start - 200) < 1e-9, "step started at %g, not after hog (200)",
               step->start);
    }
    CHECK_INT(f.r->overrun_evictions, 0);
    CHECK(f.r->nresvs == 1 && f.r->resvs[0].overrun_evictions == 0);
    CHECK(fabs(f.r->horizon - 220) < 1e-9);
    release(&f);
}

/* Only what the step needs goes, the longest overrun first: step wants 2 of the 4 cores from
 * 50; a (expected end 30) and b (40), 2 cores each, both backfill at 0 and run 100 s. At 50 one
 * must go: a, overrunning since 30. step runs 50..70; a runs again 70..170 on the freed half. */
static void test_only_what_is_needed(void) {
    const char *wl = "workflows:\n"
                     "  - name: w\n"
                     "    requests: {cpu: 2, memory: 1Gi}\n"
                     "    processes:\n"
                     "      - {name: a, instances: 1, runtime: {a: 100}, walltime: 30}\n"
                     "      - {name: b, instances: 1, runtime: {a: 100}, walltime: 40}\n"
                     "      - {name: step, instances: 1, runtime: {a: 20},\n"
                     "         reservation: {start: 50, duration: 300}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, wl, false);
    const sim_task_rec *a = task(&f, "a", 0), *b = task(&f, "b", 0), *st = task(&f, "step", 0);
    CHECK(a && b && st);
    if (a && b && st) {
        CHECKF(fabs(st->start - 50) < 1e-9, "step started at %g", st->start);
        CHECKF(fabs(b->start - 0) < 1e-9 && fabs(b->end - 100) < 1e-9, "b ran %g..%g", b->start,
               b->end);
        CHECKF(fabs(a->start - 70) < 1e-9 && fabs(a->end - 170) < 1e-9, "a ran %g..%g", a->start,
               a->end);
    }
    CHECK_INT(f.r->overrun_evictions, 1);
    release(&f);
}

/* hog expected to end exactly when the window opens (walltime 50): at 50 it has not overrun
 * yet (its end is not before now, resv_overrun_candidate); a millisecond later it has, and the
 * simulator looks again then, as the live controller at its next tick: step runs 50.001..70.001,
 * hog again 70.001..270.001. */
static void test_end_at_window_start(void) {
    const char *wl = "workflows:\n"
                     "  - name: w\n"
                     "    requests: {cpu: 2, memory: 1Gi}\n"
                     "    processes:\n"
                     "      - {name: hog, instances: 1, runtime: {a: 200}, walltime: 50}\n"
                     "      - {name: step, instances: 1, requests: {cpu: 4, memory: 1Gi},\n"
                     "         runtime: {a: 20}, reservation: {start: 50, duration: 300}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, wl, false);
    const sim_task_rec *hog = task(&f, "hog", 0), *step = task(&f, "step", 0);
    CHECK(hog && step);
    if (hog && step) {
        CHECKF(fabs(step->start - 50.001) < 1e-9, "step started at %.4f", step->start);
        CHECKF(fabs(hog->start - 70.001) < 1e-9, "hog started at %.4f", hog->start);
    }
    CHECK_INT(f.r->overrun_evictions, 1);
    release(&f);
}

/* evict_overrunning that is not a boolean is refused naming the step and the field; a gang
 * with a reservation runs under --preemption (no longer refused: sim_gang_preemption_test). */
static void test_bad_input(void) {
    const char *bad[] = {OVERRUN(", evict_overrunning: maybe"), OVERRUN(", evict_overrunning: 1")};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sim_cluster *c = sim_yaml_cluster(one_node);
        tm_err err = {0};
        json_t *j = tm_yaml_parse(bad[i], strlen(bad[i]), "workload", &err);
        sim_workload *w = j && c ? sim_workload_from_json(j, "workload", NULL, c, &err) : NULL;
        CHECK(c && j && !w);
        CHECKF(
            strstr(err.msg, "process step: reservation: evict_overrunning must be true or false"),
            "message: %s", err.msg);
        json_decref(j);
        sim_yaml_free(NULL, w, c);
    }
    fixture f;
    const char *gang = "workflows:\n"
                       "  - name: w\n"
                       "    requests: {cpu: 2, memory: 1Gi}\n"
                       "    processes:\n"
                       "      - {name: mpi, gang: 2, runtime: {a: 10},\n"
                       "         reservation: {start: 50, duration: 300}}\n";
    CHECK(sim_yaml_load(one_node, gang, &f.c, &f.w));
    if (f.c && f.w) {
        sim_opts o;
        sim_opts_ideal(&o);
        o.preemption = true;
        tm_err err = {0};
        f.r = sim_run(f.c, f.w, &o, &err);
        CHECKF(f.r, "sim_run: %s", err.msg);
        if (f.r) { /* the gang starts whole when its window opens, nothing evicted */
            CHECK_INT(f.r->ngangs, 1);
            if (f.r->ngangs == 1)
                CHECK_NEAR(f.r->gangs[0].start, 50, 1e-6);
            CHECK_INT(f.r->evictions, 0);
            CHECK_NEAR(f.r->horizon, 60, 1e-6);
        }
    } else {
        f.r = NULL;
    }
    release(&f);
}

int main(void) {
    RUN(test_evicted_by_default);
    RUN(test_evicted_when_true);
    RUN(test_evicted_with_preemption);
    RUN(test_kept_when_false);
    RUN(test_only_what_is_needed);
    RUN(test_end_at_window_start);
    RUN(test_bad_input);
    return TEST_SUMMARY();
}
