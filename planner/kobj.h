/* kobj.h: the Kubernetes objects of the planner's controller, built and read here (pure: JSON
 * in, JSON out, the clock passed in).
 *
 *   Workflow     tarema.io/v1alpha1 (charts/tarema/crds/tarema.io_workflows.yaml): spec.steps
 *                as in the native YAML, spec.retries, spec.cancel; status written by the
 *                controller (phase, per step the plan, state, predicted vs actual, makespan).
 *   PodGroup     scheduling.x-k8s.io/v1alpha1, one per step: minMember = the step's pods.
 *   Reservation  tarema.io/v1alpha1 (the resv branch's CRD), one per step: spec.startTime,
 *                endTime, template {requests of one pod}, count = the step's pods, nodes (the
 *                planned nodes, each once), owner {kind: PodGroup, name}, schedulerName.
 *   Pod          one per gang member, gated by tarema.io/planned until its window opens.
 *
 * Every object of a step is named WORKFLOW-STEP (the step's name lower-cased, other characters
 * than [a-z0-9-] as '-'), pods WORKFLOW-STEP-I; all carry the labels planner.tarema.io/workflow and
 * planner.tarema.io/step, so the controller rebuilds its state from the API server alone. */
#ifndef TAREMA_PLANNER_KOBJ_H
#define TAREMA_PLANNER_KOBJ_H

#include <jansson.h>
#include <stdint.h>

#include "lib/error.h"
#include "planner/workflow.h"

#define PL_GROUP       "tarema.io"
#define PL_GV          "tarema.io/v1alpha1"
#define PL_PG_GV       "scheduling.x-k8s.io/v1alpha1"
#define PL_GATE        "tarema.io/planned"
#define PL_LABEL_WF    "planner.tarema.io/workflow"
#define PL_LABEL_STEP  "planner.tarema.io/step"
#define PL_LABEL_PG    "scheduling.x-k8s.io/pod-group"
#define PL_ANN_EXPECT  "tarema.io/expected-duration"
#define PL_MANAGED_BY  "tarema-planner"
#define PL_OBJNAME_MAX 254

/* Step states in status.steps[].state. */
#define PL_ST_PLANNED   "Planned"   /* reserved, pods gated */
#define PL_ST_RELEASED  "Released"  /* gates removed, not all pods running yet */
#define PL_ST_RUNNING   "Running"   /* every pod bound and started */
#define PL_ST_SUCCEEDED "Succeeded" /* every pod succeeded */
#define PL_ST_FAILED    "Failed"    /* a pod failed and no retry is left */
#define PL_ST_CANCELLED "Cancelled" /* cancelled, or released after an earlier step failed */

/* RFC 3339 UTC ("2026-11-24T00:15:00Z") <-> seconds since the epoch. -1 when unparsable. */
int64_t pl_time_parse(const char *s);
char *pl_time_format(int64_t t, char *buf, size_t size);

/* WORKFLOW-STEP as a DNS-1123 name into buf; -1 when longer than 63 characters (names that
 * must also serve as label values). */
int pl_step_object_name(const char *wf, const char *step, char *buf, size_t size);

/* The workflow of a Workflow object: metadata.name and spec.steps through the native reader
 * (every check of planner/workflow.c), plus object-name collisions and lengths. */
pl_workflow *pl_workflow_from_object(const json_t *obj, tm_err *err);

/* A new Workflow object from a parsed workflow document (native or CWL already converted to
 * native form by pl_workflow_native_json) in namespace ns. */
json_t *pl_workflow_object(const json_t *native, const char *ns, int retries);
/* The native form of a parsed workflow: what the Workflow's spec.steps holds. */
json_t *pl_workflow_native_json(const pl_workflow *wf);

/* Builders. per-step objects carry an ownerReference to the Workflow (uid may be NULL). */
json_t *pl_podgroup_object(const json_t *wfobj, const pl_step *s);
/* nodes: node name per pod (the plan's); start/end absolute seconds. */
json_t *pl_reservation_object(const json_t *wfobj, const pl_step *s, int64_t start, int64_t end,
                              const char *const *nodes, int npods, const char *scheduler_name);
/* The reservation's spec alone (for a merge patch when the plan moves). */
json_t *pl_reservation_spec(const pl_step *s, int64_t start, int64_t end, const char *const *nodes,
                            int npods, const char *owner, const char *scheduler_name);
/* Pod index i (0-based) of step s; step_json is the step's entry of spec.steps (image,
 * command, annotations); attempt counts retries (0 first). */
json_t *pl_pod_object(const json_t *wfobj, const pl_step *s, const json_t *step_json, int i,
                      int attempt, const char *scheduler_name);

/* "k=v,k2=v2" (NULL or "": everything) as an object, NULL when malformed; and whether an
 * object's metadata.labels match it. */
json_t *pl_selector_parse(const char *sel);
int pl_selector_match(const json_t *sel, const json_t *obj);

/* True when a pod still carries the planner's scheduling gate. */
int pl_pod_gated(const json_t *pod);

#endif
