/* labeler_weblog_validate_test.c: events the store would refuse are refused before they are
 * acknowledged (issue 13, defect 6: `cpus: 3000000000` got 202 and was dropped on replay), with
 * a message naming the field; and the spool's walk over unconsumed records, which rebuilds the
 * known runs at start. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "labeler/spool.h"
#include "labeler/weblog.h"

#define COMPLETED(extra)                                                                           \
    "{\"runName\":\"r\",\"runId\":\"id1\",\"event\":\"process_completed\",\"trace\":{"             \
    "\"task_id\":1,\"name\":\"P (1)\"" extra "}}"

/* Parses text and validates it: 0 when both pass; err holds the first complaint. */
static int check(const char *text, tm_err *err) {
    json_t *b = json_loads(text, 0, NULL);
    lab_weblog_event ev;
    int rc = b ? lab_weblog_parse(b, NULL, &ev, err) : -1;
    if (rc == 0)
        rc = lab_weblog_validate(&ev, err);
    json_decref(b);
    return rc;
}

static void test_store_limits(void) {
    tm_err err = {{0}, 0};
    CHECK(check(COMPLETED(",\"cpus\":2,\"attempt\":1,\"exit\":-1"), &err) == 0);
    CHECK(check(COMPLETED(",\"cpus\":2147483647"), &err) == 0);
    /* integer columns: 32 bits */
    CHECK(check(COMPLETED(",\"cpus\":3000000000"), &err) == -1);
    CHECKF(strstr(err.msg, "trace.cpus") && strstr(err.msg, "3000000000"), "%s", err.msg);
    CHECK(check(COMPLETED(",\"attempt\":4294967296"), &err) == -1);
    CHECKF(strstr(err.msg, "trace.attempt") != NULL, "%s", err.msg);
    CHECK(check(COMPLETED(",\"exit\":-2147483649"), &err) == -1);
    CHECKF(strstr(err.msg, "trace.exit") != NULL, "%s", err.msg);
    /* timestamps: real dates */
    CHECK(check(COMPLETED(",\"submit\":1682944500000,\"complete\":\"2023-05-01 12:40:00\""),
                &err) == 0);
    CHECK(check(COMPLETED(",\"submit\":99999999999999999"), &err) == -1);
    CHECKF(strstr(err.msg, "trace.submit") != NULL, "%s", err.msg);
    CHECK(check(COMPLETED(",\"complete\":-5"), &err) == -1);
    CHECKF(strstr(err.msg, "trace.complete") != NULL, "%s", err.msg);
    /* started events: the time */
    CHECK(check("{\"runName\":\"r\",\"runId\":\"i\",\"event\":\"started\",\"utcTime\":"
                "\"2023-05-01T12:00:00Z\",\"metadata\":{\"workflow\":{\"projectName\":\"w\"}}}",
                &err) == 0);
    /* other events are not stored: nothing to check */
    CHECK(check("{\"runName\":\"r\",\"runId\":\"i\",\"event\":\"process_started\"}", &err) == 0);
}

static void collect(void *ud, const char *rec) {
    char *buf = ud;
    strcat(buf, rec);
    strcat(buf, "|");
}

static void test_spool_foreach_walks_unconsumed(void) {
    char dir[] = "/tmp/tarema-validate-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    tm_err err = {{0}, 0};
    lab_spool *sp = lab_spool_open(dir, &err);
    CHECK(sp != NULL);
    if (!sp)
        return;
    CHECK(lab_spool_append(sp, "a", 1, &err) == 0);
    CHECK(lab_spool_append(sp, "bb", 2, &err) == 0);
    char *rec;
    CHECK_INT(lab_spool_peek(sp, &rec, &err), 1);
    free(rec);
    CHECK(lab_spool_ack(sp, &err) == 0);
    /* a record longer than the walk's first buffer */
    char *big = malloc(200001);
    memset(big, 'x', 200000);
    big[200000] = '\0';
    CHECK(lab_spool_append(sp, big, 200000, &err) == 0);
    CHECK(lab_spool_append(sp, "c", 1, &err) == 0);
    char *seen = calloc(1, 300000);
    CHECK(lab_spool_foreach(sp, collect, seen, &err) == 0);
    CHECK(strncmp(seen, "bb|xxx", 6) == 0);
    CHECK(strlen(seen) == 2 + 1 + 200000 + 1 + 1 + 1);
    CHECK(strcmp(seen + strlen(seen) - 2, "c|") == 0);
    lab_spool_close(sp);
    /* after reopening, the position kept: the same three records */
    sp = lab_spool_open(dir, &err);
    CHECK_INT(lab_spool_pending(sp), 3);
    CHECK_INT(lab_spool_peek(sp, &rec, &err), 1);
    CHECK_STR(rec, "bb");
    free(rec);
    lab_spool_close(sp);
    free(seen);
    free(big);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    RUN(test_store_limits);
    RUN(test_spool_foreach_walks_unconsumed);
    return TEST_SUMMARY();
}
