// embed.cu — token embedding gather (+ learned positions for GPT-2). One block per token, 16-byte accesses.
#include "common.cuh"
#include "kernels.h"

__global__ void embed_kernel(__half *out, const __half *tok, const int32_t *ids, const __half *pos,
                             const int32_t *positions, int d)
{
    pdl_wait();
    pdl_launch_dependents();
    const int i = blockIdx.x;
    const __half *t = tok + (size_t)ids[i] * d;
    const __half *p = pos ? pos + (size_t)positions[i] * d : nullptr;
    __half *o = out + (size_t)i * d;
    for (int j = threadIdx.x; j < d; j += blockDim.x)
        o[j] = p ? __float2half(__half2float(t[j]) + __half2float(p[j])) : t[j];
}

extern "C" cudaError_t k_embed(void *out, const void *tok, const int32_t *ids, const void *pos,
                               const int32_t *positions, int n, int d, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    return fk_launch(embed_kernel, n, 128, 0, stream, (__half *)out, (const __half *)tok, ids, (const __half *)pos,
                     positions, d);
}
