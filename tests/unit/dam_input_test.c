/* dam_input_test.c: the tarema-dam input documents: times, durations, node groups, the wait
 * fallback, unreachable clusters, and malformed fields named in the error. */
#include <string.h>

#include "dam/input.h"
#include "harness.h"
#include "lib/yamljson.h"

static json_t *yaml(const char *text) {
    tm_err err = {0};
    json_t *v = tm_yaml_parse(text, strlen(text), "test", &err);
    if (!v)
        printf("    yaml: %s\n", err.msg);
    return v;
}

static const char *JOB = "name: j\ncores: 4\nruntime: 15m\ndatasets: [d]\n";
static const char *CLUSTERS =
    "now: 2026-11-23T21:00:00Z\n"
    "datasets: [{name: d, location: l1, site: s1, size: 1Gi}]\n"
    "clusters:\n"
    "  - name: a\n"
    "    cores: {used: 1, total: 8}\n"
    "    node_groups: [{id: 1, total_cores: 4, centroid: {cpu_single: 100}},\n"
    "                  {id: 2, total_cores: 12, centroid: {cpu_single: 500}}]\n"
    "    wait: {predicted: 2m, pending_age: 1h}\n"
    "    maintenance: [{start: 1000, end: 2000.5}]\n"
    "  - name: b\n"
    "    cores: {used: 0, total: 8}\n"
    "    wait: {pending_age: 1h}\n"
    "  - name: c\n"
    "    unreachable: true\n";

/* Parses JOB and CLUSTERS; returns the request or NULL with err. */
static dam_request *req(const char *job, const char *clusters, tm_err *err) {
    json_t *j = yaml(job), *c = yaml(clusters);
    dam_request *r = j && c ? dam_request_new(j, c, 5, err) : NULL;
    json_decref(j);
    json_decref(c);
    return r;
}

static void test_parse(void) {
    tm_err err = {0};
    dam_request *r = req(JOB, CLUSTERS, &err);
    CHECKF(r != NULL, "%s", err.msg);
    if (!r)
        return;
    const dam_input *in = dam_request_input(r);
    const dam_job *job = dam_request_job(r);
    CHECK_NEAR(in->now_s, 1795467600, 0); /* 2026-11-23T21:00:00Z */
    CHECK_NEAR(job->runtime_s, 900, 0);
    CHECK_INT(in->nclusters, 3);
    /* (4*100 + 12*500) / 16 = 400 */
    CHECK_NEAR(in->clusters[0].perf_per_core, 400, 1e-9);
    /* the learned wait wins over the pending-pod fallback */
    CHECK_INT(in->clusters[0].wait_source, DAM_WAIT_PREDICTED);
    CHECK_NEAR(in->clusters[0].wait_s, 120, 0);
    CHECK_INT(in->clusters[1].wait_source, DAM_WAIT_PENDING_AGE);
    CHECK_NEAR(in->clusters[1].wait_s, 3600, 0);
    CHECK_NEAR(in->clusters[0].windows[0].end_s, 2000.5, 0);
    CHECK_NEAR(in->datasets[0].size_bytes, 1073741824.0, 0);
    CHECK(in->clusters[2].unreachable);
    dam_ranking rk;
    CHECK_INT(dam_rank(in, job, &rk, &err), 0);
    CHECK_INT(rk.nranked, 2);
    dam_request_free(r);
}

static void test_now_default(void) {
    tm_err err = {0};
    dam_request *r = req(JOB, strstr(CLUSTERS, "datasets:"), &err); /* no "now" */
    CHECKF(r != NULL, "%s", err.msg);
    if (r)
        CHECK_NEAR(dam_request_input(r)->now_s, 5, 0);
    dam_request_free(r);
}

#define EXPECT_BAD(job, clusters, needle)                                                          \
    do {                                                                                           \
        tm_err e_ = {0};                                                                           \
        dam_request *r_ = req(job, clusters, &e_);                                                 \
        CHECK(r_ == NULL);                                                                         \
        dam_request_free(r_);                                                                      \
        CHECKF(strstr(e_.msg, needle) != NULL, "message '%s' lacks '%s'", e_.msg, needle);         \
    } while (0)

static void test_malformed(void) {
    EXPECT_BAD("name: j\ncores: four\nruntime: 1h\n", CLUSTERS, "job.cores: expected a number");
    EXPECT_BAD("name: j\ncores: 4\n", CLUSTERS, "job.runtime: missing");
    EXPECT_BAD("name: j\ncores: 4\nruntime: soon\n", CLUSTERS, "job.runtime: 'soon'");
    EXPECT_BAD("name: j\ncores: 4\nruntime: 1h\ncolour: red\n", CLUSTERS, "colour");
    EXPECT_BAD("name: j\ncores: 4\nruntime: 1h\nmemory: 4GB\n", CLUSTERS, "job.memory");
    EXPECT_BAD(JOB, "clusters: []\n", "clusters: expected a non-empty list");
    EXPECT_BAD(JOB, "clusters:\n  - name: a\n", "clusters[0].cores: missing");
    EXPECT_BAD(JOB, "clusters:\n  - name: a\n    cores: {used: 1}\n",
               "clusters[0].cores.total: missing");
    EXPECT_BAD(JOB,
               "clusters:\n  - name: a\n    cores: {used: 1, total: 2}\n"
               "    maintenance: [{start: 2026-13-45T00:00:00Z, end: 5}]\n",
               "clusters[0].maintenance[0].start");
    EXPECT_BAD(JOB,
               "clusters:\n  - name: a\n    cores: {used: 1, total: 2}\n"
               "    node_groups: [{id: 1, centroid: {cpu_single: 3}}]\n",
               "clusters[0].node_groups[0].total_cores");
    EXPECT_BAD(JOB,
               "clusters:\n  - name: a\n    cores: {used: 1, total: 2}\n"
               "    wait: {predicted: -3}\n",
               "clusters[0].wait.predicted");
    EXPECT_BAD(JOB,
               "clusters:\n  - name: a\n    cores: {used: 1, total: 2}\n"
               "    perf_per_core: 3\n    node_groups: []\n",
               "not both");
    EXPECT_BAD(JOB, "datasets: [{name: d, size: 1}]\nclusters: [{name: a}]\n",
               "datasets[0].location: missing");
    EXPECT_BAD(JOB, "transfers: [{from: a, to: b, bytes_per_s: fast}]\nclusters: [{name: a}]\n",
               "transfers[0].bytes_per_s");
    EXPECT_BAD(JOB, "clusters:\n  - name: a\n    unreachable: 7\n",
               "clusters[0].unreachable: expected true or a reason");
}

int main(void) {
    RUN(test_parse);
    RUN(test_now_default);
    RUN(test_malformed);
    return TEST_SUMMARY();
}
