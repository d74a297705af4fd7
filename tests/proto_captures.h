/* proto_captures.h: reading the real API server captures in tests/data/proto/ (protobuf and
 * JSON of the same objects, made by tests/data/proto/capture.sh), shared by the kube_proto
 * tests and bench. Header-only (static inline). $REPO_ROOT (set by tests/run.sh) or the
 * current directory locates them. */
#ifndef TAREMA_PROTO_CAPTURES_H
#define TAREMA_PROTO_CAPTURES_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileutil.h"

/* The bytes of capture `name` (malloc'd, *len set), or NULL after printing why. */
static inline uint8_t *proto_capture_load(const char *name, size_t *len) {
    const char *root = getenv("REPO_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/proto/%s", root ? root : ".", name);
    tm_err err = {{0}, 0};
    char *d = tm_read_file(path, len, &err);
    if (!d)
        printf("    %s\n", err.msg);
    return (uint8_t *)d;
}

/* Capture `name` parsed as one JSON document (a new reference), or NULL after printing why. */
static inline json_t *proto_capture_json(const char *name) {
    size_t len;
    char *d = (char *)proto_capture_load(name, &len);
    json_error_t je;
    json_t *j = d ? json_loadb(d, len, 0, &je) : NULL;
    if (d && !j)
        printf("    %s: %s\n", name, je.text);
    free(d);
    return j;
}

/* Capture `name` read as one JSON object per line (a watch's JSON): a new array. */
static inline json_t *proto_capture_events(const char *name) {
    size_t len;
    char *d = (char *)proto_capture_load(name, &len);
    json_t *a = json_array();
    for (char *line = d ? strtok(d, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        json_t *e = json_loads(line, 0, NULL);
        if (e)
            json_array_append_new(a, e);
    }
    free(d);
    return a;
}

#endif
