/* scheduler_adaptive_test.c: the adaptive policy (adaptive.c) on hand-built snapshots:
 * the group with the earliest expected finish from per-group runtimes, the tarema labels as the
 * prior when a process has no runs on a group (or none at all), equal predictions decided by
 * the labels, only groups with room, and the critical path first in the queue. Expected finish
 * arithmetic is in each test's comment; every group with a feasible node has room now (wait 0). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/policy/policy.h"

#define GI (1024LL * 1024 * 1024)

/* A node of 4 cores, 32Gi with labels (l, l, l) in group g ("1" weak, "2" strong). */
static void add_node(sched_snapshot *s, const char *name, int l, const char *g) {
    sched_node *n = sched_node_new(name);
    n->ready = true;
    n->allocatable.v[SCHED_RES_CPU] = 4000;
    n->allocatable.v[SCHED_RES_MEMORY] = 32 * GI;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    char b[16];
    snprintf(b, sizeof b, "%d", l);
    sched_node_set_label(n, "tarema.io/cpu", b);
    sched_node_set_label(n, "tarema.io/mem", b);
    sched_node_set_label(n, "tarema.io/io", b);
    sched_node_set_label(n, "tarema.io/group", g);
    tm_err err;
    if (sched_snapshot_put_node(s, n, &err) != 0)
        printf("    put_node: %s\n", err.msg);
}

/* weak-0, weak-1 in group 1 (labels 1); strong-0 in group 2 (labels 2). */
static sched_snapshot *two_groups(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "weak-0", 1, "1");
    add_node(s, "weak-1", 1, "1");
    add_node(s, "strong-0", 2, "2");
    return s;
}

static sched_pod *mkpod(const char *name, const char *process) {
    char uid[64];
    snprintf(uid, sizeof uid, "uid-%s", name);
    sched_pod *p = sched_pod_new("ns", name, uid);
    free(p->workflow);
    free(p->process);
    p->workflow = strdup("wf");
    p->process = strdup(process);
    p->requests.v[SCHED_RES_CPU] = 2000;
    p->requests.v[SCHED_RES_MEMORY] = GI;
    p->requests.v[SCHED_RES_PODS] = 1;
    return p;
}

/* Profile with labels (l, l, l), mean runtime ms and per-group runtimes g1, g2 (ms; < 0 = no
 * runs there). */
static void set_profile(sched_snapshot *s, const char *process, int l, int64_t mean, int64_t g1,
                        int64_t g2, int64_t tail) {
    sched_task_profile tp;
    memset(&tp, 0, sizeof tp);
    for (int k = 0; k < SCHED_NFEAT; k++)
        tp.labels[k] = l;
    tp.expected_runtime_ms = mean;
    const int64_t rt[2] = {g1, g2};
    for (int g = 0; g < 2; g++)
        if (rt[g] >= 0) {
            sched_group_runtime *gr = &tp.group_rt[tp.n_group_rt++];
            snprintf(gr->group, sizeof gr->group, "%d", g + 1);
            gr->runtime_ms = rt[g];
            gr->runs = 3;
        }
    tp.tail_ms = tail;
    tm_err err;
    if (sched_snapshot_set_task(s, "wf", process, &tp, &err) != 0)
        printf("    set_task: %s\n", err.msg);
}

static const char *pick(sched_framework *fw, sched_snapshot *s, const sched_pod *p) {
    sched_decision d;
    tm_err err = {0};
    if (sched_framework_schedule(fw, s, p, 0, &d, &err) != 0) {
        printf("    schedule: %s\n", err.msg);
        return "";
    }
    return d.node >= 0 ? d.node_name : "";
}

/* Labels say weak (task (1,1,1), distance 0 to group 1), history says the task runs 100 s on
 * group 1 and 60 s on group 2: finish group 1 = 0 + 100, group 2 = 0 + 60 -> strong-0.
 * tarema keeps the label choice (a weak node). */
static void test_faster_group_wins(void) {
    sched_snapshot *s = two_groups();
    set_profile(s, "A", 1, 80000, 100000, 60000, 0);
    sched_pod *p = mkpod("a", "A");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK(fw != NULL);
    CHECK_STR(pick(fw, s, p), "strong-0");
    sched_framework *ta = sched_policy_new("tarema", &err);
    CHECK(strncmp(pick(ta, s, p), "weak-", 5) == 0);
    sched_framework_free(ta);
    sched_framework_free(fw);
    sched_pod_free(p);
    sched_snapshot_free(s);
}

/* No per-group runs at all, mean 80 s: both groups predict 80 -> equal finish; the labels
 * decide as in tarema: task (2,2,2) -> group 2 (distance 0), task (1,1,1) -> group 1, the less
 * loaded of its nodes (weak-1 carries 2 of 4 cores, so weak-0). */
static void test_fallback_to_labels(void) {
    sched_snapshot *s = two_groups();
    set_profile(s, "BIG", 2, 80000, -1, -1, 0);
    set_profile(s, "SMALL", 1, 80000, -1, -1, 0);
    sched_resources r = {0};
    r.v[SCHED_RES_CPU] = 2000;
    r.v[SCHED_RES_PODS] = 1;
    tm_err err = {0};
    sched_snapshot_add_pod(s, "busy", "weak-1", &r, &err);
    sched_pod *big = mkpod("big", "BIG"), *small = mkpod("small", "SMALL");
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK_STR(pick(fw, s, big), "strong-0");
    CHECK_STR(pick(fw, s, small), "weak-0");
    /* no profile at all: unlabeled, unknown runtime -> least loaded overall, as tarema */
    sched_pod *unknown = mkpod("u", "UNKNOWN");
    sched_framework *ta = sched_policy_new("tarema", &err);
    CHECK_STR(pick(fw, s, unknown), pick(ta, s, unknown));
    sched_framework_free(ta);
    sched_pod_free(unknown);
    sched_pod_free(big);
    sched_pod_free(small);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Runs only on one group: the other is bounded by it in power order.
 * C (labels (1,1,1)) ran only on group 2 (90 s; mean 70 s): group 1 is less powerful, so no
 * faster: predicted 90. Finish group 1 = 0 + 90 = group 2 = 0 + 90; the task has runs, so the
 * more powerful group wins the tie -> strong-0 (tarema's labels would say weak).
 * F ran only on group 1 (100 s): group 2 is more powerful, so no slower: predicted 100, equal
 * finish -> strong-0 again (the faster group is tried). */
static void test_unmeasured_group_bounded(void) {
    sched_snapshot *s = two_groups();
    set_profile(s, "C", 1, 70000, -1, 90000, 0);
    set_profile(s, "F", 1, 100000, 100000, -1, 0);
    sched_pod *c = mkpod("c", "C"), *f = mkpod("f", "F");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK_STR(pick(fw, s, c), "strong-0");
    CHECK_STR(pick(fw, s, f), "strong-0");
    sched_snapshot_refresh(s);
    const sched_task_profile *tc = sched_snapshot_task(s, "wf", "C");
    const sched_task_profile *tf = sched_snapshot_task(s, "wf", "F");
    for (size_t g = 0; g < sched_snapshot_group_count(s); g++) {
        const sched_group *gr = sched_snapshot_group(s, g);
        bool m;
        CHECK_INT((int)sched_adaptive_predict_ms(s, tc, gr, &m), 90000);
        CHECK(m == !strcmp(gr->id, "2"));
        CHECK_INT((int)sched_adaptive_predict_ms(s, tf, gr, &m), 100000);
        CHECK(m == !strcmp(gr->id, "1"));
    }
    sched_framework_free(fw);
    sched_pod_free(c);
    sched_pod_free(f);
    sched_snapshot_free(s);
}

/* Measured on both groups. D: 60.4 s on group 1, 60.2 s on group 2, both 60 at 1 s
 * resolution: equal finish, power decides -> strong-0. G: 59 s on group 1, 60 s on group 2
 * (3 runs each): the more powerful group measured slower breaks the benchmark order, so both
 * are pooled (59.5 s, see test_monotone_in_power): equal finish -> strong-0. H: 50 s on group
 * 1, 60 s on group 2, but strong-0 is crowded (runs a task using 6 cores): 59.5 x (8 / 4) =
 * 119 s against 59.5 s on an idle weak node -> a weak node finishes earlier. */
static void test_equal_and_earlier_finish(void) {
    sched_snapshot *s = two_groups();
    set_profile(s, "D", 1, 60000, 60400, 60200, 0);
    set_profile(s, "G", 2, 60000, 59000, 60000, 0);
    sched_pod *d = mkpod("d", "D"), *e = mkpod("g", "G");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK_STR(pick(fw, s, d), "strong-0");
    CHECK_STR(pick(fw, s, e), "strong-0");
    set_profile(s, "BUSY", 1, 1000, 1000, 1000, 0);
    sched_task_profile busy = *sched_snapshot_task(s, "wf", "BUSY");
    busy.cpu_use_milli = 6000;
    sched_snapshot_set_task(s, "wf", "BUSY", &busy, &err);
    sched_pod *b = mkpod("busy", "BUSY");
    b->pod_labels =
        json_pack("{s:s, s:s}", "nextflow.io/processName", "BUSY", "tarema.io/workflow", "wf");
    sched_pod_record(s, b, "strong-0", &err);
    CHECK(strncmp(pick(fw, s, e), "weak-", 5) == 0);
    sched_pod_free(b);
    sched_framework_free(fw);
    sched_pod_free(d);
    sched_pod_free(e);
    sched_snapshot_free(s);
}

/* Group 2 is full (strong-0 has 4 of 4 cores taken): only group 1 has room, so the task goes
 * there although group 2 predicts 60 s against 100 s. */
/* Group means are made monotone in power, weighted by runs: M ran once on group 1 (100 s) and
 * three times on group 2 (120 s): the more powerful group cannot be slower, so both predict
 * (100 + 3 x 120) / 4 = 115 s, and the tie goes to power -> strong-0. Taking the means as
 * they are would send M to a weak node (100 < 120), although its one weak run may simply have
 * been a small input. N (100 s on group 1, 80 s on group 2) respects the order: kept. */
static void test_monotone_in_power(void) {
    sched_snapshot *s = two_groups();
    set_profile(s, "M", 1, 115000, 100000, 120000, 0);
    sched_task_profile m = *sched_snapshot_task(s, "wf", "M");
    m.group_rt[0].runs = 1;
    tm_err err = {0};
    sched_snapshot_set_task(s, "wf", "M", &m, &err);
    set_profile(s, "N", 1, 90000, 100000, 80000, 0);
    sched_snapshot_refresh(s);
    const sched_task_profile *tm = sched_snapshot_task(s, "wf", "M");
    const sched_task_profile *tn = sched_snapshot_task(s, "wf", "N");
    for (size_t g = 0; g < sched_snapshot_group_count(s); g++) {
        const sched_group *gr = sched_snapshot_group(s, g);
        bool meas;
        CHECK_INT((int)sched_adaptive_predict_ms(s, tm, gr, &meas), 115000);
        CHECK(meas);
        CHECK_INT((int)sched_adaptive_predict_ms(s, tn, gr, &meas),
                  !strcmp(gr->id, "1") ? 100000 : 80000);
    }
    sched_pod *p = mkpod("m", "M");
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK_STR(pick(fw, s, p), "strong-0");
    sched_framework_free(fw);
    sched_pod_free(p);
    sched_snapshot_free(s);
}

static void test_only_groups_with_room(void) {
    sched_snapshot *s = two_groups();
    set_profile(s, "A", 1, 80000, 100000, 60000, 0);
    sched_resources r = {0};
    r.v[SCHED_RES_CPU] = 4000;
    r.v[SCHED_RES_PODS] = 1;
    tm_err err = {0};
    sched_snapshot_add_pod(s, "busy", "strong-0", &r, &err);
    sched_pod *p = mkpod("a", "A");
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK(strncmp(pick(fw, s, p), "weak-", 5) == 0);
    sched_framework_free(fw);
    sched_pod_free(p);
    sched_snapshot_free(s);
}

/* Queue: rank = mean runtime + tail. X: 10 s + 100 s of successors = 110 s; Y: 50 s, no
 * successors = 50 s; Z unknown = 0: X, Y, Z. W: 60 s + 100 s = 160 s goes before Y, where sjfn
 * (shortest first) runs Y (50 s) before W (60 s). */
static void test_critical_path_first(void) {
    sched_snapshot *s = two_groups();
    set_profile(s, "X", 1, 10000, -1, -1, 100000);
    set_profile(s, "Y", 1, 50000, -1, -1, 0);
    set_profile(s, "W", 1, 60000, -1, -1, 100000);
    /* pod names run against the expected order, so the final name tie-break cannot pass it */
    sched_pod *x = mkpod("c", "X"), *y = mkpod("b", "Y"), *z = mkpod("a", "Z");
    sched_pod *w = mkpod("d", "W");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK(sched_framework_queue_cmp(fw, s, x, y) < 0);
    CHECK(sched_framework_queue_cmp(fw, s, y, z) < 0);
    CHECK(sched_framework_queue_cmp(fw, s, w, y) < 0); /* 160 s before 50 s */
    sched_framework *sj = sched_policy_new("sjfn", &err);
    CHECK(sched_framework_queue_cmp(sj, s, y, w) < 0); /* sjfn: 50 s before 60 s */
    CHECK_INT((int)sched_adaptive_rank_ms(sched_snapshot_task(s, "wf", "X")), 110000);
    sched_framework_free(sj);
    sched_framework_free(fw);
    sched_pod_free(x);
    sched_pod_free(y);
    sched_pod_free(z);
    sched_pod_free(w);
    sched_snapshot_free(s);
}

/* A profile with per-group runtimes g1, g2 (ms; < 0 none), mean runtime and measured cpu use
 * (millicores; 0 unknown). */
static void set_used(sched_snapshot *s, const char *process, int64_t mean, int64_t g1, int64_t g2,
                     int64_t cpu_milli) {
    set_profile(s, process, 1, mean, g1, g2, 0);
    sched_task_profile tp = *sched_snapshot_task(s, "wf", process);
    tp.cpu_use_milli = cpu_milli;
    tm_err err;
    if (sched_snapshot_set_task(s, "wf", process, &tp, &err) != 0)
        printf("    set_task: %s\n", err.msg);
}

/* A running pod of `process` (request 2 cpus) on node, recorded as the scheduler records the
 * pods it placed: with its Nextflow labels (process, workflow), so the policy can find its task
 * profile. process NULL: a pod without labels. */
static void run_req(sched_snapshot *s, const char *uid, const char *node, const char *process,
                    int64_t cpu_milli) {
    sched_pod *p = mkpod(uid, process ? process : "none");
    p->requests.v[SCHED_RES_CPU] = cpu_milli;
    if (process)
        p->pod_labels =
            json_pack("{s:s, s:s}", "nextflow.io/processName", process, "tarema.io/workflow", "wf");
    tm_err err;
    if (sched_pod_record(s, p, node, &err) != 0)
        printf("    record: %s\n", err.msg);
    sched_pod_free(p);
}

static void run_on(sched_snapshot *s, const char *uid, const char *node, const char *process) {
    run_req(s, uid, node, process, 2000);
}

/* Contention on a node: A runs 60 s on group 2 and 100 s on group 1 and uses 2 cores (s = 1).
 * strong-0 (4 cores) runs H, which really uses 3.5 cores although it requests 2: A would make
 * 5.5 cores of demand on 4, slowdown 1 + 1 x (5.5 / 4 - 1) = 1.375, finish 60 x 1.375 = 82.5 s,
 * plus the harm to H (expected 1 s: 0.5 s left x 1 x 0.375 = 0.19 s) -> 83 s; weak-0 is idle:
 * 100 s... still later. With H using 6 cores (8 / 4 = 2: slowdown 2, 120 s) the idle weak node
 * wins (100 s). The old policy (group runtimes only) took strong-0 in both cases. */
static void test_contention_on_node(void) {
    for (int k = 0; k < 2; k++) {
        sched_snapshot *s = two_groups();
        set_used(s, "A", 80000, 100000, 60000, 2000);
        set_used(s, "H", 1000, 1000, 1000, k == 0 ? 3500 : 6000);
        run_on(s, "h", "strong-0", "H");
        sched_pod *p = mkpod("a", "A");
        tm_err err = {0};
        sched_framework *fw = sched_policy_new("adaptive", &err);
        if (k == 0)
            CHECK_STR(pick(fw, s, p), "strong-0");
        else
            CHECK(strncmp(pick(fw, s, p), "weak-", 5) == 0);
        sched_framework_free(fw);
        sched_pod_free(p);
        sched_snapshot_free(s);
    }
}

/* The task's own cpu use sets how much it suffers: strong-0 runs H using 3.5 cores. B (60 s on
 * group 2, 100 s on group 1) uses 0.5 cores: s = 0.5, demand 4 of 4 -> no slowdown, 60 s ->
 * strong-0. C (same runtimes) uses 6 cores: s = 1, demand 9.5 / 4 -> slowdown 2.375, 142.5 s;
 * weak-0 (idle): 6 / 4 -> 1.5, 150 s; weak-1 the same -> strong-0 still (142.5 < 150). D uses
 * 6 cores and runs 60 s / 80 s: weak 120 s < strong 142.5 s -> a weak node. */
static void test_own_use_weighs(void) {
    sched_snapshot *s = two_groups();
    set_used(s, "H", 1000, 1000, 1000, 3500);
    set_used(s, "B", 80000, 100000, 60000, 500);
    set_used(s, "C", 80000, 100000, 60000, 6000);
    set_used(s, "D", 70000, 80000, 60000, 6000);
    run_on(s, "h", "strong-0", "H");
    sched_pod *b = mkpod("b", "B"), *c = mkpod("c", "C"), *d = mkpod("d", "D");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK_STR(pick(fw, s, b), "strong-0");
    CHECK_STR(pick(fw, s, c), "strong-0");
    CHECK(strncmp(pick(fw, s, d), "weak-", 5) == 0);
    sched_framework_free(fw);
    sched_pod_free(b);
    sched_pod_free(c);
    sched_pod_free(d);
    sched_snapshot_free(s);
}

/* The harm to the tasks already on a node counts. Three 4-core nodes in group 1: X (100 s, 2
 * cores) next to L on weak-0 (3 cores, expected 1,000 s: 500 s left) -> own 100 x 1.25 = 125 s,
 * harm 500 x 1 x 0.25 = 125 s -> 250; next to M on weak-1 (3.2 cores, expected 10 s: 5 s left)
 * -> own 130 s, harm 5 x 0.3 = 1.5 s -> 131.5. Own finish alone would pick weak-0 (125 < 130);
 * with the harm, weak-1. strong-0 (group 2) is full. */
static void test_harm_to_running(void) {
    sched_snapshot *s = two_groups();
    set_used(s, "X", 100000, 100000, 100000, 2000);
    set_used(s, "L", 1000000, 1000000, -1, 3000);
    set_used(s, "M", 10000, 10000, -1, 3200);
    run_on(s, "l", "weak-0", "L");
    run_on(s, "m", "weak-1", "M");
    sched_resources r = {0};
    r.v[SCHED_RES_CPU] = 4000;
    r.v[SCHED_RES_PODS] = 1;
    tm_err err = {0};
    sched_snapshot_add_pod(s, "full", "strong-0", &r, &err);
    sched_pod *x = mkpod("x", "X");
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK_STR(pick(fw, s, x), "weak-1");
    sched_framework_free(fw);
    sched_pod_free(x);
    sched_snapshot_free(s);
}

/* A pod whose use is unknown counts its request times rho, the cores used per requested core of
 * the running tasks whose use is known. strong-0 runs K (4 cores on a 2-core request), weak-1
 * runs V (3 cores on 2, expected 2 s): rho = (4 + 3) / (2 + 2) = 1.75. weak-0 runs U (no
 * profile, request 2 -> 3.5 cores). Y (2 cores, 100 s on group 1, 300 s on group 2): weak-0
 * 5.5 / 4 -> 137.5 s, weak-1 5 / 4 -> 125 s + 0.25 s harm, strong-0 6 / 4 -> 450 s -> weak-1.
 * Counting U at its request (2 cores) would give weak-0 100 s. */
static void test_unknown_use_scaled(void) {
    sched_snapshot *s = two_groups();
    set_used(s, "Y", 200000, 100000, 300000, 2000);
    set_used(s, "K", 1000, -1, 1000, 4000);
    set_used(s, "V", 2000, 2000, -1, 3000);
    run_on(s, "k", "strong-0", "K");
    run_on(s, "u", "weak-0", "U");
    run_on(s, "v", "weak-1", "V");
    sched_pod *y = mkpod("y", "Y");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("adaptive", &err);
    CHECK_STR(pick(fw, s, y), "weak-1");
    sched_framework_free(fw);
    sched_pod_free(y);
    sched_snapshot_free(s);
}

static void test_registered(void) {
    int found = 0;
    for (const char *const *n = sched_policy_names(); *n; n++)
        found += !strcmp(*n, "adaptive");
    CHECK_INT(found, 1);
}

int main(void) {
    RUN(test_faster_group_wins);
    RUN(test_fallback_to_labels);
    RUN(test_unmeasured_group_bounded);
    RUN(test_equal_and_earlier_finish);
    RUN(test_monotone_in_power);
    RUN(test_only_groups_with_room);
    RUN(test_critical_path_first);
    RUN(test_contention_on_node);
    RUN(test_own_use_weighs);
    RUN(test_harm_to_running);
    RUN(test_unknown_use_scaled);
    RUN(test_registered);
    return TEST_SUMMARY();
}
