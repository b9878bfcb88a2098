/* cuda_gemm_gelu.h — y = gelu_tanh(x W^T + bias) as one cuBLASLt matmul with the GELU_BIAS epilogue (the other
 * of the two ways backend_cuda.c offers for GPT-2's first MLP linear; the first is cuBLAS plus k_bias_gelu).
 * Matmul plans (descriptors, layouts, the heuristic's algorithm) are cached per shape and pointer alignment, so a
 * repeated shape costs no heuristic query and the call can be captured into a CUDA graph. */
#ifndef FK_CUDA_GEMM_GELU_H
#define FK_CUDA_GEMM_GELU_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "error.h"

typedef struct gemm_gelu gemm_gelu;

/* workspace: device memory of workspace_bytes that cuBLASLt may use (ordered on the caller's stream). */
fk_status gemm_gelu_create(gemm_gelu **out, void *workspace, size_t workspace_bytes, fk_error *err);
void gemm_gelu_destroy(gemm_gelu *g);

/* y[n][out] = gelu_tanh(x[n][in] W[out][in]^T + bias[out]) in fp16 with fp32 accumulation (bias may be NULL). */
fk_status gemm_gelu_run(gemm_gelu *g, cudaStream_t stream, void *y, const void *x, const void *w, const void *bias,
                        int n, int in, int out, fk_error *err);

#endif
