/* Unit tests for lib/args.c: whole-string numbers in range are taken; anything atoi would
 * have turned into a quiet 0 or a truncated value is refused with the flag, the value and the
 * range in the message, and the output left untouched. */
#include <string.h>

#include "harness.h"
#include "lib/args.h"

static void test_int_in_range(void) {
    tm_err err = {0};
    int v = 7;
    CHECK_INT(tm_arg_int("port", "8080", 0, 65535, &v, &err), 0);
    CHECK_INT(v, 8080);
    CHECK_INT(tm_arg_int("health-port", "-1", -1, 65535, &v, &err), 0);
    CHECK_INT(v, -1);
}

static void test_int_refused(void) {
    const char *bad[] = {"abc", "80x", "", " ", "65536", "-2", "1.5", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tm_err err = {0};
        int v = 7;
        CHECKF(tm_arg_int("port", bad[i], -1, 65535, &v, &err) == -1, "'%s' taken", bad[i]);
        CHECKF(v == 7, "'%s' changed the value to %d", bad[i], v);
        char want[128];
        snprintf(want, sizeof want, "--port: '%s' is not an integer from -1 to 65535", bad[i]);
        CHECK_STR(err.msg, want);
    }
    tm_err err = {0};
    int v = 0;
    CHECK_INT(tm_arg_int("port", NULL, 0, 1, &v, &err), -1);
}

static void test_long_bounds(void) {
    tm_err err = {0};
    long long v = 0;
    CHECK_INT(tm_arg_long("max-body-bytes", "1073741824", 1024, 1LL << 30, &v, &err), 0);
    CHECK(v == 1LL << 30);
    CHECK_INT(tm_arg_long("max-body-bytes", "1073741825", 1024, 1LL << 30, &v, &err), -1);
    CHECK(strstr(err.msg, "from 1024 to 1073741824") != NULL);
}

static void test_double(void) {
    tm_err err = {0};
    double v = 0;
    CHECK_INT(tm_arg_double("qps", "2.5", 0, 1e9, &v, &err), 0);
    CHECK_NEAR(v, 2.5, 1e-12);
    CHECK_INT(tm_arg_double("qps", "1e3", 0, 1e9, &v, &err), 0);
    CHECK_NEAR(v, 1000, 1e-9);
    const char *bad[] = {"-3", "fast", "2.5s", "nan", "inf", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = 42;
        CHECKF(tm_arg_double("qps", bad[i], 0, 1e9, &v, &err) == -1, "'%s' taken", bad[i]);
        CHECKF(v == 42, "'%s' changed the value", bad[i]);
        CHECKF(strncmp(err.msg, "--qps: '", 8) == 0, "%s", err.msg);
    }
}

static void test_bool(void) {
    tm_err err = {0};
    int v = 7;
    CHECK_INT(tm_arg_bool("leader-elect", "true", &v, &err), 0);
    CHECK_INT(v, 1);
    CHECK_INT(tm_arg_bool("leader-elect", "false", &v, &err), 0);
    CHECK_INT(v, 0);
    const char *bad[] = {"True", "yes", "1", "0", "", "false "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = 7;
        CHECKF(tm_arg_bool("leader-elect", bad[i], &v, &err) == -1, "'%s' taken", bad[i]);
        CHECKF(v == 7, "'%s' changed the value", bad[i]);
        CHECKF(strstr(err.msg, "--leader-elect: '") == err.msg, "%s", err.msg);
        CHECKF(strstr(err.msg, "is not true or false") != NULL, "%s", err.msg);
    }
    CHECK_INT(tm_arg_bool("leader-elect", NULL, &v, &err), -1);
}

int main(void) {
    RUN(test_int_in_range);
    RUN(test_int_refused);
    RUN(test_long_bounds);
    RUN(test_double);
    RUN(test_bool);
    return TEST_SUMMARY();
}
