// bias_gelu.cu — GPT-2's first MLP GEMM epilogue as one pass over its output: y[n][out] = gelu_tanh(y + bias[out])
// with gelu_tanh(a) = 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) (gelu_new), fp32 math. Memory-bound: each
// thread moves 8 halves (16 bytes) when the row length allows, else one.
#include "common.cuh"
#include "kernels.h"

// out % 8 == 0 and y, bias 16-byte aligned: groups of 8 never straddle a row.
__global__ void bias_gelu_vec8_kernel(__half *y, const __half *bias, size_t groups, int out)
{
    pdl_wait();
    pdl_launch_dependents();
    const int groups_per_row = out / 8;
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < groups; g += (size_t)gridDim.x * blockDim.x) {
        uint4 v = reinterpret_cast<uint4 *>(y)[g];
        __half2 *h = reinterpret_cast<__half2 *>(&v);
        uint4 bv = make_uint4(0, 0, 0, 0);
        if (bias)
            bv = reinterpret_cast<const uint4 *>(bias)[g % groups_per_row];
        const __half2 *bh = reinterpret_cast<const __half2 *>(&bv);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 a = __half22float2(h[i]), b = __half22float2(bh[i]);
            h[i] = __floats2half2_rn(gelu_tanh(a.x + b.x), gelu_tanh(a.y + b.y));
        }
        reinterpret_cast<uint4 *>(y)[g] = v;
    }
}

__global__ void bias_gelu_kernel(__half *y, const __half *bias, size_t total, int out)
{
    pdl_wait();
    pdl_launch_dependents();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2half(gelu_tanh(__half2float(y[i]) + (bias ? __half2float(bias[i % out]) : 0.0f)));
}

extern "C" cudaError_t k_bias_gelu(void *y, const void *bias, int n, int out, cudaStream_t stream)
{
    const size_t total = (size_t)n * out;
    if (total == 0)
        return cudaSuccess;
    const bool vec = out % 8 == 0 && (uintptr_t)y % 16 == 0 && (uintptr_t)bias % 16 == 0;
    const size_t items = vec ? total / 8 : total;
    const int blocks = (int)((items + 255) / 256 < 65535 ? (items + 255) / 256 : 65535);
    return fk_launch(vec ? bias_gelu_vec8_kernel : bias_gelu_kernel, blocks, 256, 0, stream, (__half *)y,
                     (const __half *)bias, items, out);
}
