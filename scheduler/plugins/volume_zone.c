/* volume_zone.c: kube-scheduler's VolumeZone: the zone and region labels of the PVs the pod's
 * claims name (topology.kubernetes.io/{zone,region} and the failure-domain.beta ones; a value
 * may list several zones joined by "__") must match the node's labels. A node without any of
 * these labels passes; a beta label on the PV is matched against the node's GA label when the
 * node lacks the beta one. As upstream, only persistentVolumeClaim volumes whose claim names a
 * volume count (an unbound claim is VolumeBinding's: WaitForFirstConsumer ones are placed by
 * it); the rejection is UnschedulableAndUnresolvable, "node(s) had no available volume zone". */
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/volumes.h"
#include "scheduler/plugins/filters.h"

#define MAX_TOPO 32

typedef struct vz_pair {
    char key[64];
    char value[256]; /* "a__b" = zone a or zone b */
} vz_pair;

typedef struct vz_state {
    vz_pair pairs[MAX_TOPO];
    size_t n;
} vz_state;

static const char *const topo_keys[] = {
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", NULL};

static void add_pair(void *arg, const char *key, const char *value) {
    vz_state *st = arg;
    if (st->n < MAX_TOPO) {
        snprintf(st->pairs[st->n].key, sizeof st->pairs[st->n].key, "%s", key);
        snprintf(st->pairs[st->n].value, sizeof st->pairs[st->n].value, "%s", value);
        st->n++;
    }
}

static sched_status vz_pre_filter(void *state, const sched_cycle *c, uint32_t *detail,
                                  tm_err *err) {
    vz_state *st = state;
    const sched_volumes *v = sched_snapshot_volumes(c->snap);
    const sched_pod *p = c->pod;
    st->n = 0;
    if (!v)
        return SCHED_STATUS_SKIP;
    for (size_t i = 0; i < p->n_claims; i++) {
        if (i < 64 && (p->ephemeral_claims >> i & 1))
            continue;
        const char *pv = sched_volumes_claim_volume_name(v, p->ns, p->claims[i]);
        if (pv && pv[0])
            sched_volumes_volume_topology(v, pv, add_pair, st);
    }
    return st->n ? SCHED_STATUS_OK : SCHED_STATUS_SKIP;
}

/* value is one of the "__"-joined zones of set. */
static bool zone_in(const char *set, const char *value) {
    size_t vl = strlen(value);
    for (const char *s = set;;) {
        const char *e = strstr(s, "__");
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if (l == vl && strncmp(s, value, l) == 0)
            return true;
        if (!e)
            return false;
        s = e + 2;
    }
}

/* failure-domain.beta.kubernetes.io/X -> topology.kubernetes.io/X */
static const char *ga_key(const char *key) {
    if (strcmp(key, topo_keys[0]) == 0)
        return topo_keys[2];
    if (strcmp(key, topo_keys[1]) == 0)
        return topo_keys[3];
    return key;
}

static int vz_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    const vz_state *st = state;
    bool constrained = false;
    for (size_t k = 0; topo_keys[k] && !constrained; k++)
        constrained = sched_node_label(n, topo_keys[k]) != NULL;
    if (!constrained)
        return -1;
    for (size_t i = 0; i < st->n; i++) {
        const char *v = sched_node_label(n, st->pairs[i].key);
        if (!v)
            v = sched_node_label(n, ga_key(st->pairs[i].key));
        if (!v || !zone_in(st->pairs[i].value, v))
            return 0;
    }
    return -1;
}

static void vz_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                      char *buf, size_t size) {
    snprintf(buf, size, "node(s) had no available volume zone");
}

int sched_filter_volume_zone(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "VolumeZone",
                          .pre_filter = vz_pre_filter,
                          .filter = vz_filter,
                          .node_reason = vz_reason,
                          .free_state = free,
                          .filter_id = SCHED_FILTER_VOLUME_ZONE};
    return with_state && !(out->state = calloc(1, sizeof(vz_state))) ? -1 : 0;
}
