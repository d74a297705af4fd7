/* spool.c: see spool.h. */
#include "labeler/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileutil.h"

/* The log is cut back to empty only once this much of it is consumed and nothing is pending:
 * a cut costs fsyncs under the lock, which every append would wait for. */
#define TRUNCATE_AT (1 << 20)

struct lab_spool {
    pthread_mutex_t mu;
    int fd;
    int off_fd; /* events.offset, rewritten in place */
    char log_path[4096], off_path[4096];
    off_t off;       /* first unconsumed byte */
    off_t size;      /* bytes in the log */
    off_t peek_next; /* offset after the record last peeked, or -1 */
    long pending;
};

static int mkdir_p(const char *dir, tm_err *err) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
                return tm_err_set(err, "spool: cannot create %s: %s", tmp, strerror(errno));
            *p = '/';
        }
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
        return tm_err_set(err, "spool: cannot create %s: %s", tmp, strerror(errno));
    return 0;
}

/* The read position, as a fixed-width record rewritten in place. Not synced after an ordinary
 * ack: a position lost in a crash is an older one, and replaying records is harmless (storing
 * is idempotent). Synced (durable) when the log was cut back to empty, before any new append,
 * so that an old position can never skip records appended after the cut. */
static int write_offset(lab_spool *sp, bool durable, tm_err *err) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%019lld\n", (long long)sp->off);
    if (pwrite(sp->off_fd, buf, (size_t)n, 0) != n || (durable && fdatasync(sp->off_fd) < 0))
        return tm_err_set(err, "spool: writing %s: %s", sp->off_path, strerror(errno));
    return 0;
}

/* Reads the whole unconsumed part to count records and to find a torn tail. */
static int scan(lab_spool *sp, tm_err *err) {
    struct stat st;
    if (fstat(sp->fd, &st) < 0)
        return tm_err_set(err, "spool: stat %s: %s", sp->log_path, strerror(errno));
    sp->size = st.st_size;
    if (sp->off > sp->size) /* the log was truncated after everything was consumed */
        sp->off = 0;
    off_t pos = sp->off, last_nl = sp->off;
    char buf[65536];
    sp->pending = 0;
    while (pos < sp->size) {
        ssize_t n = pread(sp->fd, buf, sizeof buf, pos);
        if (n <= 0)
            return tm_err_set(err, "spool: read %s: %s", sp->log_path,
                              n < 0 ? strerror(errno) : "unexpected end");
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                sp->pending++;
                last_nl = pos + i + 1;
            }
        }
        pos += n;
    }
    if (last_nl < sp->size) {
        /* Half a record from a crash during append: it was never acknowledged. */
        if (ftruncate(sp->fd, last_nl) < 0)
            return tm_err_set(err, "spool: truncating torn record in %s: %s", sp->log_path,
                              strerror(errno));
        sp->size = last_nl;
    }
    return 0;
}

lab_spool *lab_spool_open(const char *dir, tm_err *err) {
    if (mkdir_p(dir, err) < 0)
        return NULL;
    lab_spool *sp = calloc(1, sizeof *sp);
    if (!sp) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&sp->mu, NULL);
    sp->peek_next = -1;
    snprintf(sp->log_path, sizeof sp->log_path, "%s/events.log", dir);
    snprintf(sp->off_path, sizeof sp->off_path, "%s/events.offset", dir);
    sp->fd = open(sp->log_path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (sp->fd < 0) {
        tm_err_set(err, "spool: cannot open %s: %s", sp->log_path, strerror(errno));
        free(sp);
        return NULL;
    }
    char *off = tm_read_file(sp->off_path, NULL, NULL);
    sp->off = off ? (off_t)strtoll(off, NULL, 10) : 0;
    free(off);
    if (sp->off < 0)
        sp->off = 0;
    sp->off_fd = open(sp->off_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (sp->off_fd < 0) {
        tm_err_set(err, "spool: cannot open %s: %s", sp->off_path, strerror(errno));
        lab_spool_close(sp);
        return NULL;
    }
    if (scan(sp, err) < 0) {
        lab_spool_close(sp);
        return NULL;
    }
    return sp;
}

void lab_spool_close(lab_spool *sp) {
    if (!sp)
        return;
    if (sp->fd >= 0)
        close(sp->fd);
    if (sp->off_fd > 0)
        close(sp->off_fd);
    pthread_mutex_destroy(&sp->mu);
    free(sp);
}

int lab_spool_append(lab_spool *sp, const char *rec, size_t len, tm_err *err) {
    if (memchr(rec, '\n', len))
        return tm_err_set(err, "spool: a record must be one line");
    char *line = malloc(len + 1);
    if (!line)
        return tm_err_set(err, "out of memory");
    memcpy(line, rec, len);
    line[len] = '\n';
    pthread_mutex_lock(&sp->mu);
    int rc = 0;
    size_t done = 0;
    while (done < len + 1) {
        ssize_t n = write(sp->fd, line + done, len + 1 - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = tm_err_set(err, "spool: write %s: %s", sp->log_path, strerror(errno));
            /* Cut the partial record so the next append starts on a line of its own. */
            if (ftruncate(sp->fd, sp->size) < 0)
                rc = tm_err_set(err, "spool: write and repair of %s failed: %s", sp->log_path,
                                strerror(errno));
            break;
        }
        done += (size_t)n;
    }
    if (rc == 0 && fdatasync(sp->fd) < 0)
        rc = tm_err_set(err, "spool: fdatasync %s: %s", sp->log_path, strerror(errno));
    if (rc == 0) {
        sp->size += (off_t)(len + 1);
        sp->pending++;
    }
    pthread_mutex_unlock(&sp->mu);
    free(line);
    return rc;
}

int lab_spool_peek(lab_spool *sp, char **rec, tm_err *err) {
    *rec = NULL;
    pthread_mutex_lock(&sp->mu);
    int rc = 0;
    if (sp->off >= sp->size)
        goto out;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    off_t pos = sp->off;
    for (;;) {
        if (!buf) {
            rc = tm_err_set(err, "out of memory");
            goto out;
        }
        if (len + 4096 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                continue;
            }
            buf = nb;
        }
        ssize_t n = pread(sp->fd, buf + len, 4096, pos);
        if (n <= 0) {
            free(buf);
            rc = tm_err_set(err, "spool: read %s: %s", sp->log_path,
                            n < 0 ? strerror(errno) : "record without end");
            goto out;
        }
        char *nl = memchr(buf + len, '\n', (size_t)n);
        if (nl) {
            *nl = '\0';
            sp->peek_next = sp->off + (nl - buf) + 1;
            *rec = buf;
            rc = 1;
            goto out;
        }
        len += (size_t)n;
        pos += n;
    }
out:
    pthread_mutex_unlock(&sp->mu);
    return rc;
}

int lab_spool_ack(lab_spool *sp, tm_err *err) {
    pthread_mutex_lock(&sp->mu);
    int rc = 0;
    if (sp->peek_next < 0) {
        rc = tm_err_set(err, "spool: ack without a peeked record");
        goto out;
    }
    sp->off = sp->peek_next;
    sp->peek_next = -1;
    sp->pending--;
    bool cut = false;
    if (sp->off == sp->size && sp->off >= TRUNCATE_AT) {
        /* All consumed: start over so the file does not grow forever. */
        if (ftruncate(sp->fd, 0) == 0 && fdatasync(sp->fd) == 0) {
            sp->off = sp->size = 0;
            cut = true;
        }
    }
    rc = write_offset(sp, cut, err);
out:
    pthread_mutex_unlock(&sp->mu);
    return rc;
}

long lab_spool_pending(lab_spool *sp) {
    pthread_mutex_lock(&sp->mu);
    long n = sp->pending;
    pthread_mutex_unlock(&sp->mu);
    return n;
}

int lab_spool_foreach(lab_spool *sp, void (*fn)(void *ud, const char *rec), void *ud, tm_err *err) {
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return tm_err_set(err, "out of memory reading the spool");
    pthread_mutex_lock(&sp->mu);
    int rc = 0;
    off_t pos = sp->off;
    while (pos < sp->size) {
        if (len + 4096 > cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                rc = tm_err_set(err, "out of memory reading the spool");
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = pread(sp->fd, buf + len, cap - len - 1, pos);
        if (n <= 0) {
            rc = tm_err_set(err, "spool: read %s: %s", sp->log_path,
                            n < 0 ? strerror(errno) : "unexpected end");
            break;
        }
        pos += n;
        len += (size_t)n;
        char *start = buf, *nl;
        while ((nl = memchr(start, '\n', len - (size_t)(start - buf)))) {
            *nl = '\0';
            fn(ud, start);
            start = nl + 1;
        }
        len -= (size_t)(start - buf); /* the unfinished line moves to the front */
        memmove(buf, start, len);
    }
    pthread_mutex_unlock(&sp->mu);
    free(buf);
    return rc;
}
