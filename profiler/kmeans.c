/* kmeans.c: k-means++ (Arthur & Vassilvitskii 2007) with Lloyd iterations and restarts. */
#include "profiler/kmeans.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void prof_rng_seed(prof_rng *rng, uint64_t seed) {
    /* splitmix64 spreads nearby seeds (0, 1, 2...) over the whole state space and never
     * leaves the xorshift state at zero, which would be a fixed point. */
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    rng->state = z ? z : 0x2545F4914F6CDD1DULL;
}

uint64_t prof_rng_next(prof_rng *rng) {
    uint64_t x = rng->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng->state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

double prof_rng_uniform(prof_rng *rng) {
    return (double)(prof_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

double prof_dist2(const double *a, const double *b, size_t d) {
    double s = 0;
    for (size_t j = 0; j < d; j++) {
        double t = a[j] - b[j];
        s += t * t;
    }
    return s;
}

void prof_cluster_means(const double *x, size_t n, size_t d, const int *assign, int k,
                        double *means, size_t *count) {
    memset(means, 0, (size_t)k * d * sizeof *means);
    memset(count, 0, (size_t)k * sizeof *count);
    for (size_t i = 0; i < n; i++) {
        count[assign[i]]++;
        for (size_t j = 0; j < d; j++)
            means[(size_t)assign[i] * d + j] += x[i * d + j];
    }
    for (int c = 0; c < k; c++)
        for (size_t j = 0; j < d && count[c]; j++)
            means[(size_t)c * d + j] /= (double)count[c];
}

void prof_kmeans_result_free(prof_kmeans_result *r) {
    if (!r)
        return;
    free(r->assign);
    free(r->centroids);
    memset(r, 0, sizeof *r);
}

/* Whether x has at least k distinct rows: k-means needs no more than that. Compares each row
 * only with the distinct rows found so far, so the cost is O(n k). */
static int has_k_distinct(const double *x, size_t n, size_t d, int k) {
    size_t *rep = malloc((size_t)k * sizeof *rep);
    if (!rep)
        return 1; /* let the caller's allocations report the memory problem */
    int found = 0;
    for (size_t i = 0; i < n && found < k; i++) {
        int seen = 0;
        for (int j = 0; j < found && !seen; j++)
            seen = memcmp(x + i * d, x + rep[j] * d, d * sizeof *x) == 0;
        if (!seen)
            rep[found++] = i;
    }
    free(rep);
    return found >= k;
}

/* k-means++ seeding: the first centre uniformly, each next one with probability proportional
 * to the squared distance to the nearest centre chosen so far. mind holds n scratch values. */
static void seed_centres(const double *x, size_t n, size_t d, int k, prof_rng *rng, double *cent,
                         double *mind) {
    size_t first = (size_t)(prof_rng_uniform(rng) * (double)n);
    memcpy(cent, x + first * d, d * sizeof *x);
    for (size_t i = 0; i < n; i++)
        mind[i] = prof_dist2(x + i * d, cent, d);
    for (int c = 1; c < k; c++) {
        double total = 0;
        for (size_t i = 0; i < n; i++)
            total += mind[i];
        size_t pick = n - 1;
        if (total > 0) {
            double r = prof_rng_uniform(rng) * total;
            /* Rounding can leave r >= 0 after the last point; the fallback is then the last
             * point with a positive weight, never one that coincides with a chosen centre. */
            size_t last = n - 1;
            for (size_t i = 0; i < n; i++) {
                if (mind[i] > 0)
                    last = i;
                r -= mind[i];
                if (r < 0 && mind[i] > 0)
                    break;
            }
            pick = last;
        } else {
            pick = (size_t)(prof_rng_uniform(rng) * (double)n);
        }
        double *cc = cent + (size_t)c * d;
        memcpy(cc, x + pick * d, d * sizeof *x);
        for (size_t i = 0; i < n; i++) {
            double t = prof_dist2(x + i * d, cc, d);
            if (t < mind[i])
                mind[i] = t;
        }
    }
}

/* Assigns every point to its nearest centre; returns how many points changed cluster. */
static size_t assign_points(const double *x, size_t n, size_t d, int k, const double *cent,
                            int *assign, double *inertia) {
    size_t moved = 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        int best = 0;
        double bd = DBL_MAX;
        for (int c = 0; c < k; c++) {
            double t = prof_dist2(x + i * d, cent + (size_t)c * d, d);
            if (t < bd) {
                bd = t;
                best = c;
            }
        }
        if (assign[i] != best)
            moved++;
        assign[i] = best;
        sum += bd;
    }
    *inertia = sum;
    return moved;
}

/* Recomputes centres as means. An emptied cluster takes the point farthest from its own
 * centre, so every run ends with k non-empty clusters (possible because the caller checked
 * that at least k distinct points exist). */
static void update_centres(const double *x, size_t n, size_t d, int k, double *cent, int *assign,
                           size_t *count) {
    prof_cluster_means(x, n, d, assign, k, cent, count);
    for (int c = 0; c < k; c++) {
        if (count[c] > 0)
            continue;
        size_t far = 0;
        double fd = -1;
        for (size_t i = 0; i < n; i++) {
            if (count[assign[i]] < 2)
                continue;
            double t = prof_dist2(x + i * d, cent + (size_t)assign[i] * d, d);
            if (t > fd) {
                fd = t;
                far = i;
            }
        }
        count[assign[far]]--;
        assign[far] = c;
        count[c] = 1;
        memcpy(cent + (size_t)c * d, x + far * d, d * sizeof *x);
    }
}

int prof_kmeans(const double *x, size_t n, size_t d, int k, int restarts, int max_iter,
                prof_rng *rng, prof_kmeans_result *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    if (!x || n == 0 || d == 0 || k < 1 || (size_t)k > n)
        return tm_err_set(err, "k-means: need 1 <= k <= n points (k=%d, n=%zu, d=%zu)", k, n, d);
    if (restarts < 1)
        restarts = 1;
    if (max_iter < 1)
        max_iter = 1;
    if (!has_k_distinct(x, n, d, k))
        return 1;
    int *assign = malloc(n * sizeof *assign);
    double *cent = malloc((size_t)k * d * sizeof *cent);
    double *mind = malloc(n * sizeof *mind);
    size_t *count = malloc((size_t)k * sizeof *count);
    out->assign = malloc(n * sizeof *out->assign);
    out->centroids = malloc((size_t)k * d * sizeof *out->centroids);
    if (!assign || !cent || !mind || !count || !out->assign || !out->centroids) {
        free(assign), free(cent), free(mind), free(count);
        prof_kmeans_result_free(out);
        return tm_err_set(err, "k-means: out of memory for %zu points", n);
    }
    out->k = k;
    out->inertia = DBL_MAX;
    for (int r = 0; r < restarts; r++) {
        seed_centres(x, n, d, k, rng, cent, mind);
        for (size_t i = 0; i < n; i++)
            assign[i] = -1;
        double inertia = 0;
        int it = 0;
        while (it < max_iter) {
            it++;
            if (assign_points(x, n, d, k, cent, assign, &inertia) == 0)
                break;
            update_centres(x, n, d, k, cent, assign, count);
        }
        /* Recompute inertia against the final centres (update_centres may have moved them). */
        assign_points(x, n, d, k, cent, assign, &inertia);
        if (inertia < out->inertia) {
            out->inertia = inertia;
            out->iterations = it;
            memcpy(out->assign, assign, n * sizeof *assign);
            memcpy(out->centroids, cent, (size_t)k * d * sizeof *cent);
        }
    }
    free(assign), free(cent), free(mind), free(count);
    return 0;
}
