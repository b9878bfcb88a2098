/* test_cpu_ops.c — each op of the CPU backend against a direct double-precision formula written here, on fresh
 * random inputs and awkward sizes; attention reads K/V placed by this test at the addresses the paged-cache
 * contract (DESIGN.md) gives, through shuffled block tables. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "test_util.h"

static backend *be;
static uint64_t rng;

static int setup(void **state)
{
    (void)state;
    rng = tu_seed();
    return backend_cpu_create(2, &be, NULL);
}

static int teardown(void **state)
{
    (void)state;
    be->ops->destroy(be);
    return 0;
}

static float *random_floats(size_t n, float lo, float hi)
{
    float *v = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++)
        v[i] = tu_uniform(&rng, lo, hi);
    return v;
}

/* |got - want| <= atol + rtol * |want| for every element. */
static void assert_close(const float *got, const double *want, size_t n, double atol, double rtol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= atol + rtol * fabs(want[i])))
            fail_msg("%s: element %zu is %.9g, expected %.9g", what, i, (double)got[i], want[i]);
}

static void test_linear(void **state)
{
    (void)state;
    const int ns[] = {1, 3, 4, 5, 17}, ins[] = {1, 7, 64, 129}, outs[] = {1, 5, 16, 33};
    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 4; b++)
            for (size_t c = 0; c < 4; c++) {
                const int n = ns[a], in = ins[b], out = outs[c];
                const bool with_bias = (a + b + c) % 2;
                float *x = random_floats((size_t)n * in, -1, 1), *w = random_floats((size_t)out * in, -1, 1);
                float *bias = random_floats((size_t)out, -1, 1), *y = random_floats((size_t)n * out, 1e30f, 1e30f);
                double *want = malloc((size_t)n * out * sizeof(double));
                for (int t = 0; t < n; t++)
                    for (int o = 0; o < out; o++) {
                        double s = with_bias ? bias[o] : 0;
                        for (int k = 0; k < in; k++)
                            s += (double)x[(size_t)t * in + k] * w[(size_t)o * in + k];
                        want[(size_t)t * out + o] = s;
                    }
                const qweight qw = {.format = FK_QUANT_NONE, .rows = out, .cols = in, .data = w};
                assert_int_equal(be->ops->linear(be, y, x, &qw, with_bias ? bias : NULL, n, in, out, NULL), FK_OK);
                assert_close(y, want, (size_t)n * out, 1e-5, 1e-5, "linear");
                for (size_t i = 0; i < (size_t)n * out; i++) { /* GPT-2's gelu_new */
                    const double v = want[i];
                    want[i] = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
                }
                assert_int_equal(be->ops->linear_gelu(be, y, x, &qw, with_bias ? bias : NULL, n, in, out, NULL),
                                 FK_OK);
                assert_close(y, want, (size_t)n * out, 1e-5, 1e-5, "linear_gelu");
                free(x), free(w), free(bias), free(y), free(want);
            }
}

static void test_norms(void **state)
{
    (void)state;
    const int n = 5, d = 67;
    const float eps = 1e-5f;
    for (int layer_norm = 0; layer_norm < 2; layer_norm++)
        for (int with_x = 0; with_x < 2; with_x++) {
            float *res = random_floats((size_t)n * d, -3, 3), *x = random_floats((size_t)n * d, -3, 3);
            float *w = random_floats(d, 0.5f, 1.5f), *bias = random_floats(d, -1, 1);
            float *out = random_floats((size_t)n * d, 1e30f, 1e30f);
            double *want_res = malloc((size_t)n * d * sizeof(double)), *want = malloc((size_t)n * d * sizeof(double));
            for (int i = 0; i < n; i++) {
                double *r = want_res + (size_t)i * d, mean = 0, var = 0, ms = 0;
                for (int j = 0; j < d; j++)
                    r[j] = (double)res[(size_t)i * d + j] + (with_x ? x[(size_t)i * d + j] : 0);
                for (int j = 0; j < d; j++)
                    mean += r[j] / d, ms += r[j] * r[j] / d;
                for (int j = 0; j < d; j++)
                    var += (r[j] - mean) * (r[j] - mean) / d;
                for (int j = 0; j < d; j++)
                    want[(size_t)i * d + j] = layer_norm ? (r[j] - mean) / sqrt(var + eps) * w[j] + bias[j]
                                                         : r[j] / sqrt(ms + eps) * w[j];
            }
            fk_status s = layer_norm
                              ? be->ops->add_layer_norm(be, out, res, with_x ? x : NULL, w, bias, n, d, eps, NULL)
                              : be->ops->add_rms_norm(be, out, res, with_x ? x : NULL, w, n, d, eps, NULL);
            assert_int_equal(s, FK_OK);
            assert_close(res, want_res, (size_t)n * d, 1e-6, 1e-6, "residual");
            assert_close(out, want, (size_t)n * d, 1e-5, 1e-5, layer_norm ? "layer_norm" : "rms_norm");
            free(res), free(x), free(w), free(bias), free(out), free(want_res), free(want);
        }
}

static void test_activations_embed_gather(void **state)
{
    (void)state;
    const int n = 7, f = 45, d = 13, vocab = 50, n_pos = 30, in = 19;
    /* SwiGLU: out = silu(x Wg^T + bg) * (x Wu^T + bu), W = [gate | up] */
    float *x = random_floats((size_t)n * in, -1, 1), *w = random_floats((size_t)2 * f * in, -1, 1);
    float *b = random_floats((size_t)2 * f, -1, 1), *scratch = random_floats((size_t)n * 2 * f, 1e30f, 1e30f);
    float *out = random_floats((size_t)n * f, 1e30f, 1e30f);
    double *want = malloc((size_t)n * 2 * f * sizeof(double));
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < f; j++) {
                double g = with_bias ? b[j] : 0, u = with_bias ? b[f + j] : 0;
                for (int k = 0; k < in; k++) {
                    g += (double)x[(size_t)i * in + k] * w[(size_t)j * in + k];
                    u += (double)x[(size_t)i * in + k] * w[(size_t)(f + j) * in + k];
                }
                want[(size_t)i * f + j] = g / (1 + exp(-g)) * u;
            }
        const qweight qw = {.format = FK_QUANT_NONE, .rows = 2 * f, .cols = in, .data = w};
        assert_int_equal(be->ops->linear_silu_mul(be, out, scratch, x, &qw, with_bias ? b : NULL, n, in, f, NULL),
                         FK_OK);
        assert_close(out, want, (size_t)n * f, 1e-5, 1e-5, "linear_silu_mul");
    }
    free(x), free(w), free(b), free(scratch);


    float *tok = random_floats((size_t)vocab * d, -1, 1), *pos = random_floats((size_t)n_pos * d, -1, 1);
    float *emb = random_floats((size_t)n * d, 1e30f, 1e30f);
    int32_t ids[7], in_ids[7], sampled[9], positions[7], rows[3] = {6, 0, 3};
    for (int i = 0; i < n; i++)
        ids[i] = (int32_t)tu_below(&rng, vocab), positions[i] = (int32_t)tu_below(&rng, n_pos);
    tu_placeholder_ids(&rng, ids, n, in_ids, sampled, 9, vocab); /* some tokens the last pass sampled */
    for (int with_pos = 0; with_pos < 2; with_pos++) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < d; j++)
                want[(size_t)i * d + j] =
                    (double)tok[(size_t)ids[i] * d + j] + (with_pos ? pos[(size_t)positions[i] * d + j] : 0);
        assert_int_equal(be->ops->embed(be, emb, tok, in_ids, sampled, with_pos ? pos : NULL, positions, n, d, NULL),
                         FK_OK);
        assert_close(emb, want, (size_t)n * d, 1e-7, 1e-6, "embed");
    }
    /* embed_rms_norm: the embedding rows (no positions) and their RMSNorm */
    float *nw = random_floats(d, 0.5f, 1.5f), *normed = random_floats((size_t)n * d, 1e30f, 1e30f);
    double *want_norm = malloc((size_t)n * d * sizeof *want_norm);
    for (int i = 0; i < n; i++) {
        double ms = 0;
        for (int j = 0; j < d; j++)
            ms += (double)tok[(size_t)ids[i] * d + j] * tok[(size_t)ids[i] * d + j] / d;
        for (int j = 0; j < d; j++) {
            want[(size_t)i * d + j] = tok[(size_t)ids[i] * d + j];
            want_norm[(size_t)i * d + j] = tok[(size_t)ids[i] * d + j] / sqrt(ms + 1e-5) * nw[j];
        }
    }
    assert_int_equal(be->ops->embed_rms_norm(be, normed, emb, tok, in_ids, sampled, nw, n, d, 1e-5f, NULL), FK_OK);
    assert_close(emb, want, (size_t)n * d, 0, 0, "embed_rms_norm residual");
    assert_close(normed, want_norm, (size_t)n * d, 1e-5, 1e-5, "embed_rms_norm");
    free(nw), free(normed), free(want_norm);
    float gathered[3 * 13];
    assert_int_equal(be->ops->gather_rows(be, gathered, emb, rows, 3, d, NULL), FK_OK);
    for (int i = 0; i < 3; i++)
        assert_memory_equal(gathered + i * d, emb + (size_t)rows[i] * d, d * sizeof(float));
    free(out), free(want), free(tok), free(pos), free(emb);
}

/* Address of (block, head, offset) under the contract [num_blocks][Hkv][B][D]. */
static float *contract_at(float *pool, int Hkv, int B, int D, int block, int head, int offset)
{
    return pool + (((size_t)block * Hkv + head) * B + offset) * D;
}

static void test_rope_store_kv(void **state)
{
    (void)state;
    const int n = 9, H = 4, Hkv = 2, D = 16, B = 4, num_blocks = 6, half = D / 2;
    const size_t row = (size_t)(H + 2 * Hkv) * D;
    float *qkv = random_floats(n * row, -2, 2), *orig = malloc(n * row * sizeof(float));
    memcpy(orig, qkv, n * row * sizeof(float));
    float inv_freq[8];
    for (int i = 0; i < half; i++)
        inv_freq[i] = powf(10000.0f, -2.0f * i / D);
    int32_t positions[9], slots[9];
    for (int t = 0; t < n; t++) {
        positions[t] = (int32_t)tu_below(&rng, 5000);
        slots[t] = t == 4 ? -1 : t * 2; /* distinct slots; token 4 not stored */
    }
    size_t pool_n = (size_t)num_blocks * Hkv * B * D;
    float *k = random_floats(pool_n, 7, 7), *v = random_floats(pool_n, 7, 7);
    kv_pool pool = {.k = k, .v = v, .num_blocks = num_blocks, .block_size = B, .n_kv_heads = Hkv, .head_dim = D};
    assert_int_equal(be->ops->rope_store_kv(be, qkv, positions, inv_freq, slots, &pool, n, H, NULL), FK_OK);
    double want[16];
    for (int t = 0; t < n; t++) {
        for (int h = 0; h < H + 2 * Hkv; h++) {
            const float *x = orig + t * row + (size_t)h * D;
            for (int i = 0; i < D; i++) {
                if (h >= H + Hkv) { /* v: untouched */
                    want[i] = x[i];
                    continue;
                }
                double angle = (double)positions[t] * inv_freq[i % half];
                double rotated = i < half ? -x[i + half] : x[i - half]; /* rotate_half */
                want[i] = x[i] * cos(angle) + rotated * sin(angle);
            }
            assert_close(qkv + t * row + (size_t)h * D, want, D, 2e-3, 1e-4, "rope");
        }
        if (slots[t] < 0)
            continue;
        for (int h = 0; h < Hkv; h++) {
            int blk = slots[t] / B, off = slots[t] % B;
            assert_memory_equal(contract_at(k, Hkv, B, D, blk, h, off), qkv + t * row + (size_t)(H + h) * D,
                                D * sizeof(float));
            assert_memory_equal(contract_at(v, Hkv, B, D, blk, h, off), qkv + t * row + (size_t)(H + Hkv + h) * D,
                                D * sizeof(float));
        }
    }
    /* Slot 8 (token 4's) was never written. */
    for (int h = 0; h < Hkv; h++)
        assert_true(contract_at(k, Hkv, B, D, 8 / B, h, 8 % B)[0] == 7.0f);
    /* A slot past the pool is refused. */
    slots[0] = num_blocks * B;
    assert_int_equal(be->ops->rope_store_kv(be, qkv, positions, NULL, slots, &pool, n, H, NULL),
                     FK_ERR_INVALID_ARGUMENT);
    free(qkv), free(orig), free(k), free(v);
}

/* One random paged-attention case against attention over contiguous K/V in double. */
static void attention_case(int n_seqs, int Hkv, int group, int D, int B)
{
    const int H = Hkv * group;
    int ctx[8], nq[8], qs[9] = {0};
    int max_blocks = 0, total_blocks = 0;
    for (int s = 0; s < n_seqs; s++) {
        ctx[s] = 1 + (int)tu_below(&rng, 70);
        nq[s] = 1 + (int)tu_below(&rng, (uint32_t)ctx[s]); /* a decode, a chunk or a whole prompt */
        qs[s + 1] = qs[s] + nq[s];
        int nb = (ctx[s] + B - 1) / B;
        max_blocks = nb > max_blocks ? nb : max_blocks;
        total_blocks += nb;
    }
    const int n = qs[n_seqs], num_blocks = total_blocks + 3;
    /* Every sequence's blocks: a random permutation of the pool's. */
    int *perm = malloc((size_t)num_blocks * sizeof(int));
    for (int i = 0; i < num_blocks; i++)
        perm[i] = i;
    for (int i = num_blocks - 1; i > 0; i--) {
        int j = (int)tu_below(&rng, (uint32_t)i + 1), tmp = perm[i];
        perm[i] = perm[j], perm[j] = tmp;
    }
    int32_t *tables = calloc((size_t)n_seqs * max_blocks, sizeof(int32_t));
    int next = 0;
    for (int s = 0; s < n_seqs; s++)
        for (int j = 0; j < (ctx[s] + B - 1) / B; j++)
            tables[s * max_blocks + j] = perm[next++];

    size_t pool_n = (size_t)num_blocks * Hkv * B * D;
    float *kp = random_floats(pool_n, -1, 1), *vp = random_floats(pool_n, -1, 1);
    const size_t row = (size_t)(H + 2 * Hkv) * D;
    float *qkv = random_floats((size_t)n * row, -1, 1), *out = random_floats((size_t)n * H * D, 1e30f, 1e30f);
    double *want = malloc((size_t)n * H * D * sizeof(double)), *p = malloc(80 * sizeof(double));
    const float scale = 1.0f / sqrtf((float)D);
    for (int s = 0; s < n_seqs; s++)
        for (int i = 0; i < nq[s]; i++) {
            const int t = qs[s] + i, pos = ctx[s] - nq[s] + i;
            for (int h = 0; h < H; h++) {
                const float *q = qkv + t * row + (size_t)h * D;
                double m = -INFINITY, sum = 0;
                for (int j = 0; j <= pos; j++) {
                    const float *kk = contract_at(kp, Hkv, B, D, tables[s * max_blocks + j / B], h / group, j % B);
                    p[j] = 0;
                    for (int e = 0; e < D; e++)
                        p[j] += (double)q[e] * kk[e];
                    p[j] *= scale;
                    m = fmax(m, p[j]);
                }
                for (int j = 0; j <= pos; j++)
                    sum += p[j] = exp(p[j] - m);
                for (int e = 0; e < D; e++) {
                    double acc = 0;
                    for (int j = 0; j <= pos; j++)
                        acc += p[j] / sum *
                               contract_at(vp, Hkv, B, D, tables[s * max_blocks + j / B], h / group, j % B)[e];
                    want[((size_t)t * H + h) * D + e] = acc;
                }
            }
        }
    kv_pool pool = {.k = kp, .v = vp, .num_blocks = num_blocks, .block_size = B, .n_kv_heads = Hkv, .head_dim = D};
    int32_t qs32[9], ctx32[8];
    for (int s = 0; s <= n_seqs; s++)
        qs32[s] = qs[s];
    for (int s = 0; s < n_seqs; s++)
        ctx32[s] = ctx[s];
    attn_batch ab = {.n_tokens = n, .n_seqs = n_seqs, .query_start = qs32, .context_len = ctx32,
                     .block_tables = tables, .max_blocks = max_blocks};
    assert_int_equal(be->ops->attention(be, out, qkv, &pool, &ab, H, scale, NULL), FK_OK);
    assert_close(out, want, (size_t)n * H * D, 1e-5, 1e-4, "attention");
    free(perm), free(tables), free(kp), free(vp), free(qkv), free(out), free(want), free(p);
}

static void test_paged_attention(void **state)
{
    (void)state;
    const int groups[] = {1, 2, 4, 8}, dims[] = {8, 64, 128}, blocks[] = {1, 3, 16};
    for (int g = 0; g < 4; g++)
        for (int d = 0; d < 3; d++)
            for (int b = 0; b < 3; b++)
                attention_case(1 + (int)tu_below(&rng, 4), 1 + (int)tu_below(&rng, 2), groups[g], dims[d], blocks[b]);
}

static void test_attention_rejects_bad_tables(void **state)
{
    (void)state;
    float kv[4 * 16] = {0}, qkv[3 * 16] = {0}, out[16];
    kv_pool pool = {.k = kv, .v = kv, .num_blocks = 2, .block_size = 2, .n_kv_heads = 1, .head_dim = 16};
    int32_t qs[2] = {0, 1}, ctx[1] = {3}, tables[2] = {0, 5};
    attn_batch ab = {.n_tokens = 1, .n_seqs = 1, .query_start = qs, .context_len = ctx, .block_tables = tables,
                     .max_blocks = 2};
    assert_int_equal(be->ops->attention(be, out, qkv, &pool, &ab, 1, 1.0f, NULL), FK_ERR_INVALID_ARGUMENT);
    ctx[0] = 5; /* more than two blocks of two hold */
    tables[1] = 1;
    assert_int_equal(be->ops->attention(be, out, qkv, &pool, &ab, 1, 1.0f, NULL), FK_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_activations_embed_gather),
        cmocka_unit_test(test_rope_store_kv),
        cmocka_unit_test(test_paged_attention),
        cmocka_unit_test(test_attention_rejects_bad_tables),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
