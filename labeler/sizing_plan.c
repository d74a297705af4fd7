/* sizing_plan.c: see sizing_plan.h. */
#include "labeler/sizing_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct candidate {
    sz_strategy s;
    int n; /* buckets; 0 = the configured n */
} candidate;

/* Every history strategy; ties keep the earlier (simpler) one. */
static const candidate best_set[] = {
    {SZ_QUANTIZED, 0}, {SZ_KMEANS, 0}, {SZ_GREEDY, 0}, {SZ_EXHAUSTIVE, 0}, {SZ_VPA, 0}};
/* The paper's: quantized and k-means with 1..SZ_PLAN_PAPER_MAX_N buckets. */
static const candidate paper_set[] = {{SZ_QUANTIZED, 1}, {SZ_KMEANS, 1},    {SZ_QUANTIZED, 2},
                                      {SZ_KMEANS, 2},    {SZ_QUANTIZED, 3}, {SZ_KMEANS, 3},
                                      {SZ_QUANTIZED, 4}, {SZ_KMEANS, 4}};

int sz_plan_strategy_parse(const char *name) {
    if (name && strcmp(name, "best") == 0)
        return SZ_STRATEGY_BEST;
    if (name && strcmp(name, "paper") == 0)
        return SZ_STRATEGY_PAPER;
    int s = sz_strategy_parse(name);
    return s >= 0 && sz_strategy_uses_history((sz_strategy)s) ? s : -3;
}

const char *sz_plan_strategy_name(int strategy) {
    return strategy == SZ_STRATEGY_BEST    ? "best"
           : strategy == SZ_STRATEGY_PAPER ? "paper"
                                           : sz_strategy_name((sz_strategy)strategy);
}

void sz_plan_opts_default(sz_plan_opts *o, double machine_cores, double machine_bytes) {
    *o = (sz_plan_opts){.strategy = SZ_STRATEGY_PAPER,
                        .machine = {machine_cores, machine_bytes},
                        .cold_start = 2,
                        .buckets = 1,
                        .vpa_bump_min = 100.0 * 1048576};
}

static bool usable(double v) {
    return isfinite(v) && v >= 0;
}

static sz_alloc *new_alloc(const sz_plan_opts *o, int r, sz_strategy s, int n, tm_err *err) {
    sz_config c;
    sz_config_default(&c, s, o->machine[r]);
    c.buckets = n > 0 ? n : o->buckets;
    /* the plan decides when it is ready; the state itself uses every sample at once */
    c.cold_start = 0;
    c.vpa_bump_min = r == SZ_RES_MEMORY ? o->vpa_bump_min : 0;
    return sz_alloc_new(&c, err);
}

static double weight(const double *runtime, size_t i) {
    return runtime && isfinite(runtime[i]) && runtime[i] > 0 ? runtime[i] : 1.0;
}

/* The paper's replay of the history through strategy s for resource r: every sample is a task
 * allocated from those before it and retried until it fits. Returns its waste, or INFINITY
 * when the state cannot be made. The cold start is the plan's, not the replay's: the first
 * cold_start tasks go on the whole machine for every strategy alike, so they are left out. */
static double replay_waste(const sz_plan_opts *o, int r, candidate cand, const double *v,
                           const double *runtime, size_t n) {
    tm_err err = {{0}, 0};
    sz_alloc *a = new_alloc(o, r, cand.s, cand.n, &err);
    if (!a)
        return INFINITY;
    double waste = 0;
    size_t start = n > SZ_PLAN_MAX_REPLAY ? n - SZ_PLAN_MAX_REPLAY : 0;
    long fed = 0;
    for (size_t i = start; i < n; i++) {
        if (!usable(v[i]))
            continue;
        double peak = fmin(v[i], o->machine[r]), t = weight(runtime, i);
        if (fed >= o->cold_start) {
            double alloc = sz_alloc_first(a);
            for (int tries = 0; alloc < peak && tries < 100; tries++) {
                waste += alloc * t;
                alloc = sz_alloc_retry(a, alloc);
            }
            waste += (alloc - peak) * t;
        }
        sz_alloc_record(a, peak, t, true);
        fed++;
    }
    sz_alloc_free(a);
    return waste;
}

static int check_opts(const sz_plan_opts *o, tm_err *err) {
    for (int r = 0; r < SZ_RES_N; r++)
        if (!(isfinite(o->machine[r]) && o->machine[r] > 0))
            return tm_err_set(err,
                              "sizing plan: the largest node's %s (%g) is not a positive "
                              "number",
                              r == SZ_RES_CORES ? "cores" : "memory", o->machine[r]);
    if (o->cold_start < 1)
        return tm_err_set(err, "sizing plan: cold start %d, expected at least 1", o->cold_start);
    if (o->strategy != SZ_STRATEGY_BEST && o->strategy != SZ_STRATEGY_PAPER &&
        !(o->strategy >= 0 && o->strategy < SZ_NSTRATEGIES &&
          sz_strategy_uses_history((sz_strategy)o->strategy)))
        return tm_err_set(err,
                          "sizing plan: strategy %d is not one that learns from history "
                          "(quantized, kmeans, greedy, exhaustive, vpa, best or paper)",
                          o->strategy);
    return 0;
}

int sz_plan_build(sz_plan *p, const sz_plan_opts *o, const double *cores, const double *bytes,
                  const double *runtime, size_t n, tm_err *err) {
    *p = (sz_plan){0};
    if (check_opts(o, err) < 0)
        return -1;
    const double *vals[SZ_RES_N] = {cores, bytes};
    for (int r = 0; r < SZ_RES_N; r++) {
        p->machine[r] = o->machine[r];
        long good = 0;
        for (size_t i = 0; vals[r] && i < n; i++)
            good += usable(vals[r][i]);
        if (r == SZ_RES_MEMORY)
            p->samples = good;
        if (good == 0)
            continue;
        candidate chosen = {(sz_strategy)o->strategy, 0};
        if (o->strategy == SZ_STRATEGY_BEST || o->strategy == SZ_STRATEGY_PAPER) {
            bool all = o->strategy == SZ_STRATEGY_BEST;
            const candidate *set = all ? best_set : paper_set;
            size_t nset =
                all ? sizeof best_set / sizeof *best_set : sizeof paper_set / sizeof *paper_set;
            double least = INFINITY;
            chosen = set[0];
            for (size_t c = 0; c < nset; c++) {
                double w = replay_waste(o, r, set[c], vals[r], runtime, n);
                if (w < least) { /* ties keep the earlier (simpler) candidate */
                    least = w;
                    chosen = set[c];
                }
            }
        }
        p->strategy[r] = chosen.s;
        p->n[r] = sz_strategy_uses_buckets(chosen.s) ? (chosen.n > 0 ? chosen.n : o->buckets) : 0;
        if (!(p->a[r] = new_alloc(o, r, chosen.s, chosen.n, err))) {
            sz_plan_free(p);
            return -1;
        }
        for (size_t i = 0; i < n; i++)
            if (usable(vals[r][i]))
                sz_alloc_record(p->a[r], vals[r][i], weight(runtime, i), true);
        /* computes the buckets now, so later reads change nothing (thread-safe reads) */
        double tmp[SZ_MAX_BUCKETS];
        sz_alloc_buckets(p->a[r], tmp, SZ_MAX_BUCKETS);
    }
    p->ready = p->samples >= o->cold_start && p->a[SZ_RES_MEMORY];
    return 0;
}

void sz_plan_free(sz_plan *p) {
    for (int r = 0; p && r < SZ_RES_N; r++) {
        sz_alloc_free(p->a[r]);
        p->a[r] = NULL;
    }
}

/* The states are not changed by first/retry once their buckets are computed (sz_plan_build
 * did): the casts drop a const the sizing.h interface does not spell. */
double sz_plan_first(const sz_plan *p, int r) {
    if (!p || !p->ready || r < 0 || r >= SZ_RES_N || !p->a[r])
        return NAN;
    return sz_alloc_first((sz_alloc *)p->a[r]);
}

double sz_plan_retry(const sz_plan *p, int r, double failed) {
    if (!p || !p->ready || r < 0 || r >= SZ_RES_N || !p->a[r])
        return NAN;
    return sz_alloc_retry((sz_alloc *)p->a[r], failed);
}

static json_t *num_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *sz_plan_json(const sz_plan *p) {
    json_t *strat = json_object(), *nb = json_object(), *buckets = json_object(),
           *rec = json_object();
    static const char *const key[SZ_RES_N] = {"cores", "memoryBytes"};
    for (int r = 0; r < SZ_RES_N; r++) {
        json_object_set_new(strat, r == SZ_RES_CORES ? "cores" : "memory",
                            p->a[r] ? json_string(sz_strategy_name(p->strategy[r])) : json_null());
        json_object_set_new(nb, r == SZ_RES_CORES ? "cores" : "memory",
                            p->a[r] && p->n[r] > 0 ? json_integer(p->n[r]) : json_null());
        json_t *arr = json_array();
        double b[SZ_MAX_BUCKETS];
        int k = p->a[r] ? sz_alloc_buckets(p->a[r], b, SZ_MAX_BUCKETS) : 0;
        for (int i = 0; i < k; i++)
            json_array_append_new(arr, json_real(b[i]));
        json_object_set_new(buckets, key[r], arr);
        json_object_set_new(rec, key[r], num_or_null(sz_plan_first(p, r)));
    }
    return json_pack("{s:o, s:o, s:I, s:b, s:o, s:o}", "strategy", strat, "n", nb, "samples",
                     (json_int_t)p->samples, "ready", p->ready, "buckets", buckets,
                     "recommendation", p->ready ? rec : (json_decref(rec), json_null()));
}
