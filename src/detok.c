/* detok.c — incremental detokenization (see detok.h), vLLM's scheme: two offsets into the ids, `prefix` and
 * `read`. Each new token decodes the window ids[prefix:] and emits what it adds to decode(ids[prefix:read]),
 * counted in characters; then prefix takes read's place and read the end. The window stays a few tokens long, so
 * a sequence costs O(n), and its first token keeps the context that the decoder's first-token rules (Strip,
 * Metaspace) see. While the window's text ends in an incomplete UTF-8 sequence from byte tokens (decoded as
 * U+FFFD for now) nothing is emitted; the missing bytes come within 3 tokens or never, and after DETOK_MAX_HELD
 * tokens the U+FFFD is emitted as final. A U+FFFD that is a complete character streams at once.
 *
 * The text emitted is decode(prompt + generated) with decode(prompt) removed from its front (in characters), cut
 * at the first stop string. Special tokens that skip_special drops are left out of the window altogether (decode
 * would drop them anyway). Stop strings are found in `held`, the decoded text not yet emitted: after each token
 * the earliest match ends the text; otherwise everything is emitted except the longest tail that is the start of
 * a stop string, so a match can only begin in `held`. */
#include "detok.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer.h"
#include "utf8.h"

#define DETOK_CONTEXT 5   /* prompt tokens the first window starts with (vLLM's initial offset) */
#define DETOK_MAX_HELD 8  /* tokens held while the text ends incomplete; a character spans at most 4 */
#define DETOK_COMPACT 4096 /* ids dropped from the front once this many lie before the window */

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

struct detok {
    const fk_tokenizer *tok;
    bool skip_special;
    int32_t *ids; /* [n] the window and what came before it since the last compaction */
    size_t n, cap;
    size_t prefix, read;
    size_t prefix_chars; /* characters of decode(ids[prefix:read]) */
    char **stops;
    size_t *stop_len;
    int n_stops;
    buf out;  /* emitted, NUL-terminated */
    buf held; /* decoded, not emitted: it may still begin a stop string */
    bool done;
    tok_decode_scratch scratch; /* what every decode of the window works in: nothing is allocated per token */
};

static bool append(buf *b, const char *s, size_t n)
{
    char *p = tokenizer_reserve(b->p, &b->cap, b->len + n + 1, 1);
    if (!p)
        return false;
    b->p = p;
    if (n)
        memcpy(p + b->len, s, n);
    b->len += n;
    p[b->len] = '\0';
    return true;
}

static fk_status oom(fk_error *err)
{
    return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory while detokenizing");
}

/* decode(ids[from:to]); *incomplete: it ends in an incomplete UTF-8 sequence. */
static fk_status decode_range(detok *d, size_t from, size_t to, const char **text, size_t *len, bool *incomplete,
                              fk_error *err)
{
    return tokenizer_decode_into(d->tok, d->ids + from, (int)(to - from), d->skip_special, &d->scratch, text, len,
                                 incomplete, err);
}

/* Moves the window start back (at most 3 tokens) while it lies inside a character: a byte-fallback run decodes
 * all or nothing, so a window cutting one would turn its later characters into U+FFFD. */
static void start_on_char(detok *d)
{
    for (int k = 0; k < 3 && d->prefix > 0 && tokenizer_starts_inside_char(d->tok, d->ids[d->prefix]); k++)
        d->prefix--;
}

void detok_free(detok *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n_stops; i++)
        free(d->stops[i]);
    free(d->stops);
    free(d->stop_len);
    free(d->ids);
    free(d->out.p);
    free(d->held.p);
    tokenizer_decode_scratch_free(&d->scratch);
    free(d);
}

fk_status detok_create(const fk_tokenizer *tok, const int32_t *prompt, int n_prompt, bool skip_special,
                       const char *const *stops, int n_stops, detok **out, fk_error *err)
{
    *out = NULL;
    if (n_prompt < 0 || (n_prompt > 0 && !prompt) || n_stops < 0 || (n_stops > 0 && !stops))
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "detok: invalid prompt (%d ids) or stops (%d)", n_prompt,
                            n_stops);
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= fk_tokenizer_vocab_size(tok))
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "prompt token id %d at position %d is out of range [0, %d)",
                                prompt[i], i, fk_tokenizer_vocab_size(tok));
    for (int i = 0; i < n_stops; i++) {
        size_t len = stops[i] ? strlen(stops[i]) : 0;
        if (len == 0)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "stop string %d is empty", i);
        size_t bad = utf8_check(stops[i], len);
        if (bad < len)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "stop string %d is not valid UTF-8 at byte %zu", i, bad);
    }
    detok *d = calloc(1, sizeof *d);
    if (!d)
        return oom(err);
    d->tok = tok;
    d->skip_special = skip_special;
    d->stops = calloc((size_t)n_stops + 1, sizeof *d->stops);
    d->stop_len = calloc((size_t)n_stops + 1, sizeof *d->stop_len);
    d->ids = tokenizer_reserve(NULL, &d->cap, DETOK_CONTEXT + 4, sizeof *d->ids);
    bool ok = d->stops && d->stop_len && d->ids && append(&d->out, "", 0);
    for (int i = 0; ok && i < n_stops; i++) {
        d->stop_len[i] = strlen(stops[i]);
        ok = (d->stops[i] = malloc(d->stop_len[i] + 1)) != NULL;
        if (ok)
            memcpy(d->stops[i], stops[i], d->stop_len[i] + 1);
        d->n_stops = i + 1;
    }
    if (!ok) {
        detok_free(d);
        return oom(err);
    }
    /* The last prompt ids that decode keeps: DETOK_CONTEXT, and up to 3 more to start on a character. */
    int first = n_prompt, kept = 0;
    while (first > 0 && kept < DETOK_CONTEXT + 3) {
        first--;
        if (!(skip_special && tokenizer_is_special(tok, prompt[first])))
            kept++;
    }
    for (int i = first; i < n_prompt; i++)
        if (!(skip_special && tokenizer_is_special(tok, prompt[i])))
            d->ids[d->n++] = prompt[i];
    d->read = d->n;
    d->prefix = d->n > DETOK_CONTEXT ? d->n - DETOK_CONTEXT : 0;
    start_on_char(d);
    const char *text;
    size_t len;
    bool incomplete;
    fk_status st = decode_range(d, d->prefix, d->n, &text, &len, &incomplete, err);
    if (st) {
        detok_free(d);
        return st;
    }
    d->prefix_chars = utf8_count(text, len);
    *out = d;
    return FK_OK;
}

/* Bytes of s[len] after its first `chars` characters. */
static size_t skip_chars(const char *s, size_t len, size_t chars)
{
    size_t i = 0;
    for (; chars > 0 && i < len; chars--) {
        uint32_t cp;
        int k = utf8_next(s + i, len - i, &cp);
        i += (size_t)(k < 0 ? -k : k);
    }
    return i;
}

/* Emits what `held` allows: up to the earliest stop string (then the sequence is done), else all but the longest
 * tail that starts a stop string. */
static bool release(detok *d, int *stop_hit)
{
    size_t best = SIZE_MAX, keep = 0;
    for (int i = 0; i < d->n_stops; i++) {
        const char *s = d->stops[i];
        size_t n = d->stop_len[i];
        for (size_t p = 0; p + n <= d->held.len && p < best; p++)
            if (memcmp(d->held.p + p, s, n) == 0) {
                best = p;
                *stop_hit = i;
                break;
            }
        for (size_t k = n - 1 < d->held.len ? n - 1 : d->held.len; k > keep; k--)
            if (memcmp(d->held.p + d->held.len - k, s, k) == 0) {
                keep = k;
                break;
            }
    }
    size_t emit = best != SIZE_MAX ? best : d->held.len - keep;
    if (!append(&d->out, d->held.p, emit))
        return false;
    if (best != SIZE_MAX) {
        d->done = true;
        d->held.len = 0;
    } else if (keep > 0) {
        memmove(d->held.p, d->held.p + emit, keep);
        d->held.len = keep;
    } else {
        d->held.len = 0;
    }
    return true;
}

/* The text the window adds after decode(ids[prefix:read]) goes to `held`; the offsets move forward. text may live
 * in d->scratch: it is read before the next decode. */
static fk_status advance(detok *d, const char *text, size_t len, fk_error *err)
{
    size_t from = skip_chars(text, len, d->prefix_chars);
    if (!append(&d->held, text + from, len - from))
        return oom(err);
    d->prefix = d->read;
    d->read = d->n;
    start_on_char(d);
    const char *p;
    size_t plen;
    bool incomplete;
    fk_status st = decode_range(d, d->prefix, d->read, &p, &plen, &incomplete, err);
    if (st)
        return st;
    d->prefix_chars = utf8_count(p, plen);
    if (d->prefix >= DETOK_COMPACT) {
        memmove(d->ids, d->ids + d->prefix, (d->n - d->prefix) * sizeof *d->ids);
        d->n -= d->prefix, d->read -= d->prefix, d->prefix = 0;
    }
    return FK_OK;
}

static void set_delta(const detok *d, size_t from, const char **delta, size_t *delta_len)
{
    *delta = d->out.p + from;
    *delta_len = d->out.len - from;
}

fk_status detok_push(detok *d, int32_t id, const char **delta, size_t *delta_len, int *stop_hit, fk_error *err)
{
    const size_t from = d->out.len;
    set_delta(d, from, delta, delta_len);
    *stop_hit = -1;
    if (d->done)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "detok: the sequence has ended (stop string or finish)");
    if (id < 0 || id >= fk_tokenizer_vocab_size(d->tok))
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "token id %d is out of range [0, %d)", id,
                            fk_tokenizer_vocab_size(d->tok));
    if (d->skip_special && tokenizer_is_special(d->tok, id))
        return FK_OK;
    int32_t *ids = tokenizer_reserve(d->ids, &d->cap, d->n + 1, sizeof *d->ids);
    if (!ids)
        return oom(err);
    d->ids = ids;
    ids[d->n++] = id;
    const char *text;
    size_t len;
    bool incomplete;
    fk_status st = decode_range(d, d->prefix, d->n, &text, &len, &incomplete, err);
    if (st) {
        d->n--; /* e.g. an id with no token: as if it had not been pushed */
        return st;
    }
    size_t held_tokens = d->n - d->read;
    bool hold = incomplete && held_tokens < DETOK_MAX_HELD;
    if (!hold && (utf8_count(text, len) > d->prefix_chars || held_tokens >= DETOK_MAX_HELD)) {
        st = advance(d, text, len, err);
        if (!st && !release(d, stop_hit))
            st = oom(err);
    }
    set_delta(d, from, delta, delta_len);
    return st;
}

fk_status detok_finish(detok *d, const char **delta, size_t *delta_len, fk_error *err)
{
    const size_t from = d->out.len;
    set_delta(d, from, delta, delta_len);
    if (d->done)
        return FK_OK;
    fk_status st = FK_OK;
    if (d->n > d->read) {
        const char *text;
        size_t len;
        bool incomplete;
        if ((st = decode_range(d, d->prefix, d->n, &text, &len, &incomplete, err)))
            return st;
        st = advance(d, text, len, err);
    }
    int stop_hit = -1;
    if (!st && !release(d, &stop_hit))
        st = oom(err);
    if (!st && !d->done && !append(&d->out, d->held.p, d->held.len)) /* the tail no stop string completed */
        st = oom(err);
    d->held.len = 0;
    d->done = true;
    set_delta(d, from, delta, delta_len);
    return st;
}

const char *detok_text(const detok *d, size_t *len)
{
    *len = d->out.len;
    return d->out.p;
}
