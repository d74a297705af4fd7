/* engine_internal.h: what the files of the simulator's event loop (engine.c, engine_setup.c,
 * engine_resv.c, engine_result.c) share and nobody else should use: the run's state and the
 * functions one file calls in another. Not part of the public surface (that is sim/engine.h). */
#ifndef TAREMA_SIM_ENGINE_INTERNAL_H
#define TAREMA_SIM_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "labeler/labels.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/plugins/reservation/resv_plan.h"
#include "scheduler/backend/snapshot.h"
#include "sim/engine.h"
#include "sim/history.h"
#include "sim/resv_sim.h"

typedef struct task {
    int wf, run, proc, inst;
    int deps_left;
    int node; /* sim node index, -1 before it starts */
    int slot; /* position in the node's running list */
    int shape;
    uint32_t version;
    double ready, start, end;
    int64_t exp_end_ms;           /* expected end (resv_expected_end) when it started, -1 unknown */
    double remaining, rate, last; /* work in uncontended seconds, progress per second */
    double cpu_demand, mem_demand;
    sim_demand dem, w; /* calibrated model: demands and weights (sim_contention_slowdown) */
    sim_meas usage;    /* what monitoring reports when it completes */
    sched_pod *pod;    /* while pending or running */
    int gang;          /* index in sim.gangs, -1 none */
    int resv;          /* index in sim.resvs (its step's reservation in its run), -1 none */
    bool held;         /* ready, waiting for its reservation's window to open */
    bool rep;          /* in the queue for its whole gang */
} task;

/* A gang (gang: N) of one run: members are tasks first..first+size-1. */
typedef struct gang_st {
    int size, ready; /* members queued (ready and not held) */
    long first;
    int index;
    double complete, start; /* when the last member was queued; when the gang started */
    int attempts;
    sched_gang *g; /* the registry's gang (declared when its first member is queued) */
} gang_st;

/* A step's reservation in one run. */
typedef struct resv_st {
    char name[64];
    int wf, run, proc;
    resv_phase phase;
    bool owner_started;
    bool evict_overrunning;      /* the Reservation's spec.evictOverrunning */
    long overrun_evictions;      /* tasks its open window evicted (resv_overrun.h) */
    double start, end, released; /* seconds */
    char reason[768];
    int nholds;
    int *hnode;   /* sim node */
    char **hname; /* snapshot node name at admission */
    int *hpods;
    sched_resources *hres, *hused; /* held; used by the step's tasks now */
    double used_core_s;
} resv_st;

typedef struct run {
    int wf, idx; /* workflow, run number within it: history runs first (idx < sim.hruns) */
    double arrival, end;
    long base; /* first task index */
    long left;
    int *proc_left; /* unfinished instances per process */
} run;

typedef enum { EV_ARRIVE = 0, EV_FINISH = 1, EV_RESV_OPEN = 2, EV_RESV_CLOSE = 3 } ev_kind;

typedef struct event {
    double t;
    uint64_t seq; /* FIFO among equal times, so runs are deterministic */
    long id;
    uint32_t version;
    int kind;
} event;

typedef struct shape {
    int64_t cpu_milli, mem;
    long pending;
    long blocked_pass; /* pass number in which it failed to fit anywhere */
} shape;

/* A workflow's monitoring history and what the snapshot's task table last got from it. */
typedef struct history {
    sim_history *h;
    size_t n_at_refresh;
    long pending;       /* the workflow's tasks waiting for a node: only they read its labels */
    long *proc_pending; /* the same per process */
    sched_task_profile *published; /* per process; labels all 0 and runtime -1 before */
    double *grp_sum;               /* per process x node group: summed runtime (ms) */
    long *grp_n;                   /* per process x node group: runs */
    double *cpu_sum;               /* per process: summed measured cpu use (cores) */
    long *cpu_n;                   /* per process: runs with a measured cpu use */
    bool structure_known;          /* a run completed: what runs after what was seen */
} history;

typedef struct wfinfo {
    long *proc_off; /* task offset of each process within a run */
    int **succ_all, **succ_each;
    int *nsucc_all, *nsucc_each;
    int *proc_shape;
} wfinfo;

typedef struct sim {
    const sim_cluster *c;
    const sim_workload *w;
    const sim_opts *o;
    sched_snapshot *snap;
    sched_framework *fw;
    int *snap2sim;
    task *tasks;
    long ntasks;
    run *runs;
    int nruns;
    int *first_run; /* per workflow, index in runs */
    int hruns;      /* history runs per workflow (sim_opts.history_runs) */
    int hruns_left; /* workflows whose last history run has not yet ended */
    double t_bench; /* when the measured runs began: every history run had ended */
    wfinfo *wi;
    event *ev;
    size_t nev, capev;
    uint64_t seq;
    long *pend; /* pending heap of task indices */
    size_t npend;
    long *deferred;
    size_t ndeferred;
    shape *shapes;
    int nshapes;
    long pass;
    int **running; /* per node: task indices */
    int *nrunning;
    size_t *caprunning;
    history *hist;
    lab_classes classes[LAB_NFEATURES];
    int queue_dirty;
    double now;
    double *io_cap;    /* per node type, bytes/s (sim_io_capacity) */
    uint64_t shuffles; /* node shuffles so far (the first is the snapshot's own) */
    int64_t *tail;     /* scratch of upward_tails: tails, then ranks */
    size_t ntail;
    long attempts;
    long preemptions, evictions; /* sim_opts.preemption (evictions: its victims only) */
    long gang_preemptions;       /* gangs placed by evicting others (engine_preempt.c) */
    long gang_evictions;         /* running gangs evicted whole by preemption */
    tm_err *err;
    char namebuf[2 * SIM_NAME_MAX + 48];
    gang_st *gangs;
    int ngangs;
    long gang_queued; /* gang representatives in the queue */
    sched_gang_registry *gangreg;
    resv_st *resvs;
    int nresvs;
    sim_resv *rv;
} sim;

/* engine.c: the clock and the queue. */
/* Schedules an event of kind (ev_kind) for task, run or reservation id at time t. 0, or -1
 * when out of memory. */
int eng_ev_push(sim *s, double t, int kind, long id, uint32_t version);
/* A ready task enters the queue (a gang's member once its whole gang is ready). */
int eng_enqueue(sim *s, long ti);
/* Task ti's run-to-run noise factor (1 under the ideal model). */
double eng_noise_of(const sim *s, long ti);
/* "workflow/process#instance (run r)" of task ti, for messages (valid until the next call). */
const char *eng_task_name(sim *s, long ti);
/* Running task vi stops: its work is lost, its node's other tasks speed up; it is not queued
 * again. 0, or -1 with err. */
int eng_stop_task(sim *s, long vi);
/* Evicts running task vi, in no gang: it stops and is queued again (the caller counts why). 0,
 * or -1 with err (a gang's task: engine_preempt.c evicts its whole gang). */
int eng_evict_task(sim *s, long vi);

/* engine_preempt.c: --preemption (sim_opts.preemption), single tasks and gangs. */
/* Sets the units of s->fw's DefaultPreemption to the gangs of s->gangreg (none: nothing), so
 * that a single task's preemption takes a running gang whole or not at all, as live. 0, or -1
 * with err. */
int eng_preempt_setup(sim *s);
/* PostFilter for task ti that fits nowhere: DefaultPreemption chooses a node and victims (a
 * gang among them whole, the plugin's units); the victims leave at once and ti is scheduled
 * again into *d. 0, or -1 with err. */
int eng_preempt_task(sim *s, long ti, int64_t now_ms, sched_decision *d);
/* Gang of task ti (its queue entry) does not fit: its preemption as one unit
 * (sched_gang_preempt, as the live scheduler's), for its waiting tasks pods[0..n-1]. 1 when
 * victims were evicted (the caller tries the gang again), 0 when none could make it fit
 * (nothing evicted), -1 with err. */
int eng_preempt_gang(sim *s, long ti, sched_pod **pods, size_t n, int64_t now_ms);

/* engine_setup.c: the snapshot, the workflows' tasks and runs, gangs and reservations. */
void eng_node_order(int *perm, int n, bool shuffle, uint64_t seed);
int eng_put_nodes(sched_snapshot *snap, const sim_cluster *c, const int *perm, bool shuffle,
                  tm_err *err);
int eng_build_snapshot(sim *s);
int eng_map_nodes(sim *s);
int eng_measured_arrivals(sim *s);
int eng_build_workflows(sim *s);
int eng_build_gangs_resvs(sim *s);

/* engine_resv.c: reservations of steps in a run (sim/resv_sim.h decides, this applies). */
int eng_resv_admit(sim *s, int ri);
bool eng_resv_holding(const sim *s);
int eng_resv_step(sim *s, int ri);
void eng_resv_use(sim *s, const task *t, int n, bool add);
/* Before each scheduling pass: every open window whose step has a task waiting evicts the tasks
 * that overran into its held capacity (resv_overrun_victims, as the live controller). 0, or -1
 * with err. */
int eng_resv_evict_overruns(sim *s);

/* engine_result.c: the result of a finished run (sim_result, engine.h). */
sim_result *eng_collect(sim *s);

#endif
