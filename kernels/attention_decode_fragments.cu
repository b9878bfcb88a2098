// attention_decode_fragments.cu — decode attention for many (sequence, KV head) pairs of short contexts: one, two or
// four warps per pair, their keys loaded from the paged cache straight into the MMA fragments' registers, with no
// shared memory and no barrier in the main loop. attention_decode.cu's kernel stages 16-key chunks per warp through
// shared memory, which at 256 sequences x 8 KV heads holds it to 5 blocks (20 warps) an SM and a block-wide barrier
// per chunk; here each warp streams its tiles alone and 16 warps an SM keep their loads in flight (docs/BENCHMARKS.md:
// 256 sequences of 129-256 keys at head dim 64, 12 % faster on an H100). With fewer pairs than it takes to fill the
// SMs one warp a pair, a pair's tiles are dealt out to 2 or 4 warps (its slices), which keep that many tiles in
// flight, and the pair's first warp merges their softmax states through shared memory at the end.
//
// A warp takes the context in tiles of 16 keys (block_size % 16 == 0, so a tile is within one block of the cache).
// S = Q K^T and O += P V are mma.sync m16n8k16 as in attention_decode.cu (the pair's G query heads are the rows,
// rows G..15 zero), but the fragments come from global memory, so the head dimension is permuted to make every
// thread's loads 16-byte pieces of one row:
//   - QK^T: thread (g, t) (lane = 4 g + t) holds, of q rows g and g + 8 and of K rows g and 8 + g (keys of the
//     tile's two n-tiles), the pieces at dims 32 p + 8 t .. + 7 (p < D/32); k-slice kk takes words 2 (kk % 2) and
//     2 (kk % 2) + 1 of piece kk / 2. A dot product does not care in which order its dims are summed.
//   - PV: it holds V rows 2t, 2t + 1, 8 + 2t, 9 + 2t (the keys its P fragment covers) at dims 64 q + 8 g .. + 7
//     (q < D/64); output n-tile dn is dims 64 (dn / 8) + 8 n + dn % 8, so the B fragment pairs two keys' halves
//     (byte_perm), and the thread's O accumulators come out as dims 64 q + 16 t .. + 15 of rows g, g + 8: two
//     16-byte stores each.
// RoPE's partner dims c and c + D/2 fall in the same thread (pieces p and p + D/64), so with rope_store the warp
// rotates its q rows and the new key in registers, uses the new key and value (not yet in the cache) in its last
// tile, and stores them into the cache at the end, as attention_decode.cu does, with the same rounding.
#include "common.cuh"
#include "online_softmax.cuh"
#include "kernels.h"

namespace {

constexpr int WARPS = 4; // pairs per block: blocks only group warps here

template <int D> struct kv_tile {
    uint4 k[2][D / 32]; // K rows g and 8 + g at dims 32 p + 8 t
    uint4 v[4][D / 64]; // V rows 2t, 2t + 1, 8 + 2t, 9 + 2t at dims 64 q + 8 g
};

// Word w (halves 2w, 2w + 1) of a 16-byte piece; w is a constant once the loops are unrolled.
__device__ __forceinline__ uint32_t &word(uint4 &v, int w)
{
    return reinterpret_cast<uint32_t *>(&v)[w];
}

// V row of the tile (0..15) that the thread's i-th V piece holds.
__device__ __forceinline__ int v_row(int i, int t)
{
    return (i / 2) * 8 + 2 * t + i % 2;
}

// One warp's online-softmax state of its rows g and g + 8 (m, the quad's sum l, the output fragments), as a slice
// leaves it in shared memory for the pair's first warp.
template <int D> struct slice_state {
    float m[2][32], l[2][32], o[D / 8][4][32]; // [..][lane]: each lane reads back its own
};

// With SLICES warps a pair (1, 2 or 4), warp s of a pair takes tiles s, s + SLICES, ...: a pair's context is read
// with SLICES tiles in flight instead of one, for batches with too few pairs to fill the SMs one warp a pair; the
// pair's first warp merges the slices' states in slice order (the result does not depend on timing).
template <int D, int SLICES> __global__ void __launch_bounds__(32 * WARPS, 4) decode_fragments_kernel(k_attn_args a)
{
    constexpr int NP = D / 32, NV = D / 64;
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, slice = (threadIdx.x / 32) % SLICES;
    const int pair = (blockIdx.x * WARPS + threadIdx.x / 32) / SLICES;
    if (pair >= a.n_seqs * a.n_kv_heads) {
        if (SLICES > 1)
            __syncthreads(); // the merge's barrier, which the block's other warps wait at
        return;
    }
    const int seq = pair / a.n_kv_heads, kvh = pair % a.n_kv_heads, G = a.n_heads / a.n_kv_heads;
    const int H = a.n_heads, Hkv = a.n_kv_heads;
    const cache_blocks blocks_of = cache_blocks_of(a.block_size);

    // The step's indices, before the wait (common.cuh): length, token, the first 32 block-table entries (one a
    // lane), and with rope_store the position's angles and the new key's slot.
    const int ctx = a.context_len[seq], tok = a.query_start[seq];
    const int32_t *blocks = a.block_tables + (size_t)seq * a.max_blocks;
    const int n_pages = blocks_of.block(ctx + blocks_of.size - 1);
    int table_base = 0, table = lane < n_pages ? blocks[lane] : 0;
    const bool rope = a.rope_store && a.inv_freq;
    // Angles of dims 32 p + 8 t + e (p < NP/2, e < 8): the first halves of this thread's RoPE pairs.
    float cs[NP / 2][8], sn[NP / 2][8];
    const float pos = rope ? (float)a.positions[tok] : 0.0f;
#pragma unroll
    for (int p = 0; p < NP / 2; p++)
#pragma unroll
        for (int e = 0; e < 8; e++) {
            cs[p][e] = 1, sn[p][e] = 0;
            if (rope)
                sincosf(pos * a.inv_freq[32 * p + 8 * t + e], &sn[p][e], &cs[p][e]);
        }
    const int new_key = ctx - 1; // with rope_store: supplied from qkv, stored by this warp at the end
    const int new_slot = a.rope_store ? a.slots[tok] : -1;
    const int load_end = a.rope_store ? new_key : ctx;

    const __half *kc = (const __half *)a.k_cache, *vc = (const __half *)a.v_cache;
    auto load_tile = [&](int tile, kv_tile<D> &r) {
        const int k0 = tile * 16, page = blocks_of.block(k0);
        if (page >= table_base + 32) { // the next 32 entries (contexts beyond 32 blocks)
            table_base += 32;
            table = table_base + lane < n_pages ? blocks[table_base + lane] : 0;
        }
        const int blk = __shfl_sync(0xffffffffu, table, page - table_base);
        const size_t base = (((size_t)blk * Hkv + kvh) * blocks_of.size + blocks_of.offset(k0)) * D;
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int p = 0; p < NP; p++)
                r.k[j][p] = k0 + 8 * j + g < load_end
                                ? load_stream16(kc + base + (size_t)(8 * j + g) * D + 32 * p + 8 * t)
                                : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int q = 0; q < NV; q++)
                r.v[i][q] = k0 + v_row(i, t) < load_end
                                ? load_stream16(vc + base + (size_t)v_row(i, t) * D + 64 * q + 8 * g)
                                : make_uint4(0, 0, 0, 0);
    };
    // With rope_store the keys read before the wait are earlier passes' (the kernel before writes only qkv), so the
    // first tile starts loading now; without, the kernel before (rope_store_kv) stores the new key, so it waits.
    const int n_tiles = (ctx + 15) / 16;
    kv_tile<D> tile;
    if (a.rope_store && slice < n_tiles)
        load_tile(slice, tile);
    pdl_wait();
    pdl_launch_dependents();
    if (!a.rope_store && slice < n_tiles)
        load_tile(slice, tile);

    // Rotates the pairs (piece p, piece p + NP/2) of one row in place, rounded to fp16 as rope_store_kv stores.
    auto rotate = [&](uint4 *pieces) {
#pragma unroll
        for (int p = 0; p < NP / 2; p++)
#pragma unroll
            for (int w = 0; w < 4; w++) {
                uint32_t &lo_w = word(pieces[p], w), &hi_w = word(pieces[p + NP / 2], w);
                const float2 x = __half22float2(*reinterpret_cast<__half2 *>(&lo_w));
                const float2 y = __half22float2(*reinterpret_cast<__half2 *>(&hi_w));
                const float c0 = cs[p][2 * w], s0 = sn[p][2 * w], c1 = cs[p][2 * w + 1], s1 = sn[p][2 * w + 1];
                const __half2 lo = __floats2half2_rn(x.x * c0 - y.x * s0, x.y * c1 - y.y * s1);
                const __half2 hi = __floats2half2_rn(y.x * c0 + x.x * s0, y.y * c1 + x.y * s1);
                lo_w = *reinterpret_cast<const uint32_t *>(&lo), hi_w = *reinterpret_cast<const uint32_t *>(&hi);
            }
    };
    // Q rows g and g + 8 (zero at and past G), rotated with rope_store, pre-scaled by scale * log2(e).
    const float scale_log2 = a.scale * 1.4426950408889634f;
    const __half *token_row = (const __half *)a.qkv + (size_t)tok * (H + 2 * Hkv) * D;
    uint4 q_rows[2][NP];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = g + 8 * r;
#pragma unroll
        for (int p = 0; p < NP; p++)
            q_rows[r][p] = row < G ? *reinterpret_cast<const uint4 *>(token_row + (size_t)(kvh * G + row) * D +
                                                                      32 * p + 8 * t)
                                   : make_uint4(0, 0, 0, 0);
        if (rope)
            rotate(q_rows[r]);
    }
    uint32_t qa[D / 16][4]; // A fragments: a0, a2 from row g; a1, a3 from row g + 8
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
        for (int r = 0; r < 2; r++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const float2 f = __half22float2(
                    *reinterpret_cast<const __half2 *>(&word(q_rows[r][kk / 2], 2 * (kk % 2) + h)));
                qa[kk][2 * h + r] = pack_half2(f.x * scale_log2, f.y * scale_log2);
            }
    // The new key (rotated) and value: this thread's pieces of them, whichever thread's tile rows they turn out to be.
    uint4 new_k[NP], new_v[NV];
    if (a.rope_store) {
#pragma unroll
        for (int p = 0; p < NP; p++)
            new_k[p] = *reinterpret_cast<const uint4 *>(token_row + (size_t)(H + kvh) * D + 32 * p + 8 * t);
#pragma unroll
        for (int q = 0; q < NV; q++)
            new_v[q] = *reinterpret_cast<const uint4 *>(token_row + (size_t)(H + Hkv + kvh) * D + 64 * q + 8 * g);
        if (rope)
            rotate(new_k);
    }

    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; j++)
        o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}; // rows g and g + 8
    // One tile in registers at a time: the next one loads once this one is computed (a second buffer's registers
    // would cost more warps an SM than its overlap gains, BENCHMARKS.md).
    for (int ti = slice; ti < n_tiles; ti += SLICES) {
        kv_tile<D> &r = tile;
        const int k0 = ti * 16;
        if (a.rope_store && k0 <= new_key && new_key < k0 + 16) { // the new key's rows, zeroed by the loads
#pragma unroll
            for (int j = 0; j < 2; j++)
                if (k0 + 8 * j + g == new_key)
#pragma unroll
                    for (int p = 0; p < NP; p++)
                        r.k[j][p] = new_k[p];
#pragma unroll
            for (int i = 0; i < 4; i++)
                if (k0 + v_row(i, t) == new_key)
#pragma unroll
                    for (int q = 0; q < NV; q++)
                        r.v[i][q] = new_v[q];
        }
        // S = Q K^T: two n-tiles of 8 keys.
        float s[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const uint32_t b[2] = {word(r.k[j][kk / 2], 2 * (kk % 2)), word(r.k[j][kk / 2], 2 * (kk % 2) + 1)};
                mma_16816(s[j], qa[kk], b);
            }
        // Keys past the context (zero-filled) do not count.
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (k0 + 8 * j + 2 * t + (e & 1) >= ctx)
                    s[j][e] = -INFINITY;
        uint32_t pf[1][4];
        online_softmax_tile(s, m, l, o, pf);
        // O += P V: n-tile dn pairs keys (2t, 2t + 1) and (8 + 2t, 9 + 2t) at dim 64 (dn / 8) + 8 g + dn % 8.
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            const int q = dn / 8, w = (dn % 8) / 2;
            const unsigned halves = dn % 2 ? 0x7632 : 0x5410; // the high or the low halves of both words
            const uint32_t b[2] = {__byte_perm(word(r.v[0][q], w), word(r.v[1][q], w), halves),
                                   __byte_perm(word(r.v[2][q], w), word(r.v[3][q], w), halves)};
            mma_16816(o[dn], pf[0], b);
        }
        if (ti + SLICES < n_tiles)
            load_tile(ti + SLICES, tile);
    }

#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        l[rr] += __shfl_xor_sync(0xffffffffu, l[rr], 1);
        l[rr] += __shfl_xor_sync(0xffffffffu, l[rr], 2);
    }
    if constexpr (SLICES > 1) {
        // Slices 1.. leave their states; the first folds them in, in order: M = max(m, m'), and l, o scaled by
        // 2^(m - M) and 2^(m' - M) (a row with nothing visible in either stays at zero).
        __shared__ slice_state<D> states[WARPS];
        slice_state<D> &mine = states[threadIdx.x / 32];
        if (slice > 0) {
#pragma unroll
            for (int rr = 0; rr < 2; rr++)
                mine.m[rr][lane] = m[rr], mine.l[rr][lane] = l[rr];
#pragma unroll
            for (int j = 0; j < D / 8; j++)
#pragma unroll
                for (int c = 0; c < 4; c++)
                    mine.o[j][c][lane] = o[j][c];
        }
        __syncthreads();
        if (slice > 0)
            return;
#pragma unroll
        for (int sl = 1; sl < SLICES; sl++) {
            const slice_state<D> &theirs = states[threadIdx.x / 32 + sl];
            float mine_scale[2], their_scale[2];
#pragma unroll
            for (int rr = 0; rr < 2; rr++) {
                const float m2 = theirs.m[rr][lane], m_new = fmaxf(m[rr], m2);
                const float base = m_new == -INFINITY ? 0.0f : m_new;
                mine_scale[rr] = fast_exp2(m[rr] - base), their_scale[rr] = fast_exp2(m2 - base);
                l[rr] = l[rr] * mine_scale[rr] + theirs.l[rr][lane] * their_scale[rr];
                m[rr] = m_new;
            }
#pragma unroll
            for (int j = 0; j < D / 8; j++)
#pragma unroll
                for (int c = 0; c < 4; c++)
                    o[j][c] = o[j][c] * mine_scale[c >> 1] + theirs.o[j][c][lane] * their_scale[c >> 1];
        }
    }
    // Rows g and g + 8: accumulator c of n-tile 8 q + i holds dim 64 q + 16 t + 8 c + i.
    __half *out = (__half *)a.out + ((size_t)tok * H + (size_t)kvh * G) * D;
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        const int row = g + 8 * rr;
        if (row >= G)
            continue;
        const float inv = 1.0f / l[rr];
#pragma unroll
        for (int q = 0; q < NV; q++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                uint4 piece;
#pragma unroll
                for (int w = 0; w < 4; w++)
                    word(piece, w) =
                        pack_half2(o[8 * q + 2 * w][2 * rr + c] * inv, o[8 * q + 2 * w + 1][2 * rr + c] * inv);
                *reinterpret_cast<uint4 *>(out + (size_t)row * D + 64 * q + 16 * t + 8 * c) = piece;
            }
    }
    if (new_slot >= 0) { // the new key's row by lanes t of group 0, its value's by lanes g with t == 0
        const size_t blk = (size_t)blocks_of.block(new_slot) * Hkv + kvh;
        const size_t at = (blk * blocks_of.size + blocks_of.offset(new_slot)) * D;
        if (g == 0)
#pragma unroll
            for (int p = 0; p < NP; p++)
                *reinterpret_cast<uint4 *>((__half *)a.k_cache + at + 32 * p + 8 * t) = new_k[p];
        if (t == 0)
#pragma unroll
            for (int q = 0; q < NV; q++)
                *reinterpret_cast<uint4 *>((__half *)a.v_cache + at + 64 * q + 8 * g) = new_v[q];
    }
}

} // namespace

extern "C" int k_attention_decode_fragments_applies(const k_attn_args *a, int n_splits)
{
    return a->head_dim == 64 && a->block_size % 16 == 0 && n_splits == 1 && a->n_heads / a->n_kv_heads <= 16;
}

extern "C" cudaError_t k_attention_decode_fragments(const k_attn_args *a, int slices, cudaStream_t stream)
{
    if (a->head_dim != 64 || a->block_size % 16 || a->n_heads % a->n_kv_heads || a->n_heads / a->n_kv_heads > 16)
        return cudaErrorInvalidValue;
    const int pairs = a->n_seqs * a->n_kv_heads;
    if (pairs <= 0)
        return cudaSuccess;
    const dim3 grid((pairs * slices + WARPS - 1) / WARPS), block(32 * WARPS);
    switch (slices) {
    case 1: return fk_launch(decode_fragments_kernel<64, 1>, grid, block, 0, stream, *a);
    case 2: return fk_launch(decode_fragments_kernel<64, 2>, grid, block, 0, stream, *a);
    case 4: return fk_launch(decode_fragments_kernel<64, 4>, grid, block, 0, stream, *a);
    default: return cudaErrorInvalidValue;
    }
}
