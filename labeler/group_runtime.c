/* group_runtime.c: see group_runtime.h. */
#include "labeler/group_runtime.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_group(const void *a, const void *b) {
    return strcmp(((const lab_group_rt *)a)->group, ((const lab_group_rt *)b)->group);
}

static bool usable(const lab_sample *v, const char *const *groups, size_t i, const char *process) {
    return groups && groups[i] && *groups[i] && v[i].process &&
           strcmp(v[i].process, process) == 0 && isfinite(v[i].realtime_ms) &&
           v[i].realtime_ms >= 0;
}

int lab_group_runtimes(const lab_sample *v, const char *const *groups, size_t n,
                       const char *process, lab_group_rt *out, int max, tm_err *err) {
    int ng = 0;
    double *buf = malloc((n ? n : 1) * sizeof *buf);
    if (!buf)
        return tm_err_set(err, "runtime per node group of %s: out of memory for %zu runs", process,
                          n);
    /* the distinct groups of this process's runs, first seen first */
    const char *seen[LAB_GRT_MAX * 4];
    int nseen = 0;
    for (size_t i = 0; i < n; i++) {
        if (!usable(v, groups, i, process))
            continue;
        int k = 0;
        while (k < nseen && strcmp(seen[k], groups[i]) != 0)
            k++;
        if (k == nseen && nseen < (int)(sizeof seen / sizeof seen[0]))
            seen[nseen++] = groups[i];
    }
    for (int k = 0; k < nseen; k++) {
        size_t m = 0;
        double sum = 0;
        for (size_t i = 0; i < n; i++)
            if (usable(v, groups, i, process) && strcmp(groups[i], seen[k]) == 0) {
                buf[m++] = v[i].realtime_ms / 1000.0;
                sum += v[i].realtime_ms / 1000.0;
            }
        double mean = sum / (double)m, ss = 0;
        for (size_t i = 0; i < m; i++)
            ss += (buf[i] - mean) * (buf[i] - mean);
        qsort(buf, m, sizeof *buf, cmp_double);
        lab_group_rt g = {.group = seen[k],
                          .runs = (long)m,
                          .mean_s = mean,
                          .stddev_s = m > 1 ? sqrt(ss / (double)(m - 1)) : 0,
                          .p50_s = lab_quantile(buf, m, 0.5),
                          .p90_s = lab_quantile(buf, m, 0.9)};
        if (ng < max)
            out[ng++] = g;
    }
    free(buf);
    qsort(out, (size_t)ng, sizeof *out, cmp_group);
    return ng;
}

/* Seconds to the millisecond: the runs' realtime has no finer resolution. */
static json_t *secs(double s) {
    return json_real(round(s * 1000.0) / 1000.0);
}

json_t *lab_group_runtimes_status(const lab_sample *v, const char *const *groups, size_t n,
                                  const char *process) {
    lab_group_rt g[LAB_GRT_MAX];
    tm_err err = {{0}, 0};
    int ng = lab_group_runtimes(v, groups, n, process, g, LAB_GRT_MAX, &err);
    json_t *arr = json_array();
    for (int k = 0; arr && k < ng; k++)
        json_array_append_new(arr, json_pack("{s:s, s:I, s:o, s:o, s:o, s:o}", "group", g[k].group,
                                             "runs", (json_int_t)g[k].runs, "meanSeconds",
                                             secs(g[k].mean_s), "stddevSeconds",
                                             secs(g[k].stddev_s), "p50Seconds", secs(g[k].p50_s),
                                             "p90Seconds", secs(g[k].p90_s)));
    return arr;
}
