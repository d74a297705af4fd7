/* jsonutil.h: small conveniences over jansson for reading Kubernetes-shaped objects.
 *
 * Paths are dot-separated object keys ("metadata.labels"); a key containing dots is reached
 * with tm_json_get on the parent instead. All getters return borrowed references or values and
 * the given default when anything along the path is missing or of another type. */
#ifndef TAREMA_JSONUTIL_H
#define TAREMA_JSONUTIL_H

#include <jansson.h>
#include <stdbool.h>

#include "error.h"

json_t *tm_json_path(const json_t *root, const char *path);
const char *tm_json_str(const json_t *root, const char *path, const char *dflt);
long long tm_json_int(const json_t *root, const char *path, long long dflt);
double tm_json_num(const json_t *root, const char *path, double dflt); /* int or real */
bool tm_json_bool(const json_t *root, const char *path, bool dflt);

/* Loads a JSON file; err names the file, line and column of a syntax error. New reference. */
json_t *tm_json_load_file(const char *path, tm_err *err);

/* Checks that every key of obj is in the NULL-terminated `allowed` list; err names the first
 * unknown key and where (`what`, e.g. "cluster.yaml: nodes[2]"). */
int tm_json_check_keys(const json_t *obj, const char *const *allowed, const char *what,
                       tm_err *err);

#endif
