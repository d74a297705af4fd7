/* store.h: the DAM service's requests in PostgreSQL, so that a restart keeps them and an
 * acknowledged request is never lost (the INSERT commits synchronously before the 202).
 *
 * One row per request: id, state and the whole record as JSON (docs/dam.md, "REST API"):
 *   {"id", "state", "created", "updated", "job", "submit", "failed_on", "result", "error",
 *    "submission": {"state", "cluster", "attempts": [{"cluster", "outcome", "reason"}]}}
 * States: PENDING (accepted, not ranked yet), DONE (ranked: result holds the ranking),
 * ERROR (the request cannot be ranked; error says why), DELETED (being removed: its pods are
 * deleted, then the row). A submitted request stays DONE; its submission has its own state.
 *
 * A connection is not thread-safe: the store serialises its calls with a mutex, so HTTP
 * handlers and the worker may share one. */
#ifndef TAREMA_DAM_STORE_H
#define TAREMA_DAM_STORE_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/error.h"

typedef struct dam_store dam_store;

/* Connects (synchronous commit, statement timeout timeout_ms) and migrates. NULL with err. */
dam_store *dam_store_open(const char *conninfo, int timeout_ms, tm_err *err);
void dam_store_close(dam_store *s);
/* A cheap round trip: is the database usable now? */
bool dam_store_ping(dam_store *s);

/* Inserts a new record (its "id" and "state" are the row's). 0 or -1. */
int dam_store_insert(dam_store *s, const json_t *rec, tm_err *err);
/* Replaces a record by its id. 0, 1 when no such row, -1 on error. */
int dam_store_update(dam_store *s, const json_t *rec, tm_err *err);
/* The record, or NULL: *found 0 when there is none (err unset), 1 otherwise. */
json_t *dam_store_get(dam_store *s, const char *id, int *found, tm_err *err);
/* Deletes the row. 0 or -1. */
int dam_store_delete(dam_store *s, const char *id, tm_err *err);
/* The records the worker must act on: PENDING, DELETED, and DONE ones whose submission is
 * RUNNING; oldest first. New array, or NULL with err. */
json_t *dam_store_active(dam_store *s, tm_err *err);
/* How many rows per state: {"PENDING": n, ...}. New object or NULL. */
json_t *dam_store_counts(dam_store *s, tm_err *err);

#endif
