/* sim_tiny_test.c: hand-checkable simulations whose makespans are worked out in the comments,
 * for every policy, plus the DAG, queueing, contention, runtime-model and isolation rules.
 * Placement runs through the scheduler's real policies, so these also pin down that the
 * simulator drives them as documented (queue order, reserve, release, labels from history). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/yamljson.h"
#include "sim/engine.h"
#include "sim/model.h"
#include "sim_yaml.h"

static sim_result *run(const sim_cluster *c, const sim_workload *w, const char *policy,
                       bool contention) {
    sim_opts o;
    sim_opts_ideal(&o);
    o.policy = policy;
    o.shuffle = false;
    o.contention = contention;
    o.record_tasks = true;
    tm_err err = {0};
    sim_result *r = sim_run(c, w, &o, &err);
    if (!r)
        printf("    run %s: %s\n", policy, err.msg);
    return r;
}

/* Loads a cluster and a workload and runs one policy on them; *c and *w stay for the result
 * (free all three with release). NULL when any step failed (printed). */
static sim_result *simulate(const char *cluster_yaml, const char *workload_yaml, const char *policy,
                            bool contention, sim_cluster **c, sim_workload **w) {
    return sim_yaml_load(cluster_yaml, workload_yaml, c, w) ? run(*c, *w, policy, contention)
                                                            : NULL;
}

static const char *tiny_cluster = SIM_YAML_TINY_CLUSTER;
static const char *tiny_workload = SIM_YAML_TINY_WORKLOAD(2); /* two runs */

static void test_tiny_grouping(void) {
    sim_cluster *c = sim_yaml_cluster(tiny_cluster);
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK_INT(c->nnodes, 2);
    CHECK_INT(c->ngroups, 2);
    CHECK_INT(c->nodes[0].group, 0); /* slow: the weaker group */
    CHECK_INT(c->nodes[1].group, 1);
    CHECK_INT(c->nodes[0].label[LAB_CPU], 1);
    CHECK_INT(c->nodes[1].label[LAB_CPU], 2);
    CHECK_INT(c->nodes[1].label[LAB_MEM], 2);
    CHECK_NEAR(c->types[1].speed[LAB_CPU], 2.0, 1e-9);
    sim_cluster_free(c);
}

/* Makespans of run 1 and run 2 per policy, by hand. Queue order is FIFO (small, big, mid) for
 * all but sjfn once runtimes are known. Node names: fast-0 < slow-0, the tie-break.
 *
 * run 1 (no history: every task unlabeled, no expected runtimes)
 *   fair:        small -> fast (both empty, name), big -> slow (load 0 < 0.5), mid -> fast
 *                (0.5 = 0.5, name): ends 4, 20, 6 -> 20
 *   tarema:      unlabeled tasks go to the least loaded node: as fair -> 20
 *   round-robin: small -> fast (first), big -> slow (after fast), mid -> fast (wraps) -> 20
 *   fill-nodes:  small -> fast (tie, name), big -> fast (most loaded), mid -> slow: 4, 10, 12
 *                -> 12
 *   sjfn:        most powerful node first: small, big -> fast, mid -> slow -> 12
 * run 2 (arrives when run 1 ends; history of run 1 gives labels and runtimes)
 *   labels: cpu samples 50, 200, 100 -> bound at the median (two classes of 4 cores) 100;
 *   peak_rss 100Mi, 2Gi, 1Gi -> bound 1Gi; a value on a bound goes up: small (1,1),
 *   big (2,2), mid (2,2); fast is (2,2), slow (1,1) (io is equal everywhere: label 1).
 *   tarema:      small -> slow (distance 0), big -> fast, mid -> fast: ends 8, 10, 6 -> 10
 *   fair:        as run 1 -> 20
 *   round-robin: cursor after fast: small -> slow (8), big -> fast (10), mid -> slow (12) -> 12
 *   fill-nodes:  as run 1 -> 12
 *   sjfn:        expected 4 (small), 10 (big), 12 (mid): same order, same nodes -> 12
 *   adaptive:    run 1 as tarema (no history) -> 20. run 2: ranks (runtime, no successors)
 *                big 20 s, mid 6 s, small 4 s -> queue big, mid, small. big ran on slow (20 s):
 *                fast is more powerful, so no slower: 20 s, equal finish, power -> fast; mid
 *                ran on fast (6 s): slow is no faster, 6 s, equal, power -> fast (2 + 2 of 4
 *                cores); small ran on fast (4 s): fast is full, only slow has room -> slow:
 *                ends 10, 6, 8 -> 10 */
static void test_tiny_policies(void) {
    static const struct {
        const char *policy;
        double run1, run2;
    } want[] = {{"tarema", 20, 10},     {"fair", 20, 20}, {"round-robin", 20, 12},
                {"fill-nodes", 12, 12}, {"sjfn", 12, 12}, {"adaptive", 20, 10}};
    sim_cluster *c = sim_yaml_cluster(tiny_cluster);
    sim_workload *w = sim_yaml_workload(tiny_workload, c);
    CHECK(w != NULL);
    for (size_t i = 0; w && i < sizeof want / sizeof want[0]; i++) {
        sim_result *r = run(c, w, want[i].policy, false);
        CHECK(r != NULL);
        if (!r)
            continue;
        CHECK_INT(r->nruns, 2);
        CHECKF(r->runs[0].end - r->runs[0].arrival == want[i].run1, "%s run 1: %g, want %g",
               want[i].policy, r->runs[0].end - r->runs[0].arrival, want[i].run1);
        CHECKF(r->runs[1].end - r->runs[1].arrival == want[i].run2, "%s run 2: %g, want %g",
               want[i].policy, r->runs[1].end - r->runs[1].arrival, want[i].run2);
        CHECK_NEAR(r->runs[1].arrival, want[i].run1, 1e-9); /* gap 0: run 2 follows run 1 */
        CHECK_NEAR(r->wf[0].makespan_mean, (want[i].run1 + want[i].run2) / 2, 1e-9);
        CHECK_INT(r->tasks, 6);
        sim_result_free(r);
    }
    sim_workload_free(w);
    sim_cluster_free(c);
}

/* Where tarema put each task: run 1 like fair (unlabeled), run 2 by label. */
static void test_tiny_tarema_placements(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r = simulate(tiny_cluster, tiny_workload, "tarema", false, &c, &w);
    CHECK(r != NULL);
    if (r) {
        /* task order: run 1 small, big, mid; run 2 small, big, mid. node 0 slow, 1 fast */
        static const int node[6] = {1, 0, 1, 0, 1, 1};
        for (int i = 0; i < 6; i++)
            CHECKF(r->task_recs[i].node == node[i], "task %d on node %d, want %d", i,
                   r->task_recs[i].node, node[i]);
        /* per-group figures: fast group ran 4 tasks, slow 2 */
        CHECK_INT(r->groups[1].tasks, 4);
        CHECK_INT(r->groups[0].tasks, 2);
        /* busy core-seconds on slow: big 20 s and small 8 s at 2 cores */
        CHECK_NEAR(r->groups[0].busy_core_s, 2 * (20 + 8), 1e-9);
    }
    sim_yaml_free(r, w, c);
}

/* One node, one task at a time (2 of 2 cores): a chain A(x2, 5 s) -each-> B(x2, 3 s) -all->
 * C(1, 4 s). A0 0-5, A1 5-10, B0 is ready at 5 but waits (FIFO: A1 was queued first) and runs
 * 10-13, B1 13-16, C 16-20. Makespan 20; pending: A0 0, A1 5, B0 5, B1 3, C 0 -> mean 13/5. */
static void test_dag_and_queueing(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r = simulate("node_types:\n  - {name: one, count: 1, cores: 2, memory: 4Gi}\n",
                             "workflows:\n"
                             "  - name: chain\n"
                             "    requests: {cpu: 2, memory: 1Gi}\n"
                             "    processes:\n"
                             "      - {name: C, instances: 1, after: [B], base_runtime: 4}\n"
                             "      - {name: B, instances: 2, after_each: [A], base_runtime: 3}\n"
                             "      - {name: A, instances: 2, base_runtime: 5}\n",
                             "fair", false, &c, &w);
    CHECK(r != NULL);
    if (r) {
        CHECK_NEAR(r->runs[0].end, 20, 1e-9);
        CHECK_NEAR(r->pending_mean, 13.0 / 5, 1e-9);
        CHECK_NEAR(r->task_runtime_mean, (5 + 5 + 3 + 3 + 4) / 5.0, 1e-9);
        CHECK_NEAR(r->groups[0].utilisation, 1.0, 1e-9); /* always busy with all cores */
        /* topological order puts A first even though it is listed last */
        CHECK_STR(w->wfs[0].procs[0].name, "A");
    }
    sim_yaml_free(r, w, c);
}

/* Contention: one 2-core node, X (10 s) and Y (4 s) each request 1 cpu but use 200 % and are
 * fully cpu-sensitive. Together they demand 4 cores of 2: both run at half speed. Y's 4 s of
 * work end at 8; X has done 4 of 10 and finishes the other 6 alone: 14. Without contention:
 * 10. */
static void test_contention(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r =
        simulate("node_types:\n  - {name: one, count: 1, cores: 2, memory: 4Gi}\n",
                 "workflows:\n"
                 "  - name: pair\n"
                 "    requests: {cpu: 1, memory: 1Gi}\n"
                 "    processes:\n"
                 "      - {name: X, instances: 1, base_runtime: 10, usage: {cpu_pct: 200},\n"
                 "         sensitivity: {cpu: 1}}\n"
                 "      - {name: Y, instances: 1, base_runtime: 4, usage: {cpu_pct: 200},\n"
                 "         sensitivity: {cpu: 1}}\n",
                 "fair", true, &c, &w);
    CHECK(r != NULL);
    if (r) {
        CHECK_NEAR(r->task_recs[1].end, 8, 1e-9);
        CHECK_NEAR(r->task_recs[0].end, 14, 1e-9);
    }
    sim_result_free(r);
    r = w ? run(c, w, "fair", false) : NULL;
    CHECK(r != NULL);
    if (r)
        CHECK_NEAR(r->horizon, 10, 1e-9);
    sim_yaml_free(r, w, c);
}

/* Memory-bandwidth contention: one 4-core node with a bandwidth of 1 busy core. X (10 s) and
 * Y (4 s) each use 100 % cpu and are fully memory-bound, so D_mem = 2 over 1: both run at
 * half speed (cpu is not short: 2 of 4 cores). Y ends at 8, X has 6 s left alone: 14. */
static void test_memory_contention(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r =
        simulate("node_types:\n"
                 "  - {name: one, count: 1, cores: 4, memory: 4Gi, mem_bandwidth: 1}\n",
                 "workflows:\n"
                 "  - name: pair\n"
                 "    requests: {cpu: 1, memory: 1Gi}\n"
                 "    processes:\n"
                 "      - {name: X, instances: 1, base_runtime: 10, usage: {cpu_pct: 100},\n"
                 "         sensitivity: {mem: 1}}\n"
                 "      - {name: Y, instances: 1, base_runtime: 4, usage: {cpu_pct: 100},\n"
                 "         sensitivity: {mem: 1}}\n",
                 "fair", true, &c, &w);
    CHECK(r != NULL);
    if (r) {
        CHECK_NEAR(r->task_recs[1].end, 8, 1e-9);
        CHECK_NEAR(r->task_recs[0].end, 14, 1e-9);
    }
    sim_yaml_free(r, w, c);
}

/* Overlapping explicit arrivals, given out of order: one slot, a 10 s task per run. The run
 * arriving at 0 runs 0-10 (makespan 10), the one arriving at 5 waits and runs 10-20 (15). The
 * earliest is "run 1", the unlabeled one: first 10, later 15, pending mean 2.5. */
static void test_arrivals_overlap(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r = simulate("node_types:\n  - {name: one, count: 1, cores: 2, memory: 4Gi}\n",
                             "workflows:\n"
                             "  - name: a\n"
                             "    arrivals: [5, 0]\n"
                             "    requests: {cpu: 2}\n"
                             "    processes: [{name: T, instances: 1, base_runtime: 10}]\n",
                             "fair", false, &c, &w);
    CHECK(r != NULL);
    if (r) {
        CHECK_NEAR(r->wf[0].makespan_first, 10, 1e-9);
        CHECK_NEAR(r->wf[0].makespan_rest_mean, 15, 1e-9);
        CHECK_NEAR(r->wf[0].pending_mean, 2.5, 1e-9);
        CHECK_NEAR(r->horizon, 20, 1e-9);
    }
    sim_yaml_free(r, w, c);
}

/* Recurring runs with a gap: start 3, runs 3, gap 5, one 10 s task per run on one slot. Run 1
 * arrives at 3 and ends at 13, run 2 arrives 5 s later at 18 and ends 28, run 3 33-43. */
static void test_start_runs_gap(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r = simulate("node_types:\n  - {name: one, count: 1, cores: 2, memory: 4Gi}\n",
                             "workflows:\n"
                             "  - {name: g, start: 3, runs: 3, gap: 5, requests: {cpu: 2},\n"
                             "     processes: [{name: T, instances: 1, base_runtime: 10}]}\n",
                             "fair", false, &c, &w);
    CHECK(r != NULL);
    if (r) {
        static const double arrival[3] = {3, 18, 33};
        CHECK_INT(r->nruns, 3);
        for (int i = 0; i < 3 && i < r->nruns; i++) {
            CHECK_NEAR(r->runs[i].arrival, arrival[i], 1e-9);
            CHECK_NEAR(r->runs[i].end, arrival[i] + 10, 1e-9);
        }
        CHECK_NEAR(r->wf[0].makespan_mean, 10, 1e-9);
    }
    sim_yaml_free(r, w, c);
}

/* A process may wait for the same predecessor both ways (after and after_each): B#i starts
 * when A#i is done and every A is done. One 4-core node, A (x2: 3 s and 3 s), B 1 s: 4 s. */
static void test_after_and_after_each(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r = simulate("node_types:\n  - {name: one, count: 1, cores: 4, memory: 4Gi}\n",
                             "workflows:\n"
                             "  - name: d\n"
                             "    requests: {cpu: 2}\n"
                             "    processes:\n"
                             "      - {name: A, instances: 2, base_runtime: 3}\n"
                             "      - {name: B, instances: 2, base_runtime: 1, after: [A],\n"
                             "         after_each: [A]}\n",
                             "fair", false, &c, &w);
    CHECK(r != NULL);
    if (r) {
        CHECK_NEAR(r->horizon, 4, 1e-9);
        CHECK_NEAR(r->task_recs[2].start, 3, 1e-9);
        CHECK_NEAR(r->task_recs[3].start, 3, 1e-9);
    }
    sim_yaml_free(r, w, c);
}

/* Relative speeds alone (no bench figures) group like figures would: two groups, the faster
 * type labelled higher. */
static void test_speed_only_grouping(void) {
    sim_cluster *c = sim_yaml_cluster(
        "node_types:\n"
        "  - {name: old, count: 3, cores: 4, memory: 8Gi, speed: {cpu: 1, mem: 1}}\n"
        "  - {name: new, count: 2, cores: 4, memory: 8Gi,\n"
        "     speed: {cpu: 1.5, mem: 1.3}}\n");
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK_INT(c->ngroups, 2);
    CHECK_INT(c->nodes[0].group, 0);
    CHECK_INT(c->nodes[4].group, 1);
    CHECK(c->nodes[4].label[LAB_CPU] > c->nodes[0].label[LAB_CPU]);
    CHECK(c->nodes[4].label[LAB_MEM] > c->nodes[0].label[LAB_MEM]);
    sim_cluster_free(c);
}

/* Runtime model: a measured on type a only; on b (twice the cpu speed) with half the runtime
 * cpu-bound: 10 * (0.5 + 0.5 / 2) = 7.5. A base runtime of 8 fully cpu-bound: 8 on a, 4 on b. */
static void test_runtime_model(void) {
    sim_cluster *c =
        sim_yaml_cluster("node_types:\n"
                         "  - {name: a, count: 1, cores: 2, memory: 4Gi, speed: {cpu: 1}}\n"
                         "  - {name: b, count: 1, cores: 2, memory: 4Gi, speed: {cpu: 2}}\n");
    sim_workload *w = sim_yaml_workload("workflows:\n"
                                        "  - name: m\n"
                                        "    processes:\n"
                                        "      - {name: P, instances: 1, runtime: {a: 10},\n"
                                        "         sensitivity: {cpu: 0.5}}\n"
                                        "      - {name: Q, instances: 1, base_runtime: 8,\n"
                                        "         sensitivity: {cpu: 1}}\n"
                                        "      - {name: D, instances: 1, base_runtime: 8,\n"
                                        "         usage: {cpu_pct: 50}}\n",
                                        c);
    CHECK(w != NULL);
    if (w) {
        const sim_workflow *wf = &w->wfs[0];
        CHECK_NEAR(sim_runtime(c, wf, &wf->procs[0], 0, 0), 10, 1e-9);
        CHECK_NEAR(sim_runtime(c, wf, &wf->procs[0], 0, 1), 7.5, 1e-9);
        CHECK_NEAR(sim_runtime(c, wf, &wf->procs[1], 0, 0), 8, 1e-9);
        CHECK_NEAR(sim_runtime(c, wf, &wf->procs[1], 0, 1), 4, 1e-9);
        /* default sensitivity from usage: 50 % of the 1 requested cpu -> 0.5: 8 * 0.75 */
        CHECK_NEAR(wf->procs[2].sens[LAB_CPU], 0.5, 1e-9);
        CHECK_NEAR(sim_runtime(c, wf, &wf->procs[2], 0, 1), 6, 1e-9);
    }
    sim_workload_free(w);
    sim_cluster_free(c);
}

/* Isolation: each workflow alone on the empty cluster, one after the other; the second's
 * times are offset by the first's horizon. Together they would share the single slot. */
static void test_isolated(void) {
    sim_cluster *c =
        sim_yaml_cluster("node_types:\n  - {name: one, count: 1, cores: 2, memory: 4Gi}\n");
    sim_workload *w =
        sim_yaml_workload("workflows:\n"
                          "  - {name: u, requests: {cpu: 2},\n"
                          "     processes: [{name: A, instances: 1, base_runtime: 5}]}\n"
                          "  - {name: v, requests: {cpu: 2},\n"
                          "     processes: [{name: B, instances: 1, base_runtime: 3}]}\n",
                          c);
    sim_opts o;
    sim_opts_ideal(&o);
    o.shuffle = false;
    o.record_tasks = true;
    tm_err err = {0};
    sim_result *r = w ? sim_run_isolated(c, w, &o, &err) : NULL;
    CHECK(r != NULL);
    if (r) {
        CHECK_NEAR(r->wf[0].makespan_mean, 5, 1e-9);
        CHECK_NEAR(r->wf[1].makespan_mean, 3, 1e-9);
        CHECK_NEAR(r->horizon, 8, 1e-9);
        CHECK_NEAR(r->task_recs[1].start, 5, 1e-9);
        CHECK_INT(r->task_recs[1].wf, 1);
    }
    sim_result_free(r);
    r = w ? sim_run(c, w, &o, &err) : NULL; /* shared: v waits for the slot */
    CHECK(r != NULL);
    if (r) {
        CHECK_NEAR(r->wf[1].makespan_mean, 8, 1e-9);
        CHECK_NEAR(r->wf[1].pending_mean, 5, 1e-9);
    }
    sim_result_free(r);
    sim_workload_free(w);
    sim_cluster_free(c);
}

/* Same seed, same result; the shuffle changes only the node order (names). */
static void test_seed_repeatable(void) {
    sim_cluster *c = sim_yaml_cluster(tiny_cluster);
    sim_workload *w = sim_yaml_workload(tiny_workload, c);
    sim_opts o;
    sim_opts_ideal(&o);
    o.policy = "round-robin";
    o.seed = 7;
    tm_err err = {0};
    sim_result *a = w ? sim_run(c, w, &o, &err) : NULL, *b = w ? sim_run(c, w, &o, &err) : NULL;
    CHECK(a && b);
    if (a && b) {
        CHECK_NEAR(a->wf[0].makespan_mean, b->wf[0].makespan_mean, 0);
        CHECK_INT(a->sched_attempts, b->sched_attempts);
    }
    sim_result_free(a);
    sim_result_free(b);
    sim_workload_free(w);
    sim_cluster_free(c);
}

static void test_unknown_policy(void) {
    sim_cluster *c = sim_yaml_cluster(tiny_cluster);
    sim_workload *w = sim_yaml_workload(tiny_workload, c);
    sim_opts o;
    sim_opts_ideal(&o);
    o.policy = "fastest";
    tm_err err = {0};
    sim_result *r = w ? sim_run(c, w, &o, &err) : NULL;
    CHECK(r == NULL);
    CHECKF(strstr(err.msg, "fastest") != NULL, "message: %s", err.msg);
    sim_result_free(r);
    sim_workload_free(w);
    sim_cluster_free(c);
}

int main(void) {
    RUN(test_tiny_grouping);
    RUN(test_tiny_policies);
    RUN(test_tiny_tarema_placements);
    RUN(test_dag_and_queueing);
    RUN(test_contention);
    RUN(test_memory_contention);
    RUN(test_arrivals_overlap);
    RUN(test_start_runs_gap);
    RUN(test_after_and_after_each);
    RUN(test_speed_only_grouping);
    RUN(test_runtime_model);
    RUN(test_isolated);
    RUN(test_seed_repeatable);
    RUN(test_unknown_policy);
    return TEST_SUMMARY();
}
