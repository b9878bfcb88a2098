/* tokenizer_encode.c — text to ids, in the order of Hugging Face's Tokenizer::encode:
 *   1. non-normalized added tokens are matched in the raw text (leftmost, then longest; single_word, lstrip and
 *      rstrip applied as AddedVocabulary::find_matches does);
 *   2. each remaining piece is normalized, then the normalized added tokens are matched in it;
 *   3. each remaining piece goes through the pre-tokenizer steps (Split, ByteLevel, Metaspace), empty pieces
 *      dropped after each step;
 *   4. each word through BPE;  5. with add_special, the post-processor templates.
 * A piece remembers whether it starts the text (Metaspace's prepend_scheme "first" asks that of the original
 * offset); a piece split off after its first byte does not. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer.h"
#include "unicode_nfc.h"
#include "utf8.h"

typedef struct piece {
    size_t off, len;
    bool origin; /* starts at offset 0 of the text */
} piece;

/* A list of pieces whose bytes live in buf. */
typedef struct pieces {
    char *buf;
    size_t len, cap;
    piece *v;
    size_t n, cap_v;
} pieces;

/* The state of one encode call. */
typedef struct enc {
    const fk_tokenizer *t;
    pcre2_match_data *md;
    pieces a, b;          /* pre-tokenizer steps read one and write the other */
    char *tmp;            /* one piece being rewritten (prefix space, Metaspace) */
    size_t cap_tmp;
    tok_bpe_scratch bpe;
    int32_t *ids;
    size_t n_ids, cap_ids;
    fk_error *err;
} enc;

static fk_status oom(enc *e)
{
    return fk_error_set(e->err, FK_ERR_OUT_OF_MEMORY, "out of memory while encoding");
}

/* Appends bytes to the buffer of p (not a piece yet). */
static bool put(pieces *p, const char *s, size_t n)
{
    char *b = tokenizer_reserve(p->buf, &p->cap, p->len + n, 1);
    if (!b)
        return false;
    p->buf = b;
    if (n > 0)
        memcpy(b + p->len, s, n);
    p->len += n;
    return true;
}

/* Makes the bytes from `from` to the end of the buffer a piece; an empty one is dropped. */
static bool end_piece(pieces *p, size_t from, bool origin)
{
    if (p->len == from)
        return true;
    piece *v = tokenizer_reserve(p->v, &p->cap_v, p->n + 1, sizeof *p->v);
    if (!v)
        return false;
    p->v = v;
    v[p->n++] = (piece){.off = from, .len = p->len - from, .origin = origin};
    return true;
}

static bool add_piece(pieces *p, const char *s, size_t n, bool origin)
{
    size_t from = p->len;
    return put(p, s, n) && end_piece(p, from, origin);
}

static char *reserve_tmp(enc *e, size_t n)
{
    char *p = tokenizer_reserve(e->tmp, &e->cap_tmp, n, 1);
    if (p)
        e->tmp = p;
    return p;
}

/* ---- normalizer ---- */

/* Appends s[len] with every occurrence of pat replaced by rep (left to right, not overlapping). */
static bool replace_all(pieces *out, const char *s, size_t len, const char *pat, size_t n_pat, const char *rep,
                        size_t n_rep)
{
    size_t i = 0, last = 0;
    while (i + n_pat <= len) {
        if (memcmp(s + i, pat, n_pat) == 0) {
            if (!put(out, s + last, i - last) || !put(out, rep, n_rep))
                return false;
            i += n_pat;
            last = i;
        } else {
            i++;
        }
    }
    return put(out, s + last, len - last);
}

/* Appends the NFC of s[len]. */
static bool nfc(pieces *out, const char *s, size_t len)
{
    char *norm;
    size_t n;
    if (!unicode_nfc(s, len, &norm, &n))
        return false;
    bool ok = put(out, norm, n);
    free(norm);
    return ok;
}

fk_status tokenizer_normalize(const fk_tokenizer *t, const char *s, size_t len, char **out, size_t *out_len,
                              fk_error *err)
{
    pieces x = {0}, y = {0}; /* buffers only */
    bool ok = put(&x, s, len);
    for (int i = 0; ok && i < t->n_norm; i++) {
        const tok_norm *n = &t->norm[i];
        y.len = 0;
        if (n->kind == TOK_NORM_PREPEND) /* Hugging Face prepends to non-empty strings only */
            ok = (x.len == 0 || put(&y, tokenizer_str(t, n->a), n->a.len)) && put(&y, x.buf, x.len);
        else if (n->kind == TOK_NORM_NFC)
            ok = nfc(&y, x.buf, x.len);
        else
            ok = replace_all(&y, x.buf, x.len, tokenizer_str(t, n->a), n->a.len, tokenizer_str(t, n->b), n->b.len);
        pieces swap = x;
        x = y, y = swap;
    }
    free(y.buf);
    if (!ok || !put(&x, "", 1)) { /* NUL-terminated for the caller's convenience */
        free(x.buf);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory while normalizing");
    }
    *out = x.buf;
    *out_len = x.len - 1;
    return FK_OK;
}

/* ---- pre-tokenizer ---- */

/* Appends the pieces of s[len] cut at the matches of re: matches and the text between them (Isolated). */
static fk_status split_regex(enc *e, const pcre2_code *re, const char *s, size_t len, bool origin, pieces *out)
{
    size_t at = 0, prev_end = SIZE_MAX, last = 0, start, end;
    int rc;
    while ((rc = tokenizer_regex_next(re, e->md, s, len, &at, prev_end, &start, &end, e->err)) == 1) {
        prev_end = end;
        if ((start > last && !add_piece(out, s + last, start - last, origin && last == 0)) ||
            !add_piece(out, s + start, end - start, origin && start == 0))
            return oom(e);
        last = end;
    }
    if (rc < 0)
        return rc;
    if (last < len && !add_piece(out, s + last, len - last, origin && last == 0))
        return oom(e);
    return FK_OK;
}

/* Appends s[len] with every byte written as its ByteLevel character, as one piece. */
static bool add_byte_level(pieces *out, const char *s, size_t len, bool origin)
{
    size_t from = out->len;
    char *b = tokenizer_reserve(out->buf, &out->cap, out->len + 2 * len, 1);
    if (!b)
        return false;
    out->buf = b;
    for (size_t i = 0; i < len; i++)
        out->len += (size_t)utf8_put(tokenizer_byte_char((unsigned char)s[i]), b + out->len);
    return end_piece(out, from, origin);
}

static fk_status step_byte_level(enc *e, const tok_pre *p, const char *s, size_t len, bool origin, pieces *out)
{
    if (p->add_prefix_space && s[0] != ' ') {
        char *tmp = reserve_tmp(e, len + 1);
        if (!tmp)
            return oom(e);
        tmp[0] = ' ';
        memcpy(tmp + 1, s, len);
        s = tmp, len++;
    }
    if (!p->re)
        return add_byte_level(out, s, len, origin) ? FK_OK : oom(e);
    size_t at = 0, prev_end = SIZE_MAX, last = 0, start, end;
    int rc;
    while ((rc = tokenizer_regex_next(p->re, e->md, s, len, &at, prev_end, &start, &end, e->err)) == 1) {
        prev_end = end;
        if ((start > last && !add_byte_level(out, s + last, start - last, origin && last == 0)) ||
            (end > start && !add_byte_level(out, s + start, end - start, origin && start == 0)))
            return oom(e);
        last = end;
    }
    if (rc < 0)
        return rc;
    if (last < len && !add_byte_level(out, s + last, len - last, origin && last == 0))
        return oom(e);
    return FK_OK;
}

static fk_status step_metaspace(enc *e, const tok_pre *p, const char *s, size_t len, bool origin, pieces *out)
{
    char rep[4];
    size_t n_rep = (size_t)utf8_put(p->replacement, rep);
    char *tmp = reserve_tmp(e, n_rep * (len + 1));
    if (!tmp)
        return oom(e);
    size_t n = 0;
    bool starts = s[0] == ' ' || (len >= n_rep && memcmp(s, rep, n_rep) == 0); /* after the replacement */
    if (!starts && (p->prepend == TOK_PREPEND_ALWAYS || (p->prepend == TOK_PREPEND_FIRST && origin))) {
        memcpy(tmp, rep, n_rep);
        n = n_rep;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') {
            memcpy(tmp + n, rep, n_rep);
            n += n_rep;
        } else {
            tmp[n++] = s[i];
        }
    }
    if (!p->split)
        return add_piece(out, tmp, n, origin) ? FK_OK : oom(e);
    /* MergedWithNext: a new piece starts at every replacement character. */
    size_t last = 0;
    for (size_t i = 1; i + n_rep <= n; i++) {
        if (memcmp(tmp + i, rep, n_rep) == 0) {
            if (!add_piece(out, tmp + last, i - last, origin && last == 0))
                return oom(e);
            last = i;
        }
    }
    return add_piece(out, tmp + last, n - last, origin && last == 0) ? FK_OK : oom(e);
}

/* Pre-tokenizes s[len] and appends the BPE ids of its words. */
static fk_status encode_words(enc *e, const char *s, size_t len, bool origin)
{
    const fk_tokenizer *t = e->t;
    pieces *in = &e->a, *out = &e->b;
    in->len = in->n = 0;
    if (!add_piece(in, s, len, origin))
        return oom(e);
    for (int k = 0; k < t->n_pre; k++) {
        const tok_pre *p = &t->pre[k];
        out->len = out->n = 0;
        for (size_t i = 0; i < in->n; i++) {
            const piece *w = &in->v[i];
            const char *ws = in->buf + w->off;
            fk_status st = p->kind == TOK_PRE_SPLIT        ? split_regex(e, p->re, ws, w->len, w->origin, out)
                           : p->kind == TOK_PRE_BYTE_LEVEL ? step_byte_level(e, p, ws, w->len, w->origin, out)
                                                           : step_metaspace(e, p, ws, w->len, w->origin, out);
            if (st)
                return st;
        }
        pieces *swap = in;
        in = out, out = swap;
    }
    for (size_t i = 0; i < in->n; i++) {
        fk_status st = tokenizer_bpe_word(t, in->buf + in->v[i].off, in->v[i].len, &e->bpe, &e->ids, &e->n_ids,
                                          &e->cap_ids, e->err);
        if (st)
            return st;
    }
    return FK_OK;
}

/* ---- added tokens ---- */

/* Whether the character at s (n bytes left) is a word character for single_word (t->word_re). */
static bool is_word_char(enc *e, const char *s, size_t n)
{
    return pcre2_match(e->t->word_re, (PCRE2_SPTR)s, n, 0, PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK, e->md, NULL) >= 0;
}

static bool ends_with_word(enc *e, const char *s, size_t len)
{
    if (len == 0)
        return false;
    size_t i = len - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return is_word_char(e, s + i, len - i);
}

/* The leftmost, then longest, pattern of m in s[len] at or after `from`: its index in t->added, or -1. */
static int find_added(const fk_tokenizer *t, const tok_matcher *m, const char *s, size_t len, size_t from,
                      size_t *start)
{
    for (size_t i = from; i < len; i++) {
        unsigned char b = (unsigned char)s[i];
        for (int k = m->first[b]; k < m->first[b + 1]; k++) {
            const tok_added *a = &t->added[m->order[k]];
            if (a->pattern.len <= len - i && memcmp(s + i, tokenizer_str(t, a->pattern), a->pattern.len) == 0) {
                *start = i;
                return m->order[k];
            }
        }
    }
    return -1;
}

static size_t leading_space(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        int k = utf8_next(s + i, len - i, &cp);
        if (k < 0 || !utf8_is_white_space(cp))
            break;
        i += (size_t)k;
    }
    return i;
}

/* Offset where the run of white space that ends s[len] begins. */
static size_t trailing_space_start(const char *s, size_t len)
{
    size_t i = len;
    while (i > 0) {
        size_t j = i - 1;
        while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80)
            j--;
        uint32_t cp;
        if (utf8_next(s + j, i - j, &cp) < 0 || !utf8_is_white_space(cp))
            break;
        i = j;
    }
    return i;
}

typedef fk_status (*piece_fn)(enc *e, const char *s, size_t len, bool origin);

/* Splits s[len] around the added tokens of m: token ids are appended, the text between goes to text_fn. */
static fk_status split_added(enc *e, const tok_matcher *m, const char *s, size_t len, bool origin, piece_fn text_fn)
{
    const fk_tokenizer *t = e->t;
    size_t start_offset = 0, from = 0, start;
    int k;
    while (m->n > 0 && (k = find_added(t, m, s, len, from, &start)) >= 0) {
        const tok_added *a = &t->added[k];
        size_t stop = start + a->pattern.len;
        from = stop;
        if (a->single_word && (ends_with_word(e, s, start) || (stop < len && is_word_char(e, s + stop, len - stop))))
            continue;
        if (a->lstrip) {
            size_t ns = trailing_space_start(s, start);
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip)
            stop += leading_space(s + stop, len - stop);
        fk_status st;
        if (start_offset < start && (st = text_fn(e, s + start_offset, start - start_offset, origin && start_offset == 0)))
            return st;
        int32_t *v = tokenizer_reserve(e->ids, &e->cap_ids, e->n_ids + 1, sizeof *e->ids);
        if (!v)
            return oom(e);
        e->ids = v;
        v[e->n_ids++] = a->id;
        start_offset = stop;
    }
    if (start_offset < len)
        return text_fn(e, s + start_offset, len - start_offset, origin && start_offset == 0);
    return FK_OK;
}

/* A piece of raw text between added tokens: normalized, then split around the normalized added tokens. */
static fk_status encode_raw_piece(enc *e, const char *s, size_t len, bool origin)
{
    if (e->t->n_norm == 0)
        return split_added(e, &e->t->normalized, s, len, origin, encode_words);
    char *norm;
    size_t n;
    fk_status st = tokenizer_normalize(e->t, s, len, &norm, &n, e->err);
    if (st)
        return st;
    st = split_added(e, &e->t->normalized, norm, n, origin, encode_words);
    free(norm);
    return st;
}

/* Wraps the ids in each post-processor template in turn. */
static fk_status apply_templates(enc *e)
{
    const fk_tokenizer *t = e->t;
    for (int i = 0; i < t->n_post; i++) {
        const tok_template *tp = &t->post[i];
        size_t n = 0;
        for (int j = 0; j < tp->n_items; j++)
            n += tp->items[j].ids ? (size_t)tp->items[j].n_ids : e->n_ids;
        int32_t *v = malloc((n + 1) * sizeof *v);
        if (!v)
            return oom(e);
        size_t k = 0;
        for (int j = 0; j < tp->n_items; j++) {
            const tok_template_item *it = &tp->items[j];
            size_t m = it->ids ? (size_t)it->n_ids : e->n_ids;
            if (m > 0)
                memcpy(v + k, it->ids ? it->ids : e->ids, m * sizeof *v);
            k += m;
        }
        free(e->ids);
        e->ids = v;
        e->n_ids = n;
        e->cap_ids = n + 1;
    }
    return FK_OK;
}

fk_status fk_tokenizer_encode(const fk_tokenizer *t, const char *text, size_t len, bool add_special, int32_t **ids,
                              int *n_ids, fk_error *err)
{
    *ids = NULL;
    *n_ids = 0;
    if (!text && len > 0)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "text is NULL");
    size_t bad = utf8_check(text, len);
    if (bad < len)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "text is not valid UTF-8 at byte %zu", bad);
    enc e = {.t = t, .err = err, .md = pcre2_match_data_create(1, NULL)};
    fk_status st = e.md ? FK_OK : oom(&e);
    if (!st)
        st = split_added(&e, &t->raw, text ? text : "", len, true, encode_raw_piece);
    if (!st && add_special)
        st = apply_templates(&e);
    if (!st && e.n_ids > INT_MAX)
        st = fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "text gives %zu tokens; at most %d", e.n_ids, INT_MAX);
    if (!st && !e.ids && !(e.ids = malloc(sizeof *e.ids)))
        st = oom(&e);
    pcre2_match_data_free(e.md);
    free(e.a.buf), free(e.a.v), free(e.b.buf), free(e.b.v), free(e.tmp);
    tokenizer_bpe_scratch_free(&e.bpe);
    if (st) {
        free(e.ids);
        return st;
    }
    *ids = e.ids;
    *n_ids = (int)e.n_ids;
    return FK_OK;
}
