// dequant.cu — rows of a quantized weight (src/quant.h's layouts) back to fp16, for the linears of more tokens than
// the small-batch kernel takes: the backend dequantizes into a scratch buffer that cuBLAS then reads. Each thread
// makes 8 consecutive values of a row (one INT4 word, 8 INT8 bytes), (q - z) s or q s in fp32 (exact) rounded to
// fp16, and stores them as one 16-byte vector where the row is made of whole vectors.
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int GROUP = 128;

template <int FMT>
__global__ void dequant_kernel(__half *__restrict__ out, const uint8_t *__restrict__ data,
                               const __half *__restrict__ scales, int row0, int n_rows, int cols)
{
    pdl_wait(); // out may still be read by the kernel before (the GEMM of the previous chunk)
    pdl_launch_dependents();
    const int per_row = (cols + 7) / 8;
    const size_t total = (size_t)n_rows * per_row;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const int r = (int)(i / per_row), c0 = (int)(i % per_row) * 8;
        const size_t row = (size_t)row0 + r;
        __half *dst = out + (size_t)r * cols + c0;
        half8 v;
        if (FMT == K_QUANT_INT4) { // nibble i of the word is k 2i, nibble 4 + i is k 2i + 1
            const uint32_t word = reinterpret_cast<const uint32_t *>(data)[(row * cols + c0) / 8];
            const size_t grp = row * (cols / GROUP) + c0 / GROUP;
            const float s = __half2float(scales[2 * grp]), z = __half2float(scales[2 * grp + 1]);
#pragma unroll
            for (int p = 0; p < 4; p++)
                v.h2[p] = __floats2half2_rn((((word >> (4 * p)) & 15) - z) * s,
                                            (((word >> (4 * p + 16)) & 15) - z) * s);
            *reinterpret_cast<uint4 *>(dst) = v.u;
            continue;
        }
        const float s = __half2float(scales[row]);
        const int8_t *q = reinterpret_cast<const int8_t *>(data) + row * cols + c0;
        if (cols % 8 == 0) {
            const uint2 b = *reinterpret_cast<const uint2 *>(q);
#pragma unroll
            for (int p = 0; p < 4; p++) {
                const uint32_t word = p < 2 ? b.x : b.y;
                const int lo = (int8_t)(word >> (16 * (p % 2))), hi = (int8_t)(word >> (16 * (p % 2) + 8));
                v.h2[p] = __floats2half2_rn(lo * s, hi * s);
            }
            *reinterpret_cast<uint4 *>(dst) = v.u;
        } else {
            for (int e = 0; e < 8 && c0 + e < cols; e++)
                dst[e] = __float2half(q[e] * s);
        }
    }
}

} // namespace

extern "C" cudaError_t k_dequant(void *out, const void *data, const void *scales, int format, int row0, int n_rows,
                                 int cols, cudaStream_t stream)
{
    if (n_rows <= 0)
        return cudaSuccess;
    if (row0 < 0 || cols <= 0 || (format == K_QUANT_INT4 && cols % GROUP))
        return cudaErrorInvalidValue;
    const size_t total = (size_t)n_rows * ((cols + 7) / 8);
    const dim3 grid((unsigned)(total < 256 * 8192 ? (total + 255) / 256 : 8192)), block(256);
    __half *o = (__half *)out;
    const uint8_t *d = (const uint8_t *)data;
    const __half *s = (const __half *)scales;
    switch (format) {
    case K_QUANT_INT8:
        return fk_launch(dequant_kernel<K_QUANT_INT8>, grid, block, 0, stream, o, d, s, row0, n_rows, cols);
    case K_QUANT_INT4:
        return fk_launch(dequant_kernel<K_QUANT_INT4>, grid, block, 0, stream, o, d, s, row0, n_rows, cols);
    default: return cudaErrorInvalidValue;
    }
}
