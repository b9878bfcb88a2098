// add_rms_norm_rows.cuh — rms_norm.cu's residual add and RMSNorm for the few token rows a linear reads, done by every
// block of that linear into its own shared memory (k_linear_quant_norm): the norm kernel and its launch boundary leave
// the decode layer. The arithmetic is add_rms_norm_vec_kernel's (v = fp16(res_in + delta); x = fp16(w * (v * inv_rms))),
// only the sum of squares is added in another order: thread i takes the 16-byte pieces i, i + THREADS, ... of each
// row, and per row the warps' sums meet in shared memory and are added in warp order, so every block gets the same
// bits (and the same as every other run).
#ifndef FK_ADD_RMS_NORM_ROWS_CUH
#define FK_ADD_RMS_NORM_ROWS_CUH

#include "common.cuh"
#include "kernels.h"

// Before the PDL wait (norm_w is a weight, no earlier kernel's output): this thread's pieces of norm_w into w_smem
// [k / 8]. Strong loads, which ptxas keeps ahead of the wait (load_early16). Each thread reads back only its own.
template <int THREADS> __device__ __forceinline__ void stage_norm_weight(uint4 *w_smem, const k_norm_input &a, int k)
{
    const uint4 *w = reinterpret_cast<const uint4 *>(a.norm_w);
    for (int c = threadIdx.x; c < k / 8; c += THREADS)
        w_smem[c] = load_early16(w + c);
}

// After the wait: rows[t][0, k) = x of token t < m (rows `stride` halves apart), from stage_norm_weight's w_smem;
// with `store`, res_out too. Three passes over shared memory, so that the global loads of every token are in flight
// together: v into the rows; the sums of squares; x over v. Ends with a barrier: the rows are then the block's.
template <int THREADS>
__device__ __forceinline__ void add_rms_norm_rows(__half *rows, int stride, const uint4 *w_smem, const k_norm_input &a,
                                                  int m, int k, bool store)
{
    constexpr int WARPS = THREADS / 32;
    __shared__ float warp_sums[K_LINEAR_QUANT_NORM_MAX_M][WARPS];
    const int pieces = k / 8, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint4 *res_in = static_cast<const uint4 *>(a.res_in), *delta = static_cast<const uint4 *>(a.delta);
    uint4 *res_out = static_cast<uint4 *>(a.res_out);
    auto row_of = [&](int t) { return reinterpret_cast<uint4 *>(rows + (size_t)t * stride); };
#pragma unroll 4
    for (int p = threadIdx.x; p < m * pieces; p += THREADS) { // piece p of the [m][k / 8] inputs
        half8 v;
        v.u = res_in[p];
        if (delta) {
            half8 d;
            d.u = delta[p];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __half22float2(v.h2[i]), g = __half22float2(d.h2[i]);
                v.h2[i] = __floats2half2_rn(f.x + g.x, f.y + g.y);
            }
        }
        if (store)
            res_out[p] = v.u;
        row_of(p / pieces)[p % pieces] = v.u;
    }
    __syncthreads();
    for (int t = 0; t < m; t++) {
        const uint4 *row = row_of(t);
        float sum_sq = 0;
        for (int c = threadIdx.x; c < pieces; c += THREADS) {
            half8 v;
            v.u = row[c];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __half22float2(v.h2[i]);
                sum_sq += f.x * f.x + f.y * f.y;
            }
        }
        sum_sq = warp_sum(sum_sq);
        if (lane == 0)
            warp_sums[t][warp] = sum_sq;
    }
    __syncthreads();
    for (int t = 0; t < m; t++) {
        float total = 0;
#pragma unroll
        for (int w = 0; w < WARPS; w++)
            total += warp_sums[t][w];
        const float inv_rms = rsqrtf(total / k + a.eps);
        uint4 *row = row_of(t);
        for (int c = threadIdx.x; c < pieces; c += THREADS) { // the pieces this thread summed: no barrier before
            half8 v, w, y;
            v.u = row[c];
            w.u = w_smem[c];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __half22float2(v.h2[i]), s = __half22float2(w.h2[i]);
                y.h2[i] = __floats2half2_rn(s.x * (f.x * inv_rms), s.y * (f.y * inv_rms));
            }
            row[c] = y.u;
        }
    }
    __syncthreads();
}

#endif
