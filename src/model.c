/* model.c — the model-level public API: load a directory, describe it, logits of a prompt, and generation of
 * one sequence (each call gets its own KV cache sized to what it needs). */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "sampler.h"

/* Logit rows the model-level workspace holds: at most this many bytes of float32 logits. */
#define LOGITS_BUDGET_BYTES (64u << 20)

fk_model_params fk_model_params_default(void)
{
    return (fk_model_params){.device = FK_DEVICE_AUTO, .n_threads = 0, .prefill_chunk = 512, .kv_block_size = 16};
}

fk_generate_params fk_generate_params_default(void)
{
    return (fk_generate_params){.max_tokens = 16, .temperature = 0.0f, .seed = 0, .ignore_eos = false};
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
    return FK_OK;
}

static fk_status create_backend(const fk_model_params *p, backend **out, fk_error *err)
{
    if (p->device == FK_DEVICE_CUDA)
        return fk_error_set(err, FK_ERR_DEVICE, "the CUDA backend is not available in this build; use device cpu");
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

fk_status fk_model_load(const char *dir, const fk_model_params *params, fk_model **out, fk_error *err)
{
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
        (s = safetensors_open_dir(dir, &st, err)) || (s = create_backend(&p, &m->be, err)))
        goto fail;
    s = m->cfg.arch == ARCH_LLAMA ? model_llama_load(&m->cfg, st, m->be, &m->w, err)
                                  : model_gpt2_load(&m->cfg, st, m->be, &m->w, err);
    if (s)
        goto fail;
    safetensors_close(st);
    st = NULL;

    const model_config *c = &m->cfg;
    int max_tokens = p.prefill_chunk < c->max_context ? p.prefill_chunk : c->max_context;
    int max_logits = (int)(LOGITS_BUDGET_BYTES / ((size_t)c->vocab_size * sizeof(float)));
    max_logits = max_logits < 1 ? 1 : max_logits > max_tokens ? max_tokens : max_logits;
    int max_blocks = (c->max_context + p.kv_block_size - 1) / p.kv_block_size;
    if ((s = forward_ws_create(m, max_tokens, 1, max_blocks, max_logits, &m->ws, err)))
        goto fail;
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
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "requested %d + %d tokens exceeds context length %d", n,
                            extra, c->max_context);
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
    fk_status s = model_forward(m, m->ws, q->kv, &b, logits, err);
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

static bool is_eos(const model_config *c, int id)
{
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] == id)
            return true;
    return false;
}

fk_status fk_model_generate(fk_model *m, const int32_t *prompt, int n_prompt, const fk_generate_params *params,
                            int32_t *out_ids, int *n_out, fk_finish_reason *reason, fk_error *err)
{
    const fk_generate_params p = params ? *params : fk_generate_params_default();
    *n_out = 0;
    *reason = FK_FINISH_NONE;
    if (p.max_tokens < 1)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "max_tokens must be at least 1, got %d", p.max_tokens);
    if (!isfinite(p.temperature) || p.temperature < 0 || p.temperature > 2)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "temperature must be a finite number in [0, 2], got %g",
                            (double)p.temperature);
    fk_status s = check_prompt(m, prompt, n_prompt, p.max_tokens, err);
    if (s)
        return s;
    float *logits = malloc((size_t)m->cfg.vocab_size * sizeof(float));
    if (!logits)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    sequence q;
    if ((s = sequence_init(m, n_prompt + p.max_tokens, &q, err))) {
        free(logits);
        return s;
    }
    rng r;
    rng_seed(&r, p.seed);
    s = sequence_prefill(m, &q, prompt, n_prompt, false, logits, err);
    int n = 0;
    while (!s) {
        int32_t id = p.temperature > 0 ? sampler_temperature(logits, m->cfg.vocab_size, p.temperature, &r)
                                       : sampler_argmax(logits, m->cfg.vocab_size);
        out_ids[n++] = id;
        if (!p.ignore_eos && is_eos(&m->cfg, id)) {
            *reason = FK_FINISH_EOS;
            break;
        }
        if (n == p.max_tokens) {
            *reason = FK_FINISH_LENGTH;
            break;
        }
        s = sequence_extend(m, &q, &id, 1, false, true, logits, err);
    }
    *n_out = n;
    sequence_free(&q);
    free(logits);
    return s;
}
