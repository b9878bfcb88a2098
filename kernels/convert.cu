// convert.cu — half <-> float arrays (logits to the host, float32 weights to the device).
#include "common.cuh"
#include "kernels.h"

__global__ void half_to_float_kernel(float *out, const __half *in, size_t n)
{
    pdl_wait();
    pdl_launch_dependents();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __half2float(in[i]);
}

__global__ void float_to_half_kernel(__half *out, const float *in, size_t n)
{
    pdl_wait();
    pdl_launch_dependents();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __float2half_rn(in[i]);
}

static int blocks_for(size_t n)
{
    return (int)((n + 255) / 256 < 65535 ? (n + 255) / 256 : 65535);
}

extern "C" cudaError_t k_half_to_float(float *out, const void *in, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return fk_launch(half_to_float_kernel, blocks_for(n), 256, 0, stream, out, (const __half *)in, n);
}

extern "C" cudaError_t k_float_to_half(void *out, const float *in, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return fk_launch(float_to_half_kernel, blocks_for(n), 256, 0, stream, (__half *)out, in, n);
}
