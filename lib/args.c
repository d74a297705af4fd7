/* args.c: see args.h. */
#include "lib/args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int tm_arg_long(const char *flag, const char *s, long long lo, long long hi, long long *out,
                tm_err *err) {
    char *end = NULL;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi)
        return tm_err_set(err, "--%s: '%s' is not an integer from %lld to %lld", flag, s ? s : "",
                          lo, hi);
    *out = v;
    return 0;
}

int tm_arg_int(const char *flag, const char *s, int lo, int hi, int *out, tm_err *err) {
    long long v;
    if (tm_arg_long(flag, s, lo, hi, &v, err) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

int tm_arg_double(const char *flag, const char *s, double lo, double hi, double *out, tm_err *err) {
    char *end = NULL;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return tm_err_set(err, "--%s: '%s' is not a number from %g to %g", flag, s ? s : "", lo,
                          hi);
    *out = v;
    return 0;
}

int tm_arg_bool(const char *flag, const char *s, int *out, tm_err *err) {
    if (!s || (strcmp(s, "true") && strcmp(s, "false")))
        return tm_err_set(err, "--%s: '%s' is not true or false", flag, s ? s : "");
    *out = !strcmp(s, "true");
    return 0;
}
