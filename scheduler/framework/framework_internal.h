/* framework_internal.h: the framework's own state, shared by the files that implement it:
 * framework.c (the object, registration, per-node outcomes, messages), cycle.c (the scheduling
 * and binding cycles), scan.c (the Filter pass over the snapshot's node columns) and permit.c
 * (the pods Permit holds). No plugin includes it: plugins see framework.h alone. */
#ifndef TAREMA_SCHED_FRAMEWORK_INTERNAL_H
#define TAREMA_SCHED_FRAMEWORK_INTERNAL_H

#include "scheduler/framework/framework.h"

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

/* The node-local in-tree filters the column scan decides itself (bit 1u << sched_filter_id). */
#define FW_COLUMN_FILTERS                                                                          \
    ((1u << SCHED_FILTER_NODE_READY) | (1u << SCHED_FILTER_NODE_UNSCHEDULABLE) |                   \
     (1u << SCHED_FILTER_TAINT) | (1u << SCHED_FILTER_NODE_AFFINITY) |                             \
     (1u << SCHED_FILTER_RESOURCES))

/* Whether pl is one of those: PreFilter skips none of them, the scan checks them itself. */
static inline bool fw_column_filter(const sched_plugin *pl) {
    return pl->filter_id && (FW_COLUMN_FILTERS >> pl->filter_id) & 1u;
}

/* A profile's own part of the framework (sched_framework_add_profile): its policy plugin and
 * its score weights. The current profile's live in plugins[0], policy_weight, tie_break and
 * each plugin's pref_weight; its entry here is refreshed when another profile takes over. */
typedef struct fw_profile {
    sched_plugin policy;
    int policy_weight;
    bool tie_break;
    int pref_weight[SCHED_MAX_PLUGINS]; /* per plugin index; the policy's (0) unused */
} fw_profile;

struct sched_framework {
    /* plugins[0] is the policy's (scoring, queue order); the rest were added in order: the
     * in-tree filters (sched_framework_new), then the caller's */
    sched_plugin plugins[SCHED_MAX_PLUGINS];
    size_t n_plugins;
    uint8_t sid[SCHED_MAX_PLUGINS];  /* the status id a plugin's rejections carry */
    uint8_t filt[SCHED_MAX_PLUGINS]; /* the Filter plugins (indices into plugins), in order */
    size_t n_filt;
    uint32_t columns; /* FW_COLUMN_FILTERS bits registered */
    /* per cycle: the Filter plugins that run through their hooks (the cluster-wide in-tree
     * ones and the caller's, when their PreFilter did not skip them), before and after
     * NodeResourcesFit; reject[k]: plugins[k]'s PreFilter rejected every node with detail */
    uint8_t hook_pre[SCHED_MAX_PLUGINS], hook_post[SCHED_MAX_PLUGINS];
    size_t n_hook_pre, n_hook_post;
    bool reject_all[SCHED_MAX_PLUGINS];
    uint32_t reject_detail[SCHED_MAX_PLUGINS];
    /* per-node outcomes of the last cycle */
    uint8_t *status;  /* sched_filter_id (or SCHED_FILTER_PLUGIN + k) per node */
    uint32_t *detail; /* filter detail per node */
    int64_t *score;   /* raw score per feasible node */
    uint32_t *feas;   /* indices of the feasible nodes of the cycle */
    size_t n_feas;    /* how many (sched_framework_feasible) */
    int64_t *fscore;  /* their scores, parallel to feas */
    size_t cap, n_nodes;
    sched_cycle cyc;
    bool have_cycle;
    int64_t min_score, max_score;
    int policy_weight; /* weight of the policy's normalised score */
    /* last cycle: whether preference scoring ran (pref[k]: plugins[k] took part), and, per
     * feasible node (parallel to feas), its weighted parts: part[0] the policy's, part[k]
     * plugins[k]'s (n_plugins * cap entries, node-major) */
    bool prefs;     /* a preference was combined into the scores this cycle */
    bool secondary; /* a pref_secondary plugin had something to say (ties, or a part) */
    bool tie_break; /* the secondary scores break the policy's ties (set_tie_break) */
    bool pref[SCHED_MAX_PLUGINS];
    int64_t *part;
    /* Unreserve's way to drop a pod's record (NULL: sched_snapshot_remove_pod) */
    void (*forget)(void *arg, sched_snapshot *s, const char *uid);
    void *forget_arg;
    fw_waiting *waiting;
    size_t n_waiting, cap_waiting;
    /* the nominated pods lent to the snapshot for the current cycle or what-if (nominate.c) */
    struct sched_nominee **lent;
    size_t n_lent, cap_lent;
    sched_snapshot *lent_snap;
    /* what-if filtering (sched_framework_whatif_*): the failed cycle, restored at the end */
    bool whatif;
    sched_cycle saved_cyc;
    /* profiles (sched_framework_add_profile): none, or n_profiles >= 2 with profiles[cur]
     * the one in effect */
    fw_profile *profiles;
    size_t n_profiles, cur_profile;
    size_t saved_profile; /* the failed cycle's, restored when what-if filtering ends */
    /* timing (sched_framework_set_observer): NULL = none; sample: time plugin calls too */
    const sched_observer *obs;
    bool sample;
};

/* Whether this cycle's plugin calls are timed (never inside what-if filtering). */
static inline bool fw_timed(const sched_framework *fw) {
    return fw->obs && fw->sample && !fw->whatif;
}
static inline int64_t fw_now(const sched_framework *fw) {
    return fw->obs->now_ns(fw->obs->arg);
}
static inline sched_outcome fw_outcome(sched_status st) {
    return (sched_outcome){.status = st, .id = SCHED_FILTER_OK, .detail = 0};
}
/* Reports plugin k's call at ep that began at *t, and sets *t to now (the next call's start:
 * back-to-back calls share one clock read). */
static inline void fw_plugin_done(const sched_framework *fw, size_t k, sched_ext_point ep,
                                  sched_outcome o, int64_t *t) {
    int64_t now = fw_now(fw);
    if (fw->obs->plugin)
        fw->obs->plugin(fw->obs->arg, k, fw->plugins[k].name, ep, o, now - *t);
    *t = now;
}
/* Reports a run of ep that began at t (only with an observer). */
static inline void fw_point_done(const sched_framework *fw, sched_ext_point ep, sched_outcome o,
                                 int64_t t) {
    if (fw->obs->point)
        fw->obs->point(fw->obs->arg, ep, o, fw_now(fw) - t);
}

/* framework.c: makes p's profile (sched_pod.profile; 0 when out of range) the one in effect. */
void fw_switch_profile(sched_framework *fw, size_t i);
static inline void fw_profile_for(sched_framework *fw, const sched_pod *p) {
    if (fw->n_profiles && p && p->profile != fw->cur_profile)
        fw_switch_profile(fw, p->profile);
}

/* framework.c: grows the per-node buffers to n nodes. 0, or -1 with err. */
int fw_ensure_cap(sched_framework *fw, size_t n, tm_err *err);

/* permit.c: the waiting pod of that uid, NULL when none. */
fw_waiting *fw_find_waiting(const sched_framework *fw, const char *uid);
/* permit.c: forgets w (its uid freed); the order of the others may change. */
void fw_drop_waiting(sched_framework *fw, fw_waiting *w);
/* permit.c: holds p (reserved on node) until the plugins in pending allow it or deadline_ms.
 * 0, or -1 with err (out of memory). */
int fw_hold(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
            int64_t deadline_ms, uint64_t pending, tm_err *err);

/* scan.c: Filter over every node of s for p into fw->status/detail (the hooked filters' PreFilter
 * already ran: fw->hook_pre/post); returns the number of feasible nodes, listed in fw->feas. */
size_t fw_filter_nodes(sched_framework *fw, const sched_snapshot *s, const sched_pod *p);

/* scan.c: every Filter plugin in order on node i (the hooked ones as the last PreFilter left
 * them), the first rejection deciding; *detail its detail. */
sched_filter_id fw_filter_one(const sched_framework *fw, const sched_snapshot *s, size_t i,
                              uint32_t *detail);

/* nominate.c: lends s the pods nominated (nominated.h) with a priority >= p's, p excluded,
 * that s does not record yet; returns how many. fw_nominated_take_back undoes it. */
size_t fw_nominated_lend(sched_framework *fw, sched_snapshot *s, const sched_pod *p);
/* The same, only those nominated to a node whose fw->status is SCHED_FILTER_OK (the nodes p
 * passed without them): enough when p's filters are node-local (fw_nominated_inter false). */
size_t fw_nominated_lend_feasible(sched_framework *fw, sched_snapshot *s, const sched_pod *p);
/* The same, only those nominated to a node p failed (to node `only` when it is not SIZE_MAX). */
size_t fw_nominated_lend_failed(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                                size_t only);
/* Whether a pod fw_nominated_lend would lend carries what inter-pod filters read of other pods
 * (required anti-affinity terms, host ports): then it counts beyond its own node. */
bool fw_nominated_inter(const sched_snapshot *s, const sched_pod *p);
void fw_nominated_take_back(sched_framework *fw);

/* cycle.c: a cycle for the hooks that run outside sched_framework_schedule. */
sched_cycle fw_cycle_for(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                         int64_t now_ms);

#endif
