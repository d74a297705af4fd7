/* bound.c: the makespan no policy can beat (bound.h): critical path, request area and cpu work,
 * every task at its fastest node type. Pure arithmetic over the model; the engine supplies each
 * task's noise draw. */
#include <math.h>
#include <stdlib.h>

#include "sim/bound.h"

/* Cores as the scheduler counts them: whole millicores (sim_snapshot_new and sim_pod_new round
 * allocatable and requests to millicores), so the bound sees the capacity the policies see. */
static double millicores(double cores) {
    return (double)llround(cores * 1000) / 1000.0;
}

void sim_bound_task(const sim_cluster *c, const sim_workflow *wf, const sim_process *p, int inst,
                    bool calibrated, bool contention, double *fastest_s, double *cpu_work) {
    double best = NAN, work = NAN;
    /* the compute share the model slows by: the calibrated model's fitted one, else declared */
    double w = fmin(1.0, calibrated ? p->fit_sens[LAB_CPU] : p->sens[LAB_CPU]);
    for (int t = 0; t < c->ntypes; t++) {
        const sim_node_type *nt = &c->types[t];
        if (nt->count <= 0 || llround(nt->cores * 1000) < llround(p->req_cpu * 1000) ||
            nt->memory < p->req_mem)
            continue;
        double rt =
            calibrated ? sim_runtime_fitted(c, wf, p, inst, t) : sim_runtime(c, wf, p, inst, t);
        if (!(rt >= 0))
            continue;
        if (!(rt >= best))
            best = rt;
        /* the cores it uses there, as the engine counts its demand (start_task) */
        double pct = sim_usage(c, wf, p, inst, t).cpu_pct;
        double u = isnan(pct) ? p->req_cpu : pct / 100.0;
        double x = contention && w > 0 && u > 0 ? u * w * rt : 0;
        if (!(x >= work))
            work = x;
    }
    *fastest_s = best;
    *cpu_work = work;
}

void sim_bound_capacity(const sim_cluster *c, double *cores, double *memory) {
    *cores = *memory = 0;
    for (int n = 0; n < c->nnodes; n++) {
        *cores += millicores(c->types[c->nodes[n].type].cores);
        *memory += (double)c->types[c->nodes[n].type].memory;
    }
}

sim_bound_run sim_bound_run_of(const sim_workflow *wf, const long *off, double cores, double memory,
                               const double *fastest, const double *cpu_work, double *finish) {
    /* earliest finish of every task with unlimited nodes: the loader orders processes
     * topologically (it refuses cycles), so every predecessor's finish is known first */
    double path = 0, core_s = 0, mem_s = 0, work = 0;
    for (int p = 0; p < wf->nprocs; p++) {
        const sim_process *pr = &wf->procs[p];
        double after_all = 0; /* every instance of an `after` predecessor must have ended */
        for (int k = 0; k < pr->nall; k++) {
            int q = pr->after_all[k];
            for (int i = 0; i < wf->procs[q].instances; i++)
                after_all = fmax(after_all, finish[off[q] + i]);
        }
        for (int i = 0; i < pr->instances; i++) {
            double ready = after_all;
            for (int k = 0; k < pr->neach; k++)
                ready = fmax(ready, finish[off[pr->after_each[k]] + i]);
            double t = fastest[off[p] + i];
            if (!(t >= 0))
                t = 0; /* unknown: count nothing rather than guess, so the bound stays sound */
            finish[off[p] + i] = ready + t;
            path = fmax(path, ready + t);
            core_s += millicores(pr->req_cpu) * t;
            mem_s += (double)pr->req_mem * t;
            if (cpu_work && cpu_work[off[p] + i] > 0)
                work += cpu_work[off[p] + i];
        }
    }
    double bound = path;
    if (cores > 0)
        bound = fmax(bound, fmax(core_s, work) / cores);
    if (memory > 0)
        bound = fmax(bound, mem_s / memory);
    return (sim_bound_run){bound, core_s, mem_s, work};
}

/* The sum of the j smallest of v[0..n-1] for every j (sums[j], sums[0] = 0); v is sorted. */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void smallest_sums(double *v, int n, double *sums) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    sums[0] = 0;
    for (int j = 0; j < n; j++)
        sums[j + 1] = sums[j] + v[j];
}

double sim_bound_joint_geomean(const sim_bound_wf *w, int n, double cores, double memory) {
    if (n <= 0 || n > SIM_BOUND_JOINT_MAX)
        return NAN;
    double core[SIM_BOUND_JOINT_MAX], mem[SIM_BOUND_JOINT_MAX], work[SIM_BOUND_JOINT_MAX];
    double sc[SIM_BOUND_JOINT_MAX + 1], sm[SIM_BOUND_JOINT_MAX + 1], sw[SIM_BOUND_JOINT_MAX + 1];
    for (int i = 0; i < n; i++) {
        if (!(w[i].mean_bound > 0) || w[i].runs < 1)
            return NAN;
        core[i] = w[i].core_s;
        mem[i] = w[i].mem_s;
        work[i] = w[i].cpu_work;
    }
    smallest_sums(core, n, sc);
    smallest_sums(mem, n, sm);
    smallest_sums(work, n, sw);
    /* done[j]: the least time after the earliest start by which j workflows can have finished */
    double done[SIM_BOUND_JOINT_MAX + 1];
    for (int j = 0; j <= n; j++) {
        done[j] = 0;
        if (cores > 0)
            done[j] = fmax(done[j], fmax(sc[j], sw[j]) / cores);
        if (memory > 0)
            done[j] = fmax(done[j], sm[j] / memory);
    }
    /* best[mask]: the least sum of log mean makespans of the workflows in mask when they are the
     * first popcount(mask) to finish, in the best order among themselves */
    size_t nm = (size_t)1 << n;
    double *best = malloc(nm * sizeof *best);
    if (!best)
        return NAN;
    best[0] = 0;
    for (size_t mask = 1; mask < nm; mask++) {
        int rank =
            __builtin_popcountll((unsigned long long)mask); /* the last of them finishes rank-th */
        best[mask] = INFINITY;
        for (int i = 0; i < n; i++) {
            if (!(mask & ((size_t)1 << i)))
                continue;
            double m = fmax(w[i].mean_bound, (done[rank] - w[i].offset) / w[i].runs);
            double v = best[mask & ~((size_t)1 << i)] + log(m);
            if (v < best[mask])
                best[mask] = v;
        }
    }
    double g = exp(best[nm - 1] / n);
    free(best);
    return g;
}
