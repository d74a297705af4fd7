/* facts.c: see facts.h. */
#include "profiler/facts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies the trimmed value of a "Key:   value" line into val; returns 1 if line has key. */
static int key_value(const char *line, const char *key, char *val, size_t cap) {
    size_t kl = strlen(key);
    if (strncmp(line, key, kl) != 0 || line[kl] != ':')
        return 0;
    const char *v = line + kl + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    snprintf(val, cap, "%s", v);
    size_t n = strlen(val);
    while (n && (val[n - 1] == ' ' || val[n - 1] == '\r'))
        val[--n] = '\0';
    return 1;
}

/* A whole count in 1..PROF_MAX_CPUS, nothing after it: 0, else -1 (out of range: -2). */
static int plausible_count(const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0')
        return -1;
    if (errno == ERANGE || v < 1 || v > PROF_MAX_CPUS)
        return -2;
    *out = v;
    return 0;
}

typedef struct str_key {
    const char *lscpu, *json;
} str_key;

static const str_key str_keys[] = {
    {"Architecture", "architecture"},
    {"Model name", "model"},
    {"L1d cache", "l1d"},
    {"L1i cache", "l1i"},
    {"L2 cache", "l2"},
    {"L3 cache", "l3"},
};
static const str_key int_keys[] = {
    {"CPU(s)", "cpus"},
    {"Thread(s) per core", "threads_per_core"},
    {"Core(s) per socket", "cores_per_socket"},
    {"Socket(s)", "sockets"},
};

json_t *prof_lscpu_parse(const char *text, tm_err *err) {
    json_t *o = json_object();
    const char *p = text;
    int lineno = 0;
    char *val = malloc(8192);
    if (!val) {
        json_decref(o);
        tm_err_set(err, "lscpu: out of memory");
        return NULL;
    }
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[8192];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        p = nl ? nl + 1 : NULL;
        lineno++;
        for (size_t i = 0; i < sizeof str_keys / sizeof str_keys[0]; i++)
            if (key_value(line, str_keys[i].lscpu, val, 8192))
                json_object_set_new(o, str_keys[i].json, json_string(val));
        for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++) {
            if (!key_value(line, int_keys[i].lscpu, val, 8192))
                continue;
            long long v;
            if (strcmp(val, "-") == 0) /* lscpu's "unknown" (e.g. Socket(s) on some arm64) */
                continue;
            int rc = plausible_count(val, &v);
            if (rc == -2) {
                tm_err_set(err, "lscpu: line %d: '%s' is %.100s, outside 1..%lld", lineno,
                           int_keys[i].lscpu, val, PROF_MAX_CPUS);
            } else if (rc != 0) {
                tm_err_set(err, "lscpu: line %d: '%s' is not a positive integer: '%.200s'", lineno,
                           int_keys[i].lscpu, line);
            }
            if (rc != 0) {
                free(val);
                json_decref(o);
                return NULL;
            }
            json_object_set_new(o, int_keys[i].json, json_integer(v));
        }
        if (key_value(line, "Flags", val, 8192)) {
            json_t *flags = json_array();
            for (char *save = NULL, *t = strtok_r(val, " ", &save); t;
                 t = strtok_r(NULL, " ", &save))
                json_array_append_new(flags, json_string(t));
            json_object_set_new(o, "flags", flags);
        }
    }
    free(val);
    if (!json_object_get(o, "cpus")) {
        json_decref(o);
        tm_err_set(err, "lscpu: no 'CPU(s):' line in %d lines of output", lineno);
        return NULL;
    }
    /* Both factors are at most PROF_MAX_CPUS (10^6), so the product fits (10^12). */
    long long cps = json_integer_value(json_object_get(o, "cores_per_socket"));
    long long sockets = json_integer_value(json_object_get(o, "sockets"));
    if (cps > 0 && sockets > 0) {
        if (cps * sockets > PROF_MAX_CPUS) {
            json_decref(o);
            tm_err_set(err,
                       "lscpu: 'Core(s) per socket' %lld x 'Socket(s)' %lld = %lld cores, "
                       "outside 1..%lld",
                       cps, sockets, cps * sockets, PROF_MAX_CPUS);
            return NULL;
        }
        json_object_set_new(o, "cores", json_integer(cps * sockets));
    }
    return o;
}

int prof_meminfo_total(const char *text, long long *bytes, tm_err *err) {
    const char *m = strstr(text, "MemTotal:");
    if (!m)
        return tm_err_set(err, "/proc/meminfo: no 'MemTotal:' line");
    char *end;
    const char *num = m + strlen("MemTotal:");
    errno = 0;
    long long kb = strtoll(num, &end, 10);
    int range = errno == ERANGE;
    while (*end == ' ')
        end++;
    if (end == num || strncmp(end, "kB", 2) != 0)
        return tm_err_set(err, "/proc/meminfo: 'MemTotal:' is not '<number> kB'");
    if (range || kb < 1 || kb > PROF_MAX_MEMORY_KB) {
        while (*num == ' ' || *num == '\t')
            num++;
        return tm_err_set(err, "/proc/meminfo: 'MemTotal:' is %.*s kB, outside 1..%lld kB",
                          (int)(strcspn(num, " \t\n") < 40 ? strcspn(num, " \t\n") : 40), num,
                          PROF_MAX_MEMORY_KB);
    }
    *bytes = kb * 1024; /* at most 2^50: no overflow */
    return 0;
}

json_t *prof_lsblk_parse(const char *text, tm_err *err) {
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    if (!doc) {
        tm_err_set(err, "lsblk: line %d column %d: invalid JSON: %s", je.line, je.column, je.text);
        return NULL;
    }
    json_t *devs = json_object_get(doc, "blockdevices");
    if (!json_is_array(devs)) {
        json_decref(doc);
        tm_err_set(err, "lsblk: no 'blockdevices' array");
        return NULL;
    }
    json_t *out = json_array();
    size_t i;
    json_t *d;
    json_array_foreach(devs, i, d) {
        const char *type = json_string_value(json_object_get(d, "type"));
        if (type && strcmp(type, "disk") != 0)
            continue;
        json_t *o = json_object();
        json_t *rota = json_object_get(d, "rota");
        json_object_set(o, "name",
                        json_object_get(d, "name") ? json_object_get(d, "name") : json_null());
        /* lsblk before 2.33 prints rota as the string "1"/"0", later as a boolean. */
        json_object_set_new(
            o, "rotational",
            json_boolean(json_is_true(rota) ||
                         (json_is_string(rota) && strcmp(json_string_value(rota), "1") == 0)));
        json_object_set(o, "size",
                        json_object_get(d, "size") ? json_object_get(d, "size") : json_null());
        json_object_set(o, "model",
                        json_object_get(d, "model") ? json_object_get(d, "model") : json_null());
        json_array_append_new(out, o);
    }
    json_decref(doc);
    return out;
}
