/* explain.c: the explain document (see explain.h) and its text rendering. */
#include "scheduler/explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "scheduler/policy.h"

static json_t *labels_json(const int *l) {
    if (l[0] <= 0 && l[1] <= 0 && l[2] <= 0)
        return json_null();
    return json_pack("{s:i, s:i, s:i}", "cpu", l[0], "mem", l[1], "io", l[2]);
}

typedef struct gview {
    size_t idx;
    int distance; /* -1 unknown */
    int power;
    const char *id;
    size_t feasible;
} gview;

/* Tarema's preference: smaller distance, then larger power; unknown distance last; then id. */
static int gview_cmp(const void *a, const void *b) {
    const gview *x = a, *y = b;
    if ((x->distance < 0) != (y->distance < 0))
        return x->distance < 0 ? 1 : -1;
    if (x->distance != y->distance)
        return x->distance < y->distance ? -1 : 1;
    if (x->power != y->power)
        return x->power > y->power ? -1 : 1;
    return strcmp(x->id, y->id);
}

static json_t *groups_json(const sched_snapshot *s, const sched_framework *fw,
                           const sched_task_info *task) {
    size_t ng = sched_snapshot_group_count(s);
    gview *gv = calloc(ng ? ng : 1, sizeof *gv);
    json_t *arr = json_array();
    if (!gv || !arr) {
        free(gv);
        json_decref(arr);
        return NULL;
    }
    for (size_t g = 0; g < ng; g++) {
        const sched_group *grp = sched_snapshot_group(s, g);
        gv[g] = (gview){g, task->labeled ? sched_tarema_distance(grp, task) : -1, grp->power,
                        grp->id, 0};
    }
    for (size_t i = 0; i < sched_snapshot_node_count(s); i++) {
        const sched_node *n = sched_snapshot_node(s, i);
        if (n->group >= 0 && sched_framework_node_status(fw, i, NULL, NULL) == SCHED_FILTER_OK)
            gv[n->group].feasible++;
    }
    qsort(gv, ng, sizeof *gv, gview_cmp);
    for (size_t r = 0; r < ng; r++) {
        const sched_group *grp = sched_snapshot_group(s, gv[r].idx);
        json_t *d = gv[r].distance >= 0 ? json_integer(gv[r].distance) : json_null();
        json_array_append_new(
            arr, json_pack("{s:s, s:o, s:i, s:o, s:I, s:I, s:I}", "id", grp->id, "labels",
                           labels_json(grp->labels), "power", grp->power, "distance", d, "nodes",
                           (json_int_t)grp->n_nodes, "feasible", (json_int_t)gv[r].feasible, "rank",
                           (json_int_t)(r + 1)));
    }
    free(gv);
    return arr;
}

static json_t *nodes_json(const sched_snapshot *s, const sched_framework *fw) {
    const sched_cycle *cyc = sched_framework_last_cycle(fw);
    const sched_pod *p = cyc ? cyc->pod : NULL; /* names claims in VolumeBinding reasons */
    json_t *arr = json_array();
    const uint32_t *by_name = sched_snapshot_by_name(s);
    for (size_t k = 0; arr && k < sched_snapshot_node_count(s); k++) {
        size_t i = by_name[k];
        const sched_node *n = sched_snapshot_node(s, i);
        uint32_t detail;
        int64_t score;
        sched_filter_id id = sched_framework_node_status(fw, i, &detail, &score);
        const sched_group *g = n->group >= 0 ? sched_snapshot_group(s, (size_t)n->group) : NULL;
        json_t *o = json_pack("{s:s, s:s, s:b}", "name", n->name, "group", g ? g->id : "",
                              "feasible", id == SCHED_FILTER_OK);
        if (!o)
            continue;
        if (id == SCHED_FILTER_OK) {
            json_object_set_new(o, "score", json_integer(score));
            json_object_set_new(o, "extenderScore",
                                json_integer(sched_framework_extender_score(fw, i)));
        } else {
            char reason[512];
            sched_filter_reason(s, n, p, id, detail, reason, sizeof reason);
            json_object_set_new(o, "filter", json_string(sched_filter_name(id)));
            json_object_set_new(o, "reason", json_string(reason));
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

json_t *sched_explain(sched_framework *fw, sched_snapshot *s, const sched_pod *pod, int64_t now_ms,
                      tm_err *err) {
    /* judge a recorded pod without its own requests */
    const char *rec = sched_snapshot_pod_node(s, pod->uid);
    char *bound = rec ? strdup(rec) : NULL;
    if (rec && !bound) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    if (bound)
        sched_snapshot_remove_pod(s, pod->uid);
    sched_decision d;
    int rc = sched_framework_schedule(fw, s, pod, now_ms, &d, err);
    json_t *doc = NULL;
    if (rc == 0) {
        const sched_cycle *c = sched_framework_last_cycle(fw);
        json_t *task =
            json_pack("{s:s, s:s, s:o, s:o}", "workflow", pod->workflow ? pod->workflow : "",
                      "process", pod->process ? pod->process : "", "labels",
                      labels_json(c->task.labels), "expectedRuntimeMs",
                      c->task.expected_runtime_ms >= 0 ? json_integer(c->task.expected_runtime_ms)
                                                       : json_null());
        char podname[512], msg[2048] = "";
        snprintf(podname, sizeof podname, "%s/%s", pod->ns, pod->name);
        if (d.node < 0)
            sched_framework_fit_message(fw, s, msg, sizeof msg);
        doc = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:s}", "pod", podname, "policy",
                        sched_framework_name(fw), "task", task, "groups",
                        groups_json(s, fw, &c->task), "nodes", nodes_json(s, fw), "selected",
                        d.node_name ? json_string(d.node_name) : json_null(), "boundTo",
                        bound ? json_string(bound) : json_null(), "message", msg);
        if (!doc)
            tm_err_set(err, "out of memory building the explanation");
    }
    if (bound) { /* with its metadata, so its ports and anti-affinity keep counting */
        tm_err put_back;
        sched_pod_record(s, pod, bound, &put_back);
        free(bound);
    }
    return doc;
}

static void labels_text(FILE *f, const json_t *l) {
    if (!json_is_object(l))
        fprintf(f, "unlabeled");
    else
        fprintf(f, "cpu=%lld mem=%lld io=%lld", tm_json_int(l, "cpu", 0), tm_json_int(l, "mem", 0),
                tm_json_int(l, "io", 0));
}

char *sched_explain_text(const json_t *doc) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    const json_t *task = json_object_get(doc, "task");
    fprintf(f, "pod %s (policy %s)\n", tm_json_str(doc, "pod", "?"),
            tm_json_str(doc, "policy", "?"));
    fprintf(f, "task: workflow=\"%s\" process=\"%s\" labels: ", tm_json_str(task, "workflow", ""),
            tm_json_str(task, "process", ""));
    labels_text(f, json_object_get(task, "labels"));
    long long rt = tm_json_int(task, "expectedRuntimeMs", -1);
    if (rt >= 0)
        fprintf(f, " expected runtime %lld ms", rt);
    fprintf(f, "\nnode groups (preference order):\n");
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(doc, "groups"), i, g) {
        const char *id = tm_json_str(g, "id", "");
        fprintf(f, "  %lld. %-16s ", tm_json_int(g, "rank", 0), *id ? id : "(unprofiled)");
        labels_text(f, json_object_get(g, "labels"));
        const json_t *dist = json_object_get(g, "distance");
        if (json_is_integer(dist))
            fprintf(f, " distance=%lld", (long long)json_integer_value(dist));
        else
            fprintf(f, " distance=-");
        fprintf(f, " power=%lld nodes=%lld feasible=%lld\n", tm_json_int(g, "power", 0),
                tm_json_int(g, "nodes", 0), tm_json_int(g, "feasible", 0));
    }
    fprintf(f, "nodes:\n");
    const json_t *n;
    json_array_foreach(json_object_get(doc, "nodes"), i, n) {
        const char *gid = tm_json_str(n, "group", "");
        fprintf(f, "  %-24s group %-16s ", tm_json_str(n, "name", "?"),
                *gid ? gid : "(unprofiled)");
        if (tm_json_bool(n, "feasible", false))
            fprintf(f, "fits, score %lld (extender %lld)\n", tm_json_int(n, "score", 0),
                    tm_json_int(n, "extenderScore", 0));
        else
            fprintf(f, "filtered by %s: %s\n", tm_json_str(n, "filter", "?"),
                    tm_json_str(n, "reason", "?"));
    }
    const char *bound = tm_json_str(doc, "boundTo", NULL);
    if (bound)
        fprintf(f, "bound to: %s\n", bound);
    const char *sel = tm_json_str(doc, "selected", NULL);
    if (sel)
        fprintf(f, "selected: %s\n", sel);
    else
        fprintf(f, "selected: none: %s\n", tm_json_str(doc, "message", ""));
    fclose(f);
    return out;
}
