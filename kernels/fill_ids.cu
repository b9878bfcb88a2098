// fill_ids.cu — ids[dst[i]] = tokens[src[i]]: the input ids of an overlapped step that the step before sampled,
// copied on the device so that the host schedules the next step without waiting for them.
#include "common.cuh"
#include "kernels.h"

__global__ void fill_ids_kernel(int32_t *ids, const int32_t *dst, const int32_t *tokens, const int32_t *src, int n)
{
    pdl_wait();
    pdl_launch_dependents();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        ids[dst[i]] = tokens[src[i]];
}

extern "C" cudaError_t k_fill_ids(int32_t *ids, const int32_t *dst, const int32_t *tokens, const int32_t *src, int n,
                                  cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    return fk_launch(fill_ids_kernel, (n + 255) / 256, 256, 0, stream, ids, dst, tokens, src, n);
}
