/* yamljson.c: libyaml event stream -> jansson tree (see yamljson.h). A small recursive
 * descent over events; anchors are kept in a JSON object name -> value. */
#include "yamljson.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "fileutil.h"

typedef struct {
    yaml_parser_t parser;
    const char *source;
    json_t *anchors;
    tm_err *err;
} yj_ctx;

static int yj_next(yj_ctx *c, yaml_event_t *ev) {
    if (!yaml_parser_parse(&c->parser, ev)) {
        return tm_err_set(c->err, "%s:%zu:%zu: YAML error: %s%s%s", c->source,
                          c->parser.problem_mark.line + 1, c->parser.problem_mark.column + 1,
                          c->parser.problem ? c->parser.problem : "malformed input",
                          c->parser.context ? " " : "", c->parser.context ? c->parser.context : "");
    }
    return 0;
}

/* YAML 1.2 core schema resolution for plain scalars. */
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
    if (strncmp(s, "0x", 2) == 0 || strncmp(s, "0o", 2) == 0) {
        long long v = strtoll(s + 2, &end, s[1] == 'x' ? 16 : 8);
        if (*end == '\0' && errno == 0 && end != s + 2)
            return json_integer(v);
    }
    const char *p = s + (s[0] == '-' || s[0] == '+');
    if (*p >= '0' && *p <= '9') {
        long long v = strtoll(s, &end, 10);
        if (*end == '\0' && errno == 0)
            return json_integer(v);
        errno = 0;
        double d = strtod(s, &end);
        if (*end == '\0' && errno == 0 && isfinite(d))
            return json_real(d);
    } else if (*p == '.' && p[1] >= '0' && p[1] <= '9') {
        double d = strtod(s, &end);
        if (*end == '\0')
            return json_real(d);
    }
    return json_stringn(s, len);
}

static json_t *yj_node(yj_ctx *c, yaml_event_t *ev);

static void yj_remember(yj_ctx *c, const yaml_char_t *anchor, json_t *v) {
    if (anchor && v)
        json_object_set(c->anchors, (const char *)anchor, v);
}

static json_t *yj_sequence(yj_ctx *c, const yaml_char_t *anchor) {
    json_t *arr = json_array();
    for (;;) {
        yaml_event_t ev;
        if (yj_next(c, &ev) < 0)
            goto fail;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            yj_remember(c, anchor, arr);
            return arr;
        }
        json_t *item = yj_node(c, &ev);
        yaml_event_delete(&ev);
        if (!item)
            goto fail;
        json_array_append_new(arr, item);
    }
fail:
    json_decref(arr);
    return NULL;
}

static json_t *yj_mapping(yj_ctx *c, const yaml_char_t *anchor) {
    json_t *obj = json_object();
    for (;;) {
        yaml_event_t ev;
        if (yj_next(c, &ev) < 0)
            goto fail;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            yj_remember(c, anchor, obj);
            return obj;
        }
        size_t line = ev.start_mark.line + 1;
        json_t *key = yj_node(c, &ev);
        yaml_event_delete(&ev);
        if (!key)
            goto fail;
        char numbuf[64];
        const char *k = NULL;
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
            tm_err_set(c->err, "%s:%zu: mapping keys must be scalars", c->source, line);
            goto fail;
        }
        if (yj_next(c, &ev) < 0) {
            json_decref(key);
            goto fail;
        }
        json_t *val = yj_node(c, &ev);
        yaml_event_delete(&ev);
        if (!val) {
            json_decref(key);
            goto fail;
        }
        json_object_set_new(obj, k, val);
        json_decref(key);
    }
fail:
    json_decref(obj);
    return NULL;
}

static json_t *yj_node(yj_ctx *c, yaml_event_t *ev) {
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        const char *s = (const char *)ev->data.scalar.value;
        size_t len = ev->data.scalar.length;
        json_t *v;
        if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag)
            v = yj_plain_scalar(s, len);
        else if (ev->data.scalar.tag &&
                 strcmp((const char *)ev->data.scalar.tag, "tag:yaml.org,2002:int") == 0)
            v = yj_plain_scalar(s, len);
        else
            v = json_stringn(s, len);
        yj_remember(c, ev->data.scalar.anchor, v);
        return v;
    }
    case YAML_SEQUENCE_START_EVENT:
        return yj_sequence(c, ev->data.sequence_start.anchor);
    case YAML_MAPPING_START_EVENT:
        return yj_mapping(c, ev->data.mapping_start.anchor);
    case YAML_ALIAS_EVENT: {
        json_t *v = json_object_get(c->anchors, (const char *)ev->data.alias.anchor);
        if (!v) {
            tm_err_set(c->err, "%s:%zu: unknown alias *%s", c->source, ev->start_mark.line + 1,
                       (const char *)ev->data.alias.anchor);
            return NULL;
        }
        return json_deep_copy(v);
    }
    default:
        tm_err_set(c->err, "%s:%zu: unexpected YAML event", c->source, ev->start_mark.line + 1);
        return NULL;
    }
}

/* Parses documents until the stream ends; stops after the first when `all` is 0. */
static json_t *yj_parse(const char *text, size_t len, const char *source, int all, tm_err *err) {
    yj_ctx c = {.source = source ? source : "<yaml>", .anchors = json_object(), .err = err};
    yaml_parser_initialize(&c.parser);
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
    json_t *docs = json_array();
    json_t *result = NULL;
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
        if (ev.type == YAML_DOCUMENT_END_EVENT)
            doc = json_null();
        else
            doc = yj_node(&c, &ev);
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
        json_array_append_new(docs, doc);
        json_object_clear(c.anchors);
        if (!all)
            break;
    }
    if (all) {
        json_t *nonempty = json_array();
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
