/* cuda_gemm_lt.h — y = epilogue(x W^T + bias) as one cuBLASLt matmul: the bias add (QKV and every other biased
 * linear above the small-batch kernel's range) and GPT-2's GELU(+bias) fused into the GEMM instead of a second pass
 * over its output (the other way backend_cuda.c offers for GELU is cuBLAS plus k_bias_gelu). Matmul plans
 * (descriptors, layouts, the heuristic's algorithm) are cached per shape, epilogue and pointer alignment, so a
 * repeated shape costs no heuristic query and the call can be captured into a CUDA graph. */
#ifndef FK_CUDA_GEMM_LT_H
#define FK_CUDA_GEMM_LT_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "error.h"

typedef struct gemm_lt gemm_lt;

typedef enum gemm_lt_epilogue {
    GEMM_LT_BIAS, /* + bias (bias required) */
    GEMM_LT_GELU, /* gelu_tanh(. + bias), bias optional */
} gemm_lt_epilogue;

/* workspace: device memory of workspace_bytes that cuBLASLt may use (ordered on the caller's stream). */
fk_status gemm_lt_create(gemm_lt **out, void *workspace, size_t workspace_bytes, fk_error *err);
void gemm_lt_destroy(gemm_lt *g);

/* y[n][out] = epilogue(x[n][in] W[out][in]^T + bias[out]) in fp16 with fp32 accumulation. */
fk_status gemm_lt_run(gemm_lt *g, cudaStream_t stream, void *y, const void *x, const void *w, const void *bias, int n,
                      int in, int out, gemm_lt_epilogue epilogue, fk_error *err);

#endif
