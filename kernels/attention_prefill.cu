// attention_prefill.cu — causal attention for prefill chunks over the paged KV cache, FlashAttention-2 style:
// a block takes 64 queries of one sequence and one head (4 warps x 16 rows), walks the keys in tiles of 64
// gathered through the block table into shared memory, computes S = Q K^T and O += P V on tensor cores (fp16 in,
// fp32 accumulate) with an online softmax, so no N x N matrix is ever stored. K/V tiles are double-buffered with
// cp.async on sm_80+; Turing (sm_75) loads them synchronously and uses m16n8k8 (common.cuh). On a Hopper with
// sm_90a code the launcher runs attention_prefill_hopper.cu's wgmma kernel instead (128-query tiles).
//
// Fragment layouts follow the PTX ISA for mma.m16n8k16: in a warp, lane = 4 g + t; accumulator c0,c1 hold row g,
// columns 2t, 2t+1; c2,c3 row g + 8.
#include "attention_prefill_hopper.cuh"
#include "common.cuh"
#include "online_softmax.cuh"
#include "kernels.h"

// Occupancy knobs (kernels/bench times the variants): K/V stages on sm_80+ (2: the next tile loads while this one
// is used; 1: less shared memory, so more blocks per SM hide the loads instead) and the blocks per SM the register
// budget must allow.
// Measured on an H200 (4 x 4096 tokens, 16 heads, D 128): 1 stage, 3 blocks 173 TFLOP/s; 2 stages, 2 blocks 160;
// 2 stages, 3 blocks 154; 1 stage, 4 blocks (spills) 157.
#ifndef FK_PREFILL_STAGES
#define FK_PREFILL_STAGES 1
#endif
#ifndef FK_PREFILL_MIN_BLOCKS
#define FK_PREFILL_MIN_BLOCKS 3
#endif

namespace {

constexpr int BQ = 64;      // queries per block
constexpr int BK = 64;      // keys per tile
constexpr int THREADS = 128;

template <int D> struct tile_layout {
    static constexpr int STRIDE = D + 8; // halves per shared row: +16 bytes keeps ldmatrix rows in distinct banks
    static constexpr int Q = 0, K0 = BQ * STRIDE, V0 = K0 + BK * STRIDE, K1 = V0 + BK * STRIDE,
                         V1 = K1 + BK * STRIDE;
    static constexpr size_t bytes(bool double_buffer)
    {
        return (size_t)(double_buffer ? V1 + BK * STRIDE : K1) * sizeof(__half);
    }
};

// Loads keys k0 .. k0 + BK - 1 (those < kv_end; the rest zero) of one KV head into sk / sv.
template <int D>
__device__ __forceinline__ void load_kv_tile(const k_attn_args &a, const int32_t *blocks, int kvh, int k0, int kv_end,
                                             __half *sk, __half *sv)
{
    constexpr int STRIDE = tile_layout<D>::STRIDE, CHUNKS = D / 8;
    const cache_blocks cb = cache_blocks_of(a.block_size);
    for (int i = threadIdx.x; i < BK * CHUNKS; i += THREADS) {
        const int r = i / CHUNKS, c = (i % CHUNKS) * 8, key = k0 + r;
        __half *dk = sk + r * STRIDE + c, *dv = sv + r * STRIDE + c;
        if (key < kv_end) {
            const size_t at = (((size_t)blocks[cb.block(key)] * a.n_kv_heads + kvh) * cb.size + cb.offset(key)) * D + c;
            copy16_async(dk, (const __half *)a.k_cache + at);
            copy16_async(dv, (const __half *)a.v_cache + at);
        } else {
            *reinterpret_cast<uint4 *>(dk) = make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4 *>(dv) = make_uint4(0, 0, 0, 0);
        }
    }
    cp_async_commit();
}

template <int D, bool DOUBLE_BUFFER>
__global__ void __launch_bounds__(THREADS, FK_PREFILL_MIN_BLOCKS) attention_prefill_kernel(k_attn_args a,
                                                                                         const int2 *tiles)
{
    using L = tile_layout<D>;
    constexpr int STRIDE = L::STRIDE;
    extern __shared__ __align__(16) __half smem[];
    __half *sq = smem + L::Q;

    pdl_wait();
    pdl_launch_dependents();
    const int seq = tiles[blockIdx.x].x, q0 = tiles[blockIdx.x].y, h = blockIdx.y;
    const int kvh = h / (a.n_heads / a.n_kv_heads);
    const int tok0 = a.query_start[seq], nq = a.query_start[seq + 1] - tok0, ctx = a.context_len[seq];
    const int rows = min(BQ, nq - q0);
    const int pos0 = ctx - nq + q0; // position of the tile's first query
    const int kv_end = min(ctx, pos0 + rows);
    const int32_t *blocks = a.block_tables + (size_t)seq * a.max_blocks;
    const size_t qkv_row = (size_t)(a.n_heads + 2 * a.n_kv_heads) * D;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

    for (int i = threadIdx.x; i < BQ * (D / 8); i += THREADS) {
        const int r = i / (D / 8), c = (i % (D / 8)) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r < rows)
            v = *reinterpret_cast<const uint4 *>((const __half *)a.qkv + (tok0 + q0 + r) * qkv_row + (size_t)h * D + c);
        *reinterpret_cast<uint4 *>(sq + r * STRIDE + c) = v;
    }
    load_kv_tile<D>(a, blocks, kvh, 0, kv_end, smem + L::K0, smem + L::V0);
    __syncthreads();

    uint32_t qf[D / 16][4]; // this warp's 16 query rows as A fragments, all of D
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        ldmatrix_x4(qf[kk], sq + (warp * 16 + lane % 16) * STRIDE + kk * 16 + (lane / 16) * 8);

    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; j++)
        o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}; // rows g and g + 8
    const float scale_log2 = a.scale * 1.4426950408889634f;
    const int row_lo = warp * 16 + g; // tile rows of this thread: row_lo and row_lo + 8

    const int n_tiles = (kv_end + BK - 1) / BK;
    for (int it = 0; it < n_tiles; it++) {
        const int k0 = it * BK;
        const int buf = DOUBLE_BUFFER ? it & 1 : 0;
        const __half *sk = smem + (buf ? L::K1 : L::K0), *sv = smem + (buf ? L::V1 : L::V0);
        if (DOUBLE_BUFFER && it + 1 < n_tiles) {
            // Prefetch the next tile into the other buffer while this one is used.
            load_kv_tile<D>(a, blocks, kvh, k0 + BK, kv_end, smem + (buf ? L::K0 : L::K1), smem + (buf ? L::V0 : L::V1));
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();

        // S = Q K^T: 16 rows x 64 keys per warp, as 8 n-tiles of 8 keys.
        float s[BK / 8][4];
#pragma unroll
        for (int j = 0; j < BK / 8; j++)
            s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
            for (int nn = 0; nn < BK / 16; nn++) {
                uint32_t b[4];
                ldmatrix_x4(b, sk + (nn * 16 + lane % 8 + (lane / 16) * 8) * STRIDE + kk * 16 + ((lane / 8) % 2) * 8);
                mma_16816(s[2 * nn], qf[kk], b);
                mma_16816(s[2 * nn + 1], qf[kk], b + 2);
            }

        // Scale, and the causal mask where this warp's rows can see only part of the tile (key > query position);
        // rows past the tile's end are never written, so they need no mask. Then the online softmax.
        const bool masked = k0 + BK - 1 > pos0 + warp * 16;
#pragma unroll
        for (int j = 0; j < BK / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int row = row_lo + (e >= 2 ? 8 : 0), key = k0 + j * 8 + 2 * t + (e & 1);
                s[j][e] = !masked || key <= pos0 + row ? s[j][e] * scale_log2 : -INFINITY;
            }
        uint32_t p[BK / 16][4]; // P as A fragments: two n-tiles of S make one 16 x 16 block
        online_softmax_tile(s, m, l, o, p);

        // O += P V: V tile rows are keys; the transposing ldmatrix gives B fragments with k = key, n = d.
#pragma unroll
        for (int kc = 0; kc < BK / 16; kc++)
#pragma unroll
            for (int dn = 0; dn < D / 16; dn++) {
                uint32_t b[4];
                ldmatrix_x4_trans(b, sv + (kc * 16 + lane % 8 + ((lane / 8) % 2) * 8) * STRIDE + dn * 16 + (lane / 16) * 8);
                mma_16816(o[2 * dn], p[kc], b);
                mma_16816(o[2 * dn + 1], p[kc], b + 2);
            }
        __syncthreads(); // this buffer is refilled two iterations on (or the next, single-buffered)
        if (!DOUBLE_BUFFER && it + 1 < n_tiles)
            load_kv_tile<D>(a, blocks, kvh, k0 + BK, kv_end, smem + L::K0, smem + L::V0);
    }

#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = row_lo + r * 8;
        if (row >= rows)
            continue;
        const float inv = 1.0f / l[r];
        __half *out = (__half *)a.out + ((size_t)(tok0 + q0 + row) * a.n_heads + h) * D;
#pragma unroll
        for (int j = 0; j < D / 8; j++)
            *reinterpret_cast<__half2 *>(out + j * 8 + 2 * t) = __floats2half2_rn(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
    }
}

template <int D, bool DOUBLE_BUFFER> cudaError_t configure_once()
{
    static bool done; // the shared-memory opt-in, once per instantiation
    if (done)
        return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(attention_prefill_kernel<D, DOUBLE_BUFFER>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)tile_layout<D>::bytes(DOUBLE_BUFFER));
    done = e == cudaSuccess;
    return e;
}

template <int D> cudaError_t launch(const k_attn_args *a, const int32_t *tiles, int n_tiles, cudaStream_t stream)
{
    // Double buffering needs cp.async, which the code has only when compiled for sm_80 or later: the choice follows
    // the architecture the kernels were built for (so the compute_75 PTX build runs Turing's configuration anywhere).
    static int ptx = -1;
    if (ptx < 0) {
        cudaFuncAttributes attr;
        cudaError_t e = cudaFuncGetAttributes(&attr, attention_prefill_kernel<D, false>);
        if (e != cudaSuccess)
            return e;
        ptx = attr.ptxVersion;
    }
    const dim3 grid(n_tiles, a->n_heads);
    const bool double_buffer = ptx >= 80 && FK_PREFILL_STAGES == 2;
    cudaError_t e = double_buffer ? configure_once<D, true>() : configure_once<D, false>();
    if (e != cudaSuccess)
        return e;
    return fk_launch(double_buffer ? attention_prefill_kernel<D, true> : attention_prefill_kernel<D, false>, grid,
                     dim3(THREADS), tile_layout<D>::bytes(double_buffer), stream, *a, (const int2 *)tiles);
}

} // namespace

extern "C" cudaError_t k_attention_prefill_tile_rows(int allow_hopper, int *tile_rows)
{
    bool hopper = false;
    cudaError_t e = allow_hopper ? prefill_hopper_available(&hopper) : cudaSuccess;
    *tile_rows = hopper ? 128 : BQ;
    return e;
}

extern "C" cudaError_t k_attention_prefill(const k_attn_args *a, const int32_t *tiles, int n_tiles, int tile_rows,
                                           cudaStream_t stream)
{
    if (n_tiles <= 0)
        return cudaSuccess;
    if (a->n_heads % a->n_kv_heads || (tile_rows != BQ && tile_rows != 128))
        return cudaErrorInvalidValue;
    if (tile_rows == 128)
        return prefill_hopper(a, tiles, n_tiles, stream);
    switch (a->head_dim) {
    case 64: return launch<64>(a, tiles, n_tiles, stream);
    case 128: return launch<128>(a, tiles, n_tiles, stream);
    default: return cudaErrorInvalidValue;
    }
}
