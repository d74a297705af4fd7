/* podspec_internal.h: the JSON helpers podspec.c (pods) shares with nodespec.c (nodes and
 * TaskProfiles), so both read resource lists and taint effects the same way. */
#ifndef TAREMA_SCHED_PODSPEC_INTERNAL_H
#define TAREMA_SCHED_PODSPEC_INTERNAL_H

#include <stdbool.h>

#include "scheduler/backend/podspec.h"

/* obj[key] when it is a string, else NULL (obj may be anything). */
const char *podspec_obj_str(const json_t *obj, const char *key);
/* A resource list object ({"cpu": "100m", ...}) added into out; what names it in errors. A
 * resource the snapshot has no slot left for (sched_snapshot_resource_untracked) is left out:
 * a node keeps the rest, a bound pod counts for the rest. When untracked is not NULL and still
 * NULL, the first such name with a non-zero amount is put there (borrowed from list). */
int podspec_resource_list(sched_snapshot *s, const json_t *list, sched_resources *out,
                          const char *what, const char **untracked, tm_err *err);
/* A taint or toleration effect; "" or NULL is SCHED_EFFECT_NONE only with allow_empty. 0 or -1. */
int podspec_parse_effect(const char *e, sched_effect *out, bool allow_empty);

#endif
