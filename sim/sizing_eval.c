/* sizing_eval.c: replays a dataset through one sizing strategy and scores it (see
 * sizing_eval.h for the replay and the metrics). */
#include "sim/sizing_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIB 1048576.0
/* A task that still fails after this many attempts is given the machine (cannot happen: every
 * chain ends at the machine and peaks are clamped to it; the bound keeps a bug from hanging). */
#define MAX_ATTEMPTS 100

/* The per-resource user declaration: 5 % over the true maximum of the workflow. */
static double declared_of(const sim_sz_dataset *d, int r) {
    double mx = -1;
    for (size_t i = 0; i < d->n; i++)
        if (isfinite(d->tasks[i].peak[r]) && d->tasks[i].peak[r] > mx)
            mx = d->tasks[i].peak[r];
    return mx >= 0 ? 1.05 * mx : NAN;
}

static bool measured(const sim_sz_dataset *d, int r) {
    for (size_t i = 0; i < d->n; i++)
        if (isfinite(d->tasks[i].peak[r]))
            return true;
    return false;
}

static double peak_of(const sim_sz_dataset *d, const sim_sz_task *t, int r) {
    double p = t->peak[r];
    if (!isfinite(p) || p < 0)
        return NAN;
    return p > d->machine[r] ? d->machine[r] : p;
}

/* Strategy s on resource r of d's machine; VPA bumps memory by at least 100 MiB after an OOM
 * (the recommender's default), cores by 20 % only. */
static void config_for(sz_config *c, sz_strategy s, const sim_sz_dataset *d, int r) {
    sz_config_default(c, s, d->machine[r]);
    c->vpa_bump_min = r == SZ_CORES ? 0 : 100 * MIB;
    if (d->cold_start > 0)
        c->cold_start = d->cold_start;
}

int sim_sz_evaluate(const sim_sz_dataset *d, sz_strategy s, int level, sim_sz_result *out,
                    tm_err *err) {
    if (level != -1 && (level < 1 || level > 3))
        return tm_err_set(err, "sizing: level %d, expected 1, 2 or 3", level);
    int nkeys = level == 3 ? d->ntypes : 1;
    int nb = level == 2 ? d->ntypes : 1;
    if (nb > SZ_MAX_BUCKETS)
        nb = SZ_MAX_BUCKETS;
    sz_alloc **al = calloc((size_t)nkeys * SZ_NRES, sizeof *al);
    if (!al)
        return tm_err_set(err, "sizing: out of memory");
    int rc = 0;
    bool has[SZ_NRES];
    for (int r = 0; r < SZ_NRES; r++) {
        has[r] = measured(d, r);
        for (int k = 0; has[r] && k < nkeys && rc == 0; k++) {
            sz_config c;
            config_for(&c, s, d, r);
            c.buckets = nb;
            c.declared = declared_of(d, r);
            if (!(al[k * SZ_NRES + r] = sz_alloc_new(&c, err)))
                rc = -1;
        }
    }
    double waste[SZ_NRES] = {0}, whole[SZ_NRES] = {0}, eff[SZ_NRES] = {0};
    long counted[SZ_NRES] = {0}, failures = 0, oom = 0;
    for (size_t i = 0; i < d->n && rc == 0; i++) {
        const sim_sz_task *t = &d->tasks[i];
        sz_alloc **a = &al[(level == 3 ? t->type : 0) * SZ_NRES];
        double alloc[SZ_NRES], spent[SZ_NRES] = {0}, peak[SZ_NRES];
        for (int r = 0; r < SZ_NRES; r++) {
            peak[r] = has[r] ? peak_of(d, t, r) : NAN;
            alloc[r] = has[r] ? sz_alloc_first(a[r]) : NAN;
        }
        for (int attempt = 1;; attempt++) {
            bool fail = false;
            for (int r = 0; r < SZ_NRES; r++) {
                if (!has[r])
                    continue;
                if (attempt >= MAX_ATTEMPTS)
                    alloc[r] = d->machine[r];
                spent[r] += alloc[r];
                if (isfinite(peak[r]) && peak[r] > alloc[r])
                    fail = true;
            }
            if (!fail)
                break;
            failures++;
            if (has[SZ_MEMORY] && isfinite(peak[SZ_MEMORY]) && peak[SZ_MEMORY] > alloc[SZ_MEMORY])
                oom++;
            for (int r = 0; r < SZ_NRES; r++) {
                if (!has[r])
                    continue;
                /* the resource that ran out is what the system reports (an OOM kill) */
                if (isfinite(peak[r]) && peak[r] > alloc[r])
                    sz_alloc_record(a[r], alloc[r], t->runtime, false);
                alloc[r] = sz_alloc_retry(a[r], alloc[r]);
            }
        }
        for (int r = 0; r < SZ_NRES; r++) {
            if (!has[r] || !isfinite(peak[r]))
                continue;
            waste[r] += (spent[r] - peak[r]) * t->runtime;
            whole[r] += (d->machine[r] - peak[r]) * t->runtime;
            eff[r] += spent[r] > 0 ? peak[r] / spent[r] : 1.0;
            counted[r]++;
            sz_alloc_record(a[r], peak[r], t->runtime, true);
        }
    }
    if (rc == 0) {
        out->strategy = s;
        out->level = level;
        out->failures = failures;
        out->oom = oom;
        for (int r = 0; r < SZ_NRES; r++) {
            out->waste[r] = counted[r] ? waste[r] : NAN;
            out->wrr[r] = counted[r] == 0 ? NAN
                          : whole[r] <= 0 ? 0
                                          : 100.0 * (1.0 - waste[r] / whole[r]);
            out->ate[r] = counted[r] ? 100.0 * eff[r] / (double)counted[r] : NAN;
        }
    }
    for (int k = 0; k < nkeys * SZ_NRES; k++)
        sz_alloc_free(al[k]);
    free(al);
    return rc;
}

int sim_sz_evaluate_all(const sim_sz_dataset *d, sim_sz_result *out, tm_err *err) {
    int n = 0;
    for (int s = 0; s < SZ_NSTRATEGIES; s++) {
        int levels[3], nl = 0;
        if (sz_strategy_uses_buckets((sz_strategy)s)) {
            levels[nl++] = 1, levels[nl++] = 2, levels[nl++] = 3;
        } else if (sz_strategy_uses_history((sz_strategy)s)) {
            levels[nl++] = 1, levels[nl++] = 3;
        } else {
            levels[nl++] = -1;
        }
        for (int l = 0; l < nl; l++) {
            if (n >= SIM_SZ_MAX_RESULTS)
                return tm_err_set(err, "sizing: more than %d results", SIM_SZ_MAX_RESULTS);
            if (sim_sz_evaluate(d, (sz_strategy)s, levels[l], &out[n], err) < 0)
                return tm_err_wrap(err, "%s", sz_strategy_name((sz_strategy)s));
            n++;
        }
    }
    return n;
}

int sim_sz_recommend(const sim_sz_dataset *d, sim_sz_recommendation *out, tm_err *err) {
    for (int k = 0; k < d->ntypes; k++) {
        sim_sz_recommendation *o = &out[k];
        memset(o, 0, sizeof *o);
        o->type = d->types[k];
        for (int r = 0; r < SZ_NRES; r++) {
            sz_config cg, cv;
            config_for(&cg, SZ_GREEDY, d, r);
            config_for(&cv, SZ_VPA, d, r);
            cg.cold_start = cv.cold_start = 1; /* the whole history is known here */
            sz_alloc *g = sz_alloc_new(&cg, err), *v = g ? sz_alloc_new(&cv, err) : NULL;
            if (!v) {
                sz_alloc_free(g);
                return -1;
            }
            o->max_peak[r] = NAN;
            long n = 0;
            for (size_t i = 0; i < d->n; i++) {
                if (d->tasks[i].type != k)
                    continue;
                n++;
                double p = peak_of(d, &d->tasks[i], r);
                if (!isfinite(p))
                    continue;
                if (!(o->max_peak[r] >= p))
                    o->max_peak[r] = p;
                sz_alloc_record(g, p, d->tasks[i].runtime, true);
                sz_alloc_record(v, p, d->tasks[i].runtime, true);
            }
            o->tasks = n;
            o->nbuckets[r] = sz_alloc_buckets(g, o->buckets[r], 8);
            o->vpa[r] = sz_alloc_count(v) ? sz_alloc_first(v) : NAN;
            sz_alloc_free(g);
            sz_alloc_free(v);
        }
    }
    return 0;
}
