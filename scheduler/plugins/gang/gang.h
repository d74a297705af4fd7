/* gang.h: all-or-nothing gangs: where a gang's pods go (sched_gang_place) and what the
 * scheduler knows about each gang (the registry). Pure: no I/O, no clock (now_ms comes in), no
 * live-loop types, so the live scheduler and the simulator run the same placement.
 *
 * Placement: the n queued pods of a gang are placed one after another on ONE snapshot through
 * the framework (schedule + reserve), so each sees the capacity the ones before it took. The
 * gang succeeds when at least `need` of them fit (minMember minus the members already bound);
 * otherwise every reservation is undone (sched_framework_unreserve) and nothing is held, so a
 * gang that cannot fit never blocks capacity, and two gangs that fit alone but not together
 * never deadlock: the first placed takes what it needs, the second waits whole.
 *
 * Node groups: a gang prefers to stay in one tarema node group (tarema.io/group). The groups are
 * ranked by the policy's own preference for the gang's first pod (the best score of a feasible
 * node in each group: for the tarema policy, the group whose labels are closest to the task);
 * the whole gang is tried in each group in that order, and only when no single group holds it
 * are the pods spread, each taking the first group in that order that still has room (spill). */
#ifndef TAREMA_SCHED_GANG_H
#define TAREMA_SCHED_GANG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/gang/podgroup.h"
#include "scheduler/backend/snapshot.h"

/* ---- placement ------------------------------------------------------------------------------ */

typedef struct sched_gang_placement {
    int *nodes;         /* caller's array of n: node index per pod, -1 when not placed */
    size_t placed;      /* pods placed */
    bool ok;            /* placed >= need */
    int group;          /* snapshot group index holding every placed pod, -1 when spread or none */
    bool spilled;       /* placed over more than one group */
    char message[1024]; /* when !ok: why, with the first unplaced pod's FailedScheduling text */
} sched_gang_placement;

/* Places pods[0..n-1] (n >= 1) on s. need: how many must fit (1..n; more than n is reported as
 * not placeable without trying). keep: on success the reservations stay in s (the caller binds
 * them, or undoes each with sched_framework_unreserve); on failure they are always undone.
 * out->nodes must have room for n. 0 (also when the gang does not fit: out->ok false), or -1 with
 * err (plugin failure; nothing is left reserved). */
int sched_gang_place(sched_framework *fw, sched_snapshot *s, sched_pod *const *pods, size_t n,
                     size_t need, int64_t now_ms, bool keep, sched_gang_placement *out,
                     tm_err *err);

/* minResources against the free capacity of the ready, schedulable nodes (sum of allocatable -
 * requested). true when every listed resource is there (unknown resource names count as 0
 * free); else false and why ("minResources cpu 64 > free 12"). */
bool sched_gang_min_resources_fit(sched_snapshot *s, const sched_gang_spec *spec, char *why,
                                  size_t cap);

/* ---- registry ------------------------------------------------------------------------------- */

typedef enum {
    SCHED_GANG_POD_PENDING = 0, /* waiting in the queue */
    SCHED_GANG_POD_ASSUMED,     /* placed, bind in flight */
    SCHED_GANG_POD_BOUND,       /* on a node, not running yet */
    SCHED_GANG_POD_RUNNING,
    SCHED_GANG_POD_SUCCEEDED,
    SCHED_GANG_POD_FAILED,
    SCHED_GANG_POD_NSTATES
} sched_gang_pod_state;

/* The PodGroup phases of scheduler-plugins' coscheduling. */
typedef enum {
    SCHED_GANG_PENDING = 0, /* fewer than minMember pods, or not tried yet */
    SCHED_GANG_SCHEDULING,  /* tried, waiting for room (or binds in flight) */
    SCHED_GANG_SCHEDULED,   /* at least minMember bound */
    SCHED_GANG_RUNNING,     /* at least minMember running (or done) */
    SCHED_GANG_FINISHED,    /* at least minMember succeeded, none left running */
    SCHED_GANG_FAILED       /* a member failed, or the declaration is invalid */
} sched_gang_phase;

const char *sched_gang_phase_name(sched_gang_phase p); /* "Pending", "Scheduling", ... */

typedef struct sched_gang_member {
    char *uid, *name;
    sched_gang_pod_state state;
    bool gated; /* spec.schedulingGates not empty: not schedulable until the gates are lifted */
} sched_gang_member;

typedef struct sched_gang {
    char *key; /* sched_gang_ref_key */
    sched_gang_kind kind;
    char *ns, *owner, *group, *replica;
    bool declared;    /* the PodGroup or Workload group is known and valid */
    char *spec_error; /* the declaration is invalid: why (then declared is false) */
    bool basic;       /* Workload group with the basic policy: not a gang */
    /* a native PodGroup's disruptionMode single: preemption may evict its members one by one
     * (kube-scheduler 1.37's rule); otherwise a running gang is a victim only as a whole */
    bool disrupt_single;
    sched_gang_spec spec;
    sched_gang_member *members;
    size_t n_members, cap_members;
    int64_t wait_since_ms; /* start of the current wait (first failed attempt), 0 = none */
    int64_t first_seen_ms; /* when the first member was seen (wait-time metric) */
    int attempts;          /* failed attempts since the last success or timeout */
    int timeouts;          /* timeouts so far (backoff grows with them) */
    bool placing;          /* its cycle is placing it now: the Gang plugin's Permit allows it */
    /* status.succeeded/failed as the PodGroup last said: finished pods leave the scheduler's
     * pod view, so after a restart these keep the counts (and a Finished phase) */
    int32_t seen_succeeded, seen_failed;
    /* finished members folded away (sched_gang_registry_finish_member): counted, not kept, so
     * a long-running scheduler does not keep every finished pod of every gang */
    size_t done_succeeded, done_failed;
    char message[1024]; /* why it waits, or what happened last */
    /* for the live scheduler's reports: the last status written and event message sent */
    char status_sent[256];
    uint64_t event_sent;
    /* backfill's expected start on the PodGroup (tarema.io/expected-start, ms since the
     * epoch) as last seen on it or written, 0 none: written again only when it moved by at
     * least the resolution, removed once the gang is placed */
    int64_t start_shown_ms;
} sched_gang;

typedef struct sched_gang_registry sched_gang_registry;

sched_gang_registry *sched_gang_registry_new(void); /* NULL on OOM */
void sched_gang_registry_free(sched_gang_registry *r);

size_t sched_gang_registry_count(const sched_gang_registry *r);
sched_gang *sched_gang_registry_at(sched_gang_registry *r, size_t i);
sched_gang *sched_gang_registry_get(sched_gang_registry *r, const char *key); /* NULL absent */
/* The gang a pod (uid) belongs to, NULL when none known. */
sched_gang *sched_gang_registry_of(sched_gang_registry *r, const char *uid);

/* A pod of a gang was seen (added or updated): records its membership and state (a pod moves
 * to another gang only if its reference changed, which the API forbids). Creates the gang on
 * first sight (undeclared until its PodGroup or Workload is seen). now_ms sets first_seen_ms.
 * Returns the gang, NULL on OOM. */
sched_gang *sched_gang_registry_set_member(sched_gang_registry *r, const sched_gang_ref *ref,
                                           const char *uid, const char *name,
                                           sched_gang_pod_state state, int64_t now_ms);
/* A pod is gone (deleted, or left our view). Gangs without members and without a declaration
 * are forgotten. */
void sched_gang_registry_remove_member(sched_gang_registry *r, const char *uid);
/* A member finished and left the pod view (the informer shows a Succeeded or Failed pod as a
 * deletion): it is folded into the gang's done_succeeded / done_failed and forgotten, so the
 * counts stay and the registry does not grow with every finished pod. A gang whose PodGroup or
 * Workload is gone and that has no members left is dropped. state: SUCCEEDED or FAILED (others
 * are a plain removal). 0, or -1 on OOM. */
int sched_gang_registry_finish_member(sched_gang_registry *r, const sched_gang_ref *ref,
                                      const char *uid, sched_gang_pod_state state, int64_t now_ms);
/* Members kept over all gangs (the registry's size, with sched_gang_registry_count). */
size_t sched_gang_registry_member_count(const sched_gang_registry *r);
/* Marks a member gated or not (no-op for unknown uid). */
void sched_gang_registry_set_gated(sched_gang_registry *r, const char *uid, bool gated);
/* Sets one member's state (no-op for unknown uid). */
void sched_gang_registry_set_state(sched_gang_registry *r, const char *uid,
                                   sched_gang_pod_state state);

/* A PodGroup was added or changed (spec valid, error NULL) or is invalid (spec NULL, error the
 * message). Takes ownership of *spec's contents. NULL on OOM, else the gang. */
sched_gang *sched_gang_registry_podgroup(sched_gang_registry *r, const char *ns, const char *name,
                                         sched_gang_spec *spec, const char *error, int64_t now_ms);
/* The same for a scheduling.k8s.io PodGroup (1.36+, native.h): basic true for the basic policy
 * (its pods are scheduled one by one, as a Workload group with the basic policy). */
sched_gang *sched_gang_registry_native(sched_gang_registry *r, const char *ns, const char *name,
                                       sched_gang_spec *spec, bool basic, const char *error,
                                       int64_t now_ms);
/* A Workload was added or changed (w valid) or is invalid (w NULL, error set): applies to every
 * gang of it (each podGroup and replica key), now and for gangs seen later. Takes ownership of
 * *w's contents. 0, or -1 on OOM. */
int sched_gang_registry_workload(sched_gang_registry *r, const char *ns, const char *name,
                                 sched_workload *w, const char *error);
/* The PodGroup or Workload was deleted: its gangs become undeclared (their pods wait). */
void sched_gang_registry_forget_owner(sched_gang_registry *r, sched_gang_kind kind, const char *ns,
                                      const char *name);

/* Members in a state. */
size_t sched_gang_count(const sched_gang *g, sched_gang_pod_state state);
/* Succeeded and failed members: those seen, or the PodGroup status's counts if larger. */
size_t sched_gang_succeeded(const sched_gang *g);
size_t sched_gang_failed(const sched_gang *g);
/* Members still gated (spec.schedulingGates). */
size_t sched_gang_gated_count(const sched_gang *g);
/* Whether g waits for gated members: fewer than minMember of its live (not failed) members
 * are ungated while some are gated. Then why gets "waiting for N gated member(s) ...", the one
 * reason the gang waits: nothing is tried, and no FailedScheduling is posted for it. */
bool sched_gang_waits_for_gates(const sched_gang *g, char *why, size_t cap);
/* Members bound or beyond (assumed, bound, running, succeeded): what counts toward minMember. */
size_t sched_gang_placed_count(const sched_gang *g);
sched_gang_phase sched_gang_phase_of(const sched_gang *g);
/* Whether pods of g are to be scheduled as a gang (declared, not basic). Pods of an undeclared
 * or invalid gang wait (PreEnqueue refuses them). */
bool sched_gang_active(const sched_gang *g);

/* The gang for explain and logs: {"gang": key, "kind": "PodGroup"|"Workload", "name",
 * "podGroup", "replicaKey", "declared", "minMember", "timeoutSeconds", "phase", "members":
 * {"pending", "assumed", "bound", "running", "succeeded", "failed"}, "attempts", "message"}.
 * New reference, NULL on OOM. */
json_t *sched_gang_describe(const sched_gang *g);

/* One attempt of a gang (Permit's decision), the same for the live scheduler, explain and the
 * simulator: */
typedef enum {
    SCHED_GANG_TRY_SCHEDULED = 0, /* placed: pl->nodes say where (reserved when keep) */
    SCHED_GANG_TRY_WAITING,       /* not declared or invalid, or fewer pods than minMember */
    SCHED_GANG_TRY_UNSCHEDULABLE, /* minResources not free, or the pods do not fit at once */
    SCHED_GANG_TRY_ERROR          /* a plugin failed */
} sched_gang_try;
const char *sched_gang_try_name(sched_gang_try t); /* "scheduled", "waiting", ... (metrics) */
/* Tries to place pods[0..n-1] (g's members waiting now) together with the members of g already
 * placed counting toward minMember: declaration, pod count, minResources, then
 * sched_gang_place. why gets the reason unless scheduled. pl->nodes must hold n entries. */
sched_gang_try sched_gang_try_place(sched_framework *fw, sched_snapshot *s, sched_gang *g,
                                    sched_pod *const *pods, size_t n, int64_t now_ms, bool keep,
                                    sched_gang_placement *pl, char *why, size_t cap);

/* Whether the current wait of g exceeded its scheduleTimeoutSeconds (never without one). */
bool sched_gang_timed_out(const sched_gang *g, int64_t now_ms);

#endif
