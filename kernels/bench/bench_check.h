/* bench_check.h — the benchmark programs' checks: a failed CUDA or cuBLAS call prints where and why and ends the
 * program (these are tools, not library code: there is nothing to hand an error back to). */
#ifndef FK_BENCH_CHECK_H
#define FK_BENCH_CHECK_H

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                                \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        if (e_ != cudaSuccess) {                                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));                 \
            exit(1);                                                                                               \
        }                                                                                                          \
    } while (0)

/* For programs that include cublas_v2.h first. */
#define BLAS(call)                                                                                                 \
    do {                                                                                                           \
        cublasStatus_t s_ = (call);                                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                         \
            fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, (int)s_);                  \
            exit(1);                                                                                               \
        }                                                                                                          \
    } while (0)

#endif
