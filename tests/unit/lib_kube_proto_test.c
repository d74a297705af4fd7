/* lib_kube_proto_test.c: lib/kube_proto.h on what a real kube-apiserver 1.35.4 sent
 * (tests/data/proto/, made by tests/data/proto/capture.sh): the pod list, the node list, a
 * watch stream and a 410 watch, each decoded from protobuf and compared field by field with
 * the JSON the same server gave for the same objects; then bad input of every kind. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "proto_captures.h"
#include "lib/fileutil.h"
#include "lib/kube_proto.h"

typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta ObjectMeta;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time Time;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__LabelSelector LabelSelector;
typedef K8s__Io__Apimachinery__Pkg__Util__Intstr__IntOrString IntOrString;
typedef K8s__Io__Api__Core__V1__Pod Pod;
typedef K8s__Io__Api__Core__V1__Node Node;
typedef K8s__Io__Api__Core__V1__Container Container;

static const char *js(json_t *o, const char *k) {
    return json_string_value(json_object_get(o, k));
}

/* A string the JSON may omit (empty) against protobuf's NULL or "". */
#define CHECK_OPT_STR(pb, json)                                                                    \
    do {                                                                                           \
        const char *p_ = (pb), *j_ = (json);                                                       \
        CHECK_STR(p_ ? p_ : "", j_ ? j_ : "");                                                     \
    } while (0)

/* metav1.Time is RFC 3339 with seconds in JSON, {seconds, nanos} in protobuf. */
static void check_time(const Time *t, json_t *j) {
    if (!json_is_string(j)) {
        CHECKF(!t, "protobuf has a time the JSON does not");
        return;
    }
    CHECK(t != NULL);
    if (!t)
        return;
    time_t s = (time_t)t->seconds;
    struct tm tmv;
    char buf[32];
    gmtime_r(&s, &tmv);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    CHECK_STR(buf, json_string_value(j));
}

/* A protobuf map (repeated {key, value} entries, value a string) against a JSON object. */
#define CHECK_STR_MAP(n, entries, jobj)                                                            \
    do {                                                                                           \
        json_t *m_ = (jobj);                                                                       \
        CHECK_INT((n), json_object_size(m_));                                                      \
        for (size_t i_ = 0; i_ < (n); i_++)                                                        \
            CHECK_STR((entries)[i_]->value,                                                        \
                      json_string_value(json_object_get(m_, (entries)[i_]->key)));                 \
    } while (0)
/* The same with Quantity values ({string}). */
#define CHECK_QTY_MAP(n, entries, jobj)                                                            \
    do {                                                                                           \
        json_t *m_ = (jobj);                                                                       \
        CHECK_INT((n), json_object_size(m_));                                                      \
        for (size_t i_ = 0; i_ < (n); i_++)                                                        \
            CHECK_STR((entries)[i_]->value ? (entries)[i_]->value->string : NULL,                  \
                      json_string_value(json_object_get(m_, (entries)[i_]->key)));                 \
    } while (0)

static void check_meta(const ObjectMeta *m, json_t *j) {
    CHECK(m != NULL);
    if (!m)
        return;
    CHECK_OPT_STR(m->name, js(j, "name"));
    CHECK_OPT_STR(m->namespace_, js(j, "namespace"));
    CHECK_OPT_STR(m->uid, js(j, "uid"));
    CHECK_OPT_STR(m->resourceversion, js(j, "resourceVersion"));
    CHECK_INT(m->generation, json_integer_value(json_object_get(j, "generation")));
    check_time(m->creationtimestamp, json_object_get(j, "creationTimestamp"));
    check_time(m->deletiontimestamp, json_object_get(j, "deletionTimestamp"));
    CHECK_STR_MAP(m->n_labels, m->labels, json_object_get(j, "labels"));
    CHECK_STR_MAP(m->n_annotations, m->annotations, json_object_get(j, "annotations"));
    json_t *owners = json_object_get(j, "ownerReferences");
    CHECK_INT(m->n_ownerreferences, json_array_size(owners));
    for (size_t i = 0; i < m->n_ownerreferences && i < json_array_size(owners); i++) {
        json_t *o = json_array_get(owners, i);
        CHECK_STR(m->ownerreferences[i]->kind, js(o, "kind"));
        CHECK_STR(m->ownerreferences[i]->name, js(o, "name"));
        CHECK_STR(m->ownerreferences[i]->uid, js(o, "uid"));
        CHECK_INT(m->ownerreferences[i]->has_controller && m->ownerreferences[i]->controller,
                  json_is_true(json_object_get(o, "controller")));
    }
    CHECK_INT(m->n_managedfields, json_array_size(json_object_get(j, "managedFields")));
}

static void check_selector(const LabelSelector *s, json_t *j) {
    CHECK_INT(s != NULL, j != NULL);
    if (!s || !j)
        return;
    CHECK_STR_MAP(s->n_matchlabels, s->matchlabels, json_object_get(j, "matchLabels"));
    CHECK_INT(s->n_matchexpressions, json_array_size(json_object_get(j, "matchExpressions")));
}

/* IntOrString: type 0 int, 1 string; JSON a number or a string. */
static void check_intstr(const IntOrString *v, json_t *j) {
    CHECK(v != NULL && j != NULL);
    if (!v || !j)
        return;
    if (json_is_integer(j)) {
        CHECK_INT(v->type, 0);
        CHECK_INT(v->intval, json_integer_value(j));
    } else {
        CHECK_INT(v->type, 1);
        CHECK_STR(v->strval, json_string_value(j));
    }
}

static void check_container(const Container *c, json_t *j) {
    CHECK_STR(c->name, js(j, "name"));
    CHECK_STR(c->image, js(j, "image"));
    json_t *res = json_object_get(j, "resources");
    CHECK(c->resources != NULL);
    if (c->resources) {
        CHECK_QTY_MAP(c->resources->n_requests, c->resources->requests,
                      json_object_get(res, "requests"));
        CHECK_QTY_MAP(c->resources->n_limits, c->resources->limits, json_object_get(res, "limits"));
    }
    json_t *ports = json_object_get(j, "ports");
    CHECK_INT(c->n_ports, json_array_size(ports));
    for (size_t i = 0; i < c->n_ports && i < json_array_size(ports); i++) {
        json_t *p = json_array_get(ports, i);
        CHECK_INT(c->ports[i]->containerport,
                  json_integer_value(json_object_get(p, "containerPort")));
        CHECK_INT(c->ports[i]->hostport, json_integer_value(json_object_get(p, "hostPort")));
        CHECK_OPT_STR(c->ports[i]->protocol, js(p, "protocol"));
        CHECK_OPT_STR(c->ports[i]->name, js(p, "name"));
    }
    json_t *env = json_object_get(j, "env");
    CHECK_INT(c->n_env, json_array_size(env));
    for (size_t i = 0; i < c->n_env && i < json_array_size(env); i++) {
        CHECK_STR(c->env[i]->name, js(json_array_get(env, i), "name"));
        CHECK_OPT_STR(c->env[i]->value, js(json_array_get(env, i), "value"));
    }
    json_t *rp = json_object_get(j, "readinessProbe"), *lp = json_object_get(j, "livenessProbe");
    CHECK_INT(c->readinessprobe != NULL, rp != NULL);
    if (c->readinessprobe && rp) {
        json_t *hg = json_object_get(rp, "httpGet");
        CHECK(c->readinessprobe->handler && c->readinessprobe->handler->httpget);
        if (c->readinessprobe->handler && c->readinessprobe->handler->httpget) {
            CHECK_STR(c->readinessprobe->handler->httpget->path, js(hg, "path"));
            check_intstr(c->readinessprobe->handler->httpget->port, json_object_get(hg, "port"));
        }
    }
    CHECK_INT(c->livenessprobe != NULL, lp != NULL);
    if (c->livenessprobe && lp) {
        CHECK(c->livenessprobe->handler && c->livenessprobe->handler->tcpsocket);
        if (c->livenessprobe->handler && c->livenessprobe->handler->tcpsocket)
            check_intstr(c->livenessprobe->handler->tcpsocket->port,
                         json_object_get(json_object_get(lp, "tcpSocket"), "port"));
    }
}

static void check_pod(const Pod *p, json_t *j) {
    check_meta(p->metadata, json_object_get(j, "metadata"));
    const K8s__Io__Api__Core__V1__PodSpec *s = p->spec;
    json_t *sj = json_object_get(j, "spec");
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK_OPT_STR(s->nodename, js(sj, "nodeName"));
    CHECK_OPT_STR(s->schedulername, js(sj, "schedulerName"));
    CHECK_INT(s->has_priority, json_object_get(sj, "priority") != NULL);
    CHECK_INT(s->priority, json_integer_value(json_object_get(sj, "priority")));
    CHECK_STR_MAP(s->n_nodeselector, s->nodeselector, json_object_get(sj, "nodeSelector"));
    json_t *tol = json_object_get(sj, "tolerations");
    CHECK_INT(s->n_tolerations, json_array_size(tol));
    for (size_t i = 0; i < s->n_tolerations && i < json_array_size(tol); i++) {
        json_t *t = json_array_get(tol, i);
        CHECK_OPT_STR(s->tolerations[i]->key, js(t, "key"));
        CHECK_OPT_STR(s->tolerations[i]->operator_, js(t, "operator"));
        CHECK_OPT_STR(s->tolerations[i]->value, js(t, "value"));
        CHECK_OPT_STR(s->tolerations[i]->effect, js(t, "effect"));
        json_t *ts = json_object_get(t, "tolerationSeconds");
        CHECK_INT(s->tolerations[i]->has_tolerationseconds, ts != NULL);
        CHECK_INT(s->tolerations[i]->tolerationseconds, json_integer_value(ts));
    }
    json_t *cs = json_object_get(sj, "containers"), *ics = json_object_get(sj, "initContainers");
    CHECK_INT(s->n_containers, json_array_size(cs));
    for (size_t i = 0; i < s->n_containers && i < json_array_size(cs); i++)
        check_container(s->containers[i], json_array_get(cs, i));
    CHECK_INT(s->n_initcontainers, json_array_size(ics));
    for (size_t i = 0; i < s->n_initcontainers && i < json_array_size(ics); i++)
        check_container(s->initcontainers[i], json_array_get(ics, i));
    json_t *aff = json_object_get(sj, "affinity");
    CHECK_INT(s->affinity != NULL, aff != NULL);
    if (s->affinity && aff) {
        json_t *na = json_object_get(aff, "nodeAffinity");
        json_t *terms =
            json_object_get(json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution"),
                            "nodeSelectorTerms");
        const K8s__Io__Api__Core__V1__NodeSelector *req =
            s->affinity->nodeaffinity
                ? s->affinity->nodeaffinity->requiredduringschedulingignoredduringexecution
                : NULL;
        CHECK(req != NULL);
        if (req) {
            CHECK_INT(req->n_nodeselectorterms, json_array_size(terms));
            json_t *ex =
                json_array_get(json_object_get(json_array_get(terms, 0), "matchExpressions"), 0);
            const K8s__Io__Api__Core__V1__NodeSelectorRequirement *r =
                req->n_nodeselectorterms && req->nodeselectorterms[0]->n_matchexpressions
                    ? req->nodeselectorterms[0]->matchexpressions[0]
                    : NULL;
            CHECK(r != NULL);
            if (r) {
                CHECK_STR(r->key, js(ex, "key"));
                CHECK_STR(r->operator_, js(ex, "operator"));
                CHECK_INT(r->n_values, json_array_size(json_object_get(ex, "values")));
                CHECK_STR(r->n_values ? r->values[0] : NULL,
                          json_string_value(json_array_get(json_object_get(ex, "values"), 0)));
            }
        }
        json_t *pref = json_object_get(json_object_get(aff, "podAntiAffinity"),
                                       "preferredDuringSchedulingIgnoredDuringExecution");
        const K8s__Io__Api__Core__V1__PodAntiAffinity *pa = s->affinity->podantiaffinity;
        CHECK(pa != NULL);
        if (pa) {
            CHECK_INT(pa->n_preferredduringschedulingignoredduringexecution, json_array_size(pref));
            if (pa->n_preferredduringschedulingignoredduringexecution) {
                const K8s__Io__Api__Core__V1__WeightedPodAffinityTerm *w =
                    pa->preferredduringschedulingignoredduringexecution[0];
                json_t *wj = json_array_get(pref, 0), *tj = json_object_get(wj, "podAffinityTerm");
                CHECK_INT(w->weight, json_integer_value(json_object_get(wj, "weight")));
                CHECK(w->podaffinityterm != NULL);
                if (w->podaffinityterm) {
                    CHECK_STR(w->podaffinityterm->topologykey, js(tj, "topologyKey"));
                    check_selector(w->podaffinityterm->labelselector,
                                   json_object_get(tj, "labelSelector"));
                }
            }
        }
    }
    json_t *tsc = json_object_get(sj, "topologySpreadConstraints");
    CHECK_INT(s->n_topologyspreadconstraints, json_array_size(tsc));
    for (size_t i = 0; i < s->n_topologyspreadconstraints && i < json_array_size(tsc); i++) {
        json_t *c = json_array_get(tsc, i);
        CHECK_INT(s->topologyspreadconstraints[i]->maxskew,
                  json_integer_value(json_object_get(c, "maxSkew")));
        CHECK_STR(s->topologyspreadconstraints[i]->topologykey, js(c, "topologyKey"));
        CHECK_STR(s->topologyspreadconstraints[i]->whenunsatisfiable, js(c, "whenUnsatisfiable"));
        check_selector(s->topologyspreadconstraints[i]->labelselector,
                       json_object_get(c, "labelSelector"));
    }
    json_t *st = json_object_get(j, "status");
    CHECK(p->status != NULL);
    if (p->status) {
        CHECK_OPT_STR(p->status->phase, js(st, "phase"));
        CHECK_OPT_STR(p->status->hostip, js(st, "hostIP"));
        CHECK_OPT_STR(p->status->podip, js(st, "podIP"));
        CHECK_OPT_STR(p->status->qosclass, js(st, "qosClass"));
        check_time(p->status->starttime, json_object_get(st, "startTime"));
        json_t *conds = json_object_get(st, "conditions");
        CHECK_INT(p->status->n_conditions, json_array_size(conds));
        for (size_t i = 0; i < p->status->n_conditions && i < json_array_size(conds); i++) {
            CHECK_STR(p->status->conditions[i]->type, js(json_array_get(conds, i), "type"));
            CHECK_STR(p->status->conditions[i]->status, js(json_array_get(conds, i), "status"));
        }
    }
}

static void check_node(const Node *n, json_t *j) {
    check_meta(n->metadata, json_object_get(j, "metadata"));
    json_t *sj = json_object_get(j, "spec"), *st = json_object_get(j, "status");
    CHECK(n->spec != NULL && n->status != NULL);
    if (!n->spec || !n->status)
        return;
    CHECK_INT(n->spec->has_unschedulable && n->spec->unschedulable,
              json_is_true(json_object_get(sj, "unschedulable")));
    json_t *taints = json_object_get(sj, "taints");
    CHECK_INT(n->spec->n_taints, json_array_size(taints));
    for (size_t i = 0; i < n->spec->n_taints && i < json_array_size(taints); i++) {
        json_t *t = json_array_get(taints, i);
        CHECK_STR(n->spec->taints[i]->key, js(t, "key"));
        CHECK_OPT_STR(n->spec->taints[i]->value, js(t, "value"));
        CHECK_STR(n->spec->taints[i]->effect, js(t, "effect"));
    }
    CHECK_QTY_MAP(n->status->n_capacity, n->status->capacity, json_object_get(st, "capacity"));
    CHECK_QTY_MAP(n->status->n_allocatable, n->status->allocatable,
                  json_object_get(st, "allocatable"));
    json_t *conds = json_object_get(st, "conditions");
    CHECK_INT(n->status->n_conditions, json_array_size(conds));
    for (size_t i = 0; i < n->status->n_conditions && i < json_array_size(conds); i++) {
        json_t *c = json_array_get(conds, i);
        CHECK_STR(n->status->conditions[i]->type, js(c, "type"));
        CHECK_STR(n->status->conditions[i]->status, js(c, "status"));
        CHECK_OPT_STR(n->status->conditions[i]->reason, js(c, "reason"));
        check_time(n->status->conditions[i]->lastheartbeattime,
                   json_object_get(c, "lastHeartbeatTime"));
    }
    json_t *addrs = json_object_get(st, "addresses");
    CHECK_INT(n->status->n_addresses, json_array_size(addrs));
    for (size_t i = 0; i < n->status->n_addresses && i < json_array_size(addrs); i++) {
        CHECK_STR(n->status->addresses[i]->type, js(json_array_get(addrs, i), "type"));
        CHECK_STR(n->status->addresses[i]->address, js(json_array_get(addrs, i), "address"));
    }
    json_t *ni = json_object_get(st, "nodeInfo");
    CHECK(n->status->nodeinfo != NULL);
    if (n->status->nodeinfo) {
        CHECK_OPT_STR(n->status->nodeinfo->kubeletversion, js(ni, "kubeletVersion"));
        CHECK_OPT_STR(n->status->nodeinfo->architecture, js(ni, "architecture"));
        CHECK_OPT_STR(n->status->nodeinfo->operatingsystem, js(ni, "operatingSystem"));
    }
}

/* ---- real captures --------------------------------------------------------------------- */

static void test_pod_list_matches_json(void) {
    size_t len;
    uint8_t *pb = proto_capture_load("pods.pb", &len);
    json_t *j = proto_capture_json("pods.json");
    CHECK(pb && j);
    if (!pb || !j)
        goto out;
    tm_kp_envelope env;
    tm_err err = {{0}, 0};
    CHECKF(tm_kp_envelope_parse(pb, len, &env, &err) == 0, "%s", err.msg);
    CHECK_STR(env.api_version, "v1");
    CHECK_STR(env.kind, "PodList");
    CHECK(env.raw_len > 0 && env.raw_len < len);
    K8s__Io__Api__Core__V1__PodList *l = tm_kp_pod_list(pb, len, &err);
    CHECKF(l != NULL, "%s", err.msg);
    if (!l)
        goto out;
    json_t *items = json_object_get(j, "items");
    CHECK_INT(l->n_items, 3);
    CHECK_INT(l->n_items, json_array_size(items));
    CHECK(l->metadata != NULL);
    if (l->metadata)
        CHECK_STR(l->metadata->resourceversion,
                  js(json_object_get(j, "metadata"), "resourceVersion"));
    for (size_t i = 0; i < l->n_items && i < json_array_size(items); i++) {
        check_pod(l->items[i], json_array_get(items, i));
        const ObjectMeta *m = tm_kp_meta(&l->items[i]->base);
        CHECK(m == l->items[i]->metadata);
    }
    /* The captured pods use the fields named in capture.sh; make sure they arrived, so the
     * comparison above had something to compare. */
    int saw_hostport = 0, saw_init = 0, saw_spread = 0, saw_owner = 0;
    for (size_t i = 0; i < l->n_items; i++) {
        const K8s__Io__Api__Core__V1__PodSpec *s = l->items[i]->spec;
        saw_hostport |= s->n_containers && s->containers[0]->n_ports &&
                        s->containers[0]->ports[0]->hostport == 18080;
        saw_init |= s->n_initcontainers == 1;
        saw_spread |= s->n_topologyspreadconstraints == 1;
        saw_owner |= l->items[i]->metadata->n_ownerreferences == 1;
    }
    CHECK(saw_hostport && saw_init && saw_spread && saw_owner);
    CHECK_INT(tm_kp_unknown_fields(&l->base), 0);
    /* The list's own envelope is not a NodeList. */
    CHECK(tm_kp_node_list(pb, len, &err) == NULL);
    CHECK(strstr(err.msg, "a v1 PodList where a v1 NodeList was expected") != NULL);
    tm_kp_free(l);
out:
    free(pb);
    json_decref(j);
}

static void test_node_list_matches_json(void) {
    size_t len;
    uint8_t *pb = proto_capture_load("nodes.pb", &len);
    json_t *j = proto_capture_json("nodes.json");
    CHECK(pb && j);
    if (!pb || !j)
        goto out;
    tm_err err = {{0}, 0};
    K8s__Io__Api__Core__V1__NodeList *l = tm_kp_node_list(pb, len, &err);
    CHECKF(l != NULL, "%s", err.msg);
    if (!l)
        goto out;
    json_t *items = json_object_get(j, "items");
    CHECK(l->n_items >= 2);
    CHECK_INT(l->n_items, json_array_size(items));
    for (size_t i = 0; i < l->n_items && i < json_array_size(items); i++)
        check_node(l->items[i], json_array_get(items, i));
    CHECK_INT(tm_kp_unknown_fields(&l->base), 0);
    tm_kp_free(l);
out:
    free(pb);
    json_decref(j);
}

/* Decodes a whole watch capture fed in chunks of `chunk` bytes (0: whole); checks it against
 * the JSON watch of the same events. */
static void check_watch(const uint8_t *pb, size_t len, json_t *events, size_t chunk) {
    tm_kpwatch *ws = tm_kpwatch_new(&tm_kp_kind_pod, 0);
    tm_err err = {{0}, 0};
    size_t off = 0, got = 0;
    int bookmarks = 0, types[5] = {0};
    while (off < len) {
        size_t n = chunk ? (len - off < chunk ? len - off : chunk) : len - off;
        CHECKF(tm_kpwatch_feed(ws, pb + off, n, &err) == 0, "%s", err.msg);
        off += n;
        tm_kp_event ev;
        int rc;
        while ((rc = tm_kpwatch_next(ws, &ev, &err)) != 0) {
            CHECKF(rc > 0, "%s", err.msg);
            if (rc < 0)
                continue;
            json_t *je = json_array_get(events, got++);
            CHECK_STR(tm_ws_type_name(ev.type), js(je, "type"));
            types[ev.type]++;
            json_t *jo = json_object_get(je, "object");
            const ObjectMeta *m = tm_kp_meta(ev.object);
            CHECK(m != NULL);
            if (ev.type == TM_WS_BOOKMARK) {
                bookmarks++;
                CHECK_STR(m ? m->resourceversion : NULL,
                          js(json_object_get(jo, "metadata"), "resourceVersion"));
                CHECK(m && (!m->name || !m->name[0])); /* a bookmark names nothing */
            } else if (ev.type == TM_WS_ERROR) {
                CHECK_INT(ev.code, json_integer_value(json_object_get(jo, "code")));
            } else {
                check_pod((const Pod *)ev.object, jo);
            }
            tm_kp_free(ev.object);
        }
    }
    CHECK_INT(got, json_array_size(events));
    CHECK_INT(tm_kpwatch_pending(ws), 0);
    CHECK(types[TM_WS_ADDED] >= 1 && types[TM_WS_MODIFIED] >= 1 && types[TM_WS_DELETED] >= 1);
    CHECK(bookmarks >= 1);
    tm_kpwatch_free(ws);
}

static void test_watch_matches_json(void) {
    size_t len;
    uint8_t *pb = proto_capture_load("watch.pb", &len);
    json_t *events = proto_capture_events("watch.json");
    CHECK(pb && json_array_size(events) >= 4);
    if (pb) {
        check_watch(pb, len, events, 0);
        /* The network may split anywhere: inside the length prefix, inside a frame. */
        size_t chunks[] = {1, 3, 4, 5, 7, 1000};
        for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
            check_watch(pb, len, events, chunks[i]);
    }
    free(pb);
    json_decref(events);
}

static void test_watch_410_gone(void) {
    size_t len;
    uint8_t *pb = proto_capture_load("gone.pb", &len);
    json_t *events = proto_capture_events("gone.json");
    CHECK(pb && json_array_size(events) == 1);
    if (!pb)
        goto out;
    tm_kpwatch *ws = tm_kpwatch_new(&tm_kp_kind_pod, 0);
    tm_err err = {{0}, 0};
    CHECK(tm_kpwatch_feed(ws, pb, len, &err) == 0);
    tm_kp_event ev;
    CHECKF(tm_kpwatch_next(ws, &ev, &err) == 1, "%s", err.msg);
    CHECK(ev.type == TM_WS_ERROR);
    CHECK_INT(ev.code, 410);
    json_t *jo = json_object_get(json_array_get(events, 0), "object");
    const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Status *st = (void *)ev.object;
    CHECK(st != NULL);
    if (st) {
        CHECK_STR(st->reason, js(jo, "reason"));
        CHECK_STR(st->message, js(jo, "message"));
        CHECK_STR(st->status, "Failure");
    }
    CHECK(tm_kp_meta(ev.object) == NULL); /* a Status has ListMeta, not ObjectMeta */
    tm_kp_free(ev.object);
    CHECK(tm_kpwatch_next(ws, &ev, &err) == 0);
    tm_kpwatch_free(ws);
out:
    free(pb);
    json_decref(events);
}

/* ---- bad input ------------------------------------------------------------------------- */

static void test_every_truncation_is_an_error(void) {
    size_t len;
    uint8_t *pb = proto_capture_load("pods.pb", &len);
    CHECK(pb != NULL);
    if (!pb)
        return;
    /* The envelope ends with contentEncoding and contentType, both empty: a cut that drops
     * only those leaves a whole, valid list. Every cut before the end of raw must fail. */
    tm_kp_envelope env;
    tm_err err = {{0}, 0};
    CHECK(tm_kp_envelope_parse(pb, len, &env, &err) == 0);
    size_t raw_end = (size_t)(env.raw + env.raw_len - pb);
    CHECK(raw_end > len / 2 && raw_end <= len);
    size_t bad = 0, whole = 0;
    for (size_t n = 0; n <= len; n++) {
        uint8_t *cut = malloc(n ? n : 1); /* exactly n bytes, so ASan sees any overread */
        memcpy(cut, pb, n);
        K8s__Io__Api__Core__V1__PodList *l = tm_kp_pod_list(cut, n, &err);
        if (n < raw_end && (l || !err.msg[0]))
            bad++;
        if (l)
            whole += l->n_items == 3;
        tm_kp_free(l);
        free(cut);
    }
    CHECK_INT(bad, 0);
    CHECK(whole >= 1 && whole <= len - raw_end + 1);
    CHECK(tm_kp_pod_list(pb, 3, &err) == NULL);
    CHECK(strstr(err.msg, "does not start with \"k8s\\0\"") != NULL);
    CHECK(tm_kp_pod_list(pb, len / 2, &err) == NULL);
    CHECKF(strstr(err.msg, "but only") != NULL, "%s", err.msg);
    free(pb);
}

static void test_corrupt_bytes(void) {
    size_t len;
    uint8_t *pb = proto_capture_load("pods.pb", &len);
    CHECK(pb != NULL);
    if (!pb)
        return;
    tm_err err = {{0}, 0};
    pb[1] = 'X';
    CHECK(tm_kp_pod_list(pb, len, &err) == NULL);
    CHECK(strstr(err.msg, "k8s") != NULL);
    pb[1] = '8';
    /* Every single-byte change: an error or a list, never a crash (ASan in make
     * test-sanitize and the fuzzer check the "never"). */
    size_t decoded = 0;
    for (size_t i = 4; i < len; i += 7) {
        uint8_t keep = pb[i];
        pb[i] ^= 0x80;
        K8s__Io__Api__Core__V1__PodList *l = tm_kp_pod_list(pb, len, &err);
        decoded += l != NULL;
        tm_kp_free(l);
        pb[i] = keep;
    }
    CHECK(decoded < len / 7); /* most flips break the structure */
    free(pb);
}

/* Builds "k8s\0" + Unknown{typeMeta{v1, kind}, raw} around raw bytes. */
static size_t envelope(uint8_t *out, const char *kind, const uint8_t *raw, size_t rawlen) {
    size_t o = 0, kl = strlen(kind);
    memcpy(out, "k8s\0", 4);
    o = 4;
    out[o++] = 0x0a;
    out[o++] = (uint8_t)(4 + 2 + kl);
    out[o++] = 0x0a;
    out[o++] = 2;
    memcpy(out + o, "v1", 2);
    o += 2;
    out[o++] = 0x12;
    out[o++] = (uint8_t)kl;
    memcpy(out + o, kind, kl);
    o += kl;
    out[o++] = 0x12;
    out[o++] = (uint8_t)rawlen; /* tests keep raw under 128 bytes */
    memcpy(out + o, raw, rawlen);
    return o + rawlen;
}

static void test_unknown_field_is_kept_not_fatal(void) {
    /* Pod {metadata {name "a"}} then field 99 (varint 1), which no Pod has. */
    const uint8_t raw[] = {0x0a, 0x03, 0x0a, 0x01, 'a', 0x98, 0x06, 0x01};
    uint8_t buf[128];
    size_t n = envelope(buf, "Pod", raw, sizeof raw);
    tm_err err = {{0}, 0};
    ProtobufCMessage *m = tm_kp_decode(buf, n, &tm_kp_kind_pod, &err);
    CHECKF(m != NULL, "%s", err.msg);
    CHECK_INT(tm_kp_unknown_fields(m), 1);
    CHECK_STR(tm_kp_meta(m) ? tm_kp_meta(m)->name : NULL, "a");
    tm_kp_free(m);
}

static void test_nested_fault_is_named(void) {
    /* Pod {spec (5 bytes) {containers: length 10, past the end}}. */
    const uint8_t raw[] = {0x12, 0x05, 0x12, 0x0a, 0x0a, 0x01, 'c'};
    uint8_t buf[128];
    size_t n = envelope(buf, "Pod", raw, sizeof raw);
    tm_err err = {{0}, 0};
    CHECK(tm_kp_decode(buf, n, &tm_kp_kind_pod, &err) == NULL);
    CHECKF(strstr(err.msg, "Pod.spec at byte") && strstr(err.msg, "length 10"), "%s", err.msg);
    /* A string field sent as a varint. */
    const uint8_t raw2[] = {0x0a, 0x02, 0x08, 0x01};
    n = envelope(buf, "Pod", raw2, sizeof raw2);
    CHECK(tm_kp_decode(buf, n, &tm_kp_kind_pod, &err) == NULL);
    CHECKF(strstr(err.msg, "Pod.metadata.name: wire type 0") != NULL, "%s", err.msg);
    /* A kind the decoder was not asked for. */
    n = envelope(buf, "Secret", raw2, sizeof raw2);
    CHECK(tm_kp_decode(buf, n, &tm_kp_kind_pod, &err) == NULL);
    CHECKF(strstr(err.msg, "a v1 Secret where a v1 Pod was expected") != NULL, "%s", err.msg);
    /* A varint that never ends. */
    uint8_t bad[16] = {'k', '8', 's', 0, 0x0a};
    memset(bad + 5, 0xff, 11);
    CHECK(tm_kp_decode(bad, sizeof bad, &tm_kp_kind_pod, &err) == NULL);
    CHECKF(strstr(err.msg, "varint") != NULL, "%s", err.msg);
}

static void test_watch_bad_frames(void) {
    tm_kpwatch *ws = tm_kpwatch_new(&tm_kp_kind_pod, 64);
    tm_err err = {{0}, 0};
    tm_kp_event ev;
    /* An event type nobody sends, then garbage, then a good bookmark: the two bad frames are
     * errors, consumed, and the stream goes on. */
    const uint8_t pod_bm[] = {0x0a, 0x06, 0x32, 0x04, '4', '2', '4', '2'}; /* metadata.rv */
    uint8_t env[64];
    size_t envlen = envelope(env, "Pod", pod_bm, sizeof pod_bm);
    uint8_t frames[256];
    size_t o = 0;
    const uint8_t f1[] = {0, 0, 0, 5, 0x0a, 0x03, 'F', 'O', 'O'};
    memcpy(frames + o, f1, sizeof f1);
    o += sizeof f1;
    const uint8_t f2[] = {0, 0, 0, 3, 0xff, 0xff, 0xff};
    memcpy(frames + o, f2, sizeof f2);
    o += sizeof f2;
    size_t evlen = 2 + 8 + 2 + 2 + envlen;
    const uint8_t hdr[] = {0,    0,
                           0,    (uint8_t)evlen,
                           0x0a, 8,
                           'B',  'O',
                           'O',  'K',
                           'M',  'A',
                           'R',  'K',
                           0x12, (uint8_t)(2 + envlen),
                           0x0a, (uint8_t)envlen};
    memcpy(frames + o, hdr, sizeof hdr);
    o += sizeof hdr;
    memcpy(frames + o, env, envlen);
    o += envlen;
    CHECK(tm_kpwatch_feed(ws, frames, o, &err) == 0);
    CHECK(tm_kpwatch_next(ws, &ev, &err) == -1);
    CHECKF(strstr(err.msg, "unknown event type \"FOO\"") != NULL, "%s", err.msg);
    CHECK(tm_kpwatch_next(ws, &ev, &err) == -1);
    CHECKF(strstr(err.msg, "frame 1") != NULL, "%s", err.msg);
    CHECKF(tm_kpwatch_next(ws, &ev, &err) == 1, "%s", err.msg);
    CHECK(ev.type == TM_WS_BOOKMARK);
    CHECK_STR(tm_kp_meta(ev.object) ? tm_kp_meta(ev.object)->resourceversion : NULL, "4242");
    tm_kp_free(ev.object);
    CHECK(tm_kpwatch_next(ws, &ev, &err) == 0);
    /* A frame announcing more than max_frame: the stream is broken for good. */
    const uint8_t huge[] = {0x7f, 0xff, 0xff, 0xff};
    CHECK(tm_kpwatch_feed(ws, huge, sizeof huge, &err) == 0);
    CHECK(tm_kpwatch_next(ws, &ev, &err) == -1);
    CHECKF(strstr(err.msg, "over the 64-byte limit") != NULL, "%s", err.msg);
    CHECK(tm_kpwatch_next(ws, &ev, &err) == -1);
    CHECK(tm_kpwatch_feed(ws, huge, sizeof huge, &err) == -1);
    tm_kpwatch_free(ws);
}

int main(void) {
    RUN(test_pod_list_matches_json);
    RUN(test_node_list_matches_json);
    RUN(test_watch_matches_json);
    RUN(test_watch_410_gone);
    RUN(test_every_truncation_is_an_error);
    RUN(test_corrupt_bytes);
    RUN(test_unknown_field_is_kept_not_fatal);
    RUN(test_nested_fault_is_named);
    RUN(test_watch_bad_frames);
    return TEST_SUMMARY();
}
