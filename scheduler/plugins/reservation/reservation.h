/* reservation.h: the Reservation custom resource (tarema.io/v1alpha1): capacity held for a
 * workflow step in a future time window (WARP, advance reservations, sections 3-4).
 *
 *   spec.startTime         RFC 3339, when the window opens
 *   spec.endTime           RFC 3339, when it closes (or spec.duration, e.g. "30m", "1h30m")
 *   spec.template          {requests: {cpu, memory, ...}, labels, annotations}: one pod's share;
 *   spec.count             how many such pods (default 1)
 *   spec.nodes             explicit node names: with a template the pods go only there, without
 *                          one each node is held whole
 *   spec.nodeSelector      label pairs the nodes must carry
 *   spec.nodeGroup         shorthand for nodeSelector tarema.io/group=VALUE
 *   spec.owner             {kind: PodGroup|Workload, name} or {selector: LabelSelector}: the
 *                          pods the capacity is held for (same namespace)
 *   spec.schedulerName     the scheduler that admits and honours it (default "tarema"), as a
 *                          pod's spec.schedulerName: other schedulers leave it alone
 *   spec.priorityClassName a PriorityClass, as a pod's: admission of a reservation of higher
 *                          priority may displace admitted ones of lower priority
 *   status.phase           Pending, Admitted, Active, Released, Expired, Failed
 *   status.nodes           [{name, pods, requests}]: what is held on each node
 *   status.nodeNames       the same nodes, comma-separated (kubectl get's NODES column)
 *   status.message         why (Failed: the reason; Released: which release path)
 *   status.ownerStarted    an owner's pod ran in the window (release on finish survives a
 *                          restart)
 *
 * Pure: JSON in, structs out; no I/O, no clock. Validation the OpenAPI schema cannot express
 * (endTime after startTime, a positive duration, one of template/nodes) is done here, with a
 * message naming the field. */
#ifndef TAREMA_SCHED_RESERVATION_H
#define TAREMA_SCHED_RESERVATION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/selector.h"
#include "scheduler/backend/snapshot.h"

typedef enum {
    RESV_PENDING = 0,
    RESV_ADMITTED,
    RESV_ACTIVE,
    RESV_RELEASED,
    RESV_EXPIRED,
    RESV_FAILED
} resv_phase;

typedef enum { RESV_OWNER_PODGROUP = 0, RESV_OWNER_WORKLOAD, RESV_OWNER_SELECTOR } resv_owner_kind;

/* Capacity held on one node. */
typedef struct resv_hold {
    char *node;
    int32_t pods; /* template pods placed there (0 for a whole node) */
    sched_resources res;
} resv_hold;

typedef struct reservation {
    char *ns, *name, *uid;
    int64_t start_ms, end_ms;
    json_t *tmpl; /* spec.template (owned reference), NULL when absent */
    int32_t count;
    char **nodes; /* spec.nodes */
    size_t n_nodes;
    json_t *node_selector; /* spec.nodeSelector plus nodeGroup (owned), NULL when neither */
    char *node_group;      /* spec.nodeGroup, NULL when absent */
    resv_owner_kind owner_kind;
    char *owner_name;       /* PodGroup or Workload name */
    tm_selector *owner_sel; /* RESV_OWNER_SELECTOR */
    char *scheduler_name;   /* spec.schedulerName, "tarema" when absent */
    /* spec.evictOverrunning (default true): once the window is open, a pod let into the held
     * capacity on ending before it and still running is evicted (resv_overrun.h) */
    bool evict_overrunning;
    /* spec.priorityClassName (NULL when absent) and its value, which the caller resolves as
     * for a pod (the class' value, else the globalDefault class', else 0): a reservation may
     * displace admitted ones of lower priority (resv_plan.h) */
    char *priority_class;
    int32_t priority;
    /* status */
    resv_phase phase;
    resv_hold *holds;
    size_t n_holds;
    char *message;
    bool owner_started;
    /* status.heldStartTime/heldEndTime: the window the holds were admitted for, which stays when
     * the spec's window is patched later (the planner moves it); 0 = not written */
    int64_t held_start_ms, held_end_ms;
    bool deleting; /* metadata.deletionTimestamp set */
} reservation;

/* The window r's holds apply to: the admitted one (status) when written, else the spec's. */
void reservation_held_window(const reservation *r, int64_t *start_ms, int64_t *end_ms);

/* Parses and validates a Reservation object. s gives extended resources their slots (holds in
 * status.nodes). NULL with err naming the reservation and the field on bad input. */
reservation *reservation_from_json(sched_snapshot *s, const json_t *obj, tm_err *err);
void reservation_free(reservation *r);

/* The scheduler a Reservation object is for (spec.schedulerName, default "tarema"). Borrowed. */
const char *reservation_scheduler_name(const json_t *obj);

/* "namespace/name" of r into buf; returns buf. */
char *reservation_key(const reservation *r, char *buf, size_t size);

const char *resv_phase_name(resv_phase p);
/* "Admitted" -> RESV_ADMITTED; "" or absent -> RESV_PENDING. -1 when unknown. */
int resv_phase_parse(const char *s, resv_phase *out);
/* Phases that hold capacity (Admitted, Active). */
bool resv_phase_holds(resv_phase p);

/* RFC 3339 -> ms since the epoch. -1 with err when malformed. */
int resv_parse_time_ms(const char *s, int64_t *out, tm_err *err);
/* ms since the epoch -> "2026-11-24T00:10:00Z" into buf (size >= 21). */
char *resv_format_time(int64_t ms, char *buf, size_t size);

/* Whether a pod (namespace, labels object or NULL, spec.workloadRef.name or NULL) belongs to
 * r's owner: PodGroup by label scheduling.x-k8s.io/pod-group, Workload by workloadRef, a
 * selector by labels; always in r's namespace. */
bool reservation_owns(const reservation *r, const char *ns, const json_t *labels,
                      const char *workload);

/* A pod built from spec.template (what admission places count times): the template's
 * requests in one container, its labels and annotations (task identity), nodeSelector and
 * nodeGroup, and spec.nodes as required node affinity on metadata.name. New reference, NULL on
 * OOM. */
json_t *reservation_template_pod(const reservation *r);

/* status.nodes of holds (resource names from s's slots). New reference. */
json_t *reservation_holds_json(const sched_snapshot *s, const resv_hold *holds, size_t n);
/* A merge patch for the status subresource. holds NULL = leave status.nodes alone, n 0 with a
 * non-NULL holds = clear it. With set_holds and held_end_ms > 0, the admitted window goes to
 * status.heldStartTime/heldEndTime (what a restart and explain read back). */
json_t *reservation_status_patch(const sched_snapshot *s, resv_phase phase, const char *message,
                                 const resv_hold *holds, size_t n, bool set_holds,
                                 bool owner_started, int64_t held_start_ms, int64_t held_end_ms);

void resv_holds_free(resv_hold *h, size_t n);
/* Deep copy; 0 or -1 on OOM. */
int resv_holds_copy(const resv_hold *src, size_t n, resv_hold **out);

#endif
