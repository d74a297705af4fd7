/* labeler_weblog_test.c: Nextflow weblog events -> task runs, and the durable spool that keeps
 * events while the database is down. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "labeler/spool.h"
#include "labeler/weblog.h"

/* Shaped like Nextflow's WebLogObserver output (trace values in raw units). */
static const char *started_ev =
    "{\"runName\":\"goofy_kilby\",\"runId\":\"0a1f1589-bd0e-4cfc-b688-34a03810735e\","
    "\"event\":\"started\",\"utcTime\":\"2023-05-01T12:34:56Z\","
    "\"metadata\":{\"parameters\":{\"input\":\"samplesheet.csv\"},\"workflow\":{"
    "\"projectName\":\"nf-core/chipseq\",\"runName\":\"goofy_kilby\","
    "\"manifest\":{\"name\":\"nf-core/chipseq\",\"version\":\"2.0.0\"}}}}";

static const char *completed_ev =
    "{\"runName\":\"goofy_kilby\",\"runId\":\"0a1f1589-bd0e-4cfc-b688-34a03810735e\","
    "\"event\":\"process_completed\",\"utcTime\":\"2023-05-01T12:40:00.250Z\","
    "\"trace\":{\"task_id\":12,\"status\":\"COMPLETED\",\"hash\":\"4e/a1b2c3\","
    "\"name\":\"NFCORE_CHIPSEQ:CHIPSEQ:BWA_MEM (SPT5_T0_REP1)\",\"exit\":0,"
    "\"submit\":1682944500000,\"start\":1682944501000,\"complete\":1682944800000,"
    "\"process\":\"NFCORE_CHIPSEQ:CHIPSEQ:BWA_MEM\",\"tag\":\"SPT5_T0_REP1\",\"attempt\":2,"
    "\"cpus\":12,\"memory\":77309411328,\"realtime\":299000,\"%cpu\":1105.3,"
    "\"peak_rss\":8800000000,\"rchar\":10500000000,\"wchar\":3200000000,"
    "\"read_bytes\":9000000000,\"write_bytes\":3100000000,\"native_id\":\"nf-4ea1b2c3\","
    "\"workdir\":\"/work/4e/a1b2c3\",\"queue\":null,\"disk\":null}}";

static json_t *load(const char *text) {
    return json_loads(text, 0, NULL);
}

static void test_started(void) {
    json_t *b = load(started_ev);
    lab_weblog_event ev;
    tm_err err = {{0}, 0};
    CHECK(lab_weblog_parse(b, NULL, &ev, &err) == 0);
    CHECK_INT(ev.kind, LAB_WEBLOG_STARTED);
    CHECK_STR(ev.workflow, "nf-core/chipseq");
    CHECK_STR(ev.run_name, "goofy_kilby");
    CHECK_INT(ev.utc_ms, 1682944496000LL);
    CHECK(lab_weblog_parse(b, "manifest.version", &ev, &err) == 0);
    CHECK_STR(ev.workflow, "2.0.0");
    json_decref(b);
}

static void test_process_completed(void) {
    json_t *b = load(completed_ev);
    lab_weblog_event ev;
    tm_err err = {{0}, 0};
    CHECK(lab_weblog_parse(b, NULL, &ev, &err) == 0);
    CHECK_INT(ev.kind, LAB_WEBLOG_PROCESS_COMPLETED);
    CHECK_INT(ev.utc_ms, 1682944800250LL);
    const lab_task_run *r = &ev.run;
    CHECK_STR(r->process, "NFCORE_CHIPSEQ:CHIPSEQ:BWA_MEM");
    CHECK_STR(r->run_name, "goofy_kilby");
    CHECK_STR(r->hash, "4e/a1b2c3");
    CHECK_INT(r->attempt, 2);
    CHECK_INT(r->cpus, 12);
    CHECK_INT(r->memory, 77309411328LL);
    CHECK_INT(r->realtime_ms, 299000);
    CHECK_NEAR(r->cpu_pct, 1105.3, 1e-9);
    CHECK_INT(r->peak_rss, 8800000000LL);
    CHECK_INT(r->rchar, 10500000000LL);
    CHECK_INT(r->wchar, 3200000000LL);
    CHECK_INT(r->complete_ms, 1682944800000LL);
    CHECK(r->workflow[0] == '\0'); /* resolved from the run's started event by the server */
    json_decref(b);
}

static void test_bad_events(void) {
    lab_weblog_event ev;
    tm_err err = {{0}, 0};
    json_t *b = load("[1,2]");
    CHECK(lab_weblog_parse(b, NULL, &ev, &err) == -1);
    json_decref(b);
    b = load("{\"runName\":\"x\",\"runId\":\"y\"}");
    CHECK(lab_weblog_parse(b, NULL, &ev, &err) == -1);
    CHECK(strstr(err.msg, "\"event\"") != NULL);
    json_decref(b);
    b = load("{\"event\":\"process_completed\",\"runName\":\"x\",\"runId\":\"y\"}");
    CHECK(lab_weblog_parse(b, NULL, &ev, &err) == -1);
    CHECK(strstr(err.msg, "trace") != NULL);
    json_decref(b);
    b = load("{\"event\":\"process_completed\",\"runName\":\"x\",\"runId\":\"y\","
             "\"trace\":{\"task_id\":1,\"name\":\"P (1)\",\"peak_rss\":\"lots\"}}");
    CHECK(lab_weblog_parse(b, NULL, &ev, &err) == -1);
    CHECK(strstr(err.msg, "trace.peak_rss") != NULL);
    json_decref(b);
    b = load("{\"event\":\"process_started\",\"runName\":\"x\",\"runId\":\"y\",\"trace\":{}}");
    CHECK(lab_weblog_parse(b, NULL, &ev, &err) == 0 && ev.kind == LAB_WEBLOG_OTHER);
    json_decref(b);
}

static int parse_text(const char *text, lab_weblog_event *ev, tm_err *err) {
    json_t *b = load(text);
    int rc = b ? lab_weblog_parse(b, NULL, ev, err) : -2;
    json_decref(b);
    return rc;
}

#define TRACE_EV(fields)                                                                           \
    "{\"event\":\"process_completed\",\"runName\":\"x\",\"runId\":\"y\",\"trace\":{\"task_id\":1," \
    "\"name\":\"P (1)\"," fields "}}"

/* Regression: JSON values of the wrong type or range were read silently: a real beyond int64
 * went through llround() (undefined; INT64_MIN = "unknown" on x86), negative sizes were
 * stored, a numeric status or a boolean %cpu counted as "not reported", and long run ids
 * were cut (two runs could merge). Each is now a 400 naming the field. */
static void test_wrong_types_and_ranges(void) {
    lab_weblog_event ev;
    tm_err err = {{0}, 0};
    CHECK(parse_text(TRACE_EV("\"peak_rss\":1e300"), &ev, &err) == -1);
    CHECK(strstr(err.msg, "trace.peak_rss") != NULL && strstr(err.msg, "out of range") != NULL);
    CHECK(parse_text(TRACE_EV("\"rchar\":-5"), &ev, &err) == -1);
    CHECK(strstr(err.msg, "trace.rchar") != NULL);
    CHECK(parse_text(TRACE_EV("\"realtime\":-1.5"), &ev, &err) == -1);
    CHECK(parse_text(TRACE_EV("\"exit\":-1"), &ev, &err) == 0 && ev.run.exit_code == -1);
    CHECK(parse_text(TRACE_EV("\"peak_rss\":1.5e9"), &ev, &err) == 0 &&
          ev.run.peak_rss == 1500000000LL);
    CHECK(parse_text(TRACE_EV("\"status\":3"), &ev, &err) == -1);
    CHECK(strstr(err.msg, "trace.status must be a string") != NULL);
    CHECK(parse_text(TRACE_EV("\"%cpu\":true"), &ev, &err) == -1);
    CHECK(strstr(err.msg, "trace.%cpu") != NULL);
    CHECK(parse_text(TRACE_EV("\"%cpu\":-3"), &ev, &err) == -1);
    CHECK(parse_text(TRACE_EV("\"memory\":[1]"), &ev, &err) == -1);
    CHECK(strstr(err.msg, "trace.memory must be a number or a string") != NULL);
    CHECK(parse_text(TRACE_EV("\"hash\":null,\"hostname\":null"), &ev, &err) == 0);
    CHECK(parse_text("{\"event\":7,\"runName\":\"x\",\"runId\":\"y\"}", &ev, &err) == -1);
    CHECK(strstr(err.msg, "\"event\"") != NULL);
    CHECK(parse_text("{\"event\":\"started\",\"runName\":[],\"runId\":\"y\"}", &ev, &err) == -1);
    CHECK(strstr(err.msg, "runName must be a string") != NULL);
    char big[400];
    int n = snprintf(big, sizeof big, "{\"event\":\"started\",\"runName\":\"x\",\"runId\":\"");
    memset(big + n, 'r', 200);
    strcpy(big + n + 200, "\"}");
    CHECK(parse_text(big, &ev, &err) == -1);
    CHECK(strstr(err.msg, "runId") != NULL && strstr(err.msg, "at most 127") != NULL);
}

static char spool_dir[64];

static void test_spool_fifo_and_reopen(void) {
    tm_err err = {{0}, 0};
    lab_spool *sp = lab_spool_open(spool_dir, &err);
    CHECK(sp != NULL);
    if (!sp)
        return;
    CHECK(lab_spool_append(sp, "one", 3, &err) == 0);
    CHECK(lab_spool_append(sp, "two", 3, &err) == 0);
    CHECK(lab_spool_append(sp, "bad\nline", 8, &err) == -1);
    CHECK_INT(lab_spool_pending(sp), 2);
    char *rec;
    CHECK_INT(lab_spool_peek(sp, &rec, &err), 1);
    CHECK_STR(rec, "one");
    free(rec);
    CHECK_INT(lab_spool_peek(sp, &rec, &err), 1); /* not consumed until acked */
    CHECK_STR(rec, "one");
    free(rec);
    CHECK(lab_spool_ack(sp, &err) == 0);
    lab_spool_close(sp);
    /* A crash here: the restart resumes at "two". */
    sp = lab_spool_open(spool_dir, &err);
    CHECK_INT(lab_spool_pending(sp), 1);
    CHECK_INT(lab_spool_peek(sp, &rec, &err), 1);
    CHECK_STR(rec, "two");
    free(rec);
    CHECK(lab_spool_ack(sp, &err) == 0);
    CHECK_INT(lab_spool_pending(sp), 0);
    CHECK_INT(lab_spool_peek(sp, &rec, &err), 0);
    CHECK(lab_spool_ack(sp, &err) == -1); /* nothing peeked */
    lab_spool_close(sp);
}

static void test_spool_torn_tail(void) {
    tm_err err = {{0}, 0};
    lab_spool *sp = lab_spool_open(spool_dir, &err);
    CHECK(lab_spool_append(sp, "kept", 4, &err) == 0);
    lab_spool_close(sp);
    /* Simulate a crash in the middle of an append: half a record without its newline. */
    char path[128];
    snprintf(path, sizeof path, "%s/events.log", spool_dir);
    int fd = open(path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0 && write(fd, "{\"half", 6) == 6);
    close(fd);
    sp = lab_spool_open(spool_dir, &err);
    CHECK_INT(lab_spool_pending(sp), 1);
    char *rec;
    CHECK_INT(lab_spool_peek(sp, &rec, &err), 1);
    CHECK_STR(rec, "kept");
    free(rec);
    CHECK(lab_spool_ack(sp, &err) == 0);
    CHECK(lab_spool_append(sp, "after", 5, &err) == 0);
    CHECK_INT(lab_spool_peek(sp, &rec, &err), 1);
    CHECK_STR(rec, "after");
    free(rec);
    CHECK(lab_spool_ack(sp, &err) == 0);
    lab_spool_close(sp);
}

static void test_spool_long_record(void) {
    tm_err err = {{0}, 0};
    lab_spool *sp = lab_spool_open(spool_dir, &err);
    size_t n = 100000;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = '\0';
    CHECK(lab_spool_append(sp, big, n, &err) == 0);
    char *rec;
    CHECK_INT(lab_spool_peek(sp, &rec, &err), 1);
    CHECK(rec && strlen(rec) == n);
    free(rec);
    CHECK(lab_spool_ack(sp, &err) == 0);
    free(big);
    lab_spool_close(sp);
    CHECK(lab_spool_open("/proc/no/such/dir", &err) == NULL);
    CHECK(strstr(err.msg, "/proc/no") != NULL);
}

int main(void) {
    snprintf(spool_dir, sizeof spool_dir, "/tmp/labeler-spool-test-XXXXXX");
    if (!mkdtemp(spool_dir))
        return 1;
    RUN(test_started);
    RUN(test_process_completed);
    RUN(test_bad_events);
    RUN(test_wrong_types_and_ranges);
    RUN(test_spool_fifo_and_reopen);
    RUN(test_spool_torn_tail);
    RUN(test_spool_long_record);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", spool_dir);
    if (system(cmd) != 0)
        printf("could not remove %s\n", spool_dir);
    return TEST_SUMMARY();
}
