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

// The pair (q[2i], q[2i + 1]) - z of the nibbles at `word >> 4i` (z1024: 1024 + z in both halves), exact.
__device__ __forceinline__ uint32_t int4_pair(uint32_t shifted, __half2 z1024)
{
    return as_u32(__hsub2(as_half2((shifted & 0x000f000fu) | 0x64006400u), z1024));
}

// The A fragment of MMA j from the step's loads of W rows g (lo) and g + 8 (hi): {row g k 2t, 2t+1; row g+8 the
// same; row g k 2t+8, 2t+9; row g+8 the same}, i.e. physical k 4j + 0, 1 and 4j + 2, 3 of each row.
template <int FMT>
__device__ __forceinline__ void a_fragment(uint32_t a[4], const uint4 &lo, const uint4 &hi, int j, __half2 z_lo,
                                           __half2 z_hi)
{
    const uint32_t *l = reinterpret_cast<const uint32_t *>(&lo), *h = reinterpret_cast<const uint32_t *>(&hi);
    if constexpr (FMT == K_QUANT_INT8) { // word j holds k 4j .. 4j + 3
        a[0] = int8_pair(l[j], 0x4140), a[1] = int8_pair(h[j], 0x4140);
        a[2] = int8_pair(l[j], 0x4342), a[3] = int8_pair(h[j], 0x4342);
    } else { // word j / 2 holds k 8 (j / 2) .. + 7: pairs 2 (j % 2) and 2 (j % 2) + 1 of it
        const uint32_t wl = l[j / 2] >> (8 * (j % 2)), wh = h[j / 2] >> (8 * (j % 2));
        a[0] = int4_pair(wl, z_lo), a[1] = int4_pair(wh, z_hi);
        a[2] = int4_pair(wl >> 4, z_lo), a[3] = int4_pair(wh >> 4, z_hi);
    }
}

// 1024 + z of a (scale, zero) pair, in both halves.
__device__ __forceinline__ __half2 zero1024(uint32_t sz)
{
    return __half2half2(__hadd(__high2half(as_half2(sz)), __float2half(1024.0f)));
}

#endif
