/* podgroup.c: PodGroup and Workload JSON, pod membership (podgroup.h). */
#include "scheduler/plugins/gang/podgroup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/quantity.h"

void sched_gang_spec_free(sched_gang_spec *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n_min_res; i++)
        free(s->min_res[i].name);
    free(s->min_res);
    memset(s, 0, sizeof *s);
}

static void obj_name(const json_t *o, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", tm_json_str(o, "metadata.namespace", ""),
             tm_json_str(o, "metadata.name", ""));
}

/* An integer field: absent -> *out untouched and 0; not an integer -> error. */
static int get_int(const json_t *parent, const char *key, const char *what, const char *obj,
                   bool *present, json_int_t *out, tm_err *err) {
    const json_t *v = json_object_get(parent, key);
    *present = v != NULL && !json_is_null(v);
    if (!*present)
        return 0;
    if (!json_is_integer(v))
        return tm_err_set(err, "%s: %s must be an integer", obj, what);
    *out = json_integer_value(v);
    return 0;
}

int sched_podgroup_from_json(const json_t *pg, sched_gang_spec *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    char obj[600], on[540];
    obj_name(pg, on, sizeof on);
    snprintf(obj, sizeof obj, "PodGroup %s", on);
    const json_t *spec = json_object_get(pg, "spec");
    if (!json_is_object(spec))
        return tm_err_set(err, "%s: spec is missing", obj);
    bool have;
    json_int_t v = 0;
    if (get_int(spec, "minMember", "spec.minMember", obj, &have, &v, err))
        return -1;
    /* The CRD defaults minMember to nothing (0 in Go): a gang of at least nobody would bind
     * any subset, so it is refused rather than guessed. */
    if (!have || v < 1)
        return tm_err_set(err, "%s: spec.minMember must be at least 1, got %lld", obj,
                          have ? (long long)v : 0LL);
    if (v > INT32_MAX)
        return tm_err_set(err, "%s: spec.minMember %lld is too large", obj, (long long)v);
    out->min_member = (int32_t)v;
    v = 0;
    if (get_int(spec, "scheduleTimeoutSeconds", "spec.scheduleTimeoutSeconds", obj, &have, &v, err))
        return -1;
    if (have && v < 0)
        return tm_err_set(err, "%s: spec.scheduleTimeoutSeconds must not be negative, got %lld",
                          obj, (long long)v);
    if (have && v > 365LL * 24 * 3600)
        return tm_err_set(err, "%s: spec.scheduleTimeoutSeconds %lld is more than a year", obj,
                          (long long)v);
    out->timeout_ms = (int64_t)v * 1000;
    const json_t *mr = json_object_get(spec, "minResources");
    if (mr && !json_is_null(mr)) {
        if (!json_is_object(mr))
            return tm_err_set(err, "%s: spec.minResources must be an object of quantities", obj);
        out->min_res = calloc(json_object_size(mr) + 1, sizeof *out->min_res);
        if (!out->min_res)
            return tm_err_set(err, "out of memory");
        const char *k;
        json_t *q;
        json_object_foreach((json_t *)mr, k, q) {
            int64_t amount = 0;
            tm_err qe = {0};
            const char *s = json_string_value(q);
            char num[32];
            if (json_is_integer(q)) {
                snprintf(num, sizeof num, "%lld", (long long)json_integer_value(q));
                s = num;
            }
            int rc = !s                      ? tm_err_set(&qe, "not a quantity")
                     : strcmp(k, "cpu") == 0 ? tm_quantity_parse_milli(s, &amount, &qe)
                                             : tm_quantity_parse(s, &amount, &qe);
            if (rc || amount < 0) {
                if (!rc)
                    tm_err_set(&qe, "negative");
                tm_err_set(err, "%s: spec.minResources.%s: %s", obj, k, qe.msg);
                sched_gang_spec_free(out);
                return -1;
            }
            sched_min_resource *r = &out->min_res[out->n_min_res];
            if (!(r->name = strdup(k))) {
                sched_gang_spec_free(out);
                return tm_err_set(err, "out of memory");
            }
            r->amount = amount;
            out->n_min_res++;
        }
    }
    return 0;
}

void sched_workload_free(sched_workload *w) {
    if (!w)
        return;
    for (size_t i = 0; i < w->n_groups; i++)
        free(w->groups[i].name);
    free(w->groups);
    memset(w, 0, sizeof *w);
}

int sched_workload_from_json(const json_t *wl, sched_workload *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    char obj[600], on[540];
    obj_name(wl, on, sizeof on);
    snprintf(obj, sizeof obj, "Workload %s", on);
    /* v1alpha1 (1.35) names its groups podGroups with a policy; v1alpha2/v1beta1 (1.36+) name
     * them podGroupTemplates with a schedulingPolicy of the same shape. */
    const char *list = "podGroups", *policy = "policy";
    const json_t *groups = tm_json_path(wl, "spec.podGroups");
    if (!groups || json_is_null(groups)) {
        const json_t *t = tm_json_path(wl, "spec.podGroupTemplates");
        if (t && !json_is_null(t)) {
            groups = t;
            list = "podGroupTemplates";
            policy = "schedulingPolicy";
        }
    }
    if (!json_is_array(groups) || json_array_size(groups) == 0)
        return tm_err_set(err, "%s: spec.%s must be a non-empty list", obj, list);
    out->groups = calloc(json_array_size(groups), sizeof *out->groups);
    if (!out->groups)
        return tm_err_set(err, "out of memory");
    size_t i;
    const json_t *g;
    json_array_foreach(groups, i, g) {
        const char *name = tm_json_str(g, "name", "");
        if (!name[0]) {
            sched_workload_free(out);
            return tm_err_set(err, "%s: spec.%s[%zu].name is missing", obj, list, i);
        }
        for (size_t j = 0; j < out->n_groups; j++) {
            if (strcmp(out->groups[j].name, name) == 0) {
                sched_workload_free(out);
                return tm_err_set(err, "%s: spec.%s[%zu]: name %s is used twice", obj, list, i,
                                  name);
            }
        }
        sched_workload_group *wg = &out->groups[out->n_groups];
        const json_t *gang = json_object_get(json_object_get(g, policy), "gang");
        if (gang && !json_is_null(gang)) {
            bool have;
            json_int_t v = 0;
            char what[96];
            snprintf(what, sizeof what, "spec.%s[%zu].%s.gang.minCount", list, i, policy);
            if (get_int(gang, "minCount", what, obj, &have, &v, err)) {
                sched_workload_free(out);
                return -1;
            }
            if (!have || v < 1 || v > INT32_MAX) {
                sched_workload_free(out);
                return tm_err_set(err, "%s: %s must be at least 1, got %lld", obj, what,
                                  have ? (long long)v : 0LL);
            }
            wg->gang = true;
            wg->min_count = (int32_t)v;
        }
        if (!(wg->name = strdup(name))) {
            sched_workload_free(out);
            return tm_err_set(err, "out of memory");
        }
        out->n_groups++;
    }
    return 0;
}

const sched_workload_group *sched_workload_group_find(const sched_workload *w, const char *name) {
    for (size_t i = 0; w && i < w->n_groups; i++)
        if (strcmp(w->groups[i].name, name) == 0)
            return &w->groups[i];
    return NULL;
}

int sched_gang_ref_from_pod_json(const json_t *pod, sched_gang_ref *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    out->ns = tm_json_str(pod, "metadata.namespace", "");
    out->owner = out->group = out->replica = "";
    const json_t *labels = tm_json_path(pod, "metadata.labels");
    const char *pg = json_string_value(json_object_get(labels, SCHED_PODGROUP_LABEL));
    if (pg && pg[0]) {
        out->kind = SCHED_GANG_PODGROUP;
        out->owner = pg;
        return 0;
    }
    /* 1.36+: the pod names its PodGroup object (same namespace). */
    const json_t *sg = tm_json_path(pod, "spec.schedulingGroup");
    if (sg && !json_is_null(sg)) {
        const char *name = tm_json_str(sg, "podGroupName", "");
        if (!name[0])
            return tm_err_set(err, "pod %s/%s: spec.schedulingGroup needs podGroupName", out->ns,
                              tm_json_str(pod, "metadata.name", ""));
        out->kind = SCHED_GANG_NATIVE;
        out->owner = name;
        return 0;
    }
    const json_t *ref = tm_json_path(pod, "spec.workloadRef");
    if (!ref || json_is_null(ref))
        return 0;
    const char *name = tm_json_str(ref, "name", ""), *group = tm_json_str(ref, "podGroup", "");
    if (!name[0] || !group[0])
        return tm_err_set(err, "pod %s/%s: spec.workloadRef needs name and podGroup", out->ns,
                          tm_json_str(pod, "metadata.name", ""));
    out->kind = SCHED_GANG_WORKLOAD;
    out->owner = name;
    out->group = group;
    out->replica = tm_json_str(ref, "podGroupReplicaKey", "");
    return 0;
}

char *sched_gang_ref_key(const sched_gang_ref *r, char *buf, size_t cap) {
    if (r->kind == SCHED_GANG_PODGROUP)
        snprintf(buf, cap, "podgroup/%s/%s", r->ns, r->owner);
    else if (r->kind == SCHED_GANG_WORKLOAD)
        snprintf(buf, cap, "workload/%s/%s/%s/%s", r->ns, r->owner, r->group, r->replica);
    else if (r->kind == SCHED_GANG_NATIVE)
        snprintf(buf, cap, "k8s-podgroup/%s/%s", r->ns, r->owner);
    else if (cap)
        buf[0] = '\0';
    return buf;
}

const char *sched_gang_kind_object(sched_gang_kind k) {
    return k == SCHED_GANG_WORKLOAD ? "Workload" : "PodGroup";
}
