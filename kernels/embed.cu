// embed.cu — token embedding gather (+ learned positions for GPT-2). One block per token. A negative id stands for
// the token the previous pass sampled from logits row -1 - id (the overlapped step's input, which the host does not
// know yet), read here rather than copied into the ids by a kernel of its own. Rows of whole 16-byte pieces (width a
// multiple of 8, aligned buffers) move a piece at a time, each thread's loads (up to BATCH pieces of the row, and of
// the position row) in flight together before its stores: one round trip to memory per BATCH x 128 pieces. (Element
// by element, each store kept the next load waiting: a 2,048-wide row took 16 round trips.)
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int THREADS = 128, BATCH = 4;

__global__ void embed_kernel(__half *__restrict__ out, const __half *__restrict__ tok, const int32_t *__restrict__ ids,
                             const int32_t *__restrict__ sampled, const __half *__restrict__ pos,
                             const int32_t *__restrict__ positions, int d, bool vec)
{
    pdl_wait();
    pdl_launch_dependents();
    const int i = blockIdx.x;
    const __half *t = tok + (size_t)token_of(ids, sampled, i) * d;
    const __half *p = pos ? pos + (size_t)positions[i] * d : nullptr;
    __half *o = out + (size_t)i * d;
    if (!vec) {
        for (int j = threadIdx.x; j < d; j += THREADS)
            o[j] = p ? __float2half(__half2float(t[j]) + __half2float(p[j])) : t[j];
        return;
    }
    const int pieces = d / 8;
    for (int j0 = threadIdx.x; j0 < pieces; j0 += BATCH * THREADS) {
        half8 a[BATCH], b[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; u++) {
            const int j = j0 + u * THREADS;
            if (j < pieces) {
                a[u].u = reinterpret_cast<const uint4 *>(t)[j];
                if (p)
                    b[u].u = reinterpret_cast<const uint4 *>(p)[j];
            }
        }
#pragma unroll
        for (int u = 0; u < BATCH; u++) {
            const int j = j0 + u * THREADS;
            if (j >= pieces)
                continue;
            if (p)
#pragma unroll
                for (int h = 0; h < 4; h++) {
                    const float2 x = __half22float2(a[u].h2[h]), y = __half22float2(b[u].h2[h]);
                    a[u].h2[h] = __floats2half2_rn(x.x + y.x, x.y + y.y);
                }
            reinterpret_cast<uint4 *>(o)[j] = a[u].u;
        }
    }
}

} // namespace

extern "C" cudaError_t k_embed(void *out, const void *tok, const int32_t *ids, const int32_t *sampled,
                               const void *pos, const int32_t *positions, int n, int d, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    const bool vec = d % 8 == 0 && (uintptr_t)out % 16 == 0 && (uintptr_t)tok % 16 == 0 && (uintptr_t)pos % 16 == 0;
    return fk_launch(embed_kernel, n, THREADS, 0, stream, (__half *)out, (const __half *)tok, ids, sampled,
                     (const __half *)pos, positions, d, vec);
}
