/* match.c: the out-of-line parts of match.h: freeing selector terms, the term match as a
 * function, host-port conflicts, and the topology-pair count map (a dense array in insertion
 * order with an open-addressing index, searched linearly while small). */
#include "scheduler/backend/match.h"

#include <stdlib.h>
#include <string.h>

void sched_sel_terms_free(sched_sel_term *terms, size_t n) {
    for (size_t t = 0; t < n; t++) {
        sched_sel_term *term = &terms[t];
        for (size_t r = 0; r < term->n_reqs; r++) {
            for (size_t v = 0; v < term->reqs[r].n_values; v++)
                free(term->reqs[r].values[v]);
            free(term->reqs[r].values);
            free(term->reqs[r].key);
        }
        free(term->reqs);
    }
    free(terms);
}

bool sched_sel_terms_match(const sched_sel_term *terms, size_t n_terms, const sched_node *n) {
    return sched_match_terms(terms, n_terms, n);
}

/* ---- host ports ---- */

static const char *const any_ip = "0.0.0.0";

static bool is_any(const char *ip) {
    return !ip || !*ip || strcmp(ip, any_ip) == 0;
}

bool sched_host_port_conflict(const sched_host_port *want, const sched_host_port *used) {
    if (want->port <= 0 || want->port != used->port || want->proto != used->proto)
        return false;
    /* 0.0.0.0 binds every address, so it collides with any IP and any IP with it */
    return is_any(want->ip) || is_any(used->ip) || strcmp(want->ip, used->ip) == 0;
}

/* ---- topology pair counts ---- */

typedef struct tp_ent {
    const char *key, *value;
    uint64_t hash;
    int64_t count;
} tp_ent;

struct sched_tpmap {
    tp_ent *e; /* dense, insertion order */
    size_t n, cap;
    uint32_t *idx; /* open addressing: entry index + 1, 0 = empty */
    size_t idx_cap;
};

static uint64_t tp_hash(const char *key, const char *value) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a over key, a separator, value */
    for (const char *c = key; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
    for (const char *c = value; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h;
}

sched_tpmap *sched_tpmap_new(void) {
    return calloc(1, sizeof(sched_tpmap));
}

void sched_tpmap_free(sched_tpmap *m) {
    if (!m)
        return;
    free(m->e);
    free(m->idx);
    free(m);
}

void sched_tpmap_clear(sched_tpmap *m) {
    if (m->n && m->idx)
        memset(m->idx, 0, m->idx_cap * sizeof *m->idx);
    m->n = 0;
}

static tp_ent *tp_find(const sched_tpmap *m, const char *key, const char *value, uint64_t h,
                       size_t *slot) {
    if (!m->idx_cap)
        return NULL;
    for (size_t i = h & (m->idx_cap - 1);; i = (i + 1) & (m->idx_cap - 1)) {
        uint32_t k = m->idx[i];
        if (!k) {
            if (slot)
                *slot = i;
            return NULL;
        }
        tp_ent *e = &m->e[k - 1];
        if (e->hash == h && strcmp(e->key, key) == 0 && strcmp(e->value, value) == 0)
            return e;
    }
}

static int tp_grow(sched_tpmap *m) {
    size_t ncap = m->idx_cap ? m->idx_cap * 2 : 64;
    uint32_t *ni = calloc(ncap, sizeof *ni);
    if (!ni)
        return -1;
    for (size_t k = 0; k < m->n; k++) {
        size_t i = m->e[k].hash & (ncap - 1);
        while (ni[i])
            i = (i + 1) & (ncap - 1);
        ni[i] = (uint32_t)(k + 1);
    }
    free(m->idx);
    m->idx = ni;
    m->idx_cap = ncap;
    return 0;
}

/* Up to this many pairs a lookup compares the strings directly: hashing key and value byte by
 * byte costs more than a few strcmp calls that mostly stop at the first differing byte, and
 * the per-node filters look up one pair per node per cycle. */
#define TP_LINEAR_MAX 8

/* The pair's entry when the map is small enough to search linearly (NULL otherwise, or when
 * absent). Pairs are unique, so at most one entry matches. */
static tp_ent *tp_find_linear(const sched_tpmap *m, const char *key, const char *value) {
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->e[i].value, value) == 0 && strcmp(m->e[i].key, key) == 0)
            return &m->e[i];
    return NULL;
}

int sched_tpmap_add(sched_tpmap *m, const char *key, const char *value, int64_t delta) {
    tp_ent *e = m->n <= TP_LINEAR_MAX ? tp_find_linear(m, key, value) : NULL;
    if (e) {
        e->count += delta;
        return 0;
    }
    uint64_t h = tp_hash(key, value);
    if (m->n > TP_LINEAR_MAX && (e = tp_find(m, key, value, h, NULL)) != NULL) {
        e->count += delta;
        return 0;
    }
    if ((m->n + 1) * 2 > m->idx_cap && tp_grow(m) != 0)
        return -1;
    if (m->n == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 32;
        tp_ent *ne = realloc(m->e, ncap * sizeof *ne);
        if (!ne)
            return -1;
        m->e = ne;
        m->cap = ncap;
    }
    size_t slot = 0;
    tp_find(m, key, value, h, &slot);
    m->e[m->n] = (tp_ent){key, value, h, delta};
    m->idx[slot] = (uint32_t)(++m->n);
    return 0;
}

int64_t sched_tpmap_get(const sched_tpmap *m, const char *key, const char *value, bool *found) {
    const tp_ent *e = m->n <= TP_LINEAR_MAX ? tp_find_linear(m, key, value)
                                            : tp_find(m, key, value, tp_hash(key, value), NULL);
    if (found)
        *found = e != NULL;
    return e ? e->count : 0;
}

size_t sched_tpmap_size(const sched_tpmap *m) {
    return m->n;
}

void sched_tpmap_at(const sched_tpmap *m, size_t i, const char **key, const char **value,
                    int64_t *count) {
    const tp_ent *e = i < m->n ? &m->e[i] : NULL;
    if (key)
        *key = e ? e->key : NULL;
    if (value)
        *value = e ? e->value : NULL;
    if (count)
        *count = e ? e->count : 0;
}
