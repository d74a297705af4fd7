/* backoff.h: retry delays: exponential growth with jitter and a cap, reset after a stable
 * period. Used for watch reconnects and re-lists; usable for any retry loop.
 *
 * Full jitter: delay = uniform(0, min(cap, base * 2^attempt)).
 * Decorrelated jitter: delay = min(cap, uniform(base, 3 * previous delay)).
 * (Both from "Exponential Backoff And Jitter", AWS Architecture Blog, 2015.) The random state
 * lives in the struct (seeded by the caller), so runs are reproducible and thread-free. Pure:
 * the caller passes the time. */
#ifndef TAREMA_BACKOFF_H
#define TAREMA_BACKOFF_H

#include <stdint.h>

typedef enum { TM_BACKOFF_FULL_JITTER, TM_BACKOFF_DECORRELATED } tm_backoff_kind;

typedef struct tm_backoff {
    tm_backoff_kind kind;
    int64_t base_ms, cap_ms;
    int64_t reset_after_ms; /* a success lasting this long resets the growth; 0 = never */
    uint64_t rng;           /* xorshift64* state, never 0 */
    unsigned attempt;       /* failures since the last reset */
    int64_t prev_ms;        /* last delay (decorrelated jitter) */
    int64_t ok_since_ms;    /* start of the current healthy period, -1 if none */
} tm_backoff;

/* base_ms >= 1, cap_ms >= base_ms (clamped otherwise). */
void tm_backoff_init(tm_backoff *b, tm_backoff_kind kind, int64_t base_ms, int64_t cap_ms,
                     int64_t reset_after_ms, uint64_t seed);

/* A failure at now_ms: returns how long to wait before the next attempt. If the preceding
 * healthy period lasted reset_after_ms or more, growth starts again from base. */
int64_t tm_backoff_next(tm_backoff *b, int64_t now_ms);

/* The operation is working again from now_ms (e.g. a watch connected). */
void tm_backoff_ok(tm_backoff *b, int64_t now_ms);

/* Forget all failures. */
void tm_backoff_reset(tm_backoff *b);

/* The generator itself, for callers that need jitter elsewhere: uniform in [0, 1). */
double tm_backoff_rand(tm_backoff *b);

#endif
