/* gang_live_test.c: the live gang side against a fake API server on 127.0.0.1: a gang's first
 * bind goes alone; when it is refused, the other members' reservations are undone without a
 * bind ever being sent for them, and the whole gang goes to backoff (never a partial gang left
 * bound); when it succeeds, the others are bound. And a gang past scheduleTimeoutSeconds is
 * moved from unschedulable to backoff by the clock. And backfill's expected start of a gang
 * on its PodGroup (gang_start.h): written, not rewritten when unchanged (also after a restart
 * that reads it back), rewritten when it moved, removed once the gang is bound. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_http.h"
#include "harness.h"
#include "lib/kube.h"
#include "scheduler/live/gang_live.h"
#include "scheduler/plugins/backfill/backfill_plugin.h"
#include "scheduler/plugins/gang/gang_plugin.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"

static struct {
    int fd, port;
    volatile int stop;
    pthread_mutex_t mu;
    const char *first_bind_status; /* the answer to the first binding POST */
    int binds, others;
    int pg_patches;    /* PATCHes of a PodGroup object (not its status) */
    char pg_path[256]; /* the last one's path */
    char pg_body[512]; /* and body */
} fk = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void serve_one(int c) {
    char head[8192];
    char *body = fake_http_read(c, head, sizeof head);
    if (!body)
        return;
    const char *status = "201 Created";
    pthread_mutex_lock(&fk.mu);
    if (strncmp(head, "PATCH ", 6) == 0 && strstr(head, "/podgroups/") &&
        !strstr(head, "/status ")) {
        fk.pg_patches++;
        snprintf(fk.pg_path, sizeof fk.pg_path, "%.*s", (int)strcspn(head + 6, " "), head + 6);
        snprintf(fk.pg_body, sizeof fk.pg_body, "%s", body);
        status = "200 OK";
    } else if (strncmp(head, "POST ", 5) == 0 && strstr(head, "/binding ")) {
        if (fk.binds == 0)
            status = fk.first_bind_status;
        fk.binds++;
    } else {
        fk.others++; /* events, status patches */
    }
    pthread_mutex_unlock(&fk.mu);
    free(body);
    char hdr[512];
    snprintf(hdr, sizeof hdr,
             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
             "Connection: close\r\n\r\n{}",
             status);
    send(c, hdr, strlen(hdr), MSG_NOSIGNAL);
}

static void *server_main(void *arg) {
    (void)arg;
    while (!fk.stop) {
        struct pollfd p = {fk.fd, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            continue;
        int c = accept(fk.fd, NULL, NULL);
        if (c < 0)
            continue;
        serve_one(c);
        close(c);
    }
    return NULL;
}

static pthread_t server_start(const char *first_bind_status) {
    fk.fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fk.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fk.fd, (struct sockaddr *)&a, sizeof a);
    listen(fk.fd, 16);
    socklen_t len = sizeof a;
    getsockname(fk.fd, (struct sockaddr *)&a, &len);
    fk.port = ntohs(a.sin_port);
    fk.first_bind_status = first_bind_status;
    fk.binds = fk.others = fk.pg_patches = 0;
    fk.stop = 0;
    pthread_t t;
    pthread_create(&t, NULL, server_main, NULL);
    return t;
}

static void server_stop(pthread_t t) {
    fk.stop = 1;
    pthread_join(t, NULL);
    close(fk.fd);
}

static int binds_seen(void) {
    pthread_mutex_lock(&fk.mu);
    int n = fk.binds;
    pthread_mutex_unlock(&fk.mu);
    return n;
}

/* The scheduler as loop.c wires it: queue, cache, framework, binder, gang side. */
typedef struct world {
    tm_kube *k;
    sched_queue *q;
    sched_cache *c;
    sched_framework *fw;
    sched_binder *b;
    sched_gang_live *gl;
    tm_metrics *reg;
    pthread_t server; /* the fake API server (server_start) */
    int results, failures;
} world;

static int cmp(void *ud, const sched_pod *a, const sched_pod *b) {
    (void)ud;
    return strcmp(a->uid, b->uid);
}

/* loop.c's on_bind: the gang side first, then the pod's own outcome. */
static void on_bind(void *ud, const char *ns, const char *name, const char *uid, const char *node,
                    int status, const tm_err *err) {
    (void)ns, (void)name, (void)node;
    world *w = ud;
    w->results++;
    sched_gang_live_bind_result(w->gl, uid, err == NULL, status, 0);
    if (!err) {
        sched_queue_done(w->q, uid);
    } else {
        w->failures++;
        sched_cache_forget(w->c, uid);
        sched_queue_backoff(w->q, uid, 0);
    }
}

static json_t *J(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *J(const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_error_t je;
    json_t *j = json_loads(buf, 0, &je);
    if (!j)
        printf("    bad JSON: %s\n", je.text);
    return j;
}

/* The world on a fresh fake API server answering the first bind with first_bind_status, with
 * nodes n1..n3 and PodGroup hpc/mpi (minMember 3, scheduleTimeoutSeconds timeout_s). */
static void world_new(world *w, const char *first_bind_status, int timeout_s) {
    tm_err err = {0};
    memset(w, 0, sizeof *w);
    w->server = server_start(first_bind_status);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", fk.port);
    tm_kube_config cfg = {.server = url};
    w->k = tm_kube_new(&cfg, &err);
    w->reg = tm_metrics_new();
    w->q = sched_queue_new(cmp, NULL, 1000, 8000);
    w->c = sched_cache_new("tarema", NULL, NULL, NULL, &err);
    w->fw = sched_policy_new("tarema", &err);
    w->b = sched_binder_new(w->k, "tarema", "test", on_bind, w);
    w->gl = sched_gang_live_new(w->q, w->c, w->fw, w->b, w->reg, &err);
    CHECKF(w->gl != NULL, "%s", err.msg);
    CHECK(sched_gang_plugin_add(w->fw, sched_gang_live_registry(w->gl), &err) == 0);
    for (int i = 1; i <= 3; i++) {
        json_t *n = J("{\"metadata\":{\"name\":\"n%d\"},\"status\":{\"allocatable\":{\"cpu\":\"4\","
                      "\"memory\":\"8Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
                      "\"status\":\"True\"}]}}",
                      i);
        CHECK(sched_cache_node_event(w->c, TM_WATCH_ADDED, n, NULL, &err) == 0);
        json_decref(n);
    }
    json_t *pg = J("{\"metadata\":{\"name\":\"mpi\",\"namespace\":\"hpc\"},\"spec\":{"
                   "\"minMember\":3,\"scheduleTimeoutSeconds\":%d}}",
                   timeout_s);
    CHECK(sched_gang_live_podgroup_event(w->gl, TM_WATCH_ADDED, pg, 0));
    json_decref(pg);
}

/* Adds member i of gang mpi asking for cpu cores, as the informer and the cache would. */
static void add_member(world *w, int i, const char *cpu) {
    tm_err err = {0};
    json_t *p = J("{\"metadata\":{\"name\":\"mpi-%d\",\"namespace\":\"hpc\",\"uid\":\"u%d\","
                  "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"mpi\"}},\"spec\":{"
                  "\"schedulerName\":\"tarema\",\"containers\":[{\"name\":\"c\",\"resources\":"
                  "{\"requests\":{\"cpu\":\"%s\"}}}]}}",
                  i, i, cpu);
    sched_gang_live_pod_event(w->gl, TM_WATCH_ADDED, p, 0);
    sched_pod *sp = sched_pod_from_json(sched_cache_snapshot(w->c), p, NULL, &err);
    CHECK(sp && sched_queue_add(w->q, sp, 0) == 0);
    json_decref(p);
}

static void world_free(world *w) {
    tm_kube_free(w->k);
    sched_gang_live_free(w->gl);
    sched_binder_free(w->b);
    sched_queue_free(w->q);
    sched_framework_free(w->fw);
    sched_cache_free(w->c);
    tm_metrics_free(w->reg);
    server_stop(w->server);
}

static void run_until(world *w, int results, int max_ms) {
    tm_err err = {0};
    for (int waited = 0; w->results < results && waited < max_ms; waited += 20)
        tm_kube_run(w->k, 20, &err);
}

static void test_first_bind_refused_undoes_the_rest(void) {
    world w;
    world_new(&w, "409 Conflict", 0);
    for (int i = 1; i <= 3; i++)
        add_member(&w, i, "3");
    sched_pod *p = sched_queue_pop(w.q, 0);
    CHECK(p && sched_gang_live_cycle(w.gl, p, 0));
    CHECK_INT(sched_cache_assumed_count(w.c), 3); /* all three placed and reserved at once */
    run_until(&w, 1, 3000);
    tm_err err = {0};
    for (int i = 0; i < 10; i++) /* give any wrongly started bind time to arrive */
        tm_kube_run(w.k, 20, &err);
    CHECK_INT(w.results, 1);
    CHECK_INT(binds_seen(), 1); /* the others were never sent */
    CHECK_INT(sched_cache_assumed_count(w.c), 0);
    CHECK_INT(sched_snapshot_pod_count(sched_cache_snapshot(w.c)), 0); /* nothing held */
    CHECK_INT(sched_queue_count(w.q, SCHED_Q_BACKOFF), 3);             /* the whole gang */
    sched_gang *g = sched_gang_registry_get(sched_gang_live_registry(w.gl), "podgroup/hpc/mpi");
    CHECK(g && sched_gang_count(g, SCHED_GANG_POD_PENDING) == 3);
    CHECK(g && strstr(g->message, "the other 2 reservation(s) undone") != NULL);
    world_free(&w);
}

static void test_first_bind_ok_binds_the_rest(void) {
    world w;
    world_new(&w, "201 Created", 0);
    for (int i = 1; i <= 3; i++)
        add_member(&w, i, "3");
    sched_pod *p = sched_queue_pop(w.q, 0);
    CHECK(p && sched_gang_live_cycle(w.gl, p, 0));
    run_until(&w, 3, 3000);
    CHECK_INT(w.results, 3);
    CHECK_INT(w.failures, 0);
    CHECK_INT(binds_seen(), 3);
    CHECK_INT(sched_queue_count(w.q, SCHED_Q_BACKOFF) + sched_queue_count(w.q, SCHED_Q_ACTIVE), 0);
    world_free(&w);
}

/* Two members of a gang of 3 exist: they wait unschedulable; past the 2 s timeout the clock
 * moves them to backoff with a Timeout. */
static void test_timeout_moves_the_gang_to_backoff(void) {
    world w;
    world_new(&w, "201 Created", 2);
    add_member(&w, 1, "1");
    add_member(&w, 2, "1");
    sched_pod *p = sched_queue_pop(w.q, 1000);
    CHECK(p && sched_gang_live_cycle(w.gl, p, 1000));
    CHECK_INT(sched_queue_count(w.q, SCHED_Q_UNSCHEDULABLE), 2);
    sched_gang_live_check_timeouts(w.gl, 2999);
    CHECK_INT(sched_queue_count(w.q, SCHED_Q_UNSCHEDULABLE), 2);
    sched_gang_live_check_timeouts(w.gl, 3000);
    CHECK_INT(sched_queue_count(w.q, SCHED_Q_BACKOFF), 2);
    sched_gang *g = sched_gang_registry_get(sched_gang_live_registry(w.gl), "podgroup/hpc/mpi");
    CHECK(g && g->timeouts == 1);
    CHECKF(g && strstr(g->message, "not placed within scheduleTimeoutSeconds 2") &&
               strstr(g->message, "waiting for 1 more pod(s)"),
           "%s", g ? g->message : "");
    CHECK_INT(binds_seen(), 0);
    world_free(&w);
}

/* The Gang plugin at the framework's points: PreEnqueue keeps a short gang out and says why,
 * Permit refuses a member placed outside its gang's cycle, QueueSort puts the older gang first. */
static void test_plugin_points(void) {
    world w;
    world_new(&w, "201 Created", 0);
    add_member(&w, 1, "1");
    add_member(&w, 2, "1");
    sched_snapshot *s = sched_cache_snapshot(w.c);
    const sched_pod *p1 = sched_queue_get(w.q, "u1");
    char msg[512];
    CHECK_INT(sched_framework_pre_enqueue(w.fw, s, p1, 0, msg, sizeof msg),
              SCHED_STATUS_UNSCHEDULABLE);
    CHECKF(strstr(msg, "Gang: gang podgroup/hpc/mpi: 2 pod(s) exist, minMember 3: waiting for 1 "
                       "more pod(s)") != NULL,
           "%s", msg);
    add_member(&w, 3, "1");
    CHECK_INT(sched_framework_pre_enqueue(w.fw, s, p1, 0, msg, sizeof msg), SCHED_STATUS_OK);
    /* a member scheduled alone (not by its gang's cycle) is refused at Permit */
    tm_err err = {0};
    sched_decision d;
    CHECK(sched_framework_schedule(w.fw, s, p1, 0, &d, &err) == 0 && d.node >= 0);
    CHECK(sched_framework_reserve(w.fw, s, p1, d.node, &err) == 0);
    CHECK_INT(sched_framework_permit(w.fw, s, p1, d.node, 0, NULL, msg, sizeof msg, &err),
              SCHED_STATUS_UNSCHEDULABLE);
    CHECKF(strstr(msg, "a member is bound only with its gang") != NULL, "%s", msg);
    CHECK_INT(sched_snapshot_pod_count(s), 0); /* the reject unreserved it */
    /* QueueSort: a pod of a gang seen later goes after every member of the older gang */
    json_t *pg = J("{\"metadata\":{\"name\":\"late\",\"namespace\":\"hpc\"},\"spec\":{"
                   "\"minMember\":1}}");
    sched_gang_live_podgroup_event(w.gl, TM_WATCH_ADDED, pg, 50);
    json_decref(pg);
    json_t *lp = J("{\"metadata\":{\"name\":\"late-1\",\"namespace\":\"hpc\",\"uid\":\"a0\","
                   "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"late\"}},\"spec\":{"
                   "\"schedulerName\":\"tarema\"}}");
    sched_gang_live_pod_event(w.gl, TM_WATCH_ADDED, lp, 50);
    sched_pod *late = sched_pod_from_json(s, lp, NULL, &err);
    CHECK(late && sched_framework_queue_cmp(w.fw, s, p1, late) < 0);
    CHECK(late && sched_framework_queue_cmp(w.fw, s, late, p1) > 0);
    sched_pod_free(late);
    json_decref(lp);
    world_free(&w);
}

/* The watch showed a member Running before its bind's answer came: the answer must not move it
 * back to bound (seen in e2e: PodGroup status stuck at running 3 of 4). */
static void test_late_bind_answer_keeps_running(void) {
    world w;
    world_new(&w, "201 Created", 0);
    add_member(&w, 1, "1");
    json_t *p = J("{\"metadata\":{\"name\":\"mpi-1\",\"namespace\":\"hpc\",\"uid\":\"u1\","
                  "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"mpi\"}},\"spec\":{"
                  "\"schedulerName\":\"tarema\",\"nodeName\":\"n1\"},\"status\":{\"phase\":"
                  "\"Running\"}}");
    sched_gang_live_pod_event(w.gl, TM_WATCH_MODIFIED, p, 0);
    json_decref(p);
    sched_gang_live_bind_result(w.gl, "u1", true, 201, 0);
    sched_gang *g = sched_gang_registry_get(sched_gang_live_registry(w.gl), "podgroup/hpc/mpi");
    CHECK(g && sched_gang_count(g, SCHED_GANG_POD_RUNNING) == 1);
    world_free(&w);
}

/* After a restart the finished members are not listed (the pod informer leaves finished pods
 * out): the PodGroup's own counts keep it Finished instead of falling back to Pending. */
static void test_restart_keeps_finished(void) {
    world w;
    world_new(&w, "201 Created", 0);
    json_t *pg = J("{\"metadata\":{\"name\":\"mpi\",\"namespace\":\"hpc\"},\"spec\":{"
                   "\"minMember\":3},\"status\":{\"phase\":\"Finished\",\"succeeded\":3}}");
    sched_gang_live_podgroup_event(w.gl, TM_WATCH_MODIFIED, pg, 0);
    json_decref(pg);
    sched_gang *g = sched_gang_registry_get(sched_gang_live_registry(w.gl), "podgroup/hpc/mpi");
    CHECK(g && sched_gang_phase_of(g) == SCHED_GANG_FINISHED);
    CHECK(g && sched_gang_succeeded(g) == 3);
    world_free(&w);
}

static int others_seen(void) {
    pthread_mutex_lock(&fk.mu);
    int n = fk.others;
    pthread_mutex_unlock(&fk.mu);
    return n;
}

/* A pod of gang `gang` on n1, as the informer shows it: phase Running, Succeeded or Failed. */
static void member_event(world *w, tm_watch_type t, const char *gang, int i, const char *phase) {
    json_t *p = J("{\"metadata\":{\"name\":\"%s-%d\",\"namespace\":\"hpc\",\"uid\":\"%s-u%d\","
                  "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"%s\"}},\"spec\":{"
                  "\"schedulerName\":\"tarema\",\"nodeName\":\"n1\"},\"status\":{\"phase\":"
                  "\"%s\"}}",
                  gang, i, gang, i, gang, phase);
    sched_gang_live_pod_event(w->gl, t, p, 0);
    json_decref(p);
}

/* 10,000 short gangs run to completion: finished members (shown as deletions by the pod
 * informer) are folded into their gang's counts, not kept; the gangs of deleted PodGroups go.
 * Every tenth PodGroup is kept: its gang stays, without members, and its counts stay right. */
static void test_finished_gangs_do_not_accumulate(void) {
    world w;
    world_new(&w, "201 Created", 0);
    sched_gang_registry *r = sched_gang_live_registry(w.gl);
    int wrong = 0;
    for (int k = 0; k < 10000; k++) {
        char name[32], key[64];
        snprintf(name, sizeof name, "g%d", k);
        snprintf(key, sizeof key, "podgroup/hpc/%s", name);
        json_t *pg = J("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"hpc\"},\"spec\":{"
                       "\"minMember\":2}}",
                       name);
        sched_gang_live_podgroup_event(w.gl, TM_WATCH_ADDED, pg, 0);
        member_event(&w, TM_WATCH_ADDED, name, 1, "Running");
        member_event(&w, TM_WATCH_ADDED, name, 2, "Running");
        bool fails = k % 7 == 0;
        member_event(&w, TM_WATCH_DELETED, name, 1, "Succeeded");
        member_event(&w, TM_WATCH_DELETED, name, 2, fails ? "Failed" : "Succeeded");
        sched_gang *g = sched_gang_registry_get(r, key);
        if (!g || sched_gang_succeeded(g) != (fails ? 1u : 2u) ||
            sched_gang_failed(g) != (fails ? 1u : 0u) ||
            sched_gang_phase_of(g) != (fails ? SCHED_GANG_FAILED : SCHED_GANG_FINISHED) ||
            g->n_members != 0)
            wrong++;
        if (k % 10 != 0)
            sched_gang_live_podgroup_event(w.gl, TM_WATCH_DELETED, pg, 0);
        json_decref(pg);
    }
    CHECK_INT(wrong, 0);
    CHECK_INT(sched_gang_registry_member_count(r), 0);
    CHECK_INT(sched_gang_registry_count(r), 1 + 1000); /* mpi and the kept PodGroups */
    sched_gang *g = sched_gang_registry_get(r, "podgroup/hpc/g9990");
    CHECK(g && sched_gang_succeeded(g) == 2 && sched_gang_phase_of(g) == SCHED_GANG_FINISHED);
    /* a member that finishes after its PodGroup is gone takes the gang with it */
    json_t *pg = J("{\"metadata\":{\"name\":\"late\",\"namespace\":\"hpc\"},\"spec\":{"
                   "\"minMember\":1}}");
    sched_gang_live_podgroup_event(w.gl, TM_WATCH_ADDED, pg, 0);
    member_event(&w, TM_WATCH_ADDED, "late", 1, "Running");
    sched_gang_live_podgroup_event(w.gl, TM_WATCH_DELETED, pg, 0);
    json_decref(pg);
    CHECK(sched_gang_registry_get(r, "podgroup/hpc/late") != NULL); /* still running */
    member_event(&w, TM_WATCH_DELETED, "late", 1, "Succeeded");
    CHECK(sched_gang_registry_get(r, "podgroup/hpc/late") == NULL);
    CHECK_INT(sched_gang_registry_count(r), 1 + 1000);
    world_free(&w);
}

/* A gang of 3 with one member still gated: its ungated members wait quietly at PreEnqueue
 * (one reason, no FailedScheduling event, no wait clock), explain's decision says the same,
 * and lifting the gate lets the gang through. */
static void test_gated_member_waits_quietly(void) {
    world w;
    world_new(&w, "201 Created", 2);
    add_member(&w, 1, "1");
    add_member(&w, 2, "1");
    const char *gated = "{\"metadata\":{\"name\":\"mpi-3\",\"namespace\":\"hpc\",\"uid\":\"u3\","
                        "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"mpi\"}},\"spec\":{"
                        "\"schedulerName\":\"tarema\",%s\"containers\":[{\"name\":\"c\","
                        "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}";
    json_t *p3 = J(gated, "\"schedulingGates\":[{\"name\":\"tarema.io/planned\"}],");
    sched_gang_live_pod_event(w.gl, TM_WATCH_ADDED, p3, 0); /* the queue keeps it gated */
    json_decref(p3);
    sched_snapshot *s = sched_cache_snapshot(w.c);
    sched_pod *p1 = sched_queue_pop(w.q, 0);
    char msg[512];
    CHECK_INT(sched_framework_pre_enqueue(w.fw, s, p1, 0, msg, sizeof msg),
              SCHED_STATUS_UNSCHEDULABLE);
    CHECKF(strstr(msg, "Gang: gang podgroup/hpc/mpi: waiting for 1 gated member(s): 2 of "
                       "minMember 3 ungated") != NULL,
           "%s", msg);
    CHECK(sched_gang_live_rejected(w.gl, p1, msg, 0)); /* quiet: the caller posts nothing */
    sched_queue_unschedulable(w.q, p1->uid, 0);
    /* the gang's cycle (a caller without the plugin's PreEnqueue): the same quiet wait */
    sched_pod *p2 = sched_queue_pop(w.q, 0);
    CHECK(p2 && sched_gang_live_cycle(w.gl, p2, 0));
    CHECK_INT(sched_queue_count(w.q, SCHED_Q_UNSCHEDULABLE), 2);
    tm_err err = {0};
    for (int i = 0; i < 10; i++) /* give any event sent time to arrive */
        tm_kube_run(w.k, 20, &err);
    CHECK_INT(others_seen(), 0);
    sched_gang *g = sched_gang_registry_get(sched_gang_live_registry(w.gl), "podgroup/hpc/mpi");
    CHECK(g && g->wait_since_ms == 0 && g->attempts == 0);
    CHECKF(g && strcmp(g->message, "waiting for 1 gated member(s): 2 of minMember 3 ungated") == 0,
           "%s", g ? g->message : "");
    /* no timeout for a gang that only waits for its gates */
    sched_gang_live_check_timeouts(w.gl, 10000);
    CHECK(g && g->timeouts == 0);
    /* explain's decision (nothing kept): the same one reason */
    const sched_pod *pend[2] = {sched_queue_get(w.q, "u1"), sched_queue_get(w.q, "u2")};
    int nodes[2];
    sched_gang_placement pl = {.nodes = nodes};
    char why[1024];
    CHECK_INT(sched_gang_try_place(w.fw, s, g, (sched_pod *const *)pend, 2, 0, false, &pl, why,
                                   sizeof why),
              SCHED_GANG_TRY_WAITING);
    CHECKF(strstr(why, "waiting for 1 gated member(s)") != NULL, "%s", why);
    /* the gate lifted: the gang goes through PreEnqueue and is placed whole */
    p3 = J(gated, "");
    sched_gang_live_pod_event(w.gl, TM_WATCH_MODIFIED, p3, 0);
    sched_pod *sp3 = sched_pod_from_json(s, p3, NULL, &err);
    CHECK(sp3 && sched_queue_add(w.q, sp3, 0) == 0);
    json_decref(p3);
    sched_pod *p = sched_queue_pop(w.q, 0);
    CHECK(p && sched_framework_pre_enqueue(w.fw, s, p, 0, msg, sizeof msg) == SCHED_STATUS_OK);
    CHECK(p && sched_gang_live_cycle(w.gl, p, 0));
    run_until(&w, 3, 3000);
    CHECK_INT(binds_seen(), 3);
    world_free(&w);
}

/* ---- the expected start on the PodGroup ----------------------------------------------------- */

static int pg_patches(void) {
    pthread_mutex_lock(&fk.mu);
    int n = fk.pg_patches;
    pthread_mutex_unlock(&fk.mu);
    return n;
}

/* The gang side's status pass, then the API calls it started answered: until the PodGroup has
 * seen want patches, at most max_ms (a "no patch" check runs the whole max_ms). */
static void sync_and_run(world *w, int want, int max_ms) {
    tm_err err = {0};
    sched_gang_live_sync_status(w->gl);
    for (int waited = 0; pg_patches() < want && waited < max_ms; waited += 20)
        tm_kube_run(w->k, 20, &err);
}

/* The backfill plan as backfill_live makes it: the three nodes (4 cores each) full until end_ms,
 * the gang (3 members of 4 cores) the one job: its shadow starts at end_ms. */
static void plan_gang_key(world *w, const char *key, int64_t now_ms, int64_t end_ms) {
    sched_resources alloc[3] = {0}, req[3] = {0};
    bf_running run[3];
    bool elig[3] = {true, true, true};
    for (int i = 0; i < 3; i++) {
        alloc[i].v[SCHED_RES_CPU] = 4000;
        req[i].v[SCHED_RES_CPU] = 4000;
        run[i] =
            (bf_running){.node = i, .req = req[i], .start_ms = now_ms - 1000, .end_ms = end_ms};
    }
    bf_job job = {
        .key = key, .n_members = 3, .member_req = req, .runtime_ms = 60000, .eligible = elig};
    tm_err err = {0};
    CHECKF(bf_plan_compute(bf_plugin_plan(w->fw), bf_plugin_config(w->fw), alloc, 3, run, 3, NULL,
                           0, &job, 1, now_ms, &err) == 0,
           "%s", err.msg);
    CHECK_INT(bf_plan_shadow_count(bf_plugin_plan(w->fw)), 1);
}
static void plan_gang(world *w, int64_t now_ms, int64_t end_ms) {
    plan_gang_key(w, "gang podgroup/hpc/mpi", now_ms, end_ms);
}

static void expect_start_patch(int64_t start_ms) {
    char when[32], want[96];
    bf_format_time(start_ms, when, sizeof when);
    snprintf(want, sizeof want, "{\"tarema.io/expected-start\":\"%s\"}", when);
    pthread_mutex_lock(&fk.mu);
    CHECKF(strcmp(fk.pg_path, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/hpc/podgroups/mpi") ==
               0,
           "path %s", fk.pg_path);
    CHECKF(strstr(fk.pg_body, want) != NULL, "body %s, want %s", fk.pg_body, want);
    pthread_mutex_unlock(&fk.mu);
}

static void test_expected_start_on_podgroup(void) {
    world w;
    world_new(&w, "201 Created", 0);
    for (int i = 1; i <= 3; i++)
        add_member(&w, i, "4");
    bf_config cfg = bf_config_default(); /* resolution 1 s */
    tm_err err = {0};
    CHECK(bf_plugin_add(w.fw, &cfg, NULL, NULL, &err) == 0);
    int64_t now = 1800000000000LL; /* 2027-01-15T08:00:00Z */

    sync_and_run(&w, 1, 300); /* no shadow yet: nothing written */
    CHECK_INT(pg_patches(), 0);

    plan_gang(&w, now, now + 30000);
    sync_and_run(&w, 1, 3000);
    CHECK_INT(pg_patches(), 1);
    expect_start_patch(now + 30000);
    sched_gang *g = sched_gang_registry_get(sched_gang_live_registry(w.gl), "podgroup/hpc/mpi");
    CHECK(g && g->start_shown_ms == now + 30000);

    /* the same plan again (every plan of a quiet cluster): nothing rewritten */
    plan_gang(&w, now + 2000, now + 30000);
    sync_and_run(&w, 2, 300);
    CHECK_INT(pg_patches(), 1);

    /* a pod overran: the shadow moved 5 s later, written again */
    plan_gang(&w, now + 3000, now + 35000);
    sync_and_run(&w, 2, 3000);
    CHECK_INT(pg_patches(), 2);
    expect_start_patch(now + 35000);

    /* the gang binds: the annotation is removed (merge patch to null), once */
    for (int i = 1; i <= 3; i++) {
        json_t *p = J("{\"metadata\":{\"name\":\"mpi-%d\",\"namespace\":\"hpc\",\"uid\":\"u%d\","
                      "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"mpi\"}},\"spec\":{"
                      "\"schedulerName\":\"tarema\",\"nodeName\":\"n%d\",\"containers\":[{"
                      "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"4\"}}}]}}",
                      i, i, i);
        sched_gang_live_pod_event(w.gl, TM_WATCH_MODIFIED, p, 0);
        json_decref(p);
    }
    sync_and_run(&w, 3, 3000);
    CHECK_INT(pg_patches(), 3);
    pthread_mutex_lock(&fk.mu);
    CHECKF(strstr(fk.pg_body, "{\"tarema.io/expected-start\":null}") != NULL, "body %s",
           fk.pg_body);
    pthread_mutex_unlock(&fk.mu);
    CHECK(g && g->start_shown_ms == 0);
    sync_and_run(&w, 4, 300);
    CHECK_INT(pg_patches(), 3);
    world_free(&w);

    /* A restarted scheduler reads the annotation back from the PodGroup: a plan with the same
     * start writes nothing, one that moved by the resolution writes. */
    world_new(&w, "201 Created", 0);
    for (int i = 1; i <= 3; i++)
        add_member(&w, i, "4");
    CHECK(bf_plugin_add(w.fw, &cfg, NULL, NULL, &err) == 0);
    char when[32];
    bf_format_time(now + 30000, when, sizeof when);
    json_t *pg = J("{\"metadata\":{\"name\":\"mpi\",\"namespace\":\"hpc\",\"annotations\":{"
                   "\"tarema.io/expected-start\":\"%s\"}},\"spec\":{\"minMember\":3}}",
                   when);
    sched_gang_live_podgroup_event(w.gl, TM_WATCH_MODIFIED, pg, 0);
    json_decref(pg);
    plan_gang(&w, now + 10000, now + 30000);
    sync_and_run(&w, 1, 300);
    CHECK_INT(pg_patches(), 0);
    plan_gang(&w, now + 11000, now + 31000);
    sync_and_run(&w, 1, 3000);
    CHECK_INT(pg_patches(), 1);
    expect_start_patch(now + 31000);
    world_free(&w);
}

/* 1.36+'s PodGroup (scheduling.k8s.io) gets the same annotation on its object, at the version
 * the API server serves; its status (kube-scheduler's condition) is not part of that patch. */
static void test_expected_start_on_native_podgroup(void) {
    world w;
    world_new(&w, "201 Created", 0);
    sched_native_api api = {.version = "v1beta1",
                            .group_version = "scheduling.k8s.io/v1beta1",
                            .podgroups = true,
                            .podgroup_status = true,
                            .condition = "PodGroupInitiallyScheduled"};
    sched_gang_live_set_native_api(w.gl, &api);
    json_t *pg = J("{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\"},\"spec\":{"
                   "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}}}");
    CHECK(sched_gang_live_native_podgroup_event(w.gl, TM_WATCH_ADDED, pg, 0));
    json_decref(pg);
    for (int i = 1; i <= 2; i++) {
        json_t *p = J("{\"metadata\":{\"name\":\"g-%d\",\"namespace\":\"ml\",\"uid\":\"g%d\"},"
                      "\"spec\":{\"schedulerName\":\"tarema\",\"schedulingGroup\":{"
                      "\"podGroupName\":\"g\"},\"containers\":[{\"name\":\"c\"}]}}",
                      i, i);
        sched_gang_live_pod_event(w.gl, TM_WATCH_ADDED, p, 0);
        json_decref(p);
    }
    sched_gang *g = sched_gang_registry_of(sched_gang_live_registry(w.gl), "g1");
    CHECKF(g && g->kind == SCHED_GANG_NATIVE && g->declared, "gang %s", g ? g->key : "(none)");
    if (!g) {
        world_free(&w);
        return;
    }
    bf_config cfg = bf_config_default();
    tm_err err = {0};
    CHECK(bf_plugin_add(w.fw, &cfg, NULL, NULL, &err) == 0);
    char key[SCHED_GANG_KEY_MAX + 8];
    snprintf(key, sizeof key, "gang %s", g->key);
    int64_t now = 1800000000000LL;
    plan_gang_key(&w, key, now, now + 20000);
    sync_and_run(&w, 1, 3000);
    CHECK_INT(pg_patches(), 1);
    char when[32], want[96];
    bf_format_time(now + 20000, when, sizeof when);
    snprintf(want, sizeof want,
             "{\"metadata\":{\"annotations\":{\"tarema.io/expected-start\":\"%s\"}}}", when);
    pthread_mutex_lock(&fk.mu);
    CHECK_STR(fk.pg_path, "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups/g");
    CHECK_STR(fk.pg_body, want);
    pthread_mutex_unlock(&fk.mu);
    world_free(&w);
}

/* An extender's gang side (sched_gang_live_observer_new): the same registry from the same
 * informer events, so backfill plans a gang as one job, and kube-scheduler's gangs otherwise
 * left alone: no event on an invalid PodGroup or Workload, no status, no timeout (nothing to
 * requeue: it has no queue), only backfill's expected start on the PodGroup. */
static void test_observer_keeps_the_registry_and_writes_only_the_start(void) {
    world w;
    world_new(&w, "201 Created", 1);
    sched_gang_live *live = w.gl; /* kept: the world's Gang plugin reads its registry */
    tm_err err = {0};
    w.gl = sched_gang_live_observer_new(w.c, w.fw, w.k, &err);
    CHECKF(w.gl != NULL, "%s", err.msg);
    if (!w.gl) {
        w.gl = live;
        world_free(&w);
        return;
    }
    json_t *pg = J("{\"metadata\":{\"name\":\"mpi\",\"namespace\":\"hpc\"},\"spec\":{"
                   "\"minMember\":3,\"scheduleTimeoutSeconds\":1}}");
    CHECK(sched_gang_live_podgroup_event(w.gl, TM_WATCH_ADDED, pg, 0));
    json_decref(pg);
    for (int i = 1; i <= 3; i++)
        add_member(&w, i, "4");
    sched_gang_registry *r = sched_gang_live_registry(w.gl);
    sched_gang *g = sched_gang_registry_of(r, "u2");
    CHECK(g && sched_gang_active(g) && sched_gang_count(g, SCHED_GANG_POD_PENDING) == 3);
    /* invalid declarations: logged, no event (kube-scheduler reports on its gangs) */
    json_t *bad = J("{\"metadata\":{\"name\":\"bad\",\"namespace\":\"hpc\"},\"spec\":{"
                    "\"minMember\":-1}}");
    CHECK(!sched_gang_live_podgroup_event(w.gl, TM_WATCH_ADDED, bad, 0));
    json_decref(bad);
    json_t *wl = J("{\"metadata\":{\"name\":\"w\",\"namespace\":\"hpc\"},\"spec\":{}}");
    CHECK(!sched_gang_live_workload_event(w.gl, TM_WATCH_ADDED, wl));
    json_decref(wl);
    /* waiting since 0, past scheduleTimeoutSeconds (1 s) at 60 s: not timed out, no event
     * (kube-scheduler times its gangs out) */
    if (g)
        g->wait_since_ms = 1;
    sched_gang_live_check_timeouts(w.gl, 60000);
    CHECK(g && g->timeouts == 0 && g->wait_since_ms == 1);
    bf_config cfg = bf_config_default();
    CHECK(bf_plugin_add(w.fw, &cfg, NULL, NULL, &err) == 0);
    int64_t now = 1800000000000LL;
    plan_gang(&w, now, now + 30000);
    sync_and_run(&w, 1, 3000);
    for (int i = 0; i < 10; i++) /* time for a status patch or event, were one sent */
        tm_kube_run(w.k, 20, &err);
    CHECK_INT(pg_patches(), 1);
    expect_start_patch(now + 30000);
    CHECK_INT(others_seen(), 0); /* no status patch, no event */
    sched_gang_live_free(w.gl);
    w.gl = live;
    world_free(&w);
}

int main(void) {
    RUN(test_observer_keeps_the_registry_and_writes_only_the_start);
    RUN(test_expected_start_on_podgroup);
    RUN(test_expected_start_on_native_podgroup);
    RUN(test_finished_gangs_do_not_accumulate);
    RUN(test_gated_member_waits_quietly);
    RUN(test_restart_keeps_finished);
    RUN(test_late_bind_answer_keeps_running);
    RUN(test_plugin_points);
    RUN(test_first_bind_refused_undoes_the_rest);
    RUN(test_first_bind_ok_binds_the_rest);
    RUN(test_timeout_moves_the_gang_to_backoff);
    return TEST_SUMMARY();
}
