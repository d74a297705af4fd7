/* signals.c: a cluster's API objects into its CLUSTERS entry (rules in signals.h). */
#include "dam/signals.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dam/input.h"
#include "labeler/asa_table.h"
#include "lib/jsonutil.h"
#include "lib/quantity.h"
#include "lib/yamljson.h"

#define ARCH_LABEL    "kubernetes.io/arch"
#define PROFILE_ANNOT "tarema.io/profile"
#define WINDOWS_KEY   "windows"
#define ASA_STATE_KEY "state.json"

static const char *obj_name(const json_t *o) {
    return tm_json_str(o, "metadata.name", "?");
}

/* A quantity string of a resource list, in milli-units; 0 when absent. */
static int res_milli(const json_t *list, const char *key, const char *what, int64_t *out,
                     tm_err *err) {
    *out = 0;
    const char *s = json_string_value(json_object_get(list, key));
    if (!s)
        return 0;
    tm_err qe = {0};
    if (tm_quantity_parse_milli(s, out, &qe) < 0)
        return tm_err_set(err, "%s: %s: %s", what, key, qe.msg);
    return 0;
}

/* A byte quantity of a resource list; 0 when absent. */
static int res_bytes(const json_t *list, const char *key, const char *what, int64_t *out,
                     tm_err *err) {
    *out = 0;
    const char *s = json_string_value(json_object_get(list, key));
    if (!s)
        return 0;
    tm_err qe = {0};
    if (tm_quantity_parse(s, out, &qe) < 0)
        return tm_err_set(err, "%s: %s: %s", what, key, qe.msg);
    return 0;
}

static int pod_finished(const json_t *pod) {
    const char *phase = tm_json_str(pod, "status.phase", "");
    return strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0;
}

/* The pod's cpu request in millicores: the sum over its containers, or the largest init
 * container when that is more (the scheduler's rule). */
static int pod_cpu_milli(const json_t *pod, int64_t *out, tm_err *err) {
    char what[320];
    snprintf(what, sizeof what, "pod %s/%s", tm_json_str(pod, "metadata.namespace", "?"),
             obj_name(pod));
    int64_t sum = 0, init_max = 0, v;
    size_t i;
    json_t *c;
    json_array_foreach(tm_json_path(pod, "spec.containers"), i, c) {
        if (res_milli(tm_json_path(c, "resources.requests"), "cpu", what, &v, err) < 0)
            return -1;
        sum += v;
    }
    json_array_foreach(tm_json_path(pod, "spec.initContainers"), i, c) {
        if (res_milli(tm_json_path(c, "resources.requests"), "cpu", what, &v, err) < 0)
            return -1;
        if (v > init_max)
            init_max = v;
    }
    *out = sum > init_max ? sum : init_max;
    return 0;
}

static int add_name(json_t *arr, const char *s) {
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (strcmp(json_string_value(v), s) == 0)
            return 0;
    }
    return json_array_append_new(arr, json_string(s));
}

static int is_extended(const char *key) {
    return strchr(key, '/') && strncmp(key, "hugepages-", 10) != 0 &&
           strncmp(key, "kubernetes.io/", 14) != 0;
}

/* Nodes: cores, memory, architectures, accelerators, perf. Fills *schedulable with the names
 * usable for cores used (an object name -> true). */
static int fill_nodes(json_t *entry, const json_t *nodes, json_t *schedulable, tm_err *err) {
    double cores = 0, mem_max = 0, perf_cores = 0, perf_sum = 0;
    json_t *archs = json_array(), *accel = json_object();
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) {
        if (tm_json_bool(n, "spec.unschedulable", false))
            continue;
        char what[320];
        snprintf(what, sizeof what, "node %s: status.allocatable", obj_name(n));
        const json_t *alloc = tm_json_path(n, "status.allocatable");
        int64_t cpu, mem;
        if (res_milli(alloc, "cpu", what, &cpu, err) < 0 ||
            res_bytes(alloc, "memory", what, &mem, err) < 0)
            goto fail;
        cores += (double)cpu / 1000.0;
        if ((double)mem > mem_max)
            mem_max = (double)mem;
        json_object_set_new(schedulable, obj_name(n), json_true());
        const char *arch =
            json_string_value(json_object_get(tm_json_path(n, "metadata.labels"), ARCH_LABEL));
        if (arch && *arch)
            add_name(archs, arch);
        const char *key;
        json_t *q;
        json_object_foreach((json_t *)alloc, key, q) {
            if (!is_extended(key))
                continue;
            int64_t cnt;
            if (res_milli(alloc, key, what, &cnt, err) < 0)
                goto fail;
            double c = (double)cnt / 1000.0;
            if (c > json_number_value(json_object_get(accel, key)))
                json_object_set_new(accel, key, json_real(c));
        }
        const char *ann = json_string_value(
            json_object_get(tm_json_path(n, "metadata.annotations"), PROFILE_ANNOT));
        json_t *prof = ann ? json_loads(ann, 0, NULL) : NULL;
        double eps = tm_json_num(prof, "figures.cpu_single", 0);
        json_decref(prof);
        if (isfinite(eps) && eps > 0 && cpu > 0) {
            perf_sum += eps * (double)cpu / 1000.0;
            perf_cores += (double)cpu / 1000.0;
        }
    }
    json_object_set_new(entry, "cores", json_pack("{s:f,s:f}", "used", 0.0, "total", cores));
    if (mem_max > 0)
        json_object_set_new(entry, "memory", json_real(mem_max));
    if (json_array_size(archs))
        json_object_set(entry, "architectures", archs);
    if (json_object_size(accel))
        json_object_set(entry, "accelerators", accel);
    if (perf_cores > 0 && !json_object_get(entry, "perf_per_core"))
        json_object_set_new(entry, "perf_per_core", json_real(perf_sum / perf_cores));
    json_decref(archs);
    json_decref(accel);
    return 0;
fail:
    json_decref(archs);
    json_decref(accel);
    return -1;
}

/* Pods: cores used on schedulable nodes, the oldest pending pod's age. */
static int fill_pods(json_t *entry, const json_t *pods, const json_t *schedulable, double now_s,
                     double *oldest_pending_s, tm_err *err) {
    double used = 0;
    *oldest_pending_s = -1;
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        if (pod_finished(p))
            continue;
        const char *node = tm_json_str(p, "spec.nodeName", NULL);
        if (node && *node) {
            if (!json_object_get(schedulable, node))
                continue;
            int64_t m;
            if (pod_cpu_milli(p, &m, err) < 0)
                return -1;
            used += (double)m / 1000.0;
            continue;
        }
        double created;
        json_t *ts = tm_json_path(p, "metadata.creationTimestamp");
        if (ts && dam_parse_time(ts, "creationTimestamp", &created, NULL) == 0) {
            double age = now_s - created;
            if (age < 0)
                age = 0;
            if (age > *oldest_pending_s)
                *oldest_pending_s = age;
        }
    }
    json_t *cores = json_object_get(entry, "cores");
    double total = tm_json_num(cores, "total", 0);
    /* Pods on nodes whose capacity shrank can ask for more than there is: a full cluster. */
    json_object_set_new(cores, "used", json_real(used < total ? used : total));
    return 0;
}

static int fill_maintenance(json_t *entry, const json_t *cm, tm_err *err) {
    char what[320];
    snprintf(what, sizeof what, "ConfigMap %s/%s: data.%s",
             tm_json_str(cm, "metadata.namespace", "?"), obj_name(cm), WINDOWS_KEY);
    const char *text = json_string_value(json_object_get(tm_json_path(cm, "data"), WINDOWS_KEY));
    if (!text)
        return tm_err_set(err, "%s: missing (a YAML list of {start, end, reason})", what);
    tm_err ye = {0};
    json_t *doc = tm_yaml_parse(text, strlen(text), what, &ye);
    if (!doc)
        return tm_err_set(err, "%s", ye.msg);
    if (json_is_null(doc)) {
        json_decref(doc);
        return 0;
    }
    if (!json_is_array(doc)) {
        json_decref(doc);
        return tm_err_set(err, "%s: expected a list of {start, end, reason}", what);
    }
    size_t i;
    json_t *w;
    json_array_foreach(doc, i, w) {
        char f[400];
        double s, e;
        snprintf(f, sizeof f, "%s[%zu].start", what, i);
        if (!json_is_object(w) || dam_parse_time(json_object_get(w, "start"), f, &s, err) < 0)
            goto bad;
        snprintf(f, sizeof f, "%s[%zu].end", what, i);
        if (dam_parse_time(json_object_get(w, "end"), f, &e, err) < 0)
            goto bad;
        if (!(e > s)) {
            tm_err_set(err, "%s[%zu]: end is not after start", what, i);
            goto bad;
        }
    }
    json_t *prev = json_object_get(entry, "maintenance");
    if (json_is_array(prev))
        json_array_extend(prev, doc);
    else
        json_object_set(entry, "maintenance", doc);
    json_decref(doc);
    return 0;
bad:
    if (!json_is_object(w))
        tm_err_set(err, "%s[%zu]: expected {start, end, reason}", what, i);
    json_decref(doc);
    return -1;
}

double dam_asa_wait(const char *state_json, const dam_shape *shape, char *warn, size_t n) {
    if (warn && n)
        warn[0] = 0;
    asa_config cfg;
    asa_config_default(&cfg, ASA_POLICY_TUNED);
    char w[512] = "";
    asa_table *t = asa_table_from_json(state_json, &cfg, w, sizeof w);
    if (warn && n)
        snprintf(warn, n, "%s", w);
    if (!t)
        return -1;
    const asa_learner *best = NULL;
    for (size_t i = 0; i < asa_table_size(t); i++) {
        const asa_key *k = asa_table_key(t, i);
        if (k->pods != shape->pods || k->cpu_milli != shape->cpu_milli ||
            k->mem_bytes != shape->mem_bytes)
            continue;
        /* The job's own namespace first; another's learner of the same shape otherwise (the
         * queue is the cluster's, not the namespace's). */
        if (!best || (shape->ns && strcmp(k->ns, shape->ns) == 0))
            best = asa_table_learner(t, i);
    }
    double wait = best ? asa_alternative(asa_mode(best)) : -1;
    asa_table_free(t);
    return wait;
}

double dam_waits_pick(const waits_record *v, size_t n, const dam_shape *shape) {
    const waits_record *best = NULL;
    int best_own = 0;
    for (size_t i = 0; i < n; i++) {
        const asa_key *k = &v[i].key;
        if (k->pods != shape->pods || k->cpu_milli != shape->cpu_milli ||
            k->mem_bytes != shape->mem_bytes)
            continue;
        int own = shape->ns && strcmp(k->ns, shape->ns) == 0;
        if (!best || own > best_own ||
            (own == best_own && v[i].st.observations > best->st.observations)) {
            best = &v[i];
            best_own = own;
        }
    }
    return best ? waits_estimate(best) : -1;
}

int dam_signals_fill(json_t *entry, const dam_cluster_objects *o, const dam_shape *shape,
                     double now_s, tm_err *err) {
    json_t *sched = json_object();
    double pending = -1;
    int rc = -1;
    if (fill_nodes(entry, o->nodes, sched, err) < 0 ||
        fill_pods(entry, o->pods, sched, now_s, &pending, err) < 0)
        goto out;
    if (o->storage_classes && !json_object_get(entry, "storage")) {
        json_t *names = json_array();
        size_t i;
        json_t *sc;
        json_array_foreach(o->storage_classes, i, sc) {
            add_name(names, obj_name(sc));
        }
        json_object_set_new(entry, "storage", names);
    }
    double predicted = -1;
    /* The learned waits in the cluster's PostgreSQL first; the ASA ConfigMap second. */
    if (o->has_waits && shape)
        predicted = dam_waits_pick(o->waits, o->nwaits, shape);
    if (predicted < 0 && o->asa_cm && shape) {
        const char *st =
            json_string_value(json_object_get(tm_json_path(o->asa_cm, "data"), ASA_STATE_KEY));
        if (st)
            predicted = dam_asa_wait(st, shape, NULL, 0);
    }
    if (predicted >= 0)
        json_object_set_new(entry, "wait", json_pack("{s:f}", "predicted", predicted));
    else if (pending >= 0)
        json_object_set_new(entry, "wait", json_pack("{s:f}", "pending_age", pending));
    if (o->maintenance_cm && fill_maintenance(entry, o->maintenance_cm, err) < 0)
        goto out;
    rc = 0;
out:
    json_decref(sched);
    return rc;
}
