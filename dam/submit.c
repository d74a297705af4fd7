/* submit.c: a request's pods on a cluster (submit.h). */
#include "dam/submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dam/submit_workflow.h"
#include "lib/jsonutil.h"

#define MAX_PODS 1000

int dam_submit_check(const json_t *submit, tm_err *err) {
    static const char *const keys[] = {"pods", "workflow", NULL};
    if (!json_is_object(submit))
        return tm_err_set(err, "submit: expected an object {\"pods\": [...]} or "
                               "{\"workflow\": {...}}");
    if (tm_json_check_keys(submit, keys, "submit", err) < 0)
        return -1;
    if (json_object_get(submit, "workflow")) {
        if (json_object_get(submit, "pods"))
            return tm_err_set(err, "submit: give either pods or workflow, not both");
        return dam_workflow_check(json_object_get(submit, "workflow"), err);
    }
    const json_t *pods = json_object_get(submit, "pods");
    if (!json_is_array(pods) || json_array_size(pods) == 0 || json_array_size(pods) > MAX_PODS)
        return tm_err_set(err, "submit.pods: expected a list of 1 to %d pods", MAX_PODS);
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        if (!json_is_object(p))
            return tm_err_set(err, "submit.pods[%zu]: expected a Pod object", i);
        const json_t *c = tm_json_path(p, "spec.containers");
        if (!json_is_array(c) || json_array_size(c) == 0)
            return tm_err_set(err, "submit.pods[%zu].spec.containers: expected a non-empty list",
                              i);
        const json_t *md = json_object_get(p, "metadata");
        if (md && !json_is_object(md))
            return tm_err_set(err, "submit.pods[%zu].metadata: expected an object", i);
    }
    return 0;
}

json_t *dam_submit_pods(const json_t *submit, const char *id, int attempt, const char *ns) {
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(submit, "pods"), i, t) {
        json_t *p = json_deep_copy(t);
        json_object_set_new(p, "apiVersion", json_string("v1"));
        json_object_set_new(p, "kind", json_string("Pod"));
        json_t *md = json_object_get(p, "metadata");
        if (!md) {
            md = json_object();
            json_object_set_new(p, "metadata", md);
        }
        char name[96];
        snprintf(name, sizeof name, "dam-%.12s-%d-%zu", id, attempt, i);
        json_object_set_new(md, "name", json_string(name));
        json_object_del(md, "generateName");
        json_object_set_new(md, "namespace", json_string(ns));
        json_t *labels = json_object_get(md, "labels");
        if (!json_is_object(labels)) {
            labels = json_object();
            json_object_set_new(md, "labels", labels);
        }
        json_object_set_new(labels, DAM_REQUEST_LABEL, json_string(id));
        json_t *spec = json_object_get(p, "spec");
        if (!json_object_get(spec, "restartPolicy"))
            json_object_set_new(spec, "restartPolicy", json_string("Never"));
        json_array_append_new(out, p);
    }
    return out;
}

static char *selector(const char *id) {
    size_t n = strlen(DAM_REQUEST_LABEL) + strlen(id) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s=%s", DAM_REQUEST_LABEL, id);
    return s;
}

int dam_submit_delete(tm_kube *k, const char *ns, const char *id, tm_err *err) {
    char *sel = selector(id);
    char *path = tm_kube_path("v1", "pods", ns, NULL, NULL);
    size_t n = strlen(path) + strlen(sel) * 3 + 32;
    char *full = malloc(n);
    /* DELETE on the collection with a label selector; the id is hex, '=' is escaped. */
    snprintf(full, n, "%s?labelSelector=%s%%3D%s", path, DAM_REQUEST_LABEL, id);
    tm_err e = {0};
    json_t *r = tm_kube_request(k, "DELETE", full, NULL, NULL, NULL, &e);
    free(sel);
    free(path);
    free(full);
    if (!r && e.http_status != 404)
        return tm_err_set(err, "deleting the pods of request %s in %s: %s", id, ns, e.msg);
    json_decref(r);
    return 0;
}

int dam_submit_create(tm_kube *k, const json_t *pods, tm_err *err) {
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        const char *ns = tm_json_str(p, "metadata.namespace", "default");
        char *path = tm_kube_path("v1", "pods", ns, NULL, NULL);
        json_t *r = tm_kube_create(k, path, p, err);
        free(path);
        if (!r) {
            tm_err_wrap(err, "creating pod %s/%s", ns, tm_json_str(p, "metadata.name", "?"));
            for (size_t j = 0; j < i; j++) {
                const json_t *q = json_array_get(pods, j);
                char *qp =
                    tm_kube_path("v1", "pods", ns, tm_json_str(q, "metadata.name", ""), NULL);
                tm_err ignore = {0};
                tm_kube_delete(k, qp, &ignore);
                free(qp);
            }
            return -1;
        }
        json_decref(r);
    }
    return 0;
}

int dam_submit_follow(tm_kube *k, const char *ns, const char *id, size_t expected,
                      dam_pods_state *state, char *reason, size_t n, tm_err *err) {
    char *sel = selector(id);
    char *path = tm_kube_path("v1", "pods", ns, NULL, NULL);
    tm_list_opts o = {.label_selector = sel};
    json_t *items = tm_kube_list(k, path, &o, NULL, err);
    free(sel);
    free(path);
    if (!items)
        return -1;
    size_t succeeded = 0, live = 0;
    *state = DAM_PODS_RUNNING;
    reason[0] = 0;
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p) {
        if (tm_json_path(p, "metadata.deletionTimestamp"))
            continue;
        live++;
        const char *phase = tm_json_str(p, "status.phase", "");
        if (strcmp(phase, "Succeeded") == 0) {
            succeeded++;
        } else if (strcmp(phase, "Failed") == 0 && *state != DAM_PODS_FAILED) {
            *state = DAM_PODS_FAILED;
            snprintf(reason, n, "pod %s failed: %s %s", tm_json_str(p, "metadata.name", "?"),
                     tm_json_str(p, "status.reason", ""), tm_json_str(p, "status.message", ""));
        }
    }
    if (*state != DAM_PODS_FAILED) {
        if (live < expected) {
            *state = DAM_PODS_FAILED;
            snprintf(reason, n, "%zu of %zu pods are gone from the cluster", expected - live,
                     expected);
        } else if (succeeded == expected) {
            *state = DAM_PODS_SUCCEEDED;
        }
    }
    json_decref(items);
    return 0;
}
