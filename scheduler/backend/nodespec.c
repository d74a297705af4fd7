/* nodespec.c: Kubernetes Node and TaskProfile JSON -> the snapshot's structs (podspec.h):
 * allocatable, labels, taints, readiness, cordon and images of a node; a TaskProfile's labels,
 * per-group runtimes and tail. Every error names the object and the field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/podspec_internal.h"

/* status.images -> the node's image names and sizes (ImageLocality). Every name of an image
 * gets the image's sizeBytes. A malformed entry is an error naming it. */
static int node_images(sched_node *n, const json_t *images, tm_err *err) {
    if (!images || json_is_null(images))
        return 0;
    if (!json_is_array(images))
        return tm_err_set(err, "node %s: status.images is not a list", n->name);
    size_t total = 0, i, k;
    const json_t *im, *nm;
    json_array_foreach(images, i, im) total += json_array_size(json_object_get(im, "names"));
    if (!total)
        return 0;
    const char **names = malloc(total * sizeof *names);
    int64_t *sizes = malloc(total * sizeof *sizes);
    size_t m = 0;
    int rc = names && sizes ? 0 : tm_err_set(err, "out of memory");
    json_array_foreach(images, i, im) {
        const json_t *sz = json_object_get(im, "sizeBytes"), *nms = json_object_get(im, "names");
        if (rc != 0)
            break;
        if (!json_is_object(im) || (nms && !json_is_array(nms)) ||
            (sz && (!json_is_integer(sz) || json_integer_value(sz) < 0))) {
            rc = tm_err_set(err,
                            "node %s: status.images[%zu] needs a names list and a sizeBytes "
                            "integer >= 0",
                            n->name, i);
            break;
        }
        json_array_foreach(nms, k, nm) {
            if (!json_is_string(nm)) {
                rc = tm_err_set(err, "node %s: status.images[%zu].names[%zu] is not a string",
                                n->name, i, k);
                break;
            }
            names[m] = json_string_value(nm);
            sizes[m++] = sz ? json_integer_value(sz) : 0;
        }
    }
    if (rc == 0 && sched_node_set_images(n, names, sizes, m) != 0)
        rc = tm_err_set(err, "out of memory");
    free(names);
    free(sizes);
    return rc;
}

/* status.allocatable into the node: the fixed slots, and the names without one kept sparsely
 * (snapshot.h). 0, or -1 with err. */
static int node_allocatable(sched_snapshot *s, sched_node *n, const json_t *alloc, const char *what,
                            tm_err *err) {
    podspec_res_pass rp = {.s = s};
    int rc = podspec_resource_list(&rp, alloc, &n->allocatable, what, err);
    if (rc == 0 && rp.n_over > 0) {
        if (!(n->xalloc = malloc((size_t)rp.n_over * sizeof *n->xalloc)))
            rc = tm_err_set(err, "out of memory");
        for (int k = 0; rc == 0 && k < rp.n_over; k++) {
            int id = sched_snapshot_xres_id(s, rp.over[k], err);
            int64_t q = 0;
            if (id < 0 ||
                podspec_quantity(json_object_get(alloc, rp.over[k]), rp.over[k], &q, what, err))
                rc = -1;
            else
                n->xalloc[n->n_xalloc++] = (sched_xres){(uint32_t)id, q};
        }
        if (rc == 0)
            n->n_xalloc = sched_xres_normalize(n->xalloc, n->n_xalloc);
    }
    free(rp.over);
    return rc;
}

sched_node *sched_node_from_json(sched_snapshot *s, const json_t *node, tm_err *err) {
    const json_t *meta = json_object_get(node, "metadata");
    const char *name = podspec_obj_str(meta, "name");
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
        const char *e = podspec_obj_str(t, "effect"), *key = podspec_obj_str(t, "key");
        if (!key || !*key || podspec_parse_effect(e, &eff, false) != 0) {
            tm_err_set(err,
                       "node %s: spec.taints[%zu] needs a key and an effect of NoSchedule, "
                       "PreferNoSchedule or NoExecute (got key \"%s\", effect \"%s\")",
                       name, i, key ? key : "", e ? e : "");
            goto fail;
        }
        if (sched_node_add_taint(n, key, podspec_obj_str(t, "value"), eff) != 0) {
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
    if (node_allocatable(s, n, alloc, what, err) != 0)
        goto fail;
    n->ready = false;
    json_array_foreach(json_object_get(status, "conditions"), i, t) {
        const char *type = podspec_obj_str(t, "type"), *st = podspec_obj_str(t, "status");
        if (type && strcmp(type, "Ready") == 0)
            n->ready = st && strcmp(st, "True") == 0;
    }
    if (node_images(n, json_object_get(status, "images"), err) != 0)
        goto fail;
    return n;
fail:
    sched_node_free(n);
    return NULL;
}

/* One status.runtimeByGroup entry -> g; NULL, or what is wrong with it. */
static const char *group_runtime_from_json(const json_t *e, sched_group_runtime *g) {
    const char *id = json_string_value(json_object_get(e, "group"));
    const json_t *runs = json_object_get(e, "runs"), *mean = json_object_get(e, "meanSeconds");
    if (!json_is_object(e))
        return "is not an object";
    if (!id || !*id)
        return "has no group id";
    if (strlen(id) >= SCHED_GROUP_ID_MAX)
        return "has a group id longer than 15 characters";
    if (!json_is_integer(runs) || json_integer_value(runs) < 1 ||
        json_integer_value(runs) > INT32_MAX)
        return "has no runs count >= 1";
    /* at most a year: anything longer is a unit mix-up, not a task */
    if (!json_is_number(mean) || !isfinite(json_number_value(mean)) ||
        json_number_value(mean) < 0 || json_number_value(mean) > 366.0 * 86400)
        return "has no meanSeconds between 0 and a year";
    snprintf(g->group, sizeof g->group, "%s", id);
    g->runs = (int32_t)json_integer_value(runs);
    g->runtime_ms = llround(json_number_value(mean) * 1000.0);
    return NULL;
}

int sched_task_profile_group_runtimes(const json_t *tp, sched_task_profile *out, tm_err *warn) {
    out->n_group_rt = 0;
    const json_t *arr = json_object_get(json_object_get(tp, "status"), "runtimeByGroup");
    if (!arr || json_is_null(arr))
        return 0;
    const char *name = tm_json_str(tp, "metadata.name", "?");
    if (!json_is_array(arr)) {
        tm_err_set(warn, "TaskProfile %s: status.runtimeByGroup is not an array, ignored", name);
        return 1;
    }
    int bad = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(arr, i, e) {
        sched_group_runtime g = {{0}, 0, 0};
        const char *why = group_runtime_from_json(e, &g);
        bool dup = false;
        for (int k = 0; !why && k < out->n_group_rt; k++)
            dup = dup || strcmp(out->group_rt[k].group, g.group) == 0;
        if (!why && dup)
            why = "repeats a group id";
        if (!why && out->n_group_rt == SCHED_TASK_MAX_GROUPS)
            why = "is beyond the 8 groups the scheduler keeps";
        if (why) {
            if (bad++ == 0)
                tm_err_set(warn, "TaskProfile %s: status.runtimeByGroup[%zu] %s, ignored", name, i,
                           why);
            continue;
        }
        out->group_rt[out->n_group_rt++] = g;
    }
    return bad;
}

int sched_task_profile_tail(const json_t *tp, sched_task_profile *out, tm_err *warn) {
    out->tail_ms = 0;
    const json_t *st = json_object_get(tp, "status");
    const json_t *sec = json_object_get(st, "tailSeconds"), *runs = json_object_get(st, "tailRuns");
    if (!sec || json_is_null(sec))
        return 0;
    const char *why = NULL;
    /* at most a year, as meanSeconds: anything longer is a unit mix-up, not a workflow run */
    if (!json_is_number(sec) || !isfinite(json_number_value(sec)) || json_number_value(sec) < 0 ||
        json_number_value(sec) > 366.0 * 86400)
        why = "tailSeconds is not a number between 0 and a year";
    else if (runs && !json_is_null(runs) &&
             (!json_is_integer(runs) || json_integer_value(runs) < 1))
        why = "tailRuns is not an integer >= 1";
    if (why) {
        const char *name = tm_json_str(tp, "metadata.name", "?");
        if (warn && warn->msg[0]) { /* keep what runtimeByGroup said */
            char prev[TM_ERR_MAX];
            snprintf(prev, sizeof prev, "%s", warn->msg);
            tm_err_set(warn, "%s; status.%s, tail ignored", prev, why);
        } else {
            tm_err_set(warn, "TaskProfile %s: status.%s, tail ignored", name, why);
        }
        return 1;
    }
    out->tail_ms = llround(json_number_value(sec) * 1000.0);
    return 0;
}

int sched_task_profile_from_json(const json_t *tp, const char **workflow, const char **process,
                                 sched_task_profile *out, tm_err *err) {
    return sched_task_profile_from_json_warn(tp, workflow, process, out, NULL, err);
}

int sched_task_profile_from_json_warn(const json_t *tp, const char **workflow, const char **process,
                                      sched_task_profile *out, tm_err *warn, tm_err *err) {
    memset(out, 0, sizeof *out); /* fields this parser does not fill yet read as unknown */
    const char *name = tm_json_str(tp, "metadata.name", "?");
    *workflow = tm_json_str(tp, "spec.workflow", NULL);
    *process = tm_json_str(tp, "spec.process", NULL);
    if (!*workflow || !*process || !**process)
        return tm_err_set(err, "TaskProfile %s: spec.workflow and spec.process are required", name);
    static const char *const feats[SCHED_NFEAT] = {"cpu", "mem", "io"};
    const json_t *status = json_object_get(tp, "status");
    const json_t *labels = json_object_get(status, "labels");
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
    const json_t *mean = json_object_get(status, "mean");
    const json_t *rt = json_object_get(mean, "realtimeMs");
    if (json_is_number(rt) && json_number_value(rt) >= 0)
        out->expected_runtime_ms = (int64_t)json_number_value(rt);
    /* the cores its runs really used (adaptive's contention term); above 1,000 cores is not a
     * measurement, and 0 or less reads as unknown (the policy then scales the request) */
    const json_t *cpu = json_object_get(mean, "cpuPercent");
    if (json_is_number(cpu) && json_number_value(cpu) > 0 && json_number_value(cpu) <= 100000)
        out->cpu_use_milli = (int64_t)(json_number_value(cpu) * 10 + 0.5);
    /* a bad per-group entry costs only that entry: the labels still count */
    sched_task_profile_group_runtimes(tp, out, warn);
    /* likewise a bad tail: the task then ranks by its runtime alone */
    sched_task_profile_tail(tp, out, warn);
    return 0;
}
