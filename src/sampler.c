/* sampler.c — token choice in vLLM's order: penalties → temperature → min-p → top-k → top-p → draw. Greedy
 * takes the argmax after the penalties. Works on a copy of the logits; weights in float, sums in double. The
 * choice rule (sampler_pick) is the one the CUDA sampling kernel implements too. */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* A candidate token and its transformed logit. */
typedef struct scored {
    float value;
    int32_t token;
} scored;

struct sampler {
    int vocab;
    float *work;    /* [vocab] the logits after penalties */
    float *work_w;  /* [vocab] the kept tokens' weights, 0 for the rest */
    scored *cand;   /* [vocab] candidates */
    int32_t *count; /* [vocab] occurrences among generated tokens; zero between calls */
    uint8_t *seen;  /* [vocab] 1 if in prompt or output; zero between calls */
};

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

fk_status sampler_create(int vocab, sampler **out, fk_error *err)
{
    sampler *s = calloc(1, sizeof *s);
    if (s) {
        s->vocab = vocab;
        s->work = malloc((size_t)vocab * sizeof *s->work);
        s->work_w = malloc((size_t)vocab * sizeof *s->work_w);
        s->cand = malloc((size_t)vocab * sizeof *s->cand);
        s->count = calloc((size_t)vocab, sizeof *s->count);
        s->seen = calloc((size_t)vocab, 1);
    }
    if (!s || !s->work || !s->work_w || !s->cand || !s->count || !s->seen) {
        sampler_destroy(s);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "sampler for %d tokens: out of memory", vocab);
    }
    *out = s;
    return FK_OK;
}

void sampler_destroy(sampler *s)
{
    if (!s)
        return;
    free(s->work);
    free(s->work_w);
    free(s->cand);
    free(s->count);
    free(s->seen);
    free(s);
}

/* Repetition (prompt and output: divide positive logits, multiply negative ones), presence and frequency
 * (output only: subtract) penalties on s->work. */
static void apply_penalties(sampler *s, const fk_sampling_params *p, const int32_t *tokens, int n_prompt,
                            int n_tokens)
{
    const bool rep = p->repetition_penalty != 1.0f, pres_freq = p->presence_penalty != 0 || p->frequency_penalty != 0;
    if (!rep && !pres_freq)
        return;
    for (int i = 0; i < n_tokens; i++) {
        s->seen[tokens[i]] = 1;
        if (i >= n_prompt)
            s->count[tokens[i]]++;
    }
    for (int i = 0; i < n_tokens; i++) {
        int32_t t = tokens[i];
        if (!s->seen[t])
            continue; /* already applied for an earlier occurrence */
        if (rep)
            s->work[t] = s->work[t] > 0 ? s->work[t] / p->repetition_penalty : s->work[t] * p->repetition_penalty;
        if (s->count[t] > 0)
            s->work[t] -= p->presence_penalty + p->frequency_penalty * (float)s->count[t];
        s->seen[t] = 0;
        s->count[t] = 0;
    }
}

/* Descending value, then ascending token. */
static int by_value_desc(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->value != y->value)
        return x->value > y->value ? -1 : 1;
    return x->token - y->token;
}

/* Moves the k largest candidates to the front of cand[0..n) (quickselect; expected O(n)). */
static void select_top_k(scored *cand, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        float pivot = cand[(lo + hi) / 2].value;
        int i = lo, j = hi;
        while (i <= j) {
            while (cand[i].value > pivot)
                i++;
            while (cand[j].value < pivot)
                j--;
            if (i <= j) {
                scored t = cand[i];
                cand[i++] = cand[j];
                cand[j--] = t;
            }
        }
        if (k - 1 <= j)
            hi = j;
        else if (k - 1 >= i)
            lo = i;
        else
            break;
    }
}

sample_row sampler_row(const fk_sampling_params *p, rng *r)
{
    return (sample_row){.temperature = p->temperature, .top_p = p->top_p, .min_p = p->min_p, .top_k = p->top_k,
                        .u = p->temperature > 0 ? (float)rng_uniform(r) : 0};
}

int32_t sampler_sample(sampler *s, const float *logits, const fk_sampling_params *p, const int32_t *tokens,
                       int n_prompt, int n_tokens, rng *r)
{
    memcpy(s->work, logits, (size_t)s->vocab * sizeof *s->work);
    apply_penalties(s, p, tokens, n_prompt, n_tokens);
    const sample_row row = sampler_row(p, r);
    return sampler_pick(s, s->work, &row);
}

int32_t sampler_pick(sampler *s, const float *logits, const sample_row *row)
{
    const int V = s->vocab;
    if (row->temperature == 0)
        return sampler_argmax(logits, V);
    const float max = logits[sampler_argmax(logits, V)];
    float floor = row->min_p > 0 ? row->min_p : 0; /* w of the most likely token is 1 */
    int n = 0;
    for (int i = 0; i < V; i++) {
        const float w = expf((logits[i] - max) / row->temperature);
        if (w >= floor && w > 0)
            s->cand[n++] = (scored){.value = w, .token = i};
    }
    if (n == 0) /* only NaN logits: nothing to sample from */
        return sampler_argmax(logits, V);
    if (row->top_k > 0 && row->top_k < n) {
        select_top_k(s->cand, n, row->top_k);
        float kth = s->cand[0].value; /* the smallest of the k largest */
        for (int i = 1; i < row->top_k; i++)
            kth = s->cand[i].value < kth ? s->cand[i].value : kth;
        floor = floor > kth ? floor : kth;
    }
    if (row->top_p < 1.0f) {
        /* The least likely token needed, in order of likelihood, for the kept mass to reach top_p. */
        double total = 0;
        for (int i = 0; i < n; i++)
            total += s->cand[i].value >= floor ? s->cand[i].value : 0;
        qsort(s->cand, (size_t)n, sizeof *s->cand, by_value_desc);
        double acc = 0;
        for (int i = 0; i < n && s->cand[i].value >= floor; i++) {
            acc += s->cand[i].value;
            if (acc >= (double)row->top_p * total) {
                floor = s->cand[i].value;
                break;
            }
        }
    }
    /* Every kept token, in token order. */
    double total = 0;
    for (int i = 0; i < V; i++) {
        const float w = expf((logits[i] - max) / row->temperature);
        s->work_w[i] = w >= floor && w > 0 ? w : 0;
        total += s->work_w[i];
    }
    const double target = (double)row->u * total;
    double acc = 0;
    int last = -1;
    for (int i = 0; i < V; i++) {
        if (s->work_w[i] == 0)
            continue;
        acc += s->work_w[i];
        last = i;
        if (acc > target)
            return i;
    }
    return last; /* rounding left the target just out of reach: the last kept token */
}

float sampler_logprobs(sampler *s, const float *logits, int32_t chosen, int n_top, fk_logprob *top)
{
    const int V = s->vocab;
    const float max = logits[sampler_argmax(logits, V)];
    double sum = 0;
    for (int i = 0; i < V; i++)
        sum += exp((double)logits[i] - max);
    const float lse = max + (float)log(sum);
    if (n_top > 0) {
        for (int i = 0; i < V; i++)
            s->cand[i] = (scored){.value = logits[i], .token = i};
        n_top = n_top < V ? n_top : V;
        select_top_k(s->cand, V, n_top);
        qsort(s->cand, (size_t)n_top, sizeof *s->cand, by_value_desc);
        for (int i = 0; i < n_top; i++)
            top[i] = (fk_logprob){.token = s->cand[i].token, .logprob = s->cand[i].value - lse};
    }
    return logits[chosen] - lse;
}
