// gelu_tanh.cu — GPT-2's gelu_new in place: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), fp32 math.
#include "common.cuh"
#include "kernels.h"

__global__ void gelu_tanh_kernel(__half *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float a = __half2float(x[i]);
        x[i] = __float2half(0.5f * a * (1.0f + tanhf(0.7978845608028654f * (a + 0.044715f * a * a * a))));
    }
}

extern "C" cudaError_t k_gelu_tanh(void *x, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    const int blocks = (int)((n + 255) / 256 < 65535 ? (n + 255) / 256 : 65535);
    gelu_tanh_kernel<<<blocks, 256, 0, stream>>>((__half *)x, n);
    FK_LAUNCH_CHECK();
}
