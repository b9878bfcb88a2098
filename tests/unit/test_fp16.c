/* test_fp16.c — half and bfloat16 conversions (fp16.h) against the compiler's _Float16 and a double-precision
 * round-to-nearest-even reference: every half, and random floats across the whole range. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fp16.h"
#include "test_util.h"

static uint64_t rng;

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_every_half_to_float(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t bits = (uint16_t)h;
        _Float16 ref;
        memcpy(&ref, &bits, 2);
        float want = (float)ref, got = fp16_to_f32(bits);
        if (isnan(want))
            assert_true(isnan(got));
        else if (memcmp(&want, &got, 4) != 0)
            fail_msg("half 0x%04x: got %a, want %a", h, (double)got, (double)want);
    }
}

/* A random float: any sign, exponents concentrated where halves live, plus specials. */
static float random_float(void)
{
    uint32_t u = (uint32_t)tu_below(&rng, UINT32_MAX);
    switch (tu_below(&rng, 4)) {
    case 0: return bits_f32(u); /* anything, NaN and inf included */
    case 1: return bits_f32((u & 0x807fffffu) | ((100u + tu_below(&rng, 45)) << 23)); /* 2^-27 .. 2^17 */
    case 2: return bits_f32((u & 0x807fffffu) | ((102u + tu_below(&rng, 12)) << 23)); /* half subnormals */
    default: return bits_f32((u & 0x800fffffu) | 0x477f0000u); /* around the overflow threshold */
    }
}

static void test_float_to_half(void **state)
{
    (void)state;
    for (int i = 0; i < 2000000; i++) {
        float f = random_float();
        _Float16 ref = (_Float16)f;
        uint16_t want, got = f32_to_fp16(f);
        memcpy(&want, &ref, 2);
        if (isnan(f))
            assert_true((got & 0x7c00) == 0x7c00 && (got & 0x3ff));
        else if (got != want)
            fail_msg("%a: got 0x%04x, want 0x%04x", (double)f, got, want);
    }
}

/* A bfloat16's value for rounding: infinity counts as 2^128, the next power of two past the largest finite. */
static double rounding_value(uint16_t b)
{
    float v = bf16_to_f32(b);
    return isinf(v) ? copysign(ldexp(1.0, 128), v) : v;
}

/* The nearest bfloat16 by comparing the two neighbours of f in double, ties to even. */
static uint16_t reference_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1); /* truncated, and the next away from zero */
    double dlo = fabs(rounding_value(lo) - f), dhi = fabs(rounding_value(hi) - f);
    if (dlo != dhi)
        return dlo < dhi ? lo : hi;
    return (lo & 1) ? hi : lo;
}

static void test_float_to_bf16(void **state)
{
    (void)state;
    for (int i = 0; i < 2000000; i++) {
        float f = random_float();
        uint16_t got = f32_to_bf16(f);
        if (isnan(f)) {
            assert_true(isnan(bf16_to_f32(got)));
            continue;
        }
        if (isinf(f)) {
            assert_true(bf16_to_f32(got) == f);
            continue;
        }
        uint16_t want = reference_bf16(f);
        if (got != want)
            fail_msg("%a: got 0x%04x, want 0x%04x", (double)f, got, want);
    }
}

int main(void)
{
    rng = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_half_to_float),
        cmocka_unit_test(test_float_to_half),
        cmocka_unit_test(test_float_to_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
