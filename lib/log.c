/* log.c: see log.h. One fprintf per line so concurrent threads never interleave a line. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <jansson.h>

static struct {
    tm_log_level level;
    int json;
} log_settings = {TM_LOG_INFO, 0};

static const char *level_names[] = {"debug", "info", "warn", "error"};

int tm_log_configure(const char *level, const char *format) {
    int lv = -1;
    for (int i = 0; i < 4; i++)
        if (level && strcmp(level, level_names[i]) == 0)
            lv = i;
    if (level && lv < 0)
        return -1;
    if (format && strcmp(format, "text") != 0 && strcmp(format, "json") != 0)
        return -1;
    if (level)
        log_settings.level = (tm_log_level)lv;
    if (format)
        log_settings.json = strcmp(format, "json") == 0;
    return 0;
}

tm_log_level tm_log_get_level(void) {
    return log_settings.level;
}

void tm_log(tm_log_level level, const char *fmt, ...) {
    if (level < log_settings.level)
        return;
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tmv;
    gmtime_r(&tv.tv_sec, &tmv);
    char ts[40];
    size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tmv);
    snprintf(ts + n, sizeof ts - n, ".%03ldZ", (long)(tv.tv_usec / 1000));

    if (log_settings.json) {
        json_t *o = json_pack("{s:s, s:s, s:s}", "ts", ts, "level", level_names[level], "msg", msg);
        char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (line)
            fprintf(stderr, "%s\n", line);
        free(line);
        json_decref(o);
    } else {
        fprintf(stderr, "%s %-5s %s\n", ts, level_names[level], msg);
    }
}
