// rope_store_kv.cu — RoPE on q and k (rotate-half, as Hugging Face's Llama), fused with writing k and v into the
// paged cache through slot_mapping. One block per token; each angle (pos * inv_freq[j], fp32, full-precision sincos)
// is computed once and shared by every head; q/k are rotated two pairs at a time (half2) and k/v stored 16 bytes at a
// time when head_dim allows.
#include "common.cuh"
#include "kernels.h"

constexpr int THREADS = 256;

__global__ void __launch_bounds__(THREADS) rope_store_kv_kernel(__half *qkv, const int32_t *positions,
                                                                const float *inv_freq, const int32_t *slots,
                                                                __half *k_cache, __half *v_cache, int n_heads,
                                                                int n_kv_heads, int D, int B)
{
    pdl_wait();
    pdl_launch_dependents();
    __shared__ float cos_j[512], sin_j[512]; // head_dim <= 1024
    const int t = blockIdx.x, half_d = D / 2;
    __half *row = qkv + (size_t)t * (n_heads + 2 * n_kv_heads) * D;
    if (inv_freq) {
        const float pos = (float)positions[t];
        for (int j = threadIdx.x; j < half_d; j += THREADS)
            sincosf(pos * inv_freq[j], &sin_j[j], &cos_j[j]);
        __syncthreads();
        const int pairs = half_d / 2; // column pairs (j, j + 1) per head; D is a multiple of 4
        for (int i = threadIdx.x; i < (n_heads + n_kv_heads) * pairs; i += THREADS) {
            const int h = i / pairs, j = 2 * (i % pairs);
            __half2 *x1 = reinterpret_cast<__half2 *>(row + (size_t)h * D + j);
            __half2 *x2 = reinterpret_cast<__half2 *>(row + (size_t)h * D + j + half_d);
            const float2 a = __half22float2(*x1), b = __half22float2(*x2);
            const float c0 = cos_j[j], s0 = sin_j[j], c1 = cos_j[j + 1], s1 = sin_j[j + 1];
            *x1 = __floats2half2_rn(a.x * c0 - b.x * s0, a.y * c1 - b.y * s1);
            *x2 = __floats2half2_rn(b.x * c0 + a.x * s0, b.y * c1 + a.y * s1);
        }
        __syncthreads(); // k is rotated before it is stored
    }
    const int slot = slots[t];
    if (slot < 0)
        return;
    const int blk = slot / B, off = slot % B;
    const uint4 *k = reinterpret_cast<const uint4 *>(row + (size_t)n_heads * D);
    const uint4 *v = reinterpret_cast<const uint4 *>(row + (size_t)(n_heads + n_kv_heads) * D);
    const int chunks = D / 8; // 16-byte pieces per head
    for (int i = threadIdx.x; i < n_kv_heads * chunks; i += THREADS) {
        const int h = i / chunks, c = i % chunks;
        const size_t at = (((size_t)blk * n_kv_heads + h) * B + off) * D / 8 + c;
        reinterpret_cast<uint4 *>(k_cache)[at] = k[i];
        reinterpret_cast<uint4 *>(v_cache)[at] = v[i];
    }
}

extern "C" cudaError_t k_rope_store_kv(void *qkv, const int32_t *positions, const float *inv_freq,
                                       const int32_t *slots, void *k_cache, void *v_cache, int n, int n_heads,
                                       int n_kv_heads, int head_dim, int block_size, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if (head_dim > 1024 || head_dim % 8)
        return cudaErrorInvalidValue;
    return fk_launch(rope_store_kv_kernel, n, THREADS, 0, stream, (__half *)qkv, positions, inv_freq, slots,
                     (__half *)k_cache, (__half *)v_cache, n_heads, n_kv_heads, head_dim, block_size);
}
