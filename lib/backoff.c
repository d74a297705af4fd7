/* backoff.c: see backoff.h. */
#include "backoff.h"

void tm_backoff_init(tm_backoff *b, tm_backoff_kind kind, int64_t base_ms, int64_t cap_ms,
                     int64_t reset_after_ms, uint64_t seed) {
    b->kind = kind;
    b->base_ms = base_ms < 1 ? 1 : base_ms;
    b->cap_ms = cap_ms < b->base_ms ? b->base_ms : cap_ms;
    b->reset_after_ms = reset_after_ms;
    /* splitmix64 of the seed: any seed, including 0, gives a good non-zero state. */
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    b->rng = z ? z : 0x2545f4914f6cdd1dULL;
    tm_backoff_reset(b);
}

void tm_backoff_reset(tm_backoff *b) {
    b->attempt = 0;
    b->prev_ms = b->base_ms;
    b->ok_since_ms = -1;
}

double tm_backoff_rand(tm_backoff *b) {
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    uint64_t r = b->rng * 0x2545f4914f6cdd1dULL;
    return (double)(r >> 11) / 9007199254740992.0; /* 53 bits */
}

void tm_backoff_ok(tm_backoff *b, int64_t now_ms) {
    if (b->ok_since_ms < 0)
        b->ok_since_ms = now_ms;
}

/* a * 3 without overflowing: the growth of a huge cap saturates instead of wrapping. */
static int64_t times3(int64_t a) {
    return a > INT64_MAX / 3 ? INT64_MAX : a * 3;
}

/* uniform(0, span], as an integer that never exceeds span (the double product may round up). */
static int64_t scaled(tm_backoff *b, int64_t span) {
    int64_t x = (int64_t)(tm_backoff_rand(b) * (double)span);
    return x < 0 || x > span ? span : x;
}

int64_t tm_backoff_next(tm_backoff *b, int64_t now_ms) {
    if (b->ok_since_ms >= 0 && b->reset_after_ms > 0 &&
        now_ms - b->ok_since_ms >= b->reset_after_ms) {
        b->attempt = 0;
        b->prev_ms = b->base_ms;
    }
    b->ok_since_ms = -1;
    int64_t delay;
    if (b->kind == TM_BACKOFF_DECORRELATED) {
        int64_t hi = times3(b->prev_ms), top = times3(b->cap_ms);
        if (hi > top) /* keep the range bounded */
            hi = top;
        delay = b->base_ms + scaled(b, hi - b->base_ms);
        if (delay > b->cap_ms)
            delay = b->cap_ms;
        b->prev_ms = delay;
    } else {
        int64_t ceil = b->base_ms;
        for (unsigned i = 0; i < b->attempt && ceil < b->cap_ms; i++)
            ceil = ceil > b->cap_ms / 2 ? b->cap_ms : ceil * 2;
        delay = scaled(b, ceil);
    }
    if (b->attempt < 64)
        b->attempt++;
    return delay;
}
