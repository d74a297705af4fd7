/* lib_pg_test.c: the database-free parts of lib/pg: COPY text escaping and connection errors
 * that say what to check. (Statements, COPY and migrations against a real server are covered
 * by tests/e2e/labeler_store_test.) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lib/pg.h"

static void test_copy_escape(void) {
    char *buf = NULL;
    size_t len = 0, cap = 0;
    CHECK(tm_pg_copy_escape(&buf, &len, &cap, "plain") == 0);
    CHECK(tm_pg_copy_escape(&buf, &len, &cap, "|a\tb\nc\rd\\e|") == 0);
    CHECK_STR(buf, "plain|a\\tb\\nc\\rd\\\\e|");
    CHECK_INT(len, strlen(buf));
    /* Growth across many appends keeps the content. */
    for (int i = 0; i < 2000; i++)
        CHECK(tm_pg_copy_escape(&buf, &len, &cap, "0123456789") == 0);
    CHECK_INT(len, strlen("plain|a\\tb\\nc\\rd\\\\e|") + 20000);
    free(buf);
}

static void test_connect_error(void) {
    tm_err err = {{0}, 0};
    /* Port 1 on loopback: nothing listens there. */
    PGconn *c = tm_pg_connect("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", &err);
    CHECK(c == NULL);
    CHECK(strstr(err.msg, "connecting to PostgreSQL") != NULL);
    CHECK(strstr(err.msg, "DATABASE_URL") != NULL);
    CHECK(strchr(err.msg, '\n') == NULL);
    c = tm_pg_connect("this is not a conninfo", &err);
    CHECK(c == NULL);
    CHECK(err.msg[0] != '\0');
}

/* Regression: libpq's default connect_timeout is "forever", so a server that accepts the TCP
 * connection and never answers (overloaded, or a half-dead proxy) hung the caller for good. A
 * loopback socket that listens but never accepts plays that server. alarm() kills the test
 * (counted as a failure) if the connect hangs. */
static void test_connect_timeout(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0 &&
          getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    char uri[128];
    snprintf(uri, sizeof uri, "postgresql://nobody@127.0.0.1:%d/none", ntohs(a.sin_port));
    unsetenv("PGCONNECT_TIMEOUT");
    tm_err err = {{0}, 0};
    alarm(30);
    time_t t0 = time(NULL);
    PGconn *c = tm_pg_connect(uri, &err);
    alarm(0);
    CHECK(c == NULL);
    CHECK(time(NULL) - t0 <= 15);
    CHECK(strstr(err.msg, "timeout") != NULL || strstr(err.msg, "timed out") != NULL);
    /* The caller's own setting wins over the default. */
    snprintf(uri, sizeof uri, "postgresql://nobody@127.0.0.1:%d/none?connect_timeout=2",
             ntohs(a.sin_port));
    alarm(30);
    c = tm_pg_connect(uri, &err);
    alarm(0);
    CHECK(c == NULL);
    close(fd);
}

static void test_retryable(void) {
    tm_err err = {{0}, 0};
    /* Without a live connection everything is worth retrying. */
    tm_err_set(&err, "INSERT: duplicate key (SQLSTATE 23505)");
    CHECK(tm_pg_err_retryable(NULL, &err));
}

int main(void) {
    RUN(test_copy_escape);
    RUN(test_connect_error);
    RUN(test_connect_timeout);
    RUN(test_retryable);
    return TEST_SUMMARY();
}
