// pdl.cu — the switch for programmatic dependent launch (common.cuh's fk_launch): on only where the device is sm_90+
// and our kernels were compiled for it (a compute_75 PTX build JIT-compiled on a Hopper has no pdl_wait in its
// kernels, so early launch there would race).
#include "common.cuh"
#include "kernels.h"

bool fk_pdl_enabled = false;
thread_local bool fk_pdl_release_early = false;

static __global__ void pdl_probe_kernel() {}

extern "C" cudaError_t k_pdl_configure(int enable, int *enabled)
{
    fk_pdl_enabled = false;
    *enabled = 0;
    if (!enable)
        return cudaSuccess;
    int device, major;
    cudaFuncAttributes attr;
    cudaError_t e;
    if ((e = cudaGetDevice(&device)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) != cudaSuccess ||
        (e = cudaFuncGetAttributes(&attr, pdl_probe_kernel)) != cudaSuccess)
        return e;
    fk_pdl_enabled = major >= 9 && attr.ptxVersion >= 90;
    *enabled = fk_pdl_enabled;
    return cudaSuccess;
}

extern "C" void k_pdl_release_early(int early)
{
    fk_pdl_release_early = early != 0;
}
