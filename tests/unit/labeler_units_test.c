/* labeler_units_test.c: the raw and human-readable value formats of Nextflow trace files. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "labeler/taskrun.h"
#include "labeler/units.h"

static void test_durations(void) {
    int64_t v;
    tm_err err = {{0}, 0};
    CHECK(lab_parse_duration_ms("184000", &v, &err) == 0 && v == 184000);
    CHECK(lab_parse_duration_ms("3m 4s", &v, &err) == 0 && v == 184000);
    CHECK(lab_parse_duration_ms("1h 2m 3s", &v, &err) == 0 && v == 3723000);
    CHECK(lab_parse_duration_ms("1d 1h", &v, &err) == 0 && v == 90000000);
    CHECK(lab_parse_duration_ms("500ms", &v, &err) == 0 && v == 500);
    CHECK(lab_parse_duration_ms("13.7s", &v, &err) == 0 && v == 13700);
    CHECK(lab_parse_duration_ms("-", &v, &err) == 0 && v == LAB_NONE);
    CHECK(lab_parse_duration_ms("", &v, &err) == 0 && v == LAB_NONE);
    CHECK(lab_parse_duration_ms("3 parsecs", &v, &err) == -1);
    CHECK(strstr(err.msg, "3 parsecs") != NULL);
    CHECK(lab_parse_duration_ms("abc", &v, &err) == -1);
    CHECK(lab_parse_duration_ms("5", &v, &err) == 0 && v == 5);
    CHECK(lab_parse_duration_ms("-5", &v, &err) == -1);
}

static void test_bytes(void) {
    int64_t v;
    tm_err err = {{0}, 0};
    CHECK(lab_parse_bytes("1073741824", &v, &err) == 0 && v == 1073741824LL);
    CHECK(lab_parse_bytes("1 GB", &v, &err) == 0 && v == 1073741824LL);
    CHECK(lab_parse_bytes("1.5 GB", &v, &err) == 0 && v == 1610612736LL);
    CHECK(lab_parse_bytes("512 MB", &v, &err) == 0 && v == 536870912LL);
    CHECK(lab_parse_bytes("10 KB", &v, &err) == 0 && v == 10240);
    CHECK(lab_parse_bytes("7 B", &v, &err) == 0 && v == 7);
    CHECK(lab_parse_bytes("2 TB", &v, &err) == 0 && v == 2199023255552LL);
    CHECK(lab_parse_bytes("0", &v, &err) == 0 && v == 0);
    CHECK(lab_parse_bytes("-", &v, &err) == 0 && v == LAB_NONE);
    CHECK(lab_parse_bytes("12 XB", &v, &err) == -1);
    CHECK(strstr(err.msg, "12 XB") != NULL);
    CHECK(lab_parse_bytes("GB", &v, &err) == -1);
    CHECK(lab_parse_bytes("1 GB extra", &v, &err) == -1);
}

static void test_percent(void) {
    double v;
    tm_err err = {{0}, 0};
    CHECK(lab_parse_percent("97.5%", &v, &err) == 0 && fabs(v - 97.5) < 1e-12);
    CHECK(lab_parse_percent("210.0", &v, &err) == 0 && fabs(v - 210) < 1e-12);
    CHECK(lab_parse_percent("-", &v, &err) == 0 && isnan(v));
    CHECK(lab_parse_percent("lots%", &v, &err) == -1);
    CHECK(lab_parse_percent("97.5%%", &v, &err) == -1);
}

static void test_timestamps(void) {
    int64_t v;
    tm_err err = {{0}, 0};
    CHECK(lab_parse_timestamp_ms("1682944503000", &v, &err) == 0 && v == 1682944503000LL);
    CHECK(lab_parse_timestamp_ms("2023-05-01 12:35:03.000", &v, &err) == 0);
    CHECK_INT(v, 1682944503000LL);
    CHECK(lab_parse_timestamp_ms("2023-05-01 12:35:03.25", &v, &err) == 0);
    CHECK_INT(v, 1682944503250LL);
    CHECK(lab_parse_timestamp_ms("2023-05-01 12:35:03", &v, &err) == 0);
    CHECK_INT(v, 1682944503000LL);
    CHECK(lab_parse_timestamp_ms("01/05/2023", &v, &err) == -1);
    CHECK(lab_parse_timestamp_ms("-", &v, &err) == 0 && v == LAB_NONE);
}

static void test_timestamp_cache(void) {
    lab_ts_cache c;
    memset(&c, 0, sizeof c);
    int64_t v;
    tm_err err = {{0}, 0};
    CHECK(lab_parse_timestamp_ms_cached("2023-05-01 12:59:59.900", &v, &c, &err) == 0);
    CHECK_INT(v, 1682945999900LL);
    CHECK(lab_parse_timestamp_ms_cached("2023-05-01 12:00:00.000", &v, &c, &err) == 0);
    CHECK_INT(v, 1682942400000LL);
    CHECK(lab_parse_timestamp_ms_cached("2023-05-01 13:00:00.100", &v, &c, &err) == 0);
    CHECK_INT(v, 1682946000100LL);
    CHECK(lab_parse_timestamp_ms_cached("2023-05-02 13:00:00", &v, &c, &err) == 0);
    CHECK_INT(v, 1683032400000LL);
    /* Regression (fuzzing): the cache compared and copied 13 bytes of raw text, reading past
     * short but valid timestamps; it is keyed on the parsed hour, so spellings agree. */
    int64_t plain;
    CHECK(lab_parse_timestamp_ms_cached("2-4-3 4:4:6", &v, &c, &err) == 0);
    CHECK(lab_parse_timestamp_ms("2-4-3 4:4:6", &plain, &err) == 0);
    CHECK_INT(v, plain);
    CHECK(lab_parse_timestamp_ms_cached("2023-5-2 13:0:1", &v, &c, &err) == 0);
    CHECK_INT(v, 1683032401000LL);
    CHECK(lab_parse_timestamp_ms_cached("2023-05-02 13:00:02", &v, &c, &err) == 0);
    CHECK_INT(v, 1683032402000LL);
}

/* Regression: values beyond int64 went through llround(), which gives INT64_MIN (= LAB_NONE,
 * "not reported") on x86, so "1e30 GB" was silently stored as unknown. */
static void test_out_of_range(void) {
    int64_t v = 0;
    tm_err err = {{0}, 0};
    CHECK(lab_parse_bytes("1e30 GB", &v, &err) == -1);
    CHECK(strstr(err.msg, "1e30 GB") != NULL && strstr(err.msg, "too large") != NULL);
    CHECK(lab_parse_bytes("1e999 B", &v, &err) == -1);
    CHECK(lab_parse_bytes("8 EB", &v, &err) == -1); /* 2^63: one past the largest int64 */
    CHECK(lab_parse_bytes("7 EB", &v, &err) == 0 && v == 7LL << 60);
    CHECK(lab_parse_duration_ms("1e300d", &v, &err) == -1);
    CHECK(strstr(err.msg, "too large") != NULL);
    CHECK(lab_parse_duration_ms("99999999999999999999", &v, &err) == -1);
}

/* Text values: what PostgreSQL accepts as UTF-8, and no silent cuts. */
static void test_text_values(void) {
    char buf[8];
    tm_err err = {{0}, 0};
    CHECK(lab_set_text(buf, sizeof buf, "abc", &err) == 0 && strcmp(buf, "abc") == 0);
    CHECK(lab_set_text(buf, sizeof buf, "-", &err) == 0 && buf[0] == '\0');
    CHECK(lab_set_text(buf, sizeof buf, "\xc3\xa9\xe2\x82\xac", &err) == 0); /* e-acute, euro */
    CHECK(lab_set_text(buf, sizeof buf, "1234567", &err) == 0);
    CHECK(lab_set_text(buf, sizeof buf, "12345678", &err) == -1);
    CHECK(strstr(err.msg, "8 bytes long, at most 7") != NULL);
    CHECK(lab_set_text(buf, sizeof buf, "a\xc0\xaf", &err) == -1); /* overlong '/' */
    CHECK(strstr(err.msg, "0xc0 at offset 1") != NULL);
    CHECK(lab_set_text(buf, sizeof buf, "\xed\xa0\x80", &err) == -1);     /* a surrogate */
    CHECK(lab_set_text(buf, sizeof buf, "\xf4\x90\x80\x80", &err) == -1); /* > U+10FFFF */
    CHECK(lab_set_text(buf, sizeof buf, "\xe2\x82", &err) == -1);         /* cut short */
    char proc[8];
    CHECK(lab_process_from_name("FASTQC (s1)", proc, sizeof proc) && strcmp(proc, "FASTQC") == 0);
    CHECK(!lab_process_from_name("LONGPROCESS (s1)", proc, sizeof proc) && proc[0] == '\0');
}

static void test_ints(void) {
    int64_t v;
    tm_err err = {{0}, 0};
    CHECK(lab_parse_int("137", &v, &err) == 0 && v == 137);
    CHECK(lab_parse_int("-1", &v, &err) == 0 && v == -1);
    CHECK(lab_parse_int("-", &v, &err) == 0 && v == LAB_NONE);
    CHECK(lab_parse_int("1.5", &v, &err) == -1);
}

int main(void) {
    setenv("TZ", "UTC", 1); /* trace timestamps are local time: pin the zone */
    tzset();
    RUN(test_durations);
    RUN(test_bytes);
    RUN(test_percent);
    RUN(test_timestamps);
    RUN(test_timestamp_cache);
    RUN(test_out_of_range);
    RUN(test_text_values);
    RUN(test_ints);
    return TEST_SUMMARY();
}
