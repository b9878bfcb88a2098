/* rng.c — SplitMix64 (Steele, Lea, Flood 2014): one 64-bit state, full period, good enough for test inputs. */
#include "rng.h"

#include <math.h>

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rng_init(rng *r, uint64_t seed, uint64_t a, uint64_t b)
{
    r->state = mix(mix(seed) ^ mix(a + 0x632be59bd9b4e019ull) ^ mix(mix(b) + 0x9e3779b97f4a7c15ull));
}

uint64_t rng_next(rng *r)
{
    r->state += 0x9e3779b97f4a7c15ull;
    return mix(r->state);
}

uint64_t rng_below(rng *r, uint64_t n)
{
    /* Lemire's multiply-shift; the bias (n / 2^64) is far below anything a load test can see */
    return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

double rng_exponential(rng *r, double rate)
{
    double u = (double)(rng_next(r) >> 11) * 0x1.0p-53; /* [0, 1) */
    return -log1p(-u) / rate;
}
