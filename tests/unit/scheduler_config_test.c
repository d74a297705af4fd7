/* scheduler_config_test.c: tarema-scheduler's config: defaults, the YAML file, flags over the
 * file, and errors that name the key or flag at fault. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lib/fileutil.h"
#include "lib/yamljson.h"
#include "scheduler/live/config.h"
#include "scheduler/plugins/policy/policy.h"

static void test_defaults(void) {
    sched_config *c = sched_config_new();
    tm_err err = {0};
    CHECK_STR(c->scheduler_name, "tarema");
    CHECK_STR(c->policy, "tarema");
    CHECK_INT(c->mode, SCHED_MODE_SCHEDULER);
    CHECK_INT(c->n_namespaces, 0);
    CHECK(!c->api_json); /* protobuf for pods and nodes, as kube-scheduler */
    CHECK(sched_config_watches_namespace(c, "anything"));
    /* kube-scheduler's default: elected, on a Lease named after the scheduler */
    CHECK(c->leader_elect);
    CHECK(sched_config_elects(c));
    CHECK_STR(sched_config_lease_name(c), "tarema");
    CHECK_INT(c->api_concurrency, 1000);
    CHECK_INT(c->volume_bind_timeout_s, 600);        /* kube's VolumeBinding bindTimeoutSeconds */
    CHECK_INT(c->plugin_metrics_sample_percent, 10); /* kube's pluginMetricsSamplePercent */
    CHECK_INT(sched_config_validate(c, &err), 0);
    sched_config_free(c);
}

static int apply_yaml(sched_config *c, const char *yaml, tm_err *err);

/* The Lease follows the scheduler name unless named; extender replicas contend for it too; and
 * election can be turned off. */
static void test_leader_defaults(void) {
    sched_config *c = sched_config_new();
    tm_err err = {0};
    CHECK_INT(apply_yaml(c, "schedulerName: wf\n", &err), 0);
    CHECK_STR(sched_config_lease_name(c), "wf");
    CHECK_INT(apply_yaml(c, "leaderElection: {name: shared}\n", &err), 0);
    CHECK_STR(sched_config_lease_name(c), "shared");
    CHECK(sched_config_elects(c));
    /* extender replicas contend too: the holder alone writes expected starts; without backfill
     * there is nothing to write and no Lease */
    CHECK_INT(apply_yaml(c, "mode: extender\n", &err), 0);
    CHECK(sched_config_elects(c));
    CHECK_INT(apply_yaml(c, "backfill: {reserveDepth: 0}\n", &err), 0);
    CHECK(!sched_config_elects(c));
    sched_config_free(c);
    c = sched_config_new();
    CHECK_INT(apply_yaml(c, "leaderElection: {enabled: false}\n", &err), 0);
    CHECK(!sched_config_elects(c));
    sched_config_free(c);
}

static int apply_yaml(sched_config *c, const char *yaml, tm_err *err) {
    json_t *doc = tm_yaml_parse(yaml, strlen(yaml), "test.yaml", err);
    if (!doc)
        return -1;
    int rc = sched_config_apply_json(c, doc, "test.yaml", err);
    json_decref(doc);
    return rc;
}

static void test_file(void) {
    sched_config *c = sched_config_new();
    tm_err err = {0};
    const char *y = "schedulerName: mysched\npolicy: fair\nmode: extender\n"
                    "namespaces: [a, b]\nport: 0\nqps: 12.5\nburst: 30\napiConcurrency: 64\n"
                    "apiContentType: json\n"
                    "taskKeys: {processLabel: proc}\n"
                    "leaderElection: {enabled: true, namespace: ops, leaseMs: 20000}\n"
                    "log: {level: debug, format: json}\nvolumeBindTimeoutSeconds: 30\n"
                    "pluginMetricsSamplePercent: 100\n";
    CHECKF(apply_yaml(c, y, &err) == 0, "%s", err.msg);
    CHECK_STR(c->scheduler_name, "mysched");
    CHECK_STR(c->policy, "fair");
    CHECK_INT(c->mode, SCHED_MODE_EXTENDER);
    CHECK_INT(c->n_namespaces, 2);
    CHECK(sched_config_watches_namespace(c, "b"));
    CHECK(!sched_config_watches_namespace(c, "c"));
    CHECK_INT(c->port, 0);
    CHECK_NEAR(c->qps, 12.5, 1e-9);
    CHECK_INT(c->burst, 30);
    CHECK_INT(c->api_concurrency, 64);
    CHECK(c->api_json);
    CHECK_STR(c->process_label, "proc");
    CHECK_STR(c->workflow_key, "tarema.io/workflow");
    CHECK(c->leader_elect);
    CHECK_STR(c->lease_namespace, "ops");
    CHECK_INT(c->lease_ms, 20000);
    CHECK_STR(c->log_format, "json");
    CHECK_INT(c->volume_bind_timeout_s, 30);
    CHECK_INT(c->plugin_metrics_sample_percent, 100);
    CHECK_INT(sched_config_validate(c, &err), 0);
    sched_config_free(c);
}

static void test_file_errors(void) {
    struct {
        const char *yaml, *want;
    } cases[] = {
        {"scheduleName: x\n", "unknown key 'scheduleName'"},
        {"port: 70000\n", "port must be an integer from 0 to 65535"},
        {"qps: -1\n", "qps must be a number >= 0"},
        {"namespaces: a\n", "namespaces must be a list"},
        {"namespaces: [a, 3]\n", "namespaces[1] must be a string"},
        {"mode: both\n", "mode 'both' is unknown"},
        {"apiContentType: yaml\n", "apiContentType 'yaml' is unknown (use protobuf or json)"},
        {"apiContentType: 3\n", "apiContentType must be a string"},
        {"pluginMetricsSamplePercent: 101\n",
         "pluginMetricsSamplePercent must be an integer from 0 to 100"},
        {"leaderElection: {enable: true}\n", "leaderElection: unknown key 'enable'"},
        {"log: {level: 3}\n", "log: level must be a string"},
        {"- a\n", "expected a mapping"},
        {"scoreWeights: {NodeAfinity: 2}\n", "unknown key 'NodeAfinity'"},
        {"scoreWeights: {policy: 101}\n", "scoreWeights.policy: 101 is not in 0..100"},
        {"scoreWeights: {TaintToleration: x}\n", "scoreWeights.TaintToleration must be an integer"},
        {"scoreWeights: 3\n", "scoreWeights must be a mapping"},
        {"scoreTieBreak: yes-please\n", "scoreTieBreak must be true or false"},
        {"volumeBindTimeoutSeconds: 0\n", "volumeBindTimeoutSeconds must be an integer from 1"},
        {"podTopologySpread: {defaultingType: Always}\n",
         "podTopologySpread.defaultingType must be System or List"},
        {"podTopologySpread: {defaultingType: List, defaultConstraints: [{maxSkew: 1, "
         "topologyKey: k, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}]}\n",
         "defaultConstraints[0]: labelSelector is not allowed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sched_config *c = sched_config_new();
        tm_err err = {0};
        CHECK_INT(apply_yaml(c, cases[i].yaml, &err), -1);
        CHECKF(strstr(err.msg, cases[i].want) != NULL, "case %zu: got '%s'", i, err.msg);
        sched_config_free(c);
    }
}

/* scoreWeights reach the framework: the given keys set, the others at their defaults. */
static void test_score_weights(void) {
    sched_config *c = sched_config_new();
    tm_err err = {0};
    CHECK_INT(c->score_weights.tie_break, -1);
    CHECK_INT(apply_yaml(c,
                         "scoreWeights: {policy: 4, NodeAffinity: 7, ImageLocality: 0}\n"
                         "scoreTieBreak: true\n",
                         &err),
              0);
    CHECK_INT(c->score_weights.tie_break, 1);
    CHECK_INT(sched_config_validate(c, &err), 0);
    sched_framework *fw = sched_policy_new(c->policy, &err);
    CHECK(fw != NULL);
    CHECK_INT(sched_framework_apply_weights(fw, &c->score_weights, &err), 0);
    CHECK_INT(sched_framework_score_weight(fw, "policy"), 4);
    CHECK_INT(sched_framework_score_weight(fw, "NodeAffinity"), 7);
    CHECK_INT(sched_framework_score_weight(fw, "TaintToleration"), 3);
    CHECK_INT(sched_framework_score_weight(fw, "ImageLocality"), 0);
    CHECK_INT(sched_framework_score_weight(fw, "NodeResourcesBalancedAllocation"), 1);
    sched_framework_free(fw);
    sched_config_free(c);
}

/* podTopologySpread reaches the PodTopologySpread plugin (its effect: spread_defaults_test). */
static void test_spread_args(void) {
    sched_config *c = sched_config_new();
    tm_err err = {0};
    CHECK(c->spread_args == NULL); /* System */
    CHECK_INT(apply_yaml(c,
                         "podTopologySpread: {defaultingType: List, defaultConstraints: "
                         "[{maxSkew: 2, topologyKey: topology.kubernetes.io/zone, "
                         "whenUnsatisfiable: DoNotSchedule}]}\n",
                         &err),
              0);
    CHECK(json_is_object(c->spread_args));
    sched_framework *fw = sched_policy_new(c->policy, &err);
    CHECK(fw && sched_config_apply_spread(c, fw, &err) == 0);
    sched_framework_free(fw);
    sched_config_free(c);
}

static void test_validate_errors(void) {
    struct {
        const char *yaml, *want;
    } cases[] = {
        {"policy: best\n", "policy:"},
        {"podInitialBackoffMs: 5000\npodMaxBackoffMs: 1000\n", "podMaxBackoffMs (1000)"},
        {"leaderElection: {enabled: true, leaseMs: 5000, renewDeadlineMs: 5000}\n",
         "renewDeadlineMs (5000) must be below leaseMs"},
        {"log: {format: xml}\n", "log format 'xml'"},
        {"log: {level: loud}\n", "log level 'loud'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sched_config *c = sched_config_new();
        tm_err err = {0};
        CHECKF(apply_yaml(c, cases[i].yaml, &err) == 0, "case %zu: %s", i, err.msg);
        CHECK_INT(sched_config_validate(c, &err), -1);
        CHECKF(strstr(err.msg, cases[i].want) != NULL, "case %zu: got '%s'", i, err.msg);
        sched_config_free(c);
    }
}

static int parse(sched_config *c, const char *const *args, bool *help, tm_err *err) {
    char *argv[32];
    int argc = 0;
    argv[argc++] = "tarema-scheduler";
    for (; *args; args++)
        argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    return sched_config_from_args(c, argc, argv, help, err);
}

static void test_flags_override_file(void) {
    char path[] = "/tmp/sched-config-test-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    const char *y = "policy: fair\nport: 1234\nnamespaces: [a]\n";
    tm_err err = {0};
    CHECK_INT(tm_write_file_atomic(path, y, strlen(y), &err), 0);
    sched_config *c = sched_config_new();
    bool help;
    const char *args[] = {"--policy",       "round-robin", "--config", path, "--namespaces=x,y,z",
                          "--leader-elect", "--qps",       "99",       NULL};
    CHECKF(parse(c, args, &help, &err) == 0, "%s", err.msg);
    CHECK(!help);
    CHECK_STR(c->policy, "round-robin"); /* the flag wins although it came first */
    CHECK_INT(c->port, 1234);            /* from the file */
    CHECK_INT(c->n_namespaces, 3);
    CHECK_STR(c->namespaces[2], "z");
    CHECK(c->leader_elect);
    CHECK_NEAR(c->qps, 99, 1e-9);
    sched_config_free(c);
    unlink(path);
}

static void test_flag_errors(void) {
    struct {
        const char *args[4];
        const char *want;
    } cases[] = {
        {{"--port", "http", NULL}, "--port: 'http' is not an integer"},
        {{"--qps", "-3", NULL}, "--qps: '-3' is not a number"},
        {{"--api-concurrency", "0", NULL}, "--api-concurrency: '0' is not an integer from 1"},
        {{"--plugin-metrics-sample-percent", "-1", NULL},
         "--plugin-metrics-sample-percent: '-1' is not an integer from 0"},
        {{"--leader-elect=maybe", NULL}, "--leader-elect: 'maybe'"},
        {{"--polcy", "fair", NULL}, "unknown or incomplete flag '--polcy'"},
        {{"--policy", NULL}, "needs a value"},
        {{"extra", NULL}, "unexpected argument 'extra'"},
        {{"--config", "/nonexistent/sched.yaml", NULL}, "/nonexistent/sched.yaml"},
        {{"--mode", "sidecar", NULL}, "mode 'sidecar' is unknown"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sched_config *c = sched_config_new();
        tm_err err = {0};
        bool help;
        CHECK_INT(parse(c, cases[i].args, &help, &err), -1);
        CHECKF(strstr(err.msg, cases[i].want) != NULL, "case %zu: got '%s'", i, err.msg);
        sched_config_free(c);
    }
    sched_config *c = sched_config_new();
    tm_err err = {0};
    bool help = false;
    const char *args[] = {"--help", NULL};
    CHECK_INT(parse(c, args, &help, &err), 0);
    CHECK(help);
    sched_config_free(c);
}

/* The HTTP security and limit keys (issue 13): file keys, flags, and the checks that keep an
 * unsafe or inconsistent combination from starting. */
static void test_security_keys(void) {
    sched_config *c = sched_config_new();
    tm_err err = {0};
    CHECK(!c->extender_bind && !c->tls_cert_file && !c->auth_token_file && !c->insecure_no_auth);
    CHECK(c->health_port == 0 && c->max_body_bytes == 8LL << 20 &&
          c->memory_budget_bytes == 64LL << 20);
    const char *y = "mode: extender\nextender: {bind: true}\n"
                    "tls: {certFile: /c.crt, keyFile: /c.key, clientCAFile: /ca.crt}\n"
                    "auth: {tokenFile: /tok, insecureNoAuth: false}\nhealthPort: 10261\n"
                    "limits: {maxBodyBytes: 1048576, memoryBudgetBytes: 33554432}\n";
    CHECKF(apply_yaml(c, y, &err) == 0, "%s", err.msg);
    CHECK(c->extender_bind && c->mode == SCHED_MODE_EXTENDER);
    CHECK_STR(c->tls_cert_file, "/c.crt");
    CHECK_STR(c->client_ca_file, "/ca.crt");
    CHECK_STR(c->auth_token_file, "/tok");
    CHECK(c->health_port == 10261 && c->max_body_bytes == 1048576);
    CHECKF(sched_config_validate(c, &err) == 0, "%s", err.msg);
    /* /bind only in extender mode */
    c->mode = SCHED_MODE_SCHEDULER;
    CHECK(sched_config_validate(c, &err) == -1 && strstr(err.msg, "needs mode: extender"));
    c->mode = SCHED_MODE_EXTENDER;
    /* half a TLS pair, a CA without TLS, the health port on the main port, budget < body */
    free(c->tls_key_file);
    c->tls_key_file = NULL;
    CHECK(sched_config_validate(c, &err) == -1 && strstr(err.msg, "keyFile"));
    free(c->tls_cert_file);
    c->tls_cert_file = NULL;
    CHECK(sched_config_validate(c, &err) == -1 && strstr(err.msg, "clientCAFile"));
    free(c->client_ca_file);
    c->client_ca_file = NULL;
    c->health_port = c->port;
    CHECK(sched_config_validate(c, &err) == -1 && strstr(err.msg, "healthPort"));
    c->health_port = 0;
    c->memory_budget_bytes = 1 << 20;
    c->max_body_bytes = 2 << 20;
    CHECK(sched_config_validate(c, &err) == -1 && strstr(err.msg, "memoryBudgetBytes"));
    CHECK(apply_yaml(c, "auth: {token: x}\n", &err) == -1 && strstr(err.msg, "token"));
    CHECKF(apply_yaml(c, "auth: {tokenReviewUsers: [system:serviceaccount:a:b, u2]}\n", &err) == 0,
           "%s", err.msg);
    CHECK_STR(c->review_users[0], "system:serviceaccount:a:b");
    CHECK_STR(c->review_users[1], "u2");
    CHECK(c->review_users[2] == NULL);
    CHECK(apply_yaml(c, "auth: {tokenReviewUsers: [1]}\n", &err) == -1 &&
          strstr(err.msg, "tokenReviewUsers[0]"));
    CHECK(apply_yaml(c, "extender: {bind: yes-please}\n", &err) == -1 && strstr(err.msg, "bind"));
    sched_config_free(c);

    c = sched_config_new();
    bool help;
    const char *args[] = {"--mode",
                          "extender",
                          "--extender-bind",
                          "--tls-cert-file",
                          "/a",
                          "--tls-key-file",
                          "/b",
                          "--client-ca-file",
                          "/ca",
                          "--auth-token-file",
                          "/t",
                          "--insecure-no-auth",
                          "--health-port",
                          "9999",
                          "--max-body-bytes",
                          "4096",
                          "--memory-budget-bytes",
                          "2097152",
                          NULL};
    CHECKF(parse(c, args, &help, &err) == 0, "%s", err.msg);
    CHECK(c->extender_bind && c->insecure_no_auth && c->health_port == 9999);
    CHECK(c->max_body_bytes == 4096 && c->memory_budget_bytes == 2097152);
    CHECK_STR(c->auth_token_file, "/t");
    CHECKF(sched_config_validate(c, &err) == 0, "%s", err.msg);
    const char *bad[] = {"--max-body-bytes", "12", NULL};
    CHECK(parse(c, bad, &help, &err) == -1 && strstr(err.msg, "max-body-bytes"));
    sched_config_free(c);
}

/* backfill: defaults (EASY, 1 s, 500 jobs, 24 h, no default runtime), every key, and errors
 * that name the key and the value. */
static void test_backfill(void) {
    sched_config *c = sched_config_new();
    tm_err err = {0};
    CHECK_INT(c->backfill.reserve_depth, 1);
    CHECK_INT(c->backfill.resolution_ms, 1000);
    CHECK_INT(c->backfill.max_job_test, 500);
    CHECK_INT(c->backfill.default_runtime_ms, 0);
    CHECKF(apply_yaml(c,
                      "backfill: {reserveDepth: all, resolution: 5s, maxJobTest: 50, window: 2h, "
                      "defaultRuntime: 10m}\n",
                      &err) == 0,
           "%s", err.msg);
    CHECK_INT(c->backfill.reserve_depth, BF_DEPTH_ALL);
    CHECK_INT(c->backfill.resolution_ms, 5000);
    CHECK_INT(c->backfill.max_job_test, 50);
    CHECK_INT(c->backfill.window_ms, 2 * 3600 * 1000LL);
    CHECK_INT(c->backfill.default_runtime_ms, 600000);
    CHECKF(apply_yaml(c, "backfill: {reserveDepth: 0, resolution: 30, defaultRuntime: \"\"}\n",
                      &err) == 0,
           "%s", err.msg);
    CHECK_INT(c->backfill.reserve_depth, 0);
    CHECK_INT(c->backfill.resolution_ms, 30000);
    CHECK_INT(c->backfill.default_runtime_ms, 0);
    struct {
        const char *yaml, *want;
    } bad[] = {
        {"backfill: {reserveDepth: -1}\n", "backfill.reserveDepth '-1'"},
        {"backfill: {reserveDepth: some}\n", "backfill.reserveDepth 'some'"},
        {"backfill: {reserveDepth: [1]}\n", "reserveDepth must be"},
        {"backfill: {resolution: 0}\n", "backfill.resolution must be positive"},
        {"backfill: {resolution: fast}\n", "resolution must be a duration"},
        {"backfill: {maxJobTest: 0}\n", "maxJobTest must be an integer from 1"},
        {"backfill: {depth: 1}\n", "depth"},
        {"backfill: 3\n", "backfill must be a mapping"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sched_config *d = sched_config_new();
        CHECK_INT(apply_yaml(d, bad[i].yaml, &err), -1);
        CHECKF(strstr(err.msg, bad[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
               bad[i].want);
        CHECK_INT(d->backfill.reserve_depth, 1); /* unchanged on error */
        sched_config_free(d);
    }
    sched_config_free(c);
}

/* --help names every policy --policy accepts (adaptive was accepted but not listed). */
static void test_usage_lists_every_policy(void) {
    const char *u = sched_config_usage();
    const char *line = strstr(u, "--policy NAME");
    CHECK(line != NULL);
    if (!line)
        return;
    size_t len = strcspn(line, "\n");
    for (const char *const *n = sched_policy_names(); *n; n++) {
        const char *at = strstr(line, *n);
        CHECKF(at && at < line + len, "--help does not list policy '%s'", *n);
    }
}

/* profiles: parsed, weights over the top level's, names for the cache and pods, --profile adds
 * one; every mistake refused naming it. */
static void test_profiles(void) {
    sched_config *c = sched_config_new();
    tm_err err = {0};
    const char *y = "schedulerName: tarema\npolicy: tarema\nscoreWeights: {NodeAffinity: 4}\n"
                    "profiles:\n"
                    "- {schedulerName: tarema-pack, policy: fill-nodes}\n"
                    "- {schedulerName: tarema-spread, policy: fair, scoreWeights: {policy: 9}}\n";
    CHECKF(apply_yaml(c, y, &err) == 0, "%s", err.msg);
    CHECKF(sched_config_validate(c, &err) == 0, "%s", err.msg);
    CHECK_INT(c->n_profiles, 2);
    CHECK_STR(c->profiles[0].policy, "fill-nodes");
    CHECK_INT(c->profiles[1].score_weights.w[0], 9);
    sched_keys k = sched_config_keys(c);
    CHECK(k.profiles && k.profiles[2] && !k.profiles[3]);
    if (k.profiles && k.profiles[2]) {
        CHECK_STR(k.profiles[0], "tarema");
        CHECK_STR(k.profiles[2], "tarema-spread");
    }
    /* into a framework: profile 2 has its own policy weight and the top level's NodeAffinity */
    sched_framework *fw = sched_policy_new(c->policy, &err);
    CHECK_INT(sched_framework_apply_weights(fw, &c->score_weights, &err), 0);
    CHECKF(sched_config_add_profiles(c, fw, &err) == 0, "%s", err.msg);
    CHECK_INT((int)sched_framework_profile_count(fw), 3);
    CHECK_INT(sched_framework_use_profile(fw, 2, &err), 0);
    CHECK_INT(sched_framework_score_weight(fw, "policy"), 9);
    CHECK_INT(sched_framework_score_weight(fw, "NodeAffinity"), 4);
    sched_framework_free(fw);
    /* --profile adds one; a later --scheduler-name renames the first in the list */
    bool help;
    const char *args[] = {"--profile", "tarema-rr=round-robin", "--scheduler-name", "main", NULL};
    CHECKF(parse(c, args, &help, &err) == 0, "%s", err.msg);
    CHECK_INT(c->n_profiles, 3);
    k = sched_config_keys(c);
    CHECK_STR(k.profiles[0], "main");
    CHECK_STR(k.profiles[3], "tarema-rr");
    CHECKF(sched_config_validate(c, &err) == 0, "%s", err.msg);
    sched_config_free(c);

    struct {
        const char *yaml, *want;
        bool at_validate;
    } cases[] = {
        {"profiles: {schedulerName: x}\n", "profiles must be a list", false},
        {"profiles: [{policy: fair}]\n", "profiles[0]: schedulerName must be", false},
        {"profiles: [{schedulerName: x, policy: best}]\n", "profiles[0]: policy: unknown", false},
        {"profiles: [{schedulerName: x, weights: {}}]\n", "weights", false},
        {"profiles: [{schedulerName: x, scoreWeights: {policy: 500}}]\n", "500", false},
        {"profiles: [{schedulerName: tarema}]\n", "schedulerName tarema is given twice", true},
        {"profiles: [{schedulerName: x}, {schedulerName: x}]\n", "given twice", true},
        {"profiles: [{schedulerName: x, policy: sjfn}]\n", "orders the queue differently", true},
        {"policy: sjfn\nprofiles: [{schedulerName: x, policy: adaptive}]\n",
         "orders the queue differently", true},
        {"mode: extender\nprofiles: [{schedulerName: x}]\n", "profiles need mode: scheduler", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        c = sched_config_new();
        err = (tm_err){0};
        int rc = apply_yaml(c, cases[i].yaml, &err);
        if (cases[i].at_validate) {
            CHECKF(rc == 0, "case %zu: %s", i, err.msg);
            rc = sched_config_validate(c, &err);
        }
        CHECK_INT(rc, -1);
        CHECKF(strstr(err.msg, cases[i].want) != NULL, "case %zu: got '%s'", i, err.msg);
        sched_config_free(c);
    }
    const char *bad[][3] = {
        {"--profile", "=fair", NULL}, {"--profile", "x=", NULL}, {"--profile", "x=best", NULL}};
    for (size_t i = 0; i < 3; i++) {
        c = sched_config_new();
        err = (tm_err){0};
        CHECK_INT(parse(c, bad[i], &help, &err), -1);
        CHECKF(strstr(err.msg, "--profile") != NULL, "case %zu: got '%s'", i, err.msg);
        sched_config_free(c);
    }
}

int main(void) {
    RUN(test_defaults);
    RUN(test_leader_defaults);
    RUN(test_file);
    RUN(test_file_errors);
    RUN(test_validate_errors);
    RUN(test_flags_override_file);
    RUN(test_flag_errors);
    RUN(test_security_keys);
    RUN(test_usage_lists_every_policy);
    RUN(test_score_weights);
    RUN(test_spread_args);
    RUN(test_backfill);
    RUN(test_profiles);
    return TEST_SUMMARY();
}
