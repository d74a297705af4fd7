/* labeler_taskprofile_test.c: TaskProfile names and status documents. */
#include <math.h>
#include <regex.h>

#include "harness.h"
#include "labeler/report.h"
#include "labeler/taskprofile.h"
#include "lib/jsonutil.h"

static int is_dns1123(const char *s) {
    regex_t re;
    regcomp(&re, "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", REG_EXTENDED | REG_NOSUB);
    int ok = regexec(&re, s, 0, NULL, 0) == 0 && strlen(s) <= 253;
    regfree(&re);
    return ok;
}

static void test_names(void) {
    char a[256], b[256], c[256];
    lab_taskprofile_name("nf-core/chipseq", "NFCORE_CHIPSEQ:CHIPSEQ:BWA_MEM", a, sizeof a);
    CHECK(strncmp(a, "nf-core-chipseq-nfcore-chipseq-chipseq-bwa-mem-", 47) == 0);
    CHECK(is_dns1123(a));
    CHECK_INT(strlen(a), 47 + 8);
    /* Same sanitised text, different originals: different names. */
    lab_taskprofile_name("nf-core/chipseq", "NFCORE_CHIPSEQ:CHIPSEQ:BWA-MEM", b, sizeof b);
    CHECK(strcmp(a, b) != 0);
    lab_taskprofile_name("a", "b-c", b, sizeof b);
    lab_taskprofile_name("a-b", "c", c, sizeof c);
    CHECK(strcmp(b, c) != 0);
    /* Stable across calls. */
    lab_taskprofile_name("nf-core/chipseq", "NFCORE_CHIPSEQ:CHIPSEQ:BWA_MEM", b, sizeof b);
    CHECK_STR(a, b);
    char longp[600];
    memset(longp, 'P', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    lab_taskprofile_name("wf", longp, b, sizeof b);
    CHECK(is_dns1123(b));
    lab_taskprofile_name("___", ":::", b, sizeof b);
    CHECK(is_dns1123(b));
}

static void test_status(void) {
    lab_sample s[] = {{"A", {100, 1000, NAN}, 50}, {"B", {300, 3000, NAN}, 150}};
    lab_classes cls[LAB_NFEATURES] = {{2, {8, 8}}, {1, {16}}, {2, {8, 8}}};
    tm_err err = {{0}, 0};
    lab_labeling *l = lab_label_compute(s, 2, cls, &err);
    CHECK(l != NULL);
    if (!l)
        return;
    json_t *st = lab_taskprofile_status(l, &l->procs[1], "2023-05-01T12:00:00Z");
    CHECK_INT(tm_json_int(st, "labels.cpu", -1), 2);    /* bound 200, B at 300 */
    CHECK_INT(tm_json_int(st, "labels.mem", -1), 1);    /* one class */
    CHECK(json_is_null(tm_json_path(st, "labels.io"))); /* no samples: unlabeled */
    CHECK_INT(tm_json_int(st, "runs", -1), 1);
    CHECK_NEAR(tm_json_num(st, "mean.cpuPercent", -1), 300, 1e-9);
    CHECK_NEAR(tm_json_num(st, "mean.peakRssBytes", -1), 3000, 1e-9);
    CHECK_NEAR(tm_json_num(st, "mean.realtimeMs", -1), 150, 1e-9);
    CHECK(json_is_null(tm_json_path(st, "mean.ioBytes")));
    CHECK_INT(tm_json_int(st, "groups.cpu.n", -1), 2);
    CHECK_NEAR(json_real_value(json_array_get(tm_json_path(st, "groups.cpu.shares"), 0)), 0.5,
               1e-12);
    CHECK_NEAR(json_real_value(json_array_get(tm_json_path(st, "bounds.cpu"), 0)), 200, 1e-12);
    CHECK_STR(tm_json_str(st, "lastUpdate", ""), "2023-05-01T12:00:00Z");
    json_decref(st);

    json_t *obj = lab_taskprofile_object("tarema", "wf", "A");
    CHECK_STR(tm_json_str(obj, "apiVersion", ""), "tarema.io/v1alpha1");
    CHECK_STR(tm_json_str(obj, "kind", ""), "TaskProfile");
    CHECK_STR(tm_json_str(obj, "spec.process", ""), "A");
    CHECK_STR(tm_json_str(obj, "metadata.namespace", ""), "tarema");
    json_decref(obj);

    json_t *rep = lab_report_json(l, "wf", "A");
    CHECK_INT(json_array_size(json_object_get(rep, "processes")), 1);
    CHECK_INT(tm_json_int(json_array_get(json_object_get(rep, "processes"), 0), "labels.cpu", -1),
              1);
    json_decref(rep);
    lab_labeling_free(l);
}

int main(void) {
    RUN(test_names);
    RUN(test_status);
    return TEST_SUMMARY();
}
