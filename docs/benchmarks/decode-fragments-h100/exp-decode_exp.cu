// Decode attention at bench-1b's 256-request shape: configs of the shipped kernel, and a read-only gather ceiling.
#include "../../kernels/attention_decode.cu"
#include "decode_reg.cuh"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <cstring>
#include <vector>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

static __global__ void fill_random(__half *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed;
        x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15;
        p[i] = __float2half(((x & 0xffff) / 32768.0f) - 1.0f);
    }
}
// Reads every (seq, kvh) page's K and V as the attention does; one block per pair; sums to defeat elimination.
static __global__ void gather_read(k_attn_args a, float *sink)
{
    const int kvh = blockIdx.y, seq = blockIdx.z, D = a.head_dim;
    const int ctx = a.context_len[seq];
    const int32_t *blocks = a.block_tables + (size_t)seq * a.max_blocks;
    float acc = 0;
    const int pieces = D / 8;
    for (int i = threadIdx.x; i < ctx * pieces; i += blockDim.x) {
        const int key = i / pieces, c = (i % pieces) * 8;
        const int blk = blocks[key / a.block_size];
        const size_t at = (((size_t)blk * a.n_kv_heads + kvh) * a.block_size + key % a.block_size) * D + c;
        uint4 k = *(const uint4 *)((const __half *)a.k_cache + at), v = *(const uint4 *)((const __half *)a.v_cache + at);
        acc += __uint_as_float(k.x ^ v.y) + __uint_as_float(k.z ^ v.w);
    }
    if (acc == 1.2345f) sink[0] = acc;
}
// Pure read of n uint4, grid-stride, 4 loads in flight per thread.
static __global__ void read_all(const uint4 *p, size_t n, float *sink)
{
    uint32_t acc = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = load_stream16(p + i), b = load_stream16(p + i + stride), c = load_stream16(p + i + 2 * stride),
              d = load_stream16(p + i + 3 * stride);
        acc ^= a.x ^ b.y ^ c.z ^ d.w;
    }
    for (; i < n; i += stride) acc ^= p[i].x;
    if (acc == 0x12345678u) sink[0] = acc;
}
// The attention's pages, one warp per pair, all of a 32-key step's loads in flight (8 x 16 B a thread).
static __global__ void gather_warp(k_attn_args a, float *sink)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int pair = blockIdx.x * (blockDim.x / 32) + warp;
    if (pair >= a.n_seqs * a.n_kv_heads) return;
    const int seq = pair / a.n_kv_heads, kvh = pair % a.n_kv_heads, D = 64, B = a.block_size;
    const int ctx = a.context_len[seq];
    const int32_t *blocks = a.block_tables + (size_t)seq * a.max_blocks;
    const int tbl = lane < (ctx + B - 1) / B ? blocks[lane] : 0;
    uint32_t acc = 0;
    for (int kb = 0; kb < ctx; kb += 32) {
        uint4 r[8];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int blk = __shfl_sync(0xffffffffu, tbl, (kb + 16 * h) / B);
            const size_t base = (((size_t)blk * a.n_kv_heads + kvh) * B + (kb + 16 * h) % B) * D;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const int row = (lane / 8) + 4 * i + 8 * (i / 2), key = kb + 16 * h + lane / 8 + 4 * i;
                (void)row;
                r[4 * h + 2 * i] = key < ctx ? load_stream16((const __half *)a.k_cache + base + (size_t)(lane / 8 + 4 * i) * D + 8 * (lane % 8)) : make_uint4(0,0,0,0);
                r[4 * h + 2 * i + 1] = key < ctx ? load_stream16((const __half *)a.v_cache + base + (size_t)(lane / 8 + 4 * i) * D + 8 * (lane % 8)) : make_uint4(0,0,0,0);
                const int key2 = key + 8;
                r[4 * h + 2 * i] .y ^= key2 < ctx ? load_stream16((const __half *)a.k_cache + base + (size_t)(lane / 8 + 4 * i + 8) * D + 8 * (lane % 8)).x : 0;
                r[4 * h + 2 * i + 1].y ^= key2 < ctx ? load_stream16((const __half *)a.v_cache + base + (size_t)(lane / 8 + 4 * i + 8) * D + 8 * (lane % 8)).x : 0;
            }
        }
#pragma unroll
        for (int i = 0; i < 8; i++) acc ^= r[i].x ^ r[i].y;
    }
    if (acc == 0x12345678u) sink[0] = acc;
}
template <typename F> static float median_ms(F run, int warmup = 10, int reps = 60)
{
    cudaEvent_t x, y;
    CK(cudaEventCreate(&x)); CK(cudaEventCreate(&y));
    for (int i = 0; i < warmup; i++) run(i);
    std::vector<float> t;
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(x)); run(i); CK(cudaEventRecord(y)); CK(cudaEventSynchronize(y));
        float ms; CK(cudaEventElapsedTime(&ms, x, y)); t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}
struct setup { k_attn_args a; double bytes; };
static setup make(int S, int lo, int hi, int H, int Hkv, int D, unsigned seed)
{
    const int B = 16, mb = (hi + B - 1) / B, nb = S * mb;
    std::mt19937 rng(seed);
    std::vector<int32_t> perm(nb), qs(S + 1), cl(S);
    for (int i = 0; i < nb; i++) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    double bytes = 0;
    for (int s = 0; s < S; s++) { qs[s] = s; cl[s] = lo + (int)(rng() % (hi - lo + 1)); bytes += 4.0 * cl[s] * Hkv * D; }
    qs[S] = S;
    setup r{};
    int32_t *t, *q, *c;
    CK(cudaMalloc(&t, nb * 4)); CK(cudaMalloc(&q, (S + 1) * 4)); CK(cudaMalloc(&c, S * 4));
    CK(cudaMemcpy(t, perm.data(), nb * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(q, qs.data(), (S + 1) * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(c, cl.data(), S * 4, cudaMemcpyHostToDevice));
    const size_t pool = (size_t)nb * Hkv * B * D;
    __half *k, *v, *qkv, *out;
    CK(cudaMalloc(&k, pool * 2)); CK(cudaMalloc(&v, pool * 2));
    CK(cudaMalloc(&qkv, (size_t)S * (H + 2 * Hkv) * D * 2)); CK(cudaMalloc(&out, (size_t)S * H * D * 2));
    fill_random<<<1024, 256>>>(k, pool, seed + 1); fill_random<<<1024, 256>>>(v, pool, seed + 2);
    fill_random<<<1024, 256>>>(qkv, (size_t)S * (H + 2 * Hkv) * D, seed + 3);
    CK(cudaDeviceSynchronize());
    r.a.out = out; r.a.qkv = qkv; r.a.k_cache = k; r.a.v_cache = v; r.a.query_start = q; r.a.context_len = c;
    r.a.block_tables = t; r.a.n_seqs = S; r.a.max_blocks = mb; r.a.n_heads = H; r.a.n_kv_heads = Hkv;
    r.a.head_dim = D; r.a.block_size = B; r.a.scale = 0.125f;
    r.bytes = bytes;
    return r;
}
static std::vector<__half> result(const setup &s)
{
    std::vector<__half> h((size_t)s.a.n_seqs * s.a.n_heads * s.a.head_dim);
    CK(cudaMemcpy(h.data(), s.a.out, h.size() * 2, cudaMemcpyDeviceToHost));
    return h;
}
static double maxdiff(const std::vector<__half> &x, const std::vector<__half> &y)
{
    double m = 0;
    for (size_t i = 0; i < x.size(); i++) m = std::max(m, (double)fabsf(__half2float(x[i]) - __half2float(y[i])));
    return m;
}
typedef cudaError_t (*launcher)(const k_attn_args *, int, int, float *, cudaStream_t);
struct cfg { const char *name; launcher f; };

int main(int argc, char **argv)
{
    int lo = argc > 2 ? atoi(argv[1]) : 129, hi = argc > 2 ? atoi(argv[2]) : 256, S = argc > 3 ? atoi(argv[3]) : 256;
    const int H = 32, Hkv = 8, D = 64, copies = 3;
    std::vector<setup> c;
    for (int i = 0; i < copies; i++) c.push_back(make(S, lo, hi, H, Hkv, D, 10 + i));
    float *scratch, *sink;
    CK(cudaMalloc(&scratch, 64 << 20)); CK(cudaMalloc(&sink, 4));
    const double bytes = c[0].bytes; // per copy differs slightly: use each's own
    double all = 0; for (auto &s : c) all += s.bytes;
    const double avg = all / copies;
    float ms = median_ms([&](int i) { gather_read<<<dim3(1, Hkv, S), 128>>>(c[i % copies].a, sink); });
    printf("%d seqs ctx %d..%d: %.1f MB K+V avg; gather_read 128 thr: %.2f us, %.0f GB/s\n", S, lo, hi, avg / 1e6, ms * 1e3, avg / ms / 1e6);
    ms = median_ms([&](int i) { gather_read<<<dim3(1, Hkv, S), 256>>>(c[i % copies].a, sink); });
    printf("gather_read 256 thr: %.2f us, %.0f GB/s\n", ms * 1e3, avg / ms / 1e6);
    {
        const size_t n = (size_t)(avg / 16);
        uint4 *big; CK(cudaMalloc(&big, n * 16 * 3)); CK(cudaMemset(big, 1, n * 16 * 3));
        for (int blocks : {132 * 4, 132 * 8, 132 * 16}) {
            ms = median_ms([&](int i) { read_all<<<blocks, 256>>>(big + (i % 3) * n, n, sink); });
            printf("read_all %d x 256: %.2f us, %.0f GB/s\n", blocks, ms * 1e3, avg / ms / 1e6);
        }
        CK(cudaFree(big));
        for (int th : {128, 256}) {
            ms = median_ms([&](int i) { gather_warp<<<(S * Hkv + th / 32 - 1) / (th / 32), th>>>(c[i % copies].a, sink); });
            printf("gather_warp %d: %.2f us, %.0f GB/s\n", th, ms * 1e3, avg / ms / 1e6);
        }
    }
    cfg cfgs[] = {{"w4s2", launch<64, 2, 4>}, {"w4s3", launch<64, 3, 4>}, {"w4s4", launch<64, 4, 4>},
                  {"w8s2", launch<64, 2, 8>}, {"w8s3", launch<64, 3, 8>}, {"w2s2", launch<64, 2, 2>},
                  {"w2s3", launch<64, 3, 2>}, {"w2s4", launch<64, 4, 2>}, {"w2s6", launch<64, 6, 2>},
                  {"r1d1", launch_reg<64, 1, 1, 4>}, {"r1d2", launch_reg<64, 2, 1, 4>}, {"r1d2b3", launch_reg<64, 2, 1, 3>},
                  {"r1d3", launch_reg<64, 3, 1, 3>}, {"r2d1", launch_reg<64, 1, 2, 4>}, {"r2d2", launch_reg<64, 2, 2, 4>},
                  {"r2d2b3", launch_reg<64, 2, 2, 3>}, {"r4d1", launch_reg<64, 1, 4, 4>}, {"r4d2", launch_reg<64, 2, 4, 4>},
                  {"r4d2b3", launch_reg<64, 2, 4, 3>}, {"r1d1b5", launch_reg<64, 1, 1, 5>},
                  {"r1d1b6", launch_reg<64, 1, 1, 6>}, {"r2d1b5", launch_reg<64, 1, 2, 5>},
                  {"s1d1", launch_reg<64, 1, 1, 4, false>}, {"r8d1", launch_reg<64, 1, 8, 1, true, 8>},
                  {"r8d2", launch_reg<64, 2, 8, 1, true, 8>},
                  {"r4d2n4", launch_reg<64, 2, 4, 2, true, 4>}, {"r8d1m2", launch_reg<64, 1, 8, 2, true, 8>}, {"s1d2b3", launch_reg<64, 2, 1, 3, false>}, {"s1d1b5", launch_reg<64, 1, 1, 5, false>}};
    std::vector<__half> ref;
    const char *only = argc > 4 ? argv[4] : nullptr;
    for (auto &f : cfgs) {
        if (only && strcmp(only, f.name)) continue;
        CK(f.f(&c[0].a, hi, 1, scratch, 0)); CK(cudaDeviceSynchronize());
        std::vector<__half> o = result(c[0]);
        if (ref.empty()) ref = o;
        ms = median_ms([&](int i) { CK(f.f(&c[i % copies].a, hi, 1, scratch, 0)); });
        printf("%s: %.2f us, %.0f GB/s, maxdiff vs w4s2 %.2e\n", f.name, ms * 1e3, avg / ms / 1e6, maxdiff(o, ref));
    }
    (void)bytes;
    return 0;
}
