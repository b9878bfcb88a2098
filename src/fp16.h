/* fp16.h — IEEE half and bfloat16 to/from float32 on the host (exact for every input; round to nearest even). */
#ifndef FK_FP16_H
#define FK_FP16_H

#include <stdint.h>
#include <string.h>

static inline float fk_bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t fk_f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float bf16_to_f32(uint16_t h)
{
    return fk_bits_to_f32((uint32_t)h << 16);
}

static inline uint16_t f32_to_bf16(float f)
{
    uint32_t u = fk_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a quiet NaN */
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static inline float fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0x1f) /* inf / NaN */
        return fk_bits_to_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) { /* zero / subnormal: man * 2^-24 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return fk_bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t f32_to_fp16(float f)
{
    uint32_t u = fk_f32_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7e00; /* NaN */
    if (a >= 0x477ff000u)     /* rounds to >= 65520: overflow to inf */
        return sign | 0x7c00;
    if (a < 0x38800000u) { /* below the smallest normal half (2^-14): subnormal or zero */
        if (a < 0x33000000u) /* below half of the smallest subnormal (2^-25): zero */
            return sign;
        uint32_t man = (a & 0x7fffff) | 0x800000;
        int shift = 126 - (int)(a >> 23); /* 14..24 bits to drop past the half mantissa */
        uint32_t r = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (r & 1)))
            r++;
        return sign | (uint16_t)r;
    }
    a += 0x0fffu + ((a >> 13) & 1); /* round to nearest even on the 13 dropped bits */
    return sign | (uint16_t)((a - 0x38000000u) >> 13);
}

#endif
