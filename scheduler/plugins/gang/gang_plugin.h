/* gang_plugin.h: the gang side's hooks at the framework's extension points (framework.h), the
 * plugin "Gang" over a gang registry (gang.h). Pure: no I/O, no clock.
 *
 *   PreEnqueue  a member of a gang whose PodGroup or Workload is missing or invalid, or whose
 *               gang has fewer live pods than minMember, does not enter the active queue: it
 *               waits, and the message says why (kube-scheduler coscheduling's PreEnqueue)
 *   QueueSort   members of the gang seen first go first, and a gang's members sort together
 *               (coscheduling's QueueSort), so gangs are tried in arrival order; pods outside
 *               gangs are left to the policy's order (0)
 *   Permit      a member is allowed only while its gang's cycle places it (sched_gang_place
 *               marks the gang), so no member is ever bound alone; other plugins' Permit (a
 *               reservation's) still runs on every member and may reject the gang
 * The gang's own all-at-once placement and its undo are sched_gang_place / gang_live.h. */
#ifndef TAREMA_SCHED_GANG_PLUGIN_H
#define TAREMA_SCHED_GANG_PLUGIN_H

#include "lib/error.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/gang/gang.h"

#define SCHED_GANG_PLUGIN "Gang"

/* Adds the plugin to fw; reg is borrowed and must outlive fw. 0, or -1 with err. */
int sched_gang_plugin_add(sched_framework *fw, sched_gang_registry *reg, tm_err *err);

#endif
