// tensor_map.cuh — host side of TMA (the Hopper tensor memory accelerator): the driver's cuTensorMapEncodeTiled,
// looked up once per file that includes this, and the 2-D tensor maps the TMA kernels load their boxes through
// (linear_wgmma.cu: fp16 W and x; linear_quant_wgmma.cu: packed INT8 / INT4 W as bytes, fp16 x).
#ifndef FK_TENSOR_MAP_CUH
#define FK_TENSOR_MAP_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

namespace {

PFN_cuTensorMapEncodeTiled_v12000 tma_encode_tiled; // the driver's encoder, looked up once

// cudaErrorNotSupported where the driver has no tensor maps.
cudaError_t tma_find_encoder()
{
    if (tma_encode_tiled)
        return cudaSuccess;
    cudaDriverEntryPointQueryResult found;
    void *fn = nullptr;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    if (e != cudaSuccess)
        return e;
    if (found != cudaDriverEntryPointSuccess || !fn)
        return cudaErrorNotSupported;
    tma_encode_tiled = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    return cudaSuccess;
}

// A tensor map of a row-major matrix [rows][cols] of `type` elements (fp16 or bytes; each row 16-byte aligned),
// boxes of box_rows x box_cols, swizzled as asked. Boxes past the edges arrive with zeros there.
cudaError_t tma_map_2d(CUtensorMap *map, CUtensorMapDataType type, const void *p, int rows, int cols, int box_cols,
                       int box_rows, CUtensorMapSwizzle swizzle)
{
    cudaError_t e = tma_find_encoder();
    if (e != cudaSuccess)
        return e;
    const cuuint64_t elem = type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 ? 2 : 1;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)cols * elem};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows}, step[2] = {1, 1};
    const CUresult r = tma_encode_tiled(map, type, 2, const_cast<void *>(p), dims, strides, box, step,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

} // namespace

#endif
