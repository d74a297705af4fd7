/* sim_gang_test.c: gangs and reservations in the simulator, through the scheduler's own gang
 * placement (sched_gang_try_place) and reservation code (resv_plan_admit, resv_plan_filter,
 * resv_decide). Every time below is worked out by hand in the comments; the ideal model without
 * contention or noise keeps runtimes exact. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/yamljson.h"
#include "sim/engine.h"
#include "sim/model.h"
#include "sim_yaml.h"

/* The workload, or NULL with the loader's message in msg. */
static sim_workload *workload_of(const char *yaml, const sim_cluster *c, char *msg, size_t cap) {
    tm_err err = {0};
    json_t *j = tm_yaml_parse(yaml, strlen(yaml), "workload", &err);
    sim_workload *w = j && c ? sim_workload_from_json(j, "workload", NULL, c, &err) : NULL;
    json_decref(j);
    snprintf(msg, cap, "%s", w ? "" : err.msg);
    return w;
}

typedef struct fixture {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r;
} fixture;

static bool simulate(fixture *f, const char *cluster, const char *workload) {
    char msg[1024];
    memset(f, 0, sizeof *f);
    f->c = sim_yaml_cluster(cluster);
    f->w = f->c ? workload_of(workload, f->c, msg, sizeof msg) : NULL;
    if (f->c && !f->w)
        printf("    workload: %s\n", msg);
    if (!f->w)
        return false;
    sim_opts o;
    sim_opts_ideal(&o);
    o.shuffle = false;
    o.record_tasks = true;
    tm_err err = {0};
    f->r = sim_run(f->c, f->w, &o, &err);
    if (!f->r)
        printf("    run: %s\n", err.msg);
    return f->r != NULL;
}

static void release(fixture *f) {
    sim_result_free(f->r);
    sim_workload_free(f->w);
    sim_cluster_free(f->c);
}

/* simulate, or fail the test case and leave it. */
#define SIMULATE_OR_RETURN(f, cluster, workload)                                                   \
    do {                                                                                           \
        if (!simulate(f, cluster, workload)) {                                                     \
            CHECK(0);                                                                              \
            release(f);                                                                            \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* The head of a one-workflow workload whose tasks all request 2 cores; its processes follow. */
#define WL_HEAD                                                                                    \
    "workflows:\n"                                                                                 \
    "  - name: w\n"                                                                                \
    "    requests: {cpu: 2, memory: 1Gi}\n"                                                        \
    "    processes:\n"

/* N nodes of 4 cores (two slots of 2 each). */
#define NODES_OF_4_CORES(n)                                                                        \
    "node_types:\n"                                                                                \
    "  - {name: a, count: " #n ", cores: 4, memory: 8Gi,\n"                                        \
    "     bench: {cpu: 300, mem: 10000, io: 500}}\n"

/* The recorded task (run, process name, instance). */
static const sim_task_rec *task(const fixture *f, int run, const char *proc, int inst) {
    for (long i = 0; i < f->r->tasks; i++) {
        const sim_task_rec *t = &f->r->task_recs[i];
        if (t->run == run && t->inst == inst &&
            strcmp(f->w->wfs[t->wf].procs[t->proc].name, proc) == 0)
            return t;
    }
    return NULL;
}

/* Most tasks running at once at any task start (a gang's members must never run apart). */
static int gang_running_at(const fixture *f, const char *proc, double t) {
    int n = 0;
    for (long i = 0; i < f->r->tasks; i++) {
        const sim_task_rec *x = &f->r->task_recs[i];
        if (strcmp(f->w->wfs[x->wf].procs[x->proc].name, proc) == 0 && x->start <= t + 1e-9 &&
            x->end > t + 1e-9)
            n++;
    }
    return n;
}

/* Two nodes of 4 cores: four tasks of 2 cores at once. */
static const char *four_slots = NODES_OF_4_CORES(2);

/* blocker (10 s) takes one slot at 0; the gang of 4 needs all four: it waits whole until 10,
 * then all four start together. Pod by pod, three would start at 0. */
static void test_gang_all_or_nothing(void) {
    const char *wl = WL_HEAD "      - {name: blocker, instances: 1, runtime: {a: 10}}\n"
                             "      - {name: mpi, gang: 4, runtime: {a: 5}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, four_slots, wl);
    CHECK(f.w->wfs[0].procs[1].instances == 4); /* gang: 4 alone is one gang of four */
    for (int i = 0; i < 4; i++) {
        const sim_task_rec *t = task(&f, 0, "mpi", i);
        CHECK(t && fabs(t->start - 10) < 1e-9);
    }
    /* no moment with part of the gang running: 0 or 4 */
    for (long i = 0; i < f.r->tasks; i++) {
        int n = gang_running_at(&f, "mpi", f.r->task_recs[i].start);
        CHECKF(n == 0 || n == 4, "%d members running at %.1f", n, f.r->task_recs[i].start);
    }
    CHECK(f.r->ngangs == 1);
    CHECK(f.r->ngangs == 1 && fabs(f.r->gangs[0].ready - 0) < 1e-9 &&
          fabs(f.r->gangs[0].start - 10) < 1e-9 && f.r->gangs[0].attempts == 2);
    release(&f);
}

/* Gangs of 3 and 3 on four slots: each fits alone, not both. The first takes three slots at 0
 * and runs 20 s; the second waits whole (never one member on the free slot) and starts at 20. */
static void test_two_gangs_no_deadlock(void) {
    const char *wl = WL_HEAD "      - {name: ga, gang: 3, runtime: {a: 20}}\n"
                             "      - {name: gb, gang: 3, runtime: {a: 20}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, four_slots, wl);
    CHECK(f.r->ngangs == 2);
    double sa = f.r->gangs[0].start, sb = f.r->gangs[1].start;
    CHECKF(fabs(fmin(sa, sb) - 0) < 1e-9 && fabs(fmax(sa, sb) - 20) < 1e-9, "starts %g %g", sa, sb);
    for (int i = 0; i < 3; i++) {
        const sim_task_rec *a = task(&f, 0, "ga", i), *b = task(&f, 0, "gb", i);
        CHECK(a && b && fabs(a->start - sa) < 1e-9 && fabs(b->start - sb) < 1e-9);
    }
    CHECK(fabs(f.r->horizon - 40) < 1e-9);
    release(&f);
}

/* One node of 4 cores (two slots of 2). Runs at 0 and 1000. The step holds both slots from
 * 50 to 150 after each arrival.
 * Run 1: nothing is known of `short` yet (no history): it may not backfill. The step starts at
 *   50 when the window opens, ends at 70, the reservation is released (the step's tasks all
 *   finished), short runs 70-80, long 80-580.
 * Run 2: short is known to take 10 s: it backfills at 1000 (ends 1010 <= 1050). long (known 500 s)
 *   would still run at 1050: it waits; the step runs 1050-1070; long starts at 1070. */
static const char *one_node = NODES_OF_4_CORES(1);

static void test_backfill_rule(void) {
    const char *wl = "workflows:\n"
                     "  - name: w\n"
                     "    arrivals: [0, 1000]\n"
                     "    requests: {cpu: 2, memory: 1Gi}\n"
                     "    processes:\n"
                     "      - {name: short, instances: 1, runtime: {a: 10}}\n"
                     "      - {name: long, instances: 1, after: [short], runtime: {a: 500}}\n"
                     "      - {name: step, instances: 2, runtime: {a: 20},\n"
                     "         reservation: {start: 50, duration: 100}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, one_node, wl);
    const sim_task_rec *s1 = task(&f, 0, "short", 0), *s2 = task(&f, 1, "short", 0);
    const sim_task_rec *l2 = task(&f, 1, "long", 0);
    CHECK(s1 && s2 && l2);
    if (s1 && s2 && l2) {
        CHECKF(fabs(s1->start - 70) < 1e-9, "unknown end backfilled at %g", s1->start);
        CHECKF(fabs(s2->start - 1000) < 1e-9, "short known end did not backfill: %g", s2->start);
        CHECKF(fabs(l2->start - 1070) < 1e-9, "long known end backfilled at %g", l2->start);
    }
    for (int run = 0; run < 2; run++)
        for (int i = 0; i < 2; i++) {
            const sim_task_rec *t = task(&f, run, "step", i);
            CHECK(t && fabs(t->start - (run ? 1050 : 50)) < 1e-9);
        }
    CHECK(f.r->nresvs == 2);
    for (long k = 0; k < f.r->nresvs && k < 2; k++) {
        const sim_resv_rec *x = &f.r->resvs[k];
        CHECK_STR(x->phase, "Released");
        CHECK(fabs(x->released - x->start - 20) < 1e-9);
        CHECK(fabs(x->held_core_s - 80) < 1e-9 && fabs(x->used_core_s - 80) < 1e-9);
        CHECK(x->nholds == 1 && f.r->holds[x->first_hold].pods == 2);
    }
    release(&f);
}

/* Released the other way, at the end of the window: the step waits for slow (300 s), so none
 * of its tasks runs in 50..150. other (unknown end) may not take the held half of the node
 * before; it starts at 150, when the reservation expires. */
static void test_expiry_releases(void) {
    const char *wl = WL_HEAD "      - {name: slow, instances: 1, runtime: {a: 300}}\n"
                             "      - {name: other, instances: 1, runtime: {a: 10}}\n"
                             "      - {name: step, instances: 1, after: [slow], runtime: {a: 20},\n"
                             "         reservation: {start: 50, duration: 100}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, one_node, wl);
    const sim_task_rec *o = task(&f, 0, "other", 0), *st = task(&f, 0, "step", 0);
    CHECK(o && fabs(o->start - 150) < 1e-9);
    CHECK(st && fabs(st->start - 300) < 1e-9);
    CHECK(f.r->nresvs == 1);
    if (f.r->nresvs == 1) {
        CHECK_STR(f.r->resvs[0].phase, "Expired");
        CHECK(fabs(f.r->resvs[0].released - 150) < 1e-9);
        CHECK(fabs(f.r->resvs[0].held_core_s - 200) < 1e-9); /* 2 cores x 100 s */
        CHECK(f.r->resvs[0].used_core_s == 0);
    }
    release(&f);
}

/* Two reservations that want the whole node in overlapping windows: the second is refused
 * (Failed, with the admission's reason) and its step runs as if it had none. */
static void test_overlapping_refused(void) {
    const char *wl = WL_HEAD "      - {name: s1, instances: 2, runtime: {a: 20},\n"
                             "         reservation: {start: 10, duration: 100}}\n"
                             "      - {name: s2, instances: 2, runtime: {a: 20},\n"
                             "         reservation: {start: 50, duration: 100}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, one_node, wl);
    CHECK(f.r->nresvs == 2);
    if (f.r->nresvs == 2) {
        CHECK_STR(f.r->resvs[0].phase, "Released");
        CHECK_STR(f.r->resvs[1].phase, "Failed");
        CHECK(strstr(f.r->resvs[1].reason, "fit") != NULL);
    }
    /* s1 waits for its window (10), runs to 30; s2 has no hold and runs when s1 is done */
    const sim_task_rec *a = task(&f, 0, "s1", 0), *b = task(&f, 0, "s2", 0);
    CHECK(a && fabs(a->start - 10) < 1e-9);
    CHECK(b && fabs(b->start - 30) < 1e-9);
    release(&f);
}

/* A gang with a reservation, on one node of 4 cores (two slots): the gang of 2 is ready at 0
 * but waits for its window (30..130), then both start at 30 on the held node. filler (unknown
 * end, 2 cores) may not take a held slot before the window: it waits until the gang is done at
 * 45 (released then, the step's tasks all finished). */
static void test_gang_with_reservation(void) {
    const char *wl = WL_HEAD "      - {name: mpi, gang: 2, runtime: {a: 15},\n"
                             "         reservation: {start: 30, duration: 100}}\n"
                             "      - {name: filler, instances: 1, runtime: {a: 10}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, one_node, wl);
    for (int i = 0; i < 2; i++) {
        const sim_task_rec *t = task(&f, 0, "mpi", i);
        CHECK(t && fabs(t->start - 30) < 1e-9);
    }
    const sim_task_rec *fl = task(&f, 0, "filler", 0);
    CHECK(fl && fabs(fl->start - 45) < 1e-9);
    CHECK(f.r->ngangs == 1 && fabs(f.r->gangs[0].start - 30) < 1e-9 &&
          fabs(f.r->gangs[0].ready - 30) < 1e-9);
    CHECK(f.r->nresvs == 1 && strcmp(f.r->resvs[0].phase, "Released") == 0 &&
          fabs(f.r->resvs[0].released - 45) < 1e-9);
    release(&f);
}

/* walltime: a declared runtime is the expected end while the process has no history (one node,
 * two slots, the step holding both from 50 to 150 after each arrival, as above).
 * short (10 s, declares 10) backfills at 0 in the first run (ends 10 <= 50: without walltime it
 * waited until 70, test_backfill_rule); long, ready at 10 and declaring 500, would still run at
 * 50: it waits until the step ends at 70. */
static void test_walltime_without_history(void) {
    const char *wl =
        WL_HEAD "      - {name: short, instances: 1, runtime: {a: 10}, walltime: 10}\n"
                "      - {name: long, instances: 1, after: [short], runtime: {a: 500},\n"
                "         walltime: 500}\n"
                "      - {name: step, instances: 2, runtime: {a: 20},\n"
                "         reservation: {start: 50, duration: 100}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, one_node, wl);
    const sim_task_rec *s = task(&f, 0, "short", 0), *l = task(&f, 0, "long", 0);
    CHECK(s && l);
    if (s && l) {
        CHECKF(fabs(s->start) < 1e-9, "declared short end did not backfill: %g", s->start);
        CHECKF(fabs(l->start - 70) < 1e-9, "declared long end backfilled at %g", l->start);
    }
    for (int i = 0; i < 2; i++) {
        const sim_task_rec *t = task(&f, 0, "step", i);
        CHECK(t && fabs(t->start - 50) < 1e-9);
    }
    release(&f);
}

/* Once the process has history, history decides: short runs 10 s but declares 100. Run 1
 * (arrival 0): its declared end 100 is after the window opens at 50: no backfill, it starts at
 * 70 after the step. Run 2 (arrival 1000): history says 10 s, it backfills at 1000. */
static void test_walltime_history_wins(void) {
    const char *wl = "workflows:\n"
                     "  - name: w\n"
                     "    arrivals: [0, 1000]\n"
                     "    requests: {cpu: 2, memory: 1Gi}\n"
                     "    processes:\n"
                     "      - {name: short, instances: 1, runtime: {a: 10}, walltime: 100}\n"
                     "      - {name: step, instances: 2, runtime: {a: 20},\n"
                     "         reservation: {start: 50, duration: 100}}\n";
    fixture f;
    SIMULATE_OR_RETURN(&f, one_node, wl);
    const sim_task_rec *s1 = task(&f, 0, "short", 0), *s2 = task(&f, 1, "short", 0);
    CHECK(s1 && s2);
    if (s1 && s2) {
        CHECKF(fabs(s1->start - 70) < 1e-9, "declared end 100 backfilled at %g", s1->start);
        CHECKF(fabs(s2->start - 1000) < 1e-9, "known end did not backfill: %g", s2->start);
    }
    release(&f);
}

static void check_bad(const char *wl, const char *want1, const char *want2) {
    sim_cluster *c = sim_yaml_cluster(four_slots);
    char msg[1024];
    sim_workload *w = c ? workload_of(wl, c, msg, sizeof msg) : NULL;
    CHECK(c && !w);
    CHECKF(strstr(msg, want1) && strstr(msg, want2), "message: %s", msg);
    sim_workload_free(w);
    sim_cluster_free(c);
}

static void test_bad_input(void) {
    const char *head = WL_HEAD;
    char wl[1024];
    snprintf(wl, sizeof wl, "%s      - {name: mpi, gang: 0, runtime: {a: 5}}\n", head);
    check_bad(wl, "process mpi", "gang must be from 1");
    snprintf(wl, sizeof wl, "%s      - {name: mpi, gang: 5, runtime: {a: 5}}\n", head);
    check_bad(wl, "process mpi", "gang 5 is larger than the cluster: at most 4 tasks");
    snprintf(wl, sizeof wl, "%s      - {name: mpi, instances: 6, gang: 4, runtime: {a: 5}}\n",
             head);
    check_bad(wl, "process mpi", "gang 4 does not divide its 6 instances");
    snprintf(wl, sizeof wl,
             "%s      - {name: st, instances: 5, runtime: {a: 5},\n"
             "         reservation: {start: 10, duration: 60}}\n",
             head);
    check_bad(wl, "process st", "reservation for 5 tasks is larger than the cluster");
    snprintf(wl, sizeof wl,
             "%s      - {name: st, instances: 1, runtime: {a: 5},\n"
             "         reservation: {start: -5, duration: 60}}\n",
             head);
    check_bad(wl, "process st: reservation", "start must not be negative");
    snprintf(wl, sizeof wl,
             "%s      - {name: st, instances: 1, runtime: {a: 5},\n"
             "         reservation: {start: 5, duration: 0}}\n",
             head);
    check_bad(wl, "process st: reservation", "duration must be seconds > 0");
    snprintf(wl, sizeof wl, "%s      - {name: st, runtime: {a: 5}, walltime: 0}\n", head);
    check_bad(wl, "process st", "walltime must be seconds > 0, got 0");
    snprintf(wl, sizeof wl, "%s      - {name: st, runtime: {a: 5}, walltime: soon}\n", head);
    check_bad(wl, "process st", "walltime must be a number >= 0");
}

int main(void) {
    RUN(test_gang_all_or_nothing);
    RUN(test_two_gangs_no_deadlock);
    RUN(test_backfill_rule);
    RUN(test_expiry_releases);
    RUN(test_overlapping_refused);
    RUN(test_gang_with_reservation);
    RUN(test_walltime_without_history);
    RUN(test_walltime_history_wins);
    RUN(test_bad_input);
    return TEST_SUMMARY();
}
