/* scheduler_usable_hint_test.c: which waiting pods a node usable again can help
 * (scheduler/live/usable_hint.h): every pod, except a preemptor whose nominated node, usable
 * itself, still holds a terminating pod of lower priority, which moves only when it fits on the
 * node outright. Its nominated node cordoned, NotReady, tainted with a taint it does not
 * tolerate, gone, or its victims gone: it moves again (it may preempt elsewhere). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/nominated.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/live/usable_hint.h"
#include "scheduler/plugins/preemption/preemption.h"

/* A 4-cpu node; ready or not, cordoned or not, with one NoSchedule taint or none. */
static void put_node(sched_snapshot *s, const char *name, bool ready, bool cordoned, bool tainted) {
    char text[512];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"unschedulable\":%s%s},"
             "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"10\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
             name, cordoned ? "true" : "false",
             tainted ? ",\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]" : "",
             ready ? "True" : "False");
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    CHECK(j != NULL);
    tm_err err = {0};
    sched_node *n = sched_node_from_json(s, j, &err);
    CHECK(n && sched_snapshot_put_node(s, n, &err) == 0);
    json_decref(j);
}

static sched_pod *pod(const char *uid, int64_t mcpu, int32_t prio) {
    sched_pod *p = sched_pod_new("ns", uid, uid);
    p->requests.v[SCHED_RES_CPU] = mcpu;
    p->requests.v[SCHED_RES_PODS] = 1;
    p->priority = prio;
    return p;
}

static bool helps(const sched_snapshot *s, const char *node, const sched_pod *p) {
    const char *names[] = {node};
    sched_usable_hint *h = sched_usable_hint_new(s, names, 1);
    CHECK(h != NULL);
    bool yes = h && sched_usable_hint_helps(h, p);
    sched_usable_hint_free(h);
    return yes;
}

static void test_usable_hint(void) {
    sched_snapshot *s = sched_snapshot_new();
    put_node(s, "n1", true, false, false); /* the preemptor's nominated node */
    put_node(s, "n2", true, false, false); /* usable again: 3 cpu taken */
    put_node(s, "n3", true, false, false); /* usable again: empty */
    sched_nominated *t = sched_nominated_new();
    sched_snapshot_set_nominated(s, t);
    tm_err err = {0};
    /* n1: a victim of priority 0, terminating; n2: 3 cpu of priority 0 */
    sched_pod *victim = pod("victim", 4000, 0), *busy = pod("busy", 3000, 0);
    CHECK(sched_pod_record(s, victim, "n1", &err) == 0);
    CHECK(sched_snapshot_set_pod_terminating(s, "victim") == 0);
    CHECK(sched_pod_record(s, busy, "n2", &err) == 0);
    sched_pod *pre = pod("pre", 2000, 100), *other = pod("other", 2000, 100);
    CHECK(sched_nominated_set_pod(t, pre, "n1", &err) == 0);
    sched_pod *zero = pod("zero", 2000, 0);
    CHECK(sched_preemption_awaits_victims(s, pre, "n1"));
    CHECK(!sched_preemption_awaits_victims(s, zero, "n1")); /* a victim of its own priority: no */
    CHECK(!sched_preemption_awaits_victims(s, pre, "n2"));  /* nothing terminating there */
    sched_pod_free(zero);
    /* n2 usable again: pre waits for its victim and does not fit on n2 (1 cpu left) */
    CHECK(!helps(s, "n2", pre));
    /* every other pod moves: it may preempt on n2 */
    CHECK(helps(s, "n2", other));
    /* pre fits on n3 outright */
    CHECK(helps(s, "n3", pre));
    /* ... unless a pod nominated there of its priority or more comes first */
    sched_pod *first = pod("first", 3000, 100), *lower = pod("lower", 3000, 50);
    CHECK(sched_nominated_set_pod(t, first, "n3", &err) == 0);
    CHECK(!helps(s, "n3", pre));
    CHECK(sched_nominated_remove(t, "first") == 0);
    CHECK(sched_nominated_set_pod(t, lower, "n3", &err) == 0); /* a lower one does not count */
    CHECK(helps(s, "n3", pre));
    CHECK(sched_nominated_remove(t, "lower") == 0);
    sched_pod_free(first);
    sched_pod_free(lower);
    /* several nodes at once: one it fits on is enough; none, and it is spared (and counted) */
    {
        const char *both[] = {"n2", "n3"}, *one[] = {"n2"};
        sched_usable_hint *h = sched_usable_hint_new(s, both, 2);
        CHECK(h && sched_usable_hint_helps(h, pre));
        CHECK_INT(sched_usable_hint_spared(h), 0);
        sched_usable_hint_free(h);
        h = sched_usable_hint_new(s, one, 1);
        CHECK(h && !sched_usable_hint_helps(h, pre) && sched_usable_hint_helps(h, other));
        CHECK_INT(sched_usable_hint_spared(h), 1);
        sched_usable_hint_free(h);
    }
    /* pre's own node usable again (after a flap of its own): it moves */
    CHECK(helps(s, "n1", pre));
    /* its nominated node NotReady, cordoned or tainted: it may preempt elsewhere, so it moves */
    bool states[][3] = {{false, false, false}, {true, true, false}, {true, false, true}};
    for (size_t i = 0; i < 3; i++) {
        put_node(s, "n1", states[i][0], states[i][1], states[i][2]);
        CHECKF(helps(s, "n2", pre), "nominated node state %zu: pre should move", i);
    }
    /* a taint it tolerates: still waiting */
    pre->tolerations = calloc(1, sizeof *pre->tolerations);
    CHECK(pre->tolerations != NULL);
    pre->tolerations[0] =
        (sched_toleration){strdup("k"), SCHED_TOL_EXISTS, strdup(""), SCHED_EFFECT_NO_SCHEDULE};
    pre->n_tolerations = 1;
    CHECK(!helps(s, "n2", pre));
    put_node(s, "n1", true, false, false);
    CHECK(!helps(s, "n2", pre));
    /* its victim gone: it moves (on the release it would anyway) */
    CHECK(sched_snapshot_remove_pod(s, "victim") == 0);
    CHECK(helps(s, "n2", pre));
    /* a preemptor placed by now (assumed) is no longer waiting */
    CHECK(sched_pod_record(s, victim, "n1", &err) == 0);
    CHECK(sched_snapshot_set_pod_terminating(s, "victim") == 0);
    CHECK(!helps(s, "n2", pre));
    CHECK(sched_pod_record(s, pre, "n3", &err) == 0);
    CHECK(helps(s, "n2", pre));
    CHECK(sched_snapshot_remove_pod(s, "pre") == 0);
    /* its nominated node gone: it moves */
    CHECK(!helps(s, "n2", pre));
    CHECK(sched_snapshot_remove_node(s, "n1") == 0);
    CHECK(helps(s, "n2", pre));
    sched_pod *ps[] = {victim, busy, pre, other};
    for (size_t i = 0; i < 4; i++)
        sched_pod_free(ps[i]);
    sched_snapshot_set_nominated(s, NULL);
    sched_nominated_free(t);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_usable_hint);
    return TEST_SUMMARY();
}
