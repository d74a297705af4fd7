/* yamljson.h: YAML documents read into jansson values, so every config file, node file,
 * kubeconfig and scenario is handled by the same JSON code paths.
 *
 * Plain scalars follow the YAML 1.2 core schema (null, true/false, integers, floats);
 * quoted scalars and anything else stay strings. Anchors and aliases are resolved; merge keys
 * (`<<`) are not supported and are kept as ordinary keys. */
#ifndef TAREMA_YAMLJSON_H
#define TAREMA_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

/* Parses the first document of `text`. Returns a new reference (caller json_decref()s) or
 * NULL with err naming the line and column. An empty document yields json null. */
json_t *tm_yaml_parse(const char *text, size_t len, const char *source_name, tm_err *err);

/* Parses every document into a JSON array (empty documents skipped). */
json_t *tm_yaml_parse_all(const char *text, size_t len, const char *source_name, tm_err *err);

/* Reads and parses a file (first document / all documents). */
json_t *tm_yaml_load_file(const char *path, tm_err *err);
json_t *tm_yaml_load_file_all(const char *path, tm_err *err);

#endif
