/* backend_cpu.c — the reference backend: every op in plain C, float32, OpenMP across cores.
 * It is the oracle the CUDA kernels are tested against, so each op is the direct formula; only linear
 * (register-blocked) and attention (parallel over token x head) are arranged for speed. Quantized linears keep
 * quant.h's packed weights and compute in float32 on their dequantized values, a block of rows at a time. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "backend.h"
#include "error.h"
#include "quant.h"
#include "sampler.h"

typedef struct cpu_backend {
    backend base;
    int n_threads;
    sampler *sampler; /* scratch for the sample op, sized to the model's vocabulary */
    int sampler_vocab;
    double *marks; /* profiling: the time of each point, seconds (PROF_MARKS, allocated at the first mark) */
    float *rows;   /* quantized linears: each thread's block of dequantized weight rows */
    size_t rows_n;
} cpu_backend;

static int threads_of(const backend *b)
{
    return ((const cpu_backend *)b)->n_threads;
}

/* Work (in multiply-adds) below which an op runs on one thread: waking the other threads costs more than it
 * saves (about 50 us of work; it matters for small models' decode steps). */
#define PARALLEL_MIN_WORK (1 << 18)

static void cpu_destroy(backend *b)
{
    sampler_destroy(((cpu_backend *)b)->sampler);
    free(((cpu_backend *)b)->marks);
    free(((cpu_backend *)b)->rows);
    free(b);
}

static fk_status cpu_alloc(backend *b, size_t bytes, void **out, fk_error *err)
{
    (void)b;
    *out = calloc(1, bytes ? bytes : 1);
    return *out ? FK_OK : fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes", bytes);
}

static void cpu_release(backend *b, void *p)
{
    (void)b;
    free(p);
}

static fk_status cpu_copy(backend *b, void *dst, const void *src, size_t bytes, fk_error *err)
{
    (void)b, (void)err;
    if (bytes)
        memcpy(dst, src, bytes);
    return FK_OK;
}

static fk_status cpu_fetch_begin(backend *b, void *dst, const void *src, size_t bytes, int slot, fk_error *err)
{
    (void)slot;
    return cpu_copy(b, dst, src, bytes, err); /* the CPU's ops are done when they return */
}

static fk_status cpu_fetch_wait(backend *b, int slot, fk_error *err)
{
    (void)b, (void)slot, (void)err;
    return FK_OK;
}

static fk_status cpu_download_act(backend *b, float *dst, const void *src, size_t n, fk_error *err)
{
    return cpu_copy(b, dst, src, n * sizeof(float), err);
}

static fk_status cpu_memory_info(backend *b, size_t *free_bytes, size_t *total_bytes, fk_error *err)
{
    (void)b, (void)err;
    *free_bytes = *total_bytes = 0;
    return FK_OK;
}

static fk_status cpu_upload_weight(backend *b, const float *host, int rows, int cols, void **out, fk_error *err)
{
    size_t bytes = (size_t)rows * (size_t)cols * sizeof(float);
    fk_status s = cpu_alloc(b, bytes, out, err);
    if (!s) {
        memcpy(*out, host, bytes);
        b->weight_bytes += bytes;
    }
    return s;
}

static fk_status cpu_upload_linear(backend *b, const float *host, int rows, int cols, fk_quantization format,
                                   qweight *out, fk_error *err)
{
    *out = (qweight){.format = format, .rows = rows, .cols = cols};
    if (format == FK_QUANT_NONE)
        return cpu_upload_weight(b, host, rows, cols, &out->data, err);
    fk_status s = quant_check(format, cols, err);
    const size_t data = quant_data_bytes(format, rows, cols), scales = quant_scale_bytes(format, rows, cols);
    if (s || (s = cpu_alloc(b, data, &out->data, err)) || (s = cpu_alloc(b, scales, &out->scales, err))) {
        free(out->data);
        *out = (qweight){0};
        return s;
    }
    quant_pack(format, host, rows, cols, out->data, out->scales);
    b->weight_bytes += data + scales;
    return FK_OK;
}

static fk_status cpu_embed(backend *b, void *out, const void *tok, const int32_t *ids, const int32_t *sampled,
                           const void *pos, const int32_t *positions, int n, int d, fk_error *err)
{
    (void)b, (void)err;
    float *o = out;
    const float *t = tok, *p = pos;
    for (int i = 0; i < n; i++) {
        float *row = o + (size_t)i * d;
        const int32_t id = ids[i] < 0 ? sampled[-1 - ids[i]] : ids[i];
        memcpy(row, t + (size_t)id * d, (size_t)d * sizeof(float));
        if (p)
            for (int j = 0; j < d; j++)
                row[j] += p[(size_t)positions[i] * d + j];
    }
    return FK_OK;
}

static fk_status cpu_add_rms_norm(backend *b, void *out, void *residual, const void *x, const void *w, int n, int d,
                                  float eps, fk_error *err)
{
    (void)err;
    float *o = out, *r = residual;
    const float *xs = x, *ws = w;
#pragma omp parallel for num_threads(threads_of(b)) if ((size_t)n * d > PARALLEL_MIN_WORK)
    for (int i = 0; i < n; i++) {
        float *ri = r + (size_t)i * d, *oi = o + (size_t)i * d;
        if (xs)
            for (int j = 0; j < d; j++)
                ri[j] += xs[(size_t)i * d + j];
        double sum_sq = 0;
        for (int j = 0; j < d; j++)
            sum_sq += (double)ri[j] * ri[j];
        float inv_rms = 1.0f / sqrtf((float)(sum_sq / d) + eps);
        for (int j = 0; j < d; j++)
            oi[j] = ws[j] * (ri[j] * inv_rms);
    }
    return FK_OK;
}

static fk_status cpu_embed_rms_norm(backend *b, void *out, void *residual, const void *tok, const int32_t *ids,
                                    const int32_t *sampled, const void *w, int n, int d, float eps, fk_error *err)
{
    fk_status s = cpu_embed(b, residual, tok, ids, sampled, NULL, NULL, n, d, err);
    return s ? s : cpu_add_rms_norm(b, out, residual, NULL, w, n, d, eps, err);
}

static fk_status cpu_add_layer_norm(backend *b, void *out, void *residual, const void *x, const void *w,
                                    const void *bias, int n, int d, float eps, fk_error *err)
{
    (void)err;
    float *o = out, *r = residual;
    const float *xs = x, *ws = w, *bs = bias;
#pragma omp parallel for num_threads(threads_of(b)) if ((size_t)n * d > PARALLEL_MIN_WORK)
    for (int i = 0; i < n; i++) {
        float *ri = r + (size_t)i * d, *oi = o + (size_t)i * d;
        if (xs)
            for (int j = 0; j < d; j++)
                ri[j] += xs[(size_t)i * d + j];
        double sum = 0, sum_sq = 0;
        for (int j = 0; j < d; j++)
            sum += ri[j];
        float mean = (float)(sum / d);
        for (int j = 0; j < d; j++)
            sum_sq += (double)(ri[j] - mean) * (ri[j] - mean);
        float inv_std = 1.0f / sqrtf((float)(sum_sq / d) + eps);
        for (int j = 0; j < d; j++)
            oi[j] = (ri[j] - mean) * inv_std * ws[j] + bs[j];
    }
    return FK_OK;
}

/* c[i][j] = dot(x row i, w row j) for a 4 x 4 tile; rows are k long, strides ldx / ldw. */
static void dot_4x4(const float *x, size_t ldx, const float *w, size_t ldw, int k, float c[4][4])
{
    const float *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
    const float *w0 = w, *w1 = w + ldw, *w2 = w + 2 * ldw, *w3 = w + 3 * ldw;
    float c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
    float c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
#pragma omp simd reduction(+ : c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33)
    for (int i = 0; i < k; i++) {
        float a0 = x0[i], a1 = x1[i], a2 = x2[i], a3 = x3[i];
        float b0 = w0[i], b1 = w1[i], b2 = w2[i], b3 = w3[i];
        c00 += a0 * b0, c01 += a0 * b1, c02 += a0 * b2, c03 += a0 * b3;
        c10 += a1 * b0, c11 += a1 * b1, c12 += a1 * b2, c13 += a1 * b3;
        c20 += a2 * b0, c21 += a2 * b1, c22 += a2 * b2, c23 += a2 * b3;
        c30 += a3 * b0, c31 += a3 * b1, c32 += a3 * b2, c33 += a3 * b3;
    }
    c[0][0] = c00, c[0][1] = c01, c[0][2] = c02, c[0][3] = c03;
    c[1][0] = c10, c[1][1] = c11, c[1][2] = c12, c[1][3] = c13;
    c[2][0] = c20, c[2][1] = c21, c[2][2] = c22, c[2][3] = c23;
    c[3][0] = c30, c[3][1] = c31, c[3][2] = c32, c[3][3] = c33;
}

/* c[j] = dot(x, w row j) for 4 rows of w. */
static void dot_1x4(const float *x, const float *w, size_t ldw, int k, float c[4])
{
    const float *w0 = w, *w1 = w + ldw, *w2 = w + 2 * ldw, *w3 = w + 3 * ldw;
    float c0 = 0, c1 = 0, c2 = 0, c3 = 0;
#pragma omp simd reduction(+ : c0, c1, c2, c3)
    for (int i = 0; i < k; i++) {
        float a = x[i];
        c0 += a * w0[i], c1 += a * w1[i], c2 += a * w2[i], c3 += a * w3[i];
    }
    c[0] = c0, c[1] = c1, c[2] = c2, c[3] = c3;
}

static float dot(const float *a, const float *b, int k)
{
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < k; i++)
        s += a[i] * b[i];
    return s;
}

/* Output columns one task computes: a block of W rows that stays in cache while every token passes. */
#define LINEAR_COLS_PER_TASK 16

/* Each thread's room for LINEAR_COLS_PER_TASK dequantized rows of `in` weights. */
static fk_status reserve_rows(cpu_backend *cb, int in, fk_error *err)
{
    const size_t n = (size_t)cb->n_threads * LINEAR_COLS_PER_TASK * (size_t)in;
    if (n <= cb->rows_n)
        return FK_OK;
    float *grown = realloc(cb->rows, n * sizeof *grown);
    if (!grown)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cpu: %zu floats of dequantized weight rows", n);
    cb->rows = grown;
    cb->rows_n = n;
    return FK_OK;
}

static fk_status cpu_linear(backend *b, void *y, const void *x, const qweight *w, const void *bias, int n, int in,
                            int out, fk_error *err)
{
    cpu_backend *cb = (cpu_backend *)b;
    const bool quantized = w->format != FK_QUANT_NONE;
    fk_status s = quantized ? reserve_rows(cb, in, err) : FK_OK;
    if (s)
        return s;
    float *ys = y;
    const float *xs = x, *bs = bias;
    const int n_tasks = (out + LINEAR_COLS_PER_TASK - 1) / LINEAR_COLS_PER_TASK;
    const size_t work = (size_t)n * in * out;
#pragma omp parallel for schedule(static) num_threads(threads_of(b)) if (work > PARALLEL_MIN_WORK)
    for (int task = 0; task < n_tasks; task++) {
        const int o_begin = task * LINEAR_COLS_PER_TASK;
        const int o_end = o_begin + LINEAR_COLS_PER_TASK < out ? o_begin + LINEAR_COLS_PER_TASK : out;
        /* ws: W rows o_begin .. o_end - 1, [o_end - o_begin][in] */
        const float *ws = (const float *)w->data + (size_t)o_begin * in;
        if (quantized) {
            float *mine = cb->rows + (size_t)omp_get_thread_num() * LINEAR_COLS_PER_TASK * in;
            quant_unpack_rows(w->format, w->data, w->scales, in, o_begin, o_end - o_begin, mine);
            ws = mine;
        }
        int t = 0;
        for (; t + 4 <= n; t += 4) {
            int o = o_begin;
            for (; o + 4 <= o_end; o += 4) {
                float c[4][4];
                dot_4x4(xs + (size_t)t * in, (size_t)in, ws + (size_t)(o - o_begin) * in, (size_t)in, in, c);
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++)
                        ys[(size_t)(t + i) * out + o + j] = c[i][j];
            }
            for (; o < o_end; o++)
                for (int i = 0; i < 4; i++)
                    ys[(size_t)(t + i) * out + o] = dot(xs + (size_t)(t + i) * in, ws + (size_t)(o - o_begin) * in, in);
        }
        for (; t < n; t++) {
            int o = o_begin;
            for (; o + 4 <= o_end; o += 4) {
                float c[4];
                dot_1x4(xs + (size_t)t * in, ws + (size_t)(o - o_begin) * in, (size_t)in, in, c);
                for (int j = 0; j < 4; j++)
                    ys[(size_t)t * out + o + j] = c[j];
            }
            for (; o < o_end; o++)
                ys[(size_t)t * out + o] = dot(xs + (size_t)t * in, ws + (size_t)(o - o_begin) * in, in);
        }
        if (bs)
            for (t = 0; t < n; t++)
                for (int o = o_begin; o < o_end; o++)
                    ys[(size_t)t * out + o] += bs[o];
    }
    return FK_OK;
}

/* Address of (block, kv head, offset) in a pool of [num_blocks][Hkv][B][D] floats. */
static float *pool_at(const kv_pool *kv, void *pool, int block, int head, int offset)
{
    return (float *)pool + (((size_t)block * kv->n_kv_heads + head) * kv->block_size + offset) * kv->head_dim;
}

static fk_status cpu_rope_store_kv(backend *b, void *qkv, const int32_t *positions, const float *inv_freq,
                                   const int32_t *slot_mapping, const kv_pool *kv, int n, int n_heads, fk_error *err)
{
    const int D = kv->head_dim, half = D / 2, Hkv = kv->n_kv_heads;
    const size_t row = (size_t)(n_heads + 2 * Hkv) * D;
    const int64_t n_slots = (int64_t)kv->num_blocks * kv->block_size;
    for (int t = 0; t < n; t++)
        if (slot_mapping[t] >= n_slots)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "rope_store_kv: slot %d of token %d is past the pool (%lld)",
                                slot_mapping[t], t, (long long)n_slots);
#pragma omp parallel for num_threads(threads_of(b)) if ((size_t)n * row > PARALLEL_MIN_WORK)
    for (int t = 0; t < n; t++) {
        float *r = (float *)qkv + (size_t)t * row;
        if (inv_freq) {
            /* q heads then k heads are contiguous: n_heads + Hkv vectors of D */
            for (int i = 0; i < half; i++) {
                float angle = (float)positions[t] * inv_freq[i];
                float c = cosf(angle), s = sinf(angle);
                for (int h = 0; h < n_heads + Hkv; h++) {
                    float *x = r + (size_t)h * D;
                    float x1 = x[i], x2 = x[i + half];
                    x[i] = x1 * c - x2 * s;
                    x[i + half] = x2 * c + x1 * s;
                }
            }
        }
        int slot = slot_mapping[t];
        if (slot < 0)
            continue;
        const float *k = r + (size_t)n_heads * D, *v = k + (size_t)Hkv * D;
        for (int h = 0; h < Hkv; h++) {
            memcpy(pool_at(kv, kv->k, slot / kv->block_size, h, slot % kv->block_size), k + (size_t)h * D,
                   (size_t)D * sizeof(float));
            memcpy(pool_at(kv, kv->v, slot / kv->block_size, h, slot % kv->block_size), v + (size_t)h * D,
                   (size_t)D * sizeof(float));
        }
    }
    return FK_OK;
}

/* The sequence that token t belongs to (query_start is ascending). */
static int seq_of_token(const attn_batch *ab, int t)
{
    int lo = 0, hi = ab->n_seqs - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (ab->query_start[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static fk_status cpu_attention(backend *b, void *out, const void *qkv, const kv_pool *kv, const attn_batch *ab,
                               int n_heads, float scale, fk_error *err)
{
    const int D = kv->head_dim, Hkv = kv->n_kv_heads, B = kv->block_size, group = n_heads / Hkv;
    const size_t row = (size_t)(n_heads + 2 * Hkv) * D;
    if (ab->n_seqs < 1 || ab->query_start[0] != 0 || ab->query_start[ab->n_seqs] != ab->n_tokens)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "attention: query_start must run from 0 to %d tokens",
                            ab->n_tokens);
    int max_len = 0;
    for (int s = 0; s < ab->n_seqs; s++) {
        int n_q = ab->query_start[s + 1] - ab->query_start[s];
        if (n_q < 0 || ab->context_len[s] < n_q || ab->context_len[s] > ab->max_blocks * B)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT,
                                "attention: sequence %d has %d queries, context %d, room for %d", s, n_q,
                                ab->context_len[s], ab->max_blocks * B);
        for (int j = 0; j < (ab->context_len[s] + B - 1) / B; j++) {
            int blk = ab->block_tables[(size_t)s * ab->max_blocks + j];
            if (blk < 0 || blk >= kv->num_blocks)
                return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "attention: block %d of sequence %d is %d, pool has %d",
                                    j, s, blk, kv->num_blocks);
        }
        if (ab->context_len[s] > max_len)
            max_len = ab->context_len[s];
    }
    const int n_threads = threads_of(b);
    float *scores = malloc((size_t)n_threads * (max_len ? max_len : 1) * sizeof(float));
    if (!scores)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "attention: cannot allocate scores for context %d", max_len);
    const int n_work = ab->n_tokens * n_heads;
#pragma omp parallel for schedule(dynamic, 4) num_threads(n_threads) if ((size_t)n_work * max_len * D > PARALLEL_MIN_WORK)
    for (int w = 0; w < n_work; w++) {
        const int t = w / n_heads, h = w % n_heads, kvh = h / group;
        const int s = seq_of_token(ab, t);
        const int kv_len = ab->context_len[s] - (ab->query_start[s + 1] - t) + 1; /* causal: up to own position */
        const int32_t *blocks = ab->block_tables + (size_t)s * ab->max_blocks;
        const float *q = (const float *)qkv + (size_t)t * row + (size_t)h * D;
        float *p = scores + (size_t)omp_get_thread_num() * max_len;
        float m = -INFINITY;
        for (int j = 0; j < kv_len; j++) {
            p[j] = dot(q, pool_at(kv, kv->k, blocks[j / B], kvh, j % B), D) * scale;
            m = p[j] > m ? p[j] : m;
        }
        float sum = 0;
        for (int j = 0; j < kv_len; j++) {
            p[j] = expf(p[j] - m);
            sum += p[j];
        }
        float *o = (float *)out + (size_t)t * n_heads * D + (size_t)h * D;
        memset(o, 0, (size_t)D * sizeof(float));
        for (int j = 0; j < kv_len; j++) {
            const float *v = pool_at(kv, kv->v, blocks[j / B], kvh, j % B);
            const float pj = p[j] / sum;
            for (int d = 0; d < D; d++)
                o[d] += pj * v[d];
        }
    }
    free(scores);
    return FK_OK;
}

/* The two ops in turn: the oracle of the CUDA backend's fused decode path. */
static fk_status cpu_attention_rope(backend *b, void *out, void *qkv, const int32_t *positions, const float *inv_freq,
                                    const int32_t *slot_mapping, const kv_pool *kv, const attn_batch *ab, int n_heads,
                                    float scale, fk_error *err)
{
    fk_status s = cpu_rope_store_kv(b, qkv, positions, inv_freq, slot_mapping, kv, ab->n_tokens, n_heads, err);
    return s ? s : cpu_attention(b, out, qkv, kv, ab, n_heads, scale, err);
}

static size_t cpu_attention_scratch_bytes(const backend *b, int max_tokens, int max_seqs, int n_heads,
                                          int n_kv_heads, int head_dim)
{
    (void)b, (void)max_tokens, (void)max_seqs, (void)n_heads, (void)n_kv_heads, (void)head_dim;
    return 0;
}

static fk_status cpu_linear_silu_mul(backend *b, void *out, void *scratch, const void *x, const qweight *w,
                                     const void *bias, int n, int in, int f, fk_error *err)
{
    fk_status s = cpu_linear(b, scratch, x, w, bias, n, in, 2 * f, err);
    if (s)
        return s;
    float *o = out;
    const float *gu = scratch;
#pragma omp parallel for num_threads(threads_of(b)) if ((size_t)n * f > PARALLEL_MIN_WORK)
    for (int i = 0; i < n; i++)
        for (int j = 0; j < f; j++) {
            float g = gu[(size_t)i * 2 * f + j], u = gu[(size_t)i * 2 * f + f + j];
            o[(size_t)i * f + j] = g / (1.0f + expf(-g)) * u;
        }
    return FK_OK;
}

static fk_status cpu_linear_gelu(backend *b, void *y, const void *x, const qweight *w, const void *bias, int n,
                                 int in, int out, fk_error *err)
{
    fk_status s = cpu_linear(b, y, x, w, bias, n, in, out, err);
    if (s)
        return s;
    float *v = y;
    const size_t total = (size_t)n * out;
    const float sqrt_2_over_pi = 0.7978845608028654f;
#pragma omp parallel for num_threads(threads_of(b)) if (total > PARALLEL_MIN_WORK)
    for (size_t i = 0; i < total; i++) {
        float a = v[i];
        v[i] = 0.5f * a * (1.0f + tanhf(sqrt_2_over_pi * (a + 0.044715f * a * a * a)));
    }
    return FK_OK;
}

static fk_status cpu_gather_rows(backend *b, void *out, const void *x, const int32_t *rows, int m, int d, fk_error *err)
{
    (void)b, (void)err;
    for (int i = 0; i < m; i++)
        memcpy((float *)out + (size_t)i * d, (const float *)x + (size_t)rows[i] * d, (size_t)d * sizeof(float));
    return FK_OK;
}

static fk_status cpu_pass_end(backend *b, fk_error *err)
{
    (void)b, (void)err;
    return FK_OK;
}

static fk_status cpu_sample(backend *b, int32_t *tokens, const void *logits, const sample_row *rows, int n_rows,
                            int vocab, fk_error *err)
{
    cpu_backend *cb = (cpu_backend *)b;
    if (cb->sampler_vocab != vocab) { /* once per model */
        sampler_destroy(cb->sampler);
        cb->sampler = NULL;
        cb->sampler_vocab = 0;
        fk_status s = sampler_create(vocab, &cb->sampler, err);
        if (s)
            return s;
        cb->sampler_vocab = vocab;
    }
    for (int r = 0; r < n_rows; r++)
        tokens[r] = sampler_pick(cb->sampler, (const float *)logits + (size_t)r * vocab, &rows[r]);
    return FK_OK;
}

/* The ops run synchronously, so a point's wall-clock time is where the timeline is. */
static fk_status cpu_prof_mark(backend *b, int i, fk_error *err)
{
    cpu_backend *cb = (cpu_backend *)b;
    if (!cb->marks && !(cb->marks = malloc(PROF_MARKS * sizeof *cb->marks)))
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cpu: profiling marks");
    if (i < 0 || i >= PROF_MARKS)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "cpu: profiling mark %d of %d", i, PROF_MARKS);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    cb->marks[i] = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    return FK_OK;
}

static fk_status cpu_prof_read(backend *b, int n, float *ms, fk_error *err)
{
    const cpu_backend *cb = (const cpu_backend *)b;
    if (n > 1 && !cb->marks)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "cpu: no profiling marks");
    for (int i = 0; i + 1 < n; i++)
        ms[i] = (float)((cb->marks[i + 1] - cb->marks[i]) * 1e3);
    return FK_OK;
}

static fk_status cpu_inject_fault(backend *b, fk_error *err)
{
    (void)b;
    return fk_error_set(err, FK_ERR_DEVICE, "cpu: injected device fault (test hook)");
}

static const backend_ops cpu_ops = {
    .name = "cpu",
    .act_size = sizeof(float),
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_copy,
    .upload_ahead = cpu_copy,
    .pass_end = cpu_pass_end,
    .upload_after_pass = cpu_copy,
    .download = cpu_copy,
    .download_act = cpu_download_act,
    .host_alloc = cpu_alloc,
    .host_free = cpu_release,
    .fetch_begin = cpu_fetch_begin,
    .fetch_wait = cpu_fetch_wait,
    .memory_info = cpu_memory_info,
    .upload_weight = cpu_upload_weight,
    .upload_linear = cpu_upload_linear,
    .embed = cpu_embed,
    .add_rms_norm = cpu_add_rms_norm,
    .embed_rms_norm = cpu_embed_rms_norm,
    .add_layer_norm = cpu_add_layer_norm,
    .linear = cpu_linear,
    .rope_store_kv = cpu_rope_store_kv,
    .attention_scratch_bytes = cpu_attention_scratch_bytes,
    .attention = cpu_attention,
    .attention_rope = cpu_attention_rope,
    .linear_silu_mul = cpu_linear_silu_mul,
    .linear_gelu = cpu_linear_gelu,
    .gather_rows = cpu_gather_rows,
    .prof_mark = cpu_prof_mark,
    .prof_read = cpu_prof_read,
    .inject_fault = cpu_inject_fault,
    .sample = cpu_sample,
};

fk_status backend_cpu_create(int n_threads, backend **out, fk_error *err)
{
    if (n_threads < 0)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "n_threads must be >= 0, got %d", n_threads);
    cpu_backend *cb = calloc(1, sizeof *cb);
    if (!cb)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    cb->base.ops = &cpu_ops;
    cb->n_threads = n_threads ? n_threads : omp_get_num_procs();
    *out = &cb->base;
    return FK_OK;
}
