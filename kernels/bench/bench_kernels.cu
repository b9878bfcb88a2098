// bench_kernels.cu — every shipped launcher (version 0, linked from libfk_kernels, never copied) timed the way the
// specification states, on the configurations of issue 18, written as ours.json for kernels/bench/peers.py and
// report.py.
//
// Method: per row, 100 warm-up calls, then 1,000 timed iterations, each an L2 flush (cudaMemsetAsync of a buffer
// twice the L2 size, outside the timed pair) and a cudaEvent pair around exactly one launcher call; mean, std, min,
// max, p50, p95, p99 in microseconds. GB/s and TFLOP/s from p50 and the bytes and flops the kernel must move and
// compute (the formula is a comment beside each kernel's rows). Memory per row: the bytes of the row's own buffers
// and the device's used memory (cudaMemGetInfo) once they are allocated. Inputs are fresh random values (seeded
// from the time unless --seed) valid for each op. Ceilings measured first: device-to-device copy bandwidth and
// cuBLAS fp16 GEMM TFLOP/s. Programmatic dependent launch is on, as the backend has it by default.
//
// Runtime on an H100, estimated from the bytes and flops of the rows below (memory at ~2.7 TB/s, attention at
// ~400 TFLOP/s): 455 rows of 1,100 calls; a timed call costs the flush (a 100 MB memset, ~40 us) and a few us of
// launches besides the kernel: ~60 ms a row, ~25 s in all. The kernels add ~20 s of prefill (7e12 flops a pass over
// its 48 rows), ~7 s of decode (18 GB of K and V a pass over its 44 rows) and ~8 s of linears (2.2 GB of fp16
// weights a pass over the layers, half and a quarter of that quantized, at each of 4 m; fp16 at 3 more m for
// k_linear_wgmma). About 1 minute in all (~1.5 with allocation and the ceilings); --main (20 rows) a few seconds.
// Peak memory: the 4 GiB of the copy ceiling, then ~4.4 GB (decode at batch 256 x 4096 of head_dim 128).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include "bench_check.h"
#include "kernels.h"

static const char USAGE[] =
    "usage: bench_kernels [options]\n"
    "Times every FlashKernel launcher (100 warm-up, 1,000 timed calls, L2 flushed before each) and prints a table.\n"
    "  --json PATH    also write the results as JSON (ours.json, read by peers.py and report.py)\n"
    "  --only SUBSTR  only rows whose \"launcher variant\" contains SUBSTR (k_attention_decode, k_sample top_p)\n"
    "  --main         only each kernel's main configuration\n"
    "  --warmup N     warm-up calls per row (default 100)\n"
    "  --iters N      timed calls per row (default 1000)\n"
    "  --no-flush     do not flush the L2 cache before each timed call\n"
    "  --list         print the rows (kernel, variant, config, main, bytes, flops) without timing: no GPU needed\n"
    "  --ncu          for Nsight Compute (ncu --profile-from-start off): warm-up 2, one timed call, no flush,\n"
    "                 profiler on around exactly that call; ceilings are not measured\n"
    "  --seed N       seed of the random inputs (default: from the time)\n"
    "  --commit HASH  commit recorded in the JSON (default: $FK_COMMIT, else \"unknown\")\n"
    "  --help         this text\n";

// ---- options ----

struct options {
    const char *json = nullptr, *only = nullptr, *commit = nullptr;
    bool main_only = false, flush = true, ncu = false, list = false;
    int warmup = 100, iters = 1000;
    unsigned long long seed = 0;
    bool seeded = false;
};

static void usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "bench_kernels: %s '%s' (try --help)\n", what, arg);
    exit(2);
}

static long long number_arg(const char *flag, const char *value, long long lo, long long hi)
{
    char *end;
    errno = 0;
    const long long v = strtoll(value, &end, 10);
    if (errno || end == value || *end || v < lo || v > hi) {
        fprintf(stderr, "bench_kernels: %s wants an integer in [%lld, %lld], got '%s'\n", flag, lo, hi, value);
        exit(2);
    }
    return v;
}

static options parse_options(int argc, char **argv)
{
    options o;
    const struct {
        const char *name;
        bool *flag, value;
    } switches[] = {{"--main", &o.main_only, true}, {"--no-flush", &o.flush, false}, {"--ncu", &o.ncu, true},
                    {"--list", &o.list, true}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(USAGE, stdout);
            exit(0);
        }
        bool is_switch = false;
        for (const auto &s : switches)
            if (!strcmp(a, s.name))
                *s.flag = s.value, is_switch = true;
        if (is_switch)
            continue;
        const bool takes_value = !strcmp(a, "--json") || !strcmp(a, "--only") || !strcmp(a, "--warmup") ||
                                 !strcmp(a, "--iters") || !strcmp(a, "--seed") || !strcmp(a, "--commit");
        if (!takes_value)
            usage_error("unknown option", a);
        if (i + 1 >= argc)
            usage_error("missing value after", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--json"))
            o.json = v;
        else if (!strcmp(a, "--only"))
            o.only = v;
        else if (!strcmp(a, "--commit"))
            o.commit = v;
        else if (!strcmp(a, "--warmup"))
            o.warmup = (int)number_arg(a, v, 0, 1000000);
        else if (!strcmp(a, "--iters"))
            o.iters = (int)number_arg(a, v, 1, 100000); // an event pair each
        else
            o.seed = (unsigned long long)number_arg(a, v, 0, 0x7fffffffffffffffLL), o.seeded = true;
    }
    if (o.list && o.json)
        usage_error("--list times nothing, so it writes no JSON: drop --json", o.json);
    if (o.ncu) // one profiled call; ncu flushes the caches before it itself (--cache-control all, its default)
        o.warmup = 2, o.iters = 1, o.flush = false;
    if (!o.commit)
        o.commit = getenv("FK_COMMIT") && *getenv("FK_COMMIT") ? getenv("FK_COMMIT") : "unknown";
    if (!o.seeded)
        o.seed = (unsigned long long)time(nullptr);
    return o;
}

// ---- rows and statistics ----

struct stats {
    double mean, std, min, max, p50, p95, p99; // microseconds
};

// A configuration value: a number or a name, in the order the config string lists them.
struct param {
    std::string key, value;
    bool number;
    param(const char *k, const char *v) : key(k), value(v), number(false) {}
    param(const char *k, int v) : key(k), value(std::to_string(v)), number(true) {}
};

struct row {
    std::string kernel, variant, dtype;
    std::vector<param> params;
    bool main;
    double bytes = 0, flops = 0;
    stats us{};
    double mem_bytes = 0, device_used_bytes = 0;

    std::string config() const
    {
        std::string s;
        for (const param &p : params)
            s += (s.empty() ? "" : " ") + p.key + "=" + p.value;
        return s;
    }
    double gbs() const { return us.p50 > 0 ? bytes / us.p50 / 1e3 : 0; }
    double tflops() const { return us.p50 > 0 ? flops / us.p50 / 1e6 : 0; }
};

// Nearest-rank percentiles; the sample standard deviation.
static stats summarize(std::vector<double> us)
{
    std::sort(us.begin(), us.end());
    const size_t n = us.size();
    const double mean = std::accumulate(us.begin(), us.end(), 0.0) / n;
    double ss = 0;
    for (double u : us)
        ss += (u - mean) * (u - mean);
    auto pct = [&](size_t p) { return us[std::max<size_t>((p * n + 99) / 100, 1) - 1]; }; // rank ceil(p n / 100)
    return {mean, n > 1 ? std::sqrt(ss / (n - 1)) : 0.0, us.front(), us.back(), pct(50), pct(95), pct(99)};
}

// ---- random inputs ----

static __device__ unsigned long long mix(unsigned long long i, unsigned long long seed) // splitmix64
{
    unsigned long long z = i + seed * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static __device__ float uniform(unsigned long long i, unsigned long long seed, float lo, float hi)
{
    return lo + (hi - lo) * (float)(mix(i, seed) >> 40) * (1.0f / 16777216.0f);
}

// The fills run as grid-stride loops over i = first() .. n - 1.
static __device__ size_t first()
{
    return blockIdx.x * (size_t)blockDim.x + threadIdx.x;
}
static __device__ size_t stride()
{
    return (size_t)gridDim.x * blockDim.x;
}

static __global__ void fill_halves(__half *p, size_t n, unsigned long long seed, float lo, float hi)
{
    for (size_t i = first(); i < n; i += stride())
        p[i] = __float2half(uniform(i, seed, lo, hi));
}

static __global__ void fill_floats(float *p, size_t n, unsigned long long seed, float lo, float hi)
{
    for (size_t i = first(); i < n; i += stride())
        p[i] = uniform(i, seed, lo, hi);
}

static __global__ void fill_bytes(uint8_t *p, size_t n, unsigned long long seed) // any byte is a valid INT8/INT4 code
{
    for (size_t i = first(); i < n; i += stride())
        p[i] = (uint8_t)mix(i, seed);
}

static __global__ void fill_ints(int32_t *p, size_t n, unsigned long long seed, int bound) // [0, bound)
{
    for (size_t i = first(); i < n; i += stride())
        p[i] = (int32_t)(mix(i, seed) % (unsigned)bound);
}

// Scales of src/quant.h's layouts, of the size its quantizer makes for weights of magnitude about 1: INT8 one fp16
// s per row (max |w| / 127); INT4 (s, z) pairs per row and group of 128 (s = range / 15, z an integer in [0, 15]).
static __global__ void fill_quant_scales(__half *p, size_t n_scales, unsigned long long seed, bool pairs)
{
    for (size_t i = first(); i < n_scales; i += stride()) {
        const float s = uniform(i, seed, 0.5f, 1.5f) / (pairs ? 15.0f : 127.0f);
        if (pairs)
            p[2 * i] = __float2half(s), p[2 * i + 1] = __float2half((float)(mix(i, ~seed) % 16));
        else
            p[i] = __float2half(s);
    }
}

// ---- the run's state ----

struct bench {
    options opt;
    cudaDeviceProp prop;
    cudaStream_t stream;
    std::mt19937_64 rng;
    void *flush_buf = nullptr;
    size_t flush_bytes = 0;
    std::vector<cudaEvent_t> start, stop; // one pair per timed call
    std::vector<row> rows;

    int hopper_rows = 0; // k_attention_prefill_tile_rows(1): 128 where the Hopper prefill kernel runs
    int n_listed = 0;

    int n_sms() const { return prop.multiProcessorCount; }
    // Whether to time row r (selected and not --list; --list prints it instead).
    bool wanted(const row &r)
    {
        const std::string name = r.kernel + (r.variant.empty() ? "" : " " + r.variant);
        if ((opt.only && !strstr(name.c_str(), opt.only)) || (opt.main_only && !r.main))
            return false;
        if (!opt.list)
            return true;
        printf("%s\t%s\t%s\t%s\t%.0f\t%.0f\n", r.kernel.c_str(), r.variant.c_str(), r.config().c_str(),
               r.main ? "main" : "-", r.bytes, r.flops);
        n_listed++;
        return false;
    }
    template <typename F> void run(row &r, size_t buffer_bytes, F call);
};

static row make_row(const char *kernel, const char *variant, const char *dtype, std::vector<param> params, bool main)
{
    row r;
    r.kernel = kernel, r.variant = variant, r.dtype = dtype, r.params = std::move(params), r.main = main;
    return r;
}

static void launched(const row &r, cudaError_t e)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "bench_kernels: %s %s %s: %s\n", r.kernel.c_str(), r.variant.c_str(), r.config().c_str(),
                cudaGetErrorString(e));
        exit(1);
    }
}

// A row's device buffers, filled on the bench's stream, counted (the row's mem_bytes) and freed together after it.
struct buffers {
    bench &b;
    std::vector<void *> held;
    size_t bytes = 0;

    explicit buffers(bench &b_) : b(b_) {}
    buffers(const buffers &) = delete;
    buffers &operator=(const buffers &) = delete;
    ~buffers()
    {
        CHECK(cudaStreamSynchronize(b.stream));
        for (void *p : held)
            CHECK(cudaFree(p));
    }

    template <typename T> T *empty(size_t n)
    {
        void *p;
        CHECK(cudaMalloc(&p, n * sizeof(T)));
        held.push_back(p);
        bytes += n * sizeof(T);
        return (T *)p;
    }
    template <typename T> T *zeros(size_t n)
    {
        T *p = empty<T>(n);
        CHECK(cudaMemsetAsync(p, 0, n * sizeof(T), b.stream));
        return p;
    }
    template <typename T> T *upload(const std::vector<T> &v)
    {
        T *p = empty<T>(v.size());
        CHECK(cudaMemcpyAsync(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, b.stream));
        CHECK(cudaStreamSynchronize(b.stream)); // v may go before the copy would otherwise finish
        return p;
    }
    __half *halves(size_t n, float lo = -1, float hi = 1)
    {
        __half *p = empty<__half>(n);
        fill_halves<<<1024, 256, 0, b.stream>>>(p, n, b.rng(), lo, hi);
        CHECK(cudaGetLastError());
        return p;
    }
    float *floats(size_t n, float lo = -1, float hi = 1)
    {
        float *p = empty<float>(n);
        fill_floats<<<1024, 256, 0, b.stream>>>(p, n, b.rng(), lo, hi);
        CHECK(cudaGetLastError());
        return p;
    }
    uint8_t *random_bytes(size_t n)
    {
        uint8_t *p = empty<uint8_t>(n);
        fill_bytes<<<1024, 256, 0, b.stream>>>(p, n, b.rng());
        CHECK(cudaGetLastError());
        return p;
    }
    int32_t *ints(size_t n, int bound)
    {
        int32_t *p = empty<int32_t>(n);
        fill_ints<<<1024, 256, 0, b.stream>>>(p, n, b.rng(), bound);
        CHECK(cudaGetLastError());
        return p;
    }
};

// 0 .. n - 1 in a random order.
static std::vector<int32_t> shuffled(int n, std::mt19937_64 &rng)
{
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    std::shuffle(v.begin(), v.end(), rng);
    return v;
}

// Times `call` (one launcher call, returning its cudaError_t) by the method above, prints the row, keeps it.
template <typename F> void bench::run(row &r, size_t buffer_bytes, F call)
{
    CHECK(cudaStreamSynchronize(stream)); // the inputs are filled
    size_t free_b, total_b;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    r.mem_bytes = (double)buffer_bytes, r.device_used_bytes = (double)(total_b - free_b);
    for (int i = 0; i < opt.warmup; i++)
        launched(r, call());
    for (int i = 0; i < opt.iters; i++) {
        if (opt.flush)
            CHECK(cudaMemsetAsync(flush_buf, i & 255, flush_bytes, stream));
        CHECK(cudaEventRecord(start[i], stream));
        if (opt.ncu)
            CHECK(cudaProfilerStart());
        launched(r, call());
        if (opt.ncu)
            CHECK(cudaProfilerStop());
        CHECK(cudaEventRecord(stop[i], stream));
    }
    launched(r, cudaStreamSynchronize(stream));
    std::vector<double> us(opt.iters);
    for (int i = 0; i < opt.iters; i++) {
        float ms;
        CHECK(cudaEventElapsedTime(&ms, start[i], stop[i]));
        us[i] = ms * 1e3;
    }
    r.us = summarize(us);
    printf("%-20s %-8s %-36s %10.2f %10.2f %8.0f %8.2f %9.1f%s\n", r.kernel.c_str(), r.variant.c_str(),
           r.config().c_str(), r.us.p50, r.us.p99, r.gbs(), r.tflops(), r.mem_bytes / 1048576.0, r.main ? " *" : "");
    fflush(stdout);
    rows.push_back(r);
}

// ---- ceilings ----

// Median of `reps` event-timed calls after 3 warm-ups, in ms.
template <typename F> static double median_ms(cudaStream_t stream, int reps, F call)
{
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++)
        call();
    std::vector<double> ms;
    for (int i = 0; i < reps; i++) {
        CHECK(cudaEventRecord(a, stream));
        call();
        CHECK(cudaEventRecord(b, stream));
        CHECK(cudaEventSynchronize(b));
        float t;
        CHECK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

// A 2 GiB device-to-device copy, counting bytes read plus written.
static double copy_gbs(bench &b)
{
    const size_t n = 2ull << 30;
    buffers buf(b);
    void *src = buf.random_bytes(n), *dst = buf.empty<uint8_t>(n);
    const double ms =
        median_ms(b.stream, 20, [&] { CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, b.stream)); });
    return 2.0 * n / (ms * 1e-3) / 1e9;
}

// cublasGemmEx 8192^3, fp16 in and out, fp32 compute (tensor cores): 2 * 8192^3 flops.
static double gemm_tflops(bench &b)
{
    const int n = 8192;
    buffers buf(b);
    const __half *x = buf.halves((size_t)n * n), *w = buf.halves((size_t)n * n);
    __half *y = buf.empty<__half>((size_t)n * n);
    cublasHandle_t blas;
    BLAS(cublasCreate(&blas));
    BLAS(cublasSetStream(blas, b.stream));
    const float one = 1, zero = 0;
    const double ms = median_ms(b.stream, 20, [&] {
        BLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, w, CUDA_R_16F, n, x, CUDA_R_16F, n, &zero, y,
                          CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    BLAS(cublasDestroy(blas));
    return 2.0 * n * n * (double)n / (ms * 1e-3) / 1e12;
}

// ---- shapes ----

struct model {
    const char *name;
    int d, H, Hkv, D, ffn, vocab;
};
static const model GPT2 = {"gpt2", 768, 12, 12, 64, 3072, 50257};
static const model LLAMA1B = {"llama1b", 2048, 32, 8, 64, 8192, 128256};
static const model LLAMA8B = {"llama8b", 4096, 32, 8, 128, 14336, 128256};

static const int TOKENS[] = {1, 8, 64, 256, 512, 1024, 2048, 4096}; // decode batches to prefill lengths

// ---- per kernel family ----

// k_embed: out[n][d] = tok[ids] (+ pos[positions], GPT-2's 1024 learned positions).
// bytes = 4n (ids) + 2nd (rows read) + 2nd (out) [+ 4n (positions) + 2nd (position rows)]; flops = nd (the add) or 0.
static void bench_embed(bench &b)
{
    for (const model *m : {&LLAMA1B, &LLAMA8B, &GPT2})
        for (int n : TOKENS) {
            const bool pos = m == &GPT2;
            const double nd = (double)n * m->d;
            row r = make_row("k_embed", "", "fp16", {{"model", m->name}, {"n", n}}, m == &LLAMA1B && n == 4096);
            r.bytes = 4.0 * n + 4 * nd + (pos ? 4.0 * n + 2 * nd : 0), r.flops = pos ? nd : 0;
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            const __half *tok = buf.halves((size_t)m->vocab * m->d);
            const int32_t *ids = buf.ints(n, m->vocab);
            const __half *pos_table = pos ? buf.halves((size_t)1024 * m->d) : nullptr;
            const int32_t *positions = pos ? buf.ints(n, 1024) : nullptr;
            __half *out = buf.empty<__half>((size_t)n * m->d);
            b.run(r, buf.bytes,
                  [&] { return k_embed(out, tok, ids, nullptr, pos_table, positions, n, m->d, b.stream); });
        }
}

// k_add_rms_norm (Llama): residual += x, out = RMSNorm(residual) * w. bytes = 2nd x 4 (residual and x read,
// residual and out written) + 2d (w); flops = 5nd (add, square and sum, two multiplies).
// k_add_layer_norm (GPT-2): the same with bias. bytes = 8nd + 4d (w, bias); flops = 8nd (add, mean, centre,
// square and sum, normalize, scale, shift).
static void bench_norms(bench &b)
{
    for (const model *m : {&LLAMA1B, &LLAMA8B, &GPT2})
        for (int n : TOKENS) {
            const bool rms = m != &GPT2;
            const double nd = (double)n * m->d;
            row r = make_row(rms ? "k_add_rms_norm" : "k_add_layer_norm", "", "fp16", {{"model", m->name}, {"n", n}},
                             (m == &LLAMA1B || m == &GPT2) && n == 4096);
            r.bytes = 8 * nd + (rms ? 2.0 : 4.0) * m->d, r.flops = (rms ? 5 : 8) * nd;
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            const size_t size = (size_t)n * m->d;
            __half *residual = buf.halves(size), *out = buf.empty<__half>(size);
            const __half *x = buf.halves(size), *w = buf.halves(m->d), *bias = rms ? nullptr : buf.halves(m->d);
            if (rms)
                b.run(r, buf.bytes, [&] { return k_add_rms_norm(out, residual, x, w, n, m->d, 1e-5f, b.stream); });
            else
                b.run(r, buf.bytes,
                      [&] { return k_add_layer_norm(out, residual, x, w, bias, n, m->d, 1e-5f, b.stream); });
        }
}

// k_add_bias (GPT-2 c_attn, out = 2304), y += bias: bytes = 4 n out (y read and written) + 2 out; flops = n out.
// k_bias_gelu (GPT-2 c_fc, out = 3072), y = gelu_tanh(y + bias): bytes the same; flops = 10 n out (the add, gelu_tanh
// ~9 with tanh as one).
static void bench_bias(bench &b)
{
    for (bool gelu : {false, true})
        for (int n : TOKENS) {
            const int out = gelu ? 3072 : 2304;
            const double size = (double)n * out;
            row r =
                make_row(gelu ? "k_bias_gelu" : "k_add_bias", "", "fp16", {{"model", GPT2.name}, {"n", n}}, n == 4096);
            r.bytes = 4 * size + 2.0 * out, r.flops = (gelu ? 10 : 1) * size;
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            __half *y = buf.halves((size_t)n * out);
            const __half *bias = buf.halves(out);
            if (gelu)
                b.run(r, buf.bytes, [&] { return k_bias_gelu(y, bias, n, out, b.stream); });
            else
                b.run(r, buf.bytes, [&] { return k_add_bias(y, bias, n, out, b.stream); });
        }
}

// k_silu_mul: out[n][f] = silu(gate) * up from gate_up[n][2f]. bytes = 4nf (read) + 2nf (write); flops = 5nf
// (negate, exp, add, divide, multiply).
static void bench_silu_mul(bench &b)
{
    for (const model *m : {&LLAMA1B, &LLAMA8B})
        for (int n : TOKENS) {
            const double nf = (double)n * m->ffn;
            row r = make_row("k_silu_mul", "", "fp16", {{"model", m->name}, {"n", n}}, m == &LLAMA1B && n == 4096);
            r.bytes = 6 * nf, r.flops = 5 * nf;
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            const __half *gate_up = buf.halves((size_t)n * 2 * m->ffn);
            __half *out = buf.empty<__half>((size_t)n * m->ffn);
            b.run(r, buf.bytes, [&] { return k_silu_mul(out, gate_up, n, m->ffn, b.stream); });
        }
}

// k_rope_store_kv on qkv[n][(H + 2 Hkv) D] in place, k and v stored through shuffled slots of a cache of
// ceil(n / 16) blocks of 16. Llama (rotating, theta 500000): bytes = 2n (H + 2 Hkv) D (q, k, v read) + 2n (H + Hkv) D
// (q, k written back) + 4n Hkv D (cache) + 8n (positions, slots) + 2D (inv_freq); flops = 3n (H + Hkv) D (each
// rotated pair: four multiplies, two adds). GPT-2 (no rotation, inv_freq NULL): bytes = 8n Hkv D (k, v read and
// stored) + 4n (slots); flops = 0.
static void bench_rope_store_kv(bench &b)
{
    for (const model *m : {&LLAMA1B, &LLAMA8B, &GPT2})
        for (int n : TOKENS) {
            const bool rotate = m != &GPT2;
            const double H = m->H, Hkv = m->Hkv, D = m->D;
            row r = make_row("k_rope_store_kv", "", "fp16", {{"model", m->name}, {"n", n}}, m == &LLAMA1B && n == 4096);
            r.bytes = rotate
                          ? 2.0 * n * (H + 2 * Hkv) * D + 2.0 * n * (H + Hkv) * D + 4.0 * n * Hkv * D + 8.0 * n + 2 * D
                          : 8.0 * n * Hkv * D + 4.0 * n;
            r.flops = rotate ? 3.0 * n * (H + Hkv) * D : 0;
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            const int blocks = (n + 15) / 16;
            std::vector<int32_t> slots = shuffled(blocks * 16, b.rng);
            slots.resize(n);
            std::vector<float> inv_freq(m->D / 2);
            for (int j = 0; j < m->D / 2; j++)
                inv_freq[j] = (float)std::pow(500000.0, -2.0 * j / m->D);
            __half *qkv = buf.halves((size_t)n * (m->H + 2 * m->Hkv) * m->D);
            const int32_t *positions = buf.ints(n, 4096), *slots_dev = buf.upload(slots);
            const float *freq = rotate ? buf.upload(inv_freq) : nullptr;
            const size_t cache = (size_t)blocks * m->Hkv * 16 * m->D;
            __half *k_cache = buf.empty<__half>(cache), *v_cache = buf.empty<__half>(cache);
            b.run(r, buf.bytes, [&] {
                return k_rope_store_kv(qkv, positions, freq, slots_dev, k_cache, v_cache, n, m->H, m->Hkv, m->D, 16,
                                       b.stream);
            });
        }
}

// The paged-attention inputs of batch sequences with n_q queries each over context tokens: caches of random K and V
// in blocks of 16 handed out in a shuffled order, q (with this step's k and v) random, scale 1 / sqrt(D).
static k_attn_args paged_attention(buffers &buf, const model &m, int batch, int n_q, int context)
{
    const int per_seq = (context + 15) / 16;
    std::vector<int32_t> query_start(batch + 1), context_len(batch, context);
    for (int s = 0; s <= batch; s++)
        query_start[s] = s * n_q;
    const size_t cache = (size_t)batch * per_seq * m.Hkv * 16 * m.D, tokens = (size_t)batch * n_q;
    k_attn_args a = {};
    a.out = buf.empty<__half>(tokens * m.H * m.D);
    a.qkv = buf.halves(tokens * (m.H + 2 * m.Hkv) * m.D);
    a.k_cache = buf.halves(cache);
    a.v_cache = buf.halves(cache);
    a.query_start = buf.upload(query_start);
    a.context_len = buf.upload(context_len);
    a.block_tables = buf.upload(shuffled(batch * per_seq, buf.b.rng));
    a.n_seqs = batch, a.max_blocks = per_seq, a.n_heads = m.H, a.n_kv_heads = m.Hkv, a.head_dim = m.D;
    a.block_size = 16, a.scale = 1.0f / std::sqrt((float)m.D);
    return a;
}

// k_attention_prefill on whole causal prompts (batch x seq, query_start i * seq, context_len seq), tiles of
// tile_rows queries listed heaviest first as backend_cuda.c orders them (by the first query's position, descending).
// wgmma: the Hopper kernel (128-query tiles), where k_attention_prefill_tile_rows(1) offers it; mma_sync: 64.
// bytes = 2 batch seq H D x 2 (q read, out written) + 2 batch seq Hkv D x 2 (K, V read once);
// flops = 4 batch H D seq (seq + 1) / 2 (QK^T and PV over the causal half).
static void bench_attention_prefill(bench &b)
{
    const struct {
        const char *name;
        int tile_rows;
    } kinds[] = {{"wgmma", 128}, {"mma_sync", 64}};
    for (const auto &kind : kinds)
        for (const model *m : {&LLAMA1B, &LLAMA8B})
            for (int batch : {1, 4, 8})
                for (int seq : {512, 1024, 2048, 4096}) {
                    row r = make_row("k_attention_prefill", kind.name, "fp16",
                                     {{"model", m->name}, {"batch", batch}, {"seq", seq}},
                                     m == &LLAMA8B && batch == 4 && seq == 4096);
                    const double tokens = (double)batch * seq;
                    r.bytes = 4 * tokens * m->D * (m->H + m->Hkv);
                    r.flops = 4.0 * batch * m->H * m->D * (seq * (seq + 1.0) / 2);
                    if (!b.wanted(r))
                        continue;
                    if (kind.tile_rows == 128 && b.hopper_rows != 128) {
                        printf("%-20s %-8s %-36s skipped: no Hopper (sm_90a) kernel on this device\n", r.kernel.c_str(),
                               r.variant.c_str(), r.config().c_str());
                        continue;
                    }
                    buffers buf(b);
                    const k_attn_args a = paged_attention(buf, *m, batch, seq, seq);
                    std::vector<int32_t> pairs; // (sequence, first query)
                    for (int q0 = (seq - 1) / kind.tile_rows * kind.tile_rows; q0 >= 0; q0 -= kind.tile_rows)
                        for (int s = 0; s < batch; s++)
                            pairs.push_back(s), pairs.push_back(q0);
                    const int32_t *tiles = buf.upload(pairs);
                    const int n_tiles = (int)pairs.size() / 2;
                    b.run(r, buf.bytes,
                          [&] { return k_attention_prefill(&a, tiles, n_tiles, kind.tile_rows, b.stream); });
                }
}

// k_attention_decode: batch sequences of one query over context cached tokens, splits as the backend chooses them
// (k_attention_decode_splits from the context), scratch of k_attention_decode_scratch_bytes.
// bytes = 2 batch context Hkv D x 2 (K and V read) + 2 batch H D x 2 (q read, out written);
// flops = 4 batch H D context.
static void bench_attention_decode(bench &b)
{
    std::vector<std::pair<int, int>> shapes; // (batch, context)
    for (int batch : {1, 4, 8, 64, 256})
        for (int context : {512, 1024, 2048, 4096})
            shapes.push_back({batch, context});
    shapes.push_back({1, 32768});
    shapes.push_back({16, 16384});
    for (const model *m : {&LLAMA1B, &LLAMA8B})
        for (const auto &shape : shapes) {
            const int batch = shape.first, context = shape.second;
            row r =
                make_row("k_attention_decode", "", "fp16", {{"model", m->name}, {"batch", batch}, {"context", context}},
                         m == &LLAMA8B && batch == 64 && context == 4096);
            r.bytes = 4.0 * batch * context * m->Hkv * m->D + 4.0 * batch * m->H * m->D;
            r.flops = 4.0 * batch * m->H * m->D * context;
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            const k_attn_args a = paged_attention(buf, *m, batch, 1, context);
            const int n_splits = k_attention_decode_splits(batch, m->Hkv, context, b.n_sms());
            const int split_len = (context + n_splits - 1) / n_splits;
            void *scratch = buf.empty<uint8_t>(k_attention_decode_scratch_bytes(batch, m->H, m->Hkv, m->D, b.n_sms()));
            b.run(r, buf.bytes, [&] { return k_attention_decode(&a, split_len, n_splits, scratch, b.stream); });
        }
}

// The linears of the three models: y[m][n] from x[m][k] and W[rows][k], rows = n (2n for SILU_MUL: gate | up).
struct layer {
    const model *m;
    const char *name;
    int k, n, epilogue;
    bool bias;
    int rows() const { return epilogue == K_LINEAR_SILU_MUL ? 2 * n : n; }
    bool is_main() const { return m == &LLAMA1B && !strcmp(name, "gate_up"); }
};

static const layer LAYERS[] = {
    {&GPT2, "c_attn", 768, 2304, K_LINEAR_PLAIN, true},
    {&GPT2, "attn_proj", 768, 768, K_LINEAR_PLAIN, true},
    {&GPT2, "c_fc", 768, 3072, K_LINEAR_GELU, true},
    {&GPT2, "mlp_proj", 3072, 768, K_LINEAR_PLAIN, true},
    {&GPT2, "lm_head", 768, 50257, K_LINEAR_PLAIN, false},
    {&LLAMA1B, "qkv", 2048, 3072, K_LINEAR_PLAIN, false},
    {&LLAMA1B, "o", 2048, 2048, K_LINEAR_PLAIN, false},
    {&LLAMA1B, "gate_up", 2048, 8192, K_LINEAR_SILU_MUL, false},
    {&LLAMA1B, "down", 8192, 2048, K_LINEAR_PLAIN, false},
    {&LLAMA1B, "lm_head", 2048, 128256, K_LINEAR_PLAIN, false},
    {&LLAMA8B, "qkv", 4096, 6144, K_LINEAR_PLAIN, false},
    {&LLAMA8B, "o", 4096, 4096, K_LINEAR_PLAIN, false},
    {&LLAMA8B, "gate_up", 4096, 14336, K_LINEAR_SILU_MUL, false},
    {&LLAMA8B, "down", 14336, 4096, K_LINEAR_PLAIN, false},
    {&LLAMA8B, "lm_head", 4096, 128256, K_LINEAR_PLAIN, false},
};

static const int LINEAR_M[] = {1, 4, 8, 16};

// The layer of a model by name.
static const layer &find_layer(const model &m, const char *name)
{
    for (const layer &l : LAYERS)
        if (l.m == &m && !strcmp(l.name, name))
            return l;
    fprintf(stderr, "bench_kernels: no layer %s in %s\n", name, m.name);
    exit(1);
}

// A quantized weight of rows x k in src/quant.h's layout: INT8 a byte per weight and an fp16 scale per row; INT4 half
// a byte per weight and an fp16 (scale, zero) pair per row and group of 128.
struct qweight {
    const uint8_t *data;
    const __half *scales;
};

static size_t qdata_bytes(int format, int rows, int k)
{
    return format == K_QUANT_INT4 ? (size_t)rows * k / 2 : (size_t)rows * k;
}

static size_t qscale_halves(int format, int rows, int k)
{
    return format == K_QUANT_INT4 ? 2 * (size_t)rows * (k / 128) : rows;
}

static double packed_bytes(int format, int rows, int k)
{
    return (double)qdata_bytes(format, rows, k) + 2.0 * qscale_halves(format, rows, k);
}

// Random codes, and scales as the quantizer would make them.
static qweight random_qweight(buffers &buf, int format, int rows, int k)
{
    const bool int4 = format == K_QUANT_INT4;
    const size_t halves = qscale_halves(format, rows, k);
    __half *scales = buf.empty<__half>(halves);
    fill_quant_scales<<<1024, 256, 0, buf.b.stream>>>(scales, int4 ? halves / 2 : halves, buf.b.rng(), int4);
    CHECK(cudaGetLastError());
    return {buf.random_bytes(qdata_bytes(format, rows, k)), scales};
}

// k_linear_small (fp16 W) and k_linear_quant (variant int8 / int4) with the layer's epilogue, splits as the backend
// chooses them, the partials and counters the backend keeps (counters zeroed once).
// bytes = W (2 rows k, or packed + scales) + 2mk (x) + 2mn (y) [+ 2 rows (bias)]; flops = 2 m k rows.
static void bench_linears(bench &b, int format)
{
    const char *kernel = format ? "k_linear_quant" : "k_linear_small";
    const char *variant = format == K_QUANT_INT8 ? "int8" : format == K_QUANT_INT4 ? "int4" : "";
    for (const layer &l : LAYERS)
        for (int m : LINEAR_M) {
            row r = make_row(kernel, variant, "fp16", {{"model", l.m->name}, {"layer", l.name}, {"m", m}},
                             l.is_main() && m == 1);
            const double w_bytes = format ? packed_bytes(format, l.rows(), l.k) : 2.0 * l.rows() * l.k;
            r.bytes = w_bytes + 2.0 * m * l.k + 2.0 * m * l.n + (l.bias ? 2.0 * l.rows() : 0);
            r.flops = 2.0 * m * l.k * l.rows();
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            const __half *x = buf.halves((size_t)m * l.k), *bias = l.bias ? buf.halves(l.rows()) : nullptr;
            __half *y = buf.empty<__half>((size_t)m * l.n);
            float *partials = buf.empty<float>(K_LINEAR_SMALL_PARTIAL_FLOATS);
            unsigned *counters = buf.zeros<unsigned>(K_LINEAR_SMALL_COUNTERS);
            if (format) {
                const qweight w = random_qweight(buf, format, l.rows(), l.k);
                const int splits = k_linear_quant_splits(format, m, l.k, l.n, l.epilogue, b.n_sms());
                b.run(r, buf.bytes, [&] {
                    return k_linear_quant(y, x, w.data, w.scales, bias, format, m, l.k, l.n, l.epilogue, splits,
                                          partials, counters, b.stream);
                });
            } else {
                const __half *w = buf.halves((size_t)l.rows() * l.k);
                const int splits = k_linear_small_splits(m, l.k, l.n, l.epilogue, b.n_sms());
                b.run(r, buf.bytes, [&] {
                    return k_linear_small(y, x, w, bias, m, l.k, l.n, l.epilogue, splits, partials, counters, b.stream);
                });
            }
        }
}

// k_linear_wgmma (Hopper only: no timed rows elsewhere) at the token counts the backend gives it (17-64; 24, 32 and
// 64 here) with the layer's epilogue, splits as k_linear_wgmma_splits chooses them (the backend sends it only the unsplit
// ones by default), the default stages. bytes and flops as for k_linear_small.
static void bench_linear_wgmma(bench &b)
{
    int available = 1; // listed everywhere, timed where the device runs it
    if (!b.opt.list)
        CHECK(k_linear_wgmma_available(&available));
    if (!available)
        return;
    for (const layer &l : LAYERS)
        for (int m : {24, 32, 64}) {
            row r = make_row("k_linear_wgmma", "", "fp16", {{"model", l.m->name}, {"layer", l.name}, {"m", m}}, false);
            r.bytes = 2.0 * l.rows() * l.k + 2.0 * m * l.k + 2.0 * m * l.n + (l.bias ? 2.0 * l.rows() : 0);
            r.flops = 2.0 * m * l.k * l.rows();
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            const __half *x = buf.halves((size_t)m * l.k), *bias = l.bias ? buf.halves(l.rows()) : nullptr;
            const __half *w = buf.halves((size_t)l.rows() * l.k);
            __half *y = buf.empty<__half>((size_t)m * l.n);
            const int splits = k_linear_wgmma_splits(m, l.k, l.n, l.epilogue, b.n_sms());
            b.run(r, buf.bytes, [&] {
                return k_linear_wgmma(y, x, w, bias, m, l.k, l.n, l.epilogue, splits, 0, b.stream);
            });
        }
}

// k_dequant of a whole quantized weight (llama1b gate_up, llama8b down) to fp16.
// bytes = packed + scales + 2 rows cols (out); flops = rows cols (q s) for INT8, 2 rows cols ((q - z) s) for INT4.
static void bench_dequant(bench &b)
{
    for (int format : {K_QUANT_INT8, K_QUANT_INT4})
        for (const layer *l : {&find_layer(LLAMA1B, "gate_up"), &find_layer(LLAMA8B, "down")}) {
            const double size = (double)l->rows() * l->k;
            row r = make_row("k_dequant", format == K_QUANT_INT8 ? "int8" : "int4", "fp16",
                             {{"model", l->m->name}, {"layer", l->name}}, l->is_main());
            r.bytes = packed_bytes(format, l->rows(), l->k) + 2 * size;
            r.flops = (format == K_QUANT_INT8 ? 1 : 2) * size;
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            const qweight w = random_qweight(buf, format, l->rows(), l->k);
            __half *out = buf.empty<__half>((size_t)l->rows() * l->k);
            b.run(r, buf.bytes, [&] { return k_dequant(out, w.data, w.scales, format, 0, l->rows(), l->k, b.stream); });
        }
}

// k_gather_rows: m rows picked at random from x[4096][d]. bytes = 2md (read) + 2md (written) + 4m (row ids);
// flops = 0.
static void bench_gather_rows(bench &b)
{
    for (const model *m : {&LLAMA1B, &LLAMA8B})
        for (int rows : {1, 8, 64, 256}) {
            row r =
                make_row("k_gather_rows", "", "fp16", {{"model", m->name}, {"m", rows}}, m == &LLAMA1B && rows == 256);
            r.bytes = 4.0 * rows * m->d + 4.0 * rows;
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            const __half *x = buf.halves((size_t)4096 * m->d);
            const int32_t *ids = buf.ints(rows, 4096);
            __half *out = buf.empty<__half>((size_t)rows * m->d);
            b.run(r, buf.bytes, [&] { return k_gather_rows(out, x, ids, rows, m->d, b.stream); });
        }
}

// k_half_to_float / k_float_to_half on logits[rows][vocab]: bytes = 6 rows vocab (2 one way, 4 the other); flops 0.
static void bench_convert(bench &b)
{
    const int vocab = 128256;
    for (bool to_float : {true, false})
        for (int rows : {1, 64, 256}) {
            row r = make_row(to_float ? "k_half_to_float" : "k_float_to_half", "",
                             to_float ? "fp16->fp32" : "fp32->fp16", {{"rows", rows}, {"vocab", vocab}}, rows == 256);
            const size_t n = (size_t)rows * vocab;
            r.bytes = 6.0 * n;
            if (!b.wanted(r))
                continue;
            buffers buf(b);
            if (to_float) {
                const __half *in = buf.halves(n);
                float *out = buf.empty<float>(n);
                b.run(r, buf.bytes, [&] { return k_half_to_float(out, in, n, b.stream); });
            } else {
                const float *in = buf.floats(n);
                __half *out = buf.empty<__half>(n);
                b.run(r, buf.bytes, [&] { return k_float_to_half(out, in, n, b.stream); });
            }
        }
}

// k_sample on logits uniform in [-8, 8]: greedy (temperature 0) or top_p (temperature 0.8, top_p 0.9, no top_k or
// min_p), u uniform in [0, 1) per row. bytes = 2 rows vocab (logits read once) + rows (sizeof(k_sample_row) + 4);
// flops = rows vocab (greedy: a comparison per logit) or 4 rows vocab (top_p: subtract the max, scale, exp, sum —
// the minimum; the kernel's radix passes recompute the weights).
static void bench_sample(bench &b)
{
    for (bool greedy : {true, false})
        for (int rows : {1, 8, 64, 256})
            for (int vocab : {50257, 128256}) {
                row r = make_row("k_sample", greedy ? "greedy" : "top_p", "fp16", {{"rows", rows}, {"vocab", vocab}},
                                 rows == 64 && vocab == 128256);
                r.bytes = 2.0 * rows * vocab + rows * (sizeof(k_sample_row) + 4.0);
                r.flops = (greedy ? 1.0 : 4.0) * rows * vocab;
                if (!b.wanted(r))
                    continue;
                buffers buf(b);
                std::uniform_real_distribution<float> u(0.0f, 1.0f);
                std::vector<k_sample_row> params(rows);
                for (k_sample_row &p : params)
                    p = {greedy ? 0.0f : 0.8f, greedy ? 1.0f : 0.9f, 0.0f, u(b.rng), 0};
                const __half *logits = buf.halves((size_t)rows * vocab, -8, 8);
                const k_sample_row *rows_dev = buf.upload(params);
                int32_t *tokens = buf.empty<int32_t>(rows);
                b.run(r, buf.bytes, [&] { return k_sample(tokens, logits, rows_dev, rows, vocab, b.stream); });
            }
}

// ---- output ----

static void json_string(FILE *f, const std::string &s)
{
    fputc('"', f);
    for (unsigned char c : s) {
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

// The kernel module's version (/proc/driver/nvidia/version: "... Kernel Module [for x86_64]  550.54.15  ...") and
// the CUDA version the driver supports.
static std::string driver_version()
{
    int v;
    CHECK(cudaDriverGetVersion(&v));
    char cuda[32];
    snprintf(cuda, sizeof cuda, "CUDA %d.%d", v / 1000, v % 1000 / 10);
    std::string module;
    if (FILE *f = fopen("/proc/driver/nvidia/version", "r")) {
        char line[512] = "";
        if (fgets(line, sizeof line, f) && strstr(line, "Module")) {
            char *save, *tok = strtok_r(strstr(line, "Module"), " \t\n", &save);
            while (tok && !(isdigit((unsigned char)tok[0]) && strchr(tok, '.')))
                tok = strtok_r(nullptr, " \t\n", &save);
            if (tok)
                module = tok;
        }
        fclose(f);
    }
    return module.empty() ? cuda : module + " (" + cuda + ")";
}

struct run_info {
    std::string date, driver, runtime;
    double copy_gbs, fp16_tflops; // negative: not measured (--ncu)
    int pdl;
};

static void write_number(FILE *f, double v)
{
    if (v < 0 || !std::isfinite(v))
        fputs("null", f);
    else
        fprintf(f, "%.6g", v);
}

static void write_json(FILE *f, const bench &b, const run_info &info)
{
    const cudaDeviceProp &p = b.prop;
    fputs("{\"schema\": 1, \"device\": {\"name\": ", f);
    json_string(f, p.name);
    fprintf(f, ", \"sms\": %d, \"l2_bytes\": %d, \"memory_bytes\": %zu, \"cc\": \"%d.%d\", \"driver\": ",
            p.multiProcessorCount, p.l2CacheSize, p.totalGlobalMem, p.major, p.minor);
    json_string(f, info.driver);
    fputs(", \"runtime\": ", f);
    json_string(f, info.runtime);
    fputs("},\n \"commit\": ", f);
    json_string(f, b.opt.commit);
    fprintf(f, ", \"date\": \"%s\", \"method\": {\"warmup\": %d, \"iters\": %d, \"l2_flush\": %s},\n",
            info.date.c_str(), b.opt.warmup, b.opt.iters, b.opt.flush ? "true" : "false");
    fputs(" \"ceilings\": {\"copy_gbs\": ", f);
    write_number(f, info.copy_gbs);
    fputs(", \"fp16_tflops\": ", f);
    write_number(f, info.fp16_tflops);
    fprintf(f, "}, \"pdl\": %s,\n \"rows\": [", info.pdl ? "true" : "false");
    for (size_t i = 0; i < b.rows.size(); i++) {
        const row &r = b.rows[i];
        fputs(i ? ",\n  {\"kernel\": " : "\n  {\"kernel\": ", f);
        json_string(f, r.kernel);
        fputs(", \"variant\": ", f);
        json_string(f, r.variant);
        fputs(", \"config\": ", f);
        json_string(f, r.config());
        fputs(", \"params\": {", f);
        for (size_t j = 0; j < r.params.size(); j++) {
            fputs(j ? ", " : "", f);
            json_string(f, r.params[j].key);
            fputs(": ", f);
            if (r.params[j].number)
                fputs(r.params[j].value.c_str(), f);
            else
                json_string(f, r.params[j].value);
        }
        fputs("}, \"dtype\": ", f);
        json_string(f, r.dtype);
        fprintf(f,
                ", \"main\": %s, \"bytes\": %.0f, \"flops\": %.0f,\n   \"us\": {\"mean\": %.4f, \"std\": %.4f, "
                "\"min\": %.4f, \"max\": %.4f, \"p50\": %.4f, \"p95\": %.4f, \"p99\": %.4f}, ",
                r.main ? "true" : "false", r.bytes, r.flops, r.us.mean, r.us.std, r.us.min, r.us.max, r.us.p50,
                r.us.p95, r.us.p99);
        fprintf(f, "\"gbs\": %.6g, \"tflops\": %.6g, \"mem_bytes\": %.0f, \"device_used_bytes\": %.0f}", r.gbs(),
                r.tflops(), r.mem_bytes, r.device_used_bytes);
    }
    fputs("\n ]}\n", f);
}

static void every_kernel(bench &b)
{
    bench_embed(b);
    bench_norms(b);
    bench_bias(b);
    bench_silu_mul(b);
    bench_rope_store_kv(b);
    bench_attention_prefill(b);
    bench_attention_decode(b);
    bench_linears(b, 0);
    bench_linears(b, K_QUANT_INT8);
    bench_linears(b, K_QUANT_INT4);
    bench_linear_wgmma(b);
    bench_dequant(b);
    bench_gather_rows(b);
    bench_convert(b);
    bench_sample(b);
}

// A selection that matches nothing (a misspelt --only) is an error, not an empty result.
static bool selected_any(const bench &b, size_t n_rows)
{
    if (n_rows == 0)
        fprintf(stderr, "bench_kernels: no row matches --only %s%s\n", b.opt.only ? b.opt.only : "(none)",
                b.opt.main_only ? " with --main" : "");
    return n_rows > 0;
}

int main(int argc, char **argv)
{
    bench b;
    b.opt = parse_options(argc, argv);
    if (b.opt.list) {
        every_kernel(b);
        return selected_any(b, (size_t)b.n_listed) ? 0 : 1;
    }
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        fprintf(stderr, "bench_kernels: no usable CUDA device (%s)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 1;
    }
    // Opened before the run so that a bad path fails now, not after it.
    FILE *json = b.opt.json ? fopen(b.opt.json, "w") : nullptr;
    if (b.opt.json && !json) {
        fprintf(stderr, "bench_kernels: cannot write %s: %s\n", b.opt.json, strerror(errno));
        return 1;
    }

    run_info info;
    char date[32];
    const time_t now = time(nullptr);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    info.date = date;
    CHECK(cudaGetDeviceProperties(&b.prop, 0));
    int rt;
    CHECK(cudaRuntimeGetVersion(&rt));
    info.runtime = std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10);
    info.driver = driver_version();
    CHECK(k_pdl_configure(1, &info.pdl));
    CHECK(k_attention_prefill_tile_rows(1, &b.hopper_rows));
    CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    b.rng.seed(b.opt.seed);
    b.start.resize(b.opt.iters), b.stop.resize(b.opt.iters);
    for (int i = 0; i < b.opt.iters; i++) {
        CHECK(cudaEventCreate(&b.start[i]));
        CHECK(cudaEventCreate(&b.stop[i]));
    }
    b.flush_bytes = 2 * (size_t)b.prop.l2CacheSize;
    CHECK(cudaMalloc(&b.flush_buf, b.flush_bytes));

    info.copy_gbs = b.opt.ncu ? -1 : copy_gbs(b);
    info.fp16_tflops = b.opt.ncu ? -1 : gemm_tflops(b);
    printf("device: %s (cc %d.%d, %d SMs, L2 %d MB), driver %s, runtime %s, commit %s, seed %llu, PDL %s\n",
           b.prop.name, b.prop.major, b.prop.minor, b.n_sms(), b.prop.l2CacheSize >> 20, info.driver.c_str(),
           info.runtime.c_str(), b.opt.commit, b.opt.seed, info.pdl ? "on" : "off");
    if (b.opt.ncu)
        printf("ceilings: not measured (--ncu)");
    else
        printf("ceilings: copy %.0f GB/s (read + write), cuBLAS fp16 GEMM %.1f TFLOP/s", info.copy_gbs,
               info.fp16_tflops);
    printf("; method: %d warm-up, %d timed, L2 flush %s\n\n", b.opt.warmup, b.opt.iters, b.opt.flush ? "on" : "off");
    printf("%-20s %-8s %-36s %10s %10s %8s %8s %9s\n", "kernel", "variant", "config", "p50 us", "p99 us", "GB/s",
           "TFLOP/s", "mem MiB");

    every_kernel(b);
    printf("\n%zu rows (* = main configuration)\n", b.rows.size());
    if (!selected_any(b, b.rows.size()))
        return 1;

    if (json) {
        write_json(json, b, info);
        if (ferror(json) | fclose(json)) {
            fprintf(stderr, "bench_kernels: writing %s: %s\n", b.opt.json, strerror(errno));
            return 1;
        }
        printf("wrote %s\n", b.opt.json);
    }
    return 0;
}
