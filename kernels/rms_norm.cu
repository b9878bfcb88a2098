// rms_norm.cu — residual add fused with RMSNorm: residual += x; out = residual * rsqrt(mean(residual^2) + eps) * w.
// One block per row, statistics in fp32 over the rounded fp16 residual (what is stored is what is normalized).
// Rows whose width is a multiple of 8 (up to 32,768) are read and written 16 bytes per thread, held in registers.
// The same kernel also starts a pass (k_embed_rms_norm): residual = the token's embedding row, then the norm, so that
// the pass's first kernel boundary (embed, then norm1) is not on the path between two decode steps.
#include "common.cuh"
#include "kernels.h"

constexpr int MAX_THREADS = 1024, MAX_CHUNKS = 4; // 16-byte pieces per thread: rows up to 32,768 wide

// Threads for a row of d: one per 8 elements, up to 1024 (then up to MAX_CHUNKS pieces each), at least a warp.
static int threads_for(int d)
{
    int t = (d / 8 + 31) / 32 * 32;
    return t < 32 ? 32 : t > MAX_THREADS ? MAX_THREADS : t;
}

// Each thread keeps its pieces of the row and of w in registers: one read of each, w's before the wait (weights
// are no earlier kernel's output), so a row costs one round trip to memory and the reduction. EMBED: the row read is
// tok's row of the block's token (ids, sampled: token_of), stored into the residual; x is unused.
template <bool EMBED>
__global__ void add_rms_norm_vec_kernel(__half *out, __half *residual, const __half *x, const __half *w, int d,
                                        float eps, bool release_early, const __half *tok, const int32_t *ids,
                                        const int32_t *sampled)
{
    __shared__ float scratch[32];
    uint4 *r = reinterpret_cast<uint4 *>(residual + (size_t)blockIdx.x * d);
    const uint4 *xs = x ? reinterpret_cast<const uint4 *>(x + (size_t)blockIdx.x * d) : nullptr;
    uint4 *o = reinterpret_cast<uint4 *>(out + (size_t)blockIdx.x * d);
    const uint4 *ws = reinterpret_cast<const uint4 *>(w);
    const int chunks = d / 8;
    half8 g[MAX_CHUNKS], v[MAX_CHUNKS];
#pragma unroll
    for (int k = 0; k < MAX_CHUNKS; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        if (c < chunks)
            g[k].u = ws[c];
    }
    pdl_wait_release(release_early);
    const uint4 *in = r; // the row normalized: the residual's, or the token's embedding row
    if (EMBED)
        in = reinterpret_cast<const uint4 *>(tok + (size_t)token_of(ids, sampled, blockIdx.x) * d);
    float sum_sq = 0;
#pragma unroll
    for (int k = 0; k < MAX_CHUNKS; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        if (c >= chunks)
            continue;
        v[k].u = in[c];
        if (EMBED) {
            r[c] = v[k].u;
        } else if (xs) {
            half8 a;
            a.u = xs[c];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __half22float2(v[k].h2[i]), e = __half22float2(a.h2[i]);
                v[k].h2[i] = __floats2half2_rn(f.x + e.x, f.y + e.y);
            }
            r[c] = v[k].u;
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __half22float2(v[k].h2[i]);
            sum_sq += f.x * f.x + f.y * f.y;
        }
    }
    const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / d + eps);
#pragma unroll
    for (int k = 0; k < MAX_CHUNKS; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        if (c >= chunks)
            continue;
        half8 y;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __half22float2(v[k].h2[i]), s = __half22float2(g[k].h2[i]);
            y.h2[i] = __floats2half2_rn(s.x * (f.x * inv_rms), s.y * (f.y * inv_rms));
        }
        o[c] = y.u;
    }
}

__global__ void add_rms_norm_kernel(__half *out, __half *residual, const __half *x, const __half *w, int d, float eps,
                                    bool release_early)
{
    pdl_wait_release(release_early);
    __shared__ float scratch[32];
    __half *r = residual + (size_t)blockIdx.x * d;
    const __half *xs = x ? x + (size_t)blockIdx.x * d : nullptr;
    __half *o = out + (size_t)blockIdx.x * d;
    float sum_sq = 0;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        __half v = xs ? __float2half(__half2float(r[j]) + __half2float(xs[j])) : r[j];
        r[j] = v;
        float f = __half2float(v);
        sum_sq += f * f;
    }
    const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / d + eps);
    for (int j = threadIdx.x; j < d; j += blockDim.x)
        o[j] = __float2half(__half2float(w[j]) * (__half2float(r[j]) * inv_rms));
}

extern "C" cudaError_t k_add_rms_norm(void *out, void *residual, const void *x, const void *w, int n, int d,
                                      float eps, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    const bool vec = d % 8 == 0 && d / 8 <= MAX_THREADS * MAX_CHUNKS;
    if (vec)
        return fk_launch(add_rms_norm_vec_kernel<false>, n, threads_for(d), 0, stream, (__half *)out,
                         (__half *)residual, (const __half *)x, (const __half *)w, d, eps, fk_pdl_release_early,
                         (const __half *)nullptr, (const int32_t *)nullptr, (const int32_t *)nullptr);
    return fk_launch(add_rms_norm_kernel, n, threads_for(d), 0, stream, (__half *)out, (__half *)residual,
                     (const __half *)x, (const __half *)w, d, eps, fk_pdl_release_early);
}

extern "C" cudaError_t k_embed_rms_norm(void *out, void *residual, const void *tok, const int32_t *ids,
                                        const int32_t *sampled, const void *w, int n, int d, float eps,
                                        cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    const bool vec = d % 8 == 0 && d / 8 <= MAX_THREADS * MAX_CHUNKS && (uintptr_t)tok % 16 == 0;
    if (!vec) { // rows the vector kernel cannot hold: the two kernels
        const cudaError_t e = k_embed(residual, tok, ids, sampled, nullptr, nullptr, n, d, stream);
        return e != cudaSuccess ? e : k_add_rms_norm(out, residual, nullptr, w, n, d, eps, stream);
    }
    return fk_launch(add_rms_norm_vec_kernel<true>, n, threads_for(d), 0, stream, (__half *)out, (__half *)residual,
                     (const __half *)nullptr, (const __half *)w, d, eps, fk_pdl_release_early, (const __half *)tok,
                     ids, sampled);
}
