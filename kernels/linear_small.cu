// linear_small.cu — y[m][n] = epilogue(x[m][k] W[n][k]^T + bias) for small batches (m <= 16 tokens: every decode
// step of a lightly loaded server), where the time is one pass over W. A warp owns 16 rows of W (or 16 gate rows and
// their 16 up rows for SiLU·mul) and a range of k; each k-step of 32 every thread makes three 16-byte loads — W
// rows g and g + 8 and x row g at k0 + 8t (lane = 4g + t) — which are exactly the fragments of two m16n8k16 MMAs
// (rows of W as M, tokens as N) once the 32 k of the step are permuted: MMA j sees logical k 2t, 2t+1, 2t+8, 2t+9
// at physical k 8t + 4j + 0..3. W and x use the same permutation, so the dot products are unchanged. The warps of a
// block split the block's k range and meet in shared memory; when the rows alone give too few blocks, the k range
// is also split across blocks (split-K), whose fp32 partials the last block of the tile to finish adds up in a
// fixed order (so the result does not depend on timing) before the epilogue. fp32 accumulation throughout.
// Turing (sm_75) runs the same code with m16n8k8 pairs (common.cuh).
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int WARPS = 4, THREADS = 32 * WARPS;
constexpr int STEP = 32; // k per MMA pair
constexpr int MAX_M = 16;

// Rows of W a warp tile spans and the tokens of a token tile.
constexpr int TILE_ROWS = 16, TOKEN_TILE = 8;

// Fragments of one k-step: W rows (g, g + 8) of each row tile, x rows g (+ 8) of each token tile.
template <int RT, int NT> struct step_frags {
    uint4 w[RT][2];
    uint4 x[NT];
};

// RT: row tiles per warp (2 for SiLU·mul: gate rows r and up rows n + r); NT: token tiles (m <= 8: 1, else 2);
// U: k-steps loaded before they are used (bytes in flight per thread: U * RT * 32).
template <int RT, int NT, int EPI, int U>
__global__ void __launch_bounds__(THREADS) linear_small_kernel(__half *__restrict__ y, const __half *__restrict__ x,
                                                              const __half *__restrict__ w,
                                                              const __half *__restrict__ bias, int m, int k, int n,
                                                              int steps_per_split, float *__restrict__ partials,
                                                              unsigned *__restrict__ counters)
{
    constexpr int FRAG = NT * 4 * 32; // accumulator floats of one row tile in a warp
    __shared__ float red[WARPS][RT][FRAG];
    __shared__ bool last_split;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int r0 = blockIdx.x * TILE_ROWS, split = blockIdx.y, n_splits = gridDim.y;
    const int n_steps = (k + STEP - 1) / STEP;
    const int s_begin = split * steps_per_split, s_end = min(n_steps, s_begin + steps_per_split);

    // W row of row tile rt for local row lr (0..15); rows >= n read as zero and are not written.
    auto w_row = [&](int rt, int lr) -> const __half * {
        return w + (size_t)(rt * n + r0 + lr) * k;
    };
    const bool row_ok[2] = {r0 + g < n, r0 + g + 8 < n};

    auto load_w = [&](step_frags<RT, NT> (&f)[U], int s0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int s = s0 + u, kk = s * STEP + 8 * t;
            const bool k_ok = s < s_end && kk < k;
#pragma unroll
            for (int rt = 0; rt < RT; rt++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    f[u].w[rt][h] =
                        k_ok && row_ok[h] ? load_stream16(w_row(rt, g + 8 * h) + kk) : make_uint4(0, 0, 0, 0);
        }
    };
    auto load_x = [&](step_frags<RT, NT> (&f)[U], int s0) {
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
    step_frags<RT, NT> f[U];
    // Warp w takes steps s_begin + (i * WARPS + w) * U .. + U - 1 for i = 0, 1, ...: U * 64 contiguous bytes per row.
    const int first = s_begin + warp * U, stride = WARPS * U;
    load_w(f, first); // weights do not depend on the previous kernel: stream them while it finishes
    pdl_wait();
    pdl_launch_dependents();
    for (int s0 = first; s0 < s_end; s0 += stride) {
        if (s0 != first)
            load_w(f, s0);
        load_x(f, s0);
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
    }

    // The block's warps meet: red[warp][rt][(nt * 4 + e) * 32 + lane].
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                red[warp][rt][(nt * 4 + e) * 32 + lane] = acc[rt][nt][e];
    __syncthreads();

    // Entry i of a row tile: accumulator e of lane l of token tile nt, i = (nt * 4 + e) * 32 + l, holding row
    // g(l) + 8 (e >= 2) and token nt * 8 + 2 t(l) + (e & 1).
    float sum[RT][(FRAG + THREADS - 1) / THREADS];
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int q = 0; q < (FRAG + THREADS - 1) / THREADS; q++) {
            const int i = threadIdx.x + q * THREADS;
            float v = 0;
            if (i < FRAG)
#pragma unroll
                for (int wp = 0; wp < WARPS; wp++)
                    v += red[wp][rt][i];
            sum[rt][q] = v;
        }

    if (n_splits > 1) {
        // partials[tile][split][rt][FRAG]; the last split of the tile to arrive adds them up in split order.
        float *mine = partials + ((size_t)blockIdx.x * n_splits + split) * RT * FRAG;
#pragma unroll
        for (int rt = 0; rt < RT; rt++)
#pragma unroll
            for (int q = 0; q < (FRAG + THREADS - 1) / THREADS; q++) {
                const int i = threadIdx.x + q * THREADS;
                if (i < FRAG)
                    mine[rt * FRAG + i] = sum[rt][q];
            }
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) {
            last_split = atomicAdd(&counters[blockIdx.x], 1u) == (unsigned)n_splits - 1;
            if (last_split)
                counters[blockIdx.x] = 0; // ready for the next launch (no other split of this tile is left)
        }
        __syncthreads();
        if (!last_split)
            return;
        __threadfence();
        const float *all = partials + (size_t)blockIdx.x * n_splits * RT * FRAG;
#pragma unroll
        for (int rt = 0; rt < RT; rt++)
#pragma unroll
            for (int q = 0; q < (FRAG + THREADS - 1) / THREADS; q++) {
                const int i = threadIdx.x + q * THREADS;
                float v = 0;
                if (i < FRAG)
                    for (int sp = 0; sp < n_splits; sp++)
                        v += __ldcg(all + (size_t)sp * RT * FRAG + rt * FRAG + i);
                sum[rt][q] = v;
            }
    }

#pragma unroll
    for (int q = 0; q < (FRAG + THREADS - 1) / THREADS; q++) {
        const int i = threadIdx.x + q * THREADS;
        if (i >= FRAG)
            continue;
        const int l = i % 32, e = (i / 32) % 4, nt = i / 128;
        const int row = r0 + l / 4 + (e >= 2 ? 8 : 0), token = nt * TOKEN_TILE + 2 * (l % 4) + (e & 1);
        if (row >= n || token >= m)
            continue;
        float v = sum[0][q] + (bias ? __half2float(bias[row]) : 0.0f);
        if (EPI == K_LINEAR_GELU)
            v = gelu_tanh(v);
        if (EPI == K_LINEAR_SILU_MUL)
            v = silu_mul(v, sum[RT - 1][q] + (bias ? __half2float(bias[n + row]) : 0.0f));
        y[(size_t)token * n + row] = __float2half(v);
    }
}

template <int RT, int NT, int EPI>
cudaError_t launch(__half *y, const __half *x, const __half *w, const __half *bias, int m, int k, int n, int splits,
                   float *partials, unsigned *counters, cudaStream_t stream)
{
    constexpr int U = RT == 1 ? 4 : 2;
    const int n_steps = (k + STEP - 1) / STEP;
    const int steps_per_split = (n_steps + splits - 1) / splits;
    const dim3 grid((n + TILE_ROWS - 1) / TILE_ROWS, splits);
    return fk_launch(linear_small_kernel<RT, NT, EPI, U>, grid, dim3(THREADS), 0, stream, y, x, w, bias, m, k, n,
                     steps_per_split, partials, counters);
}

template <int RT, int EPI>
cudaError_t launch_m(__half *y, const __half *x, const __half *w, const __half *bias, int m, int k, int n,
                     int splits, float *partials, unsigned *counters, cudaStream_t stream)
{
    return m <= TOKEN_TILE ? launch<RT, 1, EPI>(y, x, w, bias, m, k, n, splits, partials, counters, stream)
                           : launch<RT, 2, EPI>(y, x, w, bias, m, k, n, splits, partials, counters, stream);
}

} // namespace

extern "C" int k_linear_small_splits(int m, int k, int n, int epilogue, int n_sms)
{
    (void)m;
    const int tiles = (n + TILE_ROWS - 1) / TILE_ROWS;
    const int n_steps = (k + STEP - 1) / STEP;
    // Enough blocks to keep every SM streaming (about three blocks of four warps each), each warp still doing
    // at least four k-steps; bounded by what the partials buffer holds.
    const int rt = epilogue == K_LINEAR_SILU_MUL ? 2 : 1;
    int splits = (3 * n_sms + tiles - 1) / tiles;
    const int by_work = n_steps / (4 * WARPS);
    splits = splits < by_work ? splits : by_work;
    const size_t per_split = (size_t)tiles * rt * 2 * 4 * 32; // floats, for m up to 16
    const int by_space = (int)(K_LINEAR_SMALL_PARTIAL_FLOATS / per_split);
    splits = splits < by_space ? splits : by_space;
    return splits < 1 ? 1 : splits;
}

extern "C" cudaError_t k_linear_small(void *y, const void *x, const void *w, const void *bias, int m, int k, int n,
                                      int epilogue, int splits, float *partials, unsigned *counters,
                                      cudaStream_t stream)
{
    if (m <= 0 || n <= 0)
        return cudaSuccess;
    if (m > MAX_M || k <= 0 || k % 8 || splits < 1 || (splits > 1 && (!partials || !counters)) ||
        (splits > 1 && (n + TILE_ROWS - 1) / TILE_ROWS > K_LINEAR_SMALL_COUNTERS))
        return cudaErrorInvalidValue;
    __half *yh = (__half *)y;
    const __half *xh = (const __half *)x, *wh = (const __half *)w, *bh = (const __half *)bias;
    switch (epilogue) {
    case K_LINEAR_PLAIN:
        return launch_m<1, K_LINEAR_PLAIN>(yh, xh, wh, bh, m, k, n, splits, partials, counters, stream);
    case K_LINEAR_GELU:
        return launch_m<1, K_LINEAR_GELU>(yh, xh, wh, bh, m, k, n, splits, partials, counters, stream);
    case K_LINEAR_SILU_MUL:
        return launch_m<2, K_LINEAR_SILU_MUL>(yh, xh, wh, bh, m, k, n, splits, partials, counters, stream);
    default: return cudaErrorInvalidValue;
    }
}
