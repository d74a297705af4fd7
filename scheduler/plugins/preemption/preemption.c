/* preemption.c: DefaultPreemption (preemption.h): eligibility, the dry run over the potential
 * nodes, victim selection on one node with all filters re-run, and the choice of the node.
 * The snapshot is changed only between sched_framework_whatif_begin and _end, and every pod
 * taken out of it is put back before the attempt returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/preemption/preemption.h"

/* kube adds MaxInt32 + 1 to each victim priority before summing, so that the sum of a
 * negative-priority victim is still positive: more victims never cost less. */
#define PRIO_OFFSET ((int64_t)INT32_MAX + 1)

void sched_preemption_result_init(sched_preemption_result *r) {
    memset(r, 0, sizeof *r);
    r->node = -1;
    r->status = SCHED_STATUS_UNSCHEDULABLE;
}

void sched_victim_free(sched_victim *v) {
    free(v->uid);
    free(v->ns);
    free(v->name);
    free(v->node);
}

void sched_preemption_result_clear(sched_preemption_result *r) {
    for (size_t i = 0; i < r->n_all_victims; i++)
        sched_victim_free(&r->all_victims[i]);
    free(r->all_victims);
    free(r->victims); /* shallow: its strings are all_victims' */
    free(r->nodes);
    sched_preemption_result_init(r);
}

/* Start time as kube-scheduler's GetPodStartTime sees it: not started = now. */
static int64_t start_of(const sched_pod_meta *m, int64_t now_ms) {
    return m->start_ms > 0 ? m->start_ms : now_ms;
}

static int importance(const sched_pod_meta *a, const sched_pod_meta *b, int64_t now_ms) {
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    int64_t sa = start_of(a, now_ms), sb = start_of(b, now_ms);
    return sa < sb ? -1 : sa > sb ? 1 : 0;
}

int sched_preemption_importance_cmp(const sched_pod_meta *a, const sched_pod_meta *b) {
    return importance(a, b, INT64_MAX);
}

/* ---- growing the result ---- */

static int push_node(sched_preemption_result *r, size_t *cap, const sched_preempt_candidate *c) {
    if (r->n_nodes == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        sched_preempt_candidate *nn = realloc(r->nodes, nc * sizeof *nn);
        if (!nn)
            return -1;
        r->nodes = nn;
        *cap = nc;
    }
    r->nodes[r->n_nodes++] = *c;
    return 0;
}

/* Whether a placed pod is a potential victim of a preemptor of priority prio: strictly lower
 * priority (kube's isPreemptionAllowed; never an equal or higher one). */
static bool may_evict(const sched_pod_meta *m, int32_t prio) {
    return m && m->priority < prio;
}

/* ---- gangs: a running gang is a victim as a whole (sched_preemption_set_units) ---- */

/* A placed pod of some unit (a gang), as the snapshot holds it when the attempt starts. */
typedef struct member {
    const char *uid;            /* the snapshot's (valid while hidden: the record stays) */
    const sched_pod_meta *meta; /* the snapshot's record */
    int node;                   /* its node index */
    const char *key;            /* its unit (unit_of) */
} member;

/* Every placed pod that belongs to a unit, by key then uid, for one attempt: built when the
 * first pod of a unit is looked at, so that a cluster without gangs pays nothing. */
typedef struct units {
    sched_preempt_unit_fn unit_of;
    void *ctx;
    member *m;
    size_t n;
    bool built;
} units;

static int member_cmp(const void *a, const void *b) {
    const member *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->uid, y->uid);
}

/* Fills u from every placed pod with metadata on s, once; only while nothing is hidden (the
 * pod sets change as pods are hidden). u->unit_of NULL: nothing. 0, or -1 on OOM. */
static int units_build(units *u, const sched_snapshot *s) {
    if (u->built || !u->unit_of)
        return 0;
    u->built = true;
    u->m = NULL;
    u->n = 0;
    size_t cnt = sched_snapshot_podset_count(s, SCHED_PODSET_META);
    if (!cnt)
        return 0;
    if (!(u->m = malloc(cnt * sizeof *u->m)))
        return -1;
    for (size_t i = 0; i < cnt; i++) {
        const char *uid = NULL;
        int node = -1;
        const sched_pod_meta *m = sched_snapshot_podset_pod(s, SCHED_PODSET_META, i, &uid, &node);
        const char *key = m && uid && node >= 0 ? u->unit_of(u->ctx, uid) : NULL;
        if (key)
            u->m[u->n++] = (member){.uid = uid, .meta = m, .node = node, .key = key};
    }
    qsort(u->m, u->n, sizeof *u->m, member_cmp);
    return 0;
}

static void units_free(units *u) {
    free(u->m);
    u->m = NULL;
    u->n = 0;
    u->built = false;
}

/* The members of unit key: [*first, *first + return value). */
static size_t units_range(const units *u, const char *key, size_t *first) {
    size_t lo = 0, hi = u->n;
    while (lo < hi) { /* the first member whose key is not below key */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(u->m[mid].key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    size_t e = lo;
    while (e < u->n && !strcmp(u->m[e].key, key))
        e++;
    return e - lo;
}

/* The unit of a placed pod, NULL when none (or no unit_of). */
static const char *unit_key(const units *u, const char *uid) {
    return u && u->unit_of && uid ? u->unit_of(u->ctx, uid) : NULL;
}

/* Whether unit key has a placed member (terminating ones too: still there) of priority >= prio:
 * then none of its members is a victim, as none of a higher priority pod is. */
static bool unit_protected(const units *u, const char *key, int32_t prio) {
    size_t first, n = units_range(u, key, &first);
    for (size_t i = 0; i < n; i++)
        if (u->m[first + i].meta->priority >= prio)
            return true;
    return false;
}

/* ---- one node: SelectVictimsOnNode ---- */

typedef struct pvictim {
    const char *uid;            /* the snapshot's (valid while hidden: the record stays) */
    const sched_pod_meta *meta; /* the snapshot's record (kept while hidden) */
    bool out;                   /* currently hidden (sched_snapshot_hide_pod) */
    bool pdb;                   /* evicting it violates a budget */
    bool term;                  /* already terminating: hidden, never reprieved nor listed */
    bool done;                  /* reprieved or kept out as part of its unit already */
    const char *key;            /* its unit (a gang), NULL: a unit of its own */
    int64_t now_ms;
} pvictim;

static int pv_cmp(const void *a, const void *b) {
    const pvictim *x = a, *y = b;
    int c = importance(x->meta, y->meta, x->now_ms);
    return c ? c : strcmp(x->uid, y->uid); /* deterministic */
}

/* Shows pv again in the snapshot (it was hidden for the what-if). */
static void put_back(sched_snapshot *s, pvictim *pv) {
    if (pv->out)
        sched_snapshot_hide_pod(s, pv->uid, false);
    pv->out = false;
}

/* Hides pv: the node no longer counts it, the inter-pod filters no longer see it. */
static int take_out(sched_snapshot *s, pvictim *pv) {
    if (!pv->out && sched_snapshot_hide_pod(s, pv->uid, true) != 0)
        return -1;
    pv->out = true;
    return 0;
}

/* Whether p fits on node now (all filters; the PreFilter state recomputed when a cluster-wide
 * filter runs for p). -1 on error. */
static int fits(sched_framework *fw, size_t node, bool local, tm_err *err) {
    if (!local && sched_framework_whatif_prefilter(fw, err) != 0)
        return -1;
    return sched_framework_whatif_filter(fw, node, NULL) == SCHED_FILTER_OK;
}

/* kube's filterPodsWithPDBViolation over the victims in importance order: each budget's
 * allowance counted down, a victim that takes one below zero violates it. */
static void mark_pdb(const sched_snapshot *s, pvictim *pv, size_t n) {
    const sched_pdbs *t = sched_snapshot_pdbs(s);
    size_t nb = sched_pdbs_count(t);
    if (!nb)
        return;
    int64_t *left = malloc(nb * sizeof *left);
    if (!left)
        return; /* out of memory: nobody counts as violating (best effort, as the budgets) */
    for (size_t b = 0; b < nb; b++)
        left[b] = sched_pdbs_at(t, b)->disruptions_allowed;
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < nb && !pv[i].key; b++) /* gang members: gang_preempt.h */
            if (sched_pdb_covers(sched_pdbs_at(t, b), pv[i].meta) && --left[b] < 0)
                pv[i].pdb = true;
    free(left);
}

static int add_victim(sched_preemption_result *r, size_t *cap, const char *uid,
                      const sched_pod_meta *m, bool pdb, const char *node, const char *why) {
    if (r->n_all_victims == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        sched_victim *nv = realloc(r->all_victims, nc * sizeof *nv);
        if (!nv)
            return -1;
        r->all_victims = nv;
        *cap = nc;
    }
    sched_victim *v = &r->all_victims[r->n_all_victims];
    memset(v, 0, sizeof *v);
    v->uid = strdup(uid);
    v->ns = strdup(m->ns);
    v->name = strdup(m->name ? m->name : "");
    v->node = strdup(node);
    v->priority = m->priority;
    v->generation = m->generation;
    v->start_ms = m->start_ms;
    v->pdb_violation = pdb;
    snprintf(v->why, sizeof v->why, "%s", why);
    if (!v->uid || !v->ns || !v->name || !v->node) {
        sched_victim_free(v);
        return -1;
    }
    r->n_all_victims++;
    return 0;
}

/* A victim chosen on its node (after the reprieve). */
static int add_chosen(sched_preemption_result *r, size_t *cap, const pvictim *pv, const char *node,
                      const sched_pod *p) {
    char why[160];
    snprintf(why, sizeof why, "priority %d < %d of preemptor %s/%s%s", pv->meta->priority,
             p->priority, p->ns, p->name, pv->pdb ? "; violates a PodDisruptionBudget" : "");
    return add_victim(r, cap, pv->uid, pv->meta, pv->pdb, node, why);
}

/* The other placed members of pv's unit, on any node, evicted whole with it; terminating ones
 * are leaving anyway and not listed again. 0, or -1 on OOM. */
static int add_unit(sched_preemption_result *r, size_t *cap, const sched_snapshot *s,
                    const units *u, const pvictim *pv) {
    char why[160];
    snprintf(why, sizeof why, "member of gang %s, evicted whole with pod %s/%s", pv->key,
             pv->meta->ns, pv->meta->name ? pv->meta->name : "");
    size_t first, n = units_range(u, pv->key, &first);
    for (size_t i = 0; i < n; i++) {
        const member *m = &u->m[first + i];
        const sched_node *nd = sched_snapshot_node(s, (size_t)m->node);
        if (!strcmp(m->uid, pv->uid) || m->meta->terminating || !nd)
            continue;
        if (add_victim(r, cap, m->uid, m->meta, false, nd->name, why) != 0)
            return -1;
    }
    return 0;
}

/* The capacities of out's growing arrays: a result grows only through this file, which keeps
 * them in these fields' neighbours. */
typedef struct grow {
    size_t nodes, victims;
} grow;

/* Shows (out false) or hides again (out true) every member of pv[i]'s unit on this node that
 * is not reprieved yet, pv[i] included; marks them done. A pod of no unit: itself. */
static int set_unit_out(sched_snapshot *s, pvictim *pv, size_t n, size_t i, bool out) {
    for (size_t j = i; j < n; j++) {
        if (j != i && (!pv[i].key || !pv[j].key || strcmp(pv[i].key, pv[j].key) || pv[j].done))
            continue;
        pv[j].done = true;
        if (!out)
            put_back(s, &pv[j]);
        else if (take_out(s, &pv[j]) != 0)
            return -1;
    }
    return 0;
}

/* The candidate's numbers for step 4 over its victims (chosen ones and the gangs they drag
 * along alike: a node whose victims take a gang with them costs that gang's members). */
static void cand_stats(sched_preempt_candidate *c, const sched_victim *v, int64_t now_ms) {
    c->highest = INT32_MIN;
    c->highest_start = INT64_MAX;
    for (size_t i = 0; i < c->n_victims; i++) {
        c->n_pdb_violations += v[i].pdb_violation;
        c->sum += v[i].priority + PRIO_OFFSET;
        if (v[i].priority > c->highest)
            c->highest = v[i].priority;
    }
    for (size_t i = 0; i < c->n_victims; i++)
        if (v[i].priority == c->highest) {
            int64_t st = v[i].start_ms > 0 ? v[i].start_ms : now_ms;
            c->highest_start = st < c->highest_start ? st : c->highest_start;
        }
}

static int select_on_node(sched_framework *fw, sched_snapshot *s, const sched_pod *p, size_t node,
                          int64_t now_ms, units *u, sched_preemption_result *out, grow *g,
                          tm_err *err) {
    const sched_node *n = sched_snapshot_node(s, node);
    if (!n)
        return tm_err_set(err, "preemption: no node with index %zu", node);
    char *node_name = strdup(n->name);
    if (!node_name)
        return tm_err_set(err, "out of memory");
    sched_preempt_candidate cand = {.node = node, .node_name = n->name};

    /* every pod of lower priority on the node (kube's isPreemptionAllowed), from the node's own
     * pod list (the cost is this node's pods); pods recorded without metadata have no known
     * priority or name and are left alone. The uids stay valid while hidden: hiding keeps the
     * record. */
    size_t cnt = sched_snapshot_node_pod_count(s, node), npv = 0;
    pvictim *pv = cnt ? calloc(cnt, sizeof *pv) : NULL;
    int rc = 0;
    if (cnt && !pv) {
        rc = tm_err_set(err, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < cnt; i++) {
        const char *uid;
        const sched_pod_meta *m = sched_snapshot_node_pod(s, node, i, &uid);
        if (!may_evict(m, p->priority))
            continue;
        /* a gang with a member of priority >= p's is no victim at all (gang_preempt.h) */
        const char *key = unit_key(u, uid);
        if (key && units_build(u, s) != 0) { /* nothing hidden yet on this node */
            rc = tm_err_set(err, "out of memory");
            goto done;
        }
        if (key && unit_protected(u, key, p->priority))
            continue;
        pv[npv++] =
            (pvictim){.uid = uid, .meta = m, .term = m->terminating, .key = key, .now_ms = now_ms};
    }
    if (!npv) {
        cand.outcome = SCHED_PREEMPT_NODE_NO_VICTIMS;
        goto done;
    }
    for (size_t i = 0; i < npv; i++)
        if (take_out(s, &pv[i]) != 0) {
            rc = tm_err_set(err, "preemption: pod %s vanished from the snapshot", pv[i].uid);
            goto done;
        }
    /* the terminating ones first in the array, then the others by importance (highest first) */
    size_t nterm = 0;
    for (size_t i = 0; i < npv; i++)
        if (pv[i].term) {
            pvictim t = pv[nterm];
            pv[nterm++] = pv[i];
            pv[i] = t;
        }
    qsort(pv + nterm, npv - nterm, sizeof *pv, pv_cmp);

    bool local = sched_framework_whatif_node_local(fw);
    int f = fits(fw, node, local, err);
    if (f < 0) {
        rc = -1;
        goto done;
    }
    if (!f) {
        cand.outcome = SCHED_PREEMPT_NODE_NO_FIT;
        goto done;
    }
    mark_pdb(s, pv + nterm, npv - nterm);
    /* reprieve: the PDB-violating ones first, then the others, each in importance order; a
     * gang's members on this node are put back together, at its most important one's turn (one
     * of them evicted evicts them all: reprieving one alone saves nothing) */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = nterm; i < npv; i++) {
            if (pv[i].pdb != (pass == 0) || pv[i].done)
                continue;
            set_unit_out(s, pv, npv, i, false);
            if ((f = fits(fw, node, local, err)) < 0) {
                rc = -1;
                goto done;
            }
            if (!f && set_unit_out(s, pv, npv, i, true) != 0) {
                rc = tm_err_set(err, "preemption: pod %s vanished from the snapshot", pv[i].uid);
                goto done;
            }
        }
    /* the victims, most important first (pv is in that order within the non-terminating), a
     * gang member followed by the rest of its gang, on every node, the gang listed once */
    cand.outcome = SCHED_PREEMPT_NODE_CANDIDATE;
    cand.first_victim = out->n_all_victims;
    for (size_t i = nterm; i < npv; i++) {
        if (!pv[i].out)
            continue;
        bool listed = false;
        for (size_t j = nterm; j < i && pv[i].key && !listed; j++)
            listed = pv[j].out && pv[j].key && !strcmp(pv[j].key, pv[i].key);
        if (listed)
            continue;
        if (add_chosen(out, &g->victims, &pv[i], node_name, p) != 0 ||
            (pv[i].key && add_unit(out, &g->victims, s, u, &pv[i]) != 0)) {
            rc = tm_err_set(err, "out of memory");
            goto done;
        }
    }
    cand.n_victims = out->n_all_victims - cand.first_victim;
    cand_stats(&cand, out->all_victims + cand.first_victim, now_ms);
done:
    for (size_t i = 0; i < npv; i++) /* the snapshot exactly as it was */
        put_back(s, &pv[i]);
    free(pv);
    free(node_name);
    if (rc == 0 && push_node(out, &g->nodes, &cand) != 0)
        rc = tm_err_set(err, "out of memory");
    return rc == 0 ? (int)cand.outcome : -1;
}

/* The plugin's state: the last attempt, and the units its victims come in. */
typedef struct pstate {
    sched_preemption_result last;
    sched_preempt_unit_fn unit_of;
    void *ctx;
} pstate;

/* fw's units (sched_preemption_set_units), none when fw has no preemption plugin. */
static units units_of(const sched_framework *fw) {
    const pstate *st = sched_framework_plugin_state(fw, SCHED_PREEMPTION_PLUGIN);
    return (units){.unit_of = st ? st->unit_of : NULL, .ctx = st ? st->ctx : NULL};
}

int sched_preemption_select_victims(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                                    size_t node, sched_preemption_result *out, tm_err *err) {
    /* the capacities are not kept in the result: grow from the exact sizes */
    grow g = {out->n_nodes, out->n_all_victims};
    if (node >= sched_snapshot_node_count(s))
        return tm_err_set(err, "preemption: no node with index %zu", node);
    units u = units_of(fw);
    int o =
        select_on_node(fw, s, p, node, sched_framework_last_cycle(fw)->now_ms, &u, out, &g, err);
    units_free(&u);
    return o;
}

/* ---- choosing the node: pickOneNodeForPreemption ---- */

/* The first level at which candidate a is worse (>0) or better (<0) than b; 0 when equal at
 * every level but the name. *level gets that level. */
static int cand_cmp(const sched_preempt_candidate *a, const sched_preempt_candidate *b,
                    const uint32_t *rank, sched_preempt_level *level) {
#define LEVEL(l, worse, better)                                                                    \
    do {                                                                                           \
        *level = (l);                                                                              \
        if (worse)                                                                                 \
            return 1;                                                                              \
        if (better)                                                                                \
            return -1;                                                                             \
    } while (0)
    LEVEL(SCHED_PREEMPT_BY_PDB, a->n_pdb_violations > b->n_pdb_violations,
          a->n_pdb_violations < b->n_pdb_violations);
    LEVEL(SCHED_PREEMPT_BY_HIGHEST, a->highest > b->highest, a->highest < b->highest);
    LEVEL(SCHED_PREEMPT_BY_SUM, a->sum > b->sum, a->sum < b->sum);
    LEVEL(SCHED_PREEMPT_BY_COUNT, a->n_victims > b->n_victims, a->n_victims < b->n_victims);
    LEVEL(SCHED_PREEMPT_BY_START,
          a->highest_start<b->highest_start, a->highest_start> b->highest_start);
    LEVEL(SCHED_PREEMPT_BY_NAME, rank[a->node] > rank[b->node], rank[a->node] < rank[b->node]);
#undef LEVEL
    return 0;
}

/* ---- the whole attempt ---- */

/* Whether node index ni holds a terminating pod p could evict: its victims are still going. */
static bool victims_going(const sched_snapshot *s, size_t ni, const sched_pod *p) {
    for (size_t i = 0; i < sched_snapshot_node_pod_count(s, ni); i++) {
        const sched_pod_meta *m = sched_snapshot_node_pod(s, ni, i, NULL);
        if (may_evict(m, p->priority) && m->terminating)
            return true;
    }
    return false;
}

/* kube's PodEligibleToPreemptOthers. NULL when eligible, else why not ("" with err set on a
 * failure). */
static const char *ineligible(sched_framework *fw, const sched_snapshot *s, const sched_pod *p,
                              tm_err *err) {
    if (p->preempt_never)
        return "not eligible due to preemptionPolicy=Never.";
    const char *nom = sched_nominated_node(sched_snapshot_nominated(s), p->uid);
    int ni = nom ? sched_snapshot_node_index(s, nom) : -1;
    if (ni < 0)
        return NULL;
    if (sched_framework_status_with_nominated(fw, (size_t)ni, err) != 0)
        return "";
    uint32_t d;
    sched_filter_id id = sched_framework_node_status(fw, (size_t)ni, &d, NULL);
    if (id != SCHED_FILTER_OK && (id >= SCHED_FILTER_PLUGIN || !sched_filter_resolvable(id, d)))
        return NULL; /* the nominated node cannot take it any more: it may preempt again */
    if (victims_going(s, (size_t)ni, p))
        return "not eligible due to a terminating pod on the nominated node.";
    return NULL;
}

bool sched_preemption_awaits_victims(const sched_snapshot *s, const sched_pod *p,
                                     const char *node) {
    int ni = node ? sched_snapshot_node_index(s, node) : -1;
    const sched_node *n = ni >= 0 ? sched_snapshot_node(s, (size_t)ni) : NULL;
    if (!n || !n->ready || n->unschedulable || !sched_pod_tolerates_node_taints(p, n))
        return false;
    return victims_going(s, (size_t)ni, p);
}

/* Whether node i's rejection in the failed cycle is one eviction can resolve. */
static bool resolvable(const sched_framework *fw, size_t i) {
    uint32_t d;
    sched_filter_id id = sched_framework_node_status(fw, i, &d, NULL);
    return id != SCHED_FILTER_OK && id < SCHED_FILTER_PLUGIN && sched_filter_resolvable(id, d);
}

int sched_preemption_run(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int64_t now_ms,
                         sched_preemption_result *out, tm_err *err) {
    sched_preemption_result_clear(out);
    const char *why = ineligible(fw, s, p, err);
    if (why && !*why)
        return -1;
    if (why) {
        snprintf(out->msg, sizeof out->msg, "preemption: %s", why);
        return 0;
    }
    sched_snapshot_refresh(s);
    size_t n = sched_snapshot_node_count(s);
    const uint32_t *by_name = sched_snapshot_by_name(s);
    /* with nominations, the dry run's lending comes first: the failed nodes' status then counts
     * the pods nominated to them, as kube's (sched_framework_whatif_nominated_status) */
    bool began = sched_nominated_count(sched_snapshot_nominated(s)) > 0;
    if (began) {
        if (sched_framework_whatif_begin(fw, s, p, now_ms, err) != 0)
            return -1;
        sched_framework_whatif_nominated_status(fw);
    }
    size_t potential = 0;
    for (size_t i = 0; i < n; i++)
        potential += resolvable(fw, i);
    /* the bound of the dry run (kube's calculateNumCandidates with DefaultPreemptionArgs): at
     * least max(10% of the potential nodes, 100) candidates, at most all of them; the walk
     * stops once it has that many and at least one without PDB violations, so that a large
     * cluster costs a fraction of its nodes per attempt */
    size_t want = potential * SCHED_PREEMPTION_MIN_CANDIDATE_PERCENT / 100;
    if (want < SCHED_PREEMPTION_MIN_CANDIDATE_ABSOLUTE)
        want = SCHED_PREEMPTION_MIN_CANDIDATE_ABSOLUTE;
    if (want > potential)
        want = potential;
    grow g = {0, 0};
    size_t n_cand = 0, n_clean = 0, n_unres = 0, n_novict = 0, n_nofit = 0;
    units u = units_of(fw); /* built at the first gang member looked at */
    if (potential && !began) {
        if (sched_framework_whatif_begin(fw, s, p, now_ms, err) != 0)
            return -1;
        began = true;
    }
    int rc = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = by_name[k];
        sched_preempt_candidate skip = {.node = i, .node_name = sched_snapshot_node(s, i)->name};
        if (!resolvable(fw, i)) {
            n_unres++;
            skip.outcome = SCHED_PREEMPT_NODE_UNRESOLVABLE;
        } else if (n_cand >= want && n_clean > 0) {
            skip.outcome = SCHED_PREEMPT_NODE_NOT_TRIED;
        } else {
            int o = select_on_node(fw, s, p, i, now_ms, &u, out, &g, err);
            if (o < 0) {
                rc = -1;
                break;
            }
            n_novict += o == SCHED_PREEMPT_NODE_NO_VICTIMS;
            n_nofit += o == SCHED_PREEMPT_NODE_NO_FIT;
            if (o == SCHED_PREEMPT_NODE_CANDIDATE) {
                n_cand++;
                n_clean += out->nodes[out->n_nodes - 1].n_pdb_violations == 0;
            }
            continue;
        }
        if (push_node(out, &g.nodes, &skip) != 0) {
            rc = tm_err_set(err, "out of memory");
            break;
        }
    }
    if (began)
        sched_framework_whatif_end(fw);
    units_free(&u);
    if (rc != 0)
        return -1;
    if (!n_cand) {
        snprintf(out->msg, sizeof out->msg,
                 "preemption: 0/%zu nodes are available: %zu No preemption victims found for "
                 "incoming pod, %zu Preemption is not helpful for scheduling, %zu still too "
                 "small without lower-priority pods.",
                 n, n_novict, n_unres, n_nofit);
        return 0;
    }
    sched_node_cols cols;
    sched_snapshot_node_cols(s, &cols);
    sched_preempt_candidate *best = NULL;
    sched_preempt_level lv;
    for (size_t k = 0; k < out->n_nodes; k++) {
        sched_preempt_candidate *c = &out->nodes[k];
        if (c->outcome == SCHED_PREEMPT_NODE_CANDIDATE &&
            (!best || cand_cmp(c, best, cols.name_rank, &lv) < 0))
            best = c;
    }
    for (size_t k = 0; k < out->n_nodes; k++) {
        sched_preempt_candidate *c = &out->nodes[k];
        if (c->outcome == SCHED_PREEMPT_NODE_CANDIDATE && c != best) {
            cand_cmp(c, best, cols.name_rank, &lv);
            c->lost_at = lv;
        }
    }
    if (!best) /* n_cand > 0 says there is one */
        return tm_err_set(err, "preemption: candidates counted but none recorded");
    best->outcome = SCHED_PREEMPT_NODE_CHOSEN;
    out->status = SCHED_STATUS_OK;
    out->node = (int)best->node;
    snprintf(out->node_name, sizeof out->node_name, "%s", best->node_name);
    if (best->n_victims) {
        out->victims = malloc(best->n_victims * sizeof *out->victims);
        if (!out->victims)
            return tm_err_set(err, "out of memory");
        memcpy(out->victims, out->all_victims + best->first_victim,
               best->n_victims * sizeof *out->victims);
    }
    out->n_victims = best->n_victims;
    return 0;
}

/* ---- the plugin ---- */

static sched_status post_filter(void *state, const sched_cycle *c, int *nominated, tm_err *err) {
    pstate *st = state;
    /* copy what the cycle says: the what-if replaces fw's cycle (c) while it runs */
    sched_framework *fw = c->fw;
    sched_snapshot *s = c->snap;
    const sched_pod *p = c->pod;
    if (sched_preemption_run(fw, s, p, c->now_ms, &st->last, err) != 0)
        return SCHED_STATUS_ERROR;
    *nominated = st->last.node;
    return st->last.status;
}

static void free_state(void *state) {
    pstate *st = state;
    if (st)
        sched_preemption_result_clear(&st->last);
    free(st);
}

int sched_preemption_plugin(sched_plugin *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    pstate *st = calloc(1, sizeof *st);
    if (!st)
        return tm_err_set(err, "out of memory creating plugin %s", SCHED_PREEMPTION_PLUGIN);
    sched_preemption_result_init(&st->last);
    out->name = SCHED_PREEMPTION_PLUGIN;
    out->state = st;
    out->post_filter = post_filter;
    out->free_state = free_state;
    return 0;
}

int sched_preemption_plugin_add(sched_framework *fw, tm_err *err) {
    sched_plugin pl;
    if (sched_preemption_plugin(&pl, err) != 0)
        return -1;
    return sched_framework_add_plugin(fw, &pl, err);
}

int sched_preemption_set_units(sched_framework *fw, sched_preempt_unit_fn unit_of, void *ctx,
                               tm_err *err) {
    pstate *st = sched_framework_plugin_state(fw, SCHED_PREEMPTION_PLUGIN);
    if (!st)
        return tm_err_set(err, "preemption: the framework has no %s plugin to set units on",
                          SCHED_PREEMPTION_PLUGIN);
    st->unit_of = unit_of;
    st->ctx = unit_of ? ctx : NULL;
    return 0;
}

const sched_preemption_result *sched_preemption_last(const sched_framework *fw) {
    const pstate *st = sched_framework_plugin_state(fw, SCHED_PREEMPTION_PLUGIN);
    return st ? &st->last : NULL;
}
