// attention_decode.cu — attention for one query per sequence (decode) over the paged KV cache, flash-decoding:
// the context is cut into splits; a block takes one (split, KV head, sequence) and all G = H / Hkv query heads that
// share that KV head, so each K/V byte is read once. The split is streamed in chunks of 64 keys: K and V rows are
// gathered through the block table into shared memory with cp.async, two chunks in flight (one being computed, the
// next loading), which is what keeps enough bytes in flight to run at memory speed. Scores and an online softmax are
// in fp32. Per split the block stores its unnormalized output, max and sum; a second kernel merges the splits.
// Turing (sm_75) has no cp.async: the same code loads synchronously.
#include "common.cuh"
#include "kernels.h"

// Blocks per SM the register budget must allow, and K/V chunks in flight per block (kernels/bench times the choices;
// on an H200, 3 blocks per SM spill registers and run at half the speed of 2).
#ifndef FK_DECODE_MIN_BLOCKS
#define FK_DECODE_MIN_BLOCKS 2
#endif
#ifndef FK_DECODE_STAGES
#define FK_DECODE_STAGES 3
#endif

namespace {

constexpr int THREADS = 256;
constexpr int CHUNK = 64; // keys per shared-memory stage
constexpr int MAX_G = 8;  // query heads per KV head

template <int D, int STAGES> struct decode_layout {
    static constexpr int STRIDE = D + 8; // halves per row: +16 bytes spreads rows over the banks
    static constexpr size_t stage_halves = 2 * (size_t)CHUNK * STRIDE; // K then V
    static constexpr size_t bytes = STAGES * stage_halves * sizeof(__half);
};

// Per split: o[D] (unnormalized), then max and sum.
template <int D> __host__ __device__ constexpr int partial_floats()
{
    return D + 2;
}

// Starts loading keys c0 .. c0 + CHUNK - 1 (those < c1) of one KV head into a stage (K rows, then V rows).
template <int D>
__device__ __forceinline__ void load_chunk(const k_attn_args &a, const int32_t *blocks, int kvh, int c0, int c1,
                                           __half *stage)
{
    constexpr int STRIDE = decode_layout<D, 1>::STRIDE, PIECES = D / 8;
    __half *sk = stage, *sv = stage + CHUNK * STRIDE;
    for (int i = threadIdx.x; i < CHUNK * PIECES; i += THREADS) {
        const int r = i / PIECES, c = (i % PIECES) * 8, key = c0 + r;
        if (key < c1) {
            const size_t at =
                (((size_t)blocks[key / a.block_size] * a.n_kv_heads + kvh) * a.block_size + key % a.block_size) * D + c;
            copy16_async(sk + r * STRIDE + c, (const __half *)a.k_cache + at);
            copy16_async(sv + r * STRIDE + c, (const __half *)a.v_cache + at);
        }
    }
    cp_async_commit();
}

// G = 8 keeps 128 floats of q and accumulators per thread: it gets the registers of one block per SM.
template <int D, int G, int STAGES>
__global__ void __launch_bounds__(THREADS, G >= 8 ? 1 : FK_DECODE_MIN_BLOCKS) decode_split_kernel(k_attn_args a, int split_len, int n_splits,
                                                               float *partial)
{
    using L = decode_layout<D, STAGES>;
    constexpr int STRIDE = L::STRIDE;
    // Scores: each thread holds QD columns of q for all G heads (G * QD <= 64 registers) and reads them from a key
    // row; TPK threads share a row and sum their partial dots with log2(TPK) shuffles.
    constexpr int QD = 64 / G < D ? 64 / G : D;
    constexpr int TPK = D / QD;
    constexpr int KEYS_PER_PASS = THREADS / TPK;
    // O += p V: each thread owns 8 columns and every VLANES-th key.
    constexpr int VTPR = D / 8; // threads per V row
    constexpr int VLANES = THREADS / VTPR;
    extern __shared__ __align__(16) __half stages[];
    __shared__ float scores[G][CHUNK];
    __shared__ float run_max[G], run_sum[G], rescale[G];
    static_assert(THREADS / 32 * G * D * sizeof(float) <= L::bytes, "reduce fits in the stages");

    const int split = blockIdx.x, kvh = blockIdx.y, seq = blockIdx.z;
    const int ctx = a.context_len[seq], tok = a.query_start[seq];
    const int k_begin = split * split_len, k_end = min(ctx, k_begin + split_len);
    const int32_t *blocks = a.block_tables + (size_t)seq * a.max_blocks;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    // The first STAGES - 1 chunks start loading now; every iteration starts one more. A group is committed even
    // when there is nothing left to load, so "all but the newest STAGES - 1 groups are done" always means this
    // iteration's chunk has arrived.
    const int n_chunks = (k_end - k_begin + CHUNK - 1) / CHUNK;
    for (int c = 0; c < STAGES - 1; c++) {
        if (c < n_chunks)
            load_chunk<D>(a, blocks, kvh, k_begin + c * CHUNK, k_end, stages + c * L::stage_halves);
        else
            cp_async_commit();
    }

    const int key_lane = threadIdx.x / TPK, qcol = (threadIdx.x % TPK) * QD;
    const __half *q = (const __half *)a.qkv + (size_t)tok * (a.n_heads + 2 * a.n_kv_heads) * D;
    float qr[G][QD]; // pre-scaled
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int c = 0; c < QD; c += 8) {
            half8 v;
            v.u = *reinterpret_cast<const uint4 *>(q + (size_t)(kvh * G + g) * D + qcol + c);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __half22float2(v.h2[i]);
                qr[g][c + 2 * i] = f.x * a.scale, qr[g][c + 2 * i + 1] = f.y * a.scale;
            }
        }
    if (threadIdx.x < G)
        run_max[threadIdx.x] = -INFINITY, run_sum[threadIdx.x] = 0;
    const int vlane = threadIdx.x / VTPR, vcol = (threadIdx.x % VTPR) * 8;
    float acc[G][8];
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int i = 0; i < 8; i++)
            acc[g][i] = 0;

    for (int ch = 0; ch < n_chunks; ch++) {
        const int c0 = k_begin + ch * CHUNK, c1 = min(k_end, c0 + CHUNK);
        const __half *stage = stages + (ch % STAGES) * L::stage_halves;
        const int next = ch + STAGES - 1; // into the stage chunk ch - 1 used, which every thread is done with
        if (next < n_chunks)
            load_chunk<D>(a, blocks, kvh, k_begin + next * CHUNK, k_end,
                          stages + (next % STAGES) * L::stage_halves);
        else
            cp_async_commit();
        cp_async_wait<STAGES - 1>();
        __syncthreads();
        const __half *sk = stage, *sv = stage + CHUNK * STRIDE;

        // Whole warps take rows (32 / TPK rows each), so the shuffles below are warp-uniform.
        for (int r = key_lane; r < CHUNK; r += KEYS_PER_PASS) {
            float dot[G];
#pragma unroll
            for (int g = 0; g < G; g++)
                dot[g] = 0;
#pragma unroll
            for (int c = 0; c < QD; c += 8) {
                half8 kv;
                kv.u = *reinterpret_cast<const uint4 *>(sk + r * STRIDE + qcol + c);
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float2 f = __half22float2(kv.h2[i]);
#pragma unroll
                    for (int g = 0; g < G; g++)
                        dot[g] += qr[g][c + 2 * i] * f.x + qr[g][c + 2 * i + 1] * f.y;
                }
            }
#pragma unroll
            for (int g = 0; g < G; g++) {
#pragma unroll
                for (int o = TPK / 2; o > 0; o >>= 1)
                    dot[g] += __shfl_xor_sync(0xffffffffu, dot[g], o);
                if (threadIdx.x % TPK == 0)
                    scores[g][r] = c0 + r < c1 ? dot[g] : -INFINITY;
            }
        }
        __syncthreads();

        // Online softmax per head (warp w takes heads w, w + 8): new running max, rescale factor, p, sum.
        for (int g = warp; g < G; g += THREADS / 32) {
            float mx = fmaxf(scores[g][lane], scores[g][lane + 32]);
            mx = fmaxf(warp_max(mx), run_max[g]);
            const float p0 = __expf(scores[g][lane] - mx), p1 = __expf(scores[g][lane + 32] - mx);
            scores[g][lane] = p0, scores[g][lane + 32] = p1;
            const float sum = warp_sum(p0 + p1);
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
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int i = 0; i < 8; i++)
                acc[g][i] *= rescale[g];
        for (int r = vlane; r < c1 - c0; r += VLANES) {
            half8 vv;
            vv.u = *reinterpret_cast<const uint4 *>(sv + r * STRIDE + vcol);
            float vf[8];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __half22float2(vv.h2[i]);
                vf[2 * i] = f.x, vf[2 * i + 1] = f.y;
            }
#pragma unroll
            for (int g = 0; g < G; g++) {
                const float p = scores[g][r];
#pragma unroll
                for (int i = 0; i < 8; i++)
                    acc[g][i] += p * vf[i];
            }
        }
        __syncthreads(); // the stage and the scores are rewritten next
    }

    // Sum the key lanes: first the ones that share a warp (shuffles), then the warps, in the stages' memory (free
    // now; the loop ended on a barrier).
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int o = 16; o >= VTPR; o >>= 1)
                acc[g][i] += __shfl_xor_sync(0xffffffffu, acc[g][i], o);
    float(*reduce)[G][D] = reinterpret_cast<float(*)[G][D]>(stages);
    if (lane < VTPR)
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int i = 0; i < 8; i++)
                reduce[warp][g][vcol + i] = acc[g][i];
    __syncthreads();
    for (int i = threadIdx.x; i < G * D; i += THREADS) {
        const int g = i / D, d = i % D, h = kvh * G + g;
        float o = 0;
#pragma unroll
        for (int w = 0; w < THREADS / 32; w++)
            o += reduce[w][g][d];
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

template <int D, int G, int STAGES>
cudaError_t launch(const k_attn_args *a, int split_len, int n_splits, float *scratch, cudaStream_t stream)
{
    using L = decode_layout<D, STAGES>;
    static bool configured; // the shared-memory opt-in, once per instantiation
    if (!configured) {
        cudaError_t e = cudaFuncSetAttribute(decode_split_kernel<D, G, STAGES>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L::bytes);
        if (e != cudaSuccess)
            return e;
        configured = true;
    }
    decode_split_kernel<D, G, STAGES><<<dim3(n_splits, a->n_kv_heads, a->n_seqs), THREADS, L::bytes, stream>>>(
        *a, split_len, n_splits, scratch);
    if (n_splits > 1) {
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
        decode_merge_kernel<D><<<dim3(a->n_heads, a->n_seqs), D, 0, stream>>>(*a, n_splits, scratch);
    }
    FK_LAUNCH_CHECK();
}

// Stages in flight need cp.async, which the code has only when compiled for sm_80 or later: the choice follows the
// architecture the kernels were built for (so the compute_75 PTX build runs Turing's configuration anywhere).
template <int D, int G> cudaError_t launch_stages(const k_attn_args *a, int split_len, int n_splits, float *scratch,
                                                  cudaStream_t s)
{
    static int ptx = -1;
    if (ptx < 0) {
        cudaFuncAttributes attr;
        cudaError_t e = cudaFuncGetAttributes(&attr, decode_merge_kernel<64>);
        if (e != cudaSuccess)
            return e;
        ptx = attr.ptxVersion;
    }
    return ptx >= 80 ? launch<D, G, FK_DECODE_STAGES>(a, split_len, n_splits, scratch, s)
                     : launch<D, G, 1>(a, split_len, n_splits, scratch, s);
}

template <int D> cudaError_t launch_g(const k_attn_args *a, int split_len, int n_splits, float *scratch, cudaStream_t s)
{
    switch (a->n_heads / a->n_kv_heads) {
    case 1: return launch_stages<D, 1>(a, split_len, n_splits, scratch, s);
    case 2: return launch_stages<D, 2>(a, split_len, n_splits, scratch, s);
    case 4: return launch_stages<D, 4>(a, split_len, n_splits, scratch, s);
    case 8: return launch_stages<D, 8>(a, split_len, n_splits, scratch, s);
    default: return cudaErrorInvalidValue;
    }
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
    case 64: return launch_g<64>(a, split_len, n_splits, (float *)scratch, stream);
    case 128: return launch_g<128>(a, split_len, n_splits, (float *)scratch, stream);
    default: return cudaErrorInvalidValue;
    }
}
