/* report.c: see report.h. */
#include "profiler/report.h"

#include <math.h>

void prof_report_table(FILE *f, const prof_grouping *g, const prof_profile *profiles) {
    fprintf(f, "%zu nodes, k=%d: %s\n", g->n, g->k, g->reason);
    if (g->k_tried_max >= 2) {
        fprintf(f, "silhouette:");
        for (int k = 2; k <= g->k_tried_max; k++) {
            if (isnan(g->silhouette[k]))
                fprintf(f, " k=%d -", k);
            else
                fprintf(f, " k=%d %.3f%s", k, g->silhouette[k], g->separated[k] ? "" : "*");
        }
        fprintf(f, "   (* groups not all distinguishable beyond noise)\n");
    }
    fprintf(f, "\n%-5s %5s %6s", "group", "nodes", "cores");
    for (int j = 0; j < g->nfeatures; j++)
        fprintf(f, " %12s", prof_feature_name(g->features[j]));
    fprintf(f, "   cpu mem io\n");
    for (int i = 0; i < g->k; i++) {
        const prof_group *gr = &g->groups[i];
        fprintf(f, "%-5d %5zu %6lld", gr->id, gr->nmembers, gr->total_cores);
        for (int j = 0; j < g->nfeatures; j++)
            fprintf(f, " %12.1f", gr->centroid[j]);
        fprintf(f, "  ");
        for (int l = 0; l < PROF_L_COUNT; l++) {
            if (gr->label[l])
                fprintf(f, " %3d", gr->label[l]);
            else
                fprintf(f, "   -");
        }
        fprintf(f, "\n");
    }
    for (int i = 0; i < g->k; i++) {
        const prof_group *gr = &g->groups[i];
        fprintf(f, "\ngroup %d:", gr->id);
        for (size_t m = 0; m < gr->nmembers; m++)
            fprintf(f, "%s%s", m ? ", " : " ", profiles[gr->members[m]].node);
    }
    fprintf(f, "\n");
}
