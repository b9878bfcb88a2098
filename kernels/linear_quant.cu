// linear_quant.cu — the small-batch linear (m <= 16 tokens) on quantized weights: y[m][n] = epilogue(x[m][k]
// W'[n][k]^T + bias), W' the dequantized INT8 or INT4 weight of src/quant.h's layouts, streamed once from its packed
// bytes. The structure is linear_small.cu's (read it first): a warp owns row tiles of 16 rows of W (two above 8
// tokens; gate and up rows for SiLU·mul) and a range of k; each thread's 16-byte loads of W rows g and g + 8 become
// m16n8k16 A fragments, its loads of x rows g (+ 8) B fragments, under one permutation of the k of a step; the warps
// of a block meet in shared memory, split-K only as a last resort (a fixed-order sum of fp32 partials), two batches
// of weight loads in flight, the first before the PDL wait. Turing runs m16n8k8 pairs (common.cuh).
// What differs is the step a 16-byte load covers: 64 k for INT8 (16 bytes, 4 MMAs), 128 k for INT4 (32 nibbles,
// 8 MMAs: one group, so a step has one scale and zero point per row). Thread t of a step holds physical k
// 16t .. 16t + 15 (INT8) or 32t .. 32t + 31 (INT4) of its rows and tokens; MMA j sees logical k 2t, 2t+1, 2t+8,
// 2t+9 at physical k (its block) + 4j + 0..3, the same for W and x. Dequantization in registers, exact:
// - INT8: prmt puts each byte of q + 128 (sign bit flipped) under 0x64 (fp16 1024 + q + 128); subtracting 1152
//   leaves q. The MMAs sum q x in fp32; the row's scale multiplies the sum in the epilogue.
// - INT4: (word & 0x000f000f) | 0x64006400 is the fp16 pair 1024 + q of two consecutive k (quant.h's nibble order);
//   subtracting 1024 + z leaves the small integers q - z; the next pair, masked in place, is 1024 + 16 q, and one fma
//   (times 1/16, minus 64 + z) leaves q - z (quant_fragments.cuh). Each step's MMAs go to a fresh fp32 accumulator
//   that is added to the sum times the group's scale, so no weight is ever rounded: the math of the CPU's (q - z) s.
#include "common.cuh"
#include "kernels.h"
#include "linear_sums.cuh"
#include "quant_fragments.cuh"

// As in linear_small.cu: the most warps a block may have, the warps per SM the launch aims for; and the k-steps a
// batch of loads holds at one row tile and one token tile (kernels/bench times the choices). At most 8 warps: in a
// decoding graph a block then leaves room on its SM for the next kernel's blocks, which programmatic dependent
// launch starts early, so they stream their first weights while this one finishes (bench-1b batch-1 decode on an
// H200: int8 +7 %, int4 +6 % against 16 warps; the isolated timing of kernels/bench cannot show it; BENCHMARKS.md).
#ifndef FK_QLINEAR_MAX_WARPS
#define FK_QLINEAR_MAX_WARPS 8
#endif
#ifndef FK_QLINEAR_WARPS_PER_SM
#define FK_QLINEAR_WARPS_PER_SM 8
#endif
#ifndef FK_QLINEAR_BATCH_INT8
#define FK_QLINEAR_BATCH_INT8 4
#endif
#ifndef FK_QLINEAR_BATCH_INT4
#define FK_QLINEAR_BATCH_INT4 2
#endif

namespace {

constexpr int TILE_ROWS = 16;  // rows of W in a row tile
constexpr int TOKEN_TILE = 8;  // tokens in a token tile
constexpr int GROUP = 128;     // INT4 inputs per scale
constexpr int STEP_BYTES = 64; // bytes of a W row per step (4 threads x 16), both formats

// k per step, and the most steps per batch of loads.
template <int FMT> __host__ __device__ constexpr int step_k()
{
    return FMT == K_QUANT_INT8 ? 64 : 128;
}

template <int FMT> __host__ __device__ constexpr int batch_max()
{
    return FMT == K_QUANT_INT8 ? FK_QLINEAR_BATCH_INT8 : FK_QLINEAR_BATCH_INT4;
}

// Fragments of one k-step: W rows (g, g + 8) of each row tile, their group's (scale, zero) pairs (INT4), and x rows
// g (+ 8) of each token tile (step_k / 4 halves: 2 or 4 vectors).
template <int FMT, int RT, int NT> struct step_frags {
    uint4 w[RT][2];
    uint32_t sz[RT][2];
    uint4 x[NT][step_k<FMT>() / 32];
};

// As in linear_small.cu: SiLU·mul pairs gate and up; the others take two row tiles above one token tile.
template <int EPI, int NT> __host__ __device__ constexpr int row_tiles()
{
    return EPI == K_LINEAR_SILU_MUL || NT == 2 ? 2 : 1;
}

template <int EPI, int NT> __host__ __device__ constexpr int block_rows()
{
    return EPI == K_LINEAR_SILU_MUL ? TILE_ROWS : TILE_ROWS * row_tiles<EPI, NT>();
}

template <int FMT, int EPI, int NT> __host__ __device__ constexpr int batch_steps()
{
    return row_tiles<EPI, NT>() == 1 && NT == 1 ? batch_max<FMT>() : (batch_max<FMT>() + 1) / 2;
}

// Warps per block for a k of `steps` steps: as many as keep a batch each, 4 to FK_QLINEAR_MAX_WARPS; INT8 SiLU·mul
// (gate|up) always 4, so that bench-1b's 512 blocks of it are resident at once (one wave, not two): its batch-1 decode
// +2.3 %, 16 requests +0.5 %; INT4 there lost 3.2 % (BENCHMARKS.md, twenty-second session).
int warps_for(int format, int epilogue, int steps, int batch)
{
    if (format == K_QUANT_INT8 && epilogue == K_LINEAR_SILU_MUL)
        return 4;
    int w = FK_QLINEAR_MAX_WARPS;
    while (w > 4 && steps < batch * w)
        w /= 2;
    return w;
}

template <int FMT, int WARPS, int NT, int EPI>
__global__ void __launch_bounds__(32 * WARPS)
    linear_quant_kernel(__half *__restrict__ y, const __half *__restrict__ x, const uint8_t *__restrict__ wq,
                        const __half *__restrict__ scales, const __half *__restrict__ bias, int m, int k, int n,
                        int steps_per_split, float *__restrict__ partials, unsigned *__restrict__ counters,
                        bool release_early)
{
    constexpr int RT = row_tiles<EPI, NT>(), THREADS = 32 * WARPS, U = batch_steps<FMT, EPI, NT>();
    constexpr int STEP = step_k<FMT>(), MMAS = STEP / 16, XV = STEP / 32;
    constexpr int FRAG = NT * 4 * 32;                   // accumulator floats of one row tile in a warp
    constexpr int PER = sums_per_thread<WARPS, NT>(); // of those, per thread in the epilogue

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int r0 = blockIdx.x * block_rows<EPI, NT>(), split = blockIdx.y;
    const int n_steps = (k + STEP - 1) / STEP;
    const int s_begin = split * steps_per_split, s_end = min(n_steps, s_begin + steps_per_split);
    const size_t row_bytes = FMT == K_QUANT_INT8 ? (size_t)k : (size_t)k / 2;
    const uint32_t *sz_pairs = reinterpret_cast<const uint32_t *>(scales); // INT4: [rows][k / GROUP]

    // Local row lr (0..15) of row tile rt: its row of y, and of W (SiLU·mul: up rows are n further on).
    auto y_row = [&](int rt, int lr) { return r0 + (EPI == K_LINEAR_SILU_MUL ? 0 : rt * TILE_ROWS) + lr; };
    auto w_row = [&](int rt, int lr) { return (EPI == K_LINEAR_SILU_MUL ? rt * n : 0) + y_row(rt, lr); };

    // early: the batch loaded before the PDL wait (load_early16 keeps it there).
    auto load_w = [&](step_frags<FMT, RT, NT>(&f)[U], int s0, bool early) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int s = s0 + u, kk = s * STEP + STEP / 4 * t;
            const bool k_ok = s < s_end && kk < k;
#pragma unroll
            for (int rt = 0; rt < RT; rt++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const bool ok = k_ok && y_row(rt, g + 8 * h) < n;
                    const size_t row = w_row(rt, g + 8 * h);
                    const uint8_t *w = wq + row * row_bytes + (size_t)s * STEP_BYTES + 16 * t;
                    f[u].w[rt][h] = !ok ? make_uint4(0, 0, 0, 0) : early ? load_early16(w) : load_stream16(w);
                    if constexpr (FMT == K_QUANT_INT4) {
                        const uint32_t *sz = sz_pairs + row * (k / GROUP) + s;
                        f[u].sz[rt][h] = !ok ? 0u : early ? load_early4(sz) : __ldg(sz);
                    }
                }
        }
    };
    auto load_x = [&](step_frags<FMT, RT, NT>(&f)[U], int s0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int s = s0 + u, kk = s * STEP + STEP / 4 * t;
            const bool k_ok = s < s_end && kk < k;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int token = nt * TOKEN_TILE + g;
                const uint4 *p = reinterpret_cast<const uint4 *>(x + (size_t)token * k + kk);
#pragma unroll
                for (int v = 0; v < XV; v++)
                    f[u].x[nt][v] = k_ok && token < m ? __ldg(p + v) : make_uint4(0, 0, 0, 0);
            }
        }
    };

    float acc[RT][NT][4] = {};
    auto mma_batch = [&](const step_frags<FMT, RT, NT>(&f)[U]) {
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int rt = 0; rt < RT; rt++) {
                int4_zero z_lo = {}, z_hi = {};
                if constexpr (FMT == K_QUANT_INT4)
                    z_lo = int4_zero_of(f[u].sz[rt][0]), z_hi = int4_zero_of(f[u].sz[rt][1]);
                float part[NT][4] = {}; // INT4: this step's group, before its scale
#pragma unroll
                for (int j = 0; j < MMAS; j++) {
                    uint32_t a[4];
                    a_fragment<FMT>(a, f[u].w[rt][0], f[u].w[rt][1], j, z_lo, z_hi);
#pragma unroll
                    for (int nt = 0; nt < NT; nt++) {
                        const uint32_t *xv = reinterpret_cast<const uint32_t *>(&f[u].x[nt][0]);
                        const uint32_t b[2] = {xv[2 * j], xv[2 * j + 1]};
                        mma_16816(FMT == K_QUANT_INT8 ? acc[rt][nt] : part[nt], a, b);
                    }
                }
                if constexpr (FMT == K_QUANT_INT4) {
                    // accumulators 0, 1 hold row g, 2, 3 row g + 8
                    const float s_lo = __low2float(as_half2(f[u].sz[rt][0]));
                    const float s_hi = __low2float(as_half2(f[u].sz[rt][1]));
#pragma unroll
                    for (int nt = 0; nt < NT; nt++)
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            acc[rt][nt][e] += (e < 2 ? s_lo : s_hi) * part[nt][e];
                }
            }
    };
    // Warp w takes the batches starting at s_begin + (i * WARPS + w) * U for i = 0, 1, ... (U * 64 contiguous bytes
    // per row each), two in flight: f0 holds the even ones, f1 the odd.
    step_frags<FMT, RT, NT> f0[U], f1[U];
    const int first = s_begin + warp * U, stride = WARPS * U;
    load_w(f0, first, true); // weights and scales do not depend on the previous kernel: stream them while it finishes
    pdl_wait_release(release_early);
    for (int s0 = first; s0 < s_end; s0 += 2 * stride) {
        load_w(f1, s0 + stride, false);
        load_x(f0, s0);
        mma_batch(f0);
        if (s0 + stride >= s_end)
            break;
        load_w(f0, s0 + 2 * stride, false);
        load_x(f1, s0 + stride);
        mma_batch(f1);
    }

    // The block's (and with split-K the tile's) sums; splits other than the tile's last are done.
    float sum[RT][PER];
    if (!tile_sums<WARPS, RT, NT>(acc, sum, partials, counters))
        return;
    // INT8: the row's scale times the sum of q x.
    auto scaled = [&](float v, int w_r) { return FMT == K_QUANT_INT8 ? v * __half2float(scales[w_r]) : v; };
#pragma unroll
    for (int q = 0; q < PER; q++) {
        const int i = threadIdx.x + q * THREADS;
        if (i >= FRAG)
            continue;
        const int l = i % 32, e = (i / 32) % 4, nt = i / 128;
        const int lr = l / 4 + (e >= 2 ? 8 : 0), token = nt * TOKEN_TILE + 2 * (l % 4) + (e & 1);
        if (token >= m)
            continue;
#pragma unroll
        for (int rt = 0; rt < (EPI == K_LINEAR_SILU_MUL ? 1 : RT); rt++) {
            const int row = y_row(rt, lr);
            if (row >= n)
                continue;
            float v = scaled(sum[rt][q], w_row(rt, lr)) + (bias ? __half2float(bias[row]) : 0.0f);
            if (EPI == K_LINEAR_GELU)
                v = gelu_tanh(v);
            if (EPI == K_LINEAR_SILU_MUL)
                v = silu_mul(v, scaled(sum[1][q], w_row(1, lr)) + (bias ? __half2float(bias[n + row]) : 0.0f));
            y[(size_t)token * n + row] = __float2half(v);
        }
    }
}

template <int FMT, int WARPS, int NT, int EPI>
cudaError_t launch(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias, int m,
                   int k, int n, int splits, float *partials, unsigned *counters, cudaStream_t stream)
{
    const int n_steps = (k + step_k<FMT>() - 1) / step_k<FMT>();
    const int steps_per_split = (n_steps + splits - 1) / splits;
    const dim3 grid((n + block_rows<EPI, NT>() - 1) / block_rows<EPI, NT>(), splits);
    return fk_launch(linear_quant_kernel<FMT, WARPS, NT, EPI>, grid, dim3(32 * WARPS), 0, stream, y, x, wq, scales,
                     bias, m, k, n, steps_per_split, partials, counters, fk_pdl_release_early);
}

template <int FMT, int NT, int EPI>
cudaError_t launch_warps(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias,
                         int m, int k, int n, int splits, float *partials, unsigned *counters, cudaStream_t stream)
{
    switch (warps_for(FMT, EPI, (k + step_k<FMT>() - 1) / step_k<FMT>(), batch_steps<FMT, EPI, NT>())) {
    case 4: return launch<FMT, 4, NT, EPI>(y, x, wq, scales, bias, m, k, n, splits, partials, counters, stream);
    case 8: return launch<FMT, 8, NT, EPI>(y, x, wq, scales, bias, m, k, n, splits, partials, counters, stream);
    default:
        return launch<FMT, FK_QLINEAR_MAX_WARPS, NT, EPI>(y, x, wq, scales, bias, m, k, n, splits, partials, counters,
                                                          stream);
    }
}

template <int FMT, int EPI>
cudaError_t launch_m(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias, int m,
                     int k, int n, int splits, float *partials, unsigned *counters, cudaStream_t stream)
{
    return m <= TOKEN_TILE
               ? launch_warps<FMT, 1, EPI>(y, x, wq, scales, bias, m, k, n, splits, partials, counters, stream)
               : launch_warps<FMT, 2, EPI>(y, x, wq, scales, bias, m, k, n, splits, partials, counters, stream);
}

template <int FMT>
cudaError_t launch_epilogue(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias,
                            int m, int k, int n, int epilogue, int splits, float *partials, unsigned *counters,
                            cudaStream_t stream)
{
    switch (epilogue) {
    case K_LINEAR_PLAIN:
        return launch_m<FMT, K_LINEAR_PLAIN>(y, x, wq, scales, bias, m, k, n, splits, partials, counters, stream);
    case K_LINEAR_GELU:
        return launch_m<FMT, K_LINEAR_GELU>(y, x, wq, scales, bias, m, k, n, splits, partials, counters, stream);
    case K_LINEAR_SILU_MUL:
        return launch_m<FMT, K_LINEAR_SILU_MUL>(y, x, wq, scales, bias, m, k, n, splits, partials, counters, stream);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" int k_linear_quant_splits(int format, int m, int k, int n, int epilogue, int n_sms)
{
    const int step = format == K_QUANT_INT8 ? step_k<K_QUANT_INT8>() : step_k<K_QUANT_INT4>();
    const int u_max = format == K_QUANT_INT8 ? batch_max<K_QUANT_INT8>() : batch_max<K_QUANT_INT4>();
    const int nt = m <= TOKEN_TILE ? 1 : 2, rt = epilogue == K_LINEAR_SILU_MUL || nt == 2 ? 2 : 1;
    const int rows = epilogue == K_LINEAR_SILU_MUL ? TILE_ROWS : TILE_ROWS * rt;
    const int batch = rt == 1 && nt == 1 ? u_max : (u_max + 1) / 2;
    const int tiles = (n + rows - 1) / rows, n_steps = (k + step - 1) / step;
    const int warps = warps_for(format, epilogue, n_steps, batch);
    // As in k_linear_small_splits: more blocks along k only when the rows give too few warps, each warp keeping at
    // least a batch of steps, and within what the partials buffer holds.
    int splits = (FK_QLINEAR_WARPS_PER_SM * n_sms + tiles * warps - 1) / (tiles * warps);
    const int by_work = n_steps / (batch * warps);
    splits = splits < by_work ? splits : by_work;
    const size_t per_split = (size_t)tiles * rt * nt * 4 * 32; // floats
    const int by_space = (int)(K_LINEAR_SMALL_PARTIAL_FLOATS / per_split);
    splits = splits < by_space ? splits : by_space;
    return splits < 1 ? 1 : splits;
}

extern "C" cudaError_t k_linear_quant(void *y, const void *x, const void *data, const void *scales, const void *bias,
                                      int format, int m, int k, int n, int epilogue, int splits, float *partials,
                                      unsigned *counters, cudaStream_t stream)
{
    if (m <= 0 || n <= 0)
        return cudaSuccess;
    if (m > K_LINEAR_QUANT_MAX_M || k <= 0 || k % (format == K_QUANT_INT8 ? 16 : GROUP) || splits < 1 ||
        (splits > 1 && (!partials || !counters || (n + TILE_ROWS - 1) / TILE_ROWS > K_LINEAR_SMALL_COUNTERS)))
        return cudaErrorInvalidValue;
    __half *yh = (__half *)y;
    const __half *xh = (const __half *)x, *sh = (const __half *)scales, *bh = (const __half *)bias;
    const uint8_t *wq = (const uint8_t *)data;
    switch (format) {
    case K_QUANT_INT8:
        return launch_epilogue<K_QUANT_INT8>(yh, xh, wq, sh, bh, m, k, n, epilogue, splits, partials, counters, stream);
    case K_QUANT_INT4:
        return launch_epilogue<K_QUANT_INT4>(yh, xh, wq, sh, bh, m, k, n, epilogue, splits, partials, counters, stream);
    default: return cudaErrorInvalidValue;
    }
}
