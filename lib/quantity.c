/* quantity.c: parsing and formatting of Kubernetes resource quantities (see quantity.h).
 *
 * The number is kept as a decimal digit string times 10^e so that any mix of fraction, SI
 * suffix, binary suffix and exponent is exact: a binary suffix doubles the digit string, the
 * decimal scale only moves the decimal point, and rounding looks at the digits that fall off. */
#include "quantity.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define QTY_MAX_LEN 128
/* Digits after doubling up to 60 times: 60 doublings add at most 19 digits. */
#define QTY_DIGITS (QTY_MAX_LEN + 24)
/* An exponent beyond this either overflows int64 or rounds a non-zero value to +-1. */
#define QTY_EXP_LIMIT 400

typedef struct {
    unsigned char d[QTY_DIGITS]; /* most significant first, values 0..9 */
    int n;
} digits;

/* Reads the suffix: decimal SI, binary SI, or e/E followed by a signed integer. */
static bool parse_suffix(const char *s, int *e10, int *b2) {
    static const struct {
        const char *sfx;
        int e10, b2;
    } table[] = {{"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},
                 {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},
                 {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
                 {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(s, table[i].sfx) == 0) {
            *e10 = table[i].e10;
            *b2 = table[i].b2;
            return true;
        }
    }
    if (s[0] != 'e' && s[0] != 'E')
        return false;
    const char *p = s + 1;
    bool neg = false;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (!*p)
        return false;
    int v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        if (v < QTY_EXP_LIMIT * 10)
            v = v * 10 + (*p - '0');
    }
    *e10 = neg ? -v : v;
    *b2 = 0;
    return true;
}

static void double_digits(digits *x) {
    int carry = 0;
    for (int i = x->n - 1; i >= 0; i--) {
        int v = x->d[i] * 2 + carry;
        x->d[i] = (unsigned char)(v % 10);
        carry = v / 10;
    }
    if (carry) {
        memmove(x->d + 1, x->d, (size_t)x->n);
        x->d[0] = (unsigned char)carry;
        x->n++;
    }
}

/* value = x * 10^e, rounded away from zero to an integer magnitude; -1 on overflow. */
static int to_magnitude(const digits *x, int e, uint64_t *out) {
    int int_digits = x->n + e; /* digits left of the decimal point */
    bool frac = false;
    for (int i = int_digits < 0 ? 0 : int_digits; i < x->n; i++)
        frac |= x->d[i] != 0;
    if (int_digits > 19)
        return -1;
    uint64_t v = 0;
    for (int i = 0; i < int_digits; i++) {
        unsigned dig = i < x->n ? x->d[i] : 0;
        if (v > (UINT64_MAX - dig) / 10)
            return -1;
        v = v * 10 + dig;
    }
    if (frac)
        v++;
    if (v > (uint64_t)INT64_MAX)
        return -1;
    *out = v;
    return 0;
}

static int parse(const char *s, int extra_e10, int64_t *out, tm_err *err) {
    if (!s)
        return tm_err_set(err, "quantity: missing value (NULL)");
    size_t len = strlen(s);
    if (len == 0)
        return tm_err_set(err, "quantity \"\": empty string; expected e.g. \"100m\", \"2\", "
                               "\"1Gi\"");
    if (len > QTY_MAX_LEN)
        return tm_err_set(err, "quantity \"%.40s...\": longer than %d characters", s, QTY_MAX_LEN);
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    digits x = {.n = 0};
    int e10 = 0, ndig = 0;
    bool seen_point = false;
    for (;; p++) {
        if (*p >= '0' && *p <= '9') {
            ndig++;
            if (x.n > 0 || *p != '0') /* drop leading zeros */
                x.d[x.n++] = (unsigned char)(*p - '0');
            if (seen_point)
                e10--;
        } else if (*p == '.' && !seen_point) {
            seen_point = true;
        } else {
            break;
        }
    }
    if (ndig == 0)
        return tm_err_set(err,
                          "quantity \"%s\": no digits; expected a number such as \"100m\", "
                          "\"2.5\" or \"1Gi\"",
                          s);
    int sfx_e10, b2;
    if (!parse_suffix(p, &sfx_e10, &b2))
        return tm_err_set(err,
                          "quantity \"%s\": unknown suffix \"%s\"; expected one of n u m k "
                          "M G T P E, Ki Mi Gi Ti Pi Ei, or an exponent like e3",
                          s, p);
    if (x.n == 0) {
        *out = 0;
        return 0;
    }
    e10 += sfx_e10 + extra_e10;
    if (e10 > QTY_EXP_LIMIT)
        return tm_err_set(err, "quantity \"%s\": too large for a 64-bit integer", s);
    if (e10 < -QTY_EXP_LIMIT) { /* a non-zero value far below one unit rounds to +-1 */
        *out = neg ? -1 : 1;
        return 0;
    }
    for (int i = 0; i < b2; i++)
        double_digits(&x);
    uint64_t mag;
    if (to_magnitude(&x, e10, &mag) < 0)
        return tm_err_set(err, "quantity \"%s\": too large for a 64-bit integer%s", s,
                          extra_e10 ? " of milli-units" : "");
    *out = neg ? -(int64_t)mag : (int64_t)mag;
    return 0;
}

int tm_quantity_parse_milli(const char *s, int64_t *out, tm_err *err) {
    return parse(s, 3, out, err);
}

int tm_quantity_parse(const char *s, int64_t *out, tm_err *err) {
    return parse(s, 0, out, err);
}

char *tm_quantity_format_milli(int64_t milli, char *buf, size_t size) {
    if (milli % 1000 == 0)
        snprintf(buf, size, "%" PRId64, milli / 1000);
    else
        snprintf(buf, size, "%" PRId64 "m", milli);
    return buf;
}

char *tm_quantity_format_bytes(int64_t bytes, char *buf, size_t size) {
    static const char *const sfx[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
    if (bytes != 0) {
        for (int i = 0; i < 6; i++) {
            int64_t unit = (int64_t)1 << (10 * (6 - i));
            if (bytes % unit == 0) {
                snprintf(buf, size, "%" PRId64 "%s", bytes / unit, sfx[i]);
                return buf;
            }
        }
    }
    snprintf(buf, size, "%" PRId64, bytes);
    return buf;
}
