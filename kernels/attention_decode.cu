// attention_decode.cu — attention for one query per sequence (decode) over the paged KV cache, flash-decoding:
// the context is cut into splits of split_len keys; a block takes one (split, KV head, sequence) and all G = H/Hkv
// query heads that share that KV head, so each K/V byte is read once from memory. Per split it stores the
// unnormalized output, max and sum; a second kernel merges the splits. Memory-bound: K rows are read 16 bytes
// per thread by groups of D/8 threads (one 256-byte row per group for D = 128), V rows 4 bytes per thread, both
// coalesced.
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int THREADS = 128;
constexpr int MAX_G = 8;   // query heads per KV head
constexpr int CHUNK = 256; // keys scored at a time; a split of any length is walked chunk by chunk

// Per split: o[D] (unnormalized), then max and sum.
template <int D> __host__ __device__ constexpr int partial_floats()
{
    return D + 2;
}

template <int D>
__global__ void __launch_bounds__(THREADS) decode_split_kernel(k_attn_args a, int split_len, int n_splits,
                                                               float *partial)
{
    constexpr int TPK = D / 8;              // threads per key row
    constexpr int KEYS_PER_WARP = 32 / TPK; // key rows a warp reads at once
    constexpr int PAIRS = D / 2;            // half2 columns of a V row
    constexpr int KEY_LANES = THREADS / PAIRS;
    __shared__ float scores[MAX_G][CHUNK];
    __shared__ float reduce[KEY_LANES][MAX_G][D];
    __shared__ float run_max[MAX_G], run_sum[MAX_G], rescale[MAX_G];
    const int G = a.n_heads / a.n_kv_heads;
    const int split = blockIdx.x, kvh = blockIdx.y, seq = blockIdx.z;
    const int ctx = a.context_len[seq], tok = a.query_start[seq];
    const int k_begin = split * split_len, k_end = min(ctx, k_begin + split_len);
    const int32_t *blocks = a.block_tables + (size_t)seq * a.max_blocks;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    // This thread's 8 columns of q for each of the G heads, pre-scaled.
    const int col = (lane % TPK) * 8;
    const __half *q = (const __half *)a.qkv + (size_t)tok * (a.n_heads + 2 * a.n_kv_heads) * D;
    float qr[MAX_G][8];
#pragma unroll
    for (int g = 0; g < MAX_G; g++)
        if (g < G) {
            half8 v;
            v.u = *reinterpret_cast<const uint4 *>(q + (size_t)(kvh * G + g) * D + col);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __half22float2(v.h2[i]);
                qr[g][2 * i] = f.x * a.scale, qr[g][2 * i + 1] = f.y * a.scale;
            }
        }
    if (threadIdx.x < MAX_G)
        run_max[threadIdx.x] = -INFINITY, run_sum[threadIdx.x] = 0;

    // V accumulators: this thread owns one half2 column pair for all G heads, over every KEY_LANES-th key.
    const int pair = threadIdx.x % PAIRS, key_lane = threadIdx.x / PAIRS;
    float acc[MAX_G][2];
#pragma unroll
    for (int g = 0; g < MAX_G; g++)
        acc[g][0] = acc[g][1] = 0;

    for (int c0 = k_begin; c0 < k_end; c0 += CHUNK) {
        const int c1 = min(k_end, c0 + CHUNK);
        // Scores of the chunk. The loop bound is warp-uniform so every lane takes part in the shuffles.
        for (int base = c0 + warp * KEYS_PER_WARP; base < c1; base += (THREADS / 32) * KEYS_PER_WARP) {
            const int key = base + lane / TPK;
            const bool valid = key < c1;
            half8 kv;
            kv.u = make_uint4(0, 0, 0, 0);
            if (valid) {
                const int blk = blocks[key / a.block_size], off = key % a.block_size;
                kv.u = *reinterpret_cast<const uint4 *>(
                    (const __half *)a.k_cache + (((size_t)blk * a.n_kv_heads + kvh) * a.block_size + off) * D + col);
            }
            float kf[8];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __half22float2(kv.h2[i]);
                kf[2 * i] = f.x, kf[2 * i + 1] = f.y;
            }
#pragma unroll
            for (int g = 0; g < MAX_G; g++)
                if (g < G) {
                    float dot = 0;
#pragma unroll
                    for (int i = 0; i < 8; i++)
                        dot += qr[g][i] * kf[i];
#pragma unroll
                    for (int o = TPK / 2; o > 0; o >>= 1)
                        dot += __shfl_xor_sync(0xffffffffu, dot, o);
                    if (valid && lane % TPK == 0)
                        scores[g][key - c0] = dot;
                }
        }
        __syncthreads();

        // Online softmax per head (warp w takes heads w, w + 4): new running max, rescale factor, p, sum.
        for (int g = warp; g < G; g += THREADS / 32) {
            float mx = -INFINITY;
            for (int i = lane; i < c1 - c0; i += 32)
                mx = fmaxf(mx, scores[g][i]);
            mx = fmaxf(warp_max(mx), run_max[g]);
            float sum = 0;
            for (int i = lane; i < c1 - c0; i += 32) {
                const float p = __expf(scores[g][i] - mx);
                scores[g][i] = p;
                sum += p;
            }
            sum = warp_sum(sum);
            __syncwarp();
            if (lane == 0) {
                const float r = __expf(run_max[g] - mx); // 0 on the first chunk (run_max = -inf)
                rescale[g] = r;
                run_sum[g] = run_sum[g] * r + sum;
                run_max[g] = mx;
            }
        }
        __syncthreads();

#pragma unroll
        for (int g = 0; g < MAX_G; g++)
            if (g < G)
                acc[g][0] *= rescale[g], acc[g][1] *= rescale[g];
        for (int key = c0 + key_lane; key < c1; key += KEY_LANES) {
            const int blk = blocks[key / a.block_size], off = key % a.block_size;
            const float2 v = __half22float2(*reinterpret_cast<const __half2 *>(
                (const __half *)a.v_cache + (((size_t)blk * a.n_kv_heads + kvh) * a.block_size + off) * D + 2 * pair));
#pragma unroll
            for (int g = 0; g < MAX_G; g++)
                if (g < G) {
                    const float p = scores[g][key - c0];
                    acc[g][0] += p * v.x, acc[g][1] += p * v.y;
                }
        }
        __syncthreads(); // scores are rewritten by the next chunk
    }

#pragma unroll
    for (int g = 0; g < MAX_G; g++)
        if (g < G) {
            reduce[key_lane][g][2 * pair] = acc[g][0];
            reduce[key_lane][g][2 * pair + 1] = acc[g][1];
        }
    __syncthreads();
    for (int i = threadIdx.x; i < G * D; i += THREADS) {
        const int g = i / D, d = i % D, h = kvh * G + g;
        float o = 0;
#pragma unroll
        for (int kl = 0; kl < KEY_LANES; kl++)
            o += reduce[kl][g][d];
        if (n_splits == 1) {
            ((__half *)a.out)[((size_t)tok * a.n_heads + h) * D + d] = __float2half(o / run_sum[g]);
        } else {
            float *p = partial + (((size_t)seq * a.n_heads + h) * n_splits + split) * partial_floats<D>();
            p[d] = o;
            if (d == 0)
                p[D] = run_max[g], p[D + 1] = run_sum[g];
        }
    }
}

// out = sum_i w_i o_i / sum_i w_i l_i with w_i = exp(m_i - max m): one block per (head, sequence).
template <int D> __global__ void decode_merge_kernel(k_attn_args a, int n_splits, const float *partial)
{
    const int h = blockIdx.x, seq = blockIdx.y, d = threadIdx.x;
    const float *p = partial + ((size_t)seq * a.n_heads + h) * n_splits * partial_floats<D>();
    float mx = -INFINITY;
    for (int s = 0; s < n_splits; s++)
        mx = fmaxf(mx, p[s * partial_floats<D>() + D]);
    float num = 0, den = 0;
    for (int s = 0; s < n_splits; s++) {
        const float *ps = p + s * partial_floats<D>();
        const float w = ps[D] == -INFINITY ? 0.0f : __expf(ps[D] - mx); // an empty split adds nothing
        num += w * ps[d];
        den += w * ps[D + 1];
    }
    ((__half *)a.out)[((size_t)a.query_start[seq] * a.n_heads + h) * D + d] = __float2half(num / den);
}

template <int D>
cudaError_t launch(const k_attn_args *a, int split_len, int n_splits, float *scratch, cudaStream_t stream)
{
    decode_split_kernel<D><<<dim3(n_splits, a->n_kv_heads, a->n_seqs), THREADS, 0, stream>>>(*a, split_len, n_splits,
                                                                                           scratch);
    if (n_splits > 1) {
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
        decode_merge_kernel<D><<<dim3(a->n_heads, a->n_seqs), D, 0, stream>>>(*a, n_splits, scratch);
    }
    FK_LAUNCH_CHECK();
}

} // namespace

extern "C" size_t k_attention_decode_scratch_bytes(int n_seqs, int n_heads, int head_dim, int n_splits)
{
    return (size_t)n_seqs * n_heads * n_splits * (head_dim + 2) * sizeof(float);
}

extern "C" cudaError_t k_attention_decode(const k_attn_args *a, int split_len, int n_splits, void *scratch,
                                          cudaStream_t stream)
{
    if (a->n_seqs <= 0)
        return cudaSuccess;
    if (a->n_heads % a->n_kv_heads || a->n_heads / a->n_kv_heads > MAX_G || split_len < 1 || n_splits < 1)
        return cudaErrorInvalidValue;
    switch (a->head_dim) {
    case 64: return launch<64>(a, split_len, n_splits, (float *)scratch, stream);
    case 128: return launch<128>(a, split_len, n_splits, (float *)scratch, stream);
    default: return cudaErrorInvalidValue;
    }
}
