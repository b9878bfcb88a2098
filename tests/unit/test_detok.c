/* test_detok.c — streaming detokenization: random token splits of multi-byte text (CJK, emoji with ZWJ and skin
 * tones, combining marks), cut even inside characters, never emit invalid UTF-8 and add up to the full decode;
 * the prompt gives context (SentencePiece's leading space); stop strings split across tokens are found and cut
 * the text where they start; an incomplete tail comes out as U+FFFD at finish; bad input is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "detok.h"
#include "test_util.h"
#include "tokenizer.h"
#include "utf8.h"

static fk_tokenizer *toks[3];
static const char *const TOK_PATHS[3] = {"tokenizers/gpt2/tokenizer.json", "models/shakespeare-llama/tokenizer.json",
                                         "tokenizers/llama2-spm/tokenizer.json"};

static const char *const PIECES[] = {
    "日本語", "のテキスト", "中文", "한국어", "👩\u200d👩\u200d👧\u200d👦", "🏳\ufe0f\u200d🌈", "👍🏽", "🇯🇵", "e\u0301",
    "a\u0300\u0316", "Z\u0351\u0362\u0338", "Привет", "עולם", "مرحبا", " ", "  ", "\n", "hello", " world", "The",
    ",", "!", "'s", "42", "\u2028", "\ufffd",
};

static size_t random_text(uint64_t *rng, char *buf, size_t cap)
{
    size_t len = 0;
    int n = 1 + (int)tu_below(rng, 24);
    for (int i = 0; i < n; i++) {
        const char *p = PIECES[tu_below(rng, sizeof PIECES / sizeof PIECES[0])];
        size_t pl = strlen(p);
        if (len + pl >= cap)
            break;
        memcpy(buf + len, p, pl);
        len += pl;
    }
    buf[len] = '\0';
    return len;
}

/* The id of the token for one byte: "<0xNN>" (byte fallback), else its ByteLevel character. */
static int32_t byte_token(const fk_tokenizer *t, unsigned char b)
{
    char s[8];
    snprintf(s, sizeof s, "<0x%02X>", b);
    int32_t id = tokenizer_vocab_find(t, s, 6);
    if (id < 0)
        id = tokenizer_vocab_find(t, s, (size_t)utf8_put(tokenizer_byte_char(b), s));
    assert_true(id >= 0);
    return id;
}

/* Ids for text with random token boundaries: random byte segments, each encoded when it is valid UTF-8, else
 * written byte by byte (so tokens end inside characters). */
static int32_t *random_split(const fk_tokenizer *t, uint64_t *rng, const char *text, size_t len, int *n)
{
    int32_t *ids = malloc((len + 1) * 4 * sizeof *ids);
    *n = 0;
    for (size_t at = 0; at < len;) {
        size_t seg = 1 + tu_below(rng, 7);
        if (seg > len - at)
            seg = len - at;
        if (utf8_check(text + at, seg) == seg) {
            int32_t *part;
            int m;
            assert_int_equal(fk_tokenizer_encode(t, text + at, seg, false, &part, &m, NULL), FK_OK);
            memcpy(ids + *n, part, (size_t)m * sizeof *ids);
            *n += m;
            fk_free(part);
        } else {
            for (size_t i = 0; i < seg; i++)
                ids[(*n)++] = byte_token(t, (unsigned char)text[at + i]);
        }
        at += seg;
    }
    return ids;
}

static char *decode(const fk_tokenizer *t, const int32_t *ids, int n, bool skip, size_t *len)
{
    char *s = NULL;
    assert_int_equal(fk_tokenizer_decode(t, ids, n, skip, &s, len, NULL), FK_OK);
    return s;
}

/* Streams gen after prompt; returns the concatenated deltas (malloc'd) and checks each is valid UTF-8 and that
 * detok_text agrees. */
static char *stream(const fk_tokenizer *t, const int32_t *prompt, int n_prompt, const int32_t *gen, int n_gen,
                    bool skip, const char *const *stops, int n_stops, int *stop_hit, int *stopped_at, size_t *len)
{
    detok *d;
    assert_int_equal(detok_create(t, prompt, n_prompt, skip, stops, n_stops, &d, NULL), FK_OK);
    char *all = malloc(1 << 16);
    *len = 0;
    *stop_hit = -1;
    *stopped_at = -1;
    for (int i = 0; i <= n_gen; i++) {
        const char *delta;
        size_t dl;
        int hit = -1;
        if (i < n_gen)
            assert_int_equal(detok_push(d, gen[i], &delta, &dl, &hit, NULL), FK_OK);
        else
            assert_int_equal(detok_finish(d, &delta, &dl, NULL), FK_OK);
        assert_int_equal(utf8_check(delta, dl), dl);
        assert_true(*len + dl < (1 << 16));
        memcpy(all + *len, delta, dl);
        *len += dl;
        if (hit >= 0) {
            *stop_hit = hit;
            *stopped_at = i;
            fk_error err = {0};
            assert_int_equal(detok_push(d, gen[0], &delta, &dl, &hit, &err), FK_ERR_INVALID_ARGUMENT);
            assert_int_equal(dl, 0);
            break;
        }
    }
    all[*len] = '\0';
    size_t tl;
    const char *text = detok_text(d, &tl);
    assert_int_equal(tl, *len);
    assert_memory_equal(text, all, tl);
    assert_int_equal(text[tl], '\0');
    detok_free(d);
    return all;
}

/* decode(prompt + gen) with decode(prompt)'s characters removed from its front. */
static char *expected_text(const fk_tokenizer *t, const int32_t *ids, int n_prompt, int n, bool skip, size_t *len)
{
    size_t pl, fl;
    char *p = decode(t, ids, n_prompt, skip, &pl);
    char *full = decode(t, ids, n, skip, &fl);
    size_t chars = utf8_count(p, pl), at = 0;
    for (size_t c = 0; c < chars && at < fl; c++) {
        uint32_t cp;
        int k = utf8_next(full + at, fl - at, &cp);
        at += (size_t)(k < 0 ? -k : k);
    }
    *len = fl - at;
    memmove(full, full + at, *len + 1);
    free(p);
    return full;
}

/* Offset of the first occurrence of needle in s[len], or len. */
static size_t find(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(s + i, needle, n) == 0)
            return i;
    return len;
}

static void test_random_splits(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    for (int k = 0; k < 3; k++) {
        const fk_tokenizer *t = toks[k];
        for (int iter = 0; iter < 300; iter++) {
            char text[2048];
            size_t len = random_text(&rng, text, sizeof text);
            int n;
            int32_t *split = random_split(t, &rng, text, len, &n);
            /* Half the time a special token (BOS) in front, which skip_special leaves out (or not). */
            const int32_t special[3] = {50256, 0, 1};
            bool bos = tu_below(&rng, 2), skip = tu_below(&rng, 2);
            int32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
            ids[0] = special[k];
            memcpy(ids + bos, split, (size_t)n * sizeof *ids);
            n += bos;
            free(split);
            /* A prompt that ends inside a character has no meaningful "text after it": not tested. */
            int n_prompt;
            bool incomplete;
            do {
                n_prompt = (int)tu_below(&rng, (uint32_t)n + 1);
                char *p;
                size_t pl;
                assert_int_equal(tokenizer_decode(t, ids, n_prompt, skip, &p, &pl, &incomplete, NULL), FK_OK);
                free(p);
            } while (incomplete);
            size_t want_len, got_len;
            char *want = expected_text(t, ids, n_prompt, n, skip, &want_len);
            int hit, at;
            char *got = stream(t, ids, n_prompt, ids + n_prompt, n - n_prompt, skip, NULL, 0, &hit, &at, &got_len);
            if (got_len != want_len || memcmp(got, want, want_len) != 0) {
                for (int i = 0; i < n; i++)
                    fprintf(stderr, "%d%s", ids[i], i + 1 < n ? "," : "\n");
                fail_msg("%s: text \"%s\" split into %d ids (above, skip %d), prompt %d: streamed \"%s\", want \"%s\"",
                         TOK_PATHS[k], text, n, skip, n_prompt, got, want);
            }
            /* Byte-level decoding is a plain concatenation of bytes: all of it streamed is the text. */
            if (k < 2 && n_prompt == 0 && (skip || !bos)) {
                assert_int_equal(got_len, len);
                assert_memory_equal(got, text, len);
            }
            free(got);
            free(want);
            free(ids);
        }
    }
}

/* Nothing is held back once the last token completes the text: finish owes nothing. */
static void test_streams_without_waiting(void **state)
{
    (void)state;
    const fk_tokenizer *t = toks[0];
    const char *text = "日本語のテキスト👩\u200d👩\u200d👧\u200d👦 and e\u0301";
    int n;
    int32_t *ids;
    assert_int_equal(fk_tokenizer_encode(t, text, strlen(text), false, &ids, &n, NULL), FK_OK);
    detok *d;
    assert_int_equal(detok_create(t, NULL, 0, true, NULL, 0, &d, NULL), FK_OK);
    const char *delta;
    size_t dl, emitted = 0;
    int hit;
    for (int i = 0; i < n; i++) {
        assert_int_equal(detok_push(d, ids[i], &delta, &dl, &hit, NULL), FK_OK);
        emitted += dl;
    }
    assert_int_equal(emitted, strlen(text));
    assert_int_equal(detok_finish(d, &delta, &dl, NULL), FK_OK);
    assert_int_equal(dl, 0);
    detok_free(d);
    fk_free(ids);
}

/* SentencePiece: "▁world" after the prompt "Hello" streams as " world" (alone it would decode to "world"). */
static void test_prompt_context(void **state)
{
    (void)state;
    const fk_tokenizer *t = toks[2];
    int n;
    int32_t *ids;
    assert_int_equal(fk_tokenizer_encode(t, "Hello world", 11, true, &ids, &n, NULL), FK_OK);
    assert_int_equal(n, 3); /* <s> ▁Hello ▁world */
    size_t len;
    int hit, at;
    char *got = stream(t, ids, 2, ids + 2, 1, true, NULL, 0, &hit, &at, &len);
    assert_string_equal(got, " world");
    free(got);
    got = stream(t, NULL, 0, ids + 2, 1, true, NULL, 0, &hit, &at, &len);
    assert_string_equal(got, "world");
    free(got);
    /* Specials kept: "<s>" streams as text; skipped: nothing. */
    got = stream(t, NULL, 0, ids, 3, false, NULL, 0, &hit, &at, &len);
    assert_string_equal(got, "<s> Hello world");
    free(got);
    got = stream(t, NULL, 0, ids, 3, true, NULL, 0, &hit, &at, &len);
    assert_string_equal(got, "Hello world");
    free(got);
    fk_free(ids);
}

/* Stop strings: every substring of a generated text, as a stop string, cuts the stream where its first
 * occurrence starts, however the tokens split it; the earliest of several wins. */
static void test_stop_strings(void **state)
{
    (void)state;
    uint64_t rng = tu_seed() ^ 0x5bd1e995;
    for (int k = 0; k < 3; k++) {
        const fk_tokenizer *t = toks[k];
        for (int iter = 0; iter < 300; iter++) {
            char text[2048];
            size_t len = random_text(&rng, text, sizeof text);
            int n;
            int32_t *ids = random_split(t, &rng, text, len, &n);
            size_t full_len;
            char *full = expected_text(t, ids, 0, n, true, &full_len);
            /* A stop string: a random substring of the decoded text on character boundaries. */
            size_t chars = utf8_count(full, full_len);
            if (chars == 0) {
                free(full);
                free(ids);
                continue;
            }
            size_t a = tu_below(&rng, (uint32_t)chars), b = a + 1 + tu_below(&rng, (uint32_t)(chars - a));
            size_t ia = 0, ib = 0, c = 0;
            for (size_t i = 0; i <= full_len; i++) {
                if (i == full_len || ((unsigned char)full[i] & 0xC0) != 0x80) {
                    if (c == a)
                        ia = i;
                    if (c == b)
                        ib = i;
                    c++;
                }
            }
            char stop[2048];
            memcpy(stop, full + ia, ib - ia);
            stop[ib - ia] = '\0';
            size_t want = find(full, full_len, stop); /* where its first occurrence starts */
            const char *stops[2] = {"\x01never\x01", stop};
            size_t got_len;
            int hit, at;
            char *got = stream(t, NULL, 0, ids, n, true, stops, 2, &hit, &at, &got_len);
            if (got_len != want || memcmp(got, full, want) != 0)
                fail_msg("%s: stop \"%s\" in \"%s\": hit %d, text \"%s\"", TOK_PATHS[k], stop, full, hit, got);
            /* A stop completed only by a U+FFFD at the very end is found at finish, which reports no stop (the
             * sequence has ended anyway); the text is cut all the same. */
            bool at_finish = want + strlen(stop) == full_len && full_len >= 3 &&
                             memcmp(full + full_len - 3, "\xef\xbf\xbd", 3) == 0;
            if (hit == -1 && at_finish) {
                free(got);
                free(full);
                free(ids);
                continue;
            }
            assert_int_equal(hit, 1);
            /* Reported at the token that completed it, or (when that token also began a character) as soon as
             * the character is whole: at most 3 byte tokens later. */
            int j = 0;
            for (;; j++) {
                size_t ul;
                char *upto;
                bool incomplete;
                assert_int_equal(tokenizer_decode(t, ids, j + 1, true, &upto, &ul, &incomplete, NULL), FK_OK);
                bool found = !incomplete && ul >= want + strlen(stop) && memcmp(upto, full, want + strlen(stop)) == 0;
                free(upto);
                if (found)
                    break;
            }
            if (at < j || at > j + 3)
                fail_msg("%s: stop \"%s\" complete at token %d, reported at %d", TOK_PATHS[k], stop, j, at);
            free(got);
            free(full);
            free(ids);
        }
    }
}

static void test_stop_string_cases(void **state)
{
    (void)state;
    const fk_tokenizer *t = toks[0];
    const char *text = "The end is near. THE END.";
    int n;
    int32_t *ids;
    assert_int_equal(fk_tokenizer_encode(t, text, strlen(text), false, &ids, &n, NULL), FK_OK);
    size_t len;
    int hit, at;
    /* Earliest wins; on a tie the lower index. */
    const char *s1[3] = {"THE END", "near", "is near"};
    char *got = stream(t, NULL, 0, ids, n, true, s1, 3, &hit, &at, &len);
    assert_string_equal(got, "The end ");
    assert_int_equal(hit, 2);
    free(got);
    const char *s2[2] = {"end", "end is"};
    got = stream(t, NULL, 0, ids, n, true, s2, 2, &hit, &at, &len);
    assert_string_equal(got, "The ");
    assert_int_equal(hit, 0);
    free(got);
    /* At the very start: nothing is emitted. */
    const char *s3[1] = {"The"};
    got = stream(t, NULL, 0, ids, n, true, s3, 1, &hit, &at, &len);
    assert_string_equal(got, "");
    assert_int_equal(hit, 0);
    assert_int_equal(at, 0);
    free(got);
    /* A stop that never completes: its held prefix comes out at finish. */
    const char *s4[1] = {"END!"};
    got = stream(t, NULL, 0, ids, n, true, s4, 1, &hit, &at, &len);
    assert_string_equal(got, text);
    assert_int_equal(hit, -1);
    free(got);
    fk_free(ids);
}

/* An incomplete character is held, then owed as U+FFFD at finish; lone continuation bytes do not stall the
 * stream for more than a few tokens. */
static void test_incomplete_utf8(void **state)
{
    (void)state;
    const fk_tokenizer *t = toks[0];
    const int32_t two[2] = {byte_token(t, 0xE6), byte_token(t, 0x97)}; /* 日 is E6 97 A5 */
    detok *d;
    assert_int_equal(detok_create(t, NULL, 0, true, NULL, 0, &d, NULL), FK_OK);
    const char *delta;
    size_t dl;
    int hit;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(detok_push(d, two[i], &delta, &dl, &hit, NULL), FK_OK);
        assert_int_equal(dl, 0);
    }
    assert_int_equal(detok_finish(d, &delta, &dl, NULL), FK_OK);
    assert_int_equal(dl, 3);
    assert_memory_equal(delta, "\xef\xbf\xbd", 3);
    fk_error err = {0};
    assert_int_equal(detok_push(d, two[0], &delta, &dl, &hit, &err), FK_ERR_INVALID_ARGUMENT);
    detok_free(d);

    assert_int_equal(detok_create(t, NULL, 0, true, NULL, 0, &d, NULL), FK_OK);
    size_t emitted = 0;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(detok_push(d, byte_token(t, 0x80), &delta, &dl, &hit, NULL), FK_OK);
        assert_int_equal(utf8_check(delta, dl), dl);
        emitted += dl;
    }
    assert_true(emitted >= 3 * 90);
    assert_int_equal(detok_finish(d, &delta, &dl, NULL), FK_OK);
    assert_int_equal(emitted + dl, 300);
    detok_free(d);
}

static void test_bad_input(void **state)
{
    (void)state;
    const fk_tokenizer *t = toks[0];
    detok *d = (detok *)&d;
    fk_error err = {0};
    const char *empty[2] = {"ok", ""};
    assert_int_equal(detok_create(t, NULL, 0, true, empty, 2, &d, &err), FK_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.message, "stop string 1 is empty");
    assert_null(d);
    const char *bad[1] = {"ab\xff"};
    assert_int_equal(detok_create(t, NULL, 0, true, bad, 1, &d, &err), FK_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.message, "stop string 0 is not valid UTF-8 at byte 2");
    const int32_t prompt[2] = {15496, 50257};
    assert_int_equal(detok_create(t, prompt, 2, true, NULL, 0, &d, &err), FK_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.message, "prompt token id 50257 at position 1 is out of range [0, 50257)");

    assert_int_equal(detok_create(t, prompt, 1, true, NULL, 0, &d, NULL), FK_OK);
    const char *delta;
    size_t dl;
    int hit;
    assert_int_equal(detok_push(d, -3, &delta, &dl, &hit, &err), FK_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.message, "token id -3 is out of range [0, 50257)");
    assert_int_equal(detok_push(d, 995, &delta, &dl, &hit, NULL), FK_OK); /* " world" */
    assert_int_equal(dl, 6);
    assert_memory_equal(delta, " world", 6);
    detok_free(d);
}

/* 200,000 tokens stream in linear time (a quadratic detokenizer would not finish within the test's timeout). */
static void test_long_stream(void **state)
{
    (void)state;
    const fk_tokenizer *t = toks[1];
    const char *text = "ROMEO:\nBut soft, what light through yonder window breaks? 日本 👩\u200d👧\n";
    int n;
    int32_t *ids;
    assert_int_equal(fk_tokenizer_encode(t, text, strlen(text), false, &ids, &n, NULL), FK_OK);
    const char *stops[1] = {"never appears"};
    detok *d;
    assert_int_equal(detok_create(t, NULL, 0, true, stops, 1, &d, NULL), FK_OK);
    const char *delta;
    size_t dl, total = 0;
    int hit;
    const int reps = 200000 / n;
    for (int i = 0; i < reps * n; i++) {
        assert_int_equal(detok_push(d, ids[i % n], &delta, &dl, &hit, NULL), FK_OK);
        total += dl;
    }
    assert_int_equal(detok_finish(d, &delta, &dl, NULL), FK_OK);
    total += dl;
    assert_int_equal(total, strlen(text) * (size_t)reps);
    detok_free(d);
    fk_free(ids);
}

static int setup(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        fk_error err = {0};
        if (fk_tokenizer_load(tu_fixture(TOK_PATHS[k]), &toks[k], &err) != FK_OK) {
            fprintf(stderr, "%s\n", err.message);
            return -1;
        }
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++)
        fk_tokenizer_free(toks[k]);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_splits),
        cmocka_unit_test(test_streams_without_waiting),
        cmocka_unit_test(test_prompt_context),
        cmocka_unit_test(test_stop_strings),
        cmocka_unit_test(test_stop_string_cases),
        cmocka_unit_test(test_incomplete_utf8),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_long_stream),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
