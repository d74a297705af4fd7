/* cluster.c: nodes from the cluster description (lib/clusterdesc.h), and the busy list
 * (cluster.h). */
#include "planner/cluster.h"

#include <stdlib.h>
#include <string.h>

#include "lib/clusterdesc.h"
#include "lib/jsonutil.h"
#include "planner/units.h"

void pl_cluster_free(pl_cluster *c) {
    if (!c)
        return;
    free(c->type_names);
    free(c->nodes);
    free(c);
}

int pl_cluster_find_node(const pl_cluster *c, const char *name) {
    for (int i = 0; i < c->nnodes; i++)
        if (strcmp(c->nodes[i].name, name) == 0)
            return i;
    return -1;
}

pl_cluster *pl_cluster_make(int ntypes, const char *const *names, const int *count,
                            const double *cores, const int64_t *mem, tm_err *err) {
    pl_cluster *c = calloc(1, sizeof *c);
    long total = 0;
    for (int t = 0; t < ntypes; t++)
        total += count[t];
    if (!c || !(c->type_names = calloc((size_t)ntypes, sizeof *c->type_names)) ||
        !(c->nodes = calloc((size_t)(total ? total : 1), sizeof *c->nodes))) {
        pl_cluster_free(c);
        tm_err_set(err, "cluster: out of memory");
        return NULL;
    }
    c->ntypes = ntypes;
    for (int t = 0; t < ntypes; t++) {
        snprintf(c->type_names[t], PL_NAME_MAX, "%.100s", names[t]);
        for (int j = 0; j < count[t]; j++) {
            pl_node *nd = &c->nodes[c->nnodes++];
            snprintf(nd->name, sizeof nd->name, "%.100s-%d", names[t], j + 1);
            nd->type = t;
            nd->cpu_milli = (int64_t)(cores[t] * 1000 + 0.5);
            nd->mem_bytes = mem[t];
        }
    }
    return c;
}

pl_cluster *pl_cluster_from_json(const json_t *root, const char *source, tm_err *err) {
    tm_cluster_desc d;
    if (tm_cluster_desc_from_json(root, source, &d, err) < 0)
        return NULL;
    const char **names = calloc((size_t)d.ntypes, sizeof *names);
    int *count = calloc((size_t)d.ntypes, sizeof *count);
    double *cores = calloc((size_t)d.ntypes, sizeof *cores);
    int64_t *mem = calloc((size_t)d.ntypes, sizeof *mem);
    pl_cluster *c = NULL;
    if (names && count && cores && mem) {
        for (int t = 0; t < d.ntypes; t++) {
            names[t] = d.types[t].name;
            count[t] = d.types[t].count;
            cores[t] = d.types[t].cores;
            mem[t] = d.types[t].memory;
        }
        c = pl_cluster_make(d.ntypes, names, count, cores, mem, err);
    } else {
        tm_err_set(err, "%s: out of memory", source);
    }
    free(names);
    free(count);
    free(cores);
    free(mem);
    tm_cluster_desc_clear(&d);
    return c;
}

int pl_busy_from_json(const json_t *root, const char *source, const pl_cluster *c, pl_busy **out,
                      int *n, tm_err *err) {
    *out = NULL;
    *n = 0;
    if (json_is_null(root))
        return 0;
    if (!json_is_array(root))
        return tm_err_set(err, "%s: expected a list of {node, cores, memory, until}", source);
    size_t cnt = json_array_size(root);
    pl_busy *b = calloc(cnt ? cnt : 1, sizeof *b);
    if (!b)
        return tm_err_set(err, "%s: out of memory", source);
    for (size_t i = 0; i < cnt; i++) {
        static const char *const keys[] = {"node", "cores", "memory", "until", "from", NULL};
        json_t *e = json_array_get(root, i);
        char what[300];
        snprintf(what, sizeof what, "%s: [%zu]", source, i);
        if (tm_json_check_keys(e, keys, what, err) < 0)
            goto fail;
        const char *node = tm_json_str(e, "node", NULL);
        if (!node) {
            tm_err_set(err, "%s: node is required", what);
            goto fail;
        }
        if ((b[i].node = pl_cluster_find_node(c, node)) < 0) {
            tm_err_set(err, "%s: node '%s' is not in the cluster (names are TYPE-N from 1)", what,
                       node);
            goto fail;
        }
        snprintf(what, sizeof what, "%s: [%zu] (%s)", source, i, node);
        json_t *cores = json_object_get(e, "cores"), *mem = json_object_get(e, "memory");
        if (!cores && !mem) {
            tm_err_set(err, "%s: give cores, memory or both", what);
            goto fail;
        }
        char w[360];
        snprintf(w, sizeof w, "%s: cores", what);
        if (cores && pl_json_cpu_milli(cores, w, &b[i].cpu_milli, err) < 0)
            goto fail;
        snprintf(w, sizeof w, "%s: memory", what);
        if (mem && pl_json_bytes(mem, w, 1, &b[i].mem_bytes, err) < 0)
            goto fail;
        json_t *until = json_object_get(e, "until");
        if (!until) {
            tm_err_set(err, "%s: until is required (how long from now it holds the capacity)",
                       what);
            goto fail;
        }
        snprintf(w, sizeof w, "%s: until", what);
        if (pl_json_duration(until, w, &b[i].until_s, err) < 0)
            goto fail;
        json_t *from = json_object_get(e, "from");
        snprintf(w, sizeof w, "%s: from", what);
        if (from && pl_json_duration(from, w, &b[i].from_s, err) < 0)
            goto fail;
        if (b[i].from_s >= b[i].until_s && from) {
            tm_err_set(err, "%s: from must be before until", what);
            goto fail;
        }
    }
    *out = b;
    *n = (int)cnt;
    return 0;
fail:
    free(b);
    return -1;
}

int pl_check_step_groups(const pl_workflow *wf, const pl_cluster *c, tm_err *err) {
    for (int i = 0; i < wf->nsteps; i++) {
        const pl_step *s = &wf->steps[i];
        for (int g = 0; s->group_s_given && g < s->ngroup_s; g++) {
            int t = 0;
            while (t < c->ntypes && strcmp(c->type_names[t], s->group_s[g].group))
                t++;
            if (t < c->ntypes)
                continue;
            char have[512] = "";
            size_t len = 0;
            for (int k = 0; k < c->ntypes && len < sizeof have; k++)
                len += (size_t)snprintf(have + len, sizeof have - len, "%s%s", k ? ", " : "",
                                        c->type_names[k]);
            return tm_err_set(err,
                              "step '%s': durations: node group '%s' is not one of the "
                              "cluster's (%s)",
                              s->name, s->group_s[g].group, have);
        }
    }
    return 0;
}
