/* submit_workflow.h: a request's planner Workflow on a cluster (the DAM's optional submission
 * of a Workflow rather than pods; failover in dam/serve.c).
 *
 * The request's `submit.workflow` holds the native workflow YAML's fields (docs/planner.md):
 * `steps` (required), `retries` and `name` (optional). The DAM creates a tarema.io/v1alpha1
 * Workflow named dam-<id prefix>-<attempt> in the cluster's namespace, labelled
 * tarema.io/dam-request=<id>, with spec {steps, retries}; that cluster's `tarema-planner run`
 * plans and runs it, and the DAM follows status.phase. */
#ifndef TAREMA_DAM_SUBMIT_WORKFLOW_H
#define TAREMA_DAM_SUBMIT_WORKFLOW_H

#include <jansson.h>
#include <stddef.h>

#include "dam/submitted.h"
#include "lib/error.h"
#include "lib/kube.h"

#define DAM_WORKFLOW_GV "tarema.io/v1alpha1"

/* Checks submit.workflow with the planner's own parser (every check of `tarema-planner plan`
 * that needs no cluster), so err names the field ("submit.workflow: step 'sim': duration is
 * required ..."). Unknown keys are refused, `cancel` among them. 0 or -1. */
int dam_workflow_check(const json_t *wf, tm_err *err);

/* The largest gang (a step's `pods`, default 1) of the workflow: the shape the ranking asks
 * waits for. */
size_t dam_workflow_max_pods(const json_t *wf);

/* The Workflow's object name for attempt `attempt` of request id (size n >= 32). */
void dam_workflow_name(const char *id, int attempt, char *out, size_t n);

/* The Workflow object to create (pure). New reference. */
json_t *dam_workflow_object(const json_t *wf, const char *id, int attempt, const char *ns);

/* Creates it. 0 or -1 with err. */
int dam_workflow_create(tm_kube *k, const json_t *obj, tm_err *err);

/* The Workflow's state from its status.phase: Succeeded -> SUCCEEDED, Failed or Cancelled
 * (or the object gone) -> FAILED with reason, anything else RUNNING. -1 with err when the
 * cluster cannot be read (the caller retries later). */
int dam_workflow_follow(tm_kube *k, const char *ns, const char *name, dam_pods_state *state,
                        char *reason, size_t n, tm_err *err);

/* The state a Workflow object is in (pure; obj NULL = gone). */
dam_pods_state dam_workflow_state(const json_t *obj, char *reason, size_t n);

/* Deletes the Workflow (cancels it: its reservations, pod groups and pods are owned by it).
 * 404 counts as done. 0 or -1. */
int dam_workflow_delete(tm_kube *k, const char *ns, const char *name, tm_err *err);

#endif
