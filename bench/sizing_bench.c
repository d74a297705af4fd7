/* sizing_bench.c: how fast the sizing strategies answer (labeler/sizing.h): 100,000 tasks
 * spread over 100 processes (a key each, the webhook's case: one allocation, then the finished
 * task's record, so every allocation recomputes the buckets). Prints allocations per second
 * per strategy; asserts nothing about time, exits non-zero only when an allocation is out of
 * range.
 *
 *   sizing_bench [tasks [keys]]   defaults 100000 100 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "labeler/sizing.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    long tasks = argc > 1 ? atol(argv[1]) : 100000;
    int keys = argc > 2 ? atoi(argv[2]) : 100;
    if (tasks < 1 || keys < 1) {
        fprintf(stderr, "usage: sizing_bench [tasks [keys]]\n");
        return 2;
    }
    const double machine = 64.0 * 1073741824.0;
    sz_alloc **a = calloc((size_t)keys, sizeof *a);
    if (!a)
        return 1;
    int bad = 0;
    printf("%ld tasks over %d keys, memory of a 64 GiB machine\n", tasks, keys);
    printf("%-14s %14s %12s\n", "strategy", "allocations/s", "seconds");
    for (int s = 0; s < SZ_NSTRATEGIES; s++) {
        for (int k = 0; k < keys; k++) {
            sz_config c;
            sz_config_default(&c, (sz_strategy)s, machine);
            c.buckets = 3;
            c.declared = machine / 4;
            a[k] = sz_alloc_new(&c, NULL);
        }
        unsigned x = 12345;
        double t0 = now_s();
        for (long i = 0; i < tasks; i++) {
            x = x * 1103515245u + 12345u;
            int k = (int)(x >> 8) % keys;
            /* three modes per key, so the buckets have something to find */
            double peak = (double)((x >> 4) % 1000 + 1000 * ((x >> 20) % 3) + 100) * 1048576.0;
            double alloc = sz_alloc_first(a[k]);
            while (alloc < peak) {
                double next = sz_alloc_retry(a[k], alloc);
                if (!(next > alloc)) {
                    bad = 1;
                    break;
                }
                alloc = next;
            }
            if (!(alloc > 0 && alloc <= machine))
                bad = 1;
            sz_alloc_record(a[k], peak, 1 + (double)(x % 100), true);
        }
        double dt = now_s() - t0;
        printf("%-14s %14.0f %12.3f\n", sz_strategy_name((sz_strategy)s), (double)tasks / dt, dt);
        for (int k = 0; k < keys; k++)
            sz_alloc_free(a[k]);
    }
    free(a);
    return bad;
}
