/* bench_linear_quant.c — quantized linears of more tokens than one pass of the small-batch kernel takes (prefill
 * chunks, busy decode steps), through the CUDA backend so that it times what the model runs, against the fp16
 * weights' GEMM (cuBLAS / cuBLASLt as the backend calls them) on the same shape:
 *   wgmma        on a Hopper, our TMA + wgmma kernel on the packed weights, W dequantized into registers
 *                (k_linear_quant_wgmma; FK_QUANT_WGMMA_MAX_M large: at every m), its default 6 stages
 *   wgmma 8      the same with 8 stages (FK_QUANT_WGMMA_STAGES=8)
 *   tiled        our tiled mma.sync kernel on the packed weights, W dequantized in its main loop
 *                (k_linear_quant_mma; FK_QUANT_MMA_MAX_M large: at every m), blocks of 64 or 128 rows as it chooses
 *   tiled 128    the same with blocks of 128 rows always (FK_QUANT_MMA_ROWS=128)
 *   dequant 64M  W dequantized to fp16 in the default 64 MiB scratch (whole where it fits, else in chunks of rows),
 *                then the fp16 GEMM (FK_QUANT_MMA_MAX_M=0)
 *   dequant 8M   a smaller scratch (FK_DEQUANT_SCRATCH_MB=8): W a chunk of rows at a time, each chunk's fp16 copy
 *                small enough to stay in L2 for its GEMM
 *   passes       our small-batch kernel on the packed weights, 16 tokens a pass (FK_QUANT_SMALL_MAX_M=256; up to
 *                256 tokens)
 *   default      the backend as shipped (which of the above it picks at each m)
 * on Llama-3.2-1B's and Llama-3-8B's linears (gate|up as one linear of 2f rows: its SiLU·mul pass is the same for
 * all) at m = 32 .. 2048. The target: the fastest quantized way within 1.3x of fp16.
 * FK_BENCH_WAYS (a comma-separated list of the names above, e.g. "fp16,wgmma,default") times only those; the others
 * print 0, as passes does above 256 tokens.
 * Timing as bench_linear_gelu.c (each call recorded 20 times into a graph by the backend's capture, median of 15
 * replays / 20), with copies of each weight cycled so that they exceed the L2 cache, as in a model's pass. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"

#define CALLS_PER_GRAPH 20
#define REPLAYS 15
#define CYCLE_BYTES 100e6 /* the copies of a weight add up to at least this: past any L2 */

static void check(fk_status s, const fk_error *err)
{
    if (s) {
        fprintf(stderr, "bench_linear_quant: %s\n", err->message);
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

/* Microseconds per call of y = x W^T, W cycling through the copies. */
static double time_us(backend *be, void *y, const void *x, const qweight *w, int copies, int n, int in, int out)
{
    fk_error err = {0};
    void *graph;
    for (int i = 0; i <= CALLS_PER_GRAPH; i++) { /* once uncaptured: cuBLAS's first-call setup */
        if (i == 1)
            check(be->ops->capture_begin(be, &err), &err);
        check(be->ops->linear(be, y, x, &w[i % copies], NULL, n, in, out, &err), &err);
    }
    check(be->ops->capture_end(be, &graph, &err), &err);
    double t[REPLAYS];
    for (int r = -3; r < REPLAYS; r++) {
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

/* A CUDA backend created with up to four environment variables set (name, value pairs; NULL names end the list). */
static backend *backend_with(const char *const env[4][2])
{
    for (int i = 0; i < 4 && env[i][0]; i++)
        setenv(env[i][0], env[i][1], 1);
    backend *be;
    fk_error err = {0};
    check(backend_cuda_create(&be, &err), &err);
    for (int i = 0; i < 4 && env[i][0]; i++)
        unsetenv(env[i][0]);
    return be;
}

enum { FP16, WGMMA, WGMMA_8, TILED, TILED_128, DEQUANT_64M, DEQUANT_8M, PASSES, DEFAULT, WAYS };
static const char *const way_names[WAYS] = {"fp16",        "wgmma",      "wgmma 8", "tiled",  "tiled 128",
                                            "dequant 64M", "dequant 8M", "passes",  "default"};
#define N_M 7

/* Whether `name` is in the comma-separated `list` (every way when the list is unset). */
static bool way_listed(const char *list, const char *name)
{
    if (!list)
        return true;
    const size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && !strncmp(p, name, len))
            return true;
        p += n + (end != NULL);
    }
    return false;
}

int main(void)
{
    const char *const env[WAYS][4][2] = {
        [FP16] = {{NULL}},
        [WGMMA] = {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "1048576"}},
        [WGMMA_8] = {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "1048576"}, {"FK_QUANT_WGMMA_STAGES", "8"}},
        [TILED] = {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "0"}, {"FK_QUANT_MMA_MAX_M", "1048576"}},
        [TILED_128] = {{"FK_QUANT_SMALL_MAX_M", "0"},
                       {"FK_QUANT_WGMMA_MAX_M", "0"},
                       {"FK_QUANT_MMA_MAX_M", "1048576"},
                       {"FK_QUANT_MMA_ROWS", "128"}},
        [DEQUANT_64M] = {{"FK_QUANT_SMALL_MAX_M", "0"}, {"FK_QUANT_WGMMA_MAX_M", "0"}, {"FK_QUANT_MMA_MAX_M", "0"}},
        [DEQUANT_8M] = {{"FK_QUANT_WGMMA_MAX_M", "0"}, {"FK_QUANT_MMA_MAX_M", "0"}, {"FK_DEQUANT_SCRATCH_MB", "8"}},
        [PASSES] = {{"FK_QUANT_SMALL_MAX_M", "256"}},
        [DEFAULT] = {{NULL}},
    };
    backend *bes[WAYS];
    for (int way = 0; way < WAYS; way++)
        bes[way] = backend_with(env[way]);
    const struct {
        const char *name;
        int in, out;
    } shapes[] = {{"llama-3.2-1b qkv", 2048, 3072}, {"llama-3.2-1b o", 2048, 2048},
                  {"llama-3.2-1b gate_up", 2048, 16384}, {"llama-3.2-1b down", 8192, 2048},
                  {"llama-3-8b qkv", 4096, 6144}, {"llama-3-8b o", 4096, 4096},
                  {"llama-3-8b gate_up", 4096, 28672}, {"llama-3-8b down", 14336, 4096}};
    const int ms[N_M] = {32, 64, 128, 256, 512, 1024, 2048}, max_m = 2048;
    printf("quantized linears above the small-batch range, through the backend: median us per call (graph of %d)\n",
           CALLS_PER_GRAPH);
    printf("%-22s %4s %5s | %8s | %8s %8s %8s %9s %11s %10s %8s | %8s | %-11s %6s\n", "shape", "fmt", "m", "fp16",
           way_names[1], way_names[2], way_names[3], way_names[4], way_names[5], way_names[6], way_names[7],
           way_names[8], "best", "vs fp16");
    const char *only = getenv("FK_BENCH_ONLY"); /* a substring of the shape's name */
    const int only_m = getenv("FK_BENCH_M") ? atoi(getenv("FK_BENCH_M")) : 0; /* one of ms (for a profiler) */
    bool timed[WAYS];
    for (int way = 0; way < WAYS; way++)
        timed[way] = way_listed(getenv("FK_BENCH_WAYS"), way_names[way]);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        if (only && !strstr(shapes[si].name, only))
            continue;
        const int in = shapes[si].in, out = shapes[si].out;
        float *host = malloc((size_t)out * in * sizeof *host), *xh = malloc((size_t)max_m * in * sizeof *xh);
        for (size_t i = 0; i < (size_t)out * in; i++)
            host[i] = 0.05f * ((float)rand() / RAND_MAX * 2 - 1);
        for (size_t i = 0; i < (size_t)max_m * in; i++)
            xh[i] = (float)rand() / RAND_MAX * 2 - 1;
        double us[WAYS][N_M] = {{0}};
        for (fk_quantization f = FK_QUANT_INT8; f <= FK_QUANT_INT4; f++) {
            for (int way = 0; way < WAYS; way++) {
                if (!timed[way] || (way == FP16 && f != FK_QUANT_INT8)) /* the fp16 row serves both formats */
                    continue;
                backend *be = bes[way];
                const fk_quantization wf = way == FP16 ? FK_QUANT_NONE : f;
                const double bytes = (wf == FK_QUANT_NONE ? 2.0 : wf == FK_QUANT_INT8 ? 1.0 : 0.5) * out * in;
                const int copies = bytes * 2 > CYCLE_BYTES ? 2 : (int)(CYCLE_BYTES / bytes) + 1;
                qweight *w = malloc((size_t)copies * sizeof *w);
                fk_error err = {0};
                for (int c = 0; c < copies; c++)
                    check(be->ops->upload_linear(be, host, out, in, wf, &w[c], &err), &err);
                void *x, *y;
                check(be->ops->upload_weight(be, xh, max_m, in, &x, &err), &err);
                check(be->ops->alloc(be, (size_t)max_m * out * 2, &y, &err), &err);
                for (int mi = 0; mi < N_M; mi++)
                    us[way][mi] = (way == PASSES && ms[mi] > 256) || (only_m && ms[mi] != only_m)
                                      ? 0
                                      : time_us(be, y, x, w, copies, ms[mi], in, out);
                for (int c = 0; c < copies; c++) {
                    be->ops->release(be, w[c].data);
                    if (w[c].scales)
                        be->ops->release(be, w[c].scales);
                }
                be->ops->release(be, x), be->ops->release(be, y);
                free(w);
            }
            for (int mi = 0; mi < N_M; mi++) {
                int best = -1; /* the fastest way timed, the default aside */
                for (int way = WGMMA; way < DEFAULT; way++)
                    if (us[way][mi] > 0 && (best < 0 || us[way][mi] < us[best][mi]))
                        best = way;
                const double ratio = us[FP16][mi] > 0 ? us[DEFAULT][mi] / us[FP16][mi] : 0;
                printf("%-22s %4s %5d | %8.2f | %8.2f %8.2f %8.2f %9.2f %11.2f %10.2f %8.2f | %8.2f | %-11s "
                       "%5.2fx%s\n",
                       shapes[si].name, fk_quantization_name(f), ms[mi], us[FP16][mi], us[WGMMA][mi], us[WGMMA_8][mi],
                       us[TILED][mi], us[TILED_128][mi], us[DEQUANT_64M][mi], us[DEQUANT_8M][mi], us[PASSES][mi],
                       us[DEFAULT][mi], best < 0 ? "-" : way_names[best], ratio, ratio > 1.3 ? " (over 1.3x)" : "");
                printf("RESULT linear_quant_large %s %s m=%d: fp16 %.2f us; wgmma %.2f, wgmma 8 %.2f, tiled %.2f, "
                       "tiled 128 %.2f, dequant 64M %.2f, 8M %.2f, passes %.2f, default %.2f us; best %s; default "
                       "%.2fx fp16\n",
                       fk_quantization_name(f), shapes[si].name, ms[mi], us[FP16][mi], us[WGMMA][mi], us[WGMMA_8][mi],
                       us[TILED][mi], us[TILED_128][mi], us[DEQUANT_64M][mi], us[DEQUANT_8M][mi], us[PASSES][mi],
                       us[DEFAULT][mi], best < 0 ? "-" : way_names[best], ratio);
            }
        }
        free(host), free(xh);
    }
    for (int way = 0; way < WAYS; way++)
        bes[way]->ops->destroy(bes[way]);
    return 0;
}
