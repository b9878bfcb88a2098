// rope_store_kv.cu — RoPE on q and k (rotate-half, as Hugging Face's Llama), fused with writing k and v into the
// paged cache through slot_mapping. Each thread takes one column pair (j, j + 1) and its partners (j + D/2,
// j + 1 + D/2) in HEADS_PER_THREAD consecutive heads of one token (q heads, then k heads, then v heads): it computes
// its two angles (pos * inv_freq[j], fp32, full-precision sincos) before the PDL wait, loads every value it needs
// before it stores any, rotates q and k in place and stores k and v into the cache. No shared memory, no barrier:
// at batch 1 the op is one round trip to memory after the wait, spread over a few blocks instead of one.
#include "common.cuh"
#include "kernels.h"

constexpr int THREADS = 128, HEADS_PER_THREAD = 4;

// grid: (tokens, blocks of column-pair groups per token).
__global__ void __launch_bounds__(THREADS) rope_store_kv_kernel(__half *qkv, const int32_t *positions,
                                                                const float *inv_freq, const int32_t *slots,
                                                                __half *k_cache, __half *v_cache, int n_heads,
                                                                int n_kv_heads, int D, int B)
{
    const int t = blockIdx.x, heads = n_heads + 2 * n_kv_heads, half_d = D / 2, pairs = D / 4;
    const int i = blockIdx.y * THREADS + threadIdx.x;
    const int h0 = i / pairs * HEADS_PER_THREAD, j = 2 * (i % pairs);
    // The token's position and slot are the step's indices, and the angles depend on nothing else: both are ready
    // before the wait (common.cuh), while the QKV linear finishes.
    float c0 = 1, s0 = 0, c1 = 1, s1 = 0;
    if (inv_freq && h0 < heads) {
        const float pos = (float)positions[t];
        sincosf(pos * inv_freq[j], &s0, &c0);
        sincosf(pos * inv_freq[j + 1], &s1, &c1);
    }
    const int slot = h0 < heads ? slots[t] : -1;
    pdl_wait();
    pdl_launch_dependents();
    if (h0 >= heads)
        return;
    __half *row = qkv + (size_t)t * heads * D;
    // Without RoPE only k and v are touched, and only when the token has a slot.
    const int first = inv_freq ? h0 : max(h0, n_heads), last = min(h0 + HEADS_PER_THREAD, heads);
    if (!inv_freq && slot < 0)
        return;
    __half2 lo[HEADS_PER_THREAD], hi[HEADS_PER_THREAD]; // columns (j, j + 1) and (j + D/2, j + 1 + D/2)
#pragma unroll
    for (int k = 0; k < HEADS_PER_THREAD; k++)
        if (first <= h0 + k && h0 + k < last) {
            lo[k] = *reinterpret_cast<const __half2 *>(row + (size_t)(h0 + k) * D + j);
            hi[k] = *reinterpret_cast<const __half2 *>(row + (size_t)(h0 + k) * D + j + half_d);
        }
    const int blk = slot / B, off = slot % B;
#pragma unroll
    for (int k = 0; k < HEADS_PER_THREAD; k++) {
        const int h = h0 + k;
        if (h < first || h >= last)
            continue;
        if (inv_freq && h < n_heads + n_kv_heads) { // q or k: rotate in place
            const float2 a = __half22float2(lo[k]), b = __half22float2(hi[k]);
            lo[k] = __floats2half2_rn(a.x * c0 - b.x * s0, a.y * c1 - b.y * s1);
            hi[k] = __floats2half2_rn(b.x * c0 + a.x * s0, b.y * c1 + a.y * s1);
            *reinterpret_cast<__half2 *>(row + (size_t)h * D + j) = lo[k];
            *reinterpret_cast<__half2 *>(row + (size_t)h * D + j + half_d) = hi[k];
        }
        if (h < n_heads || slot < 0)
            continue;
        const bool is_k = h < n_heads + n_kv_heads;
        const int kv_head = is_k ? h - n_heads : h - n_heads - n_kv_heads;
        __half *cache = (is_k ? k_cache : v_cache) + (((size_t)blk * n_kv_heads + kv_head) * B + off) * D;
        *reinterpret_cast<__half2 *>(cache + j) = lo[k];
        *reinterpret_cast<__half2 *>(cache + j + half_d) = hi[k];
    }
}

extern "C" cudaError_t k_rope_store_kv(void *qkv, const int32_t *positions, const float *inv_freq,
                                       const int32_t *slots, void *k_cache, void *v_cache, int n, int n_heads,
                                       int n_kv_heads, int head_dim, int block_size, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if (head_dim % 8)
        return cudaErrorInvalidValue;
    const int groups = (n_heads + 2 * n_kv_heads + HEADS_PER_THREAD - 1) / HEADS_PER_THREAD;
    const dim3 grid(n, (groups * (head_dim / 4) + THREADS - 1) / THREADS);
    return fk_launch(rope_store_kv_kernel, grid, THREADS, 0, stream, (__half *)qkv, positions, inv_freq, slots,
                     (__half *)k_cache, (__half *)v_cache, n_heads, n_kv_heads, head_dim, block_size);
}
