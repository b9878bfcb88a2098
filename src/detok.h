/* detok.h — incremental detokenization of one generated sequence, for streaming, with stop strings. */
#ifndef FK_DETOK_H
#define FK_DETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flashkernel.h"

typedef struct detok detok;

/* prompt/n_prompt: context, so the first generated tokens decode as they do after the prompt (e.g.
 * SentencePiece's leading space). stops: up to n_stops non-empty UTF-8 strings.
 * Errors: FK_ERR_INVALID_ARGUMENT (an empty or invalid stop string, a prompt id out of range),
 * FK_ERR_OUT_OF_MEMORY. */
fk_status detok_create(const fk_tokenizer *tok, const int32_t *prompt, int n_prompt, bool skip_special,
                       const char *const *stops, int n_stops, detok **out, fk_error *err);

/* Adds one generated token. *delta, *delta_len: the text now safe to emit (valid UTF-8; held back: an incomplete
 * UTF-8 tail, and a tail that could still grow into a stop string). *stop_hit: index of the stop string found,
 * else -1; once found, the text ends where the stop string starts (the stop string itself is not emitted) and no
 * more tokens may be pushed. delta stays valid until the next call. An id out of range: FK_ERR_INVALID_ARGUMENT,
 * and the sequence is as before the call. */
fk_status detok_push(detok *d, int32_t id, const char **delta, size_t *delta_len, int *stop_hit, fk_error *err);

/* The sequence ended (length/eos/cancel): returns what is still owed (held-back stop-string prefix; an incomplete
 * UTF-8 tail as U+FFFD). A stop string that only this owed tail completes still ends the text where it starts
 * (it is not reported: the sequence has ended anyway). No token may be pushed afterwards. */
fk_status detok_finish(detok *d, const char **delta, size_t *delta_len, fk_error *err);

/* All text emitted so far (NUL-terminated). */
const char *detok_text(const detok *d, size_t *len);

void detok_free(detok *d);

#endif
