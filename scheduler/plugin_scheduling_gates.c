/* plugin_scheduling_gates.c: the SchedulingGates plugin (scheduling_gates.h). */
#include <stdio.h>

#include "scheduler/scheduling_gates.h"

bool sched_scheduling_gated(const sched_pod *p, char *msg, size_t size) {
    if (!p->scheduling_gates || !p->scheduling_gates[0])
        return false;
    if (msg && size)
        snprintf(msg, size, "waiting for scheduling gates: %s", p->scheduling_gates);
    return true;
}

static sched_status pre_enqueue(void *state, const sched_snapshot *s, const sched_pod *p,
                                int64_t now_ms, char *msg, size_t size) {
    (void)state, (void)s, (void)now_ms;
    return sched_scheduling_gated(p, msg, size) ? SCHED_STATUS_UNSCHEDULABLE : SCHED_STATUS_OK;
}

int sched_scheduling_gates_plugin_add(sched_framework *fw, tm_err *err) {
    sched_plugin p = {.name = SCHED_SCHEDULING_GATES_PLUGIN, .pre_enqueue = pre_enqueue};
    return sched_framework_add_plugin(fw, &p, err);
}
