/* kmeans.h: k-means++ clustering with restarts, and the seeded random generator it draws from.
 *
 * Pure computation (no I/O, no global state): the caller owns the generator, so a grouping is
 * reproducible from its seed and two callers never share a random stream. Points are n rows of
 * d doubles, row-major. */
#ifndef TAREMA_PROFILER_KMEANS_H
#define TAREMA_PROFILER_KMEANS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

/* splitmix64-seeded xorshift64*: tiny, fast and good enough for seeding and D^2 sampling. */
typedef struct prof_rng {
    uint64_t state;
} prof_rng;

void prof_rng_seed(prof_rng *rng, uint64_t seed);
uint64_t prof_rng_next(prof_rng *rng);
double prof_rng_uniform(prof_rng *rng); /* in [0, 1) */

typedef struct prof_kmeans_result {
    int k;
    int *assign;       /* n cluster indices in 0..k-1 */
    double *centroids; /* k rows of d */
    double inertia;    /* sum of squared distances to the assigned centroid */
    int iterations;    /* Lloyd iterations of the kept restart */
} prof_kmeans_result;

/* Clusters x into k groups: k-means++ seeding, Lloyd iterations until no point moves (at most
 * max_iter), `restarts` independent runs, keeping the one with the lowest inertia.
 * Returns 0 on success; 1 when x has fewer than k distinct points (no k non-empty clusters
 * exist; *out is left empty); -1 on bad arguments or memory exhaustion with err set.
 * On 0 the caller frees *out with prof_kmeans_result_free. */
int prof_kmeans(const double *x, size_t n, size_t d, int k, int restarts, int max_iter,
                prof_rng *rng, prof_kmeans_result *out, tm_err *err);
void prof_kmeans_result_free(prof_kmeans_result *r);

/* Squared Euclidean distance of two d-vectors. */
double prof_dist2(const double *a, const double *b, size_t d);

/* Per-cluster means of the n rows of x (n x d) into means (k x d), and the cluster sizes into
 * count (k). assign[i] must be in 0..k-1. An empty cluster's mean row is left all zero. */
void prof_cluster_means(const double *x, size_t n, size_t d, const int *assign, int k,
                        double *means, size_t *count);

#endif
