/* model.c: the simulator's cluster (the cluster description, lib/clusterdesc.h, made into nodes
 * whose bench figures are drawn and grouped as the profiler groups real ones) and the runtime
 * model: how long a task instance runs on a node type, its usage, the calibrated model's
 * speed-up fit, run-to-run noise and contention (see model.h). The workload is read by
 * workload.c, the measurements by measure.c. */
#include "sim/model.h"
#include "sim/model_internal.h"
#include "sim/rng.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/yamljson.h"

/* ---- cluster: the description (lib/clusterdesc.h) and its nodes ---- */

void sim_cluster_free(sim_cluster *c) {
    if (!c)
        return;
    free(c->types);
    free(c->nodes);
    free(c);
}

int sim_cluster_find_type(const sim_cluster *c, const char *name) {
    return tm_node_type_find(c->types, c->ntypes, name);
}

sim_cluster *sim_cluster_from_json(const void *json_root, const char *source, uint64_t seed,
                                   tm_err *err) {
    tm_cluster_desc d;
    if (tm_cluster_desc_from_json(json_root, source, &d, err) < 0)
        return NULL;
    sim_cluster *c = calloc(1, sizeof *c);
    if (!c) {
        tm_cluster_desc_clear(&d);
        tm_err_set(err, "%s: out of memory", source);
        return NULL;
    }
    c->ntypes = d.ntypes;
    c->types = d.types; /* c owns them now */
    c->ref_type = d.ref_type;
    long total = d.nnodes;
    c->nnodes = (int)total;
    if (!(c->nodes = calloc((size_t)total, sizeof *c->nodes))) {
        tm_err_set(err, "%s: out of memory for %ld nodes", source, total);
        goto fail;
    }
    uint64_t rs = seed ^ 0x5157a7e5ULL;
    int n = 0;
    for (int i = 0; i < c->ntypes; i++) {
        const sim_node_type *t = &c->types[i];
        for (int j = 0; j < t->count; j++, n++) {
            sim_node *nd = &c->nodes[n];
            snprintf(nd->name, sizeof nd->name, "%.100s-%d", t->name, j); /* names <= 100: no cut */
            nd->type = i;
            for (int k = 0; k < SIM_NBENCH; k++) {
                double u = (double)(sim_rng_next(&rs) >> 11) / 9007199254740992.0;
                nd->bench[k] = t->bench_lo[k] + u * (t->bench_hi[k] - t->bench_lo[k]);
            }
        }
    }
    if (sim_cluster_group(c, seed, err) < 0) {
        tm_err_wrap(err, "%s: grouping nodes", source);
        goto fail;
    }
    return c;
fail:
    sim_cluster_free(c);
    return NULL;
}

sim_cluster *sim_cluster_load(const char *path, uint64_t seed, tm_err *err) {
    json_t *root = tm_yaml_load_file(path, err);
    if (!root)
        return NULL;
    sim_cluster *c = sim_cluster_from_json(root, path, seed, err);
    json_decref(root);
    return c;
}

int sim_grow(void *arrp, size_t len, size_t *cap, size_t elem, size_t min) {
    if (len < *cap)
        return 0;
    void *a, *na;
    size_t nc = *cap ? *cap * 2 : min;
    memcpy(&a, arrp, sizeof a); /* arrp is a T **: copy the pointer out and back */
    if (!(na = realloc(a, nc * elem)))
        return -1;
    memcpy(arrp, &na, sizeof na);
    *cap = nc;
    return 0;
}

/* ---- runtime model ---- */

int sim_machine_of_type(const sim_cluster *c, const sim_workflow *wf, int t) {
    for (int m = 0; m < wf->nmachines; m++)
        if (strcmp(wf->machines[m], c->types[t].measured_as) == 0)
            return m;
    return -1;
}

static double scale(const double *sens, const double *from, const double *to) {
    double s0 = 1.0, f = 0;
    for (int k = 0; k < LAB_NFEATURES; k++) {
        s0 -= sens[k];
        f += sens[k] * from[k] / to[k];
    }
    return fmax(0.0, s0) + f;
}

static double runtime_with(const sim_cluster *c, const sim_workflow *wf, const sim_process *p,
                           int inst, int t, const double *sens);

double sim_runtime(const sim_cluster *c, const sim_workflow *wf, const sim_process *p, int inst,
                   int t) {
    return runtime_with(c, wf, p, inst, t, p->sens);
}

double sim_runtime_fitted(const sim_cluster *c, const sim_workflow *wf, const sim_process *p,
                          int inst, int t) {
    return runtime_with(c, wf, p, inst, t, p->fit_sens);
}

static double runtime_with(const sim_cluster *c, const sim_workflow *wf, const sim_process *p,
                           int inst, int t, const double *sens) {
    if (p->meas) {
        int m = sim_machine_of_type(c, wf, t);
        if (m >= 0) {
            double rt = p->meas[(size_t)inst * (size_t)wf->nmachines + (size_t)m].runtime_s;
            if (!isnan(rt))
                return rt;
        }
        /* the measured type of the cluster closest in cpu speed */
        int best = -1;
        double bestd = INFINITY;
        for (int u = 0; u < c->ntypes; u++) {
            int mu = sim_machine_of_type(c, wf, u);
            if (u == t || mu < 0 ||
                isnan(p->meas[(size_t)inst * (size_t)wf->nmachines + (size_t)mu].runtime_s))
                continue;
            double d = fabs(c->types[u].speed[LAB_CPU] - c->types[t].speed[LAB_CPU]);
            if (d < bestd) {
                bestd = d;
                best = u;
            }
        }
        if (best >= 0) {
            int mb = sim_machine_of_type(c, wf, best);
            return p->meas[(size_t)inst * (size_t)wf->nmachines + (size_t)mb].runtime_s *
                   scale(sens, c->types[best].speed, c->types[t].speed);
        }
    }
    if (!isnan(p->base_runtime)) {
        static const double one[LAB_NFEATURES] = {1, 1, 1};
        return p->base_runtime * scale(sens, one, c->types[t].speed);
    }
    return NAN;
}

int sim_mean_usage(const sim_process *p, int nm, sim_meas *out) {
    double s[3] = {0}, n[3] = {0};
    if (!p->meas)
        return -1;
    for (long k = 0; k < (long)p->instances * nm; k++) {
        const sim_meas *m = &p->meas[k];
        const double v[3] = {m->cpu_pct, m->peak_rss, m->io_bytes};
        for (int j = 0; j < 3; j++)
            if (!isnan(v[j])) {
                s[j] += v[j];
                n[j]++;
            }
    }
    *out = (sim_meas){NAN, n[0] ? s[0] / n[0] : NAN, n[1] ? s[1] / n[1] : NAN,
                      n[2] ? s[2] / n[2] : NAN};
    return 0;
}

sim_meas sim_usage(const sim_cluster *c, const sim_workflow *wf, const sim_process *p, int inst,
                   int t) {
    sim_meas u = p->usage;
    if (!p->meas)
        return u;
    int m = sim_machine_of_type(c, wf, t);
    const sim_meas *row =
        m >= 0 ? &p->meas[(size_t)inst * (size_t)wf->nmachines + (size_t)m] : NULL;
    if (row && !isnan(row->runtime_s)) {
        u.cpu_pct = isnan(row->cpu_pct) ? u.cpu_pct : row->cpu_pct;
        u.peak_rss = isnan(row->peak_rss) ? u.peak_rss : row->peak_rss;
        u.io_bytes = isnan(row->io_bytes) ? u.io_bytes : row->io_bytes;
        return u;
    }
    /* mean of this instance over the machines that measured it */
    double s[3] = {0}, n[3] = {0};
    for (int k = 0; k < wf->nmachines; k++) {
        const sim_meas *r = &p->meas[(size_t)inst * (size_t)wf->nmachines + (size_t)k];
        const double v[3] = {r->cpu_pct, r->peak_rss, r->io_bytes};
        for (int j = 0; j < 3; j++)
            if (!isnan(v[j])) {
                s[j] += v[j];
                n[j]++;
            }
    }
    if (n[0])
        u.cpu_pct = s[0] / n[0];
    if (n[1])
        u.peak_rss = s[1] / n[1];
    if (n[2])
        u.io_bytes = s[2] / n[2];
    return u;
}

/* ---- calibrated model: speed-up, noise, contention ---- */

double sim_speedup_sens(double t_slow, double t_fast, double speed_slow, double speed_fast) {
    if (!(t_slow > 0) || !(t_fast > 0) || !(speed_slow > 0) || !(speed_fast > 0))
        return NAN;
    double q = speed_fast / speed_slow;
    if (fabs(q - 1.0) < 0.02) /* the speed-up of nearly equal machines is mostly noise */
        return NAN;
    double s = (t_slow / t_fast - 1.0) / (q - 1.0);
    return fmin(1.0, fmax(0.0, s));
}

double sim_noise_factor(uint64_t seed, uint64_t key, double sigma) {
    if (!(sigma > 0))
        return 1.0;
    uint64_t st = seed * 0xd1b54a32d192ed03ULL ^ (key + 0x632be59bd9b4e019ULL);
    double u1 = sim_rng_unit(&st); /* (0, 1) */
    double u2 = sim_rng_unit(&st);
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2); /* Box-Muller */
    return exp(sigma * z - 0.5 * sigma * sigma);
}

static double over(double demand, double cap) {
    return cap > 0 ? fmax(1.0, demand / cap) - 1.0 : 0.0;
}

double sim_contention_slowdown(sim_demand d, double cores, double mem_bw, double io_bw,
                               sim_demand w) {
    return 1.0 + w.cpu * over(d.cpu, cores) + w.mem * over(d.mem, mem_bw) +
           w.io * over(d.io, io_bw);
}

double sim_io_capacity(const sim_cluster *c, const sim_workload *w, int t) {
    double own = 0, any = 0;
    for (int i = 0; i < w->nworkflows; i++) {
        const sim_workflow *wf = &w->wfs[i];
        for (int u = 0; u < c->ntypes; u++) {
            int m = sim_machine_of_type(c, wf, u);
            if (m < 0)
                continue;
            for (int p = 0; p < wf->nprocs; p++) {
                const sim_process *pr = &wf->procs[p];
                for (int k = 0; pr->meas && k < pr->instances; k++) {
                    const sim_meas *r = &pr->meas[(size_t)k * (size_t)wf->nmachines + (size_t)m];
                    if (!(r->runtime_s > 0) || !(r->io_bytes >= 0))
                        continue;
                    double rate = r->io_bytes / r->runtime_s;
                    any = fmax(any, rate);
                    if (u == t)
                        own = fmax(own, rate);
                }
            }
        }
    }
    return own > 0 ? own : any;
}
