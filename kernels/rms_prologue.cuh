// rms_prologue.cuh — the RMSNorm of a small-batch linear's input, fused into the linear (linear_small.cu,
// linear_quant.cu): x is the residual stream [m][k] and the linear multiplies RMSNorm(x) * norm_w, as add_rms_norm
// (rms_norm.cu) followed by the linear would, without the norm's kernel and its [m][k] round trip. Each block first
// computes 1 / rms of the m rows (k is the hidden size: a few KB per token, from L2), then normalizes every x
// fragment as it loads it, rounding to fp16 exactly where rms_norm.cu rounds its output.
#ifndef FK_RMS_PROLOGUE_CUH
#define FK_RMS_PROLOGUE_CUH

#include "common.cuh"

constexpr int RMS_MAX_TOKENS = 64; // rows a block normalizes (the small linears' largest pass)

// inv[token] = 1 / sqrt(mean(x[token]^2) + eps) for token < m (0 above, up to RMS_MAX_TOKENS): warp w takes rows w,
// w + WARPS, ..., its lanes 16-byte chunks of the row, RMS_LOADS of them requested before any is used (a row of
// up to 2,048 inputs costs one round trip to L2, not one per chunk), then a warp sum in fixed order (the result never
// depends on timing). k % 8 == 0, x 16-byte aligned. Ends with __syncthreads: every thread may read inv.
constexpr int RMS_LOADS = 8;
template <int WARPS>
__device__ __forceinline__ void rms_inv_rows(const __half *__restrict__ x, int m, int k, float eps, float *inv)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, chunks = k / 8;
    for (int token = warp; token < RMS_MAX_TOKENS; token += WARPS) {
        float sum_sq = 0;
        const uint4 *row = reinterpret_cast<const uint4 *>(x + (size_t)token * k);
        for (int c0 = 0; token < m && c0 < chunks; c0 += 32 * RMS_LOADS) {
            half8 v[RMS_LOADS];
#pragma unroll
            for (int r = 0; r < RMS_LOADS; r++) {
                const int c = c0 + 32 * r + lane;
                v[r].u = c < chunks ? __ldg(row + c) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int r = 0; r < RMS_LOADS; r++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float2 f = __half22float2(v[r].h2[i]);
                    sum_sq += f.x * f.x + f.y * f.y;
                }
        }
        sum_sq = warp_sum(sum_sq);
        if (lane == 0)
            inv[token] = token < m ? rsqrtf(sum_sq / k + eps) : 0.0f;
    }
    __syncthreads();
}

// Eight inputs of one row normalized: w * (x * inv), rounded to fp16 (rms_norm.cu's expression).
__device__ __forceinline__ uint4 rms_apply(uint4 x, uint4 w, float inv)
{
    half8 v, g, y;
    v.u = x, g.u = w;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 f = __half22float2(v.h2[i]), s = __half22float2(g.h2[i]);
        y.h2[i] = __floats2half2_rn(s.x * (f.x * inv), s.y * (f.y * inv));
    }
    return y.u;
}

// The epilogue's store: y = v, or with add (the residual stream, old its value read before) y = old + v, v rounded
// to fp16 first, as a linear's output added by add_rms_norm would be.
__device__ __forceinline__ void store_or_add(__half *y, float v, bool add, __half old)
{
    *y = add ? __float2half(__half2float(old) + __half2float(__float2half(v))) : __float2half(v);
}

#endif
