/* sizing_pod.c: see sizing_pod.h. */
#include "labeler/sizing_pod.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/labelvalue.h"
#include "lib/quantity.h"

#define MIB 1048576.0

/* A label or annotation value: NULL when absent, "" marks "present but not a string". */
static const char *meta_str(const json_t *meta, const char *field, const char *key, bool *bad) {
    json_t *v = json_object_get(json_object_get(meta, field), key);
    if (!v)
        return NULL;
    if (!json_is_string(v)) {
        *bad = true;
        return NULL;
    }
    return json_string_value(v);
}

/* A quantity of resources.<kind>.<name>: NAN when absent; -1 with err when not a quantity. */
static int quantity(const json_t *res, const char *kind, const char *name, bool milli, double *out,
                    tm_err *err) {
    *out = NAN;
    json_t *v = json_object_get(json_object_get(res, kind), name);
    if (!v)
        return 0;
    char buf[64];
    const char *s = json_string_value(v);
    if (!s && json_is_number(v)) {
        snprintf(buf, sizeof buf, "%.17g", json_number_value(v));
        s = buf;
    }
    int64_t q;
    if (!s || (milli ? tm_quantity_parse_milli(s, &q, err) : tm_quantity_parse(s, &q, err)) < 0)
        return tm_err_set(err, "resources.%s.%s is not a quantity", kind, name);
    if (q < 0)
        return tm_err_set(err, "resources.%s.%s is negative (%s)", kind, name, s);
    /* zero bounds nothing: as if unset (a limit of 0 would otherwise cap every request) */
    *out = q == 0 ? NAN : milli ? (double)q / 1000.0 : (double)q;
    return 0;
}

int sz_pod_parse(const json_t *pod, sz_pod *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    out->declared[SZ_RES_CORES] = out->declared[SZ_RES_MEMORY] = out->cpu_limit = NAN;
    const json_t *meta = json_object_get(pod, "metadata");
    if (!json_is_object(pod) || !json_is_object(meta))
        return tm_err_set(err, "the pod has no metadata object");
    bool bad = false;
    const char *app = meta_str(meta, "labels", "nextflow.io/app", &bad);
    const char *task = meta_str(meta, "labels", "nextflow.io/taskName", &bad);
    const char *proc = meta_str(meta, "labels", "nextflow.io/processName", &bad);
    const char *run = meta_str(meta, "labels", "nextflow.io/runName", &bad);
    const char *wf = meta_str(meta, "annotations", SZ_POD_WORKFLOW_KEY, &bad);
    if (!wf)
        wf = meta_str(meta, "labels", SZ_POD_WORKFLOW_KEY, &bad);
    const char *opt = meta_str(meta, "annotations", SZ_POD_OPT_OUT, &bad);
    if (bad)
        return tm_err_set(err, "a label or annotation of the pod is not a string");
    out->opted_out = opt && strcmp(opt, "off") == 0;
    out->task = app && strcmp(app, "nextflow") == 0 && task && *task && proc && *proc;
    tm_label_value_sanitize(wf ? wf : "", out->workflow);
    tm_label_value_sanitize(proc ? proc : "", out->process);
    snprintf(out->task_name, sizeof out->task_name, "%s", task ? task : "");
    snprintf(out->run, sizeof out->run, "%s", run ? run : "");
    const json_t *containers = tm_json_path(pod, "spec.containers");
    if (containers && !json_is_array(containers))
        return tm_err_set(err, "spec.containers is not an array");
    const json_t *c0 = json_array_get(containers, 0);
    if (!c0)
        return 0;
    if (!json_is_object(c0))
        return tm_err_set(err, "spec.containers[0] is not an object");
    out->has_container = true;
    const json_t *res = json_object_get(c0, "resources");
    if (res && !json_is_object(res))
        return tm_err_set(err, "spec.containers[0].resources is not an object");
    double mreq, mlim;
    if (quantity(res, "requests", "cpu", true, &out->declared[SZ_RES_CORES], err) < 0 ||
        quantity(res, "limits", "cpu", true, &out->cpu_limit, err) < 0 ||
        quantity(res, "requests", "memory", false, &mreq, err) < 0 ||
        quantity(res, "limits", "memory", false, &mlim, err) < 0)
        return tm_err_wrap(err, "spec.containers[0]");
    out->declared[SZ_RES_MEMORY] = isfinite(mlim) ? mlim : mreq;
    /* Kubernetes copies a cpu limit into an absent request: so do we */
    if (!isfinite(out->declared[SZ_RES_CORES]))
        out->declared[SZ_RES_CORES] = out->cpu_limit;
    return 0;
}

static bool oom_killed(const json_t *cs) {
    const char *a = tm_json_str(cs, "state.terminated.reason", "");
    const char *b = tm_json_str(cs, "lastState.terminated.reason", "");
    return strcmp(a, "OOMKilled") == 0 || strcmp(b, "OOMKilled") == 0;
}

double sz_pod_failed_memory(const json_t *pods) {
    double worst = NAN;
    size_t i;
    json_t *item;
    json_array_foreach(pods, i, item) {
        bool oom = false;
        size_t j;
        json_t *cs;
        json_array_foreach(tm_json_path(item, "status.containerStatuses"), j, cs) {
            oom |= oom_killed(cs);
        }
        if (!oom)
            continue;
        sz_pod p;
        tm_err err = {{0}, 0};
        if (sz_pod_parse(item, &p, &err) < 0 || !isfinite(p.declared[SZ_RES_MEMORY]))
            continue;
        if (!isfinite(worst) || p.declared[SZ_RES_MEMORY] > worst)
            worst = p.declared[SZ_RES_MEMORY];
    }
    return worst;
}

static double min_known(double a, double b) {
    return isfinite(b) && b < a ? b : a;
}

void sz_pod_decide(const sz_pod *pod, const sz_plan *plan, const double node_max[SZ_RES_N],
                   double failed_memory, sz_decision *d) {
    *d = (sz_decision){.value = {NAN, NAN}};
    if (!pod->task) {
        snprintf(d->reason, sizeof d->reason, "not a Nextflow task pod");
        return;
    }
    if (pod->opted_out) {
        snprintf(d->reason, sizeof d->reason, "opted out (%s: off)", SZ_POD_OPT_OUT);
        return;
    }
    if (!pod->has_container) {
        snprintf(d->reason, sizeof d->reason, "no container");
        return;
    }
    for (int r = 0; r < SZ_RES_N; r++)
        if (!(isfinite(node_max[r]) && node_max[r] > 0)) {
            snprintf(d->reason, sizeof d->reason, "node sizes unknown");
            return;
        }
    /* The least we write (1m, 1 MiB) must fit the largest node too (found by the admission
     * fuzz target: a node of 1000 bytes got a request of 1 MiB). */
    if (node_max[SZ_RES_CORES] < 0.001 || node_max[SZ_RES_MEMORY] < MIB) {
        snprintf(d->reason, sizeof d->reason,
                 "largest node (%g cores, %.0f bytes) below 1m cpu or 1 MiB memory",
                 node_max[SZ_RES_CORES], node_max[SZ_RES_MEMORY]);
        return;
    }
    bool ready = plan && plan->ready;
    const char *basis = ready ? "history" : "no history: declared or whole machine";
    for (int r = 0; r < SZ_RES_N; r++) {
        double dec = pod->declared[r];
        double v = ready ? sz_plan_first(plan, r) : NAN;
        if (isfinite(v))
            v = min_known(v, dec); /* a declaration is an upper bound */
        else
            v = isfinite(dec) ? dec : node_max[r];
        d->value[r] = v;
    }
    if (isfinite(failed_memory)) {
        double v = ready ? sz_plan_retry(plan, SZ_RES_MEMORY, failed_memory) : NAN;
        if (!isfinite(v))
            v = node_max[SZ_RES_MEMORY];
        double dec = pod->declared[SZ_RES_MEMORY];
        if (isfinite(dec) && dec > v)
            v = dec;
        d->value[SZ_RES_MEMORY] = v;
        d->retry = true;
        basis = "retry after OOMKilled";
    }
    /* Written values: cpu in whole millicores, memory in whole MiB (rounded up), never above
     * the largest node nor a cpu limit, never zero. */
    double c = ceil(d->value[SZ_RES_CORES] * 1000.0 - 1e-6) / 1000.0;
    c = fmax(0.001, fmin(c, floor(node_max[SZ_RES_CORES] * 1000.0) / 1000.0));
    d->value[SZ_RES_CORES] = min_known(c, pod->cpu_limit);
    double m = ceil(d->value[SZ_RES_MEMORY] / MIB - 1e-9) * MIB;
    d->value[SZ_RES_MEMORY] = fmax(MIB, fmin(m, floor(node_max[SZ_RES_MEMORY])));
    d->patch = true;
    snprintf(d->reason, sizeof d->reason, "%s: cpu %.3f, memory %.0f MiB", basis,
             d->value[SZ_RES_CORES], d->value[SZ_RES_MEMORY] / MIB);
}

json_t *sz_pod_patch(const json_t *pod, const sz_decision *d) {
    const json_t *c0 = json_array_get(tm_json_path(pod, "spec.containers"), 0);
    if (!json_is_object(c0) || !d->patch)
        return NULL;
    json_t *res = json_object_get(c0, "resources");
    res = json_is_object(res) ? json_deep_copy(res) : json_object();
    json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
    if (!json_is_object(req))
        json_object_set_new(res, "requests", req = json_object());
    if (!json_is_object(lim))
        json_object_set_new(res, "limits", lim = json_object());
    char buf[TM_QUANTITY_BUF];
    int64_t milli = (int64_t)llround(d->value[SZ_RES_CORES] * 1000.0);
    json_object_set_new(req, "cpu", json_string(tm_quantity_format_milli(milli, buf, sizeof buf)));
    int64_t bytes = (int64_t)d->value[SZ_RES_MEMORY];
    tm_quantity_format_bytes(bytes, buf, sizeof buf);
    json_object_set_new(req, "memory", json_string(buf));
    json_object_set_new(lim, "memory", json_string(buf));
    /* "add" replaces an existing member: one operation whether resources existed or not */
    return json_pack("[{s:s, s:s, s:o}]", "op", "add", "path", "/spec/containers/0/resources",
                     "value", res);
}

static char *base64(const char *in, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)in[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)in[i + 2];
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

json_t *sz_admission_response(const json_t *review, const json_t *patch, const char *warning) {
    const char *uid = tm_json_str(review, "request.uid", NULL);
    if (!uid)
        return NULL;
    json_t *resp = json_pack("{s:s, s:b}", "uid", uid, "allowed", 1);
    if (patch) {
        char *text = json_dumps(patch, JSON_COMPACT);
        char *b64 = text ? base64(text, strlen(text)) : NULL;
        free(text);
        if (!b64) {
            json_decref(resp);
            return NULL;
        }
        json_object_set_new(resp, "patchType", json_string("JSONPatch"));
        json_object_set_new(resp, "patch", json_string(b64));
        free(b64);
    }
    if (warning && *warning)
        json_object_set_new(resp, "warnings", json_pack("[s]", warning));
    return json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
                     "AdmissionReview", "response", resp);
}
