// linear_small.cu — y[m][n] = epilogue(x[m][k] W[n][k]^T + bias) for small batches (m <= 64 tokens: every decode
// step of a server with up to 64 sequences running), where the time is one pass over W. A warp owns row tiles of 16
// rows of W (one; two consecutive ones above 8 tokens, so each x load serves twice the weights; for SiLU·mul 16 gate
// rows and their 16 up rows) and a range of k; each k-step of 32 every thread makes 16-byte loads — W rows g and
// g + 8 of each row tile and x row g of each token tile of 8 (1, 2, 4 or 8 tiles) at k0 + 8t (lane = 4g + t) — which
// are exactly the fragments of m16n8k16 MMAs (rows of W as M, tokens as N) once the 32 k of the step are permuted: MMA
// j sees logical k 2t, 2t+1, 2t+8, 2t+9 at physical k 8t + 4j + 0..3. W and x use the same permutation, so the dot
// products are unchanged. The warps of a block (4 to 16, as k and the shared memory for their sums allow; at one
// token tile fewer where that lets the whole grid be resident at once) split the block's k range and meet in shared
// memory; only when that leaves too few warps to keep the memory system busy is k also split across blocks
// (split-K), whose fp32 partials the last block of the tile to finish adds up in a fixed order (so the result does
// not depend on timing) before the epilogue. Each warp keeps two batches of U k-steps of weights in flight (the next
// is requested before the current is used), the first before waiting for the previous kernel (PDL); where its whole
// k range is one batch, that batch alone, in fewer registers (the one-batch form). fp32 accumulation throughout.
// Turing (sm_75) runs the same code with m16n8k8 pairs (common.cuh).
#include "common.cuh"
#include "kernels.h"
#include "linear_sums.cuh"

#include <utility>

// The most warps a block may have, and the warps per SM the launch aims for at 4 KB of weights per batch (kernels/bench
// times the choices; with smaller batches it aims for proportionally more warps).
#ifndef FK_LINEAR_MAX_WARPS
#define FK_LINEAR_MAX_WARPS 16
#endif
// Switches for A/B runs of the one-token forms below (both on by default): the one-batch kernel, and fewer warps per
// block where that lets all of a grid's blocks be resident at once (FK_LINEAR_ONE_WAVE=2: for SiLU·mul only).
#ifndef FK_LINEAR_ONE_BATCH
#define FK_LINEAR_ONE_BATCH 1
#endif
#ifndef FK_LINEAR_ONE_WAVE
#define FK_LINEAR_ONE_WAVE 1
#endif
#ifndef FK_LINEAR_WARPS_PER_SM
#define FK_LINEAR_WARPS_PER_SM 6
#endif

namespace {

constexpr int STEP = 32;       // k per MMA pair
constexpr int TILE_ROWS = 16;  // rows of W in a row tile
constexpr int TOKEN_TILE = 8;  // tokens in a token tile
constexpr int U_MAX = 4;       // k-steps in a batch of loads (fewer when the fragments are larger)
constexpr int RED_FLOATS = 8192; // shared memory for the warps' sums (32 KB): bounds the warps of a block

// Fragments of one k-step: W rows (g, g + 8) of each row tile, x row g of each token tile.
template <int RT, int NT> struct step_frags {
    uint4 w[RT][2];
    uint4 x[NT];
};

// Token tiles for m tokens.
__host__ __device__ constexpr int token_tiles(int m)
{
    return m <= TOKEN_TILE ? 1 : m <= 2 * TOKEN_TILE ? 2 : m <= 4 * TOKEN_TILE ? 4 : 8;
}

// Row tiles per warp: SiLU·mul always pairs gate and up; the others take two above one token tile.
__host__ __device__ constexpr int row_tiles(int epi, int nt)
{
    return epi == K_LINEAR_SILU_MUL || nt >= 2 ? 2 : 1;
}

// Rows of y one block covers.
__host__ __device__ constexpr int block_rows(int epi, int nt)
{
    return epi == K_LINEAR_SILU_MUL ? TILE_ROWS : TILE_ROWS * row_tiles(epi, nt);
}

// k-steps per batch of loads: two batches of fragments (and, from 4 token tiles, the x fragments) stay within the
// registers a thread has.
__host__ __device__ constexpr int batch_steps(int epi, int nt)
{
    return row_tiles(epi, nt) == 1 && nt == 1 ? U_MAX : nt <= 2 ? U_MAX / 2 : 1;
}

// The most warps a block of this shape may have: each keeps RT x NT x 128 fp32 sums in shared memory.
__host__ __device__ constexpr int max_warps(int epi, int nt)
{
    return RED_FLOATS / (row_tiles(epi, nt) * nt * 128) < FK_LINEAR_MAX_WARPS
               ? RED_FLOATS / (row_tiles(epi, nt) * nt * 128)
               : FK_LINEAR_MAX_WARPS;
}

// Warps per block for a k of `steps` 32-wide steps: as many as keep a batch each, 4 to max_warps.
int warps_for(int steps, int epi, int nt)
{
    int w = max_warps(epi, nt);
    while (w > 4 && steps < batch_steps(epi, nt) * w)
        w /= 2;
    return w;
}

// ONE (the one-batch form): every warp's k range is a single batch (Llama-1B's q|k|v and o, the head, at one token),
// so all of a block's weights are requested before the PDL wait and no second batch of registers is needed. Within
// 64 registers (62) two blocks of 16 warps fit an SM, so q|k|v's 192 blocks run in one wave, all their weights on
// their way while the norm before them runs; one block an SM took two waves, the second streaming only after the
// first had finished. Other forms give no minimum of blocks (0), so their registers are as before.
template <int WARPS, int NT, int EPI, bool ONE>
__global__ void __launch_bounds__(32 * WARPS, ONE ? 2 : 0)
    linear_small_kernel(__half *__restrict__ y, const __half *__restrict__ x, const __half *__restrict__ w,
                        const __half *__restrict__ bias, int m, int k, int n, int steps_per_split,
                        float *__restrict__ partials, unsigned *__restrict__ counters, bool release_early)
{
    constexpr int RT = row_tiles(EPI, NT), THREADS = 32 * WARPS, U = batch_steps(EPI, NT);
    static_assert(WARPS <= max_warps(EPI, NT), "the warps' sums exceed the shared memory");
    constexpr int FRAG = NT * 4 * 32;               // accumulator floats of one row tile in a warp
    constexpr int PER = sums_per_thread<WARPS, NT>(); // of those, per thread in the epilogue

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int r0 = blockIdx.x * block_rows(EPI, NT), split = blockIdx.y;
    const int n_steps = (k + STEP - 1) / STEP;
    const int s_begin = split * steps_per_split, s_end = min(n_steps, s_begin + steps_per_split);

    // Local row lr (0..15) of row tile rt: its row of y, and of W (SiLU·mul: up rows are n further on).
    auto y_row = [&](int rt, int lr) { return r0 + (EPI == K_LINEAR_SILU_MUL ? 0 : rt * TILE_ROWS) + lr; };
    auto w_row = [&](int rt, int lr) { return (EPI == K_LINEAR_SILU_MUL ? rt * n : 0) + y_row(rt, lr); };

    auto load_w = [&](step_frags<RT, NT>(&f)[U], int s0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int s = s0 + u, kk = s * STEP + 8 * t;
            const bool k_ok = s < s_end && kk < k;
#pragma unroll
            for (int rt = 0; rt < RT; rt++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    f[u].w[rt][h] = k_ok && y_row(rt, g + 8 * h) < n
                                        ? load_stream16(w + (size_t)w_row(rt, g + 8 * h) * k + kk)
                                        : make_uint4(0, 0, 0, 0);
        }
    };
    auto load_x = [&](step_frags<RT, NT>(&f)[U], int s0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int s = s0 + u, kk = s * STEP + 8 * t;
            const bool k_ok = s < s_end && kk < k;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int token = nt * TOKEN_TILE + g;
                f[u].x[nt] = k_ok && token < m ? __ldg(reinterpret_cast<const uint4 *>(x + (size_t)token * k + kk))
                                               : make_uint4(0, 0, 0, 0);
            }
        }
    };

    float acc[RT][NT][4] = {};
    auto mma_batch = [&](const step_frags<RT, NT>(&f)[U]) {
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int rt = 0; rt < RT; rt++)
#pragma unroll
                for (int nt = 0; nt < NT; nt++)
#pragma unroll
                    for (int j = 0; j < 2; j++) {
                        const uint32_t *lo = reinterpret_cast<const uint32_t *>(&f[u].w[rt][0]);
                        const uint32_t *hi = reinterpret_cast<const uint32_t *>(&f[u].w[rt][1]);
                        const uint32_t *xv = reinterpret_cast<const uint32_t *>(&f[u].x[nt]);
                        const uint32_t a[4] = {lo[2 * j], hi[2 * j], lo[2 * j + 1], hi[2 * j + 1]};
                        const uint32_t b[2] = {xv[2 * j], xv[2 * j + 1]};
                        mma_16816(acc[rt][nt], a, b);
                    }
    };
    // Warp w takes the batches starting at s_begin + (i * WARPS + w) * U for i = 0, 1, ... (U * 64 contiguous bytes
    // per row each), two in flight: f0 holds the even ones, f1 the odd.
    step_frags<RT, NT> f0[U], f1[U];
    const int first = s_begin + warp * U, stride = WARPS * U;
    load_w(f0, first); // weights do not depend on the previous kernel: stream them while it finishes
    pdl_wait_release(release_early);
    if constexpr (ONE) {
        load_x(f0, first);
        mma_batch(f0);
    } else {
        for (int s0 = first; s0 < s_end; s0 += 2 * stride) {
            load_w(f1, s0 + stride);
            load_x(f0, s0);
            mma_batch(f0);
            if (s0 + stride >= s_end)
                break;
            load_w(f0, s0 + 2 * stride);
            load_x(f1, s0 + stride);
            mma_batch(f1);
        }
    }

    // The block's (and with split-K the tile's) sums; splits other than the tile's last are done.
    float sum[RT][PER];
    if (!tile_sums<WARPS, RT, NT>(acc, sum, partials, counters))
        return;

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
            float v = sum[rt][q] + (bias ? __half2float(bias[row]) : 0.0f);
            if (EPI == K_LINEAR_GELU)
                v = gelu_tanh(v);
            if (EPI == K_LINEAR_SILU_MUL)
                v = silu_mul(v, sum[1][q] + (bias ? __half2float(bias[n + row]) : 0.0f));
            y[(size_t)token * n + row] = __float2half(v);
        }
    }
}

// The one-batch form serves one row tile and one token tile (its fragments then fit two blocks an SM) where every
// warp's k range is a single batch.
template <int NT, int EPI> constexpr bool one_batch_form() { return NT == 1 && row_tiles(EPI, NT) == 1; }

template <int WARPS, int NT, int EPI> bool takes_one_batch(int steps_per_split)
{
    return FK_LINEAR_ONE_BATCH && one_batch_form<NT, EPI>() && steps_per_split <= WARPS * batch_steps(EPI, NT);
}

template <int WARPS, int NT, int EPI>
cudaError_t launch(__half *y, const __half *x, const __half *w, const __half *bias, int m, int k, int n, int splits,
                   float *partials, unsigned *counters, cudaStream_t stream)
{
    const int n_steps = (k + STEP - 1) / STEP;
    const int steps_per_split = (n_steps + splits - 1) / splits;
    const dim3 grid((n + block_rows(EPI, NT) - 1) / block_rows(EPI, NT), splits);
    if (takes_one_batch<WARPS, NT, EPI>(steps_per_split))
        return fk_launch(linear_small_kernel<WARPS, NT, EPI, one_batch_form<NT, EPI>()>, grid, dim3(32 * WARPS),
                         0, stream, y, x, w, bias, m, k, n, steps_per_split, partials, counters,
                         fk_pdl_release_early);
    return fk_launch(linear_small_kernel<WARPS, NT, EPI, false>, grid, dim3(32 * WARPS), 0, stream, y, x, w, bias, m,
                     k, n, steps_per_split, partials, counters, fk_pdl_release_early);
}

// Blocks of a kernel that an SM holds at once (its registers and shared memory decide), asked of the runtime once.
template <int WARPS, int NT, int EPI, bool ONE> cudaError_t blocks_per_sm(int *blocks)
{
    static const std::pair<cudaError_t, int> asked = [] {
        int b = 0;
        const cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, linear_small_kernel<WARPS, NT, EPI, ONE>, 32 * WARPS, 0);
        return std::make_pair(e, b);
    }();
    *blocks = asked.second;
    return asked.first;
}

// Whether all `tiles` blocks of launch<WARPS, NT, EPI> without split-K are resident at once on n_sms SMs.
template <int WARPS, int NT, int EPI> cudaError_t one_wave(int tiles, int n_steps, int n_sms, bool *fits)
{
    int blocks = 0;
    const cudaError_t e = takes_one_batch<WARPS, NT, EPI>(n_steps)
                              ? blocks_per_sm<WARPS, NT, EPI, one_batch_form<NT, EPI>()>(&blocks)
                              : blocks_per_sm<WARPS, NT, EPI, false>(&blocks);
    *fits = tiles <= blocks * n_sms;
    return e;
}

// WARPS capped at what the shape allows, so that no template with too much shared memory is instantiated.
constexpr int capped(int warps, int epi, int nt)
{
    return warps < max_warps(epi, nt) ? warps : max_warps(epi, nt);
}

// The device's SM count, asked of the runtime once (the backend drives one device).
cudaError_t sm_count(int *n_sms)
{
    static const std::pair<cudaError_t, int> asked = [] {
        int device = 0, n = 0;
        cudaError_t e = cudaGetDevice(&device);
        if (e == cudaSuccess)
            e = cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
        return std::make_pair(e, n);
    }();
    *n_sms = asked.second;
    return asked.first;
}

// Warps per block: warps_for's, or at one token tile without split-K the most (down to 4) with which every block of
// the grid is resident at once. A grid of several waves leaves each SM without loads in flight from the end of one
// block's main loop (its warps' reduction, epilogue and exit) until the next block's first loads return, and the
// SMs end their blocks nearly together. Llama-1B's gate|up at one token, 512 blocks, ran 3.9 waves of 16-warp blocks
// (one an SM); in one wave of 4-warp blocks (six an SM) bench-1b's batch-1 step was 3.4 % faster on an H200. Llama-
// 3-8B's q|k|v, o and down (8-warp blocks here) measured 0.6 % slower on bench-8b at batch 1; with the rule for
// SiLU·mul only (FK_LINEAR_ONE_WAVE=2) bench-8b was 0.9 % faster in one run (BENCHMARKS.md, not yet the default).
template <int NT, int EPI> cudaError_t warps_to_launch(int k, int n, int splits, int *warps)
{
    const int n_steps = (k + STEP - 1) / STEP;
    *warps = warps_for(n_steps, EPI, NT);
    if (!FK_LINEAR_ONE_WAVE || NT != 1 || splits != 1 || (FK_LINEAR_ONE_WAVE == 2 && EPI != K_LINEAR_SILU_MUL))
        return cudaSuccess;
    int n_sms = 0;
    cudaError_t e = sm_count(&n_sms);
    const int tiles = (n + block_rows(EPI, NT) - 1) / block_rows(EPI, NT);
    for (int w = *warps; e == cudaSuccess && w >= 4; w /= 2) {
        bool fits = false;
        e = w >= 16  ? one_wave<capped(FK_LINEAR_MAX_WARPS, EPI, NT), NT, EPI>(tiles, n_steps, n_sms, &fits)
            : w >= 8 ? one_wave<capped(8, EPI, NT), NT, EPI>(tiles, n_steps, n_sms, &fits)
                     : one_wave<4, NT, EPI>(tiles, n_steps, n_sms, &fits);
        if (e == cudaSuccess && fits) {
            *warps = w;
            break;
        }
    }
    return e;
}

template <int NT, int EPI>
cudaError_t launch_warps(__half *y, const __half *x, const __half *w, const __half *bias, int m, int k, int n,
                         int splits, float *partials, unsigned *counters, cudaStream_t stream)
{
    int warps = 0;
    const cudaError_t e = warps_to_launch<NT, EPI>(k, n, splits, &warps);
    if (e != cudaSuccess)
        return e;
    switch (warps) {
    case 4: return launch<4, NT, EPI>(y, x, w, bias, m, k, n, splits, partials, counters, stream);
    case 8: return launch<capped(8, EPI, NT), NT, EPI>(y, x, w, bias, m, k, n, splits, partials, counters, stream);
    default:
        return launch<capped(FK_LINEAR_MAX_WARPS, EPI, NT), NT, EPI>(y, x, w, bias, m, k, n, splits, partials, counters,
                                                                    stream);
    }
}

template <int EPI>
cudaError_t launch_m(__half *y, const __half *x, const __half *w, const __half *bias, int m, int k, int n,
                     int splits, float *partials, unsigned *counters, cudaStream_t stream)
{
    switch (token_tiles(m)) {
    case 1: return launch_warps<1, EPI>(y, x, w, bias, m, k, n, splits, partials, counters, stream);
    case 2: return launch_warps<2, EPI>(y, x, w, bias, m, k, n, splits, partials, counters, stream);
    case 4: return launch_warps<4, EPI>(y, x, w, bias, m, k, n, splits, partials, counters, stream);
    default: return launch_warps<8, EPI>(y, x, w, bias, m, k, n, splits, partials, counters, stream);
    }
}

} // namespace

extern "C" int k_linear_small_splits(int m, int k, int n, int epilogue, int n_sms)
{
    const int nt = token_tiles(m), rt = row_tiles(epilogue, nt), rows = block_rows(epilogue, nt);
    const int batch = batch_steps(epilogue, nt);
    const int tiles = (n + rows - 1) / rows, n_steps = (k + STEP - 1) / STEP, warps = warps_for(n_steps, epilogue, nt);
    // More blocks along k only when the rows give too few warps (the aim: FK_LINEAR_WARPS_PER_SM warps of 4 KB
    // batches per SM, as many bytes in flight with smaller batches), each warp keeping at least a batch of steps, and
    // within what the partials buffer holds.
    const int batch_kb = batch * rt; // a batch: U steps of RT x 2 rows x 32 lanes x 16 bytes
    const int per_sm = FK_LINEAR_WARPS_PER_SM * 4 / batch_kb;
    int splits = (per_sm * n_sms + tiles * warps - 1) / (tiles * warps);
    const int by_work = n_steps / (batch * warps);
    const size_t per_split = (size_t)tiles * rt * nt * 4 * 32; // floats
    const int by_space = (int)(K_LINEAR_SMALL_PARTIAL_FLOATS / per_split);
    const int most = by_work < by_space ? by_work : by_space;
    splits = splits < most ? splits : most;
    if (splits < 1)
        return 1;
    // Where the tiles are fewer than the SMs (Llama-1B's o and down at 9-16 tokens: 64 tiles of two row tiles, half
    // the SMs idle), more splits where they spread the work more evenly: the blocks go out one per SM first, so the
    // most loaded SM holds ceil(blocks / SMs) blocks of 1 / splits of a tile each; a split must save 5 % to be
    // taken. (With at least as many tiles as SMs more splits measured slower: Llama-8B's q|k|v at 16 tokens, 192
    // tiles, 22.6 -> 26.2 us with 2; BENCHMARKS.md.)
    auto load = [&](int s) { return (double)((tiles * s + n_sms - 1) / n_sms) / s; };
    for (int s = splits + 1; s <= most && tiles < n_sms; s++)
        if (load(s) < 0.95 * load(splits))
            splits = s;
    return splits;
}

extern "C" cudaError_t k_linear_small(void *y, const void *x, const void *w, const void *bias, int m, int k, int n,
                                      int epilogue, int splits, float *partials, unsigned *counters,
                                      cudaStream_t stream)
{
    if (m <= 0 || n <= 0)
        return cudaSuccess;
    if (m > K_LINEAR_SMALL_MAX_M || k <= 0 || k % 8 || splits < 1 ||
        (splits > 1 && (!partials || !counters || (n + TILE_ROWS - 1) / TILE_ROWS > K_LINEAR_SMALL_COUNTERS)))
        return cudaErrorInvalidValue;
    __half *yh = (__half *)y;
    const __half *xh = (const __half *)x, *wh = (const __half *)w, *bh = (const __half *)bias;
    switch (epilogue) {
    case K_LINEAR_PLAIN: return launch_m<K_LINEAR_PLAIN>(yh, xh, wh, bh, m, k, n, splits, partials, counters, stream);
    case K_LINEAR_GELU: return launch_m<K_LINEAR_GELU>(yh, xh, wh, bh, m, k, n, splits, partials, counters, stream);
    case K_LINEAR_SILU_MUL:
        return launch_m<K_LINEAR_SILU_MUL>(yh, xh, wh, bh, m, k, n, splits, partials, counters, stream);
    default: return cudaErrorInvalidValue;
    }
}
