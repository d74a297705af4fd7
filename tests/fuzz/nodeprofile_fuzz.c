/* nodeprofile_fuzz.c: fuzzes NodeProfile validation (profiler/nodeprofile.h): documents that
 * come from files and Node annotations. An accepted profile must hold what the contract
 * promises (finite positive figures, a NUL-terminated node name) and serialise back to a
 * document that is accepted again with the same figures. */
#include <math.h>

#include "fuzz/fuzz_util.h"
#include "profiler/nodeprofile.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static void nodeprofile_check(const prof_profile *p) {
    FZ_CHECK(memchr(p->node, 0, sizeof p->node) != NULL && p->node[0] != '\0');
    FZ_CHECK(p->cores > 0 && p->memory_bytes > 0);
    const double v[] = {p->cpu_single_eps, p->cpu_multi_eps,  p->mem_mibps,      p->seq_read_iops,
                        p->seq_write_iops, p->rand_read_iops, p->rand_write_iops};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        FZ_CHECK(isfinite(v[i]) && v[i] > 0);
    json_t *doc = prof_profile_to_json(p);
    json_t *fig = prof_profile_figures(p);
    FZ_CHECK(doc != NULL && fig != NULL);
    prof_profile again;
    memset(&again, 0, sizeof again);
    tm_err err = {{0}, 0};
    if (doc && prof_profile_from_json(doc, "round trip", &again, &err) != 0) {
        fprintf(stderr, "re-reading a written profile: %s\n", err.msg);
        FZ_FAIL("prof_profile_to_json wrote a profile that does not validate");
    } else if (doc) {
        FZ_CHECK(strcmp(again.node, p->node) == 0 && again.cores == p->cores);
        FZ_CHECK(again.cpu_multi_eps == p->cpu_multi_eps && again.mem_mibps == p->mem_mibps);
    }
    prof_profile_clear(&again);
    json_decref(doc);
    json_decref(fig);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    json_t *j = fz_json(data, size);
    if (!j)
        return 0;
    tm_err err = {{0}, 0};
    prof_profile_set set = {0};
    if (prof_profiles_add_json(&set, j, "fuzz.json", &err) == 0) {
        for (size_t i = 0; i < set.n; i++)
            nodeprofile_check(&set.items[i]);
    } else {
        FZ_CHECK(strstr(err.msg, "fuzz.json") != NULL);
    }
    prof_profile_set_free(&set);
    json_decref(j);
    return 0;
}
