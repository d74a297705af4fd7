/* groups.h: groups the simulated nodes exactly as the profiler groups real ones.
 *
 * Each node's benchmark figures (drawn by the cluster loader) become a NodeProfile and go
 * through the profiler's own grouping (profiler/grouping.h: k-means++ with silhouette); the
 * resulting group ids and per-feature labels are what the simulated nodes carry as
 * tarema.io/{group,cpu,mem,io}. Node types given only relative speeds get figures scaled from
 * fixed reference figures (SIM_REF_* below) so they group the same way. The cluster loader
 * (model.c) calls it through sim_cluster_group (model_internal.h), so that model.c and groups.c
 * do not include each other. */
#ifndef TAREMA_SIM_GROUPS_H
#define TAREMA_SIM_GROUPS_H

/* Reference figures for a node type with speed 1.0 and no bench: a mid-range cloud VM. */
#define SIM_REF_CPU_EPS  400.0   /* sysbench cpu events/s, one thread */
#define SIM_REF_MEM_MIBS 15000.0 /* sysbench memory MiB/s, one thread */
#define SIM_REF_IOPS     500.0   /* fio IOPS */

#endif
