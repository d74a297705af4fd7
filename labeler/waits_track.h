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
 * request ids catch the rest).
 *
 * A held pod (lab_waits_pod.held: its only gate is the order gate, so it is in tarema-scheduler's
 * queue but not tried) is queued when it is first seen held: the moment a proactive step joined
 * the queue, which is what ASA's estimate is the wait of (or ASA's point, TM_ANN_ASA_RELEASE, when
 * the planner released it earlier: counted from there, or its release if earlier). Its release
 * (the order gate lifted, its predecessors done) is not a queueing. Bound more than
 * LAB_WAITS_HELD_SLACK_S after its release, it was still waiting for capacity: its wait is from
 * joining to binding. Bound at its release, the order gate, not the queue, decided when: its wait
 * is only known to be at most that long (a censored observation) and it is not fed, only claimed
 * (lab_waits_obs.censored): a restarted feed sees it bound without gates and would otherwise count
 * it from its creation. A gang is held when any member was; it is bound at its release when its
 * last member is bound within the slack of its last member's release. */
#ifndef TAREMA_LABELER_WAITS_TRACK_H
#define TAREMA_LABELER_WAITS_TRACK_H

#include "labeler/asa_table.h"
#include "labeler/waits_pod.h"

/* Requests bound longer ago than this when first seen are not fed. */
#define LAB_WAITS_RECENT_S 86400.0
/* A held request bound within this many seconds of its release was bound at its release: the
 * planner's order gate and the scheduler's cycle take about a second, the API's times have
 * whole seconds. */
#define LAB_WAITS_HELD_SLACK_S 2.0

typedef struct lab_waits_obs {
    asa_key key;
    char request_id[400]; /* "pod:UID" or "gang:NS/NAME" (for logs; a gang is claimed by members) */
    double wait_s;
    char *members; /* a gang's member uids, space-separated (malloc'd); NULL for a pod */
    bool censored; /* bound at its release: its wait is not fed, but the request is claimed,
                    * so that a restarted feed (which never saw it held) does not count it
                    * from its creation */
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
