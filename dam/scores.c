/* scores.c: the DAM's four scores and their weighted mean (see scores.h). */
#include "dam/scores.h"

#include <math.h>
#include <string.h>

static double clamp01(double v) {
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

double dam_score_load(double cores_used, double cores_total) {
    if (!(cores_total > 0))
        return 0;
    return clamp01(1.0 / (1.0 + cores_used / cores_total));
}

double dam_score_perf(double perf_per_core, double perf_max) {
    if (!(perf_max > 0))
        return 1; /* nothing measured anywhere: no cluster is faster */
    return clamp01(perf_per_core / perf_max);
}

double dam_score_wait(double run_s, double wait_s) {
    if (run_s + wait_s <= 0)
        return 1;
    return clamp01(run_s / (run_s + wait_s));
}

double dam_score_data(double x) {
    return clamp01(exp(-x));
}

static int same(const char *a, const char *b) {
    return a && b && strcmp(a, b) == 0;
}

double dam_data_class(const dam_dataset *d, const char *cluster_location,
                      const char *cluster_site) {
    if (same(d->location, cluster_location))
        return 0;
    if (same(d->site, cluster_site))
        return 1;
    return 2;
}

static const dam_transfer *find_transfer(const dam_transfer *t, size_t n, const char *from,
                                         const char *to) {
    for (size_t i = 0; i < n; i++)
        if (same(t[i].from, from) && same(t[i].to, to))
            return &t[i];
    return NULL;
}

double dam_data_x(const dam_dataset *const *datasets, size_t n, const dam_transfer *transfers,
                  size_t ntransfers, const char *cluster_location, const char *cluster_site,
                  double run_s) {
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += datasets[i]->size_bytes;
    double x = 0;
    for (size_t i = 0; i < n; i++) {
        const dam_dataset *d = datasets[i];
        double weight = total > 0 ? d->size_bytes / total : 1.0 / (double)n;
        const dam_transfer *t = find_transfer(transfers, ntransfers, d->location, cluster_location);
        double xi;
        if (same(d->location, cluster_location))
            xi = 0;
        else if (t && run_s > 0)
            xi = d->size_bytes / t->bytes_per_s / run_s;
        else
            xi = dam_data_class(d, cluster_location, cluster_site);
        x += weight * xi;
    }
    return x;
}

double dam_perf_from_groups(const double *cores, const double *perf, size_t n) {
    double c = 0, p = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(perf[i] > 0) || !(cores[i] > 0))
            continue;
        c += cores[i];
        p += cores[i] * perf[i];
    }
    return c > 0 ? p / c : 0;
}

double dam_weighted_mean(const double *scores, const double *weights, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += weights[i] * scores[i];
        den += weights[i];
    }
    return den > 0 ? num / den : 0;
}
