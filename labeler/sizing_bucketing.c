/* sizing_bucketing.c: bucket delimiters from a sorted history (see sizing_bucketing.h). */
#include "labeler/sizing_bucketing.h"

#include <math.h>
#include <stdlib.h>

/* Appends x to out when it is above the last delimiter and there is room. */
static int push(double *out, int k, int max, double x) {
    if (k < max && (k == 0 || x > out[k - 1]))
        out[k++] = x;
    return k;
}

int sz_buckets_quantized(const double *v, size_t n, int nb, double *out, int max) {
    if (n == 0 || nb < 1 || max < 1)
        return 0;
    int k = 0;
    for (int i = 1; i <= nb; i++) {
        size_t rank = ((size_t)i * n + (size_t)nb - 1) / (size_t)nb; /* ceil(i n / nb) */
        k = push(out, k, max, v[rank - 1]);
    }
    /* with max < nb the top bucket would be lost: the chain must end at the maximum */
    if (out[k - 1] < v[n - 1])
        out[k - 1] = v[n - 1];
    return k;
}

/* First index in v[lo..n) whose value is above x. */
static size_t upper_bound(const double *v, size_t lo, size_t n, double x) {
    size_t hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int sz_buckets_kmeans(const double *v, size_t n, int nb, double *out, int max) {
    if (n == 0 || nb < 1 || max < 1)
        return 0;
    if (nb > SZ_MAX_BUCKETS)
        nb = SZ_MAX_BUCKETS;
    double *sum = malloc((n + 1) * sizeof *sum); /* prefix sums: a bucket's mean in O(1) */
    if (!sum)
        return -1;
    sum[0] = 0;
    for (size_t i = 0; i < n; i++)
        sum[i + 1] = sum[i] + v[i];
    size_t start[SZ_MAX_BUCKETS + 1] = {0}, next[SZ_MAX_BUCKETS + 1] = {0};
    int b = nb;
    for (int i = 0; i <= b; i++)
        start[i] = (size_t)i * n / (size_t)b;
    for (int iter = 0; iter < 1000; iter++) {
        /* means of the non-empty buckets, in increasing order (buckets are contiguous runs) */
        double mean[SZ_MAX_BUCKETS];
        int m = 0;
        for (int i = 0; i < b; i++)
            if (start[i + 1] > start[i])
                mean[m++] = (sum[start[i + 1]] - sum[start[i]]) / (double)(start[i + 1] - start[i]);
        /* on sorted values "closest mean" cuts at the midpoints between consecutive means */
        next[0] = 0;
        for (int i = 1; i < m; i++)
            next[i] = upper_bound(v, next[i - 1], n, (mean[i - 1] + mean[i]) / 2);
        next[m] = n;
        int same = m == b;
        for (int i = 0; same && i <= m; i++)
            same = next[i] == start[i];
        b = m;
        for (int i = 0; i <= b; i++)
            start[i] = next[i];
        if (same)
            break;
    }
    free(sum);
    int k = 0;
    for (int i = 0; i < b; i++)
        if (start[i + 1] > start[i])
            k = push(out, k, max, v[start[i + 1] - 1]);
    if (out[k - 1] < v[n - 1])
        out[k - 1] = v[n - 1];
    return k;
}

/* The distinct values of v with, for each, the total weight of the values <= it. */
typedef struct {
    size_t m;
    double *u;  /* distinct values, increasing */
    double *le; /* le[i] = W(v <= u[i]) */
    double total;
} distinct;

static int distinct_make(const double *v, const double *w, size_t n, distinct *d) {
    d->u = malloc(n * sizeof *d->u);
    d->le = malloc(n * sizeof *d->le);
    if (!d->u || !d->le) {
        free(d->u);
        free(d->le);
        return -1;
    }
    d->m = 0;
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        acc += w ? w[i] : 1.0;
        if (d->m > 0 && d->u[d->m - 1] == v[i]) {
            d->le[d->m - 1] = acc;
        } else {
            d->u[d->m] = v[i];
            d->le[d->m++] = acc;
        }
    }
    d->total = acc;
    return 0;
}

static void distinct_free(distinct *d) {
    free(d->u);
    free(d->le);
}

/* W(v <= u[k]), with k = -1 meaning below every value. */
static double wle(const distinct *d, long k) {
    return k < 0 ? 0.0 : d->le[k];
}

/* Splits the bucket (u[lo], u[hi]] (lo = -1: from below every value) while a split lowers the
 * chain's cost; adding c inside it changes the cost by c W(v > u[lo]) - u[hi] W(u[lo] < v <= c),
 * and leaves every other bucket's term alone, so buckets are split independently. */
static void greedy_split(const distinct *d, long lo, long hi, double *out, int *k, int max,
                         int depth) {
    if (*k >= max || depth > SZ_MAX_BUCKETS)
        return;
    double above = d->total - wle(d, lo), best = 0;
    long arg = -1;
    for (long c = lo + 1; c < hi; c++) {
        double delta = d->u[c] * above - d->u[hi] * (wle(d, c) - wle(d, lo));
        if (delta < best - 1e-12 * fabs(d->u[hi] * above)) {
            best = delta;
            arg = c;
        }
    }
    if (arg < 0)
        return;
    out[(*k)++] = d->u[arg];
    greedy_split(d, lo, arg, out, k, max, depth + 1);
    greedy_split(d, arg, hi, out, k, max, depth + 1);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int sz_buckets_greedy(const double *v, const double *w, size_t n, double *out, int max) {
    if (n == 0 || max < 1)
        return 0;
    distinct d;
    if (distinct_make(v, w, n, &d) < 0)
        return -1;
    int k = 0;
    out[k++] = d.u[d.m - 1];
    greedy_split(&d, -1, (long)d.m - 1, out, &k, max, 0);
    distinct_free(&d);
    qsort(out, (size_t)k, sizeof *out, cmp_double);
    return k;
}

int sz_buckets_exhaustive(const double *v, const double *w, size_t n, double *out, int max) {
    if (n == 0 || max < 1)
        return 0;
    distinct d;
    if (distinct_make(v, w, n, &d) < 0)
        return -1;
    /* candidates: indices into d.u, evenly spaced by rank, the maximum last */
    size_t m = d.m < SZ_EXHAUSTIVE_CANDIDATES ? d.m : SZ_EXHAUSTIVE_CANDIDATES;
    long *cand = malloc(m * sizeof *cand), *parent = malloc(m * sizeof *parent);
    double *f = malloc(m * sizeof *f);
    if (!cand || !parent || !f) {
        free(cand);
        free(parent);
        free(f);
        distinct_free(&d);
        return -1;
    }
    for (size_t i = 0; i < m; i++)
        cand[i] = (long)((i + 1) * d.m / m) - 1;
    /* f[i]: least sum_j d_j W(v > d_{j-1}) of a chain ending at candidate i */
    for (size_t i = 0; i < m; i++) {
        double c = d.u[cand[i]];
        f[i] = c * d.total;
        parent[i] = -1;
        for (size_t p = 0; p < i; p++) {
            double x = f[p] + c * (d.total - wle(&d, cand[p]));
            if (x < f[i]) {
                f[i] = x;
                parent[i] = (long)p;
            }
        }
    }
    int k = 0;
    for (long i = (long)m - 1; i >= 0; i = parent[i])
        k++;
    if (k > max) { /* more buckets than room: fall back to greedy's bounded search */
        free(cand);
        free(parent);
        free(f);
        distinct_free(&d);
        return sz_buckets_greedy(v, w, n, out, max);
    }
    int j = k;
    for (long i = (long)m - 1; i >= 0; i = parent[i])
        out[--j] = d.u[cand[i]];
    free(cand);
    free(parent);
    free(f);
    distinct_free(&d);
    return k;
}

double sz_chain_cost(const double *v, const double *w, size_t n, const double *d, int k,
                     double machine) {
    double total = 0, wsum = 0;
    for (size_t i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0, spent = 0;
        int j = 0;
        while (j < k && d[j] < v[i])
            spent += d[j++];
        spent += j < k ? d[j] : machine;
        total += (spent - v[i]) * wi;
        wsum += wi;
    }
    return wsum > 0 ? total / wsum : 0;
}
