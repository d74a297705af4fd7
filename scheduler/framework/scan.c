/* scan.c: the Filter pass of the scheduling cycle over the snapshot's node columns
 * (sched_node_cols) rather than over the nodes, because it is the hot path of the simulator
 * (every node for every task). A node whose flags say it is ready, schedulable and without
 * NoSchedule/NoExecute taints skips the first three filters, a pod without node selector or
 * affinity skips NodeAffinity, and the resource check compares only the slots the pod requests
 * against precomputed free amounts; the Filter plugins that need more (NodePorts,
 * VolumeBinding, PodTopologySpread, InterPodAffinity, the caller's) run through their hooks
 * when their PreFilter did not skip them, in their registered order around NodeResourcesFit;
 * any other node takes the full chain. Outcomes are exactly those of the Filter plugins' hooks
 * run in order on every node, the first rejection deciding. The cycle allocates nothing per
 * node: outcomes live in the framework's buffers. */
#include "scheduler/framework/framework_internal.h"

/* Per-cycle constants of the column scan: which node flags need the full filters, and the
 * resource slots the pod requests with the amounts. */
typedef struct scan_ctx {
    uint8_t slow;                /* node flags that send a node through the full filter chain */
    bool aff;                    /* the pod has a node selector or required node affinity */
    int nslots;                  /* resource slots the pod requests (pods always, so at least 1) */
    int slot[SCHED_RES_MAX + 1]; /* the detail bit of each (sched_fit_bit), not the slot */
    int64_t want[SCHED_RES_MAX + 1];
    const int64_t *free[SCHED_RES_MAX + 1];
} scan_ctx;

static void scan_prepare(scan_ctx *x, const sched_snapshot *s, const sched_pod *p,
                         const sched_node_cols *cols) {
    /* a node failing readiness, schedulability (untolerated) or carrying a NoSchedule/NoExecute
     * taint needs the full filters for its reason; every other node passes those three */
    bool tol_unsched = sched_match_tolerates_unschedulable(p->tolerations, p->n_tolerations);
    x->slow =
        SCHED_NODE_NOT_READY | SCHED_NODE_HARD_TAINT | (tol_unsched ? 0 : SCHED_NODE_UNSCHEDULABLE);
    x->aff = p->n_node_selector > 0 || p->has_affinity;
    x->nslots = 0;
    int nres = sched_snapshot_resource_count(s); /* as short_resources */
    for (int r = 0, k = 0; r < nres && r < SCHED_RES_MAX; r++) {
        int64_t want = r == SCHED_RES_PODS ? 1 : p->requests.v[r];
        if (want <= 0)
            continue; /* a slot the pod does not request can never be short */
        x->slot[x->nslots] = sched_fit_bit(r, k);
        k += r >= SCHED_RES_FIRST_EXT;
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

/* One hooked Filter plugin (index k) on node i: -1 passes, else the detail. */
static inline int hook_filter(const sched_framework *fw, size_t k, size_t i, const sched_node *n) {
    if (fw->reject_all[k])
        return (int)fw->reject_detail[k];
    const sched_plugin *pl = &fw->plugins[k];
    return pl->filter(pl->state, &fw->cyc, i, n);
}

/* Plugin k's Filter answer r (-1 passes, else the detail) as the observer gets it. */
static inline sched_outcome filter_outcome(const sched_framework *fw, size_t k, int r) {
    if (r < 0)
        return fw_outcome(SCHED_STATUS_OK);
    return (sched_outcome){.status = SCHED_STATUS_UNSCHEDULABLE,
                           .id = (sched_filter_id)fw->sid[k],
                           .detail = (uint32_t)r};
}

/* Every Filter plugin in order on node i (the reference path: nodes whose flags ask for the
 * full filters, a framework without all the node-local in-tree filters, or a sampled cycle):
 * the node-local in-tree ones through their hooks, which check with match.h what the column
 * scan checks from the columns; the others when their PreFilter did not skip them. timed (a
 * constant at each call site): each hook call reported to the observer, as kube-scheduler
 * times each Filter call; a PreFilter that rejected every node makes no call to time. */
static inline __attribute__((always_inline)) sched_filter_id
filter_chain_t(const sched_framework *fw, const sched_snapshot *s, size_t i, uint32_t *detail,
               const bool timed, int64_t *tp) {
    const sched_node *n = sched_snapshot_node(s, i);
    *detail = 0;
    int64_t t = timed ? *tp : 0;
    size_t pre = 0, post = 0; /* the hooked filters run this cycle, in the same order */
    for (size_t f = 0; f < fw->n_filt; f++) {
        size_t k = fw->filt[f];
        const sched_plugin *pl = &fw->plugins[k];
        int r = -1;
        bool hooked = fw_column_filter(pl);
        if (hooked) {
            r = pl->filter(pl->state, &fw->cyc, i, n);
        } else if (pre < fw->n_hook_pre && fw->hook_pre[pre] == k) {
            pre++;
            hooked = !fw->reject_all[k];
            r = hook_filter(fw, k, i, n);
        } else if (post < fw->n_hook_post && fw->hook_post[post] == k) {
            post++;
            hooked = !fw->reject_all[k];
            r = hook_filter(fw, k, i, n);
        }
        if (timed && hooked)
            fw_plugin_done(fw, k, SCHED_EP_FILTER, filter_outcome(fw, k, r), &t);
        if (r >= 0) {
            *detail = (uint32_t)r;
            if (timed)
                *tp = t;
            return (sched_filter_id)fw->sid[k];
        }
    }
    if (timed)
        *tp = t;
    return SCHED_FILTER_OK;
}

static sched_filter_id filter_chain(const sched_framework *fw, const sched_snapshot *s, size_t i,
                                    uint32_t *detail) {
    return filter_chain_t(fw, s, i, detail, false, NULL);
}

/* A sampled cycle's Filter timings, after the scan decided every node: the hooks run again,
 * each call timed, on at most FW_TIMED_FILTER_NODES nodes spread evenly over the node list
 * (their outcomes are the scan's: the hooks are pure). Timing every node would cost the cycle a
 * clock read per node and filter (~40 ns) where the column scan spends a few ns per node:
 * 10x the cycle at 500 nodes. kube-scheduler itself filters only until it has found enough
 * feasible nodes (percentageOfNodesToScore: about 500 of 5,000). One clock read per call, each
 * call's end the next one's start. */
#define FW_TIMED_FILTER_NODES 128
static __attribute__((noinline)) void filter_timed(const sched_framework *fw,
                                                   const sched_snapshot *s) {
    size_t n = sched_snapshot_node_count(s);
    size_t stride = (n + FW_TIMED_FILTER_NODES - 1) / FW_TIMED_FILTER_NODES;
    int64_t t = fw_now(fw);
    for (size_t i = 0; i < n; i += stride ? stride : 1) {
        uint32_t detail;
        filter_chain_t(fw, s, i, &detail, true, &t);
    }
}

sched_filter_id fw_filter_one(const sched_framework *fw, const sched_snapshot *s, size_t i,
                              uint32_t *detail) {
    if (!fw_timed(fw))
        return filter_chain(fw, s, i, detail);
    int64_t t = fw_now(fw);
    return filter_chain_t(fw, s, i, detail, true, &t);
}

/* filter_chain for node i, from the columns where they decide. */
static inline __attribute__((always_inline)) sched_filter_id
filter_cols(const sched_framework *fw, const sched_snapshot *s, const sched_pod *p,
            const sched_node_cols *cols, const scan_ctx *x, size_t i, bool aff, uint32_t *detail) {
    if (cols->flags[i] & x->slow)
        return filter_chain(fw, s, i, detail);
    *detail = 0;
    const sched_node *n = NULL;
    if (aff &&
        !sched_match_node_affinity(p->node_selector, p->n_node_selector, p->has_affinity,
                                   p->affinity, p->n_affinity, n = sched_snapshot_node(s, i)))
        return SCHED_FILTER_NODE_AFFINITY;
    int r;
    for (size_t h = 0; h < fw->n_hook_pre; h++) {
        size_t k = fw->hook_pre[h];
        if ((r = hook_filter(fw, k, i, n ? n : (n = sched_snapshot_node(s, i)))) >= 0) {
            *detail = (uint32_t)r;
            return (sched_filter_id)fw->sid[k];
        }
    }
    uint32_t d = short_cols(x, i);
    if (d) {
        *detail = d;
        return SCHED_FILTER_RESOURCES;
    }
    for (size_t h = 0; h < fw->n_hook_post; h++) {
        size_t k = fw->hook_post[h];
        if ((r = hook_filter(fw, k, i, n ? n : (n = sched_snapshot_node(s, i)))) >= 0) {
            *detail = (uint32_t)r;
            return (sched_filter_id)fw->sid[k];
        }
    }
    return SCHED_FILTER_OK;
}

/* Filters every node into fw->status/detail; returns the number of feasible nodes, whose
 * indices are in fw->feas. */
static size_t scan(sched_framework *fw, const sched_snapshot *s, const sched_pod *p,
                   const sched_node_cols *cols, const scan_ctx *x, bool aff) {
    size_t nf = 0, n = cols->n;
    for (size_t i = 0; i < n; i++) {
        sched_filter_id id = filter_cols(fw, s, p, cols, x, i, aff, &fw->detail[i]);
        fw->status[i] = (uint8_t)id;
        fw->feas[nf] = (uint32_t)i;
        nf += id == SCHED_FILTER_OK;
    }
    return nf;
}

static size_t fw_filter_scan(sched_framework *fw, const sched_snapshot *s, const sched_pod *p);

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
        if (!p->n_tolerations) { /* the flags say it all: see filter_chain */
            id = fj & SCHED_NODE_NOT_READY       ? SCHED_FILTER_NODE_READY
                 : fj & SCHED_NODE_UNSCHEDULABLE ? SCHED_FILTER_NODE_UNSCHEDULABLE
                                                 : SCHED_FILTER_TAINT;
            detail[j] = id == SCHED_FILTER_TAINT ? cols->hard_taint[j] : 0;
        } else {
            id = filter_chain(fw, s, j, &detail[j]);
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
        return scan(fw, s, p, cols, x, false);
    }
}

static __attribute__((noinline)) size_t scan_plain(sched_framework *fw, const sched_snapshot *s,
                                                   const sched_pod *p, const sched_node_cols *cols,
                                                   const scan_ctx *x) {
    /* a cluster where every node is ready, schedulable and untainted (the simulator's) */
    if (cols->n_flagged == 0)
        return scan_plain_f(fw, s, p, cols, x, false);
    return scan_plain_f(fw, s, p, cols, x, true);
}

size_t fw_filter_nodes(sched_framework *fw, const sched_snapshot *s, const sched_pod *p) {
    size_t nf = fw_filter_scan(fw, s, p);
    if (fw_timed(fw))
        filter_timed(fw, s);
    return nf;
}

static size_t fw_filter_scan(sched_framework *fw, const sched_snapshot *s, const sched_pod *p) {
    sched_node_cols cols;
    sched_snapshot_node_cols(s, &cols);
    /* no column shortcut; nor for a pod asking for resources kept sparsely (snapshot.h): they
     * have no column, NodeResourcesFit looks them up on each node */
    if ((fw->columns & FW_COLUMN_FILTERS) != FW_COLUMN_FILTERS || p->n_xreq) {
        size_t nf = 0;
        for (size_t i = 0; i < cols.n; i++) {
            sched_filter_id id = filter_chain(fw, s, i, &fw->detail[i]);
            fw->status[i] = (uint8_t)id;
            fw->feas[nf] = (uint32_t)i;
            nf += id == SCHED_FILTER_OK;
        }
        return nf;
    }
    scan_ctx x;
    scan_prepare(&x, s, p, &cols);
    return fw->n_hook_pre || fw->n_hook_post || x.aff ? scan(fw, s, p, &cols, &x, x.aff)
                                                      : scan_plain(fw, s, p, &cols, &x);
}
