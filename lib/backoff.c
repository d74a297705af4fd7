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

int64_t tm_backoff_next(tm_backoff *b, int64_t now_ms) {
    if (b->ok_since_ms >= 0 && b->reset_after_ms > 0 &&
        now_ms - b->ok_since_ms >= b->reset_after_ms) {
        b->attempt = 0;
        b->prev_ms = b->base_ms;
    }
    b->ok_since_ms = -1;
    int64_t delay;
    if (b->kind == TM_BACKOFF_DECORRELATED) {
        int64_t hi = b->prev_ms * 3;
        if (hi > b->cap_ms * 3 || hi < b->prev_ms) /* keep the range bounded */
            hi = b->cap_ms * 3;
        delay = b->base_ms + (int64_t)(tm_backoff_rand(b) * (double)(hi - b->base_ms));
        if (delay > b->cap_ms)
            delay = b->cap_ms;
        b->prev_ms = delay;
    } else {
        int64_t ceil = b->base_ms;
        for (unsigned i = 0; i < b->attempt && ceil < b->cap_ms; i++)
            ceil *= 2;
        if (ceil > b->cap_ms)
            ceil = b->cap_ms;
        delay = (int64_t)(tm_backoff_rand(b) * (double)(ceil + 1));
        if (delay > ceil)
            delay = ceil;
    }
    if (b->attempt < 64)
        b->attempt++;
    return delay;
}
