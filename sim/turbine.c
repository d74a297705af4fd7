/* turbine.c: WARP's turbine example in the simulator (turbine.h). */
#include "sim/turbine.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/cluster.h"
#include "planner/problem.h"
#include "planner/solve.h"
#include "planner/workflow.h"
#include "sim/engine.h"
#include "sim/model.h"
#include "sim/rng.h"

#define POD_CPU    30 /* cores per pod: more than half a 36-core node, so one pod per node */
#define POD_MEM    "8Gi"
#define LES_S      900
#define HPDA_S     1800
#define SLOT_S     60
#define MIX_W1     0.55 /* mixture weight of the short component */
#define MIX_SD1    6.0  /* minutes */
#define MIX_SD2    12.0 /* minutes */
#define CLASS_MIN  5    /* walltimes are requested in whole 5-minute steps */
#define MAX_WALL_M 60

/* A background job: arrival (s), nodes, walltime (minutes). */
typedef struct bg_job {
    double at;
    int nodes, minutes;
} bg_job;

/* WARP's generator (turbine.h); walltime: the mixture, redrawn below 1 minute, capped at 60,
 * rounded up to a CLASS_MIN step. The job runs its whole walltime. */
static bg_job *gen_background(uint64_t seed, int *n) {
    uint64_t s = seed * 0x2545f4914f6cdd1dULL + 7;
    size_t cap = 64;
    int k = 0;
    bg_job *j = malloc(cap * sizeof *j);
    double t = 0;
    while (j) {
        t += -log(sim_rng_unit(&s)) / SIM_TURBINE_RATE;
        if (t >= SIM_TURBINE_SUBMIT_S + SIM_TURBINE_TAIL_S)
            break;
        if ((size_t)k == cap) {
            bg_job *g = realloc(j, (cap *= 2) * sizeof *j);
            if (!g) {
                free(j);
                return NULL;
            }
            j = g;
        }
        int nodes = 1 + (int)(sim_rng_unit(&s) * 4);
        double m;
        do {
            m = sim_rng_unit(&s) < MIX_W1 ? sim_rng_normal(&s, 12, MIX_SD1)
                                          : sim_rng_normal(&s, 60, MIX_SD2);
        } while (m < 1);
        if (m > MAX_WALL_M)
            m = MAX_WALL_M;
        int minutes = (int)ceil(m / CLASS_MIN) * CLASS_MIN;
        j[k++] = (bg_job){t, nodes, minutes};
    }
    *n = k;
    return j;
}

static json_t *cluster_json(void) {
    return json_pack("{s:[{s:s,s:i,s:i,s:s,s:{s:f,s:f,s:f}}]}", "node_types", "name", "n", "count",
                     SIM_TURBINE_NODES, "cores", 36, "memory", "192Gi", "speed", "cpu", 1.0, "mem",
                     1.0, "io", 1.0);
}

static json_t *step_json(const char *name, int pods, int seconds, const char *after,
                         const double *win) {
    json_t *p = json_pack("{s:s,s:i,s:i,s:i,s:i}", "name", name, "instances", pods, "gang", pods,
                          "base_runtime", seconds, "walltime", seconds);
    if (p && after)
        json_object_set_new(p, "after", json_pack("[s]", after));
    if (p && win)
        json_object_set_new(p, "reservation",
                            json_pack("{s:f,s:f}", "start", win[0], "duration", win[1]));
    return p;
}

/* The workload: background jobs grouped into one workflow per (walltime, nodes) class (so the
 * scheduler also learns each class's runtime from its history, as the live one reads it from
 * the TaskProfile), and the turbine workflow at the submission. Every job declares its walltime
 * (the sim's `walltime:`, a batch job's requested time): reservation admission and backfill need
 * expected ends, and the walltime is one while a process has no history, so the turbine needs no
 * warm-up run (before `walltime:` existed it ran once at t = 0 for that: without an expected
 * end, LES, still running when HPDA's window opens on the same nodes, could not start before
 * that window). wins: the LES and HPDA windows {start after submission, duration}, or NULL. */
static json_t *workload_json(const bg_job *j, int n, const double (*wins)[2]) {
    json_t *wfs = json_array();
    for (int m = CLASS_MIN; m <= MAX_WALL_M; m += CLASS_MIN)
        for (int nodes = 1; nodes <= 4; nodes++) {
            json_t *arr = json_array();
            for (int i = 0; i < n; i++)
                if (j[i].minutes == m && j[i].nodes == nodes)
                    json_array_append_new(arr, json_real(j[i].at));
            if (json_array_size(arr) == 0) {
                json_decref(arr);
                continue;
            }
            char name[64];
            snprintf(name, sizeof name, "sleep-%dm-%dn", m, nodes);
            json_array_append_new(wfs, json_pack("{s:s,s:o,s:{s:i,s:s},s:[o]}", "name", name,
                                                 "arrivals", arr, "requests", "cpu", POD_CPU,
                                                 "memory", POD_MEM, "processes",
                                                 step_json("sleep", nodes, m * 60, NULL, NULL)));
        }
    json_array_append_new(
        wfs, json_pack("{s:s,s:[f],s:{s:i,s:s},s:[o,o]}", "name", "turbine", "arrivals",
                       (double)SIM_TURBINE_SUBMIT_S, "requests", "cpu", POD_CPU, "memory", POD_MEM,
                       "processes", step_json("LES", 2, LES_S, NULL, wins ? wins[0] : NULL),
                       step_json("HPDA", 5, HPDA_S, "LES", wins ? wins[1] : NULL)));
    return json_pack("{s:o}", "workflows", wfs);
}

static sim_result *simulate(const sim_cluster *c, const bg_job *j, int n, const double (*wins)[2],
                            tm_err *err) {
    json_t *doc = workload_json(j, n, wins);
    sim_workload *w = doc ? sim_workload_from_json(doc, "turbine workload", ".", c, err) : NULL;
    json_decref(doc);
    if (!w) {
        if (!err->msg[0])
            tm_err_set(err, "turbine: out of memory");
        return NULL;
    }
    sim_opts o;
    sim_opts_ideal(&o); /* jobs run exactly their walltime: no noise, no contention */
    o.shuffle = false;
    o.record_tasks = true;
    o.policy = "tarema";
    sim_result *r = sim_run(c, w, &o, err);
    /* the result borrows w: free_result frees both */
    if (!r)
        sim_workload_free(w);
    return r;
}

static void free_result(sim_result *r) {
    if (!r)
        return;
    sim_workload *w = (sim_workload *)r->workload;
    sim_result_free(r);
    sim_workload_free(w);
}

static int turbine_wf(const sim_result *r) {
    for (int i = 0; i < r->workload->nworkflows; i++)
        if (strcmp(r->workload->wfs[i].name, "turbine") == 0)
            return i;
    return -1;
}

/* Ready (latest member), start (first) and end (last) of step proc of the turbine. */
static void step_times(const sim_result *r, int proc, sim_turbine_step *st) {
    int wf = turbine_wf(r);
    st->ready = st->end = -INFINITY;
    st->start = INFINITY;
    for (long i = 0; i < r->tasks; i++) {
        const sim_task_rec *t = &r->task_recs[i];
        if (t->wf != wf || t->proc != proc)
            continue;
        st->ready = fmax(st->ready, t->ready);
        st->start = fmin(st->start, t->start);
        st->end = fmax(st->end, t->end);
    }
    st->win_start = st->win_end = NAN;
    st->phase[0] = 0;
    for (long i = 0; i < r->nresvs; i++)
        if (r->resvs[i].wf == wf && r->resvs[i].proc == proc &&
            r->resvs[i].start >= SIM_TURBINE_SUBMIT_S) {
            st->win_start = r->resvs[i].start;
            st->win_end = r->resvs[i].end;
            snprintf(st->phase, sizeof st->phase, "%s", r->resvs[i].phase);
        }
}

static void run_figures(const sim_result *r, sim_turbine_run *out) {
    step_times(r, 0, &out->les);
    step_times(r, 1, &out->hpda);
    out->makespan = out->hpda.end - out->les.start;
    out->submit_to_end = out->hpda.end - SIM_TURBINE_SUBMIT_S;
}

/* Plans LES and HPDA over the background jobs running at submission (until their walltime
 * ends, as the batch system knows them) with the planner's own solver; wins gets each step's
 * window {start after submission, duration} in seconds. */
static int plan_windows(const sim_result *bg, sim_turbine_result *out, double wins[2][2],
                        tm_err *err) {
    const char *names[] = {"n"};
    int count = SIM_TURBINE_NODES;
    double cores = 36;
    int64_t mem = 192LL << 30;
    pl_cluster *cl = pl_cluster_make(1, names, &count, &cores, &mem, err);
    pl_busy *busy = calloc((size_t)bg->tasks + 1, sizeof *busy);
    pl_workflow wf = {.name = "turbine", .nsteps = 2};
    pl_step steps[2] = {{.name = "LES", .pods = 2, .duration_s = LES_S},
                        {.name = "HPDA", .pods = 5, .duration_s = HPDA_S, .nafter = 1}};
    int after = 0, order[2] = {0, 1};
    steps[1].after = &after;
    for (int i = 0; i < 2; i++) {
        steps[i].cpu_milli = POD_CPU * 1000;
        steps[i].mem_bytes = 8LL << 30;
    }
    wf.steps = steps;
    wf.order = order;
    int nb = 0, rc = -1;
    unsigned busy_nodes = 0;
    if (!cl || !busy) {
        if (cl)
            tm_err_set(err, "turbine: out of memory");
        goto done;
    }
    const double now = SIM_TURBINE_SUBMIT_S;
    int twf = turbine_wf(bg);
    for (long i = 0; i < bg->tasks; i++) {
        const sim_task_rec *t = &bg->task_recs[i];
        if (t->wf == twf || t->start > now || t->end <= now)
            continue;
        busy[nb++] = (pl_busy){.node = t->node,
                               .cpu_milli = POD_CPU * 1000,
                               .mem_bytes = 8LL << 30,
                               .until_s = (int64_t)ceil(t->end - now)};
        busy_nodes |= 1u << t->node;
    }
    out->busy_nodes_at_submit = __builtin_popcount(busy_nodes);
    pl_problem p;
    if (pl_problem_init(&p, &wf, cl, busy, nb, SLOT_S, PL_OBJ_MAKESPAN, err) < 0)
        goto done;
    pl_plan plan;
    pl_outcome oc;
    if (pl_plan_init(&plan, &p) == 0) {
        if (pl_solve(&p, PL_SOLVER_AUTO, 10, &plan, &oc, err) == 0) {
            for (int i = 0; i < 2; i++) {
                wins[i][0] = (double)plan.start[i] * SLOT_S;
                wins[i][1] = (double)(plan.end[i] - plan.start[i]) * SLOT_S;
            }
            out->planned_end_s = (double)plan.end[1] * SLOT_S;
            out->solver = oc.solver;
            out->optimal = oc.optimal;
            rc = 0;
        }
        pl_plan_free(&plan);
    } else {
        tm_err_set(err, "turbine: out of memory");
    }
    pl_problem_free(&p);
done:
    free(busy);
    pl_cluster_free(cl);
    return rc;
}

int sim_turbine_run_seed(uint64_t seed, sim_turbine_result *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    out->seed = seed;
    int n = 0;
    bg_job *jobs = gen_background(seed, &n);
    json_t *cdoc = cluster_json();
    sim_cluster *c = cdoc ? sim_cluster_from_json(cdoc, "turbine cluster", seed, err) : NULL;
    json_decref(cdoc);
    sim_result *plain = NULL, *planned = NULL;
    int rc = -1;
    if (!jobs || !c) {
        if (!err->msg[0])
            tm_err_set(err, "turbine: out of memory");
        goto done;
    }
    out->background_jobs = n;
    /* plain: the steps as the WMS submits them; up to the submission it is also the load the
     * planner sees (the turbine is not there before), so it gives the occupancy to plan on */
    plain = simulate(c, jobs, n, NULL, err);
    double wins[2][2];
    if (!plain || plan_windows(plain, out, wins, err) < 0)
        goto done;
    planned = simulate(c, jobs, n, (const double(*)[2])wins, err);
    if (!planned)
        goto done;
    run_figures(plain, &out->plain);
    run_figures(planned, &out->planned);
    rc = 0;
done:
    free_result(plain);
    free_result(planned);
    sim_cluster_free(c);
    free(jobs);
    return rc;
}
