/* sim_gang_preemption_test.c: gangs under the simulator's --preemption, worked out by hand on
 * two nodes of 4 cores (ideal model, fair policy, no shuffle), through the live scheduler's
 * own choice (sched_gang_preempt):
 *   a. eight low tasks (priority 0, 1 core, 100 s) fill both nodes; a gang of two 3-core tasks
 *      (priority 1000, 10 s) arrives at 5. Each member needs its own node, so exactly three
 *      low tasks go on each node (6 evicted, 2 left); the gang runs 5..15, whole, on both
 *      nodes; the six evicted start over at 15 (work lost) and end at 115.
 *   b. the same, but a task of priority 1000 (1 core) holds each node: even with every low
 *      task evicted no member (4 cores) fits, so nothing is evicted and the gang starts when
 *      the nodes empty, at 100.
 *   c. a low gang of two 4-core tasks (priority 0, 100 s) holds both nodes; a single 4-core
 *      task of priority 1000 (10 s) arrives at 5 and takes one node: the gang is evicted
 *      whole (its member on the other node too), runs again 15..115 with both members.
 *   d. equal priority: as (a) with the gang at 0, nothing is evicted, the gang starts at 100.
 *   e. a gang with a finished member: a gang of two 4-core tasks (priority 100) on a fast node
 *      (20 s) and a slow one (100 s); at 25 a task of priority 200 takes the fast node; at 30 a
 *      4-core task of priority 1000 preempts the slow node (its victim of the lower priority).
 *      The gang is evicted whole: its running member only, the finished one stays finished and
 *      counts toward minMember, so the member alone is placed again, at 40, ending at 140. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sim/engine.h"
#include "sim/model.h"
#include "sim_yaml.h"

static const char *cluster = "node_types:\n"
                             "  - {name: n, count: 2, cores: 4, memory: 16Gi,\n"
                             "     bench: {cpu: 200, mem: 8000, io: 500}}\n";

/* low: 8 x 1 core for 100 s at 0; [mid: 2 x 1 core at 1000]; hi: a gang of 2 x CPU cores at
 * PRIO arriving at 5 for 10 s. */
#define LOW_FILL(n)                                                                                \
    "  - name: low\n"                                                                              \
    "    requests: {cpu: 1, memory: 1Gi}\n"                                                        \
    "    processes:\n"                                                                             \
    "      - {name: b, instances: " #n ", runtime: {n: 100}}\n"
#define MID                                                                                        \
    "  - name: mid\n"                                                                              \
    "    priority: 1000\n"                                                                         \
    "    requests: {cpu: 1, memory: 1Gi}\n"                                                        \
    "    processes:\n"                                                                             \
    "      - {name: m, instances: 2, runtime: {n: 100}}\n"
#define HI_GANG(prio, cpu)                                                                         \
    "  - name: hi\n"                                                                               \
    "    priority: " #prio "\n"                                                                    \
    "    arrivals: [5]\n"                                                                          \
    "    requests: {cpu: " #cpu ", memory: 1Gi}\n"                                                 \
    "    processes:\n"                                                                             \
    "      - {name: g, instances: 2, gang: 2, runtime: {n: 10}}\n"

static sim_result *run(const char *workload, sim_workload **w, sim_cluster **c) {
    tm_err err = {0};
    if (!sim_yaml_load(cluster, workload, c, w)) {
        CHECKF(false, "workload does not load");
        return NULL;
    }
    sim_opts o;
    sim_opts_ideal(&o);
    o.policy = "fair";
    o.shuffle = false;
    o.record_tasks = true;
    o.preemption = true;
    sim_result *r = sim_run(*c, *w, &o, &err);
    CHECKF(r, "sim_run: %s", err.msg);
    return r;
}

/* Tasks of workflow wf (index) that start at `at`, and on how many distinct nodes. */
static int started_at(const sim_result *r, int wf, double at, int *nodes) {
    int n = 0, seen[8] = {0};
    *nodes = 0;
    for (long i = 0; i < r->tasks; i++) {
        const sim_task_rec *t = &r->task_recs[i];
        if (t->wf != wf || fabs(t->start - at) > 1e-6)
            continue;
        n++;
        if (t->node >= 0 && t->node < 8 && !seen[t->node]++)
            (*nodes)++;
    }
    return n;
}

static void test_gang_preempts_across_nodes(void) {
    sim_cluster *c = NULL;
    sim_workload *w = NULL;
    sim_result *r = run("workflows:\n" LOW_FILL(8) HI_GANG(1000, 3), &w, &c);
    if (r) {
        int nodes;
        CHECK_INT(r->gang_preemptions, 1);
        CHECK_INT(r->evictions, 6); /* three low tasks on each node, no more */
        CHECK_INT(r->gang_evictions, 0);
        CHECK_INT(r->preemptions, 0);
        CHECK_INT(started_at(r, 1, 5, &nodes), 2); /* the gang, whole, at once */
        CHECK_INT(nodes, 2);
        CHECK_INT(started_at(r, 0, 0, &nodes), 2); /* one low task left on each node */
        CHECK_INT(nodes, 2);
        CHECK_INT(started_at(r, 0, 15, &nodes), 6); /* the six evicted, again at 15 */
        CHECK_INT(nodes, 2);
        CHECK_NEAR(r->wf[1].makespan_first, 10, 1e-6);
        CHECK_NEAR(r->wf[0].makespan_first, 115, 1e-6);
        CHECK_INT(r->ngangs, 1);
        if (r->ngangs == 1)
            CHECK_NEAR(r->gangs[0].start, 5, 1e-6);
    }
    sim_yaml_free(r, w, c);
}

static void test_no_fit_evicts_nothing(void) {
    sim_cluster *c = NULL;
    sim_workload *w = NULL;
    sim_result *r = run("workflows:\n" LOW_FILL(6) MID HI_GANG(1000, 4), &w, &c);
    if (r) {
        int nodes;
        CHECK_INT(r->evictions, 0);
        CHECK_INT(r->gang_preemptions, 0);
        CHECK_INT(r->preemptions, 0);
        CHECK_INT(started_at(r, 0, 0, &nodes), 6); /* no low task ran twice */
        CHECK_INT(started_at(r, 2, 100, &nodes), 2);
        CHECK_NEAR(r->horizon, 110, 1e-6);
    }
    sim_yaml_free(r, w, c);
}

static void test_single_task_evicts_gang_whole(void) {
    sim_cluster *c = NULL;
    sim_workload *w = NULL;
    sim_result *r = run("workflows:\n"
                        "  - name: low\n"
                        "    requests: {cpu: 4, memory: 1Gi}\n"
                        "    processes:\n"
                        "      - {name: g, instances: 2, gang: 2, runtime: {n: 100}}\n"
                        "  - name: urgent\n"
                        "    priority: 1000\n"
                        "    arrivals: [5]\n"
                        "    requests: {cpu: 4, memory: 1Gi}\n"
                        "    processes:\n"
                        "      - {name: u, instances: 1, runtime: {n: 10}}\n",
                        &w, &c);
    if (r) {
        int nodes;
        CHECK_INT(r->preemptions, 1);
        CHECK_INT(r->gang_evictions, 1);
        CHECK_INT(r->evictions, 2); /* the member on the other node goes too */
        CHECK_INT(r->gang_preemptions, 0);
        CHECK_INT(started_at(r, 1, 5, &nodes), 1);
        CHECK_INT(started_at(r, 0, 15, &nodes), 2); /* both members again, together */
        CHECK_INT(nodes, 2);
        CHECK_NEAR(r->wf[0].makespan_first, 115, 1e-6);
        CHECK_INT(r->ngangs, 1);
        if (r->ngangs == 1)
            CHECK_NEAR(r->gangs[0].start, 15, 1e-6);
    }
    sim_yaml_free(r, w, c);
}

static void test_equal_priority_no_preemption(void) {
    sim_cluster *c = NULL;
    sim_workload *w = NULL;
    sim_result *r = run("workflows:\n" LOW_FILL(8) HI_GANG(0, 3), &w, &c);
    if (r) {
        int nodes;
        CHECK_INT(r->evictions, 0);
        CHECK_INT(r->gang_preemptions, 0);
        CHECK_INT(started_at(r, 1, 100, &nodes), 2);
        CHECK_NEAR(r->wf[0].makespan_first, 100, 1e-6);
    }
    sim_yaml_free(r, w, c);
}

static void test_gang_with_finished_member(void) {
    sim_cluster *c = NULL;
    sim_workload *w = NULL;
    tm_err err = {0};
    const char *cl = "node_types:\n"
                     "  - {name: x, count: 1, cores: 4, memory: 16Gi,\n"
                     "     bench: {cpu: 200, mem: 8000, io: 500}}\n"
                     "  - {name: y, count: 1, cores: 4, memory: 16Gi,\n"
                     "     bench: {cpu: 100, mem: 8000, io: 500}}\n";
    const char *wl = "workflows:\n"
                     "  - name: low\n"
                     "    priority: 100\n"
                     "    requests: {cpu: 4, memory: 1Gi}\n"
                     "    processes:\n"
                     "      - {name: g, instances: 2, gang: 2, runtime: {x: 20, y: 100}}\n"
                     "  - name: filler\n"
                     "    priority: 200\n"
                     "    arrivals: [25]\n"
                     "    requests: {cpu: 4, memory: 1Gi}\n"
                     "    processes:\n"
                     "      - {name: f, instances: 1, runtime: {x: 200, y: 200}}\n"
                     "  - name: urgent\n"
                     "    priority: 1000\n"
                     "    arrivals: [30]\n"
                     "    requests: {cpu: 4, memory: 1Gi}\n"
                     "    processes:\n"
                     "      - {name: u, instances: 1, runtime: {x: 10, y: 10}}\n";
    if (!sim_yaml_load(cl, wl, &c, &w)) {
        CHECKF(false, "workload does not load");
        sim_yaml_free(NULL, w, c);
        return;
    }
    sim_opts o;
    sim_opts_ideal(&o);
    o.policy = "fair";
    o.shuffle = false;
    o.record_tasks = true;
    o.preemption = true;
    sim_result *r = sim_run(c, w, &o, &err);
    CHECKF(r, "sim_run: %s", err.msg);
    if (r) {
        int nodes;
        CHECK_INT(r->preemptions, 1);
        CHECK_INT(r->gang_evictions, 1);
        CHECK_INT(r->evictions, 1);                /* only the running member had work to lose */
        CHECK_INT(started_at(r, 0, 0, &nodes), 1); /* the finished member kept its run */
        CHECK_INT(started_at(r, 0, 40, &nodes), 1);
        CHECK_INT(started_at(r, 1, 25, &nodes), 1); /* the filler was not touched */
        CHECK_NEAR(r->wf[0].makespan_first, 140, 1e-6);
        CHECK_INT(r->ngangs, 1);
        if (r->ngangs == 1)
            CHECK_NEAR(r->gangs[0].start, 40, 1e-6);
    }
    sim_yaml_free(r, w, c);
}

int main(void) {
    RUN(test_gang_preempts_across_nodes);
    RUN(test_no_fit_evicts_nothing);
    RUN(test_single_task_evicts_gang_whole);
    RUN(test_equal_priority_no_preemption);
    RUN(test_gang_with_finished_member);
    return TEST_SUMMARY();
}
