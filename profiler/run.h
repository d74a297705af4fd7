/* run.h: (re)profiles a live cluster: one Job per node pinned to it runs `tarema-profiler
 * bench --publish`, which stores the node's NodeProfile in the ConfigMap
 * tarema-profile-<node>; `run` waits for them, groups, and applies the labels. Nodes whose
 * benchmark failed or timed out are reported, never silently dropped. */
#ifndef TAREMA_PROFILER_RUN_H
#define TAREMA_PROFILER_RUN_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/error.h"
#include "lib/kube.h"
#include "profiler/grouping.h"

#define PROF_CM_PREFIX "tarema-profile-"
#define PROF_CM_KEY    "profile.json"

/* Stores a NodeProfile as ConfigMap tarema-profile-<node> in ns (create, or replace). */
int prof_publish(tm_kube *k, const char *ns, const json_t *profile, tm_err *err);

/* Job name for a node: tarema-profile-<node>, shortened with a hash to fit 63 characters.
 * Writes into out (at least 64 bytes). */
void prof_job_name(const char *node, char *out, size_t cap);

/* The Job that profiles one node (pure; exposed for tests). New reference. */
json_t *prof_job_manifest(const char *node, const char *ns, const char *image,
                          const char *service_account, bool quick);

typedef struct prof_run_opts {
    const char *ns;              /* where Jobs and ConfigMaps live; NULL: the client's */
    const char *image;           /* container image with tarema-profiler, sysbench and fio */
    const char *service_account; /* may write ConfigMaps in ns; NULL: tarema-profiler */
    const char *const *nodes;    /* --nodes: profile only these; NULL: see `changed` */
    size_t nnodes;
    bool changed;       /* profile only nodes prof_node_changed() says changed */
    bool quick;         /* pass --quick to bench */
    int timeout_s;      /* how long to wait for all profiles; 0: 300 */
    int poll_ms;        /* 0: 2000 */
    const char *output; /* write the groups document here too; NULL: do not */
    bool dry_run;       /* group but do not patch nodes */
    prof_group_opts group;
} prof_run_opts;

typedef struct prof_run_report {
    int targets;    /* nodes profiled in this run */
    int profiled;   /* of those, profiles collected */
    int reused;     /* profiles of other nodes taken from their ConfigMap or annotation */
    json_t *failed; /* [{"node", "reason"}] for failed or timed-out nodes; caller decrefs */
    int k;
} prof_run_report;

/* Does the whole run. Returns 0 when every target was profiled and the labels applied; -1
 * with err otherwise (after grouping and applying whatever was collected, if anything). */
int prof_run(tm_kube *k, const prof_run_opts *o, prof_run_report *rep, tm_err *err);

#endif
