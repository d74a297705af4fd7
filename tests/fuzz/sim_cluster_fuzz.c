/* sim_cluster_fuzz.c: fuzzes the simulator's cluster YAML loader (sim/model.h): YAML text ->
 * sim_cluster_from_json. An accepted cluster must be internally consistent: node types with
 * positive counts, cores and speeds, nodes that point at existing types, a valid reference. */
#include <math.h>

#include "fuzz/fuzz_util.h"
#include "lib/yamljson.h"
#include "sim/model.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    tm_err err = {{0}, 0};
    json_t *root = tm_yaml_parse((const char *)data, size, "fuzz-cluster.yaml", &err);
    if (!root)
        return 0;
    sim_cluster *c = sim_cluster_from_json(root, "fuzz-cluster.yaml", 42, &err);
    if (!c) {
        FZ_CHECK(strstr(err.msg, "fuzz-cluster.yaml") != NULL);
    } else {
        FZ_CHECK(c->ntypes > 0 && c->ref_type >= 0 && c->ref_type < c->ntypes);
        long total = 0;
        for (int t = 0; t < c->ntypes; t++) {
            const sim_node_type *nt = &c->types[t];
            FZ_CHECK(memchr(nt->name, 0, sizeof nt->name) && nt->name[0] != '\0');
            FZ_CHECK(nt->count > 0 && nt->cores > 0 && isfinite(nt->cores) && nt->memory > 0);
            for (int f = 0; f < LAB_NFEATURES; f++)
                if (!(isfinite(nt->speed[f]) && nt->speed[f] > 0)) {
                    fprintf(stderr, "type %s: speed[%d] = %g\n", nt->name, f, nt->speed[f]);
                    FZ_FAIL("an accepted node type has a speed that is not finite and positive");
                }
            FZ_CHECK(sim_cluster_find_type(c, nt->name) >= 0);
            total += nt->count;
        }
        FZ_CHECK(total == c->nnodes);
        for (int n = 0; n < c->nnodes; n++)
            FZ_CHECK(c->nodes[n].type >= 0 && c->nodes[n].type < c->ntypes);
        sim_cluster_free(c);
    }
    json_decref(root);
    return 0;
}
