/* sampler.h — choosing the next token from logits: greedy or temperature sampling with a seeded RNG. */
#ifndef FK_SAMPLER_H
#define FK_SAMPLER_H

#include <stdint.h>

/* xoshiro256** state: one per request, so a request's tokens depend only on its own seed. */
typedef struct rng {
    uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);
/* Uniform in [0, 1). */
double rng_uniform(rng *r);

/* The index of the largest logit; the first one on ties (as torch.argmax). */
int sampler_argmax(const float *logits, int vocab);

/* A draw from softmax(logits / temperature); temperature > 0. */
int sampler_temperature(const float *logits, int vocab, float temperature, rng *r);

#endif
