/* explain.c: the explain document (see explain.h) and its text rendering. */
#include "scheduler/cmd/explain.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "scheduler/plugins/policy/adaptive.h"
#include "scheduler/plugins/policy/policy.h"

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

/* The distance's terms, one per feature both the task and the group have a label for. */
static json_t *terms_json(const sched_group *g, const sched_task_info *t) {
    static const char *const feat[SCHED_NFEAT] = {"cpu", "mem", "io"};
    json_t *arr = json_array();
    for (int k = 0; k < SCHED_NFEAT && !g->unprofiled && t->labeled; k++)
        if (t->labels[k] > 0 && g->labels[k] > 0)
            json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:i}", "feature", feat[k],
                                                 "group", g->labels[k], "task", t->labels[k],
                                                 "diff", abs(g->labels[k] - t->labels[k])));
    return arr;
}

/* The task's profile as the adaptive policy finds it (adaptive.c: a profile learned
 * without workflow identity also counts). */
static const sched_task_profile *adaptive_profile(const sched_snapshot *s, const sched_pod *p) {
    const sched_task_profile *tp = sched_snapshot_task(s, p->workflow, p->process);
    if (!tp && p->workflow && *p->workflow)
        tp = sched_snapshot_task(s, "", p->process);
    return tp;
}

/* The runs of tp on group id (0 when none). */
static int32_t runs_on(const sched_task_profile *tp, const char *id) {
    for (int i = 0; tp && i < tp->n_group_rt && i < SCHED_TASK_MAX_GROUPS; i++)
        if (strncmp(tp->group_rt[i].group, id, SCHED_GROUP_ID_MAX) == 0)
            return tp->group_rt[i].runs;
    return 0;
}

/* Adaptive's view of group g (issue 16): its predicted runtime (sched_adaptive_predict_ms) and
 * where that comes from: "measured" (the task's mean on g), "bounded" (from the groups it ran
 * on, by power), "mean" (no comparable runs: its mean runtime everywhere) or "unknown"; and
 * the expected finish, wait + prediction, with wait 0 on a group with a node that fits now
 * (null on a group without one: the policy cannot place there in this cycle). */
static json_t *adaptive_json(const sched_snapshot *s, const sched_task_profile *tp,
                             const sched_group *g, size_t feasible) {
    bool measured = false;
    int64_t ms = sched_adaptive_predict_ms(s, tp, g, &measured);
    bool bounded = false;
    for (size_t k = 0; !measured && ms >= 0 && !g->unprofiled && k < sched_snapshot_group_count(s);
         k++) {
        const sched_group *h = sched_snapshot_group(s, k);
        bounded = bounded || (h && !h->unprofiled && runs_on(tp, h->id) > 0);
    }
    const char *basis = ms < 0 ? "unknown" : measured ? "measured" : bounded ? "bounded" : "mean";
    return json_pack("{s:o, s:s, s:I, s:o}", "predictedRuntimeMs",
                     ms >= 0 ? json_integer(ms) : json_null(), "basis", basis, "runs",
                     (json_int_t)runs_on(tp, g->id), "expectedFinishMs",
                     ms >= 0 && feasible > 0 ? json_integer(ms) : json_null());
}

/* The terms of adaptive's expected finish on one node (sched_adaptive_node): the figures the
 * policy scored the node with. */
static json_t *adaptive_node_json(const sched_adaptive_node *v) {
    return json_pack("{s:f, s:f, s:f, s:f, s:o, s:I, s:o}", "cores", v->cores, "usedCores", v->used,
                     "ownCores", v->own, "slowdown", v->slowdown, "runtimeMs",
                     v->runtime_ms >= 0 ? json_integer(v->runtime_ms) : json_null(), "harmMs",
                     (json_int_t)v->harm_ms, "expectedFinishMs",
                     v->finish_ms >= 0 ? json_integer(v->finish_ms) : json_null());
}

/* Adaptive: the feasible node of group gi with the earliest expected finish (then the lower
 * load, then the name), as {"name", ...adaptive_node_json}; null when none fits. */
static json_t *best_node_json(const sched_snapshot *s, const sched_framework *fw, size_t gi,
                              const sched_adaptive_node *views) {
    long best = -1;
    for (size_t i = 0; views && i < sched_snapshot_node_count(s); i++) {
        const sched_node *n = sched_snapshot_node(s, i);
        if (n->group != (int32_t)gi ||
            sched_framework_node_status(fw, i, NULL, NULL) != SCHED_FILTER_OK)
            continue;
        if (best >= 0) {
            const sched_node *b = sched_snapshot_node(s, (size_t)best);
            int64_t fi = views[i].finish_ms, fb = views[best].finish_ms;
            double li = sched_node_load(n), lb = sched_node_load(b);
            if (fi != fb ? fi > fb : li != lb ? li > lb : strcmp(n->name, b->name) > 0)
                continue;
        }
        best = (long)i;
    }
    if (best < 0)
        return json_null();
    json_t *o = adaptive_node_json(&views[best]);
    json_object_set_new(o, "name", json_string(sched_snapshot_node(s, (size_t)best)->name));
    return o;
}

/* The groups in tarema's preference order; rank_of[g] gets each group's rank (1 = first).
 * Under the adaptive policy each also gets "adaptive" (adaptive_json). */
static json_t *groups_json(const sched_snapshot *s, const sched_framework *fw, const sched_pod *pod,
                           const sched_task_info *task, int *rank_of,
                           const sched_adaptive_node *views) {
    bool adaptive = strcmp(sched_framework_name(fw), "adaptive") == 0;
    const sched_task_profile *tp = adaptive ? adaptive_profile(s, pod) : NULL;
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
        rank_of[gv[r].idx] = (int)(r + 1);
        json_t *d = gv[r].distance >= 0 ? json_integer(gv[r].distance) : json_null();
        json_array_append_new(arr,
                              json_pack("{s:s, s:o, s:i, s:o, s:o, s:I, s:I, s:I}", "id", grp->id,
                                        "labels", labels_json(grp->labels), "power", grp->power,
                                        "distance", d, "distanceTerms", terms_json(grp, task),
                                        "nodes", (json_int_t)grp->n_nodes, "feasible",
                                        (json_int_t)gv[r].feasible, "rank", (json_int_t)(r + 1)));
        if (adaptive) {
            json_t *a = adaptive_json(s, tp, grp, gv[r].feasible);
            json_object_set_new(a, "bestNode", best_node_json(s, fw, gv[r].idx, views));
            json_object_set_new(json_array_get(arr, json_array_size(arr) - 1), "adaptive", a);
        }
    }
    free(gv);
    return arr;
}

/* A node's load as the scheduler compares it (sched_node_load: the larger of the cpu and memory
 * requested shares), with the numbers behind it. Requests are those of the pods on the node
 * without the explained pod. */
static json_t *load_json(const sched_node *n) {
    return json_pack("{s:f, s:I, s:I, s:I, s:I, s:I, s:I}", "share", sched_node_load(n),
                     "cpuRequestedMilli", (json_int_t)n->requested.v[SCHED_RES_CPU],
                     "cpuAllocatableMilli", (json_int_t)n->allocatable.v[SCHED_RES_CPU],
                     "memoryRequestedBytes", (json_int_t)n->requested.v[SCHED_RES_MEMORY],
                     "memoryAllocatableBytes", (json_int_t)n->allocatable.v[SCHED_RES_MEMORY],
                     "podsRequested", (json_int_t)n->requested.v[SCHED_RES_PODS], "podsAllocatable",
                     (json_int_t)n->allocatable.v[SCHED_RES_PODS]);
}

static json_t *nodes_json(const sched_snapshot *s, const sched_framework *fw, const int *rank_of,
                          const sched_adaptive_node *views) {
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
        json_t *o = json_pack("{s:s, s:s, s:i, s:b, s:o}", "name", n->name, "group", g ? g->id : "",
                              "groupRank", g ? rank_of[n->group] : 0, "feasible",
                              id == SCHED_FILTER_OK, "load", load_json(n));
        if (!o)
            continue;
        if (id == SCHED_FILTER_OK) {
            json_object_set_new(o, "score", json_integer(score));
            const char *pn[SCHED_MAX_PLUGINS];
            int64_t pv[SCHED_MAX_PLUGINS];
            size_t np = sched_framework_score_parts(fw, i, pn, pv, SCHED_MAX_PLUGINS);
            json_t *parts = np ? json_object() : NULL;
            for (size_t j = 0; parts && j < np; j++)
                json_object_set_new(parts, pn[j], json_integer(pv[j]));
            if (parts) /* the weighted, normalised parts of score (preferences were scored) */
                json_object_set_new(o, "scoreParts", parts);
            /* no preference scored: the secondary scores that broke the policy's ties */
            np = sched_framework_tie_parts(fw, i, pn, pv, SCHED_MAX_PLUGINS);
            json_t *ties = np ? json_object() : NULL;
            for (size_t j = 0; ties && j < np; j++)
                json_object_set_new(ties, pn[j], json_integer(pv[j]));
            if (ties)
                json_object_set_new(o, "tieBreakParts", ties);
            json_object_set_new(o, "extenderScore",
                                json_integer(sched_framework_extender_score(fw, i)));
            if (views)
                json_object_set_new(o, "adaptive", adaptive_node_json(&views[i]));
        } else {
            char reason[512]; /* built-in filters and added plugins (Reservation, gangs) */
            if (id >= SCHED_FILTER_PLUGIN)
                sched_framework_node_reason(fw, i, reason, sizeof reason);
            else
                sched_filter_reason(s, n, p, id, detail, reason, sizeof reason);
            json_object_set_new(o, "filter",
                                json_string(id >= SCHED_FILTER_PLUGIN
                                                ? sched_framework_filter_name(fw, id)
                                                : sched_filter_name(id)));
            json_object_set_new(o, "reason", json_string(reason));
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

/* Adaptive: the queue rank's parts, rank = expected runtime + tail (adaptive.c), from the
 * same task profile the queue reads (by workflow, else learned without one). */
static json_t *queue_rank_json(const sched_snapshot *s, const sched_pod *pod) {
    const sched_task_profile *tp = sched_snapshot_task(s, pod->workflow, pod->process);
    if (!tp && pod->workflow && *pod->workflow)
        tp = sched_snapshot_task(s, "", pod->process);
    int64_t rt = tp && tp->expected_runtime_ms > 0 ? tp->expected_runtime_ms : 0;
    int64_t tail = tp && tp->tail_ms > 0 ? tp->tail_ms : 0;
    return json_pack("{s:I, s:I, s:I}", "rankMs", (json_int_t)sched_adaptive_rank_ms(tp),
                     "runtimeMs", (json_int_t)rt, "tailMs", (json_int_t)tail);
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
        json_t *task = json_pack(
            "{s:s, s:s, s:o, s:o, s:{s:I, s:I}}", "workflow", pod->workflow ? pod->workflow : "",
            "process", pod->process ? pod->process : "", "labels", labels_json(c->task.labels),
            "expectedRuntimeMs",
            c->task.expected_runtime_ms >= 0 ? json_integer(c->task.expected_runtime_ms)
                                             : json_null(),
            "requests", "cpuMilli", (json_int_t)pod->requests.v[SCHED_RES_CPU], "memoryBytes",
            (json_int_t)pod->requests.v[SCHED_RES_MEMORY]);
        if (task && strcmp(sched_framework_name(fw), "adaptive") == 0)
            json_object_set_new(task, "queueRank", queue_rank_json(s, pod));
        char podname[512], msg[2048] = "";
        snprintf(podname, sizeof podname, "%s/%s", pod->ns, pod->name);
        if (d.node < 0)
            sched_framework_fit_message(fw, s, msg, sizeof msg);
        size_t ng = sched_snapshot_group_count(s), nn = sched_snapshot_node_count(s);
        int *rank_of = calloc(ng ? ng : 1, sizeof *rank_of);
        /* adaptive: each node's expected finish as the policy computed it for this pod */
        sched_adaptive_node *views = NULL;
        bool views_ok = true;
        if (strcmp(sched_framework_name(fw), "adaptive") == 0) {
            views = calloc(nn ? nn : 1, sizeof *views);
            if (!views)
                tm_err_set(err, "out of memory for %zu nodes", nn);
            views_ok = views && sched_adaptive_nodes(s, pod, views, nn, err) == 0;
        }
        json_t *groups =
            rank_of && views_ok ? groups_json(s, fw, pod, &c->task, rank_of, views) : NULL;
        json_t *nodes = groups ? nodes_json(s, fw, rank_of, views) : NULL;
        free(views);
        free(rank_of);
        if (!views_ok) {
            json_decref(task);
            task = NULL; /* json_pack below fails on it: doc stays NULL with err */
        }
        doc = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:s}", "pod", podname, "policy",
                        sched_framework_name(fw), "task", task, "groups", groups, "nodes", nodes,
                        "selected", d.node_name ? json_string(d.node_name) : json_null(), "boundTo",
                        bound ? json_string(bound) : json_null(), "message", msg);
        if (doc) {
            char why[1024];
            sched_explain_why(doc, why, sizeof why);
            json_object_set_new(doc, "why", json_string(why));
            if (pod->scheduling_gates) /* not tried at all until the gates go (queue.h) */
                json_object_set_new(doc, "gated", json_string(pod->scheduling_gates));
            json_t *pre = d.node < 0 && !pod->scheduling_gates
                              ? sched_explain_preemption(fw, s, pod, now_ms, err)
                              : NULL;
            if (pre)
                json_object_set_new(doc, "preemption", pre);
        } else if (views_ok) {
            tm_err_set(err, "out of memory building the explanation");
        }
    }
    if (bound) { /* with its metadata, so its ports and anti-affinity keep counting */
        tm_err put_back;
        sched_pod_record(s, pod, bound, &put_back);
        free(bound);
    }
    return doc;
}

/* "3.5" for 3500 millicores, "8" for 8000. */
static void cores_text(char *buf, size_t cap, long long milli) {
    if (milli % 1000 == 0)
        snprintf(buf, cap, "%lld", milli / 1000);
    else if (milli % 100 == 0)
        snprintf(buf, cap, "%.1f", (double)milli / 1000);
    else
        snprintf(buf, cap, "%.2f", (double)milli / 1000);
}

/* A number with at most one decimal, without a trailing ".0": "1", "1.5". */
static void num_text(char *buf, size_t cap, double v) {
    snprintf(buf, cap, "%.1f", v);
    size_t n = strlen(buf);
    if (n > 2 && strcmp(buf + n - 2, ".0") == 0)
        buf[n - 2] = '\0';
}

/* Bytes in the unit of `scale_of` (GiB from 1 GiB on, else MiB); the unit name to *unit. */
static void bytes_text(char *buf, size_t cap, long long b, long long scale_of, const char **unit) {
    bool gib = scale_of >= (1LL << 30);
    num_text(buf, cap, (double)b / (double)(gib ? 1LL << 30 : 1LL << 20));
    *unit = gib ? "GiB" : "MiB";
}

static double pct(long long part, long long whole) {
    return whole > 0 ? 100.0 * (double)part / (double)whole : 100.0;
}

void sched_explain_load_text(const json_t *load, char *buf, size_t cap) {
    long long cr = tm_json_int(load, "cpuRequestedMilli", 0),
              ca = tm_json_int(load, "cpuAllocatableMilli", 0),
              mr = tm_json_int(load, "memoryRequestedBytes", 0),
              ma = tm_json_int(load, "memoryAllocatableBytes", 0),
              pr = tm_json_int(load, "podsRequested", 0),
              pa = tm_json_int(load, "podsAllocatable", 0);
    char c1[32], c2[32], m1[32], m2[32];
    const char *unit;
    cores_text(c1, sizeof c1, cr);
    cores_text(c2, sizeof c2, ca);
    bytes_text(m1, sizeof m1, mr, ma, &unit);
    bytes_text(m2, sizeof m2, ma, ma, &unit);
    snprintf(buf, cap,
             "load %.0f %%: cpu requested %s of %s cores (%.0f %%), memory %s of %s %s (%.0f "
             "%%), %lld of %lld pods",
             100.0 * tm_json_num(load, "share", 0), c1, c2, pct(cr, ca), m1, m2, unit, pct(mr, ma),
             pr, pa);
}

static const json_t *find_node(const json_t *doc, const char *name) {
    size_t i;
    const json_t *n;
    json_array_foreach(json_object_get(doc, "nodes"), i, n) {
        if (strcmp(tm_json_str(n, "name", ""), name) == 0)
            return n;
    }
    return NULL;
}

/* "101.2 s (measured, 5 runs)" for a group's adaptive object. */
static void prediction_text(const json_t *a, char *buf, size_t cap) {
    const json_t *ms = json_object_get(a, "predictedRuntimeMs");
    const char *basis = tm_json_str(a, "basis", "unknown");
    if (!json_is_integer(ms))
        snprintf(buf, cap, "runtime unknown");
    else if (strcmp(basis, "measured") == 0)
        snprintf(buf, cap, "%.1f s (measured, %lld run(s))", (double)json_integer_value(ms) / 1000,
                 tm_json_int(a, "runs", 0));
    else
        snprintf(buf, cap, "%.1f s (%s)", (double)json_integer_value(ms) / 1000,
                 strcmp(basis, "bounded") == 0 ? "bounded by the groups it ran on"
                                               : "its mean, no runs on comparable groups");
}

/* "slowdown x1.25 (uses 9.5 + 2 of 8 cores), expected finish 81.0 s (+3.2 s to the tasks
 * running there)" for a node's adaptive object. */
static void node_finish_text(const json_t *a, char *buf, size_t cap) {
    const json_t *fin = json_object_get(a, "expectedFinishMs");
    char f[64] = "expected finish - (runtime unknown)";
    if (json_is_integer(fin))
        snprintf(f, sizeof f, "expected finish %.1f s (+%.1f s to the tasks running there)",
                 (double)json_integer_value(fin) / 1000,
                 (double)tm_json_int(a, "harmMs", 0) / 1000);
    snprintf(buf, cap, "slowdown x%.2f (uses %.1f + %.1f of %.0f cores), %s",
             tm_json_num(a, "slowdown", 1), tm_json_num(a, "usedCores", 0),
             tm_json_num(a, "ownCores", 0), tm_json_num(a, "cores", 0), f);
}

/* Adaptive: the selected group has the earliest expected finish among groups that fit. */
static void adaptive_why(const json_t *doc, const char *gid, const char *sel, size_t peers,
                         double load, const char *tail, char *buf, size_t cap) {
    char mine[128] = "runtime unknown", others[512] = "";
    size_t off = 0, i;
    const json_t *g;
    json_array_foreach(json_object_get(doc, "groups"), i, g) {
        const json_t *a = json_object_get(g, "adaptive");
        const char *id = tm_json_str(g, "id", "");
        char t[128];
        prediction_text(a, t, sizeof t);
        if (strcmp(id, gid) == 0)
            snprintf(mine, sizeof mine, "%s", t);
        else if (off < sizeof others)
            off += (size_t)snprintf(others + off, sizeof others - off, "%sgroup %s %s%s",
                                    off ? "; " : "", *id ? id : "(unprofiled)", t,
                                    tm_json_int(g, "feasible", 0) ? "" : ", no node fits now");
    }
    char on[256] = "";
    const json_t *a = json_object_get(find_node(doc, sel), "adaptive");
    if (json_is_object(a)) {
        char t[200];
        node_finish_text(a, t, sizeof t);
        snprintf(on, sizeof on, "; on %s: %s", sel, t);
    }
    snprintf(buf, cap,
             "group %s: earliest expected finish (room now, predicted runtime %s)%s%s; within "
             "it %s is the least-loaded of %zu node(s) that fit (load %.0f %%%s)%s",
             gid, mine, *others ? " against " : "", others, sel, peers, 100.0 * load, tail, on);
}

void sched_explain_why(const json_t *doc, char *buf, size_t cap) {
    const char *sel = tm_json_str(doc, "selected", NULL);
    if (!sel) {
        snprintf(buf, cap, "no node fits: %s", tm_json_str(doc, "message", ""));
        return;
    }
    const json_t *sn = find_node(doc, sel);
    const char *gid = tm_json_str(sn, "group", "");
    double load = tm_json_num(json_object_get(sn, "load"), "share", 0);
    /* The feasible nodes the winner was compared with within its group (tarema) or overall. */
    bool tarema = strcmp(tm_json_str(doc, "policy", ""), "tarema") == 0;
    bool labeled = json_is_object(json_object_get(json_object_get(doc, "task"), "labels"));
    bool by_group = tarema && labeled && *gid;
    size_t peers = 0, i;
    const char *next = NULL;
    double next_load = 0;
    const json_t *n;
    json_array_foreach(json_object_get(doc, "nodes"), i, n) {
        if (!tm_json_bool(n, "feasible", false) ||
            (by_group && strcmp(tm_json_str(n, "group", ""), gid) != 0))
            continue;
        peers++;
        double l = tm_json_num(json_object_get(n, "load"), "share", 0);
        if (strcmp(tm_json_str(n, "name", ""), sel) != 0 && (!next || l < next_load))
            next = tm_json_str(n, "name", ""), next_load = l;
    }
    char tail[256] = "";
    if (next)
        snprintf(tail, sizeof tail, "; next: %s at %.0f %%", next, 100.0 * next_load);
    if (strcmp(tm_json_str(doc, "policy", ""), "adaptive") == 0 && *gid) {
        adaptive_why(doc, gid, sel, peers, load, tail, buf, cap);
        return;
    }
    if (!tarema) {
        snprintf(buf, cap, "policy %s scored %s highest of the %zu node(s) that fit",
                 tm_json_str(doc, "policy", "?"), sel, peers);
        return;
    }
    if (!labeled) {
        snprintf(buf, cap,
                 "the task has no labels yet (no TaskProfile and no tarema.io annotations), so "
                 "every group is alike: %s is the least-loaded of the %zu node(s) that fit "
                 "(load %.0f %%%s)",
                 sel, peers, 100.0 * load, tail);
        return;
    }
    if (!*gid) {
        snprintf(buf, cap,
                 "no node of a profiled group fits; %s is an unprofiled node (no tarema.io "
                 "labels), the least loaded of the %zu that fit (load %.0f %%%s)",
                 sel, peers, 100.0 * load, tail);
        return;
    }
    long long rank = tm_json_int(sn, "groupRank", 0), dist = -1;
    char skipped[256] = "";
    size_t off = 0;
    const json_t *g;
    json_array_foreach(json_object_get(doc, "groups"), i, g) {
        if (strcmp(tm_json_str(g, "id", ""), gid) == 0)
            dist = tm_json_int(g, "distance", -1);
        else if (tm_json_int(g, "rank", 0) < rank && off < sizeof skipped)
            off += (size_t)snprintf(skipped + off, sizeof skipped - off, "%s%s", off ? ", " : "",
                                    *tm_json_str(g, "id", "") ? tm_json_str(g, "id", "")
                                                              : "(unprofiled)");
    }
    char before[320] = "";
    if (*skipped)
        snprintf(before, sizeof before, " (better-ranked group(s) %s: no node fits)", skipped);
    snprintf(buf, cap,
             "group %s ranks %lld: label distance %lld, the best-ranked group with a node that "
             "fits%s; within it %s is the least-loaded of %zu node(s) that fit (load %.0f %%%s)",
             gid, rank, dist, before, sel, peers, 100.0 * load, tail);
}

static void labels_text(FILE *f, const json_t *l) {
    if (!json_is_object(l))
        fprintf(f, "unlabeled");
    else
        fprintf(f, "cpu %lld, mem %lld, io %lld", tm_json_int(l, "cpu", 0),
                tm_json_int(l, "mem", 0), tm_json_int(l, "io", 0));
}

/* "|2-1| + |3-3| = 1", the distance written out. */
static void distance_text(FILE *f, const json_t *g) {
    const json_t *d = json_object_get(g, "distance");
    if (!json_is_integer(d)) {
        fprintf(f, "distance -");
        return;
    }
    fprintf(f, "distance ");
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(g, "distanceTerms"), i, t) {
        fprintf(f, "%s|%lld-%lld|", i ? " + " : "", tm_json_int(t, "group", 0),
                tm_json_int(t, "task", 0));
    }
    fprintf(f, "%s%lld", json_array_size(json_object_get(g, "distanceTerms")) ? " = " : "",
            (long long)json_integer_value(d));
}

static void predicted_start_text(FILE *f, const json_t *doc);

char *sched_explain_text(const json_t *doc) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    const json_t *task = json_object_get(doc, "task");
    fprintf(f, "pod %s (policy %s)\n", tm_json_str(doc, "pod", "?"),
            tm_json_str(doc, "policy", "?"));
    fprintf(f, "task: workflow \"%s\", process \"%s\"; labels ", tm_json_str(task, "workflow", ""),
            tm_json_str(task, "process", ""));
    labels_text(f, json_object_get(task, "labels"));
    long long rt = tm_json_int(task, "expectedRuntimeMs", -1);
    if (rt >= 0)
        fprintf(f, "; expected runtime %.1f s", (double)rt / 1000);
    char c[32], m[32];
    const char *unit;
    long long mem = tm_json_int(task, "requests.memoryBytes", 0);
    cores_text(c, sizeof c, tm_json_int(task, "requests.cpuMilli", 0));
    bytes_text(m, sizeof m, mem, mem, &unit);
    fprintf(f, "; requests %s cores, %s %s memory\n", c, m, unit);
    const json_t *qr = json_object_get(task, "queueRank");
    if (json_is_object(qr))
        fprintf(f,
                "queue rank %.1f s = expected runtime %.1f s + tail %.1f s (time after it to the "
                "end of its workflow run; the larger rank goes first)\n",
                (double)tm_json_int(qr, "rankMs", 0) / 1000,
                (double)tm_json_int(qr, "runtimeMs", 0) / 1000,
                (double)tm_json_int(qr, "tailMs", 0) / 1000);
    fprintf(f, "\nnode groups, best first: smallest label distance sum_k |group_k - task_k| "
               "(features both have), ties to the more powerful group (larger label sum)\n");
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(doc, "groups"), i, g) {
        const char *id = tm_json_str(g, "id", "");
        fprintf(f, "  rank %lld  group %-12s labels ", tm_json_int(g, "rank", 0),
                *id ? id : "(unprofiled)");
        labels_text(f, json_object_get(g, "labels"));
        fprintf(f, "  ");
        distance_text(f, g);
        fprintf(f, "  power %lld, %lld node(s), %lld fit\n", tm_json_int(g, "power", 0),
                tm_json_int(g, "nodes", 0), tm_json_int(g, "feasible", 0));
        const json_t *a = json_object_get(g, "adaptive");
        if (json_is_object(a)) {
            char t[128];
            prediction_text(a, t, sizeof t);
            const json_t *fin = json_object_get(a, "expectedFinishMs");
            if (json_is_integer(fin))
                fprintf(f, "           predicted runtime %s; expected finish in %.1f s\n", t,
                        (double)json_integer_value(fin) / 1000);
            else
                fprintf(f, "           predicted runtime %s; expected finish -%s\n", t,
                        tm_json_int(g, "feasible", 0) ? "" : " (no node fits now)");
            const json_t *b = json_object_get(a, "bestNode");
            if (json_is_object(b)) {
                char nt[200];
                node_finish_text(b, nt, sizeof nt);
                fprintf(f, "           best node %s: %s\n", tm_json_str(b, "name", "?"), nt);
            }
        }
    }
    fprintf(f, "\nnodes (load without this pod):\n");
    const json_t *n;
    json_array_foreach(json_object_get(doc, "nodes"), i, n) {
        const char *gid = tm_json_str(n, "group", "");
        char grp[96];
        if (*gid)
            snprintf(grp, sizeof grp, "group %s (rank %lld)", gid, tm_json_int(n, "groupRank", 0));
        else
            snprintf(grp, sizeof grp, "unprofiled");
        fprintf(f, "  %-24s %-22s ", tm_json_str(n, "name", "?"), grp);
        if (tm_json_bool(n, "feasible", false)) {
            char load[256];
            sched_explain_load_text(json_object_get(n, "load"), load, sizeof load);
            fprintf(f, "fits; %s\n", load);
            const json_t *a = json_object_get(n, "adaptive");
            if (json_is_object(a)) {
                char nt[200];
                node_finish_text(a, nt, sizeof nt);
                fprintf(f, "  %-24s %-22s adaptive: %s\n", "", "", nt);
            }
        } else {
            fprintf(f, "filtered by %s: %s\n", tm_json_str(n, "filter", "?"),
                    tm_json_str(n, "reason", "?"));
        }
    }
    fprintf(f, "\n");
    const char *bound = tm_json_str(doc, "boundTo", NULL);
    if (bound)
        fprintf(f, "bound to: %s\n", bound);
    const char *sel = tm_json_str(doc, "selected", NULL);
    fprintf(f, "selected: %s\n", sel ? sel : "none");
    fprintf(f, "why: %s\n", tm_json_str(doc, "why", ""));
    sched_explain_preemption_text(f, doc);
    const char *gates = tm_json_str(doc, "gated", NULL);
    if (gates)
        fprintf(f, "gated: not scheduled until its scheduling gates are removed: %s\n", gates);
    const json_t *gang = json_object_get(doc, "gang");
    if (json_is_object(gang)) {
        /* a gang member: the gang decides, not this pod alone (gang.h) */
        const json_t *gmem = json_object_get(gang, "members");
        fprintf(f,
                "gang: %s %s, minMember %lld, phase %s; members pending %lld, bound %lld, "
                "running %lld, succeeded %lld, failed %lld\n",
                tm_json_str(gang, "kind", ""), tm_json_str(gang, "name", ""),
                (long long)tm_json_int(gang, "minMember", 0), tm_json_str(gang, "phase", ""),
                (long long)tm_json_int(gmem, "pending", 0),
                (long long)(tm_json_int(gmem, "bound", 0) + tm_json_int(gmem, "assumed", 0)),
                (long long)tm_json_int(gmem, "running", 0),
                (long long)tm_json_int(gmem, "succeeded", 0),
                (long long)tm_json_int(gmem, "failed", 0));
        fprintf(f, "gang now: %s\n", tm_json_str(gang, "message", ""));
        sched_explain_gang_preemption_text(f, gang);
    }
    const char *owner = tm_json_str(doc, "reservationOwner", NULL);
    if (owner)
        fprintf(f, "reservation: %s\n", owner);
    predicted_start_text(f, doc);
    const json_t *es = json_object_get(doc, "expectedStart");
    if (json_is_object(es)) {
        long long in_s = tm_json_int(es, "inSeconds", 0);
        fprintf(
            f,
            "expected start (backfill): %s (%s%lld s): the scheduler holds the nodes it needs "
            "from then; other pods are placed there only if they end before it or leave it room\n",
            tm_json_str(es, "at", "?"), in_s < 0 ? "overdue by " : "in ", in_s < 0 ? -in_s : in_s);
    }
    fclose(f);
    return out;
}

/* ---- Predicted start (issue 18): the labeler's waits feed writes tarema.io/predicted-start,
 * tarema.io/queued-at and tarema.io/predicted-wait on pending pods (labeler/waits_pod.h). ---- */

void sched_explain_predicted_start(json_t *doc, const json_t *pod, int64_t now_ms) {
    const json_t *ann = tm_json_path(pod, "metadata.annotations");
    const char *at = json_string_value(json_object_get(ann, "tarema.io/predicted-start"));
    const char *q = json_string_value(json_object_get(ann, "tarema.io/queued-at"));
    const char *w = json_string_value(json_object_get(ann, "tarema.io/predicted-wait"));
    struct tm tmv;
    memset(&tmv, 0, sizeof tmv);
    const char *end = at ? strptime(at, "%Y-%m-%dT%H:%M:%SZ", &tmv) : NULL;
    if (!end || *end || *tm_json_str(pod, "spec.nodeName", "")) { /* none, unreadable, bound */
        json_object_set_new(doc, "predictedStart", json_null());
        return;
    }
    long long in_s = (long long)timegm(&tmv) - now_ms / 1000;
    json_object_set_new(doc, "predictedStart",
                        json_pack("{s:s, s:s, s:s, s:I}", "at", at, "queuedAt", q ? q : "", "wait",
                                  w ? w : "", "inSeconds", (json_int_t)in_s));
}

void sched_explain_expected_start(json_t *doc, const json_t *pod, int64_t now_ms) {
    const json_t *ann = tm_json_path(pod, "metadata.annotations");
    const char *at = json_string_value(json_object_get(ann, "tarema.io/expected-start"));
    struct tm tmv;
    memset(&tmv, 0, sizeof tmv);
    const char *end = at ? strptime(at, "%Y-%m-%dT%H:%M:%SZ", &tmv) : NULL;
    if (!end || *end || *tm_json_str(pod, "spec.nodeName", "")) { /* none, unreadable, bound */
        json_object_set_new(doc, "expectedStart", json_null());
        return;
    }
    long long in_s = (long long)timegm(&tmv) - now_ms / 1000;
    json_object_set_new(doc, "expectedStart",
                        json_pack("{s:s, s:I}", "at", at, "inSeconds", (json_int_t)in_s));
}

static void predicted_start_text(FILE *f, const json_t *doc) {
    const json_t *ps = json_object_get(doc, "predictedStart");
    if (!json_is_object(ps))
        return;
    long long in_s = tm_json_int(ps, "inSeconds", 0);
    fprintf(f, "predicted start: %s (%s%lld s; queued at %s, estimated wait %s)\n",
            tm_json_str(ps, "at", "?"), in_s < 0 ? "overdue by " : "in ", in_s < 0 ? -in_s : in_s,
            tm_json_str(ps, "queuedAt", "?"), tm_json_str(ps, "wait", "?"));
}
