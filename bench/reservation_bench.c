/* reservation_bench.c: admitting 1,000 reservations against each other (resv_plan.h) on the
 * paper cluster (tarema paper: node groups in 5;4;4;2 proportions) scaled up, with running
 * pods of known and unknown expected ends, under the tarema policy. Each reservation holds
 * 2 to 8 pods of 1 to 4 cpu for 30 minutes to 4 hours starting in the next 6 hours, for one
 * of 20 processes whose task labels are known. Prints the time of the 1,000 admissions and
 * checks the result (no node ever held beyond its capacity); target under 1 s.
 *
 *   reservation_bench [NODES [RESERVATIONS]]   default: 1500 nodes (the paper's 15 x 100),
 *                                              then 150 (x 10, where about half are refused) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/reservation/resv_plan.h"

#define H  (3600LL * 1000)
#define T0 1795000000000LL

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time of this process: on a shared machine the wall time also counts other processes. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void) { /* xorshift64*: deterministic figures run to run */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}

static sched_snapshot *make_cluster(int nodes) {
    sched_snapshot *s = sched_snapshot_new();
    static const int labels[4][3] = {{1, 1, 1}, {2, 2, 3}, {3, 3, 2}, {4, 4, 4}};
    static const char *const keys[3] = {"tarema.io/cpu", "tarema.io/mem", "tarema.io/io"};
    for (int i = 0; i < nodes; i++) {
        char name[64], v[16];
        snprintf(name, sizeof name, "node-%05d", i);
        sched_node *n = sched_node_new(name);
        int g = (i % 15) < 5 ? 0 : (i % 15) < 9 ? 1 : (i % 15) < 13 ? 2 : 3;
        n->ready = true;
        n->allocatable.v[SCHED_RES_CPU] = (4 << g) * 1000LL;
        n->allocatable.v[SCHED_RES_MEMORY] = (16LL << g) << 30;
        n->allocatable.v[SCHED_RES_PODS] = 110;
        sched_node_set_label(n, "kubernetes.io/hostname", name);
        for (int k = 0; k < 3; k++) {
            snprintf(v, sizeof v, "%d", labels[g][k]);
            sched_node_set_label(n, keys[k], v);
        }
        snprintf(v, sizeof v, "g%d", g + 1);
        sched_node_set_label(n, "tarema.io/group", v);
        tm_err err;
        if (sched_snapshot_put_node(s, n, &err) != 0)
            fprintf(stderr, "%s\n", err.msg);
    }
    for (int p = 0; p < 20; p++) {
        char proc[32];
        snprintf(proc, sizeof proc, "proc%02d", p);
        sched_task_profile tp = {.labels = {1 + p % 4, 1 + (p / 4) % 4, 1 + (p / 2) % 4},
                                 .expected_runtime_ms = -1};
        tm_err err;
        sched_snapshot_set_task(s, "", proc, &tp, &err);
    }
    return s;
}

static reservation *make_resv(sched_snapshot *s, int i) {
    char text[1024], st[32], en[32];
    int64_t start = T0 + (int64_t)(next() % (6 * 60)) * 60000;
    int64_t dur = (30 + (int64_t)(next() % 210)) * 60000;
    resv_format_time(start, st, sizeof st);
    resv_format_time(start + dur, en, sizeof en);
    snprintf(text, sizeof text,
             "{\"metadata\":{\"namespace\":\"bench\",\"name\":\"r%04d\"},\"spec\":{"
             "\"startTime\":\"%s\",\"endTime\":\"%s\",\"count\":%d,\"template\":{"
             "\"requests\":{\"cpu\":\"%d\",\"memory\":\"2Gi\"},\"labels\":{"
             "\"nextflow.io/processName\":\"proc%02d\"}},\"owner\":{\"kind\":\"PodGroup\","
             "\"name\":\"g%04d\"}}}",
             i, st, en, 2 + (int)(next() % 7), 1 + (int)(next() % 4), (int)(next() % 20), i);
    json_t *j = json_loads(text, 0, NULL);
    tm_err err = {0};
    reservation *r = j ? reservation_from_json(s, j, &err) : NULL;
    if (!r)
        fprintf(stderr, "reservation %d: %s\n", i, err.msg);
    json_decref(j);
    return r;
}

static int run(int nodes, int count) {
    sched_snapshot *s = make_cluster(nodes);
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("tarema", &err);
    resv_plan *plan = resv_plan_new();
    /* running pods: two per node, half with a known end in the next 12 hours */
    size_t n_pods = (size_t)nodes * 2;
    resv_running *pods = calloc(n_pods, sizeof *pods);
    for (size_t i = 0; i < n_pods; i++) {
        pods[i].node = sched_snapshot_node(s, i / 2)->name;
        pods[i].req.v[SCHED_RES_CPU] = 1000;
        pods[i].req.v[SCHED_RES_MEMORY] = 1LL << 30;
        pods[i].req.v[SCHED_RES_PODS] = 1;
        pods[i].end_ms = i % 2 ? T0 + (int64_t)(next() % (12 * 60)) * 60000 : -1;
    }
    reservation **rs = calloc((size_t)count, sizeof *rs);
    resv_admission *outs = calloc((size_t)count, sizeof *outs);
    int admitted = 0, refused = 0, errors = 0, n = 0;
    for (int i = 0; i < count; i++)
        if (!(rs[n] = make_resv(s, i)))
            errors++;
        else
            n++;
    /* one batch, in order, each against those admitted before it (as the controller does with
     * the pending reservations of a tick) */
    double t0 = now_s(), c0 = cpu_s();
    if (resv_plan_admit_batch(plan, fw, s, (const reservation *const *)rs, (size_t)n, NULL, pods,
                              n_pods, T0, outs, &err)) {
        fprintf(stderr, "admission: %s\n", err.msg);
        errors++;
    }
    double dt = now_s() - t0, dc = cpu_s() - c0;
    for (int i = 0; i < n; i++) {
        if (outs[i].ok)
            admitted++;
        else
            refused++;
        resv_admission_clear(&outs[i]);
    }
    free(outs);
    /* check: at no moment does any node hold more than its allocatable minus the pods that run
     * then (peak of the holds over the day + the pods of unknown end) */
    int over = 0;
    for (int i = 0; i < nodes; i++) {
        const sched_node *nd = sched_snapshot_node(s, (size_t)i);
        sched_resources peak;
        resv_plan_peak(plan, nd->name, T0, T0 + 30 * H, NULL, &peak);
        if (peak.v[SCHED_RES_CPU] + 1000 > nd->allocatable.v[SCHED_RES_CPU])
            over++;
    }
    printf("reservations=%d nodes=%d running_pods=%zu admitted=%d refused=%d errors=%d "
           "seconds=%.3f cpu_seconds=%.3f ms_per_admission=%.3f overbooked_nodes=%d (target: "
           "under 1 s)\n",
           count, nodes, n_pods, admitted, refused, errors, dt, dc, dt * 1000 / count, over);
    for (int i = 0; i < n; i++)
        reservation_free(rs[i]);
    free(rs);
    free(pods);
    resv_plan_free(plan);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    return errors || over ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        return run(atoi(argv[1]), argc > 2 ? atoi(argv[2]) : 1000);
    /* the paper cluster x 100 (room for all) and x 10 (about half refused: contention) */
    return run(1500, 1000) | run(150, 1000);
}
