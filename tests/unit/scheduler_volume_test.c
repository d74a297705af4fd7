/* scheduler_volume_test.c: the VolumeBinding filter: a pod's claims from its volumes (generic
 * ephemeral ones by their generated name), the claim and volume tables, a bound volume's node
 * affinity, missing / deleting / unbound claims and volumes, kube-scheduler's reason texts, the
 * claim named in the message, bad PersistentVolume JSON, and no filter at all in a snapshot
 * that does not track volumes (extender, simulator). */
#include "scheduler/backend/volumes.h"

#include "scheduler_filter_helpers.h"

/* A claim ns/name bound to volume ("" = unbound; the binding completed, as the PV controller
 * marks it), optionally being deleted. */
static void put_claim(sched_volumes *v, const char *ns, const char *name, const char *volume,
                      bool deleting) {
    char text[512];
    snprintf(text, sizeof text,
             "{'metadata':{'namespace':'%s','name':'%s'%s%s},'spec':{%s%s%s},'status':{'phase':"
             "'%s'}}",
             ns, name, deleting ? ",'deletionTimestamp':'2026-11-22T10:00:00Z'" : "",
             volume[0] ? ",'annotations':{'pv.kubernetes.io/bind-completed':'yes'}" : "",
             volume[0] ? "'volumeName':'" : "", volume, volume[0] ? "'" : "",
             volume[0] ? "Bound" : "Pending");
    json_t *j = J(text);
    tm_err err = {0};
    if (!j || sched_volumes_put_claim(v, j, &err) != 0)
        printf("    put_claim: %s\n", err.msg);
    json_decref(j);
}

/* A volume; affinity_nodes: "" = no node affinity, else the hostnames it is reachable from. */
static void put_volume(sched_volumes *v, const char *name, const char *affinity_nodes) {
    char text[1024];
    if (!affinity_nodes[0])
        snprintf(text, sizeof text, "{'metadata':{'name':'%s'},'spec':{}}", name);
    else
        snprintf(text, sizeof text,
                 "{'metadata':{'name':'%s'},'spec':{'nodeAffinity':{'required':{"
                 "'nodeSelectorTerms':[{'matchExpressions':[{'key':'kubernetes.io/hostname',"
                 "'operator':'In','values':[%s]}]}]}}}}",
                 name, affinity_nodes);
    json_t *j = J(text);
    tm_err err = {0};
    if (!j || sched_volumes_put_volume(v, j, &err) != 0)
        printf("    put_volume: %s\n", err.msg);
    json_decref(j);
}

/* Three nodes a, b, c and tracked (empty) volume tables. */
static sched_snapshot *cluster(sched_volumes **v) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a", NULL);
    add_node(s, "b", NULL);
    add_node(s, "c", NULL);
    *v = sched_volumes_new();
    sched_snapshot_set_volumes(s, *v);
    return s;
}

static const char *with_claim(const char *claim) {
    static char spec[256];
    snprintf(spec, sizeof spec,
             ",'volumes':[{'name':'scratch','emptyDir':{}},"
             "{'name':'work','persistentVolumeClaim':{'claimName':'%s'}}]",
             claim);
    return podtext("p", "wf", "", spec);
}

static void test_claims_from_pod(void) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_pod *p =
        incoming(s,
                 podtext("p", "wf", "",
                         ",'volumes':[{'name':'cfg','configMap':{'name':'x'}},"
                         "{'name':'work','persistentVolumeClaim':{'claimName':'shared'}},"
                         "{'name':'tmp','ephemeral':{'volumeClaimTemplate':{'spec':{}}}}]"),
                 &err);
    CHECKF(p != NULL, "%s", err.msg);
    if (p) {
        CHECK_INT(p->n_claims, 2);
        CHECK_STR(p->claims[0], "shared");
        CHECK_STR(p->claims[1], "p-tmp"); /* Kubernetes names it <pod>-<volume> */
    }
    sched_pod_free(p);
    p = incoming(s, podtext("q", "wf", "", ",'volumes':[{'name':'w','persistentVolumeClaim':{}}]"),
                 &err);
    CHECK(p == NULL);
    CHECK_STR(err.msg, "pod wf/q: spec.volumes[0].persistentVolumeClaim.claimName is missing");
    sched_pod_free(p);
    sched_snapshot_free(s);
}

static void test_bound_volume_node_affinity(void) {
    sched_volumes *v;
    sched_snapshot *s = cluster(&v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    put_volume(v, "pv-local", "'b'");
    put_claim(v, "wf", "work", "pv-local", false);
    tm_err err = {0};
    sched_pod *p = incoming(s, with_claim("work"), &err);
    CHECK_STR(feasible(fw, s, p), "b");
    /* the reason on the other nodes is kube-scheduler's */
    uint32_t detail = 0;
    CHECK_INT(
        sched_framework_node_status(fw, (size_t)sched_snapshot_node_index(s, "a"), &detail, NULL),
        SCHED_FILTER_VOLUME);
    char reason[256];
    sched_filter_reason(s, sched_snapshot_node_by_name(s, "a"), p, SCHED_FILTER_VOLUME, detail,
                        reason, sizeof reason);
    CHECK_STR(reason, "node(s) had volume node affinity conflict");
    CHECK_STR(sched_filter_name(SCHED_FILTER_VOLUME), "VolumeBinding");
    CHECK(!sched_filter_resolvable(SCHED_FILTER_VOLUME, detail));
    /* a volume reachable from two nodes; a volume without node affinity restricts nothing */
    put_volume(v, "pv-local", "'a','c'");
    CHECK_STR(feasible(fw, s, p), "a,c");
    put_volume(v, "pv-local", "");
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    /* b full: the only node of the volume cannot take it, the message says both reasons */
    put_volume(v, "pv-local", "'b'");
    CHECK_INT(place(s, "b",
                    "{'metadata':{'name':'hog','namespace':'x','uid':'hog'},'spec':{'containers':"
                    "[{'name':'c','resources':{'requests':{'cpu':'4'}}}]}}"),
              0);
    CHECK_STR(feasible(fw, s, p), "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had "
                                  "volume node affinity conflict.");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v); /* the snapshot borrows the tables */
}

static void test_claim_problems(void) {
    sched_volumes *v;
    sched_snapshot *s = cluster(&v);
    sched_framework *fw = sched_policy_new("tarema", NULL);
    tm_err err = {0};
    sched_pod *p = incoming(s, with_claim("work"), &err);
    CHECK_STR(feasible(fw, s, p),
              "0/3 nodes are available: 3 persistentvolumeclaim \"work\" not found.");
    put_claim(v, "other-ns", "work", "pv", false); /* same name, another namespace */
    CHECK_STR(feasible(fw, s, p),
              "0/3 nodes are available: 3 persistentvolumeclaim \"work\" not found.");
    put_claim(v, "wf", "work", "", false);
    CHECK_STR(feasible(fw, s, p), "0/3 nodes are available: 3 persistentvolumeclaim \"work\" is "
                                  "not bound (tarema binds no volumes).");
    /* volumeName set but the binding not completed (a user's pre-binding, or the PV
     * controller between its two writes; status.phase still Pending): not bound, as
     * kube-scheduler's isPVCFullyBound says */
    json_t *prebound = J("{'metadata':{'namespace':'wf','name':'work'},'spec':{'volumeName':'pv'},"
                         "'status':{'phase':'Pending'}}");
    CHECK_INT(sched_volumes_put_claim(v, prebound, &err), 0);
    json_decref(prebound);
    put_volume(v, "pv", "");
    CHECK_STR(feasible(fw, s, p), "0/3 nodes are available: 3 persistentvolumeclaim \"work\" is "
                                  "not bound (tarema binds no volumes).");
    CHECK_INT(sched_volumes_remove_volume(v, "pv"), 0);
    put_claim(v, "wf", "work", "pv", false);
    CHECK_STR(feasible(fw, s, p), "0/3 nodes are available: 3 node(s) unavailable due to one or "
                                  "more pvc(s) bound to non-existent pv(s).");
    put_volume(v, "pv", "");
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    put_claim(v, "wf", "work", "pv", true);
    CHECK_STR(feasible(fw, s, p),
              "0/3 nodes are available: 3 persistentvolumeclaim \"work\" is being deleted.");
    CHECK_INT(sched_volumes_claim_count(v), 2);
    CHECK_INT(sched_volumes_remove_claim(v, "wf", "work"), 0);
    CHECK_INT(sched_volumes_remove_claim(v, "wf", "work"), -1);
    CHECK_INT(sched_volumes_claim_count(v), 1);
    CHECK_INT(sched_volumes_remove_volume(v, "pv"), 0);
    CHECK_INT(sched_volumes_volume_count(v), 0);
    /* a pod without claims is not affected by any of this */
    sched_pod *plain = incoming(s, podtext("q", "wf", "", ""), &err);
    CHECK_STR(feasible(fw, s, plain), "a,b,c");
    sched_pod_free(plain);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v); /* the snapshot borrows the tables */
}

static void test_untracked_snapshot_has_no_filter(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a", NULL);
    sched_framework *fw = sched_policy_new("fair", NULL);
    tm_err err = {0};
    sched_pod *p = incoming(s, with_claim("nowhere"), &err);
    CHECK_STR(feasible(fw, s, p), "a");
    CHECK_INT(sched_filter_node(s, p, sched_snapshot_node(s, 0), NULL), SCHED_FILTER_OK);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_bad_volume_json(void) {
    sched_volumes *v = sched_volumes_new();
    tm_err err = {0};
    json_t *j = J("{'metadata':{'name':'pv1'},'spec':{'nodeAffinity':{'required':{"
                  "'nodeSelectorTerms':[{'matchExpressions':[{'key':'k','operator':'Near'}]}]}}}}");
    CHECK_INT(sched_volumes_put_volume(v, j, &err), -1);
    CHECK_STR(err.msg, "PersistentVolume pv1: spec.nodeAffinity.required.nodeSelectorTerms[0]."
                       "matchExpressions[0]: operator \"Near\" is not one of In, NotIn, Exists, "
                       "DoesNotExist, Gt, Lt");
    CHECK_INT(sched_volumes_volume_count(v), 0);
    json_decref(j);
    j = J("{'metadata':{'name':'c'},'spec':{}}");
    CHECK_INT(sched_volumes_put_claim(v, j, &err), -1);
    CHECK_STR(err.msg, "PersistentVolumeClaim without metadata.namespace and .name");
    json_decref(j);
    j = J("{'metadata':{'namespace':'n','name':'c'},'spec':{'volumeName':7}}");
    CHECK_INT(sched_volumes_put_claim(v, j, &err), -1);
    CHECK_STR(err.msg, "PersistentVolumeClaim n/c: spec.volumeName is not a string");
    json_decref(j);
    CHECK_INT(sched_volumes_claim_count(v), 0);
    sched_volumes_free(v);
}

int main(void) {
    RUN(test_claims_from_pod);
    RUN(test_bound_volume_node_affinity);
    RUN(test_claim_problems);
    RUN(test_untracked_snapshot_has_no_filter);
    RUN(test_bad_volume_json);
    return TEST_SUMMARY();
}
