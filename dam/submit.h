/* submit.h: submitting a request's pods to the chosen cluster and following them (the DAM's
 * optional submission, with failover in dam/serve.c).
 *
 * The pods are the request's `submit.pods` templates, created in the cluster's namespace with
 * the label tarema.io/dam-request=<id> and names dam-<id prefix>-<attempt>-<i>; restartPolicy
 * Never unless given (a failed pod must fail, not restart). */
#ifndef TAREMA_DAM_SUBMIT_H
#define TAREMA_DAM_SUBMIT_H

#include <jansson.h>

#include "lib/error.h"
#include "dam/submitted.h"
#include "lib/kube.h"

/* Checks the submit object of a request: {"pods": [Pod, ...]} with 1..1000 pods, each an
 * object with spec.containers a non-empty list, or {"workflow": {...}} (a planner Workflow,
 * dam/submit_workflow.h). err names the field ("submit.pods[1].spec.containers: expected a
 * non-empty list"). 0 or -1. */
int dam_submit_check(const json_t *submit, tm_err *err);

/* The pod objects to create for attempt `attempt` of request id in namespace ns (pure). New
 * array. */
json_t *dam_submit_pods(const json_t *submit, const char *id, int attempt, const char *ns);

/* Creates the pods; on a failure deletes the ones created. 0 or -1 with err. */
int dam_submit_create(tm_kube *k, const json_t *pods, tm_err *err);

/* The state of the request's pods of `expected` in ns; reason (size n) says which pod failed
 * and why. -1 with err when the cluster cannot be read (the caller waits and retries). */
int dam_submit_follow(tm_kube *k, const char *ns, const char *id, size_t expected,
                      dam_pods_state *state, char *reason, size_t n, tm_err *err);

/* Deletes the request's pods in ns (best effort). 0 or -1. */
int dam_submit_delete(tm_kube *k, const char *ns, const char *id, tm_err *err);

#endif
