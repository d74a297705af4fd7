/* extender_internal.h: the extender's state, shared by its verbs' files (extender.c: filter,
 * prioritize, bind, the routes; extender_preempt.c: preempt). Not for other callers. */
#ifndef TAREMA_SCHED_EXTENDER_INTERNAL_H
#define TAREMA_SCHED_EXTENDER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "lib/metrics.h"
#include "scheduler/cmd/extender.h"

/* A pod /filter left without a node, kept to be evaluated again (extender_retry.c). */
typedef struct ext_retry_entry {
    char *uid;
    json_t *pod;   /* the request's Pod (a copy) */
    json_t *names; /* the nodes refused with a resolvable reason (FailedNodes) */
    int64_t at_ms; /* when (opts.now_ms) */
    uint64_t gen;  /* which refusal: a retry acts only if the entry is still this one */
} ext_retry_entry;

/* Entries kept at most (the oldest go first), evaluated per sched_extender_retry at most. */
#define SCHED_EXTENDER_RETRY_MAX   512
#define SCHED_EXTENDER_RETRY_BATCH 128

struct sched_extender {
    sched_extender_opts o;
    char *policy;
    tm_metric *m_preempt_nodes; /* {outcome}, NULL without opts.metrics */
    pthread_mutex_t retry_mu;   /* guards retry, n_retry, gen: /filter runs on several threads */
    ext_retry_entry *retry;     /* in the order parked, SCHED_EXTENDER_RETRY_MAX slots */
    size_t n_retry;
    uint64_t gen; /* the last entry's generation */
};

/* /filter's evaluation; track: park a pod left without a node with resolvable refusals, forget
 * it when some node passes (a request's), or neither (a retry's own evaluation). */
json_t *ext_filter(sched_extender *x, const json_t *args, bool track, tm_err *err);
/* Keeps pod (copied) with the names of failed (an object keyed by node) to evaluate again. */
void ext_retry_park(sched_extender *x, const json_t *pod, const json_t *failed, int64_t now_ms);
void ext_retry_forget(sched_extender *x, const json_t *pod);
void ext_retry_free(sched_extender *x); /* the entries; the lock stays */

#endif
