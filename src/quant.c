/* quant.c — INT8 / INT4 weight quantization at load time and its inverse (layouts and rounding in quant.h). */
#include "quant.h"

#include <math.h>

#include "error.h"
#include "fp16.h"

size_t quant_data_bytes(fk_quantization f, int rows, int cols)
{
    const size_t n = (size_t)rows * (size_t)cols;
    return f == FK_QUANT_INT8 ? n : f == FK_QUANT_INT4 ? n / 2 : 0;
}

size_t quant_scale_bytes(fk_quantization f, int rows, int cols)
{
    if (f == FK_QUANT_INT8)
        return (size_t)rows * sizeof(uint16_t);
    if (f == FK_QUANT_INT4)
        return (size_t)rows * (size_t)(cols / QUANT_GROUP) * 2 * sizeof(uint16_t);
    return 0;
}

fk_status quant_check(fk_quantization f, int cols, fk_error *err)
{
    if (f == FK_QUANT_INT4 && cols % QUANT_GROUP)
        return fk_error_set(err, FK_ERR_UNSUPPORTED,
                            "int4 quantizes groups of %d inputs, and the input size %d is not a multiple of %d",
                            QUANT_GROUP, cols, QUANT_GROUP);
    return FK_OK;
}

/* The smallest fp16 >= s (s >= 0), at most the largest finite one: a step no smaller than the range asks keeps
 * every weight within reach, so rounding errs by half a step at most. */
static uint16_t scale_up(float s)
{
    uint16_t h = f32_to_fp16(s);
    if (h < 0x7c00 && fp16_to_f32(h) < s)
        h++;
    return h < 0x7c00 ? h : 0x7bff;
}

/* v rounded to the nearest integer (ties to even), within [lo, hi] (NaN: lo). */
static int round_clamp(float v, int lo, int hi)
{
    return v >= (float)hi ? hi : v > (float)lo ? (int)lrintf(v) : lo;
}

static void pack_int8_row(const float *w, int cols, int8_t *q, uint16_t *scale)
{
    float amax = 0;
    for (int k = 0; k < cols; k++)
        amax = fabsf(w[k]) > amax ? fabsf(w[k]) : amax;
    *scale = scale_up(amax / 127);
    const float s = fp16_to_f32(*scale), inv = s > 0 ? 1 / s : 0; /* w * inv errs from w / s by an ulp: moot */
    for (int k = 0; k < cols; k++)
        q[k] = (int8_t)round_clamp(w[k] * inv, -127, 127);
}

/* Nibble of input e (0..7) of a 32-bit word: the even inputs in the low 16 bits, the odd ones in the high. */
static int nibble_of(int e)
{
    return (e & 1) * 4 + e / 2;
}

static void pack_int4_row(const float *w, int cols, uint32_t *words, uint16_t *scale_zero)
{
    for (int g = 0; g < cols / QUANT_GROUP; g++) {
        const float *v = w + (size_t)g * QUANT_GROUP;
        float lo = 0, hi = 0;
        for (int k = 0; k < QUANT_GROUP; k++)
            lo = v[k] < lo ? v[k] : lo, hi = v[k] > hi ? v[k] : hi;
        const uint16_t sh = scale_up((hi - lo) / 15);
        const float s = fp16_to_f32(sh), inv = s > 0 ? 1 / s : 0;
        const int z = round_clamp(-lo * inv, 0, 15);
        scale_zero[2 * g] = sh;
        scale_zero[2 * g + 1] = f32_to_fp16((float)z);
        for (int i = 0; i < QUANT_GROUP / 8; i++) {
            uint32_t word = 0;
            for (int e = 0; e < 8; e++)
                word |= (uint32_t)round_clamp(v[8 * i + e] * inv + (float)z, 0, 15) << (4 * nibble_of(e));
            words[(size_t)g * (QUANT_GROUP / 8) + i] = word;
        }
    }
}

void quant_pack(fk_quantization f, const float *w, int rows, int cols, void *data, uint16_t *scales)
{
    const size_t scales_per_row = quant_scale_bytes(f, 1, cols) / sizeof(uint16_t);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        const float *row = w + (size_t)r * cols;
        if (f == FK_QUANT_INT8)
            pack_int8_row(row, cols, (int8_t *)data + (size_t)r * cols, scales + r);
        else
            pack_int4_row(row, cols, (uint32_t *)data + (size_t)r * (cols / 8), scales + (size_t)r * scales_per_row);
    }
}

void quant_unpack_rows(fk_quantization f, const void *data, const uint16_t *scales, int cols, int r0, int n,
                       float *out)
{
    for (int r = r0; r < r0 + n; r++, out += cols) {
        if (f == FK_QUANT_INT8) {
            const int8_t *q = (const int8_t *)data + (size_t)r * cols;
            const float s = fp16_to_f32(scales[r]);
            for (int k = 0; k < cols; k++)
                out[k] = (float)q[k] * s;
            continue;
        }
        const uint32_t *words = (const uint32_t *)data + (size_t)r * (cols / 8);
        const uint16_t *sz = scales + (size_t)r * (cols / QUANT_GROUP) * 2;
        for (int k0 = 0; k0 < cols; k0 += QUANT_GROUP) {
            const float s = fp16_to_f32(sz[2 * (k0 / QUANT_GROUP)]), z = fp16_to_f32(sz[2 * (k0 / QUANT_GROUP) + 1]);
            for (int k = k0; k < k0 + QUANT_GROUP; k++)
                out[k] = ((float)((words[k / 8] >> (4 * nibble_of(k % 8))) & 15) - z) * s;
        }
    }
}
