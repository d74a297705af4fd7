/* units.c: durations, cpu and memory from YAML values (see units.h). */
#include "planner/units.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/quantity.h"

int pl_duration_parse(const char *s, int64_t *out_s, tm_err *err) {
    if (!s || !*s || strlen(s) > 64)
        return tm_err_set(err, "duration '%s': expected e.g. 90s, 15m, 1h30m or seconds",
                          s ? s : "");
    const char *p = s;
    double total = 0;
    int parts = 0;
    while (*p) {
        if (!isdigit((unsigned char)*p) && *p != '.')
            return tm_err_set(err, "duration '%s': expected e.g. 90s, 15m, 1h30m or seconds", s);
        char *end;
        double v = strtod(p, &end);
        if (end == p || !isfinite(v) || v < 0)
            return tm_err_set(err, "duration '%s': bad number", s);
        double unit;
        switch (*end) {
        case 's':
            unit = 1;
            break;
        case 'm':
            unit = 60;
            break;
        case 'h':
            unit = 3600;
            break;
        case 'd':
            unit = 86400;
            break;
        case '\0':
            if (parts == 0) { /* plain seconds */
                unit = 1;
                break;
            }
            /* fallthrough */
        default:
            return tm_err_set(err, "duration '%s': unknown unit (use s, m, h or d)", s);
        }
        total += v * unit;
        parts++;
        p = *end ? end + 1 : end;
    }
    if (total > 1e9)
        return tm_err_set(err, "duration '%s': longer than 31 years", s);
    *out_s = (int64_t)ceil(total - 1e-9);
    return 0;
}

int pl_json_duration(const json_t *v, const char *what, int64_t *out_s, tm_err *err) {
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out_s = json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        if (pl_duration_parse(json_string_value(v), out_s, err) < 0)
            return tm_err_wrap(err, "%s", what);
        return 0;
    }
    return tm_err_set(err, "%s: expected a duration such as 15m or a number of seconds", what);
}

/* A number becomes its decimal text so the quantity parser applies one rounding rule. */
static int quantity_text(const json_t *v, char *buf, size_t size) {
    if (json_is_string(v))
        return snprintf(buf, size, "%s", json_string_value(v)) < (int)size ? 0 : -1;
    if (json_is_integer(v))
        return snprintf(buf, size, "%lld", (long long)json_integer_value(v)), 0;
    if (json_is_real(v))
        return snprintf(buf, size, "%.6f", json_real_value(v)), 0;
    return -1;
}

int pl_json_cpu_milli(const json_t *v, const char *what, int64_t *out, tm_err *err) {
    char buf[160];
    if (!v || quantity_text(v, buf, sizeof buf) < 0)
        return tm_err_set(err, "%s: expected cores as a number or quantity (36, 500m)", what);
    if (tm_quantity_parse_milli(buf, out, err) < 0)
        return tm_err_wrap(err, "%s", what);
    if (*out <= 0)
        return tm_err_set(err, "%s: must be > 0", what);
    return 0;
}

int pl_json_bytes(const json_t *v, const char *what, int allow_zero, int64_t *out, tm_err *err) {
    char buf[160];
    if (!v || quantity_text(v, buf, sizeof buf) < 0)
        return tm_err_set(err, "%s: expected bytes as a number or quantity (64Gi)", what);
    if (tm_quantity_parse(buf, out, err) < 0)
        return tm_err_wrap(err, "%s", what);
    if (*out < 0 || (!allow_zero && *out == 0))
        return tm_err_set(err, "%s: must be > 0", what);
    return 0;
}
