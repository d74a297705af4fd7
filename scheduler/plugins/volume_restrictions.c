/* volume_restrictions.c: kube-scheduler's VolumeRestrictions, its ReadWriteOncePod part: a pod
 * whose persistentVolumeClaim volume names a claim with the ReadWriteOncePod access mode cannot
 * run while another pod uses that claim, on any node ("node(s) unavailable due to
 * PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod", as
 * kube-scheduler 1.35.4 words it; Unschedulable: preempting the user may
 * help). As upstream, generic ephemeral volumes are not checked, and a missing claim is left to
 * VolumeBinding, which rejects it with the same words. The in-tree disk conflicts (GCE PD, AWS
 * EBS, iSCSI, RBD volumes) are not checked: those volume types are gone from Kubernetes 1.35's
 * in-tree drivers or migrated to CSI. The claims in use come from the snapshot's storage tables
 * (volumes.h: every bound pod's, and the reserved ones'). */
#include "scheduler/backend/volumes.h"
#include "scheduler/plugins/filters.h"

typedef struct {
    bool conflict;
} vr_state;

static sched_status vr_pre_filter(void *state, const sched_cycle *c, uint32_t *detail,
                                  tm_err *err) {
    vr_state *st = state;
    const sched_volumes *v = sched_snapshot_volumes(c->snap);
    const sched_pod *p = c->pod;
    st->conflict = false;
    if (!v || !p->n_claims)
        return SCHED_STATUS_SKIP;
    for (size_t i = 0; i < p->n_claims && !st->conflict; i++) {
        if (i < 64 && (p->ephemeral_claims >> i & 1))
            continue;
        int access = sched_volumes_claim_access(v, p->ns, p->claims[i]);
        st->conflict = access > 0 && (access & SCHED_ACCESS_RWOP) &&
                       sched_volumes_claim_users(v, p->ns, p->claims[i], p->uid) > 0;
    }
    return st->conflict ? SCHED_STATUS_OK : SCHED_STATUS_SKIP;
}

static int vr_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    return ((vr_state *)state)->conflict ? 0 : -1;
}

static void vr_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                      char *buf, size_t size) {
    snprintf(buf, size,
             "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access "
             "mode already in-use by another pod");
}

int sched_filter_volume_restrictions(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "VolumeRestrictions",
                          .pre_filter = vr_pre_filter,
                          .filter = vr_filter,
                          .node_reason = vr_reason,
                          .free_state = free,
                          .filter_id = SCHED_FILTER_VOLUME_RESTRICTIONS};
    return with_state && !(out->state = calloc(1, sizeof(vr_state))) ? -1 : 0;
}
