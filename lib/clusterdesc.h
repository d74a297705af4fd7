/* clusterdesc.h: the cluster description, defined once: the node types of a heterogeneous
 * cluster as YAML, read by the planner (`tarema-planner --cluster`: the nodes it places steps on)
 * and by the simulator (`tarema-sim --cluster`: the nodes it simulates). Pure: the document is
 * parsed already (lib/yamljson.h), no I/O.
 *
 *   reference: n1                  # node type whose speeds are 1.0 (default: the first)
 *   node_types:
 *     - name: n1                   # also the machine name looked up in measurements
 *       measured_as: n1            # optional: machine name in the measurements
 *       count: 5
 *       cores: 8
 *       memory: 32Gi               # Kubernetes quantity or a number of bytes
 *       bench: {cpu: [367, 384], mem: [13800, 14300], io: 481}   # sysbench events/s, MiB/s,
 *                                  # fio IOPS; a [lo, hi] range draws each node uniformly
 *       speed: {cpu: 1.0, mem: 1.0, io: 1.0}   # or relative speeds instead of bench
 *       mem_bandwidth: 8           # contention capacity in busy-core equivalents (default cores)
 *
 * Every check happens here, and every message names the source and the offending key. */
#ifndef TAREMA_CLUSTERDESC_H
#define TAREMA_CLUSTERDESC_H

#include <jansson.h>
#include <stdint.h>

#include "error.h"

#define TM_NODE_TYPE_NAME_MAX 128
/* Largest cluster: the simulator groups its nodes as the profiler does (k-means++ with k chosen
 * by silhouette), which is quadratic in the node count. */
#define TM_CLUSTER_MAX_NODES 10000

/* The figures a node type carries, per resource (bench and speed keys: "cpu", "mem", "io"). */
typedef enum { TM_NT_CPU = 0, TM_NT_MEM, TM_NT_IO, TM_NT_NFEATURES } tm_nt_feature;

typedef struct tm_node_type {
    char name[TM_NODE_TYPE_NAME_MAX]; /* at most 100 characters: nodes are "<type>-<i>" */
    char measured_as[TM_NODE_TYPE_NAME_MAX];
    int count;
    double cores;
    int64_t memory;                                              /* bytes */
    double bench_lo[TM_NT_NFEATURES], bench_hi[TM_NT_NFEATURES]; /* NAN when absent */
    double speed[TM_NT_NFEATURES]; /* relative to the reference type, > 0 */
    double mem_bandwidth;          /* contention capacity, busy-core equivalents */
} tm_node_type;

typedef struct tm_cluster_desc {
    int ntypes;
    tm_node_type *types; /* malloc'd */
    int ref_type;        /* the reference type's index */
    long nnodes;         /* sum of the counts, at most TM_CLUSTER_MAX_NODES */
} tm_cluster_desc;

/* Reads and validates a cluster description (source names it in messages); speeds not given are
 * derived from the bench figures relative to the reference type. 0 with *out filled (free with
 * tm_cluster_desc_clear, or take out->types over), or -1 with err and *out empty. */
int tm_cluster_desc_from_json(const json_t *root, const char *source, tm_cluster_desc *out,
                              tm_err *err);
void tm_cluster_desc_clear(tm_cluster_desc *d);

/* The index of the type called name among types[0..ntypes), -1 when none is. */
int tm_node_type_find(const tm_node_type *types, int ntypes, const char *name);

#endif
