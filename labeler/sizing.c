/* sizing.c: the allocation state of one (key, resource) and the strategies' first and retry
 * allocations (see sizing.h); bucket delimiters come from sizing_bucketing.c. */
#include "labeler/sizing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "labeler/sizing_bucketing.h"

struct sz_alloc {
    sz_config c;
    size_t n, cap;
    double *v, *w; /* history, v increasing, w the matching runtimes */
    bool dirty;    /* history changed since the buckets were computed */
    int nb;
    double b[SZ_MAX_BUCKETS]; /* current delimiters (VPA: its one target) */
};

static const char *const names[SZ_NSTRATEGIES] = {
    "whole-machine", "double", "declared", "quantized", "kmeans", "greedy", "exhaustive", "vpa"};

const char *sz_strategy_name(sz_strategy s) {
    return s >= 0 && s < SZ_NSTRATEGIES ? names[s] : "?";
}

int sz_strategy_parse(const char *name) {
    for (int i = 0; name && i < SZ_NSTRATEGIES; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

bool sz_strategy_uses_history(sz_strategy s) {
    return s >= SZ_QUANTIZED && s < SZ_NSTRATEGIES;
}

bool sz_strategy_uses_buckets(sz_strategy s) {
    return s == SZ_QUANTIZED || s == SZ_KMEANS;
}

void sz_config_default(sz_config *c, sz_strategy s, double machine) {
    *c = (sz_config){.strategy = s,
                     .machine = machine,
                     .declared = NAN,
                     .buckets = 1,
                     .cold_start = 10,
                     .double_first = 1.0 / 8,
                     .vpa_bump_min = 0,
                     .vpa_margin = 1.15,
                     .vpa_pct = 0.9};
}

sz_alloc *sz_alloc_new(const sz_config *c, tm_err *err) {
    if (!c || c->strategy < 0 || c->strategy >= SZ_NSTRATEGIES) {
        tm_err_set(err, "sizing: unknown strategy");
        return NULL;
    }
    if (!isfinite(c->machine) || c->machine <= 0) {
        tm_err_set(err, "sizing: machine capacity %g is not a positive number", c->machine);
        return NULL;
    }
    if (c->buckets < 1 || c->buckets > SZ_MAX_BUCKETS) {
        tm_err_set(err, "sizing: %d buckets, expected 1 to %d", c->buckets, SZ_MAX_BUCKETS);
        return NULL;
    }
    if (c->cold_start < 0) {
        tm_err_set(err, "sizing: cold start of %d tasks is negative", c->cold_start);
        return NULL;
    }
    if (!(c->double_first > 0 && c->double_first <= 1)) {
        tm_err_set(err, "sizing: double's first fraction %g is not in (0, 1]", c->double_first);
        return NULL;
    }
    if (!(c->vpa_bump_min >= 0 && isfinite(c->vpa_bump_min)) ||
        !(c->vpa_margin >= 1 && isfinite(c->vpa_margin)) || !(c->vpa_pct > 0 && c->vpa_pct <= 1)) {
        tm_err_set(err,
                   "sizing: VPA settings out of range (bump %g >= 0, margin %g >= 1, "
                   "percentile %g in (0, 1])",
                   c->vpa_bump_min, c->vpa_margin, c->vpa_pct);
        return NULL;
    }
    sz_alloc *a = calloc(1, sizeof *a);
    if (!a) {
        tm_err_set(err, "sizing: out of memory");
        return NULL;
    }
    a->c = *c;
    return a;
}

void sz_alloc_free(sz_alloc *a) {
    if (!a)
        return;
    free(a->v);
    free(a->w);
    free(a);
}

static double clamp(const sz_alloc *a, double x) {
    if (!(x >= 0)) /* NaN too */
        return a->c.machine;
    return x > a->c.machine ? a->c.machine : x;
}

/* Inserts (x, wt) keeping v sorted; equal values go after the existing ones. */
static int insert(sz_alloc *a, double x, double wt) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        double *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return -1;
        a->v = v;
        double *w = realloc(a->w, cap * sizeof *w);
        if (!w)
            return -1;
        a->w = w;
        a->cap = cap;
    }
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(a->v + lo + 1, a->v + lo, (a->n - lo) * sizeof *a->v);
    memmove(a->w + lo + 1, a->w + lo, (a->n - lo) * sizeof *a->w);
    a->v[lo] = x;
    a->w[lo] = wt;
    a->n++;
    a->dirty = true;
    return 0;
}

/* VPA's answer to an OOM kill with `failed`: at least the minimum bump, at least 20 % more. */
static double vpa_bump(const sz_alloc *a, double failed) {
    return fmax(failed + a->c.vpa_bump_min, failed * 1.2);
}

int sz_alloc_record(sz_alloc *a, double peak, double runtime, bool success) {
    if (!a || !isfinite(peak) || peak < 0)
        return -1;
    double wt = (isfinite(runtime) && runtime > 0) ? runtime : 1.0;
    peak = clamp(a, peak);
    if (success && sz_strategy_uses_history(a->c.strategy))
        return insert(a, peak, wt);
    if (!success && a->c.strategy == SZ_VPA) {
        /* the recommender records an OOM as a sample of the bumped figure */
        return insert(a, clamp(a, vpa_bump(a, peak)), wt);
    }
    return 0;
}

size_t sz_alloc_count(const sz_alloc *a) {
    return a ? a->n : 0;
}

/* Recomputes the delimiters when the history changed; nb = 0 during the cold start or when
 * out of memory (both mean: the whole machine). */
static void refresh(sz_alloc *a) {
    if (!a->dirty)
        return;
    a->dirty = false;
    a->nb = 0;
    if (a->n == 0 || a->n < (size_t)a->c.cold_start)
        return;
    int k = 0;
    switch (a->c.strategy) {
    case SZ_QUANTIZED:
        k = sz_buckets_quantized(a->v, a->n, a->c.buckets, a->b, SZ_MAX_BUCKETS);
        break;
    case SZ_KMEANS:
        k = sz_buckets_kmeans(a->v, a->n, a->c.buckets, a->b, SZ_MAX_BUCKETS);
        break;
    case SZ_GREEDY:
        k = sz_buckets_greedy(a->v, a->w, a->n, a->b, SZ_MAX_BUCKETS);
        break;
    case SZ_EXHAUSTIVE:
        k = sz_buckets_exhaustive(a->v, a->w, a->n, a->b, SZ_MAX_BUCKETS);
        break;
    case SZ_VPA: {
        /* nearest-rank percentile of the samples, with the safety margin */
        size_t rank = (size_t)ceil(a->c.vpa_pct * (double)a->n);
        if (rank < 1)
            rank = 1;
        a->b[0] = clamp(a, a->v[rank - 1] * a->c.vpa_margin);
        k = 1;
        break;
    }
    default:
        break;
    }
    a->nb = k < 0 ? 0 : k;
    /* delimiters at or above the machine are the machine itself: not buckets */
    while (a->nb > 0 && a->b[a->nb - 1] >= a->c.machine)
        a->nb--;
}

double sz_alloc_first(sz_alloc *a) {
    if (!a)
        return NAN;
    switch (a->c.strategy) {
    case SZ_WHOLE_MACHINE:
        return a->c.machine;
    case SZ_DOUBLE:
        return clamp(a, a->c.double_first * a->c.machine);
    case SZ_DECLARED:
        return (isfinite(a->c.declared) && a->c.declared > 0) ? clamp(a, a->c.declared)
                                                              : a->c.machine;
    default:
        refresh(a);
        return a->nb > 0 ? a->b[0] : a->c.machine;
    }
}

double sz_alloc_retry(sz_alloc *a, double failed) {
    if (!a)
        return NAN;
    double m = a->c.machine;
    if (!(failed >= 0) || failed >= m) /* NaN too */
        return m;
    double next = m;
    switch (a->c.strategy) {
    case SZ_DOUBLE:
        next = failed > 0 ? 2 * failed : a->c.double_first * m;
        break;
    case SZ_VPA:
        next = vpa_bump(a, failed);
        break;
    case SZ_QUANTIZED:
    case SZ_KMEANS:
    case SZ_GREEDY:
    case SZ_EXHAUSTIVE:
        refresh(a);
        for (int i = 0; i < a->nb; i++)
            if (a->b[i] > failed) {
                next = a->b[i];
                break;
            }
        break;
    default: /* whole machine, declared: the whole machine */
        break;
    }
    next = clamp(a, next);
    return next > failed ? next : m;
}

int sz_alloc_buckets(sz_alloc *a, double *out, int max) {
    if (!a || !sz_strategy_uses_history(a->c.strategy))
        return 0;
    refresh(a);
    int k = a->nb < max ? a->nb : max;
    for (int i = 0; i < k; i++)
        out[i] = a->b[i];
    return k;
}
