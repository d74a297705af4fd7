/* silhouette.h: mean silhouette coefficient (Rousseeuw 1987) of one or several clusterings of
 * the same points, the control function that picks the number of node groups.
 *
 * Pure computation. Several clusterings are scored in one O(n^2 d) pass, because the pairwise
 * distances do not depend on the clustering: choosing k over 2..10 for 5,000 nodes costs one
 * distance matrix walk instead of nine. */
#ifndef TAREMA_PROFILER_SILHOUETTE_H
#define TAREMA_PROFILER_SILHOUETTE_H

#include <stddef.h>

#include "lib/error.h"

/* Scores m clusterings: assign[c] holds n cluster indices in 0..k[c]-1 for clustering c.
 * out[c] gets the mean over all points of s(i) = (b - a) / max(a, b), where a is the mean
 * distance to the other members of i's cluster and b the smallest mean distance to another
 * cluster; s(i) = 0 for a point alone in its cluster, and when a = b = 0. Empty clusters are
 * ignored. Returns 0, or -1 with err on bad arguments or memory exhaustion. */
int prof_silhouette_multi(const double *x, size_t n, size_t d, const int *const *assign,
                          const int *k, size_t m, double *out, tm_err *err);

/* One clustering; returns the mean silhouette, or NAN with err set. */
double prof_silhouette(const double *x, size_t n, size_t d, const int *assign, int k, tm_err *err);

#endif
