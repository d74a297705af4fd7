/* podspec_internal.h: the JSON helpers podspec.c (pods) shares with nodespec.c (nodes and
 * TaskProfiles), so both read resource lists and taint effects the same way. */
#ifndef TAREMA_SCHED_PODSPEC_INTERNAL_H
#define TAREMA_SCHED_PODSPEC_INTERNAL_H

#include <stdbool.h>

#include "scheduler/backend/podspec.h"

/* obj[key] when it is a string, else NULL (obj may be anything). */
const char *podspec_obj_str(const json_t *obj, const char *key);
/* Which resources one evaluation of a resource list or of a pod's requests fills in.
 * only NULL: the snapshot's fixed slots; a name with none is skipped and collected in
 * over[0..n_over-1] (borrowed from the JSON) for a pass of its own. only set: just those names,
 * name only[k] in slot k of the vector (the sparse pass, n_only <= SCHED_RES_MAX). */
typedef struct podspec_res_pass {
    sched_snapshot *s;
    const char *const *only;
    int n_only;
    const char **over;
    int n_over, cap_over;
} podspec_res_pass;

/* A resource list object ({"cpu": "100m", ...}) added into out; what names it in errors. */
int podspec_resource_list(podspec_res_pass *rp, const json_t *list, sched_resources *out,
                          const char *what, tm_err *err);
/* A quantity of resource name (millis for cpu) from a JSON string or number. 0 or -1 with err. */
int podspec_quantity(const json_t *v, const char *name, int64_t *out, const char *what,
                     tm_err *err);
/* A taint or toleration effect; "" or NULL is SCHED_EFFECT_NONE only with allow_empty. 0 or -1. */
int podspec_parse_effect(const char *e, sched_effect *out, bool allow_empty);

#endif
