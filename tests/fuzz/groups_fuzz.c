/* groups_fuzz.c: fuzzes the node-groups JSON, the document `tarema-profiler group` prints and
 * two programs read back: the labeler (labeler/groups.h lab_groups_from_json, also from a
 * Node list: lab_groups_from_nodes) and `tarema-profiler apply` (profiler/apply.h
 * prof_apply_plan, against three fixed cluster Nodes). Accepted groups must give classes with
 * finite cores, positive when read from the groups document; from Nodes a class may sum to 0
 * cores (a Node reporting capacity cpu 0), which lab_bounds() refuses with a message. */
#include <math.h>

#include "fuzz/fuzz_util.h"
#include "labeler/groups.h"
#include "profiler/apply.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static const char groups_nodes[] =
    "[{\"metadata\":{\"name\":\"n1\",\"labels\":{\"tarema.io/group\":\"1\",\"tarema.io/cpu\":"
    "\"2\",\"tarema.io/mem\":\"1\",\"tarema.io/io\":\"1\"}},\"status\":{\"capacity\":{\"cpu\":"
    "\"8\"}}},"
    "{\"metadata\":{\"name\":\"n2\",\"labels\":{\"tarema.io/machine-type\":\"x\"}},"
    "\"status\":{\"capacity\":{\"cpu\":\"4\"}}},"
    "{\"metadata\":{\"name\":\"n3\"},\"status\":{\"capacity\":{\"cpu\":\"500m\"}}}]";

static void groups_check(const lab_groups *g, int positive) {
    FZ_CHECK(g->n > 0 && g->n <= LAB_MAX_CLASSES);
    FZ_CHECK(lab_groups_equal(g, g));
    lab_classes cls[LAB_NFEATURES];
    tm_err err = {{0}, 0};
    if (lab_groups_all_classes(g, cls, &err) != 0) {
        FZ_CHECK(err.msg[0] != '\0');
        return;
    }
    for (int f = 0; f < LAB_NFEATURES; f++) {
        FZ_CHECK(cls[f].n > 0 && cls[f].n <= g->n);
        for (int i = 0; i < cls[f].n; i++)
            if (!isfinite(cls[f].cores[i]) || (positive && !(cls[f].cores[i] > 0))) {
                fprintf(stderr, "feature %d class %d: %g cores\n", f, i, cls[f].cores[i]);
                FZ_FAIL("a node class with infinite, or from the document non-positive, cores");
            }
    }
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    json_t *doc = fz_json(data, size);
    if (!doc)
        return 0;
    lab_groups g;
    tm_err err = {{0}, 0};
    if (lab_groups_from_json(doc, &g, &err) == 0)
        groups_check(&g, 1);
    else
        FZ_CHECK(strncmp(err.msg, "node groups", 11) == 0);
    if (json_is_array(doc)) {
        memset(&err, 0, sizeof err);
        if (lab_groups_from_nodes(doc, &g, &err) == 0)
            groups_check(&g, 0);
        else
            FZ_CHECK(err.msg[0] != '\0');
        for (size_t i = 0; i < json_array_size(doc); i++)
            (void)lab_groups_node_relevant(json_array_get(doc, i),
                                           i ? json_array_get(doc, i - 1) : NULL);
    }
    json_t *nodes = json_loads(groups_nodes, 0, NULL);
    memset(&err, 0, sizeof err);
    json_t *plan = prof_apply_plan(doc, nodes, &err);
    if (!plan) {
        FZ_CHECK(err.msg[0] != '\0');
    } else {
        FZ_CHECK(json_is_array(json_object_get(plan, "patches")));
        FZ_CHECK(json_is_array(json_object_get(plan, "missing")));
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(plan, "patches"), i, p) {
            FZ_CHECK(json_is_string(json_object_get(p, "node")));
            FZ_CHECK(json_is_object(json_object_get(p, "patch")));
        }
        json_decref(plan);
    }
    json_decref(nodes);
    json_decref(doc);
    return 0;
}
