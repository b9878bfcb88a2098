/* backend_cuda.c — the GPU backend: fp16 weights, activations and KV cache on the current device, our kernels
 * (kernels/) for every op, and cuBLAS / cuBLASLt for the linears of more tokens than the small-batch kernel takes
 * (fp16 in and out, fp32 accumulation). Quantized linears (src/quant.h, packed on the host at load) run our
 * small-batch kernel on the packed weights, for more tokens our tiled kernel on them, and for many more are
 * dequantized to fp16 for cuBLAS. One stream;
 * every CUDA and cuBLAS call is checked and a failure is returned as FK_ERR_DEVICE naming the call. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend.h"
#include "cuda_gemm_lt.h"
#include "env.h"
#include "error.h"
#include "fp16.h"
#include "kernels.h"
#include "quant.h"

typedef struct cuda_backend {
    backend base;
    int device;
    int n_sms;
    cudaStream_t stream;
    cublasHandle_t blas;
    void *blas_workspace; /* cuBLAS's and cuBLASLt's, fixed: they must not allocate during graph capture */
    gemm_lt *gemm_lt;      /* cuBLASLt GEMMs with a bias or GELU+bias epilogue */
    bool gelu_by_cublaslt; /* linear_gelu: cuBLASLt's epilogue, else cuBLAS then k_bias_gelu (FK_GELU_EPILOGUE) */
    int small_linear_max_m; /* linears of up to this many tokens run k_linear_small (FK_SMALL_LINEAR_MAX_M) */
    int unaligned_max_m;    /* the same for a linear whose output rows are not whole 16-byte vectors (a 50,257-token
                             * head); passes of 64 tokens above 64 (FK_SMALL_LINEAR_UNALIGNED_MAX_M) */
    int wgmma_linear_max_m; /* above small_linear_max_m, fp16 linears of up to this many tokens run k_linear_wgmma
                             * (FK_WGMMA_LINEAR_MAX_M; 0 where the device cannot run it) */
    int wgmma_stages;       /* its shared-memory stages: 0 lets the kernel choose (FK_WGMMA_LINEAR_STAGES) */
    int wgmma_splits_ok;    /* it also takes linears it would split along k (FK_WGMMA_LINEAR_SPLITS) */
    float *linear_partials; /* k_linear_small's and k_linear_quant's split-K scratch and its tile counters */
    unsigned *linear_counters;
    int quant_small_max_m; /* quantized linears of up to this many tokens run k_linear_quant, 16 tokens a pass
                            * (FK_QUANT_SMALL_MAX_M) */
    int quant_wgmma_max_m[2]; /* on a Hopper, more tokens, up to this many: k_linear_quant_wgmma; a W under
                               * QUANT_WGMMA_LARGE_W elements, a larger one (FK_QUANT_WGMMA_MAX_M sets both; 0 where
                               * the device cannot run it) */
    int quant_wgmma_stages; /* its shared-memory stages: 0 lets the kernel choose (FK_QUANT_WGMMA_STAGES) */
    int quant_wgmma_splits; /* its blocks along k: 0 lets k_linear_quant_wgmma_splits choose
                             * (FK_QUANT_WGMMA_SPLITS) */
    int quant_wgmma_tokens; /* its blocks' tokens: 0 lets the kernel choose, 64 or 128 (FK_QUANT_WGMMA_TOKENS) */
    int quant_mma_max_m[2]; /* more tokens, up to this many: k_linear_quant_mma; INT8, INT4 (FK_QUANT_MMA_MAX_M
                             * sets both) */
    int quant_mma_rows;     /* its blocks' rows of W: 0 lets the kernel choose, 64 or 128 (FK_QUANT_MMA_ROWS) */
    int quant_resident;     /* the quantized linears k_linear_quant_resident takes where it fits: 0 none, 1 INT4 at
                             * one token, 2 every format at one token tile (FK_QUANT_RESIDENT) */
    int decode_kernel;      /* k_attn_args.decode_kernel (FK_DECODE_FRAGMENTS) */
    int decode_slices;      /* k_attn_args.decode_slices (FK_DECODE_SLICES) */
    void *dequant;         /* larger batches: a quantized weight dequantized to fp16 here, for cuBLAS */
    size_t dequant_bytes;  /* its size: the largest quantized weight uploaded, at most dequant_cap */
    size_t dequant_cap;    /* (FK_DEQUANT_SCRATCH_MB); a larger weight is dequantized a chunk of rows at a time */
    void *padded;          /* cuBLAS's output for a weight whose rows make y's rows not whole 16-byte vectors (a
                            * 50,257-token head): y's rows padded to a multiple of 8, packed into y by a 2-D copy */
    size_t padded_bytes;   /* its size: PADDED_ROWS rows of the widest such output, at most padded_cap */
    size_t padded_cap;     /* (FK_PADDED_SCRATCH_MB); more tokens go a chunk of rows at a time */
    uint16_t *staging; /* host fp16 staging for download_act */
    size_t staging_n;
    int prefill_tile_rows; /* queries per prefill tile: 128 runs the Hopper kernel, 64 the mma.sync one */
    struct prefill_tile *tiles; /* host: prefill tiles, built per attention call */
    cudaEvent_t *marks;         /* profiling: PROF_MARKS events, created at the first mark */
    int32_t *tile_pairs;        /* host: (sequence, first query) of each, as the kernel reads them */
    int tiles_cap;
    cudaEvent_t fetched[2]; /* fetch_begin's copies, by slot */
    /* fetch_begin's and upload_ahead's copies run on `copies`, beside the ops (so that a step's token download and
     * its next sampling rows' upload are not on the path from one decode graph to the next); `ready` marks the ops
     * a fetch copies after, `uploaded` the copies the ops after an upload_ahead wait for. */
    cudaStream_t copies;
    cudaEvent_t ready, uploaded;
    /* upload_after_pass's copies (a pass's indices) run on `indices`, after `pass_done` (pass_end's), so that they
     * are not on the path from one pass through its sampling to the next; the ops after one wait for `indices_up`. */
    cudaStream_t indices;
    cudaEvent_t pass_done, indices_up;
} cuda_backend;

#define BLAS_WORKSPACE_BYTES (32u << 20) /* what cuBLAS recommends for Hopper */
#define GELU_BY_CUBLASLT_DEFAULT true
#define SMALL_LINEAR_MAX_M_DEFAULT 16 /* the crossover against cuBLAS, kernels/bench/bench_linear (BENCHMARKS.md) */
/* Linears whose output rows are not whole 16-byte vectors (a 50,257-token head): ours up to this many tokens, then
 * cuBLAS on W's padded rows (cublas_linear_any), which is level with ours at 16-32 tokens and 1.9x / 3.2x faster at
 * 128 / 256 (kernels/bench/bench_linear; bench-1b at 256 requests +7.8 %, BENCHMARKS.md). */
#define UNALIGNED_MAX_M_DEFAULT 32
/* On a Hopper, fp16 linears of more tokens than the small kernel's, up to this many, run k_linear_wgmma (TMA and
 * wgmma), else cuBLAS (kernels/bench/bench_linear; BENCHMARKS.md). */
#define WGMMA_LINEAR_MAX_M_DEFAULT 64
/* Two passes of the small kernel, not the tiled one, up to 32 tokens: in bench-1b's decode step at 32 requests the
 * tiled kernel did not gain for INT8 (-2 %) though it wins on most shapes alone, and loses on most for INT4
 * (BENCHMARKS.md). */
#define QUANT_SMALL_MAX_M_DEFAULT 32
/* On a Hopper, up to 16 (one pass): 17-32 tokens go to k_linear_quant_wgmma, which in bench-1b's engine made INT8
 * +29 % at 32 requests and +15 % at 24, INT4 +8 % at 32 and -1 % at 24 (BENCHMARKS.md, thirty-first session). */
#define QUANT_SMALL_MAX_M_HOPPER 16
/* On a Hopper, quantized linears of more tokens, up to this many, run k_linear_quant_wgmma where W has
 * QUANT_WGMMA_LARGE_W elements or more, and up to QUANT_WGMMA_SMALL_W_MAX_M tokens where it has fewer. In
 * bench_linear_quant (BENCHMARKS.md, thirtieth session) it beat the other paths at 32 and 64 tokens on every
 * Llama-1B/8B shape but 8B's down in INT4 (-13 %) and o (-5 %); on the larger weights up to 512 tokens but 1B's
 * down and 8B's o at 128 (-12 %, -25 %); on 1B's qkv and o (6 M and 4 M elements) it lost from 128 tokens on. With
 * its steps overlapped and at most 4 splits (thirty-first and thirty-second sessions) it won those two at
 * 128 tokens too (qkv 10.8 against dequantize + cuBLAS's 13.2 us, o 9.6 against the tiled kernel's 10.2, INT8 on an
 * H200; INT4 alike), and lost at 256. */
#define QUANT_WGMMA_MAX_M_DEFAULT 512
#define QUANT_WGMMA_SMALL_W_MAX_M 128
#define QUANT_WGMMA_LARGE_W ((size_t)1 << 24)
/* Above these, dequantize + cuBLAS: in bench-1b's decode step (BENCHMARKS.md) INT8 gains from the tiled kernel up to
 * 128 requests; INT4 lost at 96 and 128 before its faster unpacking (99fa8b2) and measured within noise after it. */
#define QUANT_MMA_MAX_M_INT8 128
#define QUANT_MMA_MAX_M_INT4 64
#define DEQUANT_SCRATCH_MB_DEFAULT 64
#define PADDED_SCRATCH_MB_DEFAULT 32
#define PADDED_ROWS 1024 /* tokens of an unaligned output the padded scratch is sized for (a chunk above) */

typedef struct prefill_tile {
    int32_t seq, q0, position;
} prefill_tile;

static cuda_backend *cb_of(backend *b)
{
    return (cuda_backend *)b;
}

static fk_status cuda_fail(fk_error *err, const char *what, cudaError_t e)
{
    return fk_error_set(err, FK_ERR_DEVICE, "cuda: %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

#define CUDA_OK(call, what)                                                                                        \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        if (e_ != cudaSuccess)                                                                                     \
            return cuda_fail(err, what, e_);                                                                       \
    } while (0)

#define BLAS_OK(call, what)                                                                                        \
    do {                                                                                                           \
        cublasStatus_t s_ = (call);                                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                           \
            return fk_error_set(err, FK_ERR_DEVICE, "cublas: %s: status %d", what, (int)s_);                       \
    } while (0)

static void cuda_destroy(backend *b)
{
    cuda_backend *cb = cb_of(b);
    const char *trace = getenv("FK_TRACE_FILE");
    if (trace && *trace)
        k_trace_write(trace); /* a diagnostic's output: nothing to report it to here */
    gemm_lt_destroy(cb->gemm_lt);
    cudaFree(cb->linear_partials);
    cudaFree(cb->linear_counters);
    cudaFree(cb->dequant);
    cudaFree(cb->padded);
    if (cb->blas)
        cublasDestroy(cb->blas);
    cudaFree(cb->blas_workspace);
    if (cb->stream)
        cudaStreamDestroy(cb->stream);
    if (cb->copies)
        cudaStreamDestroy(cb->copies);
    if (cb->ready)
        cudaEventDestroy(cb->ready);
    if (cb->uploaded)
        cudaEventDestroy(cb->uploaded);
    if (cb->indices)
        cudaStreamDestroy(cb->indices);
    if (cb->pass_done)
        cudaEventDestroy(cb->pass_done);
    if (cb->indices_up)
        cudaEventDestroy(cb->indices_up);
    for (int i = 0; cb->marks && i < PROF_MARKS; i++)
        cudaEventDestroy(cb->marks[i]);
    free(cb->marks);
    for (int i = 0; i < 2; i++)
        if (cb->fetched[i])
            cudaEventDestroy(cb->fetched[i]);
    free(cb->staging);
    free(cb->tiles);
    free(cb->tile_pairs);
    free(cb);
}

/* Zeroed device memory (the zeroing is ordered on the backend's stream). */
static fk_status cuda_alloc(backend *b, size_t bytes, void **out, fk_error *err)
{
    *out = NULL;
    if (bytes == 0)
        return FK_OK;
    cudaError_t e = cudaMalloc(out, bytes);
    if (e != cudaSuccess) {
        *out = NULL;
        return fk_error_set(err, e == cudaErrorMemoryAllocation ? FK_ERR_OUT_OF_MEMORY : FK_ERR_DEVICE,
                            "cuda: cannot allocate %.1f MiB: %s", (double)bytes / 1048576, cudaGetErrorString(e));
    }
    CUDA_OK(cudaMemsetAsync(*out, 0, bytes, cb_of(b)->stream), "cudaMemsetAsync");
    return FK_OK;
}

static void cuda_release(backend *b, void *p)
{
    (void)b;
    cudaFree(p); /* at teardown: an error here has nowhere to go */
}

static fk_status cuda_upload(backend *b, void *dst, const void *src, size_t bytes, fk_error *err)
{
    if (bytes)
        CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cb_of(b)->stream), "upload");
    return FK_OK;
}

static fk_status cuda_host_alloc(backend *b, size_t bytes, void **out, fk_error *err)
{
    (void)b;
    CUDA_OK(cudaMallocHost(out, bytes ? bytes : 1), "cudaMallocHost");
    memset(*out, 0, bytes);
    return FK_OK;
}

static void cuda_host_free(backend *b, void *p)
{
    (void)b;
    cudaFreeHost(p); /* at teardown: an error here has nowhere to go */
}

static fk_status cuda_fetch_begin(backend *b, void *dst, const void *src, size_t bytes, int slot, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    if (!bytes) {
        CUDA_OK(cudaEventRecord(cb->fetched[slot], cb->stream), "cudaEventRecord");
        return FK_OK;
    }
    CUDA_OK(cudaEventRecord(cb->ready, cb->stream), "cudaEventRecord");
    CUDA_OK(cudaStreamWaitEvent(cb->copies, cb->ready, 0), "cudaStreamWaitEvent");
    CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cb->copies), "fetch");
    CUDA_OK(cudaEventRecord(cb->fetched[slot], cb->copies), "cudaEventRecord");
    return FK_OK;
}

static fk_status cuda_upload_ahead(backend *b, void *dst, const void *src, size_t bytes, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    if (bytes)
        CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cb->copies), "upload");
    CUDA_OK(cudaEventRecord(cb->uploaded, cb->copies), "cudaEventRecord");
    CUDA_OK(cudaStreamWaitEvent(cb->stream, cb->uploaded, 0), "cudaStreamWaitEvent");
    return FK_OK;
}

static fk_status cuda_pass_end(backend *b, fk_error *err)
{
    CUDA_OK(cudaEventRecord(cb_of(b)->pass_done, cb_of(b)->stream), "cudaEventRecord");
    return FK_OK;
}

/* Before the first pass_end, pass_done has not been recorded, and a wait for it returns at once. */
static fk_status cuda_upload_after_pass(backend *b, void *dst, const void *src, size_t bytes, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    CUDA_OK(cudaStreamWaitEvent(cb->indices, cb->pass_done, 0), "cudaStreamWaitEvent");
    if (bytes)
        CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cb->indices), "upload");
    CUDA_OK(cudaEventRecord(cb->indices_up, cb->indices), "cudaEventRecord");
    CUDA_OK(cudaStreamWaitEvent(cb->stream, cb->indices_up, 0), "cudaStreamWaitEvent");
    return FK_OK;
}

static fk_status cuda_fetch_wait(backend *b, int slot, fk_error *err)
{
    CUDA_OK(cudaEventSynchronize(cb_of(b)->fetched[slot]), "cudaEventSynchronize");
    return FK_OK;
}

static fk_status cuda_download(backend *b, void *dst, const void *src, size_t bytes, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    if (bytes)
        CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cb->stream), "download");
    CUDA_OK(cudaStreamSynchronize(cb->stream), "cudaStreamSynchronize");
    return FK_OK;
}

static fk_status cuda_download_act(backend *b, float *dst, const void *src, size_t n, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    if (n > cb->staging_n) {
        uint16_t *grown = realloc(cb->staging, n * sizeof *grown);
        if (!grown)
            return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cuda: host staging for %zu values", n);
        cb->staging = grown;
        cb->staging_n = n;
    }
    fk_status s = cuda_download(b, cb->staging, src, n * sizeof(uint16_t), err);
    if (s)
        return s;
    for (size_t i = 0; i < n; i++)
        dst[i] = fp16_to_f32(cb->staging[i]);
    return FK_OK;
}

static fk_status cuda_memory_info(backend *b, size_t *free_bytes, size_t *total_bytes, fk_error *err)
{
    (void)b;
    CUDA_OK(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
    return FK_OK;
}

/* Rows a matrix weight is stored with: a multiple of 8, the rows past `rows` zero, so that cuBLAS can take a linear
 * on it as a GEMM of aligned shapes (cublas_linear_any); a vector (rows = 1) as it is. */
static int stored_rows(int rows)
{
    return rows > 1 ? (rows + 7) / 8 * 8 : rows;
}

/* Grows a scratch buffer (*buf, *bytes) to hold `all` bytes, or `cap` (at least `row`) if that is smaller. Done at
 * load, so that no pass allocates (graphs record addresses). */
static fk_status grow_scratch(cuda_backend *cb, void **buf, size_t *bytes, size_t row, size_t all, size_t cap,
                              const char *what, fk_error *err)
{
    size_t need = all < cap ? all : cap;
    need = need > row ? need : row;
    if (need <= *bytes)
        return FK_OK;
    CUDA_OK(cudaFree(*buf), what); /* waits for any work still using it */
    *buf = NULL;
    *bytes = 0;
    fk_status s = cuda_alloc(&cb->base, need, buf, err);
    if (!s)
        *bytes = need;
    return s;
}

/* The padded-output scratch, grown for a weight whose rows are stored padded (stored_rows > rows): PADDED_ROWS
 * outputs of stored_rows, or padded_cap bytes (at least one output) if that is smaller. */
static fk_status reserve_padded(cuda_backend *cb, int rows, fk_error *err)
{
    if (stored_rows(rows) == rows)
        return FK_OK;
    const size_t row = (size_t)stored_rows(rows) * sizeof(uint16_t);
    return grow_scratch(cb, &cb->padded, &cb->padded_bytes, row, row * PADDED_ROWS, cb->padded_cap,
                        "cudaFree (padded-output scratch)", err);
}

static fk_status cuda_upload_weight(backend *b, const float *host, int rows, int cols, void **out, fk_error *err)
{
    const size_t n = (size_t)rows * cols, stored = (size_t)stored_rows(rows) * cols;
    fk_status s = reserve_padded(cb_of(b), rows, err);
    if (s)
        return s;
    uint16_t *h = malloc(n * sizeof *h);
    if (!h)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cuda: host buffer for a %d x %d weight", rows, cols);
    for (size_t i = 0; i < n; i++)
        h[i] = f32_to_fp16(host[i]);
    s = cuda_alloc(b, stored * sizeof *h, out, err); /* zeroed: the padding rows stay 0 */
    if (!s)
        s = cuda_upload(b, *out, h, n * sizeof *h, err);
    if (!s) /* h is freed next */
        s = cuda_download(b, NULL, NULL, 0, err);
    free(h);
    if (!s)
        b->weight_bytes += stored * sizeof *h;
    return s;
}

/* The dequantization scratch, grown for a quantized weight of rows x cols: the whole fp16 matrix, or dequant_cap
 * bytes (at least a row) if that is smaller. */
static fk_status reserve_dequant(cuda_backend *cb, int rows, int cols, fk_error *err)
{
    const size_t row = (size_t)cols * sizeof(uint16_t);
    return grow_scratch(cb, &cb->dequant, &cb->dequant_bytes, row, row * (size_t)rows, cb->dequant_cap,
                        "cudaFree (dequantization scratch)", err);
}

_Static_assert((int)FK_QUANT_INT8 == (int)K_QUANT_INT8 && (int)FK_QUANT_INT4 == (int)K_QUANT_INT4,
               "the kernels take fk_quantization's values as their formats");

/* Quantized on the host (quant_pack), then the packed values and scales uploaded. */
static fk_status cuda_upload_linear(backend *b, const float *host, int rows, int cols, fk_quantization format,
                                    qweight *out, fk_error *err)
{
    *out = (qweight){.format = format, .rows = rows, .cols = cols};
    if (format == FK_QUANT_NONE)
        return cuda_upload_weight(b, host, rows, cols, &out->data, err);
    fk_status s = quant_check(format, cols, err);
    if (s)
        return s;
    const size_t data = quant_data_bytes(format, rows, cols), scales = quant_scale_bytes(format, rows, cols);
    void *h_data = malloc(data);
    uint16_t *h_scales = malloc(scales);
    if (!h_data || !h_scales)
        s = fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cuda: host buffers for a %d x %d %s weight", rows, cols,
                         fk_quantization_name(format));
    else {
        quant_pack(format, host, rows, cols, h_data, h_scales);
        if (!(s = cuda_alloc(b, data, &out->data, err)) && !(s = cuda_alloc(b, scales, &out->scales, err)) &&
            !(s = cuda_upload(b, out->data, h_data, data, err)) &&
            !(s = cuda_upload(b, out->scales, h_scales, scales, err)))
            s = cuda_download(b, NULL, NULL, 0, err); /* the host buffers are freed next */
    }
    free(h_data);
    free(h_scales);
    if (!s)
        s = reserve_dequant(cb_of(b), rows, cols, err);
    if (s) {
        cudaFree(out->data);
        cudaFree(out->scales);
        *out = (qweight){0};
        return s;
    }
    b->weight_bytes += data + scales;
    return FK_OK;
}

/* Checks a kernel launch; unsupported sizes come back as cudaErrorInvalidValue. */
static fk_status launched(cudaError_t e, const char *kernel, fk_error *err)
{
    return e == cudaSuccess ? FK_OK : cuda_fail(err, kernel, e);
}

static fk_status cuda_embed(backend *b, void *out, const void *tok, const int32_t *ids, const int32_t *sampled,
                            const void *pos, const int32_t *positions, int n, int d, fk_error *err)
{
    return launched(k_embed(out, tok, ids, sampled, pos, positions, n, d, cb_of(b)->stream), "embed", err);
}

static fk_status cuda_add_rms_norm(backend *b, void *out, void *residual, const void *x, const void *w, int n, int d,
                                   float eps, fk_error *err)
{
    return launched(k_add_rms_norm(out, residual, x, w, n, d, eps, cb_of(b)->stream), "add_rms_norm", err);
}

static fk_status cuda_embed_rms_norm(backend *b, void *out, void *residual, const void *tok, const int32_t *ids,
                                     const int32_t *sampled, const void *w, int n, int d, float eps, fk_error *err)
{
    return launched(k_embed_rms_norm(out, residual, tok, ids, sampled, w, n, d, eps, cb_of(b)->stream),
                    "embed_rms_norm", err);
}

static fk_status cuda_add_layer_norm(backend *b, void *out, void *residual, const void *x, const void *w,
                                     const void *bias, int n, int d, float eps, fk_error *err)
{
    return launched(k_add_layer_norm(out, residual, x, w, bias, n, d, eps, cb_of(b)->stream), "add_layer_norm", err);
}

/* Whether k_linear_small takes this linear: few tokens (more where y's rows are not whole 16-byte vectors, which
 * cuBLAS handles slowly), rows of W of whole 16-byte vectors, aligned x and W. */
static bool small_linear(const cuda_backend *cb, int n, int in, int out, const void *x, const void *w)
{
    const int max_m = out % 8 ? cb->unaligned_max_m : cb->small_linear_max_m;
    return n <= max_m && in % 8 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w % 16 == 0;
}

/* The splits k_linear_wgmma would take this linear with, or 0 where it does not take it: more tokens than the small
 * kernel takes on aligned rows, up to wgmma_linear_max_m (so also a 50,257-token head of 17-32 tokens, which the
 * small kernel would take), rows of W of whole 16-byte vectors, aligned x and W; by default only where it would not
 * split k (enough rows for the SMs: a 1B model's gate|up and head). With split-K across a cluster the kernel lost to
 * cuBLAS inside the step (1B's q|k|v, o and down at 32-64 tokens; BENCHMARKS.md). */
static int wgmma_linear(const cuda_backend *cb, int n, int in, int out, int epilogue, const void *x, const void *w)
{
    if (n <= cb->small_linear_max_m || n > cb->wgmma_linear_max_m || in % 8 || (uintptr_t)x % 16 || (uintptr_t)w % 16)
        return 0;
    const int splits = k_linear_wgmma_splits(n, in, out, epilogue, cb->n_sms);
    return splits == 1 || cb->wgmma_splits_ok ? splits : 0;
}

static fk_status run_wgmma_linear(cuda_backend *cb, void *y, const void *x, const void *w, const void *bias, int n,
                                  int in, int out, int epilogue, int splits, fk_error *err)
{
    return launched(k_linear_wgmma(y, x, w, bias, n, in, out, epilogue, splits, cb->wgmma_stages, cb->stream),
                    "linear_wgmma", err);
}

/* k_linear_small in passes of up to K_LINEAR_SMALL_MAX_M tokens (each pass reads W once). */
static fk_status run_small_linear(cuda_backend *cb, void *y, const void *x, const void *w, const void *bias, int n,
                                  int in, int out, int epilogue, fk_error *err)
{
    for (int t0 = 0; t0 < n; t0 += K_LINEAR_SMALL_MAX_M) {
        const int m = n - t0 < K_LINEAR_SMALL_MAX_M ? n - t0 : K_LINEAR_SMALL_MAX_M;
        const int splits = k_linear_small_splits(m, in, out, epilogue, cb->n_sms);
        fk_status s = launched(k_linear_small((uint16_t *)y + (size_t)t0 * out, (const uint16_t *)x + (size_t)t0 * in,
                                              w, bias, m, in, out, epilogue, splits, cb->linear_partials,
                                              cb->linear_counters, cb->stream),
                               "linear_small", err);
        if (s)
            return s;
    }
    return FK_OK;
}

/* y = x W^T by cuBLAS: in its column-major terms y^T (out x n) = W^T^T (out x in) x^T (in x n); y's rows are ldy
 * apart (out, or more when W is a block of rows of a larger weight and y the matching columns). */
static fk_status cublas_linear(cuda_backend *cb, void *y, const void *x, const void *w, int n, int in, int out,
                               int ldy, fk_error *err)
{
    const float one = 1.0f, zero = 0.0f;
    BLAS_OK(cublasGemmEx(cb->blas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, CUDA_R_16F, in, x, CUDA_R_16F, in,
                         &zero, y, CUDA_R_16F, ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    return FK_OK;
}

/* y = x W^T by cuBLAS for any out. Where out is not a multiple of 8 (a 50,257-token head), cuBLAS's GEMM runs at a
 * fifth to a third of copy bandwidth (BENCHMARKS.md); on a W stored with padded rows (stored_rows, w_padded) it
 * computes all of them into the padded scratch instead, a chunk of tokens at a time, and a 2-D copy packs the rows
 * of y. */
static fk_status cublas_linear_any(cuda_backend *cb, void *y, const void *x, const void *w, bool w_padded, int n,
                                   int in, int out, fk_error *err)
{
    const int ld = stored_rows(out);
    const size_t row = (size_t)ld * sizeof(uint16_t);
    if (ld == out || !w_padded || cb->padded_bytes < row)
        return cublas_linear(cb, y, x, w, n, in, out, out, err);
    const int chunk = (int)(cb->padded_bytes / row);
    for (int t0 = 0; t0 < n; t0 += chunk) {
        const int m = n - t0 < chunk ? n - t0 : chunk;
        fk_status s = cublas_linear(cb, cb->padded, (const uint16_t *)x + (size_t)t0 * in, w, m, in, ld, ld, err);
        if (s)
            return s;
        CUDA_OK(cudaMemcpy2DAsync((uint16_t *)y + (size_t)t0 * out, (size_t)out * sizeof(uint16_t), cb->padded, row,
                                  (size_t)out * sizeof(uint16_t), (size_t)m, cudaMemcpyDeviceToDevice, cb->stream),
                "packing a padded linear output");
    }
    return FK_OK;
}

/* y[n][out] = x[n][in] W[out][in]^T (+ bias) by cuBLAS, with the bias in cuBLASLt's epilogue where the shapes are
 * whole 16-byte rows (and a separate pass otherwise); GELU after the bias when gelu. w_padded: W's rows are stored
 * padded (an uploaded weight, not the dequantization scratch). */
static fk_status gemm_linear(cuda_backend *cb, void *y, const void *x, const void *w, bool w_padded, const void *bias,
                             int n, int in, int out, bool gelu, fk_error *err)
{
    if (gelu && cb->gelu_by_cublaslt && in % 8 == 0 && out % 8 == 0) /* rows of whole 16-byte vectors, as GPT-2's are */
        return gemm_lt_run(cb->gemm_lt, cb->stream, y, x, w, bias, n, in, out, GEMM_LT_GELU, err);
    if (gelu) {
        fk_status s = cublas_linear_any(cb, y, x, w, w_padded, n, in, out, err);
        return s ? s : launched(k_bias_gelu(y, bias, n, out, cb->stream), "bias_gelu", err);
    }
    if (bias && in % 8 == 0 && out % 8 == 0)
        return gemm_lt_run(cb->gemm_lt, cb->stream, y, x, w, bias, n, in, out, GEMM_LT_BIAS, err);
    fk_status s = cublas_linear_any(cb, y, x, w, w_padded, n, in, out, err);
    if (!s && bias)
        s = launched(k_add_bias(y, bias, n, out, cb->stream), "add_bias", err);
    return s;
}

/* y[n][out] = x[n][in] W[out][in]^T (+ bias), GELU after the bias when gelu, for an fp16 W that no kernel writes:
 * ours for few tokens (it streams W before its PDL wait), else cuBLAS. */
static fk_status plain_linear(cuda_backend *cb, void *y, const void *x, const void *w, const void *bias, int n, int in,
                              int out, bool gelu, fk_error *err)
{
    const int epilogue = gelu ? K_LINEAR_GELU : K_LINEAR_PLAIN, splits = wgmma_linear(cb, n, in, out, epilogue, x, w);
    if (splits)
        return run_wgmma_linear(cb, y, x, w, bias, n, in, out, epilogue, splits, err);
    if (small_linear(cb, n, in, out, x, w))
        return run_small_linear(cb, y, x, w, bias, n, in, out, epilogue, err);
    return gemm_linear(cb, y, x, w, true, bias, n, in, out, gelu, err);
}

/* Whether k_linear_quant takes this quantized linear: few tokens, rows of whole 16-byte vectors, aligned x. */
static bool quant_small(const cuda_backend *cb, int n, int in, const void *x)
{
    return n <= cb->quant_small_max_m && in % 16 == 0 && (uintptr_t)x % 16 == 0;
}

/* Whether k_linear_quant_resident takes this one (where k_linear_quant would): by default INT4 at one token, where
 * bench-1b's batch-1 decode measured +2.4 % with it (its o and down projections); INT8 there lost 9 %, and 4 or 8
 * tokens lost 5-7 % in both formats (BENCHMARKS.md, twenty-second session). */
static bool resident_linear(const cuda_backend *cb, const qweight *w, int n, int in, int out, int epilogue)
{
    const bool takes = cb->quant_resident == 2 || (cb->quant_resident == 1 && w->format == FK_QUANT_INT4 && n == 1);
    return takes && k_linear_quant_resident_fits(w->format, n, in, out, epilogue, cb->n_sms);
}

/* k_linear_quant in passes of up to 16 tokens (each pass reads the packed weights once), or the resident kernel. */
static fk_status run_quant_small(cuda_backend *cb, void *y, const void *x, const qweight *w, const void *bias, int n,
                                 int in, int out, int epilogue, fk_error *err)
{
    if (resident_linear(cb, w, n, in, out, epilogue))
        return launched(k_linear_quant_resident(y, x, w->data, w->scales, bias, w->format, n, in, out, epilogue,
                                                cb->stream),
                        "linear_quant_resident", err);
    for (int t0 = 0; t0 < n; t0 += K_LINEAR_QUANT_MAX_M) {
        const int m = n - t0 < K_LINEAR_QUANT_MAX_M ? n - t0 : K_LINEAR_QUANT_MAX_M;
        const int splits = k_linear_quant_splits(w->format, m, in, out, epilogue, cb->n_sms);
        fk_status s = launched(k_linear_quant((uint16_t *)y + (size_t)t0 * out, (const uint16_t *)x + (size_t)t0 * in,
                                              w->data, w->scales, bias, w->format, m, in, out, epilogue, splits,
                                              cb->linear_partials, cb->linear_counters, cb->stream),
                               "linear_quant", err);
        if (s)
            return s;
    }
    return FK_OK;
}

/* Whether k_linear_quant_wgmma takes this quantized linear (more tokens than quant_small's, on a Hopper): fewer
 * tokens where W is small (QUANT_WGMMA_MAX_M_DEFAULT's measurements). */
static bool quant_wgmma(const cuda_backend *cb, int n, int in, int out, const void *x, const qweight *w)
{
    const bool large = (size_t)in * (size_t)out >= QUANT_WGMMA_LARGE_W;
    return n <= cb->quant_wgmma_max_m[large] && in % 16 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w->data % 16 == 0;
}

static fk_status run_quant_wgmma(cuda_backend *cb, void *y, const void *x, const qweight *w, const void *bias, int n,
                                 int in, int out, int epilogue, fk_error *err)
{
    const int tokens =
        cb->quant_wgmma_tokens ? cb->quant_wgmma_tokens : k_linear_quant_wgmma_tokens(n, in, out, cb->n_sms);
    const int splits = cb->quant_wgmma_splits ? cb->quant_wgmma_splits
                                              : k_linear_quant_wgmma_splits(n, in, out, tokens, cb->n_sms);
    return launched(k_linear_quant_wgmma(y, x, w->data, w->scales, bias, w->format, n, in, out, epilogue, splits,
                                         cb->quant_wgmma_stages, tokens, cb->stream),
                    "linear_quant_wgmma", err);
}

/* Whether k_linear_quant_mma takes this quantized linear (more tokens than quant_small's). */
static bool quant_mma(const cuda_backend *cb, const qweight *w, int n, int in, const void *x)
{
    return n <= cb->quant_mma_max_m[w->format == FK_QUANT_INT4] && in % 16 == 0 && (uintptr_t)x % 16 == 0;
}

static fk_status run_quant_mma(cuda_backend *cb, void *y, const void *x, const qweight *w, const void *bias, int n,
                               int in, int out, int epilogue, fk_error *err)
{
    const int rows = cb->quant_mma_rows ? cb->quant_mma_rows : k_linear_quant_mma_rows(n, out, cb->n_sms);
    const int splits = k_linear_quant_mma_splits(rows, n, in, out, cb->n_sms);
    return launched(k_linear_quant_mma(y, x, w->data, w->scales, bias, w->format, n, in, out, epilogue, rows, splits,
                                       cb->linear_partials, cb->linear_counters, cb->stream),
                    "linear_quant_mma", err);
}

/* A quantized linear of still more tokens: W dequantized to fp16 in the scratch, then the fp16 linear (GELU after the
 * bias when gelu). A W larger than the scratch goes a chunk of rows at a time, each chunk a cuBLAS GEMM into its
 * columns of y, with the bias (and GELU) applied once after the last. */
static fk_status dequant_linear(cuda_backend *cb, void *y, const void *x, const qweight *w, const void *bias, int n,
                                int in, int out, bool gelu, fk_error *err)
{
    const size_t fit = cb->dequant_bytes / ((size_t)in * sizeof(uint16_t));
    /* chunks of whole 64-row blocks, so that each chunk's columns of y start 128-byte aligned for cuBLAS */
    const int chunk = fit >= (size_t)out ? out : fit >= 64 ? (int)(fit / 64 * 64) : (int)fit;
    if (chunk < 1) /* upload_linear reserves the scratch: this weight was not uploaded here */
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "cuda: no dequantization scratch for a %d x %d %s weight",
                            out, in, fk_quantization_name(w->format));
    fk_status s;
    if (chunk == out) {
        if ((s = launched(k_dequant(cb->dequant, w->data, w->scales, w->format, 0, out, in, cb->stream), "dequant",
                          err)))
            return s;
        /* cuBLAS even for few tokens: the small kernel would read W before k_dequant has written it (PDL) */
        return gemm_linear(cb, y, x, cb->dequant, false, bias, n, in, out, gelu, err);
    }
    for (int r0 = 0; r0 < out; r0 += chunk) {
        const int rows = out - r0 < chunk ? out - r0 : chunk;
        if ((s = launched(k_dequant(cb->dequant, w->data, w->scales, w->format, r0, rows, in, cb->stream), "dequant",
                          err)) ||
            (s = cublas_linear(cb, (uint16_t *)y + r0, x, cb->dequant, n, in, rows, out, err)))
            return s;
    }
    if (gelu)
        return launched(k_bias_gelu(y, bias, n, out, cb->stream), "bias_gelu", err);
    return bias ? launched(k_add_bias(y, bias, n, out, cb->stream), "add_bias", err) : FK_OK;
}

static fk_status cuda_linear(backend *b, void *y, const void *x, const qweight *w, const void *bias, int n, int in,
                             int out, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    if (w->format == FK_QUANT_NONE)
        return plain_linear(cb, y, x, w->data, bias, n, in, out, false, err);
    if (quant_small(cb, n, in, x))
        return run_quant_small(cb, y, x, w, bias, n, in, out, K_LINEAR_PLAIN, err);
    if (quant_wgmma(cb, n, in, out, x, w))
        return run_quant_wgmma(cb, y, x, w, bias, n, in, out, K_LINEAR_PLAIN, err);
    if (quant_mma(cb, w, n, in, x))
        return run_quant_mma(cb, y, x, w, bias, n, in, out, K_LINEAR_PLAIN, err);
    return dequant_linear(cb, y, x, w, bias, n, in, out, false, err);
}

static fk_status cuda_linear_gelu(backend *b, void *y, const void *x, const qweight *w, const void *bias, int n,
                                  int in, int out, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    if (w->format == FK_QUANT_NONE)
        return plain_linear(cb, y, x, w->data, bias, n, in, out, true, err);
    if (quant_small(cb, n, in, x))
        return run_quant_small(cb, y, x, w, bias, n, in, out, K_LINEAR_GELU, err);
    if (quant_wgmma(cb, n, in, out, x, w))
        return run_quant_wgmma(cb, y, x, w, bias, n, in, out, K_LINEAR_GELU, err);
    if (quant_mma(cb, w, n, in, x))
        return run_quant_mma(cb, y, x, w, bias, n, in, out, K_LINEAR_GELU, err);
    return dequant_linear(cb, y, x, w, bias, n, in, out, true, err);
}

static fk_status cuda_linear_silu_mul(backend *b, void *out, void *scratch, const void *x, const qweight *w,
                                      const void *bias, int n, int in, int f, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    const int splits = w->format == FK_QUANT_NONE ? wgmma_linear(cb, n, in, f, K_LINEAR_SILU_MUL, x, w->data) : 0;
    if (splits)
        return run_wgmma_linear(cb, out, x, w->data, bias, n, in, f, K_LINEAR_SILU_MUL, splits, err);
    if (w->format == FK_QUANT_NONE && small_linear(cb, n, in, f, x, w->data))
        return run_small_linear(cb, out, x, w->data, bias, n, in, f, K_LINEAR_SILU_MUL, err);
    if (w->format != FK_QUANT_NONE && quant_small(cb, n, in, x))
        return run_quant_small(cb, out, x, w, bias, n, in, f, K_LINEAR_SILU_MUL, err);
    fk_status s = cuda_linear(b, scratch, x, w, bias, n, in, 2 * f, err);
    if (s)
        return s;
    return launched(k_silu_mul(out, scratch, n, f, cb->stream), "silu_mul", err);
}

static fk_status cuda_rope_store_kv(backend *b, void *qkv, const int32_t *positions, const float *inv_freq,
                                    const int32_t *slot_mapping, const kv_pool *kv, int n, int n_heads, fk_error *err)
{
    return launched(k_rope_store_kv(qkv, positions, inv_freq, slot_mapping, kv->k, kv->v, n, n_heads, kv->n_kv_heads,
                                    kv->head_dim, kv->block_size, cb_of(b)->stream),
                    "rope_store_kv", err);
}

/* The decode kernel's partials for up to max_seqs sequences, then the prefill tile list: a step that mixes decodes
 * with prefill chunks uses both. */
static size_t cuda_attention_scratch_bytes(const backend *b, int max_tokens, int max_seqs, int n_heads, int n_kv_heads,
                                           int head_dim)
{
    const cuda_backend *cb = (const cuda_backend *)b;
    const size_t decode = k_attention_decode_scratch_bytes(max_seqs, n_heads, n_kv_heads, head_dim, cb->n_sms);
    const size_t tiles = ((size_t)max_tokens / cb->prefill_tile_rows + (size_t)max_seqs) * 2 * sizeof(int32_t);
    return (decode + 15) / 16 * 16 + tiles;
}

/* Heavier first: a tile's work grows with the position of its first query. */
static int heavier_first(const void *x, const void *y)
{
    return ((const prefill_tile *)y)->position - ((const prefill_tile *)x)->position;
}

/* The decode kernel on sequences 0 .. n_seqs - 1 (one query each) of args, planned for contexts up to max_context. */
static fk_status decode_attention(cuda_backend *cb, const k_attn_args *args, int n_seqs, int max_context,
                                  void *scratch, fk_error *err)
{
    k_attn_args a = *args;
    a.n_seqs = n_seqs;
    a.decode_kernel = cb->decode_kernel;
    a.decode_slices = cb->decode_slices;
    const int n_splits = k_attention_decode_splits(n_seqs, a.n_kv_heads, max_context, cb->n_sms);
    const int split_len = (max_context + n_splits - 1) / n_splits;
    return launched(k_attention_decode(&a, split_len, n_splits, scratch, cb->stream), "attention_decode", err);
}

/* The prefill kernel on the tiles of sequences first .. n_seqs - 1, listed heaviest first in device memory at
 * dev_tiles. */
static fk_status prefill_attention(cuda_backend *cb, const k_attn_args *args, const attn_batch *ab, int first,
                                   int32_t *dev_tiles, fk_error *err)
{
    const int rows = cb->prefill_tile_rows;
    int n_tiles = 0;
    for (int s = first; s < ab->n_seqs; s++)
        n_tiles += (ab->query_start_host[s + 1] - ab->query_start_host[s] + rows - 1) / rows;
    if (n_tiles > cb->tiles_cap) {
        prefill_tile *tiles = realloc(cb->tiles, (size_t)n_tiles * sizeof *tiles);
        if (tiles)
            cb->tiles = tiles;
        int32_t *pairs = realloc(cb->tile_pairs, (size_t)n_tiles * 2 * sizeof *pairs);
        if (pairs)
            cb->tile_pairs = pairs;
        if (!tiles || !pairs)
            return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cuda attention: tile list of %d", n_tiles);
        cb->tiles_cap = n_tiles;
    }
    /* Heaviest tiles (furthest into their context) first, so the causal tail does not straggle. */
    int t = 0;
    for (int s = first; s < ab->n_seqs; s++) {
        const int nq = ab->query_start_host[s + 1] - ab->query_start_host[s];
        for (int q0 = 0; q0 < nq; q0 += rows)
            cb->tiles[t++] = (prefill_tile){.seq = s, .q0 = q0, .position = ab->context_len_host[s] - nq + q0};
    }
    qsort(cb->tiles, (size_t)n_tiles, sizeof *cb->tiles, heavier_first);
    for (t = 0; t < n_tiles; t++)
        cb->tile_pairs[2 * t] = cb->tiles[t].seq, cb->tile_pairs[2 * t + 1] = cb->tiles[t].q0;
    fk_status s = cuda_upload(&cb->base, dev_tiles, cb->tile_pairs, (size_t)n_tiles * 2 * sizeof(int32_t), err);
    if (s)
        return s;
    return launched(k_attention_prefill(args, dev_tiles, n_tiles, rows, cb->stream), "attention_prefill", err);
}

/* The kernels' view of one attention call. */
static k_attn_args attn_args(void *out, const void *qkv, const kv_pool *kv, const attn_batch *ab, int n_heads,
                             float scale)
{
    return (k_attn_args){.out = out,
                         .qkv = qkv,
                         .k_cache = kv->k,
                         .v_cache = kv->v,
                         .query_start = ab->query_start,
                         .context_len = ab->context_len,
                         .block_tables = ab->block_tables,
                         .n_seqs = ab->n_seqs,
                         .max_blocks = ab->max_blocks,
                         .n_heads = n_heads,
                         .n_kv_heads = kv->n_kv_heads,
                         .head_dim = kv->head_dim,
                         .block_size = kv->block_size,
                         .scale = scale};
}

/* The attention kernels take head dims 64 and 128. */
static fk_status check_head_dim(const kv_pool *kv, fk_error *err)
{
    if (kv->head_dim == 64 || kv->head_dim == 128)
        return FK_OK;
    return fk_error_set(err, FK_ERR_UNSUPPORTED, "cuda attention: head_dim %d (supported: 64, 128)", kv->head_dim);
}

/* The leading sequences of ab with one query each that the decode kernel takes: none where the query heads per KV
 * head exceed its one MMA tile. */
static int decode_seqs(const attn_batch *ab, int n_heads, int n_kv_heads)
{
    int n_dec = 0;
    while (n_heads / n_kv_heads <= 16 && n_dec < ab->n_seqs &&
           ab->query_start_host[n_dec + 1] - ab->query_start_host[n_dec] == 1)
        n_dec++;
    return n_dec;
}

/* Sequences with one query (decodes, and one-token chunks, which are the same computation) go to the decode kernel
 * when they lead the batch, as the scheduler puts them; the rest to the prefill kernel, whose tiles would otherwise
 * spend a whole tile on each of them. */
static fk_status cuda_attention(backend *b, void *out, const void *qkv, const kv_pool *kv, const attn_batch *ab,
                                int n_heads, float scale, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    const k_attn_args args = attn_args(out, qkv, kv, ab, n_heads, scale);
    fk_status s = check_head_dim(kv, err);
    if (s)
        return s;
    const int n_dec = decode_seqs(ab, n_heads, kv->n_kv_heads);
    if (n_dec == ab->n_seqs) /* planned from max_context alone, so that a graph replays the same launch */
        return decode_attention(cb, &args, n_dec, ab->max_context, ab->scratch, err);
    size_t tiles_at = 0;
    if (n_dec > 0) {
        int max_context = 0;
        for (int i = 0; i < n_dec; i++)
            max_context = ab->context_len_host[i] > max_context ? ab->context_len_host[i] : max_context;
        if ((s = decode_attention(cb, &args, n_dec, max_context, ab->scratch, err)))
            return s;
        tiles_at = (k_attention_decode_scratch_bytes(n_dec, n_heads, kv->n_kv_heads, kv->head_dim, cb->n_sms) + 15) /
                   16 * 16;
    }
    return prefill_attention(cb, &args, ab, n_dec, (int32_t *)((char *)ab->scratch + tiles_at), err);
}

/* Where every sequence has one query (a decode pass), the decode kernel does the RoPE and the KV store itself
 * (k_attn_args.rope_store: one kernel and its launch boundary fewer per layer); otherwise the two ops. */
static fk_status cuda_attention_rope(backend *b, void *out, void *qkv, const int32_t *positions, const float *inv_freq,
                                     const int32_t *slot_mapping, const kv_pool *kv, const attn_batch *ab, int n_heads,
                                     float scale, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    fk_status s = check_head_dim(kv, err);
    if (s)
        return s;
    if (decode_seqs(ab, n_heads, kv->n_kv_heads) != ab->n_seqs) {
        s = cuda_rope_store_kv(b, qkv, positions, inv_freq, slot_mapping, kv, ab->n_tokens, n_heads, err);
        return s ? s : cuda_attention(b, out, qkv, kv, ab, n_heads, scale, err);
    }
    k_attn_args args = attn_args(out, qkv, kv, ab, n_heads, scale);
    args.rope_store = 1, args.positions = positions, args.inv_freq = inv_freq, args.slots = slot_mapping;
    return decode_attention(cb, &args, ab->n_seqs, ab->max_context, ab->scratch, err);
}

static fk_status cuda_gather_rows(backend *b, void *out, const void *x, const int32_t *rows, int m, int d,
                                  fk_error *err)
{
    return launched(k_gather_rows(out, x, rows, m, d, cb_of(b)->stream), "gather_rows", err);
}

_Static_assert(sizeof(sample_row) == sizeof(k_sample_row) && offsetof(sample_row, u) == offsetof(k_sample_row, u) &&
                   offsetof(sample_row, top_k) == offsetof(k_sample_row, top_k),
               "sample_row and k_sample_row must share a layout");

static fk_status cuda_sample(backend *b, int32_t *tokens, const void *logits, const sample_row *rows, int n_rows,
                             int vocab, fk_error *err)
{
    return launched(k_sample(tokens, logits, (const k_sample_row *)rows, n_rows, vocab, cb_of(b)->stream), "sample",
                    err);
}

static fk_status cuda_capture_begin(backend *b, fk_error *err)
{
    CUDA_OK(cudaStreamBeginCapture(cb_of(b)->stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    return FK_OK;
}

static fk_status cuda_capture_end(backend *b, void **graph, fk_error *err)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    *graph = NULL;
    CUDA_OK(cudaStreamEndCapture(cb_of(b)->stream, &g), "cudaStreamEndCapture");
    cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess)
        return cuda_fail(err, "cudaGraphInstantiate", e);
    *graph = exec;
    return FK_OK;
}

static fk_status cuda_graph_launch(backend *b, void *graph, fk_error *err)
{
    CUDA_OK(cudaGraphLaunch((cudaGraphExec_t)graph, cb_of(b)->stream), "cudaGraphLaunch");
    return FK_OK;
}

static void cuda_graph_destroy(backend *b, void *graph)
{
    (void)b;
    cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

/* Events recorded as graph nodes too while a pass is captured (cudaEventRecordExternal, valid only then), so a
 * replayed decode pass is timed like an eager one. */
static fk_status cuda_prof_mark(backend *b, int i, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    if (i < 0 || i >= PROF_MARKS)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "cuda: profiling mark %d of %d", i, PROF_MARKS);
    if (!cb->marks) {
        if (!(cb->marks = calloc(PROF_MARKS, sizeof *cb->marks)))
            return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cuda: profiling events");
        for (int k = 0; k < PROF_MARKS; k++)
            CUDA_OK(cudaEventCreate(&cb->marks[k]), "cudaEventCreate");
    }
    enum cudaStreamCaptureStatus capturing;
    CUDA_OK(cudaStreamIsCapturing(cb->stream, &capturing), "cudaStreamIsCapturing");
    if (capturing == cudaStreamCaptureStatusActive)
        CUDA_OK(cudaEventRecordWithFlags(cb->marks[i], cb->stream, cudaEventRecordExternal), "cudaEventRecordWithFlags");
    else
        CUDA_OK(cudaEventRecord(cb->marks[i], cb->stream), "cudaEventRecord");
    return FK_OK;
}

static fk_status cuda_prof_read(backend *b, int n, float *ms, fk_error *err)
{
    cuda_backend *cb = cb_of(b);
    if (n > 1 && !cb->marks)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "cuda: no profiling marks");
    if (n > 0)
        CUDA_OK(cudaEventSynchronize(cb->marks[n - 1]), "cudaEventSynchronize");
    for (int i = 0; i + 1 < n; i++)
        CUDA_OK(cudaEventElapsedTime(&ms[i], cb->marks[i], cb->marks[i + 1]), "cudaEventElapsedTime");
    return FK_OK;
}

static fk_status cuda_inject_fault(backend *b, fk_error *err)
{
    return launched(k_inject_fault(cb_of(b)->stream), "inject_fault", err);
}

static const int cuda_head_dims[] = {64, 128, 0};

static void cuda_release_early(backend *b, int early)
{
    (void)b;
    k_pdl_release_early(early);
}

static const backend_ops cuda_ops = {
    .name = "cuda",
    .act_size = sizeof(uint16_t),
    .head_dims = cuda_head_dims,
    .destroy = cuda_destroy,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .upload = cuda_upload,
    .upload_ahead = cuda_upload_ahead,
    .pass_end = cuda_pass_end,
    .upload_after_pass = cuda_upload_after_pass,
    .download = cuda_download,
    .download_act = cuda_download_act,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .fetch_begin = cuda_fetch_begin,
    .fetch_wait = cuda_fetch_wait,
    .memory_info = cuda_memory_info,
    .upload_weight = cuda_upload_weight,
    .upload_linear = cuda_upload_linear,
    .embed = cuda_embed,
    .add_rms_norm = cuda_add_rms_norm,
    .embed_rms_norm = cuda_embed_rms_norm,
    .add_layer_norm = cuda_add_layer_norm,
    .linear = cuda_linear,
    .rope_store_kv = cuda_rope_store_kv,
    .attention_scratch_bytes = cuda_attention_scratch_bytes,
    .attention = cuda_attention,
    .attention_rope = cuda_attention_rope,
    .linear_silu_mul = cuda_linear_silu_mul,
    .linear_gelu = cuda_linear_gelu,
    .gather_rows = cuda_gather_rows,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .release_early = cuda_release_early,
    .prof_mark = cuda_prof_mark,
    .prof_read = cuda_prof_read,
    .inject_fault = cuda_inject_fault,
    .sample = cuda_sample,
};

/* FK_GELU_EPILOGUE=kernel|cublaslt picks how linear_gelu fuses its epilogue above the small-batch range; unset: the
 * faster on GPT-2's MLP shapes in kernels/bench/bench_linear_gelu (docs/BENCHMARKS.md). */
static fk_status gelu_epilogue_choice(bool *by_cublaslt, fk_error *err)
{
    const char *v = getenv("FK_GELU_EPILOGUE");
    *by_cublaslt = GELU_BY_CUBLASLT_DEFAULT;
    if (!v || !*v)
        return FK_OK;
    if (strcmp(v, "kernel") && strcmp(v, "cublaslt"))
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "FK_GELU_EPILOGUE=\"%s\" (expected kernel or cublaslt)", v);
    *by_cublaslt = strcmp(v, "cublaslt") == 0;
    return FK_OK;
}

/* The tuning switches read from the environment, for tests, benchmarks and the profile before/after (defaults are
 * the measured best, docs/BENCHMARKS.md): FK_SMALL_LINEAR_MAX_M (0..64, default SMALL_LINEAR_MAX_M_DEFAULT; 0 sends
 * every linear with aligned output rows to cuBLAS), FK_SMALL_LINEAR_UNALIGNED_MAX_M (the same for the others, default
 * UNALIGNED_MAX_M_DEFAULT, passes of 64 tokens above 64), FK_WGMMA_LINEAR_MAX_M (0..64, default
 * WGMMA_LINEAR_MAX_M_DEFAULT: on a Hopper, fp16 linears of more tokens than those, up to this many, run
 * k_linear_wgmma; 0 sends them to cuBLAS), FK_WGMMA_LINEAR_STAGES (0, 4, 6 or 8: its shared-memory stages; 0, the
 * default, K_LINEAR_WGMMA_STAGES), FK_WGMMA_LINEAR_SPLITS (1 sends it also the linears it would split along k; 0,
 * the default, keeps those on cuBLAS), FK_QUANT_SMALL_MAX_M (0..256, default
 * QUANT_SMALL_MAX_M_DEFAULT, on a Hopper QUANT_SMALL_MAX_M_HOPPER: quantized linears of up to this many tokens run
 * k_linear_quant, 16 tokens a pass; 0 sends every one to the next path), FK_QUANT_WGMMA_MAX_M (0..1048576,
 * default QUANT_WGMMA_MAX_M_DEFAULT: on a Hopper, quantized linears of more tokens, up to this many, run
 * k_linear_quant_wgmma, whatever the size of W; unset, those of a W under QUANT_WGMMA_LARGE_W elements up to
 * QUANT_WGMMA_SMALL_W_MAX_M; 0 sends them on),
 * FK_QUANT_WGMMA_STAGES (0, 4, 6 or 8: its shared-memory stages; 0, the default, K_LINEAR_QUANT_WGMMA_STAGES),
 * FK_QUANT_WGMMA_SPLITS (0..8: its blocks along k, for measurements; 0, the default, lets the kernel choose),
 * FK_QUANT_WGMMA_TOKENS (0, 64 or 128: its blocks' tokens; 0, the default, lets the kernel choose),
 * FK_QUANT_MMA_MAX_M (0..1048576, default QUANT_MMA_MAX_M_INT8 / _INT4: quantized
 * linears of more tokens, up to this many, run k_linear_quant_mma; above, and everywhere when both are 0, W is
 * dequantized for cuBLAS), FK_QUANT_MMA_ROWS (0, 64 or 128: that kernel's rows of W per block; 0, the default, lets
 * k_linear_quant_mma_rows choose), FK_QUANT_RESIDENT (0 keeps one-token quantized linears on k_linear_quant; 1, the
 * default, sends INT4 ones at one token to k_linear_quant_resident where it fits; 2 every one of up to 8 tokens),
 * FK_DEQUANT_SCRATCH_MB (1..65536, default DEQUANT_SCRATCH_MB_DEFAULT), FK_PADDED_SCRATCH_MB (1..65536, default
 * PADDED_SCRATCH_MB_DEFAULT: the padded-output scratch's cap), FK_PDL (0 turns programmatic dependent launch
 * off), FK_PREFILL_HOPPER (0 keeps prefill attention on the mma.sync kernel on a Hopper too) and FK_DECODE_FRAGMENTS
 * (0 keeps decode attention on the shared-memory kernel, 1 sends it every call the fragments kernel applies to;
 * unset, kernels.h's K_DECODE_AUTO), FK_DECODE_SLICES (the fragments kernel's warps a pair: 1, 2 or 4; 0 or unset,
 * the measured choice). FK_TRACE_FILE, in a build with -DFK_TRACE only, names the file of the kernel
 * timeline (kernels.h's k_trace_start). */
static fk_status tuning_from_env(cuda_backend *cb, fk_error *err)
{
    cb->small_linear_max_m = SMALL_LINEAR_MAX_M_DEFAULT;
    cb->unaligned_max_m = UNALIGNED_MAX_M_DEFAULT;
    cb->quant_small_max_m = -1; /* unset: by the device, below */
    cb->quant_resident = 1;
    int quant_mma_max_m = -1, wgmma_max_m = WGMMA_LINEAR_MAX_M_DEFAULT, wgmma_ok, resident_ok, quant_wgmma_ok;
    int quant_wgmma_max_m = -1;
    int pdl = 1, hopper = 1, fragments = -1, enabled;
    int scratch_mb = DEQUANT_SCRATCH_MB_DEFAULT, padded_mb = PADDED_SCRATCH_MB_DEFAULT;
    fk_status s;
    if ((s = gelu_epilogue_choice(&cb->gelu_by_cublaslt, err)) ||
        (s = fk_env_int("FK_SMALL_LINEAR_MAX_M", 0, K_LINEAR_SMALL_MAX_M, &cb->small_linear_max_m, err)) ||
        (s = fk_env_int("FK_SMALL_LINEAR_UNALIGNED_MAX_M", 0, 1 << 20, &cb->unaligned_max_m, err)) ||
        (s = fk_env_int("FK_WGMMA_LINEAR_MAX_M", 0, K_LINEAR_WGMMA_MAX_M, &wgmma_max_m, err)) ||
        (s = fk_env_int("FK_WGMMA_LINEAR_STAGES", 0, 8, &cb->wgmma_stages, err)) ||
        (s = fk_env_int("FK_WGMMA_LINEAR_SPLITS", 0, 1, &cb->wgmma_splits_ok, err)) ||
        (s = fk_env_int("FK_QUANT_SMALL_MAX_M", 0, 256, &cb->quant_small_max_m, err)) ||
        (s = fk_env_int("FK_QUANT_WGMMA_MAX_M", 0, 1 << 20, &quant_wgmma_max_m, err)) ||
        (s = fk_env_int("FK_QUANT_WGMMA_STAGES", 0, 8, &cb->quant_wgmma_stages, err)) ||
        (s = fk_env_int("FK_QUANT_WGMMA_SPLITS", 0, 8, &cb->quant_wgmma_splits, err)) ||
        (s = fk_env_int("FK_QUANT_WGMMA_TOKENS", 0, 128, &cb->quant_wgmma_tokens, err)) ||
        (s = fk_env_int("FK_QUANT_MMA_MAX_M", 0, 1 << 20, &quant_mma_max_m, err)) ||
        (s = fk_env_int("FK_QUANT_MMA_ROWS", 0, 128, &cb->quant_mma_rows, err)) ||
        (s = fk_env_int("FK_QUANT_RESIDENT", 0, 2, &cb->quant_resident, err)) ||
        (s = fk_env_int("FK_DEQUANT_SCRATCH_MB", 1, 65536, &scratch_mb, err)) ||
        (s = fk_env_int("FK_PADDED_SCRATCH_MB", 1, 65536, &padded_mb, err)) ||
        (s = fk_env_int("FK_PDL", 0, 1, &pdl, err)) || (s = fk_env_int("FK_PREFILL_HOPPER", 0, 1, &hopper, err)) ||
        (s = fk_env_int("FK_DECODE_FRAGMENTS", 0, 1, &fragments, err)) ||
        (s = fk_env_int("FK_DECODE_SLICES", 0, 4, &cb->decode_slices, err)))
        return s;
    if (cb->decode_slices == 3)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "FK_DECODE_SLICES=\"3\" (expected 0, 1, 2 or 4)");
    if (cb->wgmma_stages % 2 || cb->wgmma_stages == 2)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "FK_WGMMA_LINEAR_STAGES=\"%d\" (expected 0, 4, 6 or 8)",
                            cb->wgmma_stages);
    CUDA_OK(k_linear_wgmma_available(&wgmma_ok), "wgmma linear probe");
    cb->wgmma_linear_max_m = wgmma_ok ? wgmma_max_m : 0;
    if (cb->quant_wgmma_stages % 2 || cb->quant_wgmma_stages == 2)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "FK_QUANT_WGMMA_STAGES=\"%d\" (expected 0, 4, 6 or 8)",
                            cb->quant_wgmma_stages);
    if (cb->quant_wgmma_tokens && cb->quant_wgmma_tokens != 64 && cb->quant_wgmma_tokens != 128)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "FK_QUANT_WGMMA_TOKENS=\"%d\" (expected 0, 64 or 128)",
                            cb->quant_wgmma_tokens);
    CUDA_OK(k_linear_quant_wgmma_available(&quant_wgmma_ok), "wgmma quantized linear probe");
    cb->quant_wgmma_max_m[0] = quant_wgmma_max_m < 0 ? QUANT_WGMMA_SMALL_W_MAX_M : quant_wgmma_max_m;
    cb->quant_wgmma_max_m[1] = quant_wgmma_max_m < 0 ? QUANT_WGMMA_MAX_M_DEFAULT : quant_wgmma_max_m;
    if (!quant_wgmma_ok)
        cb->quant_wgmma_max_m[0] = cb->quant_wgmma_max_m[1] = 0;
    if (cb->quant_small_max_m < 0)
        cb->quant_small_max_m = quant_wgmma_ok ? QUANT_SMALL_MAX_M_HOPPER : QUANT_SMALL_MAX_M_DEFAULT;
    CUDA_OK(k_linear_quant_resident_available(&resident_ok), "resident quantized linear probe");
    if (!resident_ok)
        cb->quant_resident = 0;
    cb->decode_kernel = fragments < 0 ? K_DECODE_AUTO : fragments ? K_DECODE_FRAGMENTS : K_DECODE_STAGED;
    if (cb->quant_mma_rows && cb->quant_mma_rows != 64 && cb->quant_mma_rows != 128)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "FK_QUANT_MMA_ROWS=\"%d\" (expected 0, 64 or 128)",
                            cb->quant_mma_rows);
    cb->quant_mma_max_m[0] = quant_mma_max_m < 0 ? QUANT_MMA_MAX_M_INT8 : quant_mma_max_m;
    cb->quant_mma_max_m[1] = quant_mma_max_m < 0 ? QUANT_MMA_MAX_M_INT4 : quant_mma_max_m;
    cb->dequant_cap = (size_t)scratch_mb << 20;
    cb->padded_cap = (size_t)padded_mb << 20;
    CUDA_OK(k_pdl_configure(pdl, &enabled), "programmatic dependent launch");
    const char *trace = getenv("FK_TRACE_FILE");
    if (trace && *trace)
        CUDA_OK(k_trace_start(), "FK_TRACE_FILE (the kernel timeline needs a build with -Dcuda_args=-DFK_TRACE)");
    CUDA_OK(k_attention_prefill_tile_rows(hopper, &cb->prefill_tile_rows), "prefill kernel choice");
    return FK_OK;
}

fk_status backend_cuda_create(backend **out, fk_error *err)
{
    *out = NULL;
    int n_devices = 0;
    cudaError_t e = cudaGetDeviceCount(&n_devices);
    if (e != cudaSuccess || n_devices == 0)
        return fk_error_set(err, FK_ERR_DEVICE, "cuda: no usable GPU (%s)",
                            e != cudaSuccess ? cudaGetErrorString(e) : "no devices");
    cuda_backend *cb = calloc(1, sizeof *cb);
    if (!cb)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cuda: out of memory");
    cb->base.ops = &cuda_ops;
    fk_status s = FK_OK;
    if ((e = cudaGetDevice(&cb->device)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&cb->n_sms, cudaDevAttrMultiProcessorCount, cb->device)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&cb->fetched[0], cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&cb->fetched[1], cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&cb->copies, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&cb->ready, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&cb->uploaded, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&cb->indices, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&cb->pass_done, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&cb->indices_up, cudaEventDisableTiming)) != cudaSuccess)
        s = cuda_fail(err, "device setup", e);
    else if ((e = cudaMalloc(&cb->blas_workspace, BLAS_WORKSPACE_BYTES)) != cudaSuccess)
        s = cuda_fail(err, "cuBLAS workspace", e);
    else if (cublasCreate(&cb->blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(cb->blas, cb->stream) != CUBLAS_STATUS_SUCCESS ||
             cublasSetWorkspace(cb->blas, cb->blas_workspace, BLAS_WORKSPACE_BYTES) != CUBLAS_STATUS_SUCCESS)
        s = fk_error_set(err, FK_ERR_DEVICE, "cublas: cannot create a handle");
    else if ((e = cudaMalloc((void **)&cb->linear_partials, K_LINEAR_SMALL_PARTIAL_FLOATS * sizeof(float))) ||
             (e = cudaMalloc((void **)&cb->linear_counters, K_LINEAR_SMALL_COUNTERS * sizeof(unsigned))) ||
             (e = cudaMemset(cb->linear_counters, 0, K_LINEAR_SMALL_COUNTERS * sizeof(unsigned))))
        s = cuda_fail(err, "small-linear scratch", e);
    else if (!(s = gemm_lt_create(&cb->gemm_lt, cb->blas_workspace, BLAS_WORKSPACE_BYTES, err)))
        s = tuning_from_env(cb, err);
    if (s) {
        cuda_destroy(&cb->base);
        return s;
    }
    *out = &cb->base;
    return FK_OK;
}
