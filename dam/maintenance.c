/* maintenance.c: merge maintenance windows and find the one a job would run into. */
#include "dam/maintenance.h"

static void sort_by_start(dam_window *w, size_t n) {
    /* insertion sort: a cluster has a handful of windows, and it is stable */
    for (size_t i = 1; i < n; i++) {
        dam_window v = w[i];
        size_t j = i;
        while (j > 0 && (w[j - 1].start_s > v.start_s ||
                         (w[j - 1].start_s == v.start_s && w[j - 1].end_s > v.end_s))) {
            w[j] = w[j - 1];
            j--;
        }
        w[j] = v;
    }
}

size_t dam_windows_merge(const dam_window *in, size_t n, dam_window *out, size_t *merged) {
    for (size_t i = 0; i < n; i++)
        out[i] = in[i];
    sort_by_start(out, n);
    size_t k = 0, folded = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && out[i].start_s < out[k - 1].end_s) {
            if (out[i].end_s > out[k - 1].end_s)
                out[k - 1].end_s = out[i].end_s;
            folded++;
        } else {
            out[k++] = out[i];
        }
    }
    if (merged)
        *merged = folded;
    return k;
}

const dam_window *dam_windows_hit(const dam_window *w, size_t n, double from, double to) {
    for (size_t i = 0; i < n; i++)
        if (w[i].start_s < to && w[i].end_s > from)
            return &w[i];
    return NULL;
}
