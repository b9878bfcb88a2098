/* test_block_alloc.c — property test of the block pool: 10^5 random alloc / append / free / prefix-hit / evict
 * operations by simulated sequences, each checked against a plain reference model kept here (reference counts,
 * which blocks hold which content, release order for LRU), with used + free + cached = total at every step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "block_alloc.h"
#include "test_util.h"

enum { BLOCKS = 64, B = 4, MAX_SEQS = 12, MAX_SEQ_BLOCKS = 24, OPS = 100000 };

/* The reference model. */
static int ref[BLOCKS];
static bool has_content[BLOCKS];
static uint64_t content_hash[BLOCKS];
static int32_t content_tokens[BLOCKS][B];
static long released_at[BLOCKS]; /* when a cached block last dropped to ref 0 */
static long now;

typedef struct seq {
    bool live;
    int32_t tokens[MAX_SEQ_BLOCKS * B];
    int n_tokens;
    int blocks[MAX_SEQ_BLOCKS];
    int n_blocks;
    uint64_t chain; /* hash of the last full block */
    int n_registered;
} seq;

static seq seqs[MAX_SEQS];
static block_alloc *pool;
static uint64_t rng;

static void check_counts(void)
{
    int used = 0, free_ = 0, cached = 0;
    for (int b = 0; b < BLOCKS; b++) {
        assert_int_equal(block_alloc_ref(pool, b), ref[b]);
        used += ref[b] > 0;
        cached += ref[b] == 0 && has_content[b];
        free_ += ref[b] == 0 && !has_content[b];
    }
    block_alloc_stats s = block_alloc_get_stats(pool);
    assert_int_equal(s.used, used);
    assert_int_equal(s.cached, cached);
    assert_int_equal(s.free, free_);
    assert_int_equal(s.used + s.free + s.cached, s.total);
    /* Every reference is held by a live sequence, once per holder. */
    int held[BLOCKS] = {0};
    for (int i = 0; i < MAX_SEQS; i++)
        for (int j = 0; seqs[i].live && j < seqs[i].n_blocks; j++)
            held[seqs[i].blocks[j]]++;
    for (int b = 0; b < BLOCKS; b++)
        assert_int_equal(held[b], ref[b]);
}

/* alloc() must take a free block if there is one, else the least recently released cached block. */
static int checked_alloc(void)
{
    int expect_lru = -1;
    bool any_free = false;
    for (int b = 0; b < BLOCKS; b++) {
        any_free |= ref[b] == 0 && !has_content[b];
        if (ref[b] == 0 && has_content[b] && (expect_lru < 0 || released_at[b] < released_at[expect_lru]))
            expect_lru = b;
    }
    assert_int_equal(block_alloc_can_alloc(pool, 1), any_free || expect_lru >= 0);
    int b = block_alloc_alloc(pool);
    if (!any_free && expect_lru < 0) {
        assert_int_equal(b, -1);
        return -1;
    }
    assert_true(b >= 0 && b < BLOCKS);
    assert_int_equal(ref[b], 0);
    if (any_free)
        assert_false(has_content[b]);
    else
        assert_int_equal(b, expect_lru);
    has_content[b] = false; /* evicted, if it was cached */
    ref[b] = 1;
    return b;
}

static void checked_free(int b)
{
    block_alloc_free(pool, b);
    assert_true(ref[b] > 0);
    if (--ref[b] == 0 && has_content[b])
        released_at[b] = ++now;
}

static void release_seq(seq *s)
{
    for (int j = 0; j < s->n_blocks; j++)
        checked_free(s->blocks[j]);
    s->live = false;
}

/* Registers the sequence's newly full blocks. */
static void register_full(seq *s)
{
    while (s->n_registered < s->n_tokens / B) {
        int j = s->n_registered++;
        const int32_t *t = s->tokens + j * B;
        s->chain = block_hash(s->chain, t, B);
        int b = s->blocks[j];
        bool dup = false;
        for (int o = 0; o < BLOCKS; o++)
            dup |= has_content[o] && content_hash[o] == s->chain && !memcmp(content_tokens[o], t, sizeof(int32_t) * B);
        block_alloc_register(pool, b, s->chain, t);
        if (!has_content[b] && !dup) {
            has_content[b] = true;
            content_hash[b] = s->chain;
            memcpy(content_tokens[b], t, sizeof(int32_t) * B);
        }
    }
}

/* Appends one token, taking a new block when the last one is full. */
static bool append(seq *s, int32_t token)
{
    if (s->n_tokens == MAX_SEQ_BLOCKS * B)
        return false;
    if (s->n_tokens == s->n_blocks * B) {
        int b = checked_alloc();
        if (b < 0)
            return false;
        s->blocks[s->n_blocks++] = b;
    }
    s->tokens[s->n_tokens++] = token;
    register_full(s);
    return true;
}

/* A new sequence whose prompt reuses every cached full block of its prefix, then allocates the rest. */
static void start(seq *s)
{
    memset(s, 0, sizeof *s);
    s->live = true;
    int32_t prompt[MAX_SEQ_BLOCKS * B];
    int n = 1 + (int)tu_below(&rng, 10 * B);
    /* Shared prefixes come from a tiny alphabet in the first blocks. */
    for (int i = 0; i < n; i++)
        prompt[i] = i < 2 * B ? (int32_t)tu_below(&rng, 2) : (int32_t)tu_below(&rng, 1000);
    int hits = 0;
    uint64_t chain = 0;
    for (int j = 0; j < n / B; j++) {
        chain = block_hash(chain, prompt + j * B, B);
        int expect = -1;
        for (int o = 0; o < BLOCKS; o++)
            if (has_content[o] && content_hash[o] == chain && !memcmp(content_tokens[o], prompt + j * B, sizeof(int32_t) * B))
                expect = o;
        int b = block_alloc_lookup(pool, chain, prompt + j * B);
        assert_int_equal(b, expect);
        if (b < 0)
            break;
        ref[b]++;
        s->blocks[s->n_blocks++] = b;
        memcpy(s->tokens + j * B, prompt + j * B, sizeof(int32_t) * B);
        s->n_tokens += B;
        s->n_registered++;
        s->chain = chain;
        hits++;
    }
    block_alloc_count_query(pool, n, hits * B);
    for (int i = s->n_tokens; i < n; i++)
        if (!append(s, prompt[i])) {
            release_seq(s); /* pool exhausted: give back what it took, as a scheduler would */
            return;
        }
}

static void test_random_operations(void **state)
{
    (void)state;
    rng = tu_seed();
    assert_int_equal(block_alloc_create(BLOCKS, B, &pool, NULL), FK_OK);
    for (long op = 0; op < OPS; op++) {
        seq *s = &seqs[tu_below(&rng, MAX_SEQS)];
        uint32_t what = tu_below(&rng, 10);
        if (!s->live)
            start(s);
        else if (what < 6)
            append(s, (int32_t)tu_below(&rng, 3));
        else
            release_seq(s);
        check_counts();
    }
    for (int i = 0; i < MAX_SEQS; i++)
        if (seqs[i].live)
            release_seq(&seqs[i]);
    check_counts();
    block_alloc_stats st = block_alloc_get_stats(pool);
    assert_int_equal(st.used, 0);
    assert_true(st.hit_tokens > 0 && st.hit_tokens <= st.query_tokens);
    assert_true(st.cached > 0);
    printf("after %d ops: %d cached, %d free; prefix cache %llu of %llu tokens hit\n", OPS, st.cached, st.free,
           (unsigned long long)st.hit_tokens, (unsigned long long)st.query_tokens);
    block_alloc_destroy(pool);
}

static void test_collision_never_shares_wrong_content(void **state)
{
    (void)state;
    block_alloc *a;
    assert_int_equal(block_alloc_create(4, 2, &a, NULL), FK_OK);
    int32_t t1[2] = {1, 2}, t2[2] = {3, 4};
    int b = block_alloc_alloc(a);
    block_alloc_register(a, b, 42, t1);
    block_alloc_free(a, b);
    /* Same hash, other tokens: a miss. Same hash and tokens: the block, taken out of the LRU. */
    assert_int_equal(block_alloc_lookup(a, 42, t2), -1);
    assert_int_equal(block_alloc_lookup(a, 42, t1), b);
    assert_int_equal(block_alloc_get_stats(a).cached, 0);
    assert_int_equal(block_alloc_get_stats(a).used, 1);
    block_alloc_free(a, b);
    assert_int_equal(block_alloc_get_stats(a).cached, 1);
    block_alloc_destroy(a);
    assert_int_equal(block_alloc_create(0, 16, &a, NULL), FK_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_operations),
        cmocka_unit_test(test_collision_never_shares_wrong_content),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
