/* kube.c: the client object and the synchronous API calls of lib/kube.h: TLS and auth setup of
 * curl handles (shared with the loop), the token-file cache, the qps token bucket, request and
 * error handling, paged list, bind and events. The event loop is kube_loop.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileutil.h"
#include "jsonutil.h"
#include "kube_proto.h"
#include "kube_internal.h"

#define DEFAULT_TIMEOUT_S 60

/* ---- small helpers ----------------------------------------------------------------------- */

int tm_kbuf_append(tm_kbuf *b, const void *p, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *nb = realloc(b->data, cap);
        if (!nb)
            return -1;
        b->data = nb;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

void tm_kbuf_free(tm_kbuf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int64_t tm_kube_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tm_kube_microtime(char *buf, size_t len) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tmv;
    gmtime_r(&ts.tv_sec, &tmv);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tmv);
    snprintf(buf + n, len - n, ".%06ldZ", (long)(ts.tv_nsec / 1000));
}

static bool unreserved(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static void append_escaped(tm_kbuf *b, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (unreserved(c)) {
            tm_kbuf_append(b, s, 1);
        } else {
            char hex[4];
            snprintf(hex, sizeof hex, "%%%02X", c);
            tm_kbuf_append(b, hex, 3);
        }
    }
}

char *tm_kube_path(const char *group_version, const char *resource, const char *ns,
                   const char *name, const char *subresource) {
    if (!group_version || !resource)
        return NULL;
    tm_kbuf b = {0};
    bool core = strcmp(group_version, "v1") == 0;
    tm_kbuf_append(&b, core ? "/api/" : "/apis/", core ? 5 : 6);
    tm_kbuf_append(&b, group_version, strlen(group_version)); /* keeps its '/' */
    if (ns && *ns) {
        tm_kbuf_append(&b, "/namespaces/", 12);
        append_escaped(&b, ns);
    }
    tm_kbuf_append(&b, "/", 1);
    append_escaped(&b, resource);
    if (name && *name) {
        tm_kbuf_append(&b, "/", 1);
        append_escaped(&b, name);
        if (subresource && *subresource) {
            tm_kbuf_append(&b, "/", 1);
            append_escaped(&b, subresource);
        }
    }
    return b.data;
}

char *tm_kube_query_add(char *path, const char *key, const char *value) {
    tm_kbuf b = {path, strlen(path), strlen(path) + 1};
    tm_kbuf_append(&b, strchr(path, '?') ? "&" : "?", 1);
    append_escaped(&b, key);
    tm_kbuf_append(&b, "=", 1);
    append_escaped(&b, value);
    return b.data;
}

char *tm_kube_url(const tm_kube *k, const char *path) {
    size_t n = strlen(k->server) + strlen(path) + 2;
    char *u = malloc(n);
    snprintf(u, n, "%s%s%s", k->server, path[0] == '/' ? "" : "/", path);
    return u;
}

/* ---- client ------------------------------------------------------------------------------ */

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

static int check_readable(const char *path, const char *what, tm_err *err) {
    if (path && access(path, R_OK) != 0)
        return tm_err_set(err, "cannot read the %s %s: %s", what, path, strerror(errno));
    return 0;
}

tm_kube *tm_kube_new(const tm_kube_config *cfg, tm_err *err) {
    if (!cfg || !cfg->server ||
        (strncmp(cfg->server, "https://", 8) != 0 && strncmp(cfg->server, "http://", 7) != 0)) {
        tm_err_set(err, "kube client: server URL '%s' must start with https:// or http://",
                   cfg && cfg->server ? cfg->server : "(none)");
        return NULL;
    }
    /* Whatever built the config: a CA that insecure would silently ignore is a mistake (the
     * kubeconfig loader says which cluster; this covers every other source). */
    if (cfg->insecure && (cfg->ca_file || cfg->ca_data)) {
        tm_err_set(err,
                   "kube client %s: specifying a root certificates file with the insecure "
                   "flag is not allowed",
                   cfg->server);
        return NULL;
    }
    if (check_readable(cfg->ca_file, "CA file", err) < 0 ||
        check_readable(cfg->cert_file, "client certificate", err) < 0 ||
        check_readable(cfg->key_file, "client key", err) < 0 ||
        check_readable(cfg->token_file, "token file", err) < 0)
        return NULL;
    if (cfg->max_active < 0) {
        tm_err_set(err, "kube client: max_active (%d) must not be negative", cfg->max_active);
        return NULL;
    }
    if (cfg->qps < 0 || cfg->burst < 0) {
        tm_err_set(err, "kube client: qps (%g) and burst (%d) must not be negative", cfg->qps,
                   cfg->burst);
        return NULL;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        tm_err_set(err, "kube client: libcurl failed to initialise");
        return NULL;
    }
    tm_kube *k = calloc(1, sizeof *k);
    size_t sl = strlen(cfg->server);
    k->server = strndup(cfg->server, cfg->server[sl - 1] == '/' ? sl - 1 : sl);
    k->ca_file = dup_or_null(cfg->ca_file);
    k->cert_file = dup_or_null(cfg->cert_file);
    k->key_file = dup_or_null(cfg->key_file);
    k->token_file = dup_or_null(cfg->token_file);
    k->ca_data = dup_or_null(cfg->ca_data);
    k->cert_data = dup_or_null(cfg->cert_data);
    k->key_data = dup_or_null(cfg->key_data);
    k->ca_len = k->ca_data ? strlen(k->ca_data) : 0;
    k->cert_len = k->cert_data ? strlen(k->cert_data) : 0;
    k->key_len = k->key_data ? strlen(k->key_data) : 0;
    k->token = dup_or_null(cfg->token);
    k->insecure = cfg->insecure;
    k->json_only = cfg->json_only;
    k->paged_lists = cfg->paged_lists;
    k->namespace = strdup(cfg->namespace && *cfg->namespace ? cfg->namespace : "default");
    k->user_agent = strdup(cfg->user_agent ? cfg->user_agent : "tarema/0.1");
    k->qps = cfg->qps;
    k->burst = cfg->burst > 0 ? cfg->burst : (cfg->qps > 1 ? cfg->qps : 1);
    k->tokens = k->burst;
    k->sync_pool.cap = 8; /* a CLI's threads: a few at a time */
    k->idle.cap = 64;     /* the loop: binds and events come and go by the hundred */
    k->max_active = cfg->max_active > 0 ? cfg->max_active : TM_KUBE_DEFAULT_MAX_ACTIVE;
    k->bucket_ms = tm_kube_now_ms();
    pthread_mutex_init(&k->mu, NULL);
    if (tm_kube_loop_init(k, err) < 0) {
        tm_kube_free(k);
        return NULL;
    }
    return k;
}

void tm_kube_attach(tm_kube *k, tm_kube_attachment *a) {
    a->prev = NULL;
    a->next = k->attached;
    if (k->attached)
        k->attached->prev = a;
    k->attached = a;
}

void tm_kube_detach(tm_kube *k, tm_kube_attachment *a) {
    if (a->prev)
        a->prev->next = a->next;
    else
        k->attached = a->next;
    if (a->next)
        a->next->prev = a->prev;
    a->prev = a->next = NULL;
}

void tm_kube_free(tm_kube *k) {
    if (!k)
        return;
    while (k->attached) /* each teardown detaches its own */
        k->attached->teardown(k->attached->owner);
    if (k->running > 0) { /* called from a callback: tm_kube_run finishes the job */
        tm_kube_loop_stop(k);
        k->dying = true;
        return;
    }
    tm_kube_loop_free(k);
    tm_easy_pool_clear(&k->sync_pool);
    pthread_mutex_destroy(&k->mu);
    free(k->server);
    free(k->ca_file);
    free(k->cert_file);
    free(k->key_file);
    free(k->token_file);
    free(k->ca_data);
    free(k->cert_data);
    free(k->key_data);
    free(k->token);
    free(k->namespace);
    free(k->user_agent);
    free(k);
    curl_global_cleanup();
}

const char *tm_kube_namespace(const tm_kube *k) {
    return k->namespace;
}

/* The bearer token to send, re-reading token_file when it was replaced or rewritten (service
 * account tokens rotate by an atomic symlink swap, so inode or mtime changes). Caller frees. */
static char *current_token(tm_kube *k) {
    pthread_mutex_lock(&k->mu);
    if (k->token_file) {
        struct stat st;
        if (stat(k->token_file, &st) == 0 &&
            (!k->token || st.st_ino != k->token_ino || st.st_dev != k->token_dev ||
             st.st_size != k->token_size || st.st_mtim.tv_sec != k->token_mtime.tv_sec ||
             st.st_mtim.tv_nsec != k->token_mtime.tv_nsec)) {
            char *t = tm_read_file(k->token_file, NULL, NULL);
            if (t) {
                size_t n = strlen(t);
                while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
                    t[--n] = '\0';
                free(k->token);
                k->token = t;
                k->token_ino = st.st_ino;
                k->token_dev = st.st_dev;
                k->token_size = st.st_size;
                k->token_mtime = st.st_mtim;
            }
        }
    }
    char *t = k->token && *k->token ? strdup(k->token) : NULL;
    pthread_mutex_unlock(&k->mu);
    return t;
}

int64_t tm_kube_ratelimit_reserve(tm_kube *k) {
    if (k->qps <= 0)
        return 0;
    pthread_mutex_lock(&k->mu);
    int64_t now = tm_kube_now_ms();
    k->tokens += (double)(now - k->bucket_ms) * k->qps / 1000.0;
    if (k->tokens > k->burst)
        k->tokens = k->burst;
    k->bucket_ms = now;
    k->tokens -= 1;
    int64_t wait = k->tokens >= 0 ? 0 : (int64_t)ceil(-k->tokens * 1000.0 / k->qps);
    pthread_mutex_unlock(&k->mu);
    return wait;
}

/* A PEM credential given inline (copied into the handle) or as a file, whichever is set;
 * type_opt (client certificate and key; 0 for the CA) says the bytes are PEM. */
static void set_pem(CURL *e, const char *data, size_t len, const char *file, CURLoption blob_opt,
                    CURLoption file_opt, CURLoption type_opt) {
    if (data) {
        struct curl_blob blob = {(void *)data, len, CURL_BLOB_COPY};
        curl_easy_setopt(e, blob_opt, &blob);
    } else if (file) {
        curl_easy_setopt(e, file_opt, file);
    } else {
        return;
    }
    if (type_opt)
        curl_easy_setopt(e, type_opt, "PEM");
}

int tm_kube_setup_easy(tm_kube *k, CURL *e, const char *method, const char *url, const char *body,
                       size_t body_len, const char *content_type, bool watch, bool protobuf,
                       long timeout_s, struct curl_slist **hdrs, char *errbuf, tm_err *err) {
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, timeout_s);
    /* Detects a silently vanished API server on long watches. */
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, k->user_agent);
    /* Every transfer in flight holds an upload buffer, 64 KiB by default; our bodies (a binding,
     * an event, a patch) are a few hundred bytes, and a scheduler keeps hundreds of transfers in
     * flight. 16 KiB is curl's minimum. */
    curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, watch ? NULL : "");
    if (errbuf)
        errbuf[0] = '\0';
    set_pem(e, k->ca_data, k->ca_len, k->ca_file, CURLOPT_CAINFO_BLOB, CURLOPT_CAINFO, 0);
    if (k->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    set_pem(e, k->cert_data, k->cert_len, k->cert_file, CURLOPT_SSLCERT_BLOB, CURLOPT_SSLCERT,
            CURLOPT_SSLCERTTYPE);
    set_pem(e, k->key_data, k->key_len, k->key_file, CURLOPT_SSLKEY_BLOB, CURLOPT_SSLKEY,
            CURLOPT_SSLKEYTYPE);
    struct curl_slist *h = NULL;
    /* JSON second: an API server that cannot encode a type as protobuf (CRDs, aggregated
     * servers) answers it in JSON, and the reader picks its decoder by what came. */
    if (protobuf)
        h = curl_slist_append(h, watch ? "Accept: " TM_KP_WATCH_MEDIA_TYPE ", application/json"
                                       : "Accept: " TM_KP_MEDIA_TYPE ", application/json");
    else
        h = curl_slist_append(h, "Accept: application/json");
    h = curl_slist_append(h, "Expect:");
    char line[256];
    if (body) {
        snprintf(line, sizeof line, "Content-Type: %s",
                 content_type ? content_type : "application/json");
        h = curl_slist_append(h, line);
    }
    char *tok = current_token(k);
    if (tok) {
        size_t n = strlen(tok) + 32;
        char *auth = malloc(n);
        snprintf(auth, n, "Authorization: Bearer %s", tok);
        h = curl_slist_append(h, auth);
        free(auth);
        free(tok);
    }
    if (!h)
        return tm_err_set(err, "kube client: out of memory building headers");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    *hdrs = h;
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body ? body : "");
    } else {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        if (body) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        }
    }
    return 0;
}

int64_t tm_kube_retry_after_ms(CURL *e, long status, int attempt) {
    if (status != 429 || attempt >= 5)
        return -1;
    curl_off_t ra = 0;
    curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &ra);
    if (ra < 1)
        ra = 1;
    if (ra > 30)
        ra = 30;
    return (int64_t)ra * 1000;
}

void tm_kube_fill_error(tm_err *err, const char *method, const char *path, const char *server,
                        CURLcode rc, const char *curl_msg, long status, const char *body,
                        size_t body_len) {
    if (!err)
        return;
    if (rc != CURLE_OK) {
        tm_err_set(err, "%s %s: cannot reach the API server %s: %s", method, path, server,
                   curl_msg && *curl_msg ? curl_msg : curl_easy_strerror(rc));
        err->http_status = (int)status;
        return;
    }
    json_t *st = NULL;
    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Status *pst = NULL;
    const char *msg = NULL, *reason = "";
    if (body && tm_kp_is_protobuf(body, body_len)) {
        /* an answer to a request that preferred protobuf: the Status is protobuf too */
        pst = (K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Status *)tm_kp_decode(
            body, body_len, &tm_kp_kind_status, NULL);
        if (pst) {
            msg = pst->message;
            reason = pst->reason ? pst->reason : "";
        }
    } else if (body && body_len) {
        st = json_loadb(body, body_len, 0, NULL);
        msg = tm_json_str(st, "message", NULL);
        reason = tm_json_str(st, "reason", "");
    }
    if (msg) {
        tm_err_set(err, "%s %s: %s (HTTP %ld%s%s)", method, path, msg, status, *reason ? " " : "",
                   reason);
    } else if (body && body_len && !pst && tm_kp_is_protobuf(body, body_len)) {
        tm_err_set(err, "%s %s: HTTP %ld (a protobuf body with no Status message)", method, path,
                   status);
    } else if (body && body_len) {
        int n = body_len > 300 ? 300 : (int)body_len;
        while (n > 0 && (body[n - 1] == '\n' || body[n - 1] == '\r'))
            n--;
        tm_err_set(err, "%s %s: HTTP %ld: %.*s", method, path, status, n, body);
    } else {
        tm_err_set(err, "%s %s: HTTP %ld with an empty body", method, path, status);
    }
    err->http_status = (int)status;
    json_decref(st);
    tm_kp_free(pst);
}

/* ---- synchronous requests ---------------------------------------------------------------- */

static size_t sync_write(char *p, size_t size, size_t n, void *ud) {
    return tm_kbuf_append(ud, p, size * n) == 0 ? size * n : 0;
}

static void sleep_ms(int64_t ms) {
    if (ms <= 0)
        return;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

CURL *tm_easy_pool_take(tm_easy_pool *p) {
    if (p->n > 0) {
        CURL *e = p->idle[--p->n];
        curl_easy_reset(e); /* keeps the handle's connection cache */
        return e;
    }
    return curl_easy_init();
}

void tm_easy_pool_put(tm_easy_pool *p, CURL *e) {
    if (p->n < p->cap && p->n < (int)(sizeof p->idle / sizeof p->idle[0]))
        p->idle[p->n++] = e;
    else
        curl_easy_cleanup(e);
}

void tm_easy_pool_clear(tm_easy_pool *p) {
    while (p->n > 0)
        curl_easy_cleanup(p->idle[--p->n]);
}

/* Synchronous calls come from any thread: their pool is used under k->mu. */
static CURL *pool_take(tm_kube *k) {
    pthread_mutex_lock(&k->mu);
    CURL *e = tm_easy_pool_take(&k->sync_pool);
    pthread_mutex_unlock(&k->mu);
    return e;
}

static void pool_put(tm_kube *k, CURL *e) {
    pthread_mutex_lock(&k->mu);
    tm_easy_pool_put(&k->sync_pool, e);
    pthread_mutex_unlock(&k->mu);
}

/* Parses a 2xx body: JSON, json null when empty, else the text as a JSON string (e.g. the
 * "ok" of /healthz). New reference. */
static json_t *parse_body(const char *data, size_t len) {
    if (!data || len == 0)
        return json_null();
    json_t *v = json_loadb(data, len, 0, NULL);
    return v ? v : json_stringn(data, len);
}

static json_t *request_raw(tm_kube *k, const char *method, const char *path, const char *body,
                           size_t body_len, const char *content_type, int *status, tm_err *err) {
    if (!method || !path)
        return tm_err_set(err, "kube request: method and path are required"), NULL;
    sleep_ms(tm_kube_ratelimit_reserve(k));
    CURL *e = pool_take(k);
    if (!e)
        return tm_err_set(err, "%s %s: cannot create a curl handle", method, path), NULL;
    char *url = tm_kube_url(k, path);
    char errbuf[CURL_ERROR_SIZE];
    struct curl_slist *hdrs = NULL;
    tm_kbuf resp = {0};
    json_t *out = NULL;
    if (tm_kube_setup_easy(k, e, method, url, body, body_len, content_type, false, false,
                           DEFAULT_TIMEOUT_S, &hdrs, errbuf, err) == 0) {
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sync_write);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &resp);
        CURLcode rc;
        long code = 0;
        for (int attempt = 0;; attempt++) {
            rc = curl_easy_perform(e);
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
            int64_t retry = rc == CURLE_OK ? tm_kube_retry_after_ms(e, code, attempt) : -1;
            if (retry < 0)
                break;
            /* 429 Too Many Requests (API priority and fairness): wait as told, then again. */
            int64_t limit = tm_kube_ratelimit_reserve(k);
            sleep_ms(retry > limit ? retry : limit);
            tm_kbuf_free(&resp);
        }
        if (status)
            *status = (int)code;
        if (rc == CURLE_OK && code >= 200 && code < 300) {
            out = parse_body(resp.data, resp.len);
            if (err)
                err->http_status = 0;
        } else {
            tm_kube_fill_error(err, method, path, k->server, rc, errbuf, code, resp.data, resp.len);
        }
    }
    /* Headers must outlive the transfer; the handle may keep a pointer until reset. */
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    pool_put(k, e);
    tm_kbuf_free(&resp);
    free(url);
    return out;
}

json_t *tm_kube_request(tm_kube *k, const char *method, const char *path, const json_t *body,
                        const char *content_type, int *status, tm_err *err) {
    char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_t *out = request_raw(k, method, path, b, b ? strlen(b) : 0, content_type, status, err);
    free(b);
    return out;
}

json_t *tm_kube_get(tm_kube *k, const char *path, tm_err *err) {
    return tm_kube_request(k, "GET", path, NULL, NULL, NULL, err);
}

json_t *tm_kube_create(tm_kube *k, const char *path, const json_t *obj, tm_err *err) {
    if (!obj)
        return tm_err_set(err, "create %s: no object given", path ? path : "(null)"), NULL;
    return tm_kube_request(k, "POST", path, obj, NULL, NULL, err);
}

json_t *tm_kube_replace(tm_kube *k, const char *path, const json_t *obj, tm_err *err) {
    if (!obj)
        return tm_err_set(err, "replace %s: no object given", path ? path : "(null)"), NULL;
    return tm_kube_request(k, "PUT", path, obj, NULL, NULL, err);
}

static const char *patch_content_type(tm_patch_type type) {
    switch (type) {
    case TM_PATCH_STRATEGIC:
        return "application/strategic-merge-patch+json";
    case TM_PATCH_JSON:
        return "application/json-patch+json";
    case TM_PATCH_MERGE:
    default:
        return "application/merge-patch+json";
    }
}

json_t *tm_kube_patch(tm_kube *k, const char *path, tm_patch_type type, const json_t *patch,
                      tm_err *err) {
    if (!patch)
        return tm_err_set(err, "patch %s: no patch given", path ? path : "(null)"), NULL;
    return tm_kube_request(k, "PATCH", path, patch, patch_content_type(type), NULL, err);
}

int tm_kube_delete(tm_kube *k, const char *path, tm_err *err) {
    tm_err local = {0};
    json_t *r = tm_kube_request(k, "DELETE", path, NULL, NULL, NULL, &local);
    if (r) {
        json_decref(r);
        return 0;
    }
    if (local.http_status == 404)
        return 0;
    if (err)
        *err = local;
    return -1;
}

/* List items come without kind/apiVersion; watch objects have them. Fill them in from the
 * list ("PodList" -> "Pod") so both look alike to callers (events need them). */
void tm_kube_fill_kind(json_t *item, const json_t *list) {
    const char *kind = tm_json_str(list, "kind", NULL);
    const char *av = tm_json_str(list, "apiVersion", NULL);
    if (!json_is_object(item))
        return;
    if (kind && !json_object_get(item, "kind")) {
        size_t n = strlen(kind);
        if (n > 4 && strcmp(kind + n - 4, "List") == 0)
            json_object_set_new(item, "kind", json_stringn(kind, n - 4));
    }
    if (av && !json_object_get(item, "apiVersion"))
        json_object_set_new(item, "apiVersion", json_string(av));
}

json_t *tm_kube_list(tm_kube *k, const char *path, const tm_list_opts *opts,
                     char **resource_version, tm_err *err) {
    if (!path)
        return tm_err_set(err, "list: no path given"), NULL;
    int limit = opts && opts->limit > 0 ? opts->limit : 500;
    json_t *items = json_array();
    char *cont = NULL, *rv = NULL;
    bool restarted = false;
    for (;;) {
        char num[32];
        snprintf(num, sizeof num, "%d", limit);
        char *p = restarted ? strdup(path) : tm_kube_query_add(strdup(path), "limit", num);
        if (opts && opts->label_selector && *opts->label_selector)
            p = tm_kube_query_add(p, "labelSelector", opts->label_selector);
        if (opts && opts->field_selector && *opts->field_selector)
            p = tm_kube_query_add(p, "fieldSelector", opts->field_selector);
        if (cont)
            p = tm_kube_query_add(p, "continue", cont);
        tm_err local = {0};
        json_t *page = tm_kube_get(k, p, &local);
        free(p);
        if (!page) {
            if (local.http_status == 410 && cont && !restarted) {
                /* The continue token expired (compaction): start over once, unpaged, so
                 * no token can expire again (client-go's pager does the same). */
                restarted = true;
                json_array_clear(items);
                free(cont);
                cont = NULL;
                continue;
            }
            if (err)
                *err = local;
            json_decref(items);
            free(cont);
            free(rv);
            return NULL;
        }
        json_t *arr = json_object_get(page, "items");
        size_t i;
        json_t *it;
        json_array_foreach(arr, i, it) {
            tm_kube_fill_kind(it, page);
            json_array_append(items, it);
        }
        free(rv);
        rv = dup_or_null(tm_json_str(page, "metadata.resourceVersion", NULL));
        const char *next = tm_json_str(page, "metadata.continue", NULL);
        free(cont);
        cont = next && *next ? strdup(next) : NULL;
        json_decref(page);
        if (!cont)
            break;
    }
    if (resource_version)
        *resource_version = rv;
    else
        free(rv);
    return items;
}

/* ---- bind and events --------------------------------------------------------------------- */

/* Builds the binding path and body; returns the path (caller frees) and *body (new ref). */
char *tm_kube_binding_request(const char *ns, const char *pod, const char *pod_uid,
                              const char *node, json_t **body) {
    json_t *meta = json_pack("{s:s, s:s}", "name", pod, "namespace", ns);
    if (pod_uid && *pod_uid)
        json_object_set_new(meta, "uid", json_string(pod_uid));
    *body = json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "Binding",
                      "metadata", meta, "target", "apiVersion", "v1", "kind", "Node", "name", node);
    return tm_kube_path("v1", "pods", ns, pod, "binding");
}

int tm_kube_bind(tm_kube *k, const char *ns, const char *pod, const char *pod_uid, const char *node,
                 tm_err *err) {
    if (!ns || !pod || !node || !*ns || !*pod || !*node)
        return tm_err_set(err, "bind: namespace, pod and node are all required");
    json_t *body;
    char *path = tm_kube_binding_request(ns, pod, pod_uid, node, &body);
    json_t *r = tm_kube_create(k, path, body, err);
    json_decref(body);
    free(path);
    if (!r)
        return -1;
    json_decref(r);
    return 0;
}

json_t *tm_kube_event_new(const json_t *regarding, const char *type, const char *reason,
                          const char *action, const char *note, const char *controller,
                          const char *instance) {
    const char *name = tm_json_str(regarding, "metadata.name", "unknown");
    const char *ns = tm_json_str(regarding, "metadata.namespace", NULL);
    /* Cluster-scoped objects get their events in "default", as kubectl and client-go do. */
    const char *evns = ns && *ns ? ns : "default";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char evname[300];
    snprintf(evname, sizeof evname, "%.230s.%llx", name,
             (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
    char when[40];
    tm_kube_microtime(when, sizeof when);
    json_t *reg = json_object();
    const char *keys[][2] = {
        {"kind", "kind"},          {"apiVersion", "apiVersion"},
        {"metadata.name", "name"}, {"metadata.namespace", "namespace"},
        {"metadata.uid", "uid"},   {"metadata.resourceVersion", "resourceVersion"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = tm_json_str(regarding, keys[i][0], NULL);
        if (v && *v)
            json_object_set_new(reg, keys[i][1], json_string(v));
    }
    /* The API rejects notes above 1 kB. */
    char notebuf[1024];
    snprintf(notebuf, sizeof notebuf, "%s", note ? note : "");
    json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}",
                           "apiVersion", "events.k8s.io/v1", "kind", "Event", "metadata", "name",
                           evname, "namespace", evns, "eventTime", when, "reportingController",
                           controller ? controller : "tarema", "reportingInstance",
                           instance ? instance : "tarema", "action", action ? action : "", "reason",
                           reason ? reason : "", "type", type ? type : "Normal", "note", notebuf,
                           "regarding", reg);
    return ev;
}

char *tm_kube_event_path(const json_t *event) {
    return tm_kube_path("events.k8s.io/v1", "events",
                        tm_json_str(event, "metadata.namespace", "default"), NULL, NULL);
}

int tm_kube_event_post(tm_kube *k, const json_t *event, tm_err *err) {
    if (!json_is_object(event))
        return tm_err_set(err, "event post: the event is not a JSON object");
    char *path = tm_kube_event_path(event);
    json_t *r = tm_kube_create(k, path, event, err);
    free(path);
    if (!r)
        return -1;
    json_decref(r);
    return 0;
}
