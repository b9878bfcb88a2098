/* tokenizer_load.c — reads a Hugging Face tokenizer.json into struct fk_tokenizer: the BPE model (vocabulary,
 * merges as "a b" strings or [a, b] pairs, options), the added tokens, and the normalizer, pre-tokenizer,
 * post-processor and decoder, every field checked. Nested Sequences are flattened into one list of steps per
 * component (applying a Sequence is applying its members in order). An unknown component type is
 * FK_ERR_UNSUPPORTED naming it; truncation and padding are ignored, as transformers' fast tokenizers do when
 * they are not asked for. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "tokenizer.h"
#include "utf8.h"

#define TOKENIZER_JSON_MAX_BYTES (512u << 20)
#define TOK_MAX_ID ((1 << 24) - 1) /* ids above this are refused: real vocabularies stay below 2^18 */

/* The pattern Hugging Face's ByteLevel pre-tokenizer fixes when use_regex is true (GPT-2's). */
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Rust regex's \w, which a single_word added token must not touch: Alphabetic, Mark, Decimal_Number,
 * Connector_Punctuation, Join_Control. Alphabetic is Letter, Letter_Number, marks and a few symbols (the circled
 * and squared Latin letters), written out here as PCRE2 has no Alphabetic property. */
static const char WORD_CHAR[] = "[\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}\\x{24B6}-\\x{24E9}"
                                "\\x{1F130}-\\x{1F149}\\x{1F150}-\\x{1F169}\\x{1F170}-\\x{1F189}]";

typedef struct loader {
    fk_tokenizer *t;
    const char *path;
    fk_error *err;
} loader;

/* FK_ERR_* with the message "<path>: <where>: <formatted>". */
static fk_status fail(loader *L, fk_status status, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static fk_status fail(loader *L, fk_status status, const char *where, const char *fmt, ...)
{
    char msg[FK_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fk_error_set(L->err, status, "%s: %s: %s", L->path, where, msg);
}

static fk_status oom(loader *L)
{
    return fk_error_set(L->err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory", L->path);
}

/* "<path>: <where>", the `file` of json.c's messages. */
static const char *ctx(loader *L, const char *where, char *buf, size_t size)
{
    snprintf(buf, size, "%s: %s", L->path, where);
    return buf;
}

/* Copies s[len] (valid UTF-8 required) into the arena. */
static fk_status intern(loader *L, const char *s, size_t len, const char *where, tok_str *out)
{
    fk_tokenizer *t = L->t;
    size_t bad = utf8_check(s, len);
    if (bad < len)
        return fail(L, FK_ERR_FORMAT, where, "string is not valid UTF-8 at byte %zu", bad);
    if (len >= UINT32_MAX || t->arena_len + len >= UINT32_MAX)
        return fail(L, FK_ERR_FORMAT, where, "more than 4 GiB of strings");
    char *a = tokenizer_reserve(t->arena, &t->arena_cap, t->arena_len + len + 1, 1);
    if (!a)
        return oom(L);
    t->arena = a;
    memcpy(a + t->arena_len, s, len);
    a[t->arena_len + len] = '\0';
    *out = (tok_str){.off = (uint32_t)t->arena_len, .len = (uint32_t)len};
    t->arena_len += len + 1;
    return FK_OK;
}

/* A required string field, interned. */
static fk_status get_str(loader *L, const cJSON *obj, const char *key, const char *where, tok_str *out)
{
    char buf[512], w[512];
    const char *s = NULL;
    fk_status st = json_get_string(obj, key, true, &s, ctx(L, where, buf, sizeof buf), L->err);
    if (st)
        return st;
    snprintf(w, sizeof w, "%s.%s", where, key);
    return intern(L, s, strlen(s), w, out);
}

/* A field that must be a single character (Metaspace replacement, Strip content). */
static fk_status get_char(loader *L, const cJSON *obj, const char *key, const char *where, uint32_t *out)
{
    char buf[512];
    const char *s = NULL;
    fk_status st = json_get_string(obj, key, true, &s, ctx(L, where, buf, sizeof buf), L->err);
    if (st)
        return st;
    size_t len = strlen(s);
    int k = len ? utf8_next(s, len, out) : 0;
    if (k <= 0 || (size_t)k != len)
        return fail(L, FK_ERR_FORMAT, where, "\"%s\" must be one character, got \"%s\"", key, s);
    return FK_OK;
}

static fk_status get_bool(loader *L, const cJSON *obj, const char *key, const char *where, bool *out)
{
    char buf[512];
    return json_get_bool(obj, key, out, ctx(L, where, buf, sizeof buf), L->err);
}

/* The "type" of a component object. */
static fk_status get_type(loader *L, const cJSON *obj, const char *where, const char **type)
{
    char buf[512];
    if (!cJSON_IsObject(obj))
        return fail(L, FK_ERR_FORMAT, where, "must be an object or null");
    return json_get_string(obj, "type", true, type, ctx(L, where, buf, sizeof buf), L->err);
}

/* A pattern object: {"String": s} or {"Regex": r}. */
static fk_status get_pattern(loader *L, const cJSON *obj, const char *where, const char **s, bool *regex)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(obj, "pattern");
    const cJSON *str = cJSON_GetObjectItemCaseSensitive(p, "String");
    const cJSON *re = cJSON_GetObjectItemCaseSensitive(p, "Regex");
    if (!cJSON_IsObject(p) || cJSON_GetArraySize(p) != 1 || !(cJSON_IsString(str) || cJSON_IsString(re)))
        return fail(L, FK_ERR_FORMAT, where, "\"pattern\" must be {\"String\": ...} or {\"Regex\": ...}");
    *regex = cJSON_IsString(re);
    *s = *regex ? re->valuestring : str->valuestring;
    return FK_OK;
}

/* The list a Sequence holds, under `key`. */
static fk_status get_list(loader *L, const cJSON *obj, const char *key, const char *where, const cJSON **out)
{
    *out = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsArray(*out))
        return fail(L, FK_ERR_FORMAT, where, "\"%s\" must be an array", key);
    return FK_OK;
}

static fk_status get_prepend_scheme(loader *L, const cJSON *obj, const char *where, tok_prepend *out)
{
    bool add_prefix_space = true; /* the legacy field, before prepend_scheme existed */
    fk_status st = get_bool(L, obj, "add_prefix_space", where, &add_prefix_space);
    if (st)
        return st;
    *out = add_prefix_space ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
    char buf[512];
    const char *scheme = NULL;
    if ((st = json_get_string(obj, "prepend_scheme", false, &scheme, ctx(L, where, buf, sizeof buf), L->err)))
        return st;
    if (!scheme)
        return FK_OK;
    if (strcmp(scheme, "always") == 0)
        *out = TOK_PREPEND_ALWAYS;
    else if (strcmp(scheme, "first") == 0)
        *out = TOK_PREPEND_FIRST;
    else if (strcmp(scheme, "never") == 0)
        *out = TOK_PREPEND_NEVER;
    else
        return fail(L, FK_ERR_FORMAT, where, "\"prepend_scheme\" must be always, first or never, got \"%s\"", scheme);
    return FK_OK;
}

/* ---- model ---- */

static uint32_t table_size(size_t n)
{
    uint32_t size = 16;
    while (size < 2 * n)
        size *= 2;
    return size;
}

/* Ids of the vocabulary object: model_tok, and the string → id map. */
static fk_status load_vocab(loader *L, const cJSON *vocab)
{
    fk_tokenizer *t = L->t;
    if (!cJSON_IsObject(vocab))
        return fail(L, FK_ERR_FORMAT, "model", "\"vocab\" must be an object of token: id");
    size_t n = 0;
    for (const cJSON *e = vocab->child; e; e = e->next) {
        int64_t id;
        if (!json_as_int(e, &id) || id < 0 || id > TOK_MAX_ID)
            return fail(L, FK_ERR_FORMAT, "model.vocab", "the id of \"%s\" must be an integer in [0, %d]", e->string,
                        TOK_MAX_ID);
        if (id >= t->vocab_size)
            t->vocab_size = (int)id + 1;
        n++;
    }
    t->model_tok = malloc((size_t)t->vocab_size * sizeof *t->model_tok + 1);
    t->vocab.mask = table_size(n) - 1;
    t->vocab.slots = malloc(((size_t)t->vocab.mask + 1) * sizeof *t->vocab.slots);
    if (!t->model_tok || !t->vocab.slots)
        return oom(L);
    for (int i = 0; i < t->vocab_size; i++)
        t->model_tok[i] = (tok_str){.off = TOK_NONE};
    memset(t->vocab.slots, 0xff, ((size_t)t->vocab.mask + 1) * sizeof *t->vocab.slots);
    for (const cJSON *e = vocab->child; e; e = e->next) {
        int id = e->valueint;
        if (t->model_tok[id].off != TOK_NONE)
            return fail(L, FK_ERR_FORMAT, "model.vocab", "id %d is given to both \"%s\" and \"%s\"", id,
                        tokenizer_str(t, t->model_tok[id]), e->string);
        fk_status st = intern(L, e->string, strlen(e->string), "model.vocab", &t->model_tok[id]);
        if (st)
            return st;
        size_t len = t->model_tok[id].len;
        uint32_t i = (uint32_t)tokenizer_hash(e->string, len) & t->vocab.mask;
        while (t->vocab.slots[i] >= 0) /* keys are unique: json_parse refuses duplicate keys */
            i = (i + 1) & t->vocab.mask;
        t->vocab.slots[i] = id;
    }
    return FK_OK;
}

/* One merge: both parts and their concatenation must be in the vocabulary. A pair listed twice keeps its last
 * rank, as Hugging Face's map does. */
static fk_status add_merge(loader *L, const char *a, size_t na, const char *b, size_t nb, uint32_t rank, int index)
{
    fk_tokenizer *t = L->t;
    char where[64];
    snprintf(where, sizeof where, "model.merges[%d]", index);
    int32_t left = tokenizer_vocab_find(t, a, na), right = tokenizer_vocab_find(t, b, nb);
    if (left < 0 || right < 0) {
        const char *missing = left < 0 ? a : b;
        int len = (int)(left < 0 ? na : nb);
        return fail(L, FK_ERR_FORMAT, where, "\"%.*s\" is not in the vocabulary", len > 200 ? 200 : len, missing);
    }
    char *ab = malloc(na + nb + 1);
    if (!ab)
        return oom(L);
    memcpy(ab, a, na);
    memcpy(ab + na, b, nb);
    int32_t merged = tokenizer_vocab_find(t, ab, na + nb);
    if (merged < 0) {
        fk_status st = fail(L, FK_ERR_FORMAT, where, "the merge \"%.*s\" is not in the vocabulary",
                            (int)(na + nb > 200 ? 200 : na + nb), ab);
        free(ab);
        return st;
    }
    free(ab);
    tok_merge_map *m = &t->merges;
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    uint64_t i = tokenizer_hash_pair(key) & m->mask;
    while (m->keys[i] != UINT64_MAX && m->keys[i] != key)
        i = (i + 1) & m->mask;
    m->keys[i] = key;
    m->ranks[i] = rank;
    m->merged[i] = merged;
    return FK_OK;
}

static fk_status load_merges(loader *L, const cJSON *merges)
{
    fk_tokenizer *t = L->t;
    if (!cJSON_IsArray(merges))
        return fail(L, FK_ERR_FORMAT, "model", "\"merges\" must be an array");
    int n = cJSON_GetArraySize(merges);
    tok_merge_map *m = &t->merges;
    m->mask = table_size((size_t)n) - 1;
    size_t slots = (size_t)m->mask + 1;
    m->keys = malloc(slots * sizeof *m->keys);
    m->ranks = malloc(slots * sizeof *m->ranks);
    m->merged = malloc(slots * sizeof *m->merged);
    if (!m->keys || !m->ranks || !m->merged)
        return oom(L);
    memset(m->keys, 0xff, slots * sizeof *m->keys);
    bool strings = n > 0 && cJSON_IsString(merges->child);
    uint32_t rank = 0;
    int index = 0;
    for (const cJSON *e = merges->child; e; e = e->next, index++) {
        char where[64];
        snprintf(where, sizeof where, "model.merges[%d]", index);
        fk_status st;
        if (strings) {
            /* "a b": exactly one space; "#version" lines are comments (as in merges.txt). */
            if (!cJSON_IsString(e))
                return fail(L, FK_ERR_FORMAT, where, "merges must be all \"a b\" strings or all [a, b] pairs");
            const char *s = e->valuestring, *sp = strchr(s, ' ');
            if (strncmp(s, "#version", 8) == 0)
                continue;
            if (!sp || strchr(sp + 1, ' '))
                return fail(L, FK_ERR_FORMAT, where, "\"%.200s\" is not two tokens separated by one space", s);
            st = add_merge(L, s, (size_t)(sp - s), sp + 1, strlen(sp + 1), rank++, index);
        } else {
            const cJSON *a = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
            if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(a) || !cJSON_IsString(b))
                return fail(L, FK_ERR_FORMAT, where, "merges must be all \"a b\" strings or all [a, b] pairs");
            st = add_merge(L, a->valuestring, strlen(a->valuestring), b->valuestring, strlen(b->valuestring),
                           rank++, index);
        }
        if (st)
            return st;
    }
    return FK_OK;
}

/* continuing_subword_prefix / end_of_word_suffix: only absent, null or "" (GPT-2 writes "") is supported. */
static fk_status check_affix(loader *L, const cJSON *model, const char *key)
{
    char buf[512];
    const char *s = NULL;
    fk_status st = json_get_string(model, key, false, &s, ctx(L, "model", buf, sizeof buf), L->err);
    if (st)
        return st;
    if (s && s[0])
        return fail(L, FK_ERR_UNSUPPORTED, "model", "BPE with %s \"%s\" is not supported", key, s);
    return FK_OK;
}

static fk_status load_model(loader *L, const cJSON *root)
{
    fk_tokenizer *t = L->t;
    char buf[512];
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model))
        return fail(L, FK_ERR_FORMAT, "model", "required and must be an object");
    const char *type = NULL;
    fk_status st = json_get_string(model, "type", false, &type, ctx(L, "model", buf, sizeof buf), L->err);
    if (st)
        return st;
    if (!type && !cJSON_GetObjectItemCaseSensitive(model, "merges")) /* Hugging Face guesses the type by fields */
        return fail(L, FK_ERR_FORMAT, "model", "\"type\" is missing");
    if (type && strcmp(type, "BPE") != 0)
        return fail(L, FK_ERR_UNSUPPORTED, "model", "model type \"%s\" is not supported (only BPE)", type);
    double dropout = 0;
    if ((st = json_get_double(model, "dropout", false, 0, 1, &dropout, ctx(L, "model", buf, sizeof buf), L->err)))
        return st;
    if (dropout > 0)
        return fail(L, FK_ERR_UNSUPPORTED, "model", "BPE dropout %g is not supported (it makes encoding random)",
                    dropout);
    if ((st = check_affix(L, model, "continuing_subword_prefix")) ||
        (st = check_affix(L, model, "end_of_word_suffix")) ||
        (st = get_bool(L, model, "fuse_unk", "model", &t->fuse_unk)) ||
        (st = get_bool(L, model, "byte_fallback", "model", &t->byte_fallback)) ||
        (st = get_bool(L, model, "ignore_merges", "model", &t->ignore_merges)) ||
        (st = load_vocab(L, cJSON_GetObjectItemCaseSensitive(model, "vocab"))) ||
        (st = load_merges(L, cJSON_GetObjectItemCaseSensitive(model, "merges"))))
        return st;
    const char *unk = NULL;
    if ((st = json_get_string(model, "unk_token", false, &unk, ctx(L, "model", buf, sizeof buf), L->err)))
        return st;
    t->unk_id = unk ? tokenizer_vocab_find(t, unk, strlen(unk)) : -1;
    if (unk && t->unk_id < 0)
        return fail(L, FK_ERR_FORMAT, "model", "unk_token \"%.200s\" is not in the vocabulary", unk);
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_id[b] = tokenizer_vocab_find(t, name, 6);
    }
    t->char_id = malloc(TOK_CHAR_IDS * sizeof *t->char_id);
    if (!t->char_id)
        return oom(L);
    for (uint32_t cp = 0; cp < TOK_CHAR_IDS; cp++) {
        char c[4];
        t->char_id[cp] = tokenizer_vocab_find(t, c, (size_t)utf8_put(cp, c));
    }
    return FK_OK;
}

/* ---- added tokens ---- */

static fk_status load_added(loader *L, const cJSON *root)
{
    fk_tokenizer *t = L->t;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!list || cJSON_IsNull(list))
        return FK_OK;
    if (!cJSON_IsArray(list))
        return fail(L, FK_ERR_FORMAT, "added_tokens", "must be an array");
    t->added = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *t->added);
    if (!t->added)
        return oom(L);
    int index = 0;
    for (const cJSON *e = list->child; e; e = e->next, index++) {
        char where[64], buf[512];
        snprintf(where, sizeof where, "added_tokens[%d]", index);
        if (!cJSON_IsObject(e))
            return fail(L, FK_ERR_FORMAT, where, "must be an object");
        tok_added *a = &t->added[t->n_added];
        int64_t id;
        a->normalized = true; /* Hugging Face's defaults */
        fk_status st;
        if ((st = json_get_int(e, "id", true, 0, TOK_MAX_ID, &id, ctx(L, where, buf, sizeof buf), L->err)) ||
            (st = get_str(L, e, "content", where, &a->content)) ||
            (st = get_bool(L, e, "single_word", where, &a->single_word)) ||
            (st = get_bool(L, e, "lstrip", where, &a->lstrip)) || (st = get_bool(L, e, "rstrip", where, &a->rstrip)) ||
            (st = get_bool(L, e, "normalized", where, &a->normalized)) ||
            (st = get_bool(L, e, "special", where, &a->special)))
            return st;
        if (a->content.len == 0) /* Hugging Face ignores empty added tokens */
            continue;
        a->id = (int32_t)id;
        const char *content = tokenizer_str(t, a->content);
        int32_t model_id = tokenizer_vocab_find(t, content, a->content.len);
        if (model_id >= 0 && model_id != a->id)
            return fail(L, FK_ERR_FORMAT, where, "\"%.200s\" has id %d, but the vocabulary gives it %d", content,
                        a->id, model_id);
        for (int i = 0; i < t->n_added; i++)
            if (t->added[i].id == a->id ||
                (t->added[i].content.len == a->content.len &&
                 memcmp(tokenizer_str(t, t->added[i].content), content, a->content.len) == 0))
                return fail(L, FK_ERR_FORMAT, where, "\"%.200s\" (id %d) repeats added_tokens[%d]", content, a->id,
                            i);
        if (a->id >= t->vocab_size)
            t->vocab_size = a->id + 1;
        t->n_added++;
    }
    return FK_OK;
}

/* A string for sorting: its bytes (the arena does not move while these are in use). */
typedef struct bytes {
    const char *p;
    uint32_t len;
} bytes;

static int compare_bytes(const void *pa, const void *pb)
{
    const bytes *a = pa, *b = pb;
    int c = memcmp(a->p, b->p, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* What decode starts from, and which ids it drops with skip_special, as Hugging Face 0.23 does: an added
 * token's string is its normalized form when it is normalized (its pattern), and an id is special when its string
 * equals the content of a special added token (strings are compared, so a vocabulary token equal to one counts,
 * and a normalized special token whose normalized form differs does not).
 * model_n: ids the vocabulary object covers; added tokens may lie beyond. */
static fk_status build_decode_tables(loader *L, int model_n)
{
    fk_tokenizer *t = L->t;
    size_t n = (size_t)t->vocab_size;
    tok_str *model_tok = realloc(t->model_tok, n * sizeof *model_tok + 1);
    if (!model_tok)
        return oom(L);
    t->model_tok = model_tok;
    for (size_t i = (size_t)model_n; i < n; i++)
        model_tok[i] = (tok_str){.off = TOK_NONE};
    t->dec_tok = malloc(n * sizeof *t->dec_tok + 1);
    t->special = calloc(n + 1, 1);
    bytes *specials = malloc(((size_t)t->n_added + 1) * sizeof *specials);
    if (!t->dec_tok || !t->special || !specials) {
        free(specials);
        return oom(L);
    }
    memcpy(t->dec_tok, model_tok, n * sizeof *t->dec_tok);
    size_t n_specials = 0;
    for (int i = 0; i < t->n_added; i++) {
        const tok_added *a = &t->added[i];
        t->dec_tok[a->id] = a->pattern;
        if (a->special)
            specials[n_specials++] = (bytes){tokenizer_str(t, a->content), a->content.len};
    }
    qsort(specials, n_specials, sizeof *specials, compare_bytes);
    for (size_t k = 0; k < n_specials; k++) {
        int32_t m = tokenizer_vocab_find(t, specials[k].p, specials[k].len);
        if (m >= 0 && t->dec_tok[m].off == model_tok[m].off)
            t->special[m] = 1;
    }
    for (int i = 0; i < t->n_added; i++) {
        tok_str s = t->dec_tok[t->added[i].id];
        bytes key = {tokenizer_str(t, s), s.len};
        if (n_specials && bsearch(&key, specials, n_specials, sizeof *specials, compare_bytes))
            t->special[t->added[i].id] = 1;
    }
    free(specials);
    return FK_OK;
}

/* Sort key of the added-token matchers: first byte, then longest first, then special tokens before the others
 * and file order (the order of Hugging Face's patterns, which decides between equal ones). */
typedef struct match_key {
    unsigned char first;
    bool special;
    uint32_t len;
    int32_t index;
} match_key;

static int compare_keys(const void *pa, const void *pb)
{
    const match_key *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    if (a->special != b->special)
        return a->special ? -1 : 1;
    return a->index < b->index ? -1 : 1;
}

static fk_status build_matcher(loader *L, bool normalized, tok_matcher *m)
{
    fk_tokenizer *t = L->t;
    m->order = malloc(((size_t)t->n_added + 1) * sizeof *m->order);
    match_key *keys = malloc(((size_t)t->n_added + 1) * sizeof *keys);
    if (!m->order || !keys) {
        free(keys);
        return oom(L);
    }
    for (int i = 0; i < t->n_added; i++) {
        const tok_added *a = &t->added[i];
        if (a->normalized == normalized && a->pattern.len > 0)
            keys[m->n++] = (match_key){.first = (unsigned char)tokenizer_str(t, a->pattern)[0],
                                       .special = a->special, .len = a->pattern.len, .index = i};
    }
    qsort(keys, (size_t)m->n, sizeof *keys, compare_keys);
    int k = 0;
    for (int b = 0; b <= 256; b++) {
        m->first[b] = k;
        while (b < 256 && k < m->n && keys[k].first == b)
            k++;
    }
    for (int i = 0; i < m->n; i++)
        m->order[i] = keys[i].index;
    free(keys);
    return FK_OK;
}

/* The patterns the added tokens are matched by: normalized tokens match their normalized content. */
static fk_status build_matchers(loader *L)
{
    fk_tokenizer *t = L->t;
    for (int i = 0; i < t->n_added; i++) {
        tok_added *a = &t->added[i];
        a->pattern = a->content;
        if (!a->normalized || t->n_norm == 0)
            continue;
        char *s;
        size_t len;
        fk_status st = tokenizer_normalize(t, tokenizer_str(t, a->content), a->content.len, &s, &len, L->err);
        if (st)
            return st;
        char where[64];
        snprintf(where, sizeof where, "added_tokens[%d]", i);
        st = intern(L, s, len, where, &a->pattern);
        free(s);
        if (st)
            return st;
    }
    fk_status st = build_matcher(L, false, &t->raw);
    if (st || (st = build_matcher(L, true, &t->normalized)))
        return st;
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].single_word) {
            char buf[512];
            return tokenizer_regex_compile(WORD_CHAR, sizeof WORD_CHAR - 1, false, ctx(L, "added_tokens", buf, sizeof buf),
                                           &t->word_re, L->err);
        }
    return FK_OK;
}

/* ---- components ---- */

/* Appends an element to one of the step lists. */
#define PUSH(L, list, n, value)                                                                                 \
    do {                                                                                                        \
        void *grown_ = realloc((list), ((size_t)(n) + 1) * sizeof *(list));                                    \
        if (!grown_)                                                                                            \
            return oom(L);                                                                                      \
        (list) = grown_;                                                                                        \
        (list)[(n)++] = (value);                                                                                \
    } while (0)

typedef fk_status (*component_loader)(loader *L, const cJSON *c, const char *where);

/* A "Sequence" normalizer, pre-tokenizer, post-processor or decoder: loads each entry of its list `key` in order. */
static fk_status load_sequence(loader *L, const cJSON *c, const char *key, const char *where, component_loader load)
{
    const cJSON *list;
    fk_status st = get_list(L, c, key, where, &list);
    if (st)
        return st;
    int i = 0;
    for (const cJSON *e = list->child; e; e = e->next, i++) {
        char w[512];
        snprintf(w, sizeof w, "%s.%s[%d]", where, key, i);
        if ((st = load(L, e, w)))
            return st;
    }
    return FK_OK;
}

static fk_status load_normalizer(loader *L, const cJSON *n, const char *where)
{
    fk_tokenizer *t = L->t;
    if (!n || cJSON_IsNull(n))
        return FK_OK;
    const char *type;
    fk_status st = get_type(L, n, where, &type);
    if (st)
        return st;
    if (strcmp(type, "Sequence") == 0)
        return load_sequence(L, n, "normalizers", where, load_normalizer);
    tok_norm step = {0};
    if (strcmp(type, "Prepend") == 0) {
        step.kind = TOK_NORM_PREPEND;
        st = get_str(L, n, "prepend", where, &step.a);
    } else if (strcmp(type, "Replace") == 0) {
        const char *pattern;
        bool regex;
        step.kind = TOK_NORM_REPLACE;
        if ((st = get_pattern(L, n, where, &pattern, &regex)))
            return st;
        if (regex)
            return fail(L, FK_ERR_UNSUPPORTED, where, "Replace with a Regex pattern is not supported");
        if (!pattern[0])
            return fail(L, FK_ERR_FORMAT, where, "the Replace pattern is empty");
        if ((st = intern(L, pattern, strlen(pattern), where, &step.a)))
            return st;
        st = get_str(L, n, "content", where, &step.b);
    } else if (strcmp(type, "NFC") == 0) {
        step.kind = TOK_NORM_NFC;
    } else {
        return fail(L, FK_ERR_UNSUPPORTED, where, "normalizer type \"%s\" is not supported", type);
    }
    if (st)
        return st;
    PUSH(L, t->norm, t->n_norm, step);
    return FK_OK;
}

static fk_status load_pre_tokenizer(loader *L, const cJSON *p, const char *where)
{
    fk_tokenizer *t = L->t;
    if (!p || cJSON_IsNull(p))
        return FK_OK;
    const char *type;
    fk_status st = get_type(L, p, where, &type);
    if (st)
        return st;
    if (strcmp(type, "Sequence") == 0)
        return load_sequence(L, p, "pretokenizers", where, load_pre_tokenizer);
    tok_pre step = {0};
    char buf[512];
    if (strcmp(type, "Split") == 0) {
        const char *pattern, *behavior = NULL;
        bool regex, invert = false;
        step.kind = TOK_PRE_SPLIT;
        if ((st = get_pattern(L, p, where, &pattern, &regex)) ||
            (st = json_get_string(p, "behavior", true, &behavior, ctx(L, where, buf, sizeof buf), L->err)) ||
            (st = get_bool(L, p, "invert", where, &invert)))
            return st;
        if (strcmp(behavior, "Isolated") != 0)
            return fail(L, FK_ERR_UNSUPPORTED, where, "Split behavior \"%s\" is not supported (only Isolated)",
                        behavior);
        if (invert)
            return fail(L, FK_ERR_UNSUPPORTED, where, "Split with invert true is not supported");
        if ((st = tokenizer_regex_compile(pattern, strlen(pattern), !regex, ctx(L, where, buf, sizeof buf), &step.re,
                                          L->err)))
            return st;
    } else if (strcmp(type, "ByteLevel") == 0) {
        bool use_regex = true;
        step.kind = TOK_PRE_BYTE_LEVEL;
        step.add_prefix_space = true;
        if ((st = get_bool(L, p, "add_prefix_space", where, &step.add_prefix_space)) ||
            (st = get_bool(L, p, "use_regex", where, &use_regex)))
            return st;
        if (use_regex && (st = tokenizer_regex_compile(GPT2_PATTERN, sizeof GPT2_PATTERN - 1, false,
                                                       ctx(L, where, buf, sizeof buf), &step.re, L->err)))
            return st;
    } else if (strcmp(type, "Metaspace") == 0) {
        step.kind = TOK_PRE_METASPACE;
        step.split = true;
        if ((st = get_char(L, p, "replacement", where, &step.replacement)) ||
            (st = get_prepend_scheme(L, p, where, &step.prepend)) || (st = get_bool(L, p, "split", where, &step.split)))
            return st;
    } else {
        return fail(L, FK_ERR_UNSUPPORTED, where, "pre_tokenizer type \"%s\" is not supported", type);
    }
    void *grown = realloc(t->pre, ((size_t)t->n_pre + 1) * sizeof *t->pre);
    if (!grown) {
        pcre2_code_free(step.re);
        return oom(L);
    }
    t->pre = grown;
    t->pre[t->n_pre++] = step;
    return FK_OK;
}

/* One TemplateProcessing: its "single" template, with each special token's ids from "special_tokens". */
static fk_status load_template(loader *L, const cJSON *p, const char *where)
{
    fk_tokenizer *t = L->t;
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(p, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
    if (!cJSON_IsArray(single))
        return fail(L, FK_ERR_FORMAT, where, "\"single\" must be an array");
    if (specials && !cJSON_IsObject(specials))
        return fail(L, FK_ERR_FORMAT, where, "\"special_tokens\" must be an object");
    tok_template tpl = {.items = calloc((size_t)cJSON_GetArraySize(single) + 1, sizeof *tpl.items)};
    if (!tpl.items)
        return oom(L);
    void *grown = realloc(t->post, ((size_t)t->n_post + 1) * sizeof *t->post);
    if (!grown) {
        free(tpl.items);
        return oom(L);
    }
    t->post = grown;
    t->post[t->n_post++] = tpl; /* owned by the tokenizer from here on, so a failure below frees it */
    tok_template *tp = &t->post[t->n_post - 1];
    int i = 0;
    for (const cJSON *e = single->child; e; e = e->next, i++) {
        char w[512];
        snprintf(w, sizeof w, "%s.single[%d]", where, i);
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(e, "Sequence");
        const cJSON *tok = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(seq ? seq : tok, "id");
        if (!cJSON_IsObject(e) || cJSON_GetArraySize(e) != 1 || !(cJSON_IsObject(seq) || cJSON_IsObject(tok)) ||
            !cJSON_IsString(id))
            return fail(L, FK_ERR_FORMAT, w, "must be {\"Sequence\": {\"id\": ...}} or {\"SpecialToken\": {\"id\": ...}}");
        tok_template_item *item = &tp->items[tp->n_items++];
        if (seq) {
            if (strcmp(id->valuestring, "A") != 0)
                return fail(L, FK_ERR_FORMAT, w, "the single template can only hold sequence A, got \"%s\"",
                            id->valuestring);
            continue;
        }
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(specials, id->valuestring);
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(spec, "ids");
        if (!cJSON_IsArray(ids))
            return fail(L, FK_ERR_FORMAT, w, "special token \"%.200s\" has no ids in \"special_tokens\"",
                        id->valuestring);
        item->ids = malloc(((size_t)cJSON_GetArraySize(ids) + 1) * sizeof *item->ids);
        if (!item->ids)
            return oom(L);
        for (const cJSON *x = ids->child; x; x = x->next) {
            int64_t v;
            if (!json_as_int(x, &v) || v < 0 || v >= t->vocab_size)
                return fail(L, FK_ERR_FORMAT, w, "the ids of special token \"%.200s\" must be integers in [0, %d)",
                            id->valuestring, t->vocab_size);
            /* An id without a token (a hole between the model's ids and added ones) would not decode. */
            if (t->dec_tok[v].off == TOK_NONE)
                return fail(L, FK_ERR_FORMAT, w, "special token \"%.200s\": id %lld has no token in the vocabulary",
                            id->valuestring, (long long)v);
            item->ids[item->n_ids++] = (int32_t)v;
        }
    }
    return FK_OK;
}

static fk_status load_post_processor(loader *L, const cJSON *p, const char *where)
{
    if (!p || cJSON_IsNull(p))
        return FK_OK;
    const char *type;
    fk_status st = get_type(L, p, where, &type);
    if (st)
        return st;
    if (strcmp(type, "Sequence") == 0)
        return load_sequence(L, p, "processors", where, load_post_processor);
    if (strcmp(type, "TemplateProcessing") == 0)
        return load_template(L, p, where);
    if (strcmp(type, "ByteLevel") == 0) /* only trims offsets: no effect on ids */
        return FK_OK;
    return fail(L, FK_ERR_UNSUPPORTED, where, "post_processor type \"%s\" is not supported", type);
}

static fk_status load_decoder(loader *L, const cJSON *d, const char *where)
{
    fk_tokenizer *t = L->t;
    if (!d || cJSON_IsNull(d))
        return FK_OK;
    const char *type;
    fk_status st = get_type(L, d, where, &type);
    if (st)
        return st;
    t->has_decoder = true;
    if (strcmp(type, "Sequence") == 0)
        return load_sequence(L, d, "decoders", where, load_decoder);
    tok_dec step = {0};
    char buf[512];
    if (strcmp(type, "ByteLevel") == 0) {
        step.kind = TOK_DEC_BYTE_LEVEL;
    } else if (strcmp(type, "ByteFallback") == 0) {
        step.kind = TOK_DEC_BYTE_FALLBACK;
    } else if (strcmp(type, "Fuse") == 0) {
        step.kind = TOK_DEC_FUSE;
    } else if (strcmp(type, "Replace") == 0) {
        const char *pattern;
        bool regex;
        step.kind = TOK_DEC_REPLACE;
        if ((st = get_pattern(L, d, where, &pattern, &regex)))
            return st;
        if (regex)
            return fail(L, FK_ERR_UNSUPPORTED, where, "Replace with a Regex pattern is not supported");
        if (!pattern[0])
            return fail(L, FK_ERR_FORMAT, where, "the Replace pattern is empty");
        if ((st = intern(L, pattern, strlen(pattern), where, &step.a)) ||
            (st = get_str(L, d, "content", where, &step.b)))
            return st;
    } else if (strcmp(type, "Strip") == 0) {
        step.kind = TOK_DEC_STRIP;
        if ((st = get_char(L, d, "content", where, &step.ch)) ||
            (st = json_get_int(d, "start", true, 0, INT32_MAX, &step.start, ctx(L, where, buf, sizeof buf), L->err)) ||
            (st = json_get_int(d, "stop", true, 0, INT32_MAX, &step.stop, ctx(L, where, buf, sizeof buf), L->err)))
            return st;
    } else if (strcmp(type, "Metaspace") == 0) {
        step.kind = TOK_DEC_METASPACE;
        if ((st = get_char(L, d, "replacement", where, &step.ch)) ||
            (st = get_prepend_scheme(L, d, where, &step.prepend)))
            return st;
    } else {
        return fail(L, FK_ERR_UNSUPPORTED, where, "decoder type \"%s\" is not supported", type);
    }
    PUSH(L, t->dec, t->n_dec, step);
    return FK_OK;
}

/* ---- public ---- */

void fk_tokenizer_free(fk_tokenizer *t)
{
    if (!t)
        return;
    free(t->arena);
    free(t->model_tok);
    free(t->dec_tok);
    free(t->special);
    free(t->vocab.slots);
    free(t->merges.keys);
    free(t->merges.ranks);
    free(t->merges.merged);
    free(t->char_id);
    free(t->added);
    free(t->raw.order);
    free(t->normalized.order);
    pcre2_code_free(t->word_re);
    free(t->norm);
    for (int i = 0; i < t->n_pre; i++)
        pcre2_code_free(t->pre[i].re);
    free(t->pre);
    for (int i = 0; i < t->n_post; i++) {
        for (int j = 0; j < t->post[i].n_items; j++)
            free(t->post[i].items[j].ids);
        free(t->post[i].items);
    }
    free(t->post);
    free(t->dec);
    free(t);
}

void fk_free(void *p)
{
    free(p);
}

int fk_tokenizer_vocab_size(const fk_tokenizer *t)
{
    return t->vocab_size;
}

fk_status fk_tokenizer_load(const char *path, fk_tokenizer **out, fk_error *err)
{
    *out = NULL;
    if (!path || !path[0])
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "no tokenizer file given");
    cJSON *root = NULL;
    fk_status st = json_parse_file(path, TOKENIZER_JSON_MAX_BYTES, &root, err);
    if (st)
        return st;
    fk_tokenizer *t = calloc(1, sizeof *t);
    loader L = {.t = t, .path = path, .err = err};
    if (!t) {
        cJSON_Delete(root);
        return oom(&L);
    }
    if (!cJSON_IsObject(root)) {
        st = fk_error_set(err, FK_ERR_FORMAT, "%s: the top level must be a JSON object", path);
        goto done;
    }
    if ((st = load_model(&L, root)))
        goto done;
    int model_n = t->vocab_size;
    if ((st = load_added(&L, root)) ||
        (st = load_normalizer(&L, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), "normalizer")) ||
        (st = build_matchers(&L)) || (st = build_decode_tables(&L, model_n)) ||
        (st = load_pre_tokenizer(&L, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), "pre_tokenizer")) ||
        (st = load_post_processor(&L, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), "post_processor")) ||
        (st = load_decoder(&L, cJSON_GetObjectItemCaseSensitive(root, "decoder"), "decoder")))
        goto done;
done:
    cJSON_Delete(root);
    if (st) {
        fk_tokenizer_free(t);
        return st;
    }
    *out = t;
    return FK_OK;
}
