// linear_quant_small.cuh — what the two small-batch quantized linears share: linear_quant.cu (W streamed through
// registers; its header explains the fragments) and linear_quant_staged.cu (W staged in shared memory by bulk copies).
// The tile shapes, one k-step's MMAs on a row tile, and the epilogue that writes a block's tile of y from its sums.
#ifndef FK_LINEAR_QUANT_SMALL_CUH
#define FK_LINEAR_QUANT_SMALL_CUH

#include "common.cuh"
#include "kernels.h"
#include "linear_sums.cuh"
#include "quant_fragments.cuh"

namespace quant_small {

constexpr int TILE_ROWS = 16;  // rows of W in a row tile
constexpr int TOKEN_TILE = 8;  // tokens in a token tile
constexpr int GROUP = 128;     // INT4 inputs per scale
constexpr int STEP_BYTES = 64; // bytes of a W row per step (4 threads x 16), both formats

// k per step: 64 for INT8 (16 bytes a thread, 4 MMAs), 128 for INT4 (32 nibbles, 8 MMAs: one group).
template <int FMT> __host__ __device__ constexpr int step_k()
{
    return FMT == K_QUANT_INT8 ? 64 : 128;
}

// SiLU·mul pairs gate and up row tiles; the others take two row tiles above two token tiles (9..16 tokens), else one.
template <int EPI, int NT> __host__ __device__ constexpr int row_tiles()
{
    return EPI == K_LINEAR_SILU_MUL || NT == 2 ? 2 : 1;
}

// Rows of y a block's tile covers.
template <int EPI, int NT> __host__ __device__ constexpr int block_rows()
{
    return EPI == K_LINEAR_SILU_MUL ? TILE_ROWS : TILE_ROWS * row_tiles<EPI, NT>();
}

// Local row lr (0..15) of row tile rt of the tile starting at y row r0: its row of y, and of W (SiLU·mul: the up rows
// are n further on).
template <int EPI> __device__ __forceinline__ int y_row(int r0, int rt, int lr)
{
    return r0 + (EPI == K_LINEAR_SILU_MUL ? 0 : rt * TILE_ROWS) + lr;
}

template <int EPI> __device__ __forceinline__ int w_row(int r0, int rt, int lr, int n)
{
    return (EPI == K_LINEAR_SILU_MUL ? rt * n : 0) + y_row<EPI>(r0, rt, lr);
}

// One k-step of one row tile: acc[nt] += W rows (g, g + 8) x tokens of token tile nt, from the thread's 16-byte pieces
// of the two rows (lo, hi), their group's (scale, zero) pairs (INT4) and its x vectors. INT8 sums q x (the row's scale
// comes in the epilogue); INT4 sums each step's (q - z) x in a fresh accumulator, then adds it times the scale.
template <int FMT, int NT>
__device__ __forceinline__ void step_mma(float (&acc)[NT][4], const uint4 &lo, const uint4 &hi, uint32_t sz_lo,
                                         uint32_t sz_hi, const uint4 (&x)[NT][step_k<FMT>() / 32])
{
    constexpr int MMAS = step_k<FMT>() / 16;
    int4_zero z_lo = {}, z_hi = {};
    if constexpr (FMT == K_QUANT_INT4)
        z_lo = int4_zero_of(sz_lo), z_hi = int4_zero_of(sz_hi);
    // INT4: this step's group before its scale, in two accumulators (even and odd j) so that two chains of MMAs
    // are in flight
    float part[2][NT][4] = {};
#pragma unroll
    for (int j = 0; j < MMAS; j++) {
        uint32_t a[4];
        a_fragment<FMT>(a, lo, hi, j, z_lo, z_hi);
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const uint32_t *xv = reinterpret_cast<const uint32_t *>(&x[nt][0]);
            const uint32_t b[2] = {xv[2 * j], xv[2 * j + 1]};
            mma_16816(FMT == K_QUANT_INT8 ? acc[nt] : part[j % 2][nt], a, b);
        }
    }
    if constexpr (FMT == K_QUANT_INT4) {
        // accumulators 0, 1 hold row g, 2, 3 row g + 8
        const float s_lo = __low2float(as_half2(sz_lo)), s_hi = __low2float(as_half2(sz_hi));
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[nt][e] += (e < 2 ? s_lo : s_hi) * (part[0][nt][e] + part[1][nt][e]);
    }
}

// The epilogue of a block's tile (first y row r0) from its sums (linear_sums.cuh's tile_sums: entry i = threadIdx.x +
// q * THREADS of each row tile): INT8's row scale, the bias, GELU or SiLU·mul, fp16 out.
template <int FMT, int EPI, int RT, int NT, int WARPS>
__device__ __forceinline__ void write_tile(__half *__restrict__ y, const float (&sum)[RT][sums_per_thread<WARPS, NT>()],
                                           const __half *__restrict__ scales, const __half *__restrict__ bias, int m,
                                           int n, int r0)
{
    constexpr int THREADS = 32 * WARPS, FRAG = NT * 4 * 32, PER = sums_per_thread<WARPS, NT>();
    auto scaled = [&](float v, int w_r) { return FMT == K_QUANT_INT8 ? v * __half2float(scales[w_r]) : v; };
#pragma unroll
    for (int q = 0; q < PER; q++) {
        const int i = threadIdx.x + q * THREADS;
        if (i >= FRAG)
            continue;
        const int l = i % 32, e = (i / 32) % 4, nt = i / 128;
        const int lr = l / 4 + (e >= 2 ? 8 : 0), token = nt * TOKEN_TILE + 2 * (l % 4) + (e & 1);
        if (token >= m)
            continue;
#pragma unroll
        for (int rt = 0; rt < (EPI == K_LINEAR_SILU_MUL ? 1 : RT); rt++) {
            const int row = y_row<EPI>(r0, rt, lr);
            if (row >= n)
                continue;
            float v = scaled(sum[rt][q], w_row<EPI>(r0, rt, lr, n)) + (bias ? __half2float(bias[row]) : 0.0f);
            if (EPI == K_LINEAR_GELU)
                v = gelu_tanh(v);
            if (EPI == K_LINEAR_SILU_MUL)
                v = silu_mul(v, scaled(sum[1][q], w_row<EPI>(r0, 1, lr, n)) + (bias ? __half2float(bias[n + row]) : 0.0f));
            y[(size_t)token * n + row] = __float2half(v);
        }
    }
}

} // namespace quant_small

#endif
