/* yamljson.h: YAML documents read into jansson values, so every config file, node file,
 * kubeconfig and scenario is handled by the same JSON code paths.
 *
 * Plain scalars follow the YAML 1.2 core schema (null, true/false, integers, floats);
 * quoted scalars and anything else stay strings. Anchors and aliases are resolved; merge keys
 * (`<<`) are not supported and are kept as ordinary keys.
 *
 * Limits, so that a hostile file costs an error message and not the process:
 * - nesting: at most TM_YAML_MAX_DEPTH collections inside each other, aliases expanded
 *   included ("f.yaml: YAML nesting deeper than 256 levels at line L");
 * - aliases: the rule of Go's gopkg.in/yaml.v3: once a stream has over
 *   1,000 nodes, at most 99 % of them may be alias copies (falling to 10 % from 4,000,000
 *   nodes), so a "billion laughs" bomb stops after a few thousand nodes
 *   ("f.yaml:L: document contains excessive aliasing: ...").
 * Every failure fills err; none is reported with an empty message. */
#ifndef TAREMA_YAMLJSON_H
#define TAREMA_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

#define TM_YAML_MAX_DEPTH 256

/* Parses the first document of `text`. Returns a new reference (caller json_decref()s) or
 * NULL with err naming the line and column. An empty document yields json null. */
json_t *tm_yaml_parse(const char *text, size_t len, const char *source_name, tm_err *err);

/* Parses every document into a JSON array (empty documents skipped). */
json_t *tm_yaml_parse_all(const char *text, size_t len, const char *source_name, tm_err *err);

/* Reads and parses a file (first document / all documents). */
json_t *tm_yaml_load_file(const char *path, tm_err *err);
json_t *tm_yaml_load_file_all(const char *path, tm_err *err);

#endif
