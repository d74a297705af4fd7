/* planner_ilp_test.c: the ILP on tiny instances whose optimum is worked out by hand in each
 * test's comment (WARP's turbine case free and with busy nodes, per-node cores and memory on
 * heterogeneous nodes, a diamond DAG, busy entries cut into slots), and the plan checker
 * refusing plans that break capacity, dependencies or durations. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/yamljson.h"
#include "planner/heuristic.h"
#include "planner/ilp.h"
#include "planner/problem.h"
#include "planner/solve.h"

typedef struct inst {
    pl_workflow *wf;
    pl_cluster *cl;
    pl_busy *busy;
    int nbusy;
    pl_problem p;
    pl_plan plan;
    pl_outcome o;
    int ok;
} inst;

/* Builds and solves with the given solver; inst.ok says whether every step worked. */
static void solve(inst *in, const char *wf, const char *cluster, const char *busy, int64_t slot,
                  pl_objective obj, pl_solver solver) {
    memset(in, 0, sizeof *in);
    tm_err err = {0};
    json_t *w = tm_yaml_parse(wf, strlen(wf), "wf.yaml", &err);
    json_t *c = tm_yaml_parse(cluster, strlen(cluster), "cluster.yaml", &err);
    json_t *b = busy ? tm_yaml_parse(busy, strlen(busy), "busy.yaml", &err) : NULL;
    in->wf = w ? pl_workflow_from_native(w, "wf.yaml", &err) : NULL;
    in->cl = c ? pl_cluster_from_json(c, "cluster.yaml", &err) : NULL;
    int bok =
        !busy || (b && in->cl &&
                  pl_busy_from_json(b, "busy.yaml", in->cl, &in->busy, &in->nbusy, &err) == 0);
    json_decref(w);
    json_decref(c);
    json_decref(b);
    if (!in->wf || !in->cl || !bok ||
        pl_problem_init(&in->p, in->wf, in->cl, in->busy, in->nbusy, slot, obj, &err) < 0 ||
        pl_plan_init(&in->plan, &in->p) < 0 ||
        pl_solve(&in->p, solver, 20, &in->plan, &in->o, &err) < 0) {
        printf("    setup failed: %s\n", err.msg);
        return;
    }
    if (pl_plan_check(&in->p, &in->plan, &err) < 0) {
        printf("    plan check failed: %s\n", err.msg);
        return;
    }
    in->ok = 1;
}

static void done(inst *in) {
    pl_plan_free(&in->plan);
    if (in->p.wf)
        pl_problem_free(&in->p);
    free(in->busy);
    pl_cluster_free(in->cl);
    pl_workflow_free(in->wf);
}

static int step(const inst *in, const char *name) {
    return pl_workflow_find(in->wf, name);
}

/* Node names of step s's pods, comma-separated, sorted as placed. */
static const char *nodes_of(const inst *in, const char *name, char *buf, size_t size) {
    int s = step(in, name);
    size_t len = 0;
    buf[0] = 0;
    for (int k = in->plan.off[s]; k < in->plan.off[s + 1]; k++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", k > in->plan.off[s] ? "," : "",
                                in->cl->nodes[in->plan.node[k]].name);
    return buf;
}

static const char *turbine = "name: turbine\nsteps:\n"
                             "  - {name: LES, pods: 2, requests: {cpu: 36, memory: 64Gi}, "
                             "duration: 15m, image: les}\n"
                             "  - {name: HPDA, after: [LES], pods: 5, requests: {cpu: 36, "
                             "memory: 64Gi}, duration: 30m, image: hpda}\n";
static const char *fourteen = "node_types:\n  - {name: c, count: 14, cores: 36, memory: 128Gi}\n";
static const char *ten_busy_35m =
    "- {node: c-1, cores: 36, until: 35m}\n- {node: c-2, cores: 36, until: 35m}\n"
    "- {node: c-3, cores: 36, until: 35m}\n- {node: c-4, cores: 36, until: 35m}\n"
    "- {node: c-5, cores: 36, until: 35m}\n- {node: c-6, cores: 36, until: 35m}\n"
    "- {node: c-7, cores: 36, until: 35m}\n- {node: c-8, cores: 36, until: 35m}\n"
    "- {node: c-9, cores: 36, until: 35m}\n- {node: c-10, cores: 36, until: 35m}\n";

/* 14 free nodes: LES (2 nodes) at 0 for 15 slots, HPDA (5 nodes) right after for 30: the
 * critical path, 45 minutes, is reachable, and starting at 0 is the earliest. */
static void test_turbine_free(void) {
    inst in;
    solve(&in, turbine, fourteen, NULL, 60, PL_OBJ_MAKESPAN, PL_SOLVER_ILP);
    CHECK(in.ok);
    if (in.ok) {
        CHECK_STR(in.o.solver, "ilp");
        CHECK(in.o.optimal);
        CHECK_INT(in.plan.start[step(&in, "LES")], 0);
        CHECK_INT(in.plan.start[step(&in, "HPDA")], 15);
        CHECK_INT(pl_plan_last(&in.plan) - pl_plan_first(&in.plan), 45);
        CHECK_INT(in.o.bound, 45);
    }
    done(&in);
}

/* Ten nodes held for 35 minutes leave four: LES (2) fits at once but HPDA (5) cannot start
 * before slot 35. Run at once, LES would end at 15 and HPDA wait 20 slots: makespan 65. The
 * optimum has no gap: HPDA at 35, LES at 35 - 15 = 20, makespan 45 (the critical path), end 65.
 * Starting LES any earlier opens a gap; later delays HPDA. So the only optimum is LES at 20. */
static void test_turbine_busy_no_gap(void) {
    inst in;
    solve(&in, turbine, fourteen, ten_busy_35m, 60, PL_OBJ_MAKESPAN, PL_SOLVER_ILP);
    CHECK(in.ok);
    if (in.ok) {
        CHECK_STR(in.o.solver, "ilp");
        CHECK(in.o.optimal);
        CHECK_INT(in.plan.start[step(&in, "LES")], 20);
        CHECK_INT(in.plan.start[step(&in, "HPDA")], 35);
        CHECK_INT(pl_plan_last(&in.plan), 65);
        /* LES can only be on the four free nodes c-11..c-14 */
        for (int k = in.plan.off[step(&in, "LES")]; k < in.plan.off[step(&in, "LES") + 1]; k++)
            CHECKF(in.plan.node[k] >= 10, "LES on %s", in.cl->nodes[in.plan.node[k]].name);
    }
    done(&in);
}

/* The same with --objective end: the end cannot be before 65 (HPDA cannot start before 35),
 * and among plans ending at 65 the tie-break prefers the compact one: LES at 20 again. */
static void test_turbine_busy_objective_end(void) {
    inst in;
    solve(&in, turbine, fourteen, ten_busy_35m, 60, PL_OBJ_END, PL_SOLVER_ILP);
    CHECK(in.ok);
    if (in.ok) {
        CHECK(in.o.optimal);
        CHECK_INT(pl_plan_last(&in.plan), 65);
        CHECK_INT(in.plan.start[step(&in, "LES")], 20);
        CHECK_INT(in.o.bound, 65);
    }
    done(&in);
}

/* Heterogeneous nodes, cores and memory per node. a-1: 4 cores 8Gi; b-1: 8 cores 4Gi.
 * X: 2 pods of 2 cores 3Gi, 10 min; Y: 1 pod of 6 cores 2Gi, 10 min; independent.
 * Y fits only b-1 (a-1 has 4 cores). Next to Y, b-1 has 2 cores and 2Gi left: no X pod (3Gi).
 * a-1 holds both X pods (4 cores, 6Gi). So both run at once: makespan 10, X on a-1 twice, Y on
 * b-1. Counting cores alone (b-1 has 2 cores left) would put an X pod next to Y; counting the
 * cluster as a whole would not notice that. */
static void test_heterogeneous_cores_and_memory(void) {
    const char *wf = "name: h\nsteps:\n"
                     "  - {name: X, pods: 2, requests: {cpu: 2, memory: 3Gi}, duration: 10m, "
                     "image: x}\n"
                     "  - {name: Y, requests: {cpu: 6, memory: 2Gi}, duration: 10m, image: y}\n";
    const char *cl = "node_types:\n  - {name: a, count: 1, cores: 4, memory: 8Gi}\n"
                     "  - {name: b, count: 1, cores: 8, memory: 4Gi}\n";
    inst in;
    solve(&in, wf, cl, NULL, 60, PL_OBJ_MAKESPAN, PL_SOLVER_ILP);
    CHECK(in.ok);
    if (in.ok) {
        char buf[128];
        CHECK(in.o.optimal);
        CHECK_INT(pl_plan_last(&in.plan) - pl_plan_first(&in.plan), 10);
        CHECK_STR(nodes_of(&in, "X", buf, sizeof buf), "a-1,a-1");
        CHECK_STR(nodes_of(&in, "Y", buf, sizeof buf), "b-1");
    }
    done(&in);
}

/* Per-node packing: two nodes of 4 cores; A and B one pod of 3 cores each, C one pod of 2,
 * 10 min each, independent. The cluster's 8 cores would take all three at once, but A and B
 * cannot share a node (6 > 4), each leaves 1 core, so C runs after one of them: makespan 20. */
static void test_per_node_packing(void) {
    const char *wf = "name: p\nsteps:\n"
                     "  - {name: A, requests: {cpu: 3, memory: 1Gi}, duration: 10m, image: x}\n"
                     "  - {name: B, requests: {cpu: 3, memory: 1Gi}, duration: 10m, image: x}\n"
                     "  - {name: C, requests: {cpu: 2, memory: 1Gi}, duration: 10m, image: x}\n";
    const char *cl = "node_types:\n  - {name: n, count: 2, cores: 4, memory: 8Gi}\n";
    inst in;
    solve(&in, wf, cl, NULL, 60, PL_OBJ_MAKESPAN, PL_SOLVER_ILP);
    CHECK(in.ok);
    if (in.ok) {
        CHECK(in.o.optimal);
        CHECK_INT(pl_plan_last(&in.plan) - pl_plan_first(&in.plan), 20);
        CHECK_INT(in.plan.start[step(&in, "A")] == 0 || in.plan.start[step(&in, "B")] == 0, 1);
    }
    done(&in);
}

/* Diamond: A (10) before B (20) and C (5), both before D (10); room for all. The longest path
 * A-B-D is 40: B at 10, C at 10 or later but ending by 30, D at 30. */
static void test_diamond(void) {
    const char *wf = "name: d\nsteps:\n"
                     "  - {name: A, requests: {cpu: 1, memory: 1Gi}, duration: 10m, image: x}\n"
                     "  - {name: B, after: [A], requests: {cpu: 1, memory: 1Gi}, duration: 20m, "
                     "image: x}\n"
                     "  - {name: C, after: [A], requests: {cpu: 1, memory: 1Gi}, duration: 5m, "
                     "image: x}\n"
                     "  - {name: D, after: [B, C], requests: {cpu: 1, memory: 1Gi}, duration: "
                     "10m, image: x}\n";
    const char *cl = "node_types:\n  - {name: n, count: 1, cores: 2, memory: 8Gi}\n";
    inst in;
    solve(&in, wf, cl, NULL, 60, PL_OBJ_MAKESPAN, PL_SOLVER_ILP);
    CHECK(in.ok);
    if (in.ok) {
        CHECK(in.o.optimal);
        CHECK_INT(in.plan.start[step(&in, "A")], 0);
        CHECK_INT(in.plan.start[step(&in, "B")], 10);
        CHECK_INT(in.plan.start[step(&in, "D")], 30);
        CHECK(in.plan.start[step(&in, "C")] >= 10 && in.plan.end[step(&in, "C")] <= 30);
        CHECK_INT(pl_plan_last(&in.plan), 40);
    }
    done(&in);
}

/* A busy entry until 90 s holds the node for two 60 s slots (rounded up); the step needs the
 * whole node for 5 minutes: earliest start slot 2 (120 s), end slot 7. With 30 s slots the
 * entry holds 3 slots: start at 90 s exactly. Durations are whole slots: 5 min = 10 slots. */
static void test_busy_rounded_to_slots(void) {
    const char *wf = "name: b\nsteps:\n"
                     "  - {name: S, requests: {cpu: 4, memory: 1Gi}, duration: 5m, image: x}\n";
    const char *cl = "node_types:\n  - {name: n, count: 1, cores: 4, memory: 8Gi}\n";
    const char *busy = "- {node: n-1, cores: 1, until: 90s}\n";
    inst in;
    solve(&in, wf, cl, busy, 60, PL_OBJ_MAKESPAN, PL_SOLVER_ILP);
    CHECK(in.ok);
    if (in.ok) {
        CHECK_INT(in.plan.start[0], 2);
        CHECK_INT(in.plan.end[0], 7);
    }
    done(&in);
    solve(&in, wf, cl, busy, 30, PL_OBJ_MAKESPAN, PL_SOLVER_ILP);
    CHECK(in.ok);
    if (in.ok) {
        CHECK_INT(in.plan.start[0] * 30, 90);
        CHECK_INT(in.plan.end[0] - in.plan.start[0], 10);
    }
    done(&in);
}

/* The checker refuses what breaks a rule, naming it. Starts from the optimal diamond plan. */
static void test_checker_refuses(void) {
    const char *wf = "name: d\nsteps:\n"
                     "  - {name: A, requests: {cpu: 2, memory: 1Gi}, duration: 10m, image: x}\n"
                     "  - {name: B, after: [A], requests: {cpu: 2, memory: 1Gi}, duration: 20m, "
                     "image: x}\n"
                     "  - {name: C, requests: {cpu: 2, memory: 1Gi}, duration: 5m, image: x}\n";
    const char *cl = "node_types:\n  - {name: n, count: 2, cores: 2, memory: 8Gi}\n";
    inst in;
    solve(&in, wf, cl, NULL, 60, PL_OBJ_MAKESPAN, PL_SOLVER_ILP);
    CHECK(in.ok);
    if (!in.ok) {
        done(&in);
        return;
    }
    tm_err err = {0};
    pl_plan bad;
    int a = step(&in, "A"), b = step(&in, "B"), c = step(&in, "C");
    /* B before A ends */
    pl_plan_copy(&bad, &in.plan);
    bad.start[b] = bad.end[a] - 1;
    bad.end[b] = bad.start[b] + 20;
    CHECK(pl_plan_check(&in.p, &bad, &err) < 0 && strstr(err.msg, "B starts") &&
          strstr(err.msg, "before A ends"));
    pl_plan_free(&bad);
    /* a step shorter than its walltime (the paper's w_i - 1) */
    pl_plan_copy(&bad, &in.plan);
    bad.end[b] = bad.start[b] + 19;
    CHECK(pl_plan_check(&in.p, &bad, &err) < 0 && strstr(err.msg, "walltime is 20"));
    pl_plan_free(&bad);
    /* C on A's node while A runs: 4 cores on a 2-core node */
    pl_plan_copy(&bad, &in.plan);
    bad.start[c] = bad.start[a];
    bad.end[c] = bad.start[c] + 5;
    bad.node[bad.off[c]] = bad.node[bad.off[a]];
    CHECK(pl_plan_check(&in.p, &bad, &err) < 0 && strstr(err.msg, "over its cores"));
    pl_plan_free(&bad);
    /* starting before now */
    pl_plan_copy(&bad, &in.plan);
    bad.start[a] = -1;
    CHECK(pl_plan_check(&in.p, &bad, &err) < 0 && strstr(err.msg, "before now"));
    pl_plan_free(&bad);
    done(&in);
}

int main(void) {
    RUN(test_turbine_free);
    RUN(test_turbine_busy_no_gap);
    RUN(test_turbine_busy_objective_end);
    RUN(test_heterogeneous_cores_and_memory);
    RUN(test_per_node_packing);
    RUN(test_diamond);
    RUN(test_busy_rounded_to_slots);
    RUN(test_checker_refuses);
    return TEST_SUMMARY();
}
