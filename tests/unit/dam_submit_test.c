/* dam_submit_test.c: the submit part of a DAM request: pods or a planner Workflow, each bad
 * field named; the Workflow object the DAM creates; its status.phase read as the submission's
 * state. */
#include <string.h>

#include "dam/submit.h"
#include "dam/submit_workflow.h"
#include "harness.h"
#include "lib/jsonutil.h"

static const char *WF =
    "{\"workflow\": {\"name\": \"two\", \"retries\": 1, \"steps\": ["
    "{\"name\": \"prep\", \"requests\": {\"cpu\": 1, \"memory\": \"1Gi\"},"
    " \"duration\": \"20s\", \"image\": \"busybox\"},"
    "{\"name\": \"sim\", \"pods\": 3, \"requests\": {\"cpu\": 2, \"memory\":"
    " \"1Gi\"}, \"duration\": 30, \"image\": \"busybox\", \"after\": [\"prep\"]}"
    "]}}";

static json_t *js(const char *text) {
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    if (!v)
        printf("    json: %s at %d:%d\n", je.text, je.line, je.column);
    return v;
}

/* The error dam_submit_check gives for text ("" when accepted). */
static const char *check_msg(const char *text, tm_err *err) {
    json_t *v = js(text);
    memset(err, 0, sizeof *err);
    int rc = v ? dam_submit_check(v, err) : -1;
    json_decref(v);
    return rc == 0 ? "" : err->msg;
}

static void test_workflow_accepted(void) {
    tm_err err;
    CHECK_STR(check_msg(WF, &err), "");
    json_t *s = js(WF);
    CHECK_INT((long long)dam_workflow_max_pods(json_object_get(s, "workflow")), 3);
    json_decref(s);
}

static void test_workflow_fields_named(void) {
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"{\"workflow\": 3}", "submit.workflow: expected an object"},
        {"{\"workflow\": {}}", "submit.workflow.steps: missing"},
        {"{\"workflow\": {\"steps\": []}}", "submit.workflow: steps must be a non-empty list"},
        {"{\"workflow\": {\"steps\": [{\"name\": \"a\"}]}}", "submit.workflow: step 'a': requests"},
        {"{\"workflow\": {\"steps\": [{\"name\": \"a\", \"requests\": {\"cpu\": 1, \"memory\":"
         " \"1Gi\"}, \"image\": \"x\"}]}}",
         "submit.workflow: step 'a': duration is required"},
        {"{\"workflow\": {\"steps\": [{\"name\": \"a\", \"requests\": {\"cpu\": 1, \"memory\":"
         " \"1Gi\"}, \"duration\": 5, \"image\": \"x\", \"after\": [\"b\"]}]}}",
         "after: unknown step 'b'"},
        {"{\"workflow\": {\"cancel\": true, \"steps\": []}}", "submit.workflow: unknown key"},
        {"{\"workflow\": {\"retries\": -1, \"steps\": []}}", "submit.workflow.retries"},
        {"{\"workflow\": {\"name\": 5, \"steps\": []}}", "submit.workflow.name"},
        {"{\"pods\": [{\"spec\": {\"containers\": [{}]}}], \"workflow\": {}}",
         "submit: give either pods or workflow"},
        {"{\"pod\": []}", "submit: unknown key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tm_err err;
        const char *msg = check_msg(cases[i].body, &err);
        CHECKF(strstr(msg, cases[i].want) != NULL, "%s: got '%s', want '%s'", cases[i].body, msg,
               cases[i].want);
    }
}

static void test_workflow_object(void) {
    json_t *s = js(WF);
    const char *id = "0123456789abcdef0123456789abcdef";
    json_t *o = dam_workflow_object(json_object_get(s, "workflow"), id, 2, "ns1");
    CHECK_STR(tm_json_str(o, "apiVersion", ""), "tarema.io/v1alpha1");
    CHECK_STR(tm_json_str(o, "kind", ""), "Workflow");
    CHECK_STR(tm_json_str(o, "metadata.name", ""), "dam-0123456789ab-2");
    CHECK_STR(tm_json_str(o, "metadata.namespace", ""), "ns1");
    CHECK_STR(
        json_string_value(json_object_get(tm_json_path(o, "metadata.labels"), DAM_REQUEST_LABEL)),
        id);
    CHECK_INT((long long)json_array_size(tm_json_path(o, "spec.steps")), 2);
    CHECK_INT(json_integer_value(tm_json_path(o, "spec.retries")), 1);
    CHECK(tm_json_path(o, "spec.name") == NULL); /* not a field of the CRD's spec */
    CHECK(tm_json_path(o, "spec.cancel") == NULL);
    json_decref(o);
    json_decref(s);
}

static dam_pods_state state_of(const char *obj, char *reason, size_t n) {
    json_t *o = obj ? js(obj) : NULL;
    dam_pods_state st = dam_workflow_state(o, reason, n);
    json_decref(o);
    return st;
}

static void test_workflow_state(void) {
    char r[256];
    CHECK_INT(state_of("{\"metadata\": {\"name\": \"w\"}}", r, sizeof r), DAM_PODS_RUNNING);
    CHECK_INT(state_of("{\"metadata\": {\"name\": \"w\"}, \"status\": {\"phase\": \"Running\"}}", r,
                       sizeof r),
              DAM_PODS_RUNNING);
    CHECK_INT(state_of("{\"metadata\": {\"name\": \"w\"}, \"status\": {\"phase\": \"Planned\"}}", r,
                       sizeof r),
              DAM_PODS_RUNNING);
    CHECK_INT(state_of("{\"metadata\": {\"name\": \"w\"}, \"status\": {\"phase\": \"Succeeded\"}}",
                       r, sizeof r),
              DAM_PODS_SUCCEEDED);
    CHECK_INT(state_of("{\"metadata\": {\"name\": \"w\"}, \"status\": {\"phase\": \"Failed\","
                       " \"message\": \"step sim failed\"}}",
                       r, sizeof r),
              DAM_PODS_FAILED);
    CHECK(strstr(r, "step sim failed") != NULL);
    CHECK_INT(state_of("{\"metadata\": {\"name\": \"w\"}, \"status\": {\"phase\": \"Cancelled\"}}",
                       r, sizeof r),
              DAM_PODS_FAILED);
    CHECK_INT(state_of(NULL, r, sizeof r), DAM_PODS_FAILED);
    CHECK(strstr(r, "gone") != NULL);
}

static void test_pods_still_accepted(void) {
    tm_err err;
    CHECK_STR(check_msg("{\"pods\": [{\"spec\": {\"containers\": [{\"name\": \"c\"}]}}]}", &err),
              "");
    CHECK(
        strstr(check_msg("{\"pods\": [{\"spec\": {}}]}", &err), "submit.pods[0].spec.containers"));
}

int main(void) {
    RUN(test_workflow_accepted);
    RUN(test_workflow_fields_named);
    RUN(test_workflow_object);
    RUN(test_workflow_state);
    RUN(test_pods_still_accepted);
    return TEST_SUMMARY();
}
