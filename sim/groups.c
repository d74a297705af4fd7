/* groups.c: simulated nodes -> NodeProfiles -> the profiler's grouping (see groups.h). */
#include "sim/groups.h"
#include "sim/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/grouping.h"

/* A node's figures: its drawn bench where the type has one, else the reference figure
 * scaled by the type's relative speed. */
static double figure(const sim_cluster *c, const sim_node *n, int k, double ref) {
    if (!isnan(n->bench[k]))
        return n->bench[k];
    return ref * c->types[n->type].speed[k];
}

int sim_cluster_group(sim_cluster *c, uint64_t seed, tm_err *err) {
    prof_profile *pp = calloc((size_t)c->nnodes, sizeof *pp);
    if (!pp)
        return tm_err_set(err, "out of memory for %d node profiles", c->nnodes);
    for (int i = 0; i < c->nnodes; i++) {
        const sim_node *n = &c->nodes[i];
        const sim_node_type *t = &c->types[n->type];
        prof_profile *p = &pp[i];
        snprintf(p->node, sizeof p->node, "%s", n->name);
        p->cores = (long long)ceil(t->cores);
        p->memory_bytes = t->memory;
        p->cpu_single_eps = figure(c, n, SIM_B_CPU, SIM_REF_CPU_EPS);
        p->cpu_multi_eps = p->cpu_single_eps * t->cores;
        p->mem_mibps = figure(c, n, SIM_B_MEM, SIM_REF_MEM_MIBS);
        p->seq_read_iops = p->seq_write_iops = p->rand_read_iops = p->rand_write_iops =
            figure(c, n, SIM_B_IO, SIM_REF_IOPS);
    }
    prof_group_opts o;
    prof_group_opts_default(&o);
    o.seed = seed ? seed : 1;
    prof_grouping g;
    if (prof_group_nodes(pp, (size_t)c->nnodes, &o, &g, err) < 0) {
        free(pp);
        return -1;
    }
    c->ngroups = g.k;
    for (int i = 0; i < c->nnodes; i++) {
        const prof_group *gr = &g.groups[g.group_of[i]];
        c->nodes[i].group = gr->id - 1;
        c->nodes[i].label[LAB_CPU] = gr->label[PROF_L_CPU];
        c->nodes[i].label[LAB_MEM] = gr->label[PROF_L_MEM];
        c->nodes[i].label[LAB_IO] = gr->label[PROF_L_IO];
    }
    prof_grouping_free(&g);
    free(pp);
    return 0;
}
