/* node_resources_fit.c: the NodeResourcesFit filter: every resource the pod requests
 * must fit in the node's allocatable minus what is requested there; every pod takes one pod
 * slot whatever its requests say. The detail is a bit mask of the short resources
 * (sched_fit_bit), one reason each: "Too many pods", "Insufficient cpu", ... in kube-scheduler's
 * order. Resources past the snapshot's fixed slots are kept sparsely (snapshot.h) and checked
 * the same way, looked up on the node. */
#include <stdio.h>

#include "scheduler/plugins/filters.h"

/* The first of the pod's sparse requests (sched_pod.xreq) node n is short of, -1 when none. */
static int sparse_short(const sched_pod *p, const sched_node *n, uint32_t from) {
    for (uint32_t k = from; k < p->n_xreq; k++) {
        int j = sched_xres_index(n->xalloc, n->n_xalloc, p->xreq[k].id);
        if (p->xreq[k].v > (j < 0 ? 0 : n->xalloc[j].v - n->xused[j]))
            return (int)k;
    }
    return -1;
}

static int fit_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    uint32_t d = 0;
    if (c->pod->n_xreq && sparse_short(c->pod, n, 0) >= 0)
        d |= SCHED_FIT_SPARSE;
    int nres = sched_snapshot_resource_count(c->snap); /* slots beyond are never used */
    for (int r = 0, k = 0; r < nres; r++) {
        int64_t want = c->pod->requests.v[r];
        if (r == SCHED_RES_PODS)
            want = 1; /* every pod takes a slot, whatever its requests say */
        if (want <= 0)
            continue;
        if (want > n->allocatable.v[r] - n->requested.v[r])
            d |= 1u << sched_fit_bit(r, k);
        k += r >= SCHED_RES_FIRST_EXT;
    }
    return d ? (int)d : -1;
}

bool sched_resources_fit(const sched_snapshot *s, const sched_pod *p, const sched_node *n) {
    sched_cycle c = {.snap = (sched_snapshot *)s, .pod = p}; /* fit_filter reads these alone */
    return fit_filter(NULL, &c, 0, n) < 0;
}

int sched_fit_bit_slot(const sched_snapshot *s, const sched_pod *p, int b) {
    if (b < SCHED_RES_FIRST_EXT)
        return b;
    if (!p)
        return -1; /* the bit counts the pod's own requests */
    int nres = sched_snapshot_resource_count(s);
    for (int r = SCHED_RES_FIRST_EXT, k = 0; r < nres; r++)
        if (p->requests.v[r] > 0 && sched_fit_bit(r, k++) == b)
            return r;
    return -1;
}

static void fit_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                       char *buf, size_t size) {
    size_t len = 0;
    if (size)
        buf[0] = '\0';
    /* kube-scheduler's order: pods, cpu, memory, ephemeral-storage, extended */
    static const int order[] = {SCHED_RES_PODS, SCHED_RES_CPU, SCHED_RES_MEMORY,
                                SCHED_RES_EPHEMERAL};
    for (int i = 0; i < SCHED_RES_FIRST_EXT + SCHED_FIT_EXT_BITS && len < size; i++) {
        int b = i < 4 ? order[i] : i;
        if (!(detail & (1u << b)))
            continue;
        int r = sched_fit_bit_slot(c->snap, c->pod, b);
        const char *name = r >= 0 ? sched_snapshot_resource_name(c->snap, r) : NULL;
        int w = b == SCHED_RES_PODS
                    ? snprintf(buf + len, size - len, "%sToo many pods", len ? ", " : "")
                    : snprintf(buf + len, size - len, "%sInsufficient %s", len ? ", " : "",
                               name ? name : "resource");
        len += w > 0 ? (size_t)w : 0;
    }
    /* the sparse ones after the slotted extended ones, each it is short of by name */
    for (int k = -1; (detail & SCHED_FIT_SPARSE) && c->pod && n && len < size &&
                     (k = sparse_short(c->pod, n, (uint32_t)(k + 1))) >= 0;) {
        const char *name = sched_snapshot_xres_name(c->snap, c->pod->xreq[k].id);
        int w = snprintf(buf + len, size - len, "%sInsufficient %s", len ? ", " : "",
                         name ? name : "resource");
        len += w > 0 ? (size_t)w : 0;
    }
}

int sched_filter_resources_fit(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "NodeResourcesFit",
                          .filter = fit_filter,
                          .node_reason = fit_reason,
                          .filter_id = SCHED_FILTER_RESOURCES};
    return 0;
}
