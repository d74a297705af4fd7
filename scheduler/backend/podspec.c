/* podspec.c: Kubernetes Pod JSON -> scheduler structs: the pod being scheduled and the record
 * of a placed pod (labels, host ports, pod (anti-)affinity, spread, tolerations, node affinity,
 * claims, gates). Its requests are pod_requests.c's; Nodes and TaskProfiles are nodespec.c's.
 * Every error names the object and the field. */
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/podspec_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "lib/quantity.h"
#include "lib/selector.h"
#include "lib/duration.h"

sched_keys sched_keys_default(void) {
    return (sched_keys){.process_label = "nextflow.io/processName",
                        .workflow_key = "tarema.io/workflow"};
}

int sched_profile_index(const char *const *names, const char *name) {
    for (size_t i = 0; names && names[i] && i <= INT32_MAX; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

const char *sched_profile_name(const char *const *names, size_t i) {
    for (size_t k = 0; names && names[k]; k++)
        if (k == i)
            return names[k];
    return NULL;
}

const char *podspec_obj_str(const json_t *obj, const char *key) {
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static char *dup_or_empty(const char *s) {
    return strdup(s ? s : "");
}

/* ---- inter-pod metadata: labels, host ports, pod (anti-)affinity terms, topology spread ---- */

/* metadata.labels: absent, null or a map of strings. 0, or -1 with err. */
static int check_labels(const char *ns, const char *name, const json_t *l, tm_err *err) {
    if (!l || json_is_null(l))
        return 0;
    if (!json_is_object(l))
        return tm_err_set(err, "pod %s/%s: metadata.labels is not a map", ns, name);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)l, k, v) {
        if (!json_is_string(v))
            return tm_err_set(err, "pod %s/%s: metadata.labels[%s] is not a string", ns, name, k);
    }
    return 0;
}

/* metadata.labels as an owned copy (NULL when absent). 0, or -1 with err. */
static int parse_labels(const char *ns, const char *name, const json_t *meta, json_t **out,
                        tm_err *err) {
    *out = NULL;
    const json_t *l = json_object_get(meta, "labels");
    if (check_labels(ns, name, l, err) != 0)
        return -1;
    if (l && json_is_object(l) && !(*out = json_deep_copy(l)))
        return tm_err_set(err, "out of memory");
    return 0;
}

/* metadata.labels in the compact form (NULL when absent or empty). 0, or -1 with err. */
static int parse_label_set(const char *ns, const char *name, const json_t *meta, sched_labels **out,
                           tm_err *err) {
    *out = NULL;
    const json_t *l = json_object_get(meta, "labels");
    if (check_labels(ns, name, l, err) != 0)
        return -1;
    if (sched_labels_from_json(l, out) != 0)
        return tm_err_set(err, "out of memory");
    return 0;
}

static int parse_ports_of(const char *ns, const char *name, const json_t *ctr, const char *where,
                          sched_host_port **ports, size_t *n, size_t *cap, tm_err *err) {
    size_t i;
    const json_t *pt;
    json_array_foreach(json_object_get(ctr, "ports"), i, pt) {
        const json_t *hp = json_object_get(pt, "hostPort");
        if (!hp || json_is_null(hp) || (json_is_integer(hp) && json_integer_value(hp) == 0))
            continue;
        if (!json_is_integer(hp) || json_integer_value(hp) < 1 || json_integer_value(hp) > 65535)
            return tm_err_set(err, "pod %s/%s: %s.ports[%zu].hostPort is not a port 1..65535", ns,
                              name, where, i);
        const char *proto = podspec_obj_str(pt, "protocol");
        sched_proto pr;
        if (!proto || !*proto || strcmp(proto, "TCP") == 0)
            pr = SCHED_PROTO_TCP;
        else if (strcmp(proto, "UDP") == 0)
            pr = SCHED_PROTO_UDP;
        else if (strcmp(proto, "SCTP") == 0)
            pr = SCHED_PROTO_SCTP;
        else
            return tm_err_set(err,
                              "pod %s/%s: %s.ports[%zu].protocol \"%s\" is not TCP, UDP or SCTP",
                              ns, name, where, i, proto);
        if (*n == *cap) {
            size_t ncap = *cap ? *cap * 2 : 4;
            sched_host_port *np = realloc(*ports, ncap * sizeof *np);
            if (!np)
                return tm_err_set(err, "out of memory");
            *ports = np;
            *cap = ncap;
        }
        const char *ip = podspec_obj_str(pt, "hostIP");
        sched_host_port *o = &(*ports)[*n];
        o->port = (int32_t)json_integer_value(hp);
        o->proto = pr;
        if (!(o->ip = strdup(ip && *ip ? ip : "0.0.0.0")))
            return tm_err_set(err, "out of memory");
        (*n)++;
    }
    return 0;
}

/* Host ports of the regular containers and of sidecar (restartPolicy: Always) init containers:
 * kube-scheduler's GetHostPorts. Plain init containers have exited before the pod runs. */
static int parse_host_ports(const char *ns, const char *name, const json_t *spec,
                            sched_host_port **out, size_t *n_out, tm_err *err) {
    sched_host_port *ports = NULL;
    size_t n = 0, cap = 0, i;
    const json_t *c;
    char where[96];
    int rc = 0;
    json_array_foreach(json_object_get(spec, "initContainers"), i, c) {
        const char *rp = podspec_obj_str(c, "restartPolicy");
        if (rc || !rp || strcmp(rp, "Always") != 0)
            continue;
        snprintf(where, sizeof where, "spec.initContainers[%zu]", i);
        rc = parse_ports_of(ns, name, c, where, &ports, &n, &cap, err);
    }
    json_array_foreach(json_object_get(spec, "containers"), i, c) {
        if (rc)
            break;
        snprintf(where, sizeof where, "spec.containers[%zu]", i);
        rc = parse_ports_of(ns, name, c, where, &ports, &n, &cap, err);
    }
    if (rc) {
        sched_host_ports_free(ports, n);
        return -1;
    }
    *out = ports;
    *n_out = n;
    return 0;
}

/* A labelSelector: absent or null -> NULL (matches nothing, as metav1.LabelSelectorAsSelector). */
static int parse_label_selector(const char *ns, const char *name, const json_t *ls,
                                const char *where, tm_selector **out, tm_err *err) {
    *out = NULL;
    if (!ls || json_is_null(ls))
        return 0;
    if (!(*out = tm_selector_from_label_selector(ls, err)))
        return tm_err_wrap(err, "pod %s/%s: %s.labelSelector", ns, name, where);
    return 0;
}

static int parse_pod_term(const char *ns, const char *name, const json_t *j, const char *where,
                          sched_pod_term *t, tm_err *err) {
    if (!json_is_object(j))
        return tm_err_set(err, "pod %s/%s: %s is not an object", ns, name, where);
    const char *key = podspec_obj_str(j, "topologyKey");
    if (!key || !*key)
        return tm_err_set(err, "pod %s/%s: %s.topologyKey is missing", ns, name, where);
    if (!(t->topology_key = strdup(key)))
        return tm_err_set(err, "out of memory");
    if (parse_label_selector(ns, name, json_object_get(j, "labelSelector"), where, &t->selector,
                             err) != 0)
        return -1;
    const json_t *nss = json_object_get(j, "namespaces");
    if (nss && !json_is_null(nss) && !json_is_array(nss))
        return tm_err_set(err, "pod %s/%s: %s.namespaces is not a list", ns, name, where);
    size_t nn = json_is_array(nss) ? json_array_size(nss) : 0;
    if (!(t->namespaces = calloc(nn + 1, sizeof *t->namespaces)))
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < nn; i++) {
        const json_t *v = json_array_get(nss, i);
        if (!json_is_string(v))
            return tm_err_set(err, "pod %s/%s: %s.namespaces[%zu] is not a string", ns, name, where,
                              i);
        if (!(t->namespaces[t->n_namespaces++] = strdup(json_string_value(v))))
            return tm_err_set(err, "out of memory");
    }
    const json_t *nsel = json_object_get(j, "namespaceSelector");
    if (nsel && !json_is_null(nsel)) {
        if (!json_is_object(nsel))
            return tm_err_set(err, "pod %s/%s: %s.namespaceSelector is not an object", ns, name,
                              where);
        tm_selector *chk = tm_selector_from_label_selector(nsel, err); /* validate it */
        if (!chk)
            return tm_err_wrap(err, "pod %s/%s: %s.namespaceSelector", ns, name, where);
        t->all_namespaces = chk->n == 0; /* {} selects every namespace */
        t->ns_selector = chk->n > 0;
        tm_selector_free(chk);
    } else if (nn == 0) { /* neither: the owner's own namespace */
        if (!(t->namespaces[t->n_namespaces++] = strdup(ns)))
            return tm_err_set(err, "out of memory");
    }
    return 0;
}

/* podAffinity / podAntiAffinity .requiredDuringSchedulingIgnoredDuringExecution. */
static int parse_pod_terms(const char *ns, const char *name, const json_t *spec, const char *kind,
                           sched_pod_term **out, size_t *n_out, tm_err *err) {
    *out = NULL;
    *n_out = 0;
    const json_t *arr = json_object_get(json_object_get(json_object_get(spec, "affinity"), kind),
                                        "requiredDuringSchedulingIgnoredDuringExecution");
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return tm_err_set(err,
                          "pod %s/%s: spec.affinity.%s.requiredDuringSchedulingIgnoredDuring"
                          "Execution is not a list",
                          ns, name, kind);
    size_t n = json_array_size(arr);
    if (!n)
        return 0;
    sched_pod_term *t = calloc(n, sizeof *t);
    if (!t)
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char where[160];
        snprintf(where, sizeof where,
                 "spec.affinity.%s.requiredDuringSchedulingIgnoredDuringExecution[%zu]", kind, i);
        if (parse_pod_term(ns, name, json_array_get(arr, i), where, &t[i], err) != 0) {
            sched_pod_terms_free(t, i + 1);
            return -1;
        }
    }
    *out = t;
    *n_out = n;
    return 0;
}

/* podAffinity / podAntiAffinity .preferredDuringSchedulingIgnoredDuringExecution: weight
 * (1..100) and podAffinityTerm each. Adds them to *prefs (allocated on the first). */
static int parse_pref_terms(const char *ns, const char *name, const json_t *spec, bool anti,
                            sched_pod_prefs **prefs, tm_err *err) {
    const char *kind = anti ? "podAntiAffinity" : "podAffinity";
    const json_t *arr = json_object_get(json_object_get(json_object_get(spec, "affinity"), kind),
                                        "preferredDuringSchedulingIgnoredDuringExecution");
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return tm_err_set(err,
                          "pod %s/%s: spec.affinity.%s.preferredDuringSchedulingIgnoredDuring"
                          "Execution is not a list",
                          ns, name, kind);
    size_t n = json_array_size(arr);
    if (!n)
        return 0;
    if (!*prefs && !(*prefs = calloc(1, sizeof **prefs)))
        return tm_err_set(err, "out of memory");
    sched_pod_prefs *pr = *prefs;
    sched_pod_term **terms = anti ? &pr->anti : &pr->aff;
    int32_t **weights = anti ? &pr->anti_weight : &pr->aff_weight;
    size_t *count = anti ? &pr->n_anti : &pr->n_aff;
    if (!(*terms = calloc(n, sizeof **terms)) || !(*weights = calloc(n, sizeof **weights)))
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char where[160];
        snprintf(where, sizeof where,
                 "spec.affinity.%s.preferredDuringSchedulingIgnoredDuringExecution[%zu]", kind, i);
        const json_t *wt = json_object_get(json_array_get(arr, i), "weight");
        if (!json_is_integer(wt) || json_integer_value(wt) < 1 || json_integer_value(wt) > 100)
            return tm_err_set(err, "pod %s/%s: %s.weight is not an integer 1..100", ns, name,
                              where);
        (*weights)[i] = (int32_t)json_integer_value(wt);
        *count = i + 1; /* counted before parsing so that sched_pod_prefs_free frees it */
        snprintf(where + strlen(where), sizeof where - strlen(where), ".podAffinityTerm");
        if (parse_pod_term(ns, name, json_object_get(json_array_get(arr, i), "podAffinityTerm"),
                           where, &(*terms)[i], err) != 0)
            return -1;
    }
    return 0;
}

/* matchLabelKeys: `key = <the pod's value>` for each key the pod has, added to the selector. */
static int merge_match_label_keys(const char *ns, const char *name, const json_t *keys,
                                  const json_t *labels, tm_selector *sel, const char *where,
                                  tm_err *err) {
    if (!keys || json_is_null(keys))
        return 0;
    if (!json_is_array(keys))
        return tm_err_set(err, "pod %s/%s: %s.matchLabelKeys is not a list", ns, name, where);
    size_t i;
    const json_t *k;
    json_array_foreach(keys, i, k) {
        if (!json_is_string(k))
            return tm_err_set(err, "pod %s/%s: %s.matchLabelKeys[%zu] is not a string", ns, name,
                              where, i);
        const char *v = podspec_obj_str(labels, json_string_value(k));
        if (!v || !sel) /* an absent selector matches nothing whatever is added */
            continue;
        tm_sel_req *nr = realloc(sel->reqs, (sel->n + 1) * sizeof *nr);
        if (!nr)
            return tm_err_set(err, "out of memory");
        sel->reqs = nr;
        tm_sel_req *r = &sel->reqs[sel->n];
        *r = (tm_sel_req){.key = strdup(json_string_value(k)),
                          .op = TM_SEL_EQ,
                          .values = calloc(1, sizeof(char *)),
                          .nvalues = 0};
        sel->n++;
        if (!r->key || !r->values || !(r->values[0] = strdup(v)))
            return tm_err_set(err, "out of memory");
        r->nvalues = 1;
    }
    return 0;
}

static int parse_policy(const char *ns, const char *name, const json_t *c, const char *field,
                        bool dflt, bool *out, const char *where, tm_err *err) {
    const char *v = podspec_obj_str(c, field);
    *out = dflt;
    if (!v)
        return 0;
    if (strcmp(v, "Honor") == 0)
        *out = true;
    else if (strcmp(v, "Ignore") == 0)
        *out = false;
    else
        return tm_err_set(err, "pod %s/%s: %s.%s \"%s\" is not Honor or Ignore", ns, name, where,
                          field, v);
    return 0;
}

static int parse_spread_one(sched_pod *p, const json_t *c, const char *where, sched_spread *o,
                            tm_err *err) {
    const char *ns = p->ns, *name = p->name;
    const json_t *ms = json_object_get(c, "maxSkew");
    if (!json_is_integer(ms) || json_integer_value(ms) < 1 || json_integer_value(ms) > INT32_MAX)
        return tm_err_set(err, "pod %s/%s: %s.maxSkew is not an integer >= 1", ns, name, where);
    o->max_skew = (int32_t)json_integer_value(ms);
    const char *key = podspec_obj_str(c, "topologyKey");
    if (!key || !*key)
        return tm_err_set(err, "pod %s/%s: %s.topologyKey is missing", ns, name, where);
    if (!(o->topology_key = strdup(key)))
        return tm_err_set(err, "out of memory");
    const json_t *md = json_object_get(c, "minDomains");
    o->min_domains = 1;
    if (md && !json_is_null(md)) {
        if (!json_is_integer(md) || json_integer_value(md) < 1 ||
            json_integer_value(md) > INT32_MAX)
            return tm_err_set(err, "pod %s/%s: %s.minDomains is not an integer >= 1", ns, name,
                              where);
        o->min_domains = (int32_t)json_integer_value(md);
    }
    if (parse_policy(ns, name, c, "nodeAffinityPolicy", true, &o->honor_node_affinity, where,
                     err) != 0 ||
        parse_policy(ns, name, c, "nodeTaintsPolicy", false, &o->honor_node_taints, where, err) !=
            0 ||
        parse_label_selector(ns, name, json_object_get(c, "labelSelector"), where, &o->selector,
                             err) != 0)
        return -1;
    return merge_match_label_keys(ns, name, json_object_get(c, "matchLabelKeys"), p->pod_labels,
                                  o->selector, where, err);
}

/* spec.topologySpreadConstraints: DoNotSchedule ones into p->spread, ScheduleAnyway ones into
 * p->soft_spread. */
static int parse_spread(sched_pod *p, const json_t *spec, tm_err *err) {
    const json_t *arr = json_object_get(spec, "topologySpreadConstraints");
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return tm_err_set(err, "pod %s/%s: spec.topologySpreadConstraints is not a list", p->ns,
                          p->name);
    if (!(p->spread = calloc(json_array_size(arr) + 1, sizeof *p->spread)) ||
        !(p->soft_spread = calloc(json_array_size(arr) + 1, sizeof *p->soft_spread)))
        return tm_err_set(err, "out of memory");
    size_t i;
    const json_t *c;
    json_array_foreach(arr, i, c) {
        char where[64];
        snprintf(where, sizeof where, "spec.topologySpreadConstraints[%zu]", i);
        const char *wu = podspec_obj_str(c, "whenUnsatisfiable");
        if (!wu || (strcmp(wu, "DoNotSchedule") != 0 && strcmp(wu, "ScheduleAnyway") != 0))
            return tm_err_set(err,
                              "pod %s/%s: %s.whenUnsatisfiable \"%s\" is not DoNotSchedule or "
                              "ScheduleAnyway",
                              p->ns, p->name, where, wu ? wu : "");
        bool soft = strcmp(wu, "ScheduleAnyway") == 0; /* a scoring preference, not a filter */
        sched_spread *o = soft ? &p->soft_spread[p->n_soft_spread++] : &p->spread[p->n_spread++];
        /* counted before parsing so sched_pod_free frees what an error leaves */
        if (parse_spread_one(p, c, where, o, err) != 0)
            return -1;
    }
    return 0;
}

static bool json_terminating(const json_t *meta) {
    const json_t *d = json_object_get(meta, "deletionTimestamp");
    return d && !json_is_null(d);
}

/* What the inter-pod plugins read of a pod (sched_pod_meta; m->ns is the caller's): the one
 * parser of both the pods this process places and the bound pods the informer shows, so both
 * are recorded the same. On error m keeps what was parsed (free its fields). 0, or -1 with
 * err. */
static int parse_meta(const char *ns, const char *name, const json_t *meta, const json_t *spec,
                      sched_pod_meta *m, tm_err *err) {
    size_t n_ports = 0, n_anti = 0, n_aff = 0;
    m->terminating = json_terminating(meta);
    /* preemption's view of it (status.startTime is the caller's: only placed pods have it) */
    m->priority = (int32_t)tm_json_int(spec, "priority", 0);
    m->generation = tm_json_int(meta, "generation", 0);
    if (m->name && sched_pod_meta_set_name(m, name) != 0)
        return tm_err_set(err, "out of memory");
    int rc = parse_label_set(ns, name, meta, &m->labels, err);
    if (rc == 0)
        rc = parse_host_ports(ns, name, spec, &m->ports, &n_ports, err);
    m->n_ports = (uint32_t)n_ports;
    if (rc == 0)
        rc = parse_pod_terms(ns, name, spec, "podAntiAffinity", &m->anti, &n_anti, err);
    m->n_anti = (uint32_t)n_anti;
    if (rc == 0)
        rc = parse_pod_terms(ns, name, spec, "podAffinity", &m->aff, &n_aff, err);
    m->n_aff = (uint32_t)n_aff;
    if (rc == 0)
        rc = parse_pref_terms(ns, name, spec, false, &m->pref, err);
    if (rc == 0)
        rc = parse_pref_terms(ns, name, spec, true, &m->pref, err);
    return rc;
}

static int64_t parse_time_ms(const char *s);

/* The inter-pod fields of p from its JSON: parse_meta's, moved into p, and its constraints. */
static int parse_interpod(sched_pod *p, const json_t *meta, const json_t *spec, tm_err *err) {
    if (parse_labels(p->ns, p->name, meta, &p->pod_labels, err) != 0)
        return -1;
    sched_pod_meta m = {0};
    int rc = parse_meta(p->ns, p->name, meta, spec, &m, err);
    p->terminating = m.terminating;
    free(m.labels); /* p keeps them as JSON (pod_labels), which the reservations read too */
    p->host_ports = m.ports;
    p->n_host_ports = m.n_ports;
    p->pod_anti_affinity = m.anti;
    p->n_pod_anti_affinity = m.n_anti;
    p->pod_affinity = m.aff;
    p->n_pod_affinity = m.n_aff;
    p->pod_prefs = m.pref;
    if (rc != 0)
        return -1;
    return parse_spread(p, spec, err);
}

/* The uid a pod is keyed by: metadata.uid, else namespace/name (fixtures, dry runs). */
static const char *pod_uid(const json_t *meta, const char *ns, const char *name, char *buf,
                           size_t size) {
    const char *uid = podspec_obj_str(meta, "uid");
    if (uid && *uid)
        return uid;
    snprintf(buf, size, "%s/%s", ns ? ns : "", name);
    return buf;
}

int sched_snapshot_add_pod_json(sched_snapshot *s, const json_t *pod, const char *node_name,
                                tm_err *err) {
    if (!json_is_object(pod))
        return tm_err_set(err, "pod is not a JSON object");
    const json_t *meta = json_object_get(pod, "metadata");
    const json_t *spec = json_object_get(pod, "spec");
    const char *name = podspec_obj_str(meta, "name");
    if (!name || !*name)
        return tm_err_set(err, "pod without metadata.name");
    const char *ns = podspec_obj_str(meta, "namespace");
    char uidbuf[512];
    const char *uid = pod_uid(meta, ns, name, uidbuf, sizeof uidbuf); /* as sched_pod_from_json */
    if (!ns || !*ns)
        ns = "default";
    if (!node_name)
        node_name = podspec_obj_str(spec, "nodeName");
    sched_resources req;
    sched_xres *x;
    uint32_t nx;
    if (sched_pod_requests_x(s, pod, &req, &x, &nx, err) != 0)
        return -1;
    sched_pod_meta *m = sched_pod_meta_new(ns);
    if (!m) {
        free(x);
        return tm_err_set(err, "out of memory");
    }
    tm_err merr = {0};
    int mrc = parse_meta(ns, name, meta, spec, m, &merr);
    m->start_ms = parse_time_ms(podspec_obj_str(json_object_get(pod, "status"), "startTime"));
    if (mrc != 0) {
        sched_pod_meta_free(m);
        m = NULL;
    }
    int arc = sched_snapshot_add_pod_x(s, uid, node_name, &req, x, nx, m, err);
    free(x);
    if (arc != 0)
        return -1;
    if (mrc != 0)
        return tm_err_set(err,
                          "%s (pod recorded with its requests, but its labels, host ports "
                          "and affinity are ignored)",
                          merr.msg);
    return 0;
}

int podspec_parse_effect(const char *e, sched_effect *out, bool allow_empty) {
    if ((!e || !*e) && allow_empty)
        *out = SCHED_EFFECT_NONE;
    else if (e && strcmp(e, "NoSchedule") == 0)
        *out = SCHED_EFFECT_NO_SCHEDULE;
    else if (e && strcmp(e, "PreferNoSchedule") == 0)
        *out = SCHED_EFFECT_PREFER_NO_SCHEDULE;
    else if (e && strcmp(e, "NoExecute") == 0)
        *out = SCHED_EFFECT_NO_EXECUTE;
    else
        return -1;
    return 0;
}

static int parse_tolerations(sched_pod *p, const json_t *arr, tm_err *err) {
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return tm_err_set(err, "pod %s/%s: spec.tolerations is not a list", p->ns, p->name);
    p->tolerations = calloc(json_array_size(arr) + 1, sizeof *p->tolerations);
    if (!p->tolerations)
        return tm_err_set(err, "out of memory");
    size_t i;
    const json_t *t;
    json_array_foreach(arr, i, t) {
        sched_toleration *o = &p->tolerations[p->n_tolerations];
        const char *op = podspec_obj_str(t, "operator");
        if (!op || !*op || strcmp(op, "Equal") == 0)
            o->op = SCHED_TOL_EQUAL;
        else if (strcmp(op, "Exists") == 0)
            o->op = SCHED_TOL_EXISTS;
        else
            return tm_err_set(err,
                              "pod %s/%s: spec.tolerations[%zu].operator \"%s\" is not Equal or "
                              "Exists",
                              p->ns, p->name, i, op);
        const char *eff = podspec_obj_str(t, "effect");
        if (podspec_parse_effect(eff, &o->effect, true) != 0)
            return tm_err_set(err,
                              "pod %s/%s: spec.tolerations[%zu].effect \"%s\" is not NoSchedule, "
                              "PreferNoSchedule or NoExecute",
                              p->ns, p->name, i, eff);
        o->key = dup_or_empty(podspec_obj_str(t, "key"));
        o->value = dup_or_empty(podspec_obj_str(t, "value"));
        p->n_tolerations++;
        if (!o->key || !o->value)
            return tm_err_set(err, "out of memory");
    }
    return 0;
}

static int parse_node_selector(sched_pod *p, const json_t *sel, tm_err *err) {
    if (!sel || json_is_null(sel))
        return 0;
    if (!json_is_object(sel))
        return tm_err_set(err, "pod %s/%s: spec.nodeSelector is not a map", p->ns, p->name);
    p->node_selector = calloc(json_object_size(sel) + 1, sizeof *p->node_selector);
    if (!p->node_selector)
        return tm_err_set(err, "out of memory");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)sel, k, v) {
        if (!json_is_string(v))
            return tm_err_set(err, "pod %s/%s: spec.nodeSelector[%s] is not a string", p->ns,
                              p->name, k);
        sched_label *l = &p->node_selector[p->n_node_selector++];
        l->key = strdup(k);
        l->value = strdup(json_string_value(v));
        if (!l->key || !l->value)
            return tm_err_set(err, "out of memory");
    }
    return 0;
}

static const char *const sel_ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};

static int parse_req(const char *owner, const json_t *j, bool is_field, sched_sel_req *r,
                     const char *where, tm_err *err) {
    const char *key = podspec_obj_str(j, "key"), *op = podspec_obj_str(j, "operator");
    if (!key || !*key)
        return tm_err_set(err, "%s: %s: key is missing", owner, where);
    r->is_field = is_field;
    if (!(r->key = strdup(key)))
        return tm_err_set(err, "out of memory");
    size_t o = 0;
    while (o < 6 && (!op || strcmp(op, sel_ops[o]) != 0))
        o++;
    if (o == 6 || (is_field && o > 1))
        return tm_err_set(err, "%s: %s: operator \"%s\" is not one of %s", owner, where,
                          op ? op : "",
                          is_field ? "In, NotIn" : "In, NotIn, Exists, DoesNotExist, Gt, Lt");
    r->op = (sched_sel_op)o;
    const json_t *vals = json_object_get(j, "values");
    size_t nv = json_is_array(vals) ? json_array_size(vals) : 0;
    if ((r->op == SCHED_SEL_IN || r->op == SCHED_SEL_NOT_IN) && nv == 0)
        return tm_err_set(err, "%s: %s: operator %s needs values", owner, where, op);
    if ((r->op == SCHED_SEL_EXISTS || r->op == SCHED_SEL_DOES_NOT_EXIST) && nv != 0)
        return tm_err_set(err, "%s: %s: operator %s takes no values", owner, where, op);
    if ((r->op == SCHED_SEL_GT || r->op == SCHED_SEL_LT) && nv != 1)
        return tm_err_set(err, "%s: %s: operator %s needs exactly one value", owner, where, op);
    r->values = calloc(nv + 1, sizeof *r->values);
    if (!r->values)
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < nv; i++) {
        const json_t *v = json_array_get(vals, i);
        if (!json_is_string(v))
            return tm_err_set(err, "%s: %s: values[%zu] is not a string", owner, where, i);
        if (!(r->values[r->n_values++] = strdup(json_string_value(v))))
            return tm_err_set(err, "out of memory");
    }
    if (r->op == SCHED_SEL_GT || r->op == SCHED_SEL_LT) {
        char *end;
        long long x = strtoll(r->values[0], &end, 10);
        if (!*r->values[0] || *end)
            return tm_err_set(err, "%s: %s: value \"%s\" of %s is not an integer", owner, where,
                              r->values[0], op);
        r->num = x;
    }
    return 0;
}

int sched_sel_terms_from_json(const json_t *terms, const char *owner, const char *where,
                              sched_sel_term **out, size_t *n_out, tm_err *err) {
    *out = NULL;
    *n_out = 0;
    if (!json_is_array(terms))
        return 0; /* no terms: matches no node */
    sched_sel_term *ts = calloc(json_array_size(terms) + 1, sizeof *ts);
    if (!ts)
        return tm_err_set(err, "out of memory");
    *out = ts;
    size_t t;
    const json_t *term;
    json_array_foreach(terms, t, term) {
        sched_sel_term *o = &ts[(*n_out)++];
        const json_t *ex = json_object_get(term, "matchExpressions");
        const json_t *fi = json_object_get(term, "matchFields");
        size_t ne = json_is_array(ex) ? json_array_size(ex) : 0;
        size_t nf = json_is_array(fi) ? json_array_size(fi) : 0;
        o->reqs = calloc(ne + nf + 1, sizeof *o->reqs);
        if (!o->reqs)
            return tm_err_set(err, "out of memory");
        for (size_t i = 0; i < ne + nf; i++) {
            char at[256];
            snprintf(at, sizeof at, "%s[%zu].%s[%zu]", where, t,
                     i < ne ? "matchExpressions" : "matchFields", i < ne ? i : i - ne);
            const json_t *j = i < ne ? json_array_get(ex, i) : json_array_get(fi, i - ne);
            int rc = parse_req(owner, j, i >= ne, &o->reqs[o->n_reqs], at, err);
            o->n_reqs++; /* counted even on error so sched_sel_terms_free frees it */
            if (rc != 0)
                return -1;
        }
    }
    return 0;
}

/* nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: the preferences of weight
 * 1..100 (weight 0 adds nothing, as kube-scheduler drops it) with their weights. */
static int parse_node_prefs(sched_pod *p, const json_t *na, const char *owner, tm_err *err) {
    const json_t *pref = json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
    if (!json_is_array(pref) || !json_array_size(pref))
        return 0;
    json_t *terms = json_array();
    p->node_pref_weight = calloc(json_array_size(pref), sizeof *p->node_pref_weight);
    if (!terms || !p->node_pref_weight) {
        json_decref(terms);
        return tm_err_set(err, "out of memory");
    }
    size_t i, n = 0;
    const json_t *t;
    json_array_foreach(pref, i, t) {
        json_int_t w = json_integer_value(json_object_get(t, "weight"));
        if (w < 0 || w > 100) {
            json_decref(terms);
            return tm_err_set(err,
                              "%s: spec.affinity.nodeAffinity.preferredDuringScheduling"
                              "IgnoredDuringExecution[%zu].weight %lld is not in 0..100",
                              owner, i, (long long)w);
        }
        const json_t *pr = json_object_get(t, "preference");
        if (!w || !json_is_object(pr))
            continue;
        p->node_pref_weight[n++] = (int32_t)w;
        json_array_append(terms, (json_t *)pr);
    }
    int rc = sched_sel_terms_from_json(
        terms, owner, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
        &p->node_prefs, &p->n_node_prefs, err);
    json_decref(terms);
    return rc;
}

static int parse_affinity(sched_pod *p, const json_t *spec, tm_err *err) {
    const json_t *na = json_object_get(json_object_get(spec, "affinity"), "nodeAffinity");
    const json_t *req = json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution");
    char owner[512];
    snprintf(owner, sizeof owner, "pod %s/%s", p->ns, p->name);
    if (parse_node_prefs(p, na, owner, err) != 0)
        return -1;
    if (!req || json_is_null(req))
        return 0;
    p->has_affinity = true;
    return sched_sel_terms_from_json(
        json_object_get(req, "nodeSelectorTerms"), owner,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms",
        &p->affinity, &p->n_affinity, err);
}

/* The PersistentVolumeClaims the pod's volumes use: persistentVolumeClaim.claimName, and for a
 * generic ephemeral volume the claim Kubernetes creates for it, named <pod>-<volume>. */
static int parse_claims(sched_pod *p, const json_t *spec, tm_err *err) {
    const json_t *vols = json_object_get(spec, "volumes");
    if (!vols || json_is_null(vols))
        return 0;
    if (!json_is_array(vols))
        return tm_err_set(err, "pod %s/%s: spec.volumes is not a list", p->ns, p->name);
    size_t i;
    const json_t *v;
    json_array_foreach(vols, i, v) {
        const json_t *pvc = json_object_get(v, "persistentVolumeClaim");
        const char *vname = podspec_obj_str(v, "name");
        char buf[512];
        const char *claim = NULL;
        if (pvc) {
            claim = podspec_obj_str(pvc, "claimName");
            if (!claim || !*claim)
                return tm_err_set(err,
                                  "pod %s/%s: spec.volumes[%zu].persistentVolumeClaim.claimName "
                                  "is missing",
                                  p->ns, p->name, i);
        } else if (json_object_get(v, "ephemeral")) {
            if (!vname || !*vname)
                return tm_err_set(err, "pod %s/%s: spec.volumes[%zu].name is missing", p->ns,
                                  p->name, i);
            snprintf(buf, sizeof buf, "%s-%s", p->name, vname);
            claim = buf;
        } else {
            continue;
        }
        char **nc = realloc(p->claims, (p->n_claims + 1) * sizeof *nc);
        if (!nc)
            return tm_err_set(err, "out of memory");
        p->claims = nc;
        if (!(p->claims[p->n_claims] = strdup(claim)))
            return tm_err_set(err, "out of memory");
        if (!pvc && p->n_claims < 64)
            p->ephemeral_claims |= (uint64_t)1 << p->n_claims;
        p->n_claims++;
    }
    return 0;
}

/* RFC 3339 "2024-05-01T12:00:00Z" (fraction and offset tolerated) -> ms; 0 when absent. */
static int64_t parse_time_ms(const char *s) {
    struct tm tm = {0};
    if (!s)
        return 0;
    const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!rest)
        return 0;
    int64_t ms = (int64_t)timegm(&tm) * 1000;
    if (*rest == '.') {
        int64_t frac = 0, scale = 100;
        for (rest++; *rest >= '0' && *rest <= '9'; rest++, scale /= 10)
            frac += scale > 0 ? (*rest - '0') * scale : 0;
        ms += frac;
    }
    if (*rest == '+' || *rest == '-') {
        int hh = 0, mm = 0;
        if (sscanf(rest + 1, "%d:%d", &hh, &mm) == 2)
            ms -= (*rest == '+' ? 1 : -1) * ((int64_t)hh * 3600 + mm * 60) * 1000;
    }
    return ms;
}

static int parse_label_annotation(sched_pod *p, const json_t *ann, const char *key, int *out,
                                  tm_err *err) {
    const char *v = podspec_obj_str(ann, key);
    if (!v)
        return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 1 || x > 1000000)
        return tm_err_set(err, "pod %s/%s: annotation %s=\"%s\" is not an integer >= 1", p->ns,
                          p->name, key, v);
    *out = (int)x;
    return 0;
}

/* spec.schedulingGates [{name}] into p->scheduling_gates ("a, b"), NULL when none. */
static int parse_scheduling_gates(sched_pod *p, const json_t *spec, tm_err *err) {
    const json_t *arr = json_object_get(spec, "schedulingGates");
    size_t i, len = 0;
    const json_t *g;
    json_array_foreach(arr, i, g) len += strlen(tm_json_str(g, "name", "?")) + 2;
    if (!len)
        return 0;
    if (!(p->scheduling_gates = calloc(len + 1, 1)))
        return tm_err_set(err, "out of memory");
    json_array_foreach(arr, i, g) {
        if (i)
            strcat(p->scheduling_gates, ", ");
        strcat(p->scheduling_gates, tm_json_str(g, "name", "?"));
    }
    return 0;
}

/* Reservations' backfill (resv_plan.h): how long the pod says it runs. */
static int parse_expected_duration(sched_pod *p, const json_t *ann, const json_t *spec,
                                   tm_err *err) {
    const char *v = podspec_obj_str(ann, "tarema.io/expected-duration");
    if (v && tm_duration_parse_ms(v, &p->expected_duration_ms, err))
        return tm_err_wrap(err, "pod %s/%s: annotation tarema.io/expected-duration", p->ns,
                           p->name);
    p->active_deadline_s = tm_json_int(spec, "activeDeadlineSeconds", 0);
    if (p->active_deadline_s < 0)
        p->active_deadline_s = 0;
    return 0;
}

/* One container image as kube-scheduler's ImageLocality looks it up on a node: with ":latest"
 * added when the name has no tag (no ':' after the last '/'; a digest "@sha256:..." has one). */
static char *normalized_image(const char *img) {
    const char *colon = strrchr(img, ':'), *slash = strrchr(img, '/');
    bool tagged = colon && (!slash || colon > slash);
    size_t n = strlen(img);
    char *out = malloc(n + (tagged ? 1 : sizeof ":latest"));
    if (out) {
        memcpy(out, img, n + 1);
        if (!tagged && *img)
            memcpy(out + n, ":latest", sizeof ":latest");
    }
    return out;
}

/* The images of spec.initContainers and spec.containers, in that order (ImageLocality). */
static int parse_images(sched_pod *p, const json_t *spec, tm_err *err) {
    static const char *const lists[] = {"initContainers", "containers"};
    size_t total = 0;
    for (size_t l = 0; l < 2; l++)
        total += json_array_size(json_object_get(spec, lists[l]));
    if (!total)
        return 0;
    if (!(p->images = calloc(total, sizeof *p->images)))
        return tm_err_set(err, "out of memory");
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c) {
            const char *img = podspec_obj_str(c, "image");
            if (!(p->images[p->n_images] = normalized_image(img ? img : "")))
                return tm_err_set(err, "out of memory");
            p->n_images++;
        }
    }
    return 0;
}

/* The controller ownerReference (controller: true), when it is one whose selector
 * PodTopologySpread's default constraints read (owner_selectors.h); kube's DefaultSelector also
 * reads only the controller. */
static int parse_controller(sched_pod *p, const json_t *meta, tm_err *err) {
    size_t i;
    const json_t *ref;
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, ref) {
        if (!json_is_true(json_object_get(ref, "controller")))
            continue;
        sched_owner_kind k = sched_owner_kind_of_ref(podspec_obj_str(ref, "apiVersion"),
                                                     podspec_obj_str(ref, "kind"));
        const char *name = podspec_obj_str(ref, "name");
        if (k == SCHED_OWNER_NONE || !name || !*name)
            return 0;
        if (!(p->controller_name = strdup(name)))
            return tm_err_set(err, "out of memory");
        p->controller_kind = k;
        return 0;
    }
    return 0;
}

sched_pod *sched_pod_from_json(sched_snapshot *s, const json_t *pod, const sched_keys *keys,
                               tm_err *err) {
    sched_keys dk = sched_keys_default();
    if (!keys)
        keys = &dk;
    if (!json_is_object(pod)) {
        tm_err_set(err, "pod is not a JSON object");
        return NULL;
    }
    const json_t *meta = json_object_get(pod, "metadata");
    const char *name = podspec_obj_str(meta, "name");
    if (!name || !*name) {
        tm_err_set(err, "pod without metadata.name");
        return NULL;
    }
    const char *ns = podspec_obj_str(meta, "namespace");
    /* pods from a list without uid (fixtures, dry runs) are keyed by namespace/name */
    char uidbuf[512];
    const char *uid = pod_uid(meta, ns, name, uidbuf, sizeof uidbuf);
    sched_pod *p = sched_pod_new(ns ? ns : "default", name, uid);
    if (!p) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *labels = json_object_get(meta, "labels");
    const json_t *ann = json_object_get(meta, "annotations");
    const char *nn = podspec_obj_str(spec, "nodeName");
    const char *proc = podspec_obj_str(labels, keys->process_label);
    const char *wf = podspec_obj_str(labels, keys->workflow_key);
    if (!wf)
        wf = podspec_obj_str(ann, keys->workflow_key);
    free(p->workflow);
    free(p->process);
    p->workflow = dup_or_empty(wf);
    p->process = dup_or_empty(proc);
    if (!p->workflow || !p->process || (nn && *nn && !(p->node_name = strdup(nn)))) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    p->priority = (int32_t)tm_json_int(spec, "priority", 0);
    p->generation = tm_json_int(meta, "generation", 0);
    const char *pp = podspec_obj_str(spec, "preemptionPolicy");
    if (pp && strcmp(pp, "Never") != 0 && strcmp(pp, "PreemptLowerPriority") != 0) {
        tm_err_set(err,
                   "pod %s/%s: spec.preemptionPolicy is \"%s\", not PreemptLowerPriority or "
                   "Never",
                   p->ns, p->name, pp);
        goto fail;
    }
    p->preempt_never = pp && strcmp(pp, "Never") == 0;
    const char *sn = podspec_obj_str(spec, "schedulerName"); /* unset: the API's default */
    if (!sn || !*sn)
        sn = "default-scheduler";
    int pi = sched_profile_index(keys->profiles, sn);
    p->profile = pi > 0 && pi <= UINT8_MAX ? (uint8_t)pi : 0;
    p->created_ms = parse_time_ms(podspec_obj_str(meta, "creationTimestamp"));
    if (parse_label_annotation(p, ann, "tarema.io/cpu", &p->labels[SCHED_FEAT_CPU], err) ||
        parse_label_annotation(p, ann, "tarema.io/mem", &p->labels[SCHED_FEAT_MEM], err) ||
        parse_label_annotation(p, ann, "tarema.io/io", &p->labels[SCHED_FEAT_IO], err))
        goto fail;
    const json_t *rc = json_object_get(spec, "resourceClaims");
    if (rc && !json_is_null(rc) && !json_is_array(rc)) {
        tm_err_set(err, "pod %s/%s: spec.resourceClaims is not a list", p->ns, p->name);
        goto fail;
    }
    p->n_resource_claims = json_array_size(rc);
    if (sched_pod_requests_x(s, pod, &p->requests, &p->xreq, &p->n_xreq, err) != 0)
        goto fail;
    if (parse_tolerations(p, json_object_get(spec, "tolerations"), err) != 0 ||
        parse_node_selector(p, json_object_get(spec, "nodeSelector"), err) != 0 ||
        parse_affinity(p, spec, err) != 0 || parse_interpod(p, meta, spec, err) != 0 ||
        parse_claims(p, spec, err) != 0 || parse_expected_duration(p, ann, spec, err) != 0 ||
        parse_scheduling_gates(p, spec, err) != 0 || parse_images(p, spec, err) != 0 ||
        parse_controller(p, meta, err) != 0)
        goto fail;
    return p;
fail:
    sched_pod_free(p);
    return NULL;
}

bool sched_pod_json_terminal(const json_t *pod) {
    const char *ph = tm_json_str(pod, "status.phase", "");
    return strcmp(ph, "Succeeded") == 0 || strcmp(ph, "Failed") == 0;
}
