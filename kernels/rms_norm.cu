// rms_norm.cu — residual add fused with RMSNorm: residual += x; out = residual * rsqrt(mean(residual^2) + eps) * w.
// One block per row, statistics in fp32 over the rounded fp16 residual (what is stored is what is normalized).
// Rows whose width is a multiple of 8 are read and written 16 bytes per thread (one access each for d <= 2048).
#include "common.cuh"
#include "kernels.h"

// Threads for a row of d: one per 8 elements, up to 256, at least a warp.
static int threads_for(int d)
{
    int t = (d / 8 + 31) / 32 * 32;
    return t < 32 ? 32 : t > 256 ? 256 : t;
}

__global__ void add_rms_norm_vec_kernel(__half *out, __half *residual, const __half *x, const __half *w, int d, float eps)
{
    pdl_wait();
    pdl_launch_dependents();
    __shared__ float scratch[32];
    uint4 *r = reinterpret_cast<uint4 *>(residual + (size_t)blockIdx.x * d);
    const uint4 *xs = x ? reinterpret_cast<const uint4 *>(x + (size_t)blockIdx.x * d) : nullptr;
    uint4 *o = reinterpret_cast<uint4 *>(out + (size_t)blockIdx.x * d);
    const uint4 *ws = reinterpret_cast<const uint4 *>(w);
    const int chunks = d / 8;
    float sum_sq = 0;
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
        half8 v, a;
        v.u = r[c];
        if (xs) {
            a.u = xs[c];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __half22float2(v.h2[i]), g = __half22float2(a.h2[i]);
                v.h2[i] = __floats2half2_rn(f.x + g.x, f.y + g.y);
            }
            r[c] = v.u;
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __half22float2(v.h2[i]);
            sum_sq += f.x * f.x + f.y * f.y;
        }
    }
    const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / d + eps);
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
        half8 v, g, y;
        v.u = r[c], g.u = ws[c];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __half22float2(v.h2[i]), s = __half22float2(g.h2[i]);
            y.h2[i] = __floats2half2_rn(s.x * (f.x * inv_rms), s.y * (f.y * inv_rms));
        }
        o[c] = y.u;
    }
}

__global__ void add_rms_norm_kernel(__half *out, __half *residual, const __half *x, const __half *w, int d, float eps)
{
    pdl_wait();
    pdl_launch_dependents();
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
    return fk_launch(d % 8 == 0 ? add_rms_norm_vec_kernel : add_rms_norm_kernel, n, threads_for(d), 0, stream,
                     (__half *)out, (__half *)residual, (const __half *)x, (const __half *)w, d, eps);
}
