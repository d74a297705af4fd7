/* podspec.h: Kubernetes Pod, Node and TaskProfile JSON -> the scheduler's snapshot structs.
 *
 * Pure translation (no I/O): effective pod requests (containers, init containers including
 * restartable sidecars, in-place resizes, pod-level resources, overhead) as kube-scheduler
 * computes them, tolerations, nodeSelector,
 * required node affinity, task identity, and for the inter-pod plugins labels, host ports,
 * required and preferred pod (anti-)affinity terms and DoNotSchedule topology spread
 * constraints, DRA resource claims (refused: DynamicResources), and the
 * PersistentVolumeClaims its volumes use (VolumeBinding); node
 * allocatable, labels, taints, Ready condition,
 * unschedulable; TaskProfile labels and mean runtime. Quantities go through lib/quantity.h.
 * Bad input (a malformed quantity, an unknown operator) is an error naming the object and the
 * field, never a silent default. */
#ifndef TAREMA_SCHED_PODSPEC_H
#define TAREMA_SCHED_PODSPEC_H

#include <jansson.h>

#include "lib/error.h"
#include "scheduler/backend/pod.h"
#include "scheduler/backend/snapshot.h"

/* Where task identity lives on a pod. process_label: pod label naming the process;
 * workflow_key: pod label, or else annotation, naming the workflow. profiles: the
 * spec.schedulerName of each profile of the scheduler, NULL-terminated (NULL: one profile); a
 * pod's sched_pod.profile is the index of its own name there, 0 when it is none of them. */
typedef struct sched_keys {
    const char *process_label;   /* default "nextflow.io/processName" */
    const char *workflow_key;    /* default "tarema.io/workflow" */
    const char *const *profiles; /* default NULL */
} sched_keys;

/* The defaults above. */
sched_keys sched_keys_default(void);

/* Profiles' scheduler names (sched_keys.profiles, NULL-terminated; NULL = none): the index of
 * name among them, -1 when it is none of them; and the name of profile i, NULL past the end. */
int sched_profile_index(const char *const *names, const char *name);
const char *sched_profile_name(const char *const *names, size_t i);

/* Pod JSON -> sched_pod (caller frees with sched_pod_free). keys NULL = defaults. s is used
 * only to give extended resources their slots. NULL with err on bad input. */
sched_pod *sched_pod_from_json(sched_snapshot *s, const json_t *pod, const sched_keys *keys,
                               tm_err *err);

/* Records a pod placed on a node (bound, or another scheduler's) with everything the filters
 * and scores need: its effective requests (as sched_pod_requests_from_json) and its metadata for
 * the inter-pod plugins (sched_pod_meta: namespace, labels, host ports, required and preferred
 * pod (anti-)affinity terms, whether it is terminating), parsed by the same code as the pods
 * sched_pod_from_json builds, so that this record equals the one Reserve makes
 * (sched_pod_record). The live cache records every bound pod the informer shows with it.
 * node_name NULL = the pod's spec.nodeName. Re-recording the same uid replaces the
 * record. Returns 0, or -1 with err: when the requests are malformed nothing is recorded; when
 * only the metadata is (the API server validates it, so this is rare) the pod is still recorded
 * with its requests and no metadata (it then takes capacity but holds no ports and no
 * anti-affinity) and err says what was wrong. */
int sched_snapshot_add_pod_json(sched_snapshot *s, const json_t *pod, const char *node_name,
                                tm_err *err);

/* Just the effective requests of a pod: resource.PodRequests as kube-scheduler 1.35 calls it
 * (PodLevelResources and in-place resize on; podspec.c says how). */
int sched_pod_requests_from_json(sched_snapshot *s, const json_t *pod, sched_resources *out,
                                 tm_err *err);
/* The same, and in *x (*nx entries, sorted by id, NULL when none; the caller frees it) the
 * non-zero requests of resources the snapshot keeps sparsely (snapshot.h: past the fixed
 * slots), computed by the same formula; sched_pod_requests_from_json leaves those out. */
int sched_pod_requests_x(sched_snapshot *s, const json_t *pod, sched_resources *out, sched_xres **x,
                         uint32_t *nx, tm_err *err);

/* Node JSON -> sched_node (caller owns it until sched_snapshot_put_node). NULL with err. */
sched_node *sched_node_from_json(sched_snapshot *s, const json_t *node, tm_err *err);

/* TaskProfile (tarema.io/v1alpha1) JSON -> workflow, process (borrowed from the JSON) and the
 * profile (labels 0 when absent, runtime -1 when absent). 0, or -1 with err when spec.workflow
 * or spec.process is missing or a label is not an integer >= 1. */
int sched_task_profile_from_json(const json_t *tp, const char **workflow, const char **process,
                                 sched_task_profile *out, tm_err *err);
/* The same; entries of status.runtimeByGroup that are bad (see below) are left out, a bad
 * status.tailSeconds is ignored, and the first of each is described in warn (warn NULL:
 * silently), so the caller can log it. */
int sched_task_profile_from_json_warn(const json_t *tp, const char **workflow, const char **process,
                                      sched_task_profile *out, tm_err *warn, tm_err *err);

/* status.runtimeByGroup ([{"group", "runs", "meanSeconds", ...}], the labeler's runtime per
 * node group) -> out->group_rt / n_group_rt. An entry without a group id (1..15 characters),
 * a runs count >= 1 and a meanSeconds in [0, a year], a repeated group, or one beyond
 * SCHED_TASK_MAX_GROUPS is skipped. Returns how many were skipped (the first described in warn,
 * which may be NULL); never fails. */
int sched_task_profile_group_runtimes(const json_t *tp, sched_task_profile *out, tm_err *warn);

/* status.tailSeconds (the labeler's expected time from the task's end to its workflow run's
 * end, from complete runs; labeler/run_tail.h) -> out->tail_ms. Absent: 0 (unknown). A value
 * that is not a number in [0, a year], or a tailRuns that is present but not an integer >= 1,
 * leaves tail_ms 0 and is described in warn (appended to what it already says; warn may be
 * NULL). Returns 1 when ignored, else 0; never fails. */
int sched_task_profile_tail(const json_t *tp, sched_task_profile *out, tm_err *warn);

/* nodeSelectorTerms JSON (a pod's required node affinity, a PersistentVolume's
 * spec.nodeAffinity.required) -> terms (*out, *n_out; free with sched_sel_terms_free, also after
 * an error). Not an array: no terms (which match no node). owner and where name the object and
 * field in errors ("pod ns/name", "spec....nodeSelectorTerms"). 0, or -1 with err. */
int sched_sel_terms_from_json(const json_t *terms, const char *owner, const char *where,
                              sched_sel_term **out, size_t *n_out, tm_err *err);

/* True when the pod is finished (phase Succeeded or Failed) and so holds no resources. */
bool sched_pod_json_terminal(const json_t *pod);

#endif
