/* lib_quantity_test.c: Kubernetes quantity parsing and formatting against a table of cases,
 * including the rounding, overflow and junk cases. */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "lib/quantity.h"

typedef struct {
    const char *in;
    int64_t milli; /* expected tm_quantity_parse_milli */
    int64_t units; /* expected tm_quantity_parse */
} ok_case;

static const ok_case ok_cases[] = {
    {"0", 0, 0},
    {"100m", 100, 1}, /* a fraction of a unit rounds up */
    {"1", 1000, 1},
    {"2", 2000, 2},
    {"2.5", 2500, 3},
    {"1.5", 1500, 2},
    {"0.5", 500, 1},
    {".5", 500, 1},
    {"5.", 5000, 5},
    {"+3", 3000, 3},
    {"-5", -5000, -5},
    {"-1.5", -1500, -2}, /* away from zero, like Kubernetes */
    {"1n", 1, 1},
    {"1500u", 2, 1},
    {"1000000n", 1, 1},
    {"250m", 250, 1},
    {"1k", 1000000, 1000},
    {"1M", INT64_C(1000000000), 1000000},
    {"1G", INT64_C(1000000000000), INT64_C(1000000000)},
    {"10T", INT64_C(10000000000000000), INT64_C(10000000000000)},
    {"1P", INT64_C(1000000000000000000), INT64_C(1000000000000000)},
    {"1Ki", 1024000, 1024},
    {"512Mi", INT64_C(536870912000), 536870912},
    {"1Gi", INT64_C(1073741824000), INT64_C(1073741824)},
    {"1.5Gi", INT64_C(1610612736000), INT64_C(1610612736)},
    {"0.1Ki", 102400, 103}, /* 102.4 rounds up */
    {"1Ti", INT64_C(1099511627776000), INT64_C(1099511627776)},
    {"1Pi", INT64_C(1125899906842624000), INT64_C(1125899906842624)},
    {"1e3", 1000000, 1000},
    {"1E3", 1000000, 1000},
    {"1e-3", 1, 1},
    {"15e-1", 1500, 2},
    {"1e+2", 100000, 100},
    {"000012", 12000, 12},
    {"0.000", 0, 0},
    {"0Gi", 0, 0},
    {"1e-500", 1, 1},
    {"9223372036854775807", -1, INT64_MAX}, /* milli overflows, see below */
};

static void test_parse_table(void) {
    for (size_t i = 0; i < sizeof ok_cases / sizeof ok_cases[0]; i++) {
        const ok_case *c = &ok_cases[i];
        tm_err err = {0};
        int64_t v = 12345;
        int rc = tm_quantity_parse(c->in, &v, &err);
        CHECKF(rc == 0, "parse(%s): %s", c->in, err.msg);
        CHECKF(v == c->units, "parse(%s) = %lld, expected %lld", c->in, (long long)v,
               (long long)c->units);
        if (c->milli < 0 && c->units > 0)
            continue;
        rc = tm_quantity_parse_milli(c->in, &v, &err);
        CHECKF(rc == 0, "parse_milli(%s): %s", c->in, err.msg);
        CHECKF(v == c->milli, "parse_milli(%s) = %lld, expected %lld", c->in, (long long)v,
               (long long)c->milli);
    }
}

static void test_exa_and_limits(void) {
    tm_err err = {0};
    int64_t v = 0;
    CHECK_INT(tm_quantity_parse("1E", &v, &err), 0);
    CHECK_INT(v, INT64_C(1000000000000000000));
    CHECK_INT(tm_quantity_parse("7Ei", &v, &err), 0);
    CHECK_INT(v, INT64_C(8070450532247928832));
    CHECK_INT(tm_quantity_parse("8Ei", &v, &err), -1); /* 2^63 does not fit */
    CHECK(strstr(err.msg, "\"8Ei\"") != NULL);
    CHECK_INT(tm_quantity_parse("9223372036854775808", &v, &err), -1);
    CHECK(strstr(err.msg, "too large") != NULL);
    CHECK_INT(tm_quantity_parse("-9223372036854775807", &v, &err), 0);
    CHECK_INT(v, -INT64_MAX);
    CHECK_INT(tm_quantity_parse_milli("9223372036854775807", &v, &err), -1);
    CHECK(strstr(err.msg, "milli") != NULL);
    CHECK_INT(tm_quantity_parse_milli("9223372036854775807m", &v, &err), 0);
    CHECK_INT(v, INT64_MAX);
    CHECK_INT(tm_quantity_parse("1e400", &v, &err), -1);
    CHECK_INT(tm_quantity_parse("1e99999999999", &v, &err), -1);
    CHECK_INT(tm_quantity_parse("0e99999999999", &v, &err), 0);
    CHECK_INT(v, 0);
    /* a long but exact fraction */
    CHECK_INT(tm_quantity_parse("1.0000000000000000000000000000000000000001", &v, &err), 0);
    CHECK_INT(v, 2);
    CHECK_INT(tm_quantity_parse("1.0000000000000000000000000000000000000000Gi", &v, &err), 0);
    CHECK_INT(v, INT64_C(1073741824));
}

static void test_errors(void) {
    static const char *const bad[] = {
        "",     "m",   "Gi",   "1.2.3", "1Kb",   "1i",   "1K",  "1 ",  " 1",
        "1e",   "1e+", "1x",   "--1",   "+-1",   ".",    "-",   "1gi", "1mi",
        "1e3m", "1Ee", "0x10", "1,5",   "1e1.5", "1Mi1", "abc", "1E+",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tm_err err = {0};
        int64_t v = 42;
        CHECKF(tm_quantity_parse(bad[i], &v, &err) == -1, "\"%s\" accepted as %lld", bad[i],
               (long long)v);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", bad[i]);
        CHECKF(strstr(err.msg, quoted) != NULL, "error for \"%s\" does not name it: %s", bad[i],
               err.msg);
        CHECK_INT(v, 42); /* untouched on error */
        CHECK_INT(tm_quantity_parse_milli(bad[i], &v, &err), -1);
    }
    tm_err err = {0};
    int64_t v;
    CHECK_INT(tm_quantity_parse(NULL, &v, &err), -1);
    CHECK(err.msg[0] != '\0');
    char big[200];
    memset(big, '1', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_INT(tm_quantity_parse(big, &v, &err), -1);
    CHECK(strstr(err.msg, "longer than") != NULL);
    CHECK_INT(tm_quantity_parse("1", &v, NULL), 0); /* err may be NULL */
    CHECK_INT(tm_quantity_parse("junk", &v, NULL), -1);
}

static void test_format(void) {
    char buf[TM_QUANTITY_BUF];
    CHECK_STR(tm_quantity_format_milli(100, buf, sizeof buf), "100m");
    CHECK_STR(tm_quantity_format_milli(2000, buf, sizeof buf), "2");
    CHECK_STR(tm_quantity_format_milli(1500, buf, sizeof buf), "1500m");
    CHECK_STR(tm_quantity_format_milli(0, buf, sizeof buf), "0");
    CHECK_STR(tm_quantity_format_milli(-250, buf, sizeof buf), "-250m");
    CHECK_STR(tm_quantity_format_milli(-3000, buf, sizeof buf), "-3");
    CHECK_STR(tm_quantity_format_bytes(INT64_C(1073741824), buf, sizeof buf), "1Gi");
    CHECK_STR(tm_quantity_format_bytes(INT64_C(536870912), buf, sizeof buf), "512Mi");
    CHECK_STR(tm_quantity_format_bytes(1536 * 1024, buf, sizeof buf), "1536Ki");
    CHECK_STR(tm_quantity_format_bytes(1024, buf, sizeof buf), "1Ki");
    CHECK_STR(tm_quantity_format_bytes(1000, buf, sizeof buf), "1000");
    CHECK_STR(tm_quantity_format_bytes(0, buf, sizeof buf), "0");
    CHECK_STR(tm_quantity_format_bytes(INT64_MAX, buf, sizeof buf), "9223372036854775807");
    CHECK_STR(tm_quantity_format_bytes(INT64_C(1) << 60, buf, sizeof buf), "1Ei");
    CHECK_STR(tm_quantity_format_bytes(-2048, buf, sizeof buf), "-2Ki");
}

static void test_round_trip(void) {
    static const int64_t milli[] = {0, 1, 100, 999, 1000, 1001, 2500, 64000, INT64_C(1) << 50};
    for (size_t i = 0; i < sizeof milli / sizeof milli[0]; i++) {
        char buf[TM_QUANTITY_BUF];
        int64_t back = -1;
        tm_quantity_format_milli(milli[i], buf, sizeof buf);
        CHECK_INT(tm_quantity_parse_milli(buf, &back, NULL), 0);
        CHECK_INT(back, milli[i]);
    }
    static const int64_t bytes[] = {0, 1, 1023, 1024, 4096 * 3, INT64_C(3) << 30, INT64_MAX};
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        char buf[TM_QUANTITY_BUF];
        int64_t back = -1;
        tm_quantity_format_bytes(bytes[i], buf, sizeof buf);
        CHECK_INT(tm_quantity_parse(buf, &back, NULL), 0);
        CHECK_INT(back, bytes[i]);
    }
}

int main(void) {
    RUN(test_parse_table);
    RUN(test_exa_and_limits);
    RUN(test_errors);
    RUN(test_format);
    RUN(test_round_trip);
    return TEST_SUMMARY();
}
