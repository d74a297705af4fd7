/* spool.h: a durable on-disk FIFO of weblog events, for when the database is down.
 *
 * Records are single lines (compact JSON) appended to <dir>/events.log and fdatasync'ed before
 * lab_spool_append returns, so an event acknowledged to Nextflow survives a crash. The read
 * position is kept in <dir>/events.offset; a record is consumed (lab_spool_ack) only after it
 * has been stored, and storing is idempotent, so a crash between the two replays the record
 * without duplicating it. When everything is consumed the log is truncated to zero. A torn
 * last line (crash mid-append, never acknowledged) is dropped on open. Thread-safe. */
#ifndef TAREMA_LABELER_SPOOL_H
#define TAREMA_LABELER_SPOOL_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"

typedef struct lab_spool lab_spool;

/* Opens or creates the spool in dir (created if missing). Free with lab_spool_close. */
lab_spool *lab_spool_open(const char *dir, tm_err *err);
void lab_spool_close(lab_spool *sp);

/* Appends one record (must not contain '\n') durably. */
int lab_spool_append(lab_spool *sp, const char *rec, size_t len, tm_err *err);

/* The oldest unconsumed record: 1 and *rec (caller frees) when there is one, 0 when the spool
 * is empty, -1 with err on a read error. Does not consume it. */
int lab_spool_peek(lab_spool *sp, char **rec, tm_err *err);

/* Consumes the record last returned by lab_spool_peek. */
int lab_spool_ack(lab_spool *sp, tm_err *err);

/* Records appended and not yet consumed. */
long lab_spool_pending(lab_spool *sp);

/* Calls fn with each unconsumed record in order (NUL-terminated, borrowed for the call), e.g.
 * to rebuild in-memory state at start. Appends wait meanwhile. 0, or -1 with err. */
int lab_spool_foreach(lab_spool *sp, void (*fn)(void *ud, const char *rec), void *ud, tm_err *err);

#endif
