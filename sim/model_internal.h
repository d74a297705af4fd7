/* model_internal.h: what the files of the simulator's input model (model.c, workload.c,
 * measure.c, groups.c) share and nobody else should use. Not part of the public surface (that is
 * sim/model.h). */
#ifndef TAREMA_SIM_MODEL_INTERNAL_H
#define TAREMA_SIM_MODEL_INTERNAL_H

#include "sim/model.h"

/* The index among wf's measured machines of node type t's machine (its measured_as), -1 when
 * wf has no measurement of it. */
int sim_machine_of_type(const sim_cluster *c, const sim_workflow *wf, int t);
/* The mean %cpu, peak RSS and I/O of p over its instances measured on its workflow's nm machines
 * (NAN where none is measured; runtime_s NAN); -1 when p has no measurements. */
int sim_mean_usage(const sim_process *p, int nm, sim_meas *out);

/* groups.c: fills every node's group (0 = weakest) and labels, and c->ngroups (see groups.h).
 * Returns 0 or -1 with err. */
int sim_cluster_group(sim_cluster *c, uint64_t seed, tm_err *err);

/* Appends r to t (growing it); -1 when out of memory. */
int sim_meas_table_push(sim_meas_table *t, const sim_meas_row *r);

#endif
