/* history.c: incremental, exact task labels over a workflow's simulated history (see
 * history.h). */
#include "sim/history.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The multiset of one feature's samples: counts per distinct value in a Fenwick tree. */
typedef struct ostat {
    double *vals; /* the universe, sorted, distinct */
    size_t n;
    long *tree;   /* 1-based Fenwick tree of counts */
    size_t step;  /* the highest power of two <= n */
    size_t total; /* samples */
} ostat;

struct sim_history {
    int nprocs;
    lab_classes classes[LAB_NFEATURES];
    int npos[LAB_NFEATURES];
    double pos[LAB_NFEATURES][LAB_MAX_CLASSES]; /* the percentile positions p_i */
    ostat os[LAB_NFEATURES];
    double *sum; /* [proc * LAB_NFEATURES + f] */
    long *cnt;
    double *rt_sum;
    long *rt_n, *runs;
    size_t count;
    size_t bounds_at; /* count when the bounds below were computed; SIZE_MAX: never */
    int nbounds[LAB_NFEATURES];
    double bounds[LAB_NFEATURES][LAB_MAX_CLASSES];
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int ostat_init(ostat *o, const double *u, size_t nu) {
    o->vals = malloc((nu + 1) * sizeof *o->vals);
    if (!o->vals)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < nu; i++)
        if (!isnan(u[i]))
            o->vals[n++] = u[i];
    qsort(o->vals, n, sizeof *o->vals, cmp_double);
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        if (d == 0 || o->vals[i] != o->vals[d - 1])
            o->vals[d++] = o->vals[i];
    o->n = d;
    o->tree = calloc(d + 1, sizeof *o->tree);
    if (!o->tree)
        return -1;
    for (o->step = 1; o->step * 2 <= d; o->step *= 2)
        ;
    return 0;
}

static int ostat_add(ostat *o, double v) {
    const double *hit = bsearch(&v, o->vals, o->n, sizeof *o->vals, cmp_double);
    if (!hit)
        return -1;
    for (size_t i = (size_t)(hit - o->vals) + 1; i <= o->n; i += i & (~i + 1))
        o->tree[i]++;
    o->total++;
    return 0;
}

/* The k-th smallest sample (0-based, k < total): descend the tree to the last position whose
 * prefix count is <= k. */
static double ostat_kth(const ostat *o, size_t k) {
    size_t idx = 0;
    long rem = (long)k + 1;
    for (size_t step = o->step; step; step >>= 1)
        if (idx + step <= o->n && o->tree[idx + step] < rem) {
            idx += step;
            rem -= o->tree[idx];
        }
    return o->vals[idx];
}

/* lab_quantile (labeler/labels.c) over the tree instead of a sorted array: the same steps,
 * including its snap of positions a hair off an order statistic. */
static double ostat_quantile(const ostat *o, double p) {
    size_t n = o->total;
    if (p <= 0)
        return ostat_kth(o, 0);
    if (p >= 1)
        return ostat_kth(o, n - 1);
    double h = (double)(n - 1) * p;
    double r = nearbyint(h);
    if (fabs(h - r) < 1e-9)
        h = r;
    size_t lo = (size_t)floor(h);
    if (lo + 1 >= n)
        return ostat_kth(o, n - 1);
    double frac = h - (double)lo, a = ostat_kth(o, lo), b = ostat_kth(o, lo + 1);
    return a + frac * (b - a);
}

sim_history *sim_history_new(int nprocs, const lab_classes classes[LAB_NFEATURES],
                             const double *const universe[LAB_NFEATURES],
                             const size_t nuniverse[LAB_NFEATURES], tm_err *err) {
    sim_history *h = calloc(1, sizeof *h);
    size_t np = nprocs > 0 ? (size_t)nprocs : 1;
    if (!h || !(h->sum = calloc(np * LAB_NFEATURES, sizeof *h->sum)) ||
        !(h->cnt = calloc(np * LAB_NFEATURES, sizeof *h->cnt)) ||
        !(h->rt_sum = calloc(np, sizeof *h->rt_sum)) || !(h->rt_n = calloc(np, sizeof *h->rt_n)) ||
        !(h->runs = calloc(np, sizeof *h->runs))) {
        sim_history_free(h);
        tm_err_set(err, "out of memory for the monitoring history");
        return NULL;
    }
    h->nprocs = nprocs;
    h->bounds_at = SIZE_MAX;
    for (int f = 0; f < LAB_NFEATURES; f++) {
        h->classes[f] = classes[f];
        /* lab_bounds over the samples {0, 1} returns the positions p_i themselves, so the
         * positions are the labeler's own, from the same core shares */
        double unit[2] = {0.0, 1.0};
        h->npos[f] = lab_bounds(unit, 2, &classes[f], h->pos[f], err);
        if (h->npos[f] < 0 || ostat_init(&h->os[f], universe[f], nuniverse[f]) < 0) {
            if (h->npos[f] >= 0)
                tm_err_set(err, "out of memory for the monitoring history");
            sim_history_free(h);
            return NULL;
        }
    }
    return h;
}

void sim_history_free(sim_history *h) {
    if (!h)
        return;
    for (int f = 0; f < LAB_NFEATURES; f++) {
        free(h->os[f].vals);
        free(h->os[f].tree);
    }
    free(h->sum);
    free(h->cnt);
    free(h->rt_sum);
    free(h->rt_n);
    free(h->runs);
    free(h);
}

int sim_history_add(sim_history *h, int proc, const double value[LAB_NFEATURES], double realtime_ms,
                    tm_err *err) {
    if (proc < 0 || proc >= h->nprocs)
        return tm_err_set(err, "history: process %d of %d", proc, h->nprocs);
    for (int f = 0; f < LAB_NFEATURES; f++) {
        if (isnan(value[f]))
            continue;
        if (ostat_add(&h->os[f], value[f]) < 0)
            return tm_err_set(err, "history: %s value %g was not announced",
                              lab_feature_name((lab_feature)f), value[f]);
        h->sum[(size_t)proc * LAB_NFEATURES + (size_t)f] += value[f];
        h->cnt[(size_t)proc * LAB_NFEATURES + (size_t)f]++;
    }
    if (!isnan(realtime_ms)) {
        h->rt_sum[proc] += realtime_ms;
        h->rt_n[proc]++;
    }
    h->runs[proc]++;
    h->count++;
    return 0;
}

size_t sim_history_count(const sim_history *h) {
    return h->count;
}

long sim_history_label(sim_history *h, int proc, int label[LAB_NFEATURES],
                       double *mean_realtime_ms) {
    if (proc < 0 || proc >= h->nprocs) {
        memset(label, 0, LAB_NFEATURES * sizeof *label);
        *mean_realtime_ms = NAN;
        return 0;
    }
    if (h->bounds_at != h->count) {
        for (int f = 0; f < LAB_NFEATURES; f++) {
            h->nbounds[f] = h->os[f].total ? h->npos[f] : -1;
            for (int i = 0; i < h->nbounds[f]; i++)
                h->bounds[f][i] = ostat_quantile(&h->os[f], h->pos[f][i]);
        }
        h->bounds_at = h->count;
    }
    for (int f = 0; f < LAB_NFEATURES; f++) {
        long n = h->cnt[(size_t)proc * LAB_NFEATURES + (size_t)f];
        label[f] = n ? lab_label(h->sum[(size_t)proc * LAB_NFEATURES + (size_t)f] / (double)n,
                                 h->bounds[f], h->nbounds[f])
                     : 0;
    }
    *mean_realtime_ms = h->rt_n[proc] ? h->rt_sum[proc] / (double)h->rt_n[proc] : NAN;
    return h->runs[proc];
}
