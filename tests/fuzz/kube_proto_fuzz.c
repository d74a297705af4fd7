/* kube_proto_fuzz.c: fuzzes the protobuf decoder of lib/kube_proto.h. The input is read as an
 * enveloped object (a PodList, a NodeList, a Pod) and as a watch stream, the stream once fed
 * whole and once in chunks split at places derived from the input: both feedings must give
 * the same events and errors. Every error must have a message; every decoded watch object
 * must be of the watched kind (or a Status for ERROR). Whatever decodes is also converted to
 * JSON (lib/kube_proto_json.h), with and without managedFields: a result that can be written
 * out, or an error with a message. */
#include "fuzz/fuzz_util.h"
#include "lib/kube_proto.h"
#include "lib/kube_proto_json.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static void kube_proto_to_json_check(const ProtobufCMessage *m, const tm_kp_kind *kind) {
    for (unsigned flags = 0; flags <= TM_KPJ_NO_MANAGED_FIELDS; flags++) {
        tm_err err = {{0}, 0};
        json_t *j = tm_kp_to_json(m, kind, flags, &err);
        FZ_CHECK(j != NULL || err.msg[0]);
        if (j) {
            char *text = json_dumps(j, JSON_COMPACT);
            FZ_CHECK(text != NULL);
            free(text);
        }
        json_decref(j);
    }
}

static void kube_proto_object(const uint8_t *data, size_t size, const tm_kp_kind *kind) {
    tm_err err = {{0}, 0};
    ProtobufCMessage *m = tm_kp_decode(data, size, kind, &err);
    FZ_CHECK(m != NULL || err.msg[0]);
    if (m) {
        FZ_CHECK(m->descriptor == kind->desc);
        (void)tm_kp_meta(m);
        (void)tm_kp_unknown_fields(m);
        kube_proto_to_json_check(m, kind);
    }
    tm_kp_free(m);
}

/* Decodes data as a pod watch in chunks (chunks NULL: whole); one log line per outcome.
 * Returns the log (caller frees) or NULL when out of memory. */
static char *kube_proto_watch(const uint8_t *data, size_t size, fz_rng *chunks, size_t max) {
    tm_kpwatch *ws = tm_kpwatch_new(&tm_kp_kind_pod, max);
    if (!ws)
        return NULL;
    char *log = NULL;
    size_t loglen = 0;
    FILE *out = open_memstream(&log, &loglen);
    size_t off = 0;
    tm_err err = {{0}, 0};
    int broken = 0;
    while (off < size && !broken) {
        size_t n = size - off;
        if (chunks) {
            uint32_t r = fz_rng_next(chunks);
            n = (r & 7) == 0 ? (size_t)(r >> 3) % 64 : (size_t)(r >> 3) % 6;
            if (n > size - off)
                n = size - off;
        }
        if (tm_kpwatch_feed(ws, data + off, n, &err) != 0) {
            FZ_CHECK(err.msg[0]);
            fprintf(out, "feed error: %s\n", err.msg);
            break;
        }
        off += n;
        for (int guard = 0; guard < 100000; guard++) {
            tm_kp_event ev;
            int rc = tm_kpwatch_next(ws, &ev, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                FZ_CHECK(err.msg[0] && ev.object == NULL);
                fprintf(out, "error: %s\n", err.msg);
                if (strstr(err.msg, "re-watch")) {
                    broken = 1; /* for good: every later call repeats it */
                    break;
                }
                continue;
            }
            FZ_CHECK(ev.object != NULL);
            FZ_CHECK(ev.object->descriptor ==
                     (ev.type == TM_WS_ERROR ? tm_kp_kind_status.desc : tm_kp_kind_pod.desc));
            const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta *m = tm_kp_meta(ev.object);
            fprintf(out, "%s %d %s\n", tm_ws_type_name(ev.type), ev.code,
                    m && m->resourceversion ? m->resourceversion : "-");
            kube_proto_to_json_check(ev.object,
                                     ev.type == TM_WS_ERROR ? &tm_kp_kind_status : &tm_kp_kind_pod);
            tm_kp_free(ev.object);
        }
    }
    /* Once broken, what is buffered depends on where the chunks ended: not compared. */
    if (!broken)
        fprintf(out, "pending %zu\n", tm_kpwatch_pending(ws));
    fclose(out);
    tm_kpwatch_free(ws);
    return log;
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    kube_proto_object(data, size, &tm_kp_kind_pod_list);
    kube_proto_object(data, size, &tm_kp_kind_node_list);
    kube_proto_object(data, size, &tm_kp_kind_pod);
    tm_kp_envelope env;
    tm_err err = {{0}, 0};
    if (tm_kp_envelope_parse(data, size, &env, &err) == 0)
        FZ_CHECK(env.raw >= data && env.raw + env.raw_len <= data + size);

    fz_rng rng = fz_rng_from(data, size);
    char *whole = kube_proto_watch(data, size, NULL, 0);
    char *split = kube_proto_watch(data, size, &rng, 0);
    if (whole && split && strcmp(whole, split) != 0) {
        fprintf(stderr, "--- fed whole:\n%s--- fed in chunks:\n%s", whole, split);
        FZ_FAIL("chunked decoding differs from whole decoding");
    }
    free(whole);
    free(split);
    /* A small frame limit: over-long frames must be refused, never buffered past it. */
    free(kube_proto_watch(data, size, &rng, 64));
    return 0;
}
