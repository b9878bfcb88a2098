/* test_gpu_ops.c — every op of the CUDA backend against the CPU backend (the float32 oracle) on fresh random inputs:
 * odd sizes, block boundaries +-1, one token, GQA ratios 1/4/8, head_dim 64/128, chunked prefill and long decodes;
 * quantized linears (INT8, INT4) against the CPU's on the same quantized weights, and their layouts exactly.
 * Inputs are rounded to fp16 first so both backends see the same values; GPU outputs are poisoned with NaN before
 * each op so an unwritten element fails. Tolerances (fp16 storage of results, fp32 accumulation) are stated per
 * op as |gpu - cpu| <= atol + rtol |cpu|. Exit 77 (skipped) without a GPU. */
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
#include "kernels.h"
#include "quant.h"
#include "test_util.h"

static backend *cpu, *gpu;
static uint64_t rng;

/* Random values in [lo, hi) that fp16 represents exactly. */
static float *rand_f16(size_t n, float lo, float hi)
{
    float *v = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++)
        v[i] = fp16_to_f32(f32_to_fp16(tu_uniform(&rng, lo, hi)));
    return v;
}

/* Device copy of host floats as fp16 activations. */
static void *to_gpu(const float *host, size_t n)
{
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = f32_to_fp16(host[i]);
    void *d;
    assert_int_equal(gpu->ops->alloc(gpu, n * 2 + 2, &d, NULL), FK_OK);
    assert_int_equal(gpu->ops->upload(gpu, d, h, n * 2, NULL), FK_OK);
    free(h);
    return d;
}

/* A device buffer of n fp16 NaNs. */
static void *poisoned(size_t n)
{
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = 0x7e00;
    void *d;
    assert_int_equal(gpu->ops->alloc(gpu, n * 2 + 2, &d, NULL), FK_OK);
    assert_int_equal(gpu->ops->upload(gpu, d, h, n * 2, NULL), FK_OK);
    free(h);
    return d;
}

static void *ints_to_gpu(const int32_t *v, size_t n)
{
    void *d;
    assert_int_equal(gpu->ops->alloc(gpu, n * 4 + 4, &d, NULL), FK_OK);
    assert_int_equal(gpu->ops->upload(gpu, d, v, n * 4, NULL), FK_OK);
    return d;
}

static void *floats_to_gpu(const float *v, size_t n)
{
    void *d;
    assert_int_equal(gpu->ops->alloc(gpu, n * 4 + 4, &d, NULL), FK_OK);
    assert_int_equal(gpu->ops->upload(gpu, d, v, n * 4, NULL), FK_OK);
    return d;
}

static float *from_gpu(const void *d, size_t n)
{
    float *h = malloc((n ? n : 1) * sizeof(float));
    fk_error err = {0};
    if (gpu->ops->download_act(gpu, h, d, n, &err))
        fail_msg("%s", err.message);
    return h;
}

/* Every element finite and within atol + rtol |want|; returns the largest error for the report. */
static double compare(const char *what, const float *got, const float *want, size_t n, double atol, double rtol)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        if (!isfinite(got[i]) || e > atol + rtol * fabs(want[i]))
            fail_msg("%s: element %zu is %g, the CPU gives %g (tolerance %g + %g |x|)", what, i, (double)got[i],
                     (double)want[i], atol, rtol);
        worst = e > worst ? e : worst;
    }
    return worst;
}

static int setup(void **state)
{
    (void)state;
    rng = tu_seed();
    return backend_cpu_create(2, &cpu, NULL);
}

/* Which linear a test calls: the three ops that share the small-batch kernel (and, above 16 tokens or with it
 * switched off, cuBLAS / cuBLASLt). SILU_MUL's weight is [2 out][in]. */
enum linear_kind { PLAIN, GELU, SILU_MUL };
static const char *const linear_names[] = {"linear", "linear_gelu", "linear_silu_mul"};

static fk_status run_linear(backend *be, enum linear_kind kind, void *y, void *scratch, const void *x,
                            const qweight *w, const void *bias, int n, int in, int out, fk_error *err)
{
    switch (kind) {
    case PLAIN: return be->ops->linear(be, y, x, w, bias, n, in, out, err);
    case GELU: return be->ops->linear_gelu(be, y, x, w, bias, n, in, out, err);
    default: return be->ops->linear_silu_mul(be, y, scratch, x, w, bias, n, in, out, err);
    }
}

/* One linear on fresh inputs against the CPU oracle, with the weights stored in `format` on both backends (the
 * same quantized values: the host quantizer is shared); the output is poisoned first, so an unwritten element
 * fails. */
static void linear_case(backend *g, enum linear_kind kind, fk_quantization format, int n, int in, int out,
                        bool with_bias, const char *mode)
{
    const int rows = kind == SILU_MUL ? 2 * out : out;
    float *x = rand_f16((size_t)n * in, -1, 1), *w = rand_f16((size_t)rows * in, -0.5f, 0.5f);
    float *bias = rand_f16(rows, -1, 1), *want = calloc((size_t)n * rows, sizeof(float));
    float *scratch = calloc((size_t)n * rows, sizeof(float));
    void *db = NULL;
    qweight gw, cw;
    fk_error err = {0};
    assert_int_equal(g->ops->upload_linear(g, w, rows, in, format, &gw, NULL), FK_OK);
    assert_int_equal(cpu->ops->upload_linear(cpu, w, rows, in, format, &cw, NULL), FK_OK);
    if (with_bias)
        assert_int_equal(g->ops->upload_weight(g, bias, 1, rows, &db, NULL), FK_OK);
    void *dx = to_gpu(x, (size_t)n * in), *dy = poisoned((size_t)n * out), *dscratch = poisoned((size_t)n * rows);
    assert_int_equal(run_linear(cpu, kind, want, scratch, x, &cw, with_bias ? bias : NULL, n, in, out, NULL), FK_OK);
    if (run_linear(g, kind, dy, dscratch, dx, &gw, db, n, in, out, &err))
        fail_msg("%s %s (%s) %dx%d->%d: %s", fk_quantization_name(format), linear_names[kind], mode, n, in, out,
                 err.message);
    float *got = from_gpu(dy, (size_t)n * out);
    char what[128];
    snprintf(what, sizeof what, "%s %s (%s) %dx%d->%d%s", fk_quantization_name(format), linear_names[kind], mode, n,
             in, out, with_bias ? " +bias" : "");
    /* fp16 output: half an ulp (2^-11 relative) plus fp32 sums in another order; gelu' <= 1.13; silu(g) u is
     * rounded from two such sums, |silu'| <= 1.1, so its error scales with |u| + |silu(g)| (both <= ~sqrt(in)). */
    const double atol = 2e-3 * sqrt(in) / 8 * (kind == SILU_MUL ? sqrt(in) : 1);
    compare(what, got, want, (size_t)n * out, atol, 2e-3);
    free(x), free(w), free(bias), free(want), free(scratch), free(got);
    void *all[] = {gw.data, gw.scales, db, dx, dy, dscratch};
    for (int i = 0; i < 6; i++)
        if (all[i])
            g->ops->release(g, all[i]);
    cpu->ops->release(cpu, cw.data);
    if (cw.scales)
        cpu->ops->release(cpu, cw.scales);
}

/* The paths an fp16 linear can take, set through the environment: the small kernel for every count up to 64 (on
 * unaligned output rows up to 256 tokens, in passes of 64: the 100-token cases); the wgmma kernel for every count up
 * to 64 (on a Hopper; elsewhere those go to cuBLAS too), splitting k across a cluster where it would (not only where
 * the default sends it), with 4 and with 8 stages (the 4-stage ring wraps every 256 k); cuBLAS everywhere (on
 * unaligned output rows, W's padded rows into the padded scratch, here of 1 MiB, so that a 300-token head-like case
 * goes in two chunks). */
static const struct {
    const char *name;
    const char *small, *unaligned, *wgmma, *stages;
} linear_modes[] = {
    {"small kernel", "64", "256", "0", "0"},
    {"wgmma kernel, 4 stages", "0", "0", "64", "4"},
    {"wgmma kernel, 8 stages", "0", "0", "64", "8"},
    {"cuBLAS", "0", "0", "0", "0"},
};

/* Every token count from 1 to 17, then the edges of the small-batch kernel's token tiles (8, 16, 32 and 64 tokens)
 * and one past its range, then larger ones, on odd shapes: k not a multiple of the kernel's 32-wide step (or of 8:
 * cuBLAS), rows not a multiple of 16, few rows with a long k (split-K across blocks), the model shapes; 1 and a
 * random 2-8 tokens on rows too many for one wave of 16-warp blocks; and random shapes drawn each run; in each of
 * linear_modes. */
static void linear_cases(enum linear_kind kind)
{
    const int shapes[][2] = {{64, 64}, {136, 33}, {2048, 3072}, {8192, 64}, {768, 2304}, {40, 83}, {129, 100},
                             {4096, 17}, {2048, 50257 / 16}};
    const int mid[] = {24, 32, 33, 47, 64, 65};
    const int ns[] = {17, 100, 128, 300};
    backend *shared = gpu;
    for (size_t mi = 0; mi < sizeof linear_modes / sizeof linear_modes[0]; mi++) {
        const char *mode = linear_modes[mi].name;
        const bool cublas_only = mi == sizeof linear_modes / sizeof linear_modes[0] - 1;
        const char *const env[6][2] = {{"FK_SMALL_LINEAR_MAX_M", linear_modes[mi].small},
                                       {"FK_SMALL_LINEAR_UNALIGNED_MAX_M", linear_modes[mi].unaligned},
                                       {"FK_WGMMA_LINEAR_MAX_M", linear_modes[mi].wgmma},
                                       {"FK_WGMMA_LINEAR_STAGES", linear_modes[mi].stages},
                                       {"FK_WGMMA_LINEAR_SPLITS", "1"},
                                       {"FK_PADDED_SCRATCH_MB", cublas_only ? "1" : NULL}};
        for (int i = 0; i < 6; i++)
            if (env[i][1])
                setenv(env[i][0], env[i][1], 1);
        fk_error err = {0};
        backend *g = NULL;
        const fk_status created = backend_cuda_create(&g, &err);
        for (int i = 0; i < 6; i++)
            unsetenv(env[i][0]);
        if (created)
            fail_msg("%s", err.message);
        gpu = g; /* the helpers upload through `gpu` */
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            const int in = shapes[k][0], out = shapes[k][1];
            for (int n = 1; n <= 17; n++)
                linear_case(g, kind, FK_QUANT_NONE, n, in, out, (n + k) % 2, mode);
            for (size_t i = 0; i < sizeof mid / sizeof mid[0]; i++)
                linear_case(g, kind, FK_QUANT_NONE, mid[i], in, out, (i + k) % 2, mode);
            linear_case(g, kind, FK_QUANT_NONE, ns[k % 4], in, out, k % 2, mode);
        }
        /* Llama-1B's gate|up rows (512 row tiles): at one token tile (on an H100) blocks of 4 warps, all resident */
        const int one_tile[2] = {1, 2 + (int)tu_below(&rng, 7)};
        for (int i = 0; i < 2; i++)
            linear_case(g, kind, FK_QUANT_NONE, one_tile[i], 2048, 8192, i == 1, mode);
        if (cublas_only) /* 1 MiB holds 166 padded rows of 3,141 */
            linear_case(g, kind, FK_QUANT_NONE, 300, 2048, 3141, false, "cuBLAS, padded rows in two chunks");
        for (int r = 0; r < 6; r++) { /* random shapes: k a multiple of 8 (the small kernel's) or not */
            const int in = 8 * (1 + (int)tu_below(&rng, 600)) + (r == 5 ? 3 : 0), out = 1 + (int)tu_below(&rng, 700);
            linear_case(g, kind, FK_QUANT_NONE, 1 + (int)tu_below(&rng, r < 4 ? 64 : 300), in, out, r % 2, mode);
        }
        g->ops->destroy(g);
        gpu = shared;
    }
}

static void test_linear(void **state)
{
    (void)state;
    linear_cases(PLAIN);
}

static void test_linear_silu_mul(void **state)
{
    (void)state;
    linear_cases(SILU_MUL);
}

/* A CUDA backend created with up to four environment variables set (name, value pairs; NULL names: none). */
static backend *cuda_with(const char *const env[4][2])
{
    for (int i = 0; i < 4 && env[i][0]; i++)
        setenv(env[i][0], env[i][1], 1);
    backend *g = NULL;
    fk_error err = {0};
    const fk_status s = backend_cuda_create(&g, &err);
    for (int i = 0; i < 4 && env[i][0]; i++)
        unsetenv(env[i][0]);
    if (s)
        fail_msg("%s", err.message);
    return g;
}

/* The paths a quantized linear can take, and the token counts that exercise each: our small-batch kernel on the packed
 * weights (16 tokens a pass: up to 32 tokens by default, 16 on a Hopper, up to 64 with FK_QUANT_SMALL_MAX_M=64); on a
 * Hopper the wgmma kernel on them (by default above the small kernel up to 64 tokens, up to 512 on weights of 16 M
 * elements or more: the default mode's 24 and 64, and 100, which takes 64-token tiles on Llama-3-8B's o; for every
 * count with FK_QUANT_SMALL_MAX_M=0 and FK_QUANT_WGMMA_MAX_M=4096, with 4 and 8 stages (the 4-stage ring wraps every
 * 256 k): token tiles of 64 and of 128, one to three of them, split-K across a cluster on the long k; and with its
 * choices forced, FK_QUANT_WGMMA_TOKENS and _SPLITS: 64-token tiles above 64 tokens with 8 splits, which short k
 * clamps, and 128-token tiles from 1 token without splits); our tiled mma.sync kernel on them (elsewhere above the
 * small kernel, up to 128 tokens for INT8 and 64 for INT4 by default; for every count with the wgmma kernel off,
 * FK_QUANT_SMALL_MAX_M=0 and FK_QUANT_MMA_MAX_M=4096, with blocks of 64 and of 128 rows (FK_QUANT_MMA_ROWS): partial
 * token tiles, one to five tiles of 64 tokens, split-K on the long k), or W dequantized to fp16 for cuBLAS (above that
 * by default: the 300-token cases; with all off, here with a 1 MiB scratch so that large weights go a chunk of rows at
 * a time). With FK_QUANT_RESIDENT=2, one token tile goes to the kernel with W in shared memory wherever it fits (the
 * large shapes at 1, 8 or 2 tokens: Llama-1B's down projection at 2), 9 tokens to the small kernel. ns[0] = 0: every
 * count from 1 to 17, then ns[1..]. */
static const struct {
    const char *name;
    const char *env[4][2];
    int ns[5];
} quant_modes[] = {
    {"default", {{NULL, NULL}}, {0, 24, 64, 100, 300}},
    {"small kernel up to 64 tokens", {{"FK_QUANT_SMALL_MAX_M", "64"}, {NULL, NULL}}, {17, 31, 33, 64, 0}},
    {"wgmma kernel, 4 stages",
     {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "4096"}, {"FK_QUANT_WGMMA_STAGES", "4"}},
     {0, 33, 65, 130, 300}},
    {"wgmma kernel, 8 stages",
     {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "4096"}, {"FK_QUANT_WGMMA_STAGES", "8"}},
     {0, 33, 65, 130, 300}},
    {"wgmma kernel, 64-token blocks, 8 splits",
     {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "4096"}, {"FK_QUANT_WGMMA_TOKENS", "64"},
      {"FK_QUANT_WGMMA_SPLITS", "8"}},
     {0, 65, 130, 300, 0}},
    {"wgmma kernel, 128-token blocks, 1 split",
     {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "4096"}, {"FK_QUANT_WGMMA_TOKENS", "128"},
      {"FK_QUANT_WGMMA_SPLITS", "1"}},
     {0, 33, 130, 65, 0}},
    {"tiled kernel, 64-row blocks",
     {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "0"}, {"FK_QUANT_MMA_MAX_M", "4096"},
      {"FK_QUANT_MMA_ROWS", "64"}},
     {0, 33, 65, 130, 300}},
    {"tiled kernel, 128-row blocks",
     {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "0"}, {"FK_QUANT_MMA_MAX_M", "4096"},
      {"FK_QUANT_MMA_ROWS", "128"}},
     {0, 33, 65, 130, 300}},
    {"resident kernel", {{"FK_QUANT_RESIDENT", "2"}, {NULL, NULL}}, {3, 1, 8, 2, 9}},
    {"dequantized, 1 MiB chunks",
     {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "0"}, {"FK_QUANT_MMA_MAX_M", "0"},
      {"FK_DEQUANT_SCRATCH_MB", "1"}},
     {1, 9, 16, 40, 0}},
};

/* Both formats in every mode, against the CPU on the same quantized weights. Small shapes: INT8 k a multiple of 16
 * but not of its 64-wide step, k = 16, k its kernel does not take (40: dequantized then the fp16 small kernel; 129:
 * cuBLAS); INT4 one to nine groups; rows not a multiple of 16, a single row, few rows with a long k (split-K). Then
 * the model shapes (Llama-3.2-1B, GPT-2, Llama-3-8B's down projection and o, bench-1b's lm_head rows / 16) at fewer
 * token counts, and random shapes drawn each run. */
static void quant_linear_cases(enum linear_kind kind)
{
    const int small[2][5][2] = {{{144, 33}, {16, 5}, {40, 83}, {129, 100}, {4096, 17}},
                                {{128, 33}, {384, 83}, {1152, 100}, {256, 1}, {4096, 17}}};
    const int large[][2] = {{2048, 3072}, {768, 2304}, {8192, 64},  {14336, 40},
                            {2048, 3141}, {4096, 4096}, {8192, 2048}};
    backend *shared = gpu;
    for (fk_quantization f = FK_QUANT_INT8; f <= FK_QUANT_INT4; f++)
        for (size_t mi = 0; mi < sizeof quant_modes / sizeof quant_modes[0]; mi++) {
            backend *g = cuda_with(quant_modes[mi].env);
            gpu = g; /* the helpers upload through `gpu` */
            const char *mode = quant_modes[mi].name;
            const int *ns = quant_modes[mi].ns;
            for (int k = 0; k < 5; k++) {
                const int in = small[f - 1][k][0], out = small[f - 1][k][1];
                for (int n = 1; ns[0] == 0 && n <= 17; n++)
                    linear_case(g, kind, f, n, in, out, (n + k) % 2, mode);
                for (int i = ns[0] == 0; i < 5 && ns[i]; i++)
                    linear_case(g, kind, f, ns[i], in, out, (i + k) % 2, mode);
            }
            for (size_t k = 0; k < sizeof large / sizeof large[0]; k++) {
                const int in = large[k][0], out = large[k][1], n_small[] = {1, 8, 9, 16, 17};
                for (size_t i = 0; ns[0] == 0 && i < 5; i++)
                    linear_case(g, kind, f, n_small[i], in, out, (i + k) % 2, mode);
                linear_case(g, kind, f, ns[1 + k % 3], in, out, k % 2, mode);
            }
            for (int r = 0; r < 3; r++) {
                const int in =
                    f == FK_QUANT_INT4 ? 128 * (1 + (int)tu_below(&rng, 32)) : 16 * (1 + (int)tu_below(&rng, 256));
                linear_case(g, kind, f, 1 + (int)tu_below(&rng, r < 2 ? 16 : 64), in, 1 + (int)tu_below(&rng, 700),
                            r % 2, mode);
            }
            g->ops->destroy(g);
            gpu = shared;
        }
}

static void test_quant_linear(void **state)
{
    (void)state;
    quant_linear_cases(PLAIN);
}

static void test_quant_linear_gelu(void **state)
{
    (void)state;
    quant_linear_cases(GELU);
}

static void test_quant_linear_silu_mul(void **state)
{
    (void)state;
    quant_linear_cases(SILU_MUL);
}

/* The packed layouts, exactly: token t's input is the unit vector at position j_t, so y[t][o] is W'[o][j_t] alone,
 * which every path computes exactly (one product with 1, sums with zeros) before rounding it to fp16: the GPU must
 * give the fp16 of the CPU's dequantized weight, bit for bit. With 16 tokens over 16 rounds every position of a
 * 256-wide row is hit (each byte and nibble of the packing, two INT4 groups); longer rows get random positions, on
 * the small kernel's one and two token tiles and split-K, the tiled kernel's (64 tokens, and for INT8 100: one and
 * two token tiles; INT4's 100 go to cuBLAS; on a Hopper the 64 go to the wgmma kernel) and the
 * dequantize + cuBLAS path (64 tokens, on a backend with both tiled kernels off). The weights include a zero row and an all-equal row. Also: the weight bytes the backend
 * counts, and the tuning switches' ranges. */
static void test_quant_layout(void **state)
{
    (void)state;
    const int shapes[][2] = {{256, 40}, {2048, 3072}, {4096, 17}, {14336, 64}};
    const int ns[] = {16, 9, 1, 64, 100, 64}; /* the last on `dequantizing` */
    const char *const off[4][2] = {
        {"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "0"}, {"FK_QUANT_MMA_MAX_M", "0"}};
    backend *dequantizing = cuda_with(off);
    for (fk_quantization f = FK_QUANT_INT8; f <= FK_QUANT_INT4; f++)
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            const int in = shapes[k][0], out = shapes[k][1];
            float *w = rand_f16((size_t)out * in, -0.5f, 0.5f), *wd = malloc((size_t)out * in * sizeof *wd);
            for (int i = 0; i < in; i++)
                w[i] = 0, w[(size_t)in + i] = 0.3125f; /* row 0 zero, row 1 all equal */
            qweight gw, dw, cw;
            const size_t before = gpu->weight_bytes;
            assert_int_equal(gpu->ops->upload_linear(gpu, w, out, in, f, &gw, NULL), FK_OK);
            assert_int_equal(gpu->weight_bytes - before, quant_data_bytes(f, out, in) + quant_scale_bytes(f, out, in));
            assert_int_equal(dequantizing->ops->upload_linear(dequantizing, w, out, in, f, &dw, NULL), FK_OK);
            assert_int_equal(cpu->ops->upload_linear(cpu, w, out, in, f, &cw, NULL), FK_OK);
            quant_unpack_rows(f, cw.data, cw.scales, in, 0, out, wd);
            for (int i = 0; i < in; i++)
                assert_true(wd[i] == 0);
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                const int n = ns[ni], rounds = k == 0 && n == 16 ? in / 16 : 2;
                const bool last = ni == sizeof ns / sizeof ns[0] - 1;
                backend *shared = gpu;
                gpu = last ? dequantizing : shared; /* the helpers upload through `gpu`, on its stream */
                const qweight *bw = last ? &dw : &gw;
                for (int r = 0; r < rounds; r++) {
                    float *x = calloc((size_t)n * in, sizeof *x);
                    int *j = malloc((size_t)n * sizeof *j);
                    for (int t = 0; t < n; t++) {
                        j[t] = rounds > 2 ? 16 * r + t : (int)tu_below(&rng, (uint32_t)in);
                        x[(size_t)t * in + j[t]] = 1;
                    }
                    void *dx = to_gpu(x, (size_t)n * in), *dy = poisoned((size_t)n * out);
                    fk_error err = {0};
                    if (gpu->ops->linear(gpu, dy, dx, bw, NULL, n, in, out, &err))
                        fail_msg("%s layout %dx%d->%d: %s", fk_quantization_name(f), n, in, out, err.message);
                    float *got = from_gpu(dy, (size_t)n * out);
                    for (int t = 0; t < n; t++)
                        for (int o = 0; o < out; o++) {
                            const float want = fp16_to_f32(f32_to_fp16(wd[(size_t)o * in + j[t]]));
                            if (got[(size_t)t * out + o] != want)
                                fail_msg("%s layout %dx%d->%d%s: row %d input %d is %g on the GPU, %g on the CPU",
                                         fk_quantization_name(f), n, in, out, last ? " (dequantized)" : "", o, j[t],
                                         (double)got[(size_t)t * out + o], (double)want);
                        }
                    free(x), free(j), free(got);
                    gpu->ops->release(gpu, dx), gpu->ops->release(gpu, dy);
                }
                gpu = shared;
            }
            dequantizing->ops->release(dequantizing, dw.data), dequantizing->ops->release(dequantizing, dw.scales);
            free(w), free(wd);
            gpu->ops->release(gpu, gw.data), gpu->ops->release(gpu, gw.scales);
            cpu->ops->release(cpu, cw.data), cpu->ops->release(cpu, cw.scales);
        }
    dequantizing->ops->destroy(dequantizing);
    const char *bad[][2] = {{"FK_QUANT_SMALL_MAX_M", "257"},
                            {"FK_DEQUANT_SCRATCH_MB", "0"},
                            {"FK_QUANT_MMA_MAX_M", "-1"},
                            {"FK_QUANT_WGMMA_MAX_M", "-1"},
                            {"FK_QUANT_WGMMA_STAGES", "5"},
                            {"FK_QUANT_WGMMA_TOKENS", "96"},
                            {"FK_QUANT_WGMMA_SPLITS", "9"},
                            {"FK_QUANT_MMA_ROWS", "96"},
                            {"FK_PADDED_SCRATCH_MB", "0"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(bad[i][0], bad[i][1], 1);
        backend *g = NULL;
        fk_error err = {0};
        assert_int_equal(backend_cuda_create(&g, &err), FK_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(err.message, bad[i][0]));
        unsetenv(bad[i][0]);
    }
}

/* Both epilogues above the small-batch range: cuBLASLt's GELU_BIAS and cuBLAS + k_bias_gelu (vectorized when rows
 * are whole 16-byte vectors, scalar otherwise), with and without a bias; up to 16 tokens the small-batch kernel's
 * GELU epilogue in both modes; then linear_cases (every token count, both kernels). */
static void test_linear_gelu(void **state)
{
    (void)state;
    const int shapes[][3] = {{1, 768, 3072}, {7, 128, 512}, {64, 256, 1024}, {5, 40, 83}, {3, 64, 8}, {16, 768, 3072},
                             {17, 768, 3072}, {300, 136, 200}};
    const char *modes[] = {"kernel", "cublaslt"};
    backend *shared = gpu;
    for (int m = 0; m < 2; m++) { /* a backend per mode, standing in for the shared one that the helpers use */
        fk_error err = {0};
        setenv("FK_GELU_EPILOGUE", modes[m], 1);
        if (backend_cuda_create(&gpu, &err))
            fail_msg("%s", err.message);
        unsetenv("FK_GELU_EPILOGUE");
        backend *g = gpu;
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            const int n = shapes[k][0], in = shapes[k][1], out = shapes[k][2];
            const bool with_bias = k != 2;
            float *x = rand_f16((size_t)n * in, -1, 1), *w = rand_f16((size_t)out * in, -0.5f, 0.5f);
            float *bias = rand_f16(out, -1, 1), *want = calloc((size_t)n * out, sizeof(float));
            void *db = NULL;
            qweight dw;
            const qweight cw = {.format = FK_QUANT_NONE, .rows = out, .cols = in, .data = w};
            assert_int_equal(g->ops->upload_linear(g, w, out, in, FK_QUANT_NONE, &dw, NULL), FK_OK);
            if (with_bias)
                assert_int_equal(g->ops->upload_weight(g, bias, 1, out, &db, NULL), FK_OK);
            void *dx = to_gpu(x, (size_t)n * in), *dy = poisoned((size_t)n * out);
            assert_int_equal(cpu->ops->linear_gelu(cpu, want, x, &cw, with_bias ? bias : NULL, n, in, out, NULL),
                             FK_OK);
            if (g->ops->linear_gelu(g, dy, dx, &dw, db, n, in, out, &err))
                fail_msg("%s: %s", modes[m], err.message);
            float *got = from_gpu(dy, (size_t)n * out);
            char what[64];
            snprintf(what, sizeof what, "linear_gelu (%s) %dx%d->%d", modes[m], n, in, out);
            compare(what, got, want, (size_t)n * out, 2e-3 * sqrt(in) / 8, 2e-3); /* as linear: gelu' <= 1.13 */
            free(x), free(w), free(bias), free(want), free(got);
            g->ops->release(g, dw.data), g->ops->release(g, db), g->ops->release(g, dx), g->ops->release(g, dy);
        }
        g->ops->destroy(g);
    }
    gpu = shared;
    setenv("FK_GELU_EPILOGUE", "fused", 1); /* not a mode: refused at creation */
    backend *bad = NULL;
    fk_error err = {0};
    assert_int_equal(backend_cuda_create(&bad, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "FK_GELU_EPILOGUE"));
    unsetenv("FK_GELU_EPILOGUE");
    setenv("FK_SMALL_LINEAR_MAX_M", "65", 1); /* beyond the kernel's 64 tokens: refused */
    assert_int_equal(backend_cuda_create(&bad, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "FK_SMALL_LINEAR_MAX_M"));
    unsetenv("FK_SMALL_LINEAR_MAX_M");
    const char *const refused[][2] = {{"FK_WGMMA_LINEAR_MAX_M", "65"}, {"FK_WGMMA_LINEAR_STAGES", "5"},
                                      {"FK_WGMMA_LINEAR_STAGES", "2"}, {"FK_WGMMA_LINEAR_STAGES", "10"},
                                      {"FK_WGMMA_LINEAR_SPLITS", "2"}};
    for (int i = 0; i < 5; i++) { /* beyond the wgmma kernel's tokens, stages it has no build for, not a switch */
        setenv(refused[i][0], refused[i][1], 1);
        assert_int_equal(backend_cuda_create(&bad, &err), FK_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(err.message, refused[i][0]));
        unsetenv(refused[i][0]);
    }
    linear_cases(GELU);
}

static void test_norms(void **state)
{
    (void)state;
    const int shapes[][2] = {{1, 128}, {7, 256}, {33, 2048}, {3, 4096}, {2, 100}, {2, 16384}, {1, 8200}, {1, 32776}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int layer = 0; layer < 2; layer++) {
            const int n = shapes[k][0], d = shapes[k][1];
            float *res = rand_f16((size_t)n * d, -2, 2), *x = rand_f16((size_t)n * d, -2, 2);
            float *w = rand_f16(d, 0.5f, 1.5f), *b = rand_f16(d, -0.5f, 0.5f), *want = calloc((size_t)n * d, 4);
            void *dres = to_gpu(res, (size_t)n * d), *dx = to_gpu(x, (size_t)n * d), *dw, *db;
            assert_int_equal(gpu->ops->upload_weight(gpu, w, 1, d, &dw, NULL), FK_OK);
            assert_int_equal(gpu->ops->upload_weight(gpu, b, 1, d, &db, NULL), FK_OK);
            void *dout = poisoned((size_t)n * d);
            /* The GPU stores the residual sum in fp16 before normalizing; give the CPU that same residual. */
            for (size_t i = 0; i < (size_t)n * d; i++)
                res[i] = fp16_to_f32(f32_to_fp16(res[i] + x[i]));
            fk_status sc = layer ? cpu->ops->add_layer_norm(cpu, want, res, NULL, w, b, n, d, 1e-5f, NULL)
                                 : cpu->ops->add_rms_norm(cpu, want, res, NULL, w, n, d, 1e-5f, NULL);
            fk_status sg = layer ? gpu->ops->add_layer_norm(gpu, dout, dres, dx, dw, db, n, d, 1e-5f, NULL)
                                 : gpu->ops->add_rms_norm(gpu, dout, dres, dx, dw, n, d, 1e-5f, NULL);
            assert_int_equal(sc, FK_OK);
            assert_int_equal(sg, FK_OK);
            float *got = from_gpu(dout, (size_t)n * d), *got_res = from_gpu(dres, (size_t)n * d);
            compare("residual", got_res, res, (size_t)n * d, 0, 0);
            compare(layer ? "layer_norm" : "rms_norm", got, want, (size_t)n * d, 2e-3, 2e-3);
            free(res), free(x), free(w), free(b), free(want), free(got), free(got_res);
            void *all[] = {dres, dx, dw, db, dout};
            for (int i = 0; i < 5; i++)
                gpu->ops->release(gpu, all[i]);
        }
}

static void test_elementwise(void **state)
{
    (void)state;
    const int n = 9, d = 96, vocab = 300, n_pos = 64;
    float *want = calloc((size_t)n * d, 4), *got;
    float *tok = rand_f16((size_t)vocab * d, -1, 1), *pos = rand_f16((size_t)n_pos * d, -1, 1);
    int32_t ids[9], in_ids[9], sampled[12], positions[9], rows[4] = {8, 0, 3, 3};
    for (int i = 0; i < n; i++)
        ids[i] = (int32_t)tu_below(&rng, vocab), positions[i] = (int32_t)tu_below(&rng, n_pos);
    tu_placeholder_ids(&rng, ids, n, in_ids, sampled, 12, vocab); /* some tokens the last pass sampled */
    void *dtok, *dpos, *dids = ints_to_gpu(in_ids, n), *dsampled = ints_to_gpu(sampled, 12);
    void *dposi = ints_to_gpu(positions, n), *drows = ints_to_gpu(rows, 4);
    assert_int_equal(gpu->ops->upload_weight(gpu, tok, vocab, d, &dtok, NULL), FK_OK);
    assert_int_equal(gpu->ops->upload_weight(gpu, pos, n_pos, d, &dpos, NULL), FK_OK);
    for (int with_pos = 0; with_pos < 2; with_pos++) {
        void *demb = poisoned((size_t)n * d), *dg = poisoned(4 * (size_t)d);
        assert_int_equal(cpu->ops->embed(cpu, want, tok, ids, NULL, with_pos ? pos : NULL, positions, n, d, NULL),
                         FK_OK);
        assert_int_equal(
            gpu->ops->embed(gpu, demb, dtok, dids, dsampled, with_pos ? dpos : NULL, dposi, n, d, NULL), FK_OK);
        got = from_gpu(demb, (size_t)n * d);
        compare("embed", got, want, (size_t)n * d, 1e-3, 1e-3);
        float gathered[4 * 96];
        assert_int_equal(cpu->ops->gather_rows(cpu, gathered, want, rows, 4, d, NULL), FK_OK);
        assert_int_equal(gpu->ops->gather_rows(gpu, dg, demb, drows, 4, d, NULL), FK_OK);
        free(got);
        got = from_gpu(dg, 4 * (size_t)d);
        compare("gather_rows", got, gathered, 4 * (size_t)d, 1e-3, 1e-3);
        free(got);
        gpu->ops->release(gpu, demb), gpu->ops->release(gpu, dg);
    }
    free(want), free(tok), free(pos);
    void *all[] = {dtok, dpos, dids, dsampled, dposi, drows};
    for (int i = 0; i < 6; i++)
        gpu->ops->release(gpu, all[i]);
}

/* embed at widths that take each path: element by element (100: not whole 16-byte pieces), one batch of pieces per
 * thread (2,048), several batches with a partial last one (6,152: 769 pieces), with and without learned positions;
 * some ids placeholders for sampled tokens. */
static void test_embed_widths(void **state)
{
    (void)state;
    const int widths[3] = {100, 2048, 6152}, n = 5, vocab = 37, n_pos = 11;
    for (int wi = 0; wi < 3; wi++) {
        const int d = widths[wi];
        float *tok = rand_f16((size_t)vocab * d, -1, 1), *pos = rand_f16((size_t)n_pos * d, -1, 1);
        float *want = malloc((size_t)n * d * sizeof *want), *got;
        int32_t ids[5], in_ids[5], sampled[5], positions[5];
        for (int i = 0; i < n; i++)
            ids[i] = (int32_t)tu_below(&rng, vocab), positions[i] = (int32_t)tu_below(&rng, n_pos);
        tu_placeholder_ids(&rng, ids, n, in_ids, sampled, 5, vocab);
        void *dtok, *dpos, *dids = ints_to_gpu(in_ids, n), *dsampled = ints_to_gpu(sampled, 5);
        void *dposi = ints_to_gpu(positions, n);
        assert_int_equal(gpu->ops->upload_weight(gpu, tok, vocab, d, &dtok, NULL), FK_OK);
        assert_int_equal(gpu->ops->upload_weight(gpu, pos, n_pos, d, &dpos, NULL), FK_OK);
        for (int with_pos = 0; with_pos < 2; with_pos++) {
            void *demb = poisoned((size_t)n * d);
            assert_int_equal(
                cpu->ops->embed(cpu, want, tok, ids, NULL, with_pos ? pos : NULL, positions, n, d, NULL), FK_OK);
            assert_int_equal(
                gpu->ops->embed(gpu, demb, dtok, dids, dsampled, with_pos ? dpos : NULL, dposi, n, d, NULL), FK_OK);
            got = from_gpu(demb, (size_t)n * d);
            compare("embed", got, want, (size_t)n * d, 1e-3, 1e-3);
            free(got);
            gpu->ops->release(gpu, demb);
        }
        free(tok), free(pos), free(want);
        void *all[] = {dtok, dpos, dids, dsampled, dposi};
        for (int i = 0; i < 5; i++)
            gpu->ops->release(gpu, all[i]);
    }
}

/* embed_rms_norm (a pass's embedding with layer 0's norm1, one kernel) against the CPU's embed then add_rms_norm on
 * the true ids; some ids are placeholders for sampled tokens. Widths of the one-kernel path (128, 2,048, 6,152) and
 * of the two-kernel fallback (100: not whole 16-byte pieces; 32,776: more than the vector kernel holds). */
static void test_embed_rms_norm(void **state)
{
    (void)state;
    const int shapes[][2] = {{1, 2048}, {9, 128}, {3, 6152}, {5, 100}, {2, 32776}}, vocab = 37;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int n = shapes[k][0], d = shapes[k][1];
        float *tok = rand_f16((size_t)vocab * d, -2, 2), *w = rand_f16(d, 0.5f, 1.5f);
        float *res = malloc((size_t)n * d * sizeof *res), *want = malloc((size_t)n * d * sizeof *want);
        int32_t ids[9], in_ids[9], sampled[11];
        for (int i = 0; i < n; i++)
            ids[i] = (int32_t)tu_below(&rng, vocab);
        tu_placeholder_ids(&rng, ids, n, in_ids, sampled, 11, vocab);
        void *dtok, *dw, *dids = ints_to_gpu(in_ids, n), *dsampled = ints_to_gpu(sampled, 11);
        assert_int_equal(gpu->ops->upload_weight(gpu, tok, vocab, d, &dtok, NULL), FK_OK);
        assert_int_equal(gpu->ops->upload_weight(gpu, w, 1, d, &dw, NULL), FK_OK);
        void *dres = poisoned((size_t)n * d), *dout = poisoned((size_t)n * d);
        assert_int_equal(cpu->ops->embed(cpu, res, tok, ids, NULL, NULL, NULL, n, d, NULL), FK_OK);
        assert_int_equal(cpu->ops->add_rms_norm(cpu, want, res, NULL, w, n, d, 1e-5f, NULL), FK_OK);
        assert_int_equal(gpu->ops->embed_rms_norm(gpu, dout, dres, dtok, dids, dsampled, dw, n, d, 1e-5f, NULL),
                         FK_OK);
        float *got = from_gpu(dout, (size_t)n * d), *got_res = from_gpu(dres, (size_t)n * d);
        compare("embed_rms_norm residual", got_res, res, (size_t)n * d, 0, 0);
        compare("embed_rms_norm", got, want, (size_t)n * d, 2e-3, 2e-3);
        free(tok), free(w), free(res), free(want), free(got), free(got_res);
        void *all[] = {dtok, dw, dids, dsampled, dres, dout};
        for (int i = 0; i < 6; i++)
            gpu->ops->release(gpu, all[i]);
    }
}

/* Sampling where the logits are: the CUDA sample op against the CPU's (sampler_pick) on random rows and values.
 * Greedy rows must agree exactly; a sampled row may differ only when float sums taken in another order put u on
 * the other side of a boundary, so at most 1% may. Both must pick a token the rule keeps. */
static void test_sample(void **state)
{
    (void)state;
    const int vocabs[3] = {50257, 4096, 13}, rows = 400; /* odd: rows start at every alignment; 13: less than a vector */
    for (int vi = 0; vi < 3; vi++) {
        const int vocab = vocabs[vi];
        float *logits = rand_f16((size_t)rows * vocab, -12, 12);
        sample_row *p = malloc(rows * sizeof *p);
        const float temps[3] = {0, 0.7f, 1.3f}, top_ps[3] = {1, 0.9f, 0.5f}, min_ps[2] = {0, 0.05f};
        const int top_ks[4] = {0, 1, 5, 50};
        for (int r = 0; r < rows; r++) {
            p[r] = (sample_row){.temperature = temps[tu_below(&rng, 3)], .top_p = top_ps[tu_below(&rng, 3)],
                                .min_p = min_ps[tu_below(&rng, 2)], .top_k = top_ks[tu_below(&rng, 4)],
                                .u = tu_uniform(&rng, 0, 1)};
        }
        const int tie = vocab > 101 ? 100 : vocab - 2; /* a tie at the top: the first wins greedy */
        logits[7 * vocab + tie] = 30, logits[7 * vocab + tie + 1] = 30;
        p[7].temperature = 0;
        void *dl = to_gpu(logits, (size_t)rows * vocab), *drows, *dtok;
        assert_int_equal(gpu->ops->alloc(gpu, rows * sizeof *p, &drows, NULL), FK_OK);
        assert_int_equal(gpu->ops->alloc(gpu, rows * 4, &dtok, NULL), FK_OK);
        assert_int_equal(gpu->ops->upload(gpu, drows, p, rows * sizeof *p, NULL), FK_OK);
        int32_t *want = malloc(rows * 4), *got = malloc(rows * 4);
        fk_error err = {0};
        assert_int_equal(cpu->ops->sample(cpu, want, logits, p, rows, vocab, NULL), FK_OK);
        if (gpu->ops->sample(gpu, dtok, dl, drows, rows, vocab, &err))
            fail_msg("%s", err.message);
        assert_int_equal(gpu->ops->download(gpu, got, dtok, rows * 4, NULL), FK_OK);
        int differ = 0;
        for (int r = 0; r < rows; r++) {
            assert_true(got[r] >= 0 && got[r] < vocab);
            if (p[r].temperature == 0)
                assert_int_equal(got[r], want[r]);
            else if (got[r] != want[r])
                differ++;
            if (p[r].top_k == 1 || p[r].temperature == 0) { /* a most likely token, whatever u */
                int best = 0;
                for (int v = 1; v < vocab; v++)
                    best = logits[(size_t)r * vocab + v] > logits[(size_t)r * vocab + best] ? v : best;
                /* greedy: the first of them; top_k 1 keeps every token tied at the top (fp16 inputs tie often) */
                if (p[r].temperature == 0)
                    assert_int_equal(got[r], best);
                else
                    assert_true(logits[(size_t)r * vocab + got[r]] == logits[(size_t)r * vocab + best]);
            }
        }
        assert_int_equal(got[7], tie);
        printf("sample, vocab %d: %d of %d sampled rows differ from the CPU's choice\n", vocab, differ, rows);
        assert_true(differ <= rows / 100);
        free(logits), free(p), free(want), free(got);
        gpu->ops->release(gpu, dl), gpu->ops->release(gpu, drows), gpu->ops->release(gpu, dtok);
    }
}

/* A paged-attention batch: per sequence a query count and a context length. Sets up both backends' caches
 * with the same random K/V through rope_store_kv, then runs attention on both and compares. With `op_rope` the
 * caches hold only the positions before the queries, and the step's qkv rows go to attention_rope unrotated, which
 * stores them (the CPU's is rope_store_kv then attention; the CUDA backend fuses the two for one-query batches): its
 * output and the queries' cached K/V are compared. */
#define MAX_CASE_SEQS 160

static void attention_case(int n_seqs, const int *nq, const int *ctx, int H, int Hkv, int D, int B, bool rope,
                           bool op_rope)
{
    assert_true(n_seqs <= MAX_CASE_SEQS);
    int max_blocks = 0, total_blocks = 0, n_tok = 0, qs[MAX_CASE_SEQS + 1] = {0};
    for (int s = 0; s < n_seqs; s++) {
        const int nb = (ctx[s] + B - 1) / B;
        max_blocks = nb > max_blocks ? nb : max_blocks;
        total_blocks += nb;
        n_tok += nq[s];
        qs[s + 1] = n_tok;
    }
    const int num_blocks = total_blocks + 5;
    /* Shuffled block tables. */
    int32_t *perm = malloc((size_t)num_blocks * 4), *tables = calloc((size_t)n_seqs * max_blocks, 4);
    for (int i = 0; i < num_blocks; i++)
        perm[i] = i;
    for (int i = num_blocks - 1; i > 0; i--) {
        int j = (int)tu_below(&rng, (uint32_t)i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int next = 0;
    for (int s = 0; s < n_seqs; s++)
        for (int j = 0; j < (ctx[s] + B - 1) / B; j++)
            tables[s * max_blocks + j] = perm[next++];

    /* Fill the caches with every cached position (the queries' own K/V included) via rope_store_kv. */
    const size_t row = (size_t)(H + 2 * Hkv) * D;
    int total_ctx = 0;
    for (int s = 0; s < n_seqs; s++)
        total_ctx += ctx[s];
    float *fill = rand_f16((size_t)total_ctx * row, -1, 1);
    int32_t *fpos = malloc((size_t)total_ctx * 4), *fslot = malloc((size_t)total_ctx * 4);
    int32_t *qpos = malloc((size_t)n_tok * 4), *qslot = malloc((size_t)n_tok * 4); /* the queries' (op_rope) */
    for (int s = 0, t = 0, q = 0; s < n_seqs; s++)
        for (int p = 0; p < ctx[s]; p++, t++) {
            const bool query = p >= ctx[s] - nq[s];
            fpos[t] = p;
            fslot[t] = op_rope && query ? -1 : tables[s * max_blocks + p / B] * B + p % B;
            if (query)
                qpos[q] = p, qslot[q++] = tables[s * max_blocks + p / B] * B + p % B;
        }
    /* The queries: the last nq[s] positions of each sequence, as the qkv rows of this step (rotated by the fill
     * below unless op_rope). */
    float *qkv = malloc((size_t)n_tok * row * 4);
    const float *rows_from = fill;
    float *raw = NULL;
    if (op_rope) {
        raw = malloc((size_t)total_ctx * row * 4);
        memcpy(raw, fill, (size_t)total_ctx * row * 4);
        rows_from = raw;
    }
    float inv_freq[64];
    for (int i = 0; i < D / 2; i++)
        inv_freq[i] = powf(10000.0f, -2.0f * i / D);
    const size_t pool_n = (size_t)num_blocks * Hkv * B * D;
    kv_pool ckv = {.num_blocks = num_blocks, .block_size = B, .n_kv_heads = Hkv, .head_dim = D};
    kv_pool gkv = ckv;
    ckv.k = calloc(pool_n, 4), ckv.v = calloc(pool_n, 4);
    gkv.k = poisoned(pool_n), gkv.v = poisoned(pool_n);
    void *dfill = to_gpu(fill, (size_t)total_ctx * row), *dfpos = ints_to_gpu(fpos, total_ctx);
    void *dfslot = ints_to_gpu(fslot, total_ctx), *dinv = floats_to_gpu(inv_freq, D / 2);
    assert_int_equal(cpu->ops->rope_store_kv(cpu, fill, fpos, rope ? inv_freq : NULL, fslot, &ckv, total_ctx, H, NULL),
                     FK_OK);
    assert_int_equal(gpu->ops->rope_store_kv(gpu, dfill, dfpos, rope ? dinv : NULL, dfslot, &gkv, total_ctx, H, NULL),
                     FK_OK);
    /* The rotated qkv rows agree, and so does every cached position. */
    float *got_fill = from_gpu(dfill, (size_t)total_ctx * row);
    compare("rope (qkv)", got_fill, fill, (size_t)total_ctx * row, 2e-3, 2e-3);
    free(got_fill);
    /* Round the CPU's rotated values to fp16 as the GPU stores them, so attention compares like with like. */
    for (size_t i = 0; i < pool_n; i++) {
        ((float *)ckv.k)[i] = fp16_to_f32(f32_to_fp16(((float *)ckv.k)[i]));
        ((float *)ckv.v)[i] = fp16_to_f32(f32_to_fp16(((float *)ckv.v)[i]));
    }
    float *got_k = from_gpu(gkv.k, pool_n);
    for (int s = 0; s < n_seqs; s++)
        for (int p = 0; p < ctx[s] - (op_rope ? nq[s] : 0); p++)
            for (int h = 0; h < Hkv; h++) {
                const size_t at = (((size_t)tables[s * max_blocks + p / B] * Hkv + h) * B + p % B) * D;
                compare("k cache", got_k + at, (const float *)ckv.k + at, D, 2e-3, 2e-3);
            }
    free(got_k);

    for (int s = 0, t = 0, f = 0; s < n_seqs; f += ctx[s], s++)
        for (int i = 0; i < nq[s]; i++, t++) {
            const float *src = rows_from + (size_t)(f + ctx[s] - nq[s] + i) * row;
            for (size_t e = 0; e < row; e++)
                qkv[(size_t)t * row + e] = fp16_to_f32(f32_to_fp16(src[e]));
        }
    int32_t ctx32[MAX_CASE_SEQS], qs32[MAX_CASE_SEQS + 1];
    for (int s = 0; s <= n_seqs; s++)
        qs32[s] = qs[s];
    for (int s = 0; s < n_seqs; s++)
        ctx32[s] = ctx[s];
    void *dqkv = to_gpu(qkv, (size_t)n_tok * row), *dout = poisoned((size_t)n_tok * H * D);
    void *dqs = ints_to_gpu(qs32, n_seqs + 1), *dctx = ints_to_gpu(ctx32, n_seqs);
    void *dtables = ints_to_gpu(tables, (size_t)n_seqs * max_blocks), *scratch = NULL;
    const size_t scratch_bytes = gpu->ops->attention_scratch_bytes(gpu, n_tok, n_seqs, H, Hkv, D);
    if (scratch_bytes)
        assert_int_equal(gpu->ops->alloc(gpu, scratch_bytes, &scratch, NULL), FK_OK);
    int max_ctx = 0;
    for (int s = 0; s < n_seqs; s++)
        max_ctx = ctx[s] > max_ctx ? ctx[s] : max_ctx;
    attn_batch cab = {.n_tokens = n_tok, .n_seqs = n_seqs, .query_start = qs32, .context_len = ctx32,
                      .block_tables = tables, .max_blocks = max_blocks, .query_start_host = qs32,
                      .context_len_host = ctx32, .max_context = max_ctx};
    attn_batch gab = cab;
    gab.query_start = dqs, gab.context_len = dctx, gab.block_tables = dtables, gab.scratch = scratch;
    float *want = malloc((size_t)n_tok * H * D * 4);
    const float scale = 1.0f / sqrtf((float)D);
    fk_error err = {0};
    void *dqpos = ints_to_gpu(qpos, n_tok), *dqslot = ints_to_gpu(qslot, n_tok);
    if (op_rope) {
        assert_int_equal(cpu->ops->attention_rope(cpu, want, qkv, qpos, rope ? inv_freq : NULL, qslot, &ckv, &cab, H,
                                                  scale, NULL),
                         FK_OK);
        if (gpu->ops->attention_rope(gpu, dout, dqkv, dqpos, rope ? dinv : NULL, dqslot, &gkv, &gab, H, scale, &err))
            fail_msg("%s", err.message);
        /* The queries' K and V as the op stored them (the CPU's rounded to fp16 as the GPU's are). */
        float *got_kv[2] = {from_gpu(gkv.k, pool_n), from_gpu(gkv.v, pool_n)};
        const float *want_kv[2] = {ckv.k, ckv.v};
        for (int q = 0; q < n_tok; q++)
            for (int h = 0; h < Hkv; h++)
                for (int kv = 0; kv < 2; kv++) {
                    const size_t at = (((size_t)(qslot[q] / B) * Hkv + h) * B + qslot[q] % B) * D;
                    float rounded[128];
                    for (int e = 0; e < D; e++)
                        rounded[e] = fp16_to_f32(f32_to_fp16(want_kv[kv][at + e]));
                    compare(kv ? "v cache (stored by the op)" : "k cache (stored by the op)", got_kv[kv] + at, rounded,
                            D, 2e-3, 2e-3);
                }
        free(got_kv[0]), free(got_kv[1]);
    } else {
        assert_int_equal(cpu->ops->attention(cpu, want, qkv, &ckv, &cab, H, scale, NULL), FK_OK);
        if (gpu->ops->attention(gpu, dout, dqkv, &gkv, &gab, H, scale, &err))
            fail_msg("%s", err.message);
    }
    float *got = from_gpu(dout, (size_t)n_tok * H * D);
    /* Outputs are convex combinations of V rows in [-1, 1]; P is rounded to fp16 on tensor cores. */
    double worst = compare("attention", got, want, (size_t)n_tok * H * D, 4e-3, 4e-3);
    printf("attention%s %d seqs (nq %d.., ctx %d..), H %d Hkv %d D %d B %d: max error %.2g\n",
           op_rope ? " with RoPE and the KV store" : "", n_seqs, nq[0], ctx[0], H, Hkv, D, B, worst);
    free(perm), free(tables), free(fill), free(raw), free(fpos), free(fslot), free(qpos), free(qslot), free(qkv);
    free(want), free(got), free(ckv.k), free(ckv.v);
    void *all[] = {gkv.k, gkv.v, dfill, dfpos, dfslot, dinv, dqkv, dout, dqs, dctx, dtables, scratch, dqpos, dqslot};
    for (int i = 0; i < 14; i++)
        if (all[i])
            gpu->ops->release(gpu, all[i]);
}

/* Both prefill kernels where the device has both: the default (the Hopper wgmma kernel, 128-query tiles, on an
 * sm_90a build on an H100) and the mma.sync one (64-query tiles: FK_PREFILL_HOPPER=0, and everywhere else). Tile
 * and key-tile boundaries +-1 for both sizes. */
static void test_attention_prefill(void **state)
{
    (void)state;
    backend *shared = gpu;
    for (int hopper = 1; hopper >= 0; hopper--) {
        fk_error err = {0};
        setenv("FK_PREFILL_HOPPER", hopper ? "1" : "0", 1);
        if (backend_cuda_create(&gpu, &err))
            fail_msg("%s", err.message);
        unsetenv("FK_PREFILL_HOPPER");
        const int dims[2] = {64, 128}, groups[3] = {1, 4, 8};
        for (int di = 0; di < 2; di++)
            for (int gi = 0; gi < 3; gi++) {
                const int D = dims[di], Hkv = 2, H = Hkv * groups[gi];
                /* whole prompts at block boundaries +-1, a 1-token prompt, a chunk after cached context, long ones */
                int nq[8] = {15, 16, 17, 1, 40, 200, 128, 257}, ctx[8] = {15, 16, 17, 1, 95, 200, 128, 257};
                attention_case(8, nq, ctx, H, Hkv, D, 16, true, false);
            }
        int nq[2] = {130, 3}, ctx[2] = {700, 3}; /* a chunk deep into a long context; odd block size; no rope */
        attention_case(2, nq, ctx, 8, 8, 64, 5, false, false);
        int nq2[3] = {129, 64, 300}, ctx2[3] = {1000, 191, 429}; /* chunks whose tiles straddle key tiles */
        attention_case(3, nq2, ctx2, 16, 4, 128, 16, true, false);
        /* a mixed step: leading decodes (one with several splits) go to the decode kernel, the rest (a trailing
         * one-query sequence too) to the prefill kernel */
        int nq3[6] = {1, 1, 1, 40, 130, 1}, ctx3[6] = {50, 300, 3000, 95, 130, 17};
        attention_case(6, nq3, ctx3, 16, 4, 128, 16, true, false);
        attention_case(6, nq3, ctx3, 8, 8, 64, 16, true, false);
        /* attention_rope on a mixed step: the CUDA backend's two ops, not its fused decode kernel */
        attention_case(6, nq3, ctx3, 16, 4, 128, 16, true, true);
        gpu->ops->destroy(gpu);
    }
    gpu = shared;
}

/* Every case twice: attention after rope_store_kv, and attention_rope on the unrotated rows (the decode kernel with
 * the RoPE and the KV store fused in; the new key alone in its context, at a block's first and last slot, at a
 * 128-key chunk's first row, in the last of several splits). */
static void test_attention_decode(void **state)
{
    (void)state;
    for (int op_rope = 0; op_rope <= 1; op_rope++) {
        const int dims[2] = {64, 128}, groups[3] = {1, 4, 8};
        for (int di = 0; di < 2; di++)
            for (int gi = 0; gi < 3; gi++) {
                const int D = dims[di], Hkv = 2, H = Hkv * groups[gi];
                int nq[6] = {1, 1, 1, 1, 1, 1}, ctx[6] = {1, 16, 17, 511, 3000, 129}; /* 3000: several splits */
                attention_case(6, nq, ctx, H, Hkv, D, 16, true, op_rope);
            }
        int nq[1] = {1}, ctx[1] = {4097}; /* one long sequence: many splits to fill the GPU */
        attention_case(1, nq, ctx, 32, 8, 128, 16, true, op_rope);
        int nq3[3] = {1, 1, 1}, ctx3[3] = {65, 300, 1000}; /* groups of 6 and 16 query heads per KV head */
        attention_case(3, nq3, ctx3, 12, 2, 128, 16, true, op_rope);
        attention_case(3, nq3, ctx3, 16, 1, 64, 16, true, op_rope);
        int nq5[3] = {1, 1, 1}, ctx5[3] = {7, 700, 64}; /* no RoPE (GPT-2), an odd block size */
        attention_case(3, nq5, ctx5, 8, 8, 64, 5, false, op_rope);
        /* Many (sequence, KV head) pairs of short contexts: 64 x 8 pairs at head dim 64 (the fragments kernel with 4
         * warps a pair on GPUs of 128 to 256 SMs, an H100's 132; the staged kernel's 4-warp blocks with
         * FK_DECODE_FRAGMENTS=0, below), 64 x 32 at 128 (the staged kernel's 4-warp blocks on GPUs of up to ~170
         * SMs). */
        int nq64[64], ctx64[64];
        for (int s = 0; s < 64; s++)
            nq64[s] = 1, ctx64[s] = 1 + (int)tu_below(&rng, 300);
        attention_case(64, nq64, ctx64, 32, 8, 64, 16, true, op_rope);
        attention_case(64, nq64, ctx64, 32, 32, 128, 16, true, op_rope);
        backend *shared = gpu;
        fk_error err = {0};
        setenv("FK_DECODE_FRAGMENTS", "0", 1);
        if (backend_cuda_create(&gpu, &err))
            fail_msg("%s", err.message);
        unsetenv("FK_DECODE_FRAGMENTS");
        attention_case(64, nq64, ctx64, 32, 8, 64, 16, true, op_rope);
        gpu->ops->destroy(gpu);
        gpu = shared;
        /* 128 x 8 pairs at head dim 64: the fragments kernel, with 1 warp a pair on GPUs of up to 146 SMs (an H100's
         * 132), 2 on those of 147 to 255. */
        int nq128[128], ctx128[128];
        for (int s = 0; s < 128; s++)
            nq128[s] = 1, ctx128[s] = 1 + (int)tu_below(&rng, 300);
        attention_case(128, nq128, ctx128, 32, 8, 64, 16, true, op_rope);
    }
}

/* The fragments kernel (FK_DECODE_FRAGMENTS=1) on every call it applies to, on any GPU, with 1, 2 and 4 warps a
 * pair (FK_DECODE_SLICES): head dim 64, query heads per KV head 1 to 16, blocks of 16 and 32 keys, the new key at a
 * tile's first and last row and alone in its context, contexts shorter than a tile per warp, contexts of more than 32
 * blocks (its block-table window moves), an odd number of pairs, with and without RoPE; an odd block size falls back
 * to the shared-memory kernel. A slice count of 3 is refused. */
static void test_attention_decode_fragments(void **state)
{
    (void)state;
    backend *shared = gpu, *bad = NULL;
    fk_error bad_err = {0};
    setenv("FK_DECODE_SLICES", "3", 1); /* not a slice count: refused at creation */
    assert_int_equal(backend_cuda_create(&bad, &bad_err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(bad_err.message, "FK_DECODE_SLICES"));
    unsetenv("FK_DECODE_SLICES");
    const char *slices[3] = {"1", "2", "4"};
    for (int sl = 0; sl < 3; sl++) {
        fk_error err = {0};
        setenv("FK_DECODE_FRAGMENTS", "1", 1);
        setenv("FK_DECODE_SLICES", slices[sl], 1);
        if (backend_cuda_create(&gpu, &err))
            fail_msg("%s", err.message);
        unsetenv("FK_DECODE_FRAGMENTS");
        unsetenv("FK_DECODE_SLICES");
        for (int op_rope = 0; op_rope <= 1; op_rope++) {
            const int groups[5] = {1, 4, 8, 12, 16}, blocks[2] = {16, 32};
            for (int gi = 0; gi < 5; gi++)
                for (int bi = 0; bi < 2; bi++) {
                    /* up to 256 keys: one split, whatever the GPU */
                    int nq[7] = {1, 1, 1, 1, 1, 1, 1}, ctx[7] = {1, 16, 17, 32, 33, 129, 256};
                    attention_case(7, nq, ctx, 2 * groups[gi], 2, 64, blocks[bi], gi != 2, op_rope);
                }
            /* 160 x 4 pairs (no splits on GPUs of up to 640 SMs) of up to 1,100 keys: the table window at 512 and
             * 1,024. */
            int nq[160], ctx[160];
            for (int s = 0; s < 160; s++)
                nq[s] = 1, ctx[s] = s < 4 ? 512 + s : 1 + (int)tu_below(&rng, 1100);
            attention_case(160, nq, ctx, 16, 4, 64, 16, true, op_rope);
            /* 3 x 3 pairs: the last block's warps past the last pair */
            int nq3[3] = {1, 1, 1}, ctx3[3] = {40, 250, 3};
            attention_case(3, nq3, ctx3, 6, 3, 64, 16, true, op_rope);
            int nq5[3] = {1, 1, 1}, ctx5[3] = {7, 200, 64}; /* block size 5: the shared-memory kernel */
            attention_case(3, nq5, ctx5, 8, 8, 64, 5, true, op_rope);
        }
        gpu->ops->destroy(gpu);
    }
    gpu = shared;
}

/* A head dim the kernels lack (they take 64 and 128) is refused with FK_ERR_UNSUPPORTED by both attention ops,
 * before anything is launched or read. */
static void test_attention_head_dim_unsupported(void **state)
{
    (void)state;
    const kv_pool kv = {.num_blocks = 1, .block_size = 16, .n_kv_heads = 2, .head_dim = 96};
    const attn_batch ab = {.n_tokens = 1, .n_seqs = 1};
    fk_error err = {0};
    assert_int_equal(gpu->ops->attention(gpu, NULL, NULL, &kv, &ab, 4, 1.0f, &err), FK_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "head_dim 96"));
    err = (fk_error){0};
    assert_int_equal(gpu->ops->attention_rope(gpu, NULL, NULL, NULL, NULL, NULL, &kv, &ab, 4, 1.0f, &err),
                     FK_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "head_dim 96"));
}

int main(void)
{
    fk_error err = {0};
    if (backend_cuda_create(&gpu, &err)) {
        fprintf(stderr, "skipped: %s\n", err.message);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),          cmocka_unit_test(test_linear_gelu),
        cmocka_unit_test(test_linear_silu_mul),
        cmocka_unit_test(test_quant_layout),    cmocka_unit_test(test_quant_linear),
        cmocka_unit_test(test_quant_linear_gelu), cmocka_unit_test(test_quant_linear_silu_mul),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_elementwise),     cmocka_unit_test(test_embed_widths),
        cmocka_unit_test(test_embed_rms_norm),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_attention_prefill), cmocka_unit_test(test_attention_decode),
        cmocka_unit_test(test_attention_decode_fragments),
        cmocka_unit_test(test_attention_head_dim_unsupported),
    };
    /* FK_TEST_FILTER=test_quant* runs only the matching tests (e.g. one per compute-sanitizer process). */
    if (getenv("FK_TEST_FILTER"))
        cmocka_set_test_filter(getenv("FK_TEST_FILTER"));
    int failed = cmocka_run_group_tests(tests, setup, NULL);
    gpu->ops->destroy(gpu);
    cpu->ops->destroy(cpu);
    return failed;
}
