/* node_group.c: see node_group.h. */
#include "labeler/node_group.h"

#include <stdio.h>
#include <stdlib.h>

#include "lib/nodegroups.h"

static int positive_label(const json_t *labels, const char *key) {
    const char *v = json_string_value(json_object_get(labels, key));
    if (!v || !*v)
        return 0;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 1 || x > 1000000 ? 0 : (int)x;
}

bool lab_node_group_from_labels(const json_t *labels, char *out, size_t size) {
    out[0] = '\0';
    const char *g = json_string_value(json_object_get(labels, TM_NG_LABEL_GROUP));
    int n;
    if (g && *g) {
        n = snprintf(out, size, "%s", g);
    } else {
        int l[TM_NG_NLABELS];
        for (int k = 0; k < TM_NG_NLABELS; k++)
            if (!(l[k] = positive_label(labels, tm_ng_label_key((tm_ng_label)k))))
                return false;
        n = snprintf(out, size, "L%d-%d-%d", l[0], l[1], l[2]);
    }
    if (n < 0 || (size_t)n >= size) {
        out[0] = '\0';
        return false;
    }
    return true;
}

static void put(json_t *map, const char *node, const json_t *labels) {
    char g[64];
    if (node && *node && lab_node_group_from_labels(labels, g, sizeof g))
        json_object_set_new(map, node, json_string(g));
}

json_t *lab_node_groups_from_nodes(const json_t *nodes) {
    json_t *map = json_object();
    size_t i;
    const json_t *n;
    json_array_foreach(nodes, i, n) {
        const json_t *md = json_object_get(n, "metadata");
        put(map, json_string_value(json_object_get(md, "name")), json_object_get(md, "labels"));
    }
    return map;
}

json_t *lab_node_groups_from_doc(const json_t *doc) {
    json_t *map = json_object();
    size_t i;
    const json_t *n;
    json_array_foreach(json_object_get(doc, TM_NG_NODES), i, n)
        put(map, json_string_value(json_object_get(n, TM_NG_N_NODE)),
            json_object_get(n, TM_NG_N_LABELS));
    return map;
}

size_t lab_node_groups_fill(const json_t *map, lab_task_run *runs, size_t n) {
    size_t hit = 0;
    for (size_t i = 0; map && i < n; i++) {
        const char *g =
            runs[i].node[0] ? json_string_value(json_object_get(map, runs[i].node)) : NULL;
        if (g && snprintf(runs[i].node_group, sizeof runs[i].node_group, "%s", g) <
                     (int)sizeof runs[i].node_group)
            hit++;
        else
            runs[i].node_group[0] = '\0';
    }
    return hit;
}
