/* scheduler_taskkey_test.c: task identity across Nextflow's label sanitiser. Pods carry
 * nextflow.io/processName in Kubernetes label-value form, TaskProfiles the traced name; the
 * scheduler must match them (a DSL2 pipeline is otherwise never labeled). */
#include <string.h>

#include "harness.h"
#include "lib/labelvalue.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/snapshot.h"

static const char *san(const char *in, char *out) {
    tm_label_value_sanitize(in, out);
    return out;
}

static void test_sanitize_like_nextflow(void) {
    char b[TM_LABEL_VALUE_MAX + 1];
    CHECK_STR(san("NFCORE_CHIPSEQ:CHIPSEQ:FASTQC", b), "NFCORE_CHIPSEQ_CHIPSEQ_FASTQC");
    CHECK_STR(san("a::b", b), "a_b");    /* a run of invalid characters is one '_' */
    CHECK_STR(san("a_:b", b), "a__b");   /* a valid '_' next to a run stays */
    CHECK_STR(san(":x (1):", b), "x_1"); /* trimmed to alphanumerics at both ends */
    CHECK_STR(san("FASTQC", b), "FASTQC");
    CHECK_STR(san("", b), "");
    CHECK_STR(san("::", b), "");
    CHECK_STR(san("caf\xc3\xa9-x", b), "caf_-x");
    char longname[200];
    memset(longname, 'P', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK_INT(strlen(san(longname, b)), 63);
    /* idempotent: a label value is its own sanitised form */
    char again[TM_LABEL_VALUE_MAX + 1];
    CHECK_STR(san(san("NF:A:B (x)", b), again), b);
}

static void test_dsl2_pod_finds_traced_profile(void) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_task_profile tp = {.labels = {3, 1, 2}, .expected_runtime_ms = 4200};
    CHECK(sched_snapshot_set_task(s, "nf-core/chipseq", "NFCORE_CHIPSEQ:CHIPSEQ:FASTQC", &tp,
                                  &err) == 0);
    const sched_task_profile *got =
        sched_snapshot_task(s, "nf-core_chipseq", "NFCORE_CHIPSEQ_CHIPSEQ_FASTQC");
    CHECK(got != NULL);
    if (got)
        CHECK_INT(got->labels[0], 3);
    /* the raw names still find it, and removal by either form works */
    CHECK(sched_snapshot_task(s, "nf-core/chipseq", "NFCORE_CHIPSEQ:CHIPSEQ:FASTQC") == got);
    CHECK(sched_snapshot_task(s, "nf-core/chipseq", "NFCORE_CHIPSEQ:CHIPSEQ:TRIMGALORE") == NULL);

    /* end to end through the pod JSON the Nextflow k8s executor creates */
    json_t *pod =
        json_pack("{s:{s:s,s:s,s:s,s:{s:s,s:s}},s:{s:s,s:[{s:s,s:{s:{s:s,s:s}}}]}}", "metadata",
                  "namespace", "wf", "name", "nf-abc", "uid", "u1", "labels",
                  "nextflow.io/processName", "NFCORE_CHIPSEQ_CHIPSEQ_FASTQC", "tarema.io/workflow",
                  "nf-core_chipseq", "spec", "schedulerName", "tarema", "containers", "name", "c",
                  "resources", "requests", "cpu", "1", "memory", "1Gi");
    sched_pod *p = sched_pod_from_json(s, pod, NULL, &err);
    CHECKF(p != NULL, "%s", err.msg);
    if (p) {
        sched_task_info ti;
        sched_task_resolve(s, p, &ti);
        CHECK(ti.labeled);
        CHECK_INT(ti.labels[0], 3);
        CHECK_INT(ti.labels[2], 2);
        CHECK_INT(ti.expected_runtime_ms, 4200);
        sched_pod_free(p);
    }
    json_decref(pod);
    CHECK(sched_snapshot_remove_task(s, "nf-core_chipseq", "NFCORE_CHIPSEQ_CHIPSEQ_FASTQC") == 0);
    CHECK(sched_snapshot_task(s, "nf-core/chipseq", "NFCORE_CHIPSEQ:CHIPSEQ:FASTQC") == NULL);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_sanitize_like_nextflow);
    RUN(test_dsl2_pod_finds_traced_profile);
    return TEST_SUMMARY();
}
