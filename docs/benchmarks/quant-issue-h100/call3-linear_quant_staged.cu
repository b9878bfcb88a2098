// linear_quant_staged.cu — the small-batch quantized linear (k_linear_quant's math and fragments: linear_quant.cu, read
// it first) with W staged in shared memory by the Hopper's bulk copies instead of streamed through registers.
// Why: at one token, registers hold at most two batches of a warp's loads, so an INT4 linear of a 1B model ran as
// short blocks that each paid a round of load latency, the warps' reduction and the epilogue: gate|up in two waves of
// 512 blocks, down with k split across blocks (a round of partials through global memory); 45-66 % of copy in the
// decode step (BENCHMARKS.md, fifth session). Shared memory holds far more bytes in flight than registers, and a bulk
// copy needs one thread, not a warp's registers, to keep them there.
// Scheme: at most one block per SM, each taking a contiguous run of whole tiles (linear_quant.cu's row tiles); a
// tile's k is cut into units of UNIT_STEPS 64-byte steps of each of its rows. A ring of stages in shared memory (as
// many as the launcher's budget holds) takes one unit each: warp 0 copies the first units in before the PDL wait (W
// does not depend on the previous kernel, so it streams while that kernel finishes), one row of a unit per lane, and
// each unit's copies complete its stage's mbarrier. The 8 warps take SPW steps each of a unit, then the block hands
// the stage to the unit `stages` further on; x and the INT4 scales of the next unit load while this one computes.
// After a tile's last unit come the warps' sums (linear_sums.cuh; no split-K) and the epilogue.
// Stage layout: [row tile][16 rows][ROW_STRIDE bytes], a row's unit bytes padded by 64 so that the 8 lanes of a
// 16-byte shared load (rows g, g + 1; t = 0..3) hit distinct banks.
#include "linear_quant_small.cuh"
#include "wgmma.cuh"

// Warps per block and steps per warp in a unit (a unit is WARPS x SPW steps); kernels/bench and the decode step time
// the choices (BENCHMARKS.md).
#ifndef FK_QSTAGED_WARPS
#define FK_QSTAGED_WARPS 8
#endif
#ifndef FK_QSTAGED_SPW
#define FK_QSTAGED_SPW 2
#endif

namespace {

using namespace quant_small;

constexpr int WARPS = FK_QSTAGED_WARPS, THREADS = 32 * WARPS;
constexpr int SPW = FK_QSTAGED_SPW;                 // steps per warp in a unit
constexpr int UNIT_STEPS = WARPS * SPW;             // steps of a unit
constexpr int UNIT_BYTES = UNIT_STEPS * STEP_BYTES; // bytes of a W row in a unit
constexpr int ROW_STRIDE = UNIT_BYTES + 64;
constexpr int MAX_STAGES = 16;

template <int EPI, int NT> __host__ __device__ constexpr int stage_bytes()
{
    return row_tiles<EPI, NT>() * TILE_ROWS * ROW_STRIDE;
}

// The fragments of a unit other than W: x rows g (+ 8) of each token tile and, INT4, the (scale, zero) pairs of W rows
// g and g + 8 of each row tile, for each of the warp's SPW steps.
template <int FMT, int RT, int NT> struct unit_frags {
    uint4 x[SPW][NT][step_k<FMT>() / 32];
    uint32_t sz[SPW][RT][2];
};

// Where a block is in its run of units: the tile's first y row, the unit within the tile, and the unit's stage and
// the parity of that stage's use. Units go in order, so each moves on by one without divisions.
struct unit_cursor {
    int r0, unit, stage, parity;
    __device__ __forceinline__ void next(int unit_count, int n_stages, int tile_rows)
    {
        if (++stage == n_stages)
            stage = 0, parity ^= 1;
        if (++unit == unit_count)
            unit = 0, r0 += tile_rows;
    }
};

template <int FMT, int NT, int EPI>
__global__ void __launch_bounds__(THREADS)
    linear_quant_staged_kernel(__half *__restrict__ y, const __half *__restrict__ x, const uint8_t *__restrict__ wq,
                               const __half *__restrict__ scales, const __half *__restrict__ bias, int m, int k, int n,
                               int n_stages)
{
#if __CUDA_ARCH__ >= 900
    constexpr int RT = row_tiles<EPI, NT>(), BR = block_rows<EPI, NT>(), STEP = step_k<FMT>(), XV = STEP / 32;
    constexpr int STAGE = stage_bytes<EPI, NT>();
    extern __shared__ __align__(128) uint8_t stage_mem[];
    __shared__ __align__(8) uint64_t full[MAX_STAGES];

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int tiles = (n + BR - 1) / BR;
    const int tile0 = (int)((long long)blockIdx.x * tiles / gridDim.x);
    const int tile1 = (int)((long long)(blockIdx.x + 1) * tiles / gridDim.x);
    const int n_steps = (k + STEP - 1) / STEP, unit_count = (n_steps + UNIT_STEPS - 1) / UNIT_STEPS;
    const int n_units = (tile1 - tile0) * unit_count, groups = k / GROUP;
    const unsigned row_bytes = FMT == K_QUANT_INT8 ? k : k / 2;
    const uint32_t *sz_pairs = reinterpret_cast<const uint32_t *>(scales); // INT4: [rows][k / GROUP]
    const uint32_t stages = smem_addr(stage_mem), bars = smem_addr(full);
    // The thread's first k (its warp's first step of a unit, its 16-byte piece), and its piece's place in a stage.
    const int kk0 = warp * SPW * STEP + STEP / 4 * t;
    const int w_off = g * ROW_STRIDE + warp * SPW * STEP_BYTES + 16 * t;

    // Warp 0: the unit at `c`'s rows (lane = row tile * 16 + local row) into its stage, counted on its mbarrier.
    auto issue = [&](const unit_cursor &c) {
        const unsigned off = (unsigned)c.unit * UNIT_BYTES, bytes = min((unsigned)UNIT_BYTES, row_bytes - off);
        const uint32_t bar = bars + 8 * c.stage;
        int rows = 0;
#pragma unroll
        for (int rt = 0; rt < RT; rt++)
            rows += max(0, min(TILE_ROWS, n - y_row<EPI>(c.r0, rt, 0)));
        if (lane == 0)
            mbarrier_arrive_expect_tx(bar, rows * bytes);
        __syncwarp();
        const int rt = lane / TILE_ROWS, lr = lane % TILE_ROWS;
        if (rt < RT && y_row<EPI>(c.r0, rt, lr) < n)
            bulk_copy_to_shared(stages + c.stage * STAGE + lane * ROW_STRIDE,
                                wq + (size_t)w_row<EPI>(c.r0, rt, lr, n) * row_bytes + off, bytes, bar);
    };

    // The warp's steps of the unit at `c`: x (after the PDL wait) and the INT4 scales.
    auto load_frags = [&](unit_frags<FMT, RT, NT> &f, const unit_cursor &c) {
#pragma unroll
        for (int j = 0; j < SPW; j++) {
            const int kk = c.unit * UNIT_STEPS * STEP + kk0 + j * STEP, s = kk / STEP;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int token = nt * TOKEN_TILE + g;
                const uint4 *p = reinterpret_cast<const uint4 *>(x + token * k + kk);
#pragma unroll
                for (int v = 0; v < XV; v++)
                    f.x[j][nt][v] = kk < k && token < m ? __ldg(p + v) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int rt = 0; rt < RT; rt++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const bool ok = FMT == K_QUANT_INT4 && kk < k && y_row<EPI>(c.r0, rt, g + 8 * h) < n;
                    f.sz[j][rt][h] = ok ? __ldg(sz_pairs + w_row<EPI>(c.r0, rt, g + 8 * h, n) * groups + s) : 0u;
                }
        }
    };

    if (threadIdx.x == 0) {
        for (int s = 0; s < n_stages; s++)
            mbarrier_init(bars + 8 * s, 1);
        fence_mbarrier_init();
    }
    __syncthreads();
    unit_cursor at = {tile0 * BR, 0, 0, 0}, copy = at; // the unit computed next; the unit copied next
    int copied = 0;
    if (warp == 0)
        for (; copied < min(n_stages, n_units); copied++, copy.next(unit_count, n_stages, BR))
            issue(copy);
    pdl_wait();
    pdl_launch_dependents();

    float acc[RT][NT][4];
    unit_frags<FMT, RT, NT> cur, next;
    load_frags(cur, at);
    for (int u = 0; u < n_units; u++) {
        unit_cursor after = at;
        after.next(unit_count, n_stages, BR);
        if (u + 1 < n_units)
            load_frags(next, after);
        if (at.unit == 0)
#pragma unroll
            for (int rt = 0; rt < RT; rt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        acc[rt][nt][e] = 0.0f;
        mbarrier_wait(bars + 8 * at.stage, at.parity);
        const uint8_t *piece = stage_mem + at.stage * STAGE + w_off;
#pragma unroll
        for (int j = 0; j < SPW; j++) {
            if (at.unit * UNIT_STEPS * STEP + kk0 + j * STEP >= k + STEP / 4 * t) // the step is past k
                break;
#pragma unroll
            for (int rt = 0; rt < RT; rt++) {
                // rows past n were not copied: their bytes are stale, so they read as zero
                const uint8_t *p = piece + rt * TILE_ROWS * ROW_STRIDE + j * STEP_BYTES;
                const uint4 zero = make_uint4(0, 0, 0, 0);
                const uint4 lo = y_row<EPI>(at.r0, rt, g) < n ? *reinterpret_cast<const uint4 *>(p) : zero;
                const uint4 hi =
                    y_row<EPI>(at.r0, rt, g + 8) < n ? *reinterpret_cast<const uint4 *>(p + 8 * ROW_STRIDE) : zero;
                step_mma<FMT, NT>(acc[rt], lo, hi, cur.sz[j][rt][0], cur.sz[j][rt][1], cur.x[j]);
            }
        }
        __syncthreads(); // every warp is done with the stage
        if (warp == 0 && copied < n_units) {
            fence_proxy_async(); // the warps' reads of the stage before the copy that overwrites it
            issue(copy);
            copied++, copy.next(unit_count, n_stages, BR);
        }
        if (at.unit == unit_count - 1) {
            float sum[RT][sums_per_thread<WARPS, NT>()];
            tile_sums<WARPS, RT, NT>(acc, sum, nullptr, nullptr); // one block per tile: true
            write_tile<FMT, EPI, RT, NT, WARPS>(y, sum, scales, bias, m, n, at.r0);
        }
        cur = next;
        at = after;
    }
#endif
}

// Writes 1 where the kernel above was compiled for sm_90+ (and so can run), else 0.
__global__ void staged_probe_kernel(int *out)
{
#if __CUDA_ARCH__ >= 900
    *out = 1;
#else
    *out = 0;
#endif
}

template <int FMT, int NT, int EPI>
cudaError_t launch(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias, int m,
                   int k, int n, int blocks, int smem_bytes, cudaStream_t stream)
{
    constexpr int STAGE = stage_bytes<EPI, NT>(), BR = block_rows<EPI, NT>();
    const int tiles = (n + BR - 1) / BR;
    if (blocks < 1 || blocks > tiles || smem_bytes < STAGE)
        return cudaErrorInvalidValue;
    const int unit_count = ((k + step_k<FMT>() - 1) / step_k<FMT>() + UNIT_STEPS - 1) / UNIT_STEPS;
    const int most_units = (tiles + blocks - 1) / blocks * unit_count; // of the block with the most tiles
    const int stages = min(MAX_STAGES, min(smem_bytes / STAGE, most_units));
    auto kernel = linear_quant_staged_kernel<FMT, NT, EPI>;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, stages * STAGE);
    if (e != cudaSuccess)
        return e;
    return fk_launch(kernel, dim3(blocks), dim3(THREADS), (size_t)stages * STAGE, stream, y, x, wq, scales, bias, m, k,
                     n, stages);
}

template <int FMT, int EPI>
cudaError_t launch_m(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias, int m,
                     int k, int n, int blocks, int smem_bytes, cudaStream_t stream)
{
    return m <= TOKEN_TILE ? launch<FMT, 1, EPI>(y, x, wq, scales, bias, m, k, n, blocks, smem_bytes, stream)
                           : launch<FMT, 2, EPI>(y, x, wq, scales, bias, m, k, n, blocks, smem_bytes, stream);
}

template <int FMT>
cudaError_t launch_epilogue(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias,
                            int m, int k, int n, int epilogue, int blocks, int smem_bytes, cudaStream_t stream)
{
    switch (epilogue) {
    case K_LINEAR_PLAIN:
        return launch_m<FMT, K_LINEAR_PLAIN>(y, x, wq, scales, bias, m, k, n, blocks, smem_bytes, stream);
    case K_LINEAR_GELU:
        return launch_m<FMT, K_LINEAR_GELU>(y, x, wq, scales, bias, m, k, n, blocks, smem_bytes, stream);
    case K_LINEAR_SILU_MUL:
        return launch_m<FMT, K_LINEAR_SILU_MUL>(y, x, wq, scales, bias, m, k, n, blocks, smem_bytes, stream);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" cudaError_t k_linear_quant_staged_available(int *available)
{
    *available = 0;
    int device, major, *flag, got = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&device)) || (e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)))
        return e;
    if (major < 9)
        return cudaSuccess;
    if ((e = cudaMalloc(&flag, sizeof *flag)))
        return e;
    staged_probe_kernel<<<1, 1>>>(flag);
    if (!(e = cudaGetLastError()))
        e = cudaMemcpy(&got, flag, sizeof got, cudaMemcpyDeviceToHost);
    cudaError_t f = cudaFree(flag);
    *available = e == cudaSuccess && got == 1;
    return e ? e : f;
}

extern "C" int k_linear_quant_staged_blocks(int m, int n, int epilogue, int n_sms, int smem_bytes, int min_tiles)
{
    const int nt = m <= TOKEN_TILE ? 1 : 2;
    const int stage = epilogue == K_LINEAR_SILU_MUL || nt == 2 ? stage_bytes<K_LINEAR_SILU_MUL, 1>()
                                                               : stage_bytes<K_LINEAR_PLAIN, 1>();
    const int rows = epilogue == K_LINEAR_SILU_MUL ? TILE_ROWS : nt == 2 ? 2 * TILE_ROWS : TILE_ROWS;
    const int tiles = (n + rows - 1) / rows;
    if (m < 1 || m > K_LINEAR_QUANT_MAX_M || smem_bytes < stage || tiles < min_tiles)
        return 0;
    return tiles < n_sms ? tiles : n_sms;
}

extern "C" cudaError_t k_linear_quant_staged(void *y, const void *x, const void *data, const void *scales,
                                             const void *bias, int format, int m, int k, int n, int epilogue,
                                             int blocks, int smem_bytes, cudaStream_t stream)
{
    if (m <= 0 || n <= 0)
        return cudaSuccess;
    if (m > K_LINEAR_QUANT_MAX_M || k <= 0 || k % (format == K_QUANT_INT8 ? 16 : GROUP))
        return cudaErrorInvalidValue;
    __half *yh = (__half *)y;
    const __half *xh = (const __half *)x, *sh = (const __half *)scales, *bh = (const __half *)bias;
    const uint8_t *wq = (const uint8_t *)data;
    switch (format) {
    case K_QUANT_INT8:
        return launch_epilogue<K_QUANT_INT8>(yh, xh, wq, sh, bh, m, k, n, epilogue, blocks, smem_bytes, stream);
    case K_QUANT_INT4:
        return launch_epilogue<K_QUANT_INT4>(yh, xh, wq, sh, bh, m, k, n, epilogue, blocks, smem_bytes, stream);
    default: return cudaErrorInvalidValue;
    }
}
