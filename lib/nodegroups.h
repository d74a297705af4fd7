/* nodegroups.h: the node-groups document, defined once. docs/node-groups.md has its JSON Schema
 * and an example of the profiler's real output.
 *
 * `tarema-profiler group -o GROUPS.json` (and `run -o`) writes it; `tarema-profiler apply`
 * and `tarema-labeler label|serve --groups GROUPS.json` read it. Every field name of the
 * document is here and nowhere else, so writer and readers cannot drift apart again (they did:
 * the labeler once expected {"labels": {"cpu": 1}} while the profiler wrote the Node labels).
 *
 * The shape, in short (the schema is the reference):
 *   {"k": 3, "features": ["cpu_single", ...], "scaling": "...", "noise": 0.05, "seed": 1,
 *    "restarts": 10, "silhouette": {"2": 0.61, ...}, "separated": {"2": true, ...},
 *    "reason": "...",
 *    "groups": [{"id": 1, "nodes": ["n1", ...], "centroid": {"cpu_single": 369.2, ...},
 *                "ranks": {"cpu_single": 1, ...}, "total_cores": 20,
 *                "labels": {"tarema.io/cpu": "1", "tarema.io/mem": "1", "tarema.io/io": "1",
 *                           "tarema.io/group": "1"}}],
 *    "nodes": [{"node": "n1", "group": 1, "labels": {...as its group...}, "figures": {...}}]}
 *
 * "labels" are exactly the Node labels `apply` writes (string values, as Kubernetes labels
 * are). A feature label is absent in every group when no selected feature feeds it (say
 * --features cpu_single): readers then treat that feature as unmeasured (0). Pure: no I/O. */
#ifndef TAREMA_NODEGROUPS_H
#define TAREMA_NODEGROUPS_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

/* Top-level fields. */
#define TM_NG_K          "k"
#define TM_NG_FEATURES   "features"
#define TM_NG_SCALING    "scaling"
#define TM_NG_NOISE      "noise"
#define TM_NG_SEED       "seed"
#define TM_NG_RESTARTS   "restarts"
#define TM_NG_SILHOUETTE "silhouette"
#define TM_NG_SEPARATED  "separated"
#define TM_NG_REASON     "reason"
#define TM_NG_GROUPS     "groups"
#define TM_NG_NODES      "nodes"
/* Fields of groups[]. */
#define TM_NG_G_ID          "id"
#define TM_NG_G_NODES       "nodes"
#define TM_NG_G_CENTROID    "centroid"
#define TM_NG_G_RANKS       "ranks"
#define TM_NG_G_LABELS      "labels"
#define TM_NG_G_TOTAL_CORES "total_cores"
/* Fields of nodes[]. */
#define TM_NG_N_NODE    "node"
#define TM_NG_N_GROUP   "group"
#define TM_NG_N_LABELS  "labels"
#define TM_NG_N_FIGURES "figures"

/* The Node labels (and the keys of "labels"). */
#define TM_NG_LABEL_GROUP "tarema.io/group"
typedef enum { TM_NG_CPU, TM_NG_MEM, TM_NG_IO, TM_NG_NLABELS } tm_ng_label;

const char *tm_ng_label_key(tm_ng_label l);  /* "tarema.io/cpu", "tarema.io/mem", "tarema.io/io" */
const char *tm_ng_label_name(tm_ng_label l); /* "cpu", "mem", "io" */
/* Is key one of the four labels the document (and the profiler) manages? */
int tm_ng_is_label_key(const char *key);
/* A label value: a string holding an integer >= 1 ("3"). Returns 0 and *out, else -1. */
int tm_ng_label_value(const json_t *v, int *out);

/* ---- writing ---- */

/* The "labels" object for a group: each feature label > 0 as a string, and tarema.io/group. */
json_t *tm_ng_labels_json(int group_id, const int label[TM_NG_NLABELS]);

typedef struct tm_ng_group_out {
    int id;
    long long total_cores;
    int label[TM_NG_NLABELS]; /* 1.. per feature, 0 = no label for that feature */
    const char *const *nodes;
    size_t nnodes;
    /* Per selected feature: its name, centroid (original units) and rank (1 = slowest). */
    const char *const *features;
    const double *centroid;
    const int *rank;
    int nfeatures;
} tm_ng_group_out;

json_t *tm_ng_group_json(const tm_ng_group_out *g);
/* One nodes[] entry; figures (the node's measured figures) is stolen. */
json_t *tm_ng_node_json(const char *node, int group_id, const int label[TM_NG_NLABELS],
                        json_t *figures);

typedef struct tm_ng_header {
    int k;
    const char *const *features;
    int nfeatures;
    const char *scaling;
    double noise;
    long long seed;
    int restarts;
    /* silhouette[k] and separated[k] for k = 2..k_last; NAN silhouette is written as null. */
    const double *silhouette;
    const int *separated;
    int k_last; /* < 2: none tried */
    const char *reason;
} tm_ng_header;

/* The whole document; groups and nodes (arrays of the above) are stolen. New reference. */
json_t *tm_ng_doc_json(const tm_ng_header *h, json_t *groups, json_t *nodes);

/* ---- reading ---- */

#define TM_NG_MAX_GROUPS 64

typedef struct tm_ng_group_in {
    int id;
    long long total_cores;
    int label[TM_NG_NLABELS]; /* 0 when the document has no label for that feature */
    size_t nnodes;
} tm_ng_group_in;

typedef struct tm_ng_groups {
    int n;
    tm_ng_group_in g[TM_NG_MAX_GROUPS];
} tm_ng_groups;

/* Reads and checks the groups of a document: ids distinct integers >= 1, total_cores >= 1,
 * labels as in tm_ng_labels_json (tarema.io/group equal to the id), each feature label present
 * in every group or in none, and every nodes[] entry naming a group and carrying its labels.
 * err names the group or node and the field. */
int tm_ng_read_groups(const json_t *doc, tm_ng_groups *out, tm_err *err);

/* Checks one nodes[] entry (index i): string node, integer group, labels object of managed
 * keys with string values, figures object. */
int tm_ng_check_node(const json_t *n, size_t i, tm_err *err);

#endif
