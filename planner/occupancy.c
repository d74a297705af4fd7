/* occupancy.c: nodes and busy entries from a live cluster's objects (occupancy.h). Pure. */
#include "planner/occupancy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/quantity.h"
#include "planner/kobj.h"
#include "planner/units.h"

static int node_usable(const json_t *n) {
    if (tm_json_bool(n, "spec.unschedulable", false) ||
        tm_json_str(n, "metadata.deletionTimestamp", NULL))
        return 0;
    json_t *conds = tm_json_path(n, "status.conditions"), *c;
    size_t i;
    json_array_foreach(conds, i, c) {
        if (!strcmp(tm_json_str(c, "type", ""), "Ready"))
            return !strcmp(tm_json_str(c, "status", ""), "True");
    }
    return 0;
}

pl_cluster *pl_world_cluster(const json_t *nodes, tm_err *err) {
    size_t cnt = json_array_size(nodes);
    pl_cluster *c = calloc(1, sizeof *c);
    if (!c || !(c->nodes = calloc(cnt ? cnt : 1, sizeof *c->nodes)) ||
        !(c->type_names = calloc(cnt ? cnt : 1, sizeof *c->type_names))) {
        pl_cluster_free(c);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) {
        if (!node_usable(n))
            continue;
        int64_t cpu = 0, mem = 0;
        tm_err e = {0};
        if (tm_quantity_parse_milli(tm_json_str(n, "status.allocatable.cpu", "0"), &cpu, &e) < 0 ||
            tm_quantity_parse(tm_json_str(n, "status.allocatable.memory", "0"), &mem, &e) < 0 ||
            cpu <= 0 || mem <= 0)
            continue;
        const char *grp = tm_json_str(tm_json_path(n, "metadata.labels"), "tarema.io/group", NULL);
        json_t *labels = tm_json_path(n, "metadata.labels");
        grp = labels ? json_string_value(json_object_get(labels, "tarema.io/group")) : NULL;
        if (!grp)
            grp = "all";
        int t = 0;
        while (t < c->ntypes && strcmp(c->type_names[t], grp))
            t++;
        if (t == c->ntypes)
            snprintf(c->type_names[c->ntypes++], PL_NAME_MAX, "%s", grp);
        pl_node *pn = &c->nodes[c->nnodes++];
        snprintf(pn->name, sizeof pn->name, "%s", tm_json_str(n, "metadata.name", "?"));
        pn->type = t;
        pn->cpu_milli = cpu;
        pn->mem_bytes = mem;
    }
    if (c->nnodes == 0) {
        pl_cluster_free(c);
        tm_err_set(err, "no Ready, schedulable node with allocatable cpu and memory");
        return NULL;
    }
    return c;
}

void pl_pod_requests(const json_t *pod, int64_t *cpu_milli, int64_t *mem_bytes) {
    *cpu_milli = *mem_bytes = 0;
    json_t *ctrs = tm_json_path(pod, "spec.containers"), *ct;
    size_t i;
    json_array_foreach(ctrs, i, ct) {
        int64_t v = 0;
        tm_err e = {0};
        const char *cpu = tm_json_str(ct, "resources.requests.cpu", NULL);
        const char *mem = tm_json_str(ct, "resources.requests.memory", NULL);
        if (cpu && tm_quantity_parse_milli(cpu, &v, &e) == 0)
            *cpu_milli += v;
        if (mem && tm_quantity_parse(mem, &v, &e) == 0)
            *mem_bytes += v;
    }
}

int64_t pl_profile_runtime(const json_t *profiles, const char *workflow, const char *process) {
    return pl_profile_runtime_on(profiles, workflow, process, NULL);
}

int64_t pl_profile_runtime_on(const json_t *profiles, const char *workflow, const char *process,
                              const char *group) {
    size_t i;
    json_t *p;
    if (!workflow || !process)
        return -1;
    json_array_foreach(profiles, i, p) {
        if (strcmp(tm_json_str(p, "spec.workflow", ""), workflow) ||
            strcmp(tm_json_str(p, "spec.process", ""), process))
            continue;
        size_t k;
        json_t *g;
        json_array_foreach(group ? tm_json_path(p, "status.runtimeByGroup") : NULL, k, g) {
            double s = tm_json_num(g, "meanSeconds", -1);
            if (!strcmp(tm_json_str(g, "group", ""), group) && tm_json_int(g, "runs", 0) >= 1 &&
                s > 0 && s <= 366.0 * 86400)
                return (int64_t)ceil(s); /* its runs on this node's group */
        }
        double ms = tm_json_num(p, "status.mean.realtimeMs", -1);
        if (ms > 0)
            return (int64_t)ceil(ms / 1000.0);
    }
    return -1;
}

int64_t pl_pod_expected_end(const json_t *pod, const json_t *profiles, const char *group,
                            int64_t now) {
    int64_t start = pl_time_parse(tm_json_str(pod, "status.startTime", NULL));
    if (start < 0)
        start = now;
    json_t *ann = tm_json_path(pod, "metadata.annotations");
    const char *d = ann ? json_string_value(json_object_get(ann, PL_ANN_EXPECT)) : NULL;
    int64_t s = 0;
    tm_err e = {0};
    if (d && pl_duration_parse(d, &s, &e) == 0)
        return start + s;
    long long ads = tm_json_int(pod, "spec.activeDeadlineSeconds", -1);
    if (ads > 0)
        return start + ads;
    json_t *labels = tm_json_path(pod, "metadata.labels");
    int64_t rt = pl_profile_runtime_on(
        profiles, json_string_value(json_object_get(labels, "tarema.io/workflow")),
        json_string_value(json_object_get(labels, "nextflow.io/processName")), group);
    return rt > 0 ? start + rt : -1;
}

static int push(pl_busy **b, int *n, int *cap, pl_busy e) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        pl_busy *nb = realloc(*b, (size_t)nc * sizeof *nb);
        if (!nb)
            return -1;
        *b = nb;
        *cap = nc;
    }
    (*b)[(*n)++] = e;
    return 0;
}

/* Pod groups with at least one bound pod that has not finished. */
static int group_bound(const json_t *pods, const char *ns, const char *group) {
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        json_t *labels = tm_json_path(p, "metadata.labels");
        const char *g = labels ? json_string_value(json_object_get(labels, PL_LABEL_PG)) : NULL;
        if (g && !strcmp(g, group) && !strcmp(tm_json_str(p, "metadata.namespace", ""), ns) &&
            tm_json_str(p, "spec.nodeName", NULL))
            return 1;
    }
    return 0;
}

/* ---- pending pods --------------------------------------------------------------------------- */

/* A pod waiting for a node that the scheduler will bind as soon as capacity frees: not bound,
 * not finished or being deleted, behind no scheduling gate, not of the workflow being planned
 * (its steps are what is planned), and not an owner's pod of a Reservation (it goes into the
 * Reservation's hold, which is counted already). */
static int pending_counts(const json_t *p, const json_t *resvs, const pl_world_opts *o) {
    if (tm_json_str(p, "spec.nodeName", NULL) || tm_json_str(p, "metadata.deletionTimestamp", NULL))
        return 0;
    if (strcmp(tm_json_str(p, "status.phase", "Pending"), "Pending"))
        return 0;
    if (json_array_size(tm_json_path(p, "spec.schedulingGates")) > 0)
        return 0;
    const char *ns = tm_json_str(p, "metadata.namespace", "");
    json_t *labels = tm_json_path(p, "metadata.labels");
    const char *wf = labels ? json_string_value(json_object_get(labels, PL_LABEL_WF)) : NULL;
    if (wf && o->skip_wf && !strcmp(wf, o->skip_wf) && o->skip_ns && !strcmp(ns, o->skip_ns))
        return 0;
    const char *pg = labels ? json_string_value(json_object_get(labels, PL_LABEL_PG)) : NULL;
    size_t i;
    json_t *r;
    json_array_foreach(pg ? resvs : NULL, i, r) {
        const char *ph = tm_json_str(r, "status.phase", "");
        if (!strcmp(tm_json_str(r, "spec.owner.name", ""), pg) &&
            !strcmp(tm_json_str(r, "metadata.namespace", ""), ns) && strcmp(ph, "Failed") &&
            strcmp(ph, "Expired") && strcmp(ph, "Released"))
            return 0;
    }
    return 1;
}

/* Whether the pod's spec.nodeSelector allows a node with these labels (NULL: none known); any
 * node when the caller passed no Node objects (have_nodes 0). */
static int selector_allows(const json_t *pod, const json_t *labels, int have_nodes) {
    json_t *sel = tm_json_path(pod, "spec.nodeSelector");
    if (!json_object_size(sel) || !have_nodes)
        return 1;
    const char *k;
    json_t *v;
    json_object_foreach(sel, k, v) {
        const char *have = labels ? json_string_value(json_object_get(labels, k)) : NULL;
        if (!have || !json_is_string(v) || strcmp(have, json_string_value(v)))
            return 0;
    }
    return 1;
}

/* Busy entries per node: first[node] and nxt[entry] chain the entries of each node, so that a
 * pending pod's fit looks at its candidate node's entries only (a big cluster has thousands). */
typedef struct node_index {
    int *first, *nxt;
    int n;
} node_index;

static int index_add(node_index *x, const pl_busy *b, int e) {
    if (e >= x->n) {
        int nn = x->n ? x->n * 2 : 64;
        while (nn <= e)
            nn *= 2;
        int *q = realloc(x->nxt, (size_t)nn * sizeof *q);
        if (!q)
            return -1;
        x->nxt = q;
        x->n = nn;
    }
    x->nxt[e] = x->first[b[e].node];
    x->first[b[e].node] = e;
    return 0;
}

/* The peak cpu and memory node nd's entries hold at any moment of [0, d). Usage only rises
 * where an entry starts, so checking 0 and every start inside is enough. */
static void peak_now(const pl_busy *b, const node_index *x, int nd, int64_t d, int64_t *cpu,
                     int64_t *mem) {
    *cpu = *mem = 0;
    /* k = -2: now; then each entry of nd (the chain ends at -1) */
    for (int k = -2; k != -1; k = k == -2 ? x->first[nd] : x->nxt[k]) {
        int64_t at = 0;
        if (k >= 0) {
            if (b[k].from_s <= 0 || b[k].from_s >= d)
                continue;
            at = b[k].from_s;
        }
        int64_t uc = 0, um = 0;
        for (int e = x->first[nd]; e >= 0; e = x->nxt[e])
            if (b[e].from_s <= at && at < b[e].until_s) {
                uc += b[e].cpu_milli;
                um += b[e].mem_bytes;
            }
        if (uc > *cpu)
            *cpu = uc;
        if (um > *mem)
            *mem = um;
    }
}

typedef struct pending_ref {
    const json_t *pod;
    const char *created, *name;
} pending_ref;

static int cmp_pending(const void *a, const void *b) {
    const pending_ref *x = a, *y = b;
    int r = strcmp(x->created, y->created);
    return r ? r : strcmp(x->name, y->name);
}

/* Pending pods (pending_counts), oldest first, each on the first node where it fits now for
 * its expected duration (as a running pod's: its annotation, activeDeadlineSeconds, its
 * TaskProfile on that node's group, else unknown_hold_s) around what is placed already,
 * reservation windows included (the scheduler lets no pod run into one). Those fit now, so the
 * scheduler binds them within its next retry (backoff up to a second or so), before it admits a
 * Reservation made from this plan: the admission counts them, and the plan must too (issue 15:
 * the plan counted on a core a queued 1-core pod took a moment later, and the scheduler refused
 * the 4-pod step's Reservation, "only 3 of 4 pods fit"). A pending pod that does not fit now is
 * left out: once the Reservation is admitted, the scheduler lets it start before the window
 * only if it ends by then. At most PL_PENDING_MAX pods. */
#define PL_PENDING_MAX 2000
static int place_pending(const pl_cluster *c, const json_t *pods, const json_t *resvs,
                         const json_t *profiles, const pl_world_opts *o, const pl_busy *own,
                         int nown, pl_busy **b, int *cnt, int *cap) {
    size_t np = 0, i;
    json_t *p;
    json_array_foreach(pods, i, p) np += pending_counts(p, resvs, o) ? 1 : 0;
    if (np == 0)
        return 0;
    int rc = -1;
    /* w: what holds capacity against pending pods: the entries so far, the planned workflow's
     * own admitted holds (the scheduler keeps other pods out of them, although the workflow's
     * steps may use them), then the pending pods placed */
    int wn = *cnt + nown;
    pending_ref *v = calloc(np, sizeof *v);
    const json_t **labels = calloc((size_t)c->nnodes, sizeof *labels);
    pl_busy *w = malloc(((size_t)wn + np + 1) * sizeof *w);
    node_index x = {.first = malloc((size_t)c->nnodes * sizeof(int))};
    if (!v || !labels || !w || !x.first)
        goto out;
    if (*cnt)
        memcpy(w, *b, (size_t)*cnt * sizeof *w);
    if (nown)
        memcpy(w + *cnt, own, (size_t)nown * sizeof *w);
    np = 0;
    json_array_foreach(pods, i, p) {
        if (pending_counts(p, resvs, o))
            v[np++] = (pending_ref){p, tm_json_str(p, "metadata.creationTimestamp", ""),
                                    tm_json_str(p, "metadata.name", "")};
    }
    qsort(v, np, sizeof *v, cmp_pending);
    json_array_foreach(o->nodes, i, p) {
        int nd = pl_cluster_find_node(c, tm_json_str(p, "metadata.name", ""));
        if (nd >= 0)
            labels[nd] = tm_json_path(p, "metadata.labels");
    }
    for (int nd = 0; nd < c->nnodes; nd++)
        x.first[nd] = -1;
    for (int e = 0; e < wn; e++)
        if (index_add(&x, w, e) < 0)
            goto out;
    for (size_t k = 0; k < np && k < PL_PENDING_MAX; k++) {
        pl_busy e = {.node = -1};
        int64_t cpu, mem;
        pl_pod_requests(v[k].pod, &cpu, &mem);
        if (!cpu && !mem)
            continue;
        for (int nd = 0; nd < c->nnodes && e.node < 0; nd++) {
            if (cpu > c->nodes[nd].cpu_milli || mem > c->nodes[nd].mem_bytes ||
                !selector_allows(v[k].pod, labels[nd], o->nodes != NULL))
                continue;
            int64_t end =
                pl_pod_expected_end(v[k].pod, profiles, c->type_names[c->nodes[nd].type], o->now);
            int64_t d = end < 0 ? o->unknown_hold_s : end - o->now;
            if (d < o->overrun_s)
                d = o->overrun_s;
            int64_t uc, um;
            peak_now(w, &x, nd, d, &uc, &um);
            if (uc + cpu <= c->nodes[nd].cpu_milli && um + mem <= c->nodes[nd].mem_bytes) {
                e.node = nd;
                e.until_s = d;
            }
        }
        if (e.node < 0)
            continue; /* fits no node now: the Reservation's admission will not see it bound */
        e.cpu_milli = cpu;
        e.mem_bytes = mem;
        w[wn] = e;
        if (push(b, cnt, cap, e) < 0 || index_add(&x, w, wn++) < 0)
            goto out;
    }
    rc = 0;
out:
    free(v);
    free(labels);
    free(w);
    free(x.first);
    free(x.nxt);
    return rc;
}

int pl_world_busy(const pl_cluster *c, const json_t *pods, const json_t *resvs,
                  const json_t *profiles, const pl_world_opts *o, pl_busy **out, int *n) {
    pl_busy *b = NULL, *own = NULL;
    int cnt = 0, cap = 0, nown = 0, capown = 0;
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        const char *node = tm_json_str(p, "spec.nodeName", NULL);
        const char *phase = tm_json_str(p, "status.phase", "Pending");
        if (!node || !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))
            continue;
        int nd = pl_cluster_find_node(c, node);
        if (nd < 0)
            continue;
        pl_busy e = {.node = nd};
        pl_pod_requests(p, &e.cpu_milli, &e.mem_bytes);
        int64_t end = pl_pod_expected_end(p, profiles, c->type_names[c->nodes[nd].type], o->now);
        e.until_s = end < 0 ? o->unknown_hold_s : end - o->now;
        if (e.until_s < o->overrun_s)
            e.until_s = o->overrun_s;
        if ((e.cpu_milli || e.mem_bytes) && push(&b, &cnt, &cap, e) < 0)
            goto oom;
    }
    json_array_foreach(resvs, i, p) {
        const char *ns = tm_json_str(p, "metadata.namespace", "");
        json_t *labels = tm_json_path(p, "metadata.labels");
        const char *wf = labels ? json_string_value(json_object_get(labels, PL_LABEL_WF)) : NULL;
        const char *mb =
            labels ? json_string_value(json_object_get(labels, "app.kubernetes.io/managed-by"))
                   : NULL;
        const char *phase = tm_json_str(p, "status.phase", "");
        int admitted = !strcmp(phase, "Admitted") || !strcmp(phase, "Active");
        int ours = mb && !strcmp(mb, PL_MANAGED_BY) && strcmp(phase, "Released") &&
                   strcmp(phase, "Expired") && strcmp(phase, "Failed");
        if (!admitted && !ours)
            continue;
        /* the planned workflow's own: free for its steps, but held against pending pods */
        int mine =
            wf && o->skip_wf && !strcmp(wf, o->skip_wf) && o->skip_ns && !strcmp(ns, o->skip_ns);
        if (mine && !admitted)
            continue;
        const char *owner = tm_json_str(p, "spec.owner.name", NULL);
        if (owner && group_bound(pods, ns, owner))
            continue;
        /* the window the scheduler admitted the holds for (status), which stays when the spec
         * is patched later, else the spec's */
        int64_t st = pl_time_parse(tm_json_str(p, "status.heldStartTime", NULL));
        int64_t en = pl_time_parse(tm_json_str(p, "status.heldEndTime", NULL));
        if (st < 0 || en <= st) {
            st = pl_time_parse(tm_json_str(p, "spec.startTime", NULL));
            en = pl_time_parse(tm_json_str(p, "spec.endTime", NULL));
        }
        if (st < 0 || en <= o->now)
            continue;
        /* what the scheduler admitted on each node ({name, pods, requests}), else the
         * explicit nodes, each holding its share of the template's pods (rounded up), or
         * the whole node without a template */
        json_t *nodes = tm_json_path(p, "status.nodes");
        int admitted_nodes = json_array_size(nodes) > 0;
        if (!admitted_nodes)
            nodes = tm_json_path(p, "spec.nodes");
        size_t nn = json_array_size(nodes);
        json_t *tmpl = tm_json_path(p, "spec.template.requests");
        long long count = tm_json_int(p, "spec.count", 1);
        size_t k;
        json_t *e;
        json_array_foreach(nodes, k, e) {
            const char *nm =
                json_is_string(e) ? json_string_value(e) : tm_json_str(e, "name", NULL);
            int nd = nm ? pl_cluster_find_node(c, nm) : -1;
            if (nd < 0)
                continue;
            pl_busy be = {
                .node = nd, .from_s = st > o->now ? st - o->now : 0, .until_s = en - o->now};
            tm_err er = {0};
            json_t *req = admitted_nodes ? json_object_get(e, "requests") : tmpl;
            long long mult = admitted_nodes ? 1 : (count + (long long)nn - 1) / (long long)nn;
            const char *cpu = tm_json_str(req, "cpu", NULL),
                       *mem = tm_json_str(req, "memory", NULL);
            if (cpu)
                tm_quantity_parse_milli(cpu, &be.cpu_milli, &er);
            if (mem)
                tm_quantity_parse(mem, &be.mem_bytes, &er);
            be.cpu_milli *= mult;
            be.mem_bytes *= mult;
            if (!cpu && !mem) { /* a node named without requests: the whole node */
                be.cpu_milli = c->nodes[nd].cpu_milli;
                be.mem_bytes = c->nodes[nd].mem_bytes;
            }
            if (mine ? push(&own, &nown, &capown, be) < 0 : push(&b, &cnt, &cap, be) < 0)
                goto oom;
        }
    }
    if (place_pending(c, pods, resvs, profiles, o, own, nown, &b, &cnt, &cap) < 0)
        goto oom;
    free(own);
    *out = b;
    *n = cnt;
    return 0;
oom:
    free(b);
    free(own);
    return -1;
}
