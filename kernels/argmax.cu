// argmax.cu — greedy sampling on the device: one block per row, first index on ties (as torch.argmax), so only
// token ids cross to the host.
#include "common.cuh"
#include "kernels.h"

__global__ void argmax_kernel(int32_t *tokens, const __half *logits, int vocab)
{
    const __half *row = logits + (size_t)blockIdx.x * vocab;
    float best = -INFINITY;
    int best_i = vocab; // past the end: loses to any real index
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
        float v = __half2float(row[i]);
        if (v > best || (v == best && i < best_i))
            best = v, best_i = i;
    }
    __shared__ float s_val[32];
    __shared__ int s_idx[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float v = __shfl_xor_sync(0xffffffffu, best, o);
        int i = __shfl_xor_sync(0xffffffffu, best_i, o);
        if (v > best || (v == best && i < best_i))
            best = v, best_i = i;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        s_val[warp] = best, s_idx[warp] = best_i;
    __syncthreads();
    if (warp == 0) {
        const int n_warps = blockDim.x >> 5;
        best = lane < n_warps ? s_val[lane] : -INFINITY;
        best_i = lane < n_warps ? s_idx[lane] : vocab;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float v = __shfl_xor_sync(0xffffffffu, best, o);
            int i = __shfl_xor_sync(0xffffffffu, best_i, o);
            if (v > best || (v == best && i < best_i))
                best = v, best_i = i;
        }
        if (lane == 0)
            tokens[blockIdx.x] = best_i < vocab ? best_i : 0; /* all NaN: token 0 */
    }
}

extern "C" cudaError_t k_argmax(int32_t *tokens, const void *logits, int n_rows, int vocab, cudaStream_t stream)
{
    if (n_rows <= 0)
        return cudaSuccess;
    argmax_kernel<<<n_rows, 256, 0, stream>>>(tokens, (const __half *)logits, vocab);
    FK_LAUNCH_CHECK();
}
