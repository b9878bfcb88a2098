// bench_linear.cu — the small-batch linear (k_linear_small, version 0, linked) against cuBLAS (cublasGemmEx as
// backend_cuda.c calls it) on the linears of GPT-2 124M and Llama-3.2-1B (each with a 50,257-token head, as GPT-2 and
// bench-1b have) and Llama-3-8B, at m = 1 .. 64 tokens and at 128 and 256 (ours in passes of 64 tokens, as the backend
// runs it on heads whose rows cuBLAS cannot take aligned), with the epilogue each layer uses (bias, GELU, SiLU·mul);
// for the heads also cuBLAS on W's rows padded to a multiple of 8, y's rows packed by a 2-D copy (RESULT cublas_padded
// lines). On a Hopper also the wgmma linear (k_linear_wgmma) at m <= 64: the table's column with its chosen splits and
// default stages, RESULT linear_wgmma lines with 4 and 8 stages and half and twice the splits (FK_BENCH_M narrows the
// token counts to one, FK_BENCH_ONLY the shapes). Bytes counted: W once (also where passes read it more often), plus x
// and y. Then the quantized small-batch linear (k_linear_quant, INT8 and INT4) on the same shapes at m = 1, 4, 8, 16,
// bytes counted: the packed weights and their scales once, plus x and y, beside the fp16 times. Each variant is
// recorded 32 times into a CUDA graph cycling through copies of W that together exceed the L2 cache (so every call
// reads W from DRAM, as a decode step does), with programmatic dependent launch between our calls as the model's decode
// graphs have it; median of 15 replays / 32. The copy bandwidth (bytes read + written by a 2 GiB device-to-device copy)
// is the ceiling the targets are stated against.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "bench_check.h"
#include "kernels.h"

constexpr int CALLS = 32;

static __global__ void fill_random(__half *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed;
        x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15;
        p[i] = __float2half(((x & 0xffff) / 32768.0f - 1.0f) * 0.05f);
    }
}

static __half *random_halves(size_t n, unsigned seed)
{
    __half *p;
    CHECK(cudaMalloc(&p, n * sizeof(__half)));
    fill_random<<<1024, 256>>>(p, n, seed);
    CHECK(cudaGetLastError());
    return p;
}

// Random packed values (any bytes are valid codes).
static __global__ void fill_bytes(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed;
        x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15;
        p[i] = (uint8_t)x;
    }
}

// Scales of a quantized weight: INT8 n_scales fp16 scales; INT4 (scale, zero) pairs, zeros 0..15.
static __global__ void fill_scales(__half *p, size_t n_scales, bool pairs)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n_scales; i += (size_t)gridDim.x * blockDim.x)
        if (pairs)
            p[2 * i] = __float2half(1e-3f * (1 + i % 7)), p[2 * i + 1] = __float2half((float)(i % 16));
        else
            p[i] = __float2half(1e-4f * (1 + i % 7));
}

// A quantized weight of rows x k in device memory, src/quant.h's layout: INT8 a byte per weight and an fp16 scale
// per row, INT4 half a byte per weight and an fp16 (scale, zero) pair per row and 128 inputs.
struct qweight_dev {
    uint8_t *data;
    __half *scales;
};

static size_t data_bytes(int format, int rows, int k)
{
    return format == K_QUANT_INT4 ? (size_t)rows * k / 2 : (size_t)rows * k;
}

static size_t n_scales(int format, int rows, int k)
{
    return format == K_QUANT_INT4 ? (size_t)rows * (k / 128) : (size_t)rows;
}

static size_t packed_bytes(int format, int rows, int k)
{
    return data_bytes(format, rows, k) + n_scales(format, rows, k) * (format == K_QUANT_INT4 ? 4 : 2);
}

static qweight_dev random_quantized(int format, int rows, int k, unsigned seed)
{
    qweight_dev q;
    CHECK(cudaMalloc(&q.data, data_bytes(format, rows, k)));
    CHECK(cudaMalloc(&q.scales, packed_bytes(format, rows, k) - data_bytes(format, rows, k)));
    fill_bytes<<<1024, 256>>>(q.data, data_bytes(format, rows, k), seed);
    fill_scales<<<256, 256>>>(q.scales, n_scales(format, rows, k), format == K_QUANT_INT4);
    CHECK(cudaGetLastError());
    return q;
}

// Median microseconds per call of `record(stream, i)` for i = 0 .. CALLS - 1, recorded into a graph.
template <typename F> static double us_per_call(cudaStream_t stream, F record)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < CALLS; i++)
        record(i);
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int r = 0; r < 18; r++) {
        CHECK(cudaEventRecord(a, stream));
        CHECK(cudaGraphLaunch(exec, stream));
        CHECK(cudaEventRecord(b, stream));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 3)
            t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return t[t.size() / 2] * 1e3 / CALLS;
}

static double copy_gbs()
{
    const size_t bytes = 2ull << 30;
    void *src, *dst;
    CHECK(cudaMalloc(&src, bytes));
    CHECK(cudaMalloc(&dst, bytes));
    CHECK(cudaMemset(src, 1, bytes));
    float best = 1e30f;
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 10; i++) {
        CHECK(cudaEventRecord(a));
        CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice));
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        best = std::min(best, ms);
    }
    CHECK(cudaFree(src));
    CHECK(cudaFree(dst));
    return 2.0 * bytes / (best * 1e-3) / 1e9;
}

struct shape {
    const char *model, *layer;
    int k, n, epilogue; // y[m][n] from x[m][k]; SILU_MUL: W has 2n rows
    bool bias;
};

int main(int argc, char **argv)
{
    const char *variant = argc > 1 ? argv[1] : ""; // a label for build-time variants: RESULT lines only
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int pdl;
    CHECK(k_pdl_configure(1, &pdl));
    const double copy = copy_gbs();
    printf("device: %s, %d SMs, L2 %d MB; measured copy bandwidth %.0f GB/s (read + write); PDL %s\n", prop.name,
           prop.multiProcessorCount, prop.l2CacheSize >> 20, copy, pdl ? "on" : "off");
    const shape shapes[] = {
        {"gpt2-124m", "c_attn (qkv)", 768, 2304, K_LINEAR_PLAIN, true},
        {"gpt2-124m", "attn c_proj", 768, 768, K_LINEAR_PLAIN, true},
        {"gpt2-124m", "c_fc + gelu", 768, 3072, K_LINEAR_GELU, true},
        {"gpt2-124m", "mlp c_proj", 3072, 768, K_LINEAR_PLAIN, true},
        {"gpt2-124m", "lm_head (50257)", 768, 50257, K_LINEAR_PLAIN, false},
        {"llama-3.2-1b", "qkv", 2048, 3072, K_LINEAR_PLAIN, false},
        {"llama-3.2-1b", "o", 2048, 2048, K_LINEAR_PLAIN, false},
        {"llama-3.2-1b", "gate_up + silu_mul", 2048, 8192, K_LINEAR_SILU_MUL, false},
        {"llama-3.2-1b", "down", 8192, 2048, K_LINEAR_PLAIN, false},
        {"llama-3.2-1b", "lm_head (50257)", 2048, 50257, K_LINEAR_PLAIN, false},
        {"llama-3-8b", "qkv", 4096, 6144, K_LINEAR_PLAIN, false},
        {"llama-3-8b", "o", 4096, 4096, K_LINEAR_PLAIN, false},
        {"llama-3-8b", "gate_up + silu_mul", 4096, 14336, K_LINEAR_SILU_MUL, false},
        {"llama-3-8b", "down", 14336, 4096, K_LINEAR_PLAIN, false},
    };
    // above K_LINEAR_SMALL_MAX_M ours runs in passes of that many tokens, as the backend does for unaligned rows
    const int ms[] = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 128, 256};
    const int max_m = 256;
    std::map<std::pair<int, int>, double> fp16_us, cublas_us; // (shape, m): for the quantized table
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublasHandle_t blas;
    BLAS(cublasCreate(&blas));
    BLAS(cublasSetStream(blas, stream));
    void *ws;
    CHECK(cudaMalloc(&ws, 32u << 20));
    BLAS(cublasSetWorkspace(blas, ws, 32u << 20));
    float *partials;
    unsigned *counters;
    CHECK(cudaMalloc(&partials, K_LINEAR_SMALL_PARTIAL_FLOATS * sizeof(float)));
    CHECK(cudaMalloc(&counters, K_LINEAR_SMALL_COUNTERS * sizeof(unsigned)));
    CHECK(cudaMemset(counters, 0, K_LINEAR_SMALL_COUNTERS * sizeof(unsigned)));
    int wgmma = 0; // the Hopper kernel (k_linear_wgmma), where it runs: m <= K_LINEAR_WGMMA_MAX_M
    CHECK(k_linear_wgmma_available(&wgmma));

    if (!*variant)
        printf("%-14s %-20s %6s %6s %3s | %9s %8s %6s | %9s %8s %6s | %9s %6s | %s\n", "model", "layer", "k", "n", "m",
               "ours us", "GB/s", "%copy", "cuBLAS us", "GB/s", "%copy", "wgmma us", "%copy", "speedup");
    const char *only = getenv("FK_BENCH_ONLY"); // "model layer" substring: one shape (as for a profiler run)
    for (const shape &sh : shapes) {
        char name[96];
        snprintf(name, sizeof name, "%s %s", sh.model, sh.layer);
        if (only && !strstr(name, only))
            continue;
        const int shape_i = (int)(&sh - shapes);
        const int rows = sh.epilogue == K_LINEAR_SILU_MUL ? 2 * sh.n : sh.n;
        const size_t w_elems = (size_t)rows * sh.k;
        const int copies = std::max(2, (int)(256e6 / (w_elems * 2.0)) + 1);
        std::vector<__half *> w;
        const int ld = (rows + 7) / 8 * 8; // rows as the backend stores them (zero rows past `rows` there)
        for (int c = 0; c < copies; c++)
            w.push_back(random_halves((size_t)ld * sh.k, 10 + c));
        __half *x = random_halves((size_t)max_m * sh.k, 3), *bias = random_halves(rows, 4), *y, *tmp;
        CHECK(cudaMalloc(&y, (size_t)max_m * rows * sizeof(__half)));
        CHECK(cudaMalloc(&tmp, (size_t)max_m * ((rows + 7) / 8 * 8) * sizeof(__half)));
        const char *only_m = getenv("FK_BENCH_M"); // one token count (as for a profiler run)
        for (int m : ms) {
            if (only_m && m != atoi(only_m))
                continue;
            const int pass = std::min(m, K_LINEAR_SMALL_MAX_M);
            const int splits = k_linear_small_splits(pass, sh.k, sh.n, sh.epilogue, prop.multiProcessorCount);
            const double ours = us_per_call(stream, [&](int i) {
                for (int t0 = 0; t0 < m; t0 += pass)
                    CHECK(k_linear_small(y + (size_t)t0 * sh.n, x + (size_t)t0 * sh.k, w[i % copies],
                                         sh.bias ? bias : nullptr, pass, sh.k, sh.n, sh.epilogue, splits, partials,
                                         counters, stream));
            });
            // cuBLAS: the GEMM alone (its epilogue would be a further pass; this is its best case)
            const double blas_us = us_per_call(stream, [&](int i) {
                const float one = 1.0f, zero = 0.0f;
                BLAS(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, rows, m, sh.k, &one, w[i % copies], CUDA_R_16F,
                                  sh.k, x, CUDA_R_16F, sh.k, &zero, tmp, CUDA_R_16F, rows, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
            });
            // the wgmma kernel with its chosen splits at each stage count, and with half and twice the splits at the
            // default stages (RESULT lines; the table shows the default)
            double wg_us = 0;
            if (wgmma && m <= K_LINEAR_WGMMA_MAX_M) {
                const int auto_splits = k_linear_wgmma_splits(m, sh.k, sh.n, sh.epilogue, prop.multiProcessorCount);
                const int variants[][2] = {{K_LINEAR_WGMMA_STAGES, auto_splits}, {4, auto_splits}, {8, auto_splits},
                                           {K_LINEAR_WGMMA_STAGES, std::max(1, auto_splits / 2)},
                                           {K_LINEAR_WGMMA_STAGES, 2 * auto_splits}};
                for (int v = 0; v < 5; v++) {
                    const int stages = variants[v][0], splits_v = variants[v][1];
                    if (v > 0 && (stages == variants[0][0] && splits_v == variants[0][1]))
                        continue;
                    // more splits than a cluster holds are refused: skip them
                    if (k_linear_wgmma(y, x, w[0], sh.bias ? bias : nullptr, m, sh.k, sh.n, sh.epilogue, splits_v,
                                       stages, stream) != cudaSuccess)
                        continue;
                    const double us = us_per_call(stream, [&](int i) {
                        CHECK(k_linear_wgmma(y, x, w[i % copies], sh.bias ? bias : nullptr, m, sh.k, sh.n, sh.epilogue,
                                             splits_v, stages, stream));
                    });
                    if (v == 0)
                        wg_us = us;
                    printf("RESULT linear_wgmma%s %s %s m=%d stages=%d splits=%d: %.2f us\n", variant, sh.model,
                           sh.layer, m, stages, splits_v, us);
                }
            }
            // rows not a multiple of 8 (a 50,257-token head): cuBLAS on W's rows padded to a multiple of 8, then a
            // 2-D copy packs y's rows (the backend's way above the small kernel's range)
            if (rows % 8) {
                const double padded_us = us_per_call(stream, [&](int i) {
                    const float one = 1.0f, zero = 0.0f;
                    BLAS(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, ld, m, sh.k, &one, w[i % copies], CUDA_R_16F,
                                      sh.k, x, CUDA_R_16F, sh.k, &zero, tmp, CUDA_R_16F, ld, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
                    CHECK(cudaMemcpy2DAsync(y, rows * sizeof(__half), tmp, ld * sizeof(__half), rows * sizeof(__half),
                                            m, cudaMemcpyDeviceToDevice, stream));
                });
                printf("RESULT cublas_padded%s %s %s m=%d: %.2f us\n", variant, sh.model, sh.layer, m, padded_us);
            }
            const double bytes = w_elems * 2.0 + (double)m * sh.k * 2 + (double)m * sh.n * 2;
            const double g_ours = bytes / (ours * 1e-6) / 1e9, g_blas = bytes / (blas_us * 1e-6) / 1e9;
            fp16_us[{shape_i, m}] = ours, cublas_us[{shape_i, m}] = blas_us;
            if (!*variant)
                printf("%-14s %-20s %6d %6d %3d | %9.2f %8.0f %5.1f%% | %9.2f %8.0f %5.1f%% | %9.2f %5.1f%% | %.2fx "
                       "(splits %d)\n",
                       sh.model, sh.layer, sh.k, rows, m, ours, g_ours, 100 * g_ours / copy, blas_us, g_blas,
                       100 * g_blas / copy, wg_us, wg_us > 0 ? 100 * bytes / (wg_us * 1e-6) / 1e9 / copy : 0.0,
                       blas_us / ours, splits);
            printf("RESULT linear_small%s %s %s m=%d: %.2f us %.1f%% of copy; cublas %.2f us %.1f%%\n", variant,
                   sh.model, sh.layer, m, ours, 100 * g_ours / copy, blas_us, 100 * g_blas / copy);
        }
        for (__half *p : w)
            CHECK(cudaFree(p));
        CHECK(cudaFree(x));
        CHECK(cudaFree(bias));
        CHECK(cudaFree(y));
        CHECK(cudaFree(tmp));
    }

    // The quantized small-batch linear on the same shapes: time, bandwidth of the bytes it reads (packed weights and
    // scales, x) and writes (y), and the fp16 kernel's and cuBLAS's times from above on the same shape and m.
    if (!*variant)
        printf("\n%-14s %-20s %4s %6s %6s %3s | %9s %8s %6s | %9s %9s | %s\n", "model", "layer", "fmt", "k", "n", "m",
               "ours us", "GB/s", "%copy", "fp16 us", "cuBLAS us", "vs fp16 ours");
    const int qms[] = {1, 4, 8, 16};
    for (const shape &sh : shapes) {
        char name[96];
        snprintf(name, sizeof name, "%s %s", sh.model, sh.layer);
        if (only && !strstr(name, only))
            continue;
        const int shape_i = (int)(&sh - shapes), rows = sh.epilogue == K_LINEAR_SILU_MUL ? 2 * sh.n : sh.n;
        __half *x = random_halves((size_t)16 * sh.k, 3), *bias = random_halves(rows, 4), *y;
        CHECK(cudaMalloc(&y, (size_t)16 * rows * sizeof(__half)));
        for (int format : {K_QUANT_INT8, K_QUANT_INT4}) {
            const char *fmt = format == K_QUANT_INT8 ? "int8" : "int4";
            const double w_bytes = (double)packed_bytes(format, rows, sh.k);
            const int copies = std::max(2, (int)(256e6 / w_bytes) + 1);
            std::vector<qweight_dev> w;
            for (int c = 0; c < copies; c++)
                w.push_back(random_quantized(format, rows, sh.k, 10 + c));
            for (int m : qms) {
                const int splits = k_linear_quant_splits(format, m, sh.k, sh.n, sh.epilogue, prop.multiProcessorCount);
                const double ours = us_per_call(stream, [&](int i) {
                    const qweight_dev &q = w[i % copies];
                    CHECK(k_linear_quant(y, x, q.data, q.scales, sh.bias ? bias : nullptr, format, m, sh.k, sh.n,
                                         sh.epilogue, splits, partials, counters, stream));
                });
                const double bytes = w_bytes + (double)m * sh.k * 2 + (double)m * sh.n * 2;
                const double gbs = bytes / (ours * 1e-6) / 1e9;
                const double f16 = fp16_us[{shape_i, m}], blas = cublas_us[{shape_i, m}]; // 0 where not timed
                if (!*variant)
                    printf("%-14s %-20s %4s %6d %6d %3d | %9.2f %8.0f %5.1f%% | %9.2f %9.2f | %.2fx (splits %d)\n",
                           sh.model, sh.layer, fmt, sh.k, rows, m, ours, gbs, 100 * gbs / copy, f16, blas, f16 / ours,
                           splits);
                printf("RESULT linear_quant%s %s %s %s m=%d: %.2f us %.1f%% of copy; fp16 ours %.2f us, cublas %.2f "
                       "us\n",
                       variant, fmt, sh.model, sh.layer, m, ours, 100 * gbs / copy, f16, blas);
            }
            for (const qweight_dev &q : w) {
                CHECK(cudaFree(q.data));
                CHECK(cudaFree(q.scales));
            }
        }
        CHECK(cudaFree(x));
        CHECK(cudaFree(bias));
        CHECK(cudaFree(y));
    }
    return 0;
}
