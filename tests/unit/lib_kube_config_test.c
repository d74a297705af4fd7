/* Unit tests for lib/kubeconfig.c (each auth kind, contexts, relative paths, in-cluster,
 * errors) and the small pure helpers of the client: base64 and API paths. Fixtures are in
 * tests/fixtures/kubeconfig/ (self-made PEM text: parsing only, no TLS). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lib/kube.h"
#include "lib/kube_internal.h"

static char fixture[4096];

static const char *fx(const char *name) {
    const char *root = getenv("REPO_ROOT");
    snprintf(fixture, sizeof fixture, "%s/tests/fixtures/kubeconfig/%s", root ? root : ".", name);
    return fixture;
}

static void test_base64(void) {
    size_t n = 0;
    char *s = tm_kube_base64_decode("aGVsbG8gd29ybGQ=", &n);
    CHECK_STR(s, "hello world");
    CHECK_INT(n, 11);
    free(s);
    s = tm_kube_base64_decode("aGVs\nbG8g d29y\r\nbGQ", &n); /* no padding, whitespace */
    CHECK_STR(s, "hello world");
    free(s);
    s = tm_kube_base64_decode("", &n);
    CHECK_STR(s, "");
    CHECK_INT(n, 0);
    free(s);
    s = tm_kube_base64_decode("/+8=", &n); /* the two non-alphanumeric symbols */
    CHECK(s && n == 2 && (unsigned char)s[0] == 0xff && (unsigned char)s[1] == 0xef);
    free(s);
    CHECK(tm_kube_base64_decode("not*base64", &n) == NULL);
    CHECK(tm_kube_base64_decode("QQ==QQ==", &n) == NULL); /* data after padding */
    CHECK(tm_kube_base64_decode("QUJDR", &n) == NULL);    /* a lone 6-bit character */
    CHECK(tm_kube_base64_decode("QQ=", &n) == NULL);      /* padding to no boundary */
}

static void test_paths(void) {
    char *p = tm_kube_path("v1", "pods", "default", "web-0", "binding");
    CHECK_STR(p, "/api/v1/namespaces/default/pods/web-0/binding");
    free(p);
    p = tm_kube_path("coordination.k8s.io/v1", "leases", "kube-system", "tarema", NULL);
    CHECK_STR(p, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tarema");
    free(p);
    p = tm_kube_path("v1", "nodes", NULL, NULL, NULL);
    CHECK_STR(p, "/api/v1/nodes");
    free(p);
    p = tm_kube_path("v1", "pods", "a b", "x/y?z", NULL); /* escaped, never a path injection */
    CHECK_STR(p, "/api/v1/namespaces/a%20b/pods/x%2Fy%3Fz");
    free(p);
    CHECK(tm_kube_path(NULL, "pods", NULL, NULL, NULL) == NULL);
    p = tm_kube_query_add(strdup("/api/v1/pods"), "labelSelector", "app in (a,b)");
    p = tm_kube_query_add(p, "limit", "5");
    CHECK_STR(p, "/api/v1/pods?labelSelector=app%20in%20%28a%2Cb%29&limit=5");
    free(p);
}

static void test_inline_cert_and_ca_data(void) {
    tm_err err = {0};
    tm_kube_config *c = tm_kube_config_load(fx("certs.yaml"), NULL, &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    CHECK_STR(c->context, "dev");
    CHECK_STR(c->server, "https://127.0.0.1:6443"); /* trailing slash dropped */
    CHECK(c->ca_data && strncmp(c->ca_data, "-----BEGIN CERTIFICATE-----\nMIIBfakeCA", 38) == 0);
    CHECK(c->cert_data && strstr(c->cert_data, "MIIBfakeClientCertificate+/==") != NULL);
    /* The key's base64 was wrapped with spaces; the decoded PEM keeps its UTF-8. */
    CHECK(c->key_data && strstr(c->key_data, "MIGHfakeClientKey\xc3\x9cmlaut==") != NULL);
    CHECK(c->ca_file == NULL && c->cert_file == NULL && c->token == NULL);
    CHECK(!c->insecure);
    CHECK_STR(c->namespace, "default");
    tm_kube_config_free(c);
}

static void test_named_context_token_insecure(void) {
    tm_err err = {0};
    tm_kube_config *c = tm_kube_config_load(fx("certs.yaml"), "prod", &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    CHECK_STR(c->context, "prod");
    CHECK_STR(c->server, "https://10.0.0.1:443");
    CHECK_STR(c->token, "prod-bearer-token");
    CHECK(c->insecure);
    CHECK_STR(c->namespace, "workflows");
    CHECK(c->cert_data == NULL && c->ca_data == NULL);
    tm_kube_config_free(c);
}

static void test_files_relative_to_kubeconfig(void) {
    tm_err err = {0};
    tm_kube_config *c = tm_kube_config_load(fx("files.yaml"), NULL, &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    CHECK_STR(c->ca_file, fx("pki/ca.crt"));
    CHECK_STR(c->cert_file, fx("pki/client.crt"));
    CHECK_STR(c->key_file, "/abs/path/client.key");
    CHECK_STR(c->namespace, "ns1");
    /* The client refuses a key file it cannot read, naming it. */
    tm_kube *k = tm_kube_new(c, &err);
    CHECK(k == NULL);
    CHECKF(strstr(err.msg, "/abs/path/client.key") != NULL, "%s", err.msg);
    tm_kube_config_free(c);
}

static void test_token_file_and_string_insecure(void) {
    tm_err err = {0};
    /* An http:// server with a token file: refused unless explicitly allowed. */
    unsetenv("TAREMA_ALLOW_INSECURE_HTTP");
    tm_kube_config *c = tm_kube_config_load(fx("tokenfile.yaml"), NULL, &err);
    CHECK(c == NULL);
    tm_kube_config_free(c);
    setenv("TAREMA_ALLOW_INSECURE_HTTP", "1", 1);
    c = tm_kube_config_load(fx("tokenfile.yaml"), NULL, &err);
    unsetenv("TAREMA_ALLOW_INSECURE_HTTP");
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    CHECK_STR(c->token_file, fx("token.txt"));
    CHECK(c->token == NULL);
    CHECK(c->insecure); /* "true" as a string, as some tools write it */
    CHECK_STR(c->server, "http://127.0.0.1:8080");
    tm_kube_config_free(c);
}

/* Loads context ctx of tls.yaml with stderr captured: returns the config (or NULL, err set)
 * and puts what was logged into logged. */
static tm_kube_config *load_logged(const char *ctx, char *logged, size_t cap, tm_err *err) {
    char path[] = "/tmp/tarema-kubeconfig-log-XXXXXX";
    int fd = mkstemp(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    tm_kube_config *c = tm_kube_config_load(fx("tls.yaml"), ctx, err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, logged, cap - 1, 0);
    logged[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return c;
}

/* insecure-skip-tls-verify never silent: refused next to a CA (kubectl's rule and words),
 * allowed alone with a warning naming the cluster. */
static void test_insecure_skip_verify(void) {
    char logged[4096];
    const char *with_ca[] = {"ca-data-insecure", "ca-file-insecure"};
    for (size_t i = 0; i < 2; i++) {
        tm_err err = {0};
        tm_kube_config *c = load_logged(with_ca[i], logged, sizeof logged, &err);
        CHECKF(c == NULL, "context %s: a CA with insecure-skip-tls-verify was accepted",
               with_ca[i]);
        tm_kube_config_free(c);
        CHECKF(strstr(err.msg, "specifying a root certificates file with the insecure flag is "
                               "not allowed") != NULL,
               "%s: %s", with_ca[i], err.msg);
        CHECKF(strstr(err.msg, with_ca[i]) && strstr(err.msg, "-and-insecure'"), "%s", err.msg);
    }
    tm_err err = {0};
    tm_kube_config *c = load_logged("insecure-only", logged, sizeof logged, &err);
    CHECKF(c != NULL, "%s", err.msg);
    CHECK(c && c->insecure);
    tm_kube_config_free(c);
    CHECKF(strstr(logged, "warn") && strstr(logged, "insecure-skip-tls-verify") &&
               strstr(logged, "cluster=insecure-no-ca"),
           "no warning naming the cluster: '%s'", logged);
    /* A verified connection logs nothing. */
    c = tm_kube_config_load(fx("files.yaml"), NULL, &err);
    CHECKF(c != NULL && !c->insecure, "%s", err.msg);
    tm_kube_config_free(c);
}

/* http:// servers: credentials are never sent in clear unless TAREMA_ALLOW_INSECURE_HTTP=1,
 * and an unencrypted connection is always logged. */
static void test_plain_http(void) {
    char logged[4096];
    const struct {
        const char *ctx, *cred;
    } creds[] = {{"http-token", "a bearer token"},
                 {"http-tokenfile", "a bearer token file"},
                 {"http-cert", "a client certificate"}};
    unsetenv("TAREMA_ALLOW_INSECURE_HTTP");
    for (size_t i = 0; i < 3; i++) {
        tm_err err = {0};
        tm_kube_config *c = load_logged(creds[i].ctx, logged, sizeof logged, &err);
        CHECKF(c == NULL, "context %s: credentials over http:// accepted", creds[i].ctx);
        tm_kube_config_free(c);
        CHECKF(strstr(err.msg, "cluster 'plain-http'") && strstr(err.msg, creds[i].cred) &&
                   strstr(err.msg, "TAREMA_ALLOW_INSECURE_HTTP=1"),
               "%s: %s", creds[i].ctx, err.msg);
    }
    setenv("TAREMA_ALLOW_INSECURE_HTTP", "yes", 1); /* only "1" opts in */
    tm_err err = {0};
    tm_kube_config *c = load_logged("http-token", logged, sizeof logged, &err);
    CHECK(c == NULL);
    tm_kube_config_free(c);
    setenv("TAREMA_ALLOW_INSECURE_HTTP", "1", 1);
    c = load_logged("http-token", logged, sizeof logged, &err);
    unsetenv("TAREMA_ALLOW_INSECURE_HTTP");
    CHECKF(c != NULL, "%s", err.msg);
    CHECK_STR(c ? c->token : NULL, "secret-bearer-token");
    tm_kube_config_free(c);
    CHECKF(strstr(logged, "warn") && strstr(logged, "cluster=plain-http") &&
               strstr(logged, "credentials sent in clear"),
           "no warning: '%s'", logged);
    CHECKF(strstr(logged, "secret-bearer-token") == NULL, "the token was logged: %s", logged);
    /* No credentials: nothing to leak, but the unencrypted connection is still logged. */
    c = load_logged("http-anonymous", logged, sizeof logged, &err);
    CHECKF(c != NULL, "%s", err.msg);
    tm_kube_config_free(c);
    CHECKF(strstr(logged, "warn") && strstr(logged, "http://") &&
               strstr(logged, "cluster=plain-http"),
           "no warning: '%s'", logged);
}

static void test_kubeconfig_env_and_errors(void) {
    tm_err err = {0};
    char both[8192];
    snprintf(both, sizeof both, "%s:/nonexistent", fx("certs.yaml"));
    setenv("KUBECONFIG", both, 1); /* the first file of the list is used */
    tm_kube_config *c = tm_kube_config_load(NULL, NULL, &err);
    CHECKF(c && strcmp(c->context, "dev") == 0, "%s", err.msg);
    tm_kube_config_free(c);
    unsetenv("KUBECONFIG");

    c = tm_kube_config_load(fx("certs.yaml"), "staging", &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "context 'staging' not found") != NULL, "%s", err.msg);
    c = tm_kube_config_load(fx("exec.yaml"), NULL, &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "exec") != NULL, "%s", err.msg);
    c = tm_kube_config_load(fx("broken.yaml"), NULL, &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "certificate-authority-data is not valid base64") != NULL, "%s",
           err.msg);
    c = tm_kube_config_load(fx("broken.yaml"), "nocluster", &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "cluster 'missing' not found") != NULL, "%s", err.msg);
    c = tm_kube_config_load(fx("broken.yaml"), "keyonly", &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "client key but no client certificate") != NULL, "%s", err.msg);
    c = tm_kube_config_load(fx("broken.yaml"), "nouser", &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "user 'ghost' not found") != NULL, "%s", err.msg);
    c = tm_kube_config_load(fx("does-not-exist.yaml"), NULL, &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "does-not-exist.yaml") != NULL, "%s", err.msg);
    c = tm_kube_config_load(fx("pki/ca.crt"), NULL, &err); /* YAML, but not a kubeconfig */
    CHECK(c == NULL);
}

/* Bad input: wrong types, malformed lists, missing fields. Each error names the field and the
 * context, never a crash and never a silently dropped value. */
static void test_wrong_types_are_named(void) {
    static const struct {
        const char *context, *want;
    } cases[] = {
        {"numtoken", "context 'numtoken': token must be a string, not a number (quote it)"},
        {"numserver", "server must be a string, not a number"},
        {"maybe", "insecure-skip-tls-verify must be true or false, not maybe"},
        {"flat", "clusters[3] 'flat' has no `cluster` mapping"},
        {"cadata-list", "certificate-authority-data must be a string, not a list"},
        {"keymap", "client-key must be a string, not a mapping"},
        {"nocluster", "context 'nocluster': the context names no cluster"},
        {"nsnumber", "namespace must be a string, not a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tm_err err = {0};
        tm_kube_config *c = tm_kube_config_load(fx("wrongtypes.yaml"), cases[i].context, &err);
        CHECKF(c == NULL, "context %s loaded", cases[i].context);
        tm_kube_config_free(c);
        CHECKF(strstr(err.msg, cases[i].want) != NULL, "%s: %s", cases[i].context, err.msg);
        CHECKF(strstr(err.msg, "wrongtypes.yaml") != NULL, "%s", err.msg);
    }
    tm_err err = {0};
    tm_kube_config *c = tm_kube_config_load(fx("notlists.yaml"), NULL, &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "users must be a list, not a mapping") != NULL, "%s", err.msg);
    /* An empty file is not a kubeconfig either. */
    char empty[] = "/tmp/tarema-empty-kubeconfig-XXXXXX";
    int fd = mkstemp(empty);
    close(fd);
    c = tm_kube_config_load(empty, NULL, &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "not a kubeconfig") != NULL, "%s", err.msg);
    unlink(empty);
}

static void test_in_cluster(void) {
    tm_err err = {0};
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    tm_kube_config *c = tm_kube_config_in_cluster(fx("serviceaccount"), &err);
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "KUBERNETES_SERVICE_HOST") != NULL, "%s", err.msg);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    c = tm_kube_config_in_cluster(fx("serviceaccount"), &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (c) {
        CHECK_STR(c->server, "https://10.96.0.1:443");
        CHECK_STR(c->token_file, fx("serviceaccount/token"));
        CHECK_STR(c->ca_file, fx("serviceaccount/ca.crt"));
        CHECK_STR(c->namespace, "team-a");
        CHECK(c->context == NULL);
        tm_kube_config_free(c);
    }
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    c = tm_kube_config_in_cluster(fx("serviceaccount"), &err);
    CHECK_STR(c ? c->server : NULL, "https://[fd00::1]:443");
    tm_kube_config_free(c);
    c = tm_kube_config_in_cluster(fx("pki"), &err); /* no token there */
    CHECK(c == NULL);
    CHECKF(strstr(err.msg, "token") != NULL, "%s", err.msg);
    /* auto: an explicit path beats in-cluster; otherwise in-cluster when the env is set. */
    c = tm_kube_config_auto(fx("certs.yaml"), NULL, &err);
    CHECK_STR(c ? c->context : NULL, "dev");
    tm_kube_config_free(c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_client_validation(void) {
    tm_err err = {0};
    tm_kube_config cfg = {.server = "127.0.0.1:6443"};
    CHECK(tm_kube_new(&cfg, &err) == NULL);
    CHECKF(strstr(err.msg, "https://") != NULL, "%s", err.msg);
    /* A config built in code gets the kubeconfig's rule too. */
    tm_kube_config both = {.server = "https://127.0.0.1:6443", .ca_data = "PEM", .insecure = true};
    CHECK(tm_kube_new(&both, &err) == NULL);
    CHECKF(strstr(err.msg, "specifying a root certificates file with the insecure flag is not "
                           "allowed") != NULL,
           "%s", err.msg);
    tm_kube_config ok = {.server = "https://127.0.0.1:1/", .qps = -1};
    CHECK(tm_kube_new(&ok, &err) == NULL);
    ok.qps = 5;
    tm_kube *k = tm_kube_new(&ok, &err);
    CHECKF(k != NULL, "%s", err.msg);
    CHECK_STR(k ? tm_kube_namespace(k) : NULL, "default");
    /* Nothing listens on port 1: the error names the server. */
    json_t *r = k ? tm_kube_get(k, "/version", &err) : NULL;
    CHECK(r == NULL);
    CHECKF(strstr(err.msg, "cannot reach the API server https://127.0.0.1:1") != NULL, "%s",
           err.msg);
    CHECK_INT(err.http_status, 0);
    tm_kube_free(k);
}

static void test_sync_calls_are_rate_limited(void) {
    /* qps 20, burst 1: the 2nd..6th calls each wait for a token, 50 ms apart (a lower bound
     * on correctness, not a performance figure). Port 1 refuses at once. */
    tm_kube_config cfg = {.server = "http://127.0.0.1:1", .qps = 20, .burst = 1};
    tm_err err = {0};
    tm_kube *k = tm_kube_new(&cfg, &err);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 6; i++)
        json_decref(tm_kube_get(k, "/version", &err));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECKF(secs >= 0.24, "6 calls took %.3f s", secs);
    tm_kube_free(k);
}

int main(void) {
    RUN(test_base64);
    RUN(test_paths);
    RUN(test_inline_cert_and_ca_data);
    RUN(test_named_context_token_insecure);
    RUN(test_files_relative_to_kubeconfig);
    RUN(test_token_file_and_string_insecure);
    RUN(test_insecure_skip_verify);
    RUN(test_plain_http);
    RUN(test_kubeconfig_env_and_errors);
    RUN(test_wrong_types_are_named);
    RUN(test_in_cluster);
    RUN(test_client_validation);
    RUN(test_sync_calls_are_rate_limited);
    return TEST_SUMMARY();
}
