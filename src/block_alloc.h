/* block_alloc.h — the KV block pool: free list, reference counts, and the prefix cache.
 *
 * A block is in exactly one of three states:
 *   used   ref > 0                      held by one or more sequences
 *   cached ref = 0, holds known content  evictable, kept in an LRU list for prefix-cache hits
 *   free   ref = 0, no content           on the free list
 * Full blocks are keyed by a hash chain (parent block's hash + this block's token ids); a later request whose
 * tokens start with the same chain reuses those blocks. Lookups compare the stored token ids, so a hash
 * collision can never hand out the wrong content. alloc() takes a free block first, then evicts the least
 * recently used cached one. */
#ifndef FK_BLOCK_ALLOC_H
#define FK_BLOCK_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

#include "flashkernel.h"

typedef struct block_alloc block_alloc;

typedef struct block_alloc_stats {
    int total, used, free, cached;
    uint64_t query_tokens; /* tokens looked up in the prefix cache */
    uint64_t hit_tokens;   /* of which found */
} block_alloc_stats;

/* The hash of a full block given its parent's hash (0 for the first block) and its block_size token ids. */
uint64_t block_hash(uint64_t parent, const int32_t *tokens, int block_size);

fk_status block_alloc_create(int num_blocks, int block_size, block_alloc **out, fk_error *err);
void block_alloc_destroy(block_alloc *a);

/* Whether n blocks can be allocated now (free + evictable cached). */
bool block_alloc_can_alloc(const block_alloc *a, int n);
/* A block with ref 1, or -1 when none is left. Evicting a cached block forgets its content. */
int block_alloc_alloc(block_alloc *a);
/* Drops one reference; at 0 a block with content becomes cached (most recently used), else free. */
void block_alloc_free(block_alloc *a, int block);

/* The cached block holding exactly these tokens under this chain hash, with a reference taken (it leaves the
 * LRU if it was evictable); -1 when absent. */
int block_alloc_lookup(block_alloc *a, uint64_t hash, const int32_t *tokens);
/* Records that a used, full block holds these tokens under this hash. If another block already holds that
 * content, the cache keeps the first and this block stays anonymous. */
void block_alloc_register(block_alloc *a, int block, uint64_t hash, const int32_t *tokens);
/* Adds to the prefix-cache counters (one admission's lookup). */
void block_alloc_count_query(block_alloc *a, int query_tokens, int hit_tokens);

block_alloc_stats block_alloc_get_stats(const block_alloc *a);
int block_alloc_ref(const block_alloc *a, int block);

#endif
