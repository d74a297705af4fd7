/* jsonutil.c: see jsonutil.h. */
#include "jsonutil.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileutil.h"
#include "quantity.h"

json_t *tm_json_path(const json_t *root, const char *path) {
    const json_t *cur = root;
    const char *p = path;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (!json_is_object(cur))
            return NULL;
        cur = json_object_getn(cur, p, n);
        p += n + (dot ? 1 : 0);
    }
    return (json_t *)cur;
}

const char *tm_json_str(const json_t *root, const char *path, const char *dflt) {
    const json_t *v = tm_json_path(root, path);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

long long tm_json_int(const json_t *root, const char *path, long long dflt) {
    const json_t *v = tm_json_path(root, path);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (long long)json_real_value(v);
    return dflt;
}

double tm_json_num(const json_t *root, const char *path, double dflt) {
    const json_t *v = tm_json_path(root, path);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

bool tm_json_bool(const json_t *root, const char *path, bool dflt) {
    const json_t *v = tm_json_path(root, path);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

json_t *tm_json_load_file(const char *path, tm_err *err) {
    size_t len;
    char *text = tm_read_file(path, &len, err);
    if (!text)
        return NULL;
    json_error_t je;
    json_t *v = json_loadb(text, len, 0, &je);
    free(text);
    if (!v)
        tm_err_set(err, "%s:%d:%d: invalid JSON: %s", path, je.line, je.column, je.text);
    return v;
}

int tm_json_check_keys(const json_t *obj, const char *const *allowed, const char *what,
                       tm_err *err) {
    const char *key;
    json_t *val;
    if (!json_is_object(obj))
        return tm_err_set(err, "%s: expected a mapping", what);
    json_object_foreach((json_t *)obj, key, val) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, key) == 0)
                ok = 1;
        if (!ok) {
            char list[512] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, *a, sizeof list - strlen(list) - 3);
                if (a[1])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            return tm_err_set(err, "%s: unknown key '%s' (allowed: %s)", what, key, list);
        }
    }
    return 0;
}

int tm_json_quantity(const json_t *v, int milli, double *out, const char *what, tm_err *err) {
    if (json_is_number(v)) {
        *out = json_number_value(v);
    } else if (json_is_string(v)) {
        int64_t q;
        int rc = milli ? tm_quantity_parse_milli(json_string_value(v), &q, err)
                       : tm_quantity_parse(json_string_value(v), &q, err);
        if (rc < 0)
            return tm_err_wrap(err, "%s", what);
        *out = milli ? (double)q / 1000.0 : (double)q;
    } else {
        return tm_err_set(err, "%s: expected a number or a quantity string", what);
    }
    if (!(*out >= 0) || !isfinite(*out))
        return tm_err_set(err, "%s: must be a finite number >= 0", what);
    return 0;
}

int tm_json_opt_nonneg(const json_t *obj, const char *key, double *out, const char *what,
                       tm_err *err) {
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
        return tm_err_set(err, "%s: %s must be a number >= 0", what, key);
    *out = json_number_value(v);
    return 0;
}

int tm_json_name(char *dst, size_t size, const json_t *v, const char *what, tm_err *err) {
    if (!json_is_string(v) || json_string_length(v) == 0)
        return tm_err_set(err, "%s: name must be a non-empty string", what);
    if (json_string_length(v) >= size)
        return tm_err_set(err, "%s: name '%s' is longer than %d characters", what,
                          json_string_value(v), (int)size - 1);
    snprintf(dst, size, "%s", json_string_value(v));
    return 0;
}

json_t *tm_json_top_list(const json_t *root, const char *const *keys, const char *source,
                         tm_err *err) {
    if (!json_is_object(root)) {
        tm_err_set(err, "%s: expected a mapping with %s", source, keys[0]);
        return NULL;
    }
    if (tm_json_check_keys(root, keys, source, err) < 0)
        return NULL;
    json_t *arr = json_object_get(root, keys[0]);
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        tm_err_set(err, "%s: %s must be a non-empty list", source, keys[0]);
        return NULL;
    }
    return arr;
}

char *tm_json_pointer(const char *prefix, const char *key) {
    size_t n = strlen(prefix), extra = 0;
    for (const char *k = key; *k; k++)
        extra += *k == '~' || *k == '/';
    char *out = malloc(n + strlen(key) + extra + 1), *o = out;
    if (!out)
        return NULL;
    memcpy(o, prefix, n);
    o += n;
    for (const char *k = key; *k; k++) {
        if (*k == '~' || *k == '/') {
            *o++ = '~';
            *o++ = *k == '~' ? '0' : '1';
        } else {
            *o++ = *k;
        }
    }
    *o = '\0';
    return out;
}
