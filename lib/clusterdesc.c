/* clusterdesc.c: reads and validates the cluster description (clusterdesc.h): node types,
 * their figures, the reference type and the speeds derived from it. */
#include "clusterdesc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

static const char *const feature_names[TM_NT_NFEATURES] = {"cpu", "mem", "io"};

static int parse_bench(const json_t *b, tm_node_type *t, const char *what, tm_err *err) {
    static const char *const keys[] = {"cpu", "mem", "io", NULL};
    if (!json_is_object(b))
        return tm_err_set(err, "%s: bench must be a mapping of cpu, mem, io", what);
    if (tm_json_check_keys(b, keys, what, err) < 0)
        return -1;
    for (int k = 0; k < TM_NT_NFEATURES; k++) {
        json_t *v = json_object_get(b, feature_names[k]);
        if (!v)
            continue;
        double lo, hi;
        if (json_is_number(v)) {
            lo = hi = json_number_value(v);
        } else if (json_is_array(v) && json_array_size(v) == 2 &&
                   json_is_number(json_array_get(v, 0)) && json_is_number(json_array_get(v, 1))) {
            lo = json_number_value(json_array_get(v, 0));
            hi = json_number_value(json_array_get(v, 1));
        } else {
            return tm_err_set(err, "%s: bench.%s must be a number or a [low, high] range", what,
                              feature_names[k]);
        }
        if (!(lo > 0) || !(hi >= lo))
            return tm_err_set(err, "%s: bench.%s must be > 0 with low <= high", what,
                              feature_names[k]);
        t->bench_lo[k] = lo;
        t->bench_hi[k] = hi;
    }
    return 0;
}

static int parse_type(const json_t *o, tm_node_type *t, const char *what, tm_err *err) {
    static const char *const keys[] = {"name",  "measured_as", "count",         "cores", "memory",
                                       "bench", "speed",       "mem_bandwidth", NULL};
    if (!json_is_object(o))
        return tm_err_set(err, "%s: expected a mapping", what);
    if (tm_json_check_keys(o, keys, what, err) < 0)
        return -1;
    if (tm_json_name(t->name, sizeof t->name, json_object_get(o, "name"), what, err) < 0)
        return -1;
    if (strlen(t->name) > 100) /* node names are "<type>-<i>" in TM_NODE_TYPE_NAME_MAX */
        return tm_err_set(err, "%s: node type name '%s' is longer than 100 characters", what,
                          t->name);
    if (json_object_get(o, "measured_as")) {
        if (tm_json_name(t->measured_as, sizeof t->measured_as, json_object_get(o, "measured_as"),
                         what, err) < 0)
            return -1;
    } else {
        snprintf(t->measured_as, sizeof t->measured_as, "%s", t->name);
    }
    json_t *cnt = json_object_get(o, "count");
    if (!json_is_integer(cnt) || json_integer_value(cnt) < 1 ||
        json_integer_value(cnt) > TM_CLUSTER_MAX_NODES)
        return tm_err_set(err, "%s (%s): count must be an integer from 1 to %d", what, t->name,
                          TM_CLUSTER_MAX_NODES);
    t->count = (int)json_integer_value(cnt);
    double cores = 0, mem = 0;
    if (!json_object_get(o, "cores") || !json_object_get(o, "memory"))
        return tm_err_set(err, "%s (%s): cores and memory are required", what, t->name);
    if (tm_json_quantity(json_object_get(o, "cores"), 1, &cores, "cores", err) < 0 ||
        tm_json_quantity(json_object_get(o, "memory"), 0, &mem, "memory", err) < 0)
        return tm_err_wrap(err, "%s (%s)", what, t->name);
    if (cores <= 0 || mem <= 0)
        return tm_err_set(err, "%s (%s): cores and memory must be > 0", what, t->name);
    /* Physical bounds, which also keep the conversion to int64_t below defined (found by
     * fuzzing: memory 8.7e36 overflowed it). */
    if (cores > 1e6 || mem > 0x1p60)
        return tm_err_set(err, "%s (%s): cores %g or memory %g bytes above 1e6 cores / 1 EiB", what,
                          t->name, cores, mem);
    t->cores = cores;
    t->memory = (int64_t)mem;
    t->mem_bandwidth = cores;
    if (tm_json_opt_nonneg(o, "mem_bandwidth", &t->mem_bandwidth, what, err) < 0)
        return -1;
    for (int k = 0; k < TM_NT_NFEATURES; k++)
        t->bench_lo[k] = t->bench_hi[k] = NAN;
    for (int f = 0; f < TM_NT_NFEATURES; f++)
        t->speed[f] = NAN;
    if (json_object_get(o, "bench") &&
        parse_bench(json_object_get(o, "bench"), t, t->name, err) < 0)
        return tm_err_wrap(err, "%s", what);
    json_t *sp = json_object_get(o, "speed");
    if (sp) {
        static const char *const skeys[] = {"cpu", "mem", "io", NULL};
        if (!json_is_object(sp) || tm_json_check_keys(sp, skeys, "speed", err) < 0)
            return tm_err_wrap(err, "%s (%s): speed must be a mapping of cpu, mem, io", what,
                               t->name);
        for (int f = 0; f < TM_NT_NFEATURES; f++) {
            json_t *v = json_object_get(sp, feature_names[f]);
            if (!v)
                continue;
            if (!json_is_number(v) || !(json_number_value(v) > 0))
                return tm_err_set(err, "%s (%s): speed.%s must be a number > 0", what, t->name,
                                  feature_names[f]);
            t->speed[f] = json_number_value(v);
        }
    }
    return 0;
}

/* Relative speeds: given ones win; otherwise the bench mean over the reference's. */
static int derive_speeds(tm_cluster_desc *c, const char *source, tm_err *err) {
    const tm_node_type *ref = &c->types[c->ref_type];
    for (int i = 0; i < c->ntypes; i++) {
        tm_node_type *t = &c->types[i];
        for (int f = 0; f < TM_NT_NFEATURES; f++) {
            if (!isnan(t->speed[f]))
                continue;
            double mine = (t->bench_lo[f] + t->bench_hi[f]) / 2;
            double theirs = (ref->bench_lo[f] + ref->bench_hi[f]) / 2;
            if (isnan(mine) && isnan(theirs)) {
                t->speed[f] = 1.0;
            } else if (isnan(mine) || isnan(theirs)) {
                return tm_err_set(err,
                                  "%s: node type %s: bench.%s needs a matching figure on the "
                                  "reference type %s (or give speed.%s)",
                                  source, t->name, feature_names[f], ref->name, feature_names[f]);
            } else {
                t->speed[f] = mine / theirs;
            }
        }
    }
    return 0;
}

int tm_node_type_find(const tm_node_type *types, int ntypes, const char *name) {
    for (int i = 0; i < ntypes; i++)
        if (strcmp(types[i].name, name) == 0)
            return i;
    return -1;
}

void tm_cluster_desc_clear(tm_cluster_desc *d) {
    free(d->types);
    *d = (tm_cluster_desc){0};
}

int tm_cluster_desc_from_json(const json_t *root, const char *source, tm_cluster_desc *out,
                              tm_err *err) {
    static const char *const keys[] = {"node_types", "reference", NULL};
    tm_cluster_desc *c = out;
    *c = (tm_cluster_desc){0};
    json_t *arr = tm_json_top_list(root, keys, source, err);
    if (!arr)
        return -1;
    if (!(c->types = calloc(json_array_size(arr), sizeof *c->types)))
        return tm_err_set(err, "%s: out of memory", source);
    c->ntypes = (int)json_array_size(arr);
    long total = 0;
    for (int i = 0; i < c->ntypes; i++) {
        char what[256];
        snprintf(what, sizeof what, "%s: node_types[%d]", source, i);
        if (parse_type(json_array_get(arr, (size_t)i), &c->types[i], what, err) < 0)
            goto fail;
        for (int j = 0; j < i; j++)
            if (strcmp(c->types[j].name, c->types[i].name) == 0) {
                tm_err_set(err, "%s: node type '%s' is defined twice", what, c->types[i].name);
                goto fail;
            }
        total += c->types[i].count;
    }
    /* The simulator groups the nodes as the profiler would group them, and choosing k by
     * silhouette compares every pair of nodes: 5,000 nodes take ~0.3 s, 40,000 took ~25 s (found
     * by fuzzing). Refuse sizes that would only look like a hang. */
    if (total > TM_CLUSTER_MAX_NODES) {
        tm_err_set(err,
                   "%s: %ld nodes; at most %d are supported (grouping nodes by silhouette is "
                   "quadratic in the node count)",
                   source, total, TM_CLUSTER_MAX_NODES);
        goto fail;
    }
    const char *ref = tm_json_str(root, "reference", NULL);
    c->ref_type = ref ? tm_node_type_find(c->types, c->ntypes, ref) : 0;
    if (c->ref_type < 0) {
        tm_err_set(err, "%s: reference '%s' is not a node type", source, ref);
        goto fail;
    }
    if (derive_speeds(c, source, err) < 0)
        goto fail;
    c->nnodes = total;
    return 0;
fail:
    tm_cluster_desc_clear(c);
    return -1;
}
