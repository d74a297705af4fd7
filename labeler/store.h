/* store.h: the labeler's task-run store in PostgreSQL (schema: labeler/migrations/).
 *
 * Writes go through COPY into a session-local staging table and one INSERT ... ON CONFLICT, so
 * a batch is one transaction, bulk loads are fast, and storing a run twice updates it instead
 * of duplicating it. A store is one connection: use it from one thread at a time. */
#ifndef TAREMA_LABELER_STORE_H
#define TAREMA_LABELER_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "labeler/labels.h"
#include "labeler/run_tail.h"
#include "labeler/taskrun.h"
#include "lib/error.h"
#include "lib/pg.h"

typedef struct lab_store lab_store;

/* Connects (conninfo: URI or "" for the PG* variables) and applies pending migrations.
 * Free with lab_store_close. */
lab_store *lab_store_open(const char *conninfo, tm_err *err);
/* The same with limits on waiting for the server (lib/pg.h), for a store a server process
 * uses: migrations and every statement run under them. lim NULL = none. */
lab_store *lab_store_open_limited(const char *conninfo, const tm_pg_limits *lim, tm_err *err);
void lab_store_close(lab_store *s);

/* Is the connection up? Reconnects once when it is not. */
bool lab_store_ensure(lab_store *s);
/* Is the connection up, without trying to reconnect? A failed statement on a live connection
 * is the statement's fault; on a dead one it is worth retrying later. */
bool lab_store_connected(const lab_store *s);
/* Should the operation that failed with err be retried later (see tm_pg_err_retryable)? */
bool lab_store_retryable(const lab_store *s, const tm_err *err);

/* Stores runs[0..n) in one transaction; source is "trace" or "weblog". *inserted and
 * *updated (optional) get how many runs were new and how many replaced a stored one. Runs
 * with neither hash nor task_id must have been rejected by the caller. The same transaction
 * sends a NOTIFY on LAB_STORE_CHANNEL with each workflow it touched, so a labeler serving
 * elsewhere relabels them at once (see lab_store_listen). */
int lab_store_put_runs(lab_store *s, const lab_task_run *runs, size_t n, const char *source,
                       long *inserted, long *updated, tm_err *err);

/* The PostgreSQL notification channel of new runs; the payload is the workflow. */
#define LAB_STORE_CHANNEL "tarema_task_runs"

/* LISTENs on LAB_STORE_CHANNEL on this connection (again after every reconnect). */
int lab_store_listen(lab_store *s, tm_err *err);
/* Reads what the server sent without blocking and calls fn for each notified workflow.
 * Returns how many, or -1 with err when the connection is broken. */
int lab_store_notifications(lab_store *s, void (*fn)(void *ud, const char *workflow), void *ud,
                            tm_err *err);

/* Remembers which workflow a weblog run belongs to (upsert). started_ms may be LAB_NONE. */
int lab_store_put_weblog_run(lab_store *s, const char *run_id, const char *run_name,
                             const char *workflow, long long started_ms, tm_err *err);
/* The workflow of a weblog run: 1 found (copied to out), 0 unknown, -1 error. */
int lab_store_weblog_workflow(lab_store *s, const char *run_id, char *out, size_t size,
                              tm_err *err);

/* Marks a weblog run complete (completed_ms: the event's utcTime, LAB_NONE = now) and NOTIFYs
 * its workflow on LAB_STORE_CHANNEL, so its tails get published. 1 marked, 0 unknown run, -1
 * error. */
int lab_store_weblog_run_completed(lab_store *s, const char *run_id, long long completed_ms,
                                   tm_err *err);

/* Every weblog run known (run_id, workflow), for callers that check events without asking the
 * database each time. Returns how many, or -1 with err. */
int lab_store_weblog_runs(lab_store *s,
                          void (*fn)(void *ud, const char *run_id, const char *workflow), void *ud,
                          tm_err *err);

/* A workflow's completed runs as labelling samples. The process strings are owned by the
 * returned set; free it with lab_samples_free. */
typedef struct lab_samples {
    lab_sample *v;
    const char **group; /* per sample: the node group it ran on, NULL when unknown */
    size_t n;
    void *owner; /* the query result the strings point into */
} lab_samples;
int lab_store_samples(lab_store *s, const char *workflow, lab_samples *out, tm_err *err);
void lab_samples_free(lab_samples *smp);

/* The tasks of a workflow's complete runs with a completion time, as run_tail.h rows. A run is
 * complete when its weblog run was marked so (lab_store_weblog_run_completed), or when none of
 * its tasks came through the weblog: a trace file is ingested after its run and holds the
 * whole run. Strings owned by the set; free with lab_tail_rows_free. */
typedef struct lab_tail_rows {
    lab_tail_row *v;
    size_t n;
    void *owner;
} lab_tail_rows;
int lab_store_tail_rows(lab_store *s, const char *workflow, lab_tail_rows *out, tm_err *err);
void lab_tail_rows_free(lab_tail_rows *t);

/* Workflows with runs stored after `since` (an SQL timestamptz text, "" = all) into a
 * NULL-terminated array the caller frees with lab_strv_free; *now_out gets the server time
 * to pass as `since` next time (buffer of 64 bytes). */
char **lab_store_changed_workflows(lab_store *s, const char *since, char *now_out, tm_err *err);
void lab_strv_free(char **v);

/* Number of stored runs of a workflow (all statuses); -1 with err on failure. */
long lab_store_count(lab_store *s, const char *workflow, tm_err *err);

#endif
