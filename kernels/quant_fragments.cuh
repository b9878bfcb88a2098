// quant_fragments.cuh — quantized weights to m16n8k16 A fragments in registers, exactly (the math of the CPU's q s and
// (q - z) s before the scale): shared by the small-batch kernel (linear_quant.cu, whose header explains the bit
// tricks and the k permutation) and the tiled one (linear_quant_mma.cu). A thread's 16 bytes of a W row (INT8: 16
// k; INT4: 32 k, or 16 k in the first two words) feed MMAs j = 0, 1, ... under one permutation of k that x follows:
// MMA j sees physical k 4j .. 4j + 3 of the thread's span.
#ifndef FK_QUANT_FRAGMENTS_CUH
#define FK_QUANT_FRAGMENTS_CUH

#include <string.h>

#include "common.cuh"
#include "kernels.h"

__device__ __forceinline__ __half2 as_half2(uint32_t u)
{
    __half2 h;
    memcpy(&h, &u, sizeof h);
    return h;
}

__device__ __forceinline__ uint32_t as_u32(__half2 h)
{
    uint32_t u;
    memcpy(&u, &h, sizeof u);
    return u;
}

// Two int8 of `word` (picked by the prmt selector: 0x4140 bytes 0, 1; 0x4342 bytes 2, 3) as an exact fp16 pair.
__device__ __forceinline__ uint32_t int8_pair(uint32_t word, uint32_t selector)
{
    const uint32_t biased = __byte_perm(word ^ 0x80808080u, 0x64646464u, selector); // 1024 + q + 128
    return as_u32(__hsub2(as_half2(biased), as_half2(0x64806480u)));               // - 1152
}

// An INT4 group's zero point z for the pairs below, in both halves: 1024 + z, and -(64 + z).
struct int4_zero {
    __half2 z1024, neg_z64;
};

// The zero of a (scale, zero) pair.
__device__ __forceinline__ int4_zero int4_zero_of(uint32_t sz)
{
    const __half z = __high2half(as_half2(sz));
    return {__half2half2(__hadd(z, __float2half(1024.0f))), __half2half2(__hneg(__hadd(z, __float2half(64.0f))))};
}

// (word & mask) | 0x64006400 in one LOP3 (written as C, the compiler splits it in two: one immediate per LOP3).
__device__ __forceinline__ uint32_t nibbles_0_4(uint32_t word)
{
    uint32_t d;
    asm("lop3.b32 %0, %1, 0x000f000f, 0x64006400, 0xea;" : "=r"(d) : "r"(word));
    return d;
}

__device__ __forceinline__ uint32_t nibbles_1_5(uint32_t word)
{
    uint32_t d;
    asm("lop3.b32 %0, %1, 0x00f000f0, 0x64006400, 0xea;" : "=r"(d) : "r"(word));
    return d;
}

// The A fragment of MMA j from the step's loads of W rows g (lo) and g + 8 (hi): {row g k 2t, 2t+1; row g+8 the
// same; row g k 2t+8, 2t+9; row g+8 the same}, i.e. physical k 4j + 0, 1 and 4j + 2, 3 of each row.
// INT4 pairs: nibbles 0 and 4 of `word` (two consecutive k, quant.h's order) under 0x6400 are the fp16 pair 1024 + q,
// exact; minus 1024 + z leaves q - z. Nibbles 1 and 5 in place are 1024 + 16 q; times 1/16 minus 64 + z (one fma,
// exact: the result is a small integer) leaves q - z. Word j / 2 holds k 8 (j / 2) .. + 7; odd j shift it by 8.
template <int FMT>
__device__ __forceinline__ void a_fragment(uint32_t a[4], const uint4 &lo, const uint4 &hi, int j, int4_zero z_lo,
                                           int4_zero z_hi)
{
    const uint32_t *l = reinterpret_cast<const uint32_t *>(&lo), *h = reinterpret_cast<const uint32_t *>(&hi);
    if constexpr (FMT == K_QUANT_INT8) { // word j holds k 4j .. 4j + 3
        a[0] = int8_pair(l[j], 0x4140), a[1] = int8_pair(h[j], 0x4140);
        a[2] = int8_pair(l[j], 0x4342), a[3] = int8_pair(h[j], 0x4342);
    } else {
        const uint32_t wl = l[j / 2] >> (8 * (j % 2)), wh = h[j / 2] >> (8 * (j % 2));
        const __half2 sixteenth = as_half2(0x2c002c00u); // 1/16 in both halves
        a[0] = as_u32(__hsub2(as_half2(nibbles_0_4(wl)), z_lo.z1024));
        a[1] = as_u32(__hsub2(as_half2(nibbles_0_4(wh)), z_hi.z1024));
        a[2] = as_u32(__hfma2(as_half2(nibbles_1_5(wl)), sixteenth, z_lo.neg_z64));
        a[3] = as_u32(__hfma2(as_half2(nibbles_1_5(wh)), sixteenth, z_hi.neg_z64));
    }
}

#endif
