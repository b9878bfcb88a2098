/* model_llama.c — LlamaForCausalLM, Qwen2ForCausalLM and MistralForCausalLM weights (one naming): Hugging Face names
 * → model_weights (q|k|v and gate|up fused). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model_weights.h"

/* Reads the named [rows_i][cols] tensors stacked as one [sum rows][cols] host array (or one vector when cols is 0);
 * *total_rows is the sum of rows. */
static fk_status read_stacked(const safetensors *st, const char *const *names, const int *rows, int n, int cols,
                              float **out, int *total_rows, fk_error *err)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += rows[i];
    size_t width = cols ? (size_t)cols : 1;
    float *stacked = malloc((size_t)total * width * sizeof(float));
    if (!stacked)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cannot allocate %d x %zu floats for \"%s\"", total, width,
                            names[0]);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        float *part;
        fk_status s = weights_read(st, names[i], rows[i], cols, &part, err);
        if (s) {
            free(stacked);
            return s;
        }
        memcpy(stacked + at, part, (size_t)rows[i] * width * sizeof(float));
        at += (size_t)rows[i] * width;
        free(part);
    }
    *out = stacked;
    *total_rows = total;
    return FK_OK;
}

/* The named vectors uploaded as one. */
static fk_status load_stacked_vector(const safetensors *st, backend *be, const char *const *names, const int *rows,
                                     int n, void **out, fk_error *err)
{
    float *host = NULL;
    int total = 0;
    fk_status s = read_stacked(st, names, rows, n, 0, &host, &total, err);
    return s ? s : weights_upload(be, host, 1, total, out, err);
}

/* The named [rows_i][cols] weights uploaded as one linear's, in format f (errors name the first tensor). */
static fk_status load_stacked_linear(const safetensors *st, backend *be, const char *const *names, const int *rows,
                                     int n, int cols, fk_quantization f, qweight *out, fk_error *err)
{
    float *host = NULL;
    int total = 0;
    fk_status s = read_stacked(st, names, rows, n, cols, &host, &total, err);
    return s ? s : weights_upload_linear(be, host, names[0], total, cols, f, out, err);
}

static fk_status load_layer(const model_config *c, const safetensors *st, backend *be, fk_quantization q, int i,
                            layer_weights *l, fk_error *err)
{
    const int d = c->hidden_size, qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim;
    const int f = c->intermediate_size;
    char n[6][128];
#define NAME(k, fmt) (snprintf(n[k], sizeof n[k], "model.layers.%d." fmt, i), n[k])
    fk_status s;
    if ((s = weights_load(st, be, NAME(0, "input_layernorm.weight"), d, 0, &l->norm1_w, err)) ||
        (s = weights_load(st, be, NAME(0, "post_attention_layernorm.weight"), d, 0, &l->norm2_w, err)))
        return s;

    const char *qkv[3] = {NAME(0, "self_attn.q_proj.weight"), NAME(1, "self_attn.k_proj.weight"),
                          NAME(2, "self_attn.v_proj.weight")};
    const int qkv_rows[3] = {qd, kvd, kvd};
    if ((s = load_stacked_linear(st, be, qkv, qkv_rows, 3, d, q, &l->qkv_w, err)) ||
        (s = weights_load_linear(st, be, NAME(0, "self_attn.o_proj.weight"), d, qd, q, &l->o_w, err)))
        return s;
    if (c->qkv_bias) {
        const char *qkv_b[3] = {NAME(0, "self_attn.q_proj.bias"), NAME(1, "self_attn.k_proj.bias"),
                                NAME(2, "self_attn.v_proj.bias")};
        if ((s = load_stacked_vector(st, be, qkv_b, qkv_rows, 3, &l->qkv_b, err)))
            return s;
    }
    if (c->o_bias && (s = weights_load(st, be, NAME(0, "self_attn.o_proj.bias"), d, 0, &l->o_b, err)))
        return s;

    const char *gate_up[2] = {NAME(0, "mlp.gate_proj.weight"), NAME(1, "mlp.up_proj.weight")};
    const int gate_up_rows[2] = {f, f};
    if ((s = load_stacked_linear(st, be, gate_up, gate_up_rows, 2, d, q, &l->up_w, err)) ||
        (s = weights_load_linear(st, be, NAME(0, "mlp.down_proj.weight"), d, f, q, &l->down_w, err)))
        return s;
    if (c->mlp_bias) {
        const char *gate_up_b[2] = {NAME(0, "mlp.gate_proj.bias"), NAME(1, "mlp.up_proj.bias")};
        if ((s = load_stacked_vector(st, be, gate_up_b, gate_up_rows, 2, &l->up_b, err)) ||
            (s = weights_load(st, be, NAME(0, "mlp.down_proj.bias"), d, 0, &l->down_b, err)))
            return s;
    }
#undef NAME
    return FK_OK;
}

fk_status model_llama_load(const model_config *c, const safetensors *st, backend *be, const fk_model_params *p,
                           model_weights *w, fk_error *err)
{
    const int d = c->hidden_size;
    w->layers = calloc((size_t)c->n_layers, sizeof *w->layers);
    if (!w->layers)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory for %d layers", c->n_layers);
    w->n_layers = c->n_layers;
    fk_status s;
    if ((s = weights_load(st, be, "model.embed_tokens.weight", c->vocab_size, d, &w->tok_embed, err)) ||
        (s = weights_load(st, be, "model.norm.weight", d, 0, &w->norm_w, err)))
        return s;
    if ((s = weights_load_head(st, be, c, p, "model.embed_tokens.weight", "lm_head.weight", w, err)))
        return s;
    for (int i = 0; i < c->n_layers; i++)
        if ((s = load_layer(c, st, be, p->quantization, i, &w->layers[i], err)))
            return s;

    float *inv_freq = malloc((size_t)(c->head_dim / 2) * sizeof(float));
    if (!inv_freq)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    model_config_rope_inv_freq(c, inv_freq);
    size_t bytes = (size_t)(c->head_dim / 2) * sizeof(float);
    s = be->ops->alloc(be, bytes, &w->rope_inv_freq, err);
    if (!s)
        s = be->ops->upload(be, w->rope_inv_freq, inv_freq, bytes, err);
    free(inv_freq);
    return s;
}
