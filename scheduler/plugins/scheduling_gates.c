/* scheduling_gates.c: the SchedulingGates plugin (scheduling_gates.h). */
#include <stdio.h>
#include <string.h>

#include "scheduler/plugins/scheduling_gates.h"

bool sched_scheduling_held(const sched_pod *p) {
    /* p->scheduling_gates lists the names joined by ", ": one name alone has no separator */
    return p->scheduling_gates && strcmp(p->scheduling_gates, SCHED_ORDER_GATE) == 0;
}

bool sched_scheduling_gated(const sched_pod *p, char *msg, size_t size) {
    if (!p->scheduling_gates || !p->scheduling_gates[0])
        return false;
    if (msg && size && sched_scheduling_held(p))
        snprintf(msg, size,
                 "waiting for scheduling gates: %s (queued: binds once every predecessor "
                 "succeeded)",
                 p->scheduling_gates);
    else if (msg && size)
        snprintf(msg, size, "waiting for scheduling gates: %s", p->scheduling_gates);
    return true;
}

static sched_status pre_enqueue(void *state, const sched_snapshot *s, const sched_pod *p,
                                int64_t now_ms, char *msg, size_t size) {
    (void)state, (void)s, (void)now_ms;
    return sched_scheduling_gated(p, msg, size) ? SCHED_STATUS_GATED : SCHED_STATUS_OK;
}

int sched_scheduling_gates_plugin_add(sched_framework *fw, tm_err *err) {
    sched_plugin p = {.name = SCHED_SCHEDULING_GATES_PLUGIN, .pre_enqueue = pre_enqueue};
    return sched_framework_add_plugin(fw, &p, err);
}
