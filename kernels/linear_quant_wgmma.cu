// linear_quant_wgmma.cu — the quantized linear for busy decode steps and prefill chunks on Hopper (sm_90a: TMA and
// wgmma): y[m][n] = epilogue(x[m][k] W'[n][k]^T + bias), W' the dequantized INT8 or INT4 weight of src/quant.h's
// layouts, read packed. Where linear_quant_mma.cu (mma.sync) is issue-bound, here the tensor cores run
// asynchronously while the warps dequantize the next step.
// A block computes 128 rows of W by NTOK tokens (64 or 128, as k_linear_quant_wgmma_tokens chooses; more tokens:
// more blocks along gridDim.x, which is the fastest-moving, so that the blocks sharing a tile of W run together and
// it is read from DRAM once). One producer
// thread streams steps of 64 k through a ring of STAGES shared-memory stages by TMA: the packed W box (128 rows of 64
// bytes INT8 / 32 bytes INT4, swizzled 64B / 32B so that the loads below hit every bank once) and x's box (NTOK rows
// of 64 fp16, 128B-swizzled, rows past m zeros); the first STAGES W boxes go out before the PDL wait. Two consumer
// warpgroups each own 64 rows of W: per step every thread loads its rows' bytes, dequantizes them into the wgmma A
// fragments in registers (k in natural order: thread (g = lane / 4, t = lane % 4) of warp w holds rows 16w + g and
// 16w + g + 8, k 2t, 2t + 1 and 2t + 8, 2t + 9 of each 16-k slice) and issues four wgmma m64nNTOKk16 with x from
// shared memory as B (K-major). The fragments alternate between two register sets, so a warpgroup dequantizes step
// i + 1 while its wgmmas of step i run, then waits for those and hands step i's stage back (with one set, ptxas
// would serialize wgmmas whose A registers are rewritten while they run); the other warpgroup's work interleaves.
// - INT8: A = q exactly (int8_pair); the fp32 sum is multiplied by the row's scale in the epilogue.
// - INT4: A = (q - z) s rounded to fp16, the weight k_dequant makes for cuBLAS; each thread reads its rows' (scale,
//   zero) pairs from global memory one group (two steps) ahead.
// Where the tiles are fewer than the SMs, k is split across the blocks of a thread block cluster (gridDim.z, at most
// 8, each an even number of steps so that INT4 groups do not straddle splits), reduced as in linear_wgmma.cu: every
// block leaves its sums in its shared memory and adds a share of the tile over all of them in split order (the
// result does not depend on timing). Accumulator layout (PTX "wgmma .m64nNk16 D"): element 4j + e of a thread is
// token 8j + 2t + (e & 1) of row 16w + g + 8 (e >> 1) of its warpgroup's 64 rows.
#include "common.cuh"
#include "kernels.h"
#include "quant_fragments.cuh"
#include "tensor_map.cuh"
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "wgmma.cuh"
#endif

namespace {

constexpr int STEP = 64;        // k per stage
constexpr int ROWS = 128;       // rows of W per block: two consumer warpgroups of 64
constexpr int CONSUMERS = 256;  // threads 0-255 consume, warp 8 produces
constexpr int THREADS = CONSUMERS + 32;
constexpr int MAX_SPLITS = 8;   // blocks of a cluster (the portable limit)
constexpr int GROUP = 128;      // INT4 inputs per (scale, zero)

template <int FMT> __host__ __device__ constexpr int w_row_bytes()
{
    return FMT == K_QUANT_INT8 ? STEP : STEP / 2; // bytes of one W row per stage
}

// A stage: x's box (NTOK rows of 128 bytes) then W's box, both 1024-byte aligned (every size here is a multiple).
template <int FMT, int NTOK> __host__ __device__ constexpr int stage_bytes()
{
    return NTOK * STEP * 2 + ROWS * w_row_bytes<FMT>();
}

template <int FMT, int NTOK> __host__ __device__ constexpr int smem_bytes(int stages)
{
    return stages * stage_bytes<FMT, NTOK>() + 2 * stages * 8 + 1024; // + the barriers, the alignment slack
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <int NTOK>
__device__ __forceinline__ void wgmma_rs(float (&d)[NTOK / 2], const uint32_t (&a)[4], uint64_t desc_b)
{
    if constexpr (NTOK == 64)
        wgmma_rs_n64_k(d, a, desc_b);
    else
        wgmma_rs_n128_k(d, a, desc_b);
}

// y at accumulator entry i of consumer thread c of the block whose first row is r0 and first token tok0: the row
// scale (INT8), bias, GELU, fp16.
template <int FMT, int EPI>
__device__ __forceinline__ void store_entry(__half *__restrict__ y, const __half *__restrict__ scales,
                                            const __half *__restrict__ bias, int m, int n, int r0, int tok0, int c,
                                            int i, float v)
{
    const int lane = c % 32, g = lane / 4, t = lane % 4;
    const int token = tok0 + 8 * (i / 4) + 2 * t + (i & 1), row = r0 + 16 * (c / 32) + g + 8 * ((i % 4) >> 1);
    if (token >= m || row >= n)
        return;
    if (FMT == K_QUANT_INT8)
        v *= __half2float(scales[row]);
    v += bias ? __half2float(bias[row]) : 0.0f;
    if (EPI == K_LINEAR_GELU)
        v = gelu_tanh(v);
    y[(size_t)token * n + row] = __float2half(v);
}
#endif

// Grid (token tiles, row tiles, splits); with splits > 1 a tile's splits are one cluster (1, 1, splits).
template <int FMT, int NTOK, int EPI, int STAGES>
__global__ void __launch_bounds__(THREADS, 1)
    linear_quant_wgmma_kernel(const __grid_constant__ CUtensorMap w_map, const __grid_constant__ CUtensorMap x_map,
                              __half *__restrict__ y, const __half *__restrict__ scales,
                              const __half *__restrict__ bias, int m, int k, int n, int steps_per_split)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int STAGE = stage_bytes<FMT, NTOK>(), X_BYTES = NTOK * STEP * 2, WRB = w_row_bytes<FMT>();
    constexpr int ACC = NTOK / 2;
    extern __shared__ __align__(16) uint8_t smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
    const uint8_t *base_ptr = smem_raw + (base - smem_addr(smem_raw));
    const uint32_t full = base + STAGES * STAGE, empty = full + STAGES * 8; // barrier s at + 8 s

    const int tok0 = blockIdx.x * NTOK, r0 = blockIdx.y * ROWS, split = blockIdx.z, n_splits = gridDim.z;
    const int n_steps = (k + STEP - 1) / STEP;
    const int s_begin = split * steps_per_split, s_end = min(n_steps, s_begin + steps_per_split);
    const int tid = threadIdx.x;

    if (tid == 0) {
        for (int s = 0; s < STAGES; s++)
            mbarrier_init(full + 8 * s, 1), mbarrier_init(empty + 8 * s, CONSUMERS);
        fence_mbarrier_init();
    }
    __syncthreads();

    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; i++)
        acc[i] = 0;
    if (tid == CONSUMERS) { // ---- producer: one thread
        const uint64_t stream_once = l2_evict_first(), keep = l2_evict_last();
        const int ahead = min(STAGES, s_end - s_begin);
        for (int i = 0; i < ahead; i++) { // W does not depend on the previous kernel
            const uint32_t st = base + i * STAGE, bar = full + 8 * i;
            mbarrier_arrive_expect_tx(bar, STAGE);
            tma_load_2d(st + X_BYTES, &w_map, (s_begin + i) * WRB, r0, bar, stream_once);
        }
        pdl_wait();
        pdl_launch_dependents();
        for (int i = 0; i < ahead; i++)
            tma_load_2d(base + i * STAGE, &x_map, (s_begin + i) * STEP, tok0, full + 8 * i, keep);
        for (int i = ahead; i < s_end - s_begin; i++) {
            const int s = i % STAGES, step = s_begin + i;
            const uint32_t st = base + s * STAGE, bar = full + 8 * s;
            mbarrier_wait(empty + 8 * s, (i / STAGES - 1) & 1); // the consumers are done with step i - STAGES
            mbarrier_arrive_expect_tx(bar, STAGE);
            tma_load_2d(st + X_BYTES, &w_map, step * WRB, r0, bar, stream_once);
            tma_load_2d(st, &x_map, step * STEP, tok0, bar, keep);
        }
    } else if (tid > CONSUMERS) {
        pdl_wait();
        pdl_launch_dependents();
    } else { // ---- consumers: two warpgroups of 64 rows
        pdl_wait();
        pdl_launch_dependents();
        const int lane = tid % 32, g = lane / 4, t = lane % 4;
        const int lo = 16 * (tid / 32) + g; // the thread's first row in the block; the other is lo + 8
        // Byte offsets in a stage's W box of the thread's words (the swizzles of the TMA boxes: 16-byte chunk j of row
        // r sits at chunk j ^ ((r >> 1) & 3) for 64-byte rows, j ^ ((r >> 2) & 1) for 32-byte rows; rows lo and lo + 8
        // share the pattern, 8 rows apart).
        uint32_t w_off[4];
        if constexpr (FMT == K_QUANT_INT8) { // slice kk's k 2t, 2t + 1: byte 16 kk + 2t, in word 16 kk + 4 (t / 2)
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                w_off[kk] = lo * WRB + ((kk ^ ((lo >> 1) & 3)) << 4) + 4 * (t / 2);
        } else { // the row's two 16-byte chunks
#pragma unroll
            for (int j = 0; j < 2; j++)
                w_off[j] = lo * WRB + ((j ^ ((lo >> 2) & 1)) << 4);
        }
        const uint32_t selector = t % 2 ? 0x4342 : 0x4140; // INT8: bytes 2, 3 or 0, 1 of the word
        // INT4: the (scale, zero) pairs of rows lo and lo + 8 for the current group and the next.
        const uint32_t *sz_pairs = reinterpret_cast<const uint32_t *>(scales);
        const int groups = k / GROUP;
        const uint32_t *sz_lo = sz_pairs + (size_t)min(r0 + lo, n - 1) * groups;
        const uint32_t *sz_hi = sz_pairs + (size_t)min(r0 + lo + 8, n - 1) * groups;
        uint32_t next_lo = 0, next_hi = 0;
        int4_zero z_lo{}, z_hi{};
        __half2 s_lo{}, s_hi{};
        if (FMT == K_QUANT_INT4)
            next_lo = __ldg(sz_lo + s_begin / 2), next_hi = __ldg(sz_hi + s_begin / 2);

        // Step i's A fragments (4 slices of 16 k) from its stage's W box.
        auto dequant = [&](int i, uint32_t (&a)[4][4]) {
            const uint8_t *wb = base_ptr + (i % STAGES) * STAGE + X_BYTES;
            if constexpr (FMT == K_QUANT_INT8) {
#pragma unroll
                for (int kk = 0; kk < 4; kk++) {
                    const uint8_t *p = wb + w_off[kk];
                    const uint32_t l0 = *reinterpret_cast<const uint32_t *>(p);
                    const uint32_t l1 = *reinterpret_cast<const uint32_t *>(p + 8);
                    const uint32_t h0 = *reinterpret_cast<const uint32_t *>(p + 8 * WRB);
                    const uint32_t h1 = *reinterpret_cast<const uint32_t *>(p + 8 * WRB + 8);
                    a[kk][0] = int8_pair(l0, selector), a[kk][1] = int8_pair(h0, selector);
                    a[kk][2] = int8_pair(l1, selector), a[kk][3] = int8_pair(h1, selector);
                }
            } else {
                const int step = s_begin + i;
                if (step % 2 == 0) { // a new group: its pairs were loaded a group ago; the next one's go out now
                    z_lo = int4_zero_of(next_lo), z_hi = int4_zero_of(next_hi);
                    s_lo = __low2half2(as_half2(next_lo)), s_hi = __low2half2(as_half2(next_hi));
                    if (step + 2 < s_end)
                        next_lo = __ldg(sz_lo + step / 2 + 1), next_hi = __ldg(sz_hi + step / 2 + 1);
                }
                const uint4 l0 = *reinterpret_cast<const uint4 *>(wb + w_off[0]);
                const uint4 l1 = *reinterpret_cast<const uint4 *>(wb + w_off[1]);
                const uint4 h0 = *reinterpret_cast<const uint4 *>(wb + w_off[0] + 8 * WRB);
                const uint4 h1 = *reinterpret_cast<const uint4 *>(wb + w_off[1] + 8 * WRB);
                const uint32_t lw[8] = {l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w};
                const uint32_t hw[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
                // word 2 kk holds slice kk's k 0..7, word 2 kk + 1 its k 8..15; pair t of a word is k 2t, 2t + 1
                auto pair = [&](uint32_t word, int4_zero z, __half2 s) {
                    return as_u32(__hmul2(__hsub2(as_half2(nibbles_0_4(word >> (4 * t))), z.z1024), s));
                };
#pragma unroll
                for (int kk = 0; kk < 4; kk++) {
                    a[kk][0] = pair(lw[2 * kk], z_lo, s_lo), a[kk][1] = pair(hw[2 * kk], z_hi, s_hi);
                    a[kk][2] = pair(lw[2 * kk + 1], z_lo, s_lo), a[kk][3] = pair(hw[2 * kk + 1], z_hi, s_hi);
                }
            }
        };
        // Step i: wait for its stage, dequantize into a (one of two register sets), issue its wgmmas. Step i + 1
        // dequantizes into the other set while step i's wgmmas run; once at most one group is in flight, step i's
        // set and stage are free (wgmmas of one shape accumulate into the same registers in order). The second set
        // takes 64-token tiles from 78-93 registers a thread to 114-121, one block an SM instead of two: alone, back to
        // back, their split shapes got slower (1B's o at 64 tokens 6.9 -> 9.4 us), but bench-1b's engine at 64
        // requests, whose decode linears are these tiles, gained 6 % (docs/BENCHMARKS.md, thirty-second session).
        auto issue = [&](int i, uint32_t (&a)[4][4]) {
            const int s = i % STAGES;
            mbarrier_wait(full + 8 * s, (i / STAGES) & 1);
            dequant(i, a);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++) // 16 k (32 bytes) a slice within x's swizzled 128-byte rows
                wgmma_rs<NTOK>(acc, a[kk], smem_desc(base + s * STAGE + kk * 32, 16));
            wgmma_commit();
        };
        const int n_mine = s_end - s_begin; // at least 1: no split is empty
        uint32_t a0[4][4], a1[4][4];
        issue(0, a0);
        int i = 1;
        for (; i + 1 < n_mine; i += 2) { // by pairs, the body without a branch: ptxas serialized every wgmma
                                         // (C7513) when the second step of a pair was conditional
            issue(i, a1);
            wgmma_wait<1>();
            mbarrier_arrive(empty + 8 * ((i - 1) % STAGES));
            issue(i + 1, a0);
            wgmma_wait<1>();
            mbarrier_arrive(empty + 8 * (i % STAGES));
        }
        if (i < n_mine) {
            issue(i, a1);
            wgmma_wait<1>();
            mbarrier_arrive(empty + 8 * ((i - 1) % STAGES));
        }
        wgmma_wait_all(acc);
        if (n_splits == 1) {
#pragma unroll
            for (int i = 0; i < ACC; i++)
                store_entry<FMT, EPI>(y, scales, bias, m, n, r0, tok0, tid, i, acc[i]);
            return;
        }
        // Split-K: the sums go to this block's shared memory over the stages (all landed and read once both
        // warpgroups are past this barrier), entry i of thread tid at i * CONSUMERS + tid.
        named_barrier_sync(1, CONSUMERS);
        float *sums = reinterpret_cast<float *>(const_cast<uint8_t *>(base_ptr));
#pragma unroll
        for (int i = 0; i < ACC; i++)
            sums[i * CONSUMERS + tid] = acc[i];
    }
    if (n_splits == 1)
        return;
    __syncwarp();
    cluster_sync();
    if (tid < CONSUMERS) {
        constexpr int ENTRIES = ACC * CONSUMERS;
        const int per = (ENTRIES + n_splits - 1) / n_splits, e0 = split * per, e1 = min(ENTRIES, e0 + per);
        for (int e = e0 + tid; e < e1; e += CONSUMERS) {
            float p[MAX_SPLITS], v = 0; // all loads in flight, then the sum in split order
#pragma unroll
            for (int sp = 0; sp < MAX_SPLITS; sp++)
                if (sp < n_splits)
                    p[sp] = load_cluster_float(base + 4 * e, sp);
#pragma unroll
            for (int sp = 0; sp < MAX_SPLITS; sp++)
                if (sp < n_splits)
                    v += p[sp];
            store_entry<FMT, EPI>(y, scales, bias, m, n, r0, tok0, e % CONSUMERS, e / CONSUMERS, v);
        }
    }
    cluster_sync();
#endif
}

bool usable; // k_linear_quant_wgmma_available said yes

template <int FMT, int NTOK, int EPI, int STAGES>
cudaError_t launch(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias, int m,
                   int k, int n, int splits, cudaStream_t stream)
{
    static bool configured; // the shared-memory opt-in, once per instantiation
    constexpr int SMEM = smem_bytes<FMT, NTOK>(STAGES);
    auto kernel = linear_quant_wgmma_kernel<FMT, NTOK, EPI, STAGES>;
    cudaError_t e;
    if (!configured) {
        if ((e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM)))
            return e;
        configured = true;
    }
    CUtensorMap w_map, x_map;
    const int row_bytes = FMT == K_QUANT_INT8 ? k : k / 2;
    if ((e = tma_map_2d(&w_map, CU_TENSOR_MAP_DATA_TYPE_UINT8, wq, n, row_bytes, w_row_bytes<FMT>(), ROWS,
                        FMT == K_QUANT_INT8 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B)) ||
        (e = tma_map_2d(&x_map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, x, m, k, STEP, NTOK, CU_TENSOR_MAP_SWIZZLE_128B)))
        return e;
    const int n_steps = (k + STEP - 1) / STEP;
    int per_split = (n_steps + splits - 1) / splits;
    per_split += per_split % 2; // even: an INT4 group (two steps) stays in one split
    splits = (n_steps + per_split - 1) / per_split; // none empty
    cudaLaunchAttribute attrs[2]; // early launch where PDL is on, then the cluster of a tile's splits
    attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[0].val.programmaticStreamSerializationAllowed = 1;
    attrs[1].id = cudaLaunchAttributeClusterDimension;
    attrs[1].val.clusterDim.x = 1, attrs[1].val.clusterDim.y = 1, attrs[1].val.clusterDim.z = splits;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((m + NTOK - 1) / NTOK, (n + ROWS - 1) / ROWS, splits);
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = SMEM;
    cfg.stream = stream;
    cfg.attrs = fk_pdl_enabled ? attrs : attrs + 1;
    cfg.numAttrs = (fk_pdl_enabled ? 1 : 0) + (splits > 1 ? 1 : 0);
    return cudaLaunchKernelEx(&cfg, kernel, w_map, x_map, y, scales, bias, m, k, n, per_split);
}

template <int FMT, int NTOK, int EPI>
cudaError_t launch_stages(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias,
                          int m, int k, int n, int splits, int stages, cudaStream_t stream)
{
    switch (stages) {
    case 4: return launch<FMT, NTOK, EPI, 4>(y, x, wq, scales, bias, m, k, n, splits, stream);
    case 6: return launch<FMT, NTOK, EPI, 6>(y, x, wq, scales, bias, m, k, n, splits, stream);
    case 8: return launch<FMT, NTOK, EPI, 8>(y, x, wq, scales, bias, m, k, n, splits, stream);
    default: return cudaErrorInvalidValue;
    }
}

template <int FMT, int EPI>
cudaError_t launch_m(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias, int m,
                     int k, int n, int splits, int stages, int tile_tokens, cudaStream_t stream)
{
    if (tile_tokens == 64)
        return launch_stages<FMT, 64, EPI>(y, x, wq, scales, bias, m, k, n, splits, stages, stream);
    return launch_stages<FMT, 128, EPI>(y, x, wq, scales, bias, m, k, n, splits, stages, stream);
}

template <int FMT>
cudaError_t launch_epilogue(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias,
                            int m, int k, int n, int epilogue, int splits, int stages, int tile_tokens,
                            cudaStream_t stream)
{
    switch (epilogue) {
    case K_LINEAR_PLAIN:
        return launch_m<FMT, K_LINEAR_PLAIN>(y, x, wq, scales, bias, m, k, n, splits, stages, tile_tokens, stream);
    case K_LINEAR_GELU:
        return launch_m<FMT, K_LINEAR_GELU>(y, x, wq, scales, bias, m, k, n, splits, stages, tile_tokens, stream);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" cudaError_t k_linear_quant_wgmma_available(int *available)
{
    // The fp16 wgmma linear's probe answers for this file too: both need sm_90a code and a driver with tensor maps.
    usable = false;
    const cudaError_t e = k_linear_wgmma_available(available);
    usable = e == cudaSuccess && *available;
    return e;
}

// Blocks along k for tiles of ntok tokens: while the blocks still fit on the SMs at once (one each), each keeping
// at least 4 steps (4 x 64 k), at most max_splits.
static int splits_for(int m, int k, int n, int ntok, int max_splits, int n_sms)
{
    const int tiles = ((m + ntok - 1) / ntok) * ((n + ROWS - 1) / ROWS);
    int splits = n_sms / tiles;
    const int by_work = ((k + STEP - 1) / STEP) / 4;
    splits = splits < by_work ? splits : by_work;
    splits = splits < max_splits ? splits : max_splits;
    return splits < 1 ? 1 : splits;
}

// 128-token tiles take at most 4 splits: with 8, Llama-3.2-1B's o and down at 128 tokens took 14.2 and 23.6 us, with
// 4 10.2 and 19.7 (bench_linear_quant; BENCHMARKS.md, thirty-first session).
static int max_splits(int ntok)
{
    return ntok == 128 ? 4 : MAX_SPLITS;
}

extern "C" int k_linear_quant_wgmma_tokens(int m, int k, int n, int n_sms)
{
    if (m <= 64)
        return 64;
    // 65-128 tokens: 64-token tiles where 128-token ones would split k and 64-token ones fill the SMs with at most
    // 2 splits. Llama-3-8B's o and down at 128 tokens: 17.3 and 42.2 us against 26.4 and 58.6 (same bench); where the
    // 64-token tiles need 4 splits (1B's o and down) or the 128-token ones none (the gate|up), those lost.
    if (m <= 128 && splits_for(m, k, n, 128, max_splits(128), n_sms) > 1 &&
        splits_for(m, k, n, 64, max_splits(64), n_sms) <= 2)
        return 64;
    return 128;
}

extern "C" int k_linear_quant_wgmma_splits(int m, int k, int n, int tile_tokens, int n_sms)
{
    return splits_for(m, k, n, tile_tokens, max_splits(tile_tokens), n_sms);
}

extern "C" cudaError_t k_linear_quant_wgmma(void *y, const void *x, const void *data, const void *scales,
                                            const void *bias, int format, int m, int k, int n, int epilogue,
                                            int splits, int stages, int tile_tokens, cudaStream_t stream)
{
    if (!usable) // never probed, or the device or the build cannot run it (the kernel would do nothing)
        return cudaErrorNotSupported;
    if (m <= 0 || n <= 0)
        return cudaSuccess;
    if (k <= 0 || k % (format == K_QUANT_INT8 ? 16 : GROUP) || splits < 1 || splits > MAX_SPLITS ||
        (tile_tokens != 64 && tile_tokens != 128) || (uintptr_t)x % 16 || (uintptr_t)data % 16 ||
        (uintptr_t)scales % 4)
        return cudaErrorInvalidValue;
    if (stages == 0)
        stages = K_LINEAR_QUANT_WGMMA_STAGES;
    __half *yh = (__half *)y;
    const __half *xh = (const __half *)x, *sh = (const __half *)scales, *bh = (const __half *)bias;
    const uint8_t *wq = (const uint8_t *)data;
    switch (format) {
    case K_QUANT_INT8:
        return launch_epilogue<K_QUANT_INT8>(yh, xh, wq, sh, bh, m, k, n, epilogue, splits, stages, tile_tokens,
                                             stream);
    case K_QUANT_INT4:
        return launch_epilogue<K_QUANT_INT4>(yh, xh, wq, sh, bh, m, k, n, epilogue, splits, stages, tile_tokens,
                                             stream);
    default: return cudaErrorInvalidValue;
    }
}
