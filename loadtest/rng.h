/* rng.h — a small seeded generator (SplitMix64): random prompts and Poisson arrival gaps that a --seed replays. */
#ifndef FK_LOADTEST_RNG_H
#define FK_LOADTEST_RNG_H

#include <stdint.h>

typedef struct rng {
    uint64_t state;
} rng;

/* A stream for (seed, a, b): e.g. (seed, level, request index), so that a request's prompt does not depend on
 * which thread sends it or when. */
void rng_init(rng *r, uint64_t seed, uint64_t a, uint64_t b);
uint64_t rng_next(rng *r);
/* Uniform in [0, n), n >= 1. */
uint64_t rng_below(rng *r, uint64_t n);
/* Exponentially distributed with mean 1/rate: the gap between Poisson arrivals. */
double rng_exponential(rng *r, double rate);

#endif
