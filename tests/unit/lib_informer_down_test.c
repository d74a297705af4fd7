/* Unit test: an informer whose API server is down (connection refused) keeps retrying within a
 * second, so it lists and watches again promptly once the server is back (issue 13, defect 11:
 * after an API server restart binding resumed only after 8.6 s, the pod watch having backed off
 * to its 10 s cap). No cluster: a loopback port nobody listens on, then a listener on it. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lib/kube.h"

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A free loopback port: bound, then closed, so connecting to it is refused. */
static int listener(int port, int *out_port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    *out_port = ntohs(a.sin_port);
    return fd;
}

static void test_refused_retries_stay_short(void) {
    int port = 0;
    int fd = listener(0, &port);
    CHECK(fd >= 0);
    close(fd); /* nobody listens: every connection is refused */
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    tm_kube_config cfg = {.server = url};
    tm_err err = {0};
    tm_kube *k = tm_kube_new(&cfg, &err);
    tm_informer_opts o = {.path = "/api/v1/pods"};
    tm_informer *inf = tm_informer_start(k, &o, &err);
    CHECK(inf != NULL);
    /* 6 s down: with the ordinary backoff (0.5 s doubling to 10 s) about 4 tries; with waits
     * under 0.8 s at least 7. */
    int64_t t0 = now_ms();
    while (now_ms() - t0 < 6000)
        tm_kube_run(k, 100, &err);
    unsigned tries = tm_informer_backoffs(inf);
    CHECKF(tries >= 7, "%u retries in 6 s of connection refused", tries);
    /* The server comes back: the next list arrives within a second. */
    fd = listener(port, &port);
    CHECK(fd >= 0);
    listen(fd, 4);
    int64_t back = now_ms(), seen = -1;
    while (seen < 0 && now_ms() - back < 5000) {
        tm_kube_run(k, 20, &err);
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 0) > 0) {
            seen = now_ms() - back;
            int c = accept(fd, NULL, NULL);
            close(c);
        }
    }
    CHECKF(seen >= 0 && seen <= 1000, "first request %lld ms after the server came back",
           (long long)seen);
    printf("    %u retries in 6 s down; first request %lld ms after the server came back\n", tries,
           (long long)seen);
    tm_informer_stop(inf);
    tm_kube_free(k);
    close(fd);
}

int main(void) {
    RUN(test_refused_retries_stay_short);
    return TEST_SUMMARY();
}
