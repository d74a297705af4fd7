/* kube_proto_json.c: tm_kp_to_json (kube_proto_json.h). One walk over protobuf-c's descriptors
 * writes a message's fields as JSON keys; the types whose JSON the API server writes by a
 * MarshalJSON of their own are recognised by their descriptor (a pointer comparison with the
 * generated *__descriptor globals, no lookup by name per field) and written as that method does.
 *
 * Field names: go-to-protobuf names each protobuf field after the field's JSON name, so the
 * descriptor's name is the JSON key (checked against the Go struct tags of k8s.io/api and
 * k8s.io/apimachinery v0.35.4 and again at v0.37.2: no other name differs). The exception is the
 * embedded Go structs marked json:",inline": protobuf nests them under a field of their own
 * (Volume.volumeSource, ConfigMapKeySelector.localObjectReference, Probe.handler, ...), JSON
 * writes their fields into the parent. INLINE below lists them.
 *
 * The path of the field being converted is kept as a stack of pointers (field names, indexes,
 * map keys) and only formatted into text when an error is reported. */
#include "kube_proto_json.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/k8s_intstr.pb-c.h"
#include "proto/k8s_resource.pb-c.h"
#include "proto/k8s_runtime.pb-c.h"

typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time Time;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__MicroTime MicroTime;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Duration Duration;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__FieldsV1 FieldsV1;
typedef K8s__Io__Apimachinery__Pkg__Runtime__RawExtension RawExtension;
typedef K8s__Io__Apimachinery__Pkg__Api__Resource__Quantity Quantity;
typedef K8s__Io__Apimachinery__Pkg__Api__Resource__QuantityValue QuantityValue;
typedef K8s__Io__Apimachinery__Pkg__Util__Intstr__IntOrString IntOrString;

/* The generated schema is not recursive; this only bounds a descriptor set that would be. */
#define MAX_DEPTH 64

/* Seconds of Go's zero time.Time (0001-01-01T00:00:00Z), which MarshalJSON writes as null. */
#define GO_ZERO_TIME (-62135596800LL)

/* ---- the fields whose JSON differs from their protobuf (resolved once) ------------------- */

/* Embedded Go structs (json:",inline"): parent message, protobuf field name. From the
 * json:",inline" tags (json:"" from v0.37) carrying a protobuf tag in k8s.io/api v0.35.4 and
 * v0.37.2 core/v1/types.go: the same eleven.
 * (runtime.Unknown's typeMeta is inline too, but Unknown is never sent as JSON.) */
static const struct {
    const ProtobufCMessageDescriptor *parent;
    const char *field;
} INLINE[] = {
    {&k8s__io__api__core__v1__volume__descriptor, "volumeSource"},
    {&k8s__io__api__core__v1__persistent_volume_spec__descriptor, "persistentVolumeSource"},
    {&k8s__io__api__core__v1__secret_projection__descriptor, "localObjectReference"},
    {&k8s__io__api__core__v1__config_map_volume_source__descriptor, "localObjectReference"},
    {&k8s__io__api__core__v1__config_map_projection__descriptor, "localObjectReference"},
    {&k8s__io__api__core__v1__config_map_key_selector__descriptor, "localObjectReference"},
    {&k8s__io__api__core__v1__secret_key_selector__descriptor, "localObjectReference"},
    {&k8s__io__api__core__v1__config_map_env_source__descriptor, "localObjectReference"},
    {&k8s__io__api__core__v1__secret_env_source__descriptor, "localObjectReference"},
    {&k8s__io__api__core__v1__probe__descriptor, "handler"},
    {&k8s__io__api__core__v1__ephemeral_container__descriptor, "ephemeralContainerCommon"},
};
#define N_INLINE (sizeof INLINE / sizeof INLINE[0])

static const ProtobufCFieldDescriptor *inline_fd[N_INLINE];
static const ProtobufCFieldDescriptor *managed_fields_fd;
static pthread_once_t fields_once = PTHREAD_ONCE_INIT;

static void resolve_fields(void) {
    for (size_t i = 0; i < N_INLINE; i++)
        inline_fd[i] =
            protobuf_c_message_descriptor_get_field_by_name(INLINE[i].parent, INLINE[i].field);
    managed_fields_fd = protobuf_c_message_descriptor_get_field_by_name(
        &k8s__io__apimachinery__pkg__apis__meta__v1__object_meta__descriptor, "managedFields");
}

static int is_inline(const ProtobufCFieldDescriptor *fd) {
    for (size_t i = 0; i < N_INLINE; i++)
        if (inline_fd[i] == fd)
            return 1;
    return 0;
}

/* Messages with a JSON form of their own. */
typedef enum {
    SP_NONE,
    SP_QUANTITY,
    SP_TIME,
    SP_MICROTIME,
    SP_DURATION,
    SP_INTORSTRING,
    SP_FIELDSV1,
    SP_RAWEXT,
} special;

static special special_of(const ProtobufCMessageDescriptor *d) {
    if (d == &k8s__io__apimachinery__pkg__api__resource__quantity__descriptor ||
        d == &k8s__io__apimachinery__pkg__api__resource__quantity_value__descriptor)
        return SP_QUANTITY;
    if (d == &k8s__io__apimachinery__pkg__apis__meta__v1__time__descriptor)
        return SP_TIME;
    if (d == &k8s__io__apimachinery__pkg__apis__meta__v1__fields_v1__descriptor)
        return SP_FIELDSV1;
    if (d == &k8s__io__apimachinery__pkg__util__intstr__int_or_string__descriptor)
        return SP_INTORSTRING;
    if (d == &k8s__io__apimachinery__pkg__apis__meta__v1__micro_time__descriptor)
        return SP_MICROTIME;
    if (d == &k8s__io__apimachinery__pkg__apis__meta__v1__duration__descriptor)
        return SP_DURATION;
    if (d == &k8s__io__apimachinery__pkg__runtime__raw_extension__descriptor)
        return SP_RAWEXT;
    return SP_NONE;
}

/* A generated map entry (map<k, v> becomes repeated XxxEntry {1: key, 2: value}). */
static int is_map_entry(const ProtobufCMessageDescriptor *d) {
    size_t n = d->short_name ? strlen(d->short_name) : 0;
    return d->n_fields == 2 && n > 5 && strcmp(d->short_name + n - 5, "Entry") == 0 &&
           d->fields[0].id == 1 && d->fields[1].id == 2 && strcmp(d->fields[0].name, "key") == 0 &&
           strcmp(d->fields[1].name, "value") == 0 &&
           d->fields[0].label != PROTOBUF_C_LABEL_REPEATED &&
           d->fields[1].label != PROTOBUF_C_LABEL_REPEATED;
}

/* ---- the walk's state and its errors ----------------------------------------------------- */

typedef struct frame {
    const char *name; /* the field */
    long index;       /* its element, or -1 */
    const char *key;  /* or its map key, or NULL */
    int inline_;      /* an inlined field: not part of the JSON path */
} frame;

typedef struct conv {
    unsigned flags;
    tm_err *err;
    int depth;
    frame path[MAX_DEPTH + 1];
} conv;

/* Sets err to "<path>: <what>" and returns NULL. */
__attribute__((format(printf, 2, 3))) static json_t *fail(conv *c, const char *fmt, ...) {
    if (!c->err)
        return NULL;
    char p[512];
    size_t n = 0;
    p[0] = 0;
    for (int i = 0; i < c->depth && n < sizeof p; i++) {
        const frame *f = &c->path[i];
        if (f->inline_)
            continue;
        int w = snprintf(p + n, sizeof p - n, "%s%s", n ? "." : "", f->name);
        if (w > 0)
            n += (size_t)w;
        if (n < sizeof p && f->index >= 0)
            w = snprintf(p + n, sizeof p - n, "[%ld]", f->index);
        else if (n < sizeof p && f->key)
            w = snprintf(p + n, sizeof p - n, "[\"%s\"]", f->key);
        else
            w = 0;
        if (w > 0)
            n += (size_t)w;
    }
    if (n >= sizeof p)
        n = sizeof p - 1;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tm_err_set(c->err, "%s%s%s", p, n ? ": " : "", what);
    return NULL;
}

static json_t *oom(conv *c) {
    return fail(c, "out of memory");
}

/* ---- scalars ----------------------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0 when it is not one
 * (overlong forms, surrogates and values past U+10FFFF are not). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned min, cp;
    if ((c & 0xe0) == 0xc0)
        len = 2, min = 0x80, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0)
        len = 3, min = 0x800, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0)
        len = 4, min = 0x10000, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static int utf8_valid(const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

/* A JSON string of s (len bytes). Bytes that are not UTF-8 become U+FFFD, as Go's
 * encoding/json writes them (protobuf-c does not check proto2 strings). */
static json_t *str_json(const char *s, size_t len) {
    json_t *j = json_stringn(s, len);
    if (j)
        return j;
    char *buf = malloc(len * 3 + 1);
    if (!buf)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq((const unsigned char *)s + i, len - i);
        if (k) {
            memcpy(buf + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(buf + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    j = json_stringn_nocheck(buf, o);
    free(buf);
    return j;
}

static json_t *base64_json(const uint8_t *d, size_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t out = (n + 2) / 3 * 4;
    char *b = malloc(out + 1);
    if (!b)
        return NULL;
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        b[o++] = A[v >> 18];
        b[o++] = A[v >> 12 & 63];
        b[o++] = A[v >> 6 & 63];
        b[o++] = A[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0);
        b[o++] = A[v >> 18];
        b[o++] = A[v >> 12 & 63];
        b[o++] = i + 1 < n ? A[v >> 6 & 63] : '=';
        b[o++] = '=';
    }
    json_t *j = json_stringn_nocheck(b, o);
    free(b);
    return j;
}

static json_t *u64_json(uint64_t v) {
    /* jansson's integers are signed 64-bit; larger ones (no Kubernetes field) as a double. */
    return v <= (uint64_t)INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

/* The JSON of the scalar at p (a field's member or an array element) of type t; *zero is set
 * when it is the zero value ("", 0, false, empty bytes), which a singular field leaves out. */
static json_t *scalar_json(conv *c, ProtobufCType t, const void *p, int *zero) {
    *zero = 0;
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        *zero = v == 0;
        return json_integer(v);
    }
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        *zero = v == 0;
        return json_integer(v);
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        *zero = v == 0;
        return json_integer((json_int_t)v);
    }
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        *zero = v == 0;
        return u64_json(v);
    }
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: {
        double v;
        if (t == PROTOBUF_C_TYPE_FLOAT) {
            float f;
            memcpy(&f, p, sizeof f);
            v = f;
        } else {
            memcpy(&v, p, sizeof v);
        }
        *zero = v == 0;
        json_t *j = json_real(v);
        if (!j && v != v)
            return fail(c, "NaN has no JSON form");
        if (!j && (v > 1 || v < -1))
            return fail(c, "an infinite number has no JSON form");
        return j ? j : oom(c);
    }
    case PROTOBUF_C_TYPE_BOOL: {
        protobuf_c_boolean v;
        memcpy(&v, p, sizeof v);
        *zero = !v;
        return json_boolean(v);
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s;
        memcpy(&s, p, sizeof s);
        *zero = !s || !*s;
        json_t *j = str_json(s ? s : "", s ? strlen(s) : 0);
        return j ? j : oom(c);
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData b;
        memcpy(&b, p, sizeof b);
        *zero = b.len == 0;
        json_t *j = base64_json(b.data, b.data ? b.len : 0);
        return j ? j : oom(c);
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        break;
    }
    return fail(c, "field type %d is not a scalar", (int)t);
}

/* ---- the special types ------------------------------------------------------------------- */

/* "YYYY-MM-DDTHH:MM:SS" of Unix seconds s (UTC, proleptic Gregorian) into buf. */
static void format_civil(char *buf, size_t cap, int64_t s) {
    /* Go's time cannot represent more than about 2.9e11 years either way; clamp so the
     * arithmetic below cannot overflow. */
    const int64_t lim = (int64_t)1 << 55;
    if (s > lim)
        s = lim;
    if (s < -lim)
        s = -lim;
    int64_t days = s / 86400, rem = s % 86400;
    if (rem < 0)
        rem += 86400, days--;
    /* Civil date from a day count (days since 1970-01-01), in 400-year eras from 0000-03-01. */
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;                                      /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t y = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                      /* [0, 11], from March */
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    if (m <= 2)
        y++;
    snprintf(buf, cap, "%s%04lld-%02lld-%02lldT%02lld:%02lld:%02lld", y < 0 ? "-" : "",
             (long long)(y < 0 ? -y : y), (long long)m, (long long)d, (long long)(rem / 3600),
             (long long)(rem / 60 % 60), (long long)(rem % 60));
}

/* metav1.Time: RFC 3339 in seconds (the nanos are dropped, as the server drops them). NULL
 * with no error for the zero time, which the server writes as null. */
static json_t *time_json(conv *c, const Time *t) {
    if (!t->has_seconds && !t->has_nanos)
        return json_null();
    if (t->seconds == GO_ZERO_TIME)
        return json_null();
    char buf[64];
    format_civil(buf, sizeof buf - 1, t->seconds);
    strcat(buf, "Z");
    json_t *j = json_string_nocheck(buf);
    return j ? j : oom(c);
}

/* metav1.MicroTime: RFC 3339 with 6 fractional digits, the nanos truncated to microseconds. */
static json_t *microtime_json(conv *c, const MicroTime *t) {
    if (!t->has_seconds && !t->has_nanos)
        return json_null();
    int64_t s = t->seconds;
    int64_t us = (int64_t)t->nanos / 1000; /* truncated towards zero, as Go's Truncate */
    /* time.Unix carries nanoseconds outside [0, 1e9) into the seconds. */
    int64_t carry = us / 1000000, frac = us % 1000000;
    if (frac < 0)
        frac += 1000000, carry--;
    if ((carry > 0 && s > INT64_MAX - carry) || (carry < 0 && s < INT64_MIN - carry))
        carry = 0;
    s += carry;
    if (s == GO_ZERO_TIME && frac == 0)
        return json_null();
    char buf[96];
    format_civil(buf, 64, s);
    size_t n = strlen(buf);
    snprintf(buf + n, sizeof buf - n, ".%06lldZ", (long long)frac);
    json_t *j = json_string_nocheck(buf);
    return j ? j : oom(c);
}

/* Appends the decimal digits of v before *p (writing backwards). */
static char *put_uint(char *p, uint64_t v) {
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

/* Writes "<v / 10^prec>[.<fraction without trailing zeros>]" before p (backwards). */
static char *put_frac(char *p, uint64_t v, int prec) {
    uint64_t pow = 1;
    for (int i = 0; i < prec; i++)
        pow *= 10;
    uint64_t frac = v % pow;
    int digits = prec;
    while (digits > 0 && frac % 10 == 0 && frac)
        frac /= 10, digits--;
    if (frac) {
        for (int i = 0; i < digits; i++) {
            *--p = (char)('0' + frac % 10);
            frac /= 10;
        }
        *--p = '.';
    }
    return put_uint(p, v / pow);
}

/* metav1.Duration: Go's time.Duration.String ("1h2m3.5s", "1.5ms", "0s"). */
static json_t *duration_json(conv *c, const Duration *d) {
    int64_t v = d->duration;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char buf[64], *end = buf + sizeof buf, *p = end;
    if (u == 0) {
        *--p = 's';
        *--p = '0';
    } else if (u < 1000000000ULL) {
        /* Under a second: one unit, ns, µs or ms, with a fraction. */
        const char *unit;
        int prec;
        if (u < 1000)
            unit = "ns", prec = 0;
        else if (u < 1000000)
            unit = "\xc2\xb5s", prec = 3;
        else
            unit = "ms", prec = 6;
        size_t ul = strlen(unit);
        p -= ul;
        memcpy(p, unit, ul);
        p = put_frac(p, u, prec);
    } else {
        *--p = 's';
        p = put_frac(p, u % 60000000000ULL, 9);
        uint64_t min = u / 60000000000ULL;
        if (min) {
            *--p = 'm';
            p = put_uint(p, min % 60);
            if (min / 60) {
                *--p = 'h';
                p = put_uint(p, min / 60);
            }
        }
    }
    if (v < 0)
        *--p = '-';
    json_t *j = json_stringn_nocheck(p, (size_t)(end - p));
    return j ? j : oom(c);
}

/* FieldsV1 and RawExtension: the embedded JSON document; the zero (no bytes) is null. */
static json_t *embedded_json(conv *c, const ProtobufCBinaryData *raw, int has) {
    if (!has || !raw->len || !raw->data)
        return json_null();
    json_error_t je;
    json_t *j = json_loadb((const char *)raw->data, raw->len, JSON_DECODE_ANY, &je);
    if (!j)
        return fail(c, "not JSON: %s (at byte %d)", je.text, je.position);
    return j;
}

static json_t *special_json(conv *c, special sp, const ProtobufCMessage *m) {
    switch (sp) {
    case SP_QUANTITY: {
        /* Quantity and QuantityValue have one field, the string; an absent one is zero. */
        const char *s = ((const Quantity *)m)->string;
        json_t *j = s && *s ? str_json(s, strlen(s)) : json_string_nocheck("0");
        return j ? j : oom(c);
    }
    case SP_TIME:
        return time_json(c, (const Time *)m);
    case SP_MICROTIME:
        return microtime_json(c, (const MicroTime *)m);
    case SP_DURATION:
        return duration_json(c, (const Duration *)m);
    case SP_INTORSTRING: {
        const IntOrString *v = (const IntOrString *)m;
        json_t *j;
        if (v->type == 0)
            j = json_integer(v->intval);
        else if (v->type == 1)
            j = str_json(v->strval ? v->strval : "", v->strval ? strlen(v->strval) : 0);
        else
            return fail(c, "IntOrString of type %lld (0 is int, 1 is string)", (long long)v->type);
        return j ? j : oom(c);
    }
    case SP_FIELDSV1: {
        const FieldsV1 *f = (const FieldsV1 *)m;
        return embedded_json(c, &f->raw, f->has_raw);
    }
    case SP_RAWEXT: {
        const RawExtension *r = (const RawExtension *)m;
        return embedded_json(c, &r->raw, r->has_raw);
    }
    case SP_NONE:
        break;
    }
    return fail(c, "no special form");
}

/* ---- messages ---------------------------------------------------------------------------- */

static int put_fields(conv *c, json_t *obj, const ProtobufCMessage *m);

/* The JSON of message m: its special form, or an object of its fields. json_null() for a
 * special form that is null (the zero time). */
static json_t *msg_json(conv *c, const ProtobufCMessage *m) {
    const ProtobufCMessageDescriptor *d = m->descriptor;
    special sp = special_of(d);
    if (sp != SP_NONE)
        return special_json(c, sp, m);
    json_t *obj = json_object();
    if (!obj)
        return oom(c);
    if (put_fields(c, obj, m) != 0) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

/* The JSON of one value of field fd at p (the member of a singular field or an element of a
 * repeated one); *zero as scalar_json. */
static json_t *value_json(conv *c, const ProtobufCFieldDescriptor *fd, const void *p, int *zero) {
    if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
        return scalar_json(c, fd->type, p, zero);
    *zero = 0;
    const ProtobufCMessage *sub;
    memcpy(&sub, p, sizeof sub);
    if (!sub)
        return json_null();
    return msg_json(c, sub);
}

/* A map field: its entries as one object. Map keys are strings in every Kubernetes type;
 * other key types are written in decimal, as encoding/json writes integer keys. */
static json_t *map_json(conv *c, const ProtobufCFieldDescriptor *fd, void *const *entries,
                        size_t n) {
    const ProtobufCMessageDescriptor *ed = fd->descriptor;
    const ProtobufCFieldDescriptor *kfd = &ed->fields[0], *vfd = &ed->fields[1];
    frame *f = &c->path[c->depth - 1];
    json_t *obj = json_object();
    if (!obj)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        const char *e = entries[i];
        if (!e)
            continue;
        char kbuf[32];
        const char *key;
        if (kfd->type == PROTOBUF_C_TYPE_STRING) {
            memcpy(&key, e + kfd->offset, sizeof key);
            if (!key)
                key = "";
        } else {
            int zero;
            json_t *kj = scalar_json(c, kfd->type, e + kfd->offset, &zero);
            if (!kj || !json_is_integer(kj)) {
                json_decref(kj);
                json_decref(obj);
                return kj ? fail(c, "map key of type %d", (int)kfd->type) : NULL;
            }
            snprintf(kbuf, sizeof kbuf, "%" JSON_INTEGER_FORMAT, json_integer_value(kj));
            json_decref(kj);
            key = kbuf;
        }
        f->key = key;
        f->index = -1;
        int zero;
        json_t *v;
        if (vfd->type == PROTOBUF_C_TYPE_MESSAGE) {
            /* An absent message value is the value type's zero: {} or its special zero. */
            const ProtobufCMessage *sub;
            memcpy(&sub, e + vfd->offset, sizeof sub);
            if (sub)
                v = msg_json(c, sub);
            else if (special_of(vfd->descriptor) == SP_QUANTITY)
                v = json_string_nocheck("0");
            else if (special_of(vfd->descriptor) != SP_NONE)
                v = json_null();
            else
                v = json_object();
            if (!v && !sub)
                v = oom(c);
        } else {
            v = scalar_json(c, vfd->type, e + vfd->offset, &zero);
        }
        if (!v) {
            f->key = NULL;
            json_decref(obj);
            return NULL;
        }
        /* A key that is not UTF-8 (jansson refuses it) gets U+FFFD for its bad bytes, as Go
         * writes it. json_object_set_new drops v when it fails, so the key is checked first. */
        json_t *ks = NULL;
        if (!utf8_valid(key)) {
            ks = str_json(key, strlen(key));
            key = ks ? json_string_value(ks) : NULL;
        }
        int rc = key ? json_object_set_new_nocheck(obj, key, v) : (json_decref(v), -1);
        json_decref(ks);
        if (rc != 0) {
            oom(c);
            f->key = NULL;
            json_decref(obj);
            return NULL;
        }
    }
    f->key = NULL;
    return obj;
}

/* Writes field fd of m into obj (nothing when it is absent or zero). 0 or -1 with err. */
static int put_field(conv *c, json_t *obj, const ProtobufCMessage *m,
                     const ProtobufCFieldDescriptor *fd) {
    const char *base = (const char *)m;
    const void *member = base + fd->offset;
    frame *f = &c->path[c->depth++];
    f->name = fd->name;
    f->index = -1;
    f->key = NULL;
    f->inline_ = 0;
    json_t *v = NULL;
    int rc = -1;

    if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
        size_t n;
        memcpy(&n, base + fd->quantifier_offset, sizeof n);
        void *arr;
        memcpy(&arr, member, sizeof arr);
        if (n == 0 || !arr) {
            rc = 0;
            goto out;
        }
        if (fd->type == PROTOBUF_C_TYPE_MESSAGE && is_map_entry(fd->descriptor)) {
            v = map_json(c, fd, arr, n);
        } else {
            size_t sz;
            switch (fd->type) {
            case PROTOBUF_C_TYPE_INT64:
            case PROTOBUF_C_TYPE_SINT64:
            case PROTOBUF_C_TYPE_SFIXED64:
            case PROTOBUF_C_TYPE_UINT64:
            case PROTOBUF_C_TYPE_FIXED64:
            case PROTOBUF_C_TYPE_DOUBLE:
                sz = 8;
                break;
            case PROTOBUF_C_TYPE_BOOL:
                sz = sizeof(protobuf_c_boolean);
                break;
            case PROTOBUF_C_TYPE_STRING:
            case PROTOBUF_C_TYPE_MESSAGE:
                sz = sizeof(void *);
                break;
            case PROTOBUF_C_TYPE_BYTES:
                sz = sizeof(ProtobufCBinaryData);
                break;
            default:
                sz = 4;
                break;
            }
            v = json_array();
            if (!v) {
                oom(c);
                goto out;
            }
            for (size_t i = 0; i < n; i++) {
                f->index = (long)i;
                int zero;
                json_t *e = value_json(c, fd, (const char *)arr + i * sz, &zero);
                if (!e || json_array_append_new(v, e) != 0) {
                    if (e)
                        oom(c);
                    json_decref(v);
                    v = NULL;
                    goto out;
                }
            }
            f->index = -1;
        }
        if (!v)
            goto out;
    } else {
        /* Presence: a oneof member is the one its case names; a proto2 optional scalar has a
         * has_ flag; strings and messages are NULL when absent. */
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            uint32_t which;
            memcpy(&which, base + fd->quantifier_offset, sizeof which);
            if (which != fd->id) {
                rc = 0;
                goto out;
            }
        } else if (fd->label == PROTOBUF_C_LABEL_OPTIONAL && fd->type != PROTOBUF_C_TYPE_STRING &&
                   fd->type != PROTOBUF_C_TYPE_MESSAGE) {
            protobuf_c_boolean has;
            memcpy(&has, base + fd->quantifier_offset, sizeof has);
            if (!has) {
                rc = 0;
                goto out;
            }
        }
        if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
            const ProtobufCMessage *sub;
            memcpy(&sub, member, sizeof sub);
            if (!sub) {
                rc = 0;
                goto out;
            }
            if (is_inline(fd)) {
                /* An embedded Go struct: its fields are the parent's in JSON. */
                f->inline_ = 1;
                rc = put_fields(c, obj, sub);
                goto out;
            }
            v = msg_json(c, sub);
        } else {
            int zero;
            v = scalar_json(c, fd->type, member, &zero);
            if (v && zero) {
                json_decref(v);
                rc = 0;
                goto out;
            }
        }
        if (!v)
            goto out;
        if (json_is_null(v)) { /* a special type's zero (time): null, which is left out */
            rc = 0;
            goto out;
        }
    }
    if (json_object_set_new_nocheck(obj, fd->name, v) != 0) {
        oom(c);
        goto out;
    }
    rc = 0;
out:
    c->depth--;
    return rc;
}

static int put_fields(conv *c, json_t *obj, const ProtobufCMessage *m) {
    const ProtobufCMessageDescriptor *d = m->descriptor;
    if (!d || d->magic != PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC) {
        fail(c, "not a protobuf-c message");
        return -1;
    }
    if (c->depth >= MAX_DEPTH) {
        fail(c, "nested deeper than %d messages", MAX_DEPTH);
        return -1;
    }
    if ((c->flags & TM_KPJ_STRICT) && m->n_unknown_fields > 0) {
        fail(c, "%s has field %u, unknown to this build (k8s.io/api of lib/proto/)", d->name,
             (unsigned)m->unknown_fields[0].tag);
        return -1;
    }
    int skip_managed = (c->flags & TM_KPJ_NO_MANAGED_FIELDS) != 0;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        if (skip_managed && fd == managed_fields_fd)
            continue;
        if (put_field(c, obj, m, fd) != 0)
            return -1;
    }
    return 0;
}

json_t *tm_kp_to_json(const ProtobufCMessage *msg, const tm_kp_kind *kind, unsigned flags,
                      tm_err *err) {
    if (!msg || !msg->descriptor ||
        msg->descriptor->magic != PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC) {
        tm_err_set(err, "tm_kp_to_json: not a protobuf-c message");
        return NULL;
    }
    pthread_once(&fields_once, resolve_fields);
    conv cv; /* the path stack: 2 KB, on the stack so a pod costs no allocation for it */
    conv *c = &cv;
    c->flags = flags;
    c->err = err;
    c->depth = 0;
    if (err)
        err->msg[0] = 0;
    json_t *out;
    if (special_of(msg->descriptor) != SP_NONE) {
        out = msg_json(c, msg);
    } else {
        out = json_object();
        if (!out) {
            oom(c);
        } else if (kind && (json_object_set_new_nocheck(out, "kind", json_string(kind->kind)) ||
                            json_object_set_new_nocheck(out, "apiVersion",
                                                        json_string(kind->api_version)))) {
            oom(c);
            json_decref(out);
            out = NULL;
        } else if (put_fields(c, out, msg) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}
