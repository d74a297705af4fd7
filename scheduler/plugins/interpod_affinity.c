/* interpod_affinity.c: the InterPodAffinity filter, required terms only.
 *
 * Follows kube-scheduler's interpodaffinity/filtering.go. PreFilter counts, per topology pair
 * (topologyKey, node label value):
 *   aff       placed pods matching ALL of the incoming pod's affinity terms, once per term;
 *   anti      placed pods matching one of its anti-affinity terms, once per matching term;
 *   existing  placed pods' anti-affinity terms matching the incoming pod (the symmetry rule).
 * Filter on a node, in this order:
 *   affinity  every term's topology key must be on the node and its pair counted; except that
 *             when no placed pod matches at all and the pod matches its own terms, any node
 *             with all the keys will do (the first pod of a group with affinity to itself);
 *   anti      no term's pair may be counted;
 *   existing  no pair of the node's labels may be counted.
 * Namespaces: a term without namespaces and namespaceSelector means its owner's namespace, an
 * empty namespaceSelector every namespace. A non-empty namespaceSelector needs namespace labels,
 * which the snapshot does not hold; it is handled so that nothing kube-scheduler refuses is
 * accepted: for anti-affinity it counts as matching every namespace, for affinity as matching
 * only the listed namespaces, and such a term turns the first-pod exception off. Every bound pod
 * the live cache sees carries its metadata (snapshot.h), whoever placed it; pods recorded
 * without (the simulator's) are invisible here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/filters.h"

struct sched_interpod_state {
    sched_tpmap *aff, *anti, *existing;
    const char **ex_keys; /* distinct topology keys counted in `existing` (borrowed) */
    size_t n_ex_keys, cap_ex_keys;
    bool first_pod_ok; /* the self-match exception may apply */
    /* Score: the preferred terms' weights summed per topology pair once per cycle (PreScore),
     * then looked up per node over the distinct keys, as kube's PreScore/Score split; false:
     * not built this cycle (out of memory, or no state), each node then sums over the pods */
    sched_tpmap *pref;
    const char **pref_keys; /* borrowed from the terms */
    size_t n_pref_keys, cap_pref_keys;
    bool pref_ready;
};

sched_interpod_state *sched_interpod_state_new(void) {
    sched_interpod_state *st = calloc(1, sizeof *st);
    if (!st || !(st->aff = sched_tpmap_new()) || !(st->anti = sched_tpmap_new()) ||
        !(st->existing = sched_tpmap_new()) || !(st->pref = sched_tpmap_new())) {
        sched_interpod_state_free(st);
        return NULL;
    }
    return st;
}

void sched_interpod_state_free(sched_interpod_state *st) {
    if (!st)
        return;
    sched_tpmap_free(st->aff);
    sched_tpmap_free(st->anti);
    sched_tpmap_free(st->existing);
    sched_tpmap_free(st->pref);
    free(st->ex_keys);
    free(st->pref_keys);
    free(st);
}

static int add_ex_key(sched_interpod_state *st, const char *key) {
    for (size_t i = 0; i < st->n_ex_keys; i++)
        if (strcmp(st->ex_keys[i], key) == 0)
            return 0;
    if (st->n_ex_keys == st->cap_ex_keys) {
        size_t ncap = st->cap_ex_keys ? st->cap_ex_keys * 2 : 8;
        const char **nk = realloc(st->ex_keys, ncap * sizeof *nk);
        if (!nk)
            return -1;
        st->ex_keys = nk;
        st->cap_ex_keys = ncap;
    }
    st->ex_keys[st->n_ex_keys++] = key;
    return 0;
}

/* Whether a placed pod (ns, labels) matches every one of the terms (false for no terms). */
static bool matches_all(const sched_pod_term *t, size_t n, const char *ns,
                        const sched_labels *labels) {
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!sched_pod_term_matches(&t[i], ns, labels, false))
            return false;
    return true;
}

/* The same for the incoming pod. */
static bool self_matches_all(const sched_pod *p) {
    if (!p->n_pod_affinity)
        return false;
    for (size_t i = 0; i < p->n_pod_affinity; i++)
        if (!sched_pod_term_matches_json(&p->pod_affinity[i], p->ns, p->pod_labels, false))
            return false;
    return true;
}

/* Placed pods' anti-affinity terms that match the incoming pod. */
static int count_existing(sched_interpod_state *st, const sched_snapshot *s, const sched_pod *p) {
    size_t np = sched_snapshot_podset_count(s, SCHED_PODSET_ANTI);
    for (size_t i = 0; i < np; i++) {
        const char *uid;
        const sched_pod_meta *m = sched_snapshot_podset_pod(s, SCHED_PODSET_ANTI, i, &uid, NULL);
        const sched_node *n = NULL; /* looked up only once a term matches: most do not */
        for (size_t t = 0; t < m->n_anti; t++) {
            const sched_pod_term *term = &m->anti[t];
            if (!sched_pod_term_matches_json(term, p->ns, p->pod_labels, true))
                continue;
            if (!n) {
                int node;
                sched_snapshot_podset_pod(s, SCHED_PODSET_ANTI, i, NULL, &node);
                if (node < 0 || strcmp(uid, p->uid) == 0)
                    break;
                n = sched_snapshot_node(s, (size_t)node);
            }
            const char *v = sched_node_label(n, term->topology_key);
            if (v && (sched_tpmap_add(st->existing, term->topology_key, v, 1) != 0 ||
                      add_ex_key(st, term->topology_key) != 0))
                return -1;
        }
    }
    return 0;
}

/* Placed pods matching the incoming pod's own terms. */
static int count_incoming(sched_interpod_state *st, const sched_snapshot *s, const sched_pod *p) {
    size_t np = sched_snapshot_podset_count(s, SCHED_PODSET_META);
    for (size_t i = 0; i < np; i++) {
        const char *uid;
        const sched_pod_meta *m = sched_snapshot_podset_pod(s, SCHED_PODSET_META, i, &uid, NULL);
        bool aff = matches_all(p->pod_affinity, p->n_pod_affinity, m->ns, m->labels);
        bool anti = false;
        for (size_t t = 0; !anti && t < p->n_pod_anti_affinity; t++)
            anti = sched_pod_term_matches(&p->pod_anti_affinity[t], m->ns, m->labels, true);
        if (!aff && !anti) /* the common case: skip the node lookup */
            continue;
        int node;
        sched_snapshot_podset_pod(s, SCHED_PODSET_META, i, NULL, &node);
        if (node < 0 || strcmp(uid, p->uid) == 0)
            continue;
        const sched_node *n = sched_snapshot_node(s, (size_t)node);
        if (aff) {
            for (size_t t = 0; t < p->n_pod_affinity; t++) {
                const char *key = p->pod_affinity[t].topology_key;
                const char *v = sched_node_label(n, key);
                if (v && sched_tpmap_add(st->aff, key, v, 1) != 0)
                    return -1;
            }
        }
        for (size_t t = 0; t < p->n_pod_anti_affinity; t++) {
            const sched_pod_term *term = &p->pod_anti_affinity[t];
            if (!sched_pod_term_matches(term, m->ns, m->labels, true))
                continue;
            const char *v = sched_node_label(n, term->topology_key);
            if (v && sched_tpmap_add(st->anti, term->topology_key, v, 1) != 0)
                return -1;
        }
    }
    return 0;
}

int sched_interpod_prefilter(sched_interpod_state *st, const sched_snapshot *s, const sched_pod *p,
                             bool *active, tm_err *err) {
    *active = false;
    sched_tpmap_clear(st->aff);
    sched_tpmap_clear(st->anti);
    sched_tpmap_clear(st->existing);
    st->n_ex_keys = 0;
    st->first_pod_ok = false;
    bool own = p->n_pod_affinity || p->n_pod_anti_affinity;
    if (!own && !sched_snapshot_podset_count(s, SCHED_PODSET_ANTI))
        return 0;
    if (count_existing(st, s, p) != 0 || (own && count_incoming(st, s, p) != 0))
        return tm_err_set(err, "out of memory counting inter-pod affinity for pod %s/%s", p->ns,
                          p->name);
    bool unknown_ns = false;
    for (size_t t = 0; t < p->n_pod_affinity; t++)
        unknown_ns |= p->pod_affinity[t].ns_selector;
    st->first_pod_ok = !unknown_ns && self_matches_all(p);
    *active = own || sched_tpmap_size(st->existing) > 0;
    return 0;
}

int sched_interpod_filter(const sched_interpod_state *st, const sched_pod *p, const sched_node *n) {
    if (p->n_pod_affinity) {
        bool pods_exist = true;
        for (size_t t = 0; t < p->n_pod_affinity; t++) {
            const char *key = p->pod_affinity[t].topology_key;
            const char *v = sched_node_label(n, key);
            if (!v)
                return SCHED_INTERPOD_AFFINITY; /* every topology key must be on the node */
            if (sched_tpmap_get(st->aff, key, v, NULL) <= 0)
                pods_exist = false;
        }
        if (!pods_exist && !(sched_tpmap_size(st->aff) == 0 && st->first_pod_ok))
            return SCHED_INTERPOD_AFFINITY;
    }
    if (sched_tpmap_size(st->anti) > 0) {
        for (size_t t = 0; t < p->n_pod_anti_affinity; t++) {
            const char *key = p->pod_anti_affinity[t].topology_key;
            const char *v = sched_node_label(n, key);
            if (v && sched_tpmap_get(st->anti, key, v, NULL) > 0)
                return SCHED_INTERPOD_ANTI_AFFINITY;
        }
    }
    for (size_t k = 0; k < st->n_ex_keys; k++) {
        const char *v = sched_node_label(n, st->ex_keys[k]);
        if (v && sched_tpmap_get(st->existing, st->ex_keys[k], v, NULL) > 0)
            return SCHED_INTERPOD_EXISTING_ANTI;
    }
    return -1;
}

/* ---- the plugin ---- */

static sched_status interpod_pre_filter(void *state, const sched_cycle *c, uint32_t *detail,
                                        tm_err *err) {
    bool active = false;
    if (sched_interpod_prefilter(state, c->snap, c->pod, &active, err) != 0)
        return SCHED_STATUS_ERROR;
    return active ? SCHED_STATUS_OK : SCHED_STATUS_SKIP;
}

static int interpod_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    return sched_interpod_filter(state, c->pod, n);
}

static void interpod_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                            char *buf, size_t size) {
    snprintf(buf, size, "%s",
             detail == SCHED_INTERPOD_AFFINITY ? "node(s) didn't match pod affinity rules"
             : detail == SCHED_INTERPOD_ANTI_AFFINITY
                 ? "node(s) didn't match pod anti-affinity rules"
                 : "node(s) didn't satisfy existing pods "
                   "anti-affinity rules");
}

/* ---- Score: preferred pod (anti-)affinity, as kube-scheduler's scoring.go ----
 * For each placed pod on node m and each term with weight w: the incoming pod's preferred
 * affinity terms matching the placed pod (+w), its anti-affinity terms (-w), and the placed
 * pod's preferred affinity (+w) / anti-affinity (-w) terms matching the incoming pod; each
 * counts for every node sharing m's value of the term's topology key. Normalised min..max. */
static bool same_domain(const sched_node *a, const sched_node *b, const char *key) {
    const char *va = sched_node_label(a, key), *vb = sched_node_label(b, key);
    return va && vb && strcmp(va, vb) == 0;
}

/* Called for each matching preferred term: its key, the signed weight, the placed pod's node.
 * Non-zero stops the walk (out of memory). */
typedef int (*pref_visit)(void *ctx, const sched_pod_term *t, int64_t w, const sched_node *mn);

/* Each of n terms that matches (ns, labels or jlabels) visited with sign * its weight. */
static int visit_terms(const sched_pod_term *t, const int32_t *w, size_t n, const char *ns,
                       const sched_labels *labels, const json_t *jlabels, const sched_node *mn,
                       int sign, pref_visit visit, void *ctx) {
    for (size_t k = 0; k < n; k++) {
        bool m = labels || !jlabels ? sched_pod_term_matches(&t[k], ns, labels, false)
                                    : sched_pod_term_matches_json(&t[k], ns, jlabels, false);
        if (m && visit(ctx, &t[k], sign * (int64_t)w[k], mn) != 0)
            return -1;
    }
    return 0;
}

/* Every (term, weight, node) the score counts, as the comment above says: the incoming pod's
 * terms matching each placed pod, and each placed pod's terms matching the incoming pod. */
static int walk_prefs(const sched_cycle *c, pref_visit visit, void *ctx) {
    const sched_pod *p = c->pod;
    const sched_pod_prefs *own = p->pod_prefs;
    /* without preferred terms of its own, only placed pods with preferred terms count */
    sched_podset set = own ? SCHED_PODSET_META : SCHED_PODSET_PREF;
    size_t np = sched_snapshot_podset_count(c->snap, set);
    for (size_t i = 0; i < np; i++) {
        const char *uid;
        int node;
        const sched_pod_meta *m = sched_snapshot_podset_pod(c->snap, set, i, &uid, &node);
        if (node < 0 || strcmp(uid, p->uid) == 0 || (!own && !m->pref))
            continue;
        const sched_node *mn = sched_snapshot_node(c->snap, (size_t)node);
        if (own && (visit_terms(own->aff, own->aff_weight, own->n_aff, m->ns, m->labels, NULL, mn,
                                1, visit, ctx) ||
                    visit_terms(own->anti, own->anti_weight, own->n_anti, m->ns, m->labels, NULL,
                                mn, -1, visit, ctx)))
            return -1;
        if (m->pref && (visit_terms(m->pref->aff, m->pref->aff_weight, m->pref->n_aff, p->ns, NULL,
                                    p->pod_labels, mn, 1, visit, ctx) ||
                        visit_terms(m->pref->anti, m->pref->anti_weight, m->pref->n_anti, p->ns,
                                    NULL, p->pod_labels, mn, -1, visit, ctx)))
            return -1;
    }
    return 0;
}

/* walk_prefs' visitor for PreScore: w on mn's topology pair of t's key (nothing when mn lacks
 * the key). 0, or -1 when out of memory. */
static int pref_add(void *ctx, const sched_pod_term *t, int64_t w, const sched_node *mn) {
    sched_interpod_state *st = ctx;
    const char *v = sched_node_label(mn, t->topology_key);
    if (!v)
        return 0;
    size_t k = 0;
    while (k < st->n_pref_keys && strcmp(st->pref_keys[k], t->topology_key) != 0)
        k++;
    if (k == st->n_pref_keys) {
        if (st->n_pref_keys == st->cap_pref_keys) {
            size_t ncap = st->cap_pref_keys ? st->cap_pref_keys * 2 : 4;
            const char **nk = realloc(st->pref_keys, ncap * sizeof *nk);
            if (!nk)
                return -1;
            st->pref_keys = nk;
            st->cap_pref_keys = ncap;
        }
        st->pref_keys[st->n_pref_keys++] = t->topology_key;
    }
    return sched_tpmap_add(st->pref, t->topology_key, v, w);
}

/* The placed pods' contributions per topology pair, once for the cycle: what each node's score
 * then sums over its own pairs (interpod_score). Walking the pods once instead of once per node
 * turns a cycle from nodes x pods term checks into pods + nodes x keys lookups (at 5,000 nodes
 * and 5,000 placed pods with preferred terms: 25 million checks a pod before). */
static int pref_build(sched_interpod_state *st, const sched_cycle *c) {
    sched_tpmap_clear(st->pref);
    st->n_pref_keys = 0;
    return walk_prefs(c, pref_add, st);
}

static bool interpod_pre_score(void *state, const sched_cycle *c) {
    sched_interpod_state *st = state;
    if (st)
        st->pref_ready = false; /* nothing of an earlier cycle is read again */
    if (!c->pod->pod_prefs && sched_snapshot_podset_count(c->snap, SCHED_PODSET_PREF) == 0)
        return false;
    if (st)
        st->pref_ready = pref_build(st, c) == 0;
    return true;
}

/* walk_prefs' visitor without the PreScore sums (no state, or out of memory building them):
 * w counts for node n when it shares mn's value of t's key. */
typedef struct node_sum {
    const sched_node *n;
    int64_t sum;
} node_sum;

static int node_add(void *ctx, const sched_pod_term *t, int64_t w, const sched_node *mn) {
    node_sum *ns = ctx;
    if (same_domain(ns->n, mn, t->topology_key))
        ns->sum += w;
    return 0;
}

static int64_t interpod_score(void *state, const sched_cycle *c, const sched_node *n) {
    const sched_interpod_state *st = state;
    if (st && st->pref_ready) { /* the node's pairs in the cycle's sums (pref_build) */
        int64_t sum = 0;
        for (size_t k = 0; k < st->n_pref_keys; k++) {
            const char *v = sched_node_label(n, st->pref_keys[k]);
            if (v)
                sum += sched_tpmap_get(st->pref, st->pref_keys[k], v, NULL);
        }
        return sum;
    }
    node_sum ns = {.n = n};
    walk_prefs(c, node_add, &ns);
    return ns.sum;
}

static void interpod_free(void *state) {
    sched_interpod_state_free(state);
}

int sched_filter_interpod_affinity(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "InterPodAffinity",
                          .pre_filter = interpod_pre_filter,
                          .filter = interpod_filter,
                          .node_reason = interpod_reason,
                          .free_state = interpod_free,
                          .filter_id = SCHED_FILTER_INTERPOD,
                          .pref_pre_score = interpod_pre_score,
                          .pref_score = interpod_score,
                          .pref_minmax = true,
                          .pref_weight = 2};
    return with_state && !(out->state = sched_interpod_state_new()) ? -1 : 0;
}
