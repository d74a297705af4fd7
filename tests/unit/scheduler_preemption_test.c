/* scheduler_preemption_test.c: DefaultPreemption (plugins/preemption/preemption.h), cases
 * worked out by hand from kube-scheduler's rules: only lower-priority pods are victims, the
 * least important of them; preemptionPolicy Never; a PodDisruptionBudget steers the victims;
 * each level of the node choice decides on its own (the winner is always the node later in
 * name order, so that a level skipped falls through to the name and picks the other); victims
 * needed for anti-affinity and for topology spread (the PreFilter state recomputed without
 * them); a node where removing every lower-priority pod is not enough is no candidate; the
 * nominated pods counted in Filter for pods of lower or equal priority only; terminating
 * victims not chosen again, and a preemptor waiting for them does not preempt again; the
 * snapshot restored exactly; the dry run bounded; with units set (a gang's key per pod), a
 * running gang is a victim whole or not at all. Nodes have 4 cpu. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/nominated.h"
#include "scheduler/backend/pdb.h"
#include "scheduler/plugins/preemption/preemption.h"
#include "scheduler_filter_helpers.h"

#define HOST "kubernetes.io/hostname"

/* A pod's JSON text: name (uid name-uid) in namespace ns, labels, cpu in millicores, priority,
 * status.startTime at start_s seconds after 2026-01-01T00:00:00Z (0: not started), extra spec
 * fields. Static buffer. */
static char *podj(const char *name, const char *labels, int cpu_m, long long prio, int start_s,
                  const char *spec) {
    static char buf[4096];
    char status[128] = "";
    if (start_s > 0)
        snprintf(status, sizeof status, ",'status':{'startTime':'2026-01-01T%02d:%02d:%02dZ'}",
                 start_s / 3600, start_s / 60 % 60, start_s % 60);
    snprintf(buf, sizeof buf,
             "{'metadata':{'name':'%s','namespace':'ns','uid':'%s-uid','labels':{%s}},"
             "'spec':{'priority':%lld,'containers':[{'name':'c','resources':{'requests':"
             "{'cpu':'%dm'}}}]%s}%s}",
             name, name, labels, prio, cpu_m, spec, status);
    return buf;
}

static sched_framework *new_fw(void) {
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    if (fw && sched_preemption_plugin_add(fw, &err) != 0) {
        printf("    %s\n", err.msg);
        sched_framework_free(fw);
        return NULL;
    }
    return fw;
}

/* Schedules p (expected to fit nowhere), then PostFilter; the result (NULL on error). */
static const sched_preemption_result *preempt(sched_framework *fw, sched_snapshot *s,
                                              const sched_pod *p) {
    sched_decision d;
    tm_err err = {0};
    if (!p || sched_framework_schedule(fw, s, p, 0, &d, &err) != 0) {
        printf("    schedule: %s\n", err.msg);
        return NULL;
    }
    if (d.node >= 0) {
        printf("    the pod fits on %s: nothing to preempt\n", d.node_name);
        return NULL;
    }
    int nom = -2;
    sched_status st = sched_framework_post_filter(fw, &nom, &err);
    const sched_preemption_result *r = sched_preemption_last(fw);
    if (st == SCHED_STATUS_ERROR || !r) {
        printf("    post_filter: %s\n", err.msg);
        return NULL;
    }
    if (st != r->status || nom != r->node)
        printf("    post_filter answered %d/%d, the result says %d/%d\n", st, nom, r->status,
               r->node);
    return r;
}

/* "node: ns/a,ns/b" of the chosen node and its victims, or the message when none. */
static const char *outcome(const sched_preemption_result *r) {
    static char buf[1024];
    if (!r)
        return "(error)";
    if (r->status != SCHED_STATUS_OK)
        return r->msg;
    size_t len = (size_t)snprintf(buf, sizeof buf, "%s:", r->node_name);
    for (size_t i = 0; i < r->n_victims; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? "," : " ",
                                r->victims[i].name);
    return buf;
}

/* The dry-run entry of a node, NULL when absent. */
static const sched_preempt_candidate *entry(const sched_preemption_result *r, const char *node) {
    for (size_t i = 0; r && i < r->n_nodes; i++)
        if (strcmp(r->nodes[i].node_name, node) == 0)
            return &r->nodes[i];
    return NULL;
}

static sched_pod *pod(sched_snapshot *s, const char *text) {
    tm_err err = {0};
    sched_pod *p = incoming(s, text, &err);
    if (!p)
        printf("    pod: %s\n", err.msg);
    return p;
}

/* The lowest priority goes, and of two equal ones the later started: n1 holds mid (500, 2
 * cpu), lo1 (0, 1 cpu, started first) and lo2 (0, 1 cpu); the preemptor (1000) wants 1 cpu.
 * Reprieve in importance order: mid back (2 free), lo1 back (1 free), lo2 would leave 0. */
static void test_lowest_priority_only(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    place(s, "n1", podj("mid", "", 2000, 500, 10, ""));
    place(s, "n1", podj("lo1", "", 1000, 0, 20, ""));
    place(s, "n1", podj("lo2", "", 1000, 0, 30, ""));
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 1000, 1000, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "n1: lo2");
    CHECK(r && r->n_victims == 1 && r->victims[0].priority == 0 &&
          strcmp(r->victims[0].uid, "lo2-uid") == 0 && strcmp(r->victims[0].node, "n1") == 0 &&
          !r->victims[0].pdb_violation && strstr(r->victims[0].why, "priority 0 < 1000"));
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* preemptionPolicy: Never: the same cluster, nothing evicted. */
static void test_policy_never(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    place(s, "n1", podj("lo", "", 4000, 0, 10, ""));
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 1000, 1000, 0, ",'preemptionPolicy':'Never'"));
    CHECK(p && p->preempt_never);
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK(r && r->status == SCHED_STATUS_UNSCHEDULABLE && r->n_victims == 0 && r->node == -1);
    CHECK_STR(outcome(r), "preemption: not eligible due to preemptionPolicy=Never.");
    sched_pod_free(p);
    /* the explicit default preempts */
    p = pod(s, podj("hi", "", 1000, 1000, 0, ",'preemptionPolicy':'PreemptLowerPriority'"));
    CHECK_STR(outcome(preempt(fw, s, p)), "n1: lo");
    sched_pod_free(p);
    /* a policy the API does not know is an error naming the field */
    tm_err err = {0};
    CHECK(!incoming(s, podj("bad", "", 1, 1, 0, ",'preemptionPolicy':'Sometimes'"), &err));
    CHECK(strstr(err.msg, "spec.preemptionPolicy") && strstr(err.msg, "Sometimes"));
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Pods of equal or higher priority are never victims: a node full of them is no candidate. */
static void test_no_equal_or_higher_victims(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    place(s, "n1", podj("eq", "", 2000, 1000, 10, ""));
    place(s, "n1", podj("higher", "", 2000, 5000, 10, ""));
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 1000, 1000, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK(r && r->status == SCHED_STATUS_UNSCHEDULABLE && r->n_all_victims == 0);
    CHECK(r && strstr(r->msg, "1 No preemption victims found for incoming pod"));
    const sched_preempt_candidate *e = entry(r, "n1");
    CHECK(e && e->outcome == SCHED_PREEMPT_NODE_NO_VICTIMS);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* A node where removing every lower-priority pod still leaves too little is no candidate: n1
 * keeps 3 cpu of a higher-priority pod whatever goes; n2's two pods of priority 100 must go,
 * though n1's victim would have had the lower priority (0). */
static void test_no_fit_even_empty(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    place(s, "n1", podj("keep", "", 3000, 2000, 10, ""));
    place(s, "n1", podj("zero", "", 1000, 0, 10, ""));
    place(s, "n2", podj("a", "", 2000, 100, 10, ""));
    place(s, "n2", podj("b", "", 2000, 100, 20, ""));
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 3000, 1000, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "n2: a,b");
    const sched_preempt_candidate *e = entry(r, "n1");
    CHECK(e && e->outcome == SCHED_PREEMPT_NODE_NO_FIT);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* A PDB steers the victims: a (started first, so more important) and b fill n1 with 2 cpu
 * each; one must go. Without budgets a is reprieved first and b goes; with a budget that
 * allows no disruption of b, b is reprieved first (PDB-violating ones go back first) and a
 * goes. A budget in another namespace, an empty selector, or one that still allows a
 * disruption changes nothing. */
static void test_pdb_steers_victims(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    place(s, "n1", podj("a", "'app':'a'", 2000, 0, 10, ""));
    place(s, "n1", podj("b", "'app':'b'", 2000, 0, 20, ""));
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 2000, 1000, 0, ""));
    CHECK_STR(outcome(preempt(fw, s, p)), "n1: b");
    sched_pdbs *pdbs = sched_pdbs_new();
    sched_snapshot_set_pdbs(s, pdbs);
    tm_err err = {0};
    json_t *j = J("{'metadata':{'name':'other-ns','namespace':'elsewhere'},'spec':{'selector':"
                  "{'matchLabels':{'app':'b'}}},'status':{'disruptionsAllowed':0}}");
    CHECK(sched_pdbs_put_json(pdbs, j, &err) == 0);
    json_decref(j);
    j = J("{'metadata':{'name':'empty','namespace':'ns'},'spec':{'selector':{}},"
          "'status':{'disruptionsAllowed':0}}");
    CHECK(sched_pdbs_put_json(pdbs, j, &err) == 0);
    json_decref(j);
    j = J("{'metadata':{'name':'pdb-b','namespace':'ns'},'spec':{'selector':{'matchLabels':"
          "{'app':'b'}}},'status':{'disruptionsAllowed':1}}");
    CHECK(sched_pdbs_put_json(pdbs, j, &err) == 0);
    json_decref(j);
    CHECK_STR(outcome(preempt(fw, s, p)), "n1: b"); /* one disruption allowed: no violation */
    CHECK(sched_pdbs_put(pdbs, "ns", "pdb-b", tm_selector_parse("app=b", &err), 0, NULL, 0, &err) ==
          0);
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "n1: a");
    CHECK(r && r->n_victims == 1 && !r->victims[0].pdb_violation);
    /* b listed among the budget's disrupted pods: already counted, b is no longer protected */
    const char *disrupted[] = {"b"};
    CHECK(sched_pdbs_put(pdbs, "ns", "pdb-b", tm_selector_parse("app=b", &err), 0, disrupted, 1,
                         &err) == 0);
    CHECK_STR(outcome(preempt(fw, s, p)), "n1: b");
    /* a malformed budget is an error naming it */
    j = J("{'metadata':{'name':'bad','namespace':'ns'},'spec':{'selector':{}},"
          "'status':{'disruptionsAllowed':'many'}}");
    CHECK(sched_pdbs_put_json(pdbs, j, &err) != 0 && strstr(err.msg, "ns/bad") &&
          strstr(err.msg, "disruptionsAllowed"));
    json_decref(j);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_set_pdbs(s, NULL);
    sched_pdbs_free(pdbs);
    sched_snapshot_free(s);
}

/* ---- the node choice, one level at a time: n-b must win at that level, n-a by name ---- */

/* Two nodes; the preemptor wants 2 cpu at priority 1000; "fill" pods (priority 5000) keep the
 * rest of each node. */
static void two_nodes(sched_snapshot *s, int fill_a, int fill_b) {
    add_node(s, "n-a", NULL);
    add_node(s, "n-b", NULL);
    if (fill_a)
        place(s, "n-a", podj("fill-a", "", fill_a, 5000, 1, ""));
    if (fill_b)
        place(s, "n-b", podj("fill-b", "", fill_b, 5000, 1, ""));
}

static void check_choice(sched_snapshot *s, const char *want, sched_preempt_level level) {
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 2000, 1000, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), want);
    const sched_preempt_candidate *a = entry(r, "n-a"), *b = entry(r, "n-b");
    bool b_won = strncmp(want, "n-b", 3) == 0;
    const sched_preempt_candidate *loser = b_won ? a : b;
    CHECK(a && b && (b_won ? b : a)->outcome == SCHED_PREEMPT_NODE_CHOSEN);
    CHECKF(loser && loser->outcome == SCHED_PREEMPT_NODE_CANDIDATE && loser->lost_at == level,
           "lost at %d, expected %d", loser ? (int)loser->lost_at : -1, (int)level);
    sched_pod_free(p);
    sched_framework_free(fw);
}

/* 1. Fewest PDB violations: n-a's victim (priority 0) is protected by a budget, n-b's
 * (priority 100) not; n-a would win the next level. */
static void test_choice_pdb(void) {
    sched_snapshot *s = sched_snapshot_new();
    two_nodes(s, 2000, 2000);
    place(s, "n-a", podj("va", "'app':'guarded'", 2000, 0, 10, ""));
    place(s, "n-b", podj("vb", "", 2000, 100, 10, ""));
    sched_pdbs *pdbs = sched_pdbs_new();
    tm_err err = {0};
    sched_pdbs_put(pdbs, "ns", "guard", tm_selector_parse("app=guarded", &err), 0, NULL, 0, &err);
    sched_snapshot_set_pdbs(s, pdbs);
    check_choice(s, "n-b: vb", SCHED_PREEMPT_BY_PDB);
    sched_snapshot_set_pdbs(s, NULL);
    sched_pdbs_free(pdbs);
    sched_snapshot_free(s);
}

/* 2. The lowest highest-priority victim: n-a evicts one pod of 200, n-b two of 100 (a larger
 * sum and more victims: n-a would win the next levels). */
static void test_choice_highest(void) {
    sched_snapshot *s = sched_snapshot_new();
    two_nodes(s, 2000, 2000);
    place(s, "n-a", podj("v200", "", 2000, 200, 10, ""));
    place(s, "n-b", podj("v100a", "", 1000, 100, 10, ""));
    place(s, "n-b", podj("v100b", "", 1000, 100, 10, ""));
    check_choice(s, "n-b: v100a,v100b", SCHED_PREEMPT_BY_HIGHEST);
    sched_snapshot_free(s);
}

/* 3. The smallest sum: both evict two pods with highest 100; n-b's other one has 50. */
static void test_choice_sum(void) {
    sched_snapshot *s = sched_snapshot_new();
    two_nodes(s, 2000, 2000);
    place(s, "n-a", podj("a1", "", 1000, 100, 10, ""));
    place(s, "n-a", podj("a2", "", 1000, 100, 10, ""));
    place(s, "n-b", podj("b1", "", 1000, 100, 10, ""));
    place(s, "n-b", podj("b2", "", 1000, 50, 10, ""));
    check_choice(s, "n-b: b1,b2", SCHED_PREEMPT_BY_SUM);
    sched_snapshot_free(s);
}

/* 4. The fewest victims. With kube's offset (2^31 per victim) the sums tie only when the extra
 * victim has the lowest priority there is: n-a evicts {0, INT32_MIN}, n-b {0}; both sums are
 * 2^31, both highest 0. */
static void test_choice_count(void) {
    sched_snapshot *s = sched_snapshot_new();
    two_nodes(s, 2000, 2000);
    place(s, "n-a", podj("a0", "", 1000, 0, 10, ""));
    place(s, "n-a", podj("amin", "", 1000, INT32_MIN, 10, ""));
    place(s, "n-b", podj("b0", "", 2000, 0, 10, ""));
    check_choice(s, "n-b: b0", SCHED_PREEMPT_BY_COUNT);
    sched_snapshot_free(s);
}

/* 5. The latest start among the highest-priority victims: one victim of 100 each, n-b's
 * started later. */
static void test_choice_start(void) {
    sched_snapshot *s = sched_snapshot_new();
    two_nodes(s, 2000, 2000);
    place(s, "n-a", podj("early", "", 2000, 100, 100, ""));
    place(s, "n-b", podj("late", "", 2000, 100, 200, ""));
    check_choice(s, "n-b: late", SCHED_PREEMPT_BY_START);
    sched_snapshot_free(s);
}

/* 6. All equal: the first in name order. */
static void test_choice_name(void) {
    sched_snapshot *s = sched_snapshot_new();
    two_nodes(s, 2000, 2000);
    place(s, "n-b", podj("vb", "", 2000, 100, 100, ""));
    place(s, "n-a", podj("va", "", 2000, 100, 100, ""));
    check_choice(s, "n-a: va", SCHED_PREEMPT_BY_NAME);
    sched_snapshot_free(s);
}

/* Victims needed for anti-affinity: n1 has cpu to spare but holds x (app=x, priority 0), which
 * the preemptor's required anti-affinity (hostname) refuses; y (priority 0, no label) is in
 * nobody's way and stays. */
static void test_victims_for_anti_affinity(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    place(s, "n1", podj("x", "'app':'x'", 100, 0, 10, ""));
    place(s, "n1", podj("y", "", 100, 0, 20, ""));
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 100, 1000, 0,
                               ",'affinity':{'podAntiAffinity':{'requiredDuringScheduling"
                               "IgnoredDuringExecution':[{'labelSelector':{'matchLabels':{'app':"
                               "'x'}},'topologyKey':'" HOST "'}]}}"));
    CHECK_STR(outcome(preempt(fw, s, p)), "n1: x");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Victims needed for topology spread (maxSkew 1 over hostnames, app=s): n1 holds s1 (started
 * first) and s2, n2 holds s3 and is full of a higher-priority pod. On n1 the preemptor would
 * make 3 against 1. Without s1 and s2 it fits; s1 back gives 2 against 1, still fine; s2 back
 * gives 3 against 1: s2 goes. */
static void test_victims_for_spread(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    place(s, "n1", podj("s1", "'app':'s'", 100, 0, 10, ""));
    place(s, "n1", podj("s2", "'app':'s'", 100, 0, 20, ""));
    place(s, "n2", podj("s3", "'app':'s'", 100, 5000, 10, ""));
    place(s, "n2", podj("full", "", 3900, 5000, 10, ""));
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "'app':'s'", 100, 1000, 0,
                               ",'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'" HOST
                               "','whenUnsatisfiable':'DoNotSchedule','labelSelector':{"
                               "'matchLabels':{'app':'s'}}}]"));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "n1: s2");
    const sched_preempt_candidate *e = entry(r, "n2");
    CHECK(e && e->outcome == SCHED_PREEMPT_NODE_NO_VICTIMS);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* The nominated capacity: nom (priority 1000, 3 cpu) is nominated to n1 (4 cpu, empty). A pod
 * of lower (500) or equal (1000) priority wanting 2 cpu does not fit there; one of higher
 * priority (2000) does; nom itself does. The snapshot is left as it was. */
static void test_nominated_capacity(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    sched_nominated *t = sched_nominated_new();
    sched_snapshot_set_nominated(s, t);
    sched_framework *fw = new_fw();
    tm_err err = {0};
    sched_pod *nom = pod(s, podj("nom", "", 3000, 1000, 0, ""));
    CHECK(sched_nominated_set_pod(t, nom, "n1", &err) == 0);
    CHECK_STR(sched_nominated_node(t, "nom-uid"), "n1");
    sched_pod *lower = pod(s, podj("lower", "", 2000, 500, 0, ""));
    sched_pod *equal = pod(s, podj("equal", "", 2000, 1000, 0, ""));
    sched_pod *higher = pod(s, podj("higher", "", 2000, 2000, 0, ""));
    CHECK_STR(feasible(fw, s, lower), "0/1 nodes are available: 1 Insufficient cpu.");
    CHECK_STR(feasible(fw, s, equal), "0/1 nodes are available: 1 Insufficient cpu.");
    CHECK_STR(feasible(fw, s, higher), "n1");
    CHECK_STR(feasible(fw, s, nom), "n1");
    CHECK_INT(sched_snapshot_pod_count(s), 0);
    CHECK_INT(sched_snapshot_node(s, 0)->requested.v[SCHED_RES_CPU], 0);
    /* the lower pod cannot preempt the nomination away: there is nothing placed to evict */
    const sched_preemption_result *r = preempt(fw, s, lower);
    CHECK(r && r->status == SCHED_STATUS_UNSCHEDULABLE);
    /* the nomination ended (nom bound or deleted): the room is anyone's again */
    CHECK(sched_nominated_remove(t, "nom-uid") == 0 && sched_nominated_count(t) == 0);
    CHECK_STR(feasible(fw, s, lower), "n1");
    sched_pod_free(nom);
    sched_pod_free(lower);
    sched_pod_free(equal);
    sched_pod_free(higher);
    sched_framework_free(fw);
    sched_snapshot_set_nominated(s, NULL);
    sched_nominated_free(t);
    sched_snapshot_free(s);
}

/* kube's second pass: a node that passes with the nominated pods must pass without them too.
 * web requires a db pod on its node (pod affinity by hostname); the only db pod is nominated
 * to n1 (priority 2000 >= web's): counted, n1 would pass, but db may never land there. */
static void test_nominated_second_pass(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    sched_nominated *t = sched_nominated_new();
    sched_snapshot_set_nominated(s, t);
    tm_err err = {0};
    sched_pod *db = pod(s, podj("db", "'app':'db'", 100, 2000, 0, ""));
    CHECK(sched_nominated_set_pod(t, db, "n1", &err) == 0);
    sched_framework *fw = new_fw();
    sched_pod *web = pod(s, podj("web", "'app':'web'", 100, 1000, 0,
                                 ",'affinity':{'podAffinity':{'requiredDuringScheduling"
                                 "IgnoredDuringExecution':[{'labelSelector':{'matchLabels':{"
                                 "'app':'db'}},'topologyKey':'" HOST "'}]}}"));
    CHECK_STR(feasible(fw, s, web),
              "0/2 nodes are available: 2 node(s) didn't match pod affinity rules.");
    /* once db is placed there, web fits there */
    place(s, "n1", podj("db", "'app':'db'", 100, 2000, 0, ""));
    CHECK_STR(feasible(fw, s, web), "n1");
    sched_pod_free(db);
    sched_pod_free(web);
    sched_framework_free(fw);
    sched_snapshot_set_nominated(s, NULL);
    sched_nominated_free(t);
    sched_snapshot_free(s);
}

/* A filter of the caller's that wants the node empty (as a Reservation's hold can): a node with
 * any cpu requested is rejected, with a reason eviction cannot resolve (an added plugin). */
static int empty_only(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    (void)state, (void)c, (void)node;
    return n->requested.v[SCHED_RES_CPU] > 0 ? 0 : -1;
}

/* PostFilter reads a failed node's status as kube-scheduler records it, from the pass with the
 * nominated pods: n1 (4 cpu) runs lo (priority 0, 1 cpu) and nom (1000, 3 cpu) is nominated
 * there; p (500, 2 cpu) fails n1 without nom on the caller's filter (not resolvable), with nom
 * on cpu (resolvable). So n1 is a potential node, tried, and still too small without lo (nom's
 * 3 cpu stay): "1 still too small", not "1 Preemption is not helpful". */
static void test_nominated_status_for_post_filter(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    sched_nominated *t = sched_nominated_new();
    sched_snapshot_set_nominated(s, t);
    tm_err err = {0};
    place(s, "n1", podj("lo", "", 1000, 0, 10, ""));
    sched_pod *nom = pod(s, podj("nom", "", 3000, 1000, 0, ""));
    CHECK(sched_nominated_set_pod(t, nom, "n1", &err) == 0);
    sched_framework *fw = new_fw();
    sched_plugin pl = {.name = "empty-only", .filter = empty_only};
    CHECK(fw && sched_framework_add_plugin(fw, &pl, &err) == 0);
    sched_pod *p = pod(s, podj("p", "", 2000, 500, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECKF(r && r->status != SCHED_STATUS_OK &&
               strstr(r->msg, "0 Preemption is not helpful for scheduling, 1 still too small") !=
                   NULL,
           "%s", outcome(r));
    CHECK_INT(sched_snapshot_pod_count(s), 1); /* nom lent and taken back */
    sched_pod_free(nom);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_set_nominated(s, NULL);
    sched_nominated_free(t);
    sched_snapshot_free(s);
}

/* No double eviction: once lo2 is marked terminating, a preemptor nominated to n1 while that
 * lower-priority pod terminates waits instead of preempting again; a second preemptor does
 * not choose lo2 again. */
static void test_terminating_victims(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    place(s, "n1", podj("lo1", "", 2000, 0, 10, ""));
    place(s, "n1", podj("lo2", "", 2000, 0, 20, ""));
    sched_nominated *t = sched_nominated_new();
    sched_snapshot_set_nominated(s, t);
    sched_framework *fw = new_fw();
    tm_err err = {0};
    sched_pod *p = pod(s, podj("hi", "", 2000, 1000, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "n1: lo2");
    /* what the caller does: evict (mark terminating), nominate */
    CHECK(sched_snapshot_set_pod_terminating(s, "lo2-uid") == 0);
    CHECK(sched_snapshot_set_pod_terminating(s, "nobody") == -1);
    CHECK(sched_nominated_set_pod(t, p, "n1", &err) == 0);
    /* the preemptor's next attempt: its nomination counts nothing for itself, lo2 still holds
     * its cpu until it is gone, and it must not preempt again */
    r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "preemption: not eligible due to a terminating pod on the nominated "
                          "node.");
    /* another preemptor of the same priority: the nominated hi (>= its priority) counts on n1,
     * lo2 is on its way out and not listed again: lo1 must go */
    sched_pod *p2 = pod(s, podj("hi2", "", 2000, 1000, 0, ""));
    CHECK_STR(outcome(preempt(fw, s, p2)), "n1: lo1");
    sched_pod_free(p2);
    /* one above hi: hi's nomination is not counted; lo2 leaving makes the room, nobody else
     * need go (the pod is nominated and waits) */
    p2 = pod(s, podj("hi3", "", 2000, 5000, 0, ""));
    r = preempt(fw, s, p2);
    CHECK_STR(outcome(r), "n1:");
    CHECK(r && r->n_all_victims == 0);
    sched_pod_free(p2);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_set_nominated(s, NULL);
    sched_nominated_free(t);
    sched_snapshot_free(s);
}

/* The dry run leaves the snapshot as it was: requested amounts, pods, pod sets, metadata. */
static void test_snapshot_restored(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    place(s, "n1", podj("a", "'app':'x'", 1500, 0, 10, ""));
    place(s, "n1", podj("b", "", 1500, 10, 20, ",'hostNetwork':false"));
    place(s, "n2", podj("c", "'app':'x'", 3000, 20, 30, ""));
    sched_resources before[2];
    for (int i = 0; i < 2; i++)
        before[i] = sched_snapshot_node(s, (size_t)i)->requested;
    size_t meta = sched_snapshot_podset_count(s, SCHED_PODSET_META);
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 3000, 1000, 0,
                               ",'affinity':{'podAntiAffinity':{'requiredDuringScheduling"
                               "IgnoredDuringExecution':[{'labelSelector':{'matchLabels':{'app':"
                               "'x'}},'topologyKey':'" HOST "'}]}}"));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK(r && r->status == SCHED_STATUS_OK);
    for (int i = 0; i < 2; i++)
        CHECK(memcmp(&before[i], &sched_snapshot_node(s, (size_t)i)->requested, sizeof before[i]) ==
              0);
    CHECK_INT(sched_snapshot_pod_count(s), 3);
    CHECK_INT(sched_snapshot_podset_count(s, SCHED_PODSET_META), meta);
    const sched_pod_meta *m = sched_snapshot_pod_meta(s, "b-uid");
    CHECK(m && m->priority == 10 && strcmp(m->name, "b") == 0 && m->start_ms > 0);
    CHECK_STR(sched_snapshot_pod_node(s, "a-uid"), "n1");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* The dry run is bounded as kube's: 150 nodes, each with one victim of priority 0: it tries
 * max(10% of 150, 100) = 100 nodes and leaves 50 untried; the first in name order wins. */
static void test_bounded(void) {
    sched_snapshot *s = sched_snapshot_new();
    char name[32], pname[32];
    for (int i = 0; i < 150; i++) {
        snprintf(name, sizeof name, "n%03d", i);
        snprintf(pname, sizeof pname, "v%03d", i);
        add_node(s, name, NULL);
        place(s, name, podj(pname, "", 4000, 0, 10, ""));
    }
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 1000, 1000, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "n000: v000");
    size_t tried = 0, untried = 0;
    for (size_t i = 0; r && i < r->n_nodes; i++) {
        tried += r->nodes[i].outcome == SCHED_PREEMPT_NODE_CANDIDATE ||
                 r->nodes[i].outcome == SCHED_PREEMPT_NODE_CHOSEN;
        untried += r->nodes[i].outcome == SCHED_PREEMPT_NODE_NOT_TRIED;
    }
    CHECK_INT(tried, 100);
    CHECK_INT(untried, 50);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* The one-node hook (for gang and extender preemption): the victims on a given node, whether
 * or not it is the node the whole algorithm would choose. */
static void test_select_victims_hook(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    place(s, "n1", podj("a", "", 4000, 0, 10, ""));
    place(s, "n2", podj("b", "", 2000, 50, 10, ""));
    place(s, "n2", podj("c", "", 2000, 60, 20, ""));
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 3000, 1000, 0, ""));
    sched_decision d;
    tm_err err = {0};
    CHECK(sched_framework_schedule(fw, s, p, 0, &d, &err) == 0 && d.node < 0);
    sched_preemption_result r;
    sched_preemption_result_init(&r);
    CHECK(sched_framework_whatif_begin(fw, s, p, 0, &err) == 0);
    int n2 = sched_snapshot_node_index(s, "n2");
    CHECK_INT(sched_preemption_select_victims(fw, s, p, (size_t)n2, &r, &err),
              SCHED_PREEMPT_NODE_CANDIDATE);
    sched_framework_whatif_end(fw);
    CHECK(r.n_nodes == 1 && r.n_all_victims == 2 && r.nodes[0].n_victims == 2);
    CHECK(r.n_all_victims == 2 && strcmp(r.all_victims[0].name, "c") == 0 &&
          strcmp(r.all_victims[1].name, "b") == 0); /* most important first */
    CHECK_INT(sched_snapshot_node(s, (size_t)n2)->requested.v[SCHED_RES_CPU], 4000);
    sched_preemption_result_clear(&r);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* The snapshot's per-node pod lists preemption reads, through node changes: a node removed
 * (the last one moves into its place with its list), put back (its pods listed again), a pod
 * on a missing node, hidden and shown, moved and removed. */
static size_t listed(const sched_snapshot *s, const char *node, const char *uid) {
    int i = sched_snapshot_node_index(s, node);
    size_t n = i >= 0 ? sched_snapshot_node_pod_count(s, (size_t)i) : 0, hit = 0;
    for (size_t k = 0; k < n; k++) {
        const char *u;
        sched_snapshot_node_pod(s, (size_t)i, k, &u);
        hit += uid && strcmp(u, uid) == 0;
    }
    return uid ? hit : n;
}

static void test_node_pod_lists(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a", NULL);
    add_node(s, "b", NULL);
    add_node(s, "c", NULL);
    place(s, "a", podj("a1", "", 100, 0, 0, ""));
    place(s, "b", podj("b1", "", 100, 0, 0, ""));
    place(s, "c", podj("c1", "", 100, 0, 0, ""));
    place(s, "c", podj("c2", "", 100, 0, 0, ""));
    place(s, "gone", podj("g1", "", 100, 0, 0, "")); /* its node is not there (yet) */
    CHECK(listed(s, "a", NULL) == 1 && listed(s, "c", NULL) == 2);
    CHECK(sched_snapshot_remove_node(s, "a") == 0); /* c moves into a's index */
    CHECK(listed(s, "c", "c1-uid") == 1 && listed(s, "c", "c2-uid") == 1 &&
          listed(s, "c", NULL) == 2);
    CHECK(listed(s, "b", "b1-uid") == 1);
    add_node(s, "a", NULL);
    add_node(s, "gone", NULL);
    CHECK(listed(s, "a", "a1-uid") == 1 && listed(s, "gone", "g1-uid") == 1);
    CHECK(sched_snapshot_hide_pod(s, "c1-uid", true) == 0);
    CHECK(listed(s, "c", NULL) == 1 && listed(s, "c", "c1-uid") == 0);
    CHECK_INT(sched_snapshot_node_by_name(s, "c")->requested.v[SCHED_RES_CPU], 100);
    CHECK(sched_snapshot_hide_pod(s, "c1-uid", false) == 0);
    CHECK(listed(s, "c", "c1-uid") == 1);
    CHECK_INT(sched_snapshot_node_by_name(s, "c")->requested.v[SCHED_RES_CPU], 200);
    place(s, "b", podj("c2", "", 100, 0, 0, "")); /* moved */
    CHECK(listed(s, "c", "c2-uid") == 0 && listed(s, "b", "c2-uid") == 1);
    CHECK(sched_snapshot_hide_pod(s, "b1-uid", true) == 0);
    CHECK(sched_snapshot_remove_pod(s, "b1-uid") == 0); /* removing a hidden pod */
    CHECK(listed(s, "b", NULL) == 1);
    CHECK_INT(sched_snapshot_node_by_name(s, "b")->requested.v[SCHED_RES_CPU], 100);
    CHECK(sched_snapshot_hide_pod(s, "nobody", true) == -1);
    sched_snapshot_free(s);
}

/* What preemption reads of a placed pod comes from its JSON, whoever bound it. */
static void test_meta_from_json(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    place(s, "n1", podj("x", "", 100, -7, 3661, ""));
    const sched_pod_meta *m = sched_snapshot_pod_meta(s, "x-uid");
    CHECK(m && m->priority == -7 && strcmp(m->name, "x") == 0);
    CHECK(m && m->start_ms == (1767225600LL + 3661) * 1000);
    place(s, "n1", podj("y", "", 100, 3, 0, ""));
    m = sched_snapshot_pod_meta(s, "y-uid");
    CHECK(m && m->start_ms == 0 && m->priority == 3);
    place(s, "n1", podtext("z", "ns", "", "")); /* no spec.priority: 0, as the API defaults */
    m = sched_snapshot_pod_meta(s, "z-uid");
    CHECK(m && m->priority == 0 && strcmp(m->name, "z") == 0);
    sched_snapshot_free(s);
}

/* ---- gangs (issue 31): a running gang is a victim as a whole ---- */

#define PG   "scheduling.x-k8s.io/pod-group"
#define IN_G "'" PG "':'g'"

/* unit_of for the tests: a placed pod's pod-group label (ctx: the snapshot). */
static const char *label_unit(void *ctx, const char *uid) {
    const sched_pod_meta *m = sched_snapshot_pod_meta(ctx, uid);
    return m && m->labels ? sched_labels_get(m->labels, PG) : NULL;
}

/* n1..n3 each hold one member of gang g (priorities prio[0..2]) and a pod the preemptor (1000,
 * 2 cpu) may not evict (2000): 2 cpu each on n1 and n2; on n3 g-3 has 1 cpu and keep3 3, so
 * that n3 is no candidate (g-3 gone frees too little). */
static sched_snapshot *gang_cluster(const long long prio[3]) {
    sched_snapshot *s = sched_snapshot_new();
    char name[16];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "n%d", i + 1);
        add_node(s, name, NULL);
        char member[16], keep[16];
        snprintf(member, sizeof member, "g-%d", i + 1);
        snprintf(keep, sizeof keep, "keep%d", i + 1);
        place(s, name, podj(member, IN_G, i < 2 ? 2000 : 1000, prio[i], 10 + i, ""));
        place(s, name, podj(keep, "", i < 2 ? 2000 : 3000, 2000, 10, ""));
    }
    return s;
}

/* (a) The best node (n1, first in name order: n1 and n2 cost the same) holds one member of
 * the low-priority gang g spread over n1..n3: the whole gang goes, the member chosen on n1
 * first, the others after it with why saying so. A member already terminating is not listed
 * again. */
static void test_gang_victim_whole(void) {
    const long long prio[3] = {0, 0, 0};
    sched_snapshot *s = gang_cluster(prio);
    sched_framework *fw = new_fw();
    tm_err err = {0};
    CHECK(sched_preemption_set_units(fw, label_unit, s, &err) == 0);
    sched_pod *p = pod(s, podj("hi", "", 2000, 1000, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "n1: g-1,g-2,g-3");
    CHECK(r && r->n_victims == 3 && strcmp(r->victims[1].node, "n2") == 0 &&
          strcmp(r->victims[2].node, "n3") == 0 && !r->victims[1].pdb_violation);
    CHECK(r && r->n_victims == 3 && strstr(r->victims[0].why, "priority 0 < 1000"));
    CHECK(r && r->n_victims == 3 &&
          strstr(r->victims[2].why, "member of gang g, evicted whole with pod ns/g-1"));
    /* the node's numbers count the whole gang */
    const sched_preempt_candidate *e = entry(r, "n1");
    CHECK(e && e->n_victims == 3 && e->highest == 0);
    /* g-3 already on its way out: not listed again */
    CHECK(sched_snapshot_set_pod_terminating(s, "g-3-uid") == 0);
    CHECK_STR(outcome(preempt(fw, s, p)), "n1: g-1,g-2");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* (b) g-3 has the preemptor's priority: none of g's members is a victim. With n4 holding a
 * plain pod of priority 500, n4's is chosen (without gangs, n2's g-2 of priority 0 would be);
 * without n4, nothing can be preempted. */
static void test_gang_protected(void) {
    const long long prio[3] = {0, 0, 1000};
    sched_snapshot *s = gang_cluster(prio);
    sched_framework *fw = new_fw();
    tm_err err = {0};
    CHECK(sched_preemption_set_units(fw, label_unit, s, &err) == 0);
    sched_pod *p = pod(s, podj("hi", "", 2000, 1000, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK(r && r->status == SCHED_STATUS_UNSCHEDULABLE && r->n_all_victims == 0);
    const sched_preempt_candidate *e = entry(r, "n1");
    CHECK(e && e->outcome == SCHED_PREEMPT_NODE_NO_VICTIMS);
    sched_pod_free(p);
    add_node(s, "n4", NULL);
    place(s, "n4", podj("plain", "", 4000, 500, 10, ""));
    p = pod(s, podj("hi", "", 2000, 1000, 0, ""));
    CHECK_STR(outcome(preempt(fw, s, p)), "n4: plain");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* (c) No units (the default, and set back to NULL): today's result, the member alone (kube's
 * choice: g-2 started last, so n2 wins at the start level), though g-3 has the preemptor's
 * priority. */
static void test_gang_units_off(void) {
    const long long prio[3] = {0, 0, 1000};
    sched_snapshot *s = gang_cluster(prio);
    sched_framework *fw = new_fw();
    sched_pod *p = pod(s, podj("hi", "", 2000, 1000, 0, ""));
    CHECK_STR(outcome(preempt(fw, s, p)), "n2: g-2");
    tm_err err = {0};
    CHECK(sched_preemption_set_units(fw, label_unit, s, &err) == 0);
    CHECK(sched_preemption_set_units(fw, NULL, s, &err) == 0);
    CHECK_STR(outcome(preempt(fw, s, p)), "n2: g-2");
    sched_pod_free(p);
    sched_framework_free(fw);
    /* a framework without the plugin: an error naming it */
    sched_framework *bare = sched_policy_new("fair", &err);
    CHECK(bare && sched_preemption_set_units(bare, label_unit, s, &err) == -1 &&
          strstr(err.msg, SCHED_PREEMPTION_PLUGIN));
    sched_framework_free(bare);
    sched_snapshot_free(s);
}

/* The node choice counts the members a victim drags along: n4's one plain pod of priority 0
 * costs less (sum) than n1's g-1, which takes g-2 and g-3 with it, though n1 comes first. */
static void test_gang_counts_in_choice(void) {
    const long long prio[3] = {0, 0, 0};
    sched_snapshot *s = gang_cluster(prio);
    add_node(s, "n4", NULL);
    place(s, "n4", podj("plain", "", 2000, 0, 10, ""));
    place(s, "n4", podj("keep4", "", 2000, 2000, 10, ""));
    sched_framework *fw = new_fw();
    tm_err err = {0};
    CHECK(sched_preemption_set_units(fw, label_unit, s, &err) == 0);
    sched_pod *p = pod(s, podj("hi", "", 2000, 1000, 0, ""));
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "n4: plain");
    const sched_preempt_candidate *e = entry(r, "n1");
    CHECK(e && e->outcome == SCHED_PREEMPT_NODE_CANDIDATE && e->lost_at == SCHED_PREEMPT_BY_SUM);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Two members on the node go back together in the reprieve: the preemptor needs 1 cpu of n1,
 * whose g-1 and g-2 hold 1 cpu each; keeping one alone would not save its gang, so both go
 * (with g-3 on n2). Without units kube's answer: g-2 alone (g-1 started first and is kept; n2's
 * g-3 started earlier still, so n2 loses at the start). */
static void test_gang_reprieve_together(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    place(s, "n1", podj("g-1", IN_G, 1000, 0, 10, ""));
    place(s, "n1", podj("g-2", IN_G, 1000, 0, 11, ""));
    place(s, "n1", podj("keep1", "", 2000, 2000, 10, ""));
    place(s, "n2", podj("g-3", IN_G, 1000, 0, 5, ""));
    place(s, "n2", podj("keep2", "", 3000, 2000, 10, ""));
    sched_framework *fw = new_fw();
    tm_err err = {0};
    sched_pod *p = pod(s, podj("hi", "", 1000, 1000, 0, ""));
    CHECK_STR(outcome(preempt(fw, s, p)), "n1: g-2");
    CHECK(sched_preemption_set_units(fw, label_unit, s, &err) == 0);
    const sched_preemption_result *r = preempt(fw, s, p);
    CHECK_STR(outcome(r), "n1: g-1,g-2,g-3");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_lowest_priority_only);
    RUN(test_policy_never);
    RUN(test_no_equal_or_higher_victims);
    RUN(test_no_fit_even_empty);
    RUN(test_pdb_steers_victims);
    RUN(test_choice_pdb);
    RUN(test_choice_highest);
    RUN(test_choice_sum);
    RUN(test_choice_count);
    RUN(test_choice_start);
    RUN(test_choice_name);
    RUN(test_victims_for_anti_affinity);
    RUN(test_victims_for_spread);
    RUN(test_nominated_capacity);
    RUN(test_nominated_second_pass);
    RUN(test_nominated_status_for_post_filter);
    RUN(test_terminating_victims);
    RUN(test_snapshot_restored);
    RUN(test_bounded);
    RUN(test_select_victims_hook);
    RUN(test_node_pod_lists);
    RUN(test_meta_from_json);
    RUN(test_gang_victim_whole);
    RUN(test_gang_protected);
    RUN(test_gang_units_off);
    RUN(test_gang_counts_in_choice);
    RUN(test_gang_reprieve_together);
    return TEST_SUMMARY();
}
