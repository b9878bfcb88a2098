/* unicode_nfc.h — Unicode Normalization Form C (canonical decomposition, canonical ordering, canonical composition),
 * the tokenizer.json "NFC" normalizer (Qwen2's). */
#ifndef FK_UNICODE_NFC_H
#define FK_UNICODE_NFC_H

#include <stdbool.h>
#include <stddef.h>

/* NFC of the valid UTF-8 s[len], written to *out (malloc'd, NUL-terminated, *out_len bytes without the NUL).
 * False only when out of memory. */
bool unicode_nfc(const char *s, size_t len, char **out, size_t *out_len);

#endif
