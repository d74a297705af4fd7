/* kube_proto.h: decoding the Kubernetes API server's protobuf encoding
 * (application/vnd.kubernetes.protobuf) of pods, nodes, their lists and their watch streams.
 *
 * Wire format (what a real kube-apiserver sends; tests/data/proto/ holds captures):
 *   - An object or a list is an envelope: the 4 bytes "k8s\0", then a runtime.Unknown message
 *     (1: typeMeta {1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding, 4: contentType) whose
 *     raw bytes are the object's own message (a v1.Pod, a v1.PodList, ...).
 *   - A watch (Accept: application/vnd.kubernetes.protobuf;stream=watch) is a sequence of
 *     frames: a 4-byte big-endian length, then that many bytes of a metav1.WatchEvent
 *     (1: type, 2: object, a runtime.RawExtension {1: raw}) with no envelope of its own; its
 *     object's raw bytes are an enveloped object as above. ADDED, MODIFIED and DELETED carry the
 *     watched kind, BOOKMARK the watched kind with only metadata.resourceVersion (and the
 *     k8s.io/initial-events-end annotation in a streamed list), ERROR a v1.Status (code 410:
 *     the resourceVersion is too old, re-list).
 *
 * The envelope and the watch frames are walked here by hand, zero-copy and bounds-checked at
 * every length; the objects themselves are unpacked by the protobuf-c code that
 * hack/gen-proto.sh generates from k8s.io/api and k8s.io/apimachinery (lib/proto/), so the
 * types are upstream's (K8s__Io__Api__Core__V1__Pod, ...). Bad input (truncated, a length past
 * the end, a wrong kind, an unknown encoding) gives -1 or NULL and a tm_err naming what was
 * wrong and where, never a crash (tests/fuzz/kube_proto_fuzz.c). Unknown fields are not an
 * error: protobuf's compatibility rule is that a newer server may add fields, and protobuf-c
 * keeps them aside; tm_kp_unknown_fields counts them for a caller that wants to log it.
 *
 * Where this plugs in (lib/informer.c): lib/kube.c's request
 * sends "Accept: application/vnd.kubernetes.protobuf, application/json" for the built-in
 * kinds (pods, nodes) and reads the response's Content-Type (or tm_kp_is_protobuf on the
 * body); protobuf goes to tm_kp_pod_list / tm_kp_node_list (a page's ListMeta carries the
 * continue token as in JSON), JSON (CRDs, a server that refuses protobuf) to the JSON path as
 * today. The informer's watch keeps its loop and swaps tm_watchstream for tm_kpwatch: both
 * are fed bytes as curl delivers them and hand out events of the same tm_ws_type, so the
 * ADDED/MODIFIED/DELETED/BOOKMARK/ERROR (410 -> re-list) handling stays one piece of code; only
 * the event's object changes from a json_t to a protobuf-c message, which the compact state
 * reads directly (tm_kp_meta gives any object's name, namespace and resourceVersion). */
#ifndef TAREMA_KUBE_PROTO_H
#define TAREMA_KUBE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "proto/k8s_coordination_v1.pb-c.h"
#include "proto/k8s_core_v1.pb-c.h"
#include "proto/k8s_meta_v1.pb-c.h"
#include "watchstream.h"

/* The media type to send in Accept, and its watch form. */
#define TM_KP_MEDIA_TYPE       "application/vnd.kubernetes.protobuf"
#define TM_KP_WATCH_MEDIA_TYPE "application/vnd.kubernetes.protobuf;stream=watch"

/* A kind this decoder knows: its apiVersion and kind as the envelope names them, and the
 * protobuf-c descriptor of its message. */
typedef struct tm_kp_kind {
    const char *api_version;
    const char *kind;
    const ProtobufCMessageDescriptor *desc;
} tm_kp_kind;

extern const tm_kp_kind tm_kp_kind_pod, tm_kp_kind_pod_list, tm_kp_kind_node, tm_kp_kind_node_list,
    tm_kp_kind_status, tm_kp_kind_lease, tm_kp_kind_lease_list;

/* The envelope's fields. The strings are copied (and NUL-terminated); raw points into the
 * buffer given to tm_kp_envelope_parse and lives as long as it does. */
typedef struct tm_kp_envelope {
    char api_version[128];
    char kind[128];
    char content_encoding[64]; /* "" unless the server compressed raw (not supported) */
    char content_type[128];    /* "" or TM_KP_MEDIA_TYPE for a protobuf raw */
    const uint8_t *raw;
    size_t raw_len;
} tm_kp_envelope;

/* 1 when buf starts with the 4-byte magic "k8s\0" (a protobuf body), else 0. */
int tm_kp_is_protobuf(const void *buf, size_t len);

/* Parses the magic and the runtime.Unknown. 0, or -1 with err. */
int tm_kp_envelope_parse(const void *buf, size_t len, tm_kp_envelope *env, tm_err *err);

/* Decodes an enveloped object that must be of kind `want` (apiVersion and kind checked, raw
 * protobuf). Returns the message (free with tm_kp_free) or NULL with err. */
ProtobufCMessage *tm_kp_decode(const void *buf, size_t len, const tm_kp_kind *want, tm_err *err);

/* Typed forms of tm_kp_decode. */
K8s__Io__Api__Core__V1__PodList *tm_kp_pod_list(const void *buf, size_t len, tm_err *err);
K8s__Io__Api__Core__V1__NodeList *tm_kp_node_list(const void *buf, size_t len, tm_err *err);

/* Frees a message from this module; NULL is fine. */
void tm_kp_free(void *msg);

/* The ObjectMeta of any Kubernetes object message (its field `metadata`), NULL when it has
 * none (or it is absent). */
const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta *
tm_kp_meta(const ProtobufCMessage *obj);

/* A list message's ListMeta (resourceVersion, continue_), NULL when absent. */
const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ListMeta *
tm_kp_list_meta(const ProtobufCMessage *list);

/* A list message's items (its repeated field `items`): the count, *items the array. */
size_t tm_kp_list_items(const ProtobufCMessage *list, ProtobufCMessage *const **items);

/* The item and list kinds of a collection path the informers ask protobuf for
 * ("/api/v1/pods", "/api/v1/namespaces/NS/pods", "/api/v1/nodes"): 0, or -1 for any other
 * path (which stays JSON). */
int tm_kp_kinds_for_path(const char *path, const tm_kp_kind **item, const tm_kp_kind **list);

/* Fields the decoder did not know, counted through the whole message tree. */
size_t tm_kp_unknown_fields(const ProtobufCMessage *msg);

/* ---- watch streams ---------------------------------------------------------------------- */

typedef struct tm_kp_event {
    tm_ws_type type;          /* the JSON decoder's enum (watchstream.h) */
    ProtobufCMessage *object; /* the watched kind, or a Status for ERROR; free: tm_kp_free */
    int code;                 /* ERROR: the Status code (0 if absent); else 0 */
} tm_kp_event;

typedef struct tm_kpwatch tm_kpwatch;

/* item: the watched kind (tm_kp_kind_pod, ...). max_frame: the largest frame accepted (0 = 64 MiB).
 * NULL only when out of memory. */
tm_kpwatch *tm_kpwatch_new(const tm_kp_kind *item, size_t max_frame);
void tm_kpwatch_free(tm_kpwatch *ws);

/* Appends bytes as they arrive, split anywhere; drain with tm_kpwatch_next after each call.
 * -1 with err when out of memory or once the stream is broken (a frame longer than max_frame:
 * nothing after it can be trusted; the caller re-watches). */
int tm_kpwatch_feed(tm_kpwatch *ws, const void *data, size_t len, tm_err *err);

/* The next whole event: 1 and *ev filled; 0 when no whole frame is buffered; -1 with err for a
 * frame that does not decode (that frame is consumed and the caller may go on) or for a broken
 * stream (every later call says so again). */
int tm_kpwatch_next(tm_kpwatch *ws, tm_kp_event *ev, tm_err *err);

/* Bytes buffered that do not yet form a whole frame. */
size_t tm_kpwatch_pending(const tm_kpwatch *ws);

#endif
