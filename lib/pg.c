/* pg.c: see pg.h. */
#include "pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

PGconn *tm_pg_connect(const char *conninfo, tm_err *err) {
    /* libpq waits forever by default: for an unreachable server at connect, and for a silent
     * peer (a network partition) on every statement until the kernel gives up, many minutes
     * later. Defaults first, the caller's conninfo last: libpq keeps the last value of a
     * keyword, so anything the caller sets wins (PGCONNECT_TIMEOUT too). */
    const char *keys[8], *vals[8];
    int n = 0;
    if (!getenv("PGCONNECT_TIMEOUT"))
        keys[n] = "connect_timeout", vals[n++] = TM_PG_CONNECT_TIMEOUT_S;
    keys[n] = "keepalives_idle", vals[n++] = "10";
    keys[n] = "keepalives_interval", vals[n++] = "5";
    keys[n] = "keepalives_count", vals[n++] = "3";
    keys[n] = "tcp_user_timeout", vals[n++] = TM_PG_TCP_USER_TIMEOUT_MS;
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
    /* Our own sessions never depend on the server's locale for numbers or times. */
    PGresult *r = PQexec(c, "SET client_encoding = 'UTF8'; SET TIME ZONE 'UTC'");
    PQclear(r);
    return c;
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
    PGresult *r = PQexec(c, "SET client_encoding = 'UTF8'; SET TIME ZONE 'UTC'");
    PQclear(r);
    return true;
}

static const char *first_line(const char *sql, char *buf, size_t size) {
    snprintf(buf, size, "%s", sql);
    buf[strcspn(buf, "\n")] = '\0';
    if (strlen(buf) > 60)
        strcpy(buf + 57, "...");
    return buf;
}

PGresult *tm_pg_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
                     tm_err *err) {
    PGresult *r = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return r;
    char what[80];
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
        PGresult *r = PQexec(c, "ROLLBACK");
        PQclear(r);
    }
}

int tm_pg_copy_in(PGconn *c, const char *copy_sql, const char *data, size_t len, tm_err *err) {
    PGresult *r = PQexec(c, copy_sql);
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

static int current_version(PGconn *c, int *version, tm_err *err) {
    PGresult *r =
        tm_pg_exec(c, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", 0, NULL, err);
    if (!r)
        return -1;
    *version = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

/* A fixed key so every tarema component that migrates a database serialises on it. */
#define MIGRATION_LOCK "7283469175"

int tm_pg_migrate(PGconn *c, const tm_pg_migration *m, size_t n, int *applied, tm_err *err) {
    int done = 0, version = 0;
    if (applied)
        *applied = 0;
    if (tm_pg_run(c, "SELECT pg_advisory_lock(" MIGRATION_LOCK ")", 0, NULL, err) < 0)
        return tm_err_wrap(err, "migrations: taking the lock");
    int rc = -1;
    if (tm_pg_run(c,
                  "CREATE TABLE IF NOT EXISTS schema_migrations ("
                  " version integer PRIMARY KEY, name text NOT NULL,"
                  " applied_at timestamptz NOT NULL DEFAULT now())",
                  0, NULL, err) < 0 ||
        current_version(c, &version, err) < 0)
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
        PGresult *r = PQexec(c, m[i].sql);
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
        if (tm_pg_run(c, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2, params,
                      err) < 0 ||
            tm_pg_commit(c, err) < 0) {
            tm_pg_rollback(c);
            goto out;
        }
        tm_info("applied database migration version=%d name=%s", m[i].version, m[i].name);
        done++;
    }
    rc = 0;
out:
    PQclear(PQexec(c, "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")"));
    if (applied)
        *applied = done;
    return rc;
}
