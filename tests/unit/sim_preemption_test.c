/* sim_preemption_test.c: the simulator with preemption (sim_opts.preemption, --preemption):
 * worked out by hand on one 4-core node. Four tasks of priority 0 (1 core, 100 s) run, two
 * started at 0 (workflow early), two at 1 (late); an urgent task of priority 1000 (2 cores,
 * 10 s) arrives at 5. Without preemption it waits for early's: 100..110, makespan 105. With
 * it, it evicts late's two (started later; kube's rule, from the start times the simulator
 * records) and runs 5..15; the evicted ones lose their work and run again 15..115. With one
 * priority throughout, preemption changes nothing. Gangs: sim_gang_preemption_test.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sim/engine.h"
#include "sim/model.h"
#include "sim_yaml.h"

static const char *cluster = "node_types:\n"
                             "  - {name: n, count: 1, cores: 4, memory: 8Gi,\n"
                             "     bench: {cpu: 200, mem: 8000, io: 500}}\n";

/* late (listed first, so its tasks come first in name order) arrives at 1, early at 0: two
 * tasks each of 1 core for 100 s; urgent (priority 1000) wants 2 cores at 5. */
#define WORKLOAD(extra)                                                                            \
    "workflows:\n"                                                                                 \
    "  - name: late\n"                                                                             \
    "    arrivals: [1]\n"                                                                          \
    "    requests: {cpu: 1, memory: 1Gi}\n"                                                        \
    "    processes:\n"                                                                             \
    "      - {name: b, instances: 2, runtime: {n: 100}" extra "}\n"                                \
    "  - name: early\n"                                                                            \
    "    requests: {cpu: 1, memory: 1Gi}\n"                                                        \
    "    processes:\n"                                                                             \
    "      - {name: b, instances: 2, runtime: {n: 100}}\n"                                         \
    "  - name: urgent\n"                                                                           \
    "    priority: 1000\n"                                                                         \
    "    arrivals: [5]\n"                                                                          \
    "    requests: {cpu: 2, memory: 1Gi}\n"                                                        \
    "    processes:\n"                                                                             \
    "      - {name: u, instances: 1, runtime: {n: 10}}\n"

static sim_result *run(const sim_cluster *c, const sim_workload *w, bool preemption, tm_err *err) {
    sim_opts o;
    sim_opts_ideal(&o);
    o.policy = "fair";
    o.shuffle = false;
    o.record_tasks = true;
    o.preemption = preemption;
    return sim_run(c, w, &o, err);
}

static void test_urgent_preempts(void) {
    sim_cluster *c;
    sim_workload *w;
    tm_err err = {0};
    if (!sim_yaml_load(cluster, WORKLOAD(""), &c, &w)) {
        CHECK(false);
        sim_yaml_free(NULL, w, c);
        return;
    }
    CHECK_INT(w->wfs[2].priority, 1000);
    CHECK_INT(w->wfs[0].priority, 0);
    sim_result *off = run(c, w, false, &err), *on = run(c, w, true, &err);
    CHECKF(off && on, "%s", err.msg);
    if (off && on) {
        CHECK_NEAR(off->wf[2].makespan_first, 95 + 10, 1e-6); /* waits for early: 100..110 */
        CHECK_NEAR(off->wf[0].makespan_first, 100, 1e-6);
        CHECK_INT(off->preemptions, 0);
        CHECK_NEAR(on->wf[2].makespan_first, 10, 1e-6);
        /* of equal priorities the later started go (kube's rule): late's, started at 1, run
         * again 15..115, 114 s after late arrived; early is untouched */
        CHECK_NEAR(on->wf[0].makespan_first, 114, 1e-6);
        CHECK_NEAR(on->wf[1].makespan_first, 100, 1e-6);
        CHECK_INT(on->preemptions, 1);
        CHECK_INT(on->evictions, 2);
        int restarted = 0;
        for (long i = 0; i < on->tasks; i++) {
            const sim_task_rec *t = &on->task_recs[i];
            restarted += fabs(t->start - 15) < 1e-6;
            CHECK(t->wf != 0 || fabs(t->start - 15) < 1e-6);
        }
        CHECK_INT(restarted, 2);
    }
    sim_result_free(off);
    sim_yaml_free(on, w, c);
}

/* One priority everywhere: nothing to preempt, the same schedule. */
static void test_one_priority_unchanged(void) {
    sim_cluster *c;
    sim_workload *w;
    tm_err err = {0};
    if (!sim_yaml_load(SIM_YAML_TINY_CLUSTER, SIM_YAML_TINY_WORKLOAD(2), &c, &w)) {
        CHECK(false);
        sim_yaml_free(NULL, w, c);
        return;
    }
    sim_result *off = run(c, w, false, &err), *on = run(c, w, true, &err);
    CHECKF(off && on, "%s", err.msg);
    if (off && on) {
        CHECK_NEAR(on->horizon, off->horizon, 1e-9);
        CHECK_NEAR(on->wf[0].makespan_mean, off->wf[0].makespan_mean, 1e-9);
        CHECK_INT(on->evictions, 0);
    }
    sim_result_free(off);
    sim_yaml_free(on, w, c);
}

/* A priority that is not an integer: refused, naming the field. (Gangs run with preemption:
 * sim_gang_preemption_test.) */
static void test_refused(void) {
    sim_cluster *c = sim_yaml_cluster(cluster);
    sim_workload *w;
    tm_err e2 = {0};
    const char *bad = "workflows:\n"
                      "  - name: x\n"
                      "    priority: high\n"
                      "    processes:\n"
                      "      - {name: u, instances: 1, runtime: {n: 10}}\n";
    json_t *j = tm_yaml_parse(bad, strlen(bad), "workload", &e2);
    w = j && c ? sim_workload_from_json(j, "workload", NULL, c, &e2) : NULL;
    CHECK(!w && strstr(e2.msg, "priority must be an integer"));
    json_decref(j);
    sim_yaml_free(NULL, w, c);
}

int main(void) {
    RUN(test_urgent_preempts);
    RUN(test_one_priority_unchanged);
    RUN(test_refused);
    return TEST_SUMMARY();
}
