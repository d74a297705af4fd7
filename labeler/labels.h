/* labels.h: the percentile task labels of the tarema paper (section IV-C). Pure policy code:
 * no I/O, no locks, shared by the labeler and the simulator.
 *
 * For one workflow and one feature (cpu from %cpu, mem from peak_rss, io from rchar+wchar):
 * the node classes c_1..c_n are sorted ascending by that feature, m_i is the total cores of
 * class i, p_i = (m_1 + ... + m_i) / sum(m) for i = 1..n-1. The interval bounds are the values
 * of the workflow's sorted task-run samples at the quantiles p_1..p_{n-1}, with linear
 * interpolation between order statistics (h = (N-1) p, as R's type 7). A process's estimate is
 * the mean of its own samples, and its label is 1 + the number of bounds <= the estimate, so a
 * process exactly on a bound goes to the upper interval ([v_{p_i}, v_{p_{i+1}}[ in the paper).
 * A process without samples for a feature stays unlabeled (label 0). */
#ifndef TAREMA_LABELER_LABELS_H
#define TAREMA_LABELER_LABELS_H

#include <stddef.h>

#include "lib/error.h"

typedef enum { LAB_CPU = 0, LAB_MEM, LAB_IO, LAB_NFEATURES } lab_feature;

#define LAB_MAX_CLASSES 64

/* "cpu", "mem", "io". */
const char *lab_feature_name(lab_feature f);
/* Returns 0 and sets *f for a known name, else -1 with err listing the names. */
int lab_feature_parse(const char *name, lab_feature *f, tm_err *err);

/* Node classes for one feature, weakest first: cores[i] is the total cores of class i. */
typedef struct lab_classes {
    int n;
    double cores[LAB_MAX_CLASSES];
} lab_classes;

/* The quantile p (0..1) of sorted[0..n-1] with linear interpolation; n must be > 0. */
double lab_quantile(const double *sorted, size_t n, double p);

/* Sorts values in place and writes the n-1 interval bounds for the classes into bounds
 * (room for LAB_MAX_CLASSES). Returns the number of bounds, or -1 with err when there are no
 * values, no classes or a class without cores. */
int lab_bounds(double *values, size_t nvalues, const lab_classes *cls, double *bounds, tm_err *err);

/* 1 + the number of bounds at or below estimate. */
int lab_label(double estimate, const double *bounds, int nbounds);

/* One completed task run: its process and feature values (NAN where unknown). */
typedef struct lab_sample {
    const char *process; /* borrowed */
    double value[LAB_NFEATURES];
    double realtime_ms; /* NAN when unknown */
} lab_sample;

typedef struct lab_process_label {
    char *process;
    long runs;                   /* samples of this process */
    long nvalues[LAB_NFEATURES]; /* samples with a value for the feature */
    double mean[LAB_NFEATURES];  /* the estimate; NAN when nvalues is 0 */
    double mean_realtime_ms;     /* NAN when unknown */
    int label[LAB_NFEATURES];    /* 1..n, 0 = unlabeled */
} lab_process_label;

typedef struct lab_labeling {
    lab_classes classes[LAB_NFEATURES];
    long nvalues[LAB_NFEATURES]; /* workflow samples with a value for the feature */
    int nbounds[LAB_NFEATURES];  /* -1 when the feature has no samples */
    double bounds[LAB_NFEATURES][LAB_MAX_CLASSES];
    size_t nprocs;
    lab_process_label *procs; /* sorted by process name */
} lab_labeling;

/* Labels every process of a workflow's samples. classes[f] are the node classes for feature
 * f. Returns a new labeling (free with lab_labeling_free) or NULL with err. */
lab_labeling *lab_label_compute(const lab_sample *samples, size_t n,
                                const lab_classes classes[LAB_NFEATURES], tm_err *err);
void lab_labeling_free(lab_labeling *l);

#endif
