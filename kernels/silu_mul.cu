// silu_mul.cu — SwiGLU's activation: out[n][f] = silu(gate) * up, gate_up[n] = [gate (f) | up (f)], fp32 math.
#include "common.cuh"
#include "kernels.h"

__global__ void silu_mul_kernel(__half *out, const __half *gate_up, int f, size_t total)
{
    pdl_wait();
    pdl_launch_dependents();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t row = i / f, col = i % f;
        const float g = __half2float(gate_up[row * 2 * f + col]), u = __half2float(gate_up[row * 2 * f + f + col]);
        out[i] = __float2half(silu_mul(g, u));
    }
}

extern "C" cudaError_t k_silu_mul(void *out, const void *gate_up, int n, int f, cudaStream_t stream)
{
    const size_t total = (size_t)n * f;
    if (total == 0)
        return cudaSuccess;
    const int blocks = (int)((total + 255) / 256 < 65535 ? (total + 255) / 256 : 65535);
    return fk_launch(silu_mul_kernel, blocks, 256, 0, stream, (__half *)out, (const __half *)gate_up, f, total);
}
