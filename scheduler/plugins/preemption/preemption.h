/* preemption.h: kube-scheduler's DefaultPreemption as tarema's PostFilter plugin: when a pod
 * fits on no node, find the nodes where evicting pods of lower priority makes it fit, choose
 * the victims and the node as kube-scheduler 1.35 does, and answer the node to nominate with
 * the victims to evict. Pure: it reads and temporarily changes the snapshot (every change is
 * undone before it returns) and never evicts anything; the caller does that (the live
 * scheduler through the API, the simulator in its own snapshot), then:
 *   - sets status.nominatedNodeName and records the nomination (sched_nominated_set_pod in the
 *     table lent to the snapshot, nominated.h), so that the framework keeps the room for the
 *     preemptor: pods of lower priority no longer fit in it, pods of equal or higher priority
 *     count it;
 *   - marks each victim terminating (sched_snapshot_set_pod_terminating) as soon as its
 *     eviction is sent, so that no later cycle chooses it again (no double eviction), and a
 *     preemptor whose nominated node still holds a terminating lower-priority pod does not
 *     preempt again (kube's PodEligibleToPreemptOthers);
 *   - requeues the preemptor: it lands once the victims are gone.
 *
 * The algorithm (preemption.c), for pod p of priority P:
 *   1. Eligibility: p's preemptionPolicy is not Never, and p is not nominated to a node where a
 *      pod of priority < P is terminating (unless that node is now unresolvable for p).
 *   2. Potential nodes: those whose rejection in the failed cycle preemption can resolve
 *      (sched_filter_resolvable: resources, ports, anti-affinity, spread skew; a plugin added
 *      by the caller is taken as unresolvable). Walked in name order; the work is bounded like
 *      kube's (DefaultPreemptionArgs minCandidateNodesPercentage 10, minCandidateNodesAbsolute
 *      100): the dry run stops once it has max(10% of the nodes, 100) candidates (at most all
 *      of them) with at least one that violates no budget. kube starts at a random offset; we
 *      start at the first node in name order so that a simulation repeats itself.
 *   3. On each potential node: hide every pod of priority < P (sched_snapshot_hide_pod; the
 *      node's own pod list says which: the cost is that node's pods; pods recorded without
 *      metadata are not known well enough to evict and stay); none: not a candidate. Re-run all
 *      the framework's filters (nominated pods of priority >= P counted; inter-pod affinity and
 *      spread state recomputed with the pods removed); p does not fit: not a candidate. Else
 *      reprieve: put the removed pods back one at a time, PDB-violating ones first, then the
 *      others, each group in order of importance (higher priority first, then earlier start),
 *      keeping each one that lets p still fit; the rest are the victims. Pods already
 *      terminating are removed but neither reprieved nor listed: they are leaving anyway.
 *   4. The node: fewest PDB-violating victims, then the lowest highest victim priority, then
 *      the smallest sum of victim priorities (each offset by 2^31, as kube does, so that a
 *      negative priority still costs), then the fewest victims, then the latest start among
 *      the highest-priority victims, then the first in name order.
 * Gangs (issue 31), when the caller set units (sched_preemption_set_units; none: every pod is
 * its own unit, exactly as above): a running gang is a victim as a whole, never one member of
 * it, as in a gang's own preemption (plugins/gang/gang_preempt.h) and as Kubernetes 1.36+'s
 * PodGroup disruptionMode PodGroup:
 *   - in step 3, a pod whose gang has a placed member (on any node, terminating or not) of
 *     priority >= P is not removable, like a pod of priority >= P;
 *   - the reprieve puts a gang's members on the node back together, at its most important
 *     one's turn (evicting one of them evicts all: keeping one alone frees nothing);
 *   - a gang member left a victim brings every other placed member of its gang, on any node,
 *     into the victims right after it, why "member of gang K, evicted whole with pod ns/x";
 *     members already terminating are not listed again;
 *   - PodDisruptionBudgets are not consulted for gang members (gang_preempt.h: a gang goes
 *     whole or not at all; a budget that forbids one member cannot be honoured by evicting
 *     the others), so they neither violate nor use up a budget;
 *   - step 4 counts the dragged members as victims of the node (their number, priorities and
 *     starts): a node whose victims take a gang along costs what it really evicts, and loses
 *     to a node that evicts less, as kube's criteria mean.
 * Out of scope here, with hooks left for them: the extender's preempt verb (it filters the
 * nodes and victims kube-scheduler proposes: sched_preemption_select_victims per node),
 * reservations' evictions. */
#ifndef TAREMA_SCHED_PREEMPTION_H
#define TAREMA_SCHED_PREEMPTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/backend/nominated.h"
#include "scheduler/backend/pdb.h"
#include "scheduler/framework/framework.h"

#define SCHED_PREEMPTION_PLUGIN "DefaultPreemption"

/* DefaultPreemptionArgs' defaults (kube-scheduler 1.35). */
#define SCHED_PREEMPTION_MIN_CANDIDATE_PERCENT  10
#define SCHED_PREEMPTION_MIN_CANDIDATE_ABSOLUTE 100

/* One pod to evict. Strings owned by the result. */
typedef struct sched_victim {
    char *uid, *ns, *name;
    char *node;
    int32_t priority;
    int64_t generation; /* metadata.generation, the DisruptionTarget's observedGeneration */
    int64_t start_ms;   /* 0 = not started */
    bool pdb_violation; /* evicting it takes a PodDisruptionBudget below zero (best effort) */
    char why[160];      /* e.g. "priority 0 < 1000 of preemptor ns/name; violates PDB ns/b" */
} sched_victim;

/* What happened on one node in the dry run (explain prints it). */
typedef enum {
    SCHED_PREEMPT_NODE_NOT_TRIED = 0, /* beyond the bound of the dry run */
    SCHED_PREEMPT_NODE_UNRESOLVABLE,  /* its rejection is not one eviction can resolve */
    SCHED_PREEMPT_NODE_NO_VICTIMS,    /* no pod of lower priority on it */
    SCHED_PREEMPT_NODE_NO_FIT,        /* the pod does not fit even without them */
    SCHED_PREEMPT_NODE_CANDIDATE,     /* a candidate, not chosen (lost at `lost_at`) */
    SCHED_PREEMPT_NODE_CHOSEN
} sched_preempt_node_outcome;

/* The tie-break levels of step 4, the level at which a candidate lost to the chosen node. */
typedef enum {
    SCHED_PREEMPT_BY_PDB = 0, /* more PDB-violating victims */
    SCHED_PREEMPT_BY_HIGHEST, /* a higher highest victim priority */
    SCHED_PREEMPT_BY_SUM,     /* a larger sum of victim priorities */
    SCHED_PREEMPT_BY_COUNT,   /* more victims */
    SCHED_PREEMPT_BY_START,   /* an earlier start of its highest-priority victims */
    SCHED_PREEMPT_BY_NAME     /* all equal: later in name order */
} sched_preempt_level;

typedef struct sched_preempt_candidate {
    size_t node;           /* node index */
    const char *node_name; /* borrowed from the snapshot */
    sched_preempt_node_outcome outcome;
    sched_preempt_level lost_at;    /* CANDIDATE only */
    size_t first_victim, n_victims; /* into the result's all_victims (CANDIDATE, CHOSEN) */
    size_t n_pdb_violations;
    int32_t highest;       /* highest victim priority */
    int64_t sum;           /* sum of (priority + 2^31) */
    int64_t highest_start; /* earliest start among the highest-priority victims (0 = now) */
} sched_preempt_candidate;

/* The outcome of one preemption attempt. */
typedef struct sched_preemption_result {
    sched_status status; /* OK: node and victims set; UNSCHEDULABLE: msg says why */
    int node;            /* nominated node index, -1 when none */
    char node_name[256];
    sched_victim *victims; /* the chosen node's victims, most important first, a gang member
                            * followed by the rest of its gang (units set) */
    size_t n_victims;
    char msg[256]; /* "preemption: not eligible due to preemptionPolicy=Never.", "0/5 nodes
                    * are available: 2 No preemption victims found for incoming pod, ..." */
    /* the dry run, for explain: every node tried (and those skipped), with their victims */
    sched_preempt_candidate *nodes;
    size_t n_nodes;
    sched_victim *all_victims;
    size_t n_all_victims;
} sched_preemption_result;

/* The unit a placed pod belongs to: its gang's key, NULL when it is in none (it is its own
 * unit). The string must stay valid while the attempt runs. plugins/gang/gang_preempt.h's
 * sched_gang_unit_fn is this type. */
typedef const char *(*sched_preempt_unit_fn)(void *ctx, const char *uid);

/* Frees a victim's strings (not the struct). */
void sched_victim_free(sched_victim *v);

void sched_preemption_result_init(sched_preemption_result *r);
void sched_preemption_result_clear(sched_preemption_result *r); /* frees, then init */

/* Fills a plugin (post_filter, free_state) named SCHED_PREEMPTION_PLUGIN. 0, or -1 on OOM. */
int sched_preemption_plugin(sched_plugin *out, tm_err *err);
/* Adds it to fw (after the plugins already there: PostFilter plugins run in order until one
 * makes room). 0, or -1 with err. */
int sched_preemption_plugin_add(sched_framework *fw, tm_err *err);
/* Lets fw's preemption plugin treat the pods of one unit (a gang) as one victim (above):
 * unit_of(ctx, uid) names a placed pod's unit; NULL: every pod its own unit (the default).
 * ctx is borrowed. 0, or -1 with err when fw has no preemption plugin. */
int sched_preemption_set_units(sched_framework *fw, sched_preempt_unit_fn unit_of, void *ctx,
                               tm_err *err);
/* The last attempt of fw's preemption plugin (after sched_framework_post_filter), NULL when fw
 * has none. Valid until the next attempt. The caller evicts result->victims and nominates
 * result->node_name. */
const sched_preemption_result *sched_preemption_last(const sched_framework *fw);

/* The whole algorithm, outside a framework's PostFilter (explain, the simulator's tests): the
 * failed cycle must be fw's last (sched_framework_schedule for p on s, no node found). Fills
 * *out (init it first; cleared here). 0 (out->status says whether a node was found), or -1
 * with err (out of memory). Units: those set on fw's preemption plugin, if it has one. */
int sched_preemption_run(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int64_t now_ms,
                         sched_preemption_result *out, tm_err *err);

/* Step 3 alone on one node (the hook for a gang's or the extender's preemption): the victims
 * that let p fit on node index `node`, appended to out->all_victims with the node's entry in
 * out->nodes. Must run between sched_framework_whatif_begin and _end. Returns the outcome
 * (CANDIDATE when p fits with the victims gone), or -1 with err. */
int sched_preemption_select_victims(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                                    size_t node, sched_preemption_result *out, tm_err *err);

/* Whether pod p, nominated to `node`, may not preempt anywhere while its victims go (kube's
 * PodEligibleToPreemptOthers: "a terminating pod on the nominated node"): the node holds a
 * terminating pod of lower priority than p, and it is still usable for p (Ready, not cordoned,
 * every NoSchedule and NoExecute taint tolerated: what a change of that node alone can take
 * away, which would let p preempt elsewhere). It may still fit outright somewhere. False when
 * the node is gone. The loop's requeue for nodes usable again asks it (usable_hint.h). */
bool sched_preemption_awaits_victims(const sched_snapshot *s, const sched_pod *p, const char *node);

/* kube's MoreImportantPod on placed pods: higher priority, then earlier start (0 = now, the
 * latest). Negative when a is more important. */
int sched_preemption_importance_cmp(const sched_pod_meta *a, const sched_pod_meta *b);

#endif
