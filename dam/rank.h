/* rank.h: rank whole clusters for one job, as the LEXIS Dynamic Allocation Module does
 * (Vitali et al., CISIS 2022, section 3.2): four scores in [0,1] per cluster, their weighted
 * mean, the best mean wins. Incompatible clusters are excluded with a reason, clusters that are
 * in maintenance now or would be before the job's expected end are masked out, and clusters a
 * job already failed on are banned for it (failover).
 *
 * Pure: no I/O, no clock, no allocation. The caller fills dam_input (tarema-dam from a YAML
 * file, later the live collector; tarema-sim federation from its simulated clusters) and
 * owns every string and array it points to. docs/dam.md has the formulas. */
#ifndef TAREMA_DAM_RANK_H
#define TAREMA_DAM_RANK_H

#include <stddef.h>

#include "dam/data.h"
#include "lib/error.h"

#define DAM_MAX_CLUSTERS     64
#define DAM_MAX_WINDOWS      64 /* per cluster */
#define DAM_REASON_MAX       256
#define DAM_MAX_JOB_DATASETS 64

/* The paper's four metrics, in its order s1..s4. */
typedef enum { DAM_S_LOAD, DAM_S_PERF, DAM_S_WAIT, DAM_S_DATA, DAM_NSCORES } dam_score_kind;
const char *dam_score_name(dam_score_kind k); /* "load", "perf", "wait", "data" */

typedef struct dam_weights {
    double w[DAM_NSCORES]; /* each >= 0, at least one > 0 */
} dam_weights;
void dam_weights_default(dam_weights *w); /* all 1, the paper's setup 1 */

/* A countable extended resource (accelerators): "nvidia.com/gpu" x 4. */
typedef struct dam_resource {
    const char *name;
    double count;
} dam_resource;

typedef enum {
    DAM_WAIT_NONE,        /* no signal: the wait score is 1 */
    DAM_WAIT_PREDICTED,   /* the cluster's learned waiting time for the job's shape (ASA) */
    DAM_WAIT_PENDING_AGE, /* fallback: the age of the oldest pending pod */
} dam_wait_source;
const char *dam_wait_source_name(dam_wait_source s); /* "none", "predicted", "pending-age" */

/* One cluster's collected signals. */
typedef struct dam_cluster {
    const char *name;
    const char *site;     /* datacentre */
    const char *location; /* the storage location its pods read from */
    int unreachable;      /* the collector could not reach it: excluded, reported */
    const char *unreachable_reason;
    double cores_used, cores_total;
    double memory_bytes;  /* largest node's allocatable memory; 0 = not known, not checked */
    double perf_per_core; /* sysbench events/s per core; <= 0 = not measured */
    double wait_s;        /* predicted wait for the job's shape (seconds) */
    dam_wait_source wait_source;
    const char *const *architectures; /* kubernetes.io/arch values of its nodes */
    size_t narchitectures;
    const dam_resource *accelerators; /* per node, the largest count */
    size_t naccelerators;
    const char *const *storage; /* storage classes offered */
    size_t nstorage;
    const dam_window *windows; /* maintenance windows, any order, may overlap */
    size_t nwindows;
} dam_cluster;

typedef struct dam_job {
    const char *name;
    double cores;             /* > 0 */
    double memory_bytes;      /* 0 = not checked */
    double runtime_s;         /* expected run time at reference_perf (> 0) */
    double reference_perf;    /* events/s per core at which runtime_s holds; 0 = everywhere */
    const char *architecture; /* NULL = any */
    const dam_resource *accelerators;
    size_t naccelerators;
    const char *const *storage;
    size_t nstorage;
    const char *const *datasets; /* names in the registry */
    size_t ndatasets;
    const char *const *failed_on; /* clusters the job already failed on: banned */
    size_t nfailed_on;
} dam_job;

typedef struct dam_input {
    const dam_cluster *clusters;
    size_t nclusters; /* <= DAM_MAX_CLUSTERS */
    const dam_dataset *datasets;
    size_t ndatasets;
    const dam_transfer *transfers;
    size_t ntransfers;
    dam_weights weights;
    double now_s; /* seconds since the epoch */
} dam_input;

typedef enum {
    DAM_OK,          /* ranked */
    DAM_UNREACHABLE, /* the collector could not reach it */
    DAM_BANNED,      /* the job failed there before (failover) */
    DAM_NO_CORES,    /* fewer cores than the job asks for */
    DAM_NO_MEMORY,   /* no node with the job's memory */
    DAM_NO_ARCH,     /* no node of the job's architecture */
    DAM_NO_ACCEL,    /* an accelerator missing or too few */
    DAM_NO_STORAGE,  /* a storage class missing */
    DAM_MAINTENANCE, /* in a window now, or one starts before the job's expected end */
    DAM_ZERO_SCORE,  /* a score <= 0 (the paper: incompatible) */
} dam_exclusion;
const char *dam_exclusion_name(dam_exclusion e); /* "unreachable", "banned", ... */

typedef struct dam_result {
    size_t cluster;              /* index into dam_input.clusters */
    dam_exclusion excluded;      /* DAM_OK when ranked */
    char reason[DAM_REASON_MAX]; /* why excluded; "" when ranked */
    double score[DAM_NSCORES];   /* each in [0,1] */
    double mean;                 /* weighted mean; 0 when excluded */
    double run_s;                /* expected run time there */
    double data_x;               /* the data distance x of s4 */
    double expected_end_s;       /* now + wait + run */
    size_t windows_merged;       /* how many overlapping windows were merged into others */
} dam_result;

typedef struct dam_ranking {
    dam_result r[DAM_MAX_CLUSTERS]; /* ranked ones best first, then the excluded by name */
    size_t n, nranked;
    int chosen; /* index into dam_input.clusters of r[0] when nranked > 0, else -1 */
} dam_ranking;

/* t (seconds since the epoch) as "2026-11-23T21:00:00Z", the form dam_parse_time reads. Returns
 * 0, or -1 with t as a plain number ("%.0f") when it is no calendar time. */
int dam_format_time(double t, char *buf, size_t size);

/* Checks every field of in and job; err names the field ("clusters[2].cores_used: 500 is more
 * than cores_total 400", "job.datasets[1]: unknown dataset 'x'"). 0 or -1. */
int dam_validate(const dam_input *in, const dam_job *job, tm_err *err);

/* Validates, then ranks. Ties on the mean go to the cluster whose name sorts first, so the
 * answer never depends on input order. Returns 0 (also when no cluster qualifies: chosen is
 * -1) or -1 with err on invalid input. */
int dam_rank(const dam_input *in, const dam_job *job, dam_ranking *out, tm_err *err);

#endif
