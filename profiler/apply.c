/* apply.c: see apply.h. */
#include "profiler/apply.h"

#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/log.h"
#include "lib/nodegroups.h"

bool prof_is_managed_label(const char *key) {
    return tm_ng_is_label_key(key) != 0;
}

/* What the annotation snapshots of the Node, so --changed can tell that the machine under a
 * node name changed since it was profiled. */
static json_t *node_snapshot(const json_t *node) {
    json_t *s = json_object();
    const char *v;
    if ((v = tm_json_str(node, "status.capacity.cpu", NULL)))
        json_object_set_new(s, "cpu", json_string(v));
    if ((v = tm_json_str(node, "status.capacity.memory", NULL)))
        json_object_set_new(s, "memory", json_string(v));
    if ((v = tm_json_str(node, "status.nodeInfo.kernelVersion", NULL)))
        json_object_set_new(s, "kernel", json_string(v));
    if ((v = tm_json_str(node, "status.nodeInfo.machineID", NULL)))
        json_object_set_new(s, "machine_id", json_string(v));
    json_t *labels = tm_json_path(node, "metadata.labels");
    json_t *it = json_object_get(labels, "node.kubernetes.io/instance-type");
    if (json_is_string(it))
        json_object_set(s, "instance_type", it);
    return s;
}

char *prof_profile_annotation(const json_t *groups_node, const json_t *cluster_node) {
    json_t *a = json_object();
    json_object_set(a, "group", json_object_get(groups_node, TM_NG_N_GROUP));
    json_object_set(a, "figures", json_object_get(groups_node, TM_NG_N_FIGURES));
    json_object_set_new(a, "node", node_snapshot(cluster_node));
    char *s = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(a);
    return s;
}

bool prof_node_changed(const json_t *cluster_node) {
    json_t *ann = tm_json_path(cluster_node, "metadata.annotations");
    const char *v = json_string_value(json_object_get(ann, PROF_PROFILE_ANNOT));
    if (!v)
        return true;
    json_t *a = json_loads(v, 0, NULL);
    json_t *then = json_object_get(a, "node");
    if (!json_is_object(then)) {
        json_decref(a);
        return true;
    }
    json_t *now = node_snapshot(cluster_node);
    bool changed = !json_equal(then, now);
    json_decref(now);
    json_decref(a);
    return changed;
}

/* Validates one entry of the document's "nodes" array (lib/nodegroups.h: one definition). */
static int check_doc_node(const json_t *n, size_t i, tm_err *err) {
    if (tm_ng_check_node(n, i, err) != 0)
        return tm_err_wrap(err, "groups document");
    return 0;
}

/* The patch for a node in the document, or NULL when it already matches. */
static json_t *label_patch(const json_t *want, const json_t *node) {
    json_t *cur = tm_json_path(node, "metadata.labels");
    json_t *labels = json_object();
    const char *key;
    json_t *val;
    json_object_foreach(json_object_get(want, TM_NG_N_LABELS), key, val) {
        json_t *c = json_object_get(cur, key);
        if (!json_is_string(c) || strcmp(json_string_value(c), json_string_value(val)) != 0)
            json_object_set(labels, key, val);
    }
    json_object_foreach(cur, key, val) {
        if (prof_is_managed_label(key) &&
            !json_object_get(json_object_get(want, TM_NG_N_LABELS), key))
            json_object_set_new(labels, key, json_null());
    }
    char *annot = prof_profile_annotation(want, node);
    /* The annotation key contains a dot, so it is looked up directly, not by path. */
    json_t *ann = json_object_get(tm_json_path(node, "metadata.annotations"), PROF_PROFILE_ANNOT);
    bool annot_same = json_is_string(ann) && strcmp(json_string_value(ann), annot) == 0;
    if (json_object_size(labels) == 0 && annot_same) {
        free(annot);
        json_decref(labels);
        return NULL;
    }
    json_t *annots = json_object();
    json_object_set_new(annots, PROF_PROFILE_ANNOT, json_string(annot));
    free(annot);
    return json_pack("{s:{s:o,s:o}}", "metadata", "labels", labels, "annotations", annots);
}

/* The patch removing every tarema label and the annotation, or NULL when there are none. */
static json_t *clean_patch(const json_t *node) {
    json_t *labels = json_object();
    const char *key;
    json_t *val;
    json_object_foreach(tm_json_path(node, "metadata.labels"), key, val) {
        if (prof_is_managed_label(key))
            json_object_set_new(labels, key, json_null());
    }
    bool has_annot =
        json_object_get(tm_json_path(node, "metadata.annotations"), PROF_PROFILE_ANNOT) != NULL;
    if (json_object_size(labels) == 0 && !has_annot) {
        json_decref(labels);
        return NULL;
    }
    return json_pack("{s:{s:o,s:{s:n}}}", "metadata", "labels", labels, "annotations",
                     PROF_PROFILE_ANNOT);
}

json_t *prof_apply_plan(const json_t *groups, const json_t *nodes, tm_err *err) {
    json_t *want = json_object_get(groups, TM_NG_NODES);
    if (!json_is_array(want)) {
        tm_err_set(err, "groups document: no 'nodes' array (is this the output of "
                        "`tarema-profiler group`?)");
        return NULL;
    }
    size_t i;
    json_t *n;
    json_array_foreach(want, i, n) {
        if (check_doc_node(n, i, err) != 0)
            return NULL;
    }
    json_t *by_name = json_object(); /* document node name -> entry */
    json_array_foreach(want, i, n) {
        json_object_set(by_name, json_string_value(json_object_get(n, TM_NG_N_NODE)), n);
    }
    json_t *plan = json_object(), *patches = json_array(), *missing = json_array();
    json_t *seen = json_object();
    int unchanged = 0;
    json_array_foreach(nodes, i, n) {
        const char *name = tm_json_str(n, "metadata.name", NULL);
        if (!name)
            continue;
        json_t *w = json_object_get(by_name, name);
        json_t *patch = w ? label_patch(w, n) : clean_patch(n);
        if (w)
            json_object_set_new(seen, name, json_true());
        if (!patch) {
            unchanged++;
            continue;
        }
        json_array_append_new(patches, json_pack("{s:s,s:o,s:s}", "node", name, "patch", patch,
                                                 "action", w ? "label" : "clean"));
    }
    json_array_foreach(want, i, n) {
        const char *name = json_string_value(json_object_get(n, "node"));
        if (!json_object_get(seen, name))
            json_array_append_new(missing, json_string(name));
    }
    json_decref(seen);
    json_decref(by_name);
    json_object_set_new(plan, "patches", patches);
    json_object_set_new(plan, "missing", missing);
    json_object_set_new(plan, "unchanged", json_integer(unchanged));
    return plan;
}

int prof_apply(tm_kube *k, const json_t *groups, bool dry_run, prof_apply_stats *stats,
               tm_err *err) {
    memset(stats, 0, sizeof *stats);
    char *path = tm_kube_path("v1", "nodes", NULL, NULL, NULL);
    json_t *nodes = tm_kube_list(k, path, NULL, NULL, err);
    free(path);
    if (!nodes)
        return tm_err_wrap(err, "listing nodes");
    json_t *plan = prof_apply_plan(groups, nodes, err);
    json_decref(nodes);
    if (!plan)
        return -1;
    stats->unchanged = (int)json_integer_value(json_object_get(plan, "unchanged"));
    size_t i;
    json_t *p;
    int rc = 0;
    json_array_foreach(json_object_get(plan, "patches"), i, p) {
        const char *name = json_string_value(json_object_get(p, "node"));
        const char *action = json_string_value(json_object_get(p, "action"));
        bool label = strcmp(action, "label") == 0;
        if (!dry_run) {
            char *np = tm_kube_path("v1", "nodes", NULL, name, NULL);
            json_t *r = tm_kube_patch(k, np, TM_PATCH_MERGE, json_object_get(p, "patch"), err);
            free(np);
            if (!r) {
                rc = tm_err_wrap(err, "patching node %s", name);
                break;
            }
            json_decref(r);
        }
        tm_info("%s node=%s dry_run=%s", label ? "labelled" : "removed tarema labels", name,
                dry_run ? "true" : "false");
        if (label)
            stats->labelled++;
        else
            stats->cleaned++;
    }
    json_t *missing = json_object_get(plan, "missing");
    stats->missing = (int)json_array_size(missing);
    if (rc == 0 && stats->missing > 0) {
        json_t *m;
        json_array_foreach(missing, i, m) {
            tm_warn("node in the groups document is not in the cluster node=%s",
                    json_string_value(m));
        }
        rc = tm_err_set(err,
                        "%d node(s) of the groups document are not in the cluster (first: %s); "
                        "the others %s labelled",
                        stats->missing, json_string_value(json_array_get(missing, 0)),
                        dry_run ? "would be" : "were");
    }
    json_decref(plan);
    return rc;
}
