// attention_prefill_hopper.cu — attention_prefill.cu's causal prefill attention on Hopper's warpgroup tensor cores
// (sm_90a: wgmma), FlashAttention-3 style. A block takes 128 queries of one sequence and one head and walks the keys
// in tiles of 128. It is warp-specialized: a producer warpgroup gathers Q and the K/V tiles through the block table
// into 128B-swizzled shared memory (wgmma.cuh) with cp.async, STAGES tiles ahead, announcing each full stage on an
// mbarrier; two consumer warpgroups of 64 query rows each take the tiles as they come and hand each stage back on
// another mbarrier. The consumers take turns issuing their matrix products (two named barriers, "ping-pong"), so
// the tensor cores run one's while the other computes its softmax.
// S = Q K^T is a wgmma with Q and K both read from shared memory; the online softmax runs on S where wgmma left it
// (registers, fp32); P, packed to fp16 in place, is the register operand of O += P V, whose V tile wgmma reads
// transposed (MN-major). Only the tiles that cross a warp's diagonal are masked; the backend orders the query tiles
// heaviest first. The producer keeps 56 registers so the consumers can have 224 (setmaxnreg).
// Accumulator layout (PTX "wgmma .m64nNk16 D"): warp w of a warpgroup holds rows 16w + g and 16w + g + 8 (lane =
// 4g + t); element 4j + e is column 8j + 2t + (e & 1) of row g + 8 (e >> 1). The A fragment of a 16-wide k step
// is mma.sync's m16n8k16 A layout, so two 8-column groups of S make one P fragment.
#include "attention_prefill_hopper.cuh"
#include "common.cuh"
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "wgmma.cuh"
#endif

namespace {

constexpr int BQ = 128, BK = 128, STAGES = 3, THREADS = 384; // warpgroup 0 produces, 1 and 2 consume

// Shared memory, from a 1024-byte aligned base: Q [BQ][D], STAGES x (K [BK][D], V [BK][D]), all swizzled; each
// stage's key places in the cache (STAGES x BK, in 16-byte units; ~0 past the end); then the mbarriers: full[STAGES] (the
// producer's 128 threads arrive when a stage's data has landed) and empty[STAGES] (the consumers' 256 threads arrive
// when done with it).
template <int D> struct hopper_layout {
    static constexpr uint32_t TILE = BK * D * 2; // bytes of one K or V tile
    static constexpr uint32_t K0 = BQ * D * 2;   // Q at 0
    static constexpr uint32_t OFFSETS = K0 + STAGES * 2 * TILE;
    static constexpr uint32_t BARRIERS = OFFSETS + STAGES * BK * 4;
    static constexpr uint32_t bytes = BARRIERS + 2 * STAGES * 8 + 1024; // + the alignment slack
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int PRODUCER_BARRIER = 3; // named barrier of the producer warpgroup (1 and 2 are the consumers' turns)

// The producer's 128 threads copy one K/V tile into stage slots sk, sv: first each looks up one key's place in the
// cache (places[r], in 16-byte units: caches up to 32 GiB), then they copy 16-byte chunks so that a warp's 32 lanes
// take consecutive chunks of the same rows (whole 32-byte sectors per instruction).
template <int D>
__device__ __forceinline__ void load_tile(const k_attn_args &a, const int32_t *blocks, int kvh, int k0, int kv_end,
                                          uint32_t sk, uint32_t sv, uint32_t *places, int tid)
{
    constexpr int CHUNKS = D / 8;
    constexpr uint32_t NONE = ~0u;
    const int key = k0 + tid;
    const cache_blocks cb = cache_blocks_of(a.block_size);
    places[tid] = key < kv_end ? (uint32_t)((((size_t)blocks[cb.block(key)] * a.n_kv_heads + kvh) * cb.size +
                                             cb.offset(key)) * CHUNKS)
                               : NONE;
    named_barrier_sync(PRODUCER_BARRIER, 128);
    const uint4 *k = (const uint4 *)a.k_cache, *v = (const uint4 *)a.v_cache;
#pragma unroll 4
    for (int i = tid; i < BK * CHUNKS; i += 128) {
        const int r = i / CHUNKS, j = i % CHUNKS;
        const uint32_t at = places[r];
        const uint32_t off = swizzled_offset(BK, r, j);
        const size_t chunk = at == NONE ? 0 : (size_t)at + j;
        copy16_async_or_zero(sk + off, k + chunk, at != NONE);
        copy16_async_or_zero(sv + off, v + chunk, at != NONE);
    }
}

// The tiles' data is in once the producer's own copies have landed; its fence makes them visible to wgmma.
__device__ __forceinline__ void announce(uint32_t full)
{
    fence_proxy_async();
    mbarrier_arrive(full);
}
// Consumer warpgroup c (0 or 1): query rows 64 c .. 64 c + 63 of the block's tile, against each key tile as the
// producer announces it; out rows from token tok0.
template <int D>
__device__ __forceinline__ void consume(const k_attn_args &a, uint32_t base, uint32_t full, uint32_t empty,
                                       uint32_t stage0, int c, int pos0, int rows, int n_tiles, int tok0, int h)
{
    using L = hopper_layout<D>;
    const int tid = threadIdx.x % 128;
    const int warp = tid / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int my_turn = 1 + c, their_turn = 2 - c; // named barriers; warpgroup 0 goes first
    if (c == 1)
        named_barrier_arrive(1, 256);
    float o[D / 2], s[BK / 2]; // this thread's part of O [64][D] and S [64][BK]
#pragma unroll
    for (int i = 0; i < D / 2; i++)
        o[i] = 0;
#pragma unroll
    for (int i = 0; i < BK / 2; i++)
        s[i] = 0;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}; // rows g and g + 8
    const float scale_log2 = a.scale * 1.4426950408889634f;
    const int warp_pos = pos0 + c * 64 + warp * 16; // position of this warp's first row
    const uint32_t q_rows = base + c * 64 * 128;    // this warpgroup's 64 rows of Q

    for (int it = 0; it < n_tiles; it++) {
        const int k0 = it * BK, st = it % STAGES;
        const uint32_t sk = stage0 + st * 2 * L::TILE, sv = sk + L::TILE;
        mbarrier_wait(full + 8 * st, (it / STAGES) & 1);

        // S = Q K^T: k runs over D, 16 at a time, 64 per swizzled region (32 bytes a step).
        named_barrier_sync(my_turn, 256);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            const uint32_t at = (kk / 4) * 128 * 128 + (kk % 4) * 32; // BQ == BK == 128 rows per region
            wgmma_ss_n128(s, smem_desc(q_rows + at, 16), smem_desc(sk + at, 16), kk > 0);
        }
        wgmma_commit();
        named_barrier_arrive(their_turn, 256);
        wgmma_wait_all(s);

        // The causal mask where some row of this warp sees only part of the tile, then the online softmax on the raw
        // scores: the scale (log2 units) is folded into the exponent's multiply-add, m is kept scaled.
        if (k0 + BK - 1 > warp_pos)
#pragma unroll
            for (int j = 0; j < BK / 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (k0 + j * 8 + 2 * t + (e & 1) > warp_pos + g + (e >> 1) * 8) // key after the query
                        s[4 * j + e] = -INFINITY;
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int j = 0; j < BK / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                mx[e >> 1] = fmaxf(mx[e >> 1], s[4 * j + e]);
        float corr[2], shift[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float m_new = fmaxf(m[r], mx[r] * scale_log2);
            shift[r] = m_new == -INFINITY ? 0.0f : m_new; // a row with nothing visible yet stays at zero
            corr[r] = fast_exp2(m[r] - shift[r]);
            m[r] = m_new;
            l[r] *= corr[r];
        }
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            o[4 * j + 0] *= corr[0], o[4 * j + 1] *= corr[0];
            o[4 * j + 2] *= corr[1], o[4 * j + 3] *= corr[1];
        }
        uint32_t p[BK / 16][4]; // P as A fragments: 8-column groups 2kk and 2kk + 1 make k step kk
#pragma unroll
        for (int j = 0; j < BK / 8; j++) {
            const float p0 = fast_exp2(fmaf(s[4 * j + 0], scale_log2, -shift[0]));
            const float p1 = fast_exp2(fmaf(s[4 * j + 1], scale_log2, -shift[0]));
            const float p2 = fast_exp2(fmaf(s[4 * j + 2], scale_log2, -shift[1]));
            const float p3 = fast_exp2(fmaf(s[4 * j + 3], scale_log2, -shift[1]));
            l[0] += p0 + p1;
            l[1] += p2 + p3;
            p[j / 2][(j % 2) * 2 + 0] = pack_half2(p0, p1);
            p[j / 2][(j % 2) * 2 + 1] = pack_half2(p2, p3);
        }

        // O += P V: k runs over the tile's keys, 16 (two swizzle atoms, 2048 bytes) a step; V is MN-major, its next
        // 64 columns of D one region (BK * 128 bytes) on.
        named_barrier_sync(my_turn, 256);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            const uint64_t dv = smem_desc(sv + kk * 2048, BK * 128);
            if constexpr (D == 128)
                wgmma_rs_n128_mn(o, p[kk], dv);
            else
                wgmma_rs_n64_mn(o, p[kk], dv);
        }
        wgmma_commit();
        if (c == 0 || it + 1 < n_tiles) // every turn given is taken: warpgroup 0 has no turn after its last
            named_barrier_arrive(their_turn, 256);
        wgmma_wait_all(o);
        mbarrier_arrive(empty + 8 * st); // the stage is free to refill
    }

#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = c * 64 + warp * 16 + g + r * 8;
        if (row >= rows)
            continue;
        const float inv = 1.0f / l[r];
        __half *out = (__half *)a.out + ((size_t)(tok0 + row) * a.n_heads + h) * D;
#pragma unroll
        for (int j = 0; j < D / 8; j++)
            *reinterpret_cast<__half2 *>(out + j * 8 + 2 * t) =
                __floats2half2_rn(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
    }
}
#endif

template <int D>
__global__ void __launch_bounds__(THREADS, 1) attention_prefill_hopper_kernel(k_attn_args a, const int2 *tiles)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using L = hopper_layout<D>;
    extern __shared__ __align__(16) uint8_t smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
    const uint32_t full = base + L::BARRIERS, empty = full + STAGES * 8; // barrier s at + 8 s
    auto stage_k = [&](int s) { return base + L::K0 + s * 2 * L::TILE; };

    pdl_wait();
    pdl_launch_dependents();
    const int seq = tiles[blockIdx.x].x, q0 = tiles[blockIdx.x].y, h = blockIdx.y;
    const int kvh = h / (a.n_heads / a.n_kv_heads);
    const int tok0 = a.query_start[seq], nq = a.query_start[seq + 1] - tok0, ctx = a.context_len[seq];
    const int rows = min(BQ, nq - q0);
    const int pos0 = ctx - nq + q0; // position of the tile's first query
    const int kv_end = min(ctx, pos0 + rows);
    const int n_tiles = (kv_end + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES; s++)
            mbarrier_init(full + 8 * s, 128), mbarrier_init(empty + 8 * s, 256);
    __syncthreads();

    if (wg == 0) { // ---- producer: Q with the first tile, then tile t into stage t % STAGES once it is free
        regs_release<56>();
        const int32_t *blocks = a.block_tables + (size_t)seq * a.max_blocks;
        const size_t qkv_row = (size_t)(a.n_heads + 2 * a.n_kv_heads) * D;
        for (int i = tid; i < BQ * (D / 8); i += 128) { // Q, whole sectors per warp as load_tile does
            const int r = i / (D / 8), j = i % (D / 8);
            const bool ok = r < rows;
            const __half *q = (const __half *)a.qkv + (ok ? (tok0 + q0 + r) * qkv_row + (size_t)h * D + j * 8 : 0);
            copy16_async_or_zero(base + swizzled_offset(BQ, r, j), q, ok);
        }
        uint32_t *places = reinterpret_cast<uint32_t *>(smem_raw + (base - smem_addr(smem_raw)) + L::OFFSETS);
        for (int t = 0; t < n_tiles; t++) {
            const int s = t % STAGES;
            if (t >= STAGES)
                mbarrier_wait(empty + 8 * s, (t / STAGES - 1) & 1); // the consumers are done with tile t - STAGES
            load_tile<D>(a, blocks, kvh, t * BK, kv_end, stage_k(s), stage_k(s) + L::TILE, places + s * BK, tid);
            cp_async_commit();
            if (t > 0) { // tile t - 1 (and Q) landed: all but the newest group are done
                cp_async_wait<1>();
                announce(full + 8 * ((t - 1) % STAGES));
            }
        }
        cp_async_wait<0>();
        announce(full + 8 * ((n_tiles - 1) % STAGES));
    } else {
        regs_take<224>();
        consume<D>(a, base, full, empty, stage_k(0), wg - 1, pos0, rows, n_tiles, tok0 + q0, h);
    }
#endif
}

// Writes 1 where the kernels above were compiled for sm_90a (and so can run), else 0.
__global__ void hopper_probe_kernel(int *out)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    *out = 1;
#else
    *out = 0;
#endif
}

template <int D> cudaError_t launch(const k_attn_args *a, const int32_t *tiles, int n_tiles, cudaStream_t stream)
{
    static bool configured; // the shared-memory opt-in, once per instantiation
    if (!configured) {
        cudaError_t e = cudaFuncSetAttribute(attention_prefill_hopper_kernel<D>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, (int)hopper_layout<D>::bytes);
        if (e != cudaSuccess)
            return e;
        configured = true;
    }
    return fk_launch(attention_prefill_hopper_kernel<D>, dim3(n_tiles, a->n_heads), dim3(THREADS),
                     hopper_layout<D>::bytes, stream, *a, (const int2 *)tiles);
}

} // namespace

cudaError_t prefill_hopper_available(bool *available)
{
    *available = false;
    int device, major, minor, *flag, got = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&device)) || (e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) ||
        (e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)))
        return e;
    if (major != 9 || minor != 0) // sm_90a code runs on compute capability 9.0 only
        return cudaSuccess;
    if ((e = cudaMalloc(&flag, sizeof *flag)))
        return e;
    hopper_probe_kernel<<<1, 1>>>(flag);
    if (!(e = cudaGetLastError()))
        e = cudaMemcpy(&got, flag, sizeof got, cudaMemcpyDeviceToHost);
    cudaFree(flag);
    *available = e == cudaSuccess && got == 1;
    return e;
}

cudaError_t prefill_hopper(const k_attn_args *a, const int32_t *tiles, int n_tiles, cudaStream_t stream)
{
    switch (a->head_dim) {
    case 64: return launch<64>(a, tiles, n_tiles, stream);
    case 128: return launch<128>(a, tiles, n_tiles, stream);
    default: return cudaErrorInvalidValue;
    }
}
