/* log.h: leveled, structured (logfmt or JSON lines) logging to stderr.
 *
 * Messages are written as `msg key=value ...`: the caller formats the key=value pairs, the
 * logger adds time and level, and in JSON mode wraps it as {"ts","level","msg"}. The level and
 * format are the one piece of process-wide state in libtarema: set once by main.c before any
 * thread starts, read-only afterwards. */
#ifndef TAREMA_LOG_H
#define TAREMA_LOG_H

typedef enum { TM_LOG_DEBUG = 0, TM_LOG_INFO, TM_LOG_WARN, TM_LOG_ERROR } tm_log_level;

/* level: "debug", "info", "warn", "error"; format: "text" or "json". Returns -1 on an unknown
 * name, leaving the settings unchanged. */
int tm_log_configure(const char *level, const char *format);
tm_log_level tm_log_get_level(void);

void tm_log(tm_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define tm_debug(...) tm_log(TM_LOG_DEBUG, __VA_ARGS__)
#define tm_info(...)  tm_log(TM_LOG_INFO, __VA_ARGS__)
#define tm_warn(...)  tm_log(TM_LOG_WARN, __VA_ARGS__)
#define tm_error(...) tm_log(TM_LOG_ERROR, __VA_ARGS__)

#endif
