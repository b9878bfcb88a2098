/* sampler.h — choosing a request's next token from its row of logits: penalties, temperature, min-p, top-k,
 * top-p, then one draw from the request's own RNG (so its tokens do not depend on the rest of the batch); and
 * log-probabilities of the raw distribution. */
#ifndef FK_SAMPLER_H
#define FK_SAMPLER_H

#include <stdint.h>

#include "backend.h"
#include "flashkernel.h"

/* xoshiro256**: one state per request. */
typedef struct rng {
    uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);
/* Uniform in [0, 1). */
double rng_uniform(rng *r);

/* The index of the largest value; the first one on ties (as torch.argmax). */
int sampler_argmax(const float *logits, int vocab);

/* Scratch for one vocabulary; reused by every request, one at a time. */
typedef struct sampler sampler;

fk_status sampler_create(int vocab, sampler **out, fk_error *err);
void sampler_destroy(sampler *s);

/* The next token. logits [vocab] are left as they are; tokens [n_tokens] are the request's prompt (the first
 * n_prompt) and generated tokens, for the penalties. Greedy (temperature 0) draws nothing from r. */
int32_t sampler_sample(sampler *s, const float *logits, const fk_sampling_params *p, const int32_t *tokens,
                       int n_prompt, int n_tokens, rng *r);

/* The row of a request's next token: its sampling values and, unless greedy, one draw from r. */
sample_row sampler_row(const fk_sampling_params *p, rng *r);

/* The token for logits [vocab] (penalties already applied): with w = exp((logit - max) / temperature), keep the
 * tokens with w >= min_p, then those at least as likely as the top_k-th, then those at least as likely as the
 * least likely one needed to reach top_p of the kept mass (ties kept in both); then take the token where the
 * running sum of kept w, in token order, first passes u times their total. */
int32_t sampler_pick(sampler *s, const float *logits, const sample_row *row);

/* log-softmax of logits: returns chosen's log-probability and writes the n_top most likely tokens, best first. */
float sampler_logprobs(sampler *s, const float *logits, int32_t chosen, int n_top, fk_logprob *top);

#endif
