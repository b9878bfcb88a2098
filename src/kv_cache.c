/* kv_cache.c — allocation of the per-layer K/V block pools on the backend. */
#include "kv_cache.h"

#include <stdlib.h>

#include "error.h"

size_t kv_cache_block_bytes(const backend *be, int n_layers, int block_size, int n_kv_heads, int head_dim)
{
    return 2 * (size_t)n_layers * block_size * n_kv_heads * head_dim * be->ops->act_size;
}

fk_status kv_cache_create(backend *be, int n_layers, int num_blocks, int block_size, int n_kv_heads, int head_dim,
                          kv_cache **out, fk_error *err)
{
    *out = NULL;
    if (n_layers < 1 || num_blocks < 1 || block_size < 1 || n_kv_heads < 1 || head_dim < 1)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT,
                            "kv cache: layers %d, blocks %d, block size %d, kv heads %d, head_dim %d must all be >= 1",
                            n_layers, num_blocks, block_size, n_kv_heads, head_dim);
    kv_cache *kv = calloc(1, sizeof *kv);
    if (kv)
        kv->layers = calloc((size_t)n_layers, sizeof *kv->layers);
    if (!kv || !kv->layers) {
        free(kv);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "kv cache: out of memory");
    }
    kv->be = be;
    kv->n_layers = n_layers;
    kv->num_blocks = num_blocks;
    kv->block_size = block_size;
    size_t pool_bytes = (size_t)num_blocks * n_kv_heads * block_size * head_dim * be->ops->act_size;
    for (int l = 0; l < n_layers; l++) {
        kv_pool *p = &kv->layers[l];
        *p = (kv_pool){.num_blocks = num_blocks, .block_size = block_size, .n_kv_heads = n_kv_heads,
                       .head_dim = head_dim};
        fk_status s = be->ops->alloc(be, pool_bytes, &p->k, err);
        if (!s)
            s = be->ops->alloc(be, pool_bytes, &p->v, err);
        if (s) {
            kv_cache_free(kv);
            return fk_error_prefix(err, s, "kv cache layer %d (%d blocks of %d tokens): ", l, num_blocks, block_size);
        }
    }
    *out = kv;
    return FK_OK;
}

void kv_cache_free(kv_cache *kv)
{
    if (!kv)
        return;
    for (int l = 0; l < kv->n_layers; l++) {
        if (kv->layers[l].k)
            kv->be->ops->release(kv->be, kv->layers[l].k);
        if (kv->layers[l].v)
            kv->be->ops->release(kv->be, kv->layers[l].v);
    }
    free(kv->layers);
    free(kv);
}
