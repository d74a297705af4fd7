/* labels.c: see labels.h. */
#include "labeler/labels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const feature_names[LAB_NFEATURES] = {"cpu", "mem", "io"};

const char *lab_feature_name(lab_feature f) {
    return f < LAB_NFEATURES ? feature_names[f] : "?";
}

int lab_feature_parse(const char *name, lab_feature *f, tm_err *err) {
    for (int i = 0; i < LAB_NFEATURES; i++) {
        if (strcmp(name, feature_names[i]) == 0) {
            *f = (lab_feature)i;
            return 0;
        }
    }
    return tm_err_set(err, "unknown feature '%s' (use cpu, mem or io)", name);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double lab_quantile(const double *sorted, size_t n, double p) {
    if (p <= 0)
        return sorted[0];
    if (p >= 1)
        return sorted[n - 1];
    double h = (double)(n - 1) * p;
    /* Core shares like 1/3 + 1/3 land a hair off an order statistic; snap so that a bound
     * which is mathematically a sample value is exactly that value. */
    double r = nearbyint(h);
    if (fabs(h - r) < 1e-9)
        h = r;
    size_t lo = (size_t)floor(h);
    if (lo + 1 >= n)
        return sorted[n - 1];
    double frac = h - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

int lab_bounds(double *values, size_t nvalues, const lab_classes *cls, double *bounds,
               tm_err *err) {
    if (cls->n < 1 || cls->n > LAB_MAX_CLASSES)
        return tm_err_set(err, "%d node groups: need 1 to %d", cls->n, LAB_MAX_CLASSES);
    if (nvalues == 0)
        return tm_err_set(err, "no task-run values to take percentiles of");
    double total = 0;
    for (int i = 0; i < cls->n; i++) {
        if (!(cls->cores[i] > 0) || !isfinite(cls->cores[i]))
            return tm_err_set(err, "node group %d has %g cores; every group needs cores > 0", i + 1,
                              cls->cores[i]);
        total += cls->cores[i];
    }
    qsort(values, nvalues, sizeof *values, cmp_double);
    double cum = 0;
    for (int i = 0; i < cls->n - 1; i++) {
        cum += cls->cores[i];
        bounds[i] = lab_quantile(values, nvalues, cum / total);
    }
    return cls->n - 1;
}

int lab_label(double estimate, const double *bounds, int nbounds) {
    int label = 1;
    for (int i = 0; i < nbounds; i++)
        if (bounds[i] <= estimate)
            label++;
    return label;
}

static int cmp_sample_ptr(const void *a, const void *b) {
    const lab_sample *x = *(const lab_sample *const *)a, *y = *(const lab_sample *const *)b;
    return strcmp(x->process, y->process);
}

/* Groups samples by process into l->procs with counts and means. */
static int aggregate(lab_labeling *l, const lab_sample *samples, size_t n, tm_err *err) {
    const lab_sample **order = malloc((n ? n : 1) * sizeof *order);
    l->procs = calloc(n ? n : 1, sizeof *l->procs);
    if (!order || !l->procs) {
        free(order);
        return tm_err_set(err, "out of memory for %zu samples", n);
    }
    for (size_t i = 0; i < n; i++)
        order[i] = &samples[i];
    qsort(order, n, sizeof *order, cmp_sample_ptr);
    lab_process_label *cur = NULL;
    double sum[LAB_NFEATURES], rt_sum = 0;
    long rt_n = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || !cur || strcmp(cur->process, order[i]->process) != 0) {
            if (cur) {
                for (int f = 0; f < LAB_NFEATURES; f++)
                    cur->mean[f] = cur->nvalues[f] ? sum[f] / (double)cur->nvalues[f] : NAN;
                cur->mean_realtime_ms = rt_n ? rt_sum / (double)rt_n : NAN;
            }
            if (i == n)
                break;
            cur = &l->procs[l->nprocs++];
            cur->process = strdup(order[i]->process);
            if (!cur->process) {
                free(order);
                return tm_err_set(err, "out of memory");
            }
            memset(sum, 0, sizeof sum);
            rt_sum = 0, rt_n = 0;
        }
        cur->runs++;
        for (int f = 0; f < LAB_NFEATURES; f++) {
            if (!isnan(order[i]->value[f])) {
                sum[f] += order[i]->value[f];
                cur->nvalues[f]++;
            }
        }
        if (!isnan(order[i]->realtime_ms))
            rt_sum += order[i]->realtime_ms, rt_n++;
    }
    free(order);
    return 0;
}

lab_labeling *lab_label_compute(const lab_sample *samples, size_t n,
                                const lab_classes classes[LAB_NFEATURES], tm_err *err) {
    lab_labeling *l = calloc(1, sizeof *l);
    double *vals = malloc((n ? n : 1) * sizeof *vals);
    if (!l || !vals) {
        free(l);
        free(vals);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    if (aggregate(l, samples, n, err) < 0)
        goto fail;
    for (int f = 0; f < LAB_NFEATURES; f++) {
        l->classes[f] = classes[f];
        size_t nv = 0;
        for (size_t i = 0; i < n; i++)
            if (!isnan(samples[i].value[f]))
                vals[nv++] = samples[i].value[f];
        l->nvalues[f] = (long)nv;
        l->nbounds[f] = -1;
        if (nv == 0)
            continue; /* nobody has this metric: every process stays unlabeled for it */
        l->nbounds[f] = lab_bounds(vals, nv, &classes[f], l->bounds[f], err);
        if (l->nbounds[f] < 0) {
            tm_err_wrap(err, "feature %s", lab_feature_name((lab_feature)f));
            goto fail;
        }
        for (size_t p = 0; p < l->nprocs; p++) {
            lab_process_label *pl = &l->procs[p];
            pl->label[f] = pl->nvalues[f] ? lab_label(pl->mean[f], l->bounds[f], l->nbounds[f]) : 0;
        }
    }
    free(vals);
    return l;
fail:
    free(vals);
    lab_labeling_free(l);
    return NULL;
}

void lab_labeling_free(lab_labeling *l) {
    if (!l)
        return;
    for (size_t i = 0; i < l->nprocs; i++)
        free(l->procs[i].process);
    free(l->procs);
    free(l);
}
