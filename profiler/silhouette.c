/* silhouette.c: see silhouette.h. */
#include "profiler/silhouette.h"

#include <math.h>
#include <stdlib.h>

#include "profiler/kmeans.h"

/* For point i of clustering c: s(i) from its distance sums to every cluster. */
static double point_score(const double *sums, const size_t *size, int k, int own) {
    if (size[own] < 2)
        return 0;
    double a = sums[own] / (double)(size[own] - 1);
    double b = INFINITY;
    for (int c = 0; c < k; c++) {
        if (c == own || size[c] == 0)
            continue;
        double mean = sums[c] / (double)size[c];
        if (mean < b)
            b = mean;
    }
    if (!isfinite(b))
        return 0; /* only one non-empty cluster: no structure to score */
    double mx = a > b ? a : b;
    return mx > 0 ? (b - a) / mx : 0;
}

int prof_silhouette_multi(const double *x, size_t n, size_t d, const int *const *assign,
                          const int *k, size_t m, double *out, tm_err *err) {
    if (!x || !assign || !k || !out || n == 0 || d == 0 || m == 0)
        return tm_err_set(err, "silhouette: empty input (n=%zu, d=%zu, clusterings=%zu)", n, d, m);
    /* off[c] is where clustering c's per-cluster sums start within a point's row. */
    size_t *off = malloc((m + 1) * sizeof *off);
    if (!off)
        return tm_err_set(err, "silhouette: out of memory");
    off[0] = 0;
    for (size_t c = 0; c < m; c++) {
        if (k[c] < 1) {
            free(off);
            return tm_err_set(err, "silhouette: clustering %zu has k=%d", c, k[c]);
        }
        off[c + 1] = off[c] + (size_t)k[c];
    }
    size_t w = off[m];
    double *sums = calloc(n * w, sizeof *sums);
    size_t *size = calloc(w, sizeof *size);
    if (!sums || !size) {
        free(off), free(sums), free(size);
        return tm_err_set(err, "silhouette: out of memory for %zu points", n);
    }
    for (size_t c = 0; c < m; c++)
        for (size_t i = 0; i < n; i++) {
            int a = assign[c][i];
            if (a < 0 || a >= k[c]) {
                free(off), free(sums), free(size);
                return tm_err_set(err, "silhouette: point %zu has cluster %d outside 0..%d", i, a,
                                  k[c] - 1);
            }
            size[off[c] + (size_t)a]++;
        }
    for (size_t i = 0; i < n; i++) {
        double *si = sums + i * w;
        for (size_t j = i + 1; j < n; j++) {
            double dist = sqrt(prof_dist2(x + i * d, x + j * d, d));
            double *sj = sums + j * w;
            for (size_t c = 0; c < m; c++) {
                si[off[c] + (size_t)assign[c][j]] += dist;
                sj[off[c] + (size_t)assign[c][i]] += dist;
            }
        }
    }
    for (size_t c = 0; c < m; c++) {
        double total = 0;
        for (size_t i = 0; i < n; i++)
            total += point_score(sums + i * w + off[c], size + off[c], k[c], assign[c][i]);
        out[c] = total / (double)n;
    }
    free(off), free(sums), free(size);
    return 0;
}

double prof_silhouette(const double *x, size_t n, size_t d, const int *assign, int k, tm_err *err) {
    double s;
    const int *a[1] = {assign};
    if (prof_silhouette_multi(x, n, d, a, &k, 1, &s, err) != 0)
        return NAN;
    return s;
}
