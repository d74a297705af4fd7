/* pg.c: see pg.h. */
#include "pg.h"

#include <libpq-events.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"

/* Server notices ("relation already exists, skipping") are routine: debug level only. */
static void on_notice(void *arg, const char *msg) {
    (void)arg;
    tm_debug("postgres notice: %.*s", (int)strcspn(msg, "\n"), msg);
}

/* libpq messages end in a newline; keep err one line. */
static int set_pg_err(tm_err *err, const char *what, const char *msg, const char *state) {
    char m[TM_ERR_MAX];
    snprintf(m, sizeof m, "%s", msg ? msg : "unknown error");
    size_t n = strlen(m);
    while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
        m[--n] = '\0';
    for (char *p = m; (p = strchr(p, '\n'));) { /* libpq: one line per address tried */
        *p++ = ';';
        if (*p == '\t')
            *p = ' ';
    }
    if (state)
        return tm_err_set(err, "%s: %s (SQLSTATE %s)", what, m, state);
    return tm_err_set(err, "%s: %s", what, m);
}

/* The client-side answer limit lives with the connection as libpq instance data of this event
 * procedure (freed when the connection is). */
static int limit_events(PGEventId id, void *info, void *pass) {
    (void)pass;
    if (id == PGEVT_CONNDESTROY) {
        const PGEventConnDestroy *d = info;
        free(PQinstanceData(d->conn, limit_events));
    }
    return 1;
}

static int answer_limit_ms(const PGconn *c) {
    const int *ms = c ? PQinstanceData(c, limit_events) : NULL;
    return ms ? *ms : 0;
}

static PGresult *exec_simple(PGconn *c, const char *sql, tm_err *err);

PGconn *tm_pg_connect_limited(const char *conninfo, const tm_pg_limits *lim, tm_err *err) {
    /* libpq waits forever by default: for an unreachable server at connect, and for a silent
     * peer (a network partition) on every statement until the kernel gives up, many minutes
     * later. Defaults first, the caller's conninfo last: libpq keeps the last value of a
     * keyword, so anything the caller sets wins (PGCONNECT_TIMEOUT too). */
    const char *keys[9], *vals[9];
    char options[128] = "";
    int n = 0;
    if (!getenv("PGCONNECT_TIMEOUT"))
        keys[n] = "connect_timeout", vals[n++] = TM_PG_CONNECT_TIMEOUT_S;
    keys[n] = "keepalives_idle", vals[n++] = "10";
    keys[n] = "keepalives_interval", vals[n++] = "5";
    keys[n] = "keepalives_count", vals[n++] = "3";
    keys[n] = "tcp_user_timeout", vals[n++] = TM_PG_TCP_USER_TIMEOUT_MS;
    if (lim && (lim->statement_ms > 0 || lim->lock_ms > 0 || lim->sync_commit)) {
        size_t o = 0;
        if (lim->sync_commit)
            o += (size_t)snprintf(options + o, sizeof options - o, "-c synchronous_commit=on ");
        if (lim->statement_ms > 0)
            o += (size_t)snprintf(options + o, sizeof options - o, "-c statement_timeout=%d ",
                                  lim->statement_ms);
        if (lim->lock_ms > 0)
            snprintf(options + o, sizeof options - o, "-c lock_timeout=%d", lim->lock_ms);
        keys[n] = "options", vals[n++] = options;
    }
    keys[n] = "dbname", vals[n++] = conninfo && *conninfo ? conninfo : NULL;
    keys[n] = NULL, vals[n] = NULL;
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c) {
        tm_err_set(err, "connecting to PostgreSQL: out of memory");
        return NULL;
    }
    if (PQstatus(c) != CONNECTION_OK) {
        set_pg_err(err, "connecting to PostgreSQL (check DATABASE_URL or PGHOST/PGPORT/PGUSER)",
                   PQerrorMessage(c), NULL);
        PQfinish(c);
        return NULL;
    }
    PQsetNoticeProcessor(c, on_notice, NULL);
    if (lim && lim->answer_ms > 0) {
        int *ms = malloc(sizeof *ms);
        if (!ms || !PQregisterEventProc(c, limit_events, "tarema-limits", NULL) ||
            !PQsetInstanceData(c, limit_events, ms)) {
            free(ms);
            PQfinish(c);
            tm_err_set(err, "connecting to PostgreSQL: cannot set the answer limit");
            return NULL;
        }
        *ms = lim->answer_ms;
    }
    /* Our own sessions never depend on the server's locale for numbers or times. The
     * synchronous commit is set again here: an `options` in the caller's conninfo replaces the
     * startup one above, and a caller that asked for it must not lose it silently. */
    PGresult *r =
        exec_simple(c,
                    lim && lim->sync_commit ? "SET client_encoding = 'UTF8'; SET TIME ZONE 'UTC'; "
                                              "SET synchronous_commit = on"
                                            : "SET client_encoding = 'UTF8'; SET TIME ZONE 'UTC'",
                    err);
    if (!r && PQstatus(c) != CONNECTION_OK) {
        tm_err_wrap(err, "connecting to PostgreSQL");
        PQfinish(c);
        return NULL;
    }
    PQclear(r);
    return c;
}

PGconn *tm_pg_connect(const char *conninfo, tm_err *err) {
    return tm_pg_connect_limited(conninfo, NULL, err);
}

void tm_pg_close(PGconn *c) {
    if (c)
        PQfinish(c);
}

bool tm_pg_ensure(PGconn *c) {
    if (!c)
        return false;
    if (PQstatus(c) == CONNECTION_OK)
        return true;
    PQreset(c);
    if (PQstatus(c) != CONNECTION_OK)
        return false;
    tm_err err = {0};
    PGresult *r = exec_simple(c, "SET client_encoding = 'UTF8'; SET TIME ZONE 'UTC'", &err);
    PQclear(r);
    return PQstatus(c) == CONNECTION_OK;
}

static const char *first_line(const char *sql, char *buf, size_t size) {
    snprintf(buf, size, "%s", sql);
    buf[strcspn(buf, "\n")] = '\0';
    if (strlen(buf) > 60)
        strcpy(buf + 57, "...");
    return buf;
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until libpq has a whole result to hand out (PQgetResult would not block), at most until
 * deadline. Past it the connection is shut down: libpq then reads the end of the stream, marks
 * the connection bad and fails the statement, so the caller's thread is free again. 0 when a
 * result (or the end of results) is ready, -1 with err when the answer limit passed. */
static int await_answer(PGconn *c, int64_t deadline, int limit_ms, const char *what, tm_err *err) {
    int sock = PQsocket(c);
    for (;;) {
        int flush = PQflush(c);
        if (flush < 0)
            return 0; /* broken: PQgetResult reports it */
        if (flush == 0 && !PQisBusy(c))
            return 0;
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            break;
        struct pollfd p = {sock, (short)(POLLIN | (flush ? POLLOUT : 0)), 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0)
            continue; /* EINTR */
        if (r > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) && !PQconsumeInput(c))
            return 0; /* broken */
    }
    shutdown(sock, SHUT_RDWR);
    PQconsumeInput(c);
    return tm_err_set(err,
                      "%s: no answer from PostgreSQL within %d ms (server hung or unreachable): "
                      "connection dropped",
                      what, limit_ms);
}

/* The last result of a statement sent with PQsend*, waiting at most the answer limit; NULL when
 * the limit passed (err set, connection dropped) or libpq had nothing. */
static PGresult *collect(PGconn *c, int64_t deadline, int limit_ms, const char *what, tm_err *err,
                         bool *timed_out) {
    PGresult *last = NULL, *r;
    *timed_out = false;
    for (;;) {
        if (limit_ms > 0 && await_answer(c, deadline, limit_ms, what, err) < 0) {
            *timed_out = true;
            while ((r = PQgetResult(c))) /* the connection is bad now: these return at once */
                PQclear(r);
            PQclear(last);
            return NULL;
        }
        r = PQgetResult(c);
        if (!r)
            return last;
        ExecStatusType st = PQresultStatus(r);
        PQclear(last);
        last = r;
        if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT)
            return last; /* the caller goes on with the copy */
    }
}

/* PQexec (several statements allowed) under the connection's answer limit. Returns the last
 * result whatever its status (caller checks and clears), or NULL with err when there is none
 * (limit passed, or out of memory). */
static PGresult *exec_simple(PGconn *c, const char *sql, tm_err *err) {
    int limit = answer_limit_ms(c);
    if (limit <= 0) {
        PGresult *r = PQexec(c, sql);
        if (!r)
            set_pg_err(err, "statement", PQerrorMessage(c), NULL);
        return r;
    }
    char what[80];
    bool timed_out;
    if (!PQsendQuery(c, sql)) {
        set_pg_err(err, first_line(sql, what, sizeof what), PQerrorMessage(c), NULL);
        return NULL;
    }
    PGresult *r =
        collect(c, mono_ms() + limit, limit, first_line(sql, what, sizeof what), err, &timed_out);
    if (!r && !timed_out)
        set_pg_err(err, what, PQerrorMessage(c), NULL);
    return r;
}

PGresult *tm_pg_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
                     tm_err *err) {
    char what[80];
    int limit = answer_limit_ms(c);
    PGresult *r;
    if (limit <= 0) {
        r = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
    } else {
        int64_t deadline = mono_ms() + limit;
        bool timed_out;
        if (!PQsendQueryParams(c, sql, nparams, NULL, params, NULL, NULL, 0)) {
            set_pg_err(err, first_line(sql, what, sizeof what), PQerrorMessage(c), NULL);
            return NULL;
        }
        r = collect(c, deadline, limit, first_line(sql, what, sizeof what), err, &timed_out);
        if (timed_out)
            return NULL;
    }
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return r;
    first_line(sql, what, sizeof what);
    set_pg_err(err, what, r ? PQresultErrorMessage(r) : PQerrorMessage(c),
               r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL);
    PQclear(r);
    return NULL;
}

int tm_pg_run(PGconn *c, const char *sql, int nparams, const char *const *params, tm_err *err) {
    PGresult *r = tm_pg_exec(c, sql, nparams, params, err);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

bool tm_pg_err_retryable(const PGconn *c, const tm_err *err) {
    if (!c || PQstatus(c) != CONNECTION_OK)
        return true;
    const char *st = err ? strstr(err->msg, "(SQLSTATE ") : NULL;
    if (!st)
        return true; /* no server verdict: a transport problem */
    st += strlen("(SQLSTATE ");
    return !(strncmp(st, "22", 2) == 0 || strncmp(st, "23", 2) == 0 || strncmp(st, "42", 2) == 0);
}

int tm_pg_begin(PGconn *c, tm_err *err) {
    return tm_pg_run(c, "BEGIN", 0, NULL, err);
}

int tm_pg_commit(PGconn *c, tm_err *err) {
    return tm_pg_run(c, "COMMIT", 0, NULL, err);
}

void tm_pg_rollback(PGconn *c) {
    if (PQstatus(c) == CONNECTION_OK) {
        tm_err err = {0};
        PQclear(exec_simple(c, "ROLLBACK", &err));
    }
}

int tm_pg_copy_in(PGconn *c, const char *copy_sql, const char *data, size_t len, tm_err *err) {
    int limit = answer_limit_ms(c);
    int64_t deadline = mono_ms() + limit;
    bool timed_out = false;
    PGresult *r;
    if (limit <= 0)
        r = PQexec(c, copy_sql);
    else if (!PQsendQuery(c, copy_sql))
        r = NULL;
    else if (!(r = collect(c, deadline, limit, "starting COPY", err, &timed_out)) && timed_out)
        return -1;
    (void)deadline;
    if (!r || PQresultStatus(r) != PGRES_COPY_IN) {
        set_pg_err(err, "starting COPY", r ? PQresultErrorMessage(r) : PQerrorMessage(c),
                   r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL);
        PQclear(r);
        return -1;
    }
    PQclear(r);
    /* PQputCopyData takes an int length: send large buffers in pieces. */
    size_t off = 0;
    while (off < len) {
        size_t chunk = len - off > (1u << 20) ? (1u << 20) : len - off;
        if (PQputCopyData(c, data + off, (int)chunk) != 1) {
            set_pg_err(err, "sending COPY data", PQerrorMessage(c), NULL);
            PQputCopyEnd(c, "client failed");
            while ((r = PQgetResult(c)))
                PQclear(r);
            return -1;
        }
        off += chunk;
    }
    if (PQputCopyEnd(c, NULL) != 1)
        return set_pg_err(err, "ending COPY", PQerrorMessage(c), NULL);
    int rc = 0;
    if (limit > 0) {
        r = collect(c, mono_ms() + limit, limit, "COPY", err, &timed_out);
        if (timed_out)
            return -1;
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = set_pg_err(err, "COPY", r ? PQresultErrorMessage(r) : PQerrorMessage(c),
                            r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL);
        PQclear(r);
        return rc;
    }
    while ((r = PQgetResult(c))) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == 0)
            rc = set_pg_err(err, "COPY", PQresultErrorMessage(r),
                            PQresultErrorField(r, PG_DIAG_SQLSTATE));
        PQclear(r);
    }
    return rc;
}

int tm_pg_copy_escape(char **buf, size_t *len, size_t *cap, const char *s) {
    size_t need = *len + 2 * strlen(s) + 1;
    if (need > *cap) {
        size_t ncap = *cap ? *cap : 4096;
        while (ncap < need)
            ncap *= 2;
        char *nb = realloc(*buf, ncap);
        if (!nb)
            return -1;
        *buf = nb, *cap = ncap;
    }
    char *o = *buf + *len;
    for (; *s; s++) {
        switch (*s) {
        case '\\':
            *o++ = '\\', *o++ = '\\';
            break;
        case '\t':
            *o++ = '\\', *o++ = 't';
            break;
        case '\n':
            *o++ = '\\', *o++ = 'n';
            break;
        case '\r':
            *o++ = '\\', *o++ = 'r';
            break;
        default:
            *o++ = *s;
        }
    }
    *len = (size_t)(o - *buf);
    (*buf)[*len] = '\0';
    return 0;
}

static int current_version(PGconn *c, const char *table, int *version, tm_err *err) {
    char q[128];
    snprintf(q, sizeof q, "SELECT COALESCE(MAX(version), 0) FROM %s", table);
    PGresult *r = tm_pg_exec(c, q, 0, NULL, err);
    if (!r)
        return -1;
    *version = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

/* A fixed key so every tarema component that migrates a database serialises on it. */
#define MIGRATION_LOCK "7283469175"

/* table: a fixed identifier checked by the callers below (never user input). */
static int migrate_table(PGconn *c, const char *table, const tm_pg_migration *m, size_t n,
                         int *applied, tm_err *err) {
    int done = 0, version = 0;
    char create[256], insert[128];
    snprintf(create, sizeof create,
             "CREATE TABLE IF NOT EXISTS %s ("
             " version integer PRIMARY KEY, name text NOT NULL,"
             " applied_at timestamptz NOT NULL DEFAULT now())",
             table);
    snprintf(insert, sizeof insert, "INSERT INTO %s (version, name) VALUES ($1, $2)", table);
    if (applied)
        *applied = 0;
    if (tm_pg_run(c, "SELECT pg_advisory_lock(" MIGRATION_LOCK ")", 0, NULL, err) < 0)
        return tm_err_wrap(err, "migrations: taking the lock");
    int rc = -1;
    if (tm_pg_run(c, create, 0, NULL, err) < 0 || current_version(c, table, &version, err) < 0)
        goto out;
    int newest = n ? m[n - 1].version : 0;
    if (version > newest) {
        tm_err_set(err,
                   "database schema is at version %d but this program knows only up to %d: "
                   "run a newer release",
                   version, newest);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (m[i].version <= version)
            continue;
        char vbuf[16];
        snprintf(vbuf, sizeof vbuf, "%d", m[i].version);
        const char *params[] = {vbuf, m[i].name};
        if (tm_pg_begin(c, err) < 0)
            goto out;
        PGresult *r = exec_simple(c, m[i].sql, err);
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
            char what[128];
            snprintf(what, sizeof what, "migration %d (%s)", m[i].version, m[i].name);
            set_pg_err(err, what, r ? PQresultErrorMessage(r) : PQerrorMessage(c),
                       r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL);
            PQclear(r);
            tm_pg_rollback(c);
            goto out;
        }
        PQclear(r);
        if (tm_pg_run(c, insert, 2, params, err) < 0 || tm_pg_commit(c, err) < 0) {
            tm_pg_rollback(c);
            goto out;
        }
        tm_info("applied database migration version=%d name=%s", m[i].version, m[i].name);
        done++;
    }
    rc = 0;
out:; /* a label cannot precede a declaration before C23 (clang refuses it) */
    tm_err unlock_err = {0};
    PQclear(exec_simple(c, "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")", &unlock_err));
    if (applied)
        *applied = done;
    return rc;
}

int tm_pg_migrate(PGconn *c, const tm_pg_migration *m, size_t n, int *applied, tm_err *err) {
    return migrate_table(c, "schema_migrations", m, n, applied, err);
}

int tm_pg_migrate_set(PGconn *c, const char *set, const tm_pg_migration *m, size_t n, int *applied,
                      tm_err *err) {
    size_t len = set ? strlen(set) : 0;
    bool ok = len > 0 && len <= 40;
    for (size_t i = 0; ok && i < len; i++)
        ok = (set[i] >= 'a' && set[i] <= 'z') || set[i] == '_';
    if (!ok) {
        tm_err_set(err, "migrations: set name '%s' is not [a-z_]{1,40}", set ? set : "");
        return -1;
    }
    char table[64];
    snprintf(table, sizeof table, "%s_schema_migrations", set);
    return migrate_table(c, table, m, n, applied, err);
}
