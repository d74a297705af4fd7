/* sim_history_runs_test.c: the paper's protocol (section V): runs that only build history
 * before the measured ones. A history run must place and feed history exactly as a measured
 * run would, the measured runs must start only when every workflow's history runs have ended,
 * and no figure may count a history run. The ideal model without shuffle keeps every time
 * exact, so the checks compare with runs worked out by hand or with the same runs measured. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/plugins/policy/policy.h"
#include "sim/engine.h"
#include "sim_yaml.h"

static sim_result *run_with(const sim_cluster *c, const sim_workload *w, const char *policy,
                            int history_runs, bool isolate) {
    sim_opts o;
    sim_opts_ideal(&o);
    o.policy = policy;
    o.shuffle = false;
    o.record_tasks = true;
    o.history_runs = history_runs;
    tm_err err = {0};
    sim_result *r = isolate ? sim_run_isolated(c, w, &o, &err) : sim_run(c, w, &o, &err);
    if (!r)
        printf("    run %s: %s\n", policy, err.msg);
    return r;
}

/* One policy on a cluster and workload from YAML; *c and *w stay for the result (free all three
 * with sim_yaml_free). NULL when any step failed (printed). */
static sim_result *simulate(const char *cluster, const char *workload, const char *policy,
                            int history_runs, bool isolate, sim_cluster **c, sim_workload **w) {
    return sim_yaml_load(cluster, workload, c, w) ? run_with(*c, *w, policy, history_runs, isolate)
                                                  : NULL;
}

static void test_defaults(void) {
    sim_opts o;
    sim_opts_default(&o);
    CHECK_INT(o.history_runs, 1); /* the calibrated model follows the paper's protocol */
    sim_opts_ideal(&o);
    CHECK_INT(o.history_runs, 0); /* --ideal keeps the old model: every run measured */
}

/* For every policy, one history run and two measured runs are the same three runs as three
 * measured ones: the history run places as run 1 does and its history labels run 2. Only the
 * counting differs: the measured runs are runs 2 and 3, timed from when run 2 arrived. */
static void test_history_run_is_a_run_not_counted(void) {
    sim_cluster *c = sim_yaml_cluster(SIM_YAML_TINY_CLUSTER);
    sim_workload *w3 = c ? sim_yaml_workload(SIM_YAML_TINY_WORKLOAD(3), c) : NULL;
    sim_workload *w2 = c ? sim_yaml_workload(SIM_YAML_TINY_WORKLOAD(2), c) : NULL;
    CHECK(w3 && w2);
    const char *const *names = sched_policy_names();
    for (int i = 0; w3 && w2 && names[i]; i++) {
        sim_result *all = run_with(c, w3, names[i], 0, false);
        sim_result *hr = run_with(c, w2, names[i], 1, false);
        CHECK(all && hr);
        if (all && hr && all->nruns == 3) {
            CHECK_INT(hr->history_runs, 1);
            CHECK_INT(hr->nruns, 2);
            CHECK_INT(hr->tasks, 6);
            CHECK_INT(hr->wf[0].runs, 2);
            double t0 = all->runs[1].arrival, m[3];
            for (int k = 0; k < 3; k++)
                m[k] = all->runs[k].end - all->runs[k].arrival;
            CHECKF(hr->wf[0].makespan_history == m[0], "%s: history run %g, want %g", names[i],
                   hr->wf[0].makespan_history, m[0]);
            for (int k = 0; k < 2 && k < hr->nruns; k++) {
                CHECK_INT(hr->runs[k].run, k);
                CHECKF(hr->runs[k].arrival == all->runs[k + 1].arrival - t0 &&
                           hr->runs[k].end == all->runs[k + 1].end - t0,
                       "%s measured run %d: %g-%g, want %g-%g", names[i], k + 1,
                       hr->runs[k].arrival, hr->runs[k].end, all->runs[k + 1].arrival - t0,
                       all->runs[k + 1].end - t0);
            }
            CHECK_NEAR(hr->runs[0].arrival, 0, 1e-12);
            CHECK_NEAR(hr->wf[0].makespan_first, m[1], 1e-9);
            CHECK_NEAR(hr->wf[0].makespan_rest_mean, m[2], 1e-9);
            CHECK_NEAR(hr->wf[0].makespan_mean, (m[1] + m[2]) / 2, 1e-9);
            CHECK_NEAR(hr->horizon, all->horizon - t0, 1e-9);
            /* task records: the measured runs' six tasks, as the same tasks ran in runs 2-3 */
            for (long k = 0; k < 6 && hr->task_recs; k++) {
                const sim_task_rec *a = &all->task_recs[k + 3], *b = &hr->task_recs[k];
                CHECK_INT(b->run, a->run - 1);
                CHECK_INT(b->node, a->node);
                CHECK_NEAR(b->start, a->start - t0, 1e-9);
                CHECK_NEAR(b->end, a->end - t0, 1e-9);
            }
        }
        /* tarema's unlabeled first run is the slow one (20 s, labeled 10 s: sim_tiny_test) */
        if (hr && strcmp(names[i], "tarema") == 0) {
            CHECK_NEAR(hr->wf[0].makespan_history, 20, 1e-9);
            CHECK_NEAR(hr->wf[0].makespan_mean, 10, 1e-9);
        }
        sim_result_free(all);
        sim_result_free(hr);
    }
    sim_workload_free(w3);
    sim_workload_free(w2);
    sim_cluster_free(c);
}

/* Sharing the cluster, the measured runs all arrive when the last history run has ended.
 * fair, both history runs at 0: small -> fast, big -> slow, mid -> fast, long -> slow (load
 * and name ties as in sim_tiny_test): tiny ends at 20, long at 100. At 100 both measured runs
 * arrive and place the same way: 20 and 100 again. Had tiny's measured run followed its own
 * history run (at 20), long's history task would still hold a slot on slow: big would go to
 * fast and mid to slow, and tiny's measured run would take 12 s. */
/* tiny (one run) and one 100 s task, sharing the cluster */
static const char *tiny_and_long = SIM_YAML_TINY_WORKLOAD(1) /* then a second workflow: */
    "  - name: long\n"
    "    runs: 1\n"
    "    requests: {cpu: 2, memory: 1Gi}\n"
    "    processes:\n"
    "      - {name: one, instances: 1, runtime: {fast: 100, slow: 100},\n"
    "         usage: {cpu_pct: 100, peak_rss: 1Gi}}\n";

static void test_shared_waits_for_every_history_run(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r = simulate(SIM_YAML_TINY_CLUSTER, tiny_and_long, "fair", 1, false, &c, &w);
    CHECK(r != NULL);
    CHECK_INT(r ? r->nruns : -1, 2);
    if (r && r->nruns == 2) {
        CHECK_NEAR(r->wf[0].makespan_history, 20, 1e-9);
        CHECK_NEAR(r->wf[1].makespan_history, 100, 1e-9);
        CHECK_NEAR(r->runs[0].arrival, 0, 1e-12);
        CHECK_NEAR(r->runs[1].arrival, 0, 1e-12);
        CHECK_NEAR(r->wf[0].makespan_mean, 20, 1e-9);
        CHECK_NEAR(r->wf[1].makespan_mean, 100, 1e-9);
        CHECK_NEAR(r->horizon, 100, 1e-9);
        CHECK_INT(r->tasks, 4);
    }
    sim_yaml_free(r, w, c);
}

/* Explicit arrivals count from when the measured runs begin. One slot, a 10 s task per run:
 * the history run takes 0-10; then the runs arriving at +0 and +5 take 10 and 15 s (the
 * second waits for the slot), as in sim_tiny_test's overlap case. */
static void test_explicit_arrivals_after_history(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *r = simulate("node_types:\n  - {name: one, count: 1, cores: 2, memory: 4Gi}\n",
                             "workflows:\n"
                             "  - name: a\n"
                             "    arrivals: [5, 0]\n"
                             "    requests: {cpu: 2}\n"
                             "    processes: [{name: T, instances: 1, base_runtime: 10}]\n",
                             "fair", 1, false, &c, &w);
    CHECK(r != NULL);
    CHECK_INT(r ? r->nruns : -1, 2);
    if (r && r->nruns == 2) {
        CHECK_NEAR(r->wf[0].makespan_history, 10, 1e-9);
        CHECK_NEAR(r->runs[0].arrival, 0, 1e-12);
        CHECK_NEAR(r->runs[1].arrival, 5, 1e-12);
        CHECK_NEAR(r->wf[0].makespan_first, 10, 1e-9);
        CHECK_NEAR(r->wf[0].makespan_rest_mean, 15, 1e-9);
        CHECK_NEAR(r->horizon, 20, 1e-9);
    }
    sim_yaml_free(r, w, c);
}

/* Isolated, each workflow gets its own history run, and the merged result says so. */
static void test_isolated(void) {
    sim_cluster *c;
    sim_workload *w;
    sim_result *iso =
        simulate(SIM_YAML_TINY_CLUSTER, SIM_YAML_TINY_WORKLOAD(2), "tarema", 2, true, &c, &w);
    sim_result *one = w ? run_with(c, w, "tarema", 2, false) : NULL;
    CHECK(iso && one);
    if (iso && one) {
        CHECK_INT(iso->history_runs, 2);
        CHECK_INT(iso->nruns, 2);
        CHECK_NEAR(iso->wf[0].makespan_mean, one->wf[0].makespan_mean, 1e-9);
        CHECK_NEAR(iso->wf[0].makespan_history, one->wf[0].makespan_history, 1e-9);
        /* two history runs: the unlabeled one (20 s) and a labeled one (10 s) */
        CHECK_NEAR(iso->wf[0].makespan_history, 15, 1e-9);
    }
    sim_result_free(one);
    sim_yaml_free(iso, w, c);
}

int main(void) {
    RUN(test_defaults);
    RUN(test_history_run_is_a_run_not_counted);
    RUN(test_shared_waits_for_every_history_run);
    RUN(test_explicit_arrivals_after_history);
    RUN(test_isolated);
    return TEST_SUMMARY();
}
