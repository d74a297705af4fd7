/* sizing_bucketing.h: the bucket delimiters of the history strategies of sizing.h, as pure
 * functions of a sorted history, so each one can be checked by hand on a few values.
 *
 * v[0..n-1] are the recorded peaks in increasing order, w[0..n-1] their weights (runtimes;
 * NULL weighs every value 1). Each function writes the delimiters, strictly increasing, into
 * out[0..max-1] and returns how many it wrote (0 for an empty history), or -1 when out of
 * memory. The last delimiter is always the largest value v[n-1]. */
#ifndef TAREMA_LABELER_SIZING_BUCKETING_H
#define TAREMA_LABELER_SIZING_BUCKETING_H

#include <stddef.h>

/* The most delimiters a strategy writes, and the most candidate values exhaustive tries. */
#define SZ_MAX_BUCKETS           64
#define SZ_EXHAUSTIVE_CANDIDATES 256

/* Quantized: bucket i of nb ends at the value at the (i/nb)-th percentile, nearest rank:
 * v[ceil(i * n / nb) - 1]. */
int sz_buckets_quantized(const double *v, size_t n, int nb, double *out, int max);
/* K-means: nb even buckets of the sorted values, then Lloyd iterations (every value to the
 * bucket with the closest mean, ties to the lower one) until no value moves; empty buckets
 * vanish; delimiters are the bucket maxima. */
int sz_buckets_kmeans(const double *v, size_t n, int nb, double *out, int max);
/* Greedy: start from one bucket ending at the maximum; split a bucket at the candidate value
 * that lowers the chain's expected waste most, recursively, while a split lowers it. */
int sz_buckets_greedy(const double *v, const double *w, size_t n, double *out, int max);
/* Exhaustive: the chain of lowest expected waste whose delimiters are among the distinct
 * values (at most SZ_EXHAUSTIVE_CANDIDATES of them, evenly spaced by rank, the maximum always
 * included), by dynamic programming over the last delimiter. */
int sz_buckets_exhaustive(const double *v, const double *w, size_t n, double *out, int max);

/* The expected-waste cost of a chain d[0..k-1] on the history: sum over values of
 * (d_1 + ... + d_{j-1} + d_j - v) x w for the first d_j >= v, with the whole machine as the
 * last resort for values above d[k-1] (divided by the total weight: a mean). */
double sz_chain_cost(const double *v, const double *w, size_t n, const double *d, int k,
                     double machine);

#endif
