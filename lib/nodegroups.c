/* nodegroups.c: see nodegroups.h. */
#include "lib/nodegroups.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const label_keys[TM_NG_NLABELS] = {"tarema.io/cpu", "tarema.io/mem",
                                                      "tarema.io/io"};
static const char *const label_names[TM_NG_NLABELS] = {"cpu", "mem", "io"};

const char *tm_ng_label_key(tm_ng_label l) {
    return (unsigned)l < TM_NG_NLABELS ? label_keys[l] : "?";
}

const char *tm_ng_label_name(tm_ng_label l) {
    return (unsigned)l < TM_NG_NLABELS ? label_names[l] : "?";
}

int tm_ng_is_label_key(const char *key) {
    for (int i = 0; i < TM_NG_NLABELS; i++)
        if (strcmp(key, label_keys[i]) == 0)
            return 1;
    return strcmp(key, TM_NG_LABEL_GROUP) == 0;
}

int tm_ng_label_value(const json_t *v, int *out) {
    const char *s = json_string_value(v);
    if (!s || !*s)
        return -1;
    char *end;
    long x = strtol(s, &end, 10);
    if (*end || x < 1 || x > 1000000)
        return -1;
    *out = (int)x;
    return 0;
}

json_t *tm_ng_labels_json(int group_id, const int label[TM_NG_NLABELS]) {
    json_t *l = json_object();
    char buf[16];
    for (int i = 0; i < TM_NG_NLABELS; i++) {
        if (label[i] <= 0)
            continue;
        snprintf(buf, sizeof buf, "%d", label[i]);
        json_object_set_new(l, label_keys[i], json_string(buf));
    }
    snprintf(buf, sizeof buf, "%d", group_id);
    json_object_set_new(l, TM_NG_LABEL_GROUP, json_string(buf));
    return l;
}

json_t *tm_ng_group_json(const tm_ng_group_out *g) {
    json_t *o = json_object(), *nodes = json_array(), *cen = json_object(), *ranks = json_object();
    for (size_t m = 0; m < g->nnodes; m++)
        json_array_append_new(nodes, json_string(g->nodes[m]));
    for (int j = 0; j < g->nfeatures; j++) {
        json_object_set_new(cen, g->features[j], json_real(g->centroid[j]));
        json_object_set_new(ranks, g->features[j], json_integer(g->rank[j]));
    }
    json_object_set_new(o, TM_NG_G_ID, json_integer(g->id));
    json_object_set_new(o, TM_NG_G_NODES, nodes);
    json_object_set_new(o, TM_NG_G_CENTROID, cen);
    json_object_set_new(o, TM_NG_G_RANKS, ranks);
    json_object_set_new(o, TM_NG_G_LABELS, tm_ng_labels_json(g->id, g->label));
    json_object_set_new(o, TM_NG_G_TOTAL_CORES, json_integer(g->total_cores));
    return o;
}

json_t *tm_ng_node_json(const char *node, int group_id, const int label[TM_NG_NLABELS],
                        json_t *figures) {
    json_t *o = json_object();
    json_object_set_new(o, TM_NG_N_NODE, json_string(node));
    json_object_set_new(o, TM_NG_N_GROUP, json_integer(group_id));
    json_object_set_new(o, TM_NG_N_LABELS, tm_ng_labels_json(group_id, label));
    json_object_set_new(o, TM_NG_N_FIGURES, figures ? figures : json_object());
    return o;
}

json_t *tm_ng_doc_json(const tm_ng_header *h, json_t *groups, json_t *nodes) {
    json_t *doc = json_object(), *feat = json_array(), *sil = json_object(), *sep = json_object();
    json_object_set_new(doc, TM_NG_K, json_integer(h->k));
    for (int j = 0; j < h->nfeatures; j++)
        json_array_append_new(feat, json_string(h->features[j]));
    json_object_set_new(doc, TM_NG_FEATURES, feat);
    json_object_set_new(doc, TM_NG_SCALING, json_string(h->scaling ? h->scaling : ""));
    json_object_set_new(doc, TM_NG_NOISE, json_real(h->noise));
    json_object_set_new(doc, TM_NG_SEED, json_integer((json_int_t)h->seed));
    json_object_set_new(doc, TM_NG_RESTARTS, json_integer(h->restarts));
    for (int k = 2; k <= h->k_last; k++) {
        char key[16];
        snprintf(key, sizeof key, "%d", k);
        json_object_set_new(sil, key,
                            isnan(h->silhouette[k]) ? json_null() : json_real(h->silhouette[k]));
        json_object_set_new(sep, key, json_boolean(h->separated[k]));
    }
    json_object_set_new(doc, TM_NG_SILHOUETTE, sil);
    json_object_set_new(doc, TM_NG_SEPARATED, sep);
    json_object_set_new(doc, TM_NG_REASON, json_string(h->reason ? h->reason : ""));
    json_object_set_new(doc, TM_NG_GROUPS, groups);
    json_object_set_new(doc, TM_NG_NODES, nodes);
    return doc;
}

/* The labels object of a group or node: managed keys with string values, tarema.io/group equal
 * to the id, feature labels >= 1 (0 in label[] when absent). `what` names it in errors. */
static int read_labels(const json_t *labels, int id, const char *what, int label[TM_NG_NLABELS],
                       tm_err *err) {
    if (!json_is_object(labels))
        return tm_err_set(err, "%s: no \"" TM_NG_G_LABELS "\" object", what);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)labels, key, val) {
        if (!tm_ng_is_label_key(key))
            return tm_err_set(err,
                              "%s: label '%s' is not one of tarema.io/cpu, tarema.io/mem, "
                              "tarema.io/io, tarema.io/group",
                              what, key);
        int x;
        if (tm_ng_label_value(val, &x) != 0)
            return tm_err_set(err,
                              "%s: label %s must be a string holding an integer >= 1 (as "
                              "Node labels are), like \"2\"",
                              what, key);
    }
    int gid;
    if (tm_ng_label_value(json_object_get(labels, TM_NG_LABEL_GROUP), &gid) != 0 || gid != id)
        return tm_err_set(err, "%s: label " TM_NG_LABEL_GROUP " must be \"%d\"", what, id);
    for (int i = 0; i < TM_NG_NLABELS; i++) {
        label[i] = 0;
        json_t *v = json_object_get(labels, label_keys[i]);
        if (v)
            tm_ng_label_value(v, &label[i]);
    }
    return 0;
}

int tm_ng_check_node(const json_t *n, size_t i, tm_err *err) {
    const char *name = json_string_value(json_object_get(n, TM_NG_N_NODE));
    if (!name || !*name)
        return tm_err_set(err, "nodes[%zu] has no string \"" TM_NG_N_NODE "\"", i);
    const json_t *g = json_object_get(n, TM_NG_N_GROUP);
    if (!json_is_integer(g) || !json_is_object(json_object_get(n, TM_NG_N_FIGURES)))
        return tm_err_set(err,
                          "node '%s' needs an integer \"" TM_NG_N_GROUP
                          "\" and an object \"" TM_NG_N_FIGURES "\"",
                          name);
    char what[320];
    snprintf(what, sizeof what, "node '%s'", name);
    int label[TM_NG_NLABELS];
    return read_labels(json_object_get(n, TM_NG_N_LABELS), (int)json_integer_value(g), what, label,
                       err);
}

static const tm_ng_group_in *find(const tm_ng_groups *gs, int id) {
    for (int i = 0; i < gs->n; i++)
        if (gs->g[i].id == id)
            return &gs->g[i];
    return NULL;
}

int tm_ng_read_groups(const json_t *doc, tm_ng_groups *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    const json_t *arr = json_object_get(doc, TM_NG_GROUPS);
    if (!json_is_array(arr))
        return tm_err_set(err, "no \"" TM_NG_GROUPS "\" array: expected the node-groups document "
                               "`tarema-profiler group -o` writes (docs/node-groups.md)");
    size_t i;
    const json_t *g;
    json_array_foreach(arr, i, g) {
        if (out->n == TM_NG_MAX_GROUPS)
            return tm_err_set(err, "more than %d groups", TM_NG_MAX_GROUPS);
        tm_ng_group_in *dst = &out->g[out->n];
        const json_t *id = json_object_get(g, TM_NG_G_ID);
        if (!json_is_integer(id) || json_integer_value(id) < 1 || json_integer_value(id) > 1000000)
            return tm_err_set(err, "groups[%zu]: \"" TM_NG_G_ID "\" must be an integer >= 1", i);
        dst->id = (int)json_integer_value(id);
        if (find(out, dst->id))
            return tm_err_set(err, "groups[%zu]: id %d appears twice", i, dst->id);
        char what[64];
        snprintf(what, sizeof what, "group %d", dst->id);
        const json_t *tc = json_object_get(g, TM_NG_G_TOTAL_CORES);
        if (!json_is_integer(tc) || json_integer_value(tc) < 1)
            return tm_err_set(err, "%s: \"" TM_NG_G_TOTAL_CORES "\" must be an integer >= 1", what);
        dst->total_cores = json_integer_value(tc);
        const json_t *nodes = json_object_get(g, TM_NG_G_NODES);
        if (!json_is_array(nodes) || json_array_size(nodes) == 0)
            return tm_err_set(err, "%s: \"" TM_NG_G_NODES "\" must be a non-empty array", what);
        dst->nnodes = json_array_size(nodes);
        if (read_labels(json_object_get(g, TM_NG_G_LABELS), dst->id, what, dst->label, err) != 0)
            return -1;
        out->n++;
    }
    if (out->n == 0)
        return tm_err_set(err, "the \"" TM_NG_GROUPS "\" array is empty");
    /* A feature label in some groups but not others would rank the unlabelled ones as "no
     * information" next to measured ones: the profiler never writes that. */
    for (int f = 0; f < TM_NG_NLABELS; f++)
        for (int j = 1; j < out->n; j++)
            if ((out->g[j].label[f] > 0) != (out->g[0].label[f] > 0))
                return tm_err_set(err,
                                  "label %s is in group %d but not in group %d: give it to every "
                                  "group or to none",
                                  label_keys[f], out->g[out->g[j].label[f] > 0 ? j : 0].id,
                                  out->g[out->g[j].label[f] > 0 ? 0 : j].id);
    const json_t *nodes = json_object_get(doc, TM_NG_NODES);
    if (nodes && !json_is_array(nodes))
        return tm_err_set(err, "\"" TM_NG_NODES "\" must be an array");
    const json_t *n;
    json_array_foreach(nodes, i, n) {
        if (tm_ng_check_node(n, i, err) != 0)
            return -1;
        int gid = (int)json_integer_value(json_object_get(n, TM_NG_N_GROUP));
        const tm_ng_group_in *gr = find(out, gid);
        const char *name = json_string_value(json_object_get(n, TM_NG_N_NODE));
        if (!gr)
            return tm_err_set(err, "node '%s': group %d is not in \"" TM_NG_GROUPS "\"", name, gid);
        int label[TM_NG_NLABELS];
        read_labels(json_object_get(n, TM_NG_N_LABELS), gid, "node", label, err);
        if (memcmp(label, gr->label, sizeof label) != 0)
            return tm_err_set(err, "node '%s': its labels differ from those of its group %d", name,
                              gid);
    }
    return 0;
}
