/* harness.h: the minimal unit-test harness every C test in tests/ uses.
 *
 *   static void test_parse_ok(void) { CHECK(x == 1); CHECK_STR(a, "b"); }
 *   int main(void) { RUN(test_parse_ok); return TEST_SUMMARY(); }
 *
 * Each test case prints `ok - name` or `not ok - name` with the failed checks beneath, and the
 * program ends with `N passed, N failed` (the line tests/run.sh adds up) and a non-zero exit
 * status when anything failed. Header-only so a test is one .c file. */
#ifndef TAREMA_TEST_HARNESS_H
#define TAREMA_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int th_passed, th_failed, th_case_failed;
static const char *th_case;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            th_case_failed++;                                                                      \
            printf("    %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                    \
        }                                                                                          \
    } while (0)

#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            th_case_failed++;                                                                      \
            printf("    %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                    \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *th_a = (a), *th_b = (b);                                                       \
        if (!th_a || !th_b || strcmp(th_a, th_b) != 0) {                                           \
            th_case_failed++;                                                                      \
            printf("    %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a,           \
                   th_a ? th_a : "(null)", th_b ? th_b : "(null)");                                \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long th_a = (long long)(a), th_b = (long long)(b);                                    \
        if (th_a != th_b) {                                                                        \
            th_case_failed++;                                                                      \
            printf("    %s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, th_a, th_b);  \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double th_a = (double)(a), th_b = (double)(b);                                             \
        if (!(fabs(th_a - th_b) <= (tol))) {                                                       \
            th_case_failed++;                                                                      \
            printf("    %s:%d: %s == %.10g, expected %.10g (+-%g)\n", __FILE__, __LINE__, #a,      \
                   th_a, th_b, (double)(tol));                                                     \
        }                                                                                          \
    } while (0)

#define RUN(fn)                                                                                    \
    do {                                                                                           \
        th_case = #fn;                                                                             \
        th_case_failed = 0;                                                                        \
        fn();                                                                                      \
        if (th_case_failed) {                                                                      \
            th_failed++;                                                                           \
            printf("not ok - %s\n", th_case);                                                      \
        } else {                                                                                   \
            th_passed++;                                                                           \
            printf("ok - %s\n", th_case);                                                          \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)

#define TEST_SUMMARY() (printf("%d passed, %d failed\n", th_passed, th_failed), th_failed ? 1 : 0)

#endif
