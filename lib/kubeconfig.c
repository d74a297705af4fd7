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
#include "yamljson.h"

#define SA_ROOT "/var/run/secrets/kubernetes.io/serviceaccount"

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

/* Finds {name: X, <field>: {...}} in a named list (clusters, users, contexts). */
static json_t *named_entry(const json_t *root, const char *list, const char *name,
                           const char *field) {
    json_t *arr = json_object_get(root, list);
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        const char *n = tm_json_str(e, "name", NULL);
        if (n && strcmp(n, name) == 0) {
            json_t *v = json_object_get(e, field);
            return json_is_object(v) ? v : NULL;
        }
    }
    return NULL;
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

/* Decodes field `key` (base64) of obj into *out; 0 if absent, -1 on malformed data. */
static int decode_field(const json_t *obj, const char *key, char **out, const char *what,
                        tm_err *err) {
    const char *v = tm_json_str(obj, key, NULL);
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
    const char *server = tm_json_str(cl, "server", NULL);
    if (!server || !*server)
        return tm_err_set(err, "%s: cluster has no server", what);
    size_t sl = strlen(server);
    cfg->server = strndup(server, server[sl - 1] == '/' ? sl - 1 : sl);
    cfg->ca_file = resolve_path(dir, tm_json_str(cl, "certificate-authority", NULL));
    if (decode_field(cl, "certificate-authority-data", &cfg->ca_data, what, err) < 0)
        return -1;
    json_t *insecure = json_object_get(cl, "insecure-skip-tls-verify");
    cfg->insecure = json_is_true(insecure) ||
                    (json_is_string(insecure) && strcmp(json_string_value(insecure), "true") == 0);
    return 0;
}

static int fill_user(tm_kube_config *cfg, const json_t *u, const char *dir, const char *what,
                     tm_err *err) {
    if (!u)
        return 0; /* anonymous */
    cfg->cert_file = resolve_path(dir, tm_json_str(u, "client-certificate", NULL));
    cfg->key_file = resolve_path(dir, tm_json_str(u, "client-key", NULL));
    if (decode_field(u, "client-certificate-data", &cfg->cert_data, what, err) < 0 ||
        decode_field(u, "client-key-data", &cfg->key_data, what, err) < 0)
        return -1;
    const char *token = tm_json_str(u, "token", NULL);
    cfg->token = token && *token ? strdup(token) : NULL;
    cfg->token_file = resolve_path(dir, tm_json_str(u, "tokenFile", NULL));
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
    const char *ctx_name = context ? context : tm_json_str(root, "current-context", NULL);
    if (!ctx_name || !*ctx_name) {
        tm_err_set(err, "%s: no current-context set and no context given", what);
        goto fail;
    }
    json_t *ctx = named_entry(root, "contexts", ctx_name, "context");
    if (!ctx) {
        tm_err_set(err, "%s: context '%s' not found", what, ctx_name);
        goto fail;
    }
    snprintf(what, sizeof what, "kubeconfig %s, context '%s'", p, ctx_name);
    const char *cl_name = tm_json_str(ctx, "cluster", NULL);
    json_t *cl = cl_name ? named_entry(root, "clusters", cl_name, "cluster") : NULL;
    if (!cl) {
        tm_err_set(err, "%s: cluster '%s' not found", what, cl_name ? cl_name : "(none)");
        goto fail;
    }
    const char *user_name = tm_json_str(ctx, "user", NULL);
    json_t *u = NULL;
    if (user_name && *user_name) {
        u = named_entry(root, "users", user_name, "user");
        if (!u) {
            tm_err_set(err, "%s: user '%s' not found", what, user_name);
            goto fail;
        }
    }
    if (fill_cluster(cfg, cl, dir, what, err) < 0 || fill_user(cfg, u, dir, what, err) < 0)
        goto fail;
    const char *ns = tm_json_str(ctx, "namespace", NULL);
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
    char path[PATH_MAX];
    tm_kube_config *cfg = calloc(1, sizeof *cfg);
    size_t n = strlen(host) + strlen(port) + 16;
    cfg->server = malloc(n);
    /* An IPv6 service host needs brackets in a URL. */
    snprintf(cfg->server, n, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    snprintf(path, sizeof path, "%s/token", root);
    if (access(path, R_OK) != 0) {
        tm_err_set(err, "in-cluster config: cannot read the service account token %s: %s", path,
                   strerror(errno));
        tm_kube_config_free(cfg);
        return NULL;
    }
    cfg->token_file = strdup(path);
    snprintf(path, sizeof path, "%s/ca.crt", root);
    if (access(path, R_OK) != 0) {
        tm_err_set(err, "in-cluster config: cannot read the cluster CA %s: %s", path,
                   strerror(errno));
        tm_kube_config_free(cfg);
        return NULL;
    }
    cfg->ca_file = strdup(path);
    snprintf(path, sizeof path, "%s/namespace", root);
    cfg->namespace = access(path, R_OK) == 0 ? read_trimmed(path, NULL) : NULL;
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
