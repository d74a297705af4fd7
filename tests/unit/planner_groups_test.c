/* planner_groups_test.c: walltimes per node group (issue 15, "a step may run on any node group
 * that fits, with the runtime predicted for that group").
 *
 * A two-node cluster, one node per group, listed slow first so that index order alone would
 * pick the slow node: "slow-1" and "fast-1", 4 cores and 16 GiB each, slots of one minute.
 * The step's mean (its duration) is 12 minutes; its own runtimes are 20 minutes on slow and 10
 * on fast. Every case is solved by the heuristic alone and by the ILP, and every plan passes
 * the checker. Plus predictions from status.runtimeByGroup, and random DAGs with random
 * per-group runtimes where both solvers' plans must pass the checker and the ILP is never
 * worse than the heuristic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/yamljson.h"
#include "planner/heuristic.h"
#include "planner/ilp.h"
#include "planner/predict.h"
#include "planner/problem.h"
#include "planner/solve.h"

static json_t *yaml(const char *text) {
    tm_err err = {0};
    json_t *j = tm_yaml_parse(text, strlen(text), "test.yaml", &err);
    CHECKF(j != NULL, "yaml: %s", err.msg);
    return j;
}

static pl_cluster *two_groups(void) {
    const char *names[] = {"slow", "fast"};
    int count[] = {1, 1};
    double cores[] = {4, 4};
    int64_t mem[] = {(int64_t)16 << 30, (int64_t)16 << 30};
    tm_err err = {0};
    pl_cluster *c = pl_cluster_make(2, names, count, cores, mem, &err);
    CHECKF(c != NULL, "%s", err.msg);
    return c;
}

static pl_workflow *workflow(const char *text) {
    tm_err err = {0};
    json_t *j = yaml(text);
    pl_workflow *wf = j ? pl_workflow_from_native(j, "wf.yaml", &err) : NULL;
    CHECKF(wf != NULL, "workflow: %s", err.msg);
    json_decref(j);
    return wf;
}

static void set_groups(pl_step *s, int64_t slow_s, int64_t fast_s) {
    s->ngroup_s = 2;
    snprintf(s->group_s[0].group, sizeof s->group_s[0].group, "slow");
    s->group_s[0].seconds = slow_s;
    snprintf(s->group_s[1].group, sizeof s->group_s[1].group, "fast");
    s->group_s[1].seconds = fast_s;
}

typedef struct result {
    int ok, start, end;
    char nodes[64];
} result;

/* Solves step 0 of wf with solver and returns where and when it runs. */
static result solve_one(const pl_workflow *wf, const pl_cluster *c, const pl_busy *busy, int nbusy,
                        pl_solver solver) {
    result r = {0};
    pl_problem p;
    pl_plan plan;
    pl_outcome o;
    tm_err err = {0};
    if (pl_problem_init(&p, wf, c, busy, nbusy, 60, PL_OBJ_END, &err) < 0) {
        printf("    problem: %s\n", err.msg);
        pl_problem_free(&p);
        return r;
    }
    if (pl_plan_init(&plan, &p) == 0 && pl_solve(&p, solver, 10, &plan, &o, &err) == 0 &&
        pl_plan_check(&p, &plan, &err) == 0) {
        r.ok = 1;
        r.start = plan.start[0];
        r.end = plan.end[0];
        size_t len = 0;
        for (int k = plan.off[0]; k < plan.off[1]; k++)
            len += (size_t)snprintf(r.nodes + len, sizeof r.nodes - len, "%s%s", k ? "," : "",
                                    c->nodes[plan.node[k]].name);
        if (solver == PL_SOLVER_ILP)
            CHECK_STR(o.solver, "ilp");
    } else {
        printf("    solve: %s\n", err.msg);
    }
    pl_plan_free(&plan);
    pl_problem_free(&p);
    return r;
}

static const char *one_step = "name: w\nsteps:\n"
                              "  - {name: a, requests: {cpu: 4, memory: 1Gi}, duration: 12m, "
                              "image: x}\n";

/* Free cluster: on fast the step ends at 10, on slow at 20: it goes to fast-1, 0 to 10 (the
 * slow node comes first in index order, and the mean alone would say 12 everywhere). */
static void test_fast_group_preferred(void) {
    pl_cluster *c = two_groups();
    pl_workflow *wf = workflow(one_step);
    if (!c || !wf)
        return;
    set_groups(&wf->steps[0], 1200, 600);
    pl_solver solvers[] = {PL_SOLVER_HEURISTIC, PL_SOLVER_ILP};
    for (int s = 0; s < 2; s++) {
        result r = solve_one(wf, c, NULL, 0, solvers[s]);
        CHECK(r.ok);
        CHECK_STR(r.nodes, "fast-1");
        CHECK_INT(r.start, 0);
        CHECK_INT(r.end, 10);
    }
    pl_workflow_free(wf);
    pl_cluster_free(c);
}

/* fast-1 busy for 15 minutes: there the step would end at 15 + 10 = 25, on slow-1 at 0 + 20 =
 * 20, so slow-1 it is, with its longer walltime (20, not the mean's 12). */
static void test_fast_group_busy_uses_slow_walltime(void) {
    pl_cluster *c = two_groups();
    pl_workflow *wf = workflow(one_step);
    if (!c || !wf)
        return;
    set_groups(&wf->steps[0], 1200, 600);
    pl_busy busy[] = {{1, 4000, 0, 900, 0}};
    pl_solver solvers[] = {PL_SOLVER_HEURISTIC, PL_SOLVER_ILP};
    for (int s = 0; s < 2; s++) {
        result r = solve_one(wf, c, busy, 1, solvers[s]);
        CHECK(r.ok);
        CHECK_STR(r.nodes, "slow-1");
        CHECK_INT(r.start, 0);
        CHECK_INT(r.end, 20);
    }
    /* busy for 5 minutes only: fast ends at 15, before slow's 20 */
    busy[0].until_s = 300;
    for (int s = 0; s < 2; s++) {
        result r = solve_one(wf, c, busy, 1, solvers[s]);
        CHECK(r.ok);
        CHECK_STR(r.nodes, "fast-1");
        CHECK_INT(r.start, 5);
        CHECK_INT(r.end, 15);
    }
    pl_workflow_free(wf);
    pl_cluster_free(c);
}

/* A gang of two 4-core pods needs both nodes: it lasts its slowest group's walltime, 20; the
 * checker refuses the same plan ending at 10. */
static void test_gang_across_groups_lasts_slowest(void) {
    pl_cluster *c = two_groups();
    pl_workflow *wf = workflow("name: w\nsteps:\n"
                               "  - {name: a, pods: 2, requests: {cpu: 4, memory: 1Gi}, "
                               "duration: 12m, image: x}\n");
    if (!c || !wf)
        return;
    set_groups(&wf->steps[0], 1200, 600);
    pl_solver solvers[] = {PL_SOLVER_HEURISTIC, PL_SOLVER_ILP};
    for (int s = 0; s < 2; s++) {
        result r = solve_one(wf, c, NULL, 0, solvers[s]);
        CHECK(r.ok);
        CHECK_INT(r.start, 0);
        CHECK_INT(r.end, 20);
    }
    pl_problem p;
    pl_plan plan;
    tm_err err = {0};
    CHECK(pl_problem_init(&p, wf, c, NULL, 0, 60, PL_OBJ_END, &err) == 0);
    CHECK(pl_plan_init(&plan, &p) == 0);
    plan.start[0] = 0;
    plan.end[0] = 10;
    plan.node[0] = 0;
    plan.node[1] = 1;
    CHECK(pl_plan_check(&p, &plan, &err) < 0 && strstr(err.msg, "its walltime is 20"));
    plan.end[0] = 20;
    CHECKF(pl_plan_check(&p, &plan, &err) == 0, "%s", err.msg);
    pl_plan_free(&plan);
    pl_problem_free(&p);
    pl_workflow_free(wf);
    pl_cluster_free(c);
}

/* A chain a -> b, both 10 on fast and 20 on slow: the best plan runs both on fast, 0-10 and
 * 10-20 (b on slow at 10 would end at 30). The ILP proves 20 optimal. */
static void test_chain_on_fast_group(void) {
    pl_cluster *c = two_groups();
    pl_workflow *wf = workflow("name: w\nsteps:\n"
                               "  - {name: a, requests: {cpu: 4, memory: 1Gi}, duration: 12m, "
                               "image: x}\n"
                               "  - {name: b, after: [a], requests: {cpu: 4, memory: 1Gi}, "
                               "duration: 12m, image: x}\n");
    if (!c || !wf)
        return;
    set_groups(&wf->steps[0], 1200, 600);
    set_groups(&wf->steps[1], 1200, 600);
    pl_problem p;
    tm_err err = {0};
    CHECK(pl_problem_init(&p, wf, c, NULL, 0, 60, PL_OBJ_MAKESPAN, &err) == 0);
    CHECK_INT(p.critical, 20); /* the critical path takes the fastest group's walltimes */
    pl_solver solvers[] = {PL_SOLVER_HEURISTIC, PL_SOLVER_ILP};
    for (int s = 0; s < 2; s++) {
        pl_plan plan;
        pl_outcome o;
        CHECK(pl_plan_init(&plan, &p) == 0);
        CHECKF(pl_solve(&p, solvers[s], 10, &plan, &o, &err) == 0, "%s", err.msg);
        CHECKF(pl_plan_check(&p, &plan, &err) == 0, "%s", err.msg);
        CHECK_INT(plan.start[1], 10);
        CHECK_INT(plan.end[1], 20);
        CHECK_STR(c->nodes[plan.node[1]].name, "fast-1");
        CHECK(o.optimal);
        pl_plan_free(&plan);
    }
    pl_problem_free(&p);
    pl_workflow_free(wf);
    pl_cluster_free(c);
}

/* runtimeByGroup: measured groups get their mean (rounded up to a second); a group with no
 * runs, or none listed, keeps the process mean, and so does a bad entry. */
static void test_predict_per_group(void) {
    pl_workflow *wf = workflow("name: w\nsteps:\n"
                               "  - {name: a, requests: {cpu: 4, memory: 1Gi}, task: wf/P, "
                               "image: x}\n");
    json_t *profiles = yaml("- spec: {workflow: wf, process: P}\n"
                            "  status:\n"
                            "    mean: {realtimeMs: 720000}\n"
                            "    runtimeByGroup:\n"
                            "      - {group: fast, runs: 3, meanSeconds: 599.2}\n"
                            "      - {group: slow, runs: 0, meanSeconds: 100}\n"
                            "      - {group: fast, runs: 1, meanSeconds: 1}\n"
                            "      - {group: other, runs: 2}\n");
    pl_cluster *c = two_groups();
    if (!wf || !profiles || !c)
        return;
    CHECK_INT(pl_predict_durations(wf, profiles), 0);
    CHECK_INT(wf->steps[0].duration_s, 720);
    CHECK_INT(wf->steps[0].ngroup_s, 1);
    CHECK_STR(wf->steps[0].group_s[0].group, "fast");
    CHECK_INT(wf->steps[0].group_s[0].seconds, 600);
    pl_problem p;
    tm_err err = {0};
    CHECK(pl_problem_init(&p, wf, c, NULL, 0, 60, PL_OBJ_END, &err) == 0);
    CHECK_INT(pl_step_slots(&p, 0, 0), 12); /* slow: no runs there, the mean */
    CHECK_INT(pl_step_slots(&p, 0, 1), 10); /* fast: its own mean */
    CHECK_INT(p.w[0], 10);
    pl_problem_free(&p);
    json_decref(profiles);
    pl_workflow_free(wf);
    pl_cluster_free(c);
}

/* The ILP's time limit on the random cases. Four of the 12 (seeds 1001, 1002, 1006, 1011) are
 * not proved optimal in any limit a test can afford, so each ran to its limit: 10 s made this
 * program 40 s of wall time on the loaded 2-core machine. What is checked holds whatever the
 * limit (a time-limited ILP's plan passes the checker, its bound is below its score, and
 * pl_solve keeps the heuristic's plan unless the ILP's is better); with 3 s the ILP still beat
 * the heuristic in the same 4 of 12 cases as with 10 s, and the program took 23 s, not 49. */
enum { RANDOM_ILP_LIMIT_S = 3 };

static uint64_t rng_state;
static unsigned rnd(unsigned n) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((rng_state >> 33) % n);
}

/* Random DAGs of 6 steps (gangs of 1-3 pods of 1-4 cores) on 2 + 2 nodes of the two groups,
 * each step with random runtimes per group: both solvers' plans pass the checker (exact
 * walltimes on the slowest placed group, capacity, dependencies) and the ILP is never worse. */
static void test_random_groups(void) {
    const char *names[] = {"slow", "fast"};
    int count[] = {2, 2};
    double cores[] = {4, 4};
    int64_t mem[] = {(int64_t)16 << 30, (int64_t)16 << 30};
    tm_err err = {0};
    pl_cluster *c = pl_cluster_make(2, names, count, cores, mem, &err);
    if (!c)
        return;
    int ilp_better = 0;
    for (int cs = 0; cs < 12; cs++) {
        rng_state = 1000 + (uint64_t)cs;
        char text[4096];
        size_t len = (size_t)snprintf(text, sizeof text, "name: r\nsteps:\n");
        for (int i = 0; i < 6; i++) {
            len += (size_t)snprintf(text + len, sizeof text - len,
                                    "  - {name: s%d, pods: %u, requests: {cpu: %u, memory: 1Gi}, "
                                    "duration: %um, image: x",
                                    i, 1 + rnd(3), 1 + rnd(4), 1 + rnd(8));
            if (i > 0 && rnd(2))
                len += (size_t)snprintf(text + len, sizeof text - len, ", after: [s%u]", rnd(i));
            len += (size_t)snprintf(text + len, sizeof text - len, "}\n");
        }
        pl_workflow *wf = workflow(text);
        if (!wf)
            continue;
        for (int i = 0; i < wf->nsteps; i++)
            set_groups(&wf->steps[i], 60 * (int64_t)(1 + rnd(10)), 60 * (int64_t)(1 + rnd(10)));
        pl_problem p;
        pl_plan h, x;
        pl_outcome o;
        CHECKF(pl_problem_init(&p, wf, c, NULL, 0, 60, PL_OBJ_MAKESPAN, &err) == 0, "%s", err.msg);
        CHECK(pl_plan_init(&h, &p) == 0 && pl_plan_init(&x, &p) == 0);
        CHECKF(pl_solve(&p, PL_SOLVER_HEURISTIC, 10, &h, &o, &err) == 0, "case %d: %s", cs,
               err.msg);
        CHECKF(pl_plan_check(&p, &h, &err) == 0, "case %d heuristic: %s", cs, err.msg);
        CHECKF(pl_solve(&p, PL_SOLVER_ILP, RANDOM_ILP_LIMIT_S, &x, &o, &err) == 0, "case %d: %s",
               cs, err.msg);
        CHECKF(pl_plan_check(&p, &x, &err) == 0, "case %d ILP: %s", cs, err.msg);
        CHECKF(pl_plan_score(&p, &x) <= pl_plan_score(&p, &h) + 1e-9, "case %d", cs);
        CHECKF(o.bound <= (int)pl_plan_score(&p, &x), "case %d: bound %d", cs, o.bound);
        ilp_better += pl_plan_score(&p, &x) < pl_plan_score(&p, &h) - 1e-9;
        pl_plan_free(&h);
        pl_plan_free(&x);
        pl_problem_free(&p);
        pl_workflow_free(wf);
    }
    printf("    ILP shorter than the heuristic in %d of 12\n", ilp_better);
    pl_cluster_free(c);
}

int main(void) {
    RUN(test_fast_group_preferred);
    RUN(test_fast_group_busy_uses_slow_walltime);
    RUN(test_gang_across_groups_lasts_slowest);
    RUN(test_chain_on_fast_group);
    RUN(test_predict_per_group);
    RUN(test_random_groups);
    return TEST_SUMMARY();
}
