/* bench.h: measures one node: sysbench CPU (one and all threads) and memory, fio sequential
 * and random read/write, and static facts (lscpu, memory, storage, kernel), with the tarema
 * paper's parameters, into one NodeProfile document (see nodeprofile.h). */
#ifndef TAREMA_PROFILER_BENCH_H
#define TAREMA_PROFILER_BENCH_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/error.h"

typedef struct prof_bench_opts {
    const char *node; /* name recorded in the profile; NULL or "": the host name */
    bool quick;       /* small sizes and 1 s runs (tests, demo) instead of the full profile */
    const char *dir;  /* where fio puts its test file; NULL: /var/tmp */
    int threads;      /* threads of the multi-thread CPU run; 0: online CPUs */
    /* fio file size ("4g") and seconds per fio job (10); NULL/0: the defaults, or 64m and 1 s
     * with quick. Laying out the file writes it once, so on a slow disk (60 MB/s) 4g alone
     * takes about 70 s: a smaller size keeps such nodes within the time budget. */
    const char *fio_size;
    int fio_runtime;
    const char *sysbench; /* program names; NULL: "sysbench", "fio", "lscpu", "lsblk" */
    const char *fio;
    const char *lscpu;
    const char *lsblk;
    /* Progress callback (e.g. a log line per step); may be NULL. */
    void (*progress)(void *ud, const char *step);
    void *progress_ud;
} prof_bench_opts;

/* Runs every benchmark in turn. Returns a new NodeProfile object or NULL with err naming the
 * tool, what failed and, for unparsable output, the line. */
json_t *prof_bench_run(const prof_bench_opts *o, tm_err *err);

#endif
