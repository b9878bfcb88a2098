// add_bias.cu — y[n][out] += bias[out] (after a cuBLAS GEMM that has no bias).
#include "common.cuh"
#include "kernels.h"

__global__ void add_bias_kernel(__half *y, const __half *bias, size_t total, int out)
{
    pdl_wait();
    pdl_launch_dependents();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2half(__half2float(y[i]) + __half2float(bias[i % out]));
}

extern "C" cudaError_t k_add_bias(void *y, const void *bias, int n, int out, cudaStream_t stream)
{
    const size_t total = (size_t)n * out;
    if (total == 0)
        return cudaSuccess;
    const int blocks = (int)((total + 255) / 256 < 65535 ? (total + 255) / 256 : 65535);
    return fk_launch(add_bias_kernel, blocks, 256, 0, stream, (__half *)y, (const __half *)bias, total, out);
}
