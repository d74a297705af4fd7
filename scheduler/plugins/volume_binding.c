/* volume_binding.c: the VolumeBinding filter as a plugin: the pod's claims resolved once
 * per cycle against the snapshot's volume tables (PreFilter), each node checked against the
 * bound volumes' node affinity (volumes.c holds the tables, the checks and the reasons). A
 * snapshot without volume tables skips the filter. */
#include "scheduler/plugins/filters.h"
#include "scheduler/backend/volumes.h"

static sched_status volume_pre_filter(void *state, const sched_cycle *c, uint32_t *detail,
                                      tm_err *err) {
    bool on = false;
    if (sched_volume_prefilter(state, c->snap, c->pod, &on, err) != 0)
        return SCHED_STATUS_ERROR;
    return on ? SCHED_STATUS_OK : SCHED_STATUS_SKIP;
}

static int volume_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    return sched_volume_filter(state, n);
}

static void volume_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                          char *buf, size_t size) {
    sched_volume_reason(c->pod, detail, buf, size);
}

static void volume_free(void *state) {
    sched_volume_state_free(state);
}

int sched_filter_volume_binding(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "VolumeBinding",
                          .pre_filter = volume_pre_filter,
                          .filter = volume_filter,
                          .node_reason = volume_reason,
                          .free_state = volume_free,
                          .filter_id = SCHED_FILTER_VOLUME};
    return with_state && !(out->state = sched_volume_state_new()) ? -1 : 0;
}
