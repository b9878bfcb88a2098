// linear_wgmma.cu — k_linear_small's y[m][n] = epilogue(x[m][k] W[n][k]^T + bias) for 1 .. 64 tokens on Hopper
// (sm_90a: TMA and wgmma), where the time is one pass over W and what matters is how many of its bytes are in
// flight. A block owns a tile of 128 rows of W (SiLU·mul: 64 gate rows and their 64 up rows) and a range of k
// (split-K across blocks where the tiles are fewer than the SMs). One producer thread streams the tile through a ring
// of `stages` shared-memory stages, 64 k a stage: two TMA boxes of 64 rows of W and one box of x's tokens (padded to
// NTOK rows with zeros by the TMA), all 128B-swizzled. The first `stages` stages' boxes of W go out before the PDL
// wait, so up to stages x 16 KB of weights stream in while the previous kernel finishes. One consumer warpgroup
// multiplies each stage as it lands with the tokens as wgmma's N ("swap AB": D[64 rows of W][NTOK tokens] = W x^T, both
// operands K-major in shared memory), two accumulators of 64 rows, fp32, and hands the stage back. The splits of a
// tile are one thread block cluster: each leaves its sums in its shared memory, and each adds a share of the tile's
// entries over all of them (distributed shared memory) in split order, so the result does not depend on timing;
// then the epilogue: bias, GELU or SiLU·mul, fp16 y.
// Accumulator layout (PTX "wgmma .m64nNk16 D"): warp w of the warpgroup holds rows 16w + g and 16w + g + 8 (lane =
// 4g + t); element 4j + e is column (token) 8j + 2t + (e & 1) of row 16w + g + 8 (e >> 1).
#include "attention_prefill_hopper.cuh"
#include "common.cuh"
#include "kernels.h"
#include "tensor_map.cuh"
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "wgmma.cuh"
#endif

namespace {

constexpr int BOX_ROWS = 64;          // rows of W in a TMA box (one wgmma's M)
constexpr int BOX_K = 64;             // k in a stage: one 128-byte swizzle row
constexpr int W_BOX_BYTES = BOX_ROWS * BOX_K * 2;
constexpr int THREADS = 160;          // warps 0-3 consume (one warpgroup), warp 4 produces
[[maybe_unused]] constexpr int CONSUMERS = 128; // (device code only, which Turing / Ampere builds leave empty)
constexpr int MAX_SPLITS = 8;         // blocks of a cluster (the portable limit)

// Rows of y a block covers.
__host__ __device__ constexpr int tile_rows(int epi)
{
    return epi == K_LINEAR_SILU_MUL ? BOX_ROWS : 2 * BOX_ROWS;
}

// Shared memory of a stage: the two W boxes, then x's box of NTOK rows; each 1024-byte aligned.
__host__ __device__ constexpr int stage_bytes(int ntok)
{
    return 2 * W_BOX_BYTES + ntok * BOX_K * 2;
}

__host__ __device__ constexpr int smem_bytes(int ntok, int stages)
{
    return stages * stage_bytes(ntok) + 2 * stages * 8 + 1024; // + the barriers, the alignment slack
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <int NTOK>
__device__ __forceinline__ void wgmma_ss(float (&d)[NTOK / 2], uint64_t desc_a, uint64_t desc_b)
{
    if constexpr (NTOK == 8)
        wgmma_ss_n8(d, desc_a, desc_b, 1);
    else if constexpr (NTOK == 16)
        wgmma_ss_n16(d, desc_a, desc_b, 1);
    else if constexpr (NTOK == 32)
        wgmma_ss_n32(d, desc_a, desc_b, 1);
    else
        wgmma_ss_n64(d, desc_a, desc_b, 1);
}

// y at accumulator entry i of consumer thread tid (both accumulators' values: rows 64 apart, or gate and up) of the
// tile whose first row of y is r0: bias, then GELU or SiLU·mul, fp16.
template <int EPI>
__device__ __forceinline__ void store_entry(__half *__restrict__ y, const __half *__restrict__ bias, int m, int n,
                                            int r0, int tid, int i, float v0, float v1)
{
    const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int token = 8 * (i / 4) + 2 * t + (i & 1), lr = 16 * warp + g + 8 * ((i % 4) >> 1);
    if (token >= m)
        return;
    if constexpr (EPI == K_LINEAR_SILU_MUL) {
        const int row = r0 + lr;
        if (row < n) {
            const float gate = v0 + (bias ? __half2float(bias[row]) : 0.0f);
            const float up = v1 + (bias ? __half2float(bias[n + row]) : 0.0f);
            y[(size_t)token * n + row] = __float2half(silu_mul(gate, up));
        }
    } else {
#pragma unroll
        for (int b = 0; b < 2; b++) {
            const int row = r0 + b * BOX_ROWS + lr;
            if (row >= n)
                continue;
            float v = (b ? v1 : v0) + (bias ? __half2float(bias[row]) : 0.0f);
            if (EPI == K_LINEAR_GELU)
                v = gelu_tanh(v);
            y[(size_t)token * n + row] = __float2half(v);
        }
    }
}
#endif

// Grid (tiles, splits); with splits > 1 the splits of a tile are one cluster (1, splits, 1).
template <int NTOK, int EPI, int STAGES>
__global__ void __launch_bounds__(THREADS, 1)
    linear_wgmma_kernel(const __grid_constant__ CUtensorMap w_map, const __grid_constant__ CUtensorMap x_map,
                        __half *__restrict__ y, const __half *__restrict__ bias, int m, int k, int n,
                        int chunks_per_split)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int STAGE = stage_bytes(NTOK), ACC = NTOK / 2;
    extern __shared__ __align__(16) uint8_t smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
    const uint32_t full = base + STAGES * STAGE, empty = full + STAGES * 8; // barrier s at + 8 s

    const int tile = blockIdx.x, split = blockIdx.y, n_splits = gridDim.y;
    const int n_chunks = (k + BOX_K - 1) / BOX_K;
    const int c_begin = split * chunks_per_split, c_end = min(n_chunks, c_begin + chunks_per_split);
    const int r0 = tile * tile_rows(EPI); // first row of y
    // W rows of the two boxes: consecutive 64-row halves, or the gate rows and their up rows n further on
    const int w_row0 = r0, w_row1 = EPI == K_LINEAR_SILU_MUL ? n + r0 : r0 + BOX_ROWS;
    const int tid = threadIdx.x;

    if (tid == 0) {
        for (int s = 0; s < STAGES; s++)
            mbarrier_init(full + 8 * s, 1), mbarrier_init(empty + 8 * s, CONSUMERS);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    float acc[2][ACC];
#pragma unroll
    for (int b = 0; b < 2; b++)
#pragma unroll
        for (int i = 0; i < ACC; i++)
            acc[b][i] = 0;
    if (tid == CONSUMERS) { // ---- producer: one thread
        const uint64_t stream_once = l2_evict_first(), keep = l2_evict_last();
        const int ahead = min(STAGES, c_end - c_begin);
        // W does not depend on the previous kernel: the first stages' weights go out before the wait
        for (int i = 0; i < ahead; i++) {
            const uint32_t st = base + i * STAGE, bar = full + 8 * i;
            mbarrier_arrive_expect_tx(bar, STAGE);
            tma_load_2d(st, &w_map, (c_begin + i) * BOX_K, w_row0, bar, stream_once);
            tma_load_2d(st + W_BOX_BYTES, &w_map, (c_begin + i) * BOX_K, w_row1, bar, stream_once);
        }
        pdl_wait();
        pdl_launch_dependents();
        for (int i = 0; i < ahead; i++)
            tma_load_2d(base + i * STAGE + 2 * W_BOX_BYTES, &x_map, (c_begin + i) * BOX_K, 0, full + 8 * i, keep);
        for (int i = ahead; i < c_end - c_begin; i++) {
            const int s = i % STAGES, c = c_begin + i;
            const uint32_t st = base + s * STAGE, bar = full + 8 * s;
            mbarrier_wait(empty + 8 * s, (i / STAGES - 1) & 1); // the consumers are done with chunk i - STAGES
            mbarrier_arrive_expect_tx(bar, STAGE);
            tma_load_2d(st, &w_map, c * BOX_K, w_row0, bar, stream_once);
            tma_load_2d(st + W_BOX_BYTES, &w_map, c * BOX_K, w_row1, bar, stream_once);
            tma_load_2d(st + 2 * W_BOX_BYTES, &x_map, c * BOX_K, 0, bar, keep);
        }
    } else if (tid > CONSUMERS) {
        pdl_wait();
        pdl_launch_dependents();
    } else { // ---- consumers: the warpgroup's 128 threads
        pdl_wait();
        pdl_launch_dependents();
        for (int i = 0; i < c_end - c_begin; i++) {
            const int s = i % STAGES;
            const uint32_t st = base + s * STAGE;
            mbarrier_wait(full + 8 * s, (i / STAGES) & 1);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BOX_K / 16; kk++) { // 16 k (32 bytes) a step within the swizzled 128-byte rows
                const uint64_t dx = smem_desc(st + 2 * W_BOX_BYTES + kk * 32, 16);
                wgmma_ss<NTOK>(acc[0], smem_desc(st + kk * 32, 16), dx);
                wgmma_ss<NTOK>(acc[1], smem_desc(st + W_BOX_BYTES + kk * 32, 16), dx);
            }
            wgmma_commit();
            wgmma_wait_all(acc[0]);
            wgmma_wait_all(acc[1]);
            mbarrier_arrive(empty + 8 * s); // the stage is free to refill
        }
        if (n_splits == 1) {
#pragma unroll
            for (int i = 0; i < ACC; i++)
                store_entry<EPI>(y, bias, m, n, r0, tid, i, acc[0][i], acc[1][i]);
            return;
        }
        // Split-K: the sums go to this block's shared memory (over the stages, every one of which has landed and
        // been read once the warpgroup is past this barrier), entry (b, i) of thread tid at (b ACC + i) 128 + tid.
        named_barrier_sync(1, CONSUMERS);
        float *sums = reinterpret_cast<float *>(smem_raw + (base - smem_addr(smem_raw)));
#pragma unroll
        for (int b = 0; b < 2; b++)
#pragma unroll
            for (int i = 0; i < ACC; i++)
                sums[(b * ACC + i) * CONSUMERS + tid] = acc[b][i];
    }
    if (n_splits == 1)
        return;

    // The cluster's blocks (the tile's splits) meet; block `split` adds its share of the tile's entries over every
    // split's shared memory, in split order (the result does not depend on timing), and writes them to y; the second
    // meeting keeps every block's shared memory alive until all have read it.
    cluster_sync();
    if (tid < CONSUMERS) {
        constexpr int ENTRIES = ACC * CONSUMERS; // (i, consumer thread) pairs, each with both accumulators
        const int per = (ENTRIES + n_splits - 1) / n_splits, e0 = split * per, e1 = min(ENTRIES, e0 + per);
        for (int e = e0 + tid; e < e1; e += CONSUMERS) {
            const int i = e / CONSUMERS, owner = e % CONSUMERS;
            const uint32_t at0 = base + 4 * (i * CONSUMERS + owner), at1 = at0 + 4 * ACC * CONSUMERS;
            float p0[MAX_SPLITS], p1[MAX_SPLITS], v0 = 0, v1 = 0; // all loads in flight, then the sums in order
#pragma unroll
            for (int sp = 0; sp < MAX_SPLITS; sp++)
                if (sp < n_splits)
                    p0[sp] = load_cluster_float(at0, sp), p1[sp] = load_cluster_float(at1, sp);
#pragma unroll
            for (int sp = 0; sp < MAX_SPLITS; sp++)
                if (sp < n_splits)
                    v0 += p0[sp], v1 += p1[sp];
            store_entry<EPI>(y, bias, m, n, r0, owner, i, v0, v1);
        }
    }
    cluster_sync();
#endif
}

bool usable; // k_linear_wgmma_available said yes

// A tensor map of a row-major fp16 matrix [rows][k], boxes of box_rows x 64, 128B-swizzled.
cudaError_t tensor_map(CUtensorMap *map, const void *p, int rows, int k, int box_rows)
{
    return tma_map_2d(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, p, rows, k, BOX_K, box_rows, CU_TENSOR_MAP_SWIZZLE_128B);
}

// The kernel as fk_launch would start it (early launch where PDL is on), a tile's splits one cluster.
template <int NTOK, int EPI, int STAGES>
cudaError_t launch(__half *y, const __half *x, const __half *w, const __half *bias, int m, int k, int n, int splits,
                   cudaStream_t stream)
{
    static bool configured; // the shared-memory opt-in, once per instantiation
    constexpr int SMEM = smem_bytes(NTOK, STAGES);
    auto kernel = linear_wgmma_kernel<NTOK, EPI, STAGES>;
    cudaError_t e;
    if (!configured) {
        if ((e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM)))
            return e;
        configured = true;
    }
    CUtensorMap w_map, x_map;
    const int w_rows = EPI == K_LINEAR_SILU_MUL ? 2 * n : n;
    if ((e = tensor_map(&w_map, w, w_rows, k, BOX_ROWS)) || (e = tensor_map(&x_map, x, m, k, NTOK)))
        return e;
    const int n_chunks = (k + BOX_K - 1) / BOX_K, per_split = (n_chunks + splits - 1) / splits;
    splits = (n_chunks + per_split - 1) / per_split; // none empty
    cudaLaunchAttribute attrs[2]; // early launch where PDL is on, then the cluster of a tile's splits
    attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[0].val.programmaticStreamSerializationAllowed = 1;
    attrs[1].id = cudaLaunchAttributeClusterDimension;
    attrs[1].val.clusterDim.x = 1, attrs[1].val.clusterDim.y = splits, attrs[1].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((n + tile_rows(EPI) - 1) / tile_rows(EPI), splits);
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = SMEM;
    cfg.stream = stream;
    cfg.attrs = fk_pdl_enabled ? attrs : attrs + 1;
    cfg.numAttrs = (fk_pdl_enabled ? 1 : 0) + (splits > 1 ? 1 : 0);
    return cudaLaunchKernelEx(&cfg, kernel, w_map, x_map, y, bias, m, k, n, per_split);
}

template <int NTOK, int EPI>
cudaError_t launch_stages(__half *y, const __half *x, const __half *w, const __half *bias, int m, int k, int n,
                          int splits, int stages, cudaStream_t stream)
{
    switch (stages) {
    case 4: return launch<NTOK, EPI, 4>(y, x, w, bias, m, k, n, splits, stream);
    case 6: return launch<NTOK, EPI, 6>(y, x, w, bias, m, k, n, splits, stream);
    case 8: return launch<NTOK, EPI, 8>(y, x, w, bias, m, k, n, splits, stream);
    default: return cudaErrorInvalidValue;
    }
}

template <int EPI>
cudaError_t launch_m(__half *y, const __half *x, const __half *w, const __half *bias, int m, int k, int n, int splits,
                     int stages, cudaStream_t stream)
{
    if (m <= 8)
        return launch_stages<8, EPI>(y, x, w, bias, m, k, n, splits, stages, stream);
    if (m <= 16)
        return launch_stages<16, EPI>(y, x, w, bias, m, k, n, splits, stages, stream);
    if (m <= 32)
        return launch_stages<32, EPI>(y, x, w, bias, m, k, n, splits, stages, stream);
    return launch_stages<64, EPI>(y, x, w, bias, m, k, n, splits, stages, stream);
}

} // namespace

extern "C" cudaError_t k_linear_wgmma_available(int *available)
{
    // The prefill kernel's probe answers for this file too: every kernel file is built for the same targets.
    bool sm90a = false;
    *available = usable = false;
    cudaError_t e = prefill_hopper_available(&sm90a);
    if (e != cudaSuccess || !sm90a)
        return e;
    if (tma_find_encoder() != cudaSuccess) // a driver without tensor maps: not available, not an error
        return cudaSuccess;
    *available = usable = true;
    return cudaSuccess;
}

extern "C" int k_linear_wgmma_splits(int m, int k, int n, int epilogue, int n_sms)
{
    (void)m;
    // Blocks along k while the blocks still fit on the SMs at once (one each), each keeping at least 2 chunks
    // (2 x 64 k), at most a cluster's MAX_SPLITS.
    const int tiles = (n + tile_rows(epilogue) - 1) / tile_rows(epilogue), n_chunks = (k + BOX_K - 1) / BOX_K;
    int splits = n_sms / tiles;
    splits = splits < n_chunks / 2 ? splits : n_chunks / 2;
    splits = splits < MAX_SPLITS ? splits : MAX_SPLITS;
    return splits < 1 ? 1 : splits;
}

extern "C" cudaError_t k_linear_wgmma(void *y, const void *x, const void *w, const void *bias, int m, int k, int n,
                                      int epilogue, int splits, int stages, cudaStream_t stream)
{
    if (!usable) // never probed, or the device or the build cannot run it (the kernel would do nothing)
        return cudaErrorNotSupported;
    if (m <= 0 || n <= 0)
        return cudaSuccess;
    if (m > K_LINEAR_WGMMA_MAX_M || k <= 0 || k % 8 || splits < 1 || splits > MAX_SPLITS || (uintptr_t)x % 16 ||
        (uintptr_t)w % 16)
        return cudaErrorInvalidValue;
    if (stages == 0)
        stages = K_LINEAR_WGMMA_STAGES;
    __half *yh = (__half *)y;
    const __half *xh = (const __half *)x, *wh = (const __half *)w, *bh = (const __half *)bias;
    switch (epilogue) {
    case K_LINEAR_PLAIN: return launch_m<K_LINEAR_PLAIN>(yh, xh, wh, bh, m, k, n, splits, stages, stream);
    case K_LINEAR_GELU: return launch_m<K_LINEAR_GELU>(yh, xh, wh, bh, m, k, n, splits, stages, stream);
    case K_LINEAR_SILU_MUL: return launch_m<K_LINEAR_SILU_MUL>(yh, xh, wh, bh, m, k, n, splits, stages, stream);
    default: return cudaErrorInvalidValue;
    }
}
