/* model.c — the model-level public API: load a directory, describe it, logits of a prompt (each call gets its own
 * KV cache sized to the prompt, blocks in order, and runs the prompt in chunks of prefill_chunk tokens). */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "error.h"
#include "quant.h"

/* Logit rows the model-level workspace holds: at most this many bytes of float32 logits. */
#define LOGITS_BUDGET_BYTES (64u << 20)

fk_model_params fk_model_params_default(void)
{
    return (fk_model_params){.device = FK_DEVICE_AUTO, .n_threads = 0, .prefill_chunk = 512, .kv_block_size = 16,
                             .quantization = FK_QUANT_NONE};
}

const char *fk_quantization_name(fk_quantization q)
{
    switch (q) {
    case FK_QUANT_NONE: return "none";
    case FK_QUANT_INT8: return "int8";
    case FK_QUANT_INT4: return "int4";
    }
    return "?";
}

static fk_status check_params(const fk_model_params *p, fk_error *err)
{
    if (p->device != FK_DEVICE_AUTO && p->device != FK_DEVICE_CPU && p->device != FK_DEVICE_CUDA)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "unknown device %d", (int)p->device);
    if (p->n_threads < 0 || p->n_threads > 4096)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "n_threads must be in [0, 4096], got %d", p->n_threads);
    if (p->prefill_chunk < 1 || p->prefill_chunk > 65536)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "prefill_chunk must be in [1, 65536], got %d",
                            p->prefill_chunk);
    if (p->kv_block_size < 1 || p->kv_block_size > 1024)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "kv_block_size must be in [1, 1024], got %d",
                            p->kv_block_size);
    if (p->quantization != FK_QUANT_NONE && p->quantization != FK_QUANT_INT8 && p->quantization != FK_QUANT_INT4)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "unknown quantization %d", (int)p->quantization);
    return FK_OK;
}

/* cuda: the GPU or an error; auto: the GPU when this build has CUDA and a device answers, else the CPU. */
static fk_status create_backend(const fk_model_params *p, backend **out, fk_error *err)
{
#ifdef FK_HAVE_CUDA_BACKEND
    if (p->device != FK_DEVICE_CPU) {
        fk_status s = backend_cuda_create(out, err);
        if (s == FK_OK || p->device == FK_DEVICE_CUDA)
            return s;
    }
#else
    if (p->device == FK_DEVICE_CUDA)
        return fk_error_set(err, FK_ERR_DEVICE, "this build has no CUDA backend (built without nvcc); use device cpu");
#endif
    return backend_cpu_create(p->n_threads, out, err);
}

/* DIR/tokenizer.json when it exists; *tok stays NULL when it does not. */
static fk_status load_tokenizer(const char *dir, fk_tokenizer **tok, fk_error *err)
{
    size_t n = strlen(dir) + sizeof "/tokenizer.json";
    char *path = malloc(n);
    if (!path)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(path, n, "%s/tokenizer.json", dir);
    struct stat sb;
    fk_status s = stat(path, &sb) == 0 ? fk_tokenizer_load(path, tok, err) : FK_OK;
    free(path);
    return s;
}

static bool ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The format a checkpoint tensor will be stored in: the head's, none for the embeddings and every other tensor
 * that is not 2-D, the blocks' for the rest (their linears). */
static fk_quantization stored_format(const st_tensor *t, const fk_model_params *p)
{
    if (t->ndim != 2 || ends_with(t->name, "embed_tokens.weight") || ends_with(t->name, "wte.weight") ||
        ends_with(t->name, "wpe.weight"))
        return FK_QUANT_NONE;
    if (ends_with(t->name, "lm_head.weight"))
        return p->quantize_lm_head ? p->quantization : FK_QUANT_NONE;
    return p->quantization;
}

/* The bytes a [rows][cols] tensor takes on the backend in format f. */
static double stored_bytes(const backend *be, fk_quantization f, int64_t rows, int64_t cols)
{
    if (f == FK_QUANT_NONE)
        return (double)rows * cols * be->ops->act_size;
    return (double)quant_data_bytes(f, (int)rows, (int)cols) + (double)quant_scale_bytes(f, (int)rows, (int)cols);
}

/* On a GPU, the weights (in the backend's format, quantized as p asks) must fit in free memory: fail before
 * uploading any. GPT-2's Conv1D weights are counted as stored, [in][out], which changes only INT8's count of
 * scales; a tied head that is quantized adds a quantized copy of the embedding. */
static fk_status check_weights_fit(backend *be, const safetensors *st, const model_config *c,
                                   const fk_model_params *p, fk_error *err)
{
    size_t free_bytes, total;
    fk_status s = be->ops->memory_info(be, &free_bytes, &total, err);
    if (s || !total)
        return s;
    double need = c->tie_embeddings && p->quantize_lm_head && p->quantization != FK_QUANT_NONE
                      ? stored_bytes(be, p->quantization, c->vocab_size, c->hidden_size)
                      : 0;
    for (int i = 0; i < safetensors_count(st); i++) {
        const st_tensor *t = safetensors_at(st, i);
        need += t->ndim == 2 ? stored_bytes(be, stored_format(t, p), t->shape[0], t->shape[1])
                             : (double)t->numel * be->ops->act_size;
    }
    const double gib = 1073741824.0;
    if (need > (double)free_bytes)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY,
                            "the weights need %.2f GiB of GPU memory but %.2f GiB of %.2f GiB are free: use a GPU with "
                            "more memory, or --device cpu",
                            need / gib, free_bytes / gib, total / gib);
    return FK_OK;
}

static fk_status check_head_dim(const backend *be, int head_dim, const char *dir, fk_error *err)
{
    const int *ok = be->ops->head_dims;
    if (!ok)
        return FK_OK;
    for (; *ok; ok++)
        if (*ok == head_dim)
            return FK_OK;
    return fk_error_set(err, FK_ERR_UNSUPPORTED, "%s: head_dim %d is not supported by the %s backend (supported: %s)",
                        dir, head_dim, be->ops->name, "64, 128");
}

void fk_model_free(fk_model *m)
{
    if (!m)
        return;
    if (m->be) {
        forward_ws_free(m, m->ws);
        model_weights_free(&m->w, m->be);
        m->be->ops->destroy(m->be);
    }
    fk_tokenizer_free(m->tok);
    free(m);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

fk_status fk_model_load(const char *dir, const fk_model_params *params, fk_model **out, fk_error *err)
{
    const double t0 = now_s();
    *out = NULL;
    fk_model_params p = params ? *params : fk_model_params_default();
    fk_status s = check_params(&p, err);
    if (s)
        return s;
    if (!dir || !dir[0])
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "no model directory given");
    fk_model *m = calloc(1, sizeof *m);
    if (!m)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    m->params = p;
    safetensors *st = NULL;
    if ((s = model_config_load(dir, &m->cfg, err)) || (s = load_tokenizer(dir, &m->tok, err)) ||
        (s = safetensors_open_dir(dir, &st, err)) || (s = create_backend(&p, &m->be, err)) ||
        (s = check_weights_fit(m->be, st, &m->cfg, &p, err)))
        goto fail;
    if ((s = check_head_dim(m->be, m->cfg.head_dim, dir, err)))
        goto fail;
    s = m->cfg.arch == ARCH_GPT2 ? model_gpt2_load(&m->cfg, st, m->be, &p, &m->w, err)
                                 : model_llama_load(&m->cfg, st, m->be, &p, &m->w, err);
    if (s)
        goto fail;
    safetensors_close(st);
    st = NULL;

    const model_config *c = &m->cfg;
    int max_tokens = p.prefill_chunk < c->max_context ? p.prefill_chunk : c->max_context;
    int max_logits = (int)(LOGITS_BUDGET_BYTES / ((size_t)c->vocab_size * sizeof(float)));
    max_logits = max_logits < 1 ? 1 : max_logits > max_tokens ? max_tokens : max_logits;
    int max_blocks = (c->max_context + p.kv_block_size - 1) / p.kv_block_size;
    if ((s = forward_ws_create(m, max_tokens, 1, max_blocks, max_logits, false, false, false, &m->ws, err)))
        goto fail;
    m->load_s = now_s() - t0;
    *out = m;
    return FK_OK;
fail:
    safetensors_close(st);
    fk_model_free(m);
    return s;
}

fk_model_info fk_model_get_info(const fk_model *m)
{
    const model_config *c = &m->cfg;
    fk_model_info info = {
        .architecture = model_arch_name(c->arch),
        .device = m->be->ops->name,
        .vocab_size = c->vocab_size,
        .n_layers = c->n_layers,
        .hidden_size = c->hidden_size,
        .n_heads = c->n_heads,
        .n_kv_heads = c->n_kv_heads,
        .head_dim = c->head_dim,
        .max_context = c->max_context,
        .bos_id = c->bos_id,
        .n_eos = c->n_eos,
        .quantization = m->params.quantization,
        .quantize_lm_head = m->params.quantize_lm_head,
        .weight_bytes = m->be->weight_bytes,
        .kv_bytes_per_token = kv_cache_block_bytes(m->be, c->n_layers, 1, c->n_kv_heads, c->head_dim),
        .load_s = m->load_s,
    };
    for (int i = 0; i < c->n_eos; i++)
        info.eos_ids[i] = c->eos_ids[i];
    return info;
}

const fk_tokenizer *fk_model_tokenizer(const fk_model *m)
{
    return m->tok;
}

static fk_status check_prompt(const fk_model *m, const int32_t *ids, int n, int extra, fk_error *err)
{
    const model_config *c = &m->cfg;
    if (!ids || n < 1)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "prompt cannot be empty");
    if ((int64_t)n + extra > c->max_context)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "requested %d + %d tokens exceeds context length %d%s", n,
                            extra, c->max_context,
                            c->max_context == c->sliding_window ? " (the model's sliding_window: attention has no "
                                                                  "window mask)"
                                                                : "");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab_size)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "token id %d at position %d is out of vocabulary (%d)",
                                ids[i], i, c->vocab_size);
    return FK_OK;
}

/* One sequence with its own KV cache; blocks are numbered in order, so slot = position. */
typedef struct sequence {
    kv_cache *kv;
    int32_t *block_table; /* [max_blocks] = 0, 1, 2, ... */
    int32_t *scratch;     /* [3 * max_tokens]: positions, slots, logit rows */
    int max_blocks;
    int n_cached; /* tokens in the cache */
} sequence;

static void sequence_free(sequence *q)
{
    kv_cache_free(q->kv);
    free(q->block_table);
    free(q->scratch);
}

static fk_status sequence_init(fk_model *m, int capacity, sequence *q, fk_error *err)
{
    const int B = m->params.kv_block_size;
    *q = (sequence){.max_blocks = (capacity + B - 1) / B};
    q->block_table = malloc((size_t)q->max_blocks * sizeof(int32_t));
    q->scratch = malloc(3 * (size_t)m->ws->max_tokens * sizeof(int32_t));
    if (!q->block_table || !q->scratch) {
        sequence_free(q);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < q->max_blocks; i++)
        q->block_table[i] = i;
    const model_config *c = &m->cfg;
    fk_status s = kv_cache_create(m->be, c->n_layers, q->max_blocks, B, c->n_kv_heads, c->head_dim, &q->kv, err);
    if (s)
        sequence_free(q);
    return s;
}

/* Appends ids[n] to the sequence. Logits: every position (all) or only the last (n_logits rows of 0 or 1). */
static fk_status sequence_extend(fk_model *m, sequence *q, const int32_t *ids, int n, bool all, bool last,
                                 float *logits, fk_error *err)
{
    int32_t *positions = q->scratch, *rows = q->scratch + 2 * m->ws->max_tokens;
    for (int i = 0; i < n; i++) {
        positions[i] = q->n_cached + i;
        rows[i] = i;
    }
    const int32_t query_start[2] = {0, n}, context_len[1] = {q->n_cached + n};
    const int32_t last_row = n - 1;
    const batch b = {
        .n_tokens = n,
        .n_seqs = 1,
        .max_blocks = (q->n_cached + n + m->params.kv_block_size - 1) / m->params.kv_block_size,
        .n_logits = all ? n : last ? 1 : 0,
        .input_ids = ids,
        .positions = positions,
        .slot_mapping = positions, /* identity block table: slot = position */
        .query_start = query_start,
        .context_len = context_len,
        .block_tables = q->block_table,
        .logit_rows = all ? rows : &last_row,
    };
    fk_status s = model_forward(m, m->ws, q->kv, &b, err);
    if (!s && b.n_logits)
        s = model_fetch_logits(m, m->ws, b.n_logits, logits, err);
    if (!s)
        q->n_cached += n;
    return s;
}

/* Runs a prompt through the sequence in chunks the workspace fits. */
static fk_status sequence_prefill(fk_model *m, sequence *q, const int32_t *ids, int n, bool all_positions,
                                  float *logits, fk_error *err)
{
    const forward_ws *ws = m->ws;
    const int chunk = all_positions && ws->max_logits < ws->max_tokens ? ws->max_logits : ws->max_tokens;
    const size_t vocab = (size_t)m->cfg.vocab_size;
    for (int start = 0; start < n; start += chunk) {
        int len = n - start < chunk ? n - start : chunk;
        bool last = start + len == n;
        float *out = all_positions ? logits + (size_t)start * vocab : logits;
        fk_status s = sequence_extend(m, q, ids + start, len, all_positions, last, out, err);
        if (s)
            return s;
    }
    return FK_OK;
}

fk_status fk_model_logits(fk_model *m, const int32_t *ids, int n_ids, bool all_positions, float *logits,
                          fk_error *err)
{
    fk_status s = check_prompt(m, ids, n_ids, 0, err);
    if (s)
        return s;
    sequence q;
    if ((s = sequence_init(m, n_ids, &q, err)))
        return s;
    s = sequence_prefill(m, &q, ids, n_ids, all_positions, logits, err);
    sequence_free(&q);
    return s;
}
