/* workflow.h: a workflow to plan: steps, each a gang of identical pods with per-pod requests
 * and a walltime, and the dependencies between steps. Read from the native YAML form
 * (workflow.c) or a CWL v1.2 subset plus a deployment file (cwl.c); both end in the same
 * checks (pl_workflow_finish): unique names, known dependencies, no cycle.
 *
 * Native YAML:
 *   name: turbine
 *   steps:
 *     - name: LES
 *       pods: 2                           # gang size (default 1)
 *       requests: {cpu: 36, memory: 64Gi} # per pod
 *       duration: 15m                     # walltime, or
 *       durations: {c2: 10m}              # with duration: the walltime on these node groups
 *       task: chipseq/BWA_MEM             # predicted from that TaskProfile (planner/predict.h)
 *       after: [A, B]                     # steps that must end before this one starts
 *       image: les:1.0                    # or command: [...]
 *       annotations: {k: v}               # copied onto the step's pods (controller only) */
#ifndef TAREMA_PLANNER_WORKFLOW_H
#define TAREMA_PLANNER_WORKFLOW_H

#include <jansson.h>
#include <stdint.h>

#include "lib/error.h"

#define PL_NAME_MAX 128
/* Node groups a step may carry its own runtime for (the scheduler keeps 8 per TaskProfile). */
#define PL_GROUPS_MAX 8

/* A step's runtime on one node group (a node type of the cluster), in seconds. */
typedef struct pl_group_time {
    char group[16];
    int64_t seconds;
} pl_group_time;

typedef struct pl_step {
    char name[PL_NAME_MAX];
    char image[256]; /* "" when the step gives a command only */
    int pods;
    int64_t cpu_milli; /* per pod */
    int64_t mem_bytes; /* per pod */
    int64_t duration_s;
    int nafter;
    int *after; /* indices of the steps that must end first */
    /* task: WORKFLOW/PROCESS when the walltime is to be predicted from its TaskProfile; its
     * duration_s stays 0 until pl_predict_durations fills it in. */
    char task[256];
    /* Earliest start in seconds from now (0: now). The controller sets it when it replans the
     * steps after one still running: they may not start before its expected end. */
    int64_t not_before_s;
    /* Runtimes per node group (pl_predict_durations fills them for task steps from
     * status.runtimeByGroup); a group not listed runs the step for duration_s. */
    int ngroup_s;
    pl_group_time group_s[PL_GROUPS_MAX];
    /* group_s came from the step's own `durations:` (the user named the groups: a group the
     * cluster does not have is an error, pl_check_step_groups), not from a TaskProfile */
    int group_s_given;
} pl_step;

typedef struct pl_workflow {
    char name[PL_NAME_MAX];
    int nsteps;
    pl_step *steps; /* input order */
    int *order;     /* a topological order of step indices */
} pl_workflow;

/* Native form; source names the file in messages. NULL with err naming step and field. */
pl_workflow *pl_workflow_from_native(const json_t *root, const char *source, tm_err *err);

/* CWL v1.2 subset (see cwl.c and docs/planner.md); deploy is the deployment file mapping
 * every tool to an image. */
pl_workflow *pl_workflow_from_cwl(const json_t *root, const char *source, const json_t *deploy,
                                  const char *deploy_source, tm_err *err);

/* True when a parsed document looks like CWL (has cwlVersion or $graph). */
int pl_is_cwl(const json_t *root);

/* Shared tail of both readers: dependency names in after_names (nafter per step, names
 * already in the steps' order) become indices; duplicates, unknown names and cycles are
 * errors; fills order. Frees after_names. */
int pl_workflow_finish(pl_workflow *wf, char ***after_names, const char *source, tm_err *err);

int pl_workflow_find(const pl_workflow *wf, const char *name);
void pl_workflow_free(pl_workflow *wf);

#endif
