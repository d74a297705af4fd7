/* units.c: see units.h. */
#include "labeler/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "labeler/taskrun.h"

static const char *skip_ws(const char *p) {
    while (*p && isspace((unsigned char)*p))
        p++;
    return p;
}

/* Absent values: Nextflow prints "-" for metrics it could not collect. */
static int is_absent(const char *s) {
    s = skip_ws(s);
    return *s == '\0' || (s[0] == '-' && *skip_ws(s + 1) == '\0');
}

/* Whole string is an integer (with surrounding blanks)? */
static int parse_plain_int(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno)
        return -1;
    if (*skip_ws(end))
        return -1;
    *out = v;
    return 0;
}

int lab_parse_int(const char *s, int64_t *out, tm_err *err) {
    if (is_absent(s)) {
        *out = LAB_NONE;
        return 0;
    }
    if (parse_plain_int(s, out) < 0)
        return tm_err_set(err, "'%s' is not an integer", s);
    return 0;
}

/* Reads a non-negative decimal number at *p; advances *p. */
static int read_number(const char **p, double *v) {
    char *end;
    if (!isdigit((unsigned char)**p) && **p != '.')
        return -1;
    *v = strtod(*p, &end);
    if (end == *p)
        return -1;
    *p = end;
    return 0;
}

/* llround() of a value outside int64 is undefined (x86 gives INT64_MIN, which is LAB_NONE):
 * "1e30 GB" must be an error, not a silently unknown value. */
static int to_int64(double v, const char *s, const char *what, int64_t *out, tm_err *err) {
    if (!isfinite(v) || v >= 9.2e18)
        return tm_err_set(err, "%s '%s' is too large", what, s);
    *out = (int64_t)llround(v);
    return 0;
}

/* The forms sizes and durations share: absent, or a raw (trace.raw) non-negative integer.
 * Returns 1 when s was one of them (*out set), 0 when s needs units, -1 on a negative. */
static int absent_or_raw(const char *s, const char *what, int64_t *out, tm_err *err) {
    if (is_absent(s)) {
        *out = LAB_NONE;
        return 1;
    }
    if (parse_plain_int(s, out) < 0)
        return 0;
    return *out < 0 ? tm_err_set(err, "%s '%s' is negative", what, s) : 1;
}

int lab_parse_duration_ms(const char *s, int64_t *out, tm_err *err) {
    int raw = absent_or_raw(s, "duration", out, err); /* raw: milliseconds */
    if (raw != 0)
        return raw < 0 ? -1 : 0;
    const char *p = skip_ws(s);
    double total = 0;
    int parts = 0;
    while (*p) {
        double v;
        if (read_number(&p, &v) < 0)
            return tm_err_set(err, "duration '%s': expected a number at '%s'", s, p);
        double unit;
        if (strncmp(p, "ms", 2) == 0) {
            unit = 1, p += 2;
        } else if (*p == 's') {
            unit = 1000, p++;
        } else if (*p == 'm') {
            unit = 60000, p++;
        } else if (*p == 'h') {
            unit = 3600000, p++;
        } else if (*p == 'd') {
            unit = 86400000, p++;
        } else {
            return tm_err_set(err, "duration '%s': unknown unit at '%s' (use d, h, m, s, ms)", s,
                              *p ? p : "end");
        }
        total += v * unit;
        parts++;
        p = skip_ws(p);
    }
    if (!parts)
        return tm_err_set(err, "duration '%s' is empty", s);
    return to_int64(total, s, "duration", out, err);
}

int lab_parse_bytes(const char *s, int64_t *out, tm_err *err) {
    int raw = absent_or_raw(s, "size", out, err); /* raw: bytes */
    if (raw != 0)
        return raw < 0 ? -1 : 0;
    const char *p = skip_ws(s);
    double v;
    if (read_number(&p, &v) < 0)
        return tm_err_set(err, "size '%s' is not a number with a unit like '1.2 GB'", s);
    p = skip_ws(p);
    static const char *const units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
    size_t ulen = strcspn(p, " \t");
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (ulen == strlen(units[i]) && strncasecmp(p, units[i], ulen) == 0 &&
            !*skip_ws(p + ulen)) {
            return to_int64(ldexp(v, 10 * (int)i), s, "size", out, err);
        }
    }
    return tm_err_set(err, "size '%s': unknown unit (use B, KB, MB, GB, TB, PB or EB)", s);
}

int lab_parse_percent(const char *s, double *out, tm_err *err) {
    if (is_absent(s)) {
        *out = NAN;
        return 0;
    }
    const char *p = skip_ws(s);
    char *end;
    double v = strtod(p, &end);
    if (end == p || !isfinite(v) || v < 0)
        return tm_err_set(err, "percentage '%s' is not a non-negative number", s);
    end = (char *)skip_ws(end);
    if (*end == '%')
        end++;
    if (*skip_ws(end))
        return tm_err_set(err, "percentage '%s' has trailing text", s);
    *out = v;
    return 0;
}

int lab_parse_timestamp_ms(const char *s, int64_t *out, tm_err *err) {
    return lab_parse_timestamp_ms_cached(s, out, NULL, err);
}

int lab_parse_timestamp_ms_cached(const char *s, int64_t *out, lab_ts_cache *cache, tm_err *err) {
    if (is_absent(s)) {
        *out = LAB_NONE;
        return 0;
    }
    if (parse_plain_int(s, out) == 0)
        return 0;
    struct tm tmv;
    memset(&tmv, 0, sizeof tmv);
    const char *p = skip_ws(s);
    char *end = strptime(p, "%Y-%m-%d %H:%M:%S", &tmv);
    if (!end)
        return tm_err_set(err, "timestamp '%s' is not 'YYYY-MM-DD HH:MM:SS[.mmm]'", s);
    int64_t ms = 0;
    if (*end == '.') {
        const char *q = end + 1;
        int digits = 0;
        while (isdigit((unsigned char)*q) && digits < 3)
            ms = ms * 10 + (*q++ - '0'), digits++;
        while (digits++ < 3)
            ms *= 10;
        while (isdigit((unsigned char)*q))
            q++;
        end = (char *)q;
    }
    if (*skip_ws(end))
        return tm_err_set(err, "timestamp '%s' has trailing text", s);
    /* Zone offsets change on whole hours (or at least not within the hours traces cover),
     * so the hour's start converted once plus minutes and seconds is exact. */
    int minsec = tmv.tm_min * 60 + tmv.tm_sec;
    if (cache && cache->valid && cache->year == tmv.tm_year && cache->mon == tmv.tm_mon &&
        cache->mday == tmv.tm_mday && cache->hour == tmv.tm_hour) {
        *out = (int64_t)(cache->base + minsec) * 1000 + ms;
        return 0;
    }
    int year = tmv.tm_year, mon = tmv.tm_mon, mday = tmv.tm_mday, hour = tmv.tm_hour;
    tmv.tm_min = tmv.tm_sec = 0;
    tmv.tm_isdst = -1; /* Nextflow writes the submitting machine's local time */
    time_t t = mktime(&tmv);
    if (t == (time_t)-1)
        return tm_err_set(err, "timestamp '%s' is out of range", s);
    if (cache) {
        *cache = (lab_ts_cache){
            .valid = 1, .year = year, .mon = mon, .mday = mday, .hour = hour, .base = (long long)t};
    }
    *out = ((int64_t)t + minsec) * 1000 + ms;
    return 0;
}
