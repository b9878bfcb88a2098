// linear_quant_mma.cu — the quantized linear for more tokens than the small-batch kernel takes (busy decode steps:
// by default 33 to 128 tokens for INT8, 33 to 64 for INT4; above, the backend dequantizes W for cuBLAS):
// y[m][n] = epilogue(x[m][k] W'[n][k]^T + bias), W' the dequantized INT8 or INT4 weight of src/quant.h's layouts,
// read packed. A block computes a tile of 128 rows of W by 64 tokens: four warps of 32 rows each (two m16 row tiles)
// by all 64 tokens (eight n8 token tiles); where such tiles are fewer than the SMs, 64 rows (one row tile a warp).
// k goes in steps of 64: each step's packed W rows (64 or 32 bytes), INT4 (scale, zero) pairs and fp16 x rows
// (128 bytes) are copied into shared memory by cp.async, FK_QMMA_STAGES steps in flight (on Turing plain copies:
// correct, not overlapped). A warp reads its W rows from shared memory with the small kernel's thread mapping
// (thread t holds k 16t .. 16t + 15 of rows g and g + 8) and dequantizes them in registers into A fragments once per
// step, for all eight token tiles (quant_fragments.cuh); the B fragments (x) follow the same k permutation, two
// 16-byte shared loads per token tile.
// - INT8: A = q exactly; the fp32 sum of q x is multiplied by the row's scale in the epilogue (exact).
// - INT4: A = (q - z) s rounded to fp16, the weight k_dequant makes for cuBLAS (a group's scale changes every other
//   step, so it cannot wait for the epilogue).
// When the tiles are too few to fill the GPU, k is split across blocks (gridDim.z); every split writes its fp32 tile
// to `partials` and the tile's last split to arrive adds them all in split order (the result does not depend on
// timing) and writes y. The kernel is issue-bound (INT8: about 5.5 instructions per MMA at two warps per scheduler
// on an H200; docs/BENCHMARKS.md "Quantized linears of 33 to 128 tokens").
#include "common.cuh"
#include "kernels.h"
#include "linear_sums.cuh"
#include "quant_fragments.cuh"

// Steps of k in flight per block (kernels/bench times the choice): 3 take 48.4 KiB for INT8 (a T4 gives a block at
// most 64 KiB, which 4 would pass).
#ifndef FK_QMMA_STAGES
#define FK_QMMA_STAGES 3
#endif
// Blocks per SM the registers must leave room for (__launch_bounds__). 1: the compiler's choice (about 180 a thread,
// 2 blocks per SM); 3 (168 a thread) measured slower, 4 (128) spills.
#ifndef FK_QMMA_MIN_BLOCKS
#define FK_QMMA_MIN_BLOCKS 1
#endif
// The fewest k-steps a split takes: fewer splits, a shorter serial sum at the end.
#ifndef FK_QMMA_MIN_STEPS
#define FK_QMMA_MIN_STEPS 4
#endif
// Blocks per SM that split-K aims for when the tiles alone are too few.
#ifndef FK_QMMA_BLOCKS_PER_SM
#define FK_QMMA_BLOCKS_PER_SM 2
#endif

namespace {

constexpr int WARPS = 4, THREADS = 32 * WARPS;
constexpr int TOKENS = 64;           // tokens per block (eight n8 tiles)
constexpr int STEP = 64;             // k per step
constexpr int X_CHUNKS = STEP / 8;   // 16-byte chunks of a token's x per step
constexpr int GROUP = 128;           // INT4 inputs per (scale, zero)

template <int FMT> __host__ __device__ constexpr int w_step_bytes()
{
    return FMT == K_QUANT_INT8 ? STEP : STEP / 2; // bytes of one W row per step
}

// One step's buffers, 128-byte aligned (a 16-byte shared load of 8 threads then covers one 128-byte line). x rows
// are 128 bytes: token r's chunk c sits at chunk c ^ (r & 1), so that the 8 threads of a 16-byte shared load
// (tokens g, g + 1, chunks 2t or 2t + 1) hit 8 different chunks.
// Rows of W per block: RT m16 row tiles per warp (2, or 1 where the tiles of 128 rows are too few for the SMs).
template <int RT> __host__ __device__ constexpr int block_rows()
{
    return 16 * RT * WARPS;
}

template <int FMT, int RT> struct alignas(128) stage_buf {
    uint8_t w[block_rows<RT>()][w_step_bytes<FMT>()];
    uint4 x[TOKENS][X_CHUNKS];
    uint32_t sz[FMT == K_QUANT_INT4 ? block_rows<RT>() : 1]; // INT4: the step's (scale, zero) pair of each row
};

template <int FMT, int EPI, int RT>
__global__ void __launch_bounds__(THREADS, FK_QMMA_MIN_BLOCKS)
    linear_quant_mma_kernel(__half *__restrict__ y, const __half *__restrict__ x, const uint8_t *__restrict__ wq,
                            const __half *__restrict__ scales, const __half *__restrict__ bias, int m, int k, int n,
                            int steps_per_split, float *__restrict__ partials, unsigned *__restrict__ counters)
{
    constexpr int WB = w_step_bytes<FMT>();
    extern __shared__ __align__(128) uint4 smem[]; // FK_QMMA_STAGES buffers
    constexpr int ROWS = block_rows<RT>(), TILE_FLOATS = ROWS * TOKENS;
    stage_buf<FMT, RT> *buf = reinterpret_cast<stage_buf<FMT, RT> *>(smem);

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int r0 = blockIdx.x * ROWS, m0 = blockIdx.y * TOKENS;
    const int n_steps = (k + STEP - 1) / STEP;
    const int s_begin = blockIdx.z * steps_per_split, s_end = min(n_steps, s_begin + steps_per_split);
    const size_t row_bytes = FMT == K_QUANT_INT8 ? (size_t)k : (size_t)k / 2;
    const uint32_t *sz_pairs = reinterpret_cast<const uint32_t *>(scales); // INT4: [rows][k / GROUP]

    // Each thread copies fixed chunks of every step: W chunk w_part of rows w_row + i * W_ROW_STRIDE, x chunk x_part of
    // tokens x_row + i * X_ROW_STRIDE (rows, tokens and steps past the end store zeros and read nothing).
    constexpr int W_PER_ROW = WB / 16, W_ROW_STRIDE = THREADS / W_PER_ROW, W_COPIES = ROWS / W_ROW_STRIDE;
    constexpr int X_ROW_STRIDE = THREADS / X_CHUNKS, X_COPIES = TOKENS / X_ROW_STRIDE;
    const int w_part = threadIdx.x % W_PER_ROW, w_row = threadIdx.x / W_PER_ROW;
    const int x_part = threadIdx.x % X_CHUNKS, x_row = threadIdx.x / X_CHUNKS;
    const uint8_t *w_src = wq + (size_t)r0 * row_bytes + 16 * w_part;
    const __half *x_src = x + (size_t)m0 * k + 8 * x_part;
    const uint32_t *sz_src = sz_pairs + (size_t)min(r0 + (int)threadIdx.x, n - 1) * (k / GROUP);
    const int rows_left = n - r0 - w_row, tokens_left = m - m0 - x_row;

    // INT4: whether step s needs its group's (scale, zero) pairs (two steps share a group: the second keeps them).
    auto new_group = [&](int s) { return s % 2 == 0 || s == s_begin; };

    // Step s's W rows (and INT4 pairs) into buffer b; x separately, after the PDL wait (W does not depend on the
    // previous kernel, x does).
    auto copy_w = [&](int b, int s) {
        const bool k_ok = s < s_end && s * STEP + w_part * (FMT == K_QUANT_INT8 ? 16 : 32) < k;
#pragma unroll
        for (int i = 0; i < W_COPIES; i++) {
            const bool ok = k_ok && i * W_ROW_STRIDE < rows_left;
            copy16_async_or_zero(&buf[b].w[w_row + i * W_ROW_STRIDE][16 * w_part],
                                 ok ? w_src + (size_t)(w_row + i * W_ROW_STRIDE) * row_bytes + (size_t)s * WB : wq,
                                 ok);
        }
        if (FMT == K_QUANT_INT4 && new_group(s) && threadIdx.x < ROWS) // one pair each
            copy4_async_or_zero(&buf[b].sz[threadIdx.x], sz_src + s / 2, s < s_end && r0 + (int)threadIdx.x < n);
    };
    auto copy_x = [&](int b, int s) {
        const bool k_ok = s < s_end && s * STEP + 8 * x_part < k;
#pragma unroll
        for (int i = 0; i < X_COPIES; i++) {
            const int r = x_row + i * X_ROW_STRIDE;
            const bool ok = k_ok && i * X_ROW_STRIDE < tokens_left;
            copy16_async_or_zero(&buf[b].x[r][x_part ^ (r & 1)], ok ? x_src + (size_t)r * k + s * STEP : x, ok);
        }
    };

    float acc[RT][8][4] = {};
    // One step from buffer b. The warp's W rows (RT row tiles) are read once; for each 8 k of x (chunk 2t + hx: MMAs
    // j = 2hx, 2hx + 1) the 8 token tiles' B fragments are read, and for each MMA j its A fragments are dequantized
    // just before the 8 RT MMAs that use them. The 8 RT accumulators take turns, so that consecutive MMAs are
    // independent (an MMA's latency is many times its issue interval).
    // INT4: the current group's zero and scale of rows g, g + 8 of each row tile.
    int4_zero z_lo[RT], z_hi[RT];
    __half2 s_lo[RT], s_hi[RT];
    auto compute = [&](int b, int s) {
        const stage_buf<FMT, RT> &sb = buf[b];
        uint4 wl[RT], wh[RT];
#pragma unroll
        for (int rt = 0; rt < RT; rt++) {
            const int lo = warp * 16 * RT + rt * 16 + g, hi = lo + 8;
            if constexpr (FMT == K_QUANT_INT8) {
                wl[rt] = *reinterpret_cast<const uint4 *>(&sb.w[lo][16 * t]);
                wh[rt] = *reinterpret_cast<const uint4 *>(&sb.w[hi][16 * t]);
            } else { // 8 bytes: 16 nibbles, k 16t .. 16t + 15, in the first two words
                const uint2 l2 = *reinterpret_cast<const uint2 *>(&sb.w[lo][8 * t]);
                const uint2 h2 = *reinterpret_cast<const uint2 *>(&sb.w[hi][8 * t]);
                wl[rt] = make_uint4(l2.x, l2.y, 0, 0), wh[rt] = make_uint4(h2.x, h2.y, 0, 0);
                if (new_group(s)) {
                    z_lo[rt] = int4_zero_of(sb.sz[lo]), z_hi[rt] = int4_zero_of(sb.sz[hi]);
                    s_lo[rt] = __low2half2(as_half2(sb.sz[lo])), s_hi[rt] = __low2half2(as_half2(sb.sz[hi]));
                }
            }
        }
        // MMA j's A fragments of the warp's row tiles.
        auto dequant = [&](int j, uint32_t (&a)[RT][4]) {
#pragma unroll
            for (int rt = 0; rt < RT; rt++) {
                a_fragment<FMT>(a[rt], wl[rt], wh[rt], j, z_lo[rt], z_hi[rt]);
                if constexpr (FMT == K_QUANT_INT4) { // rows g (a[0], a[2]) and g + 8 (a[1], a[3]) times scales
                    a[rt][0] = as_u32(__hmul2(as_half2(a[rt][0]), s_lo[rt]));
                    a[rt][2] = as_u32(__hmul2(as_half2(a[rt][2]), s_lo[rt]));
                    a[rt][1] = as_u32(__hmul2(as_half2(a[rt][1]), s_hi[rt]));
                    a[rt][3] = as_u32(__hmul2(as_half2(a[rt][3]), s_hi[rt]));
                }
            }
        };
#pragma unroll
        for (int hx = 0; hx < 2; hx++) {
            uint4 xc[8];
#pragma unroll
            for (int nt = 0; nt < 8; nt++) {
                const int r = nt * 8 + g;
                xc[nt] = sb.x[r][(2 * t + hx) ^ (r & 1)];
            }
#pragma unroll
            for (int jj = 0; jj < 2; jj++) {
                uint32_t a[RT][4];
                dequant(2 * hx + jj, a);
#pragma unroll
                for (int nt = 0; nt < 8; nt++) {
                    const uint32_t bf[2] = {jj ? xc[nt].z : xc[nt].x, jj ? xc[nt].w : xc[nt].y};
#pragma unroll
                    for (int rt = 0; rt < RT; rt++)
                        mma_16816(acc[rt][nt], a[rt], bf);
                }
            }
        }
    };

    // The pipeline: buffers of steps s_begin .. s_begin + STAGES - 2 start filling (W before the PDL wait), then each
    // iteration waits for its step, starts the step STAGES - 1 ahead into the buffer freed last iteration, computes.
#pragma unroll
    for (int i = 0; i < FK_QMMA_STAGES - 1; i++)
        copy_w(i, s_begin + i);
    pdl_wait();
    pdl_launch_dependents();
#pragma unroll
    for (int i = 0; i < FK_QMMA_STAGES - 1; i++) {
        copy_x(i, s_begin + i);
        cp_async_commit(); // group i: step i's x (and, in group 0, every prologue W)
    }
    for (int s = s_begin, b = 0; s < s_end; s++, b = (b + 1) % FK_QMMA_STAGES) {
        cp_async_wait<FK_QMMA_STAGES - 2>();
        __syncthreads(); // step s visible to all; everyone is done with the buffer refilled next
        const int ahead = s + FK_QMMA_STAGES - 1, b_ahead = (b + FK_QMMA_STAGES - 1) % FK_QMMA_STAGES;
        copy_w(b_ahead, ahead);
        copy_x(b_ahead, ahead);
        cp_async_commit();
        compute(b, s);
    }

    // Split-K: every split's tile to partials, the last to arrive sums them in split order.
    if (gridDim.z > 1) {
        const int tile = blockIdx.y * gridDim.x + blockIdx.x;
        // as float4s: accumulator quad i = rt * 8 + nt of thread x at [i][x]
        float4 *mine = reinterpret_cast<float4 *>(partials + ((size_t)tile * gridDim.z + blockIdx.z) * TILE_FLOATS);
#pragma unroll
        for (int i = 0; i < RT * 8; i++) {
            const float *q = acc[i / 8][i % 8];
            mine[i * THREADS + threadIdx.x] = make_float4(q[0], q[1], q[2], q[3]);
        }
        if (!last_split_arrived(&counters[tile], gridDim.z))
            return;
        const float4 *all = reinterpret_cast<const float4 *>(partials + (size_t)tile * gridDim.z * TILE_FLOATS);
#pragma unroll
        for (int i = 0; i < RT * 8; i++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i / 8][i % 8][e] = 0;
        for (unsigned sp = 0; sp < gridDim.z; sp++)
#pragma unroll
            for (int i = 0; i < RT * 8; i++) {
                const float4 v = __ldcg(all + ((size_t)sp * RT * 8 + i) * THREADS + threadIdx.x);
                float *q = acc[i / 8][i % 8];
                q[0] += v.x, q[1] += v.y, q[2] += v.z, q[3] += v.w;
            }
    }

    // Accumulator e of (rt, nt): row g + 8 (e >= 2) of the row tile, token 2t + (e & 1) of the token tile.
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int row = r0 + warp * 16 * RT + rt * 16 + g + 8 * half;
            if (row >= n)
                continue;
            const float scale = FMT == K_QUANT_INT8 ? __half2float(scales[row]) : 1.0f;
            const float b = bias ? __half2float(bias[row]) : 0.0f;
#pragma unroll
            for (int nt = 0; nt < 8; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int token = m0 + nt * 8 + 2 * t + e;
                    if (token >= m)
                        continue;
                    float v = acc[rt][nt][2 * half + e] * scale + b;
                    if (EPI == K_LINEAR_GELU)
                        v = gelu_tanh(v);
                    y[(size_t)token * n + row] = __float2half(v);
                }
        }
}

int tiles_of(int rows, int m, int n)
{
    return ((n + rows - 1) / rows) * ((m + TOKENS - 1) / TOKENS);
}

template <int FMT, int EPI, int RT>
cudaError_t launch(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias, int m,
                   int k, int n, int splits, float *partials, unsigned *counters, cudaStream_t stream)
{
    constexpr int ROWS = block_rows<RT>();
    const int n_steps = (k + STEP - 1) / STEP, steps_per_split = (n_steps + splits - 1) / splits;
    const dim3 grid((n + ROWS - 1) / ROWS, (m + TOKENS - 1) / TOKENS,
                    (n_steps + steps_per_split - 1) / steps_per_split);
    constexpr size_t bytes = FK_QMMA_STAGES * sizeof(stage_buf<FMT, RT>);
    static bool configured; // the shared-memory opt-in above 48 KiB, once per instantiation
    if (!configured) {
        const cudaError_t e = cudaFuncSetAttribute(linear_quant_mma_kernel<FMT, EPI, RT>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
        if (e != cudaSuccess)
            return e;
        // as much shared memory as the SM has, so that the blocks the registers allow fit beside one another
        const cudaError_t c = cudaFuncSetAttribute(linear_quant_mma_kernel<FMT, EPI, RT>,
                                                   cudaFuncAttributePreferredSharedMemoryCarveout,
                                                   (int)cudaSharedmemCarveoutMaxShared);
        if (c != cudaSuccess)
            return c;
        configured = true;
    }
    return fk_launch(linear_quant_mma_kernel<FMT, EPI, RT>, grid, dim3(THREADS), bytes, stream, y, x, wq, scales, bias,
                     m, k, n, steps_per_split, partials, counters);
}

template <int FMT, int EPI>
cudaError_t launch_rows(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias, int m,
                        int k, int n, int rows, int splits, float *partials, unsigned *counters, cudaStream_t stream)
{
    return rows == block_rows<1>()
               ? launch<FMT, EPI, 1>(y, x, wq, scales, bias, m, k, n, splits, partials, counters, stream)
               : launch<FMT, EPI, 2>(y, x, wq, scales, bias, m, k, n, splits, partials, counters, stream);
}

template <int FMT>
cudaError_t launch_epilogue(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias,
                            int m, int k, int n, int epilogue, int rows, int splits, float *partials,
                            unsigned *counters, cudaStream_t stream)
{
    switch (epilogue) {
    case K_LINEAR_PLAIN:
        return launch_rows<FMT, K_LINEAR_PLAIN>(y, x, wq, scales, bias, m, k, n, rows, splits, partials, counters,
                                                stream);
    case K_LINEAR_GELU:
        return launch_rows<FMT, K_LINEAR_GELU>(y, x, wq, scales, bias, m, k, n, rows, splits, partials, counters,
                                               stream);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" int k_linear_quant_mma_rows(int m, int n, int n_sms)
{
    // 64-row blocks where 128-row ones would leave SMs without a tile: more blocks, fewer splits of k
    return tiles_of(block_rows<2>(), m, n) < n_sms ? block_rows<1>() : block_rows<2>();
}

extern "C" int k_linear_quant_mma_splits(int rows, int m, int k, int n, int n_sms)
{
    // Split k only when the tiles leave SMs idle, each split keeping FK_QMMA_MIN_STEPS steps, within the partials
    // buffer and the counters.
    const int tiles = tiles_of(rows, m, n), n_steps = (k + STEP - 1) / STEP;
    int splits = (FK_QMMA_BLOCKS_PER_SM * n_sms) / tiles;
    const int by_work = n_steps / FK_QMMA_MIN_STEPS;
    const int by_space = (int)(K_LINEAR_SMALL_PARTIAL_FLOATS / ((size_t)tiles * rows * TOKENS));
    splits = splits < by_work ? splits : by_work;
    splits = splits < by_space ? splits : by_space;
    if (tiles > K_LINEAR_SMALL_COUNTERS)
        splits = 1;
    return splits < 1 ? 1 : splits;
}

extern "C" cudaError_t k_linear_quant_mma(void *y, const void *x, const void *data, const void *scales,
                                          const void *bias, int format, int m, int k, int n, int epilogue, int rows,
                                          int splits, float *partials, unsigned *counters, cudaStream_t stream)
{
    if (m <= 0 || n <= 0)
        return cudaSuccess;
    if (rows != block_rows<1>() && rows != block_rows<2>())
        return cudaErrorInvalidValue;
    const int tiles = tiles_of(rows, m, n);
    const bool split_ok = splits == 1 || (partials && counters && tiles <= K_LINEAR_SMALL_COUNTERS &&
                                          (size_t)tiles * splits * rows * TOKENS <= K_LINEAR_SMALL_PARTIAL_FLOATS);
    if (k <= 0 || k % (format == K_QUANT_INT8 ? 16 : GROUP) || splits < 1 || !split_ok)
        return cudaErrorInvalidValue;
    __half *yh = (__half *)y;
    const __half *xh = (const __half *)x, *sh = (const __half *)scales, *bh = (const __half *)bias;
    const uint8_t *wq = (const uint8_t *)data;
    switch (format) {
    case K_QUANT_INT8:
        return launch_epilogue<K_QUANT_INT8>(yh, xh, wq, sh, bh, m, k, n, epilogue, rows, splits, partials, counters,
                                             stream);
    case K_QUANT_INT4:
        return launch_epilogue<K_QUANT_INT4>(yh, xh, wq, sh, bh, m, k, n, epilogue, rows, splits, partials, counters,
                                             stream);
    default: return cudaErrorInvalidValue;
    }
}
