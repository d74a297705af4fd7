/* engine.h: the discrete-event simulation of a workload on a cluster under one policy.
 *
 * The loop keeps a binary heap of events (workflow-run arrivals, task completions) and a
 * pending queue of ready tasks ordered by the policy's own queue sort. After all events of one
 * instant it runs a scheduling pass: every pending task, in queue order, goes through the
 * scheduler's framework (scheduler/plugins/policy/policy.h: filters, score, select) against a
 * sched_snapshot that the simulator owns, is reserved there (sched_framework_reserve) and
 * removed again when it completes, exactly as the live scheduler assumes and forgets pods.
 * Completed tasks feed a monitoring history per workflow (sim/history.h); task labels and
 * expected runtimes follow from it with the labeler's arithmetic (labeler/labels.h) after every
 * completion, as the live labeler relabels on every stored run, and are written into the
 * snapshot's task-profile table, so the first run of a workflow starts unlabeled.
 *
 * Ideal model (--ideal --contention): a task's progress rate on a node is
 *   1 / (s0 + s_cpu * max(1, D_cpu / cores) + s_mem * max(1, D_mem / mem_bandwidth))
 * where D_cpu is the sum of %cpu/100 of the node's running tasks, D_mem the same weighted by
 * each task's memory sensitivity, and s_* the task's sensitivities (model.h); rates are
 * recomputed whenever a task starts or ends on the node. The calibrated model (default) uses
 * sim_contention_slowdown (model.h) with per-task demands and weights from the measurements.
 *
 * Gangs and reservations (docs/simulation.md): a gang (gang: N) enters the queue once all its
 * tasks are ready and is placed whole or not at all with sched_gang_try_place
 * (scheduler/plugins/gang/gang.h); a step's reservation is admitted at its run's arrival with
 * resv_plan_admit, honoured by the Filter plugin of sim/resv_sim.h and released by resv_decide
 * (scheduler/plugins/reservation/resv_plan.h); once its window is open and a task of the step
 * waits, the tasks that overran into its held capacity are evicted as resv_overrun_victims
 * chooses (scheduler/plugins/reservation/resv_overrun.h; unless evict_overrunning: false). */
#ifndef TAREMA_SIM_ENGINE_H
#define TAREMA_SIM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "labeler/labels.h"
#include "lib/error.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/snapshot.h"
#include "sim/model.h"

/* Run-to-run noise of the calibrated model: the sigma of log runtime between repeated
 * measurements of the same task and input on identical machines (lotaru asok01 vs asok02,
 * pooled over chipseq and eager; docs/simulation.md). */
#define SIM_NOISE_SIGMA_DEFAULT 0.09

/* Largest cluster reshuffled per run: a reshuffle re-puts every node of the snapshot, whose
 * node removal scans every recorded pod, so it costs nodes x pods per run (54 s of 57 s on the
 * 5,000-node, 100,000-task benchmark). Larger, generated clusters keep one shuffle. */
#define SIM_RESHUFFLE_MAX_NODES 1000

typedef struct sim_opts {
    const char *policy; /* a name from sched_policy_names() */
    uint64_t seed;      /* node-order shuffle, noise (the paper shuffles the node list per run) */
    bool shuffle;       /* false: nodes keep their cluster-file order (tests) */
    bool contention;    /* slow co-located tasks down (see above) */
    bool record_tasks;  /* keep every task's placement and times (for --gantt) */
    /* The calibrated model (default; docs/simulation.md): sensitivities fitted to measured
     * speed-ups, contention with cpu, memory-bandwidth and I/O terms. false: the ideal model
     * (the cpu/mem contention term above, sensitivity from %cpu). */
    bool calibrated;
    bool reshuffle_runs; /* a new node shuffle at every workflow-run arrival (clusters of up
                          * to SIM_RESHUFFLE_MAX_NODES nodes) */
    double noise_sigma;  /* lognormal run-to-run noise, 0 = off */
    /* The paper's protocol (section V): before the measured runs, each workflow runs this
     * many times only to build history. They place and feed history as any run does, all of
     * them at t = 0; the measured runs arrive when the last has ended, and the results count
     * only the measured runs (times from when they began). 0 = every run is measured. */
    int history_runs;
    /* kube-scheduler's DefaultPreemption (docs/preemption.md): a task that fits nowhere evicts
     * running tasks of lower priority (workflow key priority), which lose their work and are
     * queued again. Off by default: the paper's workflows all have one priority. */
    bool preemption;
} sim_opts;

#define SIM_HISTORY_RUNS_DEFAULT 1

/* The calibrated model: contention, noise SIM_NOISE_SIGMA_DEFAULT, a shuffle per run, and
 * SIM_HISTORY_RUNS_DEFAULT history run per workflow. */
void sim_opts_default(sim_opts *o);
/* The ideal model (--ideal): no contention, no noise, one shuffle per simulation, no
 * history run (the first measured run is unlabeled). */
void sim_opts_ideal(sim_opts *o);

/* The snapshot the simulator schedules against, as the live cache would hold it for the same
 * cluster: one ready node per simulated node with allocatable cpu (millicores), memory and
 * SIM_POD_SLOTS pods, and the labels tarema.io/{cpu,mem,io,group} from the profiler grouping
 * (plus tarema.io/sim-node, the simulated node's name). With shuffle, node names are
 * "<pos>-<name>" with pos a seeded permutation, so name order (every policy's tie-break) is
 * the shuffled list order. Caller frees with sched_snapshot_free; NULL with err. */
sched_snapshot *sim_snapshot_new(const sim_cluster *c, bool shuffle, uint64_t seed, tm_err *err);

/* The node classes the labeler computes task labels against (labeler/groups.h): the node
 * groups with their total cores and labels, pooled per feature, weakest first, exactly as the
 * live labeler derives them from the Node objects. Returns 0 or -1 with err. */
int sim_label_classes(const sim_cluster *c, lab_classes out[LAB_NFEATURES], tm_err *err);

/* The pod of task task_index (instance of p in wf), ready at ready_s seconds: requests, task
 * identity (workflow, process) and creation time, as the pod Nextflow would submit. Caller frees
 * with sched_pod_free; NULL when out of memory. */
sched_pod *sim_pod_new(const sim_workflow *wf, const sim_process *p, long task_index,
                       double ready_s);

/* One task as it ran. */
typedef struct sim_task_rec {
    int wf, run, proc, inst, node;
    double ready, start, end;
} sim_task_rec;

typedef struct sim_run_rec {
    int wf, run;
    double arrival, end;
    double bound; /* the shortest makespan any policy could reach for this run (sim/bound.h) */
} sim_run_rec;

typedef struct sim_wf_stats {
    int runs;
    double makespan_mean, makespan_first, makespan_rest_mean; /* rest: runs 2.. (NAN if 1) */
    double makespan_history;    /* mean of the history runs, not measured (NAN: none) */
    double makespan_bound_mean; /* mean of the measured runs' bounds (sim/bound.h) */
    double task_runtime_mean;   /* seconds */
    double pending_mean;        /* ready -> start, seconds */
    long tasks;
} sim_wf_stats;

typedef struct sim_group_stats {
    int nodes;
    double cores;
    long tasks;         /* tasks placed on the group */
    double busy_core_s; /* requested cores x runtime */
    double utilisation; /* busy_core_s / (cores x horizon) */
} sim_group_stats;

/* One gang (gang: N) of one run as it ran: ready when its last member was, start when all
 * started (together, by construction). */
typedef struct sim_gang_rec {
    int wf, run, proc, index, size;
    int attempts; /* placement attempts (sched_gang_try_place) */
    double ready, start;
} sim_gang_rec;

/* One reservation of one run: its window, what it held and how it ended. */
typedef struct sim_resv_rec {
    int wf, run, proc, count;
    char phase[16];              /* Released, Expired or Failed (resv_phase_name) */
    char reason[768];            /* Failed: why admission refused it; else how it was released */
    double start, end, released; /* window and release time (NAN when never admitted) */
    double held_core_s;          /* cores held x (released - start) */
    double used_core_s;          /* the step's tasks on the held nodes, inside the window */
    long overrun_evictions;      /* tasks its open window evicted for running past their end */
    long first_hold, nholds;     /* its entries in sim_result.holds */
} sim_resv_rec;

typedef struct sim_resv_hold {
    int node, pods; /* sim node index, tasks' worth held there */
    double cores;
} sim_resv_hold;

typedef struct sim_result {
    char policy[32];
    const sim_cluster *cluster;   /* borrowed */
    const sim_workload *workload; /* borrowed */
    double horizon;               /* last completion time */
    long tasks;
    double task_runtime_mean, pending_mean;
    long sched_attempts;   /* framework schedule calls (history runs' included) */
    long preemptions;      /* tasks placed by evicting others (sim_opts.preemption) */
    long evictions;        /* tasks evicted for them, their work lost (gangs' members too) */
    long gang_preemptions; /* gangs placed by evicting others as one unit (gang_preempt.h) */
    long gang_evictions;   /* running gangs evicted whole, for a task or a gang */
    /* tasks evicted by the measured runs' reservations for overrunning into their open window
     * (sim_resv_rec.overrun_evictions summed; their work lost), with or without preemption */
    long overrun_evictions;
    int history_runs; /* per workflow, before the measured runs (sim_opts.history_runs) */
    double wall_s;    /* wall-clock time of the run */
    sim_wf_stats *wf; /* per workflow */
    /* The least geometric mean over workflows of their mean makespans that any policy could
     * reach (sim/bound.h: each run's bound, and for workflows sharing the cluster the order in
     * which they can finish); NAN when a workflow has no positive bound. */
    double bound_geomean;
    int nruns;
    sim_run_rec *runs;
    int ngroups;
    sim_group_stats *groups;
    sim_task_rec *task_recs; /* tasks entries when record_tasks, else NULL */
    long ngangs, nresvs, nholds;
    sim_gang_rec *gangs;
    sim_resv_rec *resvs;
    sim_resv_hold *holds;
} sim_result;

/* Simulates w on c under opts. c and w must outlive the result. Returns a new result (free
 * with sim_result_free) or NULL with err (unknown policy, a policy failure). */
sim_result *sim_run(const sim_cluster *c, const sim_workload *w, const sim_opts *opts, tm_err *err);
void sim_result_free(sim_result *r);

/* The paper's experiment design: each workflow alone on the empty cluster with its own history
 * (all its runs), one workflow after the other. The merged result lists the workflows in
 * workload order; times of workflow k are offset by the horizons of workflows 0..k-1. */
sim_result *sim_run_isolated(const sim_cluster *c, const sim_workload *w, const sim_opts *opts,
                             tm_err *err);

#endif
