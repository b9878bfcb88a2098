// rope_store_kv.cu — RoPE on q and k (rotate-half, as Hugging Face's Llama), fused with writing k and v into the
// paged cache through slot_mapping. One block per token; each angle (pos * inv_freq[j], fp32, full-precision sincos)
// is computed once and shared by every head.
#include "common.cuh"
#include "kernels.h"

__global__ void rope_store_kv_kernel(__half *qkv, const int32_t *positions, const float *inv_freq,
                                     const int32_t *slots, __half *k_cache, __half *v_cache, int n_heads,
                                     int n_kv_heads, int D, int B)
{
    __shared__ float cos_j[512], sin_j[512]; // head_dim <= 1024
    const int t = blockIdx.x, half_d = D / 2;
    __half *row = qkv + (size_t)t * (n_heads + 2 * n_kv_heads) * D;
    if (inv_freq) {
        const float pos = (float)positions[t];
        for (int j = threadIdx.x; j < half_d; j += blockDim.x)
            sincosf(pos * inv_freq[j], &sin_j[j], &cos_j[j]);
        __syncthreads();
        for (int i = threadIdx.x; i < (n_heads + n_kv_heads) * half_d; i += blockDim.x) {
            const int h = i / half_d, j = i % half_d;
            const float s = sin_j[j], c = cos_j[j];
            __half *x = row + (size_t)h * D;
            const float x1 = __half2float(x[j]), x2 = __half2float(x[j + half_d]);
            x[j] = __float2half(x1 * c - x2 * s);
            x[j + half_d] = __float2half(x2 * c + x1 * s);
        }
        __syncthreads(); // k is rotated before it is stored
    }
    const int slot = slots[t];
    if (slot < 0)
        return;
    const int blk = slot / B, off = slot % B;
    const __half *k = row + (size_t)n_heads * D, *v = k + (size_t)n_kv_heads * D;
    for (int i = threadIdx.x; i < n_kv_heads * D; i += blockDim.x) {
        const int h = i / D, d = i % D;
        const size_t at = (((size_t)blk * n_kv_heads + h) * B + off) * D + d;
        k_cache[at] = k[i];
        v_cache[at] = v[i];
    }
}

extern "C" cudaError_t k_rope_store_kv(void *qkv, const int32_t *positions, const float *inv_freq,
                                       const int32_t *slots, void *k_cache, void *v_cache, int n, int n_heads,
                                       int n_kv_heads, int head_dim, int block_size, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if (head_dim > 1024)
        return cudaErrorInvalidValue;
    rope_store_kv_kernel<<<n, 128, 0, stream>>>((__half *)qkv, positions, inv_freq, slots, (__half *)k_cache,
                                                (__half *)v_cache, n_heads, n_kv_heads, head_dim, block_size);
    FK_LAUNCH_CHECK();
}
