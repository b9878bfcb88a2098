/* test_sampler.c — the sampler on hand-made logits whose masked distributions are known in closed form: top-k,
 * top-p, min-p and temperature keep exactly the right tokens and draw them in the right proportions (within 5
 * standard deviations); penalties move the argmax exactly where their formulas say; seeds reproduce; logprobs
 * equal a double-precision log-softmax. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sampler.h"
#include "test_util.h"

enum { V = 6, DRAWS = 40000 };

static sampler *smp;
static uint64_t seed;

static int setup(void **state)
{
    (void)state;
    seed = tu_seed();
    return sampler_create(V, &smp, NULL);
}

static int teardown(void **state)
{
    (void)state;
    sampler_destroy(smp);
    return 0;
}

static fk_sampling_params params(float temperature)
{
    return (fk_sampling_params){.temperature = temperature, .top_p = 1, .repetition_penalty = 1, .logprobs = -1};
}

/* logits = log(probs): probabilities 0.5, 0.3, 0.15, 0.05, then two near-zero tokens. */
static void known_logits(float *l)
{
    const double p[V] = {0.5, 0.3, 0.15, 0.05 - 2e-9, 1e-9, 1e-9};
    for (int i = 0; i < V; i++)
        l[i] = (float)log(p[i]);
}

/* Draws DRAWS tokens and checks they follow want[] (which sums to 1; zeros must never be drawn). */
static void expect_distribution(const float *logits, const fk_sampling_params *p, const double *want)
{
    rng r;
    rng_seed(&r, seed);
    int counts[V] = {0};
    int32_t none[1] = {0};
    for (int i = 0; i < DRAWS; i++)
        counts[sampler_sample(smp, logits, p, none, 0, 0, &r)]++;
    for (int t = 0; t < V; t++) {
        double f = (double)counts[t] / DRAWS, sigma = sqrt(want[t] * (1 - want[t]) / DRAWS);
        if (want[t] == 0 ? counts[t] != 0 : fabs(f - want[t]) > 5 * sigma + 1e-9)
            fail_msg("token %d drawn with frequency %.4f, expected %.4f", t, f, want[t]);
    }
}

static void test_plain_temperature(void **state)
{
    (void)state;
    float l[V];
    known_logits(l);
    fk_sampling_params p = params(1.0f);
    const double t1[V] = {0.5, 0.3, 0.15, 0.05, 0, 0};
    expect_distribution(l, &p, t1);
    /* Temperature 0.5 squares the probabilities: 0.25, 0.09, 0.0225, 0.0025 over 0.365. */
    p.temperature = 0.5f;
    const double t05[V] = {0.25 / 0.365, 0.09 / 0.365, 0.0225 / 0.365, 0.0025 / 0.365, 0, 0};
    expect_distribution(l, &p, t05);
}

static void test_top_k(void **state)
{
    (void)state;
    float l[V];
    known_logits(l);
    fk_sampling_params p = params(1.0f);
    p.top_k = 2;
    const double want[V] = {0.5 / 0.8, 0.3 / 0.8, 0, 0, 0, 0};
    expect_distribution(l, &p, want);
    p.top_k = 1;
    const double only[V] = {1, 0, 0, 0, 0, 0};
    expect_distribution(l, &p, only);
    p.top_k = 1000; /* past the vocabulary: everything */
    const double all[V] = {0.5, 0.3, 0.15, 0.05, 0, 0};
    expect_distribution(l, &p, all);
}

static void test_top_p(void **state)
{
    (void)state;
    float l[V];
    known_logits(l);
    fk_sampling_params p = params(1.0f);
    p.top_p = 0.7f; /* 0.5 < 0.7 <= 0.8: the two most likely */
    const double two[V] = {0.5 / 0.8, 0.3 / 0.8, 0, 0, 0, 0};
    expect_distribution(l, &p, two);
    p.top_p = 0.9f; /* 0.8 < 0.9 <= 0.95 */
    const double three[V] = {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0, 0, 0};
    expect_distribution(l, &p, three);
    p.top_p = 0.1f; /* the most likely alone */
    const double one[V] = {1, 0, 0, 0, 0, 0};
    expect_distribution(l, &p, one);
    p.top_p = 0.9f, p.top_k = 2; /* top-k first, then top-p of what is left: 0.625 < 0.9 */
    expect_distribution(l, &p, two);
}

static void test_min_p(void **state)
{
    (void)state;
    float l[V];
    known_logits(l);
    fk_sampling_params p = params(1.0f);
    p.min_p = 0.35f; /* keeps p >= 0.175: the first two */
    const double two[V] = {0.5 / 0.8, 0.3 / 0.8, 0, 0, 0, 0};
    expect_distribution(l, &p, two);
    p.min_p = 0.2f; /* keeps p >= 0.1 */
    const double three[V] = {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0, 0, 0};
    expect_distribution(l, &p, three);
}

static void test_penalties_move_the_argmax(void **state)
{
    (void)state;
    rng r;
    rng_seed(&r, seed);
    const float l[V] = {2.0f, 1.9f, 0.5f, -1.0f, -1.2f, -3.0f};
    int32_t hist[4] = {4, 3, 0, 0}; /* prompt {4, 3}; generated {0, 0} */
    fk_sampling_params p = params(0);
    assert_int_equal(sampler_sample(smp, l, &p, hist, 2, 4, &r), 0);
    /* presence: 2.0 - 0.11 = 1.89 < 1.9 */
    p.presence_penalty = 0.11f;
    assert_int_equal(sampler_sample(smp, l, &p, hist, 2, 4, &r), 1);
    p.presence_penalty = 0.09f;
    assert_int_equal(sampler_sample(smp, l, &p, hist, 2, 4, &r), 0);
    /* frequency counts both occurrences: 2.0 - 2 x 0.051 < 1.9, 2.0 - 2 x 0.049 > 1.9 */
    p.presence_penalty = 0;
    p.frequency_penalty = 0.051f;
    assert_int_equal(sampler_sample(smp, l, &p, hist, 2, 4, &r), 1);
    p.frequency_penalty = 0.049f;
    assert_int_equal(sampler_sample(smp, l, &p, hist, 2, 4, &r), 0);
    /* repetition divides a positive logit once, however often it occurs: 2.0 / 1.06 < 1.9 < 2.0 / 1.04 */
    p.frequency_penalty = 0;
    p.repetition_penalty = 1.06f;
    assert_int_equal(sampler_sample(smp, l, &p, hist, 2, 4, &r), 1);
    p.repetition_penalty = 1.04f;
    assert_int_equal(sampler_sample(smp, l, &p, hist, 2, 4, &r), 0);
    /* ... and multiplies a negative one, prompt tokens included: -1.0 x 1.25 = -1.25 < -1.2 */
    const float neg[V] = {-5, -5, -5, -1.0f, -1.2f, -5};
    int32_t hist3[1] = {3};
    p.repetition_penalty = 1.25f;
    assert_int_equal(sampler_sample(smp, neg, &p, hist3, 1, 1, &r), 4);
    p.repetition_penalty = 1.15f;
    assert_int_equal(sampler_sample(smp, neg, &p, hist3, 1, 1, &r), 3);
    /* Presence and frequency ignore prompt tokens. */
    p.repetition_penalty = 1, p.presence_penalty = 2;
    assert_int_equal(sampler_sample(smp, neg, &p, hist3, 1, 1, &r), 3);
    /* The logits passed in are not modified. */
    assert_true(l[0] == 2.0f && neg[3] == -1.0f);
}

static void test_seeds_reproduce(void **state)
{
    (void)state;
    float l[V];
    known_logits(l);
    fk_sampling_params p = params(1.3f);
    int32_t a[200], b[200], c[200], none[1] = {0};
    rng ra, rb, rc;
    rng_seed(&ra, seed), rng_seed(&rb, seed), rng_seed(&rc, seed + 1);
    for (int i = 0; i < 200; i++) {
        a[i] = sampler_sample(smp, l, &p, none, 0, 0, &ra);
        b[i] = sampler_sample(smp, l, &p, none, 0, 0, &rb);
        c[i] = sampler_sample(smp, l, &p, none, 0, 0, &rc);
    }
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
}

static void test_logprobs(void **state)
{
    (void)state;
    uint64_t g = seed;
    float l[V];
    for (int i = 0; i < V; i++)
        l[i] = tu_uniform(&g, -8, 8);
    double m = -INFINITY, sum = 0;
    for (int i = 0; i < V; i++)
        m = fmax(m, l[i]);
    for (int i = 0; i < V; i++)
        sum += exp(l[i] - m);
    fk_logprob top[V];
    for (int chosen = 0; chosen < V; chosen++) {
        float lp = sampler_logprobs(smp, l, chosen, 3, top);
        assert_true(fabs(lp - (l[chosen] - m - log(sum))) < 1e-5);
    }
    for (int i = 0; i < 3; i++) {
        int rank = 0; /* how many tokens beat top[i] */
        for (int t = 0; t < V; t++)
            rank += l[t] > l[top[i].token];
        assert_int_equal(rank, i);
        assert_true(fabs(top[i].logprob - (l[top[i].token] - m - log(sum))) < 1e-5);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_temperature), cmocka_unit_test(test_top_k),
        cmocka_unit_test(test_top_p),             cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_penalties_move_the_argmax), cmocka_unit_test(test_seeds_reproduce),
        cmocka_unit_test(test_logprobs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
