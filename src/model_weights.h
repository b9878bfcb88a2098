/* model_weights.h — the weights of a model on its backend, in one layout for both architectures.
 * Linear weights are [out][in]; Llama's q/k/v and gate/up are concatenated at load so each is one GEMM. The linears
 * of the blocks are stored in the model's quantization, the lm_head too when asked (fk_model_params). */
#ifndef FK_MODEL_WEIGHTS_H
#define FK_MODEL_WEIGHTS_H

#include "backend.h"
#include "model_config.h"
#include "safetensors.h"

typedef struct layer_weights {
    void *norm1_w, *norm1_b; /* [d]; _b only for LayerNorm */
    qweight qkv_w;           /* [(H + 2 Hkv) D][d] */
    void *qkv_b;             /* [(H + 2 Hkv) D] */
    qweight o_w;             /* [d][H D] */
    void *o_b;               /* [d] */
    void *norm2_w, *norm2_b; /* [d] */
    qweight up_w;            /* Llama: gate|up [2 f][d]; GPT-2: c_fc [f][d] */
    void *up_b;
    qweight down_w;          /* [d][f] */
    void *down_b;            /* [d] */
} layer_weights;

typedef struct model_weights {
    void *tok_embed;     /* [vocab][d] */
    void *pos_embed;     /* [max_context][d], GPT-2 only */
    void *norm_w, *norm_b;
    qweight lm_head;     /* [vocab][d]; when tied and not quantized, its data is the tok_embed pointer */
    void *rope_inv_freq; /* [D / 2] float32 on the device, Llama only */
    layer_weights *layers;
    int n_layers;
} model_weights;

/* Architecture loaders: every tensor is checked for presence, dtype and shape before use; p gives the
 * quantization of the linears. */
fk_status model_llama_load(const model_config *cfg, const safetensors *st, backend *be, const fk_model_params *p,
                           model_weights *w, fk_error *err);
fk_status model_gpt2_load(const model_config *cfg, const safetensors *st, backend *be, const fk_model_params *p,
                          model_weights *w, fk_error *err);

/* Releases every weight; safe on a partly loaded set. */
void model_weights_free(model_weights *w, backend *be);

/* Shared by the loaders: a tensor as float32 on the host, checked to be [rows][cols] (cols = 0: a vector of
 * rows). *out is malloc'd; the caller frees it. Missing tensor / wrong shape: FK_ERR_FORMAT naming it. */
fk_status weights_read(const safetensors *st, const char *name, int rows, int cols, float **out, fk_error *err);

/* Uploads host [rows][cols] (a vector: rows = 1) as a backend weight and frees host, also on failure. */
fk_status weights_upload(backend *be, float *host, int rows, int cols, void **out, fk_error *err);

/* weights_read then weights_upload. */
fk_status weights_load(const safetensors *st, backend *be, const char *name, int rows, int cols, void **out,
                       fk_error *err);

/* Uploads host [rows][cols] as the weight of a linear, stored in format f, and frees host, also on failure. Errors
 * (a size the format cannot hold: FK_ERR_UNSUPPORTED) name the tensor `name`. */
fk_status weights_upload_linear(backend *be, float *host, const char *name, int rows, int cols, fk_quantization f,
                                qweight *out, fk_error *err);

/* weights_read then weights_upload_linear. */
fk_status weights_load_linear(const safetensors *st, backend *be, const char *name, int rows, int cols,
                              fk_quantization f, qweight *out, fk_error *err);

/* The lm_head: the checkpoint's (head_name), or for a tied head the embedding itself (the tok_embed pointer), or
 * a quantized copy of it when p->quantize_lm_head. */
fk_status weights_load_head(const safetensors *st, backend *be, const model_config *c, const fk_model_params *p,
                            const char *embed_name, const char *head_name, model_weights *w, fk_error *err);

#endif
