/* gang_preempt_test.c: a gang preempting as one unit (plugins/gang/gang_preempt.h), cases
 * worked out by hand. Nodes of 4 cpu (scheduler_filter_helpers.h); pods of gangs carry
 * scheduler-plugins' pod-group label, which the tests' unit_of reads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/nominated.h"
#include "scheduler/plugins/gang/gang_preempt.h"
#include "scheduler_filter_helpers.h"

#define PG "scheduling.x-k8s.io/pod-group"

/* A pod's JSON: name (uid name-uid) in ns, of gang `gang` ("" none), cpu millicores, priority,
 * started start_s seconds after midnight (0: not started), extra spec fields. Static buffer. */
static char *podj(const char *name, const char *gang, int cpu_m, long long prio, int start_s,
                  const char *spec) {
    static char buf[4096];
    char status[128] = "", labels[256] = "";
    if (start_s > 0)
        snprintf(status, sizeof status, ",'status':{'startTime':'2026-01-01T%02d:%02d:%02dZ'}",
                 start_s / 3600, start_s / 60 % 60, start_s % 60);
    if (gang[0])
        snprintf(labels, sizeof labels, "'%s':'%s'", PG, gang);
    snprintf(buf, sizeof buf,
             "{'metadata':{'name':'%s','namespace':'ns','uid':'%s-uid','labels':{%s}},"
             "'spec':{'priority':%lld,'containers':[{'name':'c','resources':{'requests':"
             "{'cpu':'%dm'}}}]%s}%s}",
             name, name, labels, prio, cpu_m, spec, status);
    return buf;
}

/* unit_of for the tests: the pod's pod-group label. */
static const char *label_unit(void *ctx, const char *uid) {
    const sched_pod_meta *m = sched_snapshot_pod_meta(ctx, uid);
    return m && m->labels ? sched_labels_get(m->labels, PG) : NULL;
}

/* The waiting gang "hi": n members of cpu_m millicores at priority prio, minMember n. */
typedef struct hgang {
    sched_gang_registry *r;
    sched_gang *g;
    sched_pod *p[16];
    int nodes[16];
    size_t n;
} hgang;

static void mk_hi(hgang *h, sched_snapshot *s, size_t n, int cpu_m, long long prio,
                  const char *spec) {
    memset(h, 0, sizeof *h);
    h->r = sched_gang_registry_new();
    h->n = n;
    char pgj[256];
    snprintf(pgj, sizeof pgj,
             "{\"metadata\":{\"name\":\"hi\",\"namespace\":\"ns\"},\"spec\":{\"minMember\":%zu}}",
             n);
    json_error_t je;
    json_t *j = json_loads(pgj, 0, &je);
    sched_gang_spec gs;
    tm_err err = {0};
    CHECK_INT(sched_podgroup_from_json(j, &gs, &err), 0);
    json_decref(j);
    h->g = sched_gang_registry_podgroup(h->r, "ns", "hi", &gs, NULL, 0);
    sched_gang_ref ref = {
        .kind = SCHED_GANG_PODGROUP, .ns = "ns", .owner = "hi", .group = "", .replica = ""};
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "hi-%zu", i);
        h->p[i] = incoming(s, podj(name, "hi", cpu_m, prio, 0, spec), &err);
        CHECKF(h->p[i] != NULL, "%s", err.msg);
        if (h->p[i])
            sched_gang_registry_set_member(h->r, &ref, h->p[i]->uid, name, SCHED_GANG_POD_PENDING,
                                           0);
    }
}

static void free_hi(hgang *h) {
    for (size_t i = 0; i < h->n; i++)
        sched_pod_free(h->p[i]);
    sched_gang_registry_free(h->r);
}

/* "a,b,c" of the victims' names in order. Static buffer. */
static const char *names(const sched_gang_preemption *r) {
    static char buf[1024];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n_victims; i++)
        len +=
            (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? "," : "", r->victims[i].name);
    return buf;
}

/* cpu requested per node, "n1=4000 n2=..." (to prove the snapshot restored). */
static const char *usage(const sched_snapshot *s) {
    static char buf[256];
    size_t len = 0;
    for (size_t i = 0; i < sched_snapshot_node_count(s); i++) {
        const sched_node *n = sched_snapshot_node(s, i);
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s=%lld ", n->name,
                                (long long)n->requested.v[SCHED_RES_CPU]);
    }
    return buf;
}

static sched_framework *fw_new(void) {
    tm_err err = {0};
    return sched_policy_new("fair", &err);
}

/* Three full nodes: gang lo (priority 0, started first) has a 2-cpu member on each; single pods
 * s1 (0, started later) on n1, s2 (500) on n2; mid (2000) on n3, above the gang: never a
 * victim. Gang hi (1000) needs 3 x 2 cpu. All out: 4+4+2 free, it fits. Reprieve, most
 * important first: s2 back (4+2+2: fits), then lo (started before s1) back: 2+0+0, no; then
 * s1 back: 2+2+2, fits. The victims: all three of lo (its member on n3 too: a gang goes whole),
 * nothing else. */
static void test_whole_gangs_no_more(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    add_node(s, "n3", NULL);
    place(s, "n1", podj("lo-0", "lo", 2000, 0, 10, ""));
    place(s, "n2", podj("lo-1", "lo", 2000, 0, 10, ""));
    place(s, "n3", podj("lo-2", "lo", 2000, 0, 10, ""));
    place(s, "n1", podj("s1", "", 2000, 0, 20, ""));
    place(s, "n2", podj("s2", "", 2000, 500, 20, ""));
    place(s, "n3", podj("mid", "", 2000, 2000, 20, ""));
    char before[256];
    snprintf(before, sizeof before, "%s", usage(s));
    sched_framework *fw = fw_new();
    hgang h;
    mk_hi(&h, s, 3, 2000, 1000, "");
    sched_gang_preemption r = {.nodes = h.nodes};
    tm_err err = {0};
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, label_unit, s, &r, &err), 0);
    CHECKF(r.ok, "%s", r.message);
    CHECK_STR(names(&r), "lo-0,lo-1,lo-2");
    CHECK_INT(r.n_units, 1);
    CHECK_INT(r.n_gangs, 1);
    CHECKF(strstr(r.message, "evicting 3 pod(s) (1 gang(s) whole, 0 single pod(s)) of priority < "
                             "1000") != NULL,
           "%s", r.message);
    CHECK(r.n_victims == 3 && strstr(r.victims[0].why, "all of gang lo"));
    /* where the members go: one per node (2 cpu free on each once lo is gone) */
    int seen[3] = {0};
    for (size_t i = 0; i < h.n; i++)
        if (h.nodes[i] >= 0 && h.nodes[i] < 3)
            seen[h.nodes[i]]++;
    CHECK(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
    CHECK_STR(usage(s), before); /* restored */
    sched_gang_preemption_clear(&r);
    free_hi(&h);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* A gang with one member above the preemptor's priority is no victim at all, not even its
 * low-priority members: lo2 has a 2000 member on n1 and a 0 member on n2; single s (0) on n2.
 * hi needs 2 x 4 cpu: only by evicting lo2's members could it fit; it may not: no fit. */
static void test_protected_gang(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    place(s, "n1", podj("g-0", "g", 2000, 2000, 10, ""));
    place(s, "n2", podj("g-1", "g", 2000, 0, 10, ""));
    place(s, "n2", podj("s", "", 2000, 0, 10, ""));
    sched_framework *fw = fw_new();
    hgang h;
    mk_hi(&h, s, 2, 4000, 1000, "");
    sched_gang_preemption r = {.nodes = h.nodes};
    tm_err err = {0};
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, label_unit, s, &r, &err), 0);
    CHECK(!r.ok);
    CHECK_INT(r.n_victims, 0);
    CHECKF(strstr(r.message, "would not fit even with all") != NULL, "%s", r.message);
    /* the same with every pod its own unit (no unit_of): g-1 and s go, hi fits on n2 only
     * (n1 keeps g-0's 2 cpu): still no room for two 4-cpu members */
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, NULL, NULL, &r, &err), 0);
    CHECK(!r.ok);
    free_hi(&h);
    /* a gang of one 4-cpu member fits on n2 once g-1 and s are gone, without unit_of */
    mk_hi(&h, s, 1, 4000, 1000, "");
    r = (sched_gang_preemption){.nodes = h.nodes};
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, NULL, NULL, &r, &err), 0);
    CHECKF(r.ok, "%s", r.message);
    CHECK_STR(names(&r), "g-1,s");
    /* with unit_of, g-1 belongs to a protected gang: only s could go, not enough */
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, label_unit, s, &r, &err), 0);
    CHECK(!r.ok);
    sched_gang_preemption_clear(&r);
    free_hi(&h);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Nothing is evicted when the gang would not fit even on empty nodes, and the snapshot is the
 * same after. */
static void test_no_fit_evicts_nothing(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    place(s, "n1", podj("a", "", 3000, 0, 10, ""));
    place(s, "n2", podj("b", "", 3000, 0, 10, ""));
    char before[256];
    snprintf(before, sizeof before, "%s", usage(s));
    sched_framework *fw = fw_new();
    hgang h;
    mk_hi(&h, s, 3, 4000, 1000, ""); /* 3 x 4 cpu on 2 nodes of 4 */
    sched_gang_preemption r = {.nodes = h.nodes};
    tm_err err = {0};
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, label_unit, s, &r, &err), 0);
    CHECK(!r.ok);
    CHECK_INT(r.n_victims, 0);
    CHECK_STR(usage(s), before);
    sched_gang_preemption_clear(&r);
    free_hi(&h);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Equal priority is never a victim; preemptionPolicy Never on a member: not eligible. */
static void test_not_eligible(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    place(s, "n1", podj("eq", "", 4000, 1000, 10, ""));
    sched_framework *fw = fw_new();
    hgang h;
    mk_hi(&h, s, 1, 2000, 1000, "");
    sched_gang_preemption r = {.nodes = h.nodes};
    tm_err err = {0};
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, label_unit, s, &r, &err), 0);
    CHECK(!r.ok);
    CHECKF(strstr(r.message, "no pod of priority < 1000") != NULL, "%s", r.message);
    free_hi(&h);
    sched_snapshot_remove_pod(s, "eq-uid");
    place(s, "n1", podj("lo", "", 4000, 0, 10, ""));
    mk_hi(&h, s, 1, 2000, 1000, ",'preemptionPolicy':'Never'");
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, label_unit, s, &r, &err), 0);
    CHECK(!r.ok);
    CHECKF(strstr(r.message, "preemptionPolicy=Never") != NULL, "%s", r.message);
    free_hi(&h);
    sched_gang_preemption_clear(&r);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* An earlier preemption still under way (a victim terminating on a member's nominated node):
 * the gang waits for it rather than evicting more. Terminating pods are never victims again. */
static void test_no_double_eviction(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    place(s, "n1", podj("v", "", 4000, 0, 10, ""));
    place(s, "n2", podj("w", "", 4000, 0, 10, ""));
    sched_nominated *t = sched_nominated_new();
    sched_snapshot_set_nominated(s, t);
    sched_framework *fw = fw_new();
    hgang h;
    mk_hi(&h, s, 1, 4000, 1000, "");
    tm_err err = {0};
    CHECK_INT(sched_snapshot_set_pod_terminating(s, "v-uid"), 0);
    CHECK_INT(sched_nominated_set_pod(t, h.p[0], "n1", &err), 0);
    sched_gang_preemption r = {.nodes = h.nodes};
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, label_unit, s, &r, &err), 0);
    CHECK(!r.ok);
    CHECKF(strstr(r.message, "still under way") != NULL, "%s", r.message);
    /* no nomination: v (terminating) is taken out but is no victim; w is not needed */
    sched_nominated_remove(t, h.p[0]->uid);
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, label_unit, s, &r, &err), 0);
    CHECKF(r.ok, "%s", r.message);
    CHECK_INT(r.n_victims, 0);
    CHECK_INT(h.nodes[0], 0);
    sched_gang_preemption_clear(&r);
    free_hi(&h);
    sched_framework_free(fw);
    sched_snapshot_set_nominated(s, NULL);
    sched_nominated_free(t);
    sched_snapshot_free(s);
}

/* Many units: 100 small pods (50m, priority 0, started early: more important) over n2 and n3,
 * one big pod (4 cpu, priority 0, started last) on n1. A gang of one 4-cpu pod needs a whole
 * node: the big pod is the only victim, every small one is reprieved (the runs of units put
 * back together must end with the same victims as one at a time). */
static void test_many_units_same_victims(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    add_node(s, "n3", NULL);
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof name, "small-%03d", i);
        place(s, i % 2 ? "n2" : "n3", podj(name, "", 50, 0, 10 + i, ""));
    }
    place(s, "n1", podj("big", "", 4000, 0, 3000, ""));
    sched_framework *fw = fw_new();
    hgang h;
    mk_hi(&h, s, 1, 4000, 1000, "");
    sched_gang_preemption r = {.nodes = h.nodes};
    tm_err err = {0};
    CHECK_INT(sched_gang_preempt(fw, s, h.g, h.p, h.n, 0, label_unit, s, &r, &err), 0);
    CHECKF(r.ok, "%s", r.message);
    CHECK_STR(names(&r), "big");
    CHECK_INT(h.nodes[0], 0); /* n1 */
    sched_gang_preemption_clear(&r);
    free_hi(&h);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

int main(void) {
    (void)feasible; /* shared helpers this test does not need */
    (void)podtext;
    RUN(test_whole_gangs_no_more);
    RUN(test_protected_gang);
    RUN(test_no_fit_evicts_nothing);
    RUN(test_not_eligible);
    RUN(test_no_double_eviction);
    RUN(test_many_units_same_victims);
    return TEST_SUMMARY();
}
