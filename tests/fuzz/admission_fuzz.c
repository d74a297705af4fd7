/* admission_fuzz.c: fuzzes what `tarema-labeler webhook` does with an AdmissionReview the API
 * server (or anyone reaching /mutate, which is open) posts: labeler/sizing_pod.h sz_pod_parse of
 * request.object, sz_pod_failed_memory of the earlier attempts (the document's "pods" array,
 * else [request.object]), sz_pod_decide against no plan, a ready plan and node sizes taken from
 * the input, sz_pod_patch and sz_admission_response. Invariants: a decision that patches writes
 * finite values in (0, largest node], cpu never above a cpu limit; the patch is one "add" of
 * /spec/containers/0/resources whose quantities read back as the decision; the response's
 * base64 patch decodes to that patch; a review without a string request.uid gets no response. */
#include <math.h>

#include "fuzz/fuzz_util.h"
#include "labeler/sizing_pod.h"
#include "lib/jsonutil.h"
#include "lib/kube_internal.h" /* tm_kube_base64_decode, to read the patch back */
#include "lib/quantity.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static void admission_check(const json_t *review, const json_t *pod, const sz_pod *p,
                            const double node_max[SZ_RES_N], const sz_decision *d) {
    if (!d->patch)
        return;
    double cpu = d->value[SZ_RES_CORES], mem = d->value[SZ_RES_MEMORY];
    FZ_CHECK(isfinite(cpu) && cpu > 0 && cpu <= node_max[SZ_RES_CORES] + 1e-9);
    FZ_CHECK(isfinite(mem) && mem > 0 && mem <= node_max[SZ_RES_MEMORY]);
    FZ_CHECK(!isfinite(p->cpu_limit) || cpu <= p->cpu_limit + 1e-9);
    json_t *patch = sz_pod_patch(pod, d);
    FZ_CHECK(patch != NULL);
    if (!patch)
        return;
    FZ_CHECK(json_array_size(patch) == 1);
    const json_t *op = json_array_get(patch, 0);
    FZ_CHECK(strcmp(tm_json_str(op, "op", ""), "add") == 0);
    FZ_CHECK(strcmp(tm_json_str(op, "path", ""), "/spec/containers/0/resources") == 0);
    const json_t *res = json_object_get(op, "value");
    int64_t milli = 0, bytes = 0, lim = 0;
    tm_err err = {{0}, 0};
    FZ_CHECK(tm_quantity_parse_milli(tm_json_str(res, "requests.cpu", "?"), &milli, &err) == 0);
    FZ_CHECK(fabs((double)milli - cpu * 1000.0) < 1.0);
    FZ_CHECK(tm_quantity_parse(tm_json_str(res, "requests.memory", "?"), &bytes, &err) == 0);
    FZ_CHECK(tm_quantity_parse(tm_json_str(res, "limits.memory", "?"), &lim, &err) == 0);
    FZ_CHECK(bytes == lim && fabs((double)bytes - mem) < 1.0);
    json_t *out = sz_admission_response(review, patch, d->reason);
    if (out) {
        /* padded base64, as the API server expects */
        const char *b64 = tm_json_str(out, "response.patch", "");
        char *text = strlen(b64) % 4 == 0 ? tm_kube_base64_decode(b64, NULL) : NULL;
        json_t *back = text ? json_loads(text, 0, NULL) : NULL;
        FZ_CHECK(back != NULL && json_equal(back, patch));
        json_decref(back);
        free(text);
        json_decref(out);
    }
    json_decref(patch);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    json_t *review = fz_json(data, size);
    if (!review)
        return 0;
    json_t *pod = json_object_get(json_object_get(review, "request"), "object");
    json_t *uid = json_object_get(json_object_get(review, "request"), "uid");
    json_t *bare = sz_admission_response(review, NULL, NULL);
    FZ_CHECK((bare != NULL) == json_is_string(uid));
    json_decref(bare);

    sz_pod p;
    tm_err err = {{0}, 0};
    if (sz_pod_parse(pod, &p, &err) < 0) {
        FZ_CHECK(err.msg[0] != '\0');
        json_decref(review);
        return 0;
    }
    const json_t *earlier = json_object_get(review, "pods");
    json_t *self = json_pack("[O]", pod ? pod : json_null());
    double failed = sz_pod_failed_memory(earlier ? earlier : self);
    json_decref(self);
    FZ_CHECK(!isfinite(failed) || failed > 0);

    /* node sizes: the review's "nodeMax" [cores, bytes] when present, else 16 cores 64 GiB */
    double node_max[SZ_RES_N] = {16, 64.0 * 1073741824};
    const json_t *nm = json_object_get(review, "nodeMax");
    for (int r = 0; r < SZ_RES_N; r++)
        if (json_is_number(json_array_get(nm, (size_t)r)))
            node_max[r] = json_number_value(json_array_get(nm, (size_t)r));
    bool sane = true;
    for (int r = 0; r < SZ_RES_N; r++)
        sane &= isfinite(node_max[r]) && node_max[r] > 0;
    /* what node_sizes() can read: int64 millicores and bytes */
    sane &= node_max[0] < 9e15 && node_max[1] < 9.2e18;

    double cores[] = {0.5, 1.5, 3.0, 0.7}, bytes[] = {2e8, 1.2e9, 3.5e9, 8e8};
    sz_plan plan;
    sz_plan_opts po;
    sz_plan_opts_default(&po, sane ? node_max[0] : 16, sane ? node_max[1] : 64.0 * 1073741824);
    int built = sz_plan_build(&plan, &po, cores, bytes, NULL, 4, &err);
    FZ_CHECK(built == 0);
    sz_decision d;
    sz_pod_decide(&p, NULL, node_max, failed, &d);
    if (sane)
        admission_check(review, pod, &p, node_max, &d);
    else
        FZ_CHECK(!d.patch || (isfinite(d.value[0]) && isfinite(d.value[1])));
    if (built == 0) {
        sz_pod_decide(&p, &plan, node_max, failed, &d);
        if (sane)
            admission_check(review, pod, &p, node_max, &d);
        sz_plan_free(&plan);
    }
    json_decref(review);
    return 0;
}
