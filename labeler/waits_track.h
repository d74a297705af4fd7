/* waits_track.h: turns the pods the feed sees into observed queue waits (pure, no I/O).
 *
 * A request is a pod, or a gang (all pods of one pod group). It is queued when created, or,
 * when it had scheduling gates, when it is first seen without them (the wait for the gate to be
 * lifted is the owner's choice, not the queue's); a queued time the feed wrote on the pod before
 * (LAB_WAITS_ANN_QUEUED) is taken back after a restart, when it lies between the pod's creation
 * and its binding (or now): its owner can write the annotation too. Its wait ends when it is bound
 * (PodScheduled True). A gang's wait is its last member's: from the last member queued to the
 * last member bound, counted once every member seen is bound (judged only once the pod list has
 * been delivered: lab_waits_tracker_synced). A gang's observation names its members' uids: the
 * store claims each of them, so a restarted feed that sees the gang again (its bound time may
 * differ: a kubelet or kwok rewrites the PodScheduled condition's time) counts it no second
 * time. Requests bound more than a day
 * before they are seen are not counted (a restarted feed re-lists old pods; the store's
 * request ids catch the rest). */
#ifndef TAREMA_LABELER_WAITS_TRACK_H
#define TAREMA_LABELER_WAITS_TRACK_H

#include "labeler/waits_pod.h"
#include "planner/asa_table.h"

/* Requests bound longer ago than this when first seen are not fed. */
#define LAB_WAITS_RECENT_S 86400.0

typedef struct lab_waits_obs {
    asa_key key;
    char request_id[400]; /* "pod:UID" or "gang:NS/NAME" (for logs; a gang is claimed by members) */
    double wait_s;
    char *members; /* a gang's member uids, space-separated (malloc'd); NULL for a pod */
} lab_waits_obs;

/* Frees what an observation owns (its members); safe to call twice. */
void lab_waits_obs_clear(lab_waits_obs *o);

typedef struct lab_waits_tracker lab_waits_tracker;

lab_waits_tracker *lab_waits_tracker_new(void);
void lab_waits_tracker_free(lab_waits_tracker *t);

/* Feeds a pod's current state at wall time now (unix seconds). Writes the observation it
 * completes, if any, to *obs (the caller clears it) and returns 1; 0 when none; -1 with err when
 * the pod's shape is not a valid key (nothing recorded). */
int lab_waits_tracker_update(lab_waits_tracker *t, const lab_waits_pod *p, double now,
                             lab_waits_obs *obs, tm_err *err);
/* The informer delivered its (re-)list: gangs are judged from here on. Before, a re-list
 * delivers a gang's members one by one, and the first one bound would look like a whole gang
 * of one. Writes up to max observations of gangs complete now to obs; returns how many. */
int lab_waits_tracker_synced(lab_waits_tracker *t, double now, lab_waits_obs *obs, int max);

/* Forgets a deleted pod. */
void lab_waits_tracker_delete(lab_waits_tracker *t, const lab_waits_pod *p);

/* How many pods and gangs are tracked (both bounded by the pods that exist). */
void lab_waits_tracker_counts(const lab_waits_tracker *t, size_t *pods, size_t *gangs);

/* The request a pending pod belongs to: its shape (a gang's with its member count) and when it
 * was queued (a gang's last member). 1 when it is queued and not bound, 0 otherwise (gated,
 * bound, unknown, or a gang member still gated). */
int lab_waits_tracker_pending(const lab_waits_tracker *t, const lab_waits_pod *p, asa_key *key,
                              double *queued_at);

#endif
