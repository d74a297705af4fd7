/* asa_table.h: the ASA learners of a cluster, one per job shape (pods, cpu and memory per pod,
 * node group) and namespace, with a default for shapes never seen, and the whole table as JSON
 * so a store can persist it. Pure code: strings in, strings out, warnings returned, not printed.
 *
 *   asa_table *t = asa_table_new(&cfg);
 *   asa_key k; asa_key_make(&k, "ns", "group-a", 4, 2000, 4LL << 30, &err);
 *   int a; double lead_s = asa_table_estimate(t, &k, &rng, &a);   // a == -1: unknown shape
 *   asa_table_observe(t, &k, a, observed_wait_s, &rng, &err);
 *   char *json = asa_table_to_json(t);  ...  t2 = asa_table_from_json(json, &cfg, warn, n); */
#ifndef TAREMA_LABELER_ASA_TABLE_H
#define TAREMA_LABELER_ASA_TABLE_H

#include <stddef.h>

#include "labeler/asa.h"

/* Not in the paper (which keeps one learner per job geometry, section 4.3): a bound on the
 * table, so that a stream of odd shapes cannot grow it without limit; when full, the learner
 * observed least recently makes room. */
#define ASA_TABLE_MAX 1024
/* The JSON document's version. */
#define ASA_STATE_VERSION 1

/* Kubernetes names: a namespace is a DNS label (<= 63), a node group name likewise. */
typedef struct asa_key {
    char ns[64];
    char group[64]; /* "" when the shape is not tied to a node group */
    int pods;
    long long cpu_milli; /* per pod */
    long long mem_bytes; /* per pod */
} asa_key;

/* Fills a key; -1 with a message naming the bad field when a name is empty (namespace) or too
 * long, pods is not in 1..100000, cpu not in 0..10^9 millicores (0: a BestEffort pod), memory not
 * in 0..2^50 bytes. */
int asa_key_make(asa_key *k, const char *ns, const char *group, int pods, long long cpu_milli,
                 long long mem_bytes, tm_err *err);

typedef struct asa_table asa_table;

/* NULL when cfg is invalid or memory runs out. */
asa_table *asa_table_new(const asa_config *cfg);
void asa_table_free(asa_table *t);

size_t asa_table_size(const asa_table *t);
const asa_key *asa_table_key(const asa_table *t, size_t i);
const asa_learner *asa_table_learner(const asa_table *t, size_t i);
const asa_learner *asa_table_find(const asa_table *t, const asa_key *k);

/* The lead time to submit a request of shape k with: an alternative sampled from its learner
 * (*action set to its index), or ASA_DEFAULT_ESTIMATE_S for a shape never observed (*action
 * -1). Never negative, never NaN. action may be NULL. */
double asa_table_estimate(const asa_table *t, const asa_key *k, asa_rng *r, int *action);

/* Feeds one observed wait of shape k (see asa_observe; acted -1 when the request was not
 * submitted with an estimate), creating its learner on first sight. -1 with a message when the
 * wait or action is invalid (nothing changes). */
int asa_table_observe(asa_table *t, const asa_key *k, int acted, double wait_s, asa_rng *r,
                      tm_err *err);

/* The table as a JSON document (malloc'd, the caller frees), NULL when memory runs out. */
char *asa_table_to_json(const asa_table *t);

/* A table from a document of asa_table_to_json. Never fails on bad input: a document that is
 * not JSON, of another version or another set of alternatives gives an empty table; an entry
 * with a bad key, a state the algorithm cannot reach (asa_learner_check) or a duplicate key is
 * skipped. Either way warn (size n) says what was ignored and why, and is "" when nothing was.
 * NULL only when cfg is invalid or memory runs out. */
asa_table *asa_table_from_json(const char *text, const asa_config *cfg, char *warn, size_t n);

#endif
