// attention_decode.cu — attention for one query per sequence (decode) over the paged KV cache, flash-decoding on
// tensor cores. The context is cut into splits; a block takes one (split, KV head, sequence). The G = H / Hkv query
// heads that share the KV head are the rows of one 16-row MMA tile (rows G..15 are zero), so each K/V byte is read
// once for all of them. The split's block-table entries are first copied to shared memory (so no gather waits on a
// global read); the split is then streamed in chunks of 16 keys per warp gathered into shared memory with
// cp.async, STAGES chunks in flight; warp w takes keys 16w .. 16w + 15 of every chunk and keeps its own
// online-softmax state (S = Q K^T and O += P V on mma.sync, fp16 in, fp32 accumulate), and the warps' states are
// merged at the end. Per split the block stores its unnormalized output, max and sum; a second kernel merges the
// splits. Turing (sm_75) has no cp.async: one stage, loaded synchronously, m16n8k8 (common.cuh).
// With rope_store (a decode pass: k_attn_args) the kernel also does rope_store_kv.cu's work for the query token, so
// that kernel and its launch boundary leave the layer: every block rotates its G query rows as it loads them, and the
// block whose split holds the new key (the context's last) rotates that key, writes key and value straight into its
// stage (its chunk loads skip that key, which is not in the cache yet) and into the cache at its end. The rotation
// is rope_store_kv's arithmetic, rounded to fp16 where that kernel stores, so both paths give the same bits. Its
// first chunks also start loading before the PDL wait (the keys they read are earlier passes').
#include "common.cuh"
#include "online_softmax.cuh"
#include "kernels.h"

// K/V chunks in flight per block on sm_80+, and warps per block (16 keys each per chunk); kernels/bench times the
// choices.
#ifndef FK_DECODE_STAGES
#define FK_DECODE_STAGES 2
#endif
#ifndef FK_DECODE_WARPS
#define FK_DECODE_WARPS 8
#endif
// Bytes the L2 fetches around each K/V load (cp.async's L2::128B / L2::256B prefetch hint; 0: none). 128 took
// 64 x 4096 and 16 x 16k at head dim 128 from 93.0-93.6 % to 95.0-95.2 % of copy on an H100 (BENCHMARKS.md,
// 2026-12-06); 256 was level with 128, head dim 64 level with none.
#ifndef FK_DECODE_PREFETCH
#define FK_DECODE_PREFETCH 128
#endif

namespace {

constexpr int MAX_G = 16; // query heads per KV head: one MMA tile of rows

template <int D, int STAGES, int WARPS> struct decode_layout {
    static constexpr int THREADS = 32 * WARPS;
    static constexpr int CHUNK = 16 * WARPS; // keys per shared-memory stage
    static constexpr int STRIDE = D + 8;     // halves per row: +16 bytes keeps ldmatrix rows in distinct banks
    static constexpr size_t q_halves = 16 * (size_t)STRIDE;
    static constexpr size_t stage_halves = 2 * (size_t)CHUNK * STRIDE; // K then V
    static constexpr size_t bytes = (q_halves + STAGES * stage_halves) * sizeof(__half); // + the block table
};

// Block-table entries a split of split_len keys can touch (it may start and end inside a block).
__host__ __device__ inline int table_entries(int split_len, int block_size)
{
    return split_len / block_size + 2;
}

// Per split: o[D] (unnormalized), then max and sum.
template <int D> __host__ __device__ constexpr int partial_floats()
{
    return D + 2;
}

// 16 bytes of K or V into shared memory, with the L2 prefetch hint FK_DECODE_PREFETCH asks for.
__device__ __forceinline__ void copy_kv16_async(void *smem, const void *gmem)
{
#if __CUDA_ARCH__ >= 800 && FK_DECODE_PREFETCH == 256
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
#elif __CUDA_ARCH__ >= 800 && FK_DECODE_PREFETCH == 128
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
#else
    copy16_async(smem, gmem);
#endif
}

// Starts loading keys c0 .. c0 + CHUNK - 1 (those < c1; the rest zero) of one KV head into a stage. table holds the
// block ids from the block of key `first` on.
template <int D, int CHUNK, int THREADS>
__device__ __forceinline__ void load_chunk(const k_attn_args &a, const cache_blocks &cb, const int32_t *table,
                                           int first, int kvh, int c0, int c1, __half *stage)
{
    constexpr int STRIDE = D + 8, PIECES = D / 8;
    __half *sk = stage, *sv = stage + CHUNK * STRIDE;
    const int first_block = cb.block(first);
    for (int i = threadIdx.x; i < CHUNK * PIECES; i += THREADS) {
        const int r = i / PIECES, c = (i % PIECES) * 8, key = c0 + r;
        if (key < c1) {
            const int blk = table[cb.block(key) - first_block];
            const size_t at = (((size_t)blk * a.n_kv_heads + kvh) * cb.size + cb.offset(key)) * D + c;
            copy_kv16_async(sk + r * STRIDE + c, (const __half *)a.k_cache + at);
            copy_kv16_async(sv + r * STRIDE + c, (const __half *)a.v_cache + at);
        } else {
            *reinterpret_cast<uint4 *>(sk + r * STRIDE + c) = make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4 *>(sv + r * STRIDE + c) = make_uint4(0, 0, 0, 0);
        }
    }
    cp_async_commit();
}

template <int D, int STAGES, int WARPS>
__global__ void __launch_bounds__(32 * WARPS) decode_split_kernel(k_attn_args a, int split_len, int n_splits,
                                                                  float *partial)
{
    using L = decode_layout<D, STAGES, WARPS>;
    constexpr int STRIDE = L::STRIDE, CHUNK = L::CHUNK, THREADS = L::THREADS;
    extern __shared__ __align__(16) __half smem[];
    __half *sq = smem, *stages = smem + L::q_halves;
    int32_t *table = reinterpret_cast<int32_t *>(stages + STAGES * L::stage_halves);

    // The length, the token, the block table (and with rope_store the position and slot) are the step's indices:
    // read before the wait (common.cuh), while the previous kernel (RoPE and the KV store, or with rope_store the QKV
    // linear) finishes; the query after it, and the keys too unless with rope_store (below).
    const int split = blockIdx.x, kvh = blockIdx.y, seq = blockIdx.z;
    const int G = a.n_heads / a.n_kv_heads;
    const int ctx = a.context_len[seq], tok = a.query_start[seq];
    const int k_begin = split * split_len, k_end = min(ctx, k_begin + split_len);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const cache_blocks blocks_of = cache_blocks_of(a.block_size);
    if (k_begin < k_end) {
        const int32_t *blocks = a.block_tables + (size_t)seq * a.max_blocks;
        const int b0 = blocks_of.block(k_begin), b1 = blocks_of.block(k_end - 1);
        for (int i = threadIdx.x; i <= b1 - b0; i += THREADS)
            table[i] = blocks[b0 + i];
    }
    // rope_store: thread i takes column pairs (c, c + 1) and (c + D/2, c + 1 + D/2), c = 2 (i % (D/4)), of the query
    // rows (and, below D/4, of the new key and value); its angles, like the slot, need only the step's indices.
    const int c = 2 * (threadIdx.x % (D / 4));
    float cos0 = 1, sin0 = 0, cos1 = 1, sin1 = 0;
    const bool rope = a.rope_store && a.inv_freq;
    if (rope) {
        const float pos = (float)a.positions[tok];
        sincosf(pos * a.inv_freq[c], &sin0, &cos0);
        sincosf(pos * a.inv_freq[c + 1], &sin1, &cos1);
    }
    // The rotation of one pair of column pairs, rounded to fp16 as rope_store_kv stores it.
    auto rotate = [&](__half2 &lo, __half2 &hi) {
        const float2 x = __half22float2(lo), y = __half22float2(hi);
        lo = __floats2half2_rn(x.x * cos0 - y.x * sin0, x.y * cos1 - y.y * sin1);
        hi = __floats2half2_rn(y.x * cos0 + x.x * sin0, y.y * cos1 + x.y * sin1);
    };
    const int new_key = ctx - 1; // the query's own key: this block's to store when its split holds it
    const bool store_new = a.rope_store && k_begin <= new_key && new_key < k_end && threadIdx.x < D / 4;
    const int new_slot = store_new ? a.slots[tok] : -1;
    // The chunks' loads stop short of the new key where this block supplies it.
    const int load_end = a.rope_store && k_begin <= new_key && new_key < k_end ? new_key : k_end;
    const int n_chunks = (k_end - k_begin + CHUNK - 1) / CHUNK;
    __syncthreads(); // the block table

    // Chunk ch starts loading into stage ch % STAGES; a group is committed even when there is nothing left to load,
    // so "all but the newest STAGES - 1 groups are done" always means this iteration's chunk has arrived.
    auto start_chunk = [&](int ch) {
        if (ch < n_chunks)
            load_chunk<D, CHUNK, THREADS>(a, blocks_of, table, k_begin, kvh, k_begin + ch * CHUNK, load_end,
                                          stages + (ch % STAGES) * L::stage_halves);
        else
            cp_async_commit();
    };
    // The first STAGES - 1 chunks. With rope_store they start before the wait: every key they read was stored by an
    // earlier pass (the new one is this block's to supply), and the kernel before (the QKV linear) writes only qkv.
    // Chunk STAGES - 1, which the loop would start once the query is in shared memory, starts right after the wait
    // (its stage is still free), so that its keys' round trip overlaps the query's: bench-1b batch 1 +1 % on an
    // H100; loading it before the wait too slowed the QKV linear more than it gained (BENCHMARKS.md). Without
    // rope_store the kernel before (rope_store_kv) stores the new key into the cache, so every load waits for it.
    const bool next_after_wait = a.rope_store && STAGES > 1;
    if (a.rope_store)
        for (int ch = 0; ch < STAGES - 1; ch++)
            start_chunk(ch);
    pdl_wait();
    pdl_launch_dependents();
    if (next_after_wait)
        start_chunk(STAGES - 1);
    if (!a.rope_store)
        for (int ch = 0; ch < STAGES - 1; ch++)
            start_chunk(ch);
    // Q: the G heads of this KV head as rows 0..G-1 (rotated first with rope_store), pre-scaled by scale * log2(e);
    // the other rows zero. Thread i takes rows i / (D/4) + j THREADS / (D/4), j < QI. With the new key and value
    // (rope_store), all loaded together after the chunks' first loads: one round trip. The new key and value go to
    // the cache at the end (this block reads them from its stage; no other block of the pass reads them).
    constexpr int QI = 16 * D / 4 / THREADS;
    static_assert(QI * THREADS == 16 * D / 4, "a thread keeps its columns (and angles) across the rows");
    const float scale_log2 = a.scale * 1.4426950408889634f;
    const __half *token_row = (const __half *)a.qkv + (size_t)tok * (a.n_heads + 2 * a.n_kv_heads) * D;
    const __half *q = token_row + (size_t)kvh * G * D;
    __half2 q_lo[QI], q_hi[QI], new_k[2], new_v[2]; // new: columns (c, c + 1) and (c + D/2, c + 1 + D/2)
#pragma unroll
    for (int j = 0; j < QI; j++) {
        const int r = (threadIdx.x + j * THREADS) / (D / 4);
        q_lo[j] = q_hi[j] = __float2half2_rn(0.0f);
        if (r < G) {
            q_lo[j] = *reinterpret_cast<const __half2 *>(q + (size_t)r * D + c);
            q_hi[j] = *reinterpret_cast<const __half2 *>(q + (size_t)r * D + c + D / 2);
        }
    }
    if (store_new) {
        const __half *k = token_row + (size_t)(a.n_heads + kvh) * D;
        const __half *v = token_row + (size_t)(a.n_heads + a.n_kv_heads + kvh) * D;
        new_k[0] = *reinterpret_cast<const __half2 *>(k + c);
        new_k[1] = *reinterpret_cast<const __half2 *>(k + c + D / 2);
        new_v[0] = *reinterpret_cast<const __half2 *>(v + c);
        new_v[1] = *reinterpret_cast<const __half2 *>(v + c + D / 2);
        if (rope)
            rotate(new_k[0], new_k[1]);
    }
    auto scaled = [&](__half2 h) {
        const float2 v = __half22float2(h);
        return __floats2half2_rn(v.x * scale_log2, v.y * scale_log2);
    };
#pragma unroll
    for (int j = 0; j < QI; j++) {
        const int r = (threadIdx.x + j * THREADS) / (D / 4);
        if (rope && r < G)
            rotate(q_lo[j], q_hi[j]);
        *reinterpret_cast<__half2 *>(sq + r * STRIDE + c) = scaled(q_lo[j]);
        *reinterpret_cast<__half2 *>(sq + r * STRIDE + c + D / 2) = scaled(q_hi[j]);
    }
    __syncthreads();
    uint32_t qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        ldmatrix_x4(qf[kk], sq + (lane % 16) * STRIDE + kk * 16 + (lane / 16) * 8);

    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; j++)
        o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}; // rows g and g + 8

    for (int ch = 0; ch < n_chunks; ch++) {
        const int c0 = k_begin + ch * CHUNK;
        if (ch > 0 || !next_after_wait)
            start_chunk(ch + STAGES - 1); // into the stage chunk ch - 1 used, which every warp is done with
        cp_async_wait<STAGES - 1>();
        const bool new_here = load_end < k_end && c0 <= new_key && new_key < c0 + CHUNK;
        if (STAGES == 1 && new_here)
            __syncthreads(); // one stage: the zeros of the new key's row were written just now, by other threads
        if (store_new && new_here) { // the new key's row, zeroed by its load
            __half *sk = stages + (ch % STAGES) * L::stage_halves + (new_key - c0) * STRIDE, *sv = sk + CHUNK * STRIDE;
            *reinterpret_cast<__half2 *>(sk + c) = new_k[0], *reinterpret_cast<__half2 *>(sk + c + D / 2) = new_k[1];
            *reinterpret_cast<__half2 *>(sv + c) = new_v[0], *reinterpret_cast<__half2 *>(sv + c + D / 2) = new_v[1];
        }
        __syncthreads();
        const __half *sk = stages + (ch % STAGES) * L::stage_halves + warp * 16 * STRIDE; // this warp's 16 keys
        const __half *sv = sk + CHUNK * STRIDE;

        // S = Q K^T for this warp's 16 keys: two n-tiles of 8.
        float s[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t b[4];
            ldmatrix_x4(b, sk + (lane % 8 + (lane / 16) * 8) * STRIDE + kk * 16 + ((lane / 8) % 2) * 8);
            mma_16816(s[0], qf[kk], b);
            mma_16816(s[1], qf[kk], b + 2);
        }
        // Keys past the split's end (zero-filled) must not count; only the last chunk has any.
        if (c0 + CHUNK > k_end)
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (c0 + warp * 16 + j * 8 + 2 * t + (e & 1) >= k_end)
                        s[j][e] = -INFINITY;
        uint32_t p[1][4];
        online_softmax_tile(s, m, l, o, p);
        // O += P V over the 16 keys.
#pragma unroll
        for (int dn = 0; dn < D / 16; dn++) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, sv + (lane % 8 + ((lane / 8) % 2) * 8) * STRIDE + dn * 16 + (lane / 16) * 8);
            mma_16816(o[2 * dn], p[0], b);
            mma_16816(o[2 * dn + 1], p[0], b + 2);
        }
        __syncthreads(); // the stage is refilled STAGES - 1 iterations on
    }

    // Merge the warps' states, row by row, in the stages' memory (free now: the loop ended on a barrier, and a block
    // with no chunk never touched it). Only the G real rows are stored, a column pair at a time, the columns of row r
    // XOR-swizzled by 8 (r % 8) so that a warp's rows g = 0..7 fall in different banks (unswizzled, the 8 rows of a
    // store hit one bank: 8-way conflicts; without them batch 1 was 0.5 % faster, BENCHMARKS.md).
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
    static_assert((WARPS * 16 * D + 2 * WARPS * 16) * sizeof(float) <= STAGES * L::stage_halves * sizeof(__half),
                  "the merge fits in the stages");
    float *wo = reinterpret_cast<float *>(stages);           // [WARPS][16 rows][D], columns swizzled
    float *wm = wo + WARPS * 16 * D, *wl = wm + WARPS * 16; // [WARPS][16] each
    auto swizzle = [](int row) { return (row % 8) * 8; };
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = g + r * 8;
        if (row < G) {
#pragma unroll
            for (int j = 0; j < D / 8; j++)
                *reinterpret_cast<float2 *>(wo + (warp * 16 + row) * D + ((j * 8 + 2 * t) ^ swizzle(row))) =
                    make_float2(o[j][2 * r], o[j][2 * r + 1]);
            if (t == 0)
                wm[warp * 16 + row] = m[r], wl[warp * 16 + row] = l[r];
        }
    }
    __syncthreads();
    const float ln2 = 0.6931471805599453f; // the maxima are in log2 units; partials store natural-log maxima
    for (int i = threadIdx.x; i < G * D; i += THREADS) {
        const int row = i / D, d = i % D, h = kvh * G + row;
        float mx = -INFINITY;
#pragma unroll
        for (int w = 0; w < WARPS; w++)
            mx = fmaxf(mx, wm[w * 16 + row]);
        const float base = mx == -INFINITY ? 0.0f : mx; // a block with no keys: every weight 0, not NaN
        float num = 0, den = 0;
#pragma unroll
        for (int w = 0; w < WARPS; w++) {
            const float wt = fast_exp2(wm[w * 16 + row] - base); // 0 for a warp with no keys
            num += wt * wo[(w * 16 + row) * D + (d ^ swizzle(row))];
            den += wt * wl[w * 16 + row];
        }
        if (n_splits == 1) {
            ((__half *)a.out)[((size_t)tok * a.n_heads + h) * D + d] = __float2half(num / den);
        } else {
            float *part = partial + (((size_t)seq * a.n_heads + h) * n_splits + split) * partial_floats<D>();
            part[d] = num;
            if (d == 0)
                part[D] = mx == -INFINITY ? -INFINITY : mx * ln2, part[D + 1] = den;
        }
    }
    if (store_new && new_slot >= 0) {
        const size_t blk = (size_t)blocks_of.block(new_slot) * a.n_kv_heads + kvh;
        const size_t at = (blk * blocks_of.size + blocks_of.offset(new_slot)) * D;
        __half *kc = (__half *)a.k_cache + at, *vc = (__half *)a.v_cache + at;
        *reinterpret_cast<__half2 *>(kc + c) = new_k[0], *reinterpret_cast<__half2 *>(kc + c + D / 2) = new_k[1];
        *reinterpret_cast<__half2 *>(vc + c) = new_v[0], *reinterpret_cast<__half2 *>(vc + c + D / 2) = new_v[1];
    }
}

// out = sum_i w_i o_i / sum_i w_i l_i with w_i = exp(m_i - max m): one block per (head, sequence).
template <int D> __global__ void decode_merge_kernel(k_attn_args a, int n_splits, const float *partial)
{
    pdl_wait();
    pdl_launch_dependents();
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

template <int D, int STAGES, int WARPS>
cudaError_t launch(const k_attn_args *a, int split_len, int n_splits, float *scratch, cudaStream_t stream)
{
    using L = decode_layout<D, STAGES, WARPS>;
    const size_t bytes = L::bytes + table_entries(split_len, a->block_size) * sizeof(int32_t);
    static size_t configured; // the shared-memory opt-in, raised as needed per instantiation
    if (bytes > configured) {
        cudaError_t e = cudaFuncSetAttribute(decode_split_kernel<D, STAGES, WARPS>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
        if (e != cudaSuccess)
            return e;
        configured = bytes;
    }
    cudaError_t e = fk_launch(decode_split_kernel<D, STAGES, WARPS>, dim3(n_splits, a->n_kv_heads, a->n_seqs),
                              dim3(L::THREADS), bytes, stream, *a, split_len, n_splits, scratch);
    if (e != cudaSuccess || n_splits == 1)
        return e;
    return fk_launch(decode_merge_kernel<D>, dim3(a->n_heads, a->n_seqs), dim3(D), 0, stream, *a, n_splits,
                     (const float *)scratch);
}

// Many (sequence, KV head) pairs: blocks of 4 warps (half the shared memory, so more of them on an SM) beat blocks of
// 8 once the pairs fill the GPU several times over. On an H100 (BENCHMARKS.md), at head dim 64 from 512 pairs
// (Llama-1B shapes at 64 sequences of 512 to 2,048 keys: 8-11 % faster alone, bench-1b's 64-request decode +2 %),
// at head dim 128 only from 2,048 (64 sequences of Llama-8B shapes: 6-29 % slower; 256: 3-13 % faster); with
// fewer pairs (and with splits) 8 warps are faster.
template <int D> bool four_warp_blocks(int pairs, int n_sms)
{
    return pairs >= (D == 64 ? 3 : 12) * n_sms;
}

// The fragments kernel (16 warps an SM) wants its warps to fill the GPU. On an H100 (BENCHMARKS.md), at 129-256
// keys: one warp a pair is 6-13 % faster than the 4-warp blocks from 128 sequences x 8 KV heads (1,024 pairs, 7.8 x
// SMs) up and 20 % slower at 64 x 8; 4 warps a pair up to 4 x SMs pairs and 2 up to 7 x SMs are 10-27 % faster than
// the shared-memory kernel from 32 x 8 (256 pairs) to 112 x 8 (and at 64 x 8 also at 400-512 and 1,000-1,100 keys),
// and the whole step gains from 48 x 8 on (32 x 8 with 4 warps forced: level). From 7 x SMs pairs two warps a pair
// were no faster in the step.
inline bool fragments_kernel(int pairs, int n_sms)
{
    return pairs >= 2 * n_sms;
}

inline int fragment_slices(int pairs, int n_sms)
{
    return pairs <= 4 * n_sms ? 4 : pairs < 7 * n_sms ? 2 : 1;
}

// Stages in flight need cp.async, which the code has only when compiled for sm_80 or later: the choice follows the
// architecture the kernels were built for (so the compute_75 PTX build runs Turing's configuration anywhere, and the
// fragments kernel only where decode_kernel asks for it: it is not measured on a T4).
template <int D> cudaError_t launch_stages(const k_attn_args *a, int split_len, int n_splits, float *scratch,
                                           cudaStream_t s)
{
    static int ptx = -1, n_sms = 0;
    if (ptx < 0) {
        cudaFuncAttributes attr;
        int device;
        cudaError_t e;
        if ((e = cudaFuncGetAttributes(&attr, decode_merge_kernel<64>)) != cudaSuccess ||
            (e = cudaGetDevice(&device)) != cudaSuccess ||
            (e = cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess)
            return e;
        ptx = attr.ptxVersion;
    }
    const int pairs = a->n_seqs * a->n_kv_heads;
    if (k_attention_decode_fragments_applies(a, n_splits) && a->decode_kernel != K_DECODE_STAGED &&
        (a->decode_kernel == K_DECODE_FRAGMENTS || (ptx >= 80 && fragments_kernel(pairs, n_sms))))
        return k_attention_decode_fragments(a, a->decode_slices ? a->decode_slices : fragment_slices(pairs, n_sms), s);
    if (ptx < 80)
        return launch<D, 1, 4>(a, split_len, n_splits, scratch, s);
    return four_warp_blocks<D>(pairs, n_sms)
               ? launch<D, FK_DECODE_STAGES, 4>(a, split_len, n_splits, scratch, s)
               : launch<D, FK_DECODE_STAGES, FK_DECODE_WARPS>(a, split_len, n_splits, scratch, s);
}

} // namespace

// A block (8 warps, two stages) fills an SM's shared memory, so one wave is one block per SM. With at least as many
// (sequence, KV head) pairs as SMs nothing is split (each block streams a whole context, and the merge is saved);
// with fewer, the contexts are split so that the pairs' splits fill one wave, each split at least MIN_SPLIT keys
// (short contexts are not worth a merge). Measured on an H100 against every other split count (kernels/bench
// SWEEP rows): 64 x 4096, 16 x 16384 and 1 x 32768 all best or within a point of it. So n_seqs * n_splits is at
// most SMs / Hkv, which bounds the scratch below. FK_DECODE_MIN_SPLIT changes the floor at build time (to measure
// short contexts at batch 1, where a split of fewer keys costs a merge kernel).
#ifndef FK_DECODE_MIN_SPLIT
#define FK_DECODE_MIN_SPLIT 256
#endif
constexpr int MIN_SPLIT = FK_DECODE_MIN_SPLIT;

extern "C" int k_attention_decode_splits(int n_seqs, int n_kv_heads, int max_context, int n_sms)
{
    const int pairs = n_seqs * n_kv_heads;
    const int by_fill = pairs >= n_sms ? 1 : n_sms / pairs;
    const int by_length = (max_context + MIN_SPLIT - 1) / MIN_SPLIT;
    const int s = by_fill < by_length ? by_fill : by_length;
    return s < 1 ? 1 : s;
}

// Per (sequence, head, split): o[D], max, sum.
extern "C" size_t k_attention_decode_scratch_bytes(int max_seqs, int n_heads, int n_kv_heads, int head_dim, int n_sms)
{
    const size_t split_rows = (size_t)(n_sms + n_kv_heads - 1) / n_kv_heads + max_seqs;
    return split_rows * n_heads * (head_dim + 2) * sizeof(float);
}

extern "C" cudaError_t k_attention_decode(const k_attn_args *a, int split_len, int n_splits, void *scratch,
                                          cudaStream_t stream)
{
    if (a->n_seqs <= 0)
        return cudaSuccess;
    if (a->n_heads % a->n_kv_heads || a->n_heads / a->n_kv_heads > MAX_G || split_len < 1 || n_splits < 1)
        return cudaErrorInvalidValue;
    switch (a->head_dim) {
    case 64: return launch_stages<64>(a, split_len, n_splits, (float *)scratch, stream);
    case 128: return launch_stages<128>(a, split_len, n_splits, (float *)scratch, stream);
    default: return cudaErrorInvalidValue;
    }
}
