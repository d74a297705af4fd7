/* scheduler_policy_bench.c: scheduling decisions per second of the pure policy code (filter
 * every node, score, select, reserve) on synthetic heterogeneous clusters of 500 and 5,000
 * nodes with 5,000 and 10,000 pods, the sizes of the live benchmark. Plain pods first; then
 * pods using the inter-pod filters (every pod labelled, one in ten with required hostname
 * anti-affinity against its service, one in ten with a zone spread constraint), which every
 * later pod must check (the symmetry rule). Prints figures only.
 *
 *   scheduler_policy_bench                                   every case
 *   scheduler_policy_bench POLICY|inter-pod [NODES [PODS]]   one case (for perf record)
 *   scheduler_policy_bench timing [NODES [PODS]]             the cost of kube-scheduler's
 *       framework timings (fw_metrics.h): the tarema policy without an observer, then with the
 *       live recorder at pluginMetricsSamplePercent 0, 10 and 100 (flushed every 64 pods, the
 *       live loop's batch), plain and inter-pod pods */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/backend/snapshot.h"
#include "scheduler/live/fw_metrics.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This thread's CPU time: steadier than the wall clock on a machine shared with others. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Four node groups (paper cluster 5;4;4;2 proportions), every 10th node tainted, every 50th
 * unprofiled; labels like a real cluster (hostname, zone, instance type). */
static sched_snapshot *make_cluster(int nodes) {
    sched_snapshot *s = sched_snapshot_new();
    static const int labels[4][3] = {{1, 1, 1}, {2, 2, 3}, {3, 3, 2}, {4, 4, 4}};
    for (int i = 0; i < nodes; i++) {
        char name[64], v[16];
        snprintf(name, sizeof name, "node-%05d", i);
        sched_node *n = sched_node_new(name);
        int g = (i % 15) < 5 ? 0 : (i % 15) < 9 ? 1 : (i % 15) < 13 ? 2 : 3;
        n->allocatable.v[SCHED_RES_CPU] = (4 << g) * 1000LL;
        n->allocatable.v[SCHED_RES_MEMORY] = (16LL << g) << 30;
        n->allocatable.v[SCHED_RES_EPHEMERAL] = 100LL << 30;
        n->allocatable.v[SCHED_RES_PODS] = 110;
        sched_node_set_label(n, "kubernetes.io/hostname", name);
        sched_node_set_label(n, "topology.kubernetes.io/zone", i % 3 ? "zone-a" : "zone-b");
        sched_node_set_label(n, "node.kubernetes.io/instance-type", g ? "large" : "small");
        if (i % 50 != 7) {
            for (int k = 0; k < 3; k++) {
                static const char *const keys[3] = {"tarema.io/cpu", "tarema.io/mem",
                                                    "tarema.io/io"};
                snprintf(v, sizeof v, "%d", labels[g][k]);
                sched_node_set_label(n, keys[k], v);
            }
            snprintf(v, sizeof v, "g%d", g + 1);
            sched_node_set_label(n, "tarema.io/group", v);
        }
        if (i % 10 == 3)
            sched_node_add_taint(n, "dedicated", "batch", SCHED_EFFECT_NO_SCHEDULE);
        tm_err err;
        if (sched_snapshot_put_node(s, n, &err) != 0)
            fprintf(stderr, "%s\n", err.msg);
    }
    return s;
}

/* Schedules and reserves every pod in order, prints the figures, frees pods, framework and
 * snapshot. label prefixes the line ("" or "inter-pod "). */
/* The timing case's sample percent: -1 = no observer at all (the other cases). */
static int timing_percent = -1;

static void time_stream(const char *label, const char *policy, int nodes, sched_framework *fw,
                        sched_snapshot *s, sched_pod **ps, int pods) {
    tm_err err = {0};
    int placed = 0;
    tm_metrics *reg = NULL;
    sched_fw_metrics *m = NULL;
    sched_fw_recorder *r = NULL;
    if (timing_percent >= 0) {
        reg = tm_metrics_new();
        m = reg ? sched_fw_metrics_new(reg, "tarema", timing_percent, &err) : NULL;
        r = m ? sched_fw_recorder_new(m) : NULL;
        if (!r)
            fprintf(stderr, "timing setup: %s\n", err.msg);
        sched_framework_set_observer(fw, sched_fw_recorder_observer(r));
    }
    double t0 = now_s(), c0 = cpu_s();
    for (int i = 0; i < pods; i++) {
        sched_decision d;
        if (r) {
            sched_framework_sample(fw, sched_fw_metrics_sample(m));
            if ((i & 63) == 63)
                sched_fw_recorder_flush(r);
        }
        if (ps[i] && sched_framework_schedule(fw, s, ps[i], 0, &d, &err) == 0 && d.node >= 0 &&
            sched_framework_reserve(fw, s, ps[i], d.node, &err) == 0)
            placed++;
    }
    sched_fw_recorder_flush(r);
    double dt = now_s() - t0, dc = cpu_s() - c0;
    char timing[48] = "";
    if (timing_percent >= 0)
        snprintf(timing, sizeof timing, "sample=%d%% ", timing_percent);
    printf("%s%spolicy=%-11s nodes=%5d pods=%6d placed=%6d seconds=%.3f decisions_per_s=%.0f "
           "us_per_decision=%.1f cpu_us_per_decision=%.1f\n",
           label, timing, policy, nodes, pods, placed, dt, pods / dt, dt * 1e6 / pods,
           dc * 1e6 / pods);
    sched_fw_recorder_free(r);
    sched_fw_metrics_free(m);
    tm_metrics_free(reg);
    for (int i = 0; i < pods; i++)
        sched_pod_free(ps[i]);
    free(ps);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void run(const char *policy, int nodes, int pods) {
    sched_snapshot *s = make_cluster(nodes);
    tm_err err = {0};
    for (int t = 0; t < 20; t++) { /* 20 processes, 2 of them unlabeled */
        char proc[32];
        snprintf(proc, sizeof proc, "PROC_%d", t);
        sched_task_profile tp = {.labels = {1 + t % 4, 1 + (t / 2) % 4, 1 + (t / 3) % 4},
                                 .expected_runtime_ms = 1000 * (t + 1)};
        if (t < 18)
            sched_snapshot_set_task(s, "wf", proc, &tp, &err);
    }
    sched_framework *fw = sched_policy_new(policy, &err);
    sched_pod **ps = calloc((size_t)pods, sizeof *ps);
    for (int i = 0; i < pods; i++) {
        char name[32];
        snprintf(name, sizeof name, "pod-%06d", i);
        ps[i] = sched_pod_new("bench", name, name);
        ps[i]->requests.v[SCHED_RES_CPU] = 100 + (i % 8) * 50;
        ps[i]->requests.v[SCHED_RES_MEMORY] = (256LL + (i % 4) * 256) << 20;
        free(ps[i]->workflow);
        free(ps[i]->process);
        ps[i]->workflow = strdup("wf");
        ps[i]->process = malloc(32);
        snprintf(ps[i]->process, 32, "PROC_%d", i % 20);
    }
    time_stream("", policy, nodes, fw, s, ps, pods);
}

/* Pod i of the inter-pod case, from JSON like the live scheduler's pods. */
static sched_pod *interpod_pod(sched_snapshot *s, int i) {
    char text[1024], extra[512] = "";
    int svc = i % 100;
    if (i % 10 == 0)
        snprintf(extra, sizeof extra,
                 ",\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
                 "Execution\":[{\"labelSelector\":{\"matchLabels\":{\"app\":\"svc-%d\"}},"
                 "\"topologyKey\":\"kubernetes.io/hostname\"}]}}",
                 svc);
    else if (i % 10 == 5)
        snprintf(extra, sizeof extra,
                 ",\"topologySpreadConstraints\":[{\"maxSkew\":5,\"topologyKey\":"
                 "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"DoNotSchedule\","
                 "\"labelSelector\":{\"matchLabels\":{\"app\":\"svc-%d\"}}}]",
                 svc);
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"pod-%06d\",\"namespace\":\"bench\",\"uid\":"
             "\"pod-%06d\",\"labels\":{\"app\":\"svc-%d\",\"nextflow.io/processName\":"
             "\"PROC_%d\",\"tarema.io/workflow\":\"wf\"}},\"spec\":{\"containers\":[{"
             "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%dm\",\"memory\":"
             "\"%dMi\"}}}]%s}}",
             i, i, svc, i % 20, 100 + (i % 8) * 50, 256 + (i % 4) * 256, extra);
    json_t *j = json_loads(text, 0, NULL);
    tm_err err;
    sched_pod *p = j ? sched_pod_from_json(s, j, NULL, &err) : NULL;
    if (j && !p)
        fprintf(stderr, "%s\n", err.msg);
    json_decref(j);
    return p;
}

static void run_interpod(const char *policy, int nodes, int pods) {
    sched_snapshot *s = make_cluster(nodes);
    tm_err err = {0};
    sched_framework *fw = sched_policy_new(policy, &err);
    sched_pod **ps = calloc((size_t)pods, sizeof *ps);
    for (int i = 0; i < pods; i++)
        ps[i] = interpod_pod(s, i);
    time_stream("inter-pod ", policy, nodes, fw, s, ps, pods);
}

int main(int argc, char **argv) {
    static const char *const policies[] = {"tarema", "fair", "round-robin", "fill-nodes", "sjfn"};
    if (argc > 1) { /* one case, for profiling: POLICY|inter-pod [NODES [PODS]] */
        int nodes = argc > 2 ? atoi(argv[2]) : 5000, pods = argc > 3 ? atoi(argv[3]) : 10000;
        if (nodes < 1 || pods < 1) {
            fprintf(stderr, "usage: %s [POLICY|inter-pod [NODES [PODS]]]\n", argv[0]);
            return 2;
        }
        if (strcmp(argv[1], "timing") == 0) {
            static const int percents[] = {-1, 0, 10, 100};
            /* TIMING_CASES=plain: the plain pods only (for perf record) */
            const char *only = getenv("TIMING_CASES");
            int cases = only && strcmp(only, "plain") == 0 ? 1 : 2;
            for (int inter = 0; inter < cases; inter++)
                for (size_t k = 0; k < 4; k++) {
                    timing_percent = percents[k];
                    if (timing_percent < 0)
                        printf("%sno observer:\n", inter ? "inter-pod " : "");
                    if (inter)
                        run_interpod("tarema", nodes, pods);
                    else
                        run("tarema", nodes, pods);
                }
            return 0;
        }
        if (strcmp(argv[1], "inter-pod") == 0)
            run_interpod("tarema", nodes, pods);
        else
            run(argv[1], nodes, pods);
        return 0;
    }
    for (size_t p = 0; p < sizeof policies / sizeof *policies; p++) {
        run(policies[p], 500, 5000);
        run(policies[p], 5000, 10000);
    }
    run_interpod("tarema", 500, 5000);
    run_interpod("tarema", 5000, 10000);
    return 0;
}
