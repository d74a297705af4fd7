/* pg.h: PostgreSQL helpers over libpq: connect, parameterised statements, COPY, transactions
 * and a versioned migrations runner. Generic; nothing here knows any tarema table.
 *
 * Every statement with values goes through PQexecParams (text parameters), never through
 * string concatenation. Errors carry the server's message and SQLSTATE. A PGconn is not
 * thread-safe: one thread at a time per connection (libpq's rule). */
#ifndef TAREMA_PG_H
#define TAREMA_PG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Default limits on waiting for the server, unless the conninfo (or PGCONNECT_TIMEOUT) sets
 * them: connecting, and a statement on a connection whose peer went silent. */
#define TM_PG_CONNECT_TIMEOUT_S   "5"
#define TM_PG_TCP_USER_TIMEOUT_MS "10000"

/* Connects with a URI or key=value conninfo ("postgresql://u@h:5432/db"); NULL or "" uses
 * libpq's defaults, i.e. the standard PG* environment variables (PGHOST, PGPORT, PGUSER,
 * PGDATABASE, PGPASSWORD, ...). Adds the timeouts above and TCP keepalives, so a server that
 * stops answering is an error within seconds, not a thread blocked for minutes. Returns NULL
 * with err (never a half-open connection). Close with tm_pg_close. */
PGconn *tm_pg_connect(const char *conninfo, tm_err *err);
void tm_pg_close(PGconn *c);

/* Limits for a connection that must never hold its thread long (a server process receiving
 * data while PostgreSQL hangs). 0 leaves a limit unset.
 *   statement_ms: the server's statement_timeout;
 *   lock_ms:      the server's lock_timeout (a table lock held elsewhere fails fast);
 *   answer_ms:    the client's own limit on waiting for any answer. A hung server (SIGSTOPped,
 *                 swapped out) enforces no statement_timeout, and its kernel still ACKs, so
 *                 neither TCP timeouts nor keepalives fire: past this limit the connection is
 *                 shut down and the statement fails as "connection lost" (retryable). */
typedef struct tm_pg_limits {
    int statement_ms, lock_ms, answer_ms;
    /* synchronous_commit=on for this session whatever the server's default: for a caller that
     * discards its own copy of the data once COMMIT returns (a server set to `off` can lose
     * the last commits in a crash after acknowledging them). */
    bool sync_commit;
} tm_pg_limits;

/* tm_pg_connect with limits; the server limits ride in the startup packet (`options`), so they
 * also hold after a PQreset. The conninfo's own settings still win. */
PGconn *tm_pg_connect_limited(const char *conninfo, const tm_pg_limits *lim, tm_err *err);

/* Is the connection usable? When it is not, tries one PQreset. */
bool tm_pg_ensure(PGconn *c);

/* Runs one statement with text parameters (params[i] NULL is SQL NULL). Returns the result
 * (caller PQclear()s) on success, NULL with err "<what>: <server message> (SQLSTATE x)". */
PGresult *tm_pg_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
                     tm_err *err);
/* Like tm_pg_exec but discards the result: 0 or -1. */
int tm_pg_run(PGconn *c, const char *sql, int nparams, const char *const *params, tm_err *err);

/* Is the failure that filled err worth retrying later (connection lost, server shutting down
 * or starting, out of resources, serialization failure), as opposed to a problem with the
 * statement or its data (SQLSTATE classes 22, 23, 42) that would fail again? Reads the
 * "(SQLSTATE x)" these helpers put in err and the connection state. */
bool tm_pg_err_retryable(const PGconn *c, const tm_err *err);

int tm_pg_begin(PGconn *c, tm_err *err);
int tm_pg_commit(PGconn *c, tm_err *err);
/* Rolls back, ignoring errors (the connection may already be gone). */
void tm_pg_rollback(PGconn *c);

/* Runs `copy_sql` (a "COPY ... FROM STDIN" statement) and sends data[0..len) as its input. */
int tm_pg_copy_in(PGconn *c, const char *copy_sql, const char *data, size_t len, tm_err *err);

/* Appends s to a COPY text-format field with the escapes COPY needs (\\, \t, \n, \r). Returns
 * 0, or -1 when the buffer cannot grow. buf/len/cap describe a malloc'ed buffer the caller
 * frees. */
int tm_pg_copy_escape(char **buf, size_t *len, size_t *cap, const char *s);

typedef struct tm_pg_migration {
    int version;      /* strictly increasing, starting at 1 */
    const char *name; /* shown in logs and stored with the version */
    const char *sql;  /* one or more statements, no parameters */
} tm_pg_migration;

/* Applies the migrations whose version is above the database's, each in its own transaction
 * together with its row in schema_migrations(version, name, applied_at), under an advisory
 * lock so concurrent starts do not race. A database newer than the newest migration is an
 * error. *applied (optional) gets how many ran. These are the labeler's migrations (the task
 * history); another component sharing the database keeps its own versions with
 * tm_pg_migrate_set. */
int tm_pg_migrate(PGconn *c, const tm_pg_migration *m, size_t n, int *applied, tm_err *err);

/* The same for a component's own series of migrations, numbered from 1 independently of the
 * labeler's and recorded in table <set>_schema_migrations (set: [a-z_]{1,40}, e.g. "dam"), so
 * components that share one database never read each other's versions. */
int tm_pg_migrate_set(PGconn *c, const char *set, const tm_pg_migration *m, size_t n, int *applied,
                      tm_err *err);

#endif
