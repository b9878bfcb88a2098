/* fuzz_tokenizer.c — libFuzzer harness for the tokenizer: arbitrary bytes through encode → decode with the
 * gpt2, llama2-spm, shakespeare-llama, qwen2 and mistral-v3 tokenizers, and the ids through detok.
 *
 * Input: byte 0 steers the choices (where the prompt ends, skip_special, a stop string), the rest is the text.
 * Checks, per tokenizer:
 *   - encode fails exactly when the text is not valid UTF-8 (FK_ERR_INVALID_ARGUMENT), and never otherwise;
 *   - decode(encode(x)) == x for the byte-level tokenizers (gpt2, shakespeare-llama: every byte of the text is in
 *     some token and ByteLevel decoding concatenates bytes), == NFC(x) for qwen2 (byte-level after its NFC
 *     normalizer; its added tokens end in ">", which composes with nothing), and for llama2-spm when x holds no
 *     "▁" (decoded as a space) and no special token text (the normalizer's "▁" after it comes back as a space), for
 *     mistral-v3 when x holds no "▁" and does not start with a space (Metaspace "first" adds no "▁" before it and
 *     the decoder strips one); all match added tokens first, and decode keeps them;
 *   - the same bytes read as ids (16 bits each, modulo the vocabulary) decode to valid UTF-8;
 *   - detok, fed the ids one at a time after a prompt that does not end inside a character, emits valid UTF-8
 *     deltas that add up to decode(all) with decode(prompt)'s characters removed, cut at a stop string taken from
 *     that text where it first occurs; on arbitrary ids it emits valid UTF-8.
 * A failed check aborts (libFuzzer reports the input). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detok.h"
#include "flashkernel.h"
#include "fuzz_files.h"
#include "tokenizer.h"
#include "unicode_nfc.h"
#include "utf8.h"

enum { GPT2, SHAKESPEARE, LLAMA2, QWEN2, MISTRAL, N_TOKS };
static const char *const PATHS[N_TOKS] = {FK_FIXTURES_DIR "/tokenizers/gpt2/tokenizer.json",
                                          FK_FIXTURES_DIR "/models/shakespeare-llama/tokenizer.json",
                                          FK_FIXTURES_DIR "/tokenizers/llama2-spm/tokenizer.json",
                                          FK_FIXTURES_DIR "/tokenizers/qwen2/tokenizer.json",
                                          FK_FIXTURES_DIR "/tokenizers/mistral-v3/tokenizer.json"};
static fk_tokenizer *toks[N_TOKS];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    for (int k = 0; k < N_TOKS; k++) {
        fk_error err = {0};
        CHECK(fk_tokenizer_load(PATHS[k], &toks[k], &err) == FK_OK, "%s", err.message);
    }
    return 0;
}

static bool contains(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(s + i, needle, n) == 0)
            return true;
    return false;
}

/* What decode(encode(s)) must give with tokenizer k (malloc'd), or NULL when it need not give back s. */
static char *round_trip(int k, const char *s, size_t len, size_t *out_len)
{
    const bool metaspace = contains(s, len, "\xe2\x96\x81");
    if ((k == LLAMA2 && (metaspace || contains(s, len, "<s>") || contains(s, len, "</s>") ||
                         contains(s, len, "<unk>"))) ||
        (k == MISTRAL && (metaspace || (len && s[0] == ' '))))
        return NULL;
    char *want;
    if (k == QWEN2) {
        CHECK(unicode_nfc(s, len, &want, out_len), "out of memory");
        return want;
    }
    want = malloc(len + 1);
    memcpy(want, s, len);
    *out_len = len;
    return want;
}

/* Streams ids[n_prompt:n] after ids[:n_prompt]; returns the concatenated deltas (malloc'd). */
static char *stream(const fk_tokenizer *t, const int32_t *ids, int n_prompt, int n, bool skip, const char *stop,
                    size_t *len)
{
    detok *d;
    fk_error err = {0};
    CHECK(detok_create(t, ids, n_prompt, skip, stop ? &stop : NULL, stop ? 1 : 0, &d, &err) == FK_OK, "%s",
          err.message);
    size_t cap = 64;
    char *all = malloc(cap);
    *len = 0;
    int hit = -1;
    for (int i = n_prompt; i <= n && hit < 0; i++) {
        const char *delta;
        size_t dl;
        if (i < n)
            CHECK(detok_push(d, ids[i], &delta, &dl, &hit, &err) == FK_OK, "%s", err.message);
        else
            CHECK(detok_finish(d, &delta, &dl, &err) == FK_OK, "%s", err.message);
        CHECK(utf8_check(delta, dl) == dl, "a delta is not valid UTF-8");
        while (*len + dl > cap)
            all = realloc(all, cap *= 2);
        memcpy(all + *len, delta, dl);
        *len += dl;
    }
    detok_free(d);
    return all;
}

/* decode(ids) with the characters of decode(ids[:n_prompt]) removed from its front; *incomplete: the prompt
 * ends inside a character. */
static char *expected(const fk_tokenizer *t, const int32_t *ids, int n_prompt, int n, bool skip, size_t *len,
                      bool *incomplete)
{
    char *p, *full;
    size_t pl, fl;
    bool unused;
    CHECK(tokenizer_decode(t, ids, n_prompt, skip, &p, &pl, incomplete, NULL) == FK_OK, "decode");
    CHECK(tokenizer_decode(t, ids, n, skip, &full, &fl, &unused, NULL) == FK_OK, "decode");
    size_t at = 0;
    for (size_t c = utf8_count(p, pl); c > 0 && at < fl; c--) {
        uint32_t cp;
        int k = utf8_next(full + at, fl - at, &cp);
        at += (size_t)(k < 0 ? -k : k);
    }
    *len = fl - at;
    memmove(full, full + at, *len + 1);
    fk_free(p);
    return full;
}

static void check_stream(const fk_tokenizer *t, const int32_t *ids, int n, uint8_t ctl)
{
    int n_prompt = n ? ctl % (n + 1) : 0;
    bool skip = ctl & 0x80, incomplete;
    size_t want_len, got_len;
    char *want = expected(t, ids, n_prompt, n, skip, &want_len, &incomplete);
    /* A stop string: up to 4 bytes of the expected text from its middle, when that is UTF-8 without NUL. */
    char stop[8] = {0};
    size_t sl = 1 + (ctl >> 4 & 3), from = want_len / 2;
    bool use_stop = (ctl & 0x40) && from + sl <= want_len && utf8_check(want + from, sl) == sl &&
                    !memchr(want + from, 0, sl);
    if (use_stop)
        memcpy(stop, want + from, sl);
    char *got = stream(t, ids, n_prompt, n, skip, use_stop ? stop : NULL, &got_len);
    if (!incomplete) {
        size_t cut = want_len;
        for (size_t i = 0; use_stop && i + sl <= want_len; i++)
            if (memcmp(want + i, stop, sl) == 0) {
                cut = i;
                break;
            }
        CHECK(got_len == cut && memcmp(got, want, cut) == 0, "streamed %zu bytes, want %zu", got_len, cut);
    }
    free(got);
    fk_free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const uint8_t ctl = data[0];
    const char *text = (const char *)data + 1;
    const size_t len = size - 1;
    const bool valid = utf8_check(text, len) == len;
    for (int k = 0; k < N_TOKS; k++) {
        const fk_tokenizer *t = toks[k];
        int32_t *ids = NULL;
        int n = 0;
        fk_error err = {0};
        fk_status st = fk_tokenizer_encode(t, text, len, ctl & 1, &ids, &n, &err);
        if (!valid) {
            CHECK(st == FK_ERR_INVALID_ARGUMENT && !ids, "invalid UTF-8 accepted (status %d)", st);
        } else {
            CHECK(st == FK_OK, "%s: %s", PATHS[k], err.message);
            char *back;
            size_t back_len;
            CHECK(fk_tokenizer_decode(t, ids, n, false, &back, &back_len, &err) == FK_OK, "%s", err.message);
            CHECK(utf8_check(back, back_len) == back_len, "decode is not valid UTF-8");
            size_t want_len;
            char *want = ctl & 1 ? NULL : round_trip(k, text, len, &want_len);
            if (want)
                CHECK(back_len == want_len && memcmp(back, want, want_len) == 0, "%s: round trip changed the text",
                      PATHS[k]);
            free(want);
            fk_free(back);
            check_stream(t, ids, n, ctl);
        }
        fk_free(ids);

        /* The bytes as ids: decode and detok of arbitrary ids emit valid UTF-8. */
        int m = (int)(size / 2);
        int32_t *raw = malloc((size_t)m * sizeof *raw + 1);
        for (int i = 0; i < m; i++)
            raw[i] = (int32_t)((data[2 * i] | data[2 * i + 1] << 8) % fk_tokenizer_vocab_size(t));
        char *s;
        size_t sl;
        CHECK(fk_tokenizer_decode(t, raw, m, ctl & 2, &s, &sl, &err) == FK_OK, "%s", err.message);
        CHECK(utf8_check(s, sl) == sl, "decode of arbitrary ids is not valid UTF-8");
        fk_free(s);
        char *streamed = stream(t, raw, m ? ctl % m : 0, m, ctl & 2, NULL, &sl);
        free(streamed);
        free(raw);
    }
    return 0;
}
