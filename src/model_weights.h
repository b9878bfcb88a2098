/* model_weights.h — the weights of a model on its backend, in one layout for both architectures.
 * Linear weights are [out][in]; Llama's q/k/v and gate/up are concatenated at load so each is one GEMM. */
#ifndef FK_MODEL_WEIGHTS_H
#define FK_MODEL_WEIGHTS_H

#include "backend.h"
#include "model_config.h"
#include "safetensors.h"

typedef struct layer_weights {
    void *norm1_w, *norm1_b; /* [d]; _b only for LayerNorm */
    void *qkv_w, *qkv_b;     /* [(H + 2 Hkv) D][d], [(H + 2 Hkv) D] */
    void *o_w, *o_b;         /* [d][H D], [d] */
    void *norm2_w, *norm2_b; /* [d] */
    void *up_w, *up_b;       /* Llama: gate|up [2 f][d]; GPT-2: c_fc [f][d] */
    void *down_w, *down_b;   /* [d][f], [d] */
} layer_weights;

typedef struct model_weights {
    void *tok_embed;     /* [vocab][d] */
    void *pos_embed;     /* [max_context][d], GPT-2 only */
    void *norm_w, *norm_b;
    void *lm_head;       /* [vocab][d]; the same pointer as tok_embed when tied */
    void *rope_inv_freq; /* [D / 2] float32 on the device, Llama only */
    layer_weights *layers;
    int n_layers;
} model_weights;

/* Architecture loaders: every tensor is checked for presence, dtype and shape before use. */
fk_status model_llama_load(const model_config *cfg, const safetensors *st, backend *be, model_weights *w,
                           fk_error *err);
fk_status model_gpt2_load(const model_config *cfg, const safetensors *st, backend *be, model_weights *w,
                          fk_error *err);

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

#endif
