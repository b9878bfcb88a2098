// common.cuh — shared by every kernel: error propagation, warp reductions, fp16 vector helpers, and the
// tensor-core building blocks (ldmatrix, mma) with a Turing (sm_75) path for the T4.
#ifndef FK_COMMON_CUH
#define FK_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

// Returns the launch error (configuration or earlier sticky error) to the caller.
#define FK_LAUNCH_CHECK() return cudaGetLastError()

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the block; every thread gets it. scratch: 32 floats of shared memory. Blocks of <= 1024 threads.
__device__ __forceinline__ float block_sum(float v, float *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads(); // scratch may still be read by a previous call
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < n_warps ? scratch[lane] : 0.0f;
    return warp_sum(v);
}

#ifdef FK_TRACE
// The kernel timeline of a -DFK_TRACE build (a diagnostic; trace.cu): block 0 of every kernel stamps the global
// timer before and after its wait, with its grid and block size, into the next record of a buffer (slot from an
// atomic counter in its first word, so records come in launch order). Without relocatable device code every
// translation unit has its own copy of the buffer's pointer; each registers a setter at load (trace.cu sets them).
void fk_trace_register(cudaError_t (*set)(unsigned long long *));
namespace {
__device__ unsigned long long *fk_trace_buf;
cudaError_t fk_trace_set(unsigned long long *p)
{
    return cudaMemcpyToSymbol(fk_trace_buf, &p, sizeof p);
}
struct fk_trace_registrar {
    fk_trace_registrar() { fk_trace_register(fk_trace_set); }
} fk_trace_registrar_here;
} // namespace
#define FK_TRACE_RECORDS (1u << 20)

__device__ __forceinline__ unsigned long long fk_globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif

// Programmatic dependent launch (Hopper): a kernel started by fk_launch may begin while the previous kernel on the
// stream is still running. It must call pdl_wait() before it reads anything earlier work wrote or writes anything
// earlier work reads (reading weights before it is fine); pdl_wait returns once the previous grid has completed
// and its memory is visible. pdl_launch_dependents() lets the next kernel be scheduled early (it then waits in its
// own pdl_wait). Both are no-ops below sm_90, where fk_launch never asks for early launch.
// A kernel lets its dependents start after its wait (pdl_wait_release below: a few release before it), so a kernel
// that runs knows that all work enqueued before the nearest earlier kernel that released after its wait (the
// previous kernel, unless that one released early) is complete and visible: it may read such data before its own
// wait too (the step's indices, uploaded before the pass's first kernel; earlier passes' KV). No block may return
// before its wait.
__device__ __forceinline__ void pdl_wait()
{
#ifdef FK_TRACE
    const bool first = (blockIdx.x | blockIdx.y | blockIdx.z | threadIdx.x) == 0;
    const unsigned long long t0 = first ? fk_globaltimer() : 0;
#endif
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
#ifdef FK_TRACE
    if (first && fk_trace_buf) {
        const unsigned long long t1 = fk_globaltimer();
        const unsigned slot = atomicAdd(reinterpret_cast<unsigned *>(fk_trace_buf), 1u);
        if (slot < FK_TRACE_RECORDS) {
            unsigned long long *r = fk_trace_buf + 1 + 4 * (size_t)slot;
            r[0] = t0;
            r[1] = t1;
            r[2] = gridDim.x | (unsigned long long)gridDim.y << 24 | (unsigned long long)gridDim.z << 48;
            r[3] = blockDim.x;
        }
    }
#endif
}

__device__ __forceinline__ void pdl_launch_dependents()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// pdl_wait and the release of the next kernel: after the wait, or with `early` before it. An early release lets the
// next kernel become resident (and load its first weights) while the previous kernel still runs; the caller decides
// where that is safe (k_pdl_release_early).
__device__ __forceinline__ void pdl_wait_release(bool early)
{
    if (early)
        pdl_launch_dependents();
    pdl_wait();
    if (!early)
        pdl_launch_dependents();
}

// Set by k_pdl_release_early (pdl.cu) for the launches of the calling thread: the kernels that take it (the small
// linears, add_rms_norm) release early.
extern thread_local bool fk_pdl_release_early;

// Set by k_pdl_configure (pdl.cu): the kernels were compiled for sm_90+ (so they contain pdl_wait) and the device
// honours early launch.
extern bool fk_pdl_enabled;

// kernel<<<grid, block, smem, stream>>>(args...), with early launch allowed when fk_pdl_enabled. Every kernel
// launched this way calls pdl_wait() before touching data that earlier kernels produce or consume.
template <typename... Params, typename... Args>
cudaError_t fk_launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                      Args... args)
{
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = fk_pdl_enabled ? &attr : nullptr;
    cfg.numAttrs = fk_pdl_enabled ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...);
}

// 2^x on the special-function unit, one instruction. exp2f is the same MUFU.EX2 for results of 2^-126 and up, plus
// ~4 instructions of denormal handling around it (and more for callers' -INFINITY tests: ex2 of -INFINITY is 0);
// softmax weights that small are zero anyway, so this flushes them to zero.
__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// A position's cache block and offset in it: shifts where the block size is a power of two (the engine's 16), else
// divisions. An integer division by a value known only at run time is ~20 instructions, and a chunk's loads take
// one per 16 bytes: in Nsight Compute's count they were most of decode attention's ~1,500 instructions a warp
// at bench-1b's batch 1, whose critical path is instruction latency (BENCHMARKS.md).
struct cache_blocks {
    int size, shift; // shift < 0: size is not a power of two
    __device__ int block(int pos) const { return shift >= 0 ? pos >> shift : pos / size; }
    __device__ int offset(int pos) const { return shift >= 0 ? pos & (size - 1) : pos % size; }
};

__device__ __forceinline__ cache_blocks cache_blocks_of(int block_size)
{
    return {block_size, (block_size & (block_size - 1)) == 0 ? __ffs(block_size) - 1 : -1};
}

// Row i's token of a pass's input ids: ids[i], or for a placeholder (ids[i] < 0, a token the previous pass sampled
// that the host does not know yet) sampled[-1 - ids[i]]. Read after the PDL wait: the sampling is the kernel before.
__device__ __forceinline__ int32_t token_of(const int32_t *ids, const int32_t *sampled, int i)
{
    const int32_t id = ids[i];
    return id < 0 ? sampled[-1 - id] : id;
}

// gelu_new / gelu_tanh(a) = 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))), fp32.
__device__ __forceinline__ float gelu_tanh(float a)
{
    return 0.5f * a * (1.0f + tanhf(0.7978845608028654f * (a + 0.044715f * a * a * a)));
}

// silu(g) u, fp32.
__device__ __forceinline__ float silu_mul(float g, float u)
{
    return g / (1.0f + __expf(-g)) * u;
}

// Bytes the L2 fetches from DRAM around each streamed 16-byte load below (ld's L2::128B / L2::256B prefetch size;
// 0: none), sm_80+. A warp's load in the small linears covers 64 bytes of each of 16 rows of W, whose next 64 bytes
// the next load asks for; with the hint the L2 has them already. 128 took bench-1b's batch-1 decode on an H100 from
// 1,586 to 1,622 tokens/s (INT8) and 1,158 to 1,195 (fp16), INT4 +0.8 %; 256 was between (BENCHMARKS.md, 2026-12-06).
#ifndef FK_STREAM_PREFETCH
#define FK_STREAM_PREFETCH 128
#endif
#if FK_STREAM_PREFETCH == 256
#define FK_STREAM_L2 ".L2::256B"
#elif FK_STREAM_PREFETCH == 128
#define FK_STREAM_L2 ".L2::128B"
#else
#define FK_STREAM_L2 ""
#endif

// 16 bytes read once (weights streamed past the caches: they are not read again this step).
__device__ __forceinline__ uint4 load_stream16(const void *p)
{
    uint4 v;
#if __CUDA_ARCH__ >= 800
    asm volatile("ld.global.nc.L1::no_allocate" FK_STREAM_L2 ".v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
#else
    v = __ldcs(reinterpret_cast<const uint4 *>(p));
#endif
    return v;
}

// load_stream16 for the loads a kernel issues before its pdl_wait: a relaxed (strong) load, which ptxas keeps ahead
// of griddepcontrol.wait. It may move weak loads such as load_stream16's (and __ldg's) below the wait, which is legal
// (they would read the same weights) but undoes the early start: linear_quant.cu's SASS had the wait first, then
// every load, and bench-1b batch 1 ran 9 % (INT8) and 4 % (INT4) slower for it (BENCHMARKS.md). linear_small.cu's
// loads stay ahead as weak loads, and strong ones made its fp16 step 1 % slower, so it keeps load_stream16.
// tests/gpu/check_wait_order.py checks the order in both kernels' SASS.
__device__ __forceinline__ uint4 load_early16(const void *p)
{
#if __CUDA_ARCH__ >= 900
    uint4 v;
    asm volatile("ld.relaxed.gpu.global.L1::no_allocate" FK_STREAM_L2 ".v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
#else
    return load_stream16(p); // no early launch below sm_90: nothing to keep ahead of
#endif
}

// The same for 4 bytes (a row's INT4 scale and zero point).
__device__ __forceinline__ uint32_t load_early4(const uint32_t *p)
{
#if __CUDA_ARCH__ >= 900
    uint32_t v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
    return v;
#else
    return __ldg(p);
#endif
}

// 8 halves <-> 16 bytes.
union half8 {
    uint4 u;
    __half2 h2[4];
};

// ---- tensor-core helpers (mma.sync m16n8k16 layouts; see PTX ISA "Matrix Fragments for mma.m16n8k16") ----

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// Four 8x8 b16 matrices; thread i gives the row address for matrix i / 8, row i % 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(row)));
}

// c[16x8] += a[16x16] b[16x8], fp16 inputs, fp32 accumulators. Turing has only m16n8k8: two of them.
__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], const uint32_t b[2])
{
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]));
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[2]), "r"(a[3]), "r"(b[1]));
#endif
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

// 16 bytes global -> shared; asynchronous on sm_80+ (wait with cp_async_wait_all), plain on Turing.
__device__ __forceinline__ void copy16_async(void *smem, const void *gmem)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
#else
    *reinterpret_cast<uint4 *>(smem) = *reinterpret_cast<const uint4 *>(gmem);
#endif
}

#if __CUDA_ARCH__ >= 800
// 16 bytes global -> shared at a shared-window address, or 16 zero bytes when !valid (src is then not read). Only
// where cp.async exists (sm_80+): the pointer form below also has Turing's path.
__device__ __forceinline__ void copy16_async_or_zero(uint32_t smem, const void *gmem, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(valid ? 16 : 0));
}
#endif

// The same at a pointer into shared memory, and on Turing a plain copy (or zeros).
__device__ __forceinline__ void copy16_async_or_zero(void *smem, const void *gmem, bool valid)
{
#if __CUDA_ARCH__ >= 800
    copy16_async_or_zero(smem_addr(smem), gmem, valid);
#else
    *reinterpret_cast<uint4 *>(smem) = valid ? *reinterpret_cast<const uint4 *>(gmem) : make_uint4(0, 0, 0, 0);
#endif
}

// 4 bytes likewise (cached in L1: small data read by many blocks).
__device__ __forceinline__ void copy4_async_or_zero(void *smem, const void *gmem, bool valid)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
                 "r"(valid ? 4 : 0));
#else
    *reinterpret_cast<uint32_t *>(smem) = valid ? *reinterpret_cast<const uint32_t *>(gmem) : 0u;
#endif
}

__device__ __forceinline__ void cp_async_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most n committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

#endif
