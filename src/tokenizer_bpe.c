/* tokenizer_bpe.c — the BPE model: vocabulary and merge lookups, and one word to ids as Hugging Face's
 * BPE::merge_word does it: characters (with byte fallback and unknown tokens), then merges applied lowest rank
 * first (ties: leftmost) over a linked list of symbols with a binary heap of candidate pairs: O(n log n) in the
 * word length. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer.h"
#include "utf8.h"

/* A symbol of the word being merged; len 0 marks one merged into its left neighbour. */
struct tok_symbol {
    int32_t id;
    int prev, next;
    size_t len;
};

/* A candidate merge of the symbol at pos with its right neighbour. */
struct tok_merge {
    uint32_t rank;
    int pos;
    int32_t merged;
};

int32_t tokenizer_vocab_find(const fk_tokenizer *t, const char *s, size_t len)
{
    const tok_vocab_map *m = &t->vocab;
    for (uint64_t i = tokenizer_hash(s, len) & m->mask;; i = (i + 1) & m->mask) {
        int32_t id = m->slots[i];
        if (id < 0)
            return -1;
        tok_str k = t->model_tok[id];
        if (k.len == len && memcmp(tokenizer_str(t, k), s, len) == 0)
            return id;
    }
}

/* Rank and merged id of the pair (left, right); false when the pair does not merge. */
static bool merge_find(const fk_tokenizer *t, int32_t left, int32_t right, uint32_t *rank, int32_t *merged)
{
    const tok_merge_map *m = &t->merges;
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    for (uint64_t i = tokenizer_hash_pair(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == UINT64_MAX)
            return false;
        if (m->keys[i] == key) {
            *rank = m->ranks[i];
            *merged = m->merged[i];
            return true;
        }
    }
}

/* Heap order: lower rank first, then the leftmost position. */
static bool before(const struct tok_merge *a, const struct tok_merge *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(struct tok_merge *h, size_t *n, struct tok_merge m)
{
    size_t i = (*n)++;
    while (i > 0 && before(&m, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = m;
}

static struct tok_merge heap_pop(struct tok_merge *h, size_t *n)
{
    struct tok_merge top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && before(&h[c + 1], &h[c]))
            c++;
        if (!before(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
    return top;
}

void tokenizer_bpe_scratch_free(tok_bpe_scratch *sc)
{
    free(sc->sym);
    free(sc->heap);
    *sc = (tok_bpe_scratch){0};
}

static void add_symbol(struct tok_symbol *sym, int *n, int32_t id, size_t len)
{
    sym[*n] = (struct tok_symbol){.id = id, .prev = *n - 1, .next = *n + 1, .len = len};
    (*n)++;
}

/* Id of one character: the table for small code points, else the vocabulary. */
static int32_t char_token(const fk_tokenizer *t, const char *s, int len, uint32_t cp)
{
    return cp < TOK_CHAR_IDS ? t->char_id[cp] : tokenizer_vocab_find(t, s, (size_t)len);
}

static bool has_byte_tokens(const fk_tokenizer *t, const char *s, int len)
{
    for (int b = 0; b < len; b++)
        if (t->byte_id[(unsigned char)s[b]] < 0)
            return false;
    return true;
}

/* The word's characters as symbols: vocabulary ids, else byte-fallback ids, else the unknown token (fused
 * with a preceding one when fuse_unk), else nothing (Hugging Face drops such a character). */
static int initial_symbols(const fk_tokenizer *t, const char *w, size_t len, struct tok_symbol *sym)
{
    int n = 0;
    int32_t unk = -1;
    size_t unk_len = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = utf8_next(w + i, len - i, &cp); /* w is valid UTF-8 */
        int32_t id = char_token(t, w + i, k, cp);
        if (id >= 0) {
            if (unk >= 0)
                add_symbol(sym, &n, unk, unk_len);
            unk = -1;
            add_symbol(sym, &n, id, (size_t)k);
        } else if (t->byte_fallback && has_byte_tokens(t, w + i, k)) {
            for (int b = 0; b < k; b++)
                add_symbol(sym, &n, t->byte_id[(unsigned char)w[i + b]], 1);
        } else if (t->unk_id >= 0) {
            if (unk >= 0 && t->fuse_unk) {
                unk_len += (size_t)k;
            } else {
                if (unk >= 0)
                    add_symbol(sym, &n, unk, unk_len);
                unk = t->unk_id;
                unk_len = (size_t)k;
            }
        }
        i += (size_t)k;
    }
    if (unk >= 0)
        add_symbol(sym, &n, unk, unk_len);
    if (n > 0)
        sym[n - 1].next = -1;
    return n;
}

fk_status tokenizer_bpe_word(const fk_tokenizer *t, const char *word, size_t len, tok_bpe_scratch *sc,
                             int32_t **ids, size_t *n_ids, size_t *cap_ids, fk_error *err)
{
    if (len == 0)
        return FK_OK;
    if (len > (size_t)INT32_MAX)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "a pre-tokenized word of %zu bytes is too long", len);
    if (t->ignore_merges) {
        int32_t id = tokenizer_vocab_find(t, word, len);
        if (id >= 0) {
            int32_t *v = tokenizer_reserve(*ids, cap_ids, *n_ids + 1, sizeof **ids);
            if (!v)
                return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
            *ids = v;
            v[(*n_ids)++] = id;
            return FK_OK;
        }
    }
    /* At most one symbol per byte; the heap gets one entry per pair and at most two per merge. */
    struct tok_symbol *sym = tokenizer_reserve(sc->sym, &sc->cap_sym, len, sizeof *sc->sym);
    if (sym)
        sc->sym = sym;
    struct tok_merge *heap = sym ? tokenizer_reserve(sc->heap, &sc->cap_heap, 3 * len, sizeof *sc->heap) : NULL;
    if (!heap)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory for a word of %zu bytes", len);
    sc->heap = heap;
    int n = initial_symbols(t, word, len, sym);
    size_t n_heap = 0;
    for (int i = 0; i + 1 < n; i++) {
        struct tok_merge m = {.pos = i};
        if (merge_find(t, sym[i].id, sym[i + 1].id, &m.rank, &m.merged))
            heap_push(heap, &n_heap, m);
    }
    while (n_heap > 0) {
        struct tok_merge top = heap_pop(heap, &n_heap);
        struct tok_symbol *s = &sym[top.pos];
        if (s->len == 0 || s->next < 0)
            continue;
        uint32_t rank;
        int32_t merged;
        /* Stale entry: the pair changed since it was queued. */
        if (!merge_find(t, s->id, sym[s->next].id, &rank, &merged) || merged != top.merged)
            continue;
        int r = s->next;
        s->id = top.merged;
        s->len += sym[r].len;
        s->next = sym[r].next;
        sym[r].len = 0;
        if (s->next >= 0)
            sym[s->next].prev = top.pos;
        struct tok_merge m;
        if (s->prev >= 0 && merge_find(t, sym[s->prev].id, s->id, &m.rank, &m.merged)) {
            m.pos = s->prev;
            heap_push(heap, &n_heap, m);
        }
        if (s->next >= 0 && merge_find(t, s->id, sym[s->next].id, &m.rank, &m.merged)) {
            m.pos = top.pos;
            heap_push(heap, &n_heap, m);
        }
    }
    int32_t *v = tokenizer_reserve(*ids, cap_ids, *n_ids + (size_t)n, sizeof **ids);
    if (!v)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    *ids = v;
    for (int i = n > 0 ? 0 : -1; i >= 0; i = sym[i].next)
        v[(*n_ids)++] = sym[i].id;
    return FK_OK;
}
