/* bench_linear_gelu.c — GPT-2's first MLP linear with its GELU(tanh)+bias epilogue, the two ways the CUDA backend
 * offers (FK_GELU_EPILOGUE): cuBLASLt's GELU_BIAS epilogue fused into the GEMM, and cuBLAS's GEMM followed by our
 * k_bias_gelu pass. The bare cuBLAS GEMM (no bias, no activation) is the floor both approach. Shapes: GPT-2-124M's
 * c_fc (768 -> 3072) and GPT-2-XL's (1600 -> 6400) at 1 to 4096 tokens.
 * Timing: each op recorded 20 times into a CUDA graph through the backend's own capture, the graph replayed after
 * a warm-up, median of 15 replays divided by 20: GPU time with the launch overhead a decode graph also avoids.
 * PyTorch's F.gelu(F.linear(x, w, b), approximate="tanh") on the same shapes is measured by peers.py linear_gelu. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"

#define CALLS_PER_GRAPH 20
#define REPLAYS 15

static void check(fk_status s, const fk_error *err)
{
    if (s) {
        fprintf(stderr, "bench_linear_gelu: %s\n", err->message);
        exit(1);
    }
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef enum { GEMM_ONLY, FUSED } variant;

/* Microseconds per call, median over replays of a graph of CALLS_PER_GRAPH calls. */
static double time_us(backend *be, variant v, void *y, const void *x, const void *w, const void *bias, int n, int in,
                      int out)
{
    fk_error err = {0};
    void *graph;
    const qweight qw = {.format = FK_QUANT_NONE, .rows = out, .cols = in, .data = (void *)w};
    for (int i = 0; i <= CALLS_PER_GRAPH; i++) { /* once uncaptured: cuBLAS's and cuBLASLt's first-call setup */
        if (i == 1)
            check(be->ops->capture_begin(be, &err), &err);
        check(v == GEMM_ONLY ? be->ops->linear(be, y, x, &qw, NULL, n, in, out, &err)
                             : be->ops->linear_gelu(be, y, x, &qw, bias, n, in, out, &err),
              &err);
    }
    check(be->ops->capture_end(be, &graph, &err), &err);
    double t[REPLAYS];
    for (int r = -3; r < REPLAYS; r++) { /* three warm-ups */
        const double t0 = now_s();
        check(be->ops->graph_launch(be, graph, &err), &err);
        check(be->ops->download(be, NULL, NULL, 0, &err), &err); /* synchronizes */
        if (r >= 0)
            t[r] = (now_s() - t0) * 1e6 / CALLS_PER_GRAPH;
    }
    be->ops->graph_destroy(be, graph);
    qsort(t, REPLAYS, sizeof t[0], cmp_double);
    return t[REPLAYS / 2];
}

static backend *backend_with(const char *mode)
{
    backend *be;
    fk_error err = {0};
    setenv("FK_GELU_EPILOGUE", mode, 1);
    check(backend_cuda_create(&be, &err), &err);
    return be;
}

static void *random_weight(backend *be, int rows, int cols, float scale)
{
    float *h = malloc((size_t)rows * cols * sizeof *h);
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        h[i] = scale * ((float)rand() / RAND_MAX * 2 - 1);
    void *d;
    fk_error err = {0};
    check(be->ops->upload_weight(be, h, rows, cols, &d, &err), &err);
    free(h);
    return d;
}

int main(void)
{
    backend *kernel = backend_with("kernel"), *lt = backend_with("cublaslt");
    const int dims[][2] = {{768, 3072}, {1600, 6400}};
    const int tokens[] = {1, 8, 64, 512, 4096};
    printf("linear_gelu: y[n][out] = gelu_tanh(x[n][in] W^T + b), fp16, median us per call (CUDA graph of %d)\n",
           CALLS_PER_GRAPH);
    printf("%-16s %8s %10s %12s %12s %8s\n", "shape", "gemm", "+bias_gelu", "cublasLt", "faster", "win");
    for (size_t d = 0; d < 2; d++)
        for (size_t k = 0; k < sizeof tokens / sizeof tokens[0]; k++) {
            const int n = tokens[k], in = dims[d][0], out = dims[d][1];
            double us[3];
            backend *bes[3] = {kernel, kernel, lt};
            for (int b = 0; b < 3; b++) { /* weights and activations live on the backend that uses them */
                backend *be = bes[b];
                void *w = random_weight(be, out, in, 0.05f), *bias = random_weight(be, 1, out, 0.5f);
                void *x = random_weight(be, n, in, 1.0f), *y;
                fk_error err = {0};
                check(be->ops->alloc(be, (size_t)n * out * 2, &y, &err), &err);
                us[b] = time_us(be, b == 0 ? GEMM_ONLY : FUSED, y, x, w, bias, n, in, out);
                be->ops->release(be, w), be->ops->release(be, bias), be->ops->release(be, x), be->ops->release(be, y);
            }
            const int lt_wins = us[2] < us[1];
            char shape[32];
            snprintf(shape, sizeof shape, "%dx%d->%d", n, in, out);
            printf("%-16s %8.2f %10.2f %12.2f %12s %7.2fx\n", shape, us[0], us[1], us[2],
                   lt_wins ? "cublaslt" : "kernel", lt_wins ? us[1] / us[2] : us[2] / us[1]);
            printf("RESULT linear_gelu %s: gemm %.2f us, cublas+bias_gelu %.2f us, cublasLt epilogue %.2f us\n", shape,
                   us[0], us[1], us[2]);
        }
    kernel->ops->destroy(kernel);
    lt->ops->destroy(lt);
    return 0;
}
