/* backend.h — the ops table a compute backend implements (backend_cpu.c; backend_cuda.c later).
 *
 * Memory is the backend's: "device" pointers come from alloc() and are only touched through these ops; inv_freq
 * and every index array passed to an op are device memory too.
 * Activations and the KV cache hold `act` elements (float32 on the CPU, float16 on the GPU); weights are
 * in the backend's own format, made from float32 host data by upload_weight(), and the weights of linears by
 * upload_linear(), which may quantize them (src/quant.h). Index arrays are int32.
 * Ops are enqueued in order; download() waits for everything before it. Every op returns FK_OK or an
 * error with a message; the model stops at the first error.
 *
 * Shapes below: n = tokens in the batch, d = hidden size, H/Hkv = query/KV heads, D = head_dim,
 * B = KV block size, qkv rows are [q: H*D | k: Hkv*D | v: Hkv*D].
 */
#ifndef FK_BACKEND_H
#define FK_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "flashkernel.h"

typedef struct backend backend;

#define PROF_MARKS 2048 /* timeline points one profiled step may stamp */

/* What one row's token choice depends on once penalties are applied (see sampler_pick in sampler.h): temperature
 * 0 is the argmax; u is the request RNG's draw for this token. */
typedef struct sample_row {
    float temperature;
    float top_p;
    float min_p;
    float u;
    int top_k;
} sample_row;

/* One attention call's view of the batch. */
typedef struct attn_batch {
    int n_tokens;
    int n_seqs;
    const int32_t *query_start;  /* [n_seqs + 1] device: the tokens of seq s are query_start[s] .. [s+1]-1 */
    const int32_t *context_len;  /* [n_seqs] device: tokens of seq s in the cache after this step */
    const int32_t *block_tables; /* [n_seqs][max_blocks] device: the cache blocks of seq s, in order */
    int max_blocks;
    const int32_t *query_start_host; /* host copies of the two above, for launch geometry */
    const int32_t *context_len_host;
    int max_context; /* >= every context_len: the longest, or a fixed bound when the launch is replayed (graphs) */
    void *scratch;   /* attention_scratch_bytes() of device memory */
} attn_batch;

/* A linear's weight [rows][cols] (= [out][in]) as upload_linear stores it. FK_QUANT_NONE: data is the backend's
 * plain weight (as upload_weight makes it). INT8, INT4: data and scales hold src/quant.h's layouts in device
 * memory, and the backend computes with the dequantized weights. */
typedef struct qweight {
    fk_quantization format;
    int rows, cols;
    void *data;
    void *scales; /* NULL for FK_QUANT_NONE */
} qweight;

/* A KV cache pool of one layer: [num_blocks][Hkv][B][D] act elements for K and for V. */
typedef struct kv_pool {
    void *k;
    void *v;
    int num_blocks;
    int block_size;
    int n_kv_heads;
    int head_dim;
} kv_pool;

typedef struct backend_ops {
    const char *name;
    size_t act_size;       /* bytes per activation / KV element */
    const int *head_dims;  /* the head_dim values attention supports, 0-terminated; NULL: any */

    void (*destroy)(backend *b);

    /* Memory. alloc returns zeroed memory. */
    fk_status (*alloc)(backend *b, size_t bytes, void **out, fk_error *err);
    void (*release)(backend *b, void *p);
    fk_status (*upload)(backend *b, void *dst, const void *src, size_t bytes, fk_error *err);
    /* A copy of bytes from host_alloc memory src to device dst that runs beside the ops enqueued before it, so that
     * it is done by the time the ops after it, which wait for it, start. It starts once the ops enqueued before the
     * last fetch_begin (with bytes) are done and that fetch's copy is: dst may be what those ops read. */
    fk_status (*upload_ahead)(backend *b, void *dst, const void *src, size_t bytes, fk_error *err);
    /* The end of a pass: upload_after_pass's copies wait for the ops enqueued before it, and only for those. */
    fk_status (*pass_end)(backend *b, fk_error *err);
    /* A copy of bytes from host_alloc memory src to device dst that starts once the ops enqueued before the last
     * pass_end are done, beside any ops enqueued since (a sampling): dst may be what that pass read. The ops enqueued
     * after it wait for it. */
    fk_status (*upload_after_pass)(backend *b, void *dst, const void *src, size_t bytes, fk_error *err);
    /* Raw bytes to the host (waits for pending work). */
    fk_status (*download)(backend *b, void *dst, const void *src, size_t bytes, fk_error *err);
    /* n act elements to float32 on the host (waits for pending work). */
    fk_status (*download_act)(backend *b, float *dst, const void *src, size_t n, fk_error *err);

    /* Host memory the device copies to and from without the host waiting (page-locked on a GPU): the staging
     * buffers of an overlapped step. host_alloc returns zeroed memory. */
    fk_status (*host_alloc)(backend *b, size_t bytes, void **out, fk_error *err);
    void (*host_free)(backend *b, void *p);
    /* Enqueues a copy of bytes from device src to host_alloc memory dst and returns at once; fetch_wait(slot) waits
     * until it (and everything enqueued before it) is done. slot is 0 or 1, so that two fetches can be in flight.
     * The copy may run beside the ops enqueued after it: the caller must not enqueue an op that writes src before an
     * upload_ahead, which waits for it. */
    fk_status (*fetch_begin)(backend *b, void *dst, const void *src, size_t bytes, int slot, fk_error *err);
    fk_status (*fetch_wait)(backend *b, int slot, fk_error *err);

    /* Free and total device memory in bytes; both 0 for a backend whose memory is the host's. */
    fk_status (*memory_info)(backend *b, size_t *free_bytes, size_t *total_bytes, fk_error *err);

    /* A weight from float32 host data: rows x cols (a vector is rows = 1). */
    fk_status (*upload_weight)(backend *b, const float *host, int rows, int cols, void **out, fk_error *err);

    /* A linear's weight from float32 host data [rows][cols], stored in `format` (quantized here). Errors:
     * FK_ERR_UNSUPPORTED when the format cannot hold it (quant_check), allocation failures. */
    fk_status (*upload_linear)(backend *b, const float *host, int rows, int cols, fk_quantization format,
                               qweight *out, fk_error *err);

    /* out[n][d] = tok[id_i] (+ pos[positions[i]] when pos is not NULL), where id_i = ids[i], or for ids[i] < 0 (a
     * token the previous pass sampled, not yet known on the host: the overlapped step) sampled[-1 - ids[i]]. */
    fk_status (*embed)(backend *b, void *out, const void *tok, const int32_t *ids, const int32_t *sampled,
                       const void *pos, const int32_t *positions, int n, int d, fk_error *err);

    /* residual[n][d] += x (when x is not NULL); out = RMSNorm(residual) * w. */
    fk_status (*add_rms_norm)(backend *b, void *out, void *residual, const void *x, const void *w, int n, int d,
                              float eps, fk_error *err);

    /* residual[n][d] = tok[id_i] (ids and sampled as in embed); out = RMSNorm(residual) * w: a pass's embedding with
     * its first layer's norm (the CUDA backend runs them as one kernel). */
    fk_status (*embed_rms_norm)(backend *b, void *out, void *residual, const void *tok, const int32_t *ids,
                                const int32_t *sampled, const void *w, int n, int d, float eps, fk_error *err);

    /* residual[n][d] += x (when x is not NULL); out = LayerNorm(residual) * w + bias. */
    fk_status (*add_layer_norm)(backend *b, void *out, void *residual, const void *x, const void *w,
                                const void *bias, int n, int d, float eps, fk_error *err);

    /* y[n][out] = x[n][in] · W[out][in]ᵀ (+ bias[out] when not NULL). */
    fk_status (*linear)(backend *b, void *y, const void *x, const qweight *w, const void *bias, int n, int in,
                        int out, fk_error *err);

    /* Rotates q and k of qkv[n] in place by RoPE at positions (rotate-half layout; skipped when inv_freq is
     * NULL), then stores k and v at slot_mapping[i] = block * B + offset of the pool (-1: not stored). */
    fk_status (*rope_store_kv)(backend *b, void *qkv, const int32_t *positions, const float *inv_freq,
                               const int32_t *slot_mapping, const kv_pool *kv, int n, int n_heads, fk_error *err);

    /* Device scratch one attention call needs for batches of up to these sizes (0: none). */
    size_t (*attention_scratch_bytes)(const backend *b, int max_tokens, int max_seqs, int n_heads, int n_kv_heads,
                                      int head_dim);

    /* Causal attention of the q part of qkv[n] over the cache: out[n][H*D]. Query i of sequence s sits at
     * position context_len[s] - (query_start[s+1] - i) and sees cache positions 0..that position. */
    fk_status (*attention)(backend *b, void *out, const void *qkv, const kv_pool *kv, const attn_batch *batch,
                           int n_heads, float scale, fk_error *err);

    /* rope_store_kv on the batch's n_tokens rows, then attention, as one op that the backend may fuse (the CUDA
     * backend does where every sequence has one query): out and the cache as those two give them; qkv's q and k may
     * be left unrotated. */
    fk_status (*attention_rope)(backend *b, void *out, void *qkv, const int32_t *positions, const float *inv_freq,
                                const int32_t *slot_mapping, const kv_pool *kv, const attn_batch *batch, int n_heads,
                                float scale, fk_error *err);

    /* out[n][f] = silu(x W_gate^T + b_gate) * (x W_up^T + b_up) with W = [gate | up] [2f][in] and bias [2f] (or
     * NULL): Llama's gate/up projection with SwiGLU's activation fused in. scratch holds n * 2f act elements the
     * backend may use for the projection before the activation. */
    fk_status (*linear_silu_mul)(backend *b, void *out, void *scratch, const void *x, const qweight *w,
                                 const void *bias, int n, int in, int f, fk_error *err);

    /* y[n][out] = gelu_tanh(x[n][in] · W[out][in]ᵀ + bias[out]) (bias may be NULL): GPT-2's first MLP linear with
     * its activation fused into the GEMM's epilogue. */
    fk_status (*linear_gelu)(backend *b, void *y, const void *x, const qweight *w, const void *bias, int n, int in,
                             int out, fk_error *err);

    /* out[m][d] = x[rows[i]]. */
    fk_status (*gather_rows)(backend *b, void *out, const void *x, const int32_t *rows, int m, int d, fk_error *err);

    /* Graphs (NULL on backends without them): the ops between capture_begin and capture_end are recorded instead
     * of run; graph_launch replays them on whatever the device buffers hold then. Recorded ops may not upload or
     * download. */
    fk_status (*capture_begin)(backend *b, fk_error *err);
    fk_status (*capture_end)(backend *b, void **graph, fk_error *err);
    fk_status (*graph_launch)(backend *b, void *graph, fk_error *err);
    void (*graph_destroy)(backend *b, void *graph);

    /* Programmatic dependent launch (NULL where there is none): with early != 0 the ops this thread enqueues from now
     * on (those whose kernels take it: linear, add_rms_norm) let the next op's kernel start before their own input
     * is ready, so that it loads its first weights meanwhile. Only where the next op reads nothing before its input
     * but weights, the pass's indices and earlier passes' KV (model_forward.c's early_ops). */
    void (*release_early)(backend *b, int early);

    /* Profiling: prof_mark stamps point i (< PROF_MARKS) of the device's timeline, in order with the ops (also when
     * recorded into a graph); prof_read waits for the device and gives ms[i], the time from point i to point i + 1,
     * for i < n - 1. */
    fk_status (*prof_mark)(backend *b, int i, fk_error *err);
    fk_status (*prof_read)(backend *b, int n, float *ms, fk_error *err);

    /* Test hook: make the device fail as a real fault would (the GPU: a sticky illegal-address error that the next
     * synchronization reports; the CPU: FK_ERR_DEVICE now). */
    fk_status (*inject_fault)(backend *b, fk_error *err);

    /* tokens[r] = the token sampler_pick chooses for logits[r][vocab] with rows[r]: sampling where the logits
     * are, so only token ids need to leave the device. */
    fk_status (*sample)(backend *b, int32_t *tokens, const void *logits, const sample_row *rows, int n_rows,
                        int vocab, fk_error *err);
} backend_ops;

struct backend {
    const backend_ops *ops;
    size_t weight_bytes; /* held by what upload_weight and upload_linear made so far */
};

/* The CPU backend (fp32). n_threads 0 = one per core. */
fk_status backend_cpu_create(int n_threads, backend **out, fk_error *err);

/* The CUDA backend (fp16 on the current device). Errors: FK_ERR_DEVICE (no device, driver or cuBLAS failure). */
fk_status backend_cuda_create(backend **out, fk_error *err);

#endif
