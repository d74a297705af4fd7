/* podspec.c: Kubernetes Pod / Node / TaskProfile JSON -> scheduler structs.
 *
 * Pod requests follow k8s.io/component-helpers resource.PodRequests: the sum of the regular
 * containers plus restartable (sidecar) init containers, or the largest init container step if
 * that is bigger, plus spec.overhead. Every error names the object and the field. */
#include "scheduler/podspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "lib/quantity.h"

sched_keys sched_keys_default(void) {
    return (sched_keys){.process_label = "nextflow.io/processName",
                        .workflow_key = "tarema.io/workflow"};
}

static const char *obj_str(const json_t *obj, const char *key) {
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static char *dup_or_empty(const char *s) {
    return strdup(s ? s : "");
}

/* A quantity given as a JSON string (the norm) or number. */
static int quantity(const json_t *v, int slot, int64_t *out, const char *what, const char *name,
                    tm_err *err) {
    char buf[64];
    const char *s;
    if (json_is_string(v)) {
        s = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        s = buf;
    } else if (json_is_real(v)) {
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        s = buf;
    } else {
        return tm_err_set(err, "%s: %s is not a quantity", what, name);
    }
    int rc = slot == SCHED_RES_CPU ? tm_quantity_parse_milli(s, out, err)
                                   : tm_quantity_parse(s, out, err);
    if (rc != 0)
        return tm_err_wrap(err, "%s: %s", what, name);
    return 0;
}

/* A resource list object ({"cpu": "100m", ...}) added into out. */
static int resource_list(sched_snapshot *s, const json_t *list, sched_resources *out,
                         const char *what, tm_err *err) {
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_object(list))
        return tm_err_set(err, "%s is not an object", what);
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)list, name, v) {
        int slot = sched_snapshot_resource_slot(s, name, err);
        if (slot < 0)
            return tm_err_wrap(err, "%s", what);
        int64_t q;
        if (quantity(v, slot, &q, what, name, err) != 0)
            return -1;
        out->v[slot] += q;
    }
    return 0;
}

static void res_max(sched_resources *a, const sched_resources *b) {
    for (int i = 0; i < SCHED_RES_MAX; i++)
        if (b->v[i] > a->v[i])
            a->v[i] = b->v[i];
}

static void res_add(sched_resources *a, const sched_resources *b) {
    for (int i = 0; i < SCHED_RES_MAX; i++)
        a->v[i] += b->v[i];
}

static int container_requests(sched_snapshot *s, const json_t *c, sched_resources *out,
                              const char *what, tm_err *err) {
    memset(out, 0, sizeof *out);
    const json_t *res = json_object_get(c, "resources");
    return resource_list(s, res ? json_object_get(res, "requests") : NULL, out, what, err);
}

int sched_pod_requests_from_json(sched_snapshot *s, const json_t *pod, sched_resources *out,
                                 tm_err *err) {
    memset(out, 0, sizeof *out);
    const char *pname = tm_json_str(pod, "metadata.name", "?");
    const json_t *spec = json_object_get(pod, "spec");
    if (!json_is_object(spec))
        return tm_err_set(err, "pod %s: no spec", pname);
    char what[320];
    sched_resources c, sidecars = {0}, init_max = {0};
    size_t i;
    const json_t *ctr;
    json_array_foreach(json_object_get(spec, "containers"), i, ctr) {
        snprintf(what, sizeof what, "pod %s: spec.containers[%zu].resources.requests", pname, i);
        if (container_requests(s, ctr, &c, what, err) != 0)
            return -1;
        res_add(out, &c);
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, ctr) {
        snprintf(what, sizeof what, "pod %s: spec.initContainers[%zu].resources.requests", pname,
                 i);
        if (container_requests(s, ctr, &c, what, err) != 0)
            return -1;
        const char *rp = obj_str(ctr, "restartPolicy");
        if (rp && strcmp(rp, "Always") == 0) { /* a sidecar keeps running beside the rest */
            res_add(&sidecars, &c);
            res_max(&init_max, &sidecars);
        } else {
            res_add(&c, &sidecars);
            res_max(&init_max, &c);
        }
    }
    res_add(out, &sidecars);
    res_max(out, &init_max);
    snprintf(what, sizeof what, "pod %s: spec.overhead", pname);
    if (resource_list(s, json_object_get(spec, "overhead"), out, what, err) != 0)
        return -1;
    out->v[SCHED_RES_PODS] = 1;
    return 0;
}

static int parse_effect(const char *e, sched_effect *out, bool allow_empty) {
    if ((!e || !*e) && allow_empty)
        *out = SCHED_EFFECT_NONE;
    else if (e && strcmp(e, "NoSchedule") == 0)
        *out = SCHED_EFFECT_NO_SCHEDULE;
    else if (e && strcmp(e, "PreferNoSchedule") == 0)
        *out = SCHED_EFFECT_PREFER_NO_SCHEDULE;
    else if (e && strcmp(e, "NoExecute") == 0)
        *out = SCHED_EFFECT_NO_EXECUTE;
    else
        return -1;
    return 0;
}

static int parse_tolerations(sched_pod *p, const json_t *arr, tm_err *err) {
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return tm_err_set(err, "pod %s/%s: spec.tolerations is not a list", p->ns, p->name);
    p->tolerations = calloc(json_array_size(arr) + 1, sizeof *p->tolerations);
    if (!p->tolerations)
        return tm_err_set(err, "out of memory");
    size_t i;
    const json_t *t;
    json_array_foreach(arr, i, t) {
        sched_toleration *o = &p->tolerations[p->n_tolerations];
        const char *op = obj_str(t, "operator");
        if (!op || !*op || strcmp(op, "Equal") == 0)
            o->op = SCHED_TOL_EQUAL;
        else if (strcmp(op, "Exists") == 0)
            o->op = SCHED_TOL_EXISTS;
        else
            return tm_err_set(err,
                              "pod %s/%s: spec.tolerations[%zu].operator \"%s\" is not Equal or "
                              "Exists",
                              p->ns, p->name, i, op);
        const char *eff = obj_str(t, "effect");
        if (parse_effect(eff, &o->effect, true) != 0)
            return tm_err_set(err,
                              "pod %s/%s: spec.tolerations[%zu].effect \"%s\" is not NoSchedule, "
                              "PreferNoSchedule or NoExecute",
                              p->ns, p->name, i, eff);
        o->key = dup_or_empty(obj_str(t, "key"));
        o->value = dup_or_empty(obj_str(t, "value"));
        p->n_tolerations++;
        if (!o->key || !o->value)
            return tm_err_set(err, "out of memory");
    }
    return 0;
}

static int parse_node_selector(sched_pod *p, const json_t *sel, tm_err *err) {
    if (!sel || json_is_null(sel))
        return 0;
    if (!json_is_object(sel))
        return tm_err_set(err, "pod %s/%s: spec.nodeSelector is not a map", p->ns, p->name);
    p->node_selector = calloc(json_object_size(sel) + 1, sizeof *p->node_selector);
    if (!p->node_selector)
        return tm_err_set(err, "out of memory");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)sel, k, v) {
        if (!json_is_string(v))
            return tm_err_set(err, "pod %s/%s: spec.nodeSelector[%s] is not a string", p->ns,
                              p->name, k);
        sched_label *l = &p->node_selector[p->n_node_selector++];
        l->key = strdup(k);
        l->value = strdup(json_string_value(v));
        if (!l->key || !l->value)
            return tm_err_set(err, "out of memory");
    }
    return 0;
}

static const char *const sel_ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};

static int parse_req(sched_pod *p, const json_t *j, bool is_field, sched_sel_req *r,
                     const char *where, tm_err *err) {
    const char *key = obj_str(j, "key"), *op = obj_str(j, "operator");
    if (!key || !*key)
        return tm_err_set(err, "pod %s/%s: %s: key is missing", p->ns, p->name, where);
    r->is_field = is_field;
    if (!(r->key = strdup(key)))
        return tm_err_set(err, "out of memory");
    size_t o = 0;
    while (o < 6 && (!op || strcmp(op, sel_ops[o]) != 0))
        o++;
    if (o == 6 || (is_field && o > 1))
        return tm_err_set(err, "pod %s/%s: %s: operator \"%s\" is not one of %s", p->ns, p->name,
                          where, op ? op : "",
                          is_field ? "In, NotIn" : "In, NotIn, Exists, DoesNotExist, Gt, Lt");
    r->op = (sched_sel_op)o;
    const json_t *vals = json_object_get(j, "values");
    size_t nv = json_is_array(vals) ? json_array_size(vals) : 0;
    if ((r->op == SCHED_SEL_IN || r->op == SCHED_SEL_NOT_IN) && nv == 0)
        return tm_err_set(err, "pod %s/%s: %s: operator %s needs values", p->ns, p->name, where,
                          op);
    if ((r->op == SCHED_SEL_EXISTS || r->op == SCHED_SEL_DOES_NOT_EXIST) && nv != 0)
        return tm_err_set(err, "pod %s/%s: %s: operator %s takes no values", p->ns, p->name, where,
                          op);
    if ((r->op == SCHED_SEL_GT || r->op == SCHED_SEL_LT) && nv != 1)
        return tm_err_set(err, "pod %s/%s: %s: operator %s needs exactly one value", p->ns, p->name,
                          where, op);
    r->values = calloc(nv + 1, sizeof *r->values);
    if (!r->values)
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < nv; i++) {
        const json_t *v = json_array_get(vals, i);
        if (!json_is_string(v))
            return tm_err_set(err, "pod %s/%s: %s: values[%zu] is not a string", p->ns, p->name,
                              where, i);
        if (!(r->values[r->n_values++] = strdup(json_string_value(v))))
            return tm_err_set(err, "out of memory");
    }
    if (r->op == SCHED_SEL_GT || r->op == SCHED_SEL_LT) {
        char *end;
        long long x = strtoll(r->values[0], &end, 10);
        if (!*r->values[0] || *end)
            return tm_err_set(err, "pod %s/%s: %s: value \"%s\" of %s is not an integer", p->ns,
                              p->name, where, r->values[0], op);
        r->num = x;
    }
    return 0;
}

static int parse_affinity(sched_pod *p, const json_t *spec, tm_err *err) {
    const json_t *na = json_object_get(json_object_get(spec, "affinity"), "nodeAffinity");
    const json_t *req = json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution");
    if (!req || json_is_null(req))
        return 0;
    p->has_affinity = true;
    const json_t *terms = json_object_get(req, "nodeSelectorTerms");
    if (!json_is_array(terms))
        return 0; /* required affinity without terms matches no node */
    p->affinity = calloc(json_array_size(terms) + 1, sizeof *p->affinity);
    if (!p->affinity)
        return tm_err_set(err, "out of memory");
    size_t t;
    const json_t *term;
    json_array_foreach(terms, t, term) {
        sched_sel_term *o = &p->affinity[p->n_affinity++];
        const json_t *ex = json_object_get(term, "matchExpressions");
        const json_t *fi = json_object_get(term, "matchFields");
        size_t ne = json_is_array(ex) ? json_array_size(ex) : 0;
        size_t nf = json_is_array(fi) ? json_array_size(fi) : 0;
        o->reqs = calloc(ne + nf + 1, sizeof *o->reqs);
        if (!o->reqs)
            return tm_err_set(err, "out of memory");
        for (size_t i = 0; i < ne + nf; i++) {
            char where[160];
            snprintf(where, sizeof where,
                     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                     "nodeSelectorTerms[%zu].%s[%zu]",
                     t, i < ne ? "matchExpressions" : "matchFields", i < ne ? i : i - ne);
            const json_t *j = i < ne ? json_array_get(ex, i) : json_array_get(fi, i - ne);
            int rc = parse_req(p, j, i >= ne, &o->reqs[o->n_reqs], where, err);
            o->n_reqs++; /* counted even on error so sched_pod_free frees it */
            if (rc != 0)
                return -1;
        }
    }
    return 0;
}

/* RFC 3339 "2024-05-01T12:00:00Z" (fraction and offset tolerated) -> ms; 0 when absent. */
static int64_t parse_time_ms(const char *s) {
    struct tm tm = {0};
    if (!s)
        return 0;
    const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!rest)
        return 0;
    int64_t ms = (int64_t)timegm(&tm) * 1000;
    if (*rest == '.') {
        int64_t frac = 0, scale = 100;
        for (rest++; *rest >= '0' && *rest <= '9'; rest++, scale /= 10)
            frac += scale > 0 ? (*rest - '0') * scale : 0;
        ms += frac;
    }
    if (*rest == '+' || *rest == '-') {
        int hh = 0, mm = 0;
        if (sscanf(rest + 1, "%d:%d", &hh, &mm) == 2)
            ms -= (*rest == '+' ? 1 : -1) * ((int64_t)hh * 3600 + mm * 60) * 1000;
    }
    return ms;
}

static int parse_label_annotation(sched_pod *p, const json_t *ann, const char *key, int *out,
                                  tm_err *err) {
    const char *v = obj_str(ann, key);
    if (!v)
        return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 1 || x > 1000000)
        return tm_err_set(err, "pod %s/%s: annotation %s=\"%s\" is not an integer >= 1", p->ns,
                          p->name, key, v);
    *out = (int)x;
    return 0;
}

sched_pod *sched_pod_from_json(sched_snapshot *s, const json_t *pod, const sched_keys *keys,
                               tm_err *err) {
    sched_keys dk = sched_keys_default();
    if (!keys)
        keys = &dk;
    if (!json_is_object(pod)) {
        tm_err_set(err, "pod is not a JSON object");
        return NULL;
    }
    const json_t *meta = json_object_get(pod, "metadata");
    const char *name = obj_str(meta, "name");
    if (!name || !*name) {
        tm_err_set(err, "pod without metadata.name");
        return NULL;
    }
    const char *ns = obj_str(meta, "namespace");
    const char *uid = obj_str(meta, "uid");
    /* pods from a list without uid (fixtures, dry runs) are keyed by namespace/name */
    char uidbuf[512];
    if (!uid || !*uid) {
        snprintf(uidbuf, sizeof uidbuf, "%s/%s", ns ? ns : "", name);
        uid = uidbuf;
    }
    sched_pod *p = sched_pod_new(ns ? ns : "default", name, uid);
    if (!p) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *labels = json_object_get(meta, "labels");
    const json_t *ann = json_object_get(meta, "annotations");
    const char *nn = obj_str(spec, "nodeName");
    const char *proc = obj_str(labels, keys->process_label);
    const char *wf = obj_str(labels, keys->workflow_key);
    if (!wf)
        wf = obj_str(ann, keys->workflow_key);
    free(p->workflow);
    free(p->process);
    p->workflow = dup_or_empty(wf);
    p->process = dup_or_empty(proc);
    if (!p->workflow || !p->process || (nn && *nn && !(p->node_name = strdup(nn)))) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    p->priority = (int32_t)tm_json_int(spec, "priority", 0);
    p->created_ms = parse_time_ms(obj_str(meta, "creationTimestamp"));
    if (parse_label_annotation(p, ann, "tarema.io/cpu", &p->labels[SCHED_FEAT_CPU], err) ||
        parse_label_annotation(p, ann, "tarema.io/mem", &p->labels[SCHED_FEAT_MEM], err) ||
        parse_label_annotation(p, ann, "tarema.io/io", &p->labels[SCHED_FEAT_IO], err))
        goto fail;
    if (sched_pod_requests_from_json(s, pod, &p->requests, err) != 0 ||
        parse_tolerations(p, json_object_get(spec, "tolerations"), err) != 0 ||
        parse_node_selector(p, json_object_get(spec, "nodeSelector"), err) != 0 ||
        parse_affinity(p, spec, err) != 0)
        goto fail;
    return p;
fail:
    sched_pod_free(p);
    return NULL;
}

sched_node *sched_node_from_json(sched_snapshot *s, const json_t *node, tm_err *err) {
    const json_t *meta = json_object_get(node, "metadata");
    const char *name = obj_str(meta, "name");
    if (!name || !*name) {
        tm_err_set(err, "node without metadata.name");
        return NULL;
    }
    sched_node *n = sched_node_new(name);
    if (!n) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    const char *k;
    const json_t *v;
    json_object_foreach(json_object_get(meta, "labels"), k, v) {
        if (json_is_string(v) && sched_node_set_label(n, k, json_string_value(v)) != 0) {
            tm_err_set(err, "out of memory");
            goto fail;
        }
    }
    const json_t *spec = json_object_get(node, "spec");
    n->unschedulable = tm_json_bool(spec, "unschedulable", false);
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(spec, "taints"), i, t) {
        sched_effect eff;
        const char *e = obj_str(t, "effect"), *key = obj_str(t, "key");
        if (!key || !*key || parse_effect(e, &eff, false) != 0) {
            tm_err_set(err,
                       "node %s: spec.taints[%zu] needs a key and an effect of NoSchedule, "
                       "PreferNoSchedule or NoExecute (got key \"%s\", effect \"%s\")",
                       name, i, key ? key : "", e ? e : "");
            goto fail;
        }
        if (sched_node_add_taint(n, key, obj_str(t, "value"), eff) != 0) {
            tm_err_set(err, "out of memory");
            goto fail;
        }
    }
    const json_t *status = json_object_get(node, "status");
    const json_t *alloc = json_object_get(status, "allocatable");
    if (!json_is_object(alloc) || !json_object_size(alloc))
        alloc = json_object_get(status, "capacity");
    char what[320];
    snprintf(what, sizeof what, "node %s: status.allocatable", name);
    if (resource_list(s, alloc, &n->allocatable, what, err) != 0)
        goto fail;
    n->ready = false;
    json_array_foreach(json_object_get(status, "conditions"), i, t) {
        const char *type = obj_str(t, "type"), *st = obj_str(t, "status");
        if (type && strcmp(type, "Ready") == 0)
            n->ready = st && strcmp(st, "True") == 0;
    }
    return n;
fail:
    sched_node_free(n);
    return NULL;
}

int sched_task_profile_from_json(const json_t *tp, const char **workflow, const char **process,
                                 sched_task_profile *out, tm_err *err) {
    const char *name = tm_json_str(tp, "metadata.name", "?");
    *workflow = tm_json_str(tp, "spec.workflow", NULL);
    *process = tm_json_str(tp, "spec.process", NULL);
    if (!*workflow || !*process || !**process)
        return tm_err_set(err, "TaskProfile %s: spec.workflow and spec.process are required", name);
    static const char *const feats[SCHED_NFEAT] = {"cpu", "mem", "io"};
    const json_t *labels = json_object_get(json_object_get(tp, "status"), "labels");
    for (int k = 0; k < SCHED_NFEAT; k++) {
        const json_t *v = json_object_get(labels, feats[k]);
        out->labels[k] = 0;
        if (!v || json_is_null(v))
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000)
            return tm_err_set(err, "TaskProfile %s: status.labels.%s is not an integer >= 1", name,
                              feats[k]);
        out->labels[k] = (int)json_integer_value(v);
    }
    out->expected_runtime_ms = -1;
    const json_t *rt =
        json_object_get(json_object_get(json_object_get(tp, "status"), "mean"), "realtimeMs");
    if (json_is_number(rt) && json_number_value(rt) >= 0)
        out->expected_runtime_ms = (int64_t)json_number_value(rt);
    return 0;
}

bool sched_pod_json_terminal(const json_t *pod) {
    const char *ph = tm_json_str(pod, "status.phase", "");
    return strcmp(ph, "Succeeded") == 0 || strcmp(ph, "Failed") == 0;
}
