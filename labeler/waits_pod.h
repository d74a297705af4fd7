/* waits_pod.h: what the waits feed reads from a Pod (pure, no I/O): its shape (cpu and memory
 * requested per pod, node group asked for, gang), when it was created, whether it is gated,
 * when it was bound (PodScheduled True), and the annotations the feed writes.
 *
 * Shape: cpu and memory are the pod's effective requests as the scheduler counts them (the sum
 * over containers, at least any init container's, plus the pod overhead). The node group is
 * spec.nodeSelector["tarema.io/group"] ("" when absent). A gang is the coscheduling label
 * scheduling.x-k8s.io/pod-group (or pod-group.scheduling.sigs.k8s.io) or spec.workloadRef. */
#ifndef TAREMA_LABELER_WAITS_POD_H
#define TAREMA_LABELER_WAITS_POD_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/error.h"

/* The annotations the feed writes on pending pods (RFC 3339, UTC, seconds). */
#define LAB_WAITS_ANN_START  "tarema.io/predicted-start"
#define LAB_WAITS_ANN_QUEUED "tarema.io/queued-at"      /* created, or ungated when it had gates */
#define LAB_WAITS_ANN_WAIT   "tarema.io/predicted-wait" /* "600s learned" or "0s default" */

typedef struct lab_waits_pod {
    char ns[64], name[254], uid[128];
    char gang[320]; /* "" when not in a gang */
    char group[64]; /* node group asked for, "" for none */
    long long cpu_milli, mem_bytes;
    double created;   /* unix seconds */
    double bound;     /* unix seconds of PodScheduled True, -1 when not bound */
    bool gated;       /* spec.schedulingGates is not empty */
    bool held;        /* its only gate is the order gate (TM_GATE_ORDER): in tarema-scheduler's
                         queue since it was first seen so, not tried ("Queue age", docs/asa.md) */
    bool mirror;      /* a static pod's mirror: never scheduled, not a wait */
    double queued_at; /* LAB_WAITS_ANN_QUEUED, -1 when absent or unreadable */
    double predicted; /* LAB_WAITS_ANN_START, -1 when absent or unreadable */
    double asa_at;    /* TM_ANN_ASA_RELEASE (lib/gates.h, the planner's), -1 when absent or
                         unreadable */
} lab_waits_pod;

/* Reads a Pod. -1 with err naming the field when metadata is missing or a request is not a
 * quantity (such a pod is not fed). */
int lab_waits_pod_parse(const json_t *pod, lab_waits_pod *out, tm_err *err);

/* The informer transform: keeps only what lab_waits_pod_parse reads (new reference; takes
 * obj's). */
json_t *lab_waits_pod_transform(void *ud, json_t *obj);

/* Whether a pending pod's prediction needs (re)writing for a request queued at `queued` and
 * predicted to start at `target` (unix seconds): none written yet or unreadable, the queued time
 * changed (a gang grew), or the target moved more than slot_s seconds. */
bool lab_waits_prediction_stale(const lab_waits_pod *p, double queued, double target,
                                double slot_s);

/* RFC 3339 with a Z or numeric offset, fraction allowed, into unix seconds; -1 when s is not
 * one. */
double lab_waits_time_parse(const char *s);
/* Unix seconds as "2026-11-24T00:01:02Z" (buffer of at least 32). */
void lab_waits_time_format(double t, char *buf, size_t size);

#endif
