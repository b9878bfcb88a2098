// silu_mul.cu — SwiGLU's activation: out[n][f] = silu(gate) * up, gate_up[n] = [gate (f) | up (f)], fp32 math.
// Rows whose width is a multiple of 8 (every model's) go 16 bytes per thread, one row per grid row; others one
// element per thread.
#include "common.cuh"
#include "kernels.h"

// grid: (pieces of 8 columns / blockDim.x, rows, at most 65,535: grid rows then loop).
__global__ void silu_mul_vec_kernel(__half *out, const __half *gate_up, int n, int f)
{
    pdl_wait();
    pdl_launch_dependents();
    const int c = 8 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= f)
        return;
    for (int row = blockIdx.y; row < n; row += gridDim.y) {
        half8 g, u, y;
        g.u = *reinterpret_cast<const uint4 *>(gate_up + (size_t)row * 2 * f + c);
        u.u = *reinterpret_cast<const uint4 *>(gate_up + (size_t)row * 2 * f + f + c);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 a = __half22float2(g.h2[i]), b = __half22float2(u.h2[i]);
            y.h2[i] = __floats2half2_rn(silu_mul(a.x, b.x), silu_mul(a.y, b.y));
        }
        *reinterpret_cast<uint4 *>(out + (size_t)row * f + c) = y.u;
    }
}

__global__ void silu_mul_kernel(__half *out, const __half *gate_up, int f, size_t total)
{
    pdl_wait();
    pdl_launch_dependents();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t row = i / f, col = i % f;
        const float g = __half2float(gate_up[row * 2 * f + col]), u = __half2float(gate_up[row * 2 * f + f + col]);
        out[i] = __float2half(silu_mul(g, u));
    }
}

extern "C" cudaError_t k_silu_mul(void *out, const void *gate_up, int n, int f, cudaStream_t stream)
{
    const size_t total = (size_t)n * f;
    if (total == 0)
        return cudaSuccess;
    if (f % 8 == 0) {
        const int pieces = f / 8, threads = pieces < 256 ? (pieces + 31) / 32 * 32 : 256;
        const dim3 grid((pieces + threads - 1) / threads, n < 65535 ? n : 65535);
        return fk_launch(silu_mul_vec_kernel, grid, dim3(threads), 0, stream, (__half *)out, (const __half *)gate_up,
                         n, f);
    }
    const int blocks = (int)((total + 255) / 256 < 65535 ? (total + 255) / 256 : 65535);
    return fk_launch(silu_mul_kernel, blocks, 256, 0, stream, (__half *)out, (const __half *)gate_up, f, total);
}
