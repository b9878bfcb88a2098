/* tokenizer.h — the loaded tokenizer.json (struct fk_tokenizer), shared by tokenizer_load.c (reads it),
 * tokenizer_encode.c (text → ids), tokenizer_bpe.c (the BPE model), tokenizer_regex.c (PCRE2) and
 * tokenizer_decode.c (ids → text). Everything is immutable after loading, so one tokenizer serves any number of
 * threads; encode and decode keep their scratch memory per call. */
#ifndef FK_TOKENIZER_H
#define FK_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "flashkernel.h"

/* A byte string inside the tokenizer's arena. */
typedef struct tok_str {
    uint32_t off, len;
} tok_str;

#define TOK_NONE UINT32_MAX /* tok_str.off of an id that has no token */

/* Open addressing: string → id. Slots hold ids; the key of id is model_tok[id]. */
typedef struct tok_vocab_map {
    int32_t *slots; /* [mask + 1], -1 = empty */
    uint32_t mask;
} tok_vocab_map;

/* Open addressing: (left id, right id) → rank and merged id. */
typedef struct tok_merge_map {
    uint64_t *keys;   /* [mask + 1] left << 32 | right; UINT64_MAX = empty */
    uint32_t *ranks;  /* [mask + 1] line of the merge in the file (the lowest merges first) */
    int32_t *merged;  /* [mask + 1] id of left + right */
    uint32_t mask;
} tok_merge_map;

typedef struct tok_added {
    tok_str content;    /* as written in the file */
    tok_str pattern;    /* what is matched: content, or its normalized form when normalized */
    int32_t id;
    bool single_word, lstrip, rstrip, normalized, special;
} tok_added;

/* The added tokens of one matching pass (raw text, or normalized text), by first byte then longest first. */
typedef struct tok_matcher {
    int32_t *order;         /* [n] indexes into added */
    int n;
    int first[257];         /* patterns starting with byte b: order[first[b] .. first[b + 1]) */
} tok_matcher;

typedef enum tok_norm_kind { TOK_NORM_PREPEND, TOK_NORM_REPLACE, TOK_NORM_NFC } tok_norm_kind;

typedef struct tok_norm {
    tok_norm_kind kind;
    tok_str a, b; /* Prepend: a = the prefix. Replace: a = pattern, b = content. NFC: unused. */
} tok_norm;

typedef enum tok_pre_kind { TOK_PRE_SPLIT, TOK_PRE_BYTE_LEVEL, TOK_PRE_METASPACE } tok_pre_kind;

typedef enum tok_prepend { TOK_PREPEND_ALWAYS, TOK_PREPEND_FIRST, TOK_PREPEND_NEVER } tok_prepend;

typedef struct tok_pre {
    tok_pre_kind kind;
    pcre2_code *re;          /* Split: its pattern; ByteLevel with use_regex: the GPT-2 pattern; else NULL */
    bool add_prefix_space;   /* ByteLevel */
    uint32_t replacement;    /* Metaspace: the character that stands for a space */
    tok_prepend prepend;     /* Metaspace */
    bool split;              /* Metaspace: split before each replacement character */
} tok_pre;

/* One TemplateProcessing "single" template: items are either ids of a special token or the sequence ($A). */
typedef struct tok_template_item {
    int32_t *ids; /* NULL for the sequence */
    int n_ids;
} tok_template_item;

typedef struct tok_template {
    tok_template_item *items;
    int n_items;
} tok_template;

typedef enum tok_dec_kind {
    TOK_DEC_BYTE_LEVEL,
    TOK_DEC_REPLACE,
    TOK_DEC_BYTE_FALLBACK,
    TOK_DEC_FUSE,
    TOK_DEC_STRIP,
    TOK_DEC_METASPACE,
} tok_dec_kind;

typedef struct tok_dec {
    tok_dec_kind kind;
    tok_str a, b;          /* Replace: pattern, content */
    uint32_t ch;           /* Strip: the character; Metaspace: the replacement */
    int64_t start, stop;   /* Strip: how many to remove at each end of every token */
    tok_prepend prepend;   /* Metaspace */
} tok_dec;

struct fk_tokenizer {
    char *arena; /* every string of the tokenizer */
    size_t arena_len, arena_cap;

    int vocab_size;      /* highest id + 1 (model vocabulary and added tokens) */
    tok_str *model_tok;  /* [vocab_size] the model's string for each id (off TOK_NONE: none) */
    tok_str *dec_tok;    /* [vocab_size] the string decode starts from: the added token's content, else model_tok */
    uint8_t *special;    /* [vocab_size] 1: dropped by decode with skip_special */
    tok_vocab_map vocab;
    tok_merge_map merges;
    int32_t *char_id;    /* [TOK_CHAR_IDS] id of each single-character token below U+0400 (-1: none): a fast path */

    /* BPE options */
    int32_t unk_id; /* -1 when none */
    bool fuse_unk, byte_fallback, ignore_merges;
    int32_t byte_id[256]; /* id of "<0xNN>", -1 when the vocabulary lacks it */

    tok_added *added;
    int n_added;
    tok_matcher raw, normalized; /* added tokens matched on the raw text, and on the normalized text */
    pcre2_code *word_re;         /* a word character, for single_word added tokens (NULL when none has it) */

    tok_norm *norm;
    int n_norm;
    tok_pre *pre;
    int n_pre;
    tok_template *post; /* applied in order when encoding with add_special */
    int n_post;
    tok_dec *dec;
    int n_dec;
    bool has_decoder; /* false: decode joins the tokens with spaces, as Hugging Face does without a decoder */
};

#define TOK_CHAR_IDS 0x400

/* The bytes of s. */
static inline const char *tokenizer_str(const fk_tokenizer *t, tok_str s)
{
    return t->arena + s.off;
}

/* p with room for need elements of elem bytes (capacity *cap, updated): p itself, a realloc of it, or NULL
 * (p untouched) when out of memory. Never NULL otherwise, even for need 0 (callers take NULL for a failure). */
static inline void *tokenizer_reserve(void *p, size_t *cap, size_t need, size_t elem)
{
    if (p && need <= *cap)
        return p;
    if (need > SIZE_MAX / 4 / elem)
        return NULL;
    size_t cap2 = need < 32 ? 64 : need * 2;
    void *q = realloc(p, cap2 * elem);
    if (q)
        *cap = cap2;
    return q;
}

/* GPT-2's byte-to-character map (ByteLevel): printable bytes stand for themselves, the other 68 for U+0100 on. */
static inline uint32_t tokenizer_byte_char(uint8_t b)
{
    if (b <= 32)
        return 256u + b;
    if (b >= 127 && b <= 160)
        return b + 162u;
    return b == 173 ? 323u : b;
}

/* Hashes of the vocabulary map (FNV-1a) and of the merge map (a 64-bit mixer). */
static inline uint64_t tokenizer_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static inline uint64_t tokenizer_hash_pair(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return key;
}

/* ---- tokenizer_encode.c ---- */

/* Applies the normalizer to s[len]: *out is malloc'd (valid UTF-8 in, valid UTF-8 out). */
fk_status tokenizer_normalize(const fk_tokenizer *t, const char *s, size_t len, char **out, size_t *out_len,
                              fk_error *err);

/* ---- tokenizer_regex.c ---- */

/* Compiles a Hugging Face (Oniguruma) pattern with PCRE2 (UTF, UCP, JIT when available). literal: match the
 * string as is. On failure, FK_ERR_FORMAT naming `what`, the pattern and PCRE2's reason. */
fk_status tokenizer_regex_compile(const char *pattern, size_t len, bool literal, const char *what, pcre2_code **out,
                                  fk_error *err);

/* The next match of re in s[len] at or after *at, as Oniguruma's find_iter yields them (an empty match right
 * after the previous one is skipped). Returns 1 with [*start, *end), 0 when there is no more, or FK_ERR_* on a
 * match failure (match limit, JIT stack). prev_end: end of the previous match, or SIZE_MAX. */
int tokenizer_regex_next(const pcre2_code *re, pcre2_match_data *md, const char *s, size_t len, size_t *at,
                         size_t prev_end, size_t *start, size_t *end, fk_error *err);

/* ---- tokenizer_bpe.c ---- */

/* Id of the string s[len] in the model vocabulary, or -1. */
int32_t tokenizer_vocab_find(const fk_tokenizer *t, const char *s, size_t len);

/* Scratch memory of BPE for one call. */
typedef struct tok_bpe_scratch {
    struct tok_symbol *sym;
    struct tok_merge *heap;
    size_t cap_sym, cap_heap;
} tok_bpe_scratch;

/* Appends the ids of one pre-tokenized word to *ids (length *n, capacity *cap; realloc'd as needed). */
fk_status tokenizer_bpe_word(const fk_tokenizer *t, const char *word, size_t len, tok_bpe_scratch *sc,
                             int32_t **ids, size_t *n, size_t *cap, fk_error *err);
void tokenizer_bpe_scratch_free(tok_bpe_scratch *sc);

/* ---- tokenizer_decode.c ---- */

/* True when decode with skip_special drops id (an id of a special added token). id must be in range. */
bool tokenizer_is_special(const fk_tokenizer *t, int32_t id);

/* True when the bytes of id (through the ByteLevel or ByteFallback decoder) begin with a UTF-8 continuation
 * byte: decoding from it starts inside a character. id must be in range. */
bool tokenizer_starts_inside_char(const fk_tokenizer *t, int32_t id);

/* fk_tokenizer_decode that also tells whether the text ends in an incomplete UTF-8 sequence from byte tokens
 * (its U+FFFD may still become a character when the next tokens bring the missing bytes). */
fk_status tokenizer_decode(const fk_tokenizer *t, const int32_t *ids, int n_ids, bool skip_special, char **text,
                           size_t *len, bool *incomplete, fk_error *err);

/* A list of strings whose bytes live in buf: what each decoder step reads and writes. */
typedef struct tok_strs {
    char *buf;
    size_t len, cap;
    struct tok_span *v; /* [n] offset and length of each string in buf */
    size_t n, cap_v;
} tok_strs;

/* Memory of repeated decodes (zeroed to start): it grows to the largest decode and is reused, so that a detokenizer
 * decoding its window on every token allocates nothing once it has. */
typedef struct tok_decode_scratch {
    tok_strs a, b;
    char *bytes; /* ByteLevel's and ByteFallback's byte runs */
    size_t cap_bytes;
} tok_decode_scratch;

/* tokenizer_decode into sc: *text (NUL-terminated) lives in sc until its next use. */
fk_status tokenizer_decode_into(const fk_tokenizer *t, const int32_t *ids, int n_ids, bool skip_special,
                                tok_decode_scratch *sc, const char **text, size_t *len, bool *incomplete,
                                fk_error *err);
void tokenizer_decode_scratch_free(tok_decode_scratch *sc);

#endif
