/* model_weights.c — reading checked tensors from safetensors and freeing a model's weights. */
#include "model_weights.h"

#include <stdio.h>
#include <stdlib.h>

#include "error.h"

static void format_shape(const st_tensor *t, char *buf, size_t size)
{
    int len = snprintf(buf, size, "[");
    for (int i = 0; i < t->ndim && len < (int)size; i++)
        len += snprintf(buf + len, size - (size_t)len, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (len < (int)size)
        snprintf(buf + len, size - (size_t)len, "]");
}

fk_status weights_read(const safetensors *st, const char *name, int rows, int cols, float **out, fk_error *err)
{
    *out = NULL;
    const st_tensor *t = safetensors_find(st, name);
    if (!t)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: missing tensor \"%s\"", safetensors_source(st), name);
    bool ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols : t->ndim == 1 && t->shape[0] == rows;
    if (!ok) {
        char got[128];
        format_shape(t, got, sizeof got);
        if (cols)
            return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\" has shape %s; expected [%d, %d]", t->file, name,
                                got, rows, cols);
        return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\" has shape %s; expected [%d]", t->file, name, got,
                            rows);
    }
    float *host = malloc((size_t)(t->numel ? t->numel : 1) * sizeof(float));
    if (!host)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cannot allocate %lld floats for \"%s\"", (long long)t->numel,
                            name);
    fk_status s = st_tensor_to_f32(t, host, err);
    if (s) {
        free(host);
        return s;
    }
    *out = host;
    return FK_OK;
}

fk_status weights_upload(backend *be, float *host, int rows, int cols, void **out, fk_error *err)
{
    fk_status s = be->ops->upload_weight(be, host, rows, cols, out, err);
    free(host);
    return s;
}

fk_status weights_load(const safetensors *st, backend *be, const char *name, int rows, int cols, void **out,
                       fk_error *err)
{
    float *host;
    fk_status s = weights_read(st, name, rows, cols, &host, err);
    return s ? s : weights_upload(be, host, cols ? rows : 1, cols ? cols : rows, out, err);
}

fk_status weights_upload_linear(backend *be, float *host, const char *name, int rows, int cols, fk_quantization f,
                                qweight *out, fk_error *err)
{
    fk_status s = be->ops->upload_linear(be, host, rows, cols, f, out, err);
    free(host);
    return s ? fk_error_prefix(err, s, "%s: ", name) : FK_OK;
}

fk_status weights_load_linear(const safetensors *st, backend *be, const char *name, int rows, int cols,
                              fk_quantization f, qweight *out, fk_error *err)
{
    float *host;
    fk_status s = weights_read(st, name, rows, cols, &host, err);
    return s ? s : weights_upload_linear(be, host, name, rows, cols, f, out, err);
}

fk_status weights_load_head(const safetensors *st, backend *be, const model_config *c, const fk_model_params *p,
                            const char *embed_name, const char *head_name, model_weights *w, fk_error *err)
{
    const fk_quantization f = p->quantize_lm_head ? p->quantization : FK_QUANT_NONE;
    if (c->tie_embeddings && f == FK_QUANT_NONE) {
        w->lm_head = (qweight){.format = f, .rows = c->vocab_size, .cols = c->hidden_size, .data = w->tok_embed};
        return FK_OK;
    }
    return weights_load_linear(st, be, c->tie_embeddings ? embed_name : head_name, c->vocab_size, c->hidden_size, f,
                               &w->lm_head, err);
}

static void release_linear(backend *be, const qweight *q)
{
    if (q->data)
        be->ops->release(be, q->data);
    if (q->scales)
        be->ops->release(be, q->scales);
}

void model_weights_free(model_weights *w, backend *be)
{
    void (*release)(backend *, void *) = be->ops->release;
    for (int i = 0; w->layers && i < w->n_layers; i++) {
        layer_weights *l = &w->layers[i];
        void *all[] = {l->norm1_w, l->norm1_b, l->qkv_b, l->o_b, l->norm2_w, l->norm2_b, l->up_b, l->down_b};
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
            if (all[j])
                release(be, all[j]);
        const qweight *linears[] = {&l->qkv_w, &l->o_w, &l->up_w, &l->down_w};
        for (size_t j = 0; j < sizeof linears / sizeof linears[0]; j++)
            release_linear(be, linears[j]);
    }
    free(w->layers);
    if (w->lm_head.data != w->tok_embed)
        release_linear(be, &w->lm_head);
    void *globals[] = {w->tok_embed, w->pos_embed, w->norm_w, w->norm_b, w->rope_inv_freq};
    for (size_t j = 0; j < sizeof globals / sizeof globals[0]; j++)
        if (globals[j])
            release(be, globals[j]);
    *w = (model_weights){0};
}
