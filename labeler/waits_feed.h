/* waits_feed.h: the labeler's queue-wait feed (issue 18, docs/asa.md). A thread of its own with
 * its own API client and database connection: it watches every pod in the cluster (list/watch
 * pods), turns pods being bound into observed waits (labeler/waits_track.h), feeds each to its
 * shape's ASA learner in PostgreSQL (labeler/waits_store.h), and writes on every pending pod
 * when it is predicted to start (LAB_WAITS_ANN_START = queued time + the estimate for its
 * shape), refreshed when the estimate moves by more than a slot.
 *
 * Observations made while the database is down wait in memory (at most
 * LAB_WAITS_FEED_BACKLOG, the oldest dropped with a warning) and are written when it is back. */
#ifndef TAREMA_LABELER_WAITS_FEED_H
#define TAREMA_LABELER_WAITS_FEED_H

#include "lib/error.h"

#define LAB_WAITS_FEED_BACKLOG 10000

typedef struct lab_waits_feed_opts {
    const char *db;         /* conninfo; NULL/"" = PG* variables */
    const char *kubeconfig; /* NULL = in-cluster or $KUBECONFIG */
    int annotate;           /* write the predicted start on pending pods (needs pods/patch) */
    int slot_s;             /* refresh a prediction when it moves by more than this; 0 = 60 */
    int db_timeout_s;       /* statement limit; 0 = 10 */
} lab_waits_feed_opts;

typedef struct lab_waits_feed lab_waits_feed;

/* Starts the feed's thread (opts is copied). NULL with err when the client cannot be made. */
lab_waits_feed *lab_waits_feed_start(const lab_waits_feed_opts *o, tm_err *err);
/* Stops the thread and frees everything. */
void lab_waits_feed_stop(lab_waits_feed *f);

#endif
