/* model_forward.c — one forward pass: embed → N × (norm, qkv, rope + kv store, attention, o, norm, mlp) → norm →
 * logits, as calls into the backend ops table. The Llama block (Llama, Qwen2, Mistral) and GPT-2 share it: they
 * differ only in the norm (RMSNorm / LayerNorm), position encoding (RoPE / learned) and MLP (SiLU-gated / GeLU). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "error.h"
#include "model.h"

/* The sequence counts decode passes are padded to, ascending, the last `cap`: 1, 2, 4, 8, then steps of 8 to 256,
 * of 32 to 1,024 and of 128 beyond. A server's batch changes by a few sequences at a time; with a graph per count
 * it would record one (~15 ms for bench-1b on an H100) at nearly every count it meets. The padding costs little:
 * the linears read their weights once either way. Writes them to out unless NULL; returns how many. */
static int decode_buckets(int cap, int *out)
{
    for (int n = 0, s = 1;; n++) {
        const int v = s < cap ? s : cap;
        if (out)
            out[n] = v;
        if (v == cap)
            return n + 1;
        s = s < 8 ? 2 * s : s < 256 ? s + 8 : s < 1024 ? s + 32 : s + 128;
    }
}

/* The block-table widths decode passes are padded to: powers of two, then max_blocks (so that a graph serves
 * while contexts grow); as decode_buckets. */
static int decode_widths(int max_blocks, int *out)
{
    for (int n = 0, w = 1;; n++, w *= 2) {
        const int v = w < max_blocks ? w : max_blocks;
        if (out)
            out[n] = v;
        if (v == max_blocks)
            return n + 1;
    }
}

/* The index of the first of v[n] (ascending) that is >= x; x <= v[n - 1]. */
static int first_at_least(const int *v, int n, int x)
{
    int i = 0;
    while (i < n - 1 && v[i] < x)
        i++;
    return i;
}

/* ws's decode-graph tables (buckets, widths, the graph slots) and padding arrays; false when out of memory. */
static bool decode_graph_tables(forward_ws *ws)
{
    int cap = ws->max_seqs < ws->max_tokens ? ws->max_seqs : ws->max_tokens;
    cap = cap < ws->max_logits ? cap : ws->max_logits;
    ws->n_buckets = decode_buckets(cap, NULL);
    ws->n_widths = decode_widths(ws->max_blocks, NULL);
    ws->bucket_seqs = malloc((size_t)ws->n_buckets * sizeof *ws->bucket_seqs);
    ws->widths = malloc((size_t)ws->n_widths * sizeof *ws->widths);
    ws->graph = calloc((size_t)ws->n_buckets * ws->n_widths, sizeof *ws->graph);
    ws->pad = malloc((6 * ((size_t)ws->max_seqs + 1) + (size_t)ws->max_seqs * ws->max_blocks) * sizeof *ws->pad);
    if (!ws->bucket_seqs || !ws->widths || !ws->graph || !ws->pad)
        return false;
    decode_buckets(cap, ws->bucket_seqs);
    decode_widths(ws->max_blocks, ws->widths);
    return true;
}

/* Programmatic dependent launch across a layer (backend release_early), on passes of up to EARLY_MAX_TOKENS tokens
 * (the small linears' range): these ops' kernels let the next op's kernel become resident before their own input is
 * ready, so that its blocks wait with their first weights (or keys) loaded when that input arrives. The next op may
 * read before its wait only weights, the step's indices and earlier passes' KV (q|k|v, the MLP norm and gate|up read
 * weights, decode attention earlier passes' keys): all that was complete when the nearest kernel ahead of it that
 * released after its wait (the previous layer's down; attention) passed that wait. Early: the attention norm, q|k|v,
 * the MLP norm, and o for quantized weights (at fp16 o's early release made gate|up's loads slow attention and
 * gate|up itself: -3 %). GPT-2's add_layer_norm always releases after its wait. bench-1b batch 1 on an H100, against
 * none: fp16 +5.2 %, INT8 +5.7 %, INT4 +8.8 % (BENCHMARKS.md, eighteenth session). FK_PDL_EARLY (a mask of the bits
 * below) replaces the choice, for A/B runs. */
enum { EARLY_O = 1, EARLY_NORM2 = 2, EARLY_QKV = 4, EARLY_NORM1 = 8, EARLY_MAX_TOKENS = 16 };

/* The ops of m that release early (FK_PDL_EARLY's, or the measured choice; none without release_early). */
static fk_status early_ops_of(const fk_model *m, int *mask, fk_error *err)
{
    const int fp16 = EARLY_NORM1 | EARLY_QKV | EARLY_NORM2;
    *mask = !m->be->ops->release_early ? 0 : m->w.layers[0].o_w.format == FK_QUANT_NONE ? fp16 : fp16 | EARLY_O;
    int x = -1;
    const fk_status s = fk_env_int("FK_PDL_EARLY", 0, 15, &x, err);
    if (!s && x >= 0)
        *mask = m->be->ops->release_early ? x : 0;
    return s;
}

/* Sets the backend's early release for the ops that follow, where `op` is one of ws->early_ops on n tokens. */
static void release_early(fk_model *m, const forward_ws *ws, int n, int op, bool on)
{
    if (n <= EARLY_MAX_TOKENS && (ws->early_ops & op))
        m->be->ops->release_early(m->be, on);
}

fk_status forward_ws_create(const fk_model *m, int max_tokens, int max_seqs, int max_blocks, int max_logits,
                            bool graphs, bool mixed_graphs, bool profile, forward_ws **out, fk_error *err)
{
    const model_config *c = &m->cfg;
    backend *be = m->be;
    const size_t act = be->ops->act_size, T = (size_t)max_tokens;
    const size_t qkv_dim = (size_t)(c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    /* ids, positions, slots, query_start, context_len, block_tables, logit_rows */
    const size_t index_cap = 3 * T + 2 * (size_t)max_seqs + 1 + (size_t)max_seqs * max_blocks + (size_t)max_logits;
    forward_ws *ws = calloc(1, sizeof *ws);
    if (!ws)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    *ws = (forward_ws){.max_tokens = max_tokens, .max_seqs = max_seqs, .max_blocks = max_blocks,
                       .max_logits = max_logits, .index_cap = index_cap, .graphs = graphs && be->ops->graph_launch,
                       .profile = profile};
    fk_status es = early_ops_of(m, &ws->early_ops, err);
    if (es) {
        free(ws);
        return es;
    }
    if (ws->graphs && mixed_graphs && !profile &&
        !(ws->pieces = calloc((size_t)PIECE_BUCKETS * (c->n_layers + 1), sizeof *ws->pieces))) {
        free(ws);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (ws->graphs && !decode_graph_tables(ws)) {
        forward_ws_free(m, ws);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < 2; i++) {
        struct {
            void **p;
            size_t bytes;
        } host[] = {
            {(void **)&ws->index_host[i], index_cap * sizeof(int32_t)},
            {(void **)&ws->rows_host[i], (size_t)max_logits * sizeof(sample_row)},
            {(void **)&ws->tokens_host[i], (size_t)max_logits * sizeof(int32_t)},
        };
        for (size_t j = 0; j < sizeof host / sizeof host[0]; j++) {
            fk_status s = be->ops->host_alloc(be, host[j].bytes, host[j].p, err);
            if (s) {
                forward_ws_free(m, ws);
                return fk_error_prefix(err, s, "forward staging for %d tokens: ", max_tokens);
            }
        }
    }
    struct {
        void **p;
        size_t bytes;
    } bufs[] = {
        {&ws->residual, T * c->hidden_size * act},
        {&ws->normed, T * c->hidden_size * act},
        {&ws->qkv, T * qkv_dim * act},
        {&ws->attn, T * c->n_heads * c->head_dim * act},
        {&ws->proj, T * c->hidden_size * act},
        {&ws->mlp_in, T * 2 * c->intermediate_size * act},
        {&ws->mlp_act, T * c->intermediate_size * act},
        {&ws->last_normed, (size_t)max_logits * c->hidden_size * act},
        {&ws->logits, (size_t)max_logits * c->vocab_size * act},
        {(void **)&ws->index_dev, index_cap * sizeof(int32_t)},
        {(void **)&ws->tokens, (size_t)max_logits * sizeof(int32_t)},
        {(void **)&ws->sample_rows, (size_t)max_logits * sizeof(sample_row)},
        {&ws->attn_scratch, be->ops->attention_scratch_bytes(be, max_tokens, max_seqs, c->n_heads, c->n_kv_heads,
                                                             c->head_dim)},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        if (bufs[i].bytes == 0)
            continue;
        fk_status s = be->ops->alloc(be, bufs[i].bytes, bufs[i].p, err);
        if (s) {
            forward_ws_free(m, ws);
            return fk_error_prefix(err, s, "forward workspace for %d tokens: ", max_tokens);
        }
    }
    *out = ws;
    return FK_OK;
}

void forward_ws_free(const fk_model *m, forward_ws *ws)
{
    if (!ws)
        return;
    void *all[] = {ws->residual, ws->normed,    ws->qkv,          ws->attn,   ws->proj,       ws->mlp_in,
                   ws->mlp_act,  ws->last_normed, ws->logits, ws->index_dev, ws->attn_scratch, ws->tokens,
                   ws->sample_rows};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            m->be->ops->release(m->be, all[i]);
    for (int i = 0; ws->graph && i < ws->n_buckets * ws->n_widths; i++) {
        if (ws->graph[i].graph)
            m->be->ops->graph_destroy(m->be, ws->graph[i].graph);
        free(ws->graph[i].mark_class);
    }
    free(ws->graph);
    free(ws->bucket_seqs);
    free(ws->widths);
    for (int i = 0; ws->pieces && i < PIECE_BUCKETS * (m->cfg.n_layers + 1); i++)
        if (ws->pieces[i])
            m->be->ops->graph_destroy(m->be, ws->pieces[i]);
    free(ws->pieces);
    free(ws->pad);
    for (int i = 0; i < 2; i++) {
        void *host[] = {ws->index_host[i], ws->rows_host[i], ws->tokens_host[i]};
        for (size_t j = 0; j < sizeof host / sizeof host[0]; j++)
            if (host[j])
                m->be->ops->host_free(m->be, host[j]);
    }
    free(ws);
}

/* Points ws at the per-token arrays of a pass on `padded` tokens, at the start of the index buffer: ids, positions,
 * slots, `padded` each. Piece graphs read them there, so a bucket's pieces can be recorded before its first pass. */
static void per_token_arrays(forward_ws *ws, int padded)
{
    ws->ids = ws->index_dev;
    ws->positions = ws->index_dev + padded;
    ws->slots = ws->index_dev + 2 * (size_t)padded;
}

/* Packs the batch's index arrays into one buffer (ids, positions and slots padded to `padded` tokens: token 0 at
 * position 0 with slot -1, which stores no KV; block-table rows padded to width), copies it to the device in one
 * upload, and points ws at the arrays' places in it. The copy waits only for the last pass (model_forward's
 * pass_end), not for that pass's sampling, so it is off the path between the passes. */
static fk_status upload_batch(backend *be, forward_ws *ws, const batch *b, int width, int padded, fk_error *err)
{
    int32_t *host = ws->index_host[ws->slot];
    size_t at = 0;
    const struct {
        const int32_t *host;
        int32_t pad;
    } per_token[] = {{b->input_ids, 0}, {b->positions, 0}, {b->slot_mapping, -1}}; /* per_token_arrays' order */
    for (size_t i = 0; i < sizeof per_token / sizeof per_token[0]; i++, at += (size_t)padded) {
        memcpy(host + at, per_token[i].host, (size_t)b->n_tokens * sizeof(int32_t));
        for (int t = b->n_tokens; t < padded; t++)
            host[at + t] = per_token[i].pad;
    }
    per_token_arrays(ws, padded);
    struct {
        int32_t **dev;
        const int32_t *host;
        size_t n;
    } parts[] = {
        {&ws->query_start, b->query_start, (size_t)b->n_seqs + 1},
        {&ws->context_len, b->context_len, (size_t)b->n_seqs},
        {&ws->logit_rows, b->logit_rows, (size_t)b->n_logits},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (parts[i].n)
            memcpy(host + at, parts[i].host, parts[i].n * sizeof(int32_t));
        *parts[i].dev = ws->index_dev + at;
        at += parts[i].n;
    }
    ws->block_tables = ws->index_dev + at;
    for (int s = 0; s < b->n_seqs; s++, at += (size_t)width) {
        memcpy(host + at, b->block_tables + (size_t)s * b->max_blocks, (size_t)b->max_blocks * sizeof(int32_t));
        memset(host + at + b->max_blocks, 0, (size_t)(width - b->max_blocks) * sizeof(int32_t));
    }
    return be->ops->upload_after_pass(be, ws->index_dev, host, at * sizeof(int32_t), err);
}

/* Before an op of class c (and, with c = FK_OP_CLASSES, after the last one): counts the op as launched unless it
 * is being recorded, and when profiling stamps a timeline mark. */
static fk_status mark(fk_model *m, forward_ws *ws, int c, fk_error *err)
{
    if (c < FK_OP_CLASSES && !ws->recording)
        ws->launches++;
    if (!ws->profile || ws->n_marks == PROF_MARKS)
        return FK_OK;
    ws->mark_class[ws->n_marks] = (uint8_t)c;
    return m->be->ops->prof_mark(m->be, ws->n_marks++, err);
}

/* residual += x (if x); out = norm(residual), with the architecture's norm. */
static fk_status add_norm(fk_model *m, forward_ws *ws, void *out, void *residual, const void *x, const void *w,
                          const void *bias, int n, fk_error *err)
{
    backend *be = m->be;
    const model_config *c = &m->cfg;
    fk_status s = mark(m, ws, FK_OP_NORM, err);
    if (s)
        return s;
    if (c->arch != ARCH_GPT2)
        return be->ops->add_rms_norm(be, out, residual, x, w, n, c->hidden_size, c->norm_eps, err);
    return be->ops->add_layer_norm(be, out, residual, x, w, bias, n, c->hidden_size, c->norm_eps, err);
}

/* The MLP of layer l: normed [n][d] → proj [n][d]. */
static fk_status mlp(fk_model *m, forward_ws *ws, const layer_weights *l, int n, fk_error *err)
{
    backend *be = m->be;
    const model_config *c = &m->cfg;
    const int d = c->hidden_size, f = c->intermediate_size;
    fk_status s;
    if ((s = mark(m, ws, FK_OP_LINEAR, err)))
        return s;
    if (c->arch != ARCH_GPT2)
        s = be->ops->linear_silu_mul(be, ws->mlp_act, ws->mlp_in, ws->normed, &l->up_w, l->up_b, n, d, f, err);
    else
        s = be->ops->linear_gelu(be, ws->mlp_act, ws->normed, &l->up_w, l->up_b, n, d, f, err);
    if (s || (s = mark(m, ws, FK_OP_LINEAR, err)))
        return s;
    return be->ops->linear(be, ws->proj, ws->mlp_act, &l->down_w, l->down_b, n, f, d, err);
}

static float attention_scale(const model_config *c, int layer)
{
    float scale = c->arch == ARCH_GPT2 && !c->scale_attn_weights ? 1.0f : 1.0f / sqrtf((float)c->head_dim);
    if (c->arch == ARCH_GPT2 && c->scale_attn_by_layer)
        scale /= (float)(layer + 1);
    return scale;
}

/* The batch fits the workspace, and the indices the device reads through stay in their arrays: token ids in the
 * vocabulary, placeholders (-1 - r) among the previous pass's max_logits sampled tokens, logit rows among the batch's
 * tokens. The engine makes every batch; this keeps a bad one from reading out of bounds on the device. */
static fk_status check_fits(const fk_model *m, const forward_ws *ws, const batch *b, fk_error *err)
{
    if (b->n_tokens < 1 || b->n_tokens > ws->max_tokens || b->n_seqs < 1 || b->n_seqs > ws->max_seqs ||
        b->max_blocks > ws->max_blocks || b->n_logits < 0 || b->n_logits > ws->max_logits)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT,
                            "batch of %d tokens, %d seqs, %d blocks, %d logits exceeds the workspace (%d, %d, %d, %d)",
                            b->n_tokens, b->n_seqs, b->max_blocks, b->n_logits, ws->max_tokens, ws->max_seqs,
                            ws->max_blocks, ws->max_logits);
    for (int i = 0; i < b->n_tokens; i++) {
        const int32_t id = b->input_ids[i];
        if (id >= m->cfg.vocab_size || (id < 0 && -1 - (int64_t)id >= ws->max_logits))
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT,
                                "batch token %d: id %d is neither in the vocabulary (%d) nor a placeholder of the "
                                "previous pass's %d sampled tokens",
                                i, id, m->cfg.vocab_size, ws->max_logits);
    }
    for (int i = 0; i < b->n_logits; i++)
        if (b->logit_rows[i] < 0 || b->logit_rows[i] >= b->n_tokens)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "batch logit row %d: token %d of %d", i,
                                b->logit_rows[i], b->n_tokens);
    return FK_OK;
}

/* Whether the logit rows are the batch's rows in order (a decode pass): the lm_head then reads them in place. */
static bool all_rows_in_order(const batch *b)
{
    if (b->n_logits != b->n_tokens)
        return false;
    for (int i = 0; i < b->n_logits; i++)
        if (b->logit_rows[i] != i)
            return false;
    return true;
}

/* Whether a pass's embedding and layer 0's norm1 are one op (embed_rms_norm): models with RMSNorm, no learned
 * positions and a layer. Then the CUDA backend's decode step starts with one kernel, not two. */
static bool embed_takes_norm1(const fk_model *m)
{
    return m->cfg.arch != ARCH_GPT2 && !m->w.pos_embed && m->cfg.n_layers > 0;
}

/* Layer i up to its attention, on n tokens: residual += sublayer_out (if any), normed = norm1(residual) (for layer 0
 * done by the embedding where embed_takes_norm1), qkv, and unless the attention does them (`rope` false), RoPE and
 * the KV store. */
static fk_status layer_in(fk_model *m, forward_ws *ws, const kv_cache *kv, int i, int n, const void *sublayer_out,
                          bool rope, fk_error *err)
{
    backend *be = m->be;
    const model_config *c = &m->cfg;
    const layer_weights *l = &m->w.layers[i];
    const int qkv_dim = (c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    fk_status s = FK_OK;
    if (i > 0 || !embed_takes_norm1(m)) {
        release_early(m, ws, n, EARLY_NORM1, true);
        s = add_norm(m, ws, ws->normed, ws->residual, sublayer_out, l->norm1_w, l->norm1_b, n, err);
        release_early(m, ws, n, EARLY_NORM1, false);
    }
    if (s || (s = mark(m, ws, FK_OP_LINEAR, err)))
        return fk_error_prefix(err, s, "layer %d: ", i);
    release_early(m, ws, n, EARLY_QKV, true);
    s = be->ops->linear(be, ws->qkv, ws->normed, &l->qkv_w, l->qkv_b, n, c->hidden_size, qkv_dim, err);
    release_early(m, ws, n, EARLY_QKV, false);
    if (s || (rope && (s = mark(m, ws, FK_OP_OTHER, err))))
        return fk_error_prefix(err, s, "layer %d: ", i);
    s = rope ? be->ops->rope_store_kv(be, ws->qkv, ws->positions, m->w.rope_inv_freq, ws->slots, &kv->layers[i], n,
                                      c->n_heads, err)
             : FK_OK;
    return s ? fk_error_prefix(err, s, "layer %d: ", i) : FK_OK;
}

/* Layer i's attention, over the batch's sequences (ab: the real token count, never padded); with `rope`, RoPE and
 * the KV store of the batch's tokens too, in the same op. */
static fk_status layer_attention(fk_model *m, forward_ws *ws, const kv_cache *kv, int i, const attn_batch *ab,
                                 bool rope, fk_error *err)
{
    backend *be = m->be;
    const float scale = attention_scale(&m->cfg, i);
    fk_status s = mark(m, ws, FK_OP_ATTENTION, err);
    if (!s && rope)
        s = be->ops->attention_rope(be, ws->attn, ws->qkv, ws->positions, m->w.rope_inv_freq, ws->slots,
                                    &kv->layers[i], ab, m->cfg.n_heads, scale, err);
    else if (!s)
        s = be->ops->attention(be, ws->attn, ws->qkv, &kv->layers[i], ab, m->cfg.n_heads, scale, err);
    return s ? fk_error_prefix(err, s, "layer %d: ", i) : FK_OK;
}

/* Layer i after its attention, on n tokens: proj = o(attn); residual += proj, normed = norm2(residual); proj =
 * mlp(normed) (added to the residual by the next norm). */
static fk_status layer_out(fk_model *m, forward_ws *ws, int i, int n, fk_error *err)
{
    backend *be = m->be;
    const model_config *c = &m->cfg;
    const layer_weights *l = &m->w.layers[i];
    const int d = c->hidden_size, hd = c->n_heads * c->head_dim;
    fk_status s;
    if ((s = mark(m, ws, FK_OP_LINEAR, err)))
        return fk_error_prefix(err, s, "layer %d: ", i);
    release_early(m, ws, n, EARLY_O, true);
    s = be->ops->linear(be, ws->proj, ws->attn, &l->o_w, l->o_b, n, hd, d, err);
    release_early(m, ws, n, EARLY_O, false);
    if (!s) {
        release_early(m, ws, n, EARLY_NORM2, true);
        s = add_norm(m, ws, ws->normed, ws->residual, ws->proj, l->norm2_w, l->norm2_b, n, err);
        release_early(m, ws, n, EARLY_NORM2, false);
    }
    if (s || (s = mlp(m, ws, l, n, err)))
        return fk_error_prefix(err, s, "layer %d: ", i);
    return FK_OK;
}

/* The final norm of the n rows (residual += the last layer's MLP output). */
static fk_status final_norm(fk_model *m, forward_ws *ws, int n, fk_error *err)
{
    const model_weights *w = &m->w;
    return add_norm(m, ws, ws->normed, ws->residual, m->cfg.n_layers ? ws->proj : NULL, w->norm_w, w->norm_b, n, err);
}

/* The logits of the batch's logit rows (of the final norm's output) into ws->logits. */
static fk_status lm_head(fk_model *m, forward_ws *ws, const batch *b, fk_error *err)
{
    backend *be = m->be;
    const int d = m->cfg.hidden_size;
    const void *rows = ws->normed;
    fk_status s;
    if (!all_rows_in_order(b)) {
        if ((s = mark(m, ws, FK_OP_OTHER, err)) ||
            (s = be->ops->gather_rows(be, ws->last_normed, ws->normed, ws->logit_rows, b->n_logits, d, err)))
            return s;
        rows = ws->last_normed;
    }
    if ((s = mark(m, ws, FK_OP_LINEAR, err)) ||
        (s = be->ops->linear(be, ws->logits, rows, &m->w.lm_head, NULL, b->n_logits, d, m->cfg.vocab_size, err)))
        return s;
    return FK_OK;
}

/* residual = the n tokens' embeddings; where embed_takes_norm1, normed = layer 0's norm1(residual) too, in the same
 * op (counted as a norm). Placeholder ids read their tokens from ws->tokens (batch.h). */
static fk_status embed(fk_model *m, forward_ws *ws, int n, fk_error *err)
{
    const model_weights *w = &m->w;
    backend *be = m->be;
    const int d = m->cfg.hidden_size;
    fk_status s;
    if (!embed_takes_norm1(m)) {
        if ((s = mark(m, ws, FK_OP_OTHER, err)))
            return s;
        return be->ops->embed(be, ws->residual, w->tok_embed, ws->ids, ws->tokens, w->pos_embed, ws->positions, n, d,
                              err);
    }
    release_early(m, ws, n, EARLY_NORM1, true);
    if (!(s = mark(m, ws, FK_OP_NORM, err)))
        s = be->ops->embed_rms_norm(be, ws->normed, ws->residual, w->tok_embed, ws->ids, ws->tokens,
                                    w->layers[0].norm1_w, n, d, m->cfg.norm_eps, err);
    release_early(m, ws, n, EARLY_NORM1, false);
    return s;
}

/* The ops of one pass, on the batch ws points at; in profiling mode each is preceded by a mark of its class. */
static fk_status run_layers(fk_model *m, forward_ws *ws, const kv_cache *kv, const batch *b, const attn_batch *ab,
                            fk_error *err)
{
    const int n = b->n_tokens;
    /* A decode pass (one token per sequence): the attention op takes RoPE and the KV store along (the CUDA backend
     * fuses them into its decode kernel). */
    const bool rope_in_attention = n == b->n_seqs;
    fk_status s = embed(m, ws, n, err);
    for (int i = 0; !s && i < m->cfg.n_layers; i++)
        if (!(s = layer_in(m, ws, kv, i, n, i ? ws->proj : NULL, !rope_in_attention, err)) &&
            !(s = layer_attention(m, ws, kv, i, ab, rope_in_attention, err)))
            s = layer_out(m, ws, i, n, err);
    if (s)
        return s;
    if (b->n_logits && ((s = final_norm(m, ws, n, err)) || (s = lm_head(m, ws, b, err))))
        return s;
    return mark(m, ws, FK_OP_CLASSES, err);
}

/* Piece p of a pass on n (padded) tokens: what lies between attention p - 1 and attention p. */
static fk_status piece_ops(fk_model *m, forward_ws *ws, const kv_cache *kv, int p, int n, fk_error *err)
{
    const int L = m->cfg.n_layers;
    fk_status s = p == 0 ? embed(m, ws, n, err) : layer_out(m, ws, p - 1, n, err);
    if (s)
        return s;
    return p < L ? layer_in(m, ws, kv, p, n, p ? ws->proj : NULL, true, err) : final_norm(m, ws, n, err);
}

/* Ends the capture begun before the ops that returned `ran`: *graph, or NULL and the first error. */
static fk_status capture_finish(backend *be, forward_ws *ws, fk_status ran, void **graph, fk_error *err)
{
    fk_error end_err = {0};
    ws->recording = false;
    fk_status s = be->ops->capture_end(be, graph, &end_err); /* always: the stream leaves capture mode */
    if (ran || s) {
        if (*graph)
            be->ops->graph_destroy(be, *graph);
        *graph = NULL;
        return ran ? ran : fk_error_set(err, s, "%s", end_err.message);
    }
    return FK_OK;
}

/* Records piece p of a pass on `padded` tokens into *graph (ws's per-token arrays must sit where that count puts
 * them). */
static fk_status record_piece(fk_model *m, forward_ws *ws, const kv_cache *kv, int p, int padded, void **graph,
                              fk_error *err)
{
    fk_status s = m->be->ops->capture_begin(m->be, err);
    if (s)
        return s;
    ws->recording = true;
    return capture_finish(m->be, ws, piece_ops(m, ws, kv, p, padded, err), graph, err);
}

static const int piece_tokens[PIECE_BUCKETS] = PIECE_BUCKET_TOKENS;

/* The token count a pass of the bucket is padded to: the bucket's, at most the workspace's. */
static int piece_padded(const forward_ws *ws, int bucket)
{
    return piece_tokens[bucket] < ws->max_tokens ? piece_tokens[bucket] : ws->max_tokens;
}

fk_status forward_record_pieces(fk_model *m, forward_ws *ws, const kv_cache *kv, fk_error *err)
{
    const int L = m->cfg.n_layers;
    /* A bucket above one that already holds max_tokens is never chosen (piece_bucket takes the first that fits). */
    for (int bucket = 0;
         ws->pieces && bucket < PIECE_BUCKETS && (bucket == 0 || piece_tokens[bucket - 1] < ws->max_tokens);
         bucket++) {
        const int padded = piece_padded(ws, bucket);
        per_token_arrays(ws, padded);
        for (int p = 0; p <= L; p++) {
            void **graph = &ws->pieces[(size_t)bucket * (L + 1) + p];
            fk_status s = *graph ? FK_OK : record_piece(m, ws, kv, p, padded, graph, err);
            if (s)
                return fk_error_prefix(err, s, "recording the graphs of %d-token passes: ", padded);
        }
    }
    return FK_OK;
}

/* A pass with prefill chunks on `padded` tokens (bucket's count): the pieces from their graphs (recorded at engine
 * creation, or now if they were not), the attentions between them and the head as ops. */
static fk_status run_pieces(fk_model *m, forward_ws *ws, const kv_cache *kv, const batch *b, const attn_batch *ab,
                            int bucket, int padded, fk_error *err)
{
    backend *be = m->be;
    const int L = m->cfg.n_layers;
    fk_status s;
    for (int p = 0; p <= L; p++) {
        void **graph = &ws->pieces[(size_t)bucket * (L + 1) + p];
        if (!*graph && (s = record_piece(m, ws, kv, p, padded, graph, err)))
            return s;
        ws->launches++;
        if ((s = be->ops->graph_launch(be, *graph, err)) ||
            (p < L && (s = layer_attention(m, ws, kv, p, ab, false, err))))
            return s;
    }
    return b->n_logits ? lm_head(m, ws, b, err) : FK_OK;
}

/* The decode pass of b (its sequences and block-table width at their bucket's, as g is) from graph slot g, recorded
 * now if g has none. */
static fk_status decode_graph(fk_model *m, forward_ws *ws, const kv_cache *kv, const batch *b, const attn_batch *ab,
                              forward_graph *g, fk_error *err)
{
    if (g->graph) {
        ws->n_marks = g->n_marks; /* what its recording marked */
        if (g->n_marks)
            memcpy(ws->mark_class, g->mark_class, (size_t)g->n_marks);
        return FK_OK;
    }
    backend *be = m->be;
    fk_status s = be->ops->capture_begin(be, err);
    if (s)
        return s;
    ws->recording = true;
    if ((s = capture_finish(be, ws, run_layers(m, ws, kv, b, ab, err), &g->graph, err)))
        return s;
    ws->n_graphs++;
    if (ws->n_marks) {
        if (!(g->mark_class = malloc((size_t)ws->n_marks)))
            return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
        memcpy(g->mark_class, ws->mark_class, (size_t)ws->n_marks);
    }
    g->n_marks = ws->n_marks;
    return FK_OK;
}

/* The host arrays of a decode pass padded to its bucket, in ws->pad. */
typedef struct padded_arrays {
    int32_t *ids, *positions, *slots, *query_start, *context_len, *logit_rows, *tables;
} padded_arrays;

static padded_arrays padded_arrays_of(forward_ws *ws)
{
    const size_t n = (size_t)ws->max_seqs + 1;
    int32_t *p = ws->pad;
    return (padded_arrays){p, p + n, p + 2 * n, p + 3 * n, p + 4 * n, p + 5 * n, p + 6 * n};
}

/* Sequences [from, to) of a padded decode pass with block tables `width` wide: each is one padding token (id 0 at
 * position 0, slot -1: it stores nothing) with a context of 1 in block 0 and a logits row of its own. It reads
 * block 0 (finite: the pool starts zeroed, then holds K/V) and writes only its own rows, so the real sequences'
 * results are as without it; the engine samples only the real rows. */
static void add_padding(const padded_arrays *a, int from, int to, int width)
{
    for (int s = from; s < to; s++) {
        a->ids[s] = 0, a->positions[s] = 0, a->slots[s] = -1, a->context_len[s] = 1, a->logit_rows[s] = s;
        a->query_start[s + 1] = s + 1;
        memset(a->tables + (size_t)s * width, 0, (size_t)width * sizeof(int32_t));
    }
}

/* A decode pass of `seqs` sequences over a's arrays, with block tables `width` wide. */
static batch padded_batch(const padded_arrays *a, int seqs, int width)
{
    return (batch){.n_tokens = seqs,
                   .n_seqs = seqs,
                   .max_blocks = width,
                   .n_logits = seqs,
                   .input_ids = a->ids,
                   .positions = a->positions,
                   .slot_mapping = a->slots,
                   .query_start = a->query_start,
                   .context_len = a->context_len,
                   .block_tables = a->tables,
                   .logit_rows = a->logit_rows};
}

/* Decode pass b (one token per sequence) padded to `seqs` sequences. */
static batch padded_decode(forward_ws *ws, const batch *b, int seqs)
{
    const padded_arrays a = padded_arrays_of(ws);
    const size_t real = (size_t)b->n_seqs * sizeof(int32_t);
    memcpy(a.ids, b->input_ids, real);
    memcpy(a.positions, b->positions, real);
    memcpy(a.slots, b->slot_mapping, real);
    memcpy(a.query_start, b->query_start, real + sizeof(int32_t));
    memcpy(a.context_len, b->context_len, real);
    memcpy(a.logit_rows, b->logit_rows, real);
    memcpy(a.tables, b->block_tables, real * b->max_blocks);
    add_padding(&a, b->n_seqs, seqs, b->max_blocks);
    return padded_batch(&a, seqs, b->max_blocks);
}

/* The piece bucket of a pass with prefill chunks of n tokens, and its padded token count; -1 when it has none
 * (pieces off, or more tokens than the largest bucket). */
static int piece_bucket(const forward_ws *ws, int n, int *padded)
{
    for (int i = 0; ws->pieces && i < PIECE_BUCKETS; i++)
        if (n <= piece_tokens[i]) {
            *padded = piece_padded(ws, i);
            return i;
        }
    *padded = n;
    return -1;
}

/* After a pass's launches (the sampling reads only the logits and its own rows, not the index buffer), and after a
 * failed one too, for the ops it did enqueue. Returns `s`, else pass_end's status. */
static fk_status pass_end(fk_model *m, fk_status s, fk_error *err)
{
    if (!s)
        return m->be->ops->pass_end(m->be, err);
    fk_error ignored;
    m->be->ops->pass_end(m->be, &ignored);
    return s;
}

fk_status model_forward(fk_model *m, forward_ws *ws, const kv_cache *kv, const batch *b, fk_error *err)
{
    fk_status s = check_fits(m, ws, b, err);
    if (s)
        return s;
    ws->n_marks = 0;
    /* A decode pass (one token per sequence) is replayed from a graph: its launches depend only on the number of
     * sequences, padded to its bucket, and the padded block-table width, which also bounds the context the
     * attention plans for. Other passes run their pieces from graphs at a padded token count, their attentions as
     * ops. */
    const bool graphed = ws->graphs && b->n_tokens == b->n_seqs && b->n_logits == b->n_seqs;
    forward_graph *g = NULL;
    batch bucketed;
    int width = b->max_blocks;
    if (graphed) {
        const int bi = first_at_least(ws->bucket_seqs, ws->n_buckets, b->n_seqs);
        const int wi = first_at_least(ws->widths, ws->n_widths, b->max_blocks);
        g = &ws->graph[(size_t)wi * ws->n_buckets + bi];
        width = ws->widths[wi];
        if (ws->bucket_seqs[bi] > b->n_seqs) {
            bucketed = padded_decode(ws, b, ws->bucket_seqs[bi]);
            b = &bucketed;
        }
    }
    int padded = b->n_tokens;
    const int bucket = graphed ? -1 : piece_bucket(ws, b->n_tokens, &padded);
    int max_context = 0;
    for (int i = 0; i < b->n_seqs; i++)
        max_context = b->context_len[i] > max_context ? b->context_len[i] : max_context;
    if (graphed)
        max_context = width * kv->block_size;
    /* The other staging buffers (the last pass's may still be in flight), once the pass before it has read them:
     * the device copies from them when it gets there, not when the copy is enqueued. A fetch of nothing records
     * the slot's event after this pass's upload, for the pass that uses the slot next. */
    ws->slot ^= 1;
    if ((s = m->be->ops->fetch_wait(m->be, ws->slot, err)) || (s = upload_batch(m->be, ws, b, width, padded, err)) ||
        (s = m->be->ops->fetch_begin(m->be, NULL, NULL, 0, ws->slot, err)))
        return s;
    const attn_batch ab = {.n_tokens = b->n_tokens,
                           .n_seqs = b->n_seqs,
                           .query_start = ws->query_start,
                           .context_len = ws->context_len,
                           .block_tables = ws->block_tables,
                           .max_blocks = width,
                           .query_start_host = b->query_start,
                           .context_len_host = b->context_len,
                           .max_context = max_context,
                           .scratch = ws->attn_scratch};
    if (bucket >= 0)
        s = run_pieces(m, ws, kv, b, &ab, bucket, padded, err);
    else if (!graphed)
        s = run_layers(m, ws, kv, b, &ab, err);
    else if (!(s = decode_graph(m, ws, kv, b, &ab, g, err))) {
        ws->launches++;
        s = m->be->ops->graph_launch(m->be, g->graph, err);
    }
    return pass_end(m, s, err);
}

fk_status forward_record_decode_graphs(fk_model *m, forward_ws *ws, const kv_cache *kv, fk_error *err)
{
    if (!ws->graphs)
        return FK_OK;
    const padded_arrays a = padded_arrays_of(ws);
    for (int wi = 0; wi < ws->n_widths; wi++) {
        const int width = ws->widths[wi], most = ws->bucket_seqs[ws->n_buckets - 1];
        a.query_start[0] = 0;
        add_padding(&a, 0, most, width);
        for (int bi = 0; bi < ws->n_buckets; bi++) {
            if (ws->graph[(size_t)wi * ws->n_buckets + bi].graph)
                continue;
            const batch b = padded_batch(&a, ws->bucket_seqs[bi], width);
            fk_status s = model_forward(m, ws, kv, &b, err);
            if (s)
                return fk_error_prefix(err, s, "recording the decode graph of %d sequences over %d blocks: ",
                                       ws->bucket_seqs[bi], width);
        }
    }
    return FK_OK;
}

fk_status model_fetch_logits(fk_model *m, forward_ws *ws, int n_rows, float *logits, fk_error *err)
{
    return m->be->ops->download_act(m->be, logits, ws->logits, (size_t)n_rows * m->cfg.vocab_size, err);
}

fk_status model_sample_begin(fk_model *m, forward_ws *ws, const sample_row *rows, int n_rows, fk_error *err)
{
    backend *be = m->be;
    const int slot = ws->slot;
    memcpy(ws->rows_host[slot], rows, (size_t)n_rows * sizeof *rows);
    fk_status s;
    /* The rows go up beside the pass (the copy waits only for the last sampling and its tokens' download, which
     * must be done before this sampling overwrites ws->sample_rows and ws->tokens), so that the sampling starts as
     * soon as the pass ends. */
    if ((s = be->ops->upload_ahead(be, ws->sample_rows, ws->rows_host[slot], (size_t)n_rows * sizeof *rows, err)) ||
        (s = mark(m, ws, FK_OP_SAMPLING, err)) ||
        (s = be->ops->sample(be, ws->tokens, ws->logits, ws->sample_rows, n_rows, m->cfg.vocab_size, err)) ||
        (s = mark(m, ws, FK_OP_CLASSES, err)))
        return s;
    return be->ops->fetch_begin(be, ws->tokens_host[slot], ws->tokens, (size_t)n_rows * sizeof(int32_t), slot, err);
}

fk_status model_sample_wait(fk_model *m, forward_ws *ws, int slot, const int32_t **tokens, fk_error *err)
{
    fk_status s = m->be->ops->fetch_wait(m->be, slot, err);
    *tokens = ws->tokens_host[slot];
    return s;
}

fk_status model_profile_take(fk_model *m, forward_ws *ws, double op_s[FK_OP_CLASSES], uint64_t ops[FK_OP_CLASSES],
                             fk_error *err)
{
    float *ms = ws->mark_ms;
    fk_status s = m->be->ops->prof_read(m->be, ws->n_marks, ms, err);
    if (s)
        return s;
    /* the last mark of the pass and the one before sampling bracket the host's upload: not an op */
    for (int i = 0; i + 1 < ws->n_marks; i++)
        if (ws->mark_class[i] < FK_OP_CLASSES) {
            op_s[ws->mark_class[i]] += ms[i] * 1e-3;
            ops[ws->mark_class[i]]++;
        }
    ws->n_marks = 0;
    return FK_OK;
}
