/* utf8.h — UTF-8 as the tokenizer needs it: validation, one character at a time, Rust's lossy conversion
 * (what Hugging Face's decoders do with invalid bytes), and the Unicode White_Space property; and clipping for
 * messages. */
#ifndef FK_UTF8_H
#define FK_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The byte offset of the first invalid sequence in s[len] (overlong forms, surrogates and code points above
 * U+10FFFF are invalid), or len when all of it is valid UTF-8. */
size_t utf8_check(const char *s, size_t len);

/* The character starting at s (n > 0 bytes left): returns its length in bytes and stores the code point in *cp.
 * An invalid sequence returns the negated length of its maximal invalid prefix (at least 1 byte), as in
 * Unicode's "substitution of maximal subparts". */
int utf8_next(const char *s, size_t n, uint32_t *cp);

/* Writes the UTF-8 bytes of cp (at most U+10FFFF) to out; returns how many (1 to 4). */
int utf8_put(uint32_t cp, char out[4]);

/* Characters in s[len]; each invalid maximal subpart counts as one (as the U+FFFD that replaces it). */
size_t utf8_count(const char *s, size_t len);

/* Rust's String::from_utf8_lossy: copies s[len] to out, each invalid maximal subpart replaced by U+FFFD.
 * out must hold 3 * len bytes. Returns the bytes written. */
size_t utf8_lossy(const char *s, size_t len, char *out);

/* True when s[len] ends with the start of a valid UTF-8 sequence that lacks its last bytes (more bytes could
 * complete it), as opposed to complete text or bytes that can never become valid. */
bool utf8_ends_incomplete(const char *s, size_t len);

/* How many bytes of the NUL-terminated s to keep so that at most max remain and no character is cut (for
 * "%.*s" in messages). */
int utf8_clip(const char *s, int max);

/* Unicode White_Space, Rust's char::is_whitespace. */
bool utf8_is_white_space(uint32_t cp);

/* "\xEF\xBF\xBD": U+REPLACEMENT CHARACTER. */
#define UTF8_REPLACEMENT "\xEF\xBF\xBD"

#endif
