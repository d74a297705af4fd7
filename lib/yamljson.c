/* yamljson.c: libyaml event stream -> jansson tree (see yamljson.h). A small recursive
 * descent over events whose depth is capped (TM_YAML_MAX_DEPTH), so hostile nesting ends in an
 * error instead of a stack overflow; anchors are kept in a JSON object name -> [value, nodes,
 * height] so an alias can be priced before it is copied. */
#include "yamljson.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "fileutil.h"

/* Alias budget, the rule of Go's gopkg.in/yaml.v3 (decode.go, allowedAliasRatio): once a stream
 * has more than YJ_ALIAS_MIN_NODES nodes and more than YJ_ALIAS_MIN_ALIASED of them came from
 * alias expansion, the aliased share may be at most 99 % up to 400,000 nodes, falling linearly
 * to 10 % at 4,000,000 and above. A legitimate file reuses a few anchors; a "billion laughs"
 * bomb is almost all expansion and fails within a few thousand nodes. The result is at most
 * about 100 times the nodes written, and for large inputs at most 1.1 times. */
#define YJ_ALIAS_MIN_NODES   1000
#define YJ_ALIAS_MIN_ALIASED 100
#define YJ_ALIAS_RATIO_LOW   400000.0
#define YJ_ALIAS_RATIO_HIGH  4000000.0

typedef struct {
    yaml_parser_t parser;
    const char *source;
    json_t *anchors; /* name -> [value, nodes, height] */
    tm_err *err;
    size_t nodes;   /* nodes produced so far in the stream, aliased copies included */
    size_t aliased; /* of which produced by alias expansion */
} yj_ctx;

static int yj_oom(yj_ctx *c, size_t line) {
    return tm_err_set(c->err, "%s:%zu: out of memory reading YAML", c->source, line);
}

static int yj_next(yj_ctx *c, yaml_event_t *ev) {
    if (!yaml_parser_parse(&c->parser, ev)) {
        return tm_err_set(c->err, "%s:%zu:%zu: YAML error: %s%s%s", c->source,
                          c->parser.problem_mark.line + 1, c->parser.problem_mark.column + 1,
                          c->parser.problem ? c->parser.problem : "malformed input",
                          c->parser.context ? " " : "", c->parser.context ? c->parser.context : "");
    }
    return 0;
}

/* s[0..len) is one or more characters of `set`. */
static int yj_all_of(const char *s, size_t len, const char *set) {
    return len > 0 && strspn(s, set) == len;
}

/* YAML 1.2 core schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int yj_is_float(const char *s) {
    const char *p = s + (*s == '-' || *s == '+');
    size_t ip = strspn(p, "0123456789");
    p += ip;
    size_t fp = 0;
    if (*p == '.') {
        p++;
        fp = strspn(p, "0123456789");
        p += fp;
    }
    if (ip == 0 && fp == 0)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        p += (*p == '-' || *p == '+');
        size_t ep = strspn(p, "0123456789");
        if (ep == 0)
            return 0;
        p += ep;
    }
    return *p == '\0';
}

/* YAML 1.2 core schema resolution for plain scalars. Integers outside int64 become reals;
 * .inf and .nan, which JSON cannot hold, stay strings. NULL only when out of memory. */
static json_t *yj_plain_scalar(const char *s, size_t len) {
    if (len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
        strcmp(s, "NULL") == 0)
        return json_null();
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
        return json_true();
    if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
        return json_false();
    char *end;
    errno = 0;
    if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o') &&
        yj_all_of(s + 2, len - 2, s[1] == 'x' ? "0123456789abcdefABCDEF" : "01234567")) {
        long long v = strtoll(s + 2, &end, s[1] == 'x' ? 16 : 8);
        if (*end == '\0' && errno == 0)
            return json_integer(v);
        return json_stringn(s, len);
    }
    const char *p = s + (s[0] == '-' || s[0] == '+');
    if (yj_all_of(p, len - (size_t)(p - s), "0123456789")) {
        long long v = strtoll(s, &end, 10);
        if (*end == '\0' && errno == 0)
            return json_integer(v);
    }
    if (yj_is_float(s)) {
        errno = 0;
        double d = strtod(s, &end);
        if (*end == '\0' && isfinite(d))
            return json_real(d);
    }
    return json_stringn(s, len);
}

static json_t *yj_node(yj_ctx *c, yaml_event_t *ev, int depth, int *height);

/* Records an anchor with what a copy of it costs: its node count (nodes produced since
 * `nodes_before`) and its height. */
static int yj_remember(yj_ctx *c, const yaml_char_t *anchor, json_t *v, size_t nodes_before,
                       int height, size_t line) {
    if (!anchor)
        return 0;
    json_t *entry = json_pack("[O,I,i]", v, (json_int_t)(c->nodes - nodes_before), height);
    if (!entry || json_object_set_new(c->anchors, (const char *)anchor, entry) < 0)
        return yj_oom(c, line);
    return 0;
}

/* Reads the items of a sequence (`is_map` 0) or the key/value pairs of a mapping up to the end
 * event. `depth` is the level of the collection itself (1 at the top). */
static json_t *yj_collection(yj_ctx *c, const yaml_event_t *start, int is_map, int depth,
                             int *height) {
    size_t line = start->start_mark.line + 1;
    if (depth > TM_YAML_MAX_DEPTH) {
        tm_err_set(c->err, "%s: YAML nesting deeper than %d levels at line %zu", c->source,
                   TM_YAML_MAX_DEPTH, line);
        return NULL;
    }
    const yaml_char_t *anchor =
        is_map ? start->data.mapping_start.anchor : start->data.sequence_start.anchor;
    size_t nodes_before = c->nodes++;
    json_t *coll = is_map ? json_object() : json_array();
    if (!coll) {
        yj_oom(c, line);
        return NULL;
    }
    *height = 1;
    for (;;) {
        yaml_event_t ev;
        if (yj_next(c, &ev) < 0)
            goto fail;
        if (ev.type == (is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT)) {
            yaml_event_delete(&ev);
            if (yj_remember(c, anchor, coll, nodes_before, *height, line) < 0)
                goto fail;
            return coll;
        }
        size_t item_line = ev.start_mark.line + 1;
        int h = 0;
        json_t *item = yj_node(c, &ev, depth + 1, &h);
        yaml_event_delete(&ev);
        if (!item)
            goto fail;
        if (h + 1 > *height)
            *height = h + 1;
        if (!is_map) {
            if (json_array_append_new(coll, item) < 0) {
                yj_oom(c, item_line);
                goto fail;
            }
            continue;
        }
        char numbuf[64];
        const char *k = NULL;
        json_t *key = item;
        if (json_is_string(key))
            k = json_string_value(key);
        else if (json_is_integer(key))
            snprintf(numbuf, sizeof numbuf, "%" JSON_INTEGER_FORMAT, json_integer_value(key)),
                k = numbuf;
        else if (json_is_boolean(key))
            k = json_is_true(key) ? "true" : "false";
        else if (json_is_null(key))
            k = "null";
        else if (json_is_real(key))
            snprintf(numbuf, sizeof numbuf, "%g", json_real_value(key)), k = numbuf;
        if (!k) {
            json_decref(key);
            tm_err_set(c->err, "%s:%zu: mapping keys must be scalars", c->source, item_line);
            goto fail;
        }
        if (yj_next(c, &ev) < 0) {
            json_decref(key);
            goto fail;
        }
        json_t *val = yj_node(c, &ev, depth + 1, &h);
        yaml_event_delete(&ev);
        if (!val) {
            json_decref(key);
            goto fail;
        }
        if (h + 1 > *height)
            *height = h + 1;
        int rc = json_object_set_new(coll, k, val);
        json_decref(key);
        if (rc < 0) {
            yj_oom(c, item_line);
            goto fail;
        }
    }
fail:
    json_decref(coll);
    return NULL;
}

/* The share of a stream's nodes that may come from alias expansion (see YJ_ALIAS_*). */
static double yj_allowed_alias_ratio(size_t nodes) {
    if (nodes <= YJ_ALIAS_RATIO_LOW)
        return 0.99;
    if (nodes >= YJ_ALIAS_RATIO_HIGH)
        return 0.10;
    return 0.99 -
           0.89 * ((double)nodes - YJ_ALIAS_RATIO_LOW) / (YJ_ALIAS_RATIO_HIGH - YJ_ALIAS_RATIO_LOW);
}

/* An alias: a copy of the anchored value, once the copy is known to keep the stream within the
 * nesting and alias limits. */
static json_t *yj_alias(yj_ctx *c, const yaml_event_t *ev, int depth, int *height) {
    const char *name = (const char *)ev->data.alias.anchor;
    size_t line = ev->start_mark.line + 1;
    json_t *entry = json_object_get(c->anchors, name);
    if (!entry) {
        tm_err_set(c->err, "%s:%zu: unknown alias *%s", c->source, line, name);
        return NULL;
    }
    size_t n = (size_t)json_integer_value(json_array_get(entry, 1));
    int h = (int)json_integer_value(json_array_get(entry, 2));
    if (depth + h - 1 > TM_YAML_MAX_DEPTH) {
        tm_err_set(c->err, "%s: YAML nesting deeper than %d levels at line %zu (alias *%s)",
                   c->source, TM_YAML_MAX_DEPTH, line, name);
        return NULL;
    }
    size_t nodes = c->nodes + n, aliased = c->aliased + n;
    if (aliased > YJ_ALIAS_MIN_ALIASED && nodes > YJ_ALIAS_MIN_NODES &&
        (double)aliased / (double)nodes > yj_allowed_alias_ratio(nodes)) {
        tm_err_set(c->err,
                   "%s:%zu: document contains excessive aliasing: alias *%s (%zu nodes) would "
                   "make %zu of %zu nodes copies, over the limit of %.0f %% (99 %% up to "
                   "400000 nodes, 10 %% from 4000000)",
                   c->source, line, name, n, aliased, nodes, 100.0 * yj_allowed_alias_ratio(nodes));
        return NULL;
    }
    json_t *v = json_deep_copy(json_array_get(entry, 0));
    if (!v) {
        yj_oom(c, line);
        return NULL;
    }
    c->nodes = nodes;
    c->aliased = aliased;
    *height = h;
    return v;
}

/* One node starting with event `ev` at nesting level `depth`; sets *height to the collection
 * levels it spans (0 for a scalar). NULL with c->err set on any failure. */
static json_t *yj_node(yj_ctx *c, yaml_event_t *ev, int depth, int *height) {
    *height = 0;
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        const char *s = (const char *)ev->data.scalar.value;
        size_t len = ev->data.scalar.length;
        size_t line = ev->start_mark.line + 1;
        size_t nodes_before = c->nodes++;
        json_t *v;
        if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag)
            v = yj_plain_scalar(s, len);
        else if (ev->data.scalar.tag &&
                 strcmp((const char *)ev->data.scalar.tag, "tag:yaml.org,2002:int") == 0)
            v = yj_plain_scalar(s, len);
        else
            v = json_stringn(s, len);
        if (!v) {
            yj_oom(c, line);
            return NULL;
        }
        if (yj_remember(c, ev->data.scalar.anchor, v, nodes_before, 0, line) < 0) {
            json_decref(v);
            return NULL;
        }
        return v;
    }
    case YAML_SEQUENCE_START_EVENT:
        return yj_collection(c, ev, 0, depth, height);
    case YAML_MAPPING_START_EVENT:
        return yj_collection(c, ev, 1, depth, height);
    case YAML_ALIAS_EVENT:
        return yj_alias(c, ev, depth, height);
    default:
        tm_err_set(c->err, "%s:%zu: unexpected YAML event", c->source, ev->start_mark.line + 1);
        return NULL;
    }
}

/* Parses documents until the stream ends; stops after the first when `all` is 0. */
static json_t *yj_parse(const char *text, size_t len, const char *source, int all, tm_err *err) {
    yj_ctx c = {.source = source ? source : "<yaml>", .anchors = json_object(), .err = err};
    json_t *docs = json_array();
    json_t *result = NULL;
    if (!yaml_parser_initialize(&c.parser)) {
        json_decref(docs);
        json_decref(c.anchors);
        tm_err_set(err, "%s: out of memory reading YAML", c.source);
        return NULL;
    }
    if (!docs || !c.anchors) {
        yj_oom(&c, 1);
        goto out;
    }
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
    for (;;) {
        yaml_event_t ev;
        if (yj_next(&c, &ev) < 0)
            goto out;
        yaml_event_type_t t = ev.type;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
        if (t != YAML_DOCUMENT_START_EVENT)
            continue;
        if (yj_next(&c, &ev) < 0)
            goto out;
        json_t *doc;
        int height = 0;
        if (ev.type == YAML_DOCUMENT_END_EVENT)
            doc = json_null();
        else
            doc = yj_node(&c, &ev, 1, &height);
        int was_end = ev.type == YAML_DOCUMENT_END_EVENT;
        yaml_event_delete(&ev);
        if (!doc)
            goto out;
        if (!was_end) {
            if (yj_next(&c, &ev) < 0) {
                json_decref(doc);
                goto out;
            }
            yaml_event_delete(&ev);
        }
        if (json_array_append_new(docs, doc) < 0) {
            yj_oom(&c, c.parser.mark.line + 1);
            goto out;
        }
        json_object_clear(c.anchors);
        if (!all)
            break;
    }
    if (all) {
        json_t *nonempty = json_array();
        if (!nonempty) {
            yj_oom(&c, c.parser.mark.line + 1);
            goto out;
        }
        size_t i;
        json_t *d;
        json_array_foreach(docs, i, d) if (!json_is_null(d)) json_array_append(nonempty, d);
        result = nonempty;
    } else {
        result = json_array_size(docs) ? json_incref(json_array_get(docs, 0)) : json_null();
    }
out:
    json_decref(docs);
    json_decref(c.anchors);
    yaml_parser_delete(&c.parser);
    return result;
}
json_t *tm_yaml_parse(const char *text, size_t len, const char *source_name, tm_err *err) {
    return yj_parse(text, len, source_name, 0, err);
}

json_t *tm_yaml_parse_all(const char *text, size_t len, const char *source_name, tm_err *err) {
    return yj_parse(text, len, source_name, 1, err);
}

static json_t *yj_load(const char *path, int all, tm_err *err) {
    size_t len;
    char *text = tm_read_file(path, &len, err);
    if (!text)
        return NULL;
    json_t *v = yj_parse(text, len, path, all, err);
    free(text);
    return v;
}

json_t *tm_yaml_load_file(const char *path, tm_err *err) {
    return yj_load(path, 0, err);
}

json_t *tm_yaml_load_file_all(const char *path, tm_err *err) {
    return yj_load(path, 1, err);
}
