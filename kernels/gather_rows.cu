// gather_rows.cu — out[m][d] = x[rows[i]]: the rows whose logits are wanted.
#include "common.cuh"
#include "kernels.h"

__global__ void gather_rows_kernel(__half *out, const __half *x, const int32_t *rows, int d)
{
    pdl_wait();
    pdl_launch_dependents();
    const __half *src = x + (size_t)rows[blockIdx.x] * d;
    __half *dst = out + (size_t)blockIdx.x * d;
    for (int j = threadIdx.x; j < d; j += blockDim.x)
        dst[j] = src[j];
}

extern "C" cudaError_t k_gather_rows(void *out, const void *x, const int32_t *rows, int m, int d, cudaStream_t stream)
{
    if (m <= 0)
        return cudaSuccess;
    return fk_launch(gather_rows_kernel, m, 128, 0, stream, (__half *)out, (const __half *)x, rows, d);
}
