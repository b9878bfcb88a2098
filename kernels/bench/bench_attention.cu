// bench_attention.cu — the shipped attention launchers (version 0, linked from libfk_kernels) on the issue's
// shapes, against the device's own measured ceilings in the same run:
//   decode:  64 sequences x 4096 context, 32 query / 8 KV heads, head_dim 128, block 16  -> GB/s of K+V read,
//            as a fraction of the measured device-to-device copy bandwidth (bytes read + written)
//   prefill: 4 x 4096 tokens, 16 heads, head_dim 128, causal                              -> TFLOP/s
// PyTorch SDPA on the same shapes is measured by bench/peers.py in the same script run (tests/gpu/run-on-device.sh).
// Timing: CUDA events, 5 warm-ups, median of 20; inputs random, rotated among several buffers for the decode.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels.h"

#define CHECK(call)                                                                                                \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        if (e_ != cudaSuccess) {                                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));                \
            exit(1);                                                                                               \
        }                                                                                                          \
    } while (0)

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

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const double copy = copy_gbs();
    printf("device: %s, %d SMs; measured copy bandwidth %.0f GB/s (read + write)\n", prop.name,
           prop.multiProcessorCount, copy);

    // Decode: 64 x 4096, 32/8 heads, D 128. Three copies of the cache, rotated, so L2 (50-60 MB) cannot hold it.
    {
        const int S = 64, ctx = 4096, H = 32, Hkv = 8, D = 128, copies = 3;
        std::vector<paged> p;
        for (int c = 0; c < copies; c++)
            p.push_back(make_paged(S, ctx, 1, H, Hkv, D, 100 + c, nullptr));
        const int split_rows = (6 * prop.multiProcessorCount + Hkv - 1) / Hkv + S;
        void *scratch;
        CHECK(cudaMalloc(&scratch, (size_t)split_rows * k_attention_decode_scratch_bytes(1, H, D, 1)));
        // The backend's choice (backend_cuda.c decode_splits): about 6 blocks per SM, splits of >= 256 keys.
        const int target = 6 * prop.multiProcessorCount;
        int n_splits = std::min((target + S * Hkv - 1) / (S * Hkv), (ctx + 255) / 256);
        n_splits = std::max(n_splits, 1);
        const int split_len = (ctx + n_splits - 1) / n_splits;
        const float ms = median_ms([&](int i) {
            CHECK(k_attention_decode(&p[i % copies].a, split_len, n_splits, scratch, 0));
        });
        const double bytes = 2.0 * S * ctx * Hkv * D * sizeof(__half);
        const double gbs = bytes / (ms * 1e-3) / 1e9;
        printf("RESULT decode_attention 64x4096 h32/8 d128: %.3f ms, %.0f GB/s = %.0f%% of copy (floor 60%%), %d splits\n",
               ms, gbs, 100 * gbs / copy, n_splits);
    }

    // Prefill: 4 x 4096 tokens, 16 heads (MHA), D 128, causal.
    {
        const int S = 4, n = 4096, H = 16, D = 128;
        std::vector<int> qs(S + 1);
        paged p = make_paged(S, n, n, H, H, D, 7, qs.data());
        std::vector<int32_t> tiles; // heaviest first, as backend_cuda.c orders them
        for (int q0 = n - 64; q0 >= 0; q0 -= 64)
            for (int s = 0; s < S; s++)
                tiles.push_back(s), tiles.push_back(q0);
        int32_t *d_tiles;
        CHECK(cudaMalloc(&d_tiles, tiles.size() * 4));
        CHECK(cudaMemcpy(d_tiles, tiles.data(), tiles.size() * 4, cudaMemcpyHostToDevice));
        const int n_tiles = (int)tiles.size() / 2;
        const float ms = median_ms([&](int) { CHECK(k_attention_prefill(&p.a, d_tiles, n_tiles, 0)); });
        const double flops = 4.0 * S * H * D * ((double)n * (n + 1) / 2); // QK^T and PV over the causal half
        printf("RESULT prefill_attention 4x4096 h16 d128 causal: %.3f ms, %.1f TFLOP/s\n", ms, flops / (ms * 1e-3) / 1e12);
    }
    return 0;
}
