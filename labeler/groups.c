/* groups.c: see groups.h. */
#include "labeler/groups.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/quantity.h"

/* A label given as a JSON integer or a numeric string (Node labels are strings). */
static int label_value(const json_t *v, int *out) {
    if (json_is_integer(v)) {
        *out = (int)json_integer_value(v);
    } else if (json_is_string(v)) {
        char *end;
        long x = strtol(json_string_value(v), &end, 10);
        if (end == json_string_value(v) || *end)
            return -1;
        *out = (int)x;
    } else {
        return -1;
    }
    return *out >= 1 ? 0 : -1;
}

int lab_groups_from_json(const json_t *root, lab_groups *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    const json_t *arr = json_object_get(root, "groups");
    if (!json_is_array(arr))
        return tm_err_set(err, "node groups: no \"groups\" array (expected the profiler's "
                               "`group` output)");
    size_t i;
    const json_t *g;
    json_array_foreach(arr, i, g) {
        if (out->n == LAB_MAX_CLASSES)
            return tm_err_set(err, "node groups: more than %d groups", LAB_MAX_CLASSES);
        lab_group *dst = &out->g[out->n];
        const json_t *id = json_object_get(g, "id");
        if (json_is_string(id))
            snprintf(dst->id, sizeof dst->id, "%s", json_string_value(id));
        else if (json_is_integer(id))
            snprintf(dst->id, sizeof dst->id, "%lld", (long long)json_integer_value(id));
        else
            return tm_err_set(err, "node groups: groups[%zu] has no id", i);
        /* Groups are told apart by id (lab_groups_equal, the labels' group names). */
        for (int k = 0; k < out->n; k++)
            if (strcmp(out->g[k].id, dst->id) == 0)
                return tm_err_set(err, "node groups: group id %s appears twice", dst->id);
        dst->cores = tm_json_num(g, "total_cores", NAN);
        if (!(dst->cores > 0))
            return tm_err_set(err, "node groups: group %s: total_cores missing or not > 0",
                              dst->id);
        for (int f = 0; f < LAB_NFEATURES; f++) {
            const json_t *lv =
                json_object_get(json_object_get(g, "labels"), lab_feature_name((lab_feature)f));
            if (label_value(lv, &dst->label[f]) < 0)
                return tm_err_set(err, "node groups: group %s: labels.%s missing or not >= 1",
                                  dst->id, lab_feature_name((lab_feature)f));
        }
        out->n++;
    }
    if (out->n == 0)
        return tm_err_set(err, "node groups: the groups array is empty");
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
        const char *gid = json_string_value(json_object_get(labels, "tarema.io/group"));
        if (!gid)
            continue; /* not profiled: the scheduler does not rank it either */
        const char *cpu =
            json_string_value(json_object_get(tm_json_path(node, "status.capacity"), "cpu"));
        int64_t milli;
        if (!cpu || tm_quantity_parse_milli(cpu, &milli, err) < 0)
            return tm_err_set(err, "node %s: status.capacity.cpu missing or unreadable", name);
        int lv[LAB_NFEATURES];
        for (int f = 0; f < LAB_NFEATURES; f++) {
            char key[64];
            snprintf(key, sizeof key, "tarema.io/%s", lab_feature_name((lab_feature)f));
            if (label_value(json_object_get(labels, key), &lv[f]) < 0)
                return tm_err_set(err, "node %s: label %s missing or not an integer >= 1", name,
                                  key);
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
    static const char *const labels[] = {"tarema.io/group", "tarema.io/cpu", "tarema.io/mem",
                                         "tarema.io/io"};
    if (i < 4)
        return json_string_value(json_object_get(tm_json_path(node, "metadata.labels"), labels[i]));
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
