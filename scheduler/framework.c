/* framework.c: the always-on filters, the filter/score/select cycle, reserve, queue order and
 * kube-scheduler-style failure messages.
 *
 * The cycle allocates nothing per node: per-node outcomes live in buffers owned by the
 * framework, grown only when the node count grows. */
#include "scheduler/framework.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sched_framework {
    sched_plugin pl;
    uint8_t *status;  /* sched_filter_id per node */
    uint32_t *detail; /* filter detail per node */
    int64_t *score;   /* raw score per feasible node */
    size_t cap, n_nodes;
    sched_cycle cyc;
    bool have_cycle;
    int64_t min_score, max_score;
};

/* ---- pods ---- */

sched_pod *sched_pod_new(const char *ns, const char *name, const char *uid) {
    sched_pod *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ns = strdup(ns ? ns : "");
    p->name = strdup(name ? name : "");
    p->uid = strdup(uid ? uid : "");
    p->workflow = strdup("");
    p->process = strdup("");
    if (!p->ns || !p->name || !p->uid || !p->workflow || !p->process) {
        sched_pod_free(p);
        return NULL;
    }
    p->requests.v[SCHED_RES_PODS] = 1;
    return p;
}

void sched_pod_free(sched_pod *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->n_tolerations; i++) {
        free(p->tolerations[i].key);
        free(p->tolerations[i].value);
    }
    free(p->tolerations);
    for (size_t i = 0; i < p->n_node_selector; i++) {
        free(p->node_selector[i].key);
        free(p->node_selector[i].value);
    }
    free(p->node_selector);
    for (size_t t = 0; t < p->n_affinity; t++) {
        sched_sel_term *term = &p->affinity[t];
        for (size_t r = 0; r < term->n_reqs; r++) {
            for (size_t v = 0; v < term->reqs[r].n_values; v++)
                free(term->reqs[r].values[v]);
            free(term->reqs[r].values);
            free(term->reqs[r].key);
        }
        free(term->reqs);
    }
    free(p->affinity);
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->node_name);
    free(p->workflow);
    free(p->process);
    free(p);
}

void sched_task_resolve(const sched_snapshot *s, const sched_pod *p, sched_task_info *out) {
    memset(out, 0, sizeof *out);
    out->expected_runtime_ms = -1;
    const sched_task_profile *tp = sched_snapshot_task(s, p->workflow, p->process);
    if (!tp && p->workflow && *p->workflow) /* a profile learned without workflow identity */
        tp = sched_snapshot_task(s, "", p->process);
    bool explicit_labels = false;
    for (int k = 0; k < SCHED_NFEAT; k++)
        explicit_labels |= p->labels[k] > 0;
    for (int k = 0; k < SCHED_NFEAT; k++) {
        out->labels[k] = explicit_labels ? p->labels[k] : tp ? tp->labels[k] : 0;
        if (out->labels[k] < 0)
            out->labels[k] = 0;
        out->labeled |= out->labels[k] > 0;
    }
    if (tp)
        out->expected_runtime_ms = tp->expected_runtime_ms;
}

/* ---- filters ---- */

static const char *const filter_names[SCHED_FILTER_COUNT] = {
    "", "NodeReady", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit"};

const char *sched_filter_name(sched_filter_id id) {
    return id > 0 && id < SCHED_FILTER_COUNT ? filter_names[id] : "";
}

/* Kubernetes' Toleration.ToleratesTaint. */
static bool tolerates(const sched_toleration *t, const char *key, const char *value,
                      sched_effect effect) {
    if (t->effect != SCHED_EFFECT_NONE && t->effect != effect)
        return false;
    if (*t->key && strcmp(t->key, key) != 0)
        return false;
    if (t->op == SCHED_TOL_EXISTS)
        return true;
    return strcmp(t->value, value) == 0;
}

static bool pod_tolerates(const sched_pod *p, const char *key, const char *value,
                          sched_effect effect) {
    for (size_t i = 0; i < p->n_tolerations; i++)
        if (tolerates(&p->tolerations[i], key, value, effect))
            return true;
    return false;
}

static bool value_in(const sched_sel_req *r, const char *v) {
    for (size_t i = 0; i < r->n_values; i++)
        if (strcmp(r->values[i], v) == 0)
            return true;
    return false;
}

static bool parse_i64(const char *s, int64_t *out) {
    if (!s || !*s)
        return false;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (*end)
        return false;
    *out = x;
    return true;
}

static bool req_matches(const sched_sel_req *r, const sched_node *n) {
    const char *v = r->is_field ? (strcmp(r->key, "metadata.name") == 0 ? n->name : NULL)
                                : sched_node_label(n, r->key);
    int64_t x;
    switch (r->op) {
    case SCHED_SEL_IN:
        return v && value_in(r, v);
    case SCHED_SEL_NOT_IN:
        return !v || !value_in(r, v);
    case SCHED_SEL_EXISTS:
        return v != NULL;
    case SCHED_SEL_DOES_NOT_EXIST:
        return v == NULL;
    case SCHED_SEL_GT:
        return v && parse_i64(v, &x) && x > r->num;
    case SCHED_SEL_LT:
        return v && parse_i64(v, &x) && x < r->num;
    }
    return false;
}

static bool affinity_matches(const sched_pod *p, const sched_node *n) {
    for (size_t i = 0; i < p->n_node_selector; i++) {
        const char *v = sched_node_label(n, p->node_selector[i].key);
        if (!v || strcmp(v, p->node_selector[i].value) != 0)
            return false;
    }
    if (!p->has_affinity)
        return true;
    for (size_t t = 0; t < p->n_affinity; t++) {
        const sched_sel_term *term = &p->affinity[t];
        if (!term->n_reqs)
            continue; /* an empty term matches nothing */
        size_t r = 0;
        while (r < term->n_reqs && req_matches(&term->reqs[r], n))
            r++;
        if (r == term->n_reqs)
            return true;
    }
    return false;
}

sched_filter_id sched_filter_node(const sched_snapshot *s, const sched_pod *p, const sched_node *n,
                                  uint32_t *detail) {
    uint32_t d = 0;
    sched_filter_id id = SCHED_FILTER_OK;
    if (!n->ready) {
        id = SCHED_FILTER_NODE_READY;
    } else if (n->unschedulable && !pod_tolerates(p, "node.kubernetes.io/unschedulable", "",
                                                  SCHED_EFFECT_NO_SCHEDULE)) {
        id = SCHED_FILTER_NODE_UNSCHEDULABLE;
    } else {
        for (size_t i = 0; i < n->n_taints; i++) {
            const sched_taint *t = &n->taints[i];
            if (t->effect == SCHED_EFFECT_PREFER_NO_SCHEDULE)
                continue; /* a preference, not a filter */
            if (!pod_tolerates(p, t->key, t->value, t->effect)) {
                id = SCHED_FILTER_TAINT;
                d = (uint32_t)i;
                break;
            }
        }
        if (id == SCHED_FILTER_OK && !affinity_matches(p, n))
            id = SCHED_FILTER_NODE_AFFINITY;
        if (id == SCHED_FILTER_OK) {
            int nres = sched_snapshot_resource_count(s); /* slots beyond are never used */
            for (int r = 0; r < nres; r++) {
                int64_t want = p->requests.v[r];
                if (r == SCHED_RES_PODS)
                    want = 1; /* every pod takes a slot, whatever its requests say */
                if (want > 0 && want > n->allocatable.v[r] - n->requested.v[r])
                    d |= 1u << r;
            }
            if (d)
                id = SCHED_FILTER_RESOURCES;
        }
    }
    if (detail)
        *detail = d;
    return id;
}

/* Appends the reasons of one rejection to buf (", "-separated); returns buf. */
char *sched_filter_reason(const sched_snapshot *s, const sched_node *n, sched_filter_id id,
                          uint32_t detail, char *buf, size_t size) {
    if (!size)
        return buf;
    buf[0] = '\0';
    switch (id) {
    case SCHED_FILTER_OK:
        break;
    case SCHED_FILTER_NODE_READY:
        snprintf(buf, size, "node(s) were not ready");
        break;
    case SCHED_FILTER_NODE_UNSCHEDULABLE:
        snprintf(buf, size, "node(s) were unschedulable");
        break;
    case SCHED_FILTER_TAINT:
        if (n && detail < n->n_taints)
            snprintf(buf, size, "node(s) had untolerated taint {%s: %s}", n->taints[detail].key,
                     n->taints[detail].value);
        else
            snprintf(buf, size, "node(s) had untolerated taint");
        break;
    case SCHED_FILTER_NODE_AFFINITY:
        snprintf(buf, size, "node(s) didn't match Pod's node affinity/selector");
        break;
    case SCHED_FILTER_RESOURCES: {
        size_t len = 0;
        /* kube-scheduler's order: pods, cpu, memory, ephemeral-storage, extended */
        static const int order[] = {SCHED_RES_PODS, SCHED_RES_CPU, SCHED_RES_MEMORY,
                                    SCHED_RES_EPHEMERAL};
        for (int i = 0; i < SCHED_RES_MAX && len < size; i++) {
            int r = i < 4 ? order[i] : i;
            if (!(detail & (1u << r)))
                continue;
            const char *name = sched_snapshot_resource_name(s, r);
            int w = r == SCHED_RES_PODS
                        ? snprintf(buf + len, size - len, "%sToo many pods", len ? ", " : "")
                        : snprintf(buf + len, size - len, "%sInsufficient %s", len ? ", " : "",
                                   name ? name : "resource");
            len += w > 0 ? (size_t)w : 0;
        }
        break;
    }
    case SCHED_FILTER_COUNT:
        break;
    }
    return buf;
}

/* ---- framework ---- */

sched_framework *sched_framework_new(const sched_plugin *plugin, tm_err *err) {
    sched_framework *fw = calloc(1, sizeof *fw);
    if (!fw) {
        if (plugin->free_state)
            plugin->free_state(plugin->state);
        tm_err_set(err, "out of memory creating the scheduling framework");
        return NULL;
    }
    fw->pl = *plugin;
    return fw;
}

void sched_framework_free(sched_framework *fw) {
    if (!fw)
        return;
    if (fw->pl.free_state)
        fw->pl.free_state(fw->pl.state);
    free(fw->status);
    free(fw->detail);
    free(fw->score);
    free(fw);
}

const char *sched_framework_name(const sched_framework *fw) {
    return fw->pl.name;
}

static int ensure_cap(sched_framework *fw, size_t n, tm_err *err) {
    if (n <= fw->cap)
        return 0;
    size_t ncap = fw->cap ? fw->cap : 64;
    while (ncap < n)
        ncap *= 2;
    uint8_t *st = realloc(fw->status, ncap * sizeof *st);
    if (st)
        fw->status = st;
    uint32_t *de = realloc(fw->detail, ncap * sizeof *de);
    if (de)
        fw->detail = de;
    int64_t *sc = realloc(fw->score, ncap * sizeof *sc);
    if (sc)
        fw->score = sc;
    if (!st || !de || !sc)
        return tm_err_set(err, "out of memory for %zu nodes", n);
    fw->cap = ncap;
    return 0;
}

int sched_framework_schedule(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                             int64_t now_ms, sched_decision *d, tm_err *err) {
    memset(d, 0, sizeof *d);
    d->node = -1;
    fw->have_cycle = false;
    sched_snapshot_refresh(s);
    size_t n = sched_snapshot_node_count(s);
    if (ensure_cap(fw, n, err) != 0)
        return -1;
    fw->n_nodes = n;
    fw->cyc = (sched_cycle){.snap = s, .pod = p, .now_ms = now_ms};
    sched_task_resolve(s, p, &fw->cyc.task);
    if (fw->pl.pre_score && fw->pl.pre_score(fw->pl.state, &fw->cyc, err) != 0)
        return tm_err_wrap(err, "policy %s", fw->pl.name);
    fw->have_cycle = true;
    int best = -1;
    int64_t best_score = 0;
    uint32_t best_rank = 0;
    for (size_t i = 0; i < n; i++) {
        const sched_node *node = sched_snapshot_node(s, i);
        fw->status[i] = (uint8_t)sched_filter_node(s, p, node, &fw->detail[i]);
        if (fw->status[i] != SCHED_FILTER_OK)
            continue;
        int64_t sc = fw->pl.score(fw->pl.state, &fw->cyc, node);
        fw->score[i] = sc;
        if (d->n_feasible == 0 || sc < fw->min_score)
            fw->min_score = sc;
        if (d->n_feasible == 0 || sc > fw->max_score)
            fw->max_score = sc;
        d->n_feasible++;
        if (best < 0 || sc > best_score || (sc == best_score && node->name_rank < best_rank)) {
            best = (int)i;
            best_score = sc;
            best_rank = node->name_rank;
        }
    }
    d->n_nodes = n;
    d->node = best;
    if (best >= 0) {
        d->node_name = sched_snapshot_node(s, (size_t)best)->name;
        d->score = best_score;
    }
    return 0;
}

int sched_framework_reserve(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                            tm_err *err) {
    const sched_node *n = sched_snapshot_node(s, (size_t)node);
    if (!n)
        return tm_err_set(err, "reserve %s/%s: no node with index %d", p->ns, p->name, node);
    if (sched_snapshot_add_pod(s, p->uid, n->name, &p->requests, err) != 0)
        return tm_err_wrap(err, "reserve %s/%s on %s", p->ns, p->name, n->name);
    if (fw->pl.reserved) {
        sched_cycle c = {.snap = s, .pod = p, .now_ms = fw->cyc.now_ms};
        sched_task_resolve(s, p, &c.task);
        fw->pl.reserved(fw->pl.state, &c, n);
    }
    return 0;
}

static int cmp_str(const char *a, const char *b) {
    return strcmp(a ? a : "", b ? b : "");
}

int sched_framework_queue_cmp(const sched_framework *fw, const sched_snapshot *s,
                              const sched_pod *a, const sched_pod *b) {
    int c = 0;
    if (fw->pl.queue_cmp) {
        c = fw->pl.queue_cmp(fw->pl.state, s, a, b);
    } else if (a->priority != b->priority) {
        c = a->priority > b->priority ? -1 : 1;
    } else if (a->created_ms != b->created_ms) {
        c = a->created_ms < b->created_ms ? -1 : 1;
    }
    if (c)
        return c;
    if ((c = cmp_str(a->ns, b->ns)) != 0 || (c = cmp_str(a->name, b->name)) != 0)
        return c;
    return cmp_str(a->uid, b->uid);
}

sched_filter_id sched_framework_node_status(const sched_framework *fw, size_t node,
                                            uint32_t *detail, int64_t *score) {
    if (!fw->have_cycle || node >= fw->n_nodes) {
        if (detail)
            *detail = 0;
        return SCHED_FILTER_COUNT;
    }
    if (detail)
        *detail = fw->detail[node];
    if (score)
        *score = fw->status[node] == SCHED_FILTER_OK ? fw->score[node] : 0;
    return (sched_filter_id)fw->status[node];
}

const sched_cycle *sched_framework_last_cycle(const sched_framework *fw) {
    return fw->have_cycle ? &fw->cyc : NULL;
}

int sched_framework_extender_score(const sched_framework *fw, size_t node) {
    if (!fw->have_cycle || node >= fw->n_nodes || fw->status[node] != SCHED_FILTER_OK)
        return -1;
    int64_t raw = fw->score[node];
    const sched_node *n = sched_snapshot_node(fw->cyc.snap, node);
    int v;
    if (fw->pl.extender_score) {
        v = fw->pl.extender_score(fw->pl.state, &fw->cyc, n, raw, fw->min_score, fw->max_score);
    } else if (fw->max_score == fw->min_score) {
        v = 10;
    } else {
        double x = (double)(raw - fw->min_score) / (double)(fw->max_score - fw->min_score);
        v = (int)(x * 10.0 + 0.5);
    }
    return v < 0 ? 0 : v > 10 ? 10 : v;
}

/* ---- FailedScheduling message ---- */

typedef struct reason_count {
    char text[192];
    size_t count;
} reason_count;

static int add_reason(reason_count **rs, size_t *n, size_t *cap, const char *text) {
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*rs)[i].text, text) == 0) {
            (*rs)[i].count++;
            return 0;
        }
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        reason_count *nr = realloc(*rs, ncap * sizeof *nr);
        if (!nr)
            return -1;
        *rs = nr;
        *cap = ncap;
    }
    snprintf((*rs)[*n].text, sizeof(*rs)[*n].text, "%s", text);
    (*rs)[(*n)++].count = 1;
    return 0;
}

static int cmp_cstr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *sched_framework_fit_message(const sched_framework *fw, const sched_snapshot *s, char *buf,
                                  size_t size) {
    if (!size)
        return buf;
    if (!fw->have_cycle || fw->n_nodes == 0) {
        snprintf(buf, size, "no nodes available to schedule pods");
        return buf;
    }
    reason_count *rs = NULL;
    size_t nr = 0, cap = 0, feasible = 0;
    for (size_t i = 0; i < fw->n_nodes; i++) {
        sched_filter_id id = (sched_filter_id)fw->status[i];
        if (id == SCHED_FILTER_OK) {
            feasible++;
            continue;
        }
        char one[192];
        if (id == SCHED_FILTER_RESOURCES) { /* each short resource is its own reason */
            for (int r = 0; r < SCHED_RES_MAX; r++)
                if (fw->detail[i] & (1u << r)) {
                    sched_filter_reason(s, NULL, id, 1u << r, one, sizeof one);
                    add_reason(&rs, &nr, &cap, one);
                }
        } else {
            sched_filter_reason(s, sched_snapshot_node(s, i), id, fw->detail[i], one, sizeof one);
            add_reason(&rs, &nr, &cap, one);
        }
    }
    /* kube-scheduler sorts the "N reason" strings themselves */
    char **lines = calloc(nr ? nr : 1, sizeof *lines);
    size_t len = (size_t)snprintf(buf, size, "%zu/%zu nodes are available", feasible, fw->n_nodes);
    for (size_t i = 0; lines && i < nr; i++) {
        lines[i] = malloc(224);
        if (lines[i])
            snprintf(lines[i], 224, "%zu %s", rs[i].count, rs[i].text);
    }
    if (lines) {
        size_t ok = 0;
        for (size_t i = 0; i < nr; i++)
            if (lines[i])
                lines[ok++] = lines[i];
        qsort(lines, ok, sizeof *lines, cmp_cstr);
        for (size_t i = 0; i < ok; i++) {
            if (len < size)
                len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : ": ", lines[i]);
            free(lines[i]);
        }
        if (len < size)
            snprintf(buf + len, size - len, ".");
    }
    free(lines);
    free(rs);
    return buf;
}
