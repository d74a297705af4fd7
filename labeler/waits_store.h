/* waits_store.h: the learned queue waits in PostgreSQL (tables asa_waits and asa_observed,
 * labeler/migrations/004_asa_waits.sql): one row per job shape holding its ASA learner and
 * record (labeler/waits.h), and the ids of the requests already fed.
 *
 * Every observation is one transaction: the request id is claimed (a request already fed is
 * skipped, so a restarted feed that lists the cluster again counts nothing twice), the shape's
 * row is locked (created fresh first if absent, so concurrent writers serialise on it), the
 * learner updated and written back. A row that cannot be read (corrupt or absurd state) is
 * ignored with a warning: reads skip it, the next observation of its shape starts it afresh.
 * One connection: use a store from one thread at a time. */
#ifndef TAREMA_LABELER_WAITS_STORE_H
#define TAREMA_LABELER_WAITS_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "labeler/waits.h"
#include "lib/error.h"
#include "lib/pg.h"

typedef struct lab_waits_store lab_waits_store;

/* Where a store reports rows it ignored (one message each). */
typedef void (*lab_waits_warn_fn)(void *ud, const char *msg);

/* Connects (conninfo: URI or "" for the PG* variables; lim NULL for no limits) and applies the
 * labeler's pending migrations. warn (may be NULL) hears of rows ignored. */
lab_waits_store *lab_waits_store_open(const char *conninfo, const tm_pg_limits *lim,
                                      lab_waits_warn_fn warn, void *ud, tm_err *err);
void lab_waits_store_close(lab_waits_store *s);
/* Is the connection up? Reconnects once when it is not. */
bool lab_waits_store_ensure(lab_waits_store *s);
/* Should the operation that failed with err be retried later (connection trouble)? */
bool lab_waits_store_retryable(const lab_waits_store *s, const tm_err *err);

/* Feeds the wait of request `request_id` (at most 200 bytes) of shape k. A gang passes its
 * members' uids separated by single spaces (NULL for a pod): it is claimed by them, so it counts
 * once however its id or bound time is seen again. A censored request (waits_track.h) is only
 * claimed: nothing is fed, 0 is returned. Returns 1 when fed (*out, optional, gets the
 * shape's record afterwards), 0 when that request (or one of the members) was fed before
 * (nothing changes), -1 with err (nothing changes). */
int lab_waits_store_observe(lab_waits_store *s, const asa_key *k, const char *request_id,
                            const char *members, bool censored, double wait_s,
                            const asa_config *cfg, asa_rng *rng, waits_record *out, tm_err *err);

/* Every readable record, of namespace ns only when ns is non-NULL, ordered by namespace, node
 * group and shape, into *out (malloc'd array, the caller frees) and *n. 0, or -1 with err. */
int lab_waits_store_list(lab_waits_store *s, const char *ns, waits_record **out, size_t *n,
                         tm_err *err);

/* Forgets request ids fed more than two days ago (the feed counts requests bound within the
 * last day, so none of them can come back). Returns how many, or -1 with err. */
long lab_waits_store_prune(lab_waits_store *s, tm_err *err);

#endif
