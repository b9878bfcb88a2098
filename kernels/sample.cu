// sample.cu — choosing each row's next token where its logits are, so only token ids cross to the host. The rule is
// sampler_pick's (src/sampler.c), which the CPU oracle implements: temperature 0 takes the argmax (first index on
// ties); otherwise w = exp((logit - max) / T), keep w >= min_p, then w >= the top_k-th largest, then w >= the
// smallest weight needed to reach top_p of the kept mass (ties kept), and take the token where the running sum of
// kept w, in token order, first passes u * total. Thresholds are found by radix select over the weights' float bit
// patterns (positive floats order like their bits): four passes of 8 bits, each a shared-memory histogram.
// One block of 1024 threads per row.
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int THREADS = 1024;

struct row_ctx {
    const __half *logits;
    int vocab;
    float max, temperature;
};

__device__ __forceinline__ float weight(const row_ctx &c, int i)
{
    return expf((__half2float(c.logits[i]) - c.max) / c.temperature);
}

// The largest key t such that the kept keys >= t add up to at least `need`, counting each as 1 (by_mass false)
// or as its weight (by_mass true). Kept: weight >= floor and > 0.
__device__ float radix_threshold(const row_ctx &c, float floor, float need, bool by_mass, float *hist,
                                 float *scratch)
{
    uint32_t prefix = 0, mask = 0;
    float above = 0; // count or mass of kept keys above the current prefix range
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = threadIdx.x; b < 256; b += THREADS)
            hist[b] = 0;
        __syncthreads();
        for (int i = threadIdx.x; i < c.vocab; i += THREADS) {
            const float w = weight(c, i);
            const uint32_t key = __float_as_uint(w);
            if (w >= floor && w > 0 && (key & mask) == prefix)
                atomicAdd(&hist[(key >> shift) & 255], by_mass ? w : 1.0f);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int digit = 0;
            for (int b = 255; b >= 0; b--) {
                if (above + hist[b] >= need) {
                    digit = b;
                    break;
                }
                above += hist[b];
            }
            scratch[0] = __uint_as_float((uint32_t)digit);
            scratch[1] = above;
        }
        __syncthreads();
        prefix |= __float_as_uint(scratch[0]) << shift;
        mask |= 255u << shift;
        above = scratch[1];
        __syncthreads();
    }
    return __uint_as_float(prefix);
}

__global__ void __launch_bounds__(THREADS) sample_kernel(int32_t *tokens, const __half *logits,
                                                         const k_sample_row *rows, int vocab)
{
    pdl_wait();
    pdl_launch_dependents();
    __shared__ float scratch[32];
    __shared__ float hist[256];
    __shared__ int s_idx[32];
    const k_sample_row p = rows[blockIdx.x];
    row_ctx c = {logits + (size_t)blockIdx.x * vocab, vocab, 0, p.temperature};
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    // The largest logit and its first index. The row is read 8 logits at a time (16-byte loads, all of a thread's
    // in flight together) from its first aligned element on; a row of an odd vocabulary starts anywhere, so the few
    // logits before that element and after the last whole vector are read one by one. A thread sees its elements in
    // increasing order, so with ">" it keeps the first index of its maximum, as the block reduction below does
    // across threads.
    float best = -INFINITY;
    int best_i = vocab;
    auto consider = [&](float v, int i) {
        if (v > best)
            best = v, best_i = i;
    };
    const int head = min(vocab, (int)((16 - reinterpret_cast<uintptr_t>(c.logits) % 16) % 16 / sizeof(__half)));
    const int n_vec = (vocab - head) / 8;
    if (threadIdx.x < head)
        consider(__half2float(c.logits[threadIdx.x]), threadIdx.x);
    // IN_FLIGHT loads a thread are issued before any is compared: a vocabulary of up to 64K (GPT-2's 50,257, 6 or 7
    // vectors a thread) is one round trip to memory, not one a vector.
    constexpr int IN_FLIGHT = 8;
    const uint4 *vec = reinterpret_cast<const uint4 *>(c.logits + head);
    for (int v0 = threadIdx.x; v0 < n_vec; v0 += IN_FLIGHT * THREADS) {
        half8 h[IN_FLIGHT];
#pragma unroll
        for (int k = 0; k < IN_FLIGHT; k++)
            if (v0 + k * THREADS < n_vec)
                h[k].u = __ldg(vec + v0 + k * THREADS);
#pragma unroll
        for (int k = 0; k < IN_FLIGHT; k++) {
            const int v = v0 + k * THREADS;
            if (v >= n_vec)
                break;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const float2 f = __half22float2(h[k].h2[j]);
                consider(f.x, head + 8 * v + 2 * j);
                consider(f.y, head + 8 * v + 2 * j + 1);
            }
        }
    }
    if (head + 8 * n_vec + (int)threadIdx.x < vocab)
        consider(__half2float(c.logits[head + 8 * n_vec + threadIdx.x]), head + 8 * n_vec + threadIdx.x);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float v = __shfl_xor_sync(0xffffffffu, best, o);
        const int i = __shfl_xor_sync(0xffffffffu, best_i, o);
        if (v > best || (v == best && i < best_i))
            best = v, best_i = i;
    }
    if (lane == 0)
        scratch[warp] = best, s_idx[warp] = best_i;
    __syncthreads();
    best = scratch[lane];
    best_i = s_idx[lane];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float v = __shfl_xor_sync(0xffffffffu, best, o);
        const int i = __shfl_xor_sync(0xffffffffu, best_i, o);
        if (v > best || (v == best && i < best_i))
            best = v, best_i = i;
    }
    if (p.temperature == 0 || !(best > -INFINITY)) { // greedy, or nothing finite to sample from
        if (threadIdx.x == 0)
            tokens[blockIdx.x] = best_i < vocab ? best_i : 0;
        return;
    }
    c.max = best;

    float floor = p.min_p > 0 ? p.min_p : 0; // the most likely token has w = 1
    if (p.top_k > 0) {
        float kept = 0;
        for (int i = threadIdx.x; i < vocab; i += THREADS) {
            const float w = weight(c, i);
            kept += w >= floor && w > 0;
        }
        if ((float)p.top_k < block_sum(kept, scratch))
            floor = fmaxf(floor, radix_threshold(c, floor, (float)p.top_k, false, hist, scratch));
    }
    if (p.top_p < 1.0f) {
        float mass = 0;
        for (int i = threadIdx.x; i < vocab; i += THREADS) {
            const float w = weight(c, i);
            mass += w >= floor && w > 0 ? w : 0;
        }
        const float need = p.top_p * block_sum(mass, scratch);
        floor = fmaxf(floor, radix_threshold(c, floor, need, true, hist, scratch));
    }

    // Token order: thread t sums the contiguous range [t * span, (t + 1) * span); a block scan finds the range
    // where the running sum passes u * total, and that thread walks it.
    const int span = (vocab + THREADS - 1) / THREADS, begin = threadIdx.x * span;
    const int end = begin + span < vocab ? begin + span : vocab;
    float sum = 0;
    int last = -1;
    for (int i = begin; i < end; i++) {
        const float w = weight(c, i);
        if (w >= floor && w > 0)
            sum += w, last = i;
    }
    float incl = sum; // inclusive scan over the block
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const float v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o)
            incl += v;
    }
    __syncthreads();
    if (lane == 31)
        scratch[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        float w = scratch[lane];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const float v = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o)
                w += v;
        }
        scratch[lane] = w; // inclusive totals per warp
    }
    __syncthreads();
    const float warp_before = warp ? scratch[warp - 1] : 0.0f, total = scratch[THREADS / 32 - 1];
    const float before = warp_before + incl - sum, target = p.u * total;
    // The last kept token overall, for a target that rounding leaves out of reach.
    int last_all = last;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        last_all = max(last_all, __shfl_xor_sync(0xffffffffu, last_all, o));
    __syncthreads();
    if (lane == 0)
        s_idx[warp] = last_all;
    __syncthreads();
    if (threadIdx.x == 0) {
        int l = -1;
        for (int w = 0; w < THREADS / 32; w++)
            l = max(l, s_idx[w]);
        tokens[blockIdx.x] = l; // replaced below by the thread whose range holds the target
    }
    __syncthreads();
    if (sum > 0 && before <= target && target < before + sum) {
        float acc = before;
        for (int i = begin; i < end; i++) {
            const float w = weight(c, i);
            if (w >= floor && w > 0) {
                acc += w;
                if (acc > target) {
                    tokens[blockIdx.x] = i;
                    return;
                }
            }
        }
    }
}

} // namespace

extern "C" cudaError_t k_sample(int32_t *tokens, const void *logits, const k_sample_row *rows, int n_rows, int vocab,
                                cudaStream_t stream)
{
    if (n_rows <= 0)
        return cudaSuccess;
    return fk_launch(sample_kernel, n_rows, THREADS, 0, stream, tokens, (const __half *)logits, rows, vocab);
}
