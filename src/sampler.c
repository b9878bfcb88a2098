/* sampler.c — token choice: argmax, and sampling from the temperature-scaled softmax with xoshiro256**. */
#include "sampler.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

int sampler_argmax(const float *logits, int vocab)
{
    int best = 0;
    for (int i = 1; i < vocab; i++)
        if (logits[i] > logits[best])
            best = i;
    return best;
}

int sampler_temperature(const float *logits, int vocab, float temperature, rng *r)
{
    const float max = logits[sampler_argmax(logits, vocab)];
    double sum = 0;
    for (int i = 0; i < vocab; i++)
        sum += exp((double)(logits[i] - max) / temperature);
    double target = rng_uniform(r) * sum, acc = 0;
    for (int i = 0; i < vocab; i++) {
        acc += exp((double)(logits[i] - max) / temperature);
        if (acc > target)
            return i;
    }
    return sampler_argmax(logits, vocab); /* rounding left target unreached: the mode is the safe choice */
}
