/* scheduler_volume_test.c: the volume plugins. VolumeBinding: a pod's claims from its volumes
 * (generic ephemeral ones by their generated name), the claim and volume tables, a bound
 * volume's node affinity, missing / deleting / unbound claims and volumes, kube-scheduler's
 * reason texts, the claim named in the message, bad JSON, no filter at all in a snapshot that
 * does not track volumes (extender, simulator); WaitForFirstConsumer claims matched to the
 * smallest fitting PV (class, capacity, access modes, volume mode, node affinity) or
 * provisioned where the class's allowedTopologies admit the node, Reserve's plan assumed and
 * reverted, the PreBind wait's verdicts, generic ephemeral claims (waiting, owner).
 * VolumeRestrictions (ReadWriteOncePod), VolumeZone, NodeVolumeLimits (CSINode limits). Every
 * expected outcome below is worked out by hand from kube-scheduler 1.35's rules. */
#include "scheduler/backend/volumes.h"
#include "scheduler/plugins/volume_binding.h"

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
    CHECK_STR(feasible(fw, s, p),
              "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims.");
    /* volumeName set but the binding not completed (a user's pre-binding, or the PV
     * controller between its two writes; status.phase still Pending): not bound, as
     * kube-scheduler's isPVCFullyBound says */
    json_t *prebound = J("{'metadata':{'namespace':'wf','name':'work'},'spec':{'volumeName':'pv'},"
                         "'status':{'phase':'Pending'}}");
    CHECK_INT(sched_volumes_put_claim(v, prebound, &err), 0);
    json_decref(prebound);
    put_volume(v, "pv", "");
    CHECK_STR(feasible(fw, s, p),
              "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims.");
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

/* ---- WaitForFirstConsumer, the other volume plugins ---- */

static void put_json(sched_volumes *v, int kind, const char *text) {
    json_t *j = J(text);
    tm_err err = {0};
    int rc = !j          ? -1
             : kind == 0 ? sched_volumes_put_claim(v, j, &err)
             : kind == 1 ? sched_volumes_put_volume(v, j, &err)
             : kind == 2 ? sched_volumes_put_class(v, j, &err)
                         : sched_volumes_put_csinode(v, j, &err);
    if (rc != 0)
        printf("    put %d: %s (%s)\n", kind, err.msg, text);
    json_decref(j);
}

/* An unbound claim wf/name of class, size, access mode ("ReadWriteOnce"), extra metadata. */
static void unbound_claim(sched_volumes *v, const char *name, const char *class, const char *size,
                          const char *mode, const char *meta) {
    char t[1024];
    snprintf(t, sizeof t,
             "{'metadata':{'namespace':'wf','name':'%s','uid':'%s-uid','resourceVersion':'7'%s},"
             "'spec':{'storageClassName':'%s','accessModes':['%s'],'resources':{'requests':{"
             "'storage':'%s'}}},'status':{'phase':'Pending'}}",
             name, name, meta, class, mode, size);
    put_json(v, 0, t);
}

/* An Available PV of class and size on node (hostname affinity; "" = none), RWO. */
static void free_pv(sched_volumes *v, const char *name, const char *class, const char *size,
                    const char *node, const char *extra_spec) {
    char aff[256] = "";
    if (node[0])
        snprintf(aff, sizeof aff,
                 ",'nodeAffinity':{'required':{'nodeSelectorTerms':[{'matchExpressions':[{'key':"
                 "'kubernetes.io/hostname','operator':'In','values':['%s']}]}]}}",
                 node);
    char t[1024];
    snprintf(t, sizeof t,
             "{'metadata':{'name':'%s','resourceVersion':'3'},'spec':{'storageClassName':'%s',"
             "'capacity':{'storage':'%s'},'accessModes':['ReadWriteOnce']%s%s},'status':{"
             "'phase':'Available'}}",
             name, class, size, aff, extra_spec);
    put_json(v, 1, t);
}

static void wffc_class(sched_volumes *v, const char *name, const char *provisioner,
                       const char *extra) {
    char t[512];
    snprintf(t, sizeof t,
             "{'metadata':{'name':'%s'},'provisioner':'%s','volumeBindingMode':"
             "'WaitForFirstConsumer'%s}",
             name, provisioner, extra);
    put_json(v, 2, t);
}

/* Schedules p, reserves it on node name through fw, returns the VolumeBinding plan. */
static const sched_volume_plan *reserve_on(sched_framework *fw, sched_snapshot *s,
                                           const sched_pod *p, const char *node) {
    sched_decision d;
    tm_err err = {0};
    if (sched_framework_schedule(fw, s, p, 0, &d, &err) != 0)
        return NULL;
    if (sched_framework_reserve(fw, s, p, sched_snapshot_node_index(s, node), &err) != 0)
        return NULL;
    return sched_volume_binding_plan(sched_framework_plugin_state(fw, "VolumeBinding"), p->uid);
}

static sched_pod *claim_pod(sched_snapshot *s, const char *name, const char *claim) {
    char spec[256];
    snprintf(spec, sizeof spec,
             ",'volumes':[{'name':'w','persistentVolumeClaim':{'claimName':'%s'}}]", claim);
    tm_err err = {0};
    sched_pod *p = incoming(s, podtext(name, "wf", "", spec), &err);
    if (!p)
        printf("    pod: %s\n", err.msg);
    return p;
}

static void test_wffc_static_smallest_fit(void) {
    sched_volumes *v;
    sched_snapshot *s = cluster(&v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    wffc_class(v, "local", "kubernetes.io/no-provisioner", "");
    free_pv(v, "pv-big", "local", "10Gi", "a", "");
    free_pv(v, "pv-small", "local", "2Gi", "a", "");
    free_pv(v, "pv-tiny", "local", "500Mi", "b", ""); /* too small for 1Gi */
    free_pv(v, "pv-other", "other", "5Gi", "b", "");  /* another class */
    unbound_claim(v, "w1", "local", "1Gi", "ReadWriteOnce", "");
    unbound_claim(v, "w2", "local", "1Gi", "ReadWriteOnce", "");
    unbound_claim(v, "w3", "local", "1Gi", "ReadWriteOnce", "");
    sched_pod *p1 = claim_pod(s, "p1", "w1"), *p2 = claim_pod(s, "p2", "w2"),
              *p3 = claim_pod(s, "p3", "w3");
    CHECK_STR(feasible(fw, s, p1), "a");
    CHECK_STR(feasible(fw, s, p3), "a");
    /* Reserve takes the smallest PV that fits (FindMatchingVolume), 2Gi of the two on a */
    const sched_volume_plan *pl = reserve_on(fw, s, p1, "a");
    CHECK(pl && pl->n == 1 && pl->b[0].pv && strcmp(pl->b[0].pv, "pv-small") == 0);
    CHECK(pl && strcmp(pl->node, "a") == 0 && strcmp(pl->b[0].claim_uid, "w1-uid") == 0);
    /* assumed: the next claim gets the other one, the third none on any node */
    pl = reserve_on(fw, s, p2, "a");
    CHECK(pl && pl->b[0].pv && strcmp(pl->b[0].pv, "pv-big") == 0);
    CHECK_STR(feasible(fw, s, p3), "0/3 nodes are available: 3 node(s) didn't find available "
                                   "persistent volumes to bind.");
    CHECK(!sched_filter_resolvable(SCHED_FILTER_VOLUME, SCHED_VOLUME_BIND_CONFLICT));
    /* Unreserve gives pv-big back */
    sched_framework_unreserve(fw, s, p2, sched_snapshot_node_index(s, "a"), 0);
    CHECK(sched_volume_binding_plan(sched_framework_plugin_state(fw, "VolumeBinding"), "p2-uid") ==
          NULL);
    CHECK_STR(feasible(fw, s, p3), "a");
    /* an informer update of the PV that does not show the claimRef yet keeps the assumption */
    free_pv(v, "pv-small", "local", "2Gi", "a", "");
    CHECK_STR(feasible(fw, s, p2), "a");
    pl = reserve_on(fw, s, p2, "a");
    CHECK(pl && pl->b[0].pv && strcmp(pl->b[0].pv, "pv-big") == 0);
    sched_pod_free(p1);
    sched_pod_free(p2);
    sched_pod_free(p3);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v);
}

/* Each rule of FindMatchingVolume alone keeps the only PV from matching. */
static void test_wffc_static_rules(void) {
    sched_volumes *v;
    sched_snapshot *s = cluster(&v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    wffc_class(v, "local", "kubernetes.io/no-provisioner", "");
    sched_pod *p = claim_pod(s, "p", "w");
    const char *none = "0/3 nodes are available: 3 node(s) didn't find available persistent "
                       "volumes to bind.";
    unbound_claim(v, "w", "local", "1Gi", "ReadWriteOnce", "");
    free_pv(v, "pv", "local", "1Gi", "b", ""); /* exactly the size: fits */
    CHECK_STR(feasible(fw, s, p), "b");
    free_pv(v, "pv", "local", "1023Mi", "b", ""); /* capacity */
    CHECK_STR(feasible(fw, s, p), none);
    free_pv(v, "pv", "local", "1Gi", "b", ",'volumeMode':'Block'"); /* volume mode */
    CHECK_STR(feasible(fw, s, p), none);
    free_pv(v, "pv", "local", "1Gi", "", ""); /* no node affinity: every node */
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    unbound_claim(v, "w", "local", "1Gi", "ReadWriteMany", ""); /* access modes */
    CHECK_STR(feasible(fw, s, p), none);
    unbound_claim(v, "w", "local", "1Gi", "ReadWriteOnce", ",'labels':{}");
    put_json(v, 1,
             "{'metadata':{'name':'pv'},'spec':{'storageClassName':'local','capacity':{"
             "'storage':'1Gi'},'accessModes':['ReadWriteOnce']},'status':{'phase':'Released'}}");
    CHECK_STR(feasible(fw, s, p), none); /* not Available */
    put_json(v, 1,
             "{'metadata':{'name':'pv'},'spec':{'storageClassName':'local','capacity':{"
             "'storage':'1Gi'},'accessModes':['ReadWriteOnce'],'claimRef':{'namespace':'wf',"
             "'name':'other'}},'status':{'phase':'Available'}}");
    CHECK_STR(feasible(fw, s, p), none); /* reserved for another claim */
    /* pre-bound to this claim (claimRef): that PV, whatever its phase */
    put_json(v, 1,
             "{'metadata':{'name':'pv'},'spec':{'storageClassName':'local','capacity':{"
             "'storage':'1Gi'},'accessModes':['ReadWriteOnce'],'claimRef':{'namespace':'wf',"
             "'name':'w'}},'status':{'phase':'Bound'}}");
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    /* the claim's selector */
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'w','uid':'w-uid'},'spec':{"
             "'storageClassName':'local','accessModes':['ReadWriteOnce'],'selector':{"
             "'matchLabels':{'disk':'ssd'}},'resources':{'requests':{'storage':'1Gi'}}}}");
    free_pv(v, "pv", "local", "1Gi", "", "");
    CHECK_STR(feasible(fw, s, p), none);
    put_json(v, 1,
             "{'metadata':{'name':'pv','labels':{'disk':'ssd'}},'spec':{"
             "'storageClassName':'local','capacity':{'storage':'1Gi'},'accessModes':["
             "'ReadWriteOnce']},'status':{'phase':'Available'}}");
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    /* a claim whose class binds immediately, or that has none, is never matched here */
    put_json(v, 2, "{'metadata':{'name':'now'},'provisioner':'x','volumeBindingMode':'Immediate'}");
    unbound_claim(v, "w", "now", "1Gi", "ReadWriteOnce", "");
    CHECK_STR(feasible(fw, s, p),
              "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims.");
    unbound_claim(v, "w", "missing-class", "1Gi", "ReadWriteOnce", "");
    CHECK_STR(feasible(fw, s, p),
              "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims.");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v);
}

static void test_wffc_dynamic_topology(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a", "z1");
    add_node(s, "b", "z2");
    add_node(s, "c", "z1");
    sched_volumes *v = sched_volumes_new();
    sched_snapshot_set_volumes(s, v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    wffc_class(v, "fast", "tarema.local/hostpath",
               ",'allowedTopologies':[{'matchLabelExpressions':[{'key':"
               "'topology.kubernetes.io/zone','values':['z1']}]}]");
    unbound_claim(v, "w", "fast", "1Gi", "ReadWriteOnce", "");
    sched_pod *p = claim_pod(s, "p", "w");
    CHECK_STR(feasible(fw, s, p), "a,c"); /* provisioned where the class allows */
    const sched_volume_plan *pl = reserve_on(fw, s, p, "c");
    CHECK(pl && pl->n == 1 && pl->b[0].pv == NULL && strcmp(pl->node, "c") == 0);
    /* the node chosen for the claim (assumed, then the annotation) is its only node */
    CHECK_STR(feasible(fw, s, p), "c");
    sched_framework_unreserve(fw, s, p, sched_snapshot_node_index(s, "c"), 0);
    CHECK_STR(feasible(fw, s, p), "a,c");
    unbound_claim(v, "w", "fast", "1Gi", "ReadWriteOnce",
                  ",'annotations':{'volume.kubernetes.io/selected-node':'b'}");
    CHECK_STR(feasible(fw, s, p), "b"); /* kube checks only the node for such a claim */
    /* a matching PV wins over provisioning; without a provisioner nothing is provisioned */
    unbound_claim(v, "w", "fast", "1Gi", "ReadWriteOnce", "");
    free_pv(v, "pv-b", "fast", "1Gi", "b", "");
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    pl = reserve_on(fw, s, p, "b");
    CHECK(pl && pl->b[0].pv && strcmp(pl->b[0].pv, "pv-b") == 0);
    sched_framework_unreserve(fw, s, p, sched_snapshot_node_index(s, "b"), 0);
    wffc_class(v, "fast", "kubernetes.io/no-provisioner", "");
    CHECK_STR(feasible(fw, s, p), "b");
    wffc_class(v, "fast", "", "");
    CHECK_STR(feasible(fw, s, p), "b");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v);
}

/* Reserve after another pod's cycle (a gang's members are reserved after all their cycles). */
static void test_reserve_plan_through_framework(void) {
    sched_volumes *v;
    sched_snapshot *s = cluster(&v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    wffc_class(v, "local", "kubernetes.io/no-provisioner", "");
    free_pv(v, "pv-a", "local", "1Gi", "a", "");
    unbound_claim(v, "w1", "local", "1Gi", "ReadWriteOnce", "");
    sched_pod *p1 = claim_pod(s, "p1", "w1");
    sched_pod *plain = claim_pod(s, "q", "none");
    sched_decision d;
    tm_err err = {0};
    CHECK_INT(sched_framework_schedule(fw, s, p1, 0, &d, &err), 0);
    CHECK_INT(sched_framework_schedule(fw, s, plain, 0, &d, &err), 0); /* another cycle */
    CHECK_INT(sched_framework_reserve(fw, s, p1, sched_snapshot_node_index(s, "a"), &err), 0);
    const sched_volume_plan *pl =
        sched_volume_binding_plan(sched_framework_plugin_state(fw, "VolumeBinding"), "p1-uid");
    CHECK(pl && pl->b[0].pv && strcmp(pl->b[0].pv, "pv-a") == 0);
    /* the pod's claims count as used on a from Reserve on */
    CHECK_INT(sched_volumes_claim_users(v, "wf", "w1", NULL), 1);
    CHECK_INT(sched_volumes_claim_users(v, "wf", "w1", "p1-uid"), 0);
    sched_volume_plan *taken =
        sched_volume_binding_take(sched_framework_plugin_state(fw, "VolumeBinding"), "p1-uid");
    CHECK(taken == pl);
    CHECK(sched_volume_binding_plan(sched_framework_plugin_state(fw, "VolumeBinding"), "p1-uid") ==
          NULL);
    sched_volume_plan_free(taken);
    sched_pod_free(p1);
    sched_pod_free(plain);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v);
}

static void test_plan_status(void) {
    sched_volumes *v;
    sched_snapshot *s = cluster(&v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    wffc_class(v, "local", "kubernetes.io/no-provisioner", "");
    wffc_class(v, "fast", "tarema.local/hostpath", "");
    free_pv(v, "pv-a", "local", "1Gi", "a", "");
    unbound_claim(v, "w1", "local", "1Gi", "ReadWriteOnce", "");
    unbound_claim(v, "w2", "fast", "1Gi", "ReadWriteOnce", "");
    char spec[256];
    snprintf(spec, sizeof spec,
             ",'volumes':[{'name':'x','persistentVolumeClaim':{'claimName':'w1'}},{'name':'y',"
             "'persistentVolumeClaim':{'claimName':'w2'}}]");
    tm_err err = {0};
    sched_pod *p = incoming(s, podtext("p", "wf", "", spec), &err);
    CHECK_STR(feasible(fw, s, p), "a");
    reserve_on(fw, s, p, "a");
    sched_volume_plan *pl =
        sched_volume_binding_take(sched_framework_plugin_state(fw, "VolumeBinding"), "p-uid");
    CHECK(pl && pl->n == 2);
    if (!pl)
        goto out;
    char msg[256] = "";
    CHECK_INT(sched_volumes_plan_status(v, pl, msg, sizeof msg), 0); /* nothing written yet */
    /* the writes land: the PV names the claim, the claim the node; both undoable while unbound */
    put_json(v, 1,
             "{'metadata':{'name':'pv-a'},'spec':{'storageClassName':'local','capacity':{"
             "'storage':'1Gi'},'accessModes':['ReadWriteOnce'],'claimRef':{'namespace':'wf',"
             "'name':'w1','uid':'w1-uid'}},'status':{'phase':'Available'}}");
    unbound_claim(v, "w2", "fast", "1Gi", "ReadWriteOnce",
                  ",'annotations':{'volume.kubernetes.io/selected-node':'a'}");
    CHECK_INT(sched_volumes_plan_status(v, pl, msg, sizeof msg), 0);
    size_t static_i = pl->b[0].pv ? 0 : 1;
    CHECK(sched_volumes_plan_undoable(v, pl, 0));
    CHECK(sched_volumes_plan_undoable(v, pl, 1));
    /* the provisioner gives the node back: failed */
    unbound_claim(v, "w2", "fast", "1Gi", "ReadWriteOnce", "");
    CHECK_INT(sched_volumes_plan_status(v, pl, msg, sizeof msg), -1);
    CHECK_STR(msg, "selectedNode annotation reset for PVC \"w2\"");
    CHECK(!sched_volumes_plan_undoable(v, pl, 1 - static_i)); /* nothing of ours to undo */
    /* the PV went to another claim: failed */
    unbound_claim(v, "w2", "fast", "1Gi", "ReadWriteOnce",
                  ",'annotations':{'volume.kubernetes.io/selected-node':'a'}");
    put_json(v, 1,
             "{'metadata':{'name':'pv-a'},'spec':{'storageClassName':'local','capacity':{"
             "'storage':'1Gi'},'accessModes':['ReadWriteOnce'],'claimRef':{'namespace':'wf',"
             "'name':'thief'}},'status':{'phase':'Bound'}}");
    CHECK_INT(sched_volumes_plan_status(v, pl, msg, sizeof msg), -1);
    CHECK_STR(msg, "pv \"pv-a\" was bound to another claim (wf/thief)");
    /* both fully bound (bind-completed) to existing PVs: done */
    put_json(v, 1,
             "{'metadata':{'name':'pv-a'},'spec':{'claimRef':{'namespace':'wf','name':"
             "'w1'}},'status':{'phase':'Bound'}}");
    put_json(v, 1, "{'metadata':{'name':'pvc-w2'},'spec':{},'status':{'phase':'Bound'}}");
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'w1','uid':'w1-uid','annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv-a'}}");
    CHECK_INT(sched_volumes_plan_status(v, pl, msg, sizeof msg), 0); /* w2 still unbound */
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'w2','uid':'w2-uid','annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pvc-w2'}}");
    CHECK_INT(sched_volumes_plan_status(v, pl, msg, sizeof msg), 1);
    CHECK(!sched_volumes_plan_undoable(v, pl, 0)); /* bound: never undone */
    /* a claim deleted (or re-created under the same name) fails it */
    put_json(v, 0, "{'metadata':{'namespace':'wf','name':'w2','uid':'new-uid'},'spec':{}}");
    CHECK_INT(sched_volumes_plan_status(v, pl, msg, sizeof msg), -1);
    CHECK_STR(msg, "persistentvolumeclaim \"w2\" was deleted");
out:
    sched_volume_plan_free(pl);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v);
}

static void test_ephemeral_claims(void) {
    sched_volumes *v;
    sched_snapshot *s = cluster(&v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    tm_err err = {0};
    sched_pod *p =
        incoming(s, podtext("p", "wf", "", ",'volumes':[{'name':'tmp','ephemeral':{}}]"), &err);
    CHECK(p && p->ephemeral_claims == 1);
    CHECK_STR(feasible(fw, s, p), "0/3 nodes are available: 3 waiting for ephemeral volume "
                                  "controller to create the persistentvolumeclaim \"p-tmp\".");
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'p-tmp','uid':'c1','ownerReferences':[{"
             "'uid':'someone-else','controller':true}],'annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv'}}");
    put_json(v, 1, "{'metadata':{'name':'pv'},'spec':{}}");
    CHECK_STR(feasible(fw, s, p), "0/3 nodes are available: 3 PVC wf/p-tmp was not created for "
                                  "pod wf/p (pod is not owner).");
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'p-tmp','uid':'c1','ownerReferences':[{"
             "'uid':'p-uid','controller':true}],'annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv'}}");
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v);
}

static void test_read_write_once_pod(void) {
    sched_volumes *v;
    sched_snapshot *s = cluster(&v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    put_json(v, 1, "{'metadata':{'name':'pv'},'spec':{}}");
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'solo','uid':'u','annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'accessModes':["
             "'ReadWriteOncePod'],'volumeName':'pv'}}");
    sched_pod *p = claim_pod(s, "p", "solo");
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    char *claims[] = {"solo"};
    CHECK_INT(sched_volumes_pod_use(v, "other-uid", "wf", "b", claims, 1), 0);
    CHECK_STR(feasible(fw, s, p), "0/3 nodes are available: 3 node(s) unavailable due to "
                                  "PersistentVolumeClaim with ReadWriteOncePod access mode "
                                  "already in-use by another pod.");
    CHECK_STR(sched_filter_name(SCHED_FILTER_VOLUME_RESTRICTIONS), "VolumeRestrictions");
    CHECK(sched_filter_resolvable(SCHED_FILTER_VOLUME_RESTRICTIONS, 0)); /* preemption may help */
    /* the pod itself (reserved earlier, bind failed) is no conflict */
    CHECK_INT(sched_volumes_pod_use(v, "other-uid", "", "", NULL, 0), 0);
    CHECK_INT(sched_volumes_pod_use(v, "p-uid", "wf", "b", claims, 1), 0);
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    /* ReadWriteOnce: other users do not matter to VolumeRestrictions */
    CHECK_INT(sched_volumes_pod_use(v, "other-uid", "wf", "b", claims, 1), 0);
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'solo','annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'accessModes':["
             "'ReadWriteOnce'],'volumeName':'pv'}}");
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v);
}

static void test_volume_zone(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a", "z1");
    add_node(s, "b", "z2");
    add_node(s, "c", NULL); /* no zone label: not constrained */
    sched_volumes *v = sched_volumes_new();
    sched_snapshot_set_volumes(s, v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'w','annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv'}}");
    put_json(v, 1,
             "{'metadata':{'name':'pv','labels':{'topology.kubernetes.io/zone':'z1'}},"
             "'spec':{}}");
    sched_pod *p = claim_pod(s, "p", "w");
    CHECK_STR(feasible(fw, s, p), "a,c");
    uint32_t detail;
    CHECK_INT(
        sched_framework_node_status(fw, (size_t)sched_snapshot_node_index(s, "b"), &detail, NULL),
        SCHED_FILTER_VOLUME_ZONE);
    CHECK_STR(feasible(fw, s, p), "a,c");
    put_json(v, 1,
             "{'metadata':{'name':'pv','labels':{'topology.kubernetes.io/zone':'z2__z1'}},"
             "'spec':{}}");
    CHECK_STR(feasible(fw, s, p), "a,b,c");
    /* a beta label on the PV is matched against the node's GA label */
    put_json(v, 1,
             "{'metadata':{'name':'pv','labels':{'failure-domain.beta.kubernetes.io/zone':"
             "'z2'}},'spec':{}}");
    CHECK_STR(feasible(fw, s, p), "b,c");
    put_json(v, 1,
             "{'metadata':{'name':'pv','labels':{'topology.kubernetes.io/zone':'z3'}},"
             "'spec':{}}");
    CHECK_STR(feasible(fw, s, p), "c"); /* c has no zone label: not constrained */
    char reason[128];
    sched_filter_reason(s, sched_snapshot_node_by_name(s, "a"), p, SCHED_FILTER_VOLUME_ZONE, 0,
                        reason, sizeof reason);
    CHECK_STR(reason, "node(s) had no available volume zone");
    CHECK(!sched_filter_resolvable(SCHED_FILTER_VOLUME_ZONE, 0));
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v);
}

static void test_node_volume_limits(void) {
    sched_volumes *v;
    sched_snapshot *s = cluster(&v);
    sched_framework *fw = sched_policy_new("fair", NULL);
    put_json(v, 3,
             "{'metadata':{'name':'a'},'spec':{'drivers':[{'name':'csi.x','allocatable':{"
             "'count':1}},{'name':'csi.y'}]}}");
    put_json(v, 3,
             "{'metadata':{'name':'b'},'spec':{'drivers':[{'name':'csi.x','allocatable':{"
             "'count':2}}]}}");
    put_json(v, 1,
             "{'metadata':{'name':'pv1'},'spec':{'csi':{'driver':'csi.x','volumeHandle':"
             "'h1'}}}");
    put_json(v, 1,
             "{'metadata':{'name':'pv2'},'spec':{'csi':{'driver':'csi.x','volumeHandle':"
             "'h2'}}}");
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'c1','annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv1'}}");
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'c2','annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv2'}}");
    char *c1[] = {"c1"};
    CHECK_INT(sched_volumes_pod_use(v, "u1", "wf", "a", c1, 1), 0);
    CHECK_INT(sched_volumes_pod_use(v, "u2", "wf", "b", c1, 1), 0);
    sched_pod *p = claim_pod(s, "p", "c2");
    /* a: 1 attached + 1 new > 1; b: 1 + 1 <= 2; c: no CSINode, no limit */
    CHECK_STR(feasible(fw, s, p), "b,c");
    uint32_t detail;
    CHECK_INT(
        sched_framework_node_status(fw, (size_t)sched_snapshot_node_index(s, "a"), &detail, NULL),
        SCHED_FILTER_VOLUME_LIMITS);
    char reason[128];
    sched_filter_reason(s, sched_snapshot_node_by_name(s, "a"), p, SCHED_FILTER_VOLUME_LIMITS, 0,
                        reason, sizeof reason);
    CHECK_STR(reason, "node(s) exceed max volume count");
    /* the volume already attached there counts once */
    sched_pod *q = claim_pod(s, "q", "c1");
    CHECK_STR(feasible(fw, s, q), "a,b,c");
    /* b full too after another pod attaches pv2 there */
    char *c2[] = {"c2"};
    CHECK_INT(sched_volumes_pod_use(v, "u3", "wf", "b", c2, 1), 0);
    sched_pod *r = claim_pod(s, "r", "c3");
    put_json(v, 1,
             "{'metadata':{'name':'pv3'},'spec':{'csi':{'driver':'csi.x','volumeHandle':"
             "'h3'}}}");
    put_json(v, 0,
             "{'metadata':{'namespace':'wf','name':'c3','annotations':{"
             "'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv3'}}");
    CHECK_STR(feasible(fw, s, r), "c");
    sched_pod_free(p);
    sched_pod_free(q);
    sched_pod_free(r);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    sched_volumes_free(v);
}

int main(void) {
    RUN(test_claims_from_pod);
    RUN(test_bound_volume_node_affinity);
    RUN(test_claim_problems);
    RUN(test_untracked_snapshot_has_no_filter);
    RUN(test_bad_volume_json);
    RUN(test_wffc_static_smallest_fit);
    RUN(test_wffc_static_rules);
    RUN(test_wffc_dynamic_topology);
    RUN(test_reserve_plan_through_framework);
    RUN(test_plan_status);
    RUN(test_ephemeral_claims);
    RUN(test_read_write_once_pod);
    RUN(test_volume_zone);
    RUN(test_node_volume_limits);
    return TEST_SUMMARY();
}
