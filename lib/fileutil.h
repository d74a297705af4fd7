/* fileutil.h: whole-file reads and atomic writes, with errors that name the path. */
#ifndef TAREMA_FILEUTIL_H
#define TAREMA_FILEUTIL_H

#include <stddef.h>

#include "error.h"

/* Reads a whole file into a NUL-terminated buffer the caller free()s; *len (may be NULL) gets
 * the byte count. "-" reads standard input. */
char *tm_read_file(const char *path, size_t *len, tm_err *err);

/* Writes data to path via a temporary file and rename, so readers never see half a file. */
int tm_write_file_atomic(const char *path, const void *data, size_t len, tm_err *err);

#endif
