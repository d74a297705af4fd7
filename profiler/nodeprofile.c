/* nodeprofile.c: reading, validating and writing NodeProfile documents (see nodeprofile.h). */
#include "profiler/nodeprofile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileutil.h"

/* The measured figures, in contract order: names and where each lives in the struct. */
static const char *const num_keys[] = {
    "cpu_single_eps", "cpu_multi_eps",  "mem_mibps",       "seq_read_iops",
    "seq_write_iops", "rand_read_iops", "rand_write_iops",
};
#define NUM_FIELDS (sizeof num_keys / sizeof num_keys[0])

static double *field_ptr(prof_profile *p, size_t i) {
    double *f[NUM_FIELDS] = {&p->cpu_single_eps, &p->cpu_multi_eps,  &p->mem_mibps,
                             &p->seq_read_iops,  &p->seq_write_iops, &p->rand_read_iops,
                             &p->rand_write_iops};
    return f[i];
}

static double field_val(const prof_profile *p, size_t i) {
    return *field_ptr((prof_profile *)p, i);
}

/* Upper bounds far above any machine, low enough that summing the cores of millions of
 * nodes (a group's total_cores) cannot overflow a long long. */
#define MAX_CORES        (1LL << 24)
#define MAX_MEMORY_BYTES (1LL << 60)

static int get_int(const json_t *j, const char *key, long long max, const char *what,
                   const char *node, long long *out, tm_err *err) {
    json_t *v = json_object_get(j, key);
    if (!v)
        return tm_err_set(err, "%s: node '%s': missing key '%s'", what, node, key);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max)
        return tm_err_set(err, "%s: node '%s': '%s' must be an integer in 1..%lld", what, node, key,
                          max);
    *out = json_integer_value(v);
    return 0;
}

int prof_profile_from_json(const json_t *j, const char *what, prof_profile *p, tm_err *err) {
    memset(p, 0, sizeof *p);
    if (!json_is_object(j))
        return tm_err_set(err, "%s: expected a NodeProfile object", what);
    json_t *name = json_object_get(j, "node");
    if (!json_is_string(name) || json_string_length(name) == 0)
        return tm_err_set(err, "%s: missing or empty string key 'node'", what);
    if (json_string_length(name) >= PROF_NODE_NAME_MAX)
        return tm_err_set(err, "%s: node name longer than %d characters", what,
                          PROF_NODE_NAME_MAX - 1);
    snprintf(p->node, sizeof p->node, "%s", json_string_value(name));
    if (get_int(j, "cores", MAX_CORES, what, p->node, &p->cores, err) != 0 ||
        get_int(j, "memory_bytes", MAX_MEMORY_BYTES, what, p->node, &p->memory_bytes, err) != 0)
        return -1;
    for (size_t i = 0; i < NUM_FIELDS; i++) {
        json_t *v = json_object_get(j, num_keys[i]);
        if (!v)
            return tm_err_set(err, "%s: node '%s': missing key '%s'", what, p->node, num_keys[i]);
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!isfinite(x) || x <= 0)
            return tm_err_set(err, "%s: node '%s': '%s' must be a positive number", what, p->node,
                              num_keys[i]);
        *field_ptr(p, i) = x;
    }
    json_t *st = json_object_get(j, "static");
    if (st && !json_is_object(st))
        return tm_err_set(err, "%s: node '%s': 'static' must be an object", what, p->node);
    p->doc = json_incref((json_t *)j);
    return 0;
}

json_t *prof_profile_figures(const prof_profile *p) {
    json_t *o = json_object();
    json_object_set_new(o, "cores", json_integer(p->cores));
    json_object_set_new(o, "memory_bytes", json_integer(p->memory_bytes));
    for (size_t i = 0; i < NUM_FIELDS; i++)
        json_object_set_new(o, num_keys[i], json_real(field_val(p, i)));
    return o;
}

json_t *prof_profile_to_json(const prof_profile *p) {
    json_t *o = p->doc ? json_deep_copy(p->doc) : json_object();
    json_t *fig = prof_profile_figures(p);
    json_object_set_new(o, "node", json_string(p->node));
    json_object_update(o, fig);
    json_decref(fig);
    return o;
}

void prof_profile_clear(prof_profile *p) {
    if (!p)
        return;
    json_decref(p->doc);
    p->doc = NULL;
}

void prof_profile_set_free(prof_profile_set *set) {
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++)
        prof_profile_clear(&set->items[i]);
    free(set->items);
    set->items = NULL;
    set->n = 0;
}

static int add_one(prof_profile_set *set, const json_t *j, const char *what, tm_err *err) {
    prof_profile p;
    if (prof_profile_from_json(j, what, &p, err) != 0)
        return -1;
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->items[i].node, p.node) == 0) {
            prof_profile_clear(&p);
            return tm_err_set(err,
                              "%s: node '%s' appears twice (profile number %zu already has it)",
                              what, set->items[i].node, i + 1);
        }
    prof_profile *grown = realloc(set->items, (set->n + 1) * sizeof *grown);
    if (!grown) {
        prof_profile_clear(&p);
        return tm_err_set(err, "%s: out of memory", what);
    }
    set->items = grown;
    set->items[set->n++] = p;
    return 0;
}

int prof_profiles_add_json(prof_profile_set *set, const json_t *doc, const char *what,
                           tm_err *err) {
    if (json_is_object(doc))
        return add_one(set, doc, what, err);
    if (!json_is_array(doc))
        return tm_err_set(err, "%s: expected a NodeProfile object or an array of them", what);
    size_t i;
    json_t *item;
    json_array_foreach(doc, i, item) {
        char where[512];
        snprintf(where, sizeof where, "%s[%zu]", what, i);
        if (add_one(set, item, where, err) != 0)
            return -1;
    }
    return 0;
}

int prof_profiles_load_files(prof_profile_set *set, const char *const *paths, size_t npaths,
                             tm_err *err) {
    for (size_t i = 0; i < npaths; i++) {
        size_t len;
        char *text = tm_read_file(paths[i], &len, err);
        if (!text)
            return -1;
        json_error_t je;
        json_t *doc = json_loadb(text, len, 0, &je);
        free(text);
        if (!doc)
            return tm_err_set(err, "%s:%d:%d: invalid JSON: %s", paths[i], je.line, je.column,
                              je.text);
        int rc = prof_profiles_add_json(set, doc, paths[i], err);
        json_decref(doc);
        if (rc != 0)
            return -1;
    }
    return 0;
}
