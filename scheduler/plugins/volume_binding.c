/* volume_binding.c: kube-scheduler's VolumeBinding as a plugin. PreFilter resolves the pod's
 * claims once per cycle against the snapshot's storage tables, Filter checks each node (bound
 * volumes' node affinity; for unbound WaitForFirstConsumer claims a PV to bind or a class to
 * provision from), Reserve chooses the node's plan and assumes it in the tables so the next pod
 * sees the PVs taken, Unreserve reverts it (volumes.c holds the rules and reasons). The plan
 * waits here for the caller's PreBind (volume_binding.h). A snapshot without volume tables
 * skips the filter. */
#include "scheduler/plugins/volume_binding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/filters.h"

typedef struct held_plan {
    char *uid;
    sched_volume_plan *plan;
} held_plan;

typedef struct vb_state {
    sched_volume_state *st;
    char uid[128];   /* the pod st was computed for */
    held_plan *held; /* reserved pods whose plan the caller has not taken */
    size_t n_held, cap_held;
} vb_state;

static sched_status volume_pre_filter(void *state, const sched_cycle *c, uint32_t *detail,
                                      tm_err *err) {
    vb_state *vb = state;
    bool on = false;
    snprintf(vb->uid, sizeof vb->uid, "%s", c->pod->uid);
    if (sched_volume_prefilter(vb->st, c->snap, c->pod, &on, err) != 0)
        return SCHED_STATUS_ERROR;
    return on ? SCHED_STATUS_OK : SCHED_STATUS_SKIP;
}

static int volume_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    return sched_volume_filter(((vb_state *)state)->st, n);
}

static void volume_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                          char *buf, size_t size) {
    sched_volume_reason(c->pod, detail, buf, size);
}

static ssize_t held_index(const vb_state *vb, const char *uid) {
    for (size_t i = 0; i < vb->n_held; i++)
        if (strcmp(vb->held[i].uid, uid) == 0)
            return (ssize_t)i;
    return -1;
}

static sched_volume_plan *held_take(vb_state *vb, const char *uid) {
    ssize_t i = held_index(vb, uid);
    if (i < 0)
        return NULL;
    sched_volume_plan *pl = vb->held[i].plan;
    free(vb->held[i].uid);
    vb->held[i] = vb->held[--vb->n_held];
    return pl;
}

/* Reserve (AssumePodVolumes): the plan for node n, assumed in the tables. The pod's claims are
 * recorded as used on n (VolumeRestrictions, NodeVolumeLimits see them before the bind). */
static void volume_reserved(void *state, const sched_cycle *c, const sched_node *n) {
    vb_state *vb = state;
    sched_volumes *v = sched_snapshot_volumes(c->snap);
    if (!v || !c->pod->n_claims)
        return;
    sched_volumes_pod_use(v, c->pod->uid, c->pod->ns, n->name, c->pod->claims, c->pod->n_claims);
    /* the PreFilter state is this pod's when Reserve follows its own cycle; a gang reserves its
     * members after all their cycles, so it is computed again then */
    tm_err err = {0};
    bool on;
    if (strcmp(vb->uid, c->pod->uid) != 0 &&
        (snprintf(vb->uid, sizeof vb->uid, "%s", c->pod->uid),
         sched_volume_prefilter(vb->st, c->snap, c->pod, &on, &err) != 0))
        return;
    sched_volume_plan *pl = sched_volume_state_plan(vb->st, n, &err);
    if (!pl)
        return;
    sched_volume_plan_free(held_take(vb, c->pod->uid));
    if (vb->n_held == vb->cap_held) {
        size_t nc = vb->cap_held ? vb->cap_held * 2 : 8;
        held_plan *nh = realloc(vb->held, nc * sizeof *nh);
        if (!nh) {
            sched_volume_plan_free(pl);
            return;
        }
        vb->held = nh;
        vb->cap_held = nc;
    }
    char *uid = strdup(c->pod->uid);
    if (!uid) {
        sched_volume_plan_free(pl);
        return;
    }
    sched_volumes_assume(v, pl);
    vb->held[vb->n_held++] = (held_plan){uid, pl};
}

static void volume_unreserve(void *state, const sched_cycle *c, const sched_node *n) {
    vb_state *vb = state;
    sched_volumes *v = sched_snapshot_volumes(c->snap);
    sched_volume_plan *pl = held_take(vb, c->pod->uid);
    if (v) {
        sched_volumes_revert(v, pl);
        sched_volumes_pod_use(v, c->pod->uid, "", "", NULL, 0);
    }
    sched_volume_plan_free(pl);
}

const sched_volume_plan *sched_volume_binding_plan(void *state, const char *uid) {
    vb_state *vb = state;
    ssize_t i = vb ? held_index(vb, uid) : -1;
    return i < 0 ? NULL : vb->held[i].plan;
}

sched_volume_plan *sched_volume_binding_take(void *state, const char *uid) {
    return state ? held_take(state, uid) : NULL;
}

static void volume_free(void *state) {
    vb_state *vb = state;
    if (!vb)
        return;
    for (size_t i = 0; i < vb->n_held; i++) {
        free(vb->held[i].uid);
        sched_volume_plan_free(vb->held[i].plan);
    }
    free(vb->held);
    sched_volume_state_free(vb->st);
    free(vb);
}

int sched_filter_volume_binding(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = SCHED_VOLUME_BINDING_NAME,
                          .pre_filter = volume_pre_filter,
                          .filter = volume_filter,
                          .node_reason = volume_reason,
                          .reserved = volume_reserved,
                          .unreserve = volume_unreserve,
                          .free_state = volume_free,
                          .filter_id = SCHED_FILTER_VOLUME};
    if (!with_state)
        return 0;
    vb_state *vb = calloc(1, sizeof *vb);
    if (!vb || !(vb->st = sched_volume_state_new())) {
        free(vb);
        return -1;
    }
    out->state = vb;
    return 0;
}
