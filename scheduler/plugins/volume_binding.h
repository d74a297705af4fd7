/* volume_binding.h: what the VolumeBinding plugin hands its caller after Reserve: the volume
 * plan of a reserved pod (the PVs to bind and the claims to provision on its node, already
 * assumed in the snapshot's tables: volumes.h). The live scheduler writes the plan in PreBind
 * (scheduler/live/volume_binder.c) and binds the pod once the claims are bound; a caller
 * without a PreBind (the simulator) never gets a plan, since its snapshot has no volume
 * tables. */
#ifndef TAREMA_SCHED_VOLUME_BINDING_H
#define TAREMA_SCHED_VOLUME_BINDING_H

#include "scheduler/backend/volumes.h"
#include "scheduler/framework/framework.h"

#define SCHED_VOLUME_BINDING_NAME "VolumeBinding"

/* The plan Reserve made for pod uid (borrowed: valid until released or unreserved), NULL when
 * the pod has nothing to bind or provision. state: sched_framework_plugin_state(fw,
 * SCHED_VOLUME_BINDING_NAME). */
const sched_volume_plan *sched_volume_binding_plan(void *state, const char *uid);
/* Takes the plan of pod uid out of the plugin (the caller frees it with
 * sched_volume_plan_free); the assumption stays in the tables until the caller reverts it
 * (sched_volumes_revert) or the API shows the binding. */
sched_volume_plan *sched_volume_binding_take(void *state, const char *uid);

#endif
