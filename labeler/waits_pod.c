/* waits_pod.c: see waits_pod.h. */
#include "labeler/waits_pod.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/gates.h"
#include "lib/jsonutil.h"
#include "lib/quantity.h"

double lab_waits_time_parse(const char *s) {
    struct tm tmv;
    memset(&tmv, 0, sizeof tmv);
    const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tmv) : NULL;
    if (!p)
        return -1;
    double frac = 0;
    if (*p == '.') {
        char *end;
        frac = strtod(p, &end); /* ".123" */
        p = end;
    }
    double off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
               isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
               isdigit((unsigned char)p[5])) {
        off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 + ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
        if (*p == '-')
            off = -off;
        p += 6;
    } else {
        return -1;
    }
    if (*p)
        return -1;
    time_t t = timegm(&tmv);
    return t < 0 ? -1 : (double)t + frac - off;
}

void lab_waits_time_format(double t, char *buf, size_t size) {
    time_t s = (time_t)floor(t);
    struct tm tmv;
    gmtime_r(&s, &tmv);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

bool lab_waits_prediction_stale(const lab_waits_pod *p, double queued, double target,
                                double slot_s) {
    return p->predicted < 0 || p->queued_at < 0 || fabs(floor(queued) - p->queued_at) >= 1 ||
           fabs(target - p->predicted) > slot_s;
}

/* cpu and memory of a resource list (a container's resources.requests, the pod's overhead;
 * absent = 0). */
static int requests(const json_t *req, long long *cpu, long long *mem, tm_err *err) {
    const char *cs = json_string_value(json_object_get(req, "cpu"));
    const char *ms = json_string_value(json_object_get(req, "memory"));
    int64_t v = 0, w = 0;
    if ((cs && tm_quantity_parse_milli(cs, &v, err) < 0) ||
        (ms && tm_quantity_parse(ms, &w, err) < 0))
        return -1;
    if (v < 0 || w < 0)
        return tm_err_set(err, "negative request");
    *cpu = v;
    *mem = w;
    return 0;
}

/* a + b for non-negative requests, LLONG_MAX when it would overflow (an absurd pod such as two
 * containers of 8Ei is a shape asa_key_make refuses, not undefined behaviour). */
static long long add_sat(long long a, long long b) {
    return a > LLONG_MAX - b ? LLONG_MAX : a + b;
}

/* The effective request: max(sum of containers, each init container) + overhead. */
static int effective(const json_t *spec, long long *cpu, long long *mem, tm_err *err) {
    long long sc = 0, sm = 0, c, m;
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(spec, "containers"), i, x) {
        if (requests(tm_json_path(x, "resources.requests"), &c, &m, err) < 0)
            return -1;
        sc = add_sat(sc, c);
        sm = add_sat(sm, m);
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, x) {
        if (requests(tm_json_path(x, "resources.requests"), &c, &m, err) < 0)
            return -1;
        sc = c > sc ? c : sc;
        sm = m > sm ? m : sm;
    }
    if (requests(json_object_get(spec, "overhead"), &c, &m, err) < 0)
        return -1;
    sc = add_sat(sc, c);
    sm = add_sat(sm, m);
    *cpu = sc;
    *mem = sm;
    return 0;
}

static double scheduled_at(const json_t *pod) {
    size_t i;
    const json_t *c;
    json_array_foreach(tm_json_path(pod, "status.conditions"), i, c) {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (type && st && strcmp(type, "PodScheduled") == 0 && strcmp(st, "True") == 0)
            return lab_waits_time_parse(
                json_string_value(json_object_get(c, "lastTransitionTime")));
    }
    return -1;
}

int lab_waits_pod_parse(const json_t *pod, lab_waits_pod *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    const char *ns = tm_json_str(pod, "metadata.namespace", NULL);
    const char *name = tm_json_str(pod, "metadata.name", NULL);
    const char *uid = tm_json_str(pod, "metadata.uid", "");
    if (!ns || !name || !*ns || !*name || strlen(ns) >= sizeof out->ns ||
        strlen(name) >= sizeof out->name || strlen(uid) >= sizeof out->uid)
        return tm_err_set(err, "pod without a usable metadata.namespace and name");
    snprintf(out->ns, sizeof out->ns, "%s", ns);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->uid, sizeof out->uid, "%s", *uid ? uid : name);
    out->created = lab_waits_time_parse(tm_json_str(pod, "metadata.creationTimestamp", NULL));
    if (out->created < 0)
        return tm_err_set(err, "pod %s/%s: no creationTimestamp", ns, name);
    const json_t *labels = tm_json_path(pod, "metadata.labels");
    const json_t *ann = tm_json_path(pod, "metadata.annotations");
    const char *gang = json_string_value(json_object_get(labels, "scheduling.x-k8s.io/pod-group"));
    if (!gang)
        gang = json_string_value(json_object_get(labels, "pod-group.scheduling.sigs.k8s.io"));
    const char *wl = tm_json_str(pod, "spec.workloadRef.name", NULL);
    if (gang && *gang)
        snprintf(out->gang, sizeof out->gang, "%.250s", gang);
    else if (wl && *wl)
        snprintf(out->gang, sizeof out->gang, "workload:%.240s/%.60s", wl,
                 tm_json_str(pod, "spec.workloadRef.podGroup", ""));
    const char *group = json_string_value(
        json_object_get(tm_json_path(pod, "spec.nodeSelector"), "tarema.io/group"));
    if (group && strlen(group) < sizeof out->group)
        snprintf(out->group, sizeof out->group, "%s", group);
    const json_t *gates = tm_json_path(pod, "spec.schedulingGates");
    out->gated = json_is_array(gates) && json_array_size(gates) > 0;
    const char *gate0 = tm_json_str(json_array_get(gates, 0), "name", "");
    out->held = out->gated && json_array_size(gates) == 1 && strcmp(gate0, TM_GATE_ORDER) == 0;
    out->mirror = json_object_get(ann, "kubernetes.io/config.mirror") != NULL;
    out->bound = scheduled_at(pod);
    out->queued_at =
        lab_waits_time_parse(json_string_value(json_object_get(ann, LAB_WAITS_ANN_QUEUED)));
    out->predicted =
        lab_waits_time_parse(json_string_value(json_object_get(ann, LAB_WAITS_ANN_START)));
    out->asa_at = lab_waits_time_parse(json_string_value(json_object_get(ann, TM_ANN_ASA_RELEASE)));
    if (effective(json_object_get(pod, "spec"), &out->cpu_milli, &out->mem_bytes, err) < 0)
        return tm_err_wrap(err, "pod %s/%s: requests", ns, name);
    return 0;
}

/* Copies obj[key] into dst when present. */
static void keep(json_t *dst, const json_t *src, const char *key) {
    json_t *v = json_object_get(src, key);
    if (v)
        json_object_set(dst, key, v);
}

json_t *lab_waits_pod_transform(void *ud, json_t *obj) {
    (void)ud;
    json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    json_t *m = json_object(), *s = json_object(), *st = json_object();
    json_t *out = json_pack("{s:o, s:o, s:o}", "metadata", m, "spec", s, "status", st);
    static const char *const mkeys[] = {
        "name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels"};
    for (size_t i = 0; i < sizeof mkeys / sizeof *mkeys; i++)
        keep(m, md, mkeys[i]);
    json_t *ann = json_object_get(md, "annotations"), *kept = json_object();
    static const char *const akeys[] = {"kubernetes.io/config.mirror", LAB_WAITS_ANN_START,
                                        LAB_WAITS_ANN_QUEUED, LAB_WAITS_ANN_WAIT,
                                        TM_ANN_ASA_RELEASE};
    for (size_t i = 0; i < sizeof akeys / sizeof *akeys; i++)
        keep(kept, ann, akeys[i]);
    json_object_set_new(m, "annotations", kept);
    static const char *const skeys[] = {"nodeSelector", "schedulingGates", "workloadRef",
                                        "overhead",     "nodeName",        "schedulerName"};
    for (size_t i = 0; i < sizeof skeys / sizeof *skeys; i++)
        keep(s, spec, skeys[i]);
    static const char *const ckeys[] = {"containers", "initContainers"};
    for (size_t k = 0; k < 2; k++) {
        json_t *src = json_object_get(spec, ckeys[k]), *dst = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(src, i, c) {
            json_t *r = tm_json_path(c, "resources.requests");
            json_array_append_new(dst, r ? json_pack("{s:{s:O}}", "resources", "requests", r)
                                         : json_object());
        }
        json_object_set_new(s, ckeys[k], dst);
    }
    json_t *conds = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(tm_json_path(obj, "status.conditions"), i, c) {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && strcmp(type, "PodScheduled") == 0)
            json_array_append(conds, c);
    }
    json_object_set_new(st, "conditions", conds);
    keep(st, json_object_get(obj, "status"), "phase");
    json_decref(obj);
    return out;
}
