/* block_alloc.c — KV block pool: a free stack, an LRU list of evictable cached blocks, and a chained hash table
 * from chain hash to cached block. Every operation is O(1) but lookup (O(bucket length)). */
#include "block_alloc.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct block {
    int ref;
    bool has_content; /* registered in the hash table */
    uint64_t hash;
    int lru_prev, lru_next; /* in the LRU list while ref == 0 and has_content */
    int bucket_next;        /* next block in the same hash bucket */
} block;

struct block_alloc {
    int n_blocks, block_size;
    block *blocks;
    int32_t *tokens; /* [n_blocks][block_size]: content of registered blocks */
    int *free_stack;
    int n_free;
    int lru_head, lru_tail; /* head: least recently used */
    int n_cached, n_used;
    int *buckets; /* first block of each bucket, -1 when empty */
    uint64_t bucket_mask;
    uint64_t query_tokens, hit_tokens;
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

uint64_t block_hash(uint64_t parent, const int32_t *tokens, int block_size)
{
    uint64_t h = mix64(parent ^ 0x9e3779b97f4a7c15ull);
    for (int i = 0; i < block_size; i++)
        h = mix64(h ^ (uint32_t)tokens[i]) + (uint64_t)i;
    return h;
}

fk_status block_alloc_create(int num_blocks, int block_size, block_alloc **out, fk_error *err)
{
    *out = NULL;
    if (num_blocks < 1 || block_size < 1)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "block pool needs >= 1 block of >= 1 token, got %d x %d",
                            num_blocks, block_size);
    block_alloc *a = calloc(1, sizeof *a);
    uint64_t n_buckets = 1;
    while (n_buckets < 2 * (uint64_t)num_blocks)
        n_buckets <<= 1;
    if (a) {
        a->blocks = calloc((size_t)num_blocks, sizeof *a->blocks);
        a->tokens = malloc((size_t)num_blocks * block_size * sizeof *a->tokens);
        a->free_stack = malloc((size_t)num_blocks * sizeof *a->free_stack);
        a->buckets = malloc(n_buckets * sizeof *a->buckets);
    }
    if (!a || !a->blocks || !a->tokens || !a->free_stack || !a->buckets) {
        block_alloc_destroy(a);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "block pool of %d blocks: out of memory", num_blocks);
    }
    a->n_blocks = num_blocks;
    a->block_size = block_size;
    a->bucket_mask = n_buckets - 1;
    for (uint64_t i = 0; i < n_buckets; i++)
        a->buckets[i] = -1;
    /* Block 0 is handed out first. */
    for (int i = 0; i < num_blocks; i++)
        a->free_stack[i] = num_blocks - 1 - i;
    a->n_free = num_blocks;
    a->lru_head = a->lru_tail = -1;
    *out = a;
    return FK_OK;
}

void block_alloc_destroy(block_alloc *a)
{
    if (!a)
        return;
    free(a->blocks);
    free(a->tokens);
    free(a->free_stack);
    free(a->buckets);
    free(a);
}

static void lru_unlink(block_alloc *a, int b)
{
    block *x = &a->blocks[b];
    if (x->lru_prev >= 0)
        a->blocks[x->lru_prev].lru_next = x->lru_next;
    else
        a->lru_head = x->lru_next;
    if (x->lru_next >= 0)
        a->blocks[x->lru_next].lru_prev = x->lru_prev;
    else
        a->lru_tail = x->lru_prev;
    a->n_cached--;
}

static void lru_push_tail(block_alloc *a, int b)
{
    block *x = &a->blocks[b];
    x->lru_prev = a->lru_tail;
    x->lru_next = -1;
    if (a->lru_tail >= 0)
        a->blocks[a->lru_tail].lru_next = b;
    else
        a->lru_head = b;
    a->lru_tail = b;
    a->n_cached++;
}

static void bucket_remove(block_alloc *a, int b)
{
    int *link = &a->buckets[a->blocks[b].hash & a->bucket_mask];
    while (*link != b)
        link = &a->blocks[*link].bucket_next;
    *link = a->blocks[b].bucket_next;
    a->blocks[b].has_content = false;
}

bool block_alloc_can_alloc(const block_alloc *a, int n)
{
    return n <= a->n_free + a->n_cached;
}

int block_alloc_alloc(block_alloc *a)
{
    int b;
    if (a->n_free > 0) {
        b = a->free_stack[--a->n_free];
    } else if (a->lru_head >= 0) {
        b = a->lru_head; /* evict the least recently used cached block */
        lru_unlink(a, b);
        bucket_remove(a, b);
    } else {
        return -1;
    }
    a->blocks[b].ref = 1;
    a->n_used++;
    return b;
}

void block_alloc_free(block_alloc *a, int b)
{
    block *x = &a->blocks[b];
    if (--x->ref > 0)
        return;
    a->n_used--;
    if (x->has_content)
        lru_push_tail(a, b);
    else
        a->free_stack[a->n_free++] = b;
}

static bool same_tokens(const block_alloc *a, int b, const int32_t *tokens)
{
    return memcmp(a->tokens + (size_t)b * a->block_size, tokens, (size_t)a->block_size * sizeof *tokens) == 0;
}

/* The registered block with this hash and content, or -1. */
static int find(const block_alloc *a, uint64_t hash, const int32_t *tokens)
{
    for (int b = a->buckets[hash & a->bucket_mask]; b >= 0; b = a->blocks[b].bucket_next)
        if (a->blocks[b].hash == hash && same_tokens(a, b, tokens))
            return b;
    return -1;
}

int block_alloc_lookup(block_alloc *a, uint64_t hash, const int32_t *tokens)
{
    int b = find(a, hash, tokens);
    if (b < 0)
        return -1;
    if (a->blocks[b].ref++ == 0) {
        lru_unlink(a, b);
        a->n_used++;
    }
    return b;
}

void block_alloc_register(block_alloc *a, int b, uint64_t hash, const int32_t *tokens)
{
    block *x = &a->blocks[b];
    if (x->has_content || find(a, hash, tokens) >= 0)
        return;
    x->has_content = true;
    x->hash = hash;
    memcpy(a->tokens + (size_t)b * a->block_size, tokens, (size_t)a->block_size * sizeof *tokens);
    int *head = &a->buckets[hash & a->bucket_mask];
    x->bucket_next = *head;
    *head = b;
}

void block_alloc_count_query(block_alloc *a, int query_tokens, int hit_tokens)
{
    a->query_tokens += (uint64_t)query_tokens;
    a->hit_tokens += (uint64_t)hit_tokens;
}

block_alloc_stats block_alloc_get_stats(const block_alloc *a)
{
    return (block_alloc_stats){.total = a->n_blocks, .used = a->n_used, .free = a->n_free, .cached = a->n_cached,
                               .query_tokens = a->query_tokens, .hit_tokens = a->hit_tokens};
}

int block_alloc_ref(const block_alloc *a, int b)
{
    return a->blocks[b].ref;
}
