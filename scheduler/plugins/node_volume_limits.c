/* node_volume_limits.c: kube-scheduler's NodeVolumeLimits (its CSI limits): a node's CSINode
 * says how many volumes of each CSI driver it can attach (spec.drivers[].allocatable.count); the
 * distinct volumes of that driver the node's pods use plus the pod's new ones must not exceed
 * it ("node(s) exceed max volume count", Unschedulable: preempting a user may help). A claim's
 * volume is its PV's CSI driver and volumeHandle; an unbound claim counts for its StorageClass's
 * provisioner, as a volume of its own (it will be provisioned). A node without a CSINode, or a
 * driver without a count, has no limit. PreFilter counts the volumes in use per node and driver
 * once per cycle from the claims in use (volumes.h); Filter is then a few look-ups per node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/match.h"
#include "scheduler/backend/volumes.h"
#include "scheduler/plugins/filters.h"

#define MAX_NEW 64

typedef struct nvl_state {
    const sched_volumes *v;
    char **strs; /* the maps' strings (they borrow theirs), freed at the next PreFilter */
    size_t n_strs, cap_strs;
    sched_tpmap *seen;  /* (node, driver "|" handle) -> 1: attached there */
    sched_tpmap *count; /* (node, driver) -> distinct volumes attached */
    struct {
        char driver[256], id[512]; /* id: driver "|" handle */
    } add[MAX_NEW];
    size_t n_add;
} nvl_state;

/* The CSI driver and unique id of claim ns/name's volume; false when it has none. */
static bool claim_csi(const sched_volumes *v, const char *ns, const char *name, char *driver,
                      size_t dsize, char *id, size_t isize) {
    const char *pv = sched_volumes_claim_volume_name(v, ns, name);
    if (!pv)
        return false;
    const char *handle = NULL, *drv = pv[0] ? sched_volumes_volume_csi(v, pv, &handle) : NULL;
    if (drv) {
        snprintf(driver, dsize, "%s", drv);
        snprintf(id, isize, "%s|%s", drv, handle);
        return true;
    }
    if (pv[0] && sched_volumes_volume_exists(v, pv))
        return false; /* a volume, not a CSI one */
    /* not bound yet: it will be its class's provisioner's */
    const char *prov = NULL, *cls = sched_volumes_claim_class(v, ns, name);
    if (!cls || !cls[0] || !sched_volumes_class(v, cls, NULL, &prov) || !prov[0])
        return false;
    snprintf(driver, dsize, "%s", prov);
    snprintf(id, isize, "%s|claim:%s/%s", prov, ns, name);
    return true;
}

/* A copy of s that lives until the next PreFilter; NULL on OOM. */
static const char *keep(nvl_state *st, const char *s) {
    if (st->n_strs == st->cap_strs) {
        size_t nc = st->cap_strs ? st->cap_strs * 2 : 16;
        char **ns = realloc(st->strs, nc * sizeof *ns);
        if (!ns)
            return NULL;
        st->strs = ns;
        st->cap_strs = nc;
    }
    char *d = strdup(s);
    if (d)
        st->strs[st->n_strs++] = d;
    return d;
}

static void count_use(void *arg, const char *node, const char *ns, const char *claim) {
    nvl_state *st = arg;
    char driver[256], id[512];
    if (!claim_csi(st->v, ns, claim, driver, sizeof driver, id, sizeof id))
        return;
    bool found = false;
    sched_tpmap_get(st->seen, node, id, &found);
    if (found)
        return;
    /* node is the tables' (stable for the cycle); the others are kept here */
    const char *kid = keep(st, id), *kdrv = keep(st, driver);
    if (!kid || !kdrv)
        return;
    sched_tpmap_add(st->seen, node, kid, 1);
    sched_tpmap_add(st->count, node, kdrv, 1);
}

static sched_status nvl_pre_filter(void *state, const sched_cycle *c, uint32_t *detail,
                                   tm_err *err) {
    nvl_state *st = state;
    const sched_pod *p = c->pod;
    st->v = sched_snapshot_volumes(c->snap);
    st->n_add = 0;
    if (!st->v || !p->n_claims)
        return SCHED_STATUS_SKIP;
    for (size_t i = 0; i < p->n_claims && st->n_add < MAX_NEW; i++) {
        if (!claim_csi(st->v, p->ns, p->claims[i], st->add[st->n_add].driver,
                       sizeof st->add[st->n_add].driver, st->add[st->n_add].id,
                       sizeof st->add[st->n_add].id))
            continue;
        bool dup = false;
        for (size_t k = 0; k < st->n_add && !dup; k++)
            dup = strcmp(st->add[k].id, st->add[st->n_add].id) == 0;
        if (!dup)
            st->n_add++;
    }
    if (!st->n_add)
        return SCHED_STATUS_SKIP;
    sched_tpmap_clear(st->seen);
    sched_tpmap_clear(st->count);
    for (size_t i = 0; i < st->n_strs; i++)
        free(st->strs[i]);
    st->n_strs = 0;
    sched_volumes_each_use(st->v, count_use, st);
    return SCHED_STATUS_OK;
}

static int nvl_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    const nvl_state *st = state;
    for (size_t k = 0; k < st->n_add; k++) {
        int64_t limit = sched_volumes_csi_limit(st->v, n->name, st->add[k].driver);
        if (limit < 0)
            continue;
        int64_t want = 0; /* the pod's volumes of this driver not attached there yet */
        for (size_t j = 0; j < st->n_add; j++) {
            bool found = false;
            if (strcmp(st->add[j].driver, st->add[k].driver) != 0)
                continue;
            sched_tpmap_get(st->seen, n->name, st->add[j].id, &found);
            want += !found;
        }
        if (!want)
            continue;
        bool f;
        if (sched_tpmap_get(st->count, n->name, st->add[k].driver, &f) + want > limit)
            return 0;
    }
    return -1;
}

static void nvl_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                       char *buf, size_t size) {
    snprintf(buf, size, "node(s) exceed max volume count");
}

static void nvl_free(void *state) {
    nvl_state *st = state;
    if (!st)
        return;
    sched_tpmap_free(st->seen);
    sched_tpmap_free(st->count);
    for (size_t i = 0; i < st->n_strs; i++)
        free(st->strs[i]);
    free(st->strs);
    free(st);
}

int sched_filter_node_volume_limits(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "NodeVolumeLimits",
                          .pre_filter = nvl_pre_filter,
                          .filter = nvl_filter,
                          .node_reason = nvl_reason,
                          .free_state = nvl_free,
                          .filter_id = SCHED_FILTER_VOLUME_LIMITS};
    if (!with_state)
        return 0;
    nvl_state *st = calloc(1, sizeof *st);
    if (!st || !(st->seen = sched_tpmap_new()) || !(st->count = sched_tpmap_new())) {
        nvl_free(st);
        return -1;
    }
    out->state = st;
    return 0;
}
