// linear_quant_resident.cu — the one-token-tile quantized linear (m <= 8) with each block's whole slice of W copied
// into shared memory before its PDL wait (Hopper bulk copies). Math, fragments and epilogue are linear_quant.cu's
// (read it first); only where W comes from differs.
// Why: k_linear_quant holds its weights in registers, a batch or two of loads a warp, in 8-warp blocks of ~100-140
// registers a thread. A block here is 4 warps of 72 registers (INT4; 42 for INT8) whose weights wait in shared
// memory, requested by single threads, so its blocks take little of an SM beside the kernel before them. Where that
// pays was measured on bench-1b's decode step (BENCHMARKS.md, twenty-second session): INT4 at one token, o and down
// together, +2.4 % a step; the backend (resident_linear) sends it only those. INT8 lost 9 % and 4 or 8 tokens 5-7 %.
// Scheme: block b owns row tile b (16 rows of W) and all of k, so there is no split-K; warp w owns a contiguous range
// of k-steps, with its own mbarrier that counts its part of every row and, after the wait, its part of each token of
// x. The warps meet in shared memory (linear_sums.cuh). Shared memory: W [16][w_stride] (a row's bytes padded so that
// rows g and g + 1 are 64 bytes apart in the banks: the 8 lanes of a 16-byte load hit distinct banks), x [m][k + 8]
// halves, INT4 (scale, zero) pairs [16][k / 128].
#include "common.cuh"
#include "kernels.h"
#include "linear_sums.cuh"
#include "quant_fragments.cuh"
#include "wgmma.cuh"

namespace {

// 4 warps: 2 warps of at most 64 registers (which would fit beside INT4 gate|up's two blocks an SM) made the
// batch-1 step 15 % slower. __launch_bounds__(THREADS, 1) below, not (THREADS): without the minimum of blocks ptxas
// gave the INT4 kernel 51 registers instead of 72, and that build made the step 5.5 % slower instead of 2.4 % faster.
constexpr int WARPS = 4, THREADS = 32 * WARPS;
constexpr int TILE_ROWS = 16, GROUP = 128;
constexpr int MAX_SMEM = 200 * 1024; // at most this much dynamic shared memory a block

template <int FMT> __host__ __device__ constexpr int step_k()
{
    return FMT == K_QUANT_INT8 ? 64 : 128;
}

struct layout {
    unsigned w_stride, x_stride, x_off, sz_off, bytes;
};

__host__ __device__ inline layout layout_of(int format, int m, int k)
{
    layout l;
    const unsigned row_bytes = format == K_QUANT_INT8 ? (unsigned)k : (unsigned)k / 2;
    l.w_stride = (row_bytes + 127) / 128 * 128 + 64;
    l.x_stride = 2u * (unsigned)k + 16;
    l.x_off = TILE_ROWS * l.w_stride;
    l.sz_off = l.x_off + (unsigned)m * l.x_stride;
    l.bytes = l.sz_off + (format == K_QUANT_INT4 ? TILE_ROWS * (unsigned)(k / GROUP) * 4u : 0u);
    return l;
}

template <int FMT, int EPI>
__global__ void __launch_bounds__(THREADS, 1)
    linear_quant_resident_kernel(__half *__restrict__ y, const __half *__restrict__ x, const uint8_t *__restrict__ wq,
                                 const __half *__restrict__ scales, const __half *__restrict__ bias, int m, int k,
                                 int n, bool release_early)
{
#if __CUDA_ARCH__ >= 900
    constexpr int STEP = step_k<FMT>(), MMAS = STEP / 16, XV = STEP / 32, PER = sums_per_thread<WARPS, 1>();
    constexpr int STEP_BYTES = 64; // of a W row per step, both formats
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ __align__(8) uint64_t bars[WARPS];

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int r0 = blockIdx.x * TILE_ROWS, rows = min(TILE_ROWS, n - r0);
    const int n_steps = k / STEP, per_warp = (n_steps + WARPS - 1) / WARPS;
    const int s0 = min(n_steps, warp * per_warp), s1 = min(n_steps, s0 + per_warp);
    const unsigned row_bytes = FMT == K_QUANT_INT8 ? (unsigned)k : (unsigned)k / 2;
    const layout l = layout_of(FMT, m, k);
    const uint32_t base = smem_addr(smem), bar = smem_addr(&bars[warp]);
    uint32_t *sz_s = reinterpret_cast<uint32_t *>(smem + l.sz_off); // INT4: [16][n_steps] (a step is a group)
    const uint32_t *sz_pairs = reinterpret_cast<const uint32_t *>(scales);

    // The warp's steps of each row, and (after the wait) of each token of x, land on its barrier. Weights and scales
    // do not depend on the previous kernel: they are requested before the wait.
    const unsigned w_bytes = (unsigned)(s1 - s0) * STEP_BYTES, x_bytes = (unsigned)(s1 - s0) * STEP * 2;
    if (lane == 0) {
        mbarrier_init(bar, 1);
        fence_mbarrier_init();
    }
    __syncwarp();
    if (w_bytes && lane == 0)
        mbarrier_arrive_expect_tx(bar, rows * w_bytes + m * x_bytes);
    __syncwarp();
    if (w_bytes && lane < rows)
        bulk_copy_to_shared(base + lane * l.w_stride + s0 * STEP_BYTES,
                            wq + (size_t)(r0 + lane) * row_bytes + (size_t)s0 * STEP_BYTES, w_bytes, bar);
    if constexpr (FMT == K_QUANT_INT4)
        for (int i = lane; i < TILE_ROWS * (s1 - s0); i += 32) {
            const int lr = i / (s1 - s0), s = s0 + i % (s1 - s0);
            sz_s[lr * n_steps + s] = lr < rows ? load_early4(sz_pairs + (size_t)(r0 + lr) * n_steps + s) : 0u;
        }
    pdl_wait_release(release_early);
    if (w_bytes && lane < m)
        bulk_copy_to_shared(base + l.x_off + lane * l.x_stride + s0 * STEP * 2, x + (size_t)lane * k + s0 * STEP,
                            x_bytes, bar);
    __syncwarp(); // the scales' shared stores, before other lanes read them
    if (w_bytes)
        mbarrier_wait(bar, 0);

    float acc[1][1][4] = {};
    const uint8_t *w_lo = smem + g * l.w_stride + 16 * t, *w_hi = w_lo + 8 * l.w_stride;
    const uint8_t *x_row = smem + l.x_off + g * l.x_stride + (STEP / 4) * t * 2;
#pragma unroll 2
    for (int s = s0; s < s1; s++) {
        const uint4 lo = *reinterpret_cast<const uint4 *>(w_lo + s * STEP_BYTES);
        const uint4 hi = *reinterpret_cast<const uint4 *>(w_hi + s * STEP_BYTES);
        uint4 xv[XV];
#pragma unroll
        for (int v = 0; v < XV; v++)
            xv[v] = g < m ? *reinterpret_cast<const uint4 *>(x_row + s * STEP * 2 + 16 * v) : make_uint4(0, 0, 0, 0);
        const uint32_t *xw = reinterpret_cast<const uint32_t *>(xv);
        int4_zero z_lo = {}, z_hi = {};
        uint32_t sz_lo = 0, sz_hi = 0;
        if constexpr (FMT == K_QUANT_INT4) {
            sz_lo = sz_s[g * n_steps + s], sz_hi = sz_s[(g + 8) * n_steps + s];
            z_lo = int4_zero_of(sz_lo), z_hi = int4_zero_of(sz_hi);
        }
        float part[4] = {};
#pragma unroll
        for (int j = 0; j < MMAS; j++) {
            uint32_t a[4];
            a_fragment<FMT>(a, lo, hi, j, z_lo, z_hi);
            const uint32_t b[2] = {xw[2 * j], xw[2 * j + 1]};
            mma_16816(FMT == K_QUANT_INT8 ? acc[0][0] : part, a, b);
        }
        if constexpr (FMT == K_QUANT_INT4) {
            const float sc_lo = __low2float(as_half2(sz_lo)), sc_hi = __low2float(as_half2(sz_hi));
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[0][0][e] += (e < 2 ? sc_lo : sc_hi) * part[e];
        }
    }

    float sum[1][PER];
    tile_sums<WARPS, 1, 1>(acc, sum, nullptr, nullptr); // one block a tile: no split-K
#pragma unroll
    for (int q = 0; q < PER; q++) {
        const int i = threadIdx.x + q * THREADS;
        if (i >= 128)
            continue;
        const int ln = i % 32, e = (i / 32) % 4;
        const int row = r0 + ln / 4 + (e >= 2 ? 8 : 0), token = 2 * (ln % 4) + (e & 1);
        if (token >= m || row >= n)
            continue;
        float v = sum[0][q];
        if (FMT == K_QUANT_INT8)
            v *= __half2float(scales[row]);
        if (bias)
            v += __half2float(bias[row]);
        if (EPI == K_LINEAR_GELU)
            v = gelu_tanh(v);
        y[(size_t)token * n + row] = __float2half(v);
    }
#endif
}

template <int FMT, int EPI>
cudaError_t launch(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias, int m,
                   int k, int n, cudaStream_t stream)
{
    static bool sized = false; // the most dynamic shared memory, once per kernel
    if (!sized) {
        const cudaError_t e = cudaFuncSetAttribute(linear_quant_resident_kernel<FMT, EPI>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, MAX_SMEM);
        if (e != cudaSuccess)
            return e;
        sized = true;
    }
    const dim3 grid((n + TILE_ROWS - 1) / TILE_ROWS);
    return fk_launch(linear_quant_resident_kernel<FMT, EPI>, grid, dim3(THREADS), layout_of(FMT, m, k).bytes, stream, y,
                     x, wq, scales, bias, m, k, n, fk_pdl_release_early);
}

template <int FMT>
cudaError_t launch_epilogue(__half *y, const __half *x, const uint8_t *wq, const __half *scales, const __half *bias,
                            int m, int k, int n, int epilogue, cudaStream_t stream)
{
    switch (epilogue) {
    case K_LINEAR_PLAIN: return launch<FMT, K_LINEAR_PLAIN>(y, x, wq, scales, bias, m, k, n, stream);
    case K_LINEAR_GELU: return launch<FMT, K_LINEAR_GELU>(y, x, wq, scales, bias, m, k, n, stream);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" cudaError_t k_linear_quant_resident_available(int *available)
{
    static int ok = -1;
    if (ok < 0) {
        cudaFuncAttributes attr;
        cudaError_t e = cudaFuncGetAttributes(&attr, linear_quant_resident_kernel<K_QUANT_INT8, K_LINEAR_PLAIN>);
        int device = 0, major = 0;
        if (e == cudaSuccess)
            e = cudaGetDevice(&device);
        if (e == cudaSuccess)
            e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
        if (e != cudaSuccess)
            return e;
        ok = major >= 9 && attr.ptxVersion >= 90;
    }
    *available = ok;
    return cudaSuccess;
}

extern "C" int k_linear_quant_resident_fits(int format, int m, int k, int n, int epilogue, int n_sms)
{
    const int step = format == K_QUANT_INT8 ? step_k<K_QUANT_INT8>() : step_k<K_QUANT_INT4>();
    return m >= 1 && m <= 8 && n >= 1 && k >= step && k % step == 0 &&
           (epilogue == K_LINEAR_PLAIN || epilogue == K_LINEAR_GELU) && (n + TILE_ROWS - 1) / TILE_ROWS <= n_sms &&
           layout_of(format, m, k).bytes <= (unsigned)MAX_SMEM;
}

extern "C" cudaError_t k_linear_quant_resident(void *y, const void *x, const void *data, const void *scales,
                                               const void *bias, int format, int m, int k, int n, int epilogue,
                                               cudaStream_t stream)
{
    if (m <= 0 || n <= 0)
        return cudaSuccess;
    if (m > 8 || k <= 0 || k % (format == K_QUANT_INT8 ? 64 : GROUP) ||
        layout_of(format, m, k).bytes > (unsigned)MAX_SMEM)
        return cudaErrorInvalidValue;
    __half *yh = (__half *)y;
    const __half *xh = (const __half *)x, *sh = (const __half *)scales, *bh = (const __half *)bias;
    const uint8_t *wq = (const uint8_t *)data;
    switch (format) {
    case K_QUANT_INT8: return launch_epilogue<K_QUANT_INT8>(yh, xh, wq, sh, bh, m, k, n, epilogue, stream);
    case K_QUANT_INT4: return launch_epilogue<K_QUANT_INT4>(yh, xh, wq, sh, bh, m, k, n, epilogue, stream);
    default: return cudaErrorInvalidValue;
    }
}
