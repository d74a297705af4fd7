/* kube_proto_json.h: the JSON the API server would have sent, built from a decoded protobuf
 * message (lib/kube_proto.h), so that every consumer of the informers keeps reading the objects
 * it has always read while the wire carries protobuf.
 *
 * The walk is driven by protobuf-c's descriptors, so any message of the generated code converts
 * (pods, nodes, their statuses, Status, ...). Kubernetes' JSON differs from a plain protobuf
 * mapping in a few types, which are converted as the API server's JSON encoder writes them:
 *   - resource.Quantity          -> its string ("500m")
 *   - meta/v1 Time               -> RFC 3339 in seconds ("2026-11-30T01:02:03Z")
 *   - meta/v1 MicroTime          -> RFC 3339 with 6 fractional digits
 *   - meta/v1 Duration           -> Go's duration text ("1m30s")
 *   - util/intstr IntOrString    -> a number or a string
 *   - meta/v1 FieldsV1, runtime RawExtension -> the embedded JSON document
 *   - map<k, v> (the generated *Entry messages) -> a JSON object
 *   - bytes                      -> base64
 *   - embedded Go structs (json:",inline": Volume.volumeSource, Probe.handler, the
 *     localObjectReference of ConfigMapKeySelector and six others, EphemeralContainer's
 *     ephemeralContainerCommon, PersistentVolumeSpec.persistentVolumeSource) -> their fields
 *     written into the parent, as JSON has them
 * Every other key is the protobuf field's name, which go-to-protobuf takes from the JSON name
 * (checked for every field of core/v1, coordination/v1, meta/v1 and runtime at v0.35.4 and
 * v0.37.2). A zero Time or MicroTime (the server's null) is left out; strings that are not UTF-8
 * get U+FFFD for each bad byte, as Go's encoding/json writes them.
 *
 * One difference remains, by design: the generated Go marshaller writes every non-pointer scalar
 * even when it is zero, so protobuf cannot tell "absent" from "zero". Zero scalars (the empty
 * string, 0, false) are therefore left out, as encoding/json's omitempty does for almost every
 * Kubernetes field. A field the server's JSON would print as 0, "" or false is absent here; a
 * reader that defaults a missing field to its zero value (as every reader in this repository
 * does) sees no difference. Messages that are present are always written, empty ones as {}.
 * Arrays and map values keep their elements even when zero (a label "" stays ""). */
#ifndef TAREMA_KUBE_PROTO_JSON_H
#define TAREMA_KUBE_PROTO_JSON_H

#include <jansson.h>

#include "error.h"
#include "kube_proto.h"

/* Flags for tm_kp_to_json. */
enum {
    /* Leave out metadata.managedFields: a third of a pod's bytes, read by no scheduler. */
    TM_KPJ_NO_MANAGED_FIELDS = 1u << 0,
    /* Refuse a message with fields this build does not know (a newer API server's): they
     * cannot be written as JSON, and a reader that needs them (a pod's spec.schedulingGroup
     * from 1.36 on, read by a build of v0.35 types) would silently go without. The informers
     * use it and read JSON instead when it fails. */
    TM_KPJ_STRICT = 1u << 1,
};

/* The JSON of msg (a new reference), or NULL with err naming the path of the field that could
 * not be converted ("metadata.managedFields[0].fieldsV1: not JSON: ..."): an embedded FieldsV1
 * or RawExtension that is not JSON, an IntOrString of a type other than 0 or 1, a NaN or
 * infinite float, out of memory. Any message protobuf-c unpacked converts without a crash
 * (tests/fuzz/kube_proto_fuzz.c). Thread-safe. When kind is given, "kind" and "apiVersion" are
 * set from it (protobuf objects carry them only in the envelope). */
json_t *tm_kp_to_json(const ProtobufCMessage *msg, const tm_kp_kind *kind, unsigned flags,
                      tm_err *err);

#endif
