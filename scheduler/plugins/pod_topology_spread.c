/* pod_topology_spread.c: the PodTopologySpread filter for whenUnsatisfiable: DoNotSchedule, and
 * its score for whenUnsatisfiable: ScheduleAnyway (at the end of this file).
 *
 * Follows kube-scheduler's podtopologyspread/filtering.go and common.go. PreFilter: a node
 * counts as a domain of a constraint when it carries the topology keys of ALL the pod's
 * constraints and passes the constraint's node inclusion policies (nodeAffinityPolicy Honor by
 * default: the pod's nodeSelector and required node affinity; nodeTaintsPolicy Ignore by
 * default, Honor: no untolerated NoSchedule/NoExecute taint). Each domain gets the number of
 * placed pods on its nodes in the pod's namespace, not terminating, matching the constraint's
 * selector (an empty selector counts none, as kube-scheduler's countPodsMatchSelector; an absent
 * one matches nothing). The global minimum is the smallest domain count, or 0 when there are
 * fewer domains than minDomains. Filter: a node without a constraint's key fails ("missing
 * required label"); otherwise count(node's domain) + (1 if the pod matches its own selector)
 * - global minimum must not exceed maxSkew. Pods recorded without metadata are not counted.
 * A pod without topologySpreadConstraints of its own gets the default constraints
 * (spread_defaults.h: kube's System defaults, hostname maxSkew 3 and zone maxSkew 5, both
 * ScheduleAnyway, unless configured otherwise) with the selector of the Services and controller
 * that select it (owner_selectors.h); nothing selects it: no constraint. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/filters.h"
#include "scheduler/plugins/spread_defaults.h"

struct sched_spread_state {
    /* the constraints of this cycle: the pod's own, or its default ones (spread_defaults.h) */
    const sched_spread *hard, *soft;
    size_t n_hard, n_soft;
    bool sysdef; /* soft ones are the System defaults: nodes need not carry every key */
    sched_spread_defaults *defs;
    sched_spread *dcons; /* the default constraints with this pod's selector: hard, then soft */
    tm_selector *dsel;   /* that selector (owned), NULL: nothing selects the pod */
    /* what dsel was computed for: recomputed when the pod or the table changes */
    const sched_pod *memo_pod;
    const json_t *memo_labels;
    const sched_owner_sels *memo_table;
    uint64_t memo_gen;
    char *memo_uid;
    sched_tpmap *counts; /* (topology key, value) -> matching pods in that domain */
    size_t nc;           /* constraints this cycle */
    int64_t *min_match;  /* per constraint: the global minimum used for the skew */
    bool *self_match;    /* per constraint: the pod matches its own selector */
    const char **dom;    /* node i, constraint c at [i * nc + c]: domain value, NULL = not one */
    size_t cap_c, cap_dom;
    /* scoring (ScheduleAnyway constraints), computed in PreScore */
    bool soft_active;  /* the pod has such constraints and some node is feasible */
    sched_tpmap **sc;  /* per constraint: its domains among the feasible nodes -> pods */
    size_t cap_sc;     /* maps allocated */
    const char **sdom; /* node i, constraint c at [i * ns + c]: domain it counts pods in */
    int64_t *hcount;   /* node i, hostname constraint c at [i * ns + c]: pods on node i */
    int64_t *nscore;   /* node i: normalised score (feasible nodes), INT64_MIN: ignored */
    double *weight;    /* per constraint: log(domains + 2) */
    size_t cap_snodes, cap_sc_n;
};

sched_spread_state *sched_spread_state_new(void) {
    sched_spread_state *st = calloc(1, sizeof *st);
    if (!st || !(st->counts = sched_tpmap_new()) || !(st->defs = sched_spread_defaults_system()) ||
        !(st->dcons = calloc(st->defs->n, sizeof *st->dcons))) {
        sched_spread_state_free(st);
        return NULL;
    }
    return st;
}

void sched_spread_state_free(sched_spread_state *st) {
    if (!st)
        return;
    sched_tpmap_free(st->counts);
    sched_spread_defaults_free(st->defs);
    free(st->dcons);
    tm_selector_free(st->dsel);
    free(st->memo_uid);
    for (size_t c = 0; c < st->cap_sc; c++)
        sched_tpmap_free(st->sc[c]);
    free(st->sc);
    free(st->sdom);
    free(st->hcount);
    free(st->nscore);
    free(st->weight);
    free(st->min_match);
    free(st->self_match);
    free(st->dom);
    free(st);
}

static int ensure(sched_spread_state *st, size_t nc, size_t nn) {
    if (nc > st->cap_c) {
        int64_t *mm = realloc(st->min_match, nc * sizeof *mm);
        if (mm)
            st->min_match = mm;
        bool *sm = realloc(st->self_match, nc * sizeof *sm);
        if (sm)
            st->self_match = sm;
        if (!mm || !sm)
            return -1;
        st->cap_c = nc;
    }
    if (nc * nn > st->cap_dom) {
        const char **d = realloc(st->dom, nc * nn * sizeof *d);
        if (!d)
            return -1;
        st->dom = d;
        st->cap_dom = nc * nn;
    }
    return 0;
}

const sched_spread_defaults *sched_spread_get_defaults(const sched_spread_state *st) {
    return st->defs;
}

int sched_spread_set_defaults(sched_spread_state *st, sched_spread_defaults *d) {
    sched_spread *dc = d && d->n ? calloc(d->n, sizeof *dc) : NULL;
    if (!d || (d->n && !dc)) {
        sched_spread_defaults_free(d);
        free(dc);
        return -1;
    }
    sched_spread_defaults_free(st->defs);
    free(st->dcons);
    st->defs = d;
    st->dcons = dc;
    st->memo_pod = NULL; /* recompute */
    return 0;
}

/* The pod's default selector, computed once per pod and table state. 0, or -1 on OOM. */
static int default_selector(sched_spread_state *st, const sched_snapshot *s, const sched_pod *p,
                            tm_err *err) {
    const sched_owner_sels *t = sched_snapshot_owner_selectors(s);
    if (st->memo_pod == p && st->memo_labels == p->pod_labels && st->memo_table == t &&
        st->memo_gen == sched_owner_sels_generation(t) && st->memo_uid &&
        strcmp(st->memo_uid, p->uid) == 0)
        return 0;
    tm_selector_free(st->dsel);
    st->dsel = NULL;
    st->memo_pod = NULL;
    if (sched_owner_sels_default_selector(t, p->ns, p->pod_labels, p->controller_kind,
                                          p->controller_name, &st->dsel, err) != 0)
        return -1;
    free(st->memo_uid);
    if (!(st->memo_uid = strdup(p->uid)))
        return tm_err_set(err, "out of memory");
    st->memo_pod = p;
    st->memo_labels = p->pod_labels;
    st->memo_table = t;
    st->memo_gen = sched_owner_sels_generation(t);
    return 0;
}

/* The constraints this cycle works with: the pod's own when it has any (kube: any
 * topologySpreadConstraints at all, of either action), else the defaults with the selector of
 * the Services and controller that select it, else none. 0, or -1 with err (OOM). */
static int resolve(sched_spread_state *st, const sched_snapshot *s, const sched_pod *p,
                   tm_err *err) {
    st->hard = p->spread;
    st->n_hard = p->n_spread;
    st->soft = p->soft_spread;
    st->n_soft = p->n_soft_spread;
    st->sysdef = false;
    if (p->n_spread || p->n_soft_spread || !st->defs || !st->defs->n ||
        !sched_snapshot_owner_selectors(s))
        return 0;
    if (default_selector(st, s, p, err) != 0)
        return -1;
    if (!st->dsel)
        return 0;
    /* hard ones first, then soft: two runs of one array */
    size_t k = 0;
    for (int soft = 0; soft < 2; soft++)
        for (size_t i = 0; i < st->defs->n; i++)
            if (st->defs->soft[i] == (bool)soft) {
                st->dcons[k] = st->defs->c[i];
                st->dcons[k++].selector = st->dsel; /* borrowed from st */
                if (soft)
                    st->n_soft++;
                else
                    st->n_hard++;
            }
    st->hard = st->dcons;
    st->soft = st->dcons + st->n_hard;
    st->sysdef = st->defs->system;
    return 0;
}

/* Registers node i's domains (count 0) for the constraints whose policies admit it. */
static int node_domains(sched_spread_state *st, const sched_pod *p, const sched_node *n,
                        const char **dom) {
    for (size_t c = 0; c < st->nc; c++)
        if (!(dom[c] = sched_node_label(n, st->hard[c].topology_key))) {
            memset(dom, 0, st->nc * sizeof *dom); /* needs every key to count at all */
            return 0;
        }
    int aff = -1, taints = -1; /* evaluated lazily, at most once per node */
    for (size_t c = 0; c < st->nc; c++) {
        const sched_spread *sp = &st->hard[c];
        if (sp->honor_node_affinity) {
            if (aff < 0)
                aff = sched_pod_node_affinity_matches(p, n);
            if (!aff) {
                dom[c] = NULL;
                continue;
            }
        }
        if (sp->honor_node_taints) {
            if (taints < 0)
                taints = sched_pod_tolerates_node_taints(p, n);
            if (!taints) {
                dom[c] = NULL;
                continue;
            }
        }
        if (sched_tpmap_add(st->counts, sp->topology_key, dom[c], 0) != 0)
            return -1;
    }
    return 0;
}

static int count_pods(sched_spread_state *st, const sched_snapshot *s, const sched_pod *p) {
    size_t np = sched_snapshot_podset_count(s, SCHED_PODSET_META);
    for (size_t i = 0; i < np; i++) {
        const char *uid;
        const sched_pod_meta *m = sched_snapshot_podset_pod(s, SCHED_PODSET_META, i, &uid, NULL);
        if (m->terminating || strcmp(m->ns, p->ns) != 0)
            continue;
        const char **dom = NULL; /* the node is looked up once a selector matches */
        for (size_t c = 0; c < st->nc; c++) {
            const tm_selector *sel = st->hard[c].selector;
            if (!sel || !sel->n || !sched_labels_match(sel, m->labels))
                continue;
            if (!dom) {
                int node;
                sched_snapshot_podset_pod(s, SCHED_PODSET_META, i, NULL, &node);
                if (node < 0 || strcmp(uid, p->uid) == 0)
                    break;
                dom = &st->dom[(size_t)node * st->nc];
            }
            if (!dom[c])
                continue;
            if (sched_tpmap_add(st->counts, st->hard[c].topology_key, dom[c], 1) != 0)
                return -1;
        }
    }
    return 0;
}

int sched_spread_prefilter(sched_spread_state *st, const sched_snapshot *s, const sched_pod *p,
                           bool *active, tm_err *err) {
    *active = false;
    sched_tpmap_clear(st->counts);
    st->nc = 0;
    if (resolve(st, s, p, err) != 0)
        return -1;
    if (!st->n_hard)
        return 0;
    size_t nn = sched_snapshot_node_count(s), nc = st->n_hard;
    if (ensure(st, nc, nn) != 0)
        return tm_err_set(err, "out of memory for topology spread over %zu nodes", nn);
    st->nc = nc;
    for (size_t i = 0; i < nn; i++)
        if (node_domains(st, p, sched_snapshot_node(s, i), &st->dom[i * nc]) != 0)
            return tm_err_set(err, "out of memory for topology spread over %zu nodes", nn);
    if (count_pods(st, s, p) != 0)
        return tm_err_set(err, "out of memory counting pods for topology spread");
    for (size_t c = 0; c < nc; c++) {
        const sched_spread *sp = &st->hard[c];
        int64_t min = INT32_MAX; /* kube-scheduler's critical path starts at MaxInt32 */
        size_t domains = 0;
        for (size_t k = 0; k < sched_tpmap_size(st->counts); k++) {
            const char *key;
            int64_t cnt;
            sched_tpmap_at(st->counts, k, &key, NULL, &cnt);
            if (strcmp(key, sp->topology_key) != 0)
                continue;
            domains++;
            if (cnt < min)
                min = cnt;
        }
        st->min_match[c] = domains < (size_t)(sp->min_domains > 0 ? sp->min_domains : 1) ? 0 : min;
        st->self_match[c] = sp->selector && tm_selector_matches(sp->selector, p->pod_labels);
    }
    *active = true;
    return 0;
}

int sched_spread_filter(const sched_spread_state *st, const sched_pod *p, const sched_node *n) {
    for (size_t c = 0; c < st->nc; c++) {
        const sched_spread *sp = &st->hard[c];
        const char *v = sched_node_label(n, sp->topology_key);
        if (!v)
            return SCHED_SPREAD_MISSING_LABEL;
        int64_t match = sched_tpmap_get(st->counts, sp->topology_key, v, NULL);
        if (match + (st->self_match[c] ? 1 : 0) - st->min_match[c] > sp->max_skew)
            return SCHED_SPREAD_SKEW;
    }
    return -1;
}

/* ---- the plugin ---- */

static sched_status spread_pre_filter(void *state, const sched_cycle *c, uint32_t *detail,
                                      tm_err *err) {
    bool active = false;
    if (sched_spread_prefilter(state, c->snap, c->pod, &active, err) != 0)
        return SCHED_STATUS_ERROR;
    return active ? SCHED_STATUS_OK : SCHED_STATUS_SKIP;
}

static int spread_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    return sched_spread_filter(state, c->pod, n);
}

static void spread_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                          char *buf, size_t size) {
    snprintf(buf, size, "node(s) didn't match pod topology spread constraints%s",
             detail == SCHED_SPREAD_MISSING_LABEL ? " (missing required label)" : "");
}

static void spread_free(void *state) {
    sched_spread_state_free(state);
}

/* ---- scoring: whenUnsatisfiable ScheduleAnyway, as kube-scheduler's podtopologyspread
 * scoring.go ----
 * The constraints are the pod's ScheduleAnyway ones or, for a pod without constraints of its
 * own that Services or a controller select, the default ones (resolve above).
 * PreScore (once per cycle, only for a pod with such constraints): a feasible node lacking
 * any of those constraints' topology keys is ignored (score 0), except under the System
 * defaults, where no node is ignored (kube: so that nodes without a zone label still get
 * hostname spreading). Every other feasible node's value of a non-hostname key (under the
 * System defaults "" when it has none) is a domain of that constraint. Pods are counted per
 * domain on every node (feasible or not) that passes the constraint's node inclusion policies
 * and whose value is such a domain (carrying all the keys, but under the System defaults); for
 * kubernetes.io/hostname the pods on the node itself, whatever its policies. A node scores,
 * summed over the constraints whose key it carries, count * log(domains + 2) + (maxSkew - 1)
 * (domains: for hostname, the feasible nodes not ignored), rounded; fewer is better:
 * normalised to 100 * (max + min - score) / max (all 100 when max is 0). The pods counted are
 * those of the pod's namespace, not terminating, that the constraint's selector matches. */

static const char hostname_key[] = "kubernetes.io/hostname";

static int soft_ensure(sched_spread_state *st, size_t ns, size_t nn) {
    if (ns > st->cap_sc) {
        sched_tpmap **m = realloc(st->sc, ns * sizeof *m);
        if (!m)
            return -1;
        st->sc = m;
        for (; st->cap_sc < ns; st->cap_sc++)
            if (!(m[st->cap_sc] = sched_tpmap_new()))
                return -1;
        double *w = realloc(st->weight, ns * sizeof *w);
        if (!w)
            return -1;
        st->weight = w;
    }
    if (ns * nn > st->cap_sc_n) {
        const char **d = realloc(st->sdom, ns * nn * sizeof *d);
        if (d)
            st->sdom = d;
        int64_t *h = realloc(st->hcount, ns * nn * sizeof *h);
        if (h)
            st->hcount = h;
        if (!d || !h)
            return -1;
        st->cap_sc_n = ns * nn;
    }
    if (nn > st->cap_snodes) {
        int64_t *sc = realloc(st->nscore, nn * sizeof *sc);
        if (!sc)
            return -1;
        st->nscore = sc;
        st->cap_snodes = nn;
    }
    return 0;
}

static bool has_all_keys(const sched_spread_state *st, const sched_node *n) {
    for (size_t c = 0; c < st->n_soft; c++)
        if (!sched_node_label(n, st->soft[c].topology_key))
            return false;
    return true;
}

/* Node n's domains for counting pods (sdom row), NULL where it does not count. */
static void soft_node_domains(const sched_spread_state *st, const sched_pod *p, const sched_node *n,
                              const char **dom) {
    size_t ns = st->n_soft;
    if (!st->sysdef && !has_all_keys(st, n)) {
        memset(dom, 0, ns * sizeof *dom);
        return;
    }
    int aff = -1, taints = -1;
    for (size_t c = 0; c < ns; c++) {
        const sched_spread *sp = &st->soft[c];
        dom[c] = sched_node_label(n, sp->topology_key);
        if (!dom[c]) /* only under the System defaults: kube reads a missing label as "" */
            dom[c] = "";
        if (sp->honor_node_affinity) {
            if (aff < 0)
                aff = sched_pod_node_affinity_matches(p, n);
            if (!aff)
                dom[c] = NULL;
        }
        if (dom[c] && sp->honor_node_taints) {
            if (taints < 0)
                taints = sched_pod_tolerates_node_taints(p, n);
            if (!taints)
                dom[c] = NULL;
        }
    }
}

static int soft_count_pods(sched_spread_state *st, const sched_snapshot *s, const sched_pod *p) {
    size_t ns = st->n_soft;
    size_t np = sched_snapshot_podset_count(s, SCHED_PODSET_META);
    for (size_t i = 0; i < np; i++) {
        const char *uid;
        int node;
        const sched_pod_meta *m = sched_snapshot_podset_pod(s, SCHED_PODSET_META, i, &uid, &node);
        if (node < 0 || m->terminating || strcmp(m->ns, p->ns) != 0 || strcmp(uid, p->uid) == 0)
            continue;
        for (size_t c = 0; c < ns; c++) {
            const sched_spread *sp = &st->soft[c];
            if (!sp->selector || !sp->selector->n || !sched_labels_match(sp->selector, m->labels))
                continue;
            size_t at = (size_t)node * ns + c;
            if (strcmp(sp->topology_key, hostname_key) == 0) {
                st->hcount[at]++;
                continue;
            }
            bool known = false;
            if (st->sdom[at])
                sched_tpmap_get(st->sc[c], sp->topology_key, st->sdom[at], &known);
            if (known && sched_tpmap_add(st->sc[c], sp->topology_key, st->sdom[at], 1) != 0)
                return -1;
        }
    }
    return 0;
}

static int spread_pre_score(void *state, const sched_cycle *cyc, tm_err *err) {
    sched_spread_state *st = state;
    const sched_pod *p = cyc->pod;
    const sched_snapshot *s = cyc->snap;
    st->soft_active = false;
    size_t nf = 0;
    const uint32_t *feas = cyc->fw ? sched_framework_feasible(cyc->fw, &nf) : NULL;
    if (!nf) /* nothing to say: O(1) */
        return 0;
    if (resolve(st, s, p, err) != 0)
        return -1;
    size_t ns = st->n_soft;
    if (!ns)
        return 0;
    size_t nn = sched_snapshot_node_count(s);
    if (soft_ensure(st, ns, nn) != 0)
        return tm_err_set(err, "out of memory scoring topology spread over %zu nodes", nn);
    double *topo = st->weight; /* domains per constraint first, their weight below */
    for (size_t c = 0; c < ns; c++) {
        sched_tpmap_clear(st->sc[c]);
        topo[c] = 0;
    }
    /* the feasible nodes: ignored ones, and the domains they make */
    size_t ignored = 0;
    for (size_t k = 0; k < nf; k++) {
        const sched_node *n = sched_snapshot_node(s, feas[k]);
        st->nscore[feas[k]] = 0;
        if (!st->sysdef && !has_all_keys(st, n)) {
            st->nscore[feas[k]] = INT64_MIN;
            ignored++;
            continue;
        }
        for (size_t c = 0; c < ns; c++) {
            const char *key = st->soft[c].topology_key, *v = sched_node_label(n, key);
            bool known = false;
            if (strcmp(key, hostname_key) == 0)
                continue;
            if (!v) /* System defaults only (others ignored the node): kube's "" domain */
                v = "";
            sched_tpmap_get(st->sc[c], key, v, &known);
            if (!known) {
                if (sched_tpmap_add(st->sc[c], key, v, 0) != 0)
                    return tm_err_set(err, "out of memory scoring topology spread");
                topo[c]++;
            }
        }
    }
    /* pods per domain, over every node */
    memset(st->hcount, 0, nn * ns * sizeof *st->hcount);
    for (size_t i = 0; i < nn; i++)
        soft_node_domains(st, p, sched_snapshot_node(s, i), &st->sdom[i * ns]);
    if (soft_count_pods(st, s, p) != 0)
        return tm_err_set(err, "out of memory counting pods for topology spread scoring");
    for (size_t c = 0; c < ns; c++) {
        bool host = strcmp(st->soft[c].topology_key, hostname_key) == 0;
        st->weight[c] = log((host ? (double)(nf - ignored) : topo[c]) + 2);
    }
    /* raw scores, then kube's NormalizeScore */
    int64_t mn = INT64_MAX, mx = 0;
    for (size_t k = 0; k < nf; k++) {
        size_t i = feas[k];
        if (st->nscore[i] == INT64_MIN)
            continue;
        const sched_node *n = sched_snapshot_node(s, i);
        double sum = 0;
        for (size_t c = 0; c < ns; c++) {
            const sched_spread *sp = &st->soft[c];
            const char *v = sched_node_label(n, sp->topology_key);
            if (!v) /* a constraint counts only on nodes with its key */
                continue;
            int64_t cnt = strcmp(sp->topology_key, hostname_key) == 0
                              ? st->hcount[i * ns + c]
                              : sched_tpmap_get(st->sc[c], sp->topology_key, v, NULL);
            sum += (double)cnt * st->weight[c] + (double)(sp->max_skew - 1);
        }
        int64_t raw = (int64_t)round(sum);
        st->nscore[i] = raw;
        mn = raw < mn ? raw : mn;
        mx = raw > mx ? raw : mx;
    }
    for (size_t k = 0; k < nf; k++) {
        int64_t *v = &st->nscore[feas[k]];
        *v = *v == INT64_MIN ? 0
             : mx == 0       ? SCHED_MAX_NODE_SCORE
                             : SCHED_MAX_NODE_SCORE * (mx + mn - *v) / mx;
    }
    st->soft_active = true;
    return 0;
}

static bool spread_pref_pre_score(void *state, const sched_cycle *c) {
    return ((const sched_spread_state *)state)->soft_active;
}

static int64_t spread_pref_score(void *state, const sched_cycle *c, const sched_node *n) {
    const sched_spread_state *st = state;
    int i = sched_snapshot_node_index(c->snap, n->name);
    return i >= 0 && (size_t)i < st->cap_snodes ? st->nscore[i] : 0;
}

int sched_filter_topology_spread(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "PodTopologySpread",
                          .pre_filter = spread_pre_filter,
                          .filter = spread_filter,
                          .node_reason = spread_reason,
                          .free_state = spread_free,
                          .filter_id = SCHED_FILTER_SPREAD,
                          .pre_score = spread_pre_score,
                          .pref_pre_score = spread_pref_pre_score,
                          .pref_score = spread_pref_score,
                          .pref_raw = true, /* normalised in PreScore, kube's way */
                          .pref_weight = 2};
    return with_state && !(out->state = sched_spread_state_new()) ? -1 : 0;
}
