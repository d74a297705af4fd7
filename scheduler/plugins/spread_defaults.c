/* spread_defaults.c: PodTopologySpreadArgs (spread_defaults.h): kube's system defaults and the
 * parser of a List of default constraints, validated as kube-scheduler's
 * ValidatePodTopologySpreadArgs does (no labelSelector, no duplicate key + action pair). */
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/spread_defaults.h"

static sched_spread_defaults *alloc(size_t n) {
    sched_spread_defaults *d = calloc(1, sizeof *d);
    if (!d ||
        (n && (!(d->c = calloc(n, sizeof *d->c)) || !(d->soft = calloc(n, sizeof *d->soft))))) {
        sched_spread_defaults_free(d);
        return NULL;
    }
    return d;
}

void sched_spread_defaults_free(sched_spread_defaults *d) {
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        free(d->c[i].topology_key);
    free(d->c);
    free(d->soft);
    free(d);
}

bool sched_spread_defaults_honour_taints(const sched_spread_defaults *d) {
    for (size_t i = 0; d && i < d->n; i++)
        if (!d->soft[i] && d->c[i].honor_node_taints)
            return true;
    return false;
}

static int add(sched_spread_defaults *d, const char *key, int32_t skew, bool soft, int32_t min,
               bool honor_aff, bool honor_taints) {
    sched_spread *c = &d->c[d->n];
    if (!(c->topology_key = strdup(key)))
        return -1;
    c->max_skew = skew;
    c->min_domains = min;
    c->honor_node_affinity = honor_aff;
    c->honor_node_taints = honor_taints;
    d->soft[d->n++] = soft;
    return 0;
}

sched_spread_defaults *sched_spread_defaults_system(void) {
    sched_spread_defaults *d = alloc(2);
    if (!d)
        return NULL;
    d->system = true;
    /* kube-scheduler's systemDefaultConstraints, with the defaults of an unset minDomains (1)
     * and node inclusion policies (affinity Honor, taints Ignore) */
    if (add(d, "kubernetes.io/hostname", 3, true, 1, true, false) != 0 ||
        add(d, "topology.kubernetes.io/zone", 5, true, 1, true, false) != 0) {
        sched_spread_defaults_free(d);
        return NULL;
    }
    return d;
}

static int policy(const json_t *c, const char *field, bool dflt, bool *out, size_t i, tm_err *err) {
    const json_t *v = json_object_get(c, field);
    *out = dflt;
    if (!v || json_is_null(v))
        return 0;
    const char *s = json_string_value(v);
    if (!s || (strcmp(s, "Honor") != 0 && strcmp(s, "Ignore") != 0))
        return tm_err_set(
            err, "podTopologySpread.defaultConstraints[%zu].%s must be Honor or Ignore", i, field);
    *out = strcmp(s, "Honor") == 0;
    return 0;
}

sched_spread_defaults *sched_spread_defaults_from_json(const json_t *args, tm_err *err) {
    if (!args || json_is_null(args))
        return sched_spread_defaults_system();
    if (!json_is_object(args)) {
        tm_err_set(err, "podTopologySpread must be a map");
        return NULL;
    }
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)args, k, v) {
        if (strcmp(k, "defaultingType") != 0 && strcmp(k, "defaultConstraints") != 0) {
            tm_err_set(err,
                       "podTopologySpread.%s is not a known key (defaultingType, "
                       "defaultConstraints)",
                       k);
            return NULL;
        }
    }
    const json_t *dt = json_object_get(args, "defaultingType");
    const char *type = dt ? json_string_value(dt) : "System";
    if (!type || (strcmp(type, "System") != 0 && strcmp(type, "List") != 0)) {
        tm_err_set(err, "podTopologySpread.defaultingType must be System or List");
        return NULL;
    }
    const json_t *arr = json_object_get(args, "defaultConstraints");
    if (arr && !json_is_null(arr) && !json_is_array(arr)) {
        tm_err_set(err, "podTopologySpread.defaultConstraints must be a list");
        return NULL;
    }
    if (strcmp(type, "System") == 0) {
        if (json_array_size(arr)) { /* kube refuses the two together */
            tm_err_set(err, "podTopologySpread.defaultConstraints must be empty with "
                            "defaultingType System");
            return NULL;
        }
        return sched_spread_defaults_system();
    }
    sched_spread_defaults *d = alloc(json_array_size(arr));
    if (!d) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    size_t i;
    const json_t *c;
    json_array_foreach(arr, i, c) {
        const json_t *ms = json_object_get(c, "maxSkew"), *md = json_object_get(c, "minDomains");
        const char *key = json_string_value(json_object_get(c, "topologyKey"));
        const char *wu = json_string_value(json_object_get(c, "whenUnsatisfiable"));
        bool aff, taints;
        const char *bad =
            !json_is_object(c) ? "is not a map"
            : !json_is_integer(ms) || json_integer_value(ms) < 1 ||
                    json_integer_value(ms) > INT32_MAX
                ? "maxSkew is not an integer >= 1"
            : !key || !*key ? "topologyKey is missing"
            : !wu || (strcmp(wu, "DoNotSchedule") != 0 && strcmp(wu, "ScheduleAnyway") != 0)
                ? "whenUnsatisfiable is not DoNotSchedule or ScheduleAnyway"
            : json_object_get(c, "labelSelector")
                ? "labelSelector is not allowed (the selector comes from the "
                  "pod's Services and controller)"
            : md && !json_is_null(md) &&
                    (!json_is_integer(md) || json_integer_value(md) < 1 ||
                     json_integer_value(md) > INT32_MAX)
                ? "minDomains is not an integer >= 1"
                : NULL;
        if (bad) {
            tm_err_set(err, "podTopologySpread.defaultConstraints[%zu]: %s", i, bad);
            goto fail;
        }
        bool soft = strcmp(wu, "ScheduleAnyway") == 0;
        for (size_t j = 0; j < d->n; j++)
            if (d->soft[j] == soft && strcmp(d->c[j].topology_key, key) == 0) {
                tm_err_set(err,
                           "podTopologySpread.defaultConstraints[%zu]: topologyKey %s with "
                           "whenUnsatisfiable %s is given twice",
                           i, key, wu);
                goto fail;
            }
        if (policy(c, "nodeAffinityPolicy", true, &aff, i, err) != 0 ||
            policy(c, "nodeTaintsPolicy", false, &taints, i, err) != 0)
            goto fail;
        int32_t min = md && !json_is_null(md) ? (int32_t)json_integer_value(md) : 1;
        if (add(d, key, (int32_t)json_integer_value(ms), soft, min, aff, taints) != 0) {
            tm_err_set(err, "out of memory");
            goto fail;
        }
    }
    return d;
fail:
    sched_spread_defaults_free(d);
    return NULL;
}
