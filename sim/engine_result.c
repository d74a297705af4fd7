/* engine_result.c: the result of a simulated run (sim_result, engine.h): makespans and task
 * records of the measured runs, node groups, gangs, reservations and holds, the makespan bounds
 * (sim/bound.h); and sim_result_free. */
#include "sim/engine.h"
#include "sim/engine_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/bound.h"

/* ---- results ---- */

/* Run r's number among its workflow's measured runs (0 = the first); negative for a history
 * run, which no result counts. */
static int measured_run(const sim *s, int r) {
    return s->runs[r].idx - s->hruns;
}

/* The gangs' waits and the reservations' windows, holds and use. */
static int collect_gangs_resvs(const sim *s, sim_result *r) {
    long nh = 0;
    for (int i = 0; i < s->nresvs; i++)
        nh += s->resvs[i].nholds;
    r->gangs = calloc((size_t)s->ngangs + 1, sizeof *r->gangs);
    r->resvs = calloc((size_t)s->nresvs + 1, sizeof *r->resvs);
    r->holds = calloc((size_t)nh + 1, sizeof *r->holds);
    if (!r->gangs || !r->resvs || !r->holds)
        return -1;
    double tb = s->t_bench;
    for (int i = 0; i < s->ngangs; i++) {
        const gang_st *g = &s->gangs[i];
        const task *t = &s->tasks[g->first];
        int ri = measured_run(s, t->run);
        if (ri >= 0)
            r->gangs[r->ngangs++] =
                (sim_gang_rec){t->wf,   ri,          t->proc,          g->index,
                               g->size, g->attempts, g->complete - tb, g->start - tb};
    }
    for (int i = 0; i < s->nresvs; i++) {
        const resv_st *rs = &s->resvs[i];
        int ri = measured_run(s, rs->run);
        if (ri < 0)
            continue;
        sim_resv_rec *x = &r->resvs[r->nresvs++];
        x->wf = rs->wf;
        x->run = ri;
        x->proc = rs->proc;
        x->count = s->w->wfs[rs->wf].procs[rs->proc].instances;
        snprintf(x->phase, sizeof x->phase, "%s", resv_phase_name(rs->phase));
        snprintf(x->reason, sizeof x->reason, "%s", rs->reason);
        x->start = rs->start - tb;
        x->end = rs->end - tb;
        x->released = rs->released - tb;
        x->used_core_s = rs->used_core_s;
        x->overrun_evictions = rs->overrun_evictions;
        r->overrun_evictions += rs->overrun_evictions;
        x->first_hold = r->nholds;
        x->nholds = rs->nholds;
        double span = isnan(rs->released) ? 0 : fmax(0, rs->released - rs->start);
        for (int h = 0; h < rs->nholds; h++) {
            double cores = (double)rs->hres[h].v[SCHED_RES_CPU] / 1000.0;
            r->holds[r->nholds++] = (sim_resv_hold){rs->hnode[h], rs->hpods[h], cores};
            x->held_core_s += cores * span;
        }
    }
    return 0;
}

/* The makespan no policy could beat for run ru on a cluster of cores and memory, and the work
 * behind it (bound.h): each task at its fastest node type's runtime times its own noise draw.
 * 0, or -1 when out of memory. */
static int run_bound(const sim *s, const run *ru, double cores, double memory, sim_bound_run *out) {
    const sim_workflow *wf = &s->w->wfs[ru->wf];
    size_t n = (size_t)wf->tasks_per_run + 1;
    double *fast = malloc(n * sizeof *fast), *work = malloc(n * sizeof *work),
           *fin = malloc(n * sizeof *fin);
    int rc = -1;
    if (fast && work && fin) {
        for (long k = 0; k < wf->tasks_per_run; k++) {
            const task *t = &s->tasks[ru->base + k];
            double noise = eng_noise_of(s, ru->base + k);
            sim_bound_task(s->c, wf, &wf->procs[t->proc], t->inst, s->o->calibrated,
                           s->o->contention, &fast[k], &work[k]);
            fast[k] *= noise;
            work[k] *= noise;
        }
        *out = sim_bound_run_of(wf, s->wi[ru->wf].proc_off, cores, memory, fast, work, fin);
        rc = 0;
    }
    free(fast);
    free(work);
    free(fin);
    return rc;
}

/* The least geometric mean of the workflows' mean makespans any policy could reach
 * (sim_bound_joint_geomean: the runs' own bounds and the order in which workflows sharing the
 * cluster can finish); work[i] holds workflow i's measured runs' summed work. Where runs do not
 * chain (explicit arrivals) or there are too many workflows, the geometric mean of the runs'
 * own bounds. */
static double bound_geomean(const sim *s, const sim_result *r, const sim_bound_run *work,
                            double cores, double memory) {
    int n = s->w->nworkflows;
    double logsum = 0, first = INFINITY;
    bool chained = n <= SIM_BOUND_JOINT_MAX;
    for (int i = 0; i < n; i++) {
        if (!(r->wf[i].makespan_bound_mean > 0))
            return NAN;
        logsum += log(r->wf[i].makespan_bound_mean);
        chained = chained && !s->w->wfs[i].narrivals && r->wf[i].runs > 0;
        first = fmin(first, s->w->wfs[i].start);
    }
    double own = n ? exp(logsum / n) : NAN;
    if (!chained)
        return own;
    sim_bound_wf wb[SIM_BOUND_JOINT_MAX];
    for (int i = 0; i < n; i++) {
        const sim_workflow *wf = &s->w->wfs[i];
        wb[i] = (sim_bound_wf){r->wf[i].makespan_bound_mean,
                               work[i].core_s,
                               work[i].mem_s,
                               work[i].cpu_work,
                               wf->start - first + (r->wf[i].runs - 1) * wf->gap,
                               r->wf[i].runs};
    }
    double g = sim_bound_joint_geomean(wb, n, cores, memory);
    return isnan(g) ? own : fmax(g, own);
}

sim_result *eng_collect(sim *s) {
    sim_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->policy, sizeof r->policy, "%s", s->o->policy);
    r->cluster = s->c;
    r->workload = s->w;
    r->sched_attempts = s->attempts;
    r->preemptions = s->preemptions;
    r->evictions = s->evictions;
    r->gang_preemptions = s->gang_preemptions;
    r->gang_evictions = s->gang_evictions;
    r->history_runs = s->hruns;
    r->ngroups = s->c->ngroups;
    r->wf = calloc((size_t)s->w->nworkflows, sizeof *r->wf);
    r->runs = calloc((size_t)s->nruns + 1, sizeof *r->runs);
    r->groups = calloc((size_t)s->c->ngroups + 1, sizeof *r->groups);
    if (s->o->record_tasks)
        r->task_recs = calloc((size_t)s->ntasks + 1, sizeof *r->task_recs);
    if (!r->wf || !r->runs || !r->groups || (s->o->record_tasks && !r->task_recs)) {
        sim_result_free(r);
        return NULL;
    }
    /* Only the measured runs count; times are from when they began (t_bench). The history
     * runs show only as their mean makespan. */
    double t0 = INFINITY, tb = s->t_bench;
    sim_bound_run *work = calloc((size_t)s->w->nworkflows + 1, sizeof *work);
    double cores, memory; /* what the bounds divide by, the same for every run */
    sim_bound_capacity(s->c, &cores, &memory);
    if (!work) {
        sim_result_free(r);
        return NULL;
    }
    for (int i = 0; i < s->nruns; i++) {
        const run *ru = &s->runs[i];
        sim_wf_stats *ws = &r->wf[ru->wf];
        double m = ru->end - ru->arrival;
        int idx = measured_run(s, i);
        if (idx < 0) {
            ws->makespan_history += m;
            continue;
        }
        sim_bound_run b;
        if (run_bound(s, ru, cores, memory, &b) < 0) {
            free(work);
            sim_result_free(r);
            return NULL;
        }
        r->runs[r->nruns++] = (sim_run_rec){ru->wf, idx, ru->arrival - tb, ru->end - tb, b.bound_s};
        ws->makespan_bound_mean += b.bound_s;
        work[ru->wf].core_s += b.core_s;
        work[ru->wf].mem_s += b.mem_s;
        work[ru->wf].cpu_work += b.cpu_work;
        if (ru->arrival - tb < t0)
            t0 = ru->arrival - tb;
        ws->runs++;
        ws->makespan_mean += m;
        if (idx == 0)
            ws->makespan_first = m;
        else
            ws->makespan_rest_mean += m;
    }
    for (int i = 0; i < s->w->nworkflows; i++) {
        sim_wf_stats *ws = &r->wf[i];
        ws->makespan_rest_mean = ws->runs > 1 ? ws->makespan_rest_mean / (ws->runs - 1) : NAN;
        ws->makespan_mean /= ws->runs ? ws->runs : 1;
        ws->makespan_bound_mean = ws->runs ? ws->makespan_bound_mean / ws->runs : NAN;
        ws->makespan_history = s->hruns ? ws->makespan_history / s->hruns : NAN;
    }
    r->bound_geomean = bound_geomean(s, r, work, cores, memory);
    free(work);
    for (int i = 0; i < s->c->nnodes; i++) {
        sim_group_stats *g = &r->groups[s->c->nodes[i].group];
        g->nodes++;
        g->cores += s->c->types[s->c->nodes[i].type].cores;
    }
    double sum_rt = 0, sum_pend = 0;
    for (long i = 0; i < s->ntasks; i++) {
        const task *t = &s->tasks[i];
        int mr = measured_run(s, t->run);
        if (mr < 0)
            continue;
        double rt = t->end - t->start;
        sum_rt += rt;
        sum_pend += t->start - t->ready;
        if (t->end - tb > r->horizon)
            r->horizon = t->end - tb;
        sim_wf_stats *ws = &r->wf[t->wf];
        ws->tasks++;
        ws->task_runtime_mean += rt;
        ws->pending_mean += t->start - t->ready;
        sim_group_stats *g = &r->groups[s->c->nodes[t->node].group];
        g->tasks++;
        g->busy_core_s += rt * s->w->wfs[t->wf].procs[t->proc].req_cpu;
        if (r->task_recs)
            r->task_recs[r->tasks] = (sim_task_rec){
                t->wf, mr, t->proc, t->inst, t->node, t->ready - tb, t->start - tb, t->end - tb};
        r->tasks++;
    }
    for (int i = 0; i < s->w->nworkflows; i++) {
        sim_wf_stats *ws = &r->wf[i];
        if (ws->tasks) {
            ws->task_runtime_mean /= (double)ws->tasks;
            ws->pending_mean /= (double)ws->tasks;
        }
    }
    double span = r->horizon - (isfinite(t0) ? t0 : 0);
    for (int g = 0; g < r->ngroups; g++)
        r->groups[g].utilisation = span > 0 && r->groups[g].cores > 0
                                       ? r->groups[g].busy_core_s / (r->groups[g].cores * span)
                                       : 0;
    r->task_runtime_mean = r->tasks ? sum_rt / (double)r->tasks : 0;
    r->pending_mean = r->tasks ? sum_pend / (double)r->tasks : 0;
    if (collect_gangs_resvs(s, r) < 0) {
        sim_result_free(r);
        return NULL;
    }
    return r;
}

void sim_result_free(sim_result *r) {
    if (!r)
        return;
    free(r->wf);
    free(r->runs);
    free(r->groups);
    free(r->task_recs);
    free(r->gangs);
    free(r->resvs);
    free(r->holds);
    free(r);
}
