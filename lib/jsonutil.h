/* jsonutil.h: small conveniences over jansson for reading Kubernetes-shaped objects.
 *
 * Paths are dot-separated object keys ("metadata.labels"); a key containing dots is reached
 * with tm_json_get on the parent instead. All getters return borrowed references or values and
 * the given default when anything along the path is missing or of another type. */
#ifndef TAREMA_JSONUTIL_H
#define TAREMA_JSONUTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

json_t *tm_json_path(const json_t *root, const char *path);
const char *tm_json_str(const json_t *root, const char *path, const char *dflt);
long long tm_json_int(const json_t *root, const char *path, long long dflt);
double tm_json_num(const json_t *root, const char *path, double dflt); /* int or real */
bool tm_json_bool(const json_t *root, const char *path, bool dflt);

/* prefix followed by key as one JSON Pointer token (RFC 6901: "~" as "~0", "/" as "~1"), for a
 * JSON Patch path: ("/metadata/annotations/", "tarema.io/x") is
 * "/metadata/annotations/tarema.io~1x". A new string, or NULL without memory. */
char *tm_json_pointer(const char *prefix, const char *key);

/* Loads a JSON file; err names the file, line and column of a syntax error. New reference. */
json_t *tm_json_load_file(const char *path, tm_err *err);

/* Checks that every key of obj is in the NULL-terminated `allowed` list; err names the first
 * unknown key and where (`what`, e.g. "cluster.yaml: nodes[2]"). */
int tm_json_check_keys(const json_t *obj, const char *const *allowed, const char *what,
                       tm_err *err);

/* ---- fields of the YAML input formats (cluster description, simulator workloads) ---- */

/* A number, or a Kubernetes quantity string ("5Gi", "500m" for cpu when milli), into *out
 * (cores when milli, else units); finite and >= 0, else -1 with err naming `what`. */
int tm_json_quantity(const json_t *v, int milli, double *out, const char *what, tm_err *err);
/* Optional number >= 0 at key; *out unchanged when absent. */
int tm_json_opt_nonneg(const json_t *obj, const char *key, double *out, const char *what,
                       tm_err *err);
/* A non-empty name string shorter than size, copied to dst. */
int tm_json_name(char *dst, size_t size, const json_t *v, const char *what, tm_err *err);
/* The list under a document's one required key (keys[0]) after checking the other keys; NULL
 * with err when the document is not a mapping or the list is missing or empty. */
json_t *tm_json_top_list(const json_t *root, const char *const *keys, const char *source,
                         tm_err *err);

#endif
