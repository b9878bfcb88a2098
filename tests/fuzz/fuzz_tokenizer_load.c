/* fuzz_tokenizer_load.c — libFuzzer harness for loading tokenizer.json (fk_tokenizer_load, as the model loader calls
 * it): the input is the file, up to its first NUL byte; what follows that NUL, when there is one, is a text to
 * encode with it (else a few fixed texts are).
 *
 * Checks, when the file is accepted: the vocabulary is not empty; every text that is valid UTF-8 encodes (with and
 * without the template's special tokens) to ids inside the vocabulary, which decode — special tokens kept or
 * skipped — to valid UTF-8, and stream through detok as valid UTF-8 deltas; the input's bytes read as ids modulo the
 * vocabulary decode to valid UTF-8 or are refused as ids without a token. A refused file has a message. A failed
 * check aborts (libFuzzer keeps the input). */
#include <stdint.h>
#include <string.h>

#include "detok.h"
#include "flashkernel.h"
#include "fuzz_files.h"
#include "tokenizer.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const TEXTS[] = {"Hello world", " First Citizen:\nBefore we proceed, hear me speak.",
                                    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "<s>a</s>", ""};

static void check_text(const fk_tokenizer *t, const char *text, size_t len)
{
    const int vocab = fk_tokenizer_vocab_size(t);
    for (int special = 0; special < 2; special++) {
        int32_t *ids = NULL;
        int n = 0;
        fk_error err = {0};
        CHECK(fk_tokenizer_encode(t, text, len, special, &ids, &n, &err) == FK_OK, "encoding %zu bytes: %s", len,
              err.message);
        for (int i = 0; i < n; i++)
            CHECK(ids[i] >= 0 && ids[i] < vocab, "id %d outside the vocabulary of %d", ids[i], vocab);
        for (int skip = 0; skip < 2; skip++) {
            char *back;
            size_t back_len;
            CHECK(fk_tokenizer_decode(t, ids, n, skip, &back, &back_len, &err) == FK_OK,
                  "an encoding does not decode: %s", err.message);
            CHECK(utf8_check(back, back_len) == back_len, "decode is not valid UTF-8");
            fk_free(back);
            detok *d;
            CHECK(detok_create(t, ids, n / 2, skip, NULL, 0, &d, &err) == FK_OK, "%s", err.message);
            for (int i = n / 2; i <= n; i++) {
                const char *delta;
                size_t dl;
                int hit;
                if (i < n)
                    CHECK(detok_push(d, ids[i], &delta, &dl, &hit, &err) == FK_OK, "%s", err.message);
                else
                    CHECK(detok_finish(d, &delta, &dl, &err) == FK_OK, "%s", err.message);
                CHECK(utf8_check(delta, dl) == dl, "a streamed delta is not valid UTF-8");
            }
            detok_free(d);
        }
        fk_free(ids);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    const size_t file_len = nul ? (size_t)(nul - data) : size;
    const char *path = fuzz_write("tokenizer.json", data, file_len);
    fk_tokenizer *t;
    fk_error err = {0};
    if (fk_tokenizer_load(path, &t, &err) != FK_OK) {
        CHECK(err.message[0], "a refusal without a message");
        return 0;
    }
    const int vocab = fk_tokenizer_vocab_size(t);
    CHECK(vocab >= 1, "an empty vocabulary");
    if (nul) {
        const char *text = (const char *)nul + 1;
        const size_t len = size - file_len - 1;
        if (utf8_check(text, len) == len)
            check_text(t, text, len);
    } else {
        for (size_t i = 0; i < sizeof TEXTS / sizeof TEXTS[0]; i++)
            check_text(t, TEXTS[i], strlen(TEXTS[i]));
    }
    /* The file's bytes as ids: some may have no token (holes in the vocabulary), which decode refuses. */
    const int m = (int)(file_len / 2 < 64 ? file_len / 2 : 64);
    int32_t raw[64];
    for (int i = 0; i < m; i++)
        raw[i] = (int32_t)((data[2 * i] | data[2 * i + 1] << 8) % vocab);
    char *s;
    size_t sl;
    if (fk_tokenizer_decode(t, raw, m, false, &s, &sl, &err) == FK_OK) {
        CHECK(utf8_check(s, sl) == sl, "decode of arbitrary ids is not valid UTF-8");
        fk_free(s);
    } else {
        CHECK(strstr(err.message, "has no token"), "decoding ids inside the vocabulary: %s", err.message);
    }
    fk_tokenizer_free(t);
    return 0;
}
