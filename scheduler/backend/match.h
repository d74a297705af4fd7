/* match.h: the matching rules the filter plugins share, below them and below the framework:
 * tolerations against taints, node selector requirements and terms (required node affinity,
 * volume node affinity), a pod's node selector + affinity, host-port conflicts, and the
 * topology-pair count map of InterPodAffinity and PodTopologySpread. Pure functions of their
 * arguments; nothing here knows the framework or any plugin.
 *
 * The per-node checks the scheduling cycle runs on every node of every cycle are static inline
 * here so that they inline into its loops (cycle.c's column scan and the plugin files alike). */
#ifndef TAREMA_SCHED_MATCH_H
#define TAREMA_SCHED_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/snapshot.h"

typedef enum {
    SCHED_TOL_EQUAL = 0, /* also the default when operator is empty */
    SCHED_TOL_EXISTS
} sched_tol_op;

typedef struct sched_toleration {
    char *key; /* "" with Exists tolerates every taint */
    sched_tol_op op;
    char *value;         /* "" when absent */
    sched_effect effect; /* SCHED_EFFECT_NONE = every effect */
} sched_toleration;

typedef enum {
    SCHED_SEL_IN = 0,
    SCHED_SEL_NOT_IN,
    SCHED_SEL_EXISTS,
    SCHED_SEL_DOES_NOT_EXIST,
    SCHED_SEL_GT,
    SCHED_SEL_LT
} sched_sel_op;

/* One node selector requirement (matchExpressions entry, or matchFields on metadata.name when
 * is_field). For Gt/Lt, values[0] was checked to be an integer and is kept in num. */
typedef struct sched_sel_req {
    char *key;
    sched_sel_op op;
    char **values;
    size_t n_values;
    int64_t num;
    bool is_field;
} sched_sel_req;

/* A nodeSelectorTerm: all requirements must hold. A term without requirements matches no node
 * (as in Kubernetes). */
typedef struct sched_sel_term {
    sched_sel_req *reqs;
    size_t n_reqs;
} sched_sel_term;

/* Frees n terms and their requirements (sched_sel_terms_from_json in podspec.h builds them). */
void sched_sel_terms_free(sched_sel_term *terms, size_t n);

static inline bool sched_sel_value_in(const sched_sel_req *r, const char *v) {
    for (size_t i = 0; i < r->n_values; i++)
        if (strcmp(r->values[i], v) == 0)
            return true;
    return false;
}

static inline bool sched_sel_parse_i64(const char *s, int64_t *out) {
    if (!s || !*s)
        return false;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (*end)
        return false;
    *out = x;
    return true;
}

/* Whether one requirement holds on n. */
static inline bool sched_sel_req_matches(const sched_sel_req *r, const sched_node *n) {
    const char *v = r->is_field ? (strcmp(r->key, "metadata.name") == 0 ? n->name : NULL)
                                : sched_node_label(n, r->key);
    int64_t x;
    switch (r->op) {
    case SCHED_SEL_IN:
        return v && sched_sel_value_in(r, v);
    case SCHED_SEL_NOT_IN:
        return !v || !sched_sel_value_in(r, v);
    case SCHED_SEL_EXISTS:
        return v != NULL;
    case SCHED_SEL_DOES_NOT_EXIST:
        return v == NULL;
    case SCHED_SEL_GT:
        return v && sched_sel_parse_i64(v, &x) && x > r->num;
    case SCHED_SEL_LT:
        return v && sched_sel_parse_i64(v, &x) && x < r->num;
    }
    return false;
}

/* Any term matches: every requirement of it holds (an empty term matches nothing, no terms
 * nothing). */
static inline __attribute__((always_inline)) bool
sched_match_terms(const sched_sel_term *terms, size_t nt, const sched_node *n) {
    for (size_t t = 0; t < nt; t++) {
        const sched_sel_term *term = &terms[t];
        if (!term->n_reqs)
            continue; /* an empty term matches nothing */
        size_t r = 0;
        while (r < term->n_reqs && sched_sel_req_matches(&term->reqs[r], n))
            r++;
        if (r == term->n_reqs)
            return true;
    }
    return false;
}

/* Whether node n matches any of the terms (sched_match_terms, out of line). */
bool sched_sel_terms_match(const sched_sel_term *terms, size_t n_terms, const sched_node *n);

/* NodeAffinity: every nodeSelector pair matches and, when the pod has required node affinity
 * (has_affinity), one of its terms does. */
static inline __attribute__((always_inline)) bool
sched_match_node_affinity(const sched_label *node_selector, size_t n_node_selector,
                          bool has_affinity, const sched_sel_term *affinity, size_t n_affinity,
                          const sched_node *n) {
    for (size_t i = 0; i < n_node_selector; i++) {
        const char *v = sched_node_label(n, node_selector[i].key);
        if (!v || strcmp(v, node_selector[i].value) != 0)
            return false;
    }
    return !has_affinity || sched_match_terms(affinity, n_affinity, n);
}

/* Kubernetes' Toleration.ToleratesTaint. */
static inline bool sched_toleration_tolerates(const sched_toleration *t, const char *key,
                                              const char *value, sched_effect effect) {
    if (t->effect != SCHED_EFFECT_NONE && t->effect != effect)
        return false;
    if (*t->key && strcmp(t->key, key) != 0)
        return false;
    if (t->op == SCHED_TOL_EXISTS)
        return true;
    return strcmp(t->value, value) == 0;
}

/* Whether any of the tolerations tolerates the taint (key, value, effect). */
static inline bool sched_match_tolerates(const sched_toleration *tols, size_t n_tols,
                                         const char *key, const char *value, sched_effect effect) {
    for (size_t i = 0; i < n_tols; i++)
        if (sched_toleration_tolerates(&tols[i], key, value, effect))
            return true;
    return false;
}

/* The index of the first NoSchedule/NoExecute taint of n the tolerations do not tolerate, -1
 * when none (PreferNoSchedule is a preference, not a filter). */
static inline __attribute__((always_inline)) int
sched_match_untolerated_taint(const sched_toleration *tols, size_t n_tols, const sched_node *n) {
    for (size_t i = 0; i < n->n_taints; i++) {
        const sched_taint *t = &n->taints[i];
        if (t->effect == SCHED_EFFECT_PREFER_NO_SCHEDULE)
            continue;
        if (!sched_match_tolerates(tols, n_tols, t->key, t->value, t->effect))
            return (int)i;
    }
    return -1;
}

/* The taint an unschedulable node carries for the NodeUnschedulable filter. */
#define SCHED_UNSCHEDULABLE_TAINT "node.kubernetes.io/unschedulable"

/* Whether the tolerations let a pod onto a cordoned node (they tolerate that taint). */
static inline bool sched_match_tolerates_unschedulable(const sched_toleration *tols,
                                                       size_t n_tols) {
    return sched_match_tolerates(tols, n_tols, SCHED_UNSCHEDULABLE_TAINT, "",
                                 SCHED_EFFECT_NO_SCHEDULE);
}

/* Whether binding want conflicts with used, as kube-scheduler's HostPortInfo.CheckConflict:
 * same protocol and port, and same hostIP or either is 0.0.0.0. */
bool sched_host_port_conflict(const sched_host_port *want, const sched_host_port *used);

/* Counts per topology pair (topology key, label value): the PreFilter tables of
 * InterPodAffinity and PodTopologySpread. Key and value strings are borrowed (node labels and
 * pod terms), so a map is valid only while those are. */
typedef struct sched_tpmap sched_tpmap;
sched_tpmap *sched_tpmap_new(void); /* NULL on OOM; free with sched_tpmap_free */
void sched_tpmap_free(sched_tpmap *m);
void sched_tpmap_clear(sched_tpmap *m); /* forget every pair, keep the buffers */
/* Adds delta to a pair's count, creating the pair (even with delta 0). 0, or -1 on OOM. */
int sched_tpmap_add(sched_tpmap *m, const char *key, const char *value, int64_t delta);
/* A pair's count; *found (may be NULL) says whether the pair exists. */
int64_t sched_tpmap_get(const sched_tpmap *m, const char *key, const char *value, bool *found);
size_t sched_tpmap_size(const sched_tpmap *m); /* pairs */
/* The i-th pair (0..size-1, insertion order). */
void sched_tpmap_at(const sched_tpmap *m, size_t i, const char **key, const char **value,
                    int64_t *count);

#endif
