/* config.h: the live scheduler's configuration: a YAML file (--config) with flags for the
 * common settings on top (a flag always wins over the file).
 *
 *   schedulerName: tarema          # pods with this spec.schedulerName are ours
 *   policy: tarema                 # tarema | round-robin | fair | fill-nodes | sjfn | adaptive
 *   profiles: []                   # more profiles, as kube-scheduler's: [{schedulerName: x,
 *                                  # policy: fair, scoreWeights: {...}}]; pods of schedulerName
 *                                  # x scheduled with that policy and those weights (over the
 *                                  # top level's); config_profiles.c, docs/profiles.md
 *   mode: scheduler                # scheduler (watch + bind) | extender (HTTP extender only)
 *   kubeconfig: ""                 # "" = in-cluster when KUBERNETES_SERVICE_HOST, else $KUBECONFIG
 *   context: ""
 *   namespaces: []                 # namespaces whose pods we schedule; [] = all
 *   bindAddress: 127.0.0.1         # health, metrics, explain and extender routes
 *   port: 10260                    # 0 = a free port (logged)
 *   qps: 200                       # client-side API rate limit (binds, events, patches)
 *   burst: 400
 *   maxBindsInFlight: 512          # binds started but not answered yet
 *   apiConcurrency: 1000           # API requests at the wire at once; more wait in the client
 *   apiContentType: protobuf       # pods and nodes listed and watched in protobuf (as
 *                                  # kube-scheduler's clientConnection.contentType); json: JSON
 *   podInitialBackoffMs: 1000      # retry delay after a failed attempt, doubling per attempt
 *   podMaxBackoffMs: 10000
 *   unschedulableFlushMs: 60000    # unschedulable pods are retried at least this often
 *   volumeBindTimeoutSeconds: 600  # PreBind waits this long for a pod's claims to be bound
 *                                  # (kube-scheduler's VolumeBinding bindTimeoutSeconds)
 *   pluginMetricsSamplePercent: 10 # cycles whose plugin calls are timed (0..100):
 *                                  # scheduler_plugin_execution_duration_seconds (fw_metrics.h)
 *   taskKeys: {processLabel: nextflow.io/processName, workflowKey: tarema.io/workflow}
 *   leaderElection: {enabled: true, namespace: kube-system, name: "" (the schedulerName),
 *                    identity: "", leaseMs: 15000, renewDeadlineMs: 10000, retryMs: 2000}
 *   log: {level: info, format: text}
 *   extender: {bind: false}        # serve /bind (mode extender only): tarema binds the pods
 *                                  # kube-scheduler chose; without it /bind does not exist
 *   tls: {certFile: "", keyFile: "", clientCAFile: ""}
 *                                  # HTTPS on port; clientCAFile: client certificates it
 *                                  # signed authenticate (mTLS, what kube-scheduler can send)
 *   auth: {tokenFile: "", tokenReviewUsers: [], insecureNoAuth: false}
 *                                  # shared bearer token (file re-read on change); API-server
 *                                  # tokens of these users via TokenReview; a
 *                                  # non-loopback bindAddress without tokenFile or clientCAFile
 *                                  # is refused unless insecureNoAuth
 *   healthPort: 0                  # plain-HTTP /healthz /readyz /metrics listener (0 = none)
 *   limits: {maxBodyBytes: 8388608, memoryBudgetBytes: 67108864}
 *                                  # per extender request, and for all requests at once
 *   scoreWeights: {policy: 1, NodeAffinity: 2, TaintToleration: 3, PodTopologySpread: 2,
 *                  InterPodAffinity: 2}
 *                                  # weights (0..100) of the normalised scores when a pod has
 *                                  # preferences (docs/operations.md); any key may be left out
 *   podTopologySpread: {defaultingType: System, defaultConstraints: []}
 *                                  # kube's PodTopologySpreadArgs: the spreading of pods without
 *                                  # constraints of their own (spread_defaults.h); System = kube's
 *                                  # (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway), List
 *                                  # = defaultConstraints ([] = none)
 *   backfill: {reserveDepth: 1, resolution: 1s, maxJobTest: 500, window: 24h,
 *              defaultRuntime: ""}   # shadows for the head of the queue (docs/backfill.md)
 *
 * Unknown keys are errors naming the key, so a typo never silently falls back to a default. */
#ifndef TAREMA_SCHED_CONFIG_H
#define TAREMA_SCHED_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/backfill/backfill.h"

typedef enum { SCHED_MODE_SCHEDULER = 0, SCHED_MODE_EXTENDER } sched_mode;

/* A profile beyond the first (profiles: in the config, --profile): the pods whose
 * spec.schedulerName is scheduler_name are scheduled with this policy and these weights. The
 * first profile is the top level's schedulerName, policy and scoreWeights (docs/profiles.md). */
typedef struct sched_profile {
    char *scheduler_name;
    char *policy;                      /* NULL = the top-level policy */
    sched_score_weights score_weights; /* over the top-level scoreWeights; -1 = theirs */
} sched_profile;

typedef struct sched_config {
    char *scheduler_name;
    char *policy;
    sched_profile *profiles; /* the profiles beyond the first, n_profiles of them */
    size_t n_profiles;
    /* every profile's schedulerName, the first's first, NULL-terminated (sched_config_keys) */
    const char **profile_names;
    sched_mode mode;
    char *kubeconfig;  /* NULL = automatic */
    char *context;     /* NULL = current-context */
    char **namespaces; /* NULL-terminated; empty = all namespaces */
    size_t n_namespaces;
    char *bind_address;
    int port;
    double qps;
    int burst;
    int max_binds_in_flight;
    int api_concurrency;
    bool api_json; /* apiContentType: json */
    int pod_initial_backoff_ms;
    int pod_max_backoff_ms;
    int unschedulable_flush_ms;
    int volume_bind_timeout_s;
    int plugin_metrics_sample_percent; /* pluginMetricsSamplePercent, 0..100 */
    char *process_label;
    char *workflow_key;
    bool leader_elect;
    char *lease_namespace;
    char *lease_name;
    char *identity; /* NULL = hostname_pid, filled by the caller */
    int lease_ms, renew_deadline_ms, retry_ms;
    char *log_level;
    char *log_format;
    bool extender_bind;
    char *tls_cert_file, *tls_key_file, *client_ca_file; /* NULL = none */
    char *auth_token_file;                               /* NULL = none */
    char **review_users; /* NULL-terminated; empty = no TokenReview */
    bool insecure_no_auth;
    int health_port;
    long long max_body_bytes, memory_budget_bytes;
    sched_score_weights score_weights; /* scoreWeights, -1 = default */
    json_t *spread_args;               /* podTopologySpread (validated), NULL = System defaulting */
    bf_config backfill;                /* backfill: bf_config_default() */
} sched_config;

/* A config holding every default. Caller frees with sched_config_free. NULL on OOM. */
sched_config *sched_config_new(void);
void sched_config_free(sched_config *c);

/* Applies a YAML document (already parsed into JSON) on top of c. what names the source in
 * errors ("sched.yaml"). 0, or -1 with err naming the key and what is wrong with it. */
int sched_config_apply_json(sched_config *c, const json_t *doc, const char *what, tm_err *err);

/* Applies the backfill mapping v (config_backfill.c) on top of c->backfill: reserveDepth (an
 * integer 0..100000 or "all"), resolution, window and defaultRuntime (durations: "1s", "30m",
 * or seconds), maxJobTest (1..100000). Unknown keys and bad values are errors naming them. */
int sched_config_apply_backfill(sched_config *c, const json_t *v, const char *what, tm_err *err);

/* Parses a scoreWeights mapping (NULL or null: nothing) over *ws. 0, or -1 with err naming the
 * key. */
int sched_config_parse_weights(const json_t *sw, sched_score_weights *ws, const char *what,
                               tm_err *err);

/* profiles (config_profiles.c): the list [{schedulerName, policy, scoreWeights}] replaces the
 * profiles beyond the first; --profile NAME[=POLICY] adds one. 0, or -1 with err naming the
 * entry and what is wrong (unknown key or policy, a name given twice). */
int sched_config_apply_profiles(sched_config *c, const json_t *v, const char *what, tm_err *err);
int sched_config_add_profile_flag(sched_config *c, const char *arg, tm_err *err);
void sched_config_clear_profiles(sched_config *c);
/* Rebuilds profile_names after the top-level name or the profiles changed (apply_json and
 * from_args call it). 0, or -1 on OOM. */
int sched_config_refresh_profiles(sched_config *c);
/* The task keys and profile names of c, for sched_cache_new and sched_pod_from_json: the
 * pointers are c's, valid while c is. */
sched_keys sched_config_keys(const sched_config *c);
/* Adds c's profiles beyond the first to fw (whose policy and weights are the first's), each
 * with its weights. 0, or -1 with err naming the profile. */
int sched_config_add_profiles(const sched_config *c, sched_framework *fw, tm_err *err);

/* Loads and applies a YAML file. */
int sched_config_load_file(sched_config *c, const char *path, tm_err *err);

/* Parses the command line of `tarema-scheduler [run]`: first --config FILE (if any) is loaded,
 * then every flag is applied over it. Positional arguments are an error. argv[0] is skipped.
 * *help is set when --help was given (nothing else is checked then). 0, or -1 with err. */
int sched_config_from_args(sched_config *c, int argc, char **argv, bool *help, tm_err *err);

/* Sets the PodTopologySpread default constraints of c (podTopologySpread) on fw's plugin. 0, or
 * -1 with err. */
int sched_config_apply_spread(const sched_config *c, sched_framework *fw, tm_err *err);

/* Checks the values together (ports in range, backoffs ordered, policy known, ...). */
/* The Lease the replicas contend for: leaderElection.name, else the scheduler name. */
const char *sched_config_lease_name(const sched_config *c);
/* Whether this process contends for the Lease (election on): in scheduler mode it schedules only
 * while it holds it; in extender mode with backfill on every replica answers kube-scheduler and
 * only the holder writes tarema.io/expected-start (without backfill an extender writes nothing
 * and holds no Lease). */
bool sched_config_elects(const sched_config *c);
int sched_config_validate(const sched_config *c, tm_err *err);

/* True when pods of namespace ns are ours to schedule under c's namespace list. */
bool sched_config_watches_namespace(const sched_config *c, const char *ns);

/* The flags, for --help. Static text. */
const char *sched_config_usage(void);

#endif
