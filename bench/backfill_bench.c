/* backfill_bench.c: planning time of time-aware backfill (scheduler/plugins/backfill/
 * backfill.h) per cycle at scale: NODES nodes of 32 cores running 8 pods of 1-4 cores each with
 * expected ends in the next hour, PENDING pending jobs in queue order (every 100th a wide one:
 * a whole-node pod or a gang of 4 half-node pods, the others 1-2 cores), reserveDepth 0, 1, 10
 * and all (maxJobTest 500). Prints the CPU time of one plan and of the backfill check of 1,000
 * pods on every node (what the Filter plugin adds to a batch), and the shadows found. Then the
 * preemption shape (kube-scheduler's PreemptionBasic): every node full of pods with no known
 * end, and maxJobTest identical jobs of 4 cores none of which can start (preemptors waiting for
 * their victims): the plan tries the first and skips the rest, which ask the same. Nothing is
 * asserted on time.
 *
 *   backfill_bench [NODES [PENDING]]   default 5000 nodes, 10000 pending */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "scheduler/plugins/backfill/backfill.h"

#define S  1000LL
#define T0 1795000000000LL

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}

static sched_resources cpu(int cores) {
    sched_resources r = {0};
    r.v[SCHED_RES_CPU] = cores * 1000LL;
    r.v[SCHED_RES_PODS] = 1;
    return r;
}

int main(int argc, char **argv) {
    long nodes = argc > 1 ? atol(argv[1]) : 5000, pending = argc > 2 ? atol(argv[2]) : 10000;
    if (nodes < 1 || pending < 1) {
        fprintf(stderr, "usage: backfill_bench [NODES [PENDING]]\n");
        return 2;
    }
    sched_resources *alloc = malloc((size_t)nodes * sizeof *alloc);
    bf_running *run = malloc((size_t)nodes * 8 * sizeof *run);
    bf_job *jobs = malloc((size_t)pending * sizeof *jobs);
    sched_resources *req = malloc((size_t)pending * 4 * sizeof *req);
    if (!alloc || !run || !jobs || !req)
        return 1;
    size_t nr = 0;
    for (long n = 0; n < nodes; n++) {
        alloc[n] = cpu(32);
        alloc[n].v[SCHED_RES_PODS] = 110;
        for (int k = 0; k < 8; k++)
            run[nr++] = (bf_running){.node = (int)n,
                                     .req = cpu(1 + (int)(next() % 4)),
                                     .end_ms = T0 + (int64_t)(1 + next() % 3600) * S};
    }
    for (long j = 0; j < pending; j++) {
        bool wide = j % 100 == 0, gang = wide && (j / 100) % 2;
        int members = gang ? 4 : 1;
        for (int m = 0; m < members; m++)
            req[j * 4 + m] = cpu(wide ? (gang ? 16 : 32) : 1 + (int)(next() % 2));
        jobs[j] = (bf_job){.key = NULL,
                           .n_members = (size_t)members,
                           .member_req = &req[j * 4],
                           .runtime_ms = (int64_t)(60 + next() % 1800) * S};
    }
    int depths[4] = {0, 1, 10, BF_DEPTH_ALL};
    printf("backfill: %ld nodes x 32 cores, %zu running pods, %ld pending jobs (1 %% wide)\n",
           nodes, nr, pending);
    printf("%-6s %12s %10s %18s\n", "depth", "plan_cpu_ms", "shadows", "check_1000x_all_ms");
    bf_plan *p = bf_plan_new();
    for (int d = 0; d < 4; d++) {
        bf_config cfg = bf_config_default();
        cfg.reserve_depth = depths[d];
        tm_err err = {0};
        double t0 = cpu_s();
        if (bf_plan_compute(p, &cfg, alloc, (size_t)nodes, run, nr, NULL, 0, jobs, (size_t)pending,
                            T0, &err) != 0) {
            fprintf(stderr, "backfill_bench: %s\n", err.msg);
            return 1;
        }
        double t1 = cpu_s();
        long ok = 0;
        for (long j = 1; j <= 1000 && j < pending; j++)
            for (long n = 0; n < nodes; n++)
                ok += bf_plan_check(p, (int)n, NULL, &req[j * 4], T0 + 600 * S, NULL) == BF_OK;
        double t2 = cpu_s();
        char name[8];
        snprintf(name, sizeof name, "%d", depths[d]);
        printf("%-6s %12.1f %10zu %18.1f\n", depths[d] == BF_DEPTH_ALL ? "all" : name,
               (t1 - t0) * 1000, bf_plan_shadow_count(p), (t2 - t1) * 1000);
        (void)ok;
    }
    /* the preemption shape: the same nodes, each running 32 one-core pods of no known end */
    bf_running *full = malloc((size_t)nodes * sizeof *full);
    if (!full)
        return 1;
    for (long n = 0; n < nodes; n++)
        full[n] = (bf_running){.node = (int)n, .req = cpu(32), .end_ms = -1};
    bf_config cfg = bf_config_default();
    sched_resources r4 = cpu(4);
    for (long j = 0; j < pending; j++)
        jobs[j] = (bf_job){.n_members = 1, .member_req = &r4, .runtime_ms = -1};
    tm_err err = {0};
    double t0 = cpu_s();
    if (bf_plan_compute(p, &cfg, alloc, (size_t)nodes, full, (size_t)nodes, NULL, 0, jobs,
                        (size_t)pending, T0, &err) != 0) {
        fprintf(stderr, "backfill_bench: %s\n", err.msg);
        return 1;
    }
    printf("preemption shape: %ld full nodes, %d identical 4-core jobs tested, none can start: "
           "plan %.1f ms CPU, %zu shadows\n",
           nodes, cfg.max_job_test, (cpu_s() - t0) * 1000, bf_plan_shadow_count(p));
    free(full);
    bf_plan_free(p);
    free(alloc);
    free(run);
    free(jobs);
    free(req);
    return 0;
}
