/* auth.c: the shared token behind auth.h: read from a file, re-read when it changes, compared
 * in constant time; Bearer and Basic credential parsing. */
#include "auth.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <jansson.h>

#include "fileutil.h"
#include "kube.h"
#include "log.h"

#define RECHECK_NS   1000000000LL
#define CACHE_SIZE   64
#define CACHE_OK_NS  (60 * 1000000000LL)
#define CACHE_BAD_NS (10 * 1000000000LL)

typedef struct review_entry {
    unsigned char hash[32];
    long long expires_ns; /* 0 = empty */
    bool ok;
} review_entry;

struct tm_auth {
    char *path;
    pthread_mutex_t mu; /* guards everything below */
    char *token;
    size_t len;
    struct timespec mtime;
    off_t size;
    long long checked_ns; /* monotonic time of the last stat */
    tm_kube *kube;        /* TokenReview; NULL = off */
    char **users;         /* allowed users, NULL-terminated */
    review_entry cache[CACHE_SIZE];
    size_t next; /* the cache slot replaced next */
};

static long long mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Reads and trims the token file. 0 with the token and its length set (caller frees), or -1 with
 * err. */
static int read_token(const char *path, char **tok, size_t *len, tm_err *err) {
    size_t n = 0;
    char *data = tm_read_file(path, &n, err);
    if (!data)
        return tm_err_wrap(err, "auth token file");
    size_t start = 0;
    while (start < n && isspace((unsigned char)data[start]))
        start++;
    while (n > start && isspace((unsigned char)data[n - 1]))
        n--;
    if (n - start < TM_AUTH_MIN_TOKEN) {
        free(data);
        return tm_err_set(err,
                          "auth token file %s: the token is %zu bytes, at least %d are needed "
                          "(e.g. head -c 32 /dev/urandom | base64)",
                          path, n - start, TM_AUTH_MIN_TOKEN);
    }
    memmove(data, data + start, n - start);
    data[n - start] = '\0';
    *tok = data;
    *len = n - start;
    return 0;
}

tm_auth *tm_auth_new(const char *token_file, tm_err *err) {
    tm_auth *a = calloc(1, sizeof *a);
    if (!a) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    if (!token_file || !token_file[0])
        return a;
    if (!(a->path = strdup(token_file))) {
        tm_auth_free(a);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    struct stat st;
    if (stat(token_file, &st) == 0) {
        a->mtime = st.st_mtim;
        a->size = st.st_size;
    }
    if (read_token(token_file, &a->token, &a->len, err)) {
        tm_auth_free(a);
        return NULL;
    }
    a->checked_ns = mono_ns();
    return a;
}

int tm_auth_enable_tokenreview(tm_auth *a, tm_kube *k, const char *const *users, tm_err *err) {
    size_t n = 0;
    while (users && users[n])
        n++;
    if (!k || n == 0)
        return tm_err_set(err, "auth: TokenReview needs an API connection and at least one "
                               "allowed user");
    char **u = calloc(n + 1, sizeof *u);
    if (!u)
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!(u[i] = strdup(users[i]))) {
            for (size_t j = 0; j < i; j++)
                free(u[j]);
            free(u);
            return tm_err_set(err, "out of memory");
        }
    }
    pthread_mutex_lock(&a->mu);
    a->kube = k;
    a->users = u;
    pthread_mutex_unlock(&a->mu);
    return 0;
}

void tm_auth_free(tm_auth *a) {
    if (!a)
        return;
    if (a->token)
        memset(a->token, 0, a->len);
    free(a->token);
    free(a->path);
    for (size_t i = 0; a->users && a->users[i]; i++)
        free(a->users[i]);
    free(a->users);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* Re-reads the file when its mtime or size changed. Called with mu held. */
static void maybe_reload(tm_auth *a) {
    if (!a->path)
        return;
    long long now = mono_ns();
    if (now - a->checked_ns < RECHECK_NS)
        return;
    a->checked_ns = now;
    struct stat st;
    if (stat(a->path, &st) != 0)
        return; /* a Secret volume swaps its symlink: keep the last token meanwhile */
    if (st.st_mtim.tv_sec == a->mtime.tv_sec && st.st_mtim.tv_nsec == a->mtime.tv_nsec &&
        st.st_size == a->size)
        return;
    tm_err err = {0};
    char *tok;
    size_t len;
    if (read_token(a->path, &tok, &len, &err)) {
        tm_warn("auth token file changed but cannot be used; keeping the previous token err=\"%s\"",
                err.msg);
        return;
    }
    a->mtime = st.st_mtim;
    a->size = st.st_size;
    memset(a->token, 0, a->len);
    free(a->token);
    a->token = tok;
    a->len = len;
    tm_info("auth token reloaded file=%s", a->path);
}

bool tm_auth_equal(const char *a, size_t alen, const char *b, size_t blen) {
    size_t n = alen > blen ? alen : blen;
    unsigned char diff = alen != blen;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < alen ? (unsigned char)a[i] : 0;
        unsigned char y = i < blen ? (unsigned char)b[i] : 0;
        diff |= (unsigned char)(x ^ y);
    }
    return diff == 0;
}

/* Asks the API server who token belongs to; true when authenticated as an allowed user.
 * Called without mu: the review is a network round trip. */
static bool review(tm_kube *k, char *const *users, const char *token, size_t len) {
    json_t *tr = json_pack("{s:s, s:s, s:{s:s%}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                           "TokenReview", "spec", "token", token, len);
    if (!tr)
        return false;
    tm_err err = {0};
    json_t *res = tm_kube_create(k, "/apis/authentication.k8s.io/v1/tokenreviews", tr, &err);
    json_decref(tr);
    if (!res) {
        tm_warn("TokenReview failed; the request is refused err=\"%s\"", err.msg);
        return false;
    }
    json_t *st = json_object_get(res, "status");
    const char *user = json_string_value(json_object_get(json_object_get(st, "user"), "username"));
    bool ok = false;
    if (json_is_true(json_object_get(st, "authenticated")) && user)
        for (size_t i = 0; users[i] && !ok; i++)
            ok = strcmp(users[i], user) == 0;
    if (!ok)
        tm_info("token refused: user=%s authenticated=%s", user ? user : "-",
                json_is_true(json_object_get(st, "authenticated")) ? "yes" : "no");
    json_decref(res);
    return ok;
}

bool tm_auth_check(tm_auth *a, const char *token, size_t len) {
    if (!a || !token || len == 0)
        return false;
    pthread_mutex_lock(&a->mu);
    maybe_reload(a);
    bool ok = a->token && tm_auth_equal(token, len, a->token, a->len);
    if (ok || !a->kube) {
        pthread_mutex_unlock(&a->mu);
        return ok;
    }
    unsigned char h[32];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, token, len, h) < 0) {
        pthread_mutex_unlock(&a->mu);
        return false;
    }
    long long now = mono_ns();
    for (size_t i = 0; i < CACHE_SIZE; i++) {
        review_entry *e = &a->cache[i];
        if (e->expires_ns > now && memcmp(e->hash, h, sizeof h) == 0) {
            ok = e->ok;
            pthread_mutex_unlock(&a->mu);
            return ok;
        }
    }
    tm_kube *k = a->kube;
    char *const *users = a->users;
    pthread_mutex_unlock(&a->mu);
    ok = review(k, users, token, len);
    pthread_mutex_lock(&a->mu);
    review_entry *e = &a->cache[a->next];
    a->next = (a->next + 1) % CACHE_SIZE;
    memcpy(e->hash, h, sizeof h);
    e->ok = ok;
    e->expires_ns = mono_ns() + (ok ? CACHE_OK_NS : CACHE_BAD_NS);
    pthread_mutex_unlock(&a->mu);
    return ok;
}

static int b64val(unsigned char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

/* Decodes base64 (padding optional) into out; -1 on a bad character or no room. */
static long b64decode(const char *in, char *out, size_t out_size) {
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;
    for (const char *p = in; *p && *p != '='; p++) {
        int v = b64val((unsigned char)*p);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n + 1 >= out_size)
                return -1;
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[n] = '\0';
    return (long)n;
}

static bool scheme_is(const char *h, const char *scheme, size_t slen) {
    return strncasecmp(h, scheme, slen) == 0 && (h[slen] == ' ' || h[slen] == '\t');
}

const char *tm_auth_from_header(const char *authorization, char *buf, size_t buf_size,
                                size_t *len) {
    *len = 0;
    if (!authorization)
        return NULL;
    const char *h = authorization;
    while (*h == ' ' || *h == '\t')
        h++;
    if (scheme_is(h, "Bearer", 6)) {
        h += 6;
        while (*h == ' ' || *h == '\t')
            h++;
        size_t n = strlen(h);
        while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
            n--;
        *len = n;
        return n ? h : NULL;
    }
    if (scheme_is(h, "Basic", 5)) {
        h += 5;
        while (*h == ' ' || *h == '\t')
            h++;
        long n = b64decode(h, buf, buf_size);
        if (n < 0)
            return NULL;
        char *colon = memchr(buf, ':', (size_t)n);
        if (!colon)
            return NULL;
        *len = (size_t)(buf + n - (colon + 1));
        return colon + 1;
    }
    return NULL;
}
