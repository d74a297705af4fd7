/* framework.c: the always-on filters, the filter/score/select cycle, reserve, queue order and
 * kube-scheduler-style failure messages.
 *
 * The cycle allocates nothing per node: per-node outcomes live in buffers owned by the
 * framework, grown only when the node count grows. The inter-pod filters' per-cycle state
 * (sched_prefilter) is computed once per cycle and its buffers are kept across cycles.
 *
 * The cycle is the hot path of the simulator (every node for every task), so it runs in three
 * passes over the snapshot's node columns (sched_node_cols) rather than over the nodes: filter
 * (a node whose flags say it is ready, schedulable and without NoSchedule/NoExecute taints
 * skips the first three filters, a pod without node selector or affinity skips NodeAffinity,
 * and the resource check compares only the slots the pod requests against precomputed free
 * amounts; any other node takes the full per-node filter_run), score (the plugin's
 * score_batch over the feasible nodes, reading cached loads), select. Outcomes are exactly
 * those of filter_run and the plugin's per-node score. */
#include "scheduler/framework.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/framework_internal.h"
#include "scheduler/volumes.h"

struct sched_prefilter {
    bool ports_on, spread_on, interpod_on, volume_on; /* which cluster-wide filters run */
    sched_nodeports_state *ports;
    sched_spread_state *spread;
    sched_interpod_state *interpod;
    sched_volume_state *volume;
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

void sched_sel_terms_free(sched_sel_term *terms, size_t n) {
    for (size_t t = 0; t < n; t++) {
        sched_sel_term *term = &terms[t];
        for (size_t r = 0; r < term->n_reqs; r++) {
            for (size_t v = 0; v < term->reqs[r].n_values; v++)
                free(term->reqs[r].values[v]);
            free(term->reqs[r].values);
            free(term->reqs[r].key);
        }
        free(term->reqs);
    }
    free(terms);
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
    sched_sel_terms_free(p->affinity, p->n_affinity);
    for (size_t i = 0; i < p->n_claims; i++)
        free(p->claims[i]);
    free(p->claims);
    json_decref(p->pod_labels);
    sched_host_ports_free(p->host_ports, p->n_host_ports);
    sched_pod_terms_free(p->pod_affinity, p->n_pod_affinity);
    sched_pod_terms_free(p->pod_anti_affinity, p->n_pod_anti_affinity);
    for (size_t i = 0; i < p->n_spread; i++) {
        free(p->spread[i].topology_key);
        tm_selector_free(p->spread[i].selector);
    }
    free(p->spread);
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->node_name);
    free(p->workflow);
    free(p->process);
    free(p);
}

int sched_pod_record(sched_snapshot *s, const sched_pod *p, const char *node_name, tm_err *err) {
    sched_pod_meta *m = sched_pod_meta_new(p->ns);
    bool ok = m && sched_host_ports_copy(p->host_ports, p->n_host_ports, &m->ports) == 0;
    if (ok)
        m->n_ports = p->n_host_ports;
    ok = ok && sched_pod_terms_copy(p->pod_anti_affinity, p->n_pod_anti_affinity, &m->anti) == 0;
    if (ok) {
        m->n_anti = p->n_pod_anti_affinity;
        m->labels = json_incref(p->pod_labels); /* labels are never modified once parsed */
        m->terminating = p->terminating;
    } else {
        sched_pod_meta_free(m);
        m = NULL;
    }
    if (sched_snapshot_add_pod_meta(s, p->uid, node_name, &p->requests, m, err) != 0)
        return -1;
    if (!ok)
        return tm_err_set(err, "out of memory copying the metadata of pod %s/%s", p->ns, p->name);
    return 0;
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

static const char *const filter_names[SCHED_FILTER_COUNT] = {"",
                                                             "NodeReady",
                                                             "NodeUnschedulable",
                                                             "TaintToleration",
                                                             "NodeAffinity",
                                                             "NodeResourcesFit",
                                                             "NodePorts",
                                                             "PodTopologySpread",
                                                             "InterPodAffinity",
                                                             "VolumeBinding"};

bool sched_filter_resolvable(sched_filter_id id, uint32_t detail) {
    switch (id) {
    case SCHED_FILTER_RESOURCES:
    case SCHED_FILTER_NODE_PORTS:
        return true;
    case SCHED_FILTER_SPREAD:
        return detail == SCHED_SPREAD_SKEW;
    case SCHED_FILTER_INTERPOD:
        return detail != SCHED_INTERPOD_AFFINITY;
    default:
        return false;
    }
}

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

/* Any term matches: every requirement of it holds. */
static inline __attribute__((always_inline)) bool terms_match(const sched_sel_term *terms,
                                                              size_t nt, const sched_node *n) {
    for (size_t t = 0; t < nt; t++) {
        const sched_sel_term *term = &terms[t];
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

bool sched_sel_terms_match(const sched_sel_term *terms, size_t n_terms, const sched_node *n) {
    return terms_match(terms, n_terms, n);
}

/* Static so that it inlines into the per-node loop (sched_pod_node_affinity_matches wraps it). */
static inline __attribute__((always_inline)) bool affinity_matches(const sched_pod *p,
                                                                   const sched_node *n) {
    for (size_t i = 0; i < p->n_node_selector; i++) {
        const char *v = sched_node_label(n, p->node_selector[i].key);
        if (!v || strcmp(v, p->node_selector[i].value) != 0)
            return false;
    }
    return !p->has_affinity || terms_match(p->affinity, p->n_affinity, n);
}

bool sched_pod_node_affinity_matches(const sched_pod *p, const sched_node *n) {
    return affinity_matches(p, n);
}

/* The index of the first NoSchedule/NoExecute taint p does not tolerate, -1 when none. Inlined
 * in the per-node loop: that loop runs for every node of every cycle. */
static inline __attribute__((always_inline)) int untolerated_taint(const sched_pod *p,
                                                                   const sched_node *n) {
    for (size_t i = 0; i < n->n_taints; i++) {
        const sched_taint *t = &n->taints[i];
        if (t->effect == SCHED_EFFECT_PREFER_NO_SCHEDULE)
            continue; /* a preference, not a filter */
        if (!pod_tolerates(p, t->key, t->value, t->effect))
            return (int)i;
    }
    return -1;
}

bool sched_pod_tolerates_node_taints(const sched_pod *p, const sched_node *n) {
    return untolerated_taint(p, n) < 0;
}

/* Bit mask of the resource slots on which p does not fit n. */
static inline __attribute__((always_inline)) uint32_t
short_resources(const sched_snapshot *s, const sched_pod *p, const sched_node *n) {
    uint32_t d = 0;
    int nres = sched_snapshot_resource_count(s); /* slots beyond are never used */
    for (int r = 0; r < nres; r++) {
        int64_t want = p->requests.v[r];
        if (r == SCHED_RES_PODS)
            want = 1; /* every pod takes a slot, whatever its requests say */
        if (want > 0 && want > n->allocatable.v[r] - n->requested.v[r])
            d |= 1u << r;
    }
    return d;
}

/* Every filter in kube-scheduler's order; pf NULL runs only the node-local ones. */
static inline __attribute__((always_inline)) sched_filter_id
filter_run(const sched_snapshot *s, const sched_pod *p, const sched_node *n, size_t node,
           const sched_prefilter *pf, uint32_t *detail) {
    uint32_t d = 0;
    int r;
    sched_filter_id id = SCHED_FILTER_OK;
    if (!n->ready) {
        id = SCHED_FILTER_NODE_READY;
    } else if (n->unschedulable && !pod_tolerates(p, "node.kubernetes.io/unschedulable", "",
                                                  SCHED_EFFECT_NO_SCHEDULE)) {
        id = SCHED_FILTER_NODE_UNSCHEDULABLE;
    } else if ((r = untolerated_taint(p, n)) >= 0) {
        id = SCHED_FILTER_TAINT;
        d = (uint32_t)r;
    } else if (!affinity_matches(p, n)) {
        id = SCHED_FILTER_NODE_AFFINITY;
    } else if (pf && pf->ports_on && !sched_nodeports_fits(pf->ports, node)) {
        id = SCHED_FILTER_NODE_PORTS;
    } else if ((d = short_resources(s, p, n)) != 0) {
        id = SCHED_FILTER_RESOURCES;
    } else if (pf && pf->volume_on && (r = sched_volume_filter(pf->volume, n)) >= 0) {
        id = SCHED_FILTER_VOLUME;
        d = (uint32_t)r;
    } else if (pf && pf->spread_on && (r = sched_spread_filter(pf->spread, p, n)) >= 0) {
        id = SCHED_FILTER_SPREAD;
        d = (uint32_t)r;
    } else if (pf && pf->interpod_on && (r = sched_interpod_filter(pf->interpod, p, n)) >= 0) {
        id = SCHED_FILTER_INTERPOD;
        d = (uint32_t)r;
    }
    if (detail)
        *detail = d;
    return id;
}

sched_prefilter *sched_prefilter_new(void) {
    sched_prefilter *pf = calloc(1, sizeof *pf);
    if (!pf || !(pf->ports = sched_nodeports_state_new()) ||
        !(pf->spread = sched_spread_state_new()) || !(pf->interpod = sched_interpod_state_new()) ||
        !(pf->volume = sched_volume_state_new())) {
        sched_prefilter_free(pf);
        return NULL;
    }
    return pf;
}

void sched_prefilter_free(sched_prefilter *pf) {
    if (!pf)
        return;
    sched_nodeports_state_free(pf->ports);
    sched_spread_state_free(pf->spread);
    sched_interpod_state_free(pf->interpod);
    sched_volume_state_free(pf->volume);
    free(pf);
}

int sched_prefilter_compute(sched_prefilter *pf, const sched_snapshot *s, const sched_pod *p,
                            tm_err *err) {
    pf->ports_on = pf->spread_on = pf->interpod_on = pf->volume_on = false;
    if (sched_nodeports_prefilter(pf->ports, s, p, &pf->ports_on, err) != 0 ||
        sched_spread_prefilter(pf->spread, s, p, &pf->spread_on, err) != 0 ||
        sched_interpod_prefilter(pf->interpod, s, p, &pf->interpod_on, err) != 0 ||
        sched_volume_prefilter(pf->volume, s, p, &pf->volume_on, err) != 0) {
        pf->ports_on = pf->spread_on = pf->interpod_on = pf->volume_on = false;
        return -1;
    }
    return 0;
}

sched_filter_id sched_filter_node_pre(const sched_snapshot *s, const sched_pod *p, size_t node,
                                      const sched_prefilter *pf, uint32_t *detail) {
    const sched_node *n = sched_snapshot_node(s, node);
    if (!n) {
        if (detail)
            *detail = 0;
        return SCHED_FILTER_COUNT;
    }
    return filter_run(s, p, n, node, pf, detail);
}

/* Whether p needs the cluster-wide state at all (else the inter-pod filters pass trivially). */
static bool needs_prefilter(const sched_snapshot *s, const sched_pod *p) {
    return p->n_host_ports || p->n_spread || p->n_pod_affinity || p->n_pod_anti_affinity ||
           (p->n_claims && sched_snapshot_volumes(s)) ||
           sched_snapshot_podset_count(s, SCHED_PODSET_ANTI);
}

sched_filter_id sched_filter_node(const sched_snapshot *s, const sched_pod *p, const sched_node *n,
                                  uint32_t *detail) {
    if (!needs_prefilter(s, p))
        return filter_run(s, p, n, 0, NULL, detail);
    sched_prefilter *pf = sched_prefilter_new();
    tm_err err;
    sched_filter_id id = SCHED_FILTER_COUNT;
    if (detail)
        *detail = 0;
    int idx = sched_snapshot_node_index(s, n->name);
    if (pf && sched_prefilter_compute(pf, s, p, &err) == 0)
        id = filter_run(s, p, n, idx >= 0 ? (size_t)idx : SIZE_MAX, pf, detail);
    sched_prefilter_free(pf);
    return id;
}

/* Appends the reasons of one rejection to buf (", "-separated); returns buf. */
char *sched_filter_reason(const sched_snapshot *s, const sched_node *n, const sched_pod *p,
                          sched_filter_id id, uint32_t detail, char *buf, size_t size) {
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
    case SCHED_FILTER_NODE_PORTS:
        snprintf(buf, size, "node(s) didn't have free ports for the requested pod ports");
        break;
    case SCHED_FILTER_SPREAD:
        snprintf(buf, size, "node(s) didn't match pod topology spread constraints%s",
                 detail == SCHED_SPREAD_MISSING_LABEL ? " (missing required label)" : "");
        break;
    case SCHED_FILTER_INTERPOD:
        snprintf(buf, size, "%s",
                 detail == SCHED_INTERPOD_AFFINITY ? "node(s) didn't match pod affinity rules"
                 : detail == SCHED_INTERPOD_ANTI_AFFINITY
                     ? "node(s) didn't match pod anti-affinity rules"
                     : "node(s) didn't satisfy existing pods anti-affinity rules");
        break;
    case SCHED_FILTER_VOLUME:
        sched_volume_reason(p, detail, buf, size);
        break;
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
    fw->plugins[0] = *plugin;
    fw->n_plugins = 1;
    if (!(fw->pf = sched_prefilter_new())) {
        sched_framework_free(fw);
        tm_err_set(err, "out of memory creating the scheduling framework");
        return NULL;
    }
    return fw;
}

void sched_framework_free(sched_framework *fw) {
    if (!fw)
        return;
    for (size_t k = fw->n_plugins; k-- > 0;)
        if (fw->plugins[k].free_state)
            fw->plugins[k].free_state(fw->plugins[k].state);
    for (size_t i = 0; i < fw->n_waiting; i++)
        free(fw->waiting[i].uid);
    free(fw->waiting);
    free(fw->status);
    free(fw->detail);
    free(fw->score);
    free(fw->feas);
    free(fw->fscore);
    sched_prefilter_free(fw->pf);
    free(fw);
}

const char *sched_framework_name(const sched_framework *fw) {
    return fw->plugins[0].name;
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
    uint32_t *fe = realloc(fw->feas, ncap * sizeof *fe);
    if (fe)
        fw->feas = fe;
    int64_t *fs = realloc(fw->fscore, ncap * sizeof *fs);
    if (fs)
        fw->fscore = fs;
    if (!st || !de || !sc || !fe || !fs)
        return tm_err_set(err, "out of memory for %zu nodes", n);
    fw->cap = ncap;
    return 0;
}

/* Per-cycle constants of the column scan: which node flags need the full filters, and the
 * resource slots the pod requests with the amounts. */
typedef struct scan_ctx {
    uint8_t slow; /* node flags that send a node through the full filter_run */
    bool aff;     /* the pod has a node selector or required node affinity */
    int nslots;   /* resource slots the pod requests (pods always, so at least 1) */
    int slot[SCHED_RES_MAX];
    int64_t want[SCHED_RES_MAX];
    const int64_t *free[SCHED_RES_MAX];
} scan_ctx;

static void scan_prepare(scan_ctx *x, const sched_snapshot *s, const sched_pod *p,
                         const sched_node_cols *cols) {
    /* a node failing readiness, schedulability (untolerated) or carrying a NoSchedule/NoExecute
     * taint needs the full filters for its reason; every other node passes those three */
    bool tol_unsched =
        pod_tolerates(p, "node.kubernetes.io/unschedulable", "", SCHED_EFFECT_NO_SCHEDULE);
    x->slow =
        SCHED_NODE_NOT_READY | SCHED_NODE_HARD_TAINT | (tol_unsched ? 0 : SCHED_NODE_UNSCHEDULABLE);
    x->aff = p->n_node_selector > 0 || p->has_affinity;
    x->nslots = 0;
    int nres = sched_snapshot_resource_count(s); /* as short_resources */
    for (int r = 0; r < nres && r < SCHED_RES_MAX; r++) {
        int64_t want = r == SCHED_RES_PODS ? 1 : p->requests.v[r];
        if (want <= 0)
            continue; /* a slot the pod does not request can never be short */
        x->slot[x->nslots] = r;
        x->want[x->nslots] = want;
        x->free[x->nslots++] = cols->free[r];
    }
}

/* Bit mask of the requested slots on which node i is short (short_resources, from the
 * columns). Branch-free: whether a node fits is what the scan cannot predict. */
static inline __attribute__((always_inline)) uint32_t short_cols(const scan_ctx *x, size_t i) {
    uint32_t d = 0;
    for (int k = 0; k < x->nslots; k++)
        d |= (uint32_t)(x->want[k] > x->free[k][i]) << x->slot[k];
    return d;
}

/* filter_run for node i, from the columns where they decide. */
static inline __attribute__((always_inline)) sched_filter_id
filter_cols(const sched_snapshot *s, const sched_pod *p, const sched_node_cols *cols,
            const scan_ctx *x, size_t i, const sched_prefilter *pf, bool aff, uint32_t *detail) {
    if (cols->flags[i] & x->slow)
        return filter_run(s, p, sched_snapshot_node(s, i), i, pf, detail);
    *detail = 0;
    const sched_node *n = NULL;
    if (aff && !affinity_matches(p, n = sched_snapshot_node(s, i)))
        return SCHED_FILTER_NODE_AFFINITY;
    if (pf && pf->ports_on && !sched_nodeports_fits(pf->ports, i))
        return SCHED_FILTER_NODE_PORTS;
    uint32_t d = short_cols(x, i);
    if (d) {
        *detail = d;
        return SCHED_FILTER_RESOURCES;
    }
    int r;
    if (pf && pf->volume_on &&
        (r = sched_volume_filter(pf->volume, n ? n : (n = sched_snapshot_node(s, i)))) >= 0) {
        *detail = (uint32_t)r;
        return SCHED_FILTER_VOLUME;
    }
    if (pf && pf->spread_on &&
        (r = sched_spread_filter(pf->spread, p, n ? n : (n = sched_snapshot_node(s, i)))) >= 0) {
        *detail = (uint32_t)r;
        return SCHED_FILTER_SPREAD;
    }
    if (pf && pf->interpod_on &&
        (r = sched_interpod_filter(pf->interpod, p, n ? n : sched_snapshot_node(s, i))) >= 0) {
        *detail = (uint32_t)r;
        return SCHED_FILTER_INTERPOD;
    }
    return SCHED_FILTER_OK;
}

/* Filters every node into fw->status/detail; returns the number of feasible nodes, whose
 * indices are in fw->feas. */
static size_t scan(sched_framework *fw, const sched_snapshot *s, const sched_pod *p,
                   const sched_node_cols *cols, const scan_ctx *x, const sched_prefilter *pf,
                   bool aff) {
    size_t nf = 0, n = cols->n;
    for (size_t i = 0; i < n; i++) {
        sched_filter_id id = filter_cols(s, p, cols, x, i, pf, aff, &fw->detail[i]);
        fw->status[i] = (uint8_t)id;
        fw->feas[nf] = (uint32_t)i;
        nf += id == SCHED_FILTER_OK;
    }
    return nf;
}

/* scan for a pod without node affinity or inter-pod filters that requests K resource slots
 * (K a constant after inlining, so the compares unroll with the amounts in registers). Two
 * passes: the first decides every node from its free resources alone and lists those that fit
 * and need no full filters (no branch, no call: that loop is the hot path); the second runs the
 * full filters on the few nodes whose flags ask for them (not ready, unschedulable, tainted),
 * appending those that pass, so fw->feas is not in index order. */
static inline __attribute__((always_inline)) size_t
scan_plain_k(sched_framework *fw, const sched_snapshot *s, const sched_pod *p,
             const sched_node_cols *cols, const scan_ctx *x, const int K, const bool cpu_mem_pods,
             const bool flagged) {
    size_t nf = 0, n = cols->n;
    const uint8_t *flags = cols->flags;
    const uint8_t slow = x->slow;
    int64_t w[4];
    const int64_t *f[4];
    int sl[4];
    for (int k = 0; k < K; k++) {
        w[k] = x->want[k];
        f[k] = x->free[k];
        sl[k] = x->slot[k];
    }
    uint8_t *status = fw->status;
    uint32_t *detail = fw->detail, *feas = fw->feas;
    uint32_t any = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t d;
        if (K == 3 && cpu_mem_pods) { /* constant shifts */
            d = (uint32_t)(w[0] > f[0][i]) | (uint32_t)(w[1] > f[1][i]) << SCHED_RES_MEMORY |
                (uint32_t)(w[2] > f[2][i]) << SCHED_RES_PODS;
        } else {
            /* K is a constant 1..4 at every call site, so w, f and sl are set up to K. */
            // cppcheck-suppress uninitvar
            d = (uint32_t)(w[0] > f[0][i]) << sl[0];
            if (K > 1)
                d |= (uint32_t)(w[1] > f[1][i]) << sl[1];
            if (K > 2)
                d |= (uint32_t)(w[2] > f[2][i]) << sl[2];
            if (K > 3)
                d |= (uint32_t)(w[3] > f[3][i]) << sl[3];
        }
        uint32_t fl = flagged ? flags[i] & slow : 0; /* no flagged node: no flag to load */
        any |= fl;
        detail[i] = d;
        status[i] = (uint8_t)(d ? SCHED_FILTER_RESOURCES : SCHED_FILTER_OK);
        feas[nf] = (uint32_t)i;
        nf += (d | fl) == 0;
    }
    for (size_t j = 0; any && j < n; j++) { /* the flagged nodes, if any */
        uint8_t fj = flags[j] & slow;
        if (!fj)
            continue;
        sched_filter_id id;
        if (!p->n_tolerations) { /* the flags say it all: see filter_run */
            id = fj & SCHED_NODE_NOT_READY       ? SCHED_FILTER_NODE_READY
                 : fj & SCHED_NODE_UNSCHEDULABLE ? SCHED_FILTER_NODE_UNSCHEDULABLE
                                                 : SCHED_FILTER_TAINT;
            detail[j] = id == SCHED_FILTER_TAINT ? cols->hard_taint[j] : 0;
        } else {
            id = filter_run(s, p, sched_snapshot_node(s, j), j, NULL, &detail[j]);
        }
        status[j] = (uint8_t)id;
        if (id == SCHED_FILTER_OK)
            feas[nf++] = (uint32_t)j;
    }
    return nf;
}

/* scan_plain_k for the pod's resource slots and whether any node is flagged at all. */
static inline __attribute__((always_inline)) size_t
scan_plain_f(sched_framework *fw, const sched_snapshot *s, const sched_pod *p,
             const sched_node_cols *cols, const scan_ctx *x, const bool flagged) {
    switch (x->nslots) {
    case 1:
        return scan_plain_k(fw, s, p, cols, x, 1, false, flagged);
    case 2:
        return scan_plain_k(fw, s, p, cols, x, 2, false, flagged);
    case 3:
        if (x->slot[0] == SCHED_RES_CPU && x->slot[1] == SCHED_RES_MEMORY &&
            x->slot[2] == SCHED_RES_PODS) /* nearly every pod */
            return scan_plain_k(fw, s, p, cols, x, 3, true, flagged);
        return scan_plain_k(fw, s, p, cols, x, 3, false, flagged);
    case 4:
        return scan_plain_k(fw, s, p, cols, x, 4, false, flagged);
    default: /* extended resources: the general scan */
        return scan(fw, s, p, cols, x, NULL, false);
    }
}

static size_t scan_plain(sched_framework *fw, const sched_snapshot *s, const sched_pod *p,
                         const sched_node_cols *cols, const scan_ctx *x) {
    /* a cluster where every node is ready, schedulable and untainted (the simulator's) */
    if (cols->n_flagged == 0)
        return scan_plain_f(fw, s, p, cols, x, false);
    return scan_plain_f(fw, s, p, cols, x, true);
}

/* PreFilter and Filter of the added plugins, after the built-in filters: each active plugin
 * checks the nodes still feasible, so the first filter that rejects a node decides its
 * reason. Returns the new feasible count, SIZE_MAX with err on a PreFilter error. */
static size_t plugins_filter(sched_framework *fw, size_t nf, tm_err *err) {
    for (size_t k = 1; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        fw->filter_on[k] = false;
        uint32_t d = 0;
        sched_status st =
            pl->pre_filter ? pl->pre_filter(pl->state, &fw->cyc, &d, err) : SCHED_STATUS_OK;
        if (st == SCHED_STATUS_ERROR) {
            tm_err_wrap(err, "pre-filter %s of pod %s/%s", pl->name, fw->cyc.pod->ns,
                        fw->cyc.pod->name);
            return SIZE_MAX;
        }
        if (st == SCHED_STATUS_UNSCHEDULABLE) { /* every node still feasible is rejected */
            for (size_t j = 0; j < nf; j++) {
                fw->status[fw->feas[j]] = (uint8_t)(SCHED_FILTER_PLUGIN + k);
                fw->detail[fw->feas[j]] = d;
            }
            nf = 0;
            continue;
        }
        fw->filter_on[k] = st == SCHED_STATUS_OK && pl->filter;
    }
    for (size_t k = 1; k < fw->n_plugins; k++) {
        if (!fw->filter_on[k])
            continue;
        const sched_plugin *pl = &fw->plugins[k];
        size_t keep = 0;
        for (size_t j = 0; j < nf; j++) {
            uint32_t i = fw->feas[j];
            int r = pl->filter(pl->state, &fw->cyc, i, sched_snapshot_node(fw->cyc.snap, i));
            if (r >= 0) {
                fw->status[i] = (uint8_t)(SCHED_FILTER_PLUGIN + k);
                fw->detail[i] = (uint32_t)r;
            } else {
                fw->feas[keep++] = i;
            }
        }
        nf = keep;
    }
    return nf;
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
    fw->cyc = (sched_cycle){.snap = s, .pod = p, .now_ms = now_ms, .fw = fw};
    sched_task_resolve(s, p, &fw->cyc.task);
    if (sched_prefilter_compute(fw->pf, s, p, err) != 0)
        return tm_err_wrap(err, "pre-filter of pod %s/%s", p->ns, p->name);
    const sched_prefilter *pf =
        fw->pf->ports_on || fw->pf->spread_on || fw->pf->interpod_on || fw->pf->volume_on ? fw->pf
                                                                                          : NULL;
    sched_node_cols cols;
    sched_snapshot_node_cols(s, &cols);
    scan_ctx x;
    scan_prepare(&x, s, p, &cols);
    size_t nf =
        pf || x.aff ? scan(fw, s, p, &cols, &x, pf, x.aff) : scan_plain(fw, s, p, &cols, &x);
    if (fw->any_filter && (nf = plugins_filter(fw, nf, err)) == SIZE_MAX)
        return -1;
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (pl->pre_score && pl->pre_score(pl->state, &fw->cyc, err) != 0)
            return tm_err_wrap(err, "%s %s", k ? "plugin" : "policy", pl->name);
    }
    fw->have_cycle = true;
    if (fw->plugins[0].score_batch) {
        fw->plugins[0].score_batch(fw->plugins[0].state, &fw->cyc, fw->feas, nf, fw->fscore);
    } else {
        for (size_t k = 0; k < nf; k++)
            fw->fscore[k] = fw->plugins[0].score(fw->plugins[0].state, &fw->cyc,
                                                 sched_snapshot_node(s, fw->feas[k]));
    }
    for (size_t j = 1; j < fw->n_plugins; j++) { /* added Score plugins add to the policy's */
        const sched_plugin *pl = &fw->plugins[j];
        for (size_t k = 0; pl->score && k < nf; k++)
            fw->fscore[k] += pl->score(pl->state, &fw->cyc, sched_snapshot_node(s, fw->feas[k]));
    }
    /* the highest score wins, ties go to the first in name order (and, should ranks repeat
     * after a failed refresh, to the lowest index, so the order of fw->feas does not matter);
     * a score at or above the best so far is rare once the scan is under way */
    int best = -1;
    int64_t best_score = 0;
    if (nf) {
        int64_t mn = fw->fscore[0], mx = fw->fscore[0];
        uint32_t bi = fw->feas[0], br = cols.name_rank[bi];
        fw->score[bi] = mx;
        for (size_t k = 1; k < nf; k++) {
            int64_t sc = fw->fscore[k];
            uint32_t i = fw->feas[k];
            fw->score[i] = sc;
            mn = sc < mn ? sc : mn;
            if (__builtin_expect(sc >= mx, 0)) {
                uint32_t r = cols.name_rank[i];
                if (sc > mx || r < br || (r == br && i < bi)) {
                    mx = sc;
                    br = r;
                    bi = i;
                }
            }
        }
        fw->min_score = mn;
        fw->max_score = mx;
        best = (int)bi;
        best_score = mx;
    }
    d->n_feasible = nf;
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
    if (sched_pod_record(s, p, n->name, err) != 0)
        return tm_err_wrap(err, "reserve %s/%s on %s", p->ns, p->name, n->name);
    sched_cycle c = {.snap = s, .pod = p, .now_ms = fw->cyc.now_ms, .fw = fw};
    bool resolved = false;
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->reserved)
            continue;
        if (!resolved)
            sched_task_resolve(s, p, &c.task);
        resolved = true;
        pl->reserved(pl->state, &c, n);
    }
    return 0;
}

static int cmp_str(const char *a, const char *b) {
    return strcmp(a ? a : "", b ? b : "");
}

int sched_framework_queue_cmp(const sched_framework *fw, const sched_snapshot *s,
                              const sched_pod *a, const sched_pod *b) {
    int c = 0;
    for (size_t k = fw->n_plugins; k-- > 1 && !c;) /* added plugins, latest first */
        if (fw->plugins[k].queue_cmp)
            c = fw->plugins[k].queue_cmp(fw->plugins[k].state, s, a, b);
    if (c) {
        return c;
    } else if (fw->plugins[0].queue_cmp) {
        c = fw->plugins[0].queue_cmp(fw->plugins[0].state, s, a, b);
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
    if (fw->plugins[0].extender_score) {
        v = fw->plugins[0].extender_score(fw->plugins[0].state, &fw->cyc, n, raw, fw->min_score,
                                          fw->max_score);
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
                    sched_filter_reason(s, NULL, NULL, id, 1u << r, one, sizeof one);
                    add_reason(&rs, &nr, &cap, one);
                }
        } else {
            sched_framework_node_reason(fw, i, one, sizeof one);
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

/* ---- topology pair counts ---- */

typedef struct tp_ent {
    const char *key, *value;
    uint64_t hash;
    int64_t count;
} tp_ent;

struct sched_tpmap {
    tp_ent *e; /* dense, insertion order */
    size_t n, cap;
    uint32_t *idx; /* open addressing: entry index + 1, 0 = empty */
    size_t idx_cap;
};

static uint64_t tp_hash(const char *key, const char *value) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a over key, a separator, value */
    for (const char *c = key; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
    for (const char *c = value; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h;
}

sched_tpmap *sched_tpmap_new(void) {
    return calloc(1, sizeof(sched_tpmap));
}

void sched_tpmap_free(sched_tpmap *m) {
    if (!m)
        return;
    free(m->e);
    free(m->idx);
    free(m);
}

void sched_tpmap_clear(sched_tpmap *m) {
    if (m->n && m->idx)
        memset(m->idx, 0, m->idx_cap * sizeof *m->idx);
    m->n = 0;
}

static tp_ent *tp_find(const sched_tpmap *m, const char *key, const char *value, uint64_t h,
                       size_t *slot) {
    if (!m->idx_cap)
        return NULL;
    for (size_t i = h & (m->idx_cap - 1);; i = (i + 1) & (m->idx_cap - 1)) {
        uint32_t k = m->idx[i];
        if (!k) {
            if (slot)
                *slot = i;
            return NULL;
        }
        tp_ent *e = &m->e[k - 1];
        if (e->hash == h && strcmp(e->key, key) == 0 && strcmp(e->value, value) == 0)
            return e;
    }
}

static int tp_grow(sched_tpmap *m) {
    size_t ncap = m->idx_cap ? m->idx_cap * 2 : 64;
    uint32_t *ni = calloc(ncap, sizeof *ni);
    if (!ni)
        return -1;
    for (size_t k = 0; k < m->n; k++) {
        size_t i = m->e[k].hash & (ncap - 1);
        while (ni[i])
            i = (i + 1) & (ncap - 1);
        ni[i] = (uint32_t)(k + 1);
    }
    free(m->idx);
    m->idx = ni;
    m->idx_cap = ncap;
    return 0;
}

/* Up to this many pairs a lookup compares the strings directly: hashing key and value byte by
 * byte costs more than a few strcmp calls that mostly stop at the first differing byte, and
 * the per-node filters look up one pair per node per cycle. */
#define TP_LINEAR_MAX 8

/* The pair's entry when the map is small enough to search linearly (NULL otherwise, or when
 * absent). Pairs are unique, so at most one entry matches. */
static tp_ent *tp_find_linear(const sched_tpmap *m, const char *key, const char *value) {
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->e[i].value, value) == 0 && strcmp(m->e[i].key, key) == 0)
            return &m->e[i];
    return NULL;
}

int sched_tpmap_add(sched_tpmap *m, const char *key, const char *value, int64_t delta) {
    tp_ent *e = m->n <= TP_LINEAR_MAX ? tp_find_linear(m, key, value) : NULL;
    if (e) {
        e->count += delta;
        return 0;
    }
    uint64_t h = tp_hash(key, value);
    if (m->n > TP_LINEAR_MAX && (e = tp_find(m, key, value, h, NULL)) != NULL) {
        e->count += delta;
        return 0;
    }
    if ((m->n + 1) * 2 > m->idx_cap && tp_grow(m) != 0)
        return -1;
    if (m->n == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 32;
        tp_ent *ne = realloc(m->e, ncap * sizeof *ne);
        if (!ne)
            return -1;
        m->e = ne;
        m->cap = ncap;
    }
    size_t slot = 0;
    tp_find(m, key, value, h, &slot);
    m->e[m->n] = (tp_ent){key, value, h, delta};
    m->idx[slot] = (uint32_t)(++m->n);
    return 0;
}

int64_t sched_tpmap_get(const sched_tpmap *m, const char *key, const char *value, bool *found) {
    const tp_ent *e = m->n <= TP_LINEAR_MAX ? tp_find_linear(m, key, value)
                                            : tp_find(m, key, value, tp_hash(key, value), NULL);
    if (found)
        *found = e != NULL;
    return e ? e->count : 0;
}

size_t sched_tpmap_size(const sched_tpmap *m) {
    return m->n;
}

void sched_tpmap_at(const sched_tpmap *m, size_t i, const char **key, const char **value,
                    int64_t *count) {
    const tp_ent *e = i < m->n ? &m->e[i] : NULL;
    if (key)
        *key = e ? e->key : NULL;
    if (value)
        *value = e ? e->value : NULL;
    if (count)
        *count = e ? e->count : 0;
}
