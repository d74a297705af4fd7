/* sim_model_test.c: the simulator's input checks (every bad input is a clear error naming what
 * is wrong) and its measurement readers (lotaru CSV, Nextflow trace) on small fixtures in
 * tests/fixtures/sim/. Run from the repository root (tests/run.sh does) or set REPO_ROOT. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/yamljson.h"
#include "sim/model.h"

static const char *fixture(const char *name, char *buf, size_t size) {
    const char *root = getenv("REPO_ROOT");
    snprintf(buf, size, "%s/tests/fixtures/sim/%s", root ? root : ".", name);
    return buf;
}

static sim_cluster *cluster_of(const char *yaml, tm_err *err) {
    json_t *j = tm_yaml_parse(yaml, strlen(yaml), "cluster.yaml", err);
    sim_cluster *c = j ? sim_cluster_from_json(j, "cluster.yaml", 1, err) : NULL;
    json_decref(j);
    return c;
}

static const char *two_types =
    "node_types:\n"
    "  - {name: slow, count: 2, cores: 4, memory: 8Gi, speed: {cpu: 1}}\n"
    "  - {name: fast, count: 1, cores: 8, memory: 16Gi, speed: {cpu: 2}}\n";

/* Loads a workload against two_types; returns NULL with err on failure. */
static sim_workload *workload_of(const char *yaml, const char *base_dir, tm_err *err) {
    sim_cluster *c = cluster_of(two_types, err);
    json_t *j = c ? tm_yaml_parse(yaml, strlen(yaml), "workload.yaml", err) : NULL;
    sim_workload *w = j ? sim_workload_from_json(j, "workload.yaml", base_dir, c, err) : NULL;
    json_decref(j);
    sim_cluster_free(c);
    return w;
}

/* Expects the workload to be refused with every `parts` string in the message. */
static void expect_error(const char *yaml, const char *const *parts) {
    tm_err err = {0};
    sim_workload *w = workload_of(yaml, NULL, &err);
    CHECK(w == NULL);
    for (; *parts; parts++)
        CHECKF(strstr(err.msg, *parts) != NULL, "'%s' not in: %s", *parts, err.msg);
    sim_workload_free(w);
}

static void test_cycle(void) {
    expect_error("workflows:\n"
                 "  - name: loop\n"
                 "    processes:\n"
                 "      - {name: A, instances: 1, base_runtime: 1, after: [C]}\n"
                 "      - {name: B, instances: 1, base_runtime: 1, after: [A]}\n"
                 "      - {name: C, instances: 1, base_runtime: 1, after_each: [B]}\n"
                 "      - {name: D, instances: 1, base_runtime: 1}\n",
                 (const char *const[]){"cycle", "A", "B", "C", NULL});
}

static void test_too_big(void) {
    expect_error("workflows:\n"
                 "  - name: big\n"
                 "    processes:\n"
                 "      - {name: HUGE, instances: 1, base_runtime: 1, requests: {cpu: 16}}\n",
                 (const char *const[]){"HUGE", "more than any node", NULL});
    expect_error("workflows:\n"
                 "  - name: big\n"
                 "    processes:\n"
                 "      - {name: FAT, instances: 1, base_runtime: 1, requests: {memory: 20Gi}}\n",
                 (const char *const[]){"FAT", "more than any node", NULL});
}

static void test_unknown_keys(void) {
    expect_error("workflows:\n"
                 "  - name: typo\n"
                 "    processes:\n"
                 "      - {name: A, instnaces: 1, base_runtime: 1}\n",
                 (const char *const[]){"instnaces", "process A", NULL});
    expect_error("workflow:\n  - name: x\n", (const char *const[]){"workflow", NULL});
    tm_err err = {0};
    sim_cluster *c = cluster_of("node_types:\n  - {name: a, count: 1, cores: 2, memory: 1Gi,"
                                " speeed: {cpu: 1}}\n",
                                &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "speeed") && strstr(err.msg, "node_types[0]"), "%s", err.msg);
    sim_cluster_free(c);
}

/* Node names are "<type>-<i>": a type name too long for that used to be cut, two long types
 * then shared node names and the run failed with "snapshot node 0 has no simulated node". */
static void test_long_type_name(void) {
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "node_types:\n"
             "  - {name: %0105da, count: 1, cores: 2, memory: 1Gi}\n"
             "  - {name: %0105db, count: 1, cores: 2, memory: 1Gi}\n",
             0, 0);
    tm_err err = {0};
    sim_cluster *c = cluster_of(yaml, &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "longer than 100") && strstr(err.msg, "node_types[0]"), "%s", err.msg);
    sim_cluster_free(c);
}

/* Regression (fuzzing): 40,000 nodes were accepted and grouping them took ~25 s. Sizes past
 * SIM_MAX_NODES are refused at once, across node types too; the limit itself loads. */
static void test_node_limit(void) {
    char yaml[256];
    tm_err err = {0};
    snprintf(yaml, sizeof yaml,
             "node_types:\n  - {name: a, count: %d, cores: 2, memory: 1Gi, speed: {cpu: 1}}\n",
             SIM_MAX_NODES + 1);
    sim_cluster *c = cluster_of(yaml, &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "count must be an integer from 1 to") != NULL, "%s", err.msg);
    sim_cluster_free(c);
    snprintf(yaml, sizeof yaml,
             "node_types:\n  - {name: a, count: %d, cores: 2, memory: 1Gi, speed: {cpu: 1}}\n"
             "  - {name: b, count: 2, cores: 2, memory: 1Gi, speed: {cpu: 2}}\n",
             SIM_MAX_NODES - 1);
    c = cluster_of(yaml, &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "quadratic") != NULL, "%s", err.msg);
    sim_cluster_free(c);
}

static void test_other_errors(void) {
    expect_error("workflows:\n"
                 "  - name: m\n"
                 "    processes:\n"
                 "      - {name: A, instances: 2, base_runtime: 1}\n"
                 "      - {name: B, instances: 3, base_runtime: 1, after_each: [A]}\n",
                 (const char *const[]){"B", "3 instances", "A has 2", NULL});
    expect_error("workflows:\n"
                 "  - name: m\n"
                 "    processes:\n"
                 "      - {name: A, instances: 1, usage: {cpu_pct: 100}}\n",
                 (const char *const[]){"process A", "no runtime on node type slow", NULL});
    expect_error("workflows:\n"
                 "  - name: m\n"
                 "    processes:\n"
                 "      - {name: A, instances: 1, base_runtime: 1, after: [Z]}\n",
                 (const char *const[]){"'Z'", "not a process", NULL});
    expect_error("workflows:\n"
                 "  - name: m\n"
                 "    processes:\n"
                 "      - {name: A, instances: 1, runtime: {medium: 3}}\n",
                 (const char *const[]){"medium", "not a node type", NULL});
    expect_error("workflows:\n"
                 "  - name: m\n"
                 "    processes:\n"
                 "      - {name: A, instances: 1, base_runtime: 1, requests: {cpu: lots}}\n",
                 (const char *const[]){"requests.cpu", "lots", NULL});
    expect_error("workflows:\n"
                 "  - name: m\n"
                 "    processes:\n"
                 "      - {name: A, instances: 1, base_runtime: 1,"
                 " sensitivity: {cpu: 0.8, mem: 0.5}}\n",
                 (const char *const[]){"sensitivities add up", NULL});
    tm_err err = {0};
    sim_cluster *c =
        cluster_of("node_types:\n"
                   "  - {name: a, count: 1, cores: 2, memory: 1Gi, bench: {cpu: 300}}\n"
                   "  - {name: b, count: 1, cores: 2, memory: 1Gi}\n",
                   &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "bench.cpu") != NULL, "%s", err.msg);
    sim_cluster_free(c);
}

/* A repeated dependency used to overflow the engine's successor lists (sized 2 per process):
 * now it is refused at load time. */
static void test_duplicate_dependency(void) {
    expect_error("workflows:\n"
                 "  - name: m\n"
                 "    processes:\n"
                 "      - {name: A, instances: 1, base_runtime: 1}\n"
                 "      - {name: B, instances: 1, base_runtime: 1, after: [A, A, A, A, A, A]}\n",
                 (const char *const[]){"process B", "after names 'A' twice", NULL});
    expect_error("workflows:\n"
                 "  - name: m\n"
                 "    processes:\n"
                 "      - {name: A, instances: 1, base_runtime: 1}\n"
                 "      - {name: B, instances: 1, base_runtime: 1, after_each: [A, A]}\n",
                 (const char *const[]){"after_each names 'A' twice", NULL});
}

/* Explicit arrivals are kept in time order, so "run 1" is the earliest (the unlabeled one);
 * gap belongs to start/runs and is refused next to arrivals instead of being ignored. */
static void test_arrivals(void) {
    tm_err err = {0};
    sim_workload *w = workload_of("workflows:\n"
                                  "  - name: m\n"
                                  "    arrivals: [300, 0, 100]\n"
                                  "    processes: [{name: A, instances: 1, base_runtime: 1}]\n",
                                  NULL, &err);
    CHECKF(w != NULL, "%s", err.msg);
    if (w) {
        CHECK_INT(w->wfs[0].runs, 3);
        CHECK_NEAR(w->wfs[0].arrivals[0], 0, 0);
        CHECK_NEAR(w->wfs[0].arrivals[1], 100, 0);
        CHECK_NEAR(w->wfs[0].arrivals[2], 300, 0);
    }
    sim_workload_free(w);
    expect_error("workflows:\n"
                 "  - name: m\n"
                 "    arrivals: [0, 100]\n"
                 "    gap: 10\n"
                 "    processes: [{name: A, instances: 1, base_runtime: 1}]\n",
                 (const char *const[]){"either arrivals or start/runs/gap", NULL});
}

static void test_lotaru_reader(void) {
    char path[4096];
    sim_meas_table t = {0};
    tm_err err = {0};
    long n = sim_meas_read(&t, fixture("lotaru-mini.csv", path, sizeof path), NULL, NULL, "train-1",
                           &err);
    CHECKF(n == 6, "rows %ld: %s", n, err.msg);
    if (n == 6) {
        CHECK_STR(t.rows[0].process, "ALIGN");
        CHECK_STR(t.rows[0].machine, "fast");
        CHECK_NEAR(t.rows[0].m.runtime_s, 20, 1e-9);
        CHECK_NEAR(t.rows[0].m.cpu_pct, 400, 1e-9);
        CHECK_NEAR(t.rows[0].m.peak_rss, 2000000, 1e-9);
        CHECK_NEAR(t.rows[0].m.io_bytes, 4000, 1e-9); /* rchar + wchar */
    }
    sim_meas_table_free(&t);
    /* no label filter: the test row counts too */
    n = sim_meas_read(&t, path, "lotaru", "override", NULL, &err);
    CHECK_INT(n, 7);
    if (n == 7)
        CHECK_STR(t.rows[6].machine, "override");
    sim_meas_table_free(&t);
}

static void test_lotaru_workload(void) {
    char dir[4096];
    const char *root = getenv("REPO_ROOT");
    snprintf(dir, sizeof dir, "%s/tests/fixtures/sim", root ? root : ".");
    tm_err err = {0};
    sim_cluster *c = cluster_of(two_types, &err);
    const char *yaml = "workflows:\n"
                       "  - name: mini\n"
                       "    label: train-1\n"
                       "    measurements: [{file: lotaru-mini.csv}]\n"
                       "    processes:\n"
                       "      - {name: QC}\n"
                       "      - {name: ALIGN, after_each: []}\n";
    json_t *j = tm_yaml_parse(yaml, strlen(yaml), "w", &err);
    sim_workload *w = j && c ? sim_workload_from_json(j, "w", dir, c, &err) : NULL;
    json_decref(j);
    CHECKF(w != NULL, "%s", err.msg);
    if (w) {
        const sim_workflow *wf = &w->wfs[0];
        const sim_process *qc = &wf->procs[0], *al = &wf->procs[1];
        CHECK_INT(qc->instances, 1);
        CHECK_INT(al->instances, 2);
        /* instances match across machines by task input size: 100 first, then 200 */
        CHECK_NEAR(sim_runtime(c, wf, al, 0, 1), 10, 1e-9);
        CHECK_NEAR(sim_runtime(c, wf, al, 0, 0), 16, 1e-9);
        CHECK_NEAR(sim_runtime(c, wf, al, 1, 1), 20, 1e-9);
        CHECK_NEAR(sim_runtime(c, wf, al, 1, 0), 32, 1e-9);
        CHECK_NEAR(sim_usage(c, wf, al, 1, 0).cpu_pct, 410, 1e-9);
        CHECK_NEAR(sim_runtime(c, wf, qc, 0, 0), 4, 1e-9);
        /* default sensitivity from the measured %cpu over the 1 requested cpu: capped at 1 */
        CHECK_NEAR(al->sens[LAB_CPU], 1.0, 1e-9);
    }
    sim_workload_free(w);
    sim_cluster_free(c);
}

static void test_trace_reader(void) {
    char path[4096];
    sim_meas_table t = {0};
    tm_err err = {0};
    long n =
        sim_meas_read(&t, fixture("trace-mini.txt", path, sizeof path), NULL, "slow", NULL, &err);
    CHECKF(n == 3, "rows %ld: %s", n, err.msg); /* the FAILED attempt is skipped */
    if (n == 3) {
        CHECK_STR(t.rows[0].process, "NF:QC");
        CHECK_NEAR(t.rows[0].m.runtime_s, 5, 1e-9);
        CHECK_NEAR(t.rows[1].m.runtime_s, 7, 1e-9);
        CHECK_STR(t.rows[2].process, "NF:ALIGN");
        CHECK_NEAR(t.rows[2].m.runtime_s, 62, 1e-9);
        CHECK_NEAR(t.rows[2].m.cpu_pct, 390, 1e-9);
        CHECK_NEAR(t.rows[2].m.peak_rss, 2.0 * 1024 * 1024 * 1024, 1);
    }
    sim_meas_table_free(&t);
    n = sim_meas_read(&t, path, "trace", NULL, NULL, &err);
    CHECK(n < 0);
    CHECKF(strstr(err.msg, "machine") != NULL, "%s", err.msg);
    sim_meas_table_free(&t);
    /* a trace as a workload's measurements; "QC" matches the qualified "NF:QC" */
    const char *root = getenv("REPO_ROOT");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/sim", root ? root : ".");
    sim_workload *w = workload_of("workflows:\n"
                                  "  - name: nf\n"
                                  "    measurements: [{file: trace-mini.txt, machine: slow}]\n"
                                  "    processes: [{name: QC}, {name: ALIGN, after: [QC]}]\n",
                                  dir, &err);
    CHECKF(w != NULL, "%s", err.msg);
    if (w) {
        CHECK_INT(w->wfs[0].procs[0].instances, 2);
        CHECK_INT(w->wfs[0].tasks_per_run, 3);
    }
    sim_workload_free(w);
}

static void test_measurement_errors(void) {
    sim_meas_table t = {0};
    tm_err err = {0};
    CHECK(sim_meas_read(&t, "/nonexistent/x.csv", NULL, NULL, NULL, &err) < 0);
    CHECKF(strstr(err.msg, "/nonexistent/x.csv") != NULL, "%s", err.msg);
    char path[] = "/tmp/sim_model_test_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        FILE *f = fdopen(fd, "w");
        fputs("Label,Machine,Task,Realtime,%cpu,peak_rss,rchar,wchar,TaskInputSize\n"
              "a,n1,A,100,50,1,1,1,1\n"
              "a,n1,A,fast,50,1,1,1,1\n",
              f);
        fclose(f);
        CHECK(sim_meas_read(&t, path, "lotaru", NULL, NULL, &err) < 0);
        CHECKF(strstr(err.msg, ":3:") != NULL, "%s", err.msg);
        sim_meas_table_free(&t);
        /* a negative runtime is corrupt data, not a row to skip silently */
        f = fopen(path, "w");
        fputs("Label,Machine,Task,Realtime,%cpu,peak_rss,rchar,wchar,TaskInputSize\n"
              "a,n1,A,100,50,1,1,1,1\n"
              "a,n1,A,-100,50,1,1,1,1\n",
              f);
        fclose(f);
        CHECK(sim_meas_read(&t, path, "lotaru", NULL, NULL, &err) < 0);
        CHECKF(strstr(err.msg, ":3:") && strstr(err.msg, "negative"), "%s", err.msg);
        sim_meas_table_free(&t);
        /* a line longer than the reader's buffer is an error, not two half rows */
        f = fopen(path, "w");
        fputs("Label,Machine,Task,Realtime,%cpu,peak_rss,rchar,wchar,TaskInputSize\na,n1,A,100,50,"
              "1,1,1,",
              f);
        for (int i = 0; i < 10000; i++)
            fputc('1', f);
        fputs("\na,n1,A,100,50,1,1,1,1\n", f);
        fclose(f);
        CHECK(sim_meas_read(&t, path, "lotaru", NULL, NULL, &err) < 0);
        CHECKF(strstr(err.msg, ":2:") && strstr(err.msg, "longer"), "%s", err.msg);
        sim_meas_table_free(&t);
        f = fopen(path, "w");
        fputs("Label,Machine,Realtime\n", f);
        fclose(f);
        CHECK(sim_meas_read(&t, path, "lotaru", NULL, NULL, &err) < 0);
        CHECKF(strstr(err.msg, "Task") != NULL, "%s", err.msg);
        sim_meas_table_free(&t);
        remove(path);
    }
    /* a missing file named relative to the workload says where it was looked for */
    sim_workload *w = workload_of("workflows:\n"
                                  "  - name: m\n"
                                  "    measurements: [{file: ../data/none.csv}]\n"
                                  "    processes: [{name: A}]\n",
                                  "/tmp/sim-model-test-dir", &err);
    CHECK(w == NULL);
    CHECKF(strstr(err.msg, "/tmp/sim-model-test-dir/../data/none.csv") &&
               strstr(err.msg, "No such file") && strstr(err.msg, "resolved against"),
           "%s", err.msg);
    sim_workload_free(w);
    CHECK(sim_meas_read(&t, "x.bin", "parquet", NULL, NULL, &err) < 0);
    CHECKF(strstr(err.msg, "parquet") != NULL, "%s", err.msg);
}

int main(void) {
    RUN(test_cycle);
    RUN(test_too_big);
    RUN(test_unknown_keys);
    RUN(test_long_type_name);
    RUN(test_node_limit);
    RUN(test_other_errors);
    RUN(test_duplicate_dependency);
    RUN(test_arrivals);
    RUN(test_lotaru_reader);
    RUN(test_lotaru_workload);
    RUN(test_trace_reader);
    RUN(test_measurement_errors);
    return TEST_SUMMARY();
}
