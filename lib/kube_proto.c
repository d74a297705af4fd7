/* kube_proto.c: the "k8s\0" envelope, watch frames and object decoding of kube_proto.h. The
 * envelope and the WatchEvent are read by a small wire-format reader over the caller's bytes
 * (no copy of a list's raw payload, which is most of the response); the objects are unpacked
 * by protobuf-c. When protobuf-c refuses an object it says nothing about why, so the same
 * reader then walks the message against its descriptor to name the field and byte offset that
 * are wrong. */
#include "kube_proto.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const tm_kp_kind tm_kp_kind_pod = {"v1", "Pod", &k8s__io__api__core__v1__pod__descriptor};
const tm_kp_kind tm_kp_kind_pod_list = {"v1", "PodList",
                                        &k8s__io__api__core__v1__pod_list__descriptor};
const tm_kp_kind tm_kp_kind_node = {"v1", "Node", &k8s__io__api__core__v1__node__descriptor};
const tm_kp_kind tm_kp_kind_node_list = {"v1", "NodeList",
                                         &k8s__io__api__core__v1__node_list__descriptor};
const tm_kp_kind tm_kp_kind_status = {
    "v1", "Status", &k8s__io__apimachinery__pkg__apis__meta__v1__status__descriptor};
const tm_kp_kind tm_kp_kind_lease = {"coordination.k8s.io/v1", "Lease",
                                     &k8s__io__api__coordination__v1__lease__descriptor};
const tm_kp_kind tm_kp_kind_lease_list = {"coordination.k8s.io/v1", "LeaseList",
                                          &k8s__io__api__coordination__v1__lease_list__descriptor};

static const uint8_t MAGIC[4] = {'k', '8', 's', 0};
#define DEFAULT_MAX_FRAME ((size_t)64 << 20)
/* Nesting the diagnosis follows; the core/v1 schema is not recursive, so real objects stay far
 * below it, and protobuf-c's own recursion is bounded by the schema too. */
#define MAX_DEPTH 32

/* ---- wire-format reader ------------------------------------------------------------------ */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct rd {
    const uint8_t *base, *p, *end;
} rd;

typedef struct field {
    uint32_t num;
    int wt;
    uint64_t v;         /* WT_VARINT */
    const uint8_t *buf; /* WT_LEN */
    size_t len;
} field;

static size_t rd_off(const rd *r) {
    return (size_t)(r->p - r->base);
}

/* A varint of at most 10 bytes whose value fits 64 bits. */
static int rd_varint(rd *r, uint64_t *out, const char *what, tm_err *err) {
    uint64_t v = 0;
    size_t at = rd_off(r);
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return tm_err_set(err, "%s at byte %zu: truncated varint", what, at);
        uint8_t b = *r->p++;
        if (i == 9 && b > 1)
            return tm_err_set(err, "%s at byte %zu: varint overflows 64 bits", what, at);
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return tm_err_set(err, "%s at byte %zu: varint longer than 10 bytes", what, at);
}

/* The next field: 1 read, 0 at the end, -1 with err. */
static int rd_field(rd *r, field *f, const char *what, tm_err *err) {
    if (r->p == r->end)
        return 0;
    size_t at = rd_off(r);
    uint64_t key;
    if (rd_varint(r, &key, what, err) != 0)
        return -1;
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return tm_err_set(err, "%s at byte %zu: field number %llu is out of range", what, at,
                          (unsigned long long)(key >> 3));
    size_t left;
    switch (f->wt) {
    case WT_VARINT:
        return rd_varint(r, &f->v, what, err) == 0 ? 1 : -1;
    case WT_I64:
    case WT_I32: {
        size_t n = f->wt == WT_I64 ? 8 : 4;
        if ((size_t)(r->end - r->p) < n)
            return tm_err_set(err, "%s at byte %zu: field %u needs %zu bytes, %zu left", what, at,
                              f->num, n, (size_t)(r->end - r->p));
        r->p += n;
        return 1;
    }
    case WT_LEN:
        if (rd_varint(r, &f->v, what, err) != 0)
            return -1;
        left = (size_t)(r->end - r->p);
        if (f->v > left)
            return tm_err_set(
                err, "%s at byte %zu: field %u has length %llu but only %zu bytes are left", what,
                at, f->num, (unsigned long long)f->v, left);
        f->buf = r->p;
        f->len = (size_t)f->v;
        r->p += f->len;
        return 1;
    default:
        /* Groups (3, 4) are proto1 relics that Kubernetes never sends; 6 and 7 do not exist. */
        return tm_err_set(err, "%s at byte %zu: field %u has wire type %d, which is not used", what,
                          at, f->num, f->wt);
    }
}

/* Copies a length-delimited string into dst (NUL-terminated); too long or holding a NUL is an
 * error, as no apiVersion, kind or media type can be either. */
static int copy_str(char *dst, size_t cap, const field *f, const char *what, tm_err *err) {
    if (f->wt != WT_LEN)
        return tm_err_set(err, "%s: wire type %d where a string belongs", what, f->wt);
    if (f->len >= cap)
        return tm_err_set(err, "%s: %zu bytes, longer than the %zu accepted", what, f->len,
                          cap - 1);
    if (memchr(f->buf, 0, f->len))
        return tm_err_set(err, "%s: holds a NUL byte", what);
    memcpy(dst, f->buf, f->len);
    dst[f->len] = 0;
    return 0;
}

/* ---- diagnosis of a message protobuf-c refused ------------------------------------------- */

/* Walks buf as a message of desc and names the first structural fault it finds: a bad key or
 * length, a wire type that does not match the field's type. 0 when it finds none. */
static int diagnose(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
                    char *path, size_t pathcap, int depth, tm_err *err) {
    if (depth > MAX_DEPTH)
        return tm_err_set(err, "%s: nested deeper than %d messages", path, MAX_DEPTH);
    rd r = {buf, buf, buf + len};
    field f;
    int rc;
    while ((rc = rd_field(&r, &f, path, err)) > 0) {
        const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(desc, f.num);
        if (!fd)
            continue; /* unknown field: kept aside, not a fault */
        int want;
        switch (fd->type) {
        case PROTOBUF_C_TYPE_STRING:
        case PROTOBUF_C_TYPE_BYTES:
        case PROTOBUF_C_TYPE_MESSAGE:
            want = WT_LEN;
            break;
        case PROTOBUF_C_TYPE_FIXED64:
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_DOUBLE:
            want = WT_I64;
            break;
        case PROTOBUF_C_TYPE_FIXED32:
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_FLOAT:
            want = WT_I32;
            break;
        default:
            want = WT_VARINT;
        }
        /* Packed repeated scalars come length-delimited. */
        if (f.wt != want && !(f.wt == WT_LEN && fd->label == PROTOBUF_C_LABEL_REPEATED))
            return tm_err_set(err, "%s.%s: wire type %d where type %d belongs", path, fd->name,
                              f.wt, want);
        if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
            size_t used = strlen(path);
            snprintf(path + used, pathcap - used, ".%s", fd->name);
            if (diagnose(fd->descriptor, f.buf, f.len, path, pathcap, depth + 1, err) != 0)
                return -1;
            path[used] = 0;
        }
    }
    return rc < 0 ? -1 : 0;
}

static ProtobufCMessage *unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *buf,
                                size_t len, const char *kind, tm_err *err) {
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, len, buf);
    if (m)
        return m;
    char path[512];
    snprintf(path, sizeof path, "%s", kind);
    if (diagnose(desc, buf, len, path, sizeof path, 0, err) != 0)
        return NULL;
    /* The walk found no fault: what protobuf-c refused is a value (a bad enum, a string it
     * would not take) or memory. */
    tm_err_set(err, "%s: protobuf-c could not unpack the %zu-byte message", kind, len);
    return NULL;
}

/* ---- envelope ---------------------------------------------------------------------------- */

int tm_kp_is_protobuf(const void *buf, size_t len) {
    return buf && len >= sizeof MAGIC && memcmp(buf, MAGIC, sizeof MAGIC) == 0;
}

static int parse_type_meta(const field *tm, tm_kp_envelope *env, tm_err *err) {
    if (tm->wt != WT_LEN)
        return tm_err_set(err, "protobuf envelope: typeMeta has wire type %d", tm->wt);
    rd r = {tm->buf, tm->buf, tm->buf + tm->len};
    field f;
    int rc;
    while ((rc = rd_field(&r, &f, "protobuf envelope typeMeta", err)) > 0) {
        if (f.num == 1 &&
            copy_str(env->api_version, sizeof env->api_version, &f, "envelope apiVersion", err))
            return -1;
        if (f.num == 2 && copy_str(env->kind, sizeof env->kind, &f, "envelope kind", err))
            return -1;
    }
    return rc;
}

int tm_kp_envelope_parse(const void *buf, size_t len, tm_kp_envelope *env, tm_err *err) {
    memset(env, 0, sizeof *env);
    if (!tm_kp_is_protobuf(buf, len))
        return tm_err_set(
            err, "protobuf envelope: the %zu-byte body does not start with \"k8s\\0\"", len);
    const uint8_t *b = (const uint8_t *)buf + sizeof MAGIC;
    rd r = {b, b, b + len - sizeof MAGIC};
    field f;
    int rc, have_raw = 0;
    while ((rc = rd_field(&r, &f, "protobuf envelope", err)) > 0) {
        switch (f.num) {
        case 1:
            if (parse_type_meta(&f, env, err) != 0)
                return -1;
            break;
        case 2:
            if (f.wt != WT_LEN)
                return tm_err_set(err, "protobuf envelope: raw has wire type %d", f.wt);
            env->raw = f.buf;
            env->raw_len = f.len;
            have_raw = 1;
            break;
        case 3:
            if (copy_str(env->content_encoding, sizeof env->content_encoding, &f,
                         "envelope contentEncoding", err))
                return -1;
            break;
        case 4:
            if (copy_str(env->content_type, sizeof env->content_type, &f, "envelope contentType",
                         err))
                return -1;
            break;
        default:
            break; /* a newer server's field */
        }
    }
    if (rc < 0)
        return -1;
    if (!env->kind[0])
        return tm_err_set(err, "protobuf envelope: no kind");
    /* The server always writes raw (empty or not). Without it, a body cut right after typeMeta
     * would decode as an empty list: no pods rather than an error. */
    if (!have_raw)
        return tm_err_set(err, "protobuf envelope: the %s has no raw bytes (truncated?)",
                          env->kind);
    return 0;
}

static int is_protobuf_type(const char *ct) {
    /* "" means the raw bytes are in the envelope's own encoding. Parameters may follow. */
    size_t n = strlen(TM_KP_MEDIA_TYPE);
    return !ct[0] || (strncmp(ct, TM_KP_MEDIA_TYPE, n) == 0 && (ct[n] == 0 || ct[n] == ';'));
}

/* The raw of an envelope of kind want, unpacked; what names the context in errors. */
static ProtobufCMessage *decode_env(const tm_kp_envelope *env, const tm_kp_kind *want,
                                    const char *what, tm_err *err) {
    if (strcmp(env->kind, want->kind) != 0 || strcmp(env->api_version, want->api_version) != 0) {
        tm_err_set(err, "%s: a %s %s where a %s %s was expected", what,
                   env->api_version[0] ? env->api_version : "(no apiVersion)", env->kind,
                   want->api_version, want->kind);
        return NULL;
    }
    if (env->content_encoding[0]) {
        tm_err_set(err, "%s: contentEncoding \"%s\" is not supported", what, env->content_encoding);
        return NULL;
    }
    if (!is_protobuf_type(env->content_type)) {
        tm_err_set(err, "%s: the %s is encoded as \"%s\", not protobuf", what, want->kind,
                   env->content_type);
        return NULL;
    }
    ProtobufCMessage *m = unpack(want->desc, env->raw, env->raw_len, want->kind, err);
    if (!m)
        tm_err_wrap(err, "%s", what);
    return m;
}

ProtobufCMessage *tm_kp_decode(const void *buf, size_t len, const tm_kp_kind *want, tm_err *err) {
    tm_kp_envelope env;
    if (tm_kp_envelope_parse(buf, len, &env, err) != 0)
        return NULL;
    return decode_env(&env, want, "protobuf body", err);
}

K8s__Io__Api__Core__V1__PodList *tm_kp_pod_list(const void *buf, size_t len, tm_err *err) {
    return (K8s__Io__Api__Core__V1__PodList *)tm_kp_decode(buf, len, &tm_kp_kind_pod_list, err);
}

K8s__Io__Api__Core__V1__NodeList *tm_kp_node_list(const void *buf, size_t len, tm_err *err) {
    return (K8s__Io__Api__Core__V1__NodeList *)tm_kp_decode(buf, len, &tm_kp_kind_node_list, err);
}

void tm_kp_free(void *msg) {
    if (msg)
        protobuf_c_message_free_unpacked(msg, NULL);
}

/* The message held by obj's singular field `name` when that field is of type desc, else NULL. */
static const void *message_field(const ProtobufCMessage *obj, const char *name,
                                 const ProtobufCMessageDescriptor *desc) {
    if (!obj)
        return NULL;
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field_by_name(obj->descriptor, name);
    if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE || fd->label == PROTOBUF_C_LABEL_REPEATED ||
        fd->descriptor != desc)
        return NULL;
    const void *m;
    memcpy(&m, (const char *)obj + fd->offset, sizeof m);
    return m;
}

const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta *
tm_kp_meta(const ProtobufCMessage *obj) {
    return message_field(obj, "metadata",
                         &k8s__io__apimachinery__pkg__apis__meta__v1__object_meta__descriptor);
}

const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ListMeta *
tm_kp_list_meta(const ProtobufCMessage *list) {
    return message_field(list, "metadata",
                         &k8s__io__apimachinery__pkg__apis__meta__v1__list_meta__descriptor);
}

size_t tm_kp_list_items(const ProtobufCMessage *list, ProtobufCMessage *const **items) {
    *items = NULL;
    if (!list)
        return 0;
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field_by_name(list->descriptor, "items");
    if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE || fd->label != PROTOBUF_C_LABEL_REPEATED)
        return 0;
    size_t n;
    memcpy(&n, (const char *)list + fd->quantifier_offset, sizeof n);
    memcpy(items, (const char *)list + fd->offset, sizeof *items);
    return *items ? n : 0;
}

/* The collections served in protobuf by the informers: core/v1 pods and nodes, the bulk of
 * what a scheduler lists and watches. Everything else stays JSON (CRDs have no protobuf). */
int tm_kp_kinds_for_path(const char *path, const tm_kp_kind **item, const tm_kp_kind **list) {
    static const struct {
        const char *resource;
        bool namespaced;
        const tm_kp_kind *item, *list;
    } known[] = {
        {"pods", true, &tm_kp_kind_pod, &tm_kp_kind_pod_list},
        {"nodes", false, &tm_kp_kind_node, &tm_kp_kind_node_list},
    };
    static const char core[] = "/api/v1/", nsp[] = "namespaces/";
    if (!path || strncmp(path, core, sizeof core - 1) != 0)
        return -1;
    const char *rest = path + sizeof core - 1;
    bool in_ns = strncmp(rest, nsp, sizeof nsp - 1) == 0;
    if (in_ns) {
        const char *slash = strchr(rest + sizeof nsp - 1, '/');
        if (!slash || slash == rest + sizeof nsp - 1)
            return -1;
        rest = slash + 1;
    }
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(rest, known[i].resource) == 0 && (!in_ns || known[i].namespaced)) {
            *item = known[i].item;
            *list = known[i].list;
            return 0;
        }
    return -1;
}

size_t tm_kp_unknown_fields(const ProtobufCMessage *msg) {
    if (!msg)
        return 0;
    size_t n = msg->n_unknown_fields;
    const ProtobufCMessageDescriptor *d = msg->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *at = (const char *)msg + fd->offset;
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t count;
            ProtobufCMessage **items;
            memcpy(&count, (const char *)msg + fd->quantifier_offset, sizeof count);
            memcpy(&items, at, sizeof items);
            for (size_t k = 0; k < count; k++)
                n += tm_kp_unknown_fields(items[k]);
        } else {
            ProtobufCMessage *sub;
            memcpy(&sub, at, sizeof sub);
            n += tm_kp_unknown_fields(sub);
        }
    }
    return n;
}

/* ---- watch stream ------------------------------------------------------------------------ */

struct tm_kpwatch {
    const tm_kp_kind *item;
    size_t max_frame;
    uint8_t *buf;
    size_t start, len, cap; /* buffered bytes are buf[start .. start+len) */
    char broken[TM_ERR_MAX];
    unsigned long frames; /* frames decoded, for error messages */
};

tm_kpwatch *tm_kpwatch_new(const tm_kp_kind *item, size_t max_frame) {
    tm_kpwatch *ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->item = item;
    ws->max_frame = max_frame ? max_frame : DEFAULT_MAX_FRAME;
    return ws;
}

void tm_kpwatch_free(tm_kpwatch *ws) {
    if (!ws)
        return;
    free(ws->buf);
    free(ws);
}

size_t tm_kpwatch_pending(const tm_kpwatch *ws) {
    return ws->len;
}

int tm_kpwatch_feed(tm_kpwatch *ws, const void *data, size_t len, tm_err *err) {
    if (ws->broken[0])
        return tm_err_set(err, "%s", ws->broken);
    if (len == 0)
        return 0;
    if (ws->start > 0 && ws->start + ws->len + len > ws->cap) {
        memmove(ws->buf, ws->buf + ws->start, ws->len);
        ws->start = 0;
    }
    if (ws->len + len > ws->cap) {
        /* No limit here: tm_kpwatch_next refuses a frame header over max_frame as soon as its
         * 4 bytes are in, so a caller that drains after each feed never buffers more than one
         * frame plus one read. */
        if (len > ((size_t)1 << 40) - ws->len)
            return tm_err_set(err, "protobuf watch: %zu bytes buffered is beyond reason", ws->len);
        size_t cap = ws->cap ? ws->cap : 4096;
        while (cap < ws->len + len)
            cap *= 2;
        uint8_t *nb = realloc(ws->buf, cap);
        if (!nb)
            return tm_err_set(err, "protobuf watch: out of memory buffering %zu bytes", cap);
        ws->buf = nb;
        ws->cap = cap;
    }
    memcpy(ws->buf + ws->start + ws->len, data, len);
    ws->len += len;
    return 0;
}

static int ws_type(const field *f, tm_ws_type *t) {
    static const struct {
        const char *name;
        tm_ws_type type;
    } names[] = {{"ADDED", TM_WS_ADDED},
                 {"MODIFIED", TM_WS_MODIFIED},
                 {"DELETED", TM_WS_DELETED},
                 {"BOOKMARK", TM_WS_BOOKMARK},
                 {"ERROR", TM_WS_ERROR}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == f->len && memcmp(names[i].name, f->buf, f->len) == 0) {
            *t = names[i].type;
            return 0;
        }
    return -1;
}

/* One WatchEvent message (a frame's payload) into *ev. */
static int decode_event(tm_kpwatch *ws, const uint8_t *buf, size_t len, tm_kp_event *ev,
                        tm_err *err) {
    char what[64];
    snprintf(what, sizeof what, "protobuf watch frame %lu", ws->frames);
    rd r = {buf, buf, buf + len};
    field f, type = {0}, obj = {0};
    int rc, have_type = 0, have_obj = 0;
    while ((rc = rd_field(&r, &f, what, err)) > 0) {
        if (f.num == 1 && f.wt == WT_LEN) {
            type = f;
            have_type = 1;
        } else if (f.num == 2 && f.wt == WT_LEN) {
            obj = f;
            have_obj = 1;
        } else if (f.num == 1 || f.num == 2) {
            return tm_err_set(err, "%s: field %u has wire type %d", what, f.num, f.wt);
        }
    }
    if (rc < 0)
        return -1;
    if (!have_type)
        return tm_err_set(err, "%s: the event has no type", what);
    if (ws_type(&type, &ev->type) != 0) {
        char t[32];
        size_t n = type.len < sizeof t - 1 ? type.len : sizeof t - 1;
        memcpy(t, type.buf, n);
        t[n] = 0;
        for (size_t i = 0; i < n; i++)
            if (t[i] < 0x20 || t[i] > 0x7e)
                t[i] = '?';
        return tm_err_set(err, "%s: unknown event type \"%s%s\"", what, t,
                          type.len > n ? "..." : "");
    }
    if (!have_obj)
        return tm_err_set(err, "%s: %s event without an object", what, tm_ws_type_name(ev->type));
    /* RawExtension {1: raw}: the enveloped object. */
    rd ro = {obj.buf, obj.buf, obj.buf + obj.len};
    field raw = {0};
    int have_raw = 0;
    while ((rc = rd_field(&ro, &f, what, err)) > 0)
        if (f.num == 1 && f.wt == WT_LEN) {
            raw = f;
            have_raw = 1;
        }
    if (rc < 0)
        return -1;
    if (!have_raw)
        return tm_err_set(err, "%s: %s event whose object has no raw bytes", what,
                          tm_ws_type_name(ev->type));
    tm_kp_envelope env;
    if (tm_kp_envelope_parse(raw.buf, raw.len, &env, err) != 0)
        return tm_err_wrap(err, "%s", what);
    snprintf(what + strlen(what), sizeof what - strlen(what), " (%s)", tm_ws_type_name(ev->type));
    ev->object =
        decode_env(&env, ev->type == TM_WS_ERROR ? &tm_kp_kind_status : ws->item, what, err);
    if (!ev->object)
        return -1;
    if (ev->type == TM_WS_ERROR) {
        const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Status *st =
            (const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Status *)ev->object;
        ev->code = st->has_code ? st->code : 0;
    }
    return 0;
}

int tm_kpwatch_next(tm_kpwatch *ws, tm_kp_event *ev, tm_err *err) {
    memset(ev, 0, sizeof *ev);
    if (ws->broken[0])
        return tm_err_set(err, "%s", ws->broken);
    if (ws->len < 4)
        return 0;
    const uint8_t *h = ws->buf + ws->start;
    uint32_t n = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    if (n > ws->max_frame) {
        snprintf(ws->broken, sizeof ws->broken,
                 "protobuf watch frame %lu: length %u is over the %zu-byte limit (a corrupt "
                 "stream; re-watch)",
                 ws->frames, n, ws->max_frame);
        return tm_err_set(err, "%s", ws->broken);
    }
    if (ws->len - 4 < n)
        return 0;
    int rc = decode_event(ws, h + 4, n, ev, err);
    ws->frames++;
    ws->start += 4 + (size_t)n;
    ws->len -= 4 + (size_t)n;
    if (ws->len == 0)
        ws->start = 0;
    if (rc != 0) {
        tm_kp_free(ev->object);
        memset(ev, 0, sizeof *ev);
        return -1;
    }
    return 1;
}
