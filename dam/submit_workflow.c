/* submit_workflow.c: a request's planner Workflow on a cluster (submit_workflow.h). */
#include "dam/submit_workflow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "planner/workflow.h"

int dam_workflow_check(const json_t *wf, tm_err *err) {
    static const char *const keys[] = {"name", "steps", "retries", NULL};
    if (!json_is_object(wf))
        return tm_err_set(err, "submit.workflow: expected an object {\"steps\": [...]}");
    if (tm_json_check_keys(wf, keys, "submit.workflow", err) < 0)
        return -1;
    const json_t *name = json_object_get(wf, "name");
    if (name && (!json_is_string(name) || !*json_string_value(name)))
        return tm_err_set(err, "submit.workflow.name: expected a non-empty string");
    const json_t *retries = json_object_get(wf, "retries");
    if (retries && (!json_is_integer(retries) || json_integer_value(retries) < 0 ||
                    json_integer_value(retries) > 1000))
        return tm_err_set(err, "submit.workflow.retries: expected an integer from 0 to 1000");
    if (!json_object_get(wf, "steps"))
        return tm_err_set(err, "submit.workflow.steps: missing");
    /* The planner's parser wants the native document: name and steps. */
    json_t *native = json_pack("{s:s,s:O}", "name", name ? json_string_value(name) : "dam", "steps",
                               json_object_get(wf, "steps"));
    pl_workflow *w = native ? pl_workflow_from_native(native, "submit.workflow", err) : NULL;
    json_decref(native);
    if (!w)
        return -1;
    pl_workflow_free(w);
    return 0;
}

size_t dam_workflow_max_pods(const json_t *wf) {
    size_t max = 1, i;
    json_t *s;
    json_array_foreach(json_object_get(wf, "steps"), i, s) {
        json_int_t p = json_integer_value(json_object_get(s, "pods"));
        if (p > 0 && (size_t)p > max)
            max = (size_t)p;
    }
    return max;
}

void dam_workflow_name(const char *id, int attempt, char *out, size_t n) {
    snprintf(out, n, "dam-%.12s-%d", id, attempt);
}

json_t *dam_workflow_object(const json_t *wf, const char *id, int attempt, const char *ns) {
    char name[64];
    dam_workflow_name(id, attempt, name, sizeof name);
    json_t *spec = json_pack("{s:O}", "steps", json_object_get(wf, "steps"));
    if (json_object_get(wf, "retries"))
        json_object_set(spec, "retries", json_object_get(wf, "retries"));
    json_t *labels = json_pack("{s:s}", DAM_REQUEST_LABEL, id);
    if (json_object_get(wf, "name"))
        json_object_set(labels, "tarema.io/dam-workflow", json_object_get(wf, "name"));
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:o}", "apiVersion", DAM_WORKFLOW_GV, "kind",
                     "Workflow", "metadata", "name", name, "namespace", ns, "labels", labels,
                     "spec", spec);
}

int dam_workflow_create(tm_kube *k, const json_t *obj, tm_err *err) {
    const char *ns = tm_json_str(obj, "metadata.namespace", "default");
    char *path = tm_kube_path(DAM_WORKFLOW_GV, "workflows", ns, NULL, NULL);
    json_t *r = tm_kube_create(k, path, obj, err);
    free(path);
    if (!r)
        return tm_err_wrap(err, "creating workflow %s/%s", ns,
                           tm_json_str(obj, "metadata.name", "?"));
    json_decref(r);
    return 0;
}

dam_pods_state dam_workflow_state(const json_t *obj, char *reason, size_t n) {
    reason[0] = 0;
    if (!obj) {
        snprintf(reason, n, "the workflow is gone from the cluster");
        return DAM_PODS_FAILED;
    }
    const char *name = tm_json_str(obj, "metadata.name", "?");
    if (tm_json_path(obj, "metadata.deletionTimestamp")) {
        snprintf(reason, n, "workflow %s is being deleted", name);
        return DAM_PODS_FAILED;
    }
    const char *phase = tm_json_str(obj, "status.phase", "");
    if (strcmp(phase, "Succeeded") == 0)
        return DAM_PODS_SUCCEEDED;
    if (strcmp(phase, "Failed") == 0 || strcmp(phase, "Cancelled") == 0) {
        snprintf(reason, n, "workflow %s %s: %s", name, phase,
                 tm_json_str(obj, "status.message", ""));
        return DAM_PODS_FAILED;
    }
    return DAM_PODS_RUNNING;
}

int dam_workflow_follow(tm_kube *k, const char *ns, const char *name, dam_pods_state *state,
                        char *reason, size_t n, tm_err *err) {
    char *path = tm_kube_path(DAM_WORKFLOW_GV, "workflows", ns, name, NULL);
    tm_err e = {0};
    json_t *obj = tm_kube_get(k, path, &e);
    free(path);
    if (!obj && e.http_status != 404)
        return tm_err_set(err, "reading workflow %s/%s: %s", ns, name, e.msg);
    *state = dam_workflow_state(obj, reason, n);
    json_decref(obj);
    return 0;
}

int dam_workflow_delete(tm_kube *k, const char *ns, const char *name, tm_err *err) {
    char *path = tm_kube_path(DAM_WORKFLOW_GV, "workflows", ns, name, NULL);
    int rc = tm_kube_delete(k, path, err);
    free(path);
    if (rc < 0)
        return tm_err_wrap(err, "deleting workflow %s/%s", ns, name);
    return 0;
}
