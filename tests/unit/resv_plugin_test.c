/* resv_plugin_test.c: the Reservation Filter plugin (resv_plugin.h) as explain runs it: held
 * reservations read from Reservation objects (status.nodes), a non-owner refused on the held
 * node inside the window with the plugin's reason in explain's per-node output and in the
 * FailedScheduling text, the owner's pod not refused, backfill before the window by expected
 * end, and objects that hold nothing (Pending, another scheduler's, invalid) ignored. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "scheduler/cmd/explain.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/reservation/resv_plugin.h"

#define H   (3600LL * 1000)
#define NOW 1795000000000LL

/* n1, n2: 4 cpu each, same group. */
static sched_snapshot *cluster(void) {
    sched_snapshot *s = sched_snapshot_new();
    for (int i = 1; i <= 2; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        sched_node *n = sched_node_new(name);
        n->ready = true;
        n->allocatable.v[SCHED_RES_CPU] = 4000;
        n->allocatable.v[SCHED_RES_MEMORY] = 16LL << 30;
        n->allocatable.v[SCHED_RES_PODS] = 110;
        sched_node_set_label(n, "tarema.io/group", "g1");
        tm_err err;
        sched_snapshot_put_node(s, n, &err);
    }
    return s;
}

/* A Reservation of n1 whole (4 cpu) from NOW + start_h for 2 hours, owner pods labelled
 * step=NAME, with status phase (NULL: none) and the scheduler named sched (NULL: default). */
static json_t *resv_obj(const char *name, double start_h, const char *phase, const char *sched) {
    char st[32], en[32], text[2048];
    resv_format_time(NOW + (int64_t)(start_h * H), st, sizeof st);
    resv_format_time(NOW + (int64_t)((start_h + 2) * H), en, sizeof en);
    char status[256] = "";
    if (phase)
        snprintf(status, sizeof status,
                 ",\"status\":{\"phase\":\"%s\",\"nodes\":[{\"name\":\"n1\",\"pods\":1,"
                 "\"requests\":{\"cpu\":\"4\"}}]}",
                 phase);
    char sn[128] = "";
    if (sched)
        snprintf(sn, sizeof sn, ",\"schedulerName\":\"%s\"", sched);
    snprintf(text, sizeof text,
             "{\"metadata\":{\"namespace\":\"wf\",\"name\":\"%s\"},\"spec\":{\"startTime\":\"%s\","
             "\"endTime\":\"%s\",\"count\":1,\"template\":{\"requests\":{\"cpu\":\"4\"}},"
             "\"owner\":{\"selector\":{\"matchLabels\":{\"step\":\"%s\"}}}%s}%s}",
             name, st, en, name, sn, status);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        printf("    fixture %s: %s\n", name, je.text);
    return j;
}

/* A pod of 3 cpu in wf, labelled step=step (NULL: no label), expected duration dur_s (0: none),
 * pending. */
static json_t *pod_obj(const char *name, const char *step, int dur_s) {
    json_t *p = json_pack("{s:{s:s, s:s, s:s, s:{}, s:{}}, s:{s:[{s:s, s:{s:{s:s}}}]}}", "metadata",
                          "namespace", "wf", "name", name, "uid", name, "labels", "annotations",
                          "spec", "containers", "name", "c", "resources", "requests", "cpu", "3");
    json_t *meta = json_object_get(p, "metadata");
    if (step)
        json_object_set_new(json_object_get(meta, "labels"), "step", json_string(step));
    if (dur_s) {
        char d[32];
        snprintf(d, sizeof d, "%ds", dur_s);
        json_object_set_new(json_object_get(meta, "annotations"), "tarema.io/expected-duration",
                            json_string(d));
    }
    return p;
}

typedef struct outcome {
    json_t *doc;
    size_t held;
} outcome;

static void set_cpu(json_t *pod, const char *cpu) {
    json_t *c = json_array_get(tm_json_path(pod, "spec.containers"), 0);
    json_object_set_new(json_object_get(json_object_get(c, "resources"), "requests"), "cpu",
                        json_string(cpu));
}

/* explain for pod against the given Reservation objects (a JSON array, stolen) and the bound
 * pods (stolen, may be NULL: recorded in the snapshot on their spec.nodeName too). */
static outcome explain_with(json_t *items, json_t *pod, json_t *pods) {
    outcome o = {0};
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_keys keys = sched_keys_default();
    size_t i;
    json_t *po;
    json_array_foreach(pods, i, po) {
        sched_pod *bp = sched_pod_from_json(s, po, &keys, &err);
        if (!bp || sched_pod_record(s, bp, tm_json_str(po, "spec.nodeName", ""), &err))
            printf("    bound pod %zu: %s\n", i, err.msg);
        sched_pod_free(bp);
    }
    sched_pod *sp = sched_pod_from_json(s, pod, &keys, &err);
    resv_plugin_book *b =
        fw && sp ? resv_plugin_explain(s, fw, items, "tarema", pod, pods, &keys, &err) : NULL;
    if (!b)
        printf("    setup: %s\n", err.msg);
    else {
        o.held = resv_plugin_book_count(b);
        o.doc = sched_explain(fw, s, sp, NOW, &err);
    }
    sched_framework_free(fw);
    resv_plugin_book_free(b);
    sched_pod_free(sp);
    sched_snapshot_free(s);
    json_decref(items);
    json_decref(pod);
    json_decref(pods);
    return o;
}

static outcome explain(json_t *items, json_t *pod) {
    return explain_with(items, pod, NULL);
}

/* explain's entry of node name. */
static const json_t *node_of(const json_t *doc, const char *name) {
    size_t i;
    const json_t *n;
    json_array_foreach(json_object_get(doc, "nodes"), i, n) {
        if (strcmp(json_string_value(json_object_get(n, "name")), name) == 0)
            return n;
    }
    return NULL;
}

static const char *str(const json_t *o, const char *k) {
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

static void test_non_owner_refused_inside_window(void) {
    outcome o =
        explain(json_pack("[o]", resv_obj("r1", -0.5, "Active", NULL)), pod_obj("other", NULL, 0));
    CHECK(o.held == 1);
    const json_t *n1 = node_of(o.doc, "n1"), *n2 = node_of(o.doc, "n2");
    CHECK(n1 && !json_is_true(json_object_get(n1, "feasible")));
    CHECK_STR(str(n1, "filter"), "Reservation");
    CHECK_STR(str(n1, "reason"), "node(s) were reserved for another owner's pods");
    CHECK(n2 && json_is_true(json_object_get(n2, "feasible")));
    CHECK_STR(str(o.doc, "selected"), "n2");
    json_decref(o.doc);
}

static void test_message_names_the_reservation(void) {
    /* both nodes held by two reservations: nothing fits, FailedScheduling says why */
    json_t *r2 = resv_obj("r2", -0.5, "Active", NULL);
    json_object_set_new(json_array_get(json_object_get(json_object_get(r2, "status"), "nodes"), 0),
                        "name", json_string("n2"));
    outcome o = explain(json_pack("[o, o]", resv_obj("r1", -0.5, "Admitted", NULL), r2),
                        pod_obj("other", NULL, 0));
    CHECK(o.held == 2);
    CHECK(json_is_null(json_object_get(o.doc, "selected")));
    CHECKF(strstr(str(o.doc, "message"), "2 node(s) were reserved for another owner's pods"),
           "message: %s", str(o.doc, "message"));
    json_decref(o.doc);
}

static void test_owner_not_refused(void) {
    outcome o =
        explain(json_pack("[o]", resv_obj("r1", -0.5, "Active", NULL)), pod_obj("own", "r1", 0));
    const json_t *n1 = node_of(o.doc, "n1");
    CHECK(n1 && json_is_true(json_object_get(n1, "feasible")));
    json_decref(o.doc);
}

/* Inside the window the owner's pod goes where its capacity is held: n2, which holds nothing,
 * refuses it while n1 has room for it (the Filter looks past a node without holds only for
 * pods that own nothing). */
static void test_owner_sent_to_its_hold(void) {
    outcome o =
        explain(json_pack("[o]", resv_obj("r1", -0.5, "Active", NULL)), pod_obj("own", "r1", 0));
    const json_t *n2 = node_of(o.doc, "n2");
    CHECK(n2 && !json_is_true(json_object_get(n2, "feasible")));
    CHECK_STR(str(n2, "filter"), "Reservation");
    CHECK_STR(str(n2, "reason"), "node(s) were not the ones reserved for the pod");
    CHECK_STR(str(o.doc, "selected"), "n1");
    json_decref(o.doc);
}

/* n1 holds 2 of its 4 cpu for r1 and r1's owner runs a 2-cpu pod there: the hold is in use, so
 * the other 2 cpu stay anyone's (the live controller counts owners' use the same way). */
static void test_owner_use_counts(void) {
    json_t *r = resv_obj("r1", -0.5, "Active", NULL);
    json_t *hold = json_array_get(tm_json_path(r, "status.nodes"), 0);
    json_object_set_new(json_object_get(hold, "requests"), "cpu", json_string("2"));
    json_t *own = pod_obj("own", "r1", 0);
    set_cpu(own, "2");
    json_object_set_new(json_object_get(own, "spec"), "nodeName", json_string("n1"));
    json_t *other = pod_obj("other", NULL, 0);
    set_cpu(other, "2");
    outcome o = explain_with(json_pack("[o]", r), other, json_pack("[o]", own));
    const json_t *n1 = node_of(o.doc, "n1");
    CHECKF(n1 && json_is_true(json_object_get(n1, "feasible")), "n1: %s",
           n1 ? str(n1, "reason") : "missing");
    json_decref(o.doc);
}

static void test_backfill_before_window(void) {
    /* window in 1 h: a 10-minute pod backfills, a pod of unknown end does not */
    outcome a =
        explain(json_pack("[o]", resv_obj("r1", 1, "Admitted", NULL)), pod_obj("short", NULL, 600));
    CHECK(json_is_true(json_object_get(node_of(a.doc, "n1"), "feasible")));
    outcome b =
        explain(json_pack("[o]", resv_obj("r1", 1, "Admitted", NULL)), pod_obj("unknown", NULL, 0));
    const json_t *n1 = node_of(b.doc, "n1");
    CHECK(n1 && !json_is_true(json_object_get(n1, "feasible")));
    CHECK_STR(str(n1, "reason"), "node(s) were reserved from a later time and the pod's "
                                 "expected end is unknown or after it");
    json_decref(a.doc);
    json_decref(b.doc);
}

static void test_nothing_held_is_ignored(void) {
    json_t *bad = resv_obj("bad", -0.5, "Active", NULL);
    json_object_del(json_object_get(bad, "spec"), "startTime");
    outcome o = explain(json_pack("[o, o, o]", resv_obj("pending", -0.5, NULL, NULL),
                                  resv_obj("theirs", -0.5, "Active", "default-scheduler"), bad),
                        pod_obj("other", NULL, 0));
    CHECK(o.held == 0);
    CHECK(json_is_true(json_object_get(node_of(o.doc, "n1"), "feasible")));
    json_decref(o.doc);
    /* no list at all (no CRD): explain as before */
    outcome none = explain(NULL, pod_obj("other", NULL, 0));
    CHECK(none.held == 0 && none.doc);
    json_decref(none.doc);
}

/* One decision of fw for pod (JSON) on s, reserved when it found a node: the node's name, or ""
 * when none fits. */
static const char *place(sched_framework *fw, sched_snapshot *s, const json_t *pod, bool keep,
                         char *buf, size_t size) {
    tm_err err = {0};
    sched_keys keys = sched_keys_default();
    sched_pod *sp = sched_pod_from_json(s, pod, &keys, &err);
    sched_decision d = {.node = -1};
    buf[0] = 0;
    if (!sp || sched_framework_schedule(fw, s, sp, NOW, &d, &err))
        printf("    place: %s\n", err.msg);
    else if (d.node >= 0) {
        snprintf(buf, size, "%s", d.node_name);
        if (keep && sched_framework_reserve(fw, s, sp, d.node, &err))
            printf("    reserve: %s\n", err.msg);
    }
    sched_pod_free(sp);
    return buf;
}

/* The owner's pods are placed one after another on one snapshot (a gang's cycle, or the next
 * pod's cycle before the informer has reported the first bind, which is when the controller
 * counts it): the hold on n1 (4 cpu) takes the first 3-cpu pod; for the second the hold has no
 * room left, so it falls back to normal placement (n2) instead of being sent to a hold that
 * is full (it used to be refused everywhere: a gang with more pods than held never fitted).
 * Once the first pod is gone, the hold has room again and the next owner's pod goes there. */
static void test_owner_pods_beyond_the_hold(void) {
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_keys keys = sched_keys_default();
    json_t *items = json_pack("[o]", resv_obj("r1", -0.5, "Active", NULL));
    json_t *a = pod_obj("own-a", "r1", 0), *b = pod_obj("own-b", "r1", 0);
    json_t *c = pod_obj("own-c", "r1", 0);
    resv_plugin_book *bk =
        fw ? resv_plugin_explain(s, fw, items, "tarema", a, NULL, &keys, &err) : NULL;
    CHECKF(bk, "setup: %s", err.msg);
    char n[64];
    if (bk) {
        CHECK_STR(place(fw, s, a, true, n, sizeof n), "n1");
        CHECK_STR(place(fw, s, b, true, n, sizeof n), "n2");
        /* the first pod ended (the snapshot forgets it): its hold has room again */
        sched_snapshot_remove_pod(s, "own-a");
        sched_snapshot_remove_pod(s, "own-b");
        CHECK_STR(place(fw, s, c, false, n, sizeof n), "n1");
    }
    sched_framework_free(fw);
    resv_plugin_book_free(bk);
    sched_snapshot_free(s);
    json_decref(items);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

/* The owner's pod schedulable before its reservation's window opens (created or ungated early,
 * or the reservation Active a moment later in the scheduler than in the API) does not bind
 * wherever there is room now: it waits, every node refused with the reason, and is retried
 * when the window opens. It used to go to n2 (free) or n1 at once and leave the hold unused. */
static void test_owner_waits_for_the_window(void) {
    outcome o =
        explain(json_pack("[o]", resv_obj("r1", 0.5, "Admitted", NULL)), pod_obj("own", "r1", 0));
    CHECK(json_is_null(json_object_get(o.doc, "selected")));
    const json_t *n2 = node_of(o.doc, "n2");
    CHECK_STR(str(n2, "filter"), "Reservation");
    CHECK_STR(str(n2, "reason"),
              "node(s) were not tried: the pod's Reservation window has not opened yet");
    json_decref(o.doc);
    /* a pod of nobody's is not concerned: n2 holds nothing */
    outcome other =
        explain(json_pack("[o]", resv_obj("r1", 0.5, "Admitted", NULL)), pod_obj("x", NULL, 0));
    CHECK_STR(str(other.doc, "selected"), "n2");
    json_decref(other.doc);
}

/* A source of one reservation, whatever its phase (the live controller passes Pending ones). */
static void one_each(void *ud, resv_each_fn fn, void *arg) {
    fn(arg, "wf/r1", ud);
}

/* The owner's pod of a reservation the scheduler knows but has not admitted yet waits for the
 * admission (the next tick) instead of taking capacity the admission would plan around. */
static void test_owner_waits_for_admission(void) {
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    resv_plan *plan = resv_plan_new();
    json_t *obj = resv_obj("r1", 0, NULL, NULL);
    reservation *r = reservation_from_json(s, obj, &err);
    CHECKF(r, "reservation: %s", err.msg);
    resv_plugin_source src = {.each = one_each, .ud = r};
    sched_plugin pl;
    CHECK(fw && plan && r && resv_plugin_make(plan, &src, &pl, &err) == 0 &&
          sched_framework_add_plugin(fw, &pl, &err) == 0);
    char n[64];
    json_t *own = pod_obj("own", "r1", 0), *x = pod_obj("x", NULL, 0);
    CHECK_STR(place(fw, s, own, false, n, sizeof n), "");
    char msg[512];
    sched_framework_fit_message(fw, s, msg, sizeof msg);
    CHECKF(strstr(msg, "the pod's Reservation is not admitted yet"), "message: %s", msg);
    CHECK(strcmp(place(fw, s, x, false, n, sizeof n), "") != 0);
    /* PreEnqueue keeps it out of the queue (quietly, in the live loop) for the arrival grace
     * from its creation, then lets PreFilter report the wait */
    sched_keys keys = sched_keys_default();
    sched_pod *sp = sched_pod_from_json(s, own, &keys, &err);
    char why[256] = "";
    sp->created_ms = NOW - 2000;
    CHECK(sched_framework_pre_enqueue(fw, s, sp, NOW, why, sizeof why) == SCHED_STATUS_WAIT);
    CHECK_STR(why, "Reservation: waiting for its Reservation to be admitted");
    sp->created_ms = NOW - RESV_ARRIVAL_GRACE_MS;
    CHECK(sched_framework_pre_enqueue(fw, s, sp, NOW, why, sizeof why) == SCHED_STATUS_OK);
    sched_pod_free(sp);
    /* failed (not admissible): the pods go on without it */
    r->phase = RESV_FAILED;
    CHECK(strcmp(place(fw, s, own, false, n, sizeof n), "") != 0);
    sched_framework_free(fw);
    resv_plan_free(plan);
    reservation_free(r);
    json_decref(obj);
    json_decref(own);
    json_decref(x);
    sched_snapshot_free(s);
}

/* explain's note on the owner's rule: which case applies to the explained pod. */
static void test_owner_note(void) {
    tm_err err = {0};
    sched_keys keys = sched_keys_default();
    const char *cases[][2] = {{"-0.5", "its hold on n1 has room for the pod"},
                              {"0.5", "the pod waits for the window"}};
    for (int c = 0; c < 2; c++) {
        sched_snapshot *s = cluster();
        sched_framework *fw = sched_policy_new("tarema", &err);
        json_t *items = json_pack("[o]", resv_obj("r1", atof(cases[c][0]), "Admitted", NULL));
        json_t *own = pod_obj("own", "r1", 0), *x = pod_obj("x", NULL, 0);
        /* a bound owner's pod of 2 cpu fills the 4-cpu hold for a second one of 3 */
        json_t *bound = pod_obj("own-0", "r1", 0);
        json_object_set_new(json_object_get(bound, "spec"), "nodeName", json_string("n1"));
        json_t *pods = c == 0 ? json_pack("[]") : json_pack("[O]", bound);
        resv_plugin_book *b = resv_plugin_explain(s, fw, items, "tarema", own, pods, &keys, &err);
        sched_pod *sp = sched_pod_from_json(s, own, &keys, &err);
        char note[512] = "";
        CHECK(b && sp && resv_plugin_book_owner_note(b, &sp->requests, NOW, note, sizeof note));
        CHECKF(strstr(note, cases[c][1]) && strstr(note, "wf/r1"), "note: %s", note);
        resv_plugin_book_free(b);
        /* the same hold used up by a bound owner's pod: the pod is placed like any */
        if (c == 0) {
            json_t *used = json_pack("[O]", bound);
            sched_framework_free(fw);
            fw = sched_policy_new("tarema", &err);
            b = resv_plugin_explain(s, fw, items, "tarema", own, used, &keys, &err);
            CHECK(b && resv_plugin_book_owner_note(b, &sp->requests, NOW, note, sizeof note));
            CHECKF(strstr(note, "no room left for the pod: placed like any pod"), "note: %s", note);
            resv_plugin_book_free(b);
            json_decref(used);
        }
        sched_framework_free(fw);
        fw = sched_policy_new("tarema", &err); /* one Reservation plugin per framework */
        b = resv_plugin_explain(s, fw, items, "tarema", x, NULL, &keys, &err);
        CHECK(b && !resv_plugin_book_owner_note(b, &sp->requests, NOW, note, sizeof note));
        resv_plugin_book_free(b);
        sched_pod_free(sp);
        sched_framework_free(fw);
        sched_snapshot_free(s);
        json_decref(items);
        json_decref(own);
        json_decref(x);
        json_decref(bound);
        json_decref(pods);
    }
}

/* The spec's window moved earlier after the admission (the planner patches startTime when its
 * plan moves): the holds keep the admitted window, so the owner's pod waits for that one. It
 * used to follow the spec: the window counted as open, the pod was refused on its own hold as
 * "no backfill" (the holds' window not open) and bound on the free node. */
static void test_owner_waits_for_the_admitted_window(void) {
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    resv_plan *plan = resv_plan_new();
    json_t *obj = resv_obj("r1", -0.5, "Admitted", NULL); /* the spec now: open */
    reservation *r = reservation_from_json(s, obj, &err);
    CHECKF(r, "reservation: %s", err.msg);
    /* admitted for [NOW + 1 h, NOW + 3 h) */
    CHECK(plan && r &&
          resv_plan_put(plan, "wf/r1", NOW + H, NOW + 3 * H, r->holds, r->n_holds, &err) == 0);
    resv_plugin_source src = {.each = one_each, .ud = r};
    sched_plugin pl;
    CHECK(fw && resv_plugin_make(plan, &src, &pl, &err) == 0 &&
          sched_framework_add_plugin(fw, &pl, &err) == 0);
    char n[64], msg[512];
    json_t *own = pod_obj("own", "r1", 0);
    CHECK_STR(place(fw, s, own, false, n, sizeof n), "");
    sched_framework_fit_message(fw, s, msg, sizeof msg);
    CHECKF(strstr(msg, "window has not opened yet"), "message: %s", msg);
    sched_framework_free(fw);
    resv_plan_free(plan);
    reservation_free(r);
    json_decref(obj);
    json_decref(own);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_non_owner_refused_inside_window);
    RUN(test_message_names_the_reservation);
    RUN(test_owner_not_refused);
    RUN(test_owner_sent_to_its_hold);
    RUN(test_owner_use_counts);
    RUN(test_owner_pods_beyond_the_hold);
    RUN(test_owner_waits_for_the_window);
    RUN(test_owner_waits_for_admission);
    RUN(test_owner_note);
    RUN(test_owner_waits_for_the_admitted_window);
    RUN(test_backfill_before_window);
    RUN(test_nothing_held_is_ignored);
    return TEST_SUMMARY();
}
