/* taskprofile.c: see taskprofile.h. */
#include "labeler/taskprofile.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labeler/report.h"

static uint32_t fnv1a(uint32_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

void lab_taskprofile_name(const char *workflow, const char *process, char *out, size_t size) {
    char base[201];
    size_t n = 0;
    int dash = 1; /* suppress leading and repeated dashes */
    const char *parts[2] = {workflow, process};
    for (int p = 0; p < 2; p++) {
        for (const char *c = parts[p]; *c && n < sizeof base - 1; c++) {
            if (isalnum((unsigned char)*c)) {
                base[n++] = (char)tolower((unsigned char)*c);
                dash = 0;
            } else if (!dash) {
                base[n++] = '-';
                dash = 1;
            }
        }
        if (p == 0 && !dash && n < sizeof base - 1) {
            base[n++] = '-';
            dash = 1;
        }
    }
    while (n && base[n - 1] == '-')
        n--;
    base[n] = '\0';
    uint32_t h = fnv1a(2166136261u, workflow, strlen(workflow) + 1); /* +1: the NUL separates */
    h = fnv1a(h, process, strlen(process));
    snprintf(out, size, "%s%s%08x", base, n ? "-" : "tp-", h);
}

json_t *lab_taskprofile_status(const lab_labeling *l, const lab_process_label *p,
                               const char *now_rfc3339) {
    json_t *labels = json_object(), *groups = json_object(), *bounds = json_object();
    for (int f = 0; f < LAB_NFEATURES; f++) {
        const char *fn = lab_feature_name((lab_feature)f);
        json_object_set_new(labels, fn, p->label[f] ? json_integer(p->label[f]) : json_null());
        json_object_set_new(groups, fn,
                            json_pack("{s:i, s:o}", "n", l->classes[f].n, "shares",
                                      lab_report_shares(&l->classes[f])));
        json_object_set_new(bounds, fn, lab_report_bounds(l, (lab_feature)f));
    }
    json_t *mean =
        json_pack("{s:o, s:o, s:o, s:o}", "cpuPercent", lab_json_num_or_null(p->mean[LAB_CPU]),
                  "peakRssBytes", lab_json_num_or_null(p->mean[LAB_MEM]), "ioBytes",
                  lab_json_num_or_null(p->mean[LAB_IO]), "realtimeMs",
                  lab_json_num_or_null(p->mean_realtime_ms));
    return json_pack("{s:o, s:I, s:o, s:o, s:o, s:s}", "labels", labels, "runs",
                     (json_int_t)p->runs, "mean", mean, "groups", groups, "bounds", bounds,
                     "lastUpdate", now_rfc3339);
}

json_t *lab_taskprofile_object(const char *ns, const char *workflow, const char *process) {
    char name[256];
    lab_taskprofile_name(workflow, process, name, sizeof name);
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s, s:s}}", "apiVersion",
                     LAB_TP_GROUP_VERSION, "kind", "TaskProfile", "metadata", "name", name,
                     "namespace", ns, "labels", "app.kubernetes.io/managed-by", "tarema-labeler",
                     "spec", "workflow", workflow, "process", process);
}

int lab_taskprofile_publish(tm_kube *k, const char *ns, const char *workflow, const char *process,
                            const json_t *status, tm_err *err) {
    char name[256];
    lab_taskprofile_name(workflow, process, name, sizeof name);
    json_t *obj = lab_taskprofile_object(ns, workflow, process);
    char *coll = tm_kube_path(LAB_TP_GROUP_VERSION, LAB_TP_RESOURCE, ns, NULL, NULL);
    char *st = tm_kube_path(LAB_TP_GROUP_VERSION, LAB_TP_RESOURCE, ns, name, "status");
    int rc = -1;
    json_t *res = tm_kube_create(k, coll, obj, err);
    if (!res && err && err->http_status != 409) {
        tm_err_wrap(err, "creating TaskProfile %s/%s", ns, name);
        goto out;
    }
    json_decref(res);
    json_t *patch = json_pack("{s:O}", "status", status);
    res = tm_kube_patch(k, st, TM_PATCH_MERGE, patch, err);
    json_decref(patch);
    if (!res) {
        tm_err_wrap(err, "updating TaskProfile %s/%s status", ns, name);
        goto out;
    }
    json_decref(res);
    rc = 0;
out:
    json_decref(obj);
    free(coll);
    free(st);
    return rc;
}
