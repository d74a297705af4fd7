/* config.c: defaults, the YAML config file and the command-line flags of tarema-scheduler.
 * The file is read into JSON by lib/yamljson and checked key by key, so every mistake is
 * reported with the key it concerns. */
#include "scheduler/live/config.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lib/args.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/yamljson.h"
#include "scheduler/plugins/filters.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/spread_defaults.h"

static int set_str(char **dst, const char *v) {
    char *d = strdup(v);
    if (!d)
        return -1;
    free(*dst);
    *dst = d;
    return 0;
}

sched_config *sched_config_new(void) {
    sched_config *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->namespaces = calloc(1, sizeof *c->namespaces);
    c->review_users = calloc(1, sizeof *c->review_users);
    int bad = !c->namespaces || !c->review_users;
    bad |= set_str(&c->scheduler_name, "tarema");
    bad |= set_str(&c->policy, "tarema");
    c->score_weights = sched_score_weights_default();
    c->backfill = bf_config_default();
    bad |= set_str(&c->bind_address, "127.0.0.1");
    bad |= set_str(&c->process_label, "nextflow.io/processName");
    bad |= set_str(&c->workflow_key, "tarema.io/workflow");
    bad |= set_str(&c->lease_namespace, "kube-system");
    /* "" = the scheduler name: schedulers of different names lead apart, replicas of one
     * name take turns (kube-scheduler's Lease is one per process name too) */
    bad |= set_str(&c->lease_name, "");
    c->leader_elect = true; /* as kube-scheduler: a second replica never binds beside the first */
    bad |= set_str(&c->log_level, "info");
    bad |= set_str(&c->log_format, "text");
    c->port = 10260;
    c->qps = 200;
    c->burst = 400;
    c->max_binds_in_flight = 512;
    c->api_concurrency = TM_KUBE_DEFAULT_MAX_ACTIVE;
    c->pod_initial_backoff_ms = 1000;
    c->pod_max_backoff_ms = 10000;
    c->unschedulable_flush_ms = 60000;
    c->volume_bind_timeout_s = 600;
    c->plugin_metrics_sample_percent = 10; /* kube-scheduler's pluginMetricsSamplePercent */
    c->lease_ms = 15000;
    c->renew_deadline_ms = 10000;
    c->retry_ms = 2000;
    c->max_body_bytes = 8LL << 20;
    c->memory_budget_bytes = 64LL << 20;
    if (bad) {
        sched_config_free(c);
        return NULL;
    }
    return c;
}

static void free_namespaces(sched_config *c) {
    for (size_t i = 0; i < c->n_namespaces; i++)
        free(c->namespaces[i]);
    free(c->namespaces);
    c->namespaces = NULL;
    c->n_namespaces = 0;
}

void sched_config_free(sched_config *c) {
    if (!c)
        return;
    json_decref(c->spread_args);
    sched_config_clear_profiles(c);
    free(c->scheduler_name);
    free(c->policy);
    free(c->kubeconfig);
    free(c->context);
    free_namespaces(c);
    free(c->bind_address);
    free(c->process_label);
    free(c->workflow_key);
    free(c->lease_namespace);
    free(c->lease_name);
    free(c->identity);
    free(c->log_level);
    free(c->log_format);
    free(c->tls_cert_file);
    free(c->tls_key_file);
    free(c->client_ca_file);
    free(c->auth_token_file);
    for (size_t i = 0; c->review_users && c->review_users[i]; i++)
        free(c->review_users[i]);
    free(c->review_users);
    free(c);
}

/* A NULL-terminated copy of names (n of them); NULL with err naming the list when a name is
 * empty. Shared by every string-list setting, so each replaces its list only when all is well. */
static char **copy_names(const char *const *names, size_t n, const char *what, tm_err *err) {
    char **v = calloc(n + 1, sizeof *v);
    if (!v) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!names[i][0] || !(v[i] = strdup(names[i]))) {
            for (size_t j = 0; j < i; j++)
                free(v[j]);
            free(v);
            tm_err_set(err, "%s in the list", what);
            return NULL;
        }
    }
    return v;
}

/* Replaces the namespace list with the given names (comma-separated string or JSON array). */
static int set_namespaces(sched_config *c, const char *const *names, size_t n, tm_err *err) {
    char **v = copy_names(names, n, "namespaces: empty namespace name", err);
    if (!v)
        return -1;
    free_namespaces(c);
    c->namespaces = v;
    c->n_namespaces = n;
    return 0;
}

static int set_namespaces_csv(sched_config *c, const char *csv, tm_err *err) {
    char *copy = strdup(csv);
    if (!copy)
        return tm_err_set(err, "out of memory");
    const char *parts[256];
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == 256) {
            free(copy);
            return tm_err_set(err, "--namespaces: more than 256 namespaces");
        }
        parts[n++] = t;
    }
    int rc = set_namespaces(c, parts, n, err);
    free(copy);
    return rc;
}

/* Typed getters for one key of a mapping; absent keys leave the value alone. */
static int get_str(const json_t *o, const char *key, char **dst, const char *what, bool allow_empty,
                   tm_err *err) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return tm_err_set(err, "%s: %s must be a string", what, key);
    const char *s = json_string_value(v);
    if (!s[0] && !allow_empty)
        return tm_err_set(err, "%s: %s must not be empty", what, key);
    if (!s[0]) {
        free(*dst);
        *dst = NULL;
        return 0;
    }
    return set_str(dst, s) ? tm_err_set(err, "out of memory") : 0;
}

static int get_int(const json_t *o, const char *key, int *dst, long long lo, long long hi,
                   const char *what, tm_err *err) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return tm_err_set(err, "%s: %s must be an integer from %lld to %lld", what, key, lo, hi);
    *dst = (int)json_integer_value(v);
    return 0;
}

static int get_bool(const json_t *o, const char *key, bool *dst, const char *what, tm_err *err) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return tm_err_set(err, "%s: %s must be true or false", what, key);
    *dst = json_is_true(v);
    return 0;
}

static int apply_leader(sched_config *c, const json_t *le, const char *what, tm_err *err) {
    static const char *const keys[] = {"enabled", "namespace",       "name",    "identity",
                                       "leaseMs", "renewDeadlineMs", "retryMs", NULL};
    char where[256];
    snprintf(where, sizeof where, "%s: leaderElection", what);
    if (tm_json_check_keys(le, keys, where, err))
        return -1;
    if (get_bool(le, "enabled", &c->leader_elect, where, err) ||
        get_str(le, "namespace", &c->lease_namespace, where, false, err) ||
        get_str(le, "name", &c->lease_name, where, false, err) ||
        get_str(le, "identity", &c->identity, where, true, err) ||
        get_int(le, "leaseMs", &c->lease_ms, 1000, 3600000, where, err) ||
        get_int(le, "renewDeadlineMs", &c->renew_deadline_ms, 500, 3600000, where, err) ||
        get_int(le, "retryMs", &c->retry_ms, 100, 3600000, where, err))
        return -1;
    return 0;
}

static int get_size(const json_t *o, const char *key, long long *dst, long long lo, long long hi,
                    const char *what, tm_err *err) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return tm_err_set(err, "%s: %s must be an integer from %lld to %lld", what, key, lo, hi);
    *dst = json_integer_value(v);
    return 0;
}

/* Replaces the TokenReview user list with names (n of them). */
static int set_review_users(sched_config *c, const char *const *names, size_t n, tm_err *err) {
    char **v = copy_names(names, n, "auth: tokenReviewUsers: empty user name", err);
    if (!v)
        return -1;
    for (size_t i = 0; c->review_users[i]; i++)
        free(c->review_users[i]);
    free(c->review_users);
    c->review_users = v;
    return 0;
}

/* The HTTP security and limit sections: extender, tls, auth, limits. */
static int apply_http(sched_config *c, const json_t *doc, const char *what, tm_err *err) {
    char where[256];
    json_t *v = json_object_get(doc, "extender");
    if (v && !json_is_null(v)) {
        static const char *const k[] = {"bind", NULL};
        snprintf(where, sizeof where, "%s: extender", what);
        if (tm_json_check_keys(v, k, where, err) ||
            get_bool(v, "bind", &c->extender_bind, where, err))
            return -1;
    }
    v = json_object_get(doc, "tls");
    if (v && !json_is_null(v)) {
        static const char *const k[] = {"certFile", "keyFile", "clientCAFile", NULL};
        snprintf(where, sizeof where, "%s: tls", what);
        if (tm_json_check_keys(v, k, where, err) ||
            get_str(v, "certFile", &c->tls_cert_file, where, true, err) ||
            get_str(v, "keyFile", &c->tls_key_file, where, true, err) ||
            get_str(v, "clientCAFile", &c->client_ca_file, where, true, err))
            return -1;
    }
    v = json_object_get(doc, "auth");
    if (v && !json_is_null(v)) {
        static const char *const k[] = {"tokenFile", "tokenReviewUsers", "insecureNoAuth", NULL};
        snprintf(where, sizeof where, "%s: auth", what);
        if (tm_json_check_keys(v, k, where, err) ||
            get_str(v, "tokenFile", &c->auth_token_file, where, true, err) ||
            get_bool(v, "insecureNoAuth", &c->insecure_no_auth, where, err))
            return -1;
        json_t *u = json_object_get(v, "tokenReviewUsers");
        if (u && !json_is_null(u)) {
            size_t n = json_array_size(u);
            const char *names[64];
            if (!json_is_array(u) || n > 64)
                return tm_err_set(err, "%s: tokenReviewUsers must be a list of at most 64 names",
                                  where);
            for (size_t i = 0; i < n; i++)
                if (!(names[i] = json_string_value(json_array_get(u, i))))
                    return tm_err_set(err, "%s: tokenReviewUsers[%zu] must be a string", where, i);
            if (set_review_users(c, names, n, err))
                return -1;
        }
    }
    v = json_object_get(doc, "limits");
    if (v && !json_is_null(v)) {
        static const char *const k[] = {"maxBodyBytes", "memoryBudgetBytes", NULL};
        snprintf(where, sizeof where, "%s: limits", what);
        if (tm_json_check_keys(v, k, where, err) ||
            get_size(v, "maxBodyBytes", &c->max_body_bytes, 1024, 1LL << 30, where, err) ||
            get_size(v, "memoryBudgetBytes", &c->memory_budget_bytes, 1LL << 20, 1LL << 34, where,
                     err))
            return -1;
    }
    return get_int(doc, "healthPort", &c->health_port, 0, 65535, what, err);
}

static int apply_content_type(sched_config *c, const char *t, const char *what, tm_err *err) {
    if (strcmp(t, "protobuf") == 0 || strcmp(t, "application/vnd.kubernetes.protobuf") == 0)
        c->api_json = false;
    else if (strcmp(t, "json") == 0 || strcmp(t, "application/json") == 0)
        c->api_json = true;
    else
        return tm_err_set(err, "%s: apiContentType '%s' is unknown (use protobuf or json)", what,
                          t);
    return 0;
}

static int apply_mode(sched_config *c, const char *mode, const char *what, tm_err *err) {
    if (strcmp(mode, "scheduler") == 0)
        c->mode = SCHED_MODE_SCHEDULER;
    else if (strcmp(mode, "extender") == 0)
        c->mode = SCHED_MODE_EXTENDER;
    else
        return tm_err_set(err, "%s: mode '%s' is unknown (use scheduler or extender)", what, mode);
    return 0;
}

int sched_config_parse_weights(const json_t *sw, sched_score_weights *ws, const char *what,
                               tm_err *err) {
    if (!sw || json_is_null(sw))
        return 0;
    if (!json_is_object(sw))
        return tm_err_set(err, "%s: scoreWeights must be a mapping", what);
    if (tm_json_check_keys(sw, sched_score_weight_keys, what, err))
        return tm_err_wrap(err, "scoreWeights");
    sched_score_weights out = *ws;
    for (size_t k = 0; k < SCHED_SCORE_WEIGHT_KEYS; k++) {
        char key[64];
        snprintf(key, sizeof key, "scoreWeights.%s", sched_score_weight_keys[k]);
        const json_t *w = json_object_get(sw, sched_score_weight_keys[k]);
        if (w && !json_is_integer(w))
            return tm_err_set(err, "%s: %s must be an integer 0..%d", what, key,
                              SCHED_SCORE_WEIGHT_MAX);
        long long x = w ? json_integer_value(w) : -1;
        if (w && (x < 0 || x > SCHED_SCORE_WEIGHT_MAX))
            return tm_err_set(err, "%s: %s: %lld is not in 0..%d", what, key, x,
                              SCHED_SCORE_WEIGHT_MAX);
        if (w)
            out.w[k] = (int)x;
    }
    *ws = out;
    return 0;
}

int sched_config_apply_json(sched_config *c, const json_t *doc, const char *what, tm_err *err) {
    static const char *const keys[] = {"schedulerName",
                                       "policy",
                                       "mode",
                                       "kubeconfig",
                                       "context",
                                       "namespaces",
                                       "bindAddress",
                                       "port",
                                       "qps",
                                       "burst",
                                       "maxBindsInFlight",
                                       "apiConcurrency",
                                       "apiContentType",
                                       "podInitialBackoffMs",
                                       "podMaxBackoffMs",
                                       "unschedulableFlushMs",
                                       "volumeBindTimeoutSeconds",
                                       "pluginMetricsSamplePercent",
                                       "taskKeys",
                                       "leaderElection",
                                       "log",
                                       "extender",
                                       "tls",
                                       "auth",
                                       "healthPort",
                                       "limits",
                                       "scoreWeights",
                                       "scoreTieBreak",
                                       "podTopologySpread",
                                       "backfill",
                                       "profiles",
                                       NULL};
    if (json_is_null(doc))
        return 0; /* an empty file keeps every default */
    if (tm_json_check_keys(doc, keys, what, err))
        return -1;
    if (get_str(doc, "schedulerName", &c->scheduler_name, what, false, err) ||
        get_str(doc, "policy", &c->policy, what, false, err) ||
        get_str(doc, "kubeconfig", &c->kubeconfig, what, true, err) ||
        get_str(doc, "context", &c->context, what, true, err) ||
        get_str(doc, "bindAddress", &c->bind_address, what, false, err) ||
        get_int(doc, "port", &c->port, 0, 65535, what, err) ||
        get_int(doc, "burst", &c->burst, 0, 1000000, what, err) ||
        get_int(doc, "maxBindsInFlight", &c->max_binds_in_flight, 1, 1000000, what, err) ||
        get_int(doc, "apiConcurrency", &c->api_concurrency, 1, 100000, what, err) ||
        get_int(doc, "podInitialBackoffMs", &c->pod_initial_backoff_ms, 1, 3600000, what, err) ||
        get_int(doc, "podMaxBackoffMs", &c->pod_max_backoff_ms, 1, 3600000, what, err) ||
        get_int(doc, "unschedulableFlushMs", &c->unschedulable_flush_ms, 100, 86400000, what,
                err) ||
        get_int(doc, "volumeBindTimeoutSeconds", &c->volume_bind_timeout_s, 1, 86400, what, err) ||
        get_int(doc, "pluginMetricsSamplePercent", &c->plugin_metrics_sample_percent, 0, 100, what,
                err) ||
        apply_http(c, doc, what, err))
        return -1;
    if (sched_config_refresh_profiles(c)) /* schedulerName may have replaced the listed one */
        return tm_err_set(err, "out of memory");
    if (sched_config_parse_weights(json_object_get(doc, "scoreWeights"), &c->score_weights, what,
                                   err))
        return -1;
    const json_t *pts = json_object_get(doc, "podTopologySpread");
    if (pts && !json_is_null(pts)) {
        sched_spread_defaults *d = sched_spread_defaults_from_json(pts, err);
        if (!d)
            return tm_err_wrap(err, "%s", what);
        sched_spread_defaults_free(d);
        json_decref(c->spread_args);
        c->spread_args = json_deep_copy(pts);
    }
    const json_t *tb = json_object_get(doc, "scoreTieBreak");
    if (tb && !json_is_null(tb)) {
        if (!json_is_boolean(tb))
            return tm_err_set(err, "%s: scoreTieBreak must be true or false", what);
        c->score_weights.tie_break = json_is_true(tb);
    }
    json_t *v = json_object_get(doc, "apiContentType");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v))
            return tm_err_set(err, "%s: apiContentType must be a string (protobuf or json)", what);
        if (apply_content_type(c, json_string_value(v), what, err))
            return -1;
    }
    v = json_object_get(doc, "mode");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v))
            return tm_err_set(err, "%s: mode must be a string (scheduler or extender)", what);
        if (apply_mode(c, json_string_value(v), what, err))
            return -1;
    }
    v = json_object_get(doc, "qps");
    if (v && !json_is_null(v)) {
        if (!json_is_number(v) || json_number_value(v) < 0)
            return tm_err_set(err, "%s: qps must be a number >= 0 (0 = unlimited)", what);
        c->qps = json_number_value(v);
    }
    v = json_object_get(doc, "namespaces");
    if (v && !json_is_null(v)) {
        if (!json_is_array(v))
            return tm_err_set(err, "%s: namespaces must be a list of namespace names", what);
        size_t n = json_array_size(v);
        const char **names = calloc(n + 1, sizeof *names);
        if (!names)
            return tm_err_set(err, "out of memory");
        for (size_t i = 0; i < n; i++) {
            names[i] = json_string_value(json_array_get(v, i));
            if (!names[i]) {
                free(names);
                return tm_err_set(err, "%s: namespaces[%zu] must be a string", what, i);
            }
        }
        int rc = set_namespaces(c, names, n, err);
        free(names);
        if (rc)
            return tm_err_wrap(err, "%s", what);
    }
    v = json_object_get(doc, "taskKeys");
    if (v && !json_is_null(v)) {
        static const char *const tk[] = {"processLabel", "workflowKey", NULL};
        char where[256];
        snprintf(where, sizeof where, "%s: taskKeys", what);
        if (tm_json_check_keys(v, tk, where, err) ||
            get_str(v, "processLabel", &c->process_label, where, false, err) ||
            get_str(v, "workflowKey", &c->workflow_key, where, false, err))
            return -1;
    }
    v = json_object_get(doc, "backfill");
    if (v && !json_is_null(v) && sched_config_apply_backfill(c, v, what, err))
        return -1;
    v = json_object_get(doc, "profiles");
    if (v && !json_is_null(v) && sched_config_apply_profiles(c, v, what, err))
        return -1;
    if (sched_config_refresh_profiles(c)) /* schedulerName may have changed */
        return tm_err_set(err, "out of memory");
    v = json_object_get(doc, "leaderElection");
    if (v && !json_is_null(v) && apply_leader(c, v, what, err))
        return -1;
    v = json_object_get(doc, "log");
    if (v && !json_is_null(v)) {
        static const char *const lk[] = {"level", "format", NULL};
        char where[256];
        snprintf(where, sizeof where, "%s: log", what);
        if (tm_json_check_keys(v, lk, where, err) ||
            get_str(v, "level", &c->log_level, where, false, err) ||
            get_str(v, "format", &c->log_format, where, false, err))
            return -1;
    }
    return 0;
}

int sched_config_load_file(sched_config *c, const char *path, tm_err *err) {
    json_t *doc = tm_yaml_load_file(path, err);
    if (!doc)
        return tm_err_wrap(err, "scheduler config");
    int rc = sched_config_apply_json(c, doc, path, err);
    json_decref(doc);
    return rc;
}

enum {
    OPT_CONFIG = 256,
    OPT_NAME,
    OPT_POLICY,
    OPT_PROFILE,
    OPT_MODE,
    OPT_KUBECONFIG,
    OPT_CONTEXT,
    OPT_NAMESPACES,
    OPT_BIND,
    OPT_PORT,
    OPT_QPS,
    OPT_BURST,
    OPT_MAX_BINDS,
    OPT_API_CONCURRENCY,
    OPT_API_CONTENT_TYPE,
    OPT_PLUGIN_SAMPLE,
    OPT_LEADER,
    OPT_LEASE_NS,
    OPT_LEASE_NAME,
    OPT_IDENTITY,
    OPT_LOG_LEVEL,
    OPT_LOG_FORMAT,
    OPT_EXT_BIND,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_CLIENT_CA,
    OPT_TOKEN_FILE,
    OPT_REVIEW_USERS,
    OPT_INSECURE,
    OPT_HEALTH_PORT,
    OPT_MAX_BODY,
    OPT_BUDGET,
    OPT_HELP
};

static const struct option long_opts[] = {
    {"config", required_argument, NULL, OPT_CONFIG},
    {"scheduler-name", required_argument, NULL, OPT_NAME},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"mode", required_argument, NULL, OPT_MODE},
    {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
    {"context", required_argument, NULL, OPT_CONTEXT},
    {"namespaces", required_argument, NULL, OPT_NAMESPACES},
    {"bind-address", required_argument, NULL, OPT_BIND},
    {"port", required_argument, NULL, OPT_PORT},
    {"qps", required_argument, NULL, OPT_QPS},
    {"burst", required_argument, NULL, OPT_BURST},
    {"max-binds-in-flight", required_argument, NULL, OPT_MAX_BINDS},
    {"api-concurrency", required_argument, NULL, OPT_API_CONCURRENCY},
    {"api-content-type", required_argument, NULL, OPT_API_CONTENT_TYPE},
    {"plugin-metrics-sample-percent", required_argument, NULL, OPT_PLUGIN_SAMPLE},
    {"leader-elect", optional_argument, NULL, OPT_LEADER},
    {"lease-namespace", required_argument, NULL, OPT_LEASE_NS},
    {"lease-name", required_argument, NULL, OPT_LEASE_NAME},
    {"identity", required_argument, NULL, OPT_IDENTITY},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"extender-bind", optional_argument, NULL, OPT_EXT_BIND},
    {"tls-cert-file", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key-file", required_argument, NULL, OPT_TLS_KEY},
    {"client-ca-file", required_argument, NULL, OPT_CLIENT_CA},
    {"auth-token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"auth-tokenreview-users", required_argument, NULL, OPT_REVIEW_USERS},
    {"insecure-no-auth", no_argument, NULL, OPT_INSECURE},
    {"health-port", required_argument, NULL, OPT_HEALTH_PORT},
    {"max-body-bytes", required_argument, NULL, OPT_MAX_BODY},
    {"memory-budget-bytes", required_argument, NULL, OPT_BUDGET},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0}};

const char *sched_config_usage(void) {
    return "usage: tarema-scheduler [run] [flags]       schedule pods (or serve the extender)\n"
           "       tarema-scheduler explain NS/POD [flags]  why a pod goes (or went) where\n"
           "       tarema-scheduler queue [-n NS | -A] [-o text|json] [flags]  the pending\n"
           "                                pods in queue order, expected start, why they wait\n"
           "flags (each overrides the config file):\n"
           "  --config FILE            YAML config (see scheduler/live/config.h for every key)\n"
           "  --scheduler-name NAME    spec.schedulerName of our pods (default tarema)\n"
           "  --policy NAME            tarema | round-robin | fair | fill-nodes | sjfn | adaptive\n"
           "  --profile NAME[=POLICY]  also schedule pods of schedulerName NAME, with POLICY\n"
           "                           (default --policy); repeatable, adds to the config's\n"
           "                           profiles (docs/profiles.md)\n"
           "  --mode MODE              scheduler (default) | extender\n"
           "  --kubeconfig FILE        default: in-cluster, else $KUBECONFIG, ~/.kube/config\n"
           "  --context NAME           kubeconfig context\n"
           "  --namespaces A,B         namespaces to schedule (default all)\n"
           "  --bind-address ADDR      health/metrics/explain/extender server (127.0.0.1)\n"
           "  --port N                 its port (default 10260, 0 = any free port)\n"
           "  --qps N --burst N        API client rate limit (default 200/400, 0 = none)\n"
           "  --max-binds-in-flight N  concurrent binds (default 512)\n"
           "  --api-concurrency N      API requests at the wire at once (default 1000; more wait "
           "in the client)\n"
           "  --api-content-type T     protobuf (default: pods and nodes, as kube-scheduler) | "
           "json\n"
           "  --plugin-metrics-sample-percent N  cycles whose plugin calls are timed, 0..100\n"
           "                           (default 10, as kube-scheduler)\n"
           "  --leader-elect[=BOOL]    schedule only while holding the Lease (default true,\n"
           "                           as kube-scheduler; mode extender: only the holder writes\n"
           "                           backfill's expected starts)\n"
           "  --lease-namespace NS (kube-system) --lease-name NAME (the scheduler name)\n"
           "  --identity ID\n"
           "  --log-level debug|info|warn|error  --log-format text|json\n"
           "HTTP security and limits (docs/operations.md, \"Security\"):\n"
           "  --extender-bind[=BOOL]   serve /bind (mode extender only; default off: no /bind)\n"
           "  --tls-cert-file F --tls-key-file F   serve HTTPS with this PEM certificate and key\n"
           "  --client-ca-file F       accept client certificates signed by this CA (mTLS)\n"
           "  --auth-token-file F      accept \"Authorization: Bearer <contents of F>\"\n"
           "  --auth-tokenreview-users U,V  accept API-server tokens of these users (TokenReview;\n"
           "                           e.g. system:serviceaccount:NS:NAME)\n"
           "  --insecure-no-auth       allow a non-loopback --bind-address without either\n"
           "  --health-port N          plain-HTTP /healthz /readyz /metrics (default 0 = none)\n"
           "  --max-body-bytes N       per extender request (default 8 MiB)\n"
           "  --memory-budget-bytes N  request bodies and their JSON, all at once (64 MiB)\n";
}

static int parse_bool_arg(const char *flag, const char *s, bool *out, tm_err *err) {
    if (!s || strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
        *out = true;
    else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
        *out = false;
    else
        return tm_err_set(err, "--%s: '%s' is not true or false", flag, s);
    return 0;
}

static int apply_flag(sched_config *c, int opt, const char *arg, tm_err *err) {
    switch (opt) {
    case OPT_NAME: /* profile_names[0] pointed at the string set_str frees */
        return set_str(&c->scheduler_name, arg) || sched_config_refresh_profiles(c);
    case OPT_POLICY:
        return set_str(&c->policy, arg);
    case OPT_PROFILE:
        return sched_config_add_profile_flag(c, arg, err);
    case OPT_MODE:
        return apply_mode(c, arg, "--mode", err);
    case OPT_KUBECONFIG:
        return set_str(&c->kubeconfig, arg);
    case OPT_CONTEXT:
        return set_str(&c->context, arg);
    case OPT_NAMESPACES:
        return set_namespaces_csv(c, arg, err);
    case OPT_BIND:
        return set_str(&c->bind_address, arg);
    case OPT_PORT:
        return tm_arg_int("port", arg, 0, 65535, &c->port, err);
    case OPT_BURST:
        return tm_arg_int("burst", arg, 0, 1000000, &c->burst, err);
    case OPT_MAX_BINDS:
        return tm_arg_int("max-binds-in-flight", arg, 1, 1000000, &c->max_binds_in_flight, err);
    case OPT_API_CONCURRENCY:
        return tm_arg_int("api-concurrency", arg, 1, 100000, &c->api_concurrency, err);
    case OPT_API_CONTENT_TYPE:
        return apply_content_type(c, arg, "--api-content-type", err);
    case OPT_PLUGIN_SAMPLE:
        return tm_arg_int("plugin-metrics-sample-percent", arg, 0, 100,
                          &c->plugin_metrics_sample_percent, err);
    case OPT_LEADER:
        return parse_bool_arg("leader-elect", arg, &c->leader_elect, err);
    case OPT_LEASE_NS:
        return set_str(&c->lease_namespace, arg);
    case OPT_LEASE_NAME:
        return set_str(&c->lease_name, arg);
    case OPT_IDENTITY:
        return set_str(&c->identity, arg);
    case OPT_LOG_LEVEL:
        return set_str(&c->log_level, arg);
    case OPT_LOG_FORMAT:
        return set_str(&c->log_format, arg);
    case OPT_EXT_BIND:
        return parse_bool_arg("extender-bind", arg, &c->extender_bind, err);
    case OPT_TLS_CERT:
        return set_str(&c->tls_cert_file, arg);
    case OPT_TLS_KEY:
        return set_str(&c->tls_key_file, arg);
    case OPT_CLIENT_CA:
        return set_str(&c->client_ca_file, arg);
    case OPT_TOKEN_FILE:
        return set_str(&c->auth_token_file, arg);
    case OPT_REVIEW_USERS: {
        char *copy = strdup(arg);
        if (!copy)
            return tm_err_set(err, "out of memory");
        const char *names[64];
        size_t n = 0;
        char *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t && n < 64; t = strtok_r(NULL, ",", &save))
            names[n++] = t;
        int rc = set_review_users(c, names, n, err);
        free(copy);
        return rc;
    }
    case OPT_INSECURE:
        c->insecure_no_auth = true;
        return 0;
    case OPT_HEALTH_PORT:
        return tm_arg_int("health-port", arg, 0, 65535, &c->health_port, err);
    case OPT_MAX_BODY:
        return tm_arg_long("max-body-bytes", arg, 1024, 1LL << 30, &c->max_body_bytes, err);
    case OPT_BUDGET:
        return tm_arg_long("memory-budget-bytes", arg, 1LL << 20, 1LL << 34,
                           &c->memory_budget_bytes, err);
    case OPT_QPS:
        return tm_arg_double("qps", arg, 0, 1e9, &c->qps, err);
    default:
        return 0;
    }
}

int sched_config_from_args(sched_config *c, int argc, char **argv, bool *help, tm_err *err) {
    *help = false;
    /* Pass 1: only --config and --help, so the flags of pass 2 override the file. */
    const char *file = NULL;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "+:", long_opts, NULL)) != -1) {
        if (opt == OPT_CONFIG)
            file = optarg;
        else if (opt == OPT_HELP)
            *help = true;
        else if (opt == '?')
            return tm_err_set(err, "unknown or incomplete flag '%s' (see --help)",
                              argv[optind - 1]);
        else if (opt == ':')
            return tm_err_set(err, "flag '%s' needs a value", argv[optind - 1]);
    }
    if (*help)
        return 0;
    if (optind < argc)
        return tm_err_set(err, "unexpected argument '%s' (flags start with --, see --help)",
                          argv[optind]);
    if (file && sched_config_load_file(c, file, err))
        return -1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "+:", long_opts, NULL)) != -1) {
        if (opt == OPT_CONFIG)
            continue;
        tm_err_clear(err);
        if (apply_flag(c, opt, optarg, err)) {
            if (!err || !err->msg[0])
                tm_err_set(err, "out of memory");
            return -1;
        }
    }
    return sched_config_refresh_profiles(c) ? tm_err_set(err, "out of memory") : 0;
}

const char *sched_config_lease_name(const sched_config *c) {
    return c->lease_name && c->lease_name[0] ? c->lease_name : c->scheduler_name;
}

bool sched_config_elects(const sched_config *c) {
    /* an extender without backfill writes nothing: no Lease to hold (nor to be allowed) */
    return c->leader_elect && (c->mode == SCHED_MODE_SCHEDULER || c->backfill.reserve_depth != 0);
}

int sched_config_validate(const sched_config *c, tm_err *err) {
    tm_err perr;
    sched_framework *fw = sched_policy_new(c->policy, &perr);
    if (!fw)
        return tm_err_set(err, "policy: %s", perr.msg);
    int rc = sched_framework_apply_weights(fw, &c->score_weights, &perr) ||
             sched_config_add_profiles(c, fw, &perr);
    sched_framework_free(fw);
    if (rc != 0)
        return tm_err_set(err, "%s", perr.msg);
    if (!c->scheduler_name[0])
        return tm_err_set(err, "schedulerName must not be empty");
    for (size_t i = 0; i < c->n_profiles; i++)
        for (size_t j = 0; j <= i; j++) {
            const char *a = c->profiles[i].scheduler_name,
                       *b = j ? c->profiles[j - 1].scheduler_name : c->scheduler_name;
            if (strcmp(a, b) == 0)
                return tm_err_set(err, "profiles: schedulerName %s is given twice%s", a,
                                  j ? "" : " (it is the first profile's, the top-level one)");
        }
    if (c->n_profiles && c->mode == SCHED_MODE_EXTENDER)
        return tm_err_set(err, "profiles need mode: scheduler; an extender scores with one "
                               "policy for the kube-scheduler that calls it");
    if (c->pod_max_backoff_ms < c->pod_initial_backoff_ms)
        return tm_err_set(err, "podMaxBackoffMs (%d) must not be below podInitialBackoffMs (%d)",
                          c->pod_max_backoff_ms, c->pod_initial_backoff_ms);
    if (c->leader_elect && c->renew_deadline_ms >= c->lease_ms)
        return tm_err_set(err, "leaderElection: renewDeadlineMs (%d) must be below leaseMs (%d)",
                          c->renew_deadline_ms, c->lease_ms);
    if (c->leader_elect && c->retry_ms >= c->renew_deadline_ms)
        return tm_err_set(err, "leaderElection: retryMs (%d) must be below renewDeadlineMs (%d)",
                          c->retry_ms, c->renew_deadline_ms);
    if (c->extender_bind && c->mode != SCHED_MODE_EXTENDER)
        return tm_err_set(err, "extender.bind (--extender-bind) needs mode: extender; in scheduler "
                               "mode tarema binds its own pods and serves no /bind");
    if (!c->tls_cert_file != !c->tls_key_file)
        return tm_err_set(err, "tls: certFile and keyFile go together (one is missing)");
    if (c->client_ca_file && !c->tls_cert_file)
        return tm_err_set(err, "tls: clientCAFile (mTLS) needs certFile and keyFile too");
    if (c->health_port && c->health_port == c->port)
        return tm_err_set(err, "healthPort %d is the same as port", c->health_port);
    if (c->memory_budget_bytes < c->max_body_bytes)
        return tm_err_set(err, "limits: memoryBudgetBytes (%lld) is below maxBodyBytes (%lld)",
                          c->memory_budget_bytes, c->max_body_bytes);
    if (strcmp(c->log_format, "text") != 0 && strcmp(c->log_format, "json") != 0)
        return tm_err_set(err, "log format '%s' is unknown (use text or json)", c->log_format);
    static const char *const levels[] = {"debug", "info", "warn", "error", NULL};
    bool ok = false;
    for (const char *const *l = levels; *l; l++)
        ok |= strcmp(*l, c->log_level) == 0;
    if (!ok)
        return tm_err_set(err, "log level '%s' is unknown (use debug, info, warn or error)",
                          c->log_level);
    return 0;
}

int sched_config_apply_spread(const sched_config *c, sched_framework *fw, tm_err *err) {
    sched_spread_defaults *d = sched_spread_defaults_from_json(c->spread_args, err);
    if (!d)
        return -1;
    sched_spread_state *st = sched_framework_plugin_state(fw, "PodTopologySpread");
    if (!st) {
        sched_spread_defaults_free(d);
        return 0; /* a framework without the plugin (none in-tree) */
    }
    return sched_spread_set_defaults(st, d) ? tm_err_set(err, "out of memory") : 0;
}

bool sched_config_watches_namespace(const sched_config *c, const char *ns) {
    if (c->n_namespaces == 0)
        return true;
    for (size_t i = 0; i < c->n_namespaces; i++)
        if (strcmp(c->namespaces[i], ns) == 0)
            return true;
    return false;
}
