/* grouping.h: turns NodeProfiles into node similarity groups and per-feature labels (tarema
 * paper IV-B): selected features, scaling, k-means++ for k = 2..min(k_max, n-1), the k with
 * the best mean silhouette among groupings whose groups really differ, a single-group rule,
 * ranking and labels.
 *
 * Policy code: no I/O, no locks, no global state; the simulator calls it directly.
 *
 * Decisions (why, in short; details at the definitions in grouping.c):
 *  - Scaling: every feature is a rate where ratios matter (a node twice as fast is as different
 *    at 100 IOPS as at 100,000), and IOPS span orders of magnitude, so values are log-transformed
 *    and then z-scored. The z-score divides by max(stddev, log(1 + noise)): a feature that only
 *    varies within measurement noise is not blown up to unit variance, so it cannot split nodes
 *    (Table IV's I/O columns, 107-108 IOPS, are such a feature).
 *  - Single group: k = 1 when every feature's range is within noise, or when no k >= 2 yields
 *    groups that pairwise differ beyond noise on some feature with a mean silhouette of at
 *    least min_silhouette. Silhouette alone cannot say "one group": it is scale-free and even
 *    uniform noise scores about 0.6 for k = 2, so the absolute noise test is the real guard.
 *  - Ranks and labels: per feature, groups are sorted by centroid (original units, ascending,
 *    1 = slowest) and given dense ranks; groups whose centroids differ by no more than the noise
 *    ratio from the first group of a rank share it, so labels never invent differences the
 *    measurements cannot show. A label (cpu, mem, io) built from several features ranks groups
 *    by the mean of the features' log centroids (geometric mean).
 *  - Group ids (tarema.io/group): 1..k ordered by overall power, the mean of the group's scaled
 *    centroid over all features, ascending (1 = weakest), ties by the first node name; so the
 *    id means the same thing across re-profiling and never depends on k-means' internal
 *    numbering. */
#ifndef TAREMA_PROFILER_GROUPING_H
#define TAREMA_PROFILER_GROUPING_H

#include <stdint.h>

#include "lib/error.h"
#include "profiler/nodeprofile.h"

typedef enum {
    PROF_F_CPU_SINGLE,
    PROF_F_CPU_MULTI,
    PROF_F_MEM,
    PROF_F_SEQ_READ,
    PROF_F_SEQ_WRITE,
    PROF_F_RAND_READ,
    PROF_F_RAND_WRITE,
    PROF_F_SEQ_IO,  /* geometric mean of sequential read and write IOPS */
    PROF_F_RAND_IO, /* geometric mean of random read and write IOPS */
    PROF_F_COUNT
} prof_feature;

typedef enum { PROF_L_CPU, PROF_L_MEM, PROF_L_IO, PROF_L_COUNT } prof_label;

const char *prof_feature_name(prof_feature f); /* "cpu_single", "mem", "seq_io", ... */
/* Parses a feature name; err lists the valid names. */
int prof_feature_parse(const char *name, prof_feature *f, tm_err *err);
prof_label prof_feature_label(prof_feature f);
const char *prof_label_key(prof_label l); /* "tarema.io/cpu", "tarema.io/mem", "tarema.io/io" */
double prof_feature_value(const prof_profile *p, prof_feature f);

#define PROF_K_LIMIT 10

typedef struct prof_group_opts {
    prof_feature features[PROF_F_COUNT];
    int nfeatures;         /* default 4: cpu_single, mem, seq_io, rand_io (the paper's) */
    int k_max;             /* default 10, at most PROF_K_LIMIT */
    int restarts;          /* k-means++ restarts per k, default 10 */
    int max_iter;          /* Lloyd iterations per restart, default 100 */
    uint64_t seed;         /* default 1 */
    double noise;          /* relative measurement noise, default 0.05 (5 %) */
    double min_silhouette; /* default 0.25 */
} prof_group_opts;

void prof_group_opts_default(prof_group_opts *o);

typedef struct prof_group {
    int id;          /* 1..k, see above */
    size_t *members; /* indices into the profiles array, ascending */
    size_t nmembers;
    double centroid[PROF_F_COUNT]; /* arithmetic mean per selected feature, original units */
    int rank[PROF_F_COUNT];        /* per selected feature, 1 = slowest */
    int label[PROF_L_COUNT];       /* 0 when no selected feature feeds that label */
    long long total_cores;
    double power; /* mean scaled centroid, orders the ids */
} prof_group;

typedef struct prof_grouping {
    int k;
    prof_feature features[PROF_F_COUNT];
    int nfeatures;
    /* silhouette[k] for each k tried (2..k_tried_max); NAN where k-means could not form k
     * groups (fewer distinct nodes than k). */
    double silhouette[PROF_K_LIMIT + 1];
    int separated[PROF_K_LIMIT + 1]; /* 1 if every pair of groups differs beyond noise */
    int k_tried_max;                 /* 0 when no k >= 2 was tried */
    char reason[256];                /* why this k, in words */
    size_t n;
    int *group_of;      /* per profile: index into groups (0..k-1) */
    prof_group *groups; /* k groups, sorted by id */
} prof_grouping;

/* Groups n profiles. Returns 0 and fills *out (free with prof_grouping_free), or -1 with err
 * (no profiles, bad options, out of memory). */
int prof_group_nodes(const prof_profile *profiles, size_t n, const prof_group_opts *opts,
                     prof_grouping *out, tm_err *err);
void prof_grouping_free(prof_grouping *g);

/* The groups document (see `tarema-profiler group`): k, features, silhouette per k, reason,
 * groups (id, nodes, centroid, ranks, labels, total_cores) and nodes (name, group, labels,
 * figures). New reference. */
json_t *prof_grouping_to_json(const prof_grouping *g, const prof_profile *profiles,
                              const prof_group_opts *opts);

#endif
