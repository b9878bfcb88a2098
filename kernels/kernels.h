/* kernels.h — every CUDA launcher, callable from C (extern "C"). fp16 arrays are passed as void pointers; shapes
 * are in the comments (n = tokens, d = hidden, H / Hkv = query / KV heads, D = head_dim, B = KV block size). Each
 * launcher enqueues on `stream` and returns the launch's cudaError_t; an unsupported size returns
 * cudaErrorInvalidValue (the backend names the value in its message). */
#ifndef FK_KERNELS_H
#define FK_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[n][d] = tok[id_i] (+ pos[positions[i]] when pos is not NULL): id_i = ids[i], or sampled[-1 - ids[i]] where
 * ids[i] < 0 (a token the previous pass sampled on the device). */
cudaError_t k_embed(void *out, const void *tok, const int32_t *ids, const int32_t *sampled, const void *pos,
                    const int32_t *positions, int n, int d, cudaStream_t stream);

/* residual[n][d] += x (if x); out = RMSNorm(residual) * w, statistics in fp32. */
cudaError_t k_add_rms_norm(void *out, void *residual, const void *x, const void *w, int n, int d, float eps,
                           cudaStream_t stream);

/* residual[n][d] = tok[id_i] (ids and sampled as in k_embed); out = RMSNorm(residual) * w: a pass's embedding and
 * its first norm in one kernel. */
cudaError_t k_embed_rms_norm(void *out, void *residual, const void *tok, const int32_t *ids, const int32_t *sampled,
                             const void *w, int n, int d, float eps, cudaStream_t stream);

/* residual[n][d] += x (if x); out = LayerNorm(residual) * w + bias. */
cudaError_t k_add_layer_norm(void *out, void *residual, const void *x, const void *w, const void *bias, int n, int d,
                             float eps, cudaStream_t stream);

/* y[n][out] += bias[out]. */
cudaError_t k_add_bias(void *y, const void *bias, int n, int out, cudaStream_t stream);

/* qkv[n][(H + 2 Hkv) D]: rotate q and k by RoPE at positions (rotate-half; skipped if inv_freq is NULL), then
 * store k and v at slots[i] = block * B + offset of the caches [num_blocks][Hkv][B][D] (-1: not stored). */
cudaError_t k_rope_store_kv(void *qkv, const int32_t *positions, const float *inv_freq, const int32_t *slots,
                            void *k_cache, void *v_cache, int n, int n_heads, int n_kv_heads, int head_dim,
                            int block_size, cudaStream_t stream);

/* One attention call over the paged cache (all pointers device memory). */
typedef struct k_attn_args {
    void *out;                  /* [n_tokens][H][D] */
    const void *qkv;            /* [n_tokens][(H + 2 Hkv) D], q first */
    const void *k_cache;        /* [num_blocks][Hkv][B][D] */
    const void *v_cache;
    const int32_t *query_start; /* [n_seqs + 1] */
    const int32_t *context_len; /* [n_seqs] */
    const int32_t *block_tables; /* [n_seqs][max_blocks] */
    int n_seqs, max_blocks, n_heads, n_kv_heads, head_dim, block_size;
    float scale;
    /* k_attention_decode only, when rope_store is set: the qkv rows are as the QKV linear wrote them, and the kernel
     * also does k_rope_store_kv's work for each sequence's query token (RoPE on its q and k with positions and
     * inv_freq, none where inv_freq is NULL; its k and v into the cache at slots[token]), leaving the rows as they
     * were. */
    int rope_store;
    const int32_t *positions; /* [n_tokens] */
    const float *inv_freq;    /* [head_dim / 2] or NULL */
    const int32_t *slots;     /* [n_tokens] */
    /* k_attention_decode only: which kernel takes the call (K_DECODE_AUTO: the measured choice), and for the
     * fragments kernel the warps a pair (1, 2 or 4; 0: the measured choice). */
    int decode_kernel, decode_slices;
} k_attn_args;

/* k_attn_args.decode_kernel: K_DECODE_STAGED keeps every call on the shared-memory kernel (attention_decode.cu);
 * K_DECODE_FRAGMENTS sends to the fragments kernel every call it applies to (k_attention_decode_fragments_applies),
 * on any architecture; K_DECODE_AUTO sends it the calls with many (sequence, KV head) pairs, on sm_80+ builds. */
enum { K_DECODE_AUTO = 0, K_DECODE_STAGED = 1, K_DECODE_FRAGMENTS = 2 };

/* Causal attention for prefill chunks (any number of queries per sequence), on tensor cores. tiles[n_tiles]:
 * (sequence, first query index within it) of each tile of tile_rows queries: 128 runs the Hopper (sm_90a wgmma)
 * kernel, where k_attention_prefill_tile_rows says it is available; 64 the mma.sync kernel (sm_75 and up). head_dim
 * 64 or 128. */
cudaError_t k_attention_prefill(const k_attn_args *a, const int32_t *tiles, int n_tiles, int tile_rows,
                                cudaStream_t stream);

/* The tile size of the fastest prefill kernel on the current device: 128 where the Hopper kernel can run (and
 * allow_hopper), else 64. */
cudaError_t k_attention_prefill_tile_rows(int allow_hopper, int *tile_rows);

/* Attention for batches where every sequence has exactly one query (decodes). Long contexts are split into
 * n_splits pieces of split_len keys computed by separate blocks, then merged (flash-decoding); n_splits comes from
 * k_attention_decode_splits (from the longest context, or a bound on it, so a recorded launch can be replayed).
 * scratch holds k_attention_decode_scratch_bytes(...) bytes, enough for any n_seqs up to max_seqs. head_dim 64 or
 * 128; H / Hkv <= 16. */
cudaError_t k_attention_decode(const k_attn_args *a, int split_len, int n_splits, void *scratch, cudaStream_t stream);
int k_attention_decode_splits(int n_seqs, int n_kv_heads, int max_context, int n_sms);
/* The decode kernel for many (sequence, KV head) pairs of short contexts (attention_decode_fragments.cu): `slices`
 * warps a pair (1, 2 or 4), no splits. It applies to head_dim 64, block_size % 16 == 0, H / Hkv <= 16 and one
 * split; k_attention_decode calls it as decode_kernel and decode_slices say. */
int k_attention_decode_fragments_applies(const k_attn_args *a, int n_splits);
cudaError_t k_attention_decode_fragments(const k_attn_args *a, int slices, cudaStream_t stream);
size_t k_attention_decode_scratch_bytes(int max_seqs, int n_heads, int n_kv_heads, int head_dim, int n_sms);

/* Small-batch linear (m <= 64 tokens), streaming W once: y[m][n] = epilogue(x[m][k] W[n][k]^T + bias[n]), bias may
 * be NULL. K_LINEAR_GELU applies gelu_tanh; K_LINEAR_SILU_MUL takes W = [gate (n rows) | up (n rows)] [2n][k] (and
 * bias [2n]) and gives y = silu(gate) * up. k % 8 == 0; x, w, y 16-byte aligned. splits > 1 splits k across blocks
 * (k_linear_small_splits chooses): it needs `partials` (K_LINEAR_SMALL_PARTIAL_FLOATS floats) and `counters`
 * (K_LINEAR_SMALL_COUNTERS, zeroed once; the kernel leaves them zero), used by one launch at a time. */
enum { K_LINEAR_PLAIN = 0, K_LINEAR_GELU = 1, K_LINEAR_SILU_MUL = 2 };
#define K_LINEAR_SMALL_MAX_M 64
#define K_LINEAR_SMALL_PARTIAL_FLOATS (1u << 20)
#define K_LINEAR_SMALL_COUNTERS 4096
cudaError_t k_linear_small(void *y, const void *x, const void *w, const void *bias, int m, int k, int n, int epilogue,
                           int splits, float *partials, unsigned *counters, cudaStream_t stream);
int k_linear_small_splits(int m, int k, int n, int epilogue, int n_sms);

/* The same linear on Hopper's TMA and wgmma (linear_wgmma.cu; m <= K_LINEAR_WGMMA_MAX_M): arguments and epilogues as
 * for k_linear_small; splits (1 .. 8) split k across the blocks of a cluster, which add their sums in shared memory
 * (k_linear_wgmma_splits chooses); k % 8 == 0, x and w 16-byte aligned, y any. stages: shared-memory stages of 64 k
 * (4, 6 or 8; 0: K_LINEAR_WGMMA_STAGES). Runs only once k_linear_wgmma_available has said so (compute capability
 * 9.0, sm_90a code built, a driver with tensor maps); cudaErrorNotSupported before that or where it said no. */
#define K_LINEAR_WGMMA_MAX_M 64
#define K_LINEAR_WGMMA_STAGES 6
cudaError_t k_linear_wgmma_available(int *available);
int k_linear_wgmma_splits(int m, int k, int n, int epilogue, int n_sms);
cudaError_t k_linear_wgmma(void *y, const void *x, const void *w, const void *bias, int m, int k, int n, int epilogue,
                           int splits, int stages, cudaStream_t stream);

/* The weight formats of the quantized linears (the values of include/flashkernel.h's fk_quantization). */
enum { K_QUANT_INT8 = 1, K_QUANT_INT4 = 2 };

/* k_linear_small on a quantized W (src/quant.h's layouts, rows = n, or 2n for K_LINEAR_SILU_MUL): INT8 data int8
 * [rows][k] with fp16 scales [rows], k % 16 == 0; INT4 data [rows][k / 2] packed nibbles with fp16 (scale, zero)
 * pairs [rows][k / 128], k % 128 == 0. Computes with the dequantized weights (q s, (q - z) s) and fp32 sums. x, y,
 * data 16-byte aligned; epilogues, bias, splits, partials and counters as for k_linear_small (the same buffers serve
 * both); m <= K_LINEAR_QUANT_MAX_M. */
#define K_LINEAR_QUANT_MAX_M 16
cudaError_t k_linear_quant(void *y, const void *x, const void *data, const void *scales, const void *bias, int format,
                           int m, int k, int n, int epilogue, int splits, float *partials, unsigned *counters,
                           cudaStream_t stream);
int k_linear_quant_splits(int format, int m, int k, int n, int epilogue, int n_sms);

/* The same linear at one token tile (m <= 8) with each block's slice of W (16 rows, all of k) copied into shared
 * memory before its PDL wait (linear_quant_resident.cu): formats, layouts and alignment as for k_linear_quant, INT8
 * k % 64 == 0; epilogues K_LINEAR_PLAIN and K_LINEAR_GELU; no split-K, so no partials. k_linear_quant_resident_fits
 * says whether a shape fits (at most one block of 16 rows an SM, within 200 KB of shared memory);
 * k_linear_quant_resident_available whether the device and the build run it (compute capability 9.0+, kernels
 * compiled for sm_90+, not a compute_75 PTX build). */
cudaError_t k_linear_quant_resident_available(int *available);
int k_linear_quant_resident_fits(int format, int m, int k, int n, int epilogue, int n_sms);
cudaError_t k_linear_quant_resident(void *y, const void *x, const void *data, const void *scales, const void *bias,
                                    int format, int m, int k, int n, int epilogue, cudaStream_t stream);

/* The same linear for more tokens (any m): a tiled tensor-core kernel that dequantizes W in its main loop; formats,
 * layouts, alignment and k as for k_linear_quant; epilogues K_LINEAR_PLAIN and K_LINEAR_GELU. rows (64 or 128) is
 * the block's tile of W (k_linear_quant_mma_rows chooses); splits > 1 splits k across blocks
 * (k_linear_quant_mma_splits chooses) with the partials and counters of k_linear_small. INT4 multiplies with
 * (q - z) s rounded to fp16 (what k_dequant gives cuBLAS), INT8 with q and the scale after the sum. */
cudaError_t k_linear_quant_mma(void *y, const void *x, const void *data, const void *scales, const void *bias,
                               int format, int m, int k, int n, int epilogue, int rows, int splits, float *partials,
                               unsigned *counters, cudaStream_t stream);
int k_linear_quant_mma_rows(int m, int n, int n_sms);
int k_linear_quant_mma_splits(int rows, int m, int k, int n, int n_sms);

/* The same linear on Hopper's TMA and wgmma (linear_quant_wgmma.cu; any m, blocks of 128 rows of W by tile_tokens
 * tokens, 64 or 128, k_linear_quant_wgmma_tokens chooses): formats, layouts, k, epilogues and the math (INT8 q then
 * the scale, INT4 (q - z) s in fp16) as for k_linear_quant_mma; x and data 16-byte aligned, scales 4-byte aligned,
 * y any. splits (1 .. 8) split k across the blocks of a cluster, which add their sums in shared memory
 * (k_linear_quant_wgmma_splits chooses); stages: shared-memory stages of 64 k (4, 6 or 8; 0:
 * K_LINEAR_QUANT_WGMMA_STAGES). Runs only once
 * k_linear_quant_wgmma_available has said so (compute capability 9.0, sm_90a code built, a driver with tensor maps);
 * cudaErrorNotSupported before that or where it said no. */
#define K_LINEAR_QUANT_WGMMA_STAGES 6
cudaError_t k_linear_quant_wgmma_available(int *available);
int k_linear_quant_wgmma_tokens(int m, int k, int n, int n_sms);
int k_linear_quant_wgmma_splits(int m, int k, int n, int tile_tokens, int n_sms);
cudaError_t k_linear_quant_wgmma(void *y, const void *x, const void *data, const void *scales, const void *bias,
                                 int format, int m, int k, int n, int epilogue, int splits, int stages,
                                 int tile_tokens, cudaStream_t stream);

/* out[n_rows][cols] (fp16) = rows row0 .. row0 + n_rows - 1 of a quantized weight (layouts as for k_linear_quant;
 * INT8 takes any cols), dequantized: q s or (q - z) s, each rounded to fp16. */
cudaError_t k_dequant(void *out, const void *data, const void *scales, int format, int row0, int n_rows, int cols,
                      cudaStream_t stream);

/* Programmatic dependent launch: enables it (when `enable` and the device and the compiled kernels support it:
 * sm_90+) for every later launch of our kernels; *enabled tells whether it is on. */
cudaError_t k_pdl_configure(int enable, int *enabled);
/* This thread's launches of k_linear_small, k_linear_quant, k_add_rms_norm and k_embed_rms_norm from now on release
 * the next kernel before their PDL wait (early != 0) or after it (0, the default). The next kernel may then be
 * resident while the kernel before this one still runs: only where it reads nothing before its own wait that is not
 * complete by then (weights, the step's indices, earlier passes' KV; common.cuh). */
void k_pdl_release_early(int early);

/* trace.cu, a diagnostic: in a build with -DFK_TRACE, block 0 of every kernel launched after k_trace_start stamps
 * the global timer around its PDL wait; k_trace_write writes the records to `path` ("start_ns waited_ns grid_x
 * grid_y grid_z block_x" per launch, in launch order; kernels/bench/trace_report.py reads them). In other builds
 * k_trace_start returns cudaErrorNotSupported and k_trace_write does nothing. */
cudaError_t k_trace_start(void);
cudaError_t k_trace_write(const char *path);

/* out[n][f] = silu(gate_up[n][0:f]) * gate_up[n][f:2f]. */
cudaError_t k_silu_mul(void *out, const void *gate_up, int n, int f, cudaStream_t stream);

/* y[n][out] = gelu_tanh(y + bias[out]) in place (bias may be NULL): the GEMM epilogue of GPT-2's first MLP
 * linear. */
cudaError_t k_bias_gelu(void *y, const void *bias, int n, int out, cudaStream_t stream);

/* out[m][d] = x[rows[i]]. */
cudaError_t k_gather_rows(void *out, const void *x, const int32_t *rows, int m, int d, cudaStream_t stream);

/* out[n] (float) = in[n] (half). */
cudaError_t k_half_to_float(float *out, const void *in, size_t n, cudaStream_t stream);

/* out[n] (half) = in[n] (float), round to nearest. */
cudaError_t k_float_to_half(void *out, const float *in, size_t n, cudaStream_t stream);

/* One row's sampling values (the layout of src/backend.h's sample_row): temperature 0 is the argmax. */
typedef struct k_sample_row {
    float temperature, top_p, min_p, u;
    int top_k;
} k_sample_row;

/* tokens[r] = the token sampler_pick (src/sampler.c) chooses for logits[r][vocab] with rows[r] (device arrays). */
cudaError_t k_sample(int32_t *tokens, const void *logits, const k_sample_row *rows, int n_rows, int vocab,
                     cudaStream_t stream);

/* Test hook: a kernel that makes an illegal memory access, leaving a sticky error (the next synchronization fails
 * and so does every later CUDA call). */
cudaError_t k_inject_fault(cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
