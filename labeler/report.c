/* report.c: see report.h. */
#include "labeler/report.h"

#include <math.h>
#include <string.h>

json_t *lab_json_num_or_null(double v) {
    return isnan(v) ? json_null() : json_real(v);
}

static double total_cores(const lab_classes *c) {
    double total = 0;
    for (int i = 0; i < c->n; i++)
        total += c->cores[i];
    return total;
}

json_t *lab_report_shares(const lab_classes *c) {
    json_t *shares = json_array();
    double total = total_cores(c);
    for (int i = 0; i < c->n; i++)
        json_array_append_new(shares, json_real(c->cores[i] / total));
    return shares;
}

json_t *lab_report_bounds(const lab_labeling *l, lab_feature f) {
    json_t *bounds = json_array();
    for (int i = 0; i < l->nbounds[f]; i++)
        json_array_append_new(bounds, json_real(l->bounds[f][i]));
    return bounds;
}

static json_t *feature_json(const lab_labeling *l, lab_feature f) {
    json_t *cores = json_array();
    for (int i = 0; i < l->classes[f].n; i++)
        json_array_append_new(cores, json_real(l->classes[f].cores[i]));
    return json_pack("{s:o, s:o, s:o, s:I}", "classCores", cores, "shares",
                     lab_report_shares(&l->classes[f]), "bounds", lab_report_bounds(l, f),
                     "samples", (json_int_t)l->nvalues[f]);
}

json_t *lab_report_json(const lab_labeling *l, const char *workflow, const char *process) {
    json_t *features = json_object(), *procs = json_array();
    for (int f = 0; f < LAB_NFEATURES; f++)
        json_object_set_new(features, lab_feature_name((lab_feature)f),
                            feature_json(l, (lab_feature)f));
    for (size_t i = 0; i < l->nprocs; i++) {
        const lab_process_label *p = &l->procs[i];
        if (process && strcmp(process, p->process) != 0)
            continue;
        json_t *labels = json_object(), *est = json_object();
        for (int f = 0; f < LAB_NFEATURES; f++) {
            const char *fn = lab_feature_name((lab_feature)f);
            json_object_set_new(labels, fn, p->label[f] ? json_integer(p->label[f]) : json_null());
            json_object_set_new(est, fn, lab_json_num_or_null(p->mean[f]));
        }
        json_array_append_new(procs, json_pack("{s:s, s:I, s:o, s:o, s:o}", "process", p->process,
                                               "runs", (json_int_t)p->runs, "labels", labels,
                                               "estimates", est, "meanRealtimeMs",
                                               lab_json_num_or_null(p->mean_realtime_ms)));
    }
    return json_pack("{s:s, s:o, s:o}", "workflow", workflow, "features", features, "processes",
                     procs);
}

static const char *const units[LAB_NFEATURES] = {"%cpu", "bytes peak_rss", "bytes rchar+wchar"};

int lab_report_text(FILE *out, const lab_labeling *l, const char *workflow, const char *process) {
    fprintf(out, "workflow %s\n", workflow);
    for (int f = 0; f < LAB_NFEATURES; f++) {
        const lab_classes *c = &l->classes[f];
        double total = total_cores(c);
        fprintf(out, "  %-3s n=%d core shares", lab_feature_name((lab_feature)f), c->n);
        for (int i = 0; i < c->n; i++)
            fprintf(out, " %.3f", c->cores[i] / total);
        if (l->nbounds[f] < 0) {
            fprintf(out, "; no samples, unlabeled\n");
            continue;
        }
        fprintf(out, "; %ld samples; bounds (%s):", l->nvalues[f], units[f]);
        for (int i = 0; i < l->nbounds[f]; i++)
            fprintf(out, " %.6g", l->bounds[f][i]);
        fprintf(out, "%s\n", l->nbounds[f] == 0 ? " none (one class)" : "");
    }
    fprintf(out, "%-50s %5s %3s %3s %3s %12s %14s %14s %12s\n", "process", "runs", "cpu", "mem",
            "io", "est %cpu", "est peak_rss", "est io", "mean rt ms");
    int printed = 0;
    for (size_t i = 0; i < l->nprocs; i++) {
        const lab_process_label *p = &l->procs[i];
        if (process && strcmp(process, p->process) != 0)
            continue;
        char lab[LAB_NFEATURES][8];
        for (int f = 0; f < LAB_NFEATURES; f++)
            snprintf(lab[f], sizeof lab[f], "%s", "-");
        for (int f = 0; f < LAB_NFEATURES; f++)
            if (p->label[f])
                snprintf(lab[f], sizeof lab[f], "%d", p->label[f]);
        fprintf(out, "%-50s %5ld %3s %3s %3s %12.6g %14.6g %14.6g %12.6g\n", p->process, p->runs,
                lab[0], lab[1], lab[2], p->mean[0], p->mean[1], p->mean[2], p->mean_realtime_ms);
        printed++;
    }
    return printed;
}
