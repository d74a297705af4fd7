/* framework_internal.h: the framework's own state, shared by framework.c (filters, per-node
 * outcomes, messages) and cycle.c (the scheduling and binding cycles). Only those two files
 * include it: plugins see framework.h alone. */
#ifndef TAREMA_SCHED_FRAMEWORK_INTERNAL_H
#define TAREMA_SCHED_FRAMEWORK_INTERNAL_H

#include "scheduler/framework.h"

/* A pod held by Permit WAIT until every plugin that made it wait allowed it, one rejected it,
 * or the deadline passed. pod and snap are borrowed from the caller. */
typedef struct fw_waiting {
    char *uid;
    const sched_pod *pod;
    sched_snapshot *snap;
    int node;
    int64_t deadline_ms;
    uint64_t pending; /* bit k: plugins[k] said WAIT and has not allowed yet */
    bool rejected;
    char msg[256];
} fw_waiting;

struct sched_framework {
    /* plugins[0] is the policy's (scoring, queue order); the rest were added in order */
    sched_plugin plugins[SCHED_MAX_PLUGINS];
    size_t n_plugins;
    bool any_filter;  /* some added plugin has pre_filter or filter */
    uint8_t *status;  /* sched_filter_id per node */
    uint32_t *detail; /* filter detail per node */
    int64_t *score;   /* raw score per feasible node */
    uint32_t *feas;   /* indices of the feasible nodes of the cycle */
    int64_t *fscore;  /* their scores, parallel to feas */
    size_t cap, n_nodes;
    sched_cycle cyc;
    bool have_cycle;
    int64_t min_score, max_score;
    sched_prefilter *pf;
    bool filter_on[SCHED_MAX_PLUGINS]; /* added plugin k's Filter runs this cycle */
    void (*forget)(void *arg, sched_snapshot *s, const char *uid); /* NULL: remove_pod */
    void *forget_arg;
    fw_waiting *waiting;
    size_t n_waiting, cap_waiting;
};

#endif
