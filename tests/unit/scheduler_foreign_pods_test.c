/* scheduler_foreign_pods_test.c: every pod in the cluster counts, whoever placed it and
 * whenever (issue 30). Pods bound by another scheduler (a DaemonSet, kube-scheduler) and pods
 * bound before a restart reach the cache only through the informer: transform
 * (sched_cache_pod_transform) then watch event (sched_cache_pod_event), exactly as the live
 * loop feeds them. Each case of the table, with the same pods under kube-scheduler's
 * rules (two 8-core nodes):
 *   hostPort 9100 taken on every node by another scheduler's pods  -> no node (NodePorts)
 *   others' pods with required anti-affinity against app=y; new app=y pod -> no node
 *   new pod with required anti-affinity to app=x, app=x on every node -> no node
 *   new pod with required affinity to app=x placed by another scheduler -> that node
 *   anti-affinity app=r (hostname), three pods on two nodes, restart after the first: the new
 *   process rebuilds the same record of the first pod; 2 bound, the third has no node
 * and the record is the same whether Reserve made it or the informer did. And requeueing on
 * the events that can help: a pod waiting for affinity or spread is retried when a pod it
 * matches is bound (the cache's pod_bound hook, sched_pod_helped_by, the queue's
 * sched_queue_move_matching), a label change of a bound pod counts as a cluster change. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/queue.h"
#include "scheduler_cache_helpers.h"

/* A pod's JSON text: name (uid name-uid) in namespace ns, schedulerName, node ("" = pending),
 * labels ("'k':'v',..."), container extra (",'ports':[...]"), spec extra (",'affinity':{...}"). */
static char *pod_text(const char *name, const char *sched, const char *node, const char *labels,
                      const char *ctr, const char *spec) {
    static char buf[4096];
    char nn[96] = "";
    if (*node)
        snprintf(nn, sizeof nn, ",'nodeName':'%s'", node);
    snprintf(buf, sizeof buf,
             "{'metadata':{'name':'%s','namespace':'ns','uid':'%s-uid','labels':{%s},"
             "'annotations':{'kubectl.kubernetes.io/last-applied-configuration':'{}'}},"
             "'spec':{'schedulerName':'%s'%s,'containers':[{'name':'c','image':'x',"
             "'resources':{'requests':{'cpu':'100m'}}%s}]%s},'status':{'phase':'%s'}}",
             name, name, labels, sched, nn, ctr, spec, *node ? "Running" : "Pending");
    return buf;
}

/* Another scheduler's pod, bound to node, through the informer's path. */
static void foreign(sched_cache *c, const char *name, const char *node, const char *labels,
                    const char *ctr, const char *spec) {
    CHECK_INT(cache_feed(c, TM_WATCH_ADDED,
                         pod_text(name, "default-scheduler", node, labels, ctr, spec), NULL),
              0);
}

static const char *const port9100 = ",'ports':[{'containerPort':9100,'hostPort':9100}]";

static void test_host_port_taken_by_daemonset(void) {
    sched_cache *c = cache_cluster(NULL);
    for (int i = 0; i < 2; i++) {
        char name[32], node[2] = {(char)('a' + i), 0};
        snprintf(name, sizeof name, "node-exporter-%c", 'a' + i);
        CHECK_INT(cache_feed(c, TM_WATCH_ADDED,
                             pod_text(name, "default-scheduler", node, "'app':'node-exporter'",
                                      port9100, ""),
                             NULL),
                  0);
    }
    const char *r =
        cache_schedule(c, pod_text("exporter2", "tarema-scheduler", "", "", port9100, ""), false);
    CHECKF(strstr(r, "0/2 nodes are available") &&
               strstr(r, "2 node(s) didn't have free ports for the requested pod ports"),
           "%s", r);
    /* another port still fits */
    CHECK_STR(cache_schedule(c,
                             pod_text("other-port", "tarema-scheduler", "", "",
                                      ",'ports':[{'containerPort':9200,'hostPort':9200}]", ""),
                             false),
              "a");
    sched_cache_free(c);
}

static const char *anti(const char *app) {
    static char buf[512];
    snprintf(buf, sizeof buf,
             ",'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
             "[{'labelSelector':{'matchLabels':{'app':'%s'}},'topologyKey':"
             "'kubernetes.io/hostname'}]}}",
             app);
    return buf;
}

static const char *affinity(const char *app) {
    static char buf[512];
    snprintf(buf, sizeof buf,
             ",'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
             "[{'labelSelector':{'matchLabels':{'app':'%s'}},'topologyKey':"
             "'kubernetes.io/hostname'}]}}",
             app);
    return buf;
}

static void test_existing_anti_affinity_of_foreign_pods(void) {
    sched_cache *c = cache_cluster(NULL);
    CHECK_INT(
        cache_feed(c, TM_WATCH_ADDED,
                   pod_text("guard-a", "default-scheduler", "a", "'app':'guard'", "", anti("y")),
                   NULL),
        0);
    CHECK_INT(
        cache_feed(c, TM_WATCH_ADDED,
                   pod_text("guard-b", "default-scheduler", "b", "'app':'guard'", "", anti("y")),
                   NULL),
        0);
    const char *r =
        cache_schedule(c, pod_text("y1", "tarema-scheduler", "", "'app':'y'", "", ""), false);
    CHECKF(strstr(r, "2 node(s) didn't satisfy existing pods anti-affinity rules"), "%s", r);
    /* a pod the terms do not select is not kept away */
    CHECK_STR(cache_schedule(c, pod_text("z1", "tarema-scheduler", "", "'app':'z'", "", ""), false),
              "a");
    sched_cache_free(c);
}

static void test_own_anti_affinity_to_foreign_pods(void) {
    sched_cache *c = cache_cluster(NULL);
    foreign(c, "x-a", "a", "'app':'x'", "", "");
    foreign(c, "x-b", "b", "'app':'x'", "", "");
    const char *r =
        cache_schedule(c, pod_text("w", "tarema-scheduler", "", "", "", anti("x")), false);
    CHECKF(strstr(r, "2 node(s) didn't match pod anti-affinity rules"), "%s", r);
    sched_cache_free(c);
}

static void test_own_affinity_to_foreign_pod(void) {
    sched_cache *c = cache_cluster(NULL);
    foreign(c, "x-b", "b", "'app':'x'", "", "");
    CHECK_STR(
        cache_schedule(c, pod_text("w", "tarema-scheduler", "", "", "", affinity("x")), false),
        "b");
    sched_cache_free(c);
}

/* Two records of a pod are the same: namespace, labels, ports, every term. */
static bool same_terms(const sched_pod_term *a, const sched_pod_term *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char *sa = a[i].selector ? tm_selector_string(a[i].selector) : NULL;
        char *sb = b[i].selector ? tm_selector_string(b[i].selector) : NULL;
        bool same = (!sa && !sb) || (sa && sb && strcmp(sa, sb) == 0);
        free(sa);
        free(sb);
        same = same && strcmp(a[i].topology_key, b[i].topology_key) == 0 &&
               a[i].n_namespaces == b[i].n_namespaces &&
               a[i].all_namespaces == b[i].all_namespaces && a[i].ns_selector == b[i].ns_selector;
        for (size_t k = 0; same && k < a[i].n_namespaces; k++)
            same = strcmp(a[i].namespaces[k], b[i].namespaces[k]) == 0;
        if (!same)
            return false;
    }
    return true;
}

static bool same_meta(const sched_pod_meta *a, const sched_pod_meta *b) {
    if (!a || !b || strcmp(a->ns, b->ns) != 0 || !sched_labels_equal(a->labels, b->labels) ||
        a->n_ports != b->n_ports || a->n_anti != b->n_anti || a->n_aff != b->n_aff ||
        a->terminating != b->terminating || !a->pref != !b->pref)
        return false;
    for (size_t i = 0; i < a->n_ports; i++)
        if (a->ports[i].port != b->ports[i].port || a->ports[i].proto != b->ports[i].proto ||
            strcmp(a->ports[i].ip, b->ports[i].ip) != 0)
            return false;
    if (!same_terms(a->anti, b->anti, a->n_anti) || !same_terms(a->aff, b->aff, a->n_aff))
        return false;
    if (!a->pref)
        return true;
    if (a->pref->n_aff != b->pref->n_aff || a->pref->n_anti != b->pref->n_anti)
        return false;
    for (size_t i = 0; i < a->pref->n_aff; i++)
        if (a->pref->aff_weight[i] != b->pref->aff_weight[i])
            return false;
    for (size_t i = 0; i < a->pref->n_anti; i++)
        if (a->pref->anti_weight[i] != b->pref->anti_weight[i])
            return false;
    return same_terms(a->pref->aff, b->pref->aff, a->pref->n_aff) &&
           same_terms(a->pref->anti, b->pref->anti, a->pref->n_anti);
}

/* The pod as the API server shows it once bound: the same JSON with spec.nodeName. */
static const char *bound_text(const char *pending, const char *node) {
    static char buf[4200];
    json_t *j = J(pending);
    json_object_set_new(json_object_get(j, "spec"), "nodeName", json_string(node));
    json_object_set_new(json_object_get(j, "status"), "phase", json_string("Running"));
    char *t = json_dumps(j, JSON_COMPACT);
    snprintf(buf, sizeof buf, "%s", t);
    free(t);
    json_decref(j);
    return buf;
}

static void test_restart_rebuilds_the_same_state(void) {
    /* the first process places r1 (Reserve's record), then sees it bound */
    sched_cache *old = cache_cluster(NULL);
    char r1[4096];
    snprintf(r1, sizeof r1, "%s",
             pod_text("r1", "tarema-scheduler", "", "'app':'r','tier':'t1'",
                      ",'ports':[{'containerPort':80,'hostPort':8080,'protocol':'UDP'}]",
                      ",'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuring"
                      "Execution':[{'labelSelector':{'matchLabels':{'app':'r'}},"
                      "'topologyKey':'kubernetes.io/hostname'}],'preferredDuringScheduling"
                      "IgnoredDuringExecution':[{'weight':40,'podAffinityTerm':{'labelSelector':"
                      "{'matchExpressions':[{'key':'tier','operator':'In','values':['t2']}]},"
                      "'namespaces':['ns','other'],'topologyKey':'zone'}}]},'podAffinity':{"
                      "'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':7,"
                      "'podAffinityTerm':{'labelSelector':{'matchLabels':{'tier':'t1'}},"
                      "'namespaceSelector':{},'topologyKey':'kubernetes.io/hostname'}}]}}"));
    const char *node = cache_schedule(old, r1, true);
    CHECK_STR(node, "a");
    char where[8];
    snprintf(where, sizeof where, "%s", node);
    const sched_pod_meta *reserved = sched_snapshot_pod_meta(sched_cache_snapshot(old), "r1-uid");
    CHECK(reserved && reserved->n_anti == 1 && reserved->n_ports == 1 && reserved->pref &&
          reserved->pref->n_aff == 1 && reserved->pref->n_anti == 1);
    /* the record Reserve made and the one the informer makes of the bound pod are the same */
    sched_cache *fresh = cache_cluster(NULL);
    CHECK_INT(cache_feed(fresh, TM_WATCH_ADDED, bound_text(r1, where), NULL), 0);
    CHECK(same_meta(reserved, sched_snapshot_pod_meta(sched_cache_snapshot(fresh), "r1-uid")));
    json_t *bj = sched_cache_pod_transform(old, J(bound_text(r1, where)));
    tm_err err = {0};
    CHECK_INT(sched_cache_pod_event(old, TM_WATCH_MODIFIED, bj, NULL, &err), 0);
    json_decref(bj);
    CHECK(!sched_cache_is_assumed(old, "r1-uid"));
    CHECK(same_meta(sched_snapshot_pod_meta(sched_cache_snapshot(old), "r1-uid"),
                    sched_snapshot_pod_meta(sched_cache_snapshot(fresh), "r1-uid")));
    sched_cache_free(old);
    /* the restarted process places r2 on the other node and has none for r3 */
    const char *r2 = pod_text("r2", "tarema-scheduler", "", "'app':'r'", "", anti("r"));
    CHECK_STR(cache_schedule(fresh, r2, true), "b");
    const char *r3 = cache_schedule(
        fresh, pod_text("r3", "tarema-scheduler", "", "'app':'r'", "", anti("r")), false);
    CHECKF(strstr(r3, "0/2 nodes are available") && strstr(r3, "anti-affinity"), "%s", r3);
    sched_cache_free(fresh);
}

/* A status-only update of a bound pod keeps its record; a label change replaces it; deleting
 * it releases everything (the port is free again). */
static void test_updates_and_delete(void) {
    sched_cache *c = cache_cluster(NULL);
    char text[4096];
    snprintf(text, sizeof text, "%s",
             pod_text("ne", "default-scheduler", "a", "'app':'x'", port9100, ""));
    CHECK_INT(cache_feed(c, TM_WATCH_ADDED, text, NULL), 0);
    json_t *old = sched_cache_pod_transform(c, J(text));
    json_t *upd = json_deep_copy(old);
    json_object_set_new(json_object_get(upd, "status"), "phase", json_string("Running"));
    tm_err err = {0};
    const sched_pod_meta *before = sched_snapshot_pod_meta(sched_cache_snapshot(c), "ne-uid");
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, upd, old, &err), 0);
    CHECK(sched_snapshot_pod_meta(sched_cache_snapshot(c), "ne-uid") == before); /* untouched */
    json_t *relabel = json_deep_copy(upd);
    json_object_set_new(json_object_get(relabel, "metadata"), "labels",
                        json_pack("{s:s}", "app", "y"));
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, relabel, upd, &err), 0);
    const sched_pod_meta *m = sched_snapshot_pod_meta(sched_cache_snapshot(c), "ne-uid");
    CHECK(m && m->labels && strcmp(sched_labels_get(m->labels, "app"), "y") == 0);
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_DELETED, relabel, relabel, &err), 0);
    CHECK(sched_snapshot_pod_meta(sched_cache_snapshot(c), "ne-uid") == NULL);
    CHECK_STR(cache_schedule(c, pod_text("ne2", "tarema-scheduler", "", "", port9100, ""), false),
              "a");
    json_decref(old);
    json_decref(upd);
    json_decref(relabel);
    sched_cache_free(c);
}

/* ---- requeue on the events that can help ---- */

typedef struct hooks_rec {
    int bound, changed;
    sched_queue *q;
    size_t moved;
} hooks_rec;

static bool helped(void *m, const sched_pod *p) {
    return sched_pod_helped_by(p, m);
}

static void on_bound(void *ud, const sched_pod_meta *m) {
    hooks_rec *r = ud;
    r->bound++;
    if (r->q)
        r->moved += sched_queue_move_matching(r->q, 0, helped, (void *)m);
}

static void on_changed(void *ud) {
    ((hooks_rec *)ud)->changed++;
}

static int by_name(void *ud, const sched_pod *a, const sched_pod *b) {
    return strcmp(a->name, b->name);
}

/* Our pod (JSON text) into the queue, popped and found unschedulable. */
static void unschedulable(sched_cache *c, sched_queue *q, const char *text) {
    tm_err err = {0};
    json_t *j = J(text);
    sched_pod *p = sched_pod_from_json(sched_cache_snapshot(c), j, NULL, &err);
    json_decref(j);
    CHECK(p != NULL);
    CHECK_INT(sched_queue_add(q, p, 0), 0);
    sched_pod *popped = sched_queue_pop(q, 0);
    CHECK(popped != NULL);
    if (popped)
        CHECK_INT(sched_queue_unschedulable(q, popped->uid, 0), 0);
}

/* The hint for a taint a node gained (cache.h node_taints_gained): only pods with a
 * DoNotSchedule spread constraint honouring taints, their own or, with none of their own, a
 * configured default. */
static void test_taint_gained_helps_only_spread_honouring_taints(void) {
    sched_cache *c = cache_cluster(NULL);
    static const char *const hard_honour =
        ",'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':"
        "'DoNotSchedule','nodeTaintsPolicy':'Honor','labelSelector':{'matchLabels':{'a':'b'}}}]";
    static const char *const hard_ignore =
        ",'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':"
        "'DoNotSchedule','labelSelector':{'matchLabels':{'a':'b'}}}]";
    static const char *const soft_honour =
        ",'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':"
        "'ScheduleAnyway','nodeTaintsPolicy':'Honor','labelSelector':{'matchLabels':{'a':'b'}}}]";
    struct {
        const char *spec;
        bool defaults_honour, want;
    } cases[] = {
        {hard_honour, false, true}, {hard_ignore, false, false},
        {hard_ignore, true, false}, {soft_honour, false, false},
        {soft_honour, true, false}, {"", false, false},
        {"", true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tm_err err = {0};
        json_t *j = J(pod_text("p", "tarema", "", "'a':'b'", "", cases[i].spec));
        sched_pod *p = sched_pod_from_json(sched_cache_snapshot(c), j, NULL, &err);
        json_decref(j);
        CHECKF(p != NULL, "case %zu: %s", i, err.msg);
        if (p)
            CHECKF(sched_pod_spread_honours_taints(p, cases[i].defaults_honour) == cases[i].want,
                   "case %zu: want %d", i, cases[i].want);
        sched_pod_free(p);
    }
    sched_cache_free(c);
}

static void test_requeue_when_a_matching_pod_is_bound(void) {
    hooks_rec r = {0};
    sched_cache_hooks h = {.pod_bound = on_bound, .cluster_changed = on_changed, .ud = &r};
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema-scheduler", NULL, NULL, &h, &err);
    r.q = sched_queue_new(by_name, NULL, 1000, 8000);
    unschedulable(c, r.q, pod_text("wants-x", "tarema-scheduler", "", "", "", affinity("x")));
    unschedulable(c, r.q,
                  pod_text("spread-s", "tarema-scheduler", "", "'app':'s'", "",
                           ",'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':"
                           "'kubernetes.io/hostname','whenUnsatisfiable':'DoNotSchedule',"
                           "'labelSelector':{'matchLabels':{'app':'s'}}}]"));
    unschedulable(c, r.q, pod_text("avoids-x", "tarema-scheduler", "", "", "", anti("x")));
    CHECK_INT(sched_queue_count(r.q, SCHED_Q_UNSCHEDULABLE), 3);
    /* a pod no one waits for: nothing moves */
    foreign(c, "z", "a", "'app':'z'", "", "");
    CHECK_INT(r.bound, 1);
    CHECK_INT(r.moved, 0);
    /* app=s in another namespace does not count for the spread constraint */
    char other[4096];
    snprintf(other, sizeof other, "%s",
             pod_text("s-elsewhere", "default-scheduler", "a", "'app':'s'", "", ""));
    char *nsat = strstr(other, "'namespace':'ns'");
    if (nsat)
        memcpy(nsat, "'namespace':'nt'", 16);
    CHECK_INT(cache_feed(c, TM_WATCH_ADDED, other, NULL), 0);
    CHECK_INT(r.moved, 0);
    /* app=x bound: the pod with affinity to it moves, the one with anti-affinity stays */
    foreign(c, "x", "b", "'app':'x'", "", "");
    CHECK_INT(r.moved, 1);
    CHECK_INT(sched_queue_state(r.q, "wants-x-uid"), SCHED_Q_BACKOFF);
    CHECK_INT(sched_queue_state(r.q, "avoids-x-uid"), SCHED_Q_UNSCHEDULABLE);
    /* app=s in its namespace: the spread pod moves */
    foreign(c, "s", "b", "'app':'s'", "", "");
    CHECK_INT(r.moved, 2);
    CHECK_INT(sched_queue_state(r.q, "spread-s-uid"), SCHED_Q_BACKOFF);
    /* a bound pod's labels change: a cluster change (it may no longer be what some pod avoids) */
    int changed = r.changed;
    const char *x0 = pod_text("x", "default-scheduler", "b", "'app':'x'", "", "");
    json_t *old = sched_cache_pod_transform(c, J(x0));
    json_t *upd = json_deep_copy(old);
    json_object_set_new(json_object_get(upd, "metadata"), "labels", json_pack("{s:s}", "app", "q"));
    CHECK_INT(sched_cache_pod_event(c, TM_WATCH_MODIFIED, upd, old, &err), 0);
    CHECK(r.changed > changed);
    json_decref(old);
    json_decref(upd);
    sched_queue_free(r.q);
    sched_cache_free(c);
}

/* Two required affinity terms: a bound pod helps only when it satisfies both, as one placed pod
 * must in kube-scheduler's InterPodAffinity hint (podMatchesAllAffinityTerms). */
static void test_requeue_needs_every_affinity_term(void) {
    hooks_rec r = {0};
    sched_cache_hooks h = {.pod_bound = on_bound, .ud = &r};
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema-scheduler", NULL, NULL, &h, &err);
    r.q = sched_queue_new(by_name, NULL, 1000, 8000);
    unschedulable(
        c, r.q,
        pod_text("wants-x-t", "tarema-scheduler", "", "", "",
                 ",'affinity':{'podAffinity':{'requiredDuringSchedulingIgnored"
                 "DuringExecution':[{'labelSelector':{'matchLabels':{'app':'x'}},"
                 "'topologyKey':'kubernetes.io/hostname'},{'labelSelector':"
                 "{'matchLabels':{'tier':'t'}},'topologyKey':'kubernetes.io/hostname'}]}}"));
    foreign(c, "only-x", "a", "'app':'x'", "", "");
    CHECK_INT(r.moved, 0);
    CHECK_INT(sched_queue_state(r.q, "wants-x-t-uid"), SCHED_Q_UNSCHEDULABLE);
    foreign(c, "x-and-t", "a", "'app':'x','tier':'t'", "", "");
    CHECK_INT(r.moved, 1);
    CHECK_INT(sched_queue_state(r.q, "wants-x-t-uid"), SCHED_Q_BACKOFF);
    sched_queue_free(r.q);
    sched_cache_free(c);
}

/* A bound pod resized down in place frees capacity: a cluster change, so pods waiting for room
 * are retried (kube-scheduler's NodeResourcesFit hint for a scaled-down pod); resized up or
 * left as it is, it frees nothing. */
static void test_resize_down_is_a_cluster_change(void) {
    hooks_rec r = {0};
    sched_cache_hooks h = {.pod_bound = on_bound, .cluster_changed = on_changed, .ud = &r};
    sched_cache *c = cache_cluster(&h);
    static const char *const sized =
        ",'status':{'phase':'Running','containerStatuses':[{'name':'c',"
        "'allocatedResources':{'cpu':'%s'},'resources':{'requests':{'cpu':'%s'}}}]}}";
    char base[4096], big[4096], small[4096];
    snprintf(base, sizeof base, "%s", pod_text("r", "default-scheduler", "a", "", "", ""));
    char *st = strstr(base, ",'status':");
    CHECK(st != NULL);
    if (!st) {
        sched_cache_free(c);
        return;
    }
    *st = '\0';
    snprintf(big, sizeof big, "%s", base);
    snprintf(big + strlen(big), sizeof big - strlen(big), sized, "4", "4");
    snprintf(small, sizeof small, "%s", base);
    snprintf(small + strlen(small), sizeof small - strlen(small), sized, "1", "1");
    CHECK_INT(cache_feed(c, TM_WATCH_ADDED, big, NULL), 0);
    const sched_node *a = sched_snapshot_node_by_name(sched_cache_snapshot(c), "a");
    CHECK(a && a->requested.v[SCHED_RES_CPU] == 4000);
    int changed = r.changed;
    CHECK_INT(cache_feed(c, TM_WATCH_MODIFIED, big, big), 0); /* nothing changed */
    CHECK_INT(r.changed, changed);
    CHECK_INT(cache_feed(c, TM_WATCH_MODIFIED, small, big), 0); /* 4 -> 1 core */
    CHECK(a && a->requested.v[SCHED_RES_CPU] == 1000);
    CHECK_INT(r.changed, changed + 1);
    CHECK_INT(cache_feed(c, TM_WATCH_MODIFIED, big, small), 0); /* 1 -> 4: frees nothing */
    CHECK_INT(r.changed, changed + 1);
    sched_cache_free(c);
}

int main(void) {
    RUN(test_host_port_taken_by_daemonset);
    RUN(test_existing_anti_affinity_of_foreign_pods);
    RUN(test_own_anti_affinity_to_foreign_pods);
    RUN(test_own_affinity_to_foreign_pod);
    RUN(test_restart_rebuilds_the_same_state);
    RUN(test_updates_and_delete);
    RUN(test_requeue_when_a_matching_pod_is_bound);
    RUN(test_taint_gained_helps_only_spread_honouring_taints);
    RUN(test_resize_down_is_a_cluster_change);
    RUN(test_requeue_needs_every_affinity_term);
    return TEST_SUMMARY();
}
