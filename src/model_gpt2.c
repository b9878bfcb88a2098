/* model_gpt2.c — GPT2LMHeadModel weights: Hugging Face names (with or without "transformer.") → model_weights.
 * GPT-2's Conv1D stores weights [in][out]; they are transposed to [out][in] here. */
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "model_weights.h"

/* Loads a Conv1D weight stored [in][out] as a linear's [out][in], in format f. */
static fk_status load_conv1d(const safetensors *st, backend *be, const char *name, int in, int out, fk_quantization f,
                             qweight *dst, fk_error *err)
{
    float *stored;
    fk_status s = weights_read(st, name, in, out, &stored, err);
    if (s)
        return s;
    float *t = malloc((size_t)in * out * sizeof(float));
    if (!t) {
        free(stored);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory transposing \"%s\"", name);
    }
    for (int i = 0; i < in; i++)
        for (int o = 0; o < out; o++)
            t[(size_t)o * in + i] = stored[(size_t)i * out + o];
    free(stored);
    return weights_upload_linear(be, t, name, out, in, f, dst, err);
}

static fk_status load_layer(const model_config *c, const safetensors *st, backend *be, fk_quantization q,
                            const char *prefix, int i, layer_weights *l, fk_error *err)
{
    const int d = c->hidden_size, f = c->intermediate_size;
    char n[128];
#define NAME(fmt) (snprintf(n, sizeof n, "%sh.%d." fmt, prefix, i), n)
    fk_status s;
    if ((s = weights_load(st, be, NAME("ln_1.weight"), d, 0, &l->norm1_w, err)) ||
        (s = weights_load(st, be, NAME("ln_1.bias"), d, 0, &l->norm1_b, err)) ||
        (s = load_conv1d(st, be, NAME("attn.c_attn.weight"), d, 3 * d, q, &l->qkv_w, err)) ||
        (s = weights_load(st, be, NAME("attn.c_attn.bias"), 3 * d, 0, &l->qkv_b, err)) ||
        (s = load_conv1d(st, be, NAME("attn.c_proj.weight"), d, d, q, &l->o_w, err)) ||
        (s = weights_load(st, be, NAME("attn.c_proj.bias"), d, 0, &l->o_b, err)) ||
        (s = weights_load(st, be, NAME("ln_2.weight"), d, 0, &l->norm2_w, err)) ||
        (s = weights_load(st, be, NAME("ln_2.bias"), d, 0, &l->norm2_b, err)) ||
        (s = load_conv1d(st, be, NAME("mlp.c_fc.weight"), d, f, q, &l->up_w, err)) ||
        (s = weights_load(st, be, NAME("mlp.c_fc.bias"), f, 0, &l->up_b, err)) ||
        (s = load_conv1d(st, be, NAME("mlp.c_proj.weight"), f, d, q, &l->down_w, err)) ||
        (s = weights_load(st, be, NAME("mlp.c_proj.bias"), d, 0, &l->down_b, err)))
        return s;
#undef NAME
    return FK_OK;
}

fk_status model_gpt2_load(const model_config *c, const safetensors *st, backend *be, const fk_model_params *p,
                          model_weights *w, fk_error *err)
{
    const int d = c->hidden_size;
    /* Hub checkpoints name tensors "wte.weight"; those saved from GPT2LMHeadModel "transformer.wte.weight". */
    const char *prefix = safetensors_find(st, "wte.weight") ? "" : "transformer.";
    char n[128];
#define NAME(s) (snprintf(n, sizeof n, "%s%s", prefix, s), n)
    w->layers = calloc((size_t)c->n_layers, sizeof *w->layers);
    if (!w->layers)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory for %d layers", c->n_layers);
    w->n_layers = c->n_layers;
    fk_status s;
    if ((s = weights_load(st, be, NAME("wte.weight"), c->vocab_size, d, &w->tok_embed, err)) ||
        (s = weights_load(st, be, NAME("wpe.weight"), c->max_context, d, &w->pos_embed, err)) ||
        (s = weights_load(st, be, NAME("ln_f.weight"), d, 0, &w->norm_w, err)) ||
        (s = weights_load(st, be, NAME("ln_f.bias"), d, 0, &w->norm_b, err)) ||
        (s = weights_load_head(st, be, c, p, NAME("wte.weight"), "lm_head.weight", w, err)))
        return s;
#undef NAME
    for (int i = 0; i < c->n_layers; i++)
        if ((s = load_layer(c, st, be, p->quantization, prefix, i, &w->layers[i], err)))
            return s;
    return FK_OK;
}
