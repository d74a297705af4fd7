/* extender_internal.h: the extender's state, shared by its verbs' files (extender.c: filter,
 * prioritize, bind, the routes; extender_preempt.c: preempt). Not for other callers. */
#ifndef TAREMA_SCHED_EXTENDER_INTERNAL_H
#define TAREMA_SCHED_EXTENDER_INTERNAL_H

#include "lib/metrics.h"
#include "scheduler/cmd/extender.h"

struct sched_extender {
    sched_extender_opts o;
    char *policy;
    tm_metric *m_preempt_nodes; /* {outcome}, NULL without opts.metrics */
};

#endif
