/* resv_sim.h: reservations in the simulator, through the scheduler's own reservation code:
 * each is a Reservation object (reservation_from_json), admitted with resv_plan_admit against
 * the running tasks' expected ends and the other reservations, honoured by the live scheduler's
 * Reservation Filter plugin (scheduler/plugins/reservation/resv_plugin.h: inside the window only
 * the owner's pods, before it only pods whose expected end is before the window), released by
 * resv_decide. Owner pods carry the label SIM_RESV_OWNER_LABEL = the reservation's name; the
 * Reservation's owner is that label selector (reservation_owns). */
#ifndef TAREMA_SIM_RESV_SIM_H
#define TAREMA_SIM_RESV_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/reservation/reservation.h"
#include "scheduler/plugins/reservation/resv_plan.h"
#include "scheduler/backend/snapshot.h"

#define SIM_RESV_OWNER_LABEL "tarema.io/sim-step"
#define SIM_RESV_NS          "sim"

typedef struct sim_resv sim_resv;

/* The reservations of one simulation; fw is the scheduling framework the Filter plugin is added
 * to, policy names the planning framework's policy (admission places template pods with it).
 * NULL with err. */
sim_resv *sim_resv_new(sched_framework *fw, const char *policy, tm_err *err);
void sim_resv_free(sim_resv *rv);

/* The admission table (for leak checks and the engine's release). */
resv_plan *sim_resv_plan(sim_resv *rv);

/* Admits a reservation called name for count tasks of (cpu millicores, memory bytes) of task
 * (workflow, process) in [start_ms, end_ms) at now_ms, on snap against pods; evict_overrunning
 * is its spec.evictOverrunning. *r gets the parsed Reservation (owned by rv, valid until
 * sim_resv_free; may be NULL), out the outcome (holds or reason). 0, or -1 with err (bad object,
 * plugin failure). */
int sim_resv_admit(sim_resv *rv, sched_snapshot *snap, const char *name, const char *workflow,
                   const char *process, int64_t cpu_milli, int64_t mem, int count, int64_t start_ms,
                   int64_t end_ms, bool evict_overrunning, const resv_running *pods, size_t n_pods,
                   int64_t now_ms, const reservation **r, resv_admission *out, tm_err *err);

/* Releases name's holds (released, expired): the plugin stops honouring it. */
void sim_resv_drop(sim_resv *rv, const char *name);

/* What name's owner pods use of its hold on node now (resv_plan_set_used). */
void sim_resv_set_used(sim_resv *rv, const char *name, const char *node,
                       const sched_resources *used);

/* Marks pod as an owner of name (the label the Reservation's selector matches). 0 or -1 (OOM). */
int sim_resv_own(sched_pod *pod, const char *name);

#endif
