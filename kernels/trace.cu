// trace.cu — the kernel timeline of a -DFK_TRACE build (a diagnostic, compiled out of every normal build): block 0
// of each kernel stamps %globaltimer before and after its pdl_wait (common.cuh), so a decode step replayed from its
// graph, with programmatic dependent launch on, shows when each kernel started and when its input was ready (when
// the previous kernel completed). The backend starts it when FK_TRACE_FILE is set and writes that file when it is
// destroyed; kernels/bench/trace_report.py turns it into a table per kernel of a step.
#include <stdio.h>
#include <stdlib.h>

#include "common.cuh"
#include "kernels.h"

#ifdef FK_TRACE
static cudaError_t (*setters[64])(unsigned long long *); // one per translation unit (static constructors: zero first)
static int n_setters;
static unsigned long long *trace_buf; // [0]: records written (low 32 bits); then 4 words a record

void fk_trace_register(cudaError_t (*set)(unsigned long long *))
{
    if (n_setters < 64)
        setters[n_setters++] = set;
}

extern "C" cudaError_t k_trace_start(void)
{
    cudaError_t e;
    const size_t bytes = (1 + 4 * (size_t)FK_TRACE_RECORDS) * sizeof(unsigned long long);
    if (!trace_buf && ((e = cudaMalloc(&trace_buf, bytes)) != cudaSuccess || (e = cudaMemset(trace_buf, 0, bytes))))
        return e;
    for (int i = 0; i < n_setters; i++)
        if ((e = setters[i](trace_buf)) != cudaSuccess)
            return e;
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t k_trace_write(const char *path)
{
    if (!trace_buf)
        return cudaSuccess;
    cudaError_t e;
    unsigned long long n;
    if ((e = cudaDeviceSynchronize()) != cudaSuccess ||
        (e = cudaMemcpy(&n, trace_buf, sizeof n, cudaMemcpyDeviceToHost)) != cudaSuccess)
        return e;
    n &= 0xffffffffull;
    n = n < FK_TRACE_RECORDS ? n : FK_TRACE_RECORDS;
    unsigned long long *host = (unsigned long long *)malloc((4 * n + 1) * sizeof *host);
    if (!host)
        return cudaErrorMemoryAllocation;
    e = cudaMemcpy(host, trace_buf + 1, 4 * n * sizeof *host, cudaMemcpyDeviceToHost);
    FILE *f = e == cudaSuccess ? fopen(path, "w") : NULL;
    for (unsigned long long i = 0; f && i < n; i++) {
        const unsigned long long *r = host + 4 * i, g = r[2];
        fprintf(f, "%llu %llu %llu %llu %llu %llu\n", r[0], r[1], g & 0xffffff, (g >> 24) & 0xffffff, g >> 48, r[3]);
    }
    if (e == cudaSuccess && (!f || fclose(f) != 0))
        e = cudaErrorUnknown;
    free(host);
    return e;
}
#else
extern "C" cudaError_t k_trace_start(void)
{
    return cudaErrorNotSupported; // no stamps in these kernels: build with -Dcuda_args=-DFK_TRACE
}

extern "C" cudaError_t k_trace_write(const char *)
{
    return cudaSuccess;
}
#endif
