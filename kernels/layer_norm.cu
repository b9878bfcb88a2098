// layer_norm.cu — residual add fused with LayerNorm (GPT-2): residual += x; out = (r - mean) / sqrt(var + eps) * w + b.
// One block per row; two-pass mean and variance in fp32.
#include "common.cuh"
#include "kernels.h"

__global__ void add_layer_norm_kernel(__half *out, __half *residual, const __half *x, const __half *w,
                                      const __half *bias, int d, float eps)
{
    pdl_wait();
    pdl_launch_dependents();
    __shared__ float scratch[32];
    __half *r = residual + (size_t)blockIdx.x * d;
    const __half *xs = x ? x + (size_t)blockIdx.x * d : nullptr;
    __half *o = out + (size_t)blockIdx.x * d;
    float sum = 0;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        __half v = xs ? __float2half(__half2float(r[j]) + __half2float(xs[j])) : r[j];
        r[j] = v;
        sum += __half2float(v);
    }
    const float mean = block_sum(sum, scratch) / d;
    float sum_sq = 0;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        float c = __half2float(r[j]) - mean;
        sum_sq += c * c;
    }
    const float inv_std = rsqrtf(block_sum(sum_sq, scratch) / d + eps);
    for (int j = threadIdx.x; j < d; j += blockDim.x)
        o[j] = __float2half((__half2float(r[j]) - mean) * inv_std * __half2float(w[j]) + __half2float(bias[j]));
}

extern "C" cudaError_t k_add_layer_norm(void *out, void *residual, const void *x, const void *w, const void *bias,
                                        int n, int d, float eps, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    const int threads = d >= 2048 ? 256 : d >= 512 ? 128 : 64;
    return fk_launch(add_layer_norm_kernel, n, threads, 0, stream, (__half *)out, (__half *)residual,
                     (const __half *)x, (const __half *)w, (const __half *)bias, d, eps);
}
