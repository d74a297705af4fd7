/* podgroup.h: the two ways a gang is declared, JSON -> plain structs, and a pod's membership.
 *
 *   1. scheduler-plugins coscheduling: PodGroup scheduling.x-k8s.io/v1alpha1 with
 *      spec.minMember, spec.minResources (a ResourceList), spec.scheduleTimeoutSeconds; member
 *      pods carry the label scheduling.x-k8s.io/pod-group: NAME (same namespace).
 *   2. Kubernetes 1.35 Workload API: Workload scheduling.k8s.io/v1alpha1 with
 *      spec.podGroups[] {name, policy: {gang: {minCount}} | {basic: {}}}; member pods carry
 *      spec.workloadRef {name, podGroup, podGroupReplicaKey}. Each replica key of a pod group is
 *      a gang of its own (the upstream semantics).
 *   3. Kubernetes 1.36+ (scheduling.k8s.io v1alpha2 in 1.36, v1beta1 in 1.37): the Workload is
 *      a template (spec.podGroupTemplates[] {name, schedulingPolicy: {gang: {minCount}} |
 *      {basic: {}}}) and each gang is a PodGroup object of its own carrying the policy
 *      (spec.schedulingPolicy, same shape) and the status; member pods carry
 *      spec.schedulingGroup.podGroupName (same namespace). The PodGroup alone decides: its
 *      Workload may be absent (native.h parses it).
 *
 * Pure translation (no I/O). Bad input is an error naming the object and the field (minMember
 * 0 or negative, negative timeout, a malformed quantity, a gang group without minCount), so the
 * live scheduler can put that message into the PodGroup's status and an event. */
#ifndef TAREMA_SCHED_PODGROUP_H
#define TAREMA_SCHED_PODGROUP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

#define SCHED_PODGROUP_LABEL "scheduling.x-k8s.io/pod-group"
#define SCHED_PODGROUP_API   "scheduling.x-k8s.io/v1alpha1"

/* One entry of minResources: resource name and amount (cpu in millicores, everything else in
 * whole units, as the snapshot's slots count them). */
typedef struct sched_min_resource {
    char *name;
    int64_t amount;
} sched_min_resource;

/* What a gang needs, from either API. */
typedef struct sched_gang_spec {
    int32_t min_member;          /* >= 1 */
    int64_t timeout_ms;          /* scheduleTimeoutSeconds * 1000; 0 = none given */
    sched_min_resource *min_res; /* PodGroup only */
    size_t n_min_res;
} sched_gang_spec;

void sched_gang_spec_free(sched_gang_spec *s); /* frees the contents, not s */

/* PodGroup JSON -> spec. 0, or -1 with err ("PodGroup ns/name: spec.minMember must be at least
 * 1, got 0"); *out is left empty on error. */
int sched_podgroup_from_json(const json_t *pg, sched_gang_spec *out, tm_err *err);

/* One pod group of a Workload. gang false = the basic policy (no gang: pods are scheduled one
 * by one), then min_count is 0. */
typedef struct sched_workload_group {
    char *name;
    bool gang;
    int32_t min_count;
} sched_workload_group;

typedef struct sched_workload {
    sched_workload_group *groups;
    size_t n_groups;
} sched_workload;

void sched_workload_free(sched_workload *w); /* frees the contents, not w */
/* Workload JSON -> groups: v1alpha1's spec.podGroups[].policy or, from 1.36, the templates
 * spec.podGroupTemplates[].schedulingPolicy (each template a group). 0, or -1 with err naming
 * the group and field. */
int sched_workload_from_json(const json_t *wl, sched_workload *out, tm_err *err);
/* The group named name, NULL when absent. */
const sched_workload_group *sched_workload_group_find(const sched_workload *w, const char *name);

/* Which gang a pod belongs to. */
typedef enum {
    SCHED_GANG_NONE = 0,
    SCHED_GANG_PODGROUP, /* owner = PodGroup name */
    SCHED_GANG_WORKLOAD, /* owner = Workload name, group = podGroup, replica = replica key */
    SCHED_GANG_NATIVE    /* owner = scheduling.k8s.io PodGroup name (1.36+) */
} sched_gang_kind;

/* What a user calls the declaring object: "PodGroup" (both APIs) or "Workload". */
const char *sched_gang_kind_object(sched_gang_kind k);

/* Longest key sched_gang_ref_key writes (namespace 63, names 253, replica key 63, separators). */
#define SCHED_GANG_KEY_MAX 1024

typedef struct sched_gang_ref {
    sched_gang_kind kind;
    const char *ns, *owner, *group, *replica; /* borrowed from the pod JSON; "" when absent */
} sched_gang_ref;

/* The pod's membership (none when it has neither the label, spec.schedulingGroup nor
 * spec.workloadRef; the label wins, then spec.schedulingGroup). 0, or -1 with err for a
 * workloadRef without name or podGroup, or a schedulingGroup without podGroupName. */
int sched_gang_ref_from_pod_json(const json_t *pod, sched_gang_ref *out, tm_err *err);

/* The registry key of a gang: "podgroup/NS/NAME", "workload/NS/NAME/GROUP/REPLICA" or
 * "k8s-podgroup/NS/NAME" (native). Writes
 * into buf (truncated to cap), returns buf. */
char *sched_gang_ref_key(const sched_gang_ref *r, char *buf, size_t cap);

#endif
