/* webhook_pod_test.c: the admission webhook's pure part (labeler/sizing_pod.h): which pods are
 * tasks, earlier OOMKilled attempts, the decision per case of the issue, the JSONPatch and the
 * AdmissionReview response. */
#include <stdlib.h>

#include "harness.h"
#include "labeler/sizing_pod.h"
#include "lib/jsonutil.h"
#include "lib/kube_internal.h" /* tm_kube_base64_decode, to read the patch back */

#define GIB 1073741824.0
#define MIB 1048576.0

static const double NODE[SZ_RES_N] = {16, 64 * GIB};

/* A pod as Nextflow 24.10's k8s executor writes it (labels of K8sTaskHandler.getLabels), with
 * container 0's resources given as JSON text ("" = no resources). */
static json_t *task_pod(const char *resources, const char *extra_annotations) {
    char buf[2048];
    snprintf(
        buf, sizeof buf,
        "{\"metadata\": {\"name\": \"nf-0bbe0d1c-a1b2c\", \"labels\": {"
        "\"nextflow.io/app\": \"nextflow\", \"nextflow.io/runName\": \"goofy_kilby\","
        "\"nextflow.io/taskName\": \"NF_SMALL_BIG_TABLE_s1\","
        "\"nextflow.io/processName\": \"NF_SMALL_BIG_TABLE\","
        "\"nextflow.io/sessionId\": \"uuid-1\"},"
        "\"annotations\": {\"tarema.io/workflow\": \"tarema-e2e/nf-small\"%s}},"
        "\"spec\": {\"containers\": [{\"name\": \"nf-0bbe0d1c\", \"image\": \"debian\"%s%s}]}}",
        extra_annotations ? extra_annotations : "", *resources ? ", \"resources\": " : "",
        resources);
    json_error_t e;
    json_t *j = json_loads(buf, 0, &e);
    if (!j)
        printf("    bad test pod: %s\n", e.text);
    return j;
}

static sz_plan plan_of(const double *mem, const double *cores, size_t n) {
    sz_plan_opts o;
    sz_plan_opts_default(&o, NODE[0], NODE[1]);
    o.strategy = SZ_QUANTIZED;
    sz_plan p;
    tm_err err = {0};
    if (sz_plan_build(&p, &o, cores, mem, NULL, n, &err) < 0)
        printf("    plan: %s\n", err.msg);
    return p;
}

static void test_parse(void) {
    json_t *pod = task_pod("{\"requests\": {\"cpu\": 1, \"memory\": \"512Mi\"}, \"limits\": "
                           "{\"memory\": \"512Mi\"}}",
                           NULL);
    sz_pod p;
    tm_err err = {0};
    CHECK_INT(sz_pod_parse(pod, &p, &err), 0);
    CHECK(p.task);
    CHECK(!p.opted_out);
    CHECK_STR(p.process, "NF_SMALL_BIG_TABLE");
    CHECK_STR(p.workflow, "tarema-e2e_nf-small"); /* the label-value form of the workflow */
    CHECK_STR(p.task_name, "NF_SMALL_BIG_TABLE_s1");
    CHECK_STR(p.run, "goofy_kilby");
    CHECK_NEAR(p.declared[SZ_RES_CORES], 1, 0);
    CHECK_NEAR(p.declared[SZ_RES_MEMORY], 512 * MIB, 0);
    json_decref(pod);
    /* not a task: no nextflow.io labels */
    pod = json_pack("{s:{s:s}, s:{s:[{s:s}]}}", "metadata", "name", "web", "spec", "containers",
                    "name", "c");
    CHECK_INT(sz_pod_parse(pod, &p, &err), 0);
    CHECK(!p.task);
    json_decref(pod);
    /* malformed: no metadata, a label that is not a string, a bad quantity, containers not a
     * list */
    const char *bad[] = {
        "{\"spec\": {}}",
        "{\"metadata\": {\"labels\": {\"nextflow.io/app\": 3}}}",
        "{\"metadata\": {}, \"spec\": {\"containers\": [{\"resources\": {\"requests\": "
        "{\"memory\": \"lots\"}}}]}}",
        "{\"metadata\": {}, \"spec\": {\"containers\": {}}}",
        "{\"metadata\": {}, \"spec\": {\"containers\": [{\"resources\": {\"limits\": "
        "{\"cpu\": \"-1\"}}}]}}",
        "[]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        CHECKF(sz_pod_parse(j, &p, &err) == -1, "case %zu accepted", i);
        json_decref(j);
    }
    CHECK_INT(sz_pod_parse(NULL, &p, &err), -1);
}

/* Gives the pod one container status whose `state` (state or lastState) terminated with
 * `reason`. */
static void set_terminated(json_t *pod, const char *state, const char *reason) {
    json_object_set_new(pod, "status",
                        json_pack("{s:[{s:{s:{s:s}}}]}", "containerStatuses", state, "terminated",
                                  "reason", reason));
}

static void test_failed_memory(void) {
    json_t *ok = task_pod("{\"limits\": {\"memory\": \"1Gi\"}}", NULL);
    json_t *oom = task_pod("{\"limits\": {\"memory\": \"2Gi\"}}", NULL);
    json_t *oom_last = task_pod("{\"requests\": {\"memory\": \"3Gi\"}}", NULL);
    set_terminated(ok, "state", "Completed");
    set_terminated(oom, "state", "OOMKilled");
    json_t *pods = json_pack("[O, O]", ok, oom);
    CHECK_NEAR(sz_pod_failed_memory(pods), 2 * GIB, 0);
    set_terminated(oom_last, "lastState", "OOMKilled");
    json_array_append(pods, oom_last);
    CHECK_NEAR(sz_pod_failed_memory(pods), 3 * GIB, 0);
    json_t *none = json_pack("[O]", ok);
    CHECK(isnan(sz_pod_failed_memory(none)));
    CHECK(isnan(sz_pod_failed_memory(NULL)));
    json_decref(none);
    json_decref(pods);
    json_decref(ok);
    json_decref(oom);
    json_decref(oom_last);
}

static sz_decision decide(const char *resources, const char *annot, const sz_plan *plan,
                          const double *node, double failed) {
    json_t *pod = task_pod(resources, annot);
    sz_pod p;
    tm_err err = {0};
    sz_decision d;
    if (sz_pod_parse(pod, &p, &err) < 0)
        printf("    parse: %s\n", err.msg);
    sz_pod_decide(&p, plan, node, failed, &d);
    json_decref(pod);
    return d;
}

static void test_decide(void) {
    /* history: 2, 3, 4 GiB and 1.5, 2 cores -> quantized n = 1: 4 GiB, 2 cores */
    double mem[] = {2 * GIB, 3 * GIB, 4 * GIB}, cores[] = {1.5, 2, 1};
    sz_plan plan = plan_of(mem, cores, 3);
    /* memory unset: the plan's bucket */
    sz_decision d = decide("{\"requests\": {\"cpu\": \"4\"}}", NULL, &plan, NODE, NAN);
    CHECK(d.patch);
    CHECK(!d.retry);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 4 * GIB, 0);
    CHECK_NEAR(d.value[SZ_RES_CORES], 2, 1e-9);
    /* a declaration is an upper bound: 3 GiB and 1 cpu declared */
    d = decide("{\"requests\": {\"cpu\": \"1\", \"memory\": \"3Gi\"}, \"limits\": {\"memory\": "
               "\"3Gi\"}}",
               NULL, &plan, NODE, NAN);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 3 * GIB, 0);
    CHECK_NEAR(d.value[SZ_RES_CORES], 1, 1e-9);
    /* OOMKilled at 4 GiB: no bucket above 4 GiB -> the whole machine */
    d = decide("", NULL, &plan, NODE, 4 * GIB);
    CHECK(d.retry);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 64 * GIB, 0);
    /* a two-bucket chain: 1 GiB first, 8 GiB after an OOM at 1 GiB */
    double mem2[] = {1 * GIB, 1 * GIB, 1 * GIB, 8 * GIB}, c2[] = {1, 1, 1, 1};
    sz_plan_opts o;
    sz_plan_opts_default(&o, NODE[0], NODE[1]);
    o.strategy = SZ_QUANTIZED;
    o.buckets = 2;
    sz_plan p2;
    tm_err err = {0};
    CHECK_INT(sz_plan_build(&p2, &o, c2, mem2, NULL, 4, &err), 0);
    d = decide("", NULL, &p2, NODE, NAN);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 1 * GIB, 0);
    d = decide("", NULL, &p2, NODE, 1 * GIB);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 8 * GIB, 0);
    /* the retry keeps a larger declaration (Nextflow's memory { 2.GB * task.attempt }) */
    d = decide("{\"limits\": {\"memory\": \"12Gi\"}}", NULL, &p2, NODE, 1 * GIB);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 12 * GIB, 0);
    sz_plan_free(&p2);
    /* no history: the declaration; nothing declared: the whole machine */
    d = decide("{\"requests\": {\"cpu\": \"2\", \"memory\": \"1Gi\"}}", NULL, NULL, NODE, NAN);
    CHECK(d.patch);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 1 * GIB, 0);
    CHECK_NEAR(d.value[SZ_RES_CORES], 2, 1e-9);
    d = decide("", NULL, NULL, NODE, NAN);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 64 * GIB, 0);
    CHECK_NEAR(d.value[SZ_RES_CORES], 16, 1e-9);
    /* never larger than the largest node, never above a cpu limit */
    double small[SZ_RES_N] = {2.5, 3 * GIB};
    d = decide("{\"requests\": {\"cpu\": \"8\", \"memory\": \"100Gi\"}}", NULL, NULL, small, NAN);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 3 * GIB, 0);
    CHECK_NEAR(d.value[SZ_RES_CORES], 2.5, 1e-9);
    d = decide("{\"limits\": {\"cpu\": \"500m\"}}", NULL, &plan, NODE, NAN);
    CHECK_NEAR(d.value[SZ_RES_CORES], 0.5, 1e-9);
    /* a zero cpu limit or memory bounds nothing (it used to make the request 0) */
    d = decide("{\"limits\": {\"cpu\": \"0\", \"memory\": \"0\"}}", NULL, &plan, NODE, NAN);
    CHECK_NEAR(d.value[SZ_RES_CORES], 2, 1e-9);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], 4 * GIB, 0);
    /* opted out, node sizes unknown: untouched */
    d = decide("", ", \"tarema.io/sizing\": \"off\"", &plan, NODE, NAN);
    CHECK(!d.patch);
    CHECK(strstr(d.reason, "opted out") != NULL);
    double unknown[SZ_RES_N] = {0, NAN};
    d = decide("", NULL, &plan, unknown, NAN);
    CHECK(!d.patch);
    /* a largest node below what is ever written (1m, 1 MiB): untouched, not a request above
     * the node (it used to write 1 MiB on a node of 1000 bytes) */
    double tiny[SZ_RES_N] = {2, 1000};
    d = decide("", NULL, &plan, tiny, NAN);
    CHECK(!d.patch);
    double tiny_cpu[SZ_RES_N] = {0.0004, 8 * GIB};
    d = decide("", NULL, NULL, tiny_cpu, NAN);
    CHECK(!d.patch);
    sz_plan_free(&plan);
}

static void test_patch_and_response(void) {
    json_t *pod = task_pod("{\"requests\": {\"cpu\": \"1\", \"ephemeral-storage\": \"1Gi\"}, "
                           "\"limits\": {\"cpu\": \"4\"}}",
                           NULL);
    sz_decision d = {.patch = true, .value = {1.25, 3 * GIB}};
    json_t *patch = sz_pod_patch(pod, &d);
    CHECK_INT(json_array_size(patch), 1);
    json_t *op = json_array_get(patch, 0);
    CHECK_STR(tm_json_str(op, "op", ""), "add");
    CHECK_STR(tm_json_str(op, "path", ""), "/spec/containers/0/resources");
    CHECK_STR(tm_json_str(op, "value.requests.cpu", ""), "1250m");
    CHECK_STR(tm_json_str(op, "value.requests.memory", ""), "3Gi");
    CHECK_STR(tm_json_str(op, "value.limits.memory", ""), "3Gi");
    CHECK_STR(tm_json_str(op, "value.limits.cpu", ""), "4");                   /* kept */
    CHECK_STR(tm_json_str(op, "value.requests.ephemeral-storage", ""), "1Gi"); /* kept */
    json_t *review = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "admission.k8s.io/v1", "kind",
                               "AdmissionReview", "request", "uid", "u-1");
    json_t *resp = sz_admission_response(review, patch, NULL);
    CHECK_STR(tm_json_str(resp, "response.uid", ""), "u-1");
    CHECK(tm_json_bool(resp, "response.allowed", false));
    CHECK_STR(tm_json_str(resp, "response.patchType", ""), "JSONPatch");
    /* the patch is base64 of the JSON text */
    char *text = json_dumps(patch, JSON_COMPACT);
    const char *b64 = tm_json_str(resp, "response.patch", "");
    size_t n = 0;
    char *decoded = tm_kube_base64_decode(b64, &n);
    CHECK(decoded && n == strlen(text) && memcmp(decoded, text, n) == 0);
    free(decoded);
    free(text);
    json_decref(resp);
    /* untouched: allowed, no patch */
    resp = sz_admission_response(review, NULL, NULL);
    CHECK(tm_json_bool(resp, "response.allowed", false));
    CHECK(json_object_get(json_object_get(resp, "response"), "patch") == NULL);
    json_decref(resp);
    /* no uid: not a review */
    json_t *bad = json_pack("{s:{}}", "request");
    CHECK(sz_admission_response(bad, NULL, NULL) == NULL);
    json_decref(bad);
    /* a pod without resources gets them whole */
    json_t *bare = task_pod("", NULL);
    json_t *p2 = sz_pod_patch(bare, &d);
    CHECK_STR(tm_json_str(json_array_get(p2, 0), "value.requests.cpu", ""), "1250m");
    json_decref(p2);
    json_decref(bare);
    json_decref(review);
    json_decref(patch);
    json_decref(pod);
}

/* A process whose peaks exceed the machine: its plan says the machine, the pod gets the
 * largest node, never more. */
static void test_peak_above_machine(void) {
    double mem[] = {100 * GIB, 200 * GIB}, cores[] = {40, 50};
    sz_plan plan = plan_of(mem, cores, 2);
    sz_decision d = decide("", NULL, &plan, NODE, NAN);
    CHECK(d.patch);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], NODE[SZ_RES_MEMORY], 0);
    CHECK_NEAR(d.value[SZ_RES_CORES], NODE[SZ_RES_CORES], 0);
    d = decide("", NULL, &plan, NODE, NODE[SZ_RES_MEMORY]);
    CHECK_NEAR(d.value[SZ_RES_MEMORY], NODE[SZ_RES_MEMORY], 0);
    sz_plan_free(&plan);
}

/* Random damage to a task pod: every field replaced by a random JSON value. Parsing either
 * refuses the pod or yields a decision within the node; nothing crashes (run under
 * make test-sanitize too). */
static json_t *random_value(unsigned *seed) {
    *seed = *seed * 1103515245u + 12345u;
    switch ((*seed >> 16) % 7) {
    case 0:
        return json_null();
    case 1:
        return json_integer((json_int_t)(*seed % 100000) - 50000);
    case 2:
        return json_real(-1e300 * ((*seed >> 3) % 3));
    case 3:
        return json_string("1e400");
    case 4:
        return json_array();
    case 5:
        return json_string(((*seed >> 8) & 1) ? "-5Gi" : "x,y=z");
    default:
        return json_object();
    }
}

static void damage(json_t *j, unsigned *seed, int depth) {
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(j, tmp, key, v) {
        *seed = *seed * 1103515245u + 12345u;
        if ((*seed >> 16) % 5 == 0)
            json_object_set_new(j, key, random_value(seed));
        else if (json_is_object(v) && depth < 6)
            damage(v, seed, depth + 1);
        else if (json_is_array(v) && json_is_object(json_array_get(v, 0)) && depth < 6)
            damage(json_array_get(v, 0), seed, depth + 1);
    }
}

static void test_random_damage(void) {
    double mem[] = {2 * GIB, 3 * GIB}, cores[] = {1, 2};
    sz_plan plan = plan_of(mem, cores, 2);
    unsigned seed = 7;
    int parsed = 0, refused = 0;
    for (int i = 0; i < 3000; i++) {
        json_t *pod = task_pod("{\"requests\": {\"cpu\": \"1\", \"memory\": \"1Gi\"}, "
                               "\"limits\": {\"cpu\": \"2\", \"memory\": \"1Gi\"}}",
                               NULL);
        damage(pod, &seed, 0);
        sz_pod p;
        tm_err err = {0};
        if (sz_pod_parse(pod, &p, &err) < 0) {
            refused++;
            json_decref(pod);
            continue;
        }
        parsed++;
        sz_decision d;
        sz_pod_decide(&p, &plan, NODE, (i % 3) ? NAN : GIB, &d);
        if (d.patch) {
            CHECKF(d.value[SZ_RES_MEMORY] > 0 && d.value[SZ_RES_MEMORY] <= NODE[SZ_RES_MEMORY],
                   "memory %g", d.value[SZ_RES_MEMORY]);
            CHECKF(d.value[SZ_RES_CORES] > 0 && d.value[SZ_RES_CORES] <= NODE[SZ_RES_CORES],
                   "cores %g", d.value[SZ_RES_CORES]);
            json_t *patch = sz_pod_patch(pod, &d);
            CHECK(patch != NULL);
            json_decref(patch);
        }
        json_decref(pod);
    }
    CHECK(parsed > 100 && refused > 100); /* both paths were exercised */
    sz_plan_free(&plan);
}

int main(void) {
    RUN(test_parse);
    RUN(test_failed_memory);
    RUN(test_decide);
    RUN(test_patch_and_response);
    RUN(test_peak_above_machine);
    RUN(test_random_damage);
    return TEST_SUMMARY();
}
