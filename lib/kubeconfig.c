/* kubeconfig.c: where a client's configuration comes from: a kubeconfig file (YAML, through
 * yamljson) or the in-cluster service account. Produces a tm_kube_config; nothing here talks
 * to the network. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileutil.h"
#include "jsonutil.h"
#include "kube_internal.h"
#include "log.h"
#include "yamljson.h"

#define SA_ROOT "/var/run/secrets/kubernetes.io/serviceaccount"

/* The opt-in for sending credentials to an http:// API server (in clear): "1" allows it, with
 * a warning. Anything else refuses such a kubeconfig. */
#define ALLOW_HTTP_ENV "TAREMA_ALLOW_INSECURE_HTTP"

static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

char *tm_kube_base64_decode(const char *in, size_t *out_len) {
    size_t n = strlen(in);
    char *out = malloc(n / 4 * 3 + 4);
    if (!out)
        return NULL;
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0, pads = 0, nchars = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pads++;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || pads > 0) { /* bad character, or data after padding */
            free(out);
            return NULL;
        }
        nchars++;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    /* A lone trailing character carries fewer than 8 bits: not valid base64. */
    if (nchars % 4 == 1 || pads > 2 || (pads > 0 && (nchars + pads) % 4 != 0)) {
        free(out);
        return NULL;
    }
    out[o] = '\0';
    if (out_len)
        *out_len = o;
    return out;
}

void tm_kube_config_free(tm_kube_config *cfg) {
    if (!cfg)
        return;
    free(cfg->server);
    free(cfg->ca_file);
    free(cfg->ca_data);
    free(cfg->cert_file);
    free(cfg->cert_data);
    free(cfg->key_file);
    free(cfg->key_data);
    free(cfg->token);
    free(cfg->token_file);
    free(cfg->namespace);
    free(cfg->context);
    free(cfg->user_agent);
    free(cfg);
}

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "a mapping";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* Field `key` of obj as a string into *out: NULL when absent or null, -1 with err when it has
 * another type (YAML reads `token: 12345` as a number: silently dropping it would leave the
 * client anonymous, which is much harder to diagnose than this message). */
static int str_field(const json_t *obj, const char *key, const char **out, const char *what,
                     tm_err *err) {
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return tm_err_set(err, "%s: %s must be a string, not %s (quote it)", what, key,
                          type_name(v));
    *out = json_string_value(v);
    return 0;
}

/* Finds {name: X, <field>: {...}} in a named list (clusters, users, contexts) into *out (NULL
 * when there is no entry of that name); -1 with err when the list or the entry is malformed. */
static int named_entry(const json_t *root, const char *list, const char *name, const char *field,
                       json_t **out, const char *what, tm_err *err) {
    json_t *arr = json_object_get(root, list);
    *out = NULL;
    if (arr && !json_is_null(arr) && !json_is_array(arr))
        return tm_err_set(err, "%s: %s must be a list, not %s", what, list, type_name(arr));
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        const char *n = tm_json_str(e, "name", NULL);
        if (!n || strcmp(n, name) != 0)
            continue;
        json_t *v = json_object_get(e, field);
        if (!json_is_object(v))
            return tm_err_set(err, "%s: %s[%zu] '%s' has no `%s` mapping", what, list, i, name,
                              field);
        *out = v;
        return 0;
    }
    return 0;
}

/* Resolves a relative path against the kubeconfig's directory (as kubectl does). */
static char *resolve_path(const char *dir, const char *p) {
    if (!p || !*p)
        return NULL;
    if (p[0] == '/' || !dir)
        return strdup(p);
    size_t n = strlen(dir) + strlen(p) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", dir, p);
    return out;
}

/* A path field of obj resolved against dir into *out (NULL when absent). */
static int path_field(const json_t *obj, const char *key, const char *dir, char **out,
                      const char *what, tm_err *err) {
    const char *v;
    if (str_field(obj, key, &v, what, err) < 0)
        return -1;
    *out = resolve_path(dir, v);
    return 0;
}

/* Decodes field `key` (base64) of obj into *out; 0 if absent, -1 on malformed data. */
static int decode_field(const json_t *obj, const char *key, char **out, const char *what,
                        tm_err *err) {
    const char *v;
    if (str_field(obj, key, &v, what, err) < 0)
        return -1;
    if (!v || !*v)
        return 0;
    size_t n;
    *out = tm_kube_base64_decode(v, &n);
    if (!*out)
        return tm_err_set(err, "%s: %s is not valid base64", what, key);
    return 0;
}

static char *default_kubeconfig_path(tm_err *err) {
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        const char *colon = strchr(env, ':');
        return colon ? strndup(env, (size_t)(colon - env)) : strdup(env);
    }
    const char *home = getenv("HOME");
    if (!home || !*home) {
        tm_err_set(err, "no kubeconfig: KUBECONFIG is not set and HOME is unknown");
        return NULL;
    }
    size_t n = strlen(home) + 16;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/.kube/config", home);
    return p;
}

static int fill_cluster(tm_kube_config *cfg, const json_t *cl, const char *dir, const char *what,
                        tm_err *err) {
    const char *server;
    if (str_field(cl, "server", &server, what, err) < 0)
        return -1;
    if (!server || !*server)
        return tm_err_set(err, "%s: cluster has no server", what);
    size_t sl = strlen(server);
    cfg->server = strndup(server, server[sl - 1] == '/' ? sl - 1 : sl);
    if (path_field(cl, "certificate-authority", dir, &cfg->ca_file, what, err) < 0 ||
        decode_field(cl, "certificate-authority-data", &cfg->ca_data, what, err) < 0)
        return -1;
    json_t *insecure = json_object_get(cl, "insecure-skip-tls-verify");
    const char *is = json_string_value(insecure);
    if (insecure && !json_is_boolean(insecure) && !json_is_null(insecure) &&
        !(is && (strcmp(is, "true") == 0 || strcmp(is, "false") == 0)))
        return tm_err_set(err, "%s: insecure-skip-tls-verify must be true or false, not %s", what,
                          is ? is : type_name(insecure));
    cfg->insecure = json_is_true(insecure) || (is && strcmp(is, "true") == 0);
    return 0;
}

static int fill_user(tm_kube_config *cfg, const json_t *u, const char *dir, const char *what,
                     tm_err *err) {
    if (!u)
        return 0; /* anonymous */
    const char *token;
    if (path_field(u, "client-certificate", dir, &cfg->cert_file, what, err) < 0 ||
        path_field(u, "client-key", dir, &cfg->key_file, what, err) < 0 ||
        decode_field(u, "client-certificate-data", &cfg->cert_data, what, err) < 0 ||
        decode_field(u, "client-key-data", &cfg->key_data, what, err) < 0 ||
        str_field(u, "token", &token, what, err) < 0 ||
        path_field(u, "tokenFile", dir, &cfg->token_file, what, err) < 0)
        return -1;
    cfg->token = token && *token ? strdup(token) : NULL;
    bool has_cert = cfg->cert_file || cfg->cert_data;
    bool has_key = cfg->key_file || cfg->key_data;
    if (has_cert != has_key)
        return tm_err_set(err, "%s: user has a client %s but no client %s", what,
                          has_cert ? "certificate" : "key", has_cert ? "key" : "certificate");
    if (!has_cert && !cfg->token && !cfg->token_file) {
        if (json_object_get(u, "exec") || json_object_get(u, "auth-provider"))
            return tm_err_set(err,
                              "%s: user authenticates with exec/auth-provider, which tarema "
                              "does not run; use a client certificate or a token",
                              what);
        if (json_object_get(u, "username"))
            return tm_err_set(err,
                              "%s: basic auth (username/password) is not supported; use a "
                              "client certificate or a token",
                              what);
    }
    return 0;
}

/* How the kubeconfig protects the connection, checked once both the cluster and the user are
 * read. Like kubectl, a CA together with insecure-skip-tls-verify is refused (the CA would be
 * silently ignored); insecure alone is allowed with a warning naming the cluster. An http://
 * server gets every request in clear: with credentials (token, token file, client
 * certificate) it is refused unless allow_http, since the token would be readable by anyone
 * on the path and a client certificate cannot authenticate without TLS; without credentials,
 * or allowed, it is used with a warning. */
static int check_transport(const tm_kube_config *cfg, const char *cluster, const char *what,
                           bool allow_http, tm_err *err) {
    bool has_ca = cfg->ca_file || cfg->ca_data;
    if (cfg->insecure && has_ca)
        return tm_err_set(err,
                          "%s: cluster '%s': specifying a root certificates file with the "
                          "insecure flag is not allowed (remove insecure-skip-tls-verify or the "
                          "certificate-authority)",
                          what, cluster);
    bool http = strncmp(cfg->server, "http://", 7) == 0;
    const char *cred = cfg->token                         ? "a bearer token"
                       : cfg->token_file                  ? "a bearer token file"
                       : cfg->cert_file || cfg->cert_data ? "a client certificate"
                                                          : NULL;
    if (http && cred && !allow_http)
        return tm_err_set(err,
                          "%s: cluster '%s': server %s is plain http:// and the user has %s, "
                          "which would be sent in clear (use https://, or set " ALLOW_HTTP_ENV
                          "=1 to allow it)",
                          what, cluster, cfg->server, cred);
    if (cfg->insecure && !http)
        tm_warn("TLS verification of the API server is off (insecure-skip-tls-verify): anyone on "
                "the network path can impersonate it cluster=%s server=%s",
                cluster, cfg->server);
    if (http)
        tm_warn("API server connection is not encrypted (http://)%s cluster=%s server=%s",
                cred ? ", credentials sent in clear as allowed by " ALLOW_HTTP_ENV "=1" : "",
                cluster, cfg->server);
    return 0;
}

tm_kube_config *tm_kube_config_load(const char *path, const char *context, tm_err *err) {
    char *p = path ? strdup(path) : default_kubeconfig_path(err);
    if (!p)
        return NULL;
    tm_kube_config *cfg = calloc(1, sizeof *cfg);
    json_t *root = tm_yaml_load_file(p, err);
    char *dir = NULL;
    char what[PATH_MAX + 300];
    snprintf(what, sizeof what, "kubeconfig %s", p);
    if (!root) {
        tm_err_wrap(err, "loading kubeconfig");
        goto fail;
    }
    if (!json_is_object(root)) {
        tm_err_set(err, "%s: not a kubeconfig (top level is not a mapping)", what);
        goto fail;
    }
    const char *slash = strrchr(p, '/');
    dir = slash ? strndup(p, (size_t)(slash - p) + (slash == p)) : NULL;
    const char *ctx_name = context;
    if (!ctx_name && str_field(root, "current-context", &ctx_name, what, err) < 0)
        goto fail;
    if (!ctx_name || !*ctx_name) {
        tm_err_set(err, "%s: no current-context set and no context given", what);
        goto fail;
    }
    json_t *ctx, *cl = NULL, *u = NULL;
    if (named_entry(root, "contexts", ctx_name, "context", &ctx, what, err) < 0)
        goto fail;
    if (!ctx) {
        tm_err_set(err, "%s: context '%s' not found", what, ctx_name);
        goto fail;
    }
    snprintf(what, sizeof what, "kubeconfig %s, context '%s'", p, ctx_name);
    const char *cl_name, *user_name, *ns;
    if (str_field(ctx, "cluster", &cl_name, what, err) < 0 ||
        str_field(ctx, "user", &user_name, what, err) < 0 ||
        str_field(ctx, "namespace", &ns, what, err) < 0)
        goto fail;
    if (!cl_name || !*cl_name) {
        tm_err_set(err, "%s: the context names no cluster", what);
        goto fail;
    }
    if (named_entry(root, "clusters", cl_name, "cluster", &cl, what, err) < 0)
        goto fail;
    if (!cl) {
        tm_err_set(err, "%s: cluster '%s' not found", what, cl_name);
        goto fail;
    }
    if (user_name && *user_name) {
        if (named_entry(root, "users", user_name, "user", &u, what, err) < 0)
            goto fail;
        if (!u) {
            tm_err_set(err, "%s: user '%s' not found", what, user_name);
            goto fail;
        }
    }
    const char *allow = getenv(ALLOW_HTTP_ENV);
    if (fill_cluster(cfg, cl, dir, what, err) < 0 || fill_user(cfg, u, dir, what, err) < 0 ||
        check_transport(cfg, cl_name, what, allow && strcmp(allow, "1") == 0, err) < 0)
        goto fail;
    cfg->namespace = strdup(ns && *ns ? ns : "default");
    cfg->context = strdup(ctx_name);
    json_decref(root);
    free(dir);
    free(p);
    return cfg;
fail:
    json_decref(root);
    free(dir);
    free(p);
    tm_kube_config_free(cfg);
    return NULL;
}

static char *read_trimmed(const char *path, tm_err *err) {
    char *s = tm_read_file(path, NULL, err);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
    return s;
}

/* root/name if it is readable (caller frees); NULL with err naming the file otherwise. */
static char *sa_file(const char *root, const char *name, const char *what, tm_err *err) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, name);
    if (access(path, R_OK) != 0) {
        tm_err_set(err, "in-cluster config: cannot read the %s %s: %s", what, path,
                   strerror(errno));
        return NULL;
    }
    return strdup(path);
}

tm_kube_config *tm_kube_config_in_cluster(const char *root, tm_err *err) {
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port) {
        tm_err_set(err, "not running in a cluster: KUBERNETES_SERVICE_HOST and "
                        "KUBERNETES_SERVICE_PORT must be set");
        return NULL;
    }
    if (!root)
        root = SA_ROOT;
    tm_kube_config *cfg = calloc(1, sizeof *cfg);
    size_t n = strlen(host) + strlen(port) + 16;
    cfg->server = malloc(n);
    /* An IPv6 service host needs brackets in a URL. */
    snprintf(cfg->server, n, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    cfg->token_file = sa_file(root, "token", "service account token", err);
    cfg->ca_file = cfg->token_file ? sa_file(root, "ca.crt", "cluster CA", err) : NULL;
    if (!cfg->ca_file) {
        tm_kube_config_free(cfg);
        return NULL;
    }
    char *nsfile = sa_file(root, "namespace", "namespace file", NULL);
    cfg->namespace = nsfile ? read_trimmed(nsfile, NULL) : NULL;
    free(nsfile);
    if (!cfg->namespace || !*cfg->namespace) {
        free(cfg->namespace);
        cfg->namespace = strdup("default");
    }
    return cfg;
}

tm_kube_config *tm_kube_config_auto(const char *path, const char *context, tm_err *err) {
    if (path && *path)
        return tm_kube_config_load(path, context, err);
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (host && *host)
        return tm_kube_config_in_cluster(NULL, err);
    return tm_kube_config_load(NULL, context, err);
}
