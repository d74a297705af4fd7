/* profiler_group_bench.c: how long grouping takes for large clusters (target from issue 3:
 * 5,000 nodes in under 2 s on the development machine). Prints figures; asserts nothing about
 * time. The nodes come from six planted machine types with +-3 % jitter, so k-means and the
 * silhouette do real work for every k in 2..10. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "profiler/grouping.h"
#include "profiler/kmeans.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static prof_profile *make_nodes(size_t n, uint64_t seed) {
    static const double type[6][4] = {{370, 13500, 480, 105},    {465, 17700, 480, 105},
                                      {523, 19850, 480, 105},    {380, 14000, 2500, 9000},
                                      {900, 30000, 9000, 80000}, {300, 9000, 150, 60}};
    prof_profile *p = calloc(n, sizeof *p);
    if (!p)
        return NULL;
    prof_rng r;
    prof_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        const double *t = type[prof_rng_next(&r) % 6];
        double j[6];
        for (int k = 0; k < 6; k++)
            j[k] = 0.97 + 0.06 * prof_rng_uniform(&r);
        snprintf(p[i].node, sizeof p[i].node, "node-%zu", i);
        p[i].cores = 8;
        p[i].memory_bytes = 32LL << 30;
        p[i].cpu_single_eps = t[0] * j[0];
        p[i].cpu_multi_eps = t[0] * 8 * j[1];
        p[i].mem_mibps = t[1] * j[2];
        p[i].seq_read_iops = t[2] * j[3];
        p[i].seq_write_iops = t[2] * j[4];
        p[i].rand_read_iops = t[3] * j[5];
        p[i].rand_write_iops = t[3] * j[0];
    }
    return p;
}

int main(int argc, char **argv) {
    size_t sizes[] = {15, 500, 1000, 2000, 5000};
    size_t nsizes = sizeof sizes / sizeof sizes[0];
    size_t only = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 0;
    int failed = 0;
    for (size_t s = 0; s < nsizes; s++) {
        size_t n = only ? only : sizes[s];
        prof_profile *p = make_nodes(n, 42);
        if (!p) {
            fprintf(stderr, "out of memory for %zu nodes\n", n);
            return 1;
        }
        prof_group_opts o;
        prof_group_opts_default(&o);
        prof_grouping g;
        tm_err err;
        double t0 = now_s();
        int rc = prof_group_nodes(p, n, &o, &g, &err);
        double dt = now_s() - t0;
        if (rc != 0) {
            fprintf(stderr, "grouping %zu nodes failed: %s\n", n, err.msg);
            failed = 1;
        } else {
            printf("profiler_group: %5zu nodes, 4 features, k=2..%d, %d restarts: %.3f s, k=%d "
                   "(silhouette %.3f)\n",
                   n, g.k_tried_max, o.restarts, dt, g.k, g.k >= 2 ? g.silhouette[g.k] : 0.0);
            prof_grouping_free(&g);
        }
        free(p);
        if (only)
            break;
    }
    return failed;
}
