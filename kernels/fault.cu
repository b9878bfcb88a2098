// fault.cu — the fault-injection test hook (RELIABILITY.md row 40): a kernel that writes to an address no allocation
// covers, which leaves the CUDA context with a sticky error exactly as a real illegal access would.
#include "common.cuh"
#include "kernels.h"

__global__ void fault_kernel(int *p)
{
    *p = 1;
}

extern "C" cudaError_t k_inject_fault(cudaStream_t stream)
{
    fault_kernel<<<1, 1, 0, stream>>>(reinterpret_cast<int *>(16)); // the first page is never mapped
    FK_LAUNCH_CHECK();
}
