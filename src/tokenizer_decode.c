/* tokenizer_decode.c — ids to text as Hugging Face's Tokenizer::decode does it: the string of each id (an added
 * token's content, else the vocabulary's), special ones dropped when skip_special, then the decoder steps over
 * that list of strings, then their concatenation. Without a decoder the strings are joined with spaces.
 * The result is always valid UTF-8: ByteLevel decodes bytes lossily, ByteFallback writes U+FFFD per byte of an
 * invalid run, and every other string came from the file, which was checked at load. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer.h"
#include "utf8.h"

typedef struct tok_span {
    size_t off, len;
} span;

typedef tok_strs strs;

static bool put(strs *s, const char *p, size_t n)
{
    char *b = tokenizer_reserve(s->buf, &s->cap, s->len + n + 1, 1);
    if (!b)
        return false;
    s->buf = b;
    if (n > 0)
        memcpy(b + s->len, p, n);
    s->len += n;
    return true;
}

/* Makes the bytes from `from` to the end of the buffer the next string. */
static bool end_str(strs *s, size_t from)
{
    span *v = tokenizer_reserve(s->v, &s->cap_v, s->n + 1, sizeof *s->v);
    if (!v)
        return false;
    s->v = v;
    v[s->n++] = (span){.off = from, .len = s->len - from};
    return true;
}

static bool add_str(strs *s, const char *p, size_t n)
{
    size_t from = s->len;
    return put(s, p, n) && end_str(s, from);
}

/* The byte a ByteLevel character stands for, or -1 (the inverse of tokenizer_byte_char). */
static int char_byte(uint32_t cp)
{
    if (cp >= 256 && cp <= 288)
        return (int)(cp - 256);
    if (cp >= 289 && cp <= 322)
        return (int)(cp - 162);
    if (cp == 323)
        return 173;
    if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255))
        return (int)cp;
    return -1;
}

/* ByteLevel: every string becomes its bytes (or stays as it is when a character is not a byte character), all
 * of them concatenated and converted lossily: one string. */
static bool dec_byte_level(const strs *in, strs *out, tok_decode_scratch *sc, bool *incomplete)
{
    char *bytes = tokenizer_reserve(sc->bytes, &sc->cap_bytes, in->len + 1, 1);
    if (!bytes)
        return false;
    sc->bytes = bytes;
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->buf + in->v[i].off;
        size_t len = in->v[i].len, k = n;
        for (size_t j = 0; j < len;) {
            uint32_t cp;
            int w = utf8_next(s + j, len - j, &cp);
            int b = w > 0 ? char_byte(cp) : -1;
            if (b < 0) {
                memcpy(bytes + n, s, len);
                k = n + len;
                break;
            }
            bytes[k++] = (char)b;
            j += (size_t)w;
        }
        n = k;
    }
    *incomplete = utf8_ends_incomplete(bytes, n);
    size_t from = out->len;
    char *b = tokenizer_reserve(out->buf, &out->cap, out->len + 3 * n + 1, 1);
    bool ok = b != NULL;
    if (ok) {
        out->buf = b;
        out->len += utf8_lossy(bytes, n, b + out->len);
        ok = end_str(out, from);
    }
    return ok;
}

static bool dec_replace(const fk_tokenizer *t, const tok_dec *d, const strs *in, strs *out)
{
    const char *pat = tokenizer_str(t, d->a), *rep = tokenizer_str(t, d->b);
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->buf + in->v[i].off;
        size_t len = in->v[i].len, from = out->len, last = 0;
        for (size_t j = 0; j + d->a.len <= len;) {
            if (memcmp(s + j, pat, d->a.len) == 0) {
                if (!put(out, s + last, j - last) || !put(out, rep, d->b.len))
                    return false;
                j += d->a.len;
                last = j;
            } else {
                j++;
            }
        }
        if (!put(out, s + last, len - last) || !end_str(out, from))
            return false;
    }
    return true;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The byte of a "<0xHH>" string, or -1. Rust's u8::from_str_radix, which Hugging Face uses, also takes "+H". */
static int fallback_byte(const char *s, size_t len)
{
    if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    int hi = hex_digit(s[3]), lo = hex_digit(s[4]);
    if (s[3] == '+')
        return lo;
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* ByteFallback: runs of "<0xHH>" strings become the string of their bytes when that is valid UTF-8, else one
 * U+FFFD per byte; other strings pass. */
static bool dec_byte_fallback(const strs *in, strs *out, tok_decode_scratch *sc, bool *incomplete)
{
    char *run = tokenizer_reserve(sc->bytes, &sc->cap_bytes, in->n + 1, 1);
    if (!run)
        return false;
    sc->bytes = run;
    size_t n_run = 0;
    bool ok = true;
    for (size_t i = 0; ok && i <= in->n; i++) {
        const char *s = i < in->n ? in->buf + in->v[i].off : NULL;
        size_t len = i < in->n ? in->v[i].len : 0;
        int b = s ? fallback_byte(s, len) : -1;
        if (b >= 0) {
            run[n_run++] = (char)b;
            continue;
        }
        if (n_run > 0) {
            *incomplete = !s && utf8_ends_incomplete(run, n_run); /* a run that ends the text */
            if (utf8_check(run, n_run) == n_run) {
                ok = add_str(out, run, n_run);
            } else {
                for (size_t j = 0; ok && j < n_run; j++)
                    ok = add_str(out, UTF8_REPLACEMENT, 3);
            }
            n_run = 0;
        }
        if (ok && s)
            ok = add_str(out, s, len);
    }
    return ok;
}

static bool dec_fuse(const strs *in, strs *out)
{
    size_t from = out->len;
    for (size_t i = 0; i < in->n; i++)
        if (!put(out, in->buf + in->v[i].off, in->v[i].len))
            return false;
    return end_str(out, from);
}

/* Strip: removes up to `start` leading and `stop` trailing copies of the character from every string. */
static bool dec_strip(const tok_dec *d, const strs *in, strs *out)
{
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->buf + in->v[i].off;
        size_t len = in->v[i].len, a = 0, z = len;
        uint32_t cp;
        for (int64_t k = 0; k < d->start && a < len; k++) {
            int w = utf8_next(s + a, len - a, &cp);
            if (w < 0 || cp != d->ch)
                break;
            a += (size_t)w;
        }
        for (int64_t k = 0; k < d->stop && z > 0; k++) {
            size_t j = z - 1;
            while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80)
                j--;
            int w = utf8_next(s + j, z - j, &cp);
            if (w < 0 || cp != d->ch)
                break;
            z = j;
        }
        if (!add_str(out, s + a, z > a ? z - a : 0))
            return false;
    }
    return true;
}

/* Metaspace: the replacement character becomes a space, except in the first string where it is dropped
 * (unless prepend_scheme is never). */
static bool dec_metaspace(const tok_dec *d, const strs *in, strs *out)
{
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->buf + in->v[i].off;
        size_t len = in->v[i].len, from = out->len;
        for (size_t j = 0; j < len;) {
            uint32_t cp;
            int w = utf8_next(s + j, len - j, &cp);
            if (w < 0)
                w = -w;
            bool ok = w > 0 && cp == d->ch ? (i == 0 && d->prepend != TOK_PREPEND_NEVER) || put(out, " ", 1)
                                           : put(out, s + j, (size_t)w);
            if (!ok)
                return false;
            j += (size_t)w;
        }
        if (!end_str(out, from))
            return false;
    }
    return true;
}

bool tokenizer_starts_inside_char(const fk_tokenizer *t, int32_t id)
{
    tok_str str = t->dec_tok[id];
    const char *s = tokenizer_str(t, str);
    for (int k = 0; k < t->n_dec && str.off != TOK_NONE && str.len > 0; k++) {
        uint32_t cp;
        int b = t->dec[k].kind == TOK_DEC_BYTE_FALLBACK ? fallback_byte(s, str.len)
                : t->dec[k].kind == TOK_DEC_BYTE_LEVEL && utf8_next(s, str.len, &cp) > 0 ? char_byte(cp)
                                                                                         : -1;
        if (b >= 0)
            return (b & 0xC0) == 0x80;
    }
    return false;
}

bool tokenizer_is_special(const fk_tokenizer *t, int32_t id)
{
    return t->special[id] != 0;
}

fk_status fk_tokenizer_decode(const fk_tokenizer *t, const int32_t *ids, int n_ids, bool skip_special, char **text,
                              size_t *len, fk_error *err)
{
    bool incomplete;
    return tokenizer_decode(t, ids, n_ids, skip_special, text, len, &incomplete, err);
}

void tokenizer_decode_scratch_free(tok_decode_scratch *sc)
{
    free(sc->a.buf), free(sc->a.v), free(sc->b.buf), free(sc->b.v), free(sc->bytes);
    *sc = (tok_decode_scratch){0};
}

fk_status tokenizer_decode(const fk_tokenizer *t, const int32_t *ids, int n_ids, bool skip_special, char **text,
                           size_t *len, bool *incomplete, fk_error *err)
{
    tok_decode_scratch sc = {0};
    const char *p;
    fk_status s = tokenizer_decode_into(t, ids, n_ids, skip_special, &sc, &p, len, incomplete, err);
    *text = NULL;
    if (!s) { /* the text is one of sc's buffers: the caller's now */
        char **owner = p == sc.a.buf ? &sc.a.buf : &sc.b.buf;
        *text = *owner;
        *owner = NULL;
    }
    tokenizer_decode_scratch_free(&sc);
    return s;
}

fk_status tokenizer_decode_into(const fk_tokenizer *t, const int32_t *ids, int n_ids, bool skip_special,
                                tok_decode_scratch *sc, const char **text, size_t *len, bool *incomplete,
                                fk_error *err)
{
    *text = NULL;
    *len = 0;
    *incomplete = false;
    if (n_ids < 0 || (!ids && n_ids > 0))
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "invalid id list (%d ids)", n_ids);
    for (int i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab_size)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "token id %d at position %d is out of range [0, %d)",
                                ids[i], i, t->vocab_size);
        if (t->dec_tok[ids[i]].off == TOK_NONE)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "token id %d at position %d has no token", ids[i], i);
    }
    strs *a = &sc->a, *b = &sc->b;
    a->len = a->n = b->len = b->n = 0;
    bool ok = put(a, "", 0) && put(b, "", 0); /* buffers exist even when every string is empty */
    for (int i = 0; ok && i < n_ids; i++)
        if (!skip_special || !t->special[ids[i]])
            ok = add_str(a, tokenizer_str(t, t->dec_tok[ids[i]]), t->dec_tok[ids[i]].len);
    for (int k = 0; ok && k < t->n_dec; k++) {
        const tok_dec *d = &t->dec[k];
        b->len = b->n = 0;
        switch (d->kind) {
        case TOK_DEC_BYTE_LEVEL: ok = dec_byte_level(a, b, sc, incomplete); break;
        case TOK_DEC_REPLACE: ok = dec_replace(t, d, a, b); break;
        case TOK_DEC_BYTE_FALLBACK: ok = dec_byte_fallback(a, b, sc, incomplete); break;
        case TOK_DEC_FUSE: ok = dec_fuse(a, b); break;
        case TOK_DEC_STRIP: ok = dec_strip(d, a, b); break;
        case TOK_DEC_METASPACE: ok = dec_metaspace(d, a, b); break;
        }
        strs *swap = a;
        a = b, b = swap;
    }
    /* The strings concatenated (or joined with spaces, without a decoder), NUL-terminated, into the other list. */
    b->len = 0;
    for (size_t i = 0; ok && i < a->n; i++)
        ok = (i == 0 || t->has_decoder || put(b, " ", 1)) && put(b, a->buf + a->v[i].off, a->v[i].len);
    ok = ok && put(b, "", 1);
    if (!ok)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory while decoding %d ids", n_ids);
    *text = b->buf;
    *len = b->len - 1;
    return FK_OK;
}
