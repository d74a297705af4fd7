/* planner_bench.c: how fast and how good the planner's two solvers are (issue 15's evidence).
 *
 *   planner_bench [time_limit_s]      default 10 (the ILP's limit, as WARP's)
 *
 * 1. WARP's turbine case (14 nodes; free, and with ten nodes busy for 35 minutes): the ILP's
 *    solve time to a proven optimum (target < 1 s).
 * 2. Random DAGs of 10, 50 and 200 steps on 14 and 500 nodes of 3 types (n1 8 cores 32 GiB,
 *    n2 16/64, c2 32/128), 30 % of the nodes busy for up to an hour: heuristic and ILP (auto
 *    mode: the ILP only within its size cut-off) solve time, makespan, and the gap to the best
 *    lower bound (the critical path, or the ILP's bound).
 * 3. A 1,000-step DAG on 5,000 nodes with the heuristic (target < 1 s).
 * 4. 20 small resource-bound instances where the solvers differ: how often and by how much the
 *    ILP beats the heuristic, and its solve times.
 * Prints wall and CPU time (the machine is shared); asserts nothing about time; exits non-zero
 * only when a plan fails its check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "planner/heuristic.h"
#include "planner/ilp.h"
#include "planner/problem.h"
#include "planner/solve.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng_state = 42;
static unsigned rnd(unsigned n) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((rng_state >> 33) % n);
}

/* Steps of 1-8 pods (1-16 cores, 1-32 GiB each), 5-60 minutes, each after 0-2 of the 20
 * steps before it: wide DAGs with some depth, like nf-core pipelines' process graphs. */
static pl_workflow *random_dag(int n) {
    pl_workflow *wf = calloc(1, sizeof *wf);
    wf->nsteps = n;
    wf->steps = calloc((size_t)n, sizeof *wf->steps);
    char ***names = calloc((size_t)n, sizeof *names);
    snprintf(wf->name, sizeof wf->name, "random-%d", n);
    for (int i = 0; i < n; i++) {
        pl_step *s = &wf->steps[i];
        snprintf(s->name, sizeof s->name, "s%d", i);
        s->pods = 1 + (int)rnd(8);
        s->cpu_milli = 1000 * (1 + rnd(16));
        s->mem_bytes = (int64_t)(1 + rnd(32)) << 30;
        s->duration_s = 60 * (5 + (int)rnd(56));
        names[i] = calloc(2, sizeof *names[i]);
        int na = i ? (int)rnd(3) : 0;
        for (int k = 0; k < na; k++) {
            int lo = i > 20 ? i - 20 : 0, a = lo + (int)rnd((unsigned)(i - lo));
            if (s->nafter == 1 && strcmp(names[i][0], wf->steps[a].name) == 0)
                continue;
            names[i][s->nafter++] = strdup(wf->steps[a].name);
        }
    }
    tm_err err = {0};
    if (pl_workflow_finish(wf, names, wf->name, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    return wf;
}

static pl_cluster *three_types(int nodes) {
    const char *names[] = {"n1", "n2", "c2"};
    int count[] = {nodes / 3, nodes / 3, nodes - 2 * (nodes / 3)};
    double cores[] = {8, 16, 32};
    int64_t mem[] = {32LL << 30, 64LL << 30, 128LL << 30};
    tm_err err = {0};
    return pl_cluster_make(3, names, count, cores, mem, &err);
}

static pl_busy *busy_nodes(const pl_cluster *c, int *n) {
    pl_busy *b = calloc((size_t)c->nnodes + 1, sizeof *b);
    *n = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (rnd(10) < 3)
            b[(*n)++] = (pl_busy){i, c->nodes[i].cpu_milli / 2, c->nodes[i].mem_bytes / 2,
                                  60 * (1 + (int)rnd(60)), 0};
    return b;
}

/* Plans with one solver; prints a row; returns -1 when the plan fails its check. */
static int run(const char *label, const pl_problem *p, pl_solver solver, double limit) {
    pl_plan plan;
    pl_outcome o;
    tm_err err = {0};
    pl_plan_init(&plan, p);
    double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    int rc = pl_solve(p, solver, limit, &plan, &o, &err);
    double wall = clock_s(CLOCK_MONOTONIC) - w0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (rc == 0 && pl_plan_check(p, &plan, &err) < 0)
        rc = -1;
    if (rc < 0) {
        printf("%-34s %-9s FAILED: %s\n", label, solver == PL_SOLVER_HEURISTIC ? "heur" : "auto",
               err.msg);
        pl_plan_free(&plan);
        return -1;
    }
    int span = pl_plan_last(&plan) - pl_plan_first(&plan);
    int obj = p->objective == PL_OBJ_MAKESPAN ? span : pl_plan_last(&plan);
    char ilp[96] = "-";
    if (o.ilp_tried)
        snprintf(ilp, sizeof ilp, "%s %ld cols",
                 o.ilp.status == PL_ILP_OPTIMAL     ? "optimal"
                 : o.ilp.status == PL_ILP_FEASIBLE  ? "feasible"
                 : o.ilp.status == PL_ILP_TOO_LARGE ? "too-large"
                                                    : "no-plan",
                 o.ilp.cols);
    printf("%-34s %-9s %8.3f %8.3f %9d %6d %6.1f%%  %s\n", label, o.solver, wall, cpu, span,
           o.bound, obj ? 100.0 * (obj - o.bound) / obj : 0.0, ilp);
    pl_plan_free(&plan);
    return 0;
}

static int turbine(double limit) {
    const char *names[] = {"c"};
    int count[] = {14};
    double cores[] = {36};
    int64_t mem[] = {128LL << 30};
    tm_err err = {0};
    pl_cluster *c = pl_cluster_make(1, names, count, cores, mem, &err);
    pl_workflow *wf = calloc(1, sizeof *wf);
    wf->nsteps = 2;
    wf->steps = calloc(2, sizeof *wf->steps);
    snprintf(wf->name, sizeof wf->name, "turbine");
    const char *sn[] = {"LES", "HPDA"};
    int pods[] = {2, 5}, dur[] = {900, 1800};
    for (int i = 0; i < 2; i++) {
        snprintf(wf->steps[i].name, PL_NAME_MAX, "%s", sn[i]);
        wf->steps[i].pods = pods[i];
        wf->steps[i].cpu_milli = 36000;
        wf->steps[i].mem_bytes = 64LL << 30;
        wf->steps[i].duration_s = dur[i];
    }
    char ***an = calloc(2, sizeof *an);
    an[1] = calloc(1, sizeof *an[1]);
    an[1][0] = strdup("LES");
    wf->steps[1].nafter = 1;
    pl_workflow_finish(wf, an, "turbine", &err);
    pl_busy b[10];
    for (int i = 0; i < 10; i++)
        b[i] = (pl_busy){i, 36000, 0, 35 * 60, 0};
    int rc = 0;
    for (int busy = 0; busy < 2; busy++) {
        pl_problem p;
        if (pl_problem_init(&p, wf, c, b, busy ? 10 : 0, 60, PL_OBJ_MAKESPAN, &err) < 0)
            return -1;
        rc |= run(busy ? "turbine, 10 of 14 busy 35 min" : "turbine, 14 free nodes", &p,
                  PL_SOLVER_ILP, limit);
        pl_problem_free(&p);
    }
    pl_workflow_free(wf);
    pl_cluster_free(c);
    return rc;
}

/* Small resource-bound instances, where the two solvers differ: 8 steps of 1-4 pods (2-16
 * cores, 1-32 GiB), 1-10 minutes, at most one predecessor, on 6 nodes of the 3 types (2 each).
 * Prints how often the ILP beats the heuristic, by how much, and its solve times. */
static int tight(double limit) {
    int cases = 20, better = 0, optimal = 0, rc = 0;
    double sum_gain = 0, max_gain = 0, ilp_wall = 0, ilp_cpu = 0, max_wall = 0;
    for (int k = 0; k < cases; k++) {
        pl_cluster *c = three_types(6);
        pl_workflow *wf = calloc(1, sizeof *wf);
        wf->nsteps = 8;
        wf->steps = calloc(8, sizeof *wf->steps);
        char ***names = calloc(8, sizeof *names);
        for (int i = 0; i < 8; i++) {
            pl_step *s = &wf->steps[i];
            snprintf(s->name, sizeof s->name, "t%d", i);
            s->pods = 1 + (int)rnd(4);
            s->cpu_milli = 2000 * (1 + rnd(8));
            s->mem_bytes = (int64_t)(1 + rnd(32)) << 30;
            s->duration_s = 60 * (1 + (int)rnd(10));
            names[i] = calloc(1, sizeof *names[i]);
            if (i && rnd(2)) {
                names[i][0] = strdup(wf->steps[rnd((unsigned)i)].name);
                s->nafter = 1;
            }
        }
        tm_err err = {0};
        pl_problem p;
        if (pl_workflow_finish(wf, names, "tight", &err) < 0 ||
            pl_problem_init(&p, wf, c, NULL, 0, 60, PL_OBJ_MAKESPAN, &err) < 0) {
            pl_workflow_free(wf);
            pl_cluster_free(c);
            continue; /* a gang larger than these 6 nodes: drawn again by the next case */
        }
        pl_plan h, i2;
        pl_outcome oh, oi;
        pl_plan_init(&h, &p);
        pl_plan_init(&i2, &p);
        int r1 = pl_solve(&p, PL_SOLVER_HEURISTIC, limit, &h, &oh, &err);
        double w1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        int r2 = pl_solve(&p, PL_SOLVER_ILP, limit, &i2, &oi, &err);
        double w2 = clock_s(CLOCK_MONOTONIC), c2 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (r1 < 0 || r2 < 0 || pl_plan_check(&p, &h, &err) < 0 ||
            pl_plan_check(&p, &i2, &err) < 0) {
            printf("tight case %d FAILED: %s\n", k, err.msg);
            rc = -1;
        } else {
            int mh = pl_plan_last(&h) - pl_plan_first(&h);
            int mi = pl_plan_last(&i2) - pl_plan_first(&i2);
            double gain = mh ? 100.0 * (mh - mi) / mh : 0;
            better += mi < mh;
            optimal += oi.optimal;
            sum_gain += gain;
            if (gain > max_gain)
                max_gain = gain;
            ilp_wall += w2 - w1;
            ilp_cpu += c2 - c1;
            if (w2 - w1 > max_wall)
                max_wall = w2 - w1;
        }
        pl_plan_free(&h);
        pl_plan_free(&i2);
        pl_problem_free(&p);
        pl_workflow_free(wf);
        pl_cluster_free(c);
    }
    printf("\nresource-bound: %d cases of 8 steps on 6 nodes (3 types), heuristic vs ILP:\n"
           "  ILP optimal in %d, shorter than the heuristic in %d; makespan %.1f %% shorter on "
           "average, %.1f %% at most;\n  ILP (after the heuristic) %.3f s wall, %.3f s CPU on "
           "average, %.3f s wall at most\n",
           cases, optimal, better, sum_gain / cases, max_gain, ilp_wall / cases, ilp_cpu / cases,
           max_wall);
    return rc;
}

int main(int argc, char **argv) {
    double limit = argc > 1 ? atof(argv[1]) : 10;
    if (!(limit > 0))
        limit = 10;
    printf("%-34s %-9s %8s %8s %9s %6s %7s  %s\n", "case", "solver", "wall_s", "cpu_s", "makespan",
           "bound", "gap", "ilp");
    printf("(makespan and bound in 60 s slots; ILP time limit %.0f s)\n", limit);
    int rc = turbine(limit) ? 1 : 0;
    int sizes[] = {10, 50, 200}, nodes[] = {14, 500};
    for (int ni = 0; ni < 2; ni++)
        for (int si = 0; si < 3; si++) {
            pl_cluster *c = three_types(nodes[ni]);
            pl_workflow *wf = random_dag(sizes[si]);
            int nb;
            pl_busy *b = busy_nodes(c, &nb);
            pl_problem p;
            tm_err err = {0};
            if (pl_problem_init(&p, wf, c, b, nb, 60, PL_OBJ_MAKESPAN, &err) < 0) {
                printf("random: %s\n", err.msg);
                rc = 1;
            } else {
                char label[64];
                snprintf(label, sizeof label, "random %d steps, %d nodes", sizes[si], nodes[ni]);
                rc |= run(label, &p, PL_SOLVER_HEURISTIC, limit) ? 1 : 0;
                rc |= run(label, &p, PL_SOLVER_AUTO, limit) ? 1 : 0;
                pl_problem_free(&p);
            }
            pl_workflow_free(wf);
            pl_cluster_free(c);
            free(b);
        }
    {
        pl_cluster *c = three_types(5000);
        pl_workflow *wf = random_dag(1000);
        int nb;
        pl_busy *b = busy_nodes(c, &nb);
        pl_problem p;
        tm_err err = {0};
        if (pl_problem_init(&p, wf, c, b, nb, 60, PL_OBJ_MAKESPAN, &err) < 0) {
            printf("large: %s\n", err.msg);
            rc = 1;
        } else {
            rc |= run("random 1000 steps, 5000 nodes", &p, PL_SOLVER_HEURISTIC, limit) ? 1 : 0;
            pl_problem_free(&p);
        }
        pl_workflow_free(wf);
        pl_cluster_free(c);
        free(b);
    }
    rc |= tight(limit) ? 1 : 0;
    return rc;
}
