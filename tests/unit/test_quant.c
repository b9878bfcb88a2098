/* test_quant.c — weight quantization (src/quant.c) and the CPU backend's quantized linears: every weight comes back
 * within half a step of its value (the step is the row's or group's scale), zero rows exactly 0, all-equal groups
 * within half a step, INT8 codes in [-127, 127] and INT4 zero points in [0, 15]; scales no smaller than the range
 * needs; sizes the format cannot hold refused, by quant_check, upload_linear and the model loader (naming the
 * tensor and the size); and linear, linear_gelu, linear_silu_mul on quantized weights against a double-precision
 * formula on the dequantized weights, on fresh random inputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "fp16.h"
#include "quant.h"
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

/* Random weights of one of several kinds per row: symmetric, one-signed (all positive or all negative: the INT4
 * range must still hold 0), a few outliers; with extremes also large or tiny magnitudes. */
static float *random_weights(int rows, int cols, bool extremes)
{
    float *w = malloc((size_t)rows * cols * sizeof *w);
    static const int kinds[2][6] = {{0, 1, 2, 5, 0, 5}, {0, 1, 2, 3, 4, 5}};
    for (int r = 0; r < rows; r++) {
        const int kind = kinds[extremes][tu_below(&rng, 6)];
        const float scale = kind == 3 ? 300.0f : kind == 4 ? 1e-4f : 0.05f;
        for (int k = 0; k < cols; k++) {
            float v = scale * tu_uniform(&rng, -1, 1);
            if (kind == 1)
                v = fabsf(v) + 0.3f * scale;
            if (kind == 2)
                v = -fabsf(v) - 0.3f * scale;
            if (kind == 5 && tu_below(&rng, 50) == 0)
                v *= 40;
            w[(size_t)r * cols + k] = v;
        }
    }
    return w;
}

/* The step of weight (r, k): the row's scale (INT8) or its group's (INT4). */
static float step_of(fk_quantization f, const uint16_t *scales, int cols, int r, int k)
{
    if (f == FK_QUANT_INT8)
        return fp16_to_f32(scales[r]);
    return fp16_to_f32(scales[((size_t)r * (cols / QUANT_GROUP) + k / QUANT_GROUP) * 2]);
}

/* Packs w, unpacks it, and checks every weight against half a step, the codes' ranges and the scales' minimum. */
static void check_round_trip(fk_quantization f, const float *w, int rows, int cols)
{
    void *data = malloc(quant_data_bytes(f, rows, cols));
    uint16_t *scales = malloc(quant_scale_bytes(f, rows, cols));
    float *back = malloc((size_t)rows * cols * sizeof *back);
    quant_pack(f, w, rows, cols, data, scales);
    quant_unpack_rows(f, data, scales, cols, 0, rows, back);
    const int levels = f == FK_QUANT_INT8 ? 127 : 15, group = f == FK_QUANT_INT8 ? cols : QUANT_GROUP;
    for (int r = 0; r < rows; r++)
        for (int g0 = 0; g0 < cols; g0 += group) {
            float lo = 0, hi = 0;
            for (int k = g0; k < g0 + group; k++)
                lo = fminf(lo, w[(size_t)r * cols + k]), hi = fmaxf(hi, w[(size_t)r * cols + k]);
            const float s = step_of(f, scales, cols, r, g0);
            const float need = f == FK_QUANT_INT8 ? fmaxf(-lo, hi) / levels : (hi - lo) / levels;
            if (!(s >= need) || s > need * 1.002f + 1e-7f)
                fail_msg("%s row %d inputs %d..: scale %g for a range that needs %g", fk_quantization_name(f), r, g0,
                         (double)s, (double)need);
            if (f == FK_QUANT_INT4) {
                const float z = fp16_to_f32(scales[((size_t)r * (cols / QUANT_GROUP) + g0 / QUANT_GROUP) * 2 + 1]);
                assert_true(z >= 0 && z <= 15 && z == floorf(z));
            }
            for (int k = g0; k < g0 + group; k++) {
                const float v = w[(size_t)r * cols + k], got = back[(size_t)r * cols + k];
                /* half a step, and float32 rounding of v / s and of the products */
                if (!(fabsf(got - v) <= 0.5f * s * (1 + 1e-5f) + 1e-6f * fabsf(v)))
                    fail_msg("%s row %d input %d: %.9g comes back as %.9g, step %g", fk_quantization_name(f), r, k,
                             (double)v, (double)got, (double)s);
                if (hi == lo) /* a zero group: exactly 0 */
                    assert_true(got == 0);
            }
        }
    if (f == FK_QUANT_INT8)
        for (size_t i = 0; i < (size_t)rows * cols; i++)
            assert_true(((int8_t *)data)[i] >= -127);
    free(data), free(scales), free(back);
}

static void test_round_trip(void **state)
{
    (void)state;
    const int shapes[][2] = {{1, 128}, {5, 256}, {33, 384}, {64, 1024}, {3, 4096}};
    for (fk_quantization f = FK_QUANT_INT8; f <= FK_QUANT_INT4; f++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            float *w = random_weights(shapes[i][0], shapes[i][1], true);
            check_round_trip(f, w, shapes[i][0], shapes[i][1]);
            free(w);
        }
    /* INT8 takes any row length */
    float *w = random_weights(7, 83, true);
    check_round_trip(FK_QUANT_INT8, w, 7, 83);
    free(w);
}

/* Zero rows, all-equal groups (positive, negative, zero) inside otherwise random rows, and values at the edges of
 * the range. */
static void test_special_rows(void **state)
{
    (void)state;
    const int rows = 6, cols = 512;
    float *w = random_weights(rows, cols, true);
    memset(w, 0, cols * sizeof *w); /* row 0: zeros */
    for (int k = 0; k < cols; k++) {
        const int g = k / QUANT_GROUP;
        w[1 * cols + k] = g == 0 ? 0.37f : g == 1 ? -2.5f : g == 2 ? 0.0f : 1e-3f; /* row 1: all-equal groups */
        w[2 * cols + k] = 0.75f;                                                 /* row 2: one value */
        if (g == 3)
            w[3 * cols + k] = 0; /* row 3: a zero group in a random row */
    }
    w[4 * cols + 5] = 1000, w[4 * cols + 6] = -1000; /* row 4: outliers at both ends */
    for (fk_quantization f = FK_QUANT_INT8; f <= FK_QUANT_INT4; f++) {
        check_round_trip(f, w, rows, cols);
        void *data = malloc(quant_data_bytes(f, rows, cols));
        uint16_t *scales = malloc(quant_scale_bytes(f, rows, cols));
        float *back = malloc((size_t)rows * cols * sizeof *back);
        quant_pack(f, w, rows, cols, data, scales);
        quant_unpack_rows(f, data, scales, cols, 0, rows, back);
        for (int k = 0; k < cols; k++)
            assert_true(back[k] == 0 && back[3 * cols + 3 * QUANT_GROUP + k % QUANT_GROUP] == 0);
        assert_int_equal(scales[0], 0); /* a zero row's scale (INT4: its first group's) is 0 */
        /* rows unpacked one at a time, from the middle, agree with the whole */
        float one[512];
        quant_unpack_rows(f, data, scales, cols, 4, 1, one);
        assert_memory_equal(one, back + 4 * cols, sizeof one);
        free(data), free(scales), free(back);
    }
    free(w);
}

static void test_refusals(void **state)
{
    (void)state;
    fk_error err = {0};
    assert_int_equal(quant_check(FK_QUANT_INT4, 100, &err), FK_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "100"));
    assert_non_null(strstr(err.message, "128"));
    assert_int_equal(quant_check(FK_QUANT_INT4, 384, &err), FK_OK);
    assert_int_equal(quant_check(FK_QUANT_INT8, 100, &err), FK_OK);
    float w[3 * 100] = {0};
    qweight q = {.data = (void *)1};
    assert_int_equal(be->ops->upload_linear(be, w, 3, 100, FK_QUANT_INT4, &q, &err), FK_ERR_UNSUPPORTED);
    assert_null(q.data);
    assert_null(q.scales);
}

/* Writes a tiny Llama (random weights, hidden d, MLP f) to dir. */
static void write_llama(const char *dir, int d, int f)
{
    const int vocab = 32, heads = 2, head_dim = d / 2;
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "architectures"), cJSON_CreateString("LlamaForCausalLM"));
    cJSON_AddStringToObject(c, "model_type", "llama");
    const struct {
        const char *k;
        int v;
    } fields[] = {{"hidden_size", d},         {"intermediate_size", f},     {"num_attention_heads", heads},
                  {"num_key_value_heads", 1}, {"num_hidden_layers", 1},     {"vocab_size", vocab},
                  {"head_dim", head_dim},     {"max_position_embeddings", 64}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        cJSON_AddNumberToObject(c, fields[i].k, fields[i].v);
    cJSON_AddBoolToObject(c, "tie_word_embeddings", true);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_json(path, c);
    cJSON_Delete(c);
    const struct {
        const char *name;
        int rows, cols;
    } t[] = {{"model.embed_tokens.weight", vocab, d},
             {"model.norm.weight", d, 0},
             {"model.layers.0.input_layernorm.weight", d, 0},
             {"model.layers.0.post_attention_layernorm.weight", d, 0},
             {"model.layers.0.self_attn.q_proj.weight", d, d},
             {"model.layers.0.self_attn.k_proj.weight", head_dim, d},
             {"model.layers.0.self_attn.v_proj.weight", head_dim, d},
             {"model.layers.0.self_attn.o_proj.weight", d, d},
             {"model.layers.0.mlp.gate_proj.weight", f, d},
             {"model.layers.0.mlp.up_proj.weight", f, d},
             {"model.layers.0.mlp.down_proj.weight", d, f}};
    enum { N = sizeof t / sizeof t[0] };
    tu_tensor tensors[N];
    float *data[N];
    for (int i = 0; i < N; i++) {
        const size_t n = (size_t)t[i].rows * (t[i].cols ? t[i].cols : 1);
        data[i] = random_weights(1, (int)n, false);
        tensors[i] = (tu_tensor){t[i].name, "F32", t[i].cols ? 2 : 1, {t[i].rows, t[i].cols}, data[i], n * 4};
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tu_write_safetensors(path, tensors, N);
    for (int i = 0; i < N; i++)
        free(data[i]);
}

/* INT4 refuses a model whose layer inputs are not multiples of 128, naming the first such tensor and its size;
 * INT8 takes it; both take a model whose inputs are. */
static void test_loader_refusal(void **state)
{
    (void)state;
    const struct {
        int d, f;
        const char *tensor;
        int size;
    } cases[] = {{96, 128, "model.layers.0.self_attn.q_proj.weight", 96},
                 {128, 160, "model.layers.0.mlp.down_proj.weight", 160},
                 {128, 256, NULL, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = tu_make_temp_dir();
        write_llama(dir, cases[i].d, cases[i].f);
        for (fk_quantization q = FK_QUANT_INT8; q <= FK_QUANT_INT4; q++) {
            fk_model_params p = fk_model_params_default();
            p.device = FK_DEVICE_CPU;
            p.quantization = q;
            fk_model *m = NULL;
            fk_error err = {0};
            const fk_status s = fk_model_load(dir, &p, &m, &err);
            if (q == FK_QUANT_INT4 && cases[i].tensor) {
                assert_int_equal(s, FK_ERR_UNSUPPORTED);
                assert_null(m);
                char size[16];
                snprintf(size, sizeof size, "%d", cases[i].size);
                printf("refused: %s\n", err.message);
                assert_non_null(strstr(err.message, cases[i].tensor));
                assert_non_null(strstr(err.message, size));
            } else {
                if (s)
                    fail_msg("%s with %s: %s", dir, fk_quantization_name(q), err.message);
                assert_int_equal(fk_model_get_info(m).quantization, q);
                fk_model_free(m);
            }
        }
        tu_remove_dir(dir);
        free(dir);
    }
}

/* y = x W'^T + b in double, W' = the dequantized rows of q; *bound: per element, what float32 sums of its terms
 * may err by ((in + 2) unit roundoffs of the sum of their magnitudes). */
static double *reference(const qweight *q, const float *x, const float *bias, int n, double **bound)
{
    float *wd = malloc((size_t)q->rows * q->cols * sizeof *wd);
    quant_unpack_rows(q->format, q->data, q->scales, q->cols, 0, q->rows, wd);
    double *y = malloc((size_t)n * q->rows * sizeof *y);
    *bound = malloc((size_t)n * q->rows * sizeof **bound);
    for (int t = 0; t < n; t++)
        for (int o = 0; o < q->rows; o++) {
            double s = bias ? bias[o] : 0, mag = fabs(s);
            for (int k = 0; k < q->cols; k++) {
                const double term = (double)x[(size_t)t * q->cols + k] * wd[(size_t)o * q->cols + k];
                s += term, mag += fabs(term);
            }
            y[(size_t)t * q->rows + o] = s;
            (*bound)[(size_t)t * q->rows + o] = (q->cols + 2) * 6e-8 * mag + 1e-7;
        }
    free(wd);
    return y;
}

static void assert_within(const float *got, const double *want, const double *bound, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= bound[i]))
            fail_msg("%s: element %zu is %.9g, expected %.9g (bound %.3g)", what, i, (double)got[i], want[i],
                     bound[i]);
}

static void test_cpu_linears(void **state)
{
    (void)state;
    const int ns[] = {1, 3, 5, 17}, outs[] = {1, 5, 16, 33};
    const int ins[2][3] = {{7, 64, 129}, {128, 256, 384}};
    for (fk_quantization f = FK_QUANT_INT8; f <= FK_QUANT_INT4; f++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 4; c++) {
                    const int n = ns[a], in = ins[f - 1][b], out = outs[c];
                    const float *bias = (a + b + c) % 2 ? random_weights(1, 2 * out, false) : NULL;
                    float *w = random_weights(2 * out, in, false), *x = malloc((size_t)n * in * sizeof *x);
                    float *y = malloc((size_t)n * out * sizeof *y), *scratch = malloc((size_t)n * 2 * out * 4);
                    for (size_t i = 0; i < (size_t)n * in; i++)
                        x[i] = tu_uniform(&rng, -1, 1);
                    qweight q, q2; /* [out][in], and [gate | up] [2 out][in] */
                    const size_t before = be->weight_bytes;
                    assert_int_equal(be->ops->upload_linear(be, w, out, in, f, &q, NULL), FK_OK);
                    assert_int_equal(be->weight_bytes - before,
                                     quant_data_bytes(f, out, in) + quant_scale_bytes(f, out, in));
                    assert_int_equal(be->ops->upload_linear(be, w, 2 * out, in, f, &q2, NULL), FK_OK);
                    double *bound, *want = reference(&q, x, bias, n, &bound);
                    assert_int_equal(be->ops->linear(be, y, x, &q, bias, n, in, out, NULL), FK_OK);
                    assert_within(y, want, bound, (size_t)n * out, "quantized linear");
                    for (size_t i = 0; i < (size_t)n * out; i++) { /* GPT-2's gelu_new, |gelu'| <= 1.13 */
                        const double v = want[i];
                        want[i] = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
                        bound[i] = 1.13 * bound[i] + 1e-6 * fabs(want[i]);
                    }
                    assert_int_equal(be->ops->linear_gelu(be, y, x, &q, bias, n, in, out, NULL), FK_OK);
                    assert_within(y, want, bound, (size_t)n * out, "quantized linear_gelu");
                    free(want), free(bound);
                    double *gu_bound, *gu = reference(&q2, x, bias, n, &gu_bound);
                    want = malloc((size_t)n * out * sizeof *want), bound = malloc((size_t)n * out * sizeof *bound);
                    for (int t = 0; t < n; t++)
                        for (int o = 0; o < out; o++) { /* |silu'| <= 1.1 */
                            const size_t i = (size_t)t * out + o, gi = (size_t)t * 2 * out + o, ui = gi + out;
                            const double g = gu[gi], u = gu[ui], silu = g / (1 + exp(-g));
                            want[i] = silu * u;
                            bound[i] = 1.1 * fabs(u) * gu_bound[gi] + (fabs(silu) + gu_bound[gi]) * gu_bound[ui] +
                                       1e-6 * fabs(want[i]);
                        }
                    assert_int_equal(be->ops->linear_silu_mul(be, y, scratch, x, &q2, bias, n, in, out, NULL), FK_OK);
                    assert_within(y, want, bound, (size_t)n * out, "quantized linear_silu_mul");
                    free(w), free(x), free((void *)bias), free(y), free(scratch), free(want), free(bound), free(gu),
                        free(gu_bound);
                    void *all[] = {q.data, q.scales, q2.data, q2.scales};
                    for (int i = 0; i < 4; i++)
                        be->ops->release(be, all[i]);
                }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_special_rows),
        cmocka_unit_test(test_refusals),     cmocka_unit_test(test_loader_refusal),
        cmocka_unit_test(test_cpu_linears),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
