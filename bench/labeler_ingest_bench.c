/* labeler_ingest_bench.c: bulk ingest of a 100,000-row Nextflow trace (target: under 5 s),
 * re-ingest of the same file (the idempotent update path) and labelling of the result.
 *
 * Needs PostgreSQL: DATABASE_URL or the PG* variables (hack/postgres.sh up; eval "$(bash
 * hack/postgres.sh env)"). Writes into a workflow named bench-<pid> and deletes it afterwards.
 * Prints figures; asserts nothing about time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "labeler/ingest.h"
#include "labeler/labels.h"
#include "labeler/store.h"
#include "lib/pg.h"

#define ROWS 100000

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Human-readable rows (the harder format to parse) over 14 chipseq-like processes. */
static void write_trace(FILE *f) {
    static const char *procs[] = {"FASTQC",   "TRIMGALORE",     "BWA_MEM",
                                  "SORT_BAM", "MERGED_BAM",     "MERGED_BAM_FILTER",
                                  "PRESEQ",   "PICARD_METRICS", "PHANTOMPEAKQUALTOOLS",
                                  "BIGWIG",   "PLOTPROFILE",    "PLOTFINGERPRINT",
                                  "MACS2",    "MACS2_ANNOTATE"};
    fputs("task_id\thash\tnative_id\tprocess\tname\tstatus\texit\tcpus\tmemory\tattempt\tsubmit\t"
          "start\tcomplete\tduration\trealtime\t%cpu\tpeak_rss\tpeak_vmem\trchar\twchar\t"
          "read_bytes\twrite_bytes\thostname\n",
          f);
    unsigned seed = 12345;
    for (int i = 1; i <= ROWS; i++) {
        int p = i % 14;
        seed = seed * 1103515245u + 12345u;
        double jitter = 0.5 + (double)(seed >> 16 & 0x7fff) / 32768.0;
        int rt_s = (int)((30 + p * 40) * jitter);
        fprintf(f,
                "%d\t%02x/%06x\tnf-%d\tNFCORE_CHIPSEQ:CHIPSEQ:%s\tNFCORE_CHIPSEQ:CHIPSEQ:%s "
                "(S%d)\tCOMPLETED\t0\t%d\t%d GB\t1\t2023-05-01 12:%02d:%02d.%03d\t"
                "2023-05-01 12:%02d:%02d.%03d\t2023-05-01 13:%02d:%02d.000\t%dm %ds\t%dm %ds\t"
                "%.1f%%\t%.1f MB\t%.1f GB\t%.1f GB\t%.1f MB\t%.1f MB\t%.1f MB\tnode-%d\n",
                i, i & 0xff, (unsigned)(i * 2654435761u) & 0xffffff, i, procs[p], procs[p], i,
                1 + p % 6, 2 + p % 8, i / 60 % 60, i % 60, i % 1000, i / 60 % 60, i % 60,
                (i + 500) % 1000, rt_s / 60 % 60, rt_s % 60, rt_s / 60, rt_s % 60 + 1, rt_s / 60,
                rt_s % 60, 90.0 + 50.0 * p * jitter, 200.0 * (1 + p) * jitter, 4.2 * jitter,
                0.3 * (1 + p % 5) * jitter, 50.0 * jitter, 20.0 * jitter, 5.0 * jitter, i % 15);
    }
}

int main(void) {
    const char *db = getenv("DATABASE_URL");
    tm_err err = {{0}, 0};
    lab_store *s = lab_store_open(db, &err);
    if (!s) {
        fprintf(stderr,
                "labeler_ingest_bench: needs PostgreSQL (bash hack/postgres.sh up; eval "
                "\"$(bash hack/postgres.sh env)\"): %s\n",
                err.msg);
        return 1;
    }
    char wf[64], path[] = "/tmp/labeler-bench-XXXXXX";
    snprintf(wf, sizeof wf, "bench-%d", (int)getpid());
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
    if (!f) {
        fprintf(stderr, "labeler_ingest_bench: cannot create a temporary file\n");
        lab_store_close(s);
        return 1;
    }
    double t0 = now_s();
    write_trace(f);
    fflush(f);
    long size = ftell(f);
    double t_gen = now_s() - t0;
    int rc = 0;
    lab_ingest_stats st;
    double t_ingest = 0, t_reingest = 0, t_label = 0;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        rewind(f);
        t0 = now_s();
        rc = lab_ingest_trace(s, f, path, wf, "bench-run", &st, &err);
        double dt = now_s() - t0;
        *(pass ? &t_reingest : &t_ingest) = dt;
        if (rc == 0)
            printf("labeler ingest pass %d: %ld rows (%ld new, %ld updated, %ld skipped) in %.2f s "
                   "= %.0f rows/s\n",
                   pass + 1, st.stored, st.inserted, st.updated, st.skipped, dt,
                   (double)st.stored / dt);
    }
    if (rc == 0) {
        lab_samples smp;
        lab_classes cls[LAB_NFEATURES] = {{3, {20, 20, 40}}, {3, {20, 20, 40}}, {2, {40, 40}}};
        t0 = now_s();
        if (lab_store_samples(s, wf, &smp, &err) == 0) {
            lab_labeling *l = lab_label_compute(smp.v, smp.n, cls, &err);
            t_label = now_s() - t0;
            printf("labeler label: %zu samples, %zu processes, query + labels in %.3f s\n", smp.n,
                   l ? l->nprocs : 0, t_label);
            lab_labeling_free(l);
            lab_samples_free(&smp);
        } else {
            rc = -1;
        }
    }
    if (rc < 0)
        fprintf(stderr, "labeler_ingest_bench: %s\n", err.msg);
    printf("labeler ingest summary: generated %d rows (%.1f MB) in %.2f s; ingest %.2f s "
           "(target < 5 s for 100000 rows: %s); re-ingest %.2f s\n",
           ROWS, (double)size / 1e6, t_gen, t_ingest, t_ingest < 5 ? "met" : "MISSED", t_reingest);
    /* Clean up so repeated runs measure the same thing. */
    fclose(f);
    unlink(path);
    lab_store_close(s);
    PGconn *c = tm_pg_connect(db, &err);
    const char *params[] = {wf};
    if (c)
        tm_pg_run(c, "DELETE FROM task_runs WHERE workflow = $1", 1, params, &err);
    tm_pg_close(c);
    return rc < 0 ? 1 : 0;
}
