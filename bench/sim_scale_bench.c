/* sim_scale_bench.c: how long the simulator takes, for the two targets: the paper's
 * 15-node cluster with its five workflows (a few thousand tasks, "well under a second") and a
 * generated 5,000-node cluster with 100,000 tasks ("seconds"). Prints figures, asserts nothing
 * about time (benchmarks never fail on speed); exits non-zero only when a run fails.
 *
 *   sim_scale_bench [nodes tasks [all]]   defaults 5000 100000; run from the repository root.
 * The large case runs the tarema policy only unless `all` is given (each policy takes about as
 * long: placement through the framework scans every node for every task). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/engine.h"
#include "sim/model.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void) {
    return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of this process: on a shared machine the wall time also counts other people's
 * jobs, so both are printed. */
static double cpu_s(void) {
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* Four machine types in equal numbers, speeds 1.0 to 1.6. */
static json_t *gen_cluster(int nodes) {
    json_t *types = json_array();
    static const char *const names[] = {"slow", "mid", "fast", "top"};
    static const double cpu[] = {370, 465, 524, 600}, mem[] = {14000, 17600, 19850, 22000};
    for (int i = 0; i < 4; i++) {
        int count = nodes / 4 + (i < nodes % 4);
        json_array_append_new(types,
                              json_pack("{s:s, s:i, s:i, s:s, s:{s:[f,f], s:[f,f], s:f}}", "name",
                                        names[i], "count", count, "cores", 8, "memory", "32Gi",
                                        "bench", "cpu", cpu[i] * 0.98, cpu[i] * 1.02, "mem",
                                        mem[i] * 0.99, mem[i] * 1.01, "io", 481.0));
    }
    return json_pack("{s:s, s:o}", "reference", "slow", "node_types", types);
}

/* Workflows of a 6-process chain-and-gather shape, instances sized so the total is `tasks`;
 * they arrive 60 s apart and run twice, so the second runs are labeled. */
static json_t *gen_workload(long tasks) {
    const int nwf = 20, runs = 2, nproc = 6;
    long per = tasks / (nwf * runs * nproc);
    if (per < 1)
        per = 1;
    json_t *wfs = json_array();
    for (int w = 0; w < nwf; w++) {
        json_t *procs = json_array();
        for (int p = 0; p < nproc; p++) {
            char name[16], prev[16];
            snprintf(name, sizeof name, "P%d", p);
            snprintf(prev, sizeof prev, "P%d", p - 1);
            double cpu_pct = 80.0 + 110.0 * ((p * 7 + w) % 6);
            json_t *o = json_pack("{s:s, s:I, s:f, s:{s:f, s:f, s:f}, s:{s:f, s:f}}", "name", name,
                                  "instances", (json_int_t)per, "base_runtime",
                                  60.0 + 40.0 * ((p * 3 + w) % 5), "usage", "cpu_pct", cpu_pct,
                                  "peak_rss", 2e8 * (1 + (p + w) % 7), "io_bytes",
                                  1e9 * (1 + p % 3), "sensitivity", "cpu", 0.7, "mem", 0.2);
            if (p > 0)
                json_object_set_new(o, p == nproc - 1 ? "after" : "after_each",
                                    json_pack("[s]", prev));
            json_array_append_new(procs, o);
        }
        char wname[32];
        snprintf(wname, sizeof wname, "wf%02d", w);
        json_array_append_new(wfs, json_pack("{s:s, s:f, s:i, s:{s:i, s:s}, s:o}", "name", wname,
                                             "start", 60.0 * w, "runs", runs, "requests", "cpu", 2,
                                             "memory", "4Gi", "processes", procs));
    }
    return json_pack("{s:o}", "workflows", wfs);
}

static int run_case(const char *label, const sim_cluster *c, const sim_workload *w,
                    const char *policy, int isolate) {
    sim_opts o;
    sim_opts_default(&o);
    o.policy = policy;
    /* the scale figures time the given tasks; a history run would double them */
    o.history_runs = 0;
    tm_err err = {0};
    double t0 = now_s(), c0 = cpu_s();
    sim_result *r = isolate ? sim_run_isolated(c, w, &o, &err) : sim_run(c, w, &o, &err);
    double dt = now_s() - t0, dc = cpu_s() - c0;
    if (!r) {
        fprintf(stderr, "%s %s: %s\n", label, policy, err.msg);
        return -1;
    }
    printf("%-34s %-12s nodes=%-6d tasks=%-7ld attempts=%-8ld wall=%.3fs cpu=%.3fs\n", label,
           policy, c->nnodes, r->tasks, r->sched_attempts, dt, dc);
    sim_result_free(r);
    return 0;
}

int main(int argc, char **argv) {
    int nodes = argc > 1 ? atoi(argv[1]) : 5000;
    long tasks = argc > 2 ? atol(argv[2]) : 100000;
    static const char *const policies[] = {"tarema", "round-robin", "fair", "fill-nodes", "sjfn"};
    tm_err err = {0};
    int rc = 0;

    /* the paper's 15 nodes, all five workflows sharing the cluster (7 runs each) */
    double t0 = now_s();
    sim_cluster *pc = sim_cluster_load("sim/scenarios/cluster-555.yaml", 1, &err);
    sim_workload *pw = pc ? sim_workload_load("sim/scenarios/nfcore5.yaml", pc, &err) : NULL;
    if (!pw) {
        fprintf(stderr, "paper scenario (run from the repository root): %s\n", err.msg);
        sim_cluster_free(pc);
        return 1;
    }
    printf("paper scenario loaded (YAML, lotaru CSVs, grouping) in %.3fs\n", now_s() - t0);
    for (int i = 0; i < 5; i++)
        rc |= run_case("15 nodes, 5 workflows x 7 runs", pc, pw, policies[i], 0);
    sim_workload_free(pw);
    sim_cluster_free(pc);

    t0 = cpu_s();
    json_t *cj = gen_cluster(nodes), *wj = gen_workload(tasks);
    sim_cluster *c = sim_cluster_from_json(cj, "generated cluster", 1, &err);
    double tg = cpu_s() - t0;
    sim_workload *w = c ? sim_workload_from_json(wj, "generated workload", NULL, c, &err) : NULL;
    json_decref(cj);
    json_decref(wj);
    if (!w) {
        fprintf(stderr, "generated scenario: %s\n", err.msg);
        sim_cluster_free(c);
        return 1;
    }
    printf("generated cluster of %d nodes grouped (profiler k-means++/silhouette) in %.3fs cpu, "
           "%d groups\n",
           c->nnodes, tg, c->ngroups);
    char label[64];
    snprintf(label, sizeof label, "%d nodes, %ld tasks", nodes, tasks);
    int all = argc > 3 && strcmp(argv[3], "all") == 0;
    for (int i = 0; i < (all ? 5 : 1); i++)
        rc |= run_case(label, c, w, policies[i], 0);
    sim_workload_free(w);
    sim_cluster_free(c);
    return rc ? 1 : 0;
}
