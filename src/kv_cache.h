/* kv_cache.h — the paged KV cache: one K pool and one V pool per layer, [num_blocks][Hkv][B][D] each. */
#ifndef FK_KV_CACHE_H
#define FK_KV_CACHE_H

#include <stddef.h>

#include "backend.h"

typedef struct kv_cache {
    backend *be;
    kv_pool *layers; /* [n_layers] */
    int n_layers;
    int num_blocks;
    int block_size;
} kv_cache;

/* Bytes of device memory one block takes across all layers (K and V). */
size_t kv_cache_block_bytes(const backend *be, int n_layers, int block_size, int n_kv_heads, int head_dim);

/* Allocates the pools. Errors: FK_ERR_INVALID_ARGUMENT (sizes), FK_ERR_OUT_OF_MEMORY. */
fk_status kv_cache_create(backend *be, int n_layers, int num_blocks, int block_size, int n_kv_heads, int head_dim,
                          kv_cache **out, fk_error *err);

void kv_cache_free(kv_cache *kv);

#endif
