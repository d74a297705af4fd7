/* dam_collect_test.c: the federation file (dam/collect.h): every malformed field named,
 * relative kubeconfigs resolved against the file's folder, the skeleton used to check a job
 * before it is stored; and the collection's reporting of clusters that cannot be read: a
 * refused connection, a missing context, and a server that accepts and never answers (left
 * behind after the timeout, the others still ranked); and a cluster's connection reused from one
 * collection to the next. */
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dam/collect.h"
#include "harness.h"
#include "lib/jsonutil.h"

static char dir[64];

static const char *write_file(const char *name, const char *text) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_bad_federations_name_the_field(void) {
    const char *bad[][2] = {
        {"clusters: []\n", "clusters: expected a non-empty list"},
        {"clusters: [{kubeconfig: x}]\n", "clusters[0].name: missing"},
        {"clusters: [{name: a}, {name: a}]\n", "clusters[1].name: 'a' appears twice"},
        {"clusters: [{name: a, kubconfig: x}]\n", "kubconfig"},
        {"clusters: [{name: a, context: 3}]\n", "clusters[0].context: expected a non-empty string"},
        {"cluster: [{name: a}]\n", "cluster"},
        {"- a\n", "expected a mapping"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *p = write_file("bad.yaml", bad[i][0]);
        tm_err err = {0};
        dam_federation *f = dam_federation_load(p, &err);
        CHECKF(!f && strstr(err.msg, bad[i][1]), "%s -> %s", bad[i][0], err.msg);
        dam_federation_free(f);
    }
}

static void test_paths_and_skeleton(void) {
    const char *p = write_file("fed.yaml", "datasets: [{name: era5, location: s, size: 1Gi}]\n"
                                           "clusters:\n"
                                           "  - {name: a, kubeconfig: kc/a, namespace: science}\n"
                                           "  - {name: b, kubeconfig: /abs/b}\n"
                                           "  - {name: c, kubeconfig: in-cluster, site: x}\n");
    tm_err err = {0};
    dam_federation *f = dam_federation_load(p, &err);
    CHECKF(f != NULL, "%s", err.msg);
    if (!f)
        return;
    CHECK_INT(dam_federation_size(f), 3);
    CHECK_STR(dam_federation_namespace(f, 0), "science");
    CHECK_STR(dam_federation_namespace(f, 1), "default");
    CHECK_INT(dam_federation_find(f, "c"), 2);
    CHECK_INT(dam_federation_find(f, "z"), -1);
    json_t *sk = dam_federation_skeleton(f);
    CHECK_INT(json_array_size(json_object_get(sk, "clusters")), 3);
    CHECK_STR(tm_json_str(json_array_get(json_object_get(sk, "clusters"), 1), "unreachable", ""),
              "not collected");
    CHECK_STR(tm_json_str(json_array_get(json_object_get(sk, "datasets"), 0), "name", ""), "era5");
    json_decref(sk);
    /* collecting: a's kubeconfig is looked for next to the file, b's where it says; c is not in a
     * pod. All three unreachable, each with its reason, and the document still complete. */
    json_t *doc = dam_collect(f, NULL, 1e9, 5, &err);
    json_t *cl = json_object_get(doc, "clusters");
    char want[128];
    snprintf(want, sizeof want, "%s/kc/a", dir);
    CHECKF(strstr(tm_json_str(json_array_get(cl, 0), "unreachable", ""), want), "%s",
           tm_json_str(json_array_get(cl, 0), "unreachable", ""));
    CHECK(strstr(tm_json_str(json_array_get(cl, 1), "unreachable", ""), "/abs/b"));
    CHECK(tm_json_str(json_array_get(cl, 2), "unreachable", NULL) != NULL);
    CHECK_STR(tm_json_str(json_array_get(cl, 2), "site", ""), "x");
    json_decref(doc);
    dam_federation_free(f);
}

/* A server that accepts connections and never answers (a hung API server). */
static void *silent_server(void *arg) {
    int s = *(int *)arg;
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0)
            return NULL;
        /* keep it open, say nothing */
    }
}

static int listen_any(int *port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 16) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) < 0)
        return -1;
    *port = ntohs(a.sin_port);
    return s;
}

static const char *kubeconfig(const char *name, int port) {
    char text[512];
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
             "clusters: [{name: x, cluster: {server: 'http://127.0.0.1:%d'}}]\n"
             "users: [{name: x, user: {}}]\n"
             "contexts: [{name: x, context: {cluster: x, user: x}}]\n",
             port);
    return write_file(name, text);
}

static double now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_hung_and_refused_clusters_reported(void) {
    int hung_port, closed_port;
    int hs = listen_any(&hung_port), cs = listen_any(&closed_port);
    CHECK(hs >= 0 && cs >= 0);
    close(cs); /* nobody listens there any more: connection refused */
    pthread_t th;
    pthread_create(&th, NULL, silent_server, &hs);
    pthread_detach(th);
    kubeconfig("hung.kubeconfig", hung_port);
    kubeconfig("closed.kubeconfig", closed_port);
    const char *p = write_file("fed2.yaml", "clusters:\n"
                                            "  - {name: hung, kubeconfig: hung.kubeconfig}\n"
                                            "  - {name: closed, kubeconfig: closed.kubeconfig}\n"
                                            "  - {name: nocontext, kubeconfig: closed.kubeconfig,"
                                            " context: nope}\n");
    tm_err err = {0};
    dam_federation *f = dam_federation_load(p, &err);
    CHECKF(f != NULL, "%s", err.msg);
    if (!f)
        return;
    double t0 = now_mono();
    json_t *doc = dam_collect(f, NULL, 1e9, 0.5, &err);
    double took = now_mono() - t0;
    dam_federation_free(f); /* the hung cluster's thread must not need it */
    json_t *cl = json_object_get(doc, "clusters");
    CHECKF(took < 3, "took %.1f s", took);
    CHECKF(strstr(tm_json_str(json_array_get(cl, 0), "unreachable", ""), "no answer"), "%s",
           tm_json_str(json_array_get(cl, 0), "unreachable", ""));
    CHECKF(strstr(tm_json_str(json_array_get(cl, 1), "unreachable", ""), "127.0.0.1"), "%s",
           tm_json_str(json_array_get(cl, 1), "unreachable", ""));
    CHECKF(strstr(tm_json_str(json_array_get(cl, 2), "unreachable", ""), "context 'nope'"), "%s",
           tm_json_str(json_array_get(cl, 2), "unreachable", ""));
    json_decref(doc);
}

/* A minimal API server: every list is empty, every ConfigMap missing, connections kept alive;
 * it counts the connections it accepted. */
typedef struct counting_server {
    int fd;
    int accepted;
    pthread_mutex_t mu;
} counting_server;

static void *keepalive_conn(void *arg) {
    int c = (int)(intptr_t)arg;
    char buf[8192];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(c, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = 0;
        char *end;
        while ((end = strstr(buf, "\r\n\r\n"))) {
            int cm = strncmp(buf, "GET /api/v1/namespaces/", 23) == 0;
            const char *body = cm ? "{\"kind\":\"Status\",\"code\":404}" : "{\"items\":[]}";
            char out[256];
            int len = snprintf(out, sizeof out,
                               "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                               "Content-Length: %zu\r\n\r\n%s",
                               cm ? "404 Not Found" : "200 OK", strlen(body), body);
            if (write(c, out, (size_t)len) != len)
                goto done;
            size_t used = (size_t)(end + 4 - buf);
            memmove(buf, end + 4, have - used + 1);
            have -= used;
        }
    }
done:
    close(c);
    return NULL;
}

static void *counting_accept(void *arg) {
    counting_server *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        pthread_mutex_lock(&s->mu);
        s->accepted++;
        pthread_mutex_unlock(&s->mu);
        pthread_t th;
        pthread_create(&th, NULL, keepalive_conn, (void *)(intptr_t)c);
        pthread_detach(th);
    }
}

static int accepted(counting_server *s) {
    pthread_mutex_lock(&s->mu);
    int n = s->accepted;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Collections reuse the cluster's client and so its connection: the second collection opens
 * none (each made a new client, and a new connection, before). */
static void test_connections_reused_between_collections(void) {
    static counting_server s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    int port;
    s.fd = listen_any(&port);
    CHECK(s.fd >= 0);
    pthread_t th;
    pthread_create(&th, NULL, counting_accept, &s);
    pthread_detach(th);
    kubeconfig("live.kubeconfig", port);
    const char *p =
        write_file("fed3.yaml", "clusters:\n  - {name: live, kubeconfig: live.kubeconfig}\n");
    tm_err err = {0};
    dam_federation *f = dam_federation_load(p, &err);
    CHECKF(f != NULL, "%s", err.msg);
    if (!f)
        return;
    json_t *d1 = dam_collect(f, NULL, 1e9, 5, &err);
    int after1 = accepted(&s);
    CHECKF(!json_object_get(json_array_get(json_object_get(d1, "clusters"), 0), "unreachable"),
           "%s", json_dumps(d1, JSON_COMPACT));
    json_t *d2 = dam_collect(f, NULL, 1e9, 5, &err);
    json_t *d3 = dam_collect(f, NULL, 1e9, 5, &err);
    int after3 = accepted(&s);
    CHECKF(after1 >= 1 && after3 == after1, "connections: %d after one collection, %d after three",
           after1, after3);
    json_decref(d1);
    json_decref(d2);
    json_decref(d3);
    dam_federation_free(f);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/dam_collect_test.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    RUN(test_bad_federations_name_the_field);
    RUN(test_paths_and_skeleton);
    RUN(test_hung_and_refused_clusters_reported);
    RUN(test_connections_reused_between_collections);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return TEST_SUMMARY();
}
