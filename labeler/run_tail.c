/* run_tail.c: see run_tail.h. */
#include "labeler/run_tail.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows in (run, process) order, rows without a completion time left out. */
static int cmp_row(const void *a, const void *b) {
    const lab_tail_row *x = *(const lab_tail_row *const *)a, *y = *(const lab_tail_row *const *)b;
    int c = strcmp(x->run, y->run);
    return c ? c : strcmp(x->process, y->process);
}

static int cmp_tail(const void *a, const void *b) {
    return strcmp(((const lab_tail *)a)->process, ((const lab_tail *)b)->process);
}

/* The accumulator of process in acc[0..*na): sum of per-run tails in mean_s until the end. */
static lab_tail *acc_of(lab_tail *acc, size_t *na, const char *process) {
    for (size_t k = *na; k-- > 0;)
        if (strcmp(acc[k].process, process) == 0)
            return &acc[k];
    acc[*na] = (lab_tail){process, 0, 0};
    return &acc[(*na)++];
}

lab_tail *lab_run_tails(const lab_tail_row *rows, size_t n, size_t *nout, tm_err *err) {
    *nout = 0;
    const lab_tail_row **ord = malloc((n ? n : 1) * sizeof *ord);
    lab_tail *acc = malloc((n ? n : 1) * sizeof *acc);
    if (!ord || !acc) {
        free(ord);
        free(acc);
        tm_err_set(err, "tails of %zu task runs: out of memory", n);
        return NULL;
    }
    size_t m = 0, na = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].run && rows[i].process && isfinite(rows[i].complete_ms))
            ord[m++] = &rows[i];
    qsort(ord, m, sizeof *ord, cmp_row);
    for (size_t i = 0; i < m;) {
        size_t j = i;
        double end = ord[i]->complete_ms;
        while (j < m && strcmp(ord[j]->run, ord[i]->run) == 0) {
            if (ord[j]->complete_ms > end)
                end = ord[j]->complete_ms;
            j++;
        }
        /* [i, j) is one run; within it, one process after another */
        for (size_t p = i; p < j;) {
            size_t q = p, k = 0;
            double sum = 0;
            while (q < j && strcmp(ord[q]->process, ord[p]->process) == 0) {
                if (ord[q]->completed) {
                    sum += end - ord[q]->complete_ms;
                    k++;
                }
                q++;
            }
            if (k) {
                lab_tail *t = acc_of(acc, &na, ord[p]->process);
                t->mean_s += sum / (double)k / 1000.0;
                t->runs++;
            }
            p = q;
        }
        i = j;
    }
    free(ord);
    for (size_t k = 0; k < na; k++)
        acc[k].mean_s /= (double)acc[k].runs;
    qsort(acc, na, sizeof *acc, cmp_tail);
    *nout = na;
    return acc;
}

const lab_tail *lab_run_tail_find(const lab_tail *tails, size_t n, const char *process) {
    lab_tail key = {process, 0, 0};
    return process ? bsearch(&key, tails, n, sizeof *tails, cmp_tail) : NULL;
}
