/* cluster.h: the nodes the planner places steps on, and what already holds capacity on them.
 *
 * The cluster is the cluster description the simulator reads too (lib/clusterdesc.h: node_types
 * with name, count, cores, memory); node i of type T is named "T-i" from 1, as the kwok node
 * files name them.
 * A node type is a node group: a step may run on any group whose nodes fit one of its pods.
 *
 * Busy YAML: a list of what already runs or is reserved:
 *   - {node: n1-3, cores: 8, memory: 32Gi, until: 35m}   # until: from now
 *   - {node: n1-4, cores: 8, from: 20m, until: 35m}      # a window ahead (a reservation) */
#ifndef TAREMA_PLANNER_CLUSTER_H
#define TAREMA_PLANNER_CLUSTER_H

#include <jansson.h>
#include <stdint.h>

#include "lib/error.h"
#include "planner/workflow.h"

typedef struct pl_node {
    char name[PL_NAME_MAX];
    int type;
    int64_t cpu_milli, mem_bytes; /* allocatable */
} pl_node;

typedef struct pl_cluster {
    int ntypes;
    char (*type_names)[PL_NAME_MAX];
    int nnodes;
    pl_node *nodes;
} pl_cluster;

typedef struct pl_busy {
    int node;
    int64_t cpu_milli, mem_bytes;
    int64_t until_s;
    /* From when, in seconds from now (0: now): an admitted Reservation holds its window only. */
    int64_t from_s;
} pl_busy;

/* From a cluster description (lib/clusterdesc.h, already parsed). */
pl_cluster *pl_cluster_from_json(const json_t *root, const char *source, tm_err *err);
/* Built directly (benchmarks, tests): ntypes types of count[t] nodes, each with cores[t] and
 * mem[t] bytes; type names from names. */
pl_cluster *pl_cluster_make(int ntypes, const char *const *names, const int *count,
                            const double *cores, const int64_t *mem, tm_err *err);
void pl_cluster_free(pl_cluster *c);
int pl_cluster_find_node(const pl_cluster *c, const char *name);

/* Every node group a step names in its own `durations:` is one of c's node types; else an error
 * naming the step, the group and the cluster's groups. (TaskProfile runtimes may name groups the
 * cluster lacks: those are simply unused.) */
int pl_check_step_groups(const pl_workflow *wf, const pl_cluster *c, tm_err *err);

/* Busy list; *out is malloc'd (free it), *n its length. An empty document is no busy entry. */
int pl_busy_from_json(const json_t *root, const char *source, const pl_cluster *c, pl_busy **out,
                      int *n, tm_err *err);

#endif
