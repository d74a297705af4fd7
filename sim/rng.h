/* rng.h: seedable random numbers for the simulations: splitmix64 with its state owned by the
 * caller (no global state), uniform draws in (0, 1) and normal draws (Box-Muller). */
#ifndef TAREMA_SIM_RNG_H
#define TAREMA_SIM_RNG_H

#include <math.h>
#include <stdint.h>

static inline uint64_t sim_rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1): never 0, so log() of it is finite. */
static inline double sim_rng_unit(uint64_t *s) {
    return ((double)(sim_rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

/* Normal with the given mean and standard deviation; draws two uniforms, in this order. */
static inline double sim_rng_normal(uint64_t *s, double mean, double sd) {
    double u = sim_rng_unit(s), v = sim_rng_unit(s);
    return mean + sd * sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

#endif
