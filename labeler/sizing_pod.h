/* sizing_pod.h: what the admission webhook does to one pod, as pure functions (JSON in, JSON
 * out, no I/O): recognise a Nextflow task pod, find whether an earlier attempt of the same task
 * was OOMKilled, decide its requests from its process's plan (sizing_plan.h), and write the
 * AdmissionReview response with its JSONPatch.
 *
 * A task pod is what Nextflow 24.10's k8s executor creates: labels nextflow.io/app=nextflow,
 * nextflow.io/taskName ("PROCESS (tag)" in label-value form), nextflow.io/processName,
 * nextflow.io/runName; the workflow comes from the tarema.io/workflow annotation or label (the
 * scheduler's workflow key). A retry is a new pod (new hash, new name) with the same taskName
 * and runName; Nextflow keeps failed pods (it deletes only successful ones), so the earlier
 * attempts are the pods carrying both labels, and one whose container terminated with reason
 * OOMKilled failed at its memory limit.
 *
 * The decision, per resource (cores = requests.cpu, memory = requests.memory and
 * limits.memory, the way Nextflow sets memory):
 *   - not a task, annotation tarema.io/sizing: "off", no containers, node sizes unknown:
 *     untouched;
 *   - first attempt, plan ready: the plan's first bucket, at most what the pod declares (a
 *     declaration is an upper bound; none: the plan alone);
 *   - first attempt, no ready plan (empty or single-sample history): the declaration, else
 *     the whole machine (the largest node);
 *   - after an OOMKilled attempt with limit L: the plan's next bucket above L (the whole
 *     machine after the last; with no ready plan the whole machine), and not less than a
 *     larger declaration (a pipeline whose retry asks more gets it). Cores stay as for a first
 *     attempt: an exceeded CPU request throttles, it does not kill.
 * Every value written is at most the largest node, and cpu never above the container's cpu
 * limit. */
#ifndef TAREMA_LABELER_SIZING_POD_H
#define TAREMA_LABELER_SIZING_POD_H

#include <jansson.h>
#include <stdbool.h>

#include "labeler/sizing_plan.h"
#include "lib/error.h"

#define SZ_POD_OPT_OUT      "tarema.io/sizing" /* annotation; "off" opts a pod out */
#define SZ_POD_WORKFLOW_KEY "tarema.io/workflow"
#define SZ_POD_NAME_MAX     64 /* a label value (63) and its NUL */

typedef struct sz_pod {
    bool task;      /* a Nextflow task pod with a process */
    bool opted_out; /* tarema.io/sizing: "off" */
    bool has_container;
    char workflow[SZ_POD_NAME_MAX], process[SZ_POD_NAME_MAX]; /* label-value form */
    char task_name[SZ_POD_NAME_MAX], run[SZ_POD_NAME_MAX];    /* as the labels say */
    double declared[SZ_RES_N]; /* container 0: cpu request (cores), memory limit else request
                                  (bytes); NAN when unset */
    double cpu_limit;          /* NAN when unset */
} sz_pod;

/* Reads a pod object (AdmissionReview request.object). A pod without metadata, with labels
 * that are not strings, or with unparsable or negative quantities is malformed: -1 with err
 * (the webhook lets it pass untouched). A quantity of 0 counts as unset. */
int sz_pod_parse(const json_t *pod, sz_pod *out, tm_err *err);

/* The memory limit (else request) of the largest earlier attempt whose container terminated
 * OOMKilled (state or lastState), among pods (a JSON array of Pods); NAN when none. */
double sz_pod_failed_memory(const json_t *pods);

typedef struct sz_decision {
    bool patch;             /* false: the pod passes untouched */
    bool retry;             /* sized as the retry of an OOMKilled attempt */
    double value[SZ_RES_N]; /* cores and bytes written (when patch) */
    char reason[160];       /* for the log and the response's warning */
} sz_decision;

/* plan NULL = no history for the process; node_max = the largest node's allocatable cores and
 * bytes (<= 0 or NAN: unknown); failed_memory from sz_pod_failed_memory. */
void sz_pod_decide(const sz_pod *pod, const sz_plan *plan, const double node_max[SZ_RES_N],
                   double failed_memory, sz_decision *d);

/* The JSONPatch (an array) that gives container 0 the decision's requests.cpu, requests.memory
 * and limits.memory, keeping every other key of its resources. New reference, NULL when the
 * pod has no container. */
json_t *sz_pod_patch(const json_t *pod, const sz_decision *d);

/* The AdmissionReview v1 response to review (its request.uid): allowed, with the patch
 * (base64 JSONPatch) when not NULL. Malformed reviews (no request.uid) get NULL. New
 * reference. */
json_t *sz_admission_response(const json_t *review, const json_t *patch, const char *warning);

#endif
