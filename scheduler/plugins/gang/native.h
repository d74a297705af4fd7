/* native.h: Kubernetes' own gang API (scheduling.k8s.io) at whichever version the API server
 * serves, JSON -> plain structs, and the PodGroup status condition kube-scheduler writes.
 *
 *   1.35  v1alpha1  Workload only (spec.podGroups[].policy); pods: spec.workloadRef
 *   1.36  v1alpha2  Workload (spec.podGroupTemplates[].schedulingPolicy) + PodGroup
 *                   (spec.schedulingPolicy, spec.podGroupTemplateRef.workload {workloadName,
 *                   podGroupTemplateName}); pods: spec.schedulingGroup.podGroupName;
 *                   status condition PodGroupScheduled
 *   1.37  v1beta1   the same objects; the PodGroup's reference becomes spec.workloadRef
 *                   {workloadName, templateName}; the condition PodGroupInitiallyScheduled,
 *                   which once True is never set back to False; v1alpha3 (alpha, with
 *                   CompositePodGroup) has the same PodGroup shape
 *
 * The version is never configured: the live scheduler reads the group's discovery document and
 * each version's resource list and asks sched_native_api_pick which to use. Pure (no I/O, the
 * time comes in as text). */
#ifndef TAREMA_SCHED_NATIVE_H
#define TAREMA_SCHED_NATIVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/plugins/gang/podgroup.h"

#define SCHED_NATIVE_GROUP "scheduling.k8s.io"

/* The versions tarema knows, newest first (the order sched_native_api_pick prefers). */
extern const char *const sched_native_versions[];
extern const size_t sched_native_n_versions;

/* What one served version offers. */
typedef struct sched_native_api {
    char version[16];       /* "v1beta1", "" when none is served */
    char group_version[48]; /* "scheduling.k8s.io/v1beta1" */
    bool workloads;         /* serves workloads */
    bool podgroups;         /* serves podgroups (1.36+) */
    bool podgroup_status;   /* serves podgroups/status */
    const char *condition;  /* PodGroup condition type of this version, NULL without PodGroups */
} sched_native_api;

/* The versions of group (the APIGroup document at /apis/scheduling.k8s.io) that tarema knows,
 * newest first, into out (room for sched_native_n_versions). Returns how many; 0 when the
 * document lists none (or is no APIGroup: then -1 with err). */
int sched_native_api_versions(const json_t *group, const char **out, tm_err *err);

/* One version's APIResourceList (GET /apis/scheduling.k8s.io/VERSION) -> what it serves. 0, or
 * -1 with err when the document is no resource list of a known version of the group. */
int sched_native_api_from_resources(const json_t *list, sched_native_api *out, tm_err *err);

/* The PodGroup of 1.36+ (either version): its gang policy and where it came from. */
typedef struct sched_native_podgroup {
    sched_gang_spec spec; /* min_member = schedulingPolicy.gang.minCount (1 for basic) */
    bool basic;           /* schedulingPolicy.basic: no gang, pods one by one */
    /* spec.disruptionMode single (v1alpha2 "Pod"): preemption may take its members one by one,
     * as kube-scheduler does; all (or absent): the group is a victim only as a whole */
    bool disrupt_single;
    char *workload; /* the Workload and template it was made from, NULL when not given */
    char *template_name;
    int64_t generation; /* metadata.generation (observedGeneration of the conditions) */
} sched_native_podgroup;

void sched_native_podgroup_free(sched_native_podgroup *p); /* frees the contents, not p */
/* PodGroup JSON -> *out. 0, or -1 with err naming the object and field ("PodGroup ns/name:
 * spec.schedulingPolicy.gang.minCount must be at least 1, got 0"); *out empty on error. */
int sched_native_podgroup_from_json(const json_t *pg, sched_native_podgroup *out, tm_err *err);

/* The scheduling condition as kube-scheduler sets it (apimachinery's SetStatusCondition):
 * status True reason "Scheduled" once the gang is placed; False with reason "Unschedulable" or
 * "SchedulerError" and the message otherwise. lastTransitionTime (now, RFC 3339) changes only
 * when the status flips; observedGeneration is the PodGroup's generation. A True condition
 * stays True (a later failure changes nothing), as in kube-scheduler 1.36 and 1.37.
 * conditions: the PodGroup's status.conditions (NULL or an array). Returns 1 and *out (a new
 * array: the whole list with this condition set) when something changed, 0 when nothing would
 * change, -1 with err on bad input or OOM. */
typedef struct sched_native_condition {
    const char *type;    /* sched_native_api.condition */
    bool scheduled;      /* True */
    const char *reason;  /* "Scheduled", "Unschedulable", "SchedulerError" */
    const char *message; /* may be "" */
    int64_t generation;
    const char *now; /* "2026-11-28T23:59:00Z" */
} sched_native_condition;
int sched_native_set_condition(const json_t *conditions, const sched_native_condition *c,
                               json_t **out, tm_err *err);

#endif
