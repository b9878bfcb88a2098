// Archived experiment of the sixth session's call 1 (BENCHMARKS.md, "The step's ends"): not built, not in the tree.
// It sat in kernels/ with k_l2_ranges { const void *ptr[8]; size_t bytes[8]; int n; } in kernels.h; a backend op
// prefetch(b, ptrs, bytes, n) launched it (capped at FK_L2_PREFETCH_MB or half the L2, sm_90 only), and
// model_forward's layer_in called it after rope_store_kv at <= 16 tokens with the weights FK_L2_PREFETCH picked
// (1 o, 2 gate|up, 4 down, 8 the next layer's q|k|v: data and scales). Slower everywhere; reverted.
// prefetch_l2.cu — weights a pass will stream soon, requested into L2 while the memory would otherwise idle: at a
// few tokens, decode attention and the small kernels around it are latency-bound, so the linears after them can read
// their weights from L2 instead of DRAM. Hopper's bulk prefetch (cp.async.bulk.prefetch.L2: no destination, nothing
// waits for it) covers a chunk per instruction; the ranges are cut into chunks spread over the grid's threads, so
// that many SMs' copy engines issue them. Below sm_90 the kernel only keeps the PDL chain (the backend does not
// launch it there). A hint: no result depends on it.
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr size_t CHUNK = 16384; // bytes per prefetch instruction
constexpr int THREADS = 32, MAX_BLOCKS = 1024;

__global__ void prefetch_l2_kernel(k_l2_ranges r)
{
#if __CUDA_ARCH__ >= 900
    // Weights are no kernel's output: requested before the wait, while the previous kernel runs.
    const size_t threads = (size_t)gridDim.x * THREADS;
    size_t c = (size_t)blockIdx.x * THREADS + threadIdx.x; // chunk index within range i
    for (int i = 0; i < r.n; i++) {
        const size_t chunks = (r.bytes[i] + CHUNK - 1) / CHUNK;
        for (; c < chunks; c += threads) {
            const size_t at = c * CHUNK, left = r.bytes[i] - at;
            const unsigned size = (unsigned)((left < CHUNK ? left : CHUNK) & ~(size_t)15);
            if (size)
                asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(
                                 static_cast<const char *>(r.ptr[i]) + at),
                             "r"(size)
                             : "memory");
        }
        c -= chunks;
    }
#endif
    pdl_wait(); // no block leaves before the previous kernel is complete (common.cuh)
    pdl_launch_dependents();
}

} // namespace

extern "C" cudaError_t k_prefetch_l2(const k_l2_ranges *ranges, cudaStream_t stream)
{
    if (ranges->n < 0 || ranges->n > K_L2_RANGES)
        return cudaErrorInvalidValue;
    size_t chunks = 0;
    for (int i = 0; i < ranges->n; i++) {
        if ((uintptr_t)ranges->ptr[i] % 16)
            return cudaErrorInvalidValue;
        chunks += (ranges->bytes[i] + CHUNK - 1) / CHUNK;
    }
    if (chunks == 0)
        return cudaSuccess;
    const size_t blocks = (chunks + THREADS - 1) / THREADS;
    return fk_launch(prefetch_l2_kernel, (unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS), THREADS, 0, stream,
                     *ranges);
}
