// bench_attention.cu — the shipped attention launchers (version 0, linked from libfk_kernels) on the issues' shapes,
// against the device's own measured copy bandwidth in the same run:
//   decode (GB/s of K+V read, % of copy bandwidth read + written): 64 x 4096 and 16 x 16384 with 32 query / 8 KV
//     heads, head_dim 128 (and 64 x 4096 at head_dim 64, Llama-3.2-1B's), block 16 in shuffled order; 1 x 32768,
//     where the splits must fill every SM. Splits as the backend chooses them (k_attention_decode_splits).
//   prefill (TFLOP/s, causal: 4 D n (n + 1) / 2 per sequence and head): 4 x 4096 tokens, 16 heads d128 and 32
//     heads d64, with each kernel the device has (the Hopper wgmma kernel's 128-query tiles, mma.sync's 64),
//     tiles heaviest first as the backend orders them.
// PyTorch SDPA (flash, cuDNN) on the same shapes is measured by bench/peers.py in the same script run
// (tests/gpu/run-on-device.sh). A read-only stream (read_stream) gives the device's read ceiling beside the copy
// bandwidth. Timing: CUDA events, 5 warm-ups and the median of 20 (decode: 10 and 50); decode inputs rotated among
// copies that together exceed the L2 cache. Build-time variants of the decode kernel (FK_DECODE_STAGES,
// FK_DECODE_WARPS, FK_DECODE_PREFETCH) are this program compiled with the kernel's source and other values
// (kernels/bench/meson.build).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "bench_check.h"
#include "kernels.h"

static __global__ void fill_random(__half *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed;
        x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15;
        p[i] = __float2half(((x & 0xffff) / 32768.0f) - 1.0f);
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

template <typename F> static float median_ms(F run, int warmup = 5, int reps = 20)
{
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < warmup; i++)
        run(i);
    std::vector<float> t;
    for (int i = 0; i < reps; i++) {
        CHECK(cudaEventRecord(a));
        run(i);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

// Device-to-device copy bandwidth, counting bytes read plus written.
static double copy_gbs()
{
    const size_t bytes = 2ull << 30;
    void *src, *dst;
    CHECK(cudaMalloc(&src, bytes));
    CHECK(cudaMalloc(&dst, bytes));
    CHECK(cudaMemset(src, 1, bytes));
    float ms = median_ms([&](int) { CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); });
    CHECK(cudaFree(src));
    CHECK(cudaFree(dst));
    return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

// A read-only stream: each thread sums UNROLL 16-byte loads in flight per round, grid-strided over n vectors; the
// sum is stored only where it is the impossible value, so nothing is written but the loads stay.
template <int UNROLL> static __global__ void read_stream(const uint4 *p, size_t n, unsigned *sink)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += UNROLL * stride) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            v[u] = i + u * stride < n ? __ldcs(p + i + u * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (acc == 0x9e3779b9u)
        *sink = acc;
}

// The best of a few read-only streams over 1 GiB (no write traffic): what a kernel that only reads, as decode
// attention does, can reach on this device, beside the copy bandwidth the targets are stated against.
static double read_gbs(int n_sms)
{
    const size_t bytes = 1ull << 30, n = bytes / 16;
    uint4 *p;
    unsigned *sink;
    CHECK(cudaMalloc(&p, bytes));
    CHECK(cudaMalloc(&sink, 4));
    CHECK(cudaMemset(p, 1, bytes));
    double best = 0;
    for (int blocks_per_sm : {4, 8, 16}) {
        const int grid = blocks_per_sm * n_sms;
        const float ms4 = median_ms([&](int) { read_stream<4><<<grid, 256>>>(p, n, sink); });
        const float ms8 = median_ms([&](int) { read_stream<8><<<grid, 256>>>(p, n, sink); });
        CHECK(cudaGetLastError());
        best = std::max(best, bytes / (std::min(ms4, ms8) * 1e-3) / 1e9);
    }
    CHECK(cudaFree(p));
    CHECK(cudaFree(sink));
    return best;
}

struct paged {
    k_attn_args a;
    int32_t *tables;
};

// n_seqs sequences of ctx tokens each, blocks of 16 handed out in a shuffled order.
static paged make_paged(int n_seqs, int ctx, int n_q, int H, int Hkv, int D, unsigned seed, int *qs_host_out)
{
    const int B = 16, blocks_per_seq = (ctx + B - 1) / B, num_blocks = n_seqs * blocks_per_seq;
    std::vector<int32_t> perm(num_blocks), qs(n_seqs + 1), cl(n_seqs);
    for (int i = 0; i < num_blocks; i++)
        perm[i] = i;
    srand(seed);
    for (int i = num_blocks - 1; i > 0; i--)
        std::swap(perm[i], perm[rand() % (i + 1)]);
    for (int s = 0; s <= n_seqs; s++)
        qs[s] = s * n_q;
    for (int s = 0; s < n_seqs; s++)
        cl[s] = ctx;
    paged p{};
    int32_t *d_qs, *d_cl;
    CHECK(cudaMalloc(&p.tables, perm.size() * 4));
    CHECK(cudaMalloc(&d_qs, qs.size() * 4));
    CHECK(cudaMalloc(&d_cl, cl.size() * 4));
    CHECK(cudaMemcpy(p.tables, perm.data(), perm.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_qs, qs.data(), qs.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_cl, cl.data(), cl.size() * 4, cudaMemcpyHostToDevice));
    const size_t pool = (size_t)num_blocks * Hkv * B * D, n_tok = (size_t)n_seqs * n_q;
    p.a.k_cache = random_halves(pool, seed + 1);
    p.a.v_cache = random_halves(pool, seed + 2);
    p.a.qkv = random_halves(n_tok * (H + 2 * Hkv) * D, seed + 3);
    CHECK(cudaMalloc(&p.a.out, n_tok * H * D * sizeof(__half)));
    p.a.query_start = d_qs;
    p.a.context_len = d_cl;
    p.a.block_tables = p.tables;
    p.a.n_seqs = n_seqs;
    p.a.max_blocks = blocks_per_seq;
    p.a.n_heads = H;
    p.a.n_kv_heads = Hkv;
    p.a.head_dim = D;
    p.a.block_size = B;
    p.a.scale = 0.08838834764f;
    if (qs_host_out)
        std::copy(qs.begin(), qs.end(), qs_host_out);
    return p;
}

static void free_paged(paged &p)
{
    void *all[] = {p.tables, (void *)p.a.query_start, (void *)p.a.context_len, (void *)p.a.k_cache,
                   (void *)p.a.v_cache, (void *)p.a.qkv, p.a.out};
    for (void *q : all)
        CHECK(cudaFree(q));
}

// Decode: n_seqs x ctx, H / Hkv heads of D; copies of the cache rotated so the L2 cache cannot hold them.
static void bench_decode(const char *variant, int S, int ctx, int H, int Hkv, int D, int n_sms, double copy)
{
    const double bytes = 2.0 * S * ctx * Hkv * D * sizeof(__half);
    const int copies = bytes > 150e6 ? 2 : (int)(300e6 / bytes) + 1;
    std::vector<paged> p;
    for (int c = 0; c < copies; c++)
        p.push_back(make_paged(S, ctx, 1, H, Hkv, D, 100 + c, nullptr));
    // The backend's scratch bounds the policy's splits; the sweep below also tries up to 33 splits a pair, where the
    // blocks (splits x pairs) can make whole waves on the SMs (64 x 8 pairs: 512 s blocks on 132 SMs is 97 % of
    // whole waves for s <= 8, 99.7 % at s = 9). On an H100 every such split lost to the policy's (BENCHMARKS.md,
    // 2026-12-06).
    constexpr int SWEEP_MAX_SPLITS = 33;
    const size_t split_bytes = (size_t)S * H * (D + 2) * sizeof(float);
    const size_t scratch_bytes =
        std::max(k_attention_decode_scratch_bytes(S, H, Hkv, D, n_sms), SWEEP_MAX_SPLITS * split_bytes);
    void *scratch;
    CHECK(cudaMalloc(&scratch, scratch_bytes));
    auto time_splits = [&](int n_splits) {
        const int split_len = (ctx + n_splits - 1) / n_splits;
        auto run = [&](int i) { CHECK(k_attention_decode(&p[i % copies].a, split_len, n_splits, scratch, 0)); };
        return median_ms(run, 10, 50);
    };
    const int n_splits = k_attention_decode_splits(S, Hkv, ctx, n_sms);
    const float ms = time_splits(n_splits);
    const double gbs = bytes / (ms * 1e-3) / 1e9;
    printf("RESULT decode_attention%s %dx%d h%d/%d d%d: %.3f ms, %.0f GB/s = %.1f%% of copy, %d splits, %d blocks\n",
           variant, S, ctx, H, Hkv, D, ms, gbs, 100 * gbs / copy, n_splits, n_splits * Hkv * S);
    // The policy against other split counts, for tuning it.
    const size_t max_splits = scratch_bytes / split_bytes;
    printf("SWEEP decode_attention%s %dx%d d%d:", variant, S, ctx, D);
    for (int sp : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17, 24, 33, 48, 66, 99, 132})
        if ((size_t)sp <= max_splits && sp <= (ctx + 63) / 64)
            printf(" %d:%.1f%%", sp, 100 * bytes / (time_splits(sp) * 1e-3) / 1e9 / copy);
    printf("\n");
    for (paged &q : p)
        free_paged(q);
    CHECK(cudaFree(scratch));
}

// Decode over S sequences of lo .. hi keys (uniform at random, fixed seed), 32 / 8 heads of 64 (Llama-3.2-1B, as
// bench-1b's 256-request steps have them at 128 + 1 .. 128 + 128), on each kernel: the shared-memory one
// (K_DECODE_STAGED) and the default choice (K_DECODE_AUTO: the fragments kernel from 7 x SMs pairs).
static void bench_decode_kernels(int S, int lo, int hi, int n_sms, double copy)
{
    const int H = 32, Hkv = 8, D = 64, copies = 3;
    std::vector<paged> p;
    std::vector<int32_t> cl(S);
    srand(7);
    double bytes = 0;
    for (int s = 0; s < S; s++)
        cl[s] = lo + rand() % (hi - lo + 1), bytes += 4.0 * cl[s] * Hkv * D;
    for (int c = 0; c < copies; c++) {
        p.push_back(make_paged(S, hi, 1, H, Hkv, D, 200 + c, nullptr));
        CHECK(cudaMemcpy((void *)p.back().a.context_len, cl.data(), S * 4, cudaMemcpyHostToDevice));
    }
    void *scratch;
    CHECK(cudaMalloc(&scratch, k_attention_decode_scratch_bytes(S, H, Hkv, D, n_sms)));
    const int n_splits = k_attention_decode_splits(S, Hkv, hi, n_sms), split_len = (hi + n_splits - 1) / n_splits;
    // the shared-memory kernel, the launcher's choice, and the fragments kernel with 1, 2 and 4 warps a pair
    const struct {
        int kernel, slices;
        const char *name;
    } variants[] = {{K_DECODE_STAGED, 0, "staged"},
                    {K_DECODE_AUTO, 0, "auto  "},
                    {K_DECODE_FRAGMENTS, 1, "frag/1"},
                    {K_DECODE_FRAGMENTS, 2, "frag/2"},
                    {K_DECODE_FRAGMENTS, 4, "frag/4"}};
    for (const auto &v : variants) {
        for (paged &q : p)
            q.a.decode_kernel = v.kernel, q.a.decode_slices = v.slices;
        auto run = [&](int i) { CHECK(k_attention_decode(&p[i % copies].a, split_len, n_splits, scratch, 0)); };
        const float ms = median_ms(run, 10, 50);
        const double gbs = bytes / (ms * 1e-3) / 1e9;
        printf("RESULT decode_attention %s %dx%d..%d h%d/%d d%d: %.2f us, %.0f GB/s = %.1f%% of copy\n", v.name, S,
               lo, hi, H, Hkv, D, ms * 1e3, gbs, 100 * gbs / copy);
    }
    for (paged &q : p)
        free_paged(q);
    CHECK(cudaFree(scratch));
}

// Prefill: S x n tokens, H heads of D, causal, with tiles of tile_rows queries.
static void bench_prefill(int S, int n, int H, int D, int tile_rows)
{
    std::vector<int> qs(S + 1);
    paged p = make_paged(S, n, n, H, H, D, 7, qs.data());
    std::vector<int32_t> tiles; // heaviest first, as backend_cuda.c orders them
    for (int q0 = (n - 1) / tile_rows * tile_rows; q0 >= 0; q0 -= tile_rows)
        for (int s = 0; s < S; s++)
            tiles.push_back(s), tiles.push_back(q0);
    int32_t *d_tiles;
    CHECK(cudaMalloc(&d_tiles, tiles.size() * 4));
    CHECK(cudaMemcpy(d_tiles, tiles.data(), tiles.size() * 4, cudaMemcpyHostToDevice));
    const int n_tiles = (int)tiles.size() / 2;
    const float ms = median_ms([&](int) { CHECK(k_attention_prefill(&p.a, d_tiles, n_tiles, tile_rows, 0)); });
    const double flops = 4.0 * S * H * D * ((double)n * (n + 1) / 2); // QK^T and PV over the causal half
    printf("RESULT prefill_attention %dx%d h%d d%d causal, %s kernel: %.3f ms, %.1f TFLOP/s\n", S, n, H, D,
           tile_rows == 128 ? "hopper (wgmma)" : "mma.sync", ms, flops / (ms * 1e-3) / 1e12);
    free_paged(p);
    CHECK(cudaFree(d_tiles));
}

int main(int argc, char **argv)
{
    const char *variant = argc > 1 ? argv[1] : ""; // a label for build-time variants: decode only
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const double copy = copy_gbs();
    printf("device: %s, %d SMs; measured copy bandwidth %.0f GB/s (read + write)\n", prop.name,
           prop.multiProcessorCount, copy);
    const int n_sms = prop.multiProcessorCount;
    const double read = read_gbs(n_sms);
    printf("RESULT read_stream 1 GiB: %.0f GB/s = %.1f%% of copy (the most a read-only kernel reached)\n", read,
           100 * read / copy);
    bench_decode(variant, 64, 4096, 32, 8, 128, n_sms, copy);
    bench_decode(variant, 16, 16384, 32, 8, 128, n_sms, copy);
    bench_decode(variant, 1, 32768, 32, 8, 128, n_sms, copy);
    bench_decode(variant, 64, 4096, 32, 8, 64, n_sms, copy);
    if (*variant)
        return 0;
    for (int S : {16, 32, 48, 64, 96, 112, 128, 160, 192, 256, 384})
        bench_decode_kernels(S, 129, 256, n_sms, copy);
    bench_decode_kernels(64, 400, 512, n_sms, copy);
    bench_decode_kernels(64, 1000, 1100, n_sms, copy);
    bench_decode_kernels(256, 1000, 1100, n_sms, copy);
    int hopper_rows;
    CHECK(k_attention_prefill_tile_rows(1, &hopper_rows));
    for (int rows : {hopper_rows, 64}) {
        bench_prefill(4, 4096, 16, 128, rows);
        bench_prefill(4, 4096, 32, 64, rows);
        if (rows == 64)
            break;
    }
    return 0;
}
