/* model.h: the simulator's input model: a heterogeneous cluster and a workload of workflow
 * DAGs, read from YAML (plus lotaru CSV and Nextflow trace measurements), validated, and the
 * runtime model that says how long a task instance runs on a node type. Implemented by model.c
 * (the cluster's nodes, the runtime model), workload.c (the workload) and measure.c (the
 * measurements).
 *
 * Cluster YAML: the cluster description (lib/clusterdesc.h), shared with the planner.
 *
 * Workload YAML:
 *   workflows:
 *     - name: chipseq
 *       start: 0                   # seconds; first arrival
 *       runs: 7                    # recurring runs (the paper's A3), each after the previous
 *       gap: 60                    # seconds between one run's end and the next's arrival
 *       arrivals: [0, 100]         # or explicit arrival times (instead of start/runs/gap),
 *                                  # any order: runs are numbered by arrival
 *       requests: {cpu: 2, memory: 5Gi}          # default requests of every process
 *       measurements:              # per-task measurements; processes take instances from them
 *         - {file: chipseq_n1.csv}                      # lotaru CSV (machine from its column)
 *         - {file: trace.txt, format: trace, machine: n2}   # Nextflow trace of one machine
 *       label: train-2             # lotaru rows of this Label only (default: all)
 *       processes:
 *         - name: FASTQC
 *           instances: 20          # required without measurements
 *           after: [A]             # waits for every instance of A (gather)
 *           after_each: [B]        # instance i waits for instance i of B (same count)
 *           requests: {cpu: 2, memory: 5Gi}
 *           usage: {cpu_pct: 150, peak_rss: 2Gi, io_bytes: 1e9}
 *           runtime: {n1: 120, c2: 90}             # seconds per node type
 *           base_runtime: 100       # seconds on the reference speeds
 *           walltime: 900           # declared runtime (seconds), as a batch job's walltime:
 *                                   # the expected end while the process has no history
 *           sensitivity: {cpu: 0.8, mem: 0.1, io: 0}
 *           gang: 4                 # its instances start 4 at a time, all or nothing
 *           reservation: {start: 600, duration: 300}   # capacity for all its instances held
 *                                   # 600..900 s after each run's arrival; evict_overrunning:
 *                                   # false keeps tasks that overran into it (default true)
 *
 * Runtime of instance i of a process on node type t (documented in docs/simulation.md):
 *   1. measured on t's machine (measurements, or `runtime: {t: s}`): that value;
 *   2. measured on another machine m of the cluster: the one closest to t in cpu speed, scaled:
 *        T = T_m * (s0 + sum_f s_f * speed_f(m) / speed_f(t)),  s0 = 1 - sum_f s_f
 *   3. else base_runtime * (s0 + sum_f s_f / speed_f(t)).
 * Default sensitivity (when not given): cpu = min(1, cpu_pct / (100 * requested cpus)), mem =
 * io = 0; without a %cpu, cpu = 1. */
#ifndef TAREMA_SIM_MODEL_H
#define TAREMA_SIM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "labeler/labels.h"
#include "lib/clusterdesc.h"
#include "lib/error.h"

#define SIM_NAME_MAX 128

/* Benchmark figures a node type can carry (NAN when absent). */
typedef enum { SIM_B_CPU = 0, SIM_B_MEM, SIM_B_IO, SIM_NBENCH } sim_bench_kind;
_Static_assert((int)SIM_NBENCH == (int)TM_NT_NFEATURES &&
                   (int)LAB_NFEATURES == (int)TM_NT_NFEATURES &&
                   SIM_NAME_MAX == TM_NODE_TYPE_NAME_MAX,
               "the cluster description's figures are the simulator's bench and features");

/* Largest simulated cluster: grouping (k-means++ with k chosen by silhouette, as the profiler
 * does) is quadratic in the node count. */
#define SIM_MAX_NODES TM_CLUSTER_MAX_NODES

#define SIM_POD_SLOTS 110 /* pods per node, kubelet's default */

/* A node type of the cluster description; speed[] is indexed by lab_feature, bench_lo/hi by
 * sim_bench_kind. */
typedef tm_node_type sim_node_type;

typedef struct sim_node {
    char name[SIM_NAME_MAX]; /* "<type>-<i>" */
    int type;
    double bench[SIM_NBENCH]; /* drawn from the type's range; what the profiler would measure */
    int group;                /* node group, 0 = weakest; filled by sim_cluster_group */
    int label[LAB_NFEATURES]; /* tarema.io/{cpu,mem,io} 1..n; filled by sim_cluster_group */
} sim_node;

typedef struct sim_cluster {
    int ntypes;
    sim_node_type *types;
    int nnodes;
    sim_node *nodes;
    int ngroups;
    int ref_type;
} sim_cluster;

/* Reads and validates a cluster YAML (tm_cluster_desc_from_json) and makes its nodes; node bench
 * figures inside a range are drawn from seed.
 * Returns a new cluster (free with sim_cluster_free) or NULL with err naming file and key. */
sim_cluster *sim_cluster_load(const char *path, uint64_t seed, tm_err *err);
/* The same from an already parsed document; source names it in messages. */
sim_cluster *sim_cluster_from_json(const void *json_root, const char *source, uint64_t seed,
                                   tm_err *err);
void sim_cluster_free(sim_cluster *c);
int sim_cluster_find_type(const sim_cluster *c, const char *name);

/* Measured usage and runtime of one instance on one machine (NAN when unknown). */
typedef struct sim_meas {
    double runtime_s, cpu_pct, peak_rss, io_bytes;
} sim_meas;

typedef struct sim_process {
    char name[SIM_NAME_MAX];
    int instances;
    double req_cpu;      /* cores */
    int64_t req_mem;     /* bytes */
    sim_meas usage;      /* declared usage (runtime_s unused); NAN where not declared */
    double base_runtime; /* NAN when absent */
    /* walltime: the declared runtime in seconds (NAN when absent). While the process has no
     * history, its instances carry it as the live pod's tarema.io/expected-duration, so
     * reservations know when they end (docs/simulation.md); the runtime model ignores it. */
    double walltime;
    double sens[LAB_NFEATURES];
    /* The calibrated model's sensitivities (docs/simulation.md): the declared ones, else cpu =
     * the compute share fitted to the measured speed-up between machine types
     * (sim_speedup_sens), mem = io = 0; where no speed-up is measured, sens. */
    double fit_sens[LAB_NFEATURES];
    int nall, neach;
    int *after_all;  /* process indices */
    int *after_each; /* process indices, same instance count */
    /* meas[i * nmachines + m]: instance i measured on the workflow's machine m. */
    sim_meas *meas;
    /* gang: N (0 = none): every N consecutive instances start together or not at all
     * (instances a multiple of N; N when instances is not given). */
    int gang;
    /* reservation: {start: OFFSET, duration: D} seconds after each run's arrival; resv_start
     * and resv_duration NAN (or 0) = none. The step's instances get capacity held in that window
     * (docs/simulation.md). */
    double resv_start, resv_duration;
    /* reservation: {evict_overrunning: BOOL}, default true: the Reservation's
     * spec.evictOverrunning (once the window is open and a task of the step waits, tasks let into
     * the held capacity on ending before the window and still running are evicted). */
    bool resv_evict_overrunning;
} sim_process;

typedef struct sim_workflow {
    char name[SIM_NAME_MAX];
    int nprocs;
    sim_process *procs; /* in topological order after loading */
    int nmachines;
    char (*machines)[SIM_NAME_MAX];
    int narrivals; /* explicit arrival times, or 0 with start/runs/gap */
    double *arrivals;
    double start, gap;
    int runs;
    long tasks_per_run; /* sum of instances */
    int32_t priority;   /* its task pods' spec.priority (workflow key priority, default 0) */
} sim_workflow;

typedef struct sim_workload {
    int nworkflows;
    sim_workflow *wfs;
} sim_workload;

/* Reads a workload YAML and every measurement file it names (relative paths are resolved
 * against the directory the YAML really is in, symlinks followed), orders each DAG topologically
 * (err names a cycle) and checks it against the cluster: every process must fit some node and have
 * a runtime on every node type. */
sim_workload *sim_workload_load(const char *path, const sim_cluster *c, tm_err *err);
sim_workload *sim_workload_from_json(const void *json_root, const char *source,
                                     const char *base_dir, const sim_cluster *c, tm_err *err);
void sim_workload_free(sim_workload *w);

/* Runtime in seconds of instance inst of process p (of workflow wf) on node type t. */
double sim_runtime(const sim_cluster *c, const sim_workflow *wf, const sim_process *p, int inst,
                   int t);
/* The same under the calibrated model: types without a measurement scale with fit_sens. */
double sim_runtime_fitted(const sim_cluster *c, const sim_workflow *wf, const sim_process *p,
                          int inst, int t);

/* The compute share s of a runtime that the model T_t = T_m * (1 - s + s * speed_m / speed_t)
 * needs to reproduce a measured speed-up: a task taking t_slow seconds on a machine of cpu speed
 * speed_slow and t_fast on one of speed_fast has s = (t_slow / t_fast - 1) /
 * (speed_fast / speed_slow - 1), clamped to [0, 1]. NAN when the speeds are (nearly) equal or a
 * value is not positive. */
double sim_speedup_sens(double t_slow, double t_fast, double speed_slow, double speed_fast);

/* Rows of b[0..nb) that equal a row of a[0..na) in every field except the machine: process,
 * label, order and every measured value. A measurement file of one machine type that copies
 * another's (seen in public data) makes both types look identical. */
struct sim_meas_row;
size_t sim_meas_duplicates(const struct sim_meas_row *a, size_t na, const struct sim_meas_row *b,
                           size_t nb);

/* Run-to-run noise: a lognormal factor exp(sigma z - sigma^2 / 2), z standard normal drawn
 * from (seed, key) alone, so its mean is 1 and a run is reproducible. sigma 0 gives 1. */
double sim_noise_factor(uint64_t seed, uint64_t key, double sigma);

/* Contention on one node (docs/simulation.md): demands of the running tasks summed per
 * resource, against the node's capacities. */
typedef struct sim_demand {
    double cpu; /* busy cores: %cpu / 100 */
    double mem; /* memory-streaming busy cores: cpu * min(1, rss / (memory / cores)) */
    double io;  /* bytes/s: (rchar + wchar) / runtime */
} sim_demand;
/* A task's slowdown factor (>= 1) from the node's total demand d against cores, mem_bw (busy
 * cores) and io_bw (bytes/s; <= 0 switches the term off), with the task's weights w (the share
 * of its runtime each resource accounts for):
 *   1 + w.cpu (max(1, d.cpu / cores) - 1) + w.mem (max(1, d.mem / mem_bw) - 1)
 *     + w.io (max(1, d.io / io_bw) - 1) */
double sim_contention_slowdown(sim_demand d, double cores, double mem_bw, double io_bw,
                               sim_demand w);

/* The I/O capacity of node type t in bytes/s, calibrated from the measurements: the highest
 * rate (rchar + wchar) / runtime any measured task reached on t's machine alone (the disk
 * delivered at least that), over every workflow of w; types without measurements take the
 * highest over all types. 0 when nothing is measured (the I/O term is then off). */
double sim_io_capacity(const sim_cluster *c, const sim_workload *w, int t);

/* Usage of instance inst on node type t: the machine's measurement when there is one, else the
 * mean over measured machines, else the declared usage. */
sim_meas sim_usage(const sim_cluster *c, const sim_workflow *wf, const sim_process *p, int inst,
                   int t);

/* Measurement rows as read from files, before they are matched to processes. */
typedef struct sim_meas_row {
    char process[SIM_NAME_MAX]; /* as in the file: "FASTQC" or "NFCORE:CHIPSEQ:FASTQC" */
    char machine[SIM_NAME_MAX];
    char label[32]; /* lotaru Label column; "" for traces */
    double order;   /* instances are matched across machines in this order */
    sim_meas m;
} sim_meas_row;

typedef struct sim_meas_table {
    size_t n, cap;
    sim_meas_row *rows;
} sim_meas_table;

/* Appends the rows of a lotaru CSV (format "lotaru") or Nextflow trace ("trace") to t.
 * format NULL picks by extension (.csv is lotaru). machine overrides the CSV's Machine column
 * and is required for traces; label (may be NULL) keeps only lotaru rows of that Label.
 * Returns the number of rows added or -1 with err naming file and line. Only COMPLETED trace
 * rows count (failed attempts say nothing about a runtime). */
long sim_meas_read(sim_meas_table *t, const char *path, const char *format, const char *machine,
                   const char *label, tm_err *err);
void sim_meas_table_free(sim_meas_table *t);

/* Room for one more element in a growable array: arrp points at the array pointer, which
 * holds len elements of elem bytes in room for *cap; when full, the room doubles (min when
 * empty). Returns 0, or -1 when out of memory (array and *cap unchanged). */
int sim_grow(void *arrp, size_t len, size_t *cap, size_t elem, size_t min);

#endif
