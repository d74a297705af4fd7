/* groupsrc.c: see groupsrc.h. */
#include "labeler/groupsrc.h"

#include <stdlib.h>

#include "labeler/node_group.h"
#include "lib/jsonutil.h"

int lab_groups_load_file(const char *path, lab_groups *out, tm_err *err) {
    json_t *root = tm_json_load_file(path, err);
    if (!root)
        return -1;
    int rc = lab_groups_from_json(root, out, err);
    json_decref(root);
    return rc < 0 ? tm_err_wrap(err, "%s", path) : 0;
}

int lab_groups_load_cluster(tm_kube *k, const char *node_selector, lab_groups *out, tm_err *err) {
    tm_list_opts lo = {.label_selector = node_selector};
    json_t *nodes = tm_kube_list(k, "/api/v1/nodes", &lo, NULL, err);
    if (!nodes)
        return tm_err_wrap(err, "listing Nodes for their node groups");
    int rc = lab_groups_from_nodes(nodes, out, err);
    json_decref(nodes);
    return rc;
}

struct lab_node_watch {
    tm_informer *inf;
    int changed; /* a relevant event or a (re-)list since the last poll */
    unsigned long events, relevant;
};

static void on_node(void *ud, tm_watch_type type, json_t *obj, json_t *old) {
    lab_node_watch *w = ud;
    w->events++;
    bool rel = type == TM_WATCH_ADDED     ? lab_groups_node_relevant(obj, NULL)
               : type == TM_WATCH_DELETED ? lab_groups_node_relevant(NULL, old ? old : obj)
                                          : lab_groups_node_relevant(obj, old);
    if (rel) {
        w->relevant++;
        w->changed = 1;
    }
}

static void on_synced(void *ud) {
    lab_node_watch *w = ud;
    w->changed = 1;
}

lab_node_watch *lab_node_watch_start(tm_kube *k, const char *node_selector, tm_err *err) {
    lab_node_watch *w = calloc(1, sizeof *w);
    if (!w) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    tm_informer_opts o = {
        .path = "/api/v1/nodes",
        .label_selector = node_selector,
        .on_event = on_node,
        .on_synced = on_synced,
        .ud = w,
    };
    w->inf = tm_informer_start(k, &o, err);
    if (!w->inf) {
        free(w);
        tm_err_wrap(err, "watching Nodes for their node groups");
        return NULL;
    }
    return w;
}

void lab_node_watch_stop(lab_node_watch *w) {
    if (!w)
        return;
    tm_informer_stop(w->inf);
    free(w);
}

static void collect(void *ud, json_t *obj) {
    json_array_append(ud, obj);
}

int lab_node_watch_poll(lab_node_watch *w, lab_groups *out, tm_err *err) {
    if (!w->changed || !tm_informer_synced(w->inf))
        return 0;
    w->changed = 0;
    json_t *nodes = json_array();
    if (!nodes)
        return tm_err_set(err, "out of memory");
    tm_informer_foreach(w->inf, collect, nodes);
    int rc = lab_groups_from_nodes(nodes, out, err);
    json_decref(nodes);
    return rc < 0 ? -1 : 1;
}

bool lab_node_watch_synced(const lab_node_watch *w) {
    return w && tm_informer_synced(w->inf);
}

bool lab_node_watch_group_of(const lab_node_watch *w, const char *node, char *out, size_t size) {
    out[0] = '\0';
    const json_t *n = w && node && *node ? tm_informer_get(w->inf, NULL, node) : NULL;
    return n && lab_node_group_from_labels(tm_json_path(n, "metadata.labels"), out, size);
}

unsigned long lab_node_watch_events(const lab_node_watch *w, unsigned long *relevant) {
    if (relevant)
        *relevant = w->relevant;
    return w->events;
}
