/* End-to-end tests of tm_leader (Lease leader election, client-go defaults: 15 s lease, 10 s
 * renew deadline, 2 s retry) against the real local control plane: of two competing clients
 * exactly one leads; when the holder stops renewing (its loop is frozen, as a hung process
 * would be) the other takes over within 20 s; the frozen one stops leading as soon as it runs
 * again; a released lease is taken over at once. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib_kube_e2e.h"

typedef struct {
    const char *id;
    int started, stopped;
    char leader[64];
} cand;

static void on_started(void *ud) {
    ((cand *)ud)->started++;
}
static void on_stopped(void *ud) {
    ((cand *)ud)->stopped++;
}
static void on_new_leader(void *ud, const char *id) {
    snprintf(((cand *)ud)->leader, sizeof((cand *)ud)->leader, "%s", id);
}

static tm_kube *ka, *kb;
static cand ca = {"cand-a", 0, 0, ""}, cb = {"cand-b", 0, 0, ""};
static tm_leader *la, *lb;
static char lease_name[64];

/* Runs the loops of the clients whose flag is set, in turns, for `secs` or until pred(). */
static void run_both(bool run_a, bool run_b, double secs, bool (*pred)(void)) {
    double end = e2e_now_s() + secs;
    tm_err err = {0};
    while (e2e_now_s() < end && !(pred && pred())) {
        if (run_a)
            tm_kube_run(ka, 20, &err);
        if (run_b)
            tm_kube_run(kb, 20, &err);
    }
}

static bool someone_leads(void) {
    return tm_leader_is_leader(la) || tm_leader_is_leader(lb);
}

static tm_leader *start(tm_kube *k, cand *c) {
    tm_leader_opts o = {.ns = "default",
                        .name = lease_name,
                        .identity = c->id,
                        .on_started_leading = on_started,
                        .on_stopped_leading = on_stopped,
                        .on_new_leader = on_new_leader,
                        .ud = c};
    tm_err err = {0};
    tm_leader *l = tm_leader_start(k, &o, &err);
    if (!l)
        printf("    leader start: %s\n", err.msg);
    return l;
}

static tm_leader *holder, *waiter;
static cand *hc, *wc;

static bool waiter_leads(void) {
    return tm_leader_is_leader(waiter);
}

static void test_one_of_two_leads(void) {
    la = start(ka, &ca);
    lb = start(kb, &cb);
    CHECK(la && lb);
    run_both(true, true, 10, someone_leads);
    CHECK(tm_leader_is_leader(la) != tm_leader_is_leader(lb));
    /* Several renew periods later: still the same single leader, no flapping. */
    run_both(true, true, 5, NULL);
    CHECK(tm_leader_is_leader(la) != tm_leader_is_leader(lb));
    CHECK_INT(ca.started + cb.started, 1);
    CHECK_INT(ca.stopped + cb.stopped, 0);
    bool a = tm_leader_is_leader(la);
    holder = a ? la : lb;
    waiter = a ? lb : la;
    hc = a ? &ca : &cb;
    wc = a ? &cb : &ca;
    CHECK_STR(wc->leader, hc->id);
    CHECK_STR(hc->leader, hc->id);
}

static bool old_holder_caught_up(void) {
    return !tm_leader_is_leader(holder) && strcmp(hc->leader, wc->id) == 0;
}

static void test_takeover_when_holder_stops_renewing(void) {
    tm_kube *kh = holder == la ? ka : kb;
    tm_err err = {0};
    char *path = tm_kube_path("coordination.k8s.io/v1", "leases", "default", lease_name, NULL);
    json_t *lease = tm_kube_get(kh, path, &err);
    CHECK_STR(tm_json_str(lease, "spec.holderIdentity", NULL), hc->id);
    CHECK_INT(tm_json_int(lease, "spec.leaseDurationSeconds", 0), 15);
    long long transitions = tm_json_int(lease, "spec.leaseTransitions", -1);
    json_decref(lease);
    /* Freeze the holder: its loop no longer runs, so it neither renews nor notices. */
    double frozen = e2e_now_s();
    run_both(holder == lb, holder == la, 25, waiter_leads);
    double took = e2e_now_s() - frozen;
    CHECK(tm_leader_is_leader(waiter));
    CHECKF(took <= 20.0, "takeover took %.1f s", took);
    printf("    takeover %.1f s after the holder stopped renewing\n", took);
    lease = tm_kube_get(kh, path, &err);
    CHECK_STR(tm_json_str(lease, "spec.holderIdentity", NULL), wc->id);
    CHECK_INT(tm_json_int(lease, "spec.leaseTransitions", -1), transitions + 1);
    json_decref(lease);
    free(path);
    /* The old holder resumes: its renew deadline has passed, so it stops at once. */
    double resumed = e2e_now_s();
    run_both(true, true, 5, old_holder_caught_up);
    CHECK(!tm_leader_is_leader(holder));
    CHECK_INT(hc->stopped, 1);
    CHECK_STR(hc->leader, wc->id);
    printf("    old holder stopped leading and saw the new leader %.2f s after it resumed\n",
           e2e_now_s() - resumed);
    run_both(true, true, 5, NULL);
    CHECK(tm_leader_is_leader(waiter) && !tm_leader_is_leader(holder));
}

static bool holder_leads(void) {
    return tm_leader_is_leader(holder);
}

static void test_release_hands_over_at_once(void) {
    /* Now `waiter` leads; it releases, the old holder takes over without waiting 15 s. */
    double t0 = e2e_now_s();
    tm_leader_stop(waiter, true);
    if (waiter == la)
        la = NULL;
    else
        lb = NULL;
    run_both(holder == la, holder == lb, 10, holder_leads);
    double took = e2e_now_s() - t0;
    CHECK(tm_leader_is_leader(holder));
    CHECKF(took < 6.0, "took %.1f s", took);
    printf("    released lease taken over in %.1f s\n", took);
}

static void test_bad_options(void) {
    tm_err err = {0};
    tm_leader_opts o = {.ns = "default", .name = "x", .identity = ""};
    CHECK(tm_leader_start(ka, &o, &err) == NULL);
    CHECK(strstr(err.msg, "identity") != NULL);
    tm_leader_opts o2 = {.ns = "default", .name = "x", .identity = "i", .lease_ms = 5000};
    CHECK(tm_leader_start(ka, &o2, &err) == NULL);
    CHECK(strstr(err.msg, "renew deadline") != NULL);
}

int main(void) {
    ka = e2e_client(0, 0);
    kb = e2e_client(0, 0);
    if (!ka || !kb) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    snprintf(lease_name, sizeof lease_name, "kube-lease-e2e-%d", (int)getpid());
    RUN(test_bad_options);
    RUN(test_one_of_two_leads);
    RUN(test_takeover_when_holder_stops_renewing);
    RUN(test_release_hands_over_at_once);
    tm_leader_stop(la, false);
    tm_leader_stop(lb, false);
    tm_err err = {0};
    char *path = tm_kube_path("coordination.k8s.io/v1", "leases", "default", lease_name, NULL);
    tm_kube_delete(ka, path, &err);
    free(path);
    tm_kube_free(ka);
    tm_kube_free(kb);
    return TEST_SUMMARY();
}
