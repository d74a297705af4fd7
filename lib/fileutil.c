/* fileutil.c: see fileutil.h. */
#include "fileutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *tm_read_file(const char *path, size_t *len, tm_err *err) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        tm_err_set(err, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                if (f != stdin)
                    fclose(f);
                tm_err_set(err, "%s: out of memory", path);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    if (f != stdin)
        fclose(f);
    if (failed) {
        free(buf);
        tm_err_set(err, "error reading %s", path);
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int tm_write_file_atomic(const char *path, const void *data, size_t len, tm_err *err) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return tm_err_set(err, "cannot write %s: %s", tmp, strerror(errno));
    size_t w = fwrite(data, 1, len, f);
    int bad = w != len || fflush(f) != 0;
    if (fclose(f) != 0 || bad) {
        unlink(tmp);
        return tm_err_set(err, "error writing %s", tmp);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return tm_err_set(err, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return 0;
}
