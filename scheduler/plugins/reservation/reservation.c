/* reservation.c: Reservation JSON <-> struct, validation, owner matching, status patches. */
#include "scheduler/plugins/reservation/reservation.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/duration.h"
#include "lib/jsonutil.h"
#include "lib/quantity.h"
#include "scheduler/backend/podspec.h"

#define POD_GROUP_LABEL "scheduling.x-k8s.io/pod-group"
#define MAX_COUNT       100000

static const char *const phase_names[] = {"Pending",  "Admitted", "Active",
                                          "Released", "Expired",  "Failed"};

const char *resv_phase_name(resv_phase p) {
    return (unsigned)p <= RESV_FAILED ? phase_names[p] : "Unknown";
}

int resv_phase_parse(const char *s, resv_phase *out) {
    if (!s || !*s) {
        *out = RESV_PENDING;
        return 0;
    }
    for (int i = 0; i <= RESV_FAILED; i++)
        if (strcmp(s, phase_names[i]) == 0) {
            *out = (resv_phase)i;
            return 0;
        }
    return -1;
}

bool resv_phase_holds(resv_phase p) {
    return p == RESV_ADMITTED || p == RESV_ACTIVE;
}

int resv_parse_time_ms(const char *s, int64_t *out, tm_err *err) {
    struct tm tm = {0};
    const char *rest = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!rest)
        return tm_err_set(err, "\"%s\" is not an RFC 3339 time (2026-11-24T00:10:00Z)", s ? s : "");
    int64_t ms = (int64_t)timegm(&tm) * 1000;
    if (*rest == '.') {
        int64_t scale = 100;
        for (rest++; isdigit((unsigned char)*rest); rest++, scale /= 10)
            ms += scale > 0 ? (*rest - '0') * scale : 0;
    }
    if (*rest == 'Z' || *rest == 'z') {
        rest++;
    } else if (*rest == '+' || *rest == '-') {
        int hh = 0, mm = 0, used = 0;
        if (sscanf(rest + 1, "%2d:%2d%n", &hh, &mm, &used) != 2 || used != 5)
            return tm_err_set(err, "\"%s\": bad UTC offset", s);
        ms -= (*rest == '+' ? 1 : -1) * ((int64_t)hh * 3600 + mm * 60) * 1000;
        rest += 6;
    } else {
        return tm_err_set(err, "\"%s\" has no time zone (end with Z or +hh:mm)", s);
    }
    if (*rest)
        return tm_err_set(err, "\"%s\": trailing characters", s);
    *out = ms;
    return 0;
}

char *resv_format_time(int64_t ms, char *buf, size_t size) {
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

const char *reservation_scheduler_name(const json_t *obj) {
    const char *s = tm_json_str(obj, "spec.schedulerName", "");
    return *s ? s : "tarema";
}

char *reservation_key(const reservation *r, char *buf, size_t size) {
    snprintf(buf, size, "%s/%s", r->ns, r->name);
    return buf;
}

void resv_holds_free(resv_hold *h, size_t n) {
    for (size_t i = 0; h && i < n; i++)
        free(h[i].node);
    free(h);
}

int resv_holds_copy(const resv_hold *src, size_t n, resv_hold **out) {
    *out = NULL;
    if (!n)
        return 0;
    resv_hold *h = calloc(n, sizeof *h);
    if (!h)
        return -1;
    for (size_t i = 0; i < n; i++) {
        h[i] = src[i];
        if (!(h[i].node = strdup(src[i].node))) {
            resv_holds_free(h, i);
            return -1;
        }
    }
    *out = h;
    return 0;
}

void reservation_free(reservation *r) {
    if (!r)
        return;
    free(r->ns);
    free(r->name);
    free(r->uid);
    json_decref(r->tmpl);
    for (size_t i = 0; i < r->n_nodes; i++)
        free(r->nodes[i]);
    free(r->nodes);
    json_decref(r->node_selector);
    free(r->node_group);
    free(r->owner_name);
    tm_selector_free(r->owner_sel);
    free(r->scheduler_name);
    free(r->priority_class);
    resv_holds_free(r->holds, r->n_holds);
    free(r->message);
    free(r);
}

static int parse_owner(reservation *r, const json_t *owner, tm_err *err) {
    if (!json_is_object(owner))
        return tm_err_set(err, "spec.owner is required ({kind: PodGroup|Workload, name} or "
                               "{selector: {matchLabels: ...}})");
    const json_t *sel = json_object_get(owner, "selector");
    const char *kind = tm_json_str(owner, "kind", NULL);
    if (sel) {
        if (kind)
            return tm_err_set(err, "spec.owner: give either kind and name or selector, not both");
        r->owner_kind = RESV_OWNER_SELECTOR;
        if (!(r->owner_sel = tm_selector_from_label_selector(sel, err)))
            return tm_err_wrap(err, "spec.owner.selector");
        if (r->owner_sel->n == 0)
            return tm_err_set(err, "spec.owner.selector is empty: it would match every pod");
        return 0;
    }
    if (!kind)
        return tm_err_set(err, "spec.owner needs kind (PodGroup or Workload) or selector");
    if (strcmp(kind, "PodGroup") == 0)
        r->owner_kind = RESV_OWNER_PODGROUP;
    else if (strcmp(kind, "Workload") == 0)
        r->owner_kind = RESV_OWNER_WORKLOAD;
    else
        return tm_err_set(err, "spec.owner.kind \"%s\" is not PodGroup or Workload", kind);
    const char *name = tm_json_str(owner, "name", NULL);
    if (!name || !*name)
        return tm_err_set(err, "spec.owner.name is required with kind %s", kind);
    return (r->owner_name = strdup(name)) ? 0 : tm_err_set(err, "out of memory");
}

static int parse_window(reservation *r, const json_t *spec, tm_err *err) {
    if (resv_parse_time_ms(tm_json_str(spec, "startTime", NULL), &r->start_ms, err))
        return tm_err_wrap(err, "spec.startTime");
    const char *end = tm_json_str(spec, "endTime", NULL);
    const char *dur = tm_json_str(spec, "duration", NULL);
    if (end && dur)
        return tm_err_set(err, "spec.endTime and spec.duration: give one of them, not both");
    if (!end && !dur)
        return tm_err_set(err, "spec.endTime or spec.duration is required");
    if (end) {
        if (resv_parse_time_ms(end, &r->end_ms, err))
            return tm_err_wrap(err, "spec.endTime");
        if (r->end_ms <= r->start_ms)
            return tm_err_set(err, "spec.endTime %s is not after spec.startTime %s", end,
                              tm_json_str(spec, "startTime", ""));
    } else {
        int64_t d;
        if (tm_duration_parse_ms(dur, &d, err))
            return tm_err_wrap(err, "spec.duration");
        if (d <= 0)
            return tm_err_set(err, "spec.duration \"%s\" must be positive", dur);
        r->end_ms = r->start_ms + d;
    }
    return 0;
}

static int parse_placement(sched_snapshot *s, reservation *r, const json_t *spec, tm_err *err) {
    const json_t *tmpl = json_object_get(spec, "template");
    const json_t *nodes = json_object_get(spec, "nodes");
    if (!tmpl && !nodes)
        return tm_err_set(err, "spec.template (with spec.count) or spec.nodes is required");
    if (tmpl) {
        if (!json_is_object(tmpl) || !json_is_object(json_object_get(tmpl, "requests")))
            return tm_err_set(err, "spec.template.requests must be an object (cpu, memory, ...)");
        r->tmpl = json_incref((json_t *)tmpl);
        json_int_t count = tm_json_int(spec, "count", 1);
        if (count < 1 || count > MAX_COUNT)
            return tm_err_set(err, "spec.count %lld must be between 1 and %d", (long long)count,
                              MAX_COUNT);
        r->count = (int32_t)count;
    } else if (json_object_get(spec, "count")) {
        return tm_err_set(err, "spec.count needs spec.template (the requests of one pod)");
    }
    if (nodes) {
        if (!json_is_array(nodes) || json_array_size(nodes) == 0)
            return tm_err_set(err, "spec.nodes must be a non-empty list of node names");
        r->nodes = calloc(json_array_size(nodes), sizeof *r->nodes);
        if (!r->nodes)
            return tm_err_set(err, "out of memory");
        size_t i;
        const json_t *n;
        json_array_foreach(nodes, i, n) {
            if (!json_is_string(n) || !*json_string_value(n))
                return tm_err_set(err, "spec.nodes[%zu] is not a node name", i);
            for (size_t j = 0; j < r->n_nodes; j++)
                if (strcmp(r->nodes[j], json_string_value(n)) == 0)
                    return tm_err_set(err, "spec.nodes names %s twice", r->nodes[j]);
            if (!(r->nodes[r->n_nodes] = strdup(json_string_value(n))))
                return tm_err_set(err, "out of memory");
            r->n_nodes++;
        }
    }
    const json_t *ns = json_object_get(spec, "nodeSelector");
    const char *group = tm_json_str(spec, "nodeGroup", NULL);
    if (ns && !json_is_object(ns))
        return tm_err_set(err, "spec.nodeSelector must be an object of label pairs");
    if (ns || group) {
        r->node_selector = ns ? json_deep_copy(ns) : json_object();
        if (!r->node_selector)
            return tm_err_set(err, "out of memory");
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)ns, k, v) {
            if (!json_is_string(v))
                return tm_err_set(err, "spec.nodeSelector.%s is not a string", k);
        }
        if (group) {
            const char *other = tm_json_str(ns, "tarema.io/group", NULL);
            if (other && strcmp(other, group) != 0)
                return tm_err_set(err,
                                  "spec.nodeGroup %s contradicts spec.nodeSelector "
                                  "tarema.io/group=%s",
                                  group, other);
            if (!(r->node_group = strdup(group)) ||
                json_object_set_new(r->node_selector, "tarema.io/group", json_string(group)))
                return tm_err_set(err, "out of memory");
        }
    }
    if (r->tmpl) { /* the requests must parse as a pod's would */
        json_t *pod = reservation_template_pod(r);
        sched_resources req;
        int rc = pod ? sched_pod_requests_from_json(s, pod, &req, err)
                     : tm_err_set(err, "out of memory");
        json_decref(pod);
        if (rc)
            return tm_err_wrap(err, "spec.template");
    }
    return 0;
}

static int parse_holds(sched_snapshot *s, reservation *r, const json_t *nodes, tm_err *err) {
    if (!json_is_array(nodes) || !json_array_size(nodes))
        return 0;
    r->holds = calloc(json_array_size(nodes), sizeof *r->holds);
    if (!r->holds)
        return tm_err_set(err, "out of memory");
    size_t i;
    const json_t *h;
    json_array_foreach(nodes, i, h) {
        resv_hold *o = &r->holds[r->n_holds];
        const char *name = tm_json_str(h, "name", NULL);
        if (!name)
            return tm_err_set(err, "status.nodes[%zu] has no name", i);
        if (!(o->node = strdup(name)))
            return tm_err_set(err, "out of memory");
        r->n_holds++;
        o->pods = (int32_t)tm_json_int(h, "pods", 0);
        o->res.v[SCHED_RES_PODS] = o->pods; /* status.nodes[].pods is the pods slot */
        const char *k;
        const json_t *v;
        json_object_foreach(json_object_get(h, "requests"), k, v) {
            int slot = sched_snapshot_resource_slot(s, k, err);
            if (slot == SCHED_RES_NO_SLOT)
                continue; /* kept sparsely: reservations plan the fixed slots (snapshot.h) */
            if (slot < 0)
                return tm_err_wrap(err, "status.nodes[%zu]", i);
            const char *q = json_string_value(v);
            int rc = slot == SCHED_RES_CPU ? tm_quantity_parse_milli(q, &o->res.v[slot], err)
                                           : tm_quantity_parse(q, &o->res.v[slot], err);
            if (rc)
                return tm_err_wrap(err, "status.nodes[%zu].requests.%s", i, k);
        }
    }
    return 0;
}

reservation *reservation_from_json(sched_snapshot *s, const json_t *obj, tm_err *err) {
    const char *ns = tm_json_str(obj, "metadata.namespace", "default");
    const char *name = tm_json_str(obj, "metadata.name", NULL);
    if (!name) {
        tm_err_set(err, "Reservation without metadata.name");
        return NULL;
    }
    reservation *r = calloc(1, sizeof *r);
    if (!r || !(r->ns = strdup(ns)) || !(r->name = strdup(name)) ||
        !(r->uid = strdup(tm_json_str(obj, "metadata.uid", "")))) {
        reservation_free(r);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    r->deleting = tm_json_path(obj, "metadata.deletionTimestamp") != NULL;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *st = json_object_get(obj, "status");
    if (!json_is_object(spec)) {
        tm_err_set(err, "spec is required");
        goto fail;
    }
    if (resv_phase_parse(tm_json_str(st, "phase", NULL), &r->phase)) {
        tm_err_set(err, "status.phase \"%s\" is unknown", tm_json_str(st, "phase", ""));
        goto fail;
    }
    const char *msg = tm_json_str(st, "message", NULL);
    if (msg && !(r->message = strdup(msg))) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    r->owner_started = tm_json_bool(st, "ownerStarted", false);
    const char *hs = tm_json_str(st, "heldStartTime", NULL),
               *he = tm_json_str(st, "heldEndTime", NULL);
    if (hs && he) { /* unreadable or reversed: the spec's window, as before they were written */
        tm_err terr = {0};
        int64_t a, b;
        if (!resv_parse_time_ms(hs, &a, &terr) && !resv_parse_time_ms(he, &b, &terr) && b > a) {
            r->held_start_ms = a;
            r->held_end_ms = b;
        }
    }
    if (!(r->scheduler_name = strdup(reservation_scheduler_name(obj)))) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    const json_t *eo = json_object_get(spec, "evictOverrunning");
    if (eo && !json_is_boolean(eo)) {
        tm_err_set(err, "spec.evictOverrunning must be true or false");
        goto fail;
    }
    r->evict_overrunning = !eo || json_is_true(eo);
    const json_t *pc = json_object_get(spec, "priorityClassName");
    if (pc && (!json_is_string(pc) || !*json_string_value(pc))) {
        tm_err_set(err, "spec.priorityClassName must be a non-empty string");
        goto fail;
    }
    if (pc && !(r->priority_class = strdup(json_string_value(pc)))) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    if (parse_window(r, spec, err) || parse_owner(r, json_object_get(spec, "owner"), err) ||
        parse_placement(s, r, spec, err) || parse_holds(s, r, json_object_get(st, "nodes"), err))
        goto fail;
    return r;
fail:
    tm_err_wrap(err, "Reservation %s/%s", ns, name);
    reservation_free(r);
    return NULL;
}

void reservation_held_window(const reservation *r, int64_t *start_ms, int64_t *end_ms) {
    bool held = r->held_end_ms > 0;
    *start_ms = held ? r->held_start_ms : r->start_ms;
    *end_ms = held ? r->held_end_ms : r->end_ms;
}

bool reservation_owns(const reservation *r, const char *ns, const json_t *labels,
                      const char *workload) {
    if (!ns || strcmp(ns, r->ns) != 0)
        return false;
    switch (r->owner_kind) {
    case RESV_OWNER_PODGROUP: {
        const char *g = json_string_value(json_object_get(labels, POD_GROUP_LABEL));
        return g && strcmp(g, r->owner_name) == 0;
    }
    case RESV_OWNER_WORKLOAD:
        return workload && strcmp(workload, r->owner_name) == 0;
    case RESV_OWNER_SELECTOR:
        return tm_selector_matches(r->owner_sel, labels);
    }
    return false;
}

json_t *reservation_template_pod(const reservation *r) {
    const json_t *t = r->tmpl;
    json_t *meta = json_pack("{s:s, s:s, s:s}", "namespace", r->ns, "name", r->name, "uid",
                             r->uid[0] ? r->uid : r->name);
    json_t *req = json_deep_copy(json_object_get(t, "requests"));
    json_t *spec = json_pack("{s:[{s:s, s:{s:o}}]}", "containers", "name", "reserved", "resources",
                             "requests", req ? req : json_object());
    json_t *pod = json_pack("{s:o, s:o}", "metadata", meta, "spec", spec);
    if (!pod)
        return NULL;
    const json_t *labels = json_object_get(t, "labels");
    const json_t *ann = json_object_get(t, "annotations");
    if (json_is_object(labels))
        json_object_set_new(meta, "labels", json_deep_copy(labels));
    if (json_is_object(ann))
        json_object_set_new(meta, "annotations", json_deep_copy(ann));
    if (r->node_selector)
        json_object_set_new(spec, "nodeSelector", json_deep_copy(r->node_selector));
    if (r->n_nodes) {
        json_t *vals = json_array();
        for (size_t i = 0; i < r->n_nodes; i++)
            json_array_append_new(vals, json_string(r->nodes[i]));
        json_object_set_new(spec, "affinity",
                            json_pack("{s:{s:{s:[{s:[{s:s, s:s, s:o}]}]}}}", "nodeAffinity",
                                      "requiredDuringSchedulingIgnoredDuringExecution",
                                      "nodeSelectorTerms", "matchFields", "key", "metadata.name",
                                      "operator", "In", "values", vals));
    }
    return pod;
}

json_t *reservation_holds_json(const sched_snapshot *s, const resv_hold *holds, size_t n) {
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        json_t *req = json_object();
        int slots = sched_snapshot_resource_count(s);
        for (int k = 0; k < slots; k++) {
            const char *rn = sched_snapshot_resource_name(s, k);
            if (!rn || k == SCHED_RES_PODS || holds[i].res.v[k] == 0)
                continue;
            char buf[64];
            if (k == SCHED_RES_CPU)
                tm_quantity_format_milli(holds[i].res.v[k], buf, sizeof buf);
            else
                snprintf(buf, sizeof buf, "%lld", (long long)holds[i].res.v[k]);
            json_object_set_new(req, rn, json_string(buf));
        }
        json_array_append_new(arr, json_pack("{s:s, s:i, s:o}", "name", holds[i].node, "pods",
                                             (json_int_t)holds[i].pods, "requests", req));
    }
    return arr;
}

json_t *reservation_status_patch(const sched_snapshot *s, resv_phase phase, const char *message,
                                 const resv_hold *holds, size_t n, bool set_holds,
                                 bool owner_started, int64_t held_start_ms, int64_t held_end_ms) {
    json_t *st = json_pack("{s:s, s:s, s:b}", "phase", resv_phase_name(phase), "message",
                           message ? message : "", "ownerStarted", owner_started);
    if (st && set_holds) {
        char t[32];
        /* null removes them (merge patch) when the holds go */
        json_object_set_new(st, "heldStartTime",
                            n && held_end_ms > 0
                                ? json_string(resv_format_time(held_start_ms, t, sizeof t))
                                : json_null());
        json_object_set_new(st, "heldEndTime",
                            n && held_end_ms > 0
                                ? json_string(resv_format_time(held_end_ms, t, sizeof t))
                                : json_null());
        json_object_set_new(st, "nodes", reservation_holds_json(s, holds, n));
        /* kubectl's printer columns show one element of a list: the names joined for them */
        size_t len = 1;
        for (size_t i = 0; i < n; i++)
            len += strlen(holds[i].node) + 1;
        char *names = calloc(len, 1);
        for (size_t i = 0; names && i < n; i++) {
            if (i)
                strcat(names, ",");
            strcat(names, holds[i].node);
        }
        json_object_set_new(st, "nodeNames", json_string(names ? names : ""));
        free(names);
    }
    return st ? json_pack("{s:o}", "status", st) : NULL;
}
