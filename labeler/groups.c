/* groups.c: see groups.h. */
#include "labeler/groups.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/nodegroups.h"
#include "lib/quantity.h"

/* Feature order and label keys are the node-groups document's (lib/nodegroups.h). */
_Static_assert((int)LAB_CPU == (int)TM_NG_CPU && (int)LAB_MEM == (int)TM_NG_MEM &&
                   (int)LAB_IO == (int)TM_NG_IO && (int)LAB_NFEATURES == (int)TM_NG_NLABELS,
               "labeler features and node-groups labels in the same order");
_Static_assert(LAB_MAX_CLASSES >= TM_NG_MAX_GROUPS, "every group of a document fits");

int lab_groups_from_json(const json_t *root, lab_groups *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    tm_ng_groups ng;
    if (tm_ng_read_groups(root, &ng, err) != 0)
        return tm_err_wrap(err, "node groups");
    for (int i = 0; i < ng.n; i++) {
        lab_group *dst = &out->g[out->n++];
        snprintf(dst->id, sizeof dst->id, "%d", ng.g[i].id);
        dst->cores = (double)ng.g[i].total_cores;
        memcpy(dst->label, ng.g[i].label, sizeof dst->label);
    }
    return 0;
}

static lab_group *find_group(lab_groups *gs, const char *id) {
    for (int i = 0; i < gs->n; i++)
        if (strcmp(gs->g[i].id, id) == 0)
            return &gs->g[i];
    return NULL;
}

int lab_groups_from_nodes(const json_t *nodes, lab_groups *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    size_t i;
    const json_t *node;
    json_array_foreach(nodes, i, node) {
        const char *name = tm_json_str(node, "metadata.name", "?");
        const json_t *labels = tm_json_path(node, "metadata.labels");
        const char *gid = json_string_value(json_object_get(labels, TM_NG_LABEL_GROUP));
        if (!gid)
            continue; /* not profiled: the scheduler does not rank it either */
        const char *cpu =
            json_string_value(json_object_get(tm_json_path(node, "status.capacity"), "cpu"));
        int64_t milli;
        if (!cpu || tm_quantity_parse_milli(cpu, &milli, err) < 0)
            return tm_err_set(err, "node %s: status.capacity.cpu missing or unreadable", name);
        /* A feature label the profiler did not write (not among its --features) is 0:
         * unmeasured, one class for every group. */
        int lv[LAB_NFEATURES];
        for (int f = 0; f < LAB_NFEATURES; f++) {
            const char *key = tm_ng_label_key((tm_ng_label)f);
            const json_t *v = json_object_get(labels, key);
            lv[f] = 0;
            if (v && tm_ng_label_value(v, &lv[f]) < 0)
                return tm_err_set(err, "node %s: label %s is not an integer >= 1", name, key);
        }
        lab_group *g = find_group(out, gid);
        if (!g) {
            if (out->n == LAB_MAX_CLASSES)
                return tm_err_set(err, "more than %d node groups", LAB_MAX_CLASSES);
            g = &out->g[out->n++];
            snprintf(g->id, sizeof g->id, "%s", gid);
            memcpy(g->label, lv, sizeof lv);
        } else if (memcmp(g->label, lv, sizeof lv) != 0) {
            return tm_err_set(err,
                              "node %s: its tarema.io labels differ from other nodes of group "
                              "%s; re-run the profiler's apply",
                              name, gid);
        }
        g->cores += (double)milli / 1000.0;
    }
    if (out->n == 0)
        return tm_err_set(err, "no node has the label tarema.io/group: run the profiler first, "
                               "or pass --groups GROUPS.json");
    for (int f = 0; f < LAB_NFEATURES; f++)
        for (int j = 1; j < out->n; j++)
            if ((out->g[j].label[f] > 0) != (out->g[0].label[f] > 0))
                return tm_err_set(err,
                                  "label %s is on the nodes of group %s but not on those of "
                                  "group %s; re-run the profiler's apply",
                                  tm_ng_label_key((tm_ng_label)f),
                                  out->g[out->g[j].label[f] > 0 ? j : 0].id,
                                  out->g[out->g[j].label[f] > 0 ? 0 : j].id);
    return 0;
}

int lab_groups_classes(const lab_groups *g, lab_feature f, lab_classes *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    int labels[LAB_MAX_CLASSES];
    for (int i = 0; i < g->n; i++) {
        int lv = g->g[i].label[f], j;
        for (j = 0; j < out->n && labels[j] != lv; j++)
            ;
        if (j == out->n) {
            labels[j] = lv;
            out->cores[j] = 0;
            out->n++;
        }
        out->cores[j] += g->g[i].cores;
    }
    if (out->n == 0)
        return tm_err_set(err, "no node groups");
    /* Insertion sort by label, ascending: weakest class first. */
    for (int i = 1; i < out->n; i++) {
        for (int j = i; j > 0 && labels[j - 1] > labels[j]; j--) {
            int tl = labels[j];
            labels[j] = labels[j - 1], labels[j - 1] = tl;
            double tc = out->cores[j];
            out->cores[j] = out->cores[j - 1], out->cores[j - 1] = tc;
        }
    }
    return 0;
}

int lab_groups_all_classes(const lab_groups *g, lab_classes out[LAB_NFEATURES], tm_err *err) {
    for (int f = 0; f < LAB_NFEATURES; f++)
        if (lab_groups_classes(g, (lab_feature)f, &out[f], err) < 0)
            return -1;
    return 0;
}

bool lab_groups_equal(const lab_groups *a, const lab_groups *b) {
    if (a->n != b->n)
        return false;
    for (int i = 0; i < a->n; i++) {
        const lab_group *x = &a->g[i], *y = NULL;
        for (int j = 0; j < b->n && !y; j++)
            if (strcmp(b->g[j].id, x->id) == 0)
                y = &b->g[j];
        if (!y || fabs(x->cores - y->cores) > 1e-9 ||
            memcmp(x->label, y->label, sizeof x->label) != 0)
            return false;
    }
    return true;
}

/* The Node fields the groups are computed from, NULL when absent. */
static const char *node_field(const json_t *node, int i) {
    if (i < 4)
        return json_string_value(
            json_object_get(tm_json_path(node, "metadata.labels"),
                            i == 0 ? TM_NG_LABEL_GROUP : tm_ng_label_key((tm_ng_label)(i - 1))));
    return json_string_value(json_object_get(tm_json_path(node, "status.capacity"), "cpu"));
}

bool lab_groups_node_relevant(const json_t *obj, const json_t *old) {
    if (!obj || !old) /* added or deleted: matters only for a profiled node */
        return (obj && node_field(obj, 0)) || (old && node_field(old, 0));
    for (int i = 0; i < 5; i++) {
        const char *a = node_field(obj, i), *b = node_field(old, i);
        if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
            return true;
    }
    return false;
}
