/* controller.h: `tarema-planner run`, the Workflow controller (issue 15, execution).
 *
 * Leader-elected (lib/leader: Lease tarema-planner); informers on Workflows, Nodes, Pods,
 * Reservations and TaskProfiles; every tick (1 s) it reconciles each Workflow:
 *  1. observes its steps' pods (label planner.tarema.io/workflow): Succeeded, Failed, Running;
 *  2. plans or replans the steps not yet released (the solver of planner/solve.h over the
 *     occupancy of planner/occupancy.h): on submit, every cycle, when a step ends early or runs
 *     past its planned end, when a planned node goes away; a step after one still running
 *     may not start before that one's expected end;
 *  3. creates each planned step's PodGroup, Reservation and gated pods (idempotent: names are
 *     fixed, so a restarted controller finds them), and patches a moved Reservation, or
 *     replaces it when the scheduler refused it (after a backoff, planner/replan.h), it ended
 *     before the step, or the window it holds no longer serves the new plan;
 *  4. removes the gate tarema.io/planned when the window opens, every predecessor succeeded
 *     and (--require-admission, default) the scheduler has the step's Reservation Active;
 *  5. a failed pod (or one of a released step gone): retried (spec.retries, default
 *     --retries) as new pods, else the workflow fails and every later step's reservation and
 *     gated pods are deleted; spec.cancel (set by `tarema-planner cancel`) does the same for
 *     every unfinished step;
 *  6. writes status (phase, per step plan, state, predicted vs actual, makespan) and events.
 * Steps 3 and 4 depend on the step's mode (planner/modes.h): reserve as above; proactive (no
 * Reservation, pods also behind PL_GATE_ORDER, the planner's gate removed at the predecessors'
 * predicted end minus the learned wait from --db, the order gate once they succeeded);
 * on-completion (no Reservation, ungated once the predecessors succeeded).
 * Everything it knows is in the API server (the Workflow's status and the labelled objects):
 * a restarted or newly elected controller resumes from there. */
#ifndef TAREMA_PLANNER_CONTROLLER_H
#define TAREMA_PLANNER_CONTROLLER_H

#include <signal.h>
#include <stdint.h>

typedef struct pl_ctl_config {
    const char *kubeconfig, *context;
    const char *namespace; /* Workflows of this namespace only; NULL: all */
    const char *identity;  /* leader election identity; NULL: hostname_pid */
    const char *lease_ns, *lease_name;
    const char *scheduler_name; /* schedulerName of the step pods */
    int64_t cycle_s;            /* replan every cycle (default 600) */
    int64_t slot_s;             /* planning slot (default 60) */
    int64_t time_limit_s;       /* ILP time limit (default 10) */
    int64_t unknown_hold_s;     /* a running pod without expected end holds this long */
    int retries;                /* default retries of a failed step */
    double load_threshold;      /* WARP's: plan only while the predicted load is below; 0 off */
    int tick_ms;                /* reconcile period (default 1000) */
    int leader_elect;           /* 0: act at once (tests, a single replica) */
    const char *node_selector;  /* "k=v,...": plan on these nodes only, pods get it as their
                                   nodeSelector; NULL: every node */
    int require_admission;      /* ungate a step only once its Reservation is Active (a refused
                                   one is planned again, see reservation_retries); 0 for
                                   schedulers that do not admit Reservations (kube-scheduler) */
    const char *db;          /* the learned waits' database (proactive steps' estimates); NULL: the
                                default estimate */
    int release_on_start;    /* a proactive step is released no later than when every
                                predecessor started (pl_proactive_release_at; default 1) */
    int64_t release_lead_s;  /* and no later than this long before its predecessors' predicted
                                end (pl_proactive_ungate_at with it as the estimate); 0 off */
    int reservation_retries; /* a step whose Reservation the scheduler refused is planned and
                                reserved again this often (backoff a slot, doubling), then runs
                                on-completion (default 4) */
} pl_ctl_config;

/* Runs until *stop becomes non-zero. Returns 0, or 1 with a message on stderr. */
int pl_ctl_run(const pl_ctl_config *cfg, volatile sig_atomic_t *stop);

#endif
