/* json.h — strict reading of JSON files and typed, range-checked fields (on top of cJSON).
 * Every error message names the file (or `what`) and the field. */
#ifndef FK_JSON_H
#define FK_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "flashkernel.h"

/* Deepest nesting of arrays and objects a document may have. */
#define JSON_MAX_DEPTH 64

/* Why json_parse_strict failed. */
typedef struct json_fault {
    fk_status status;  /* FK_ERR_FORMAT, or FK_ERR_OUT_OF_MEMORY */
    char key[64];      /* a duplicate key (valid UTF-8, cut between characters within 63 bytes), else "" */
    char message[320]; /* "invalid JSON at byte 13: unexpected end of input", "duplicate key \"k\"", ... */
} json_fault;

/* Parses exactly `len` bytes as one JSON value, more strictly than cJSON: invalid JSON (with the byte offset),
 * trailing bytes other than whitespace, nesting deeper than JSON_MAX_DEPTH, NUL characters, lone surrogates,
 * numbers longer than 63 characters (cJSON's limit) and duplicate keys in any object are refused. A leading UTF-8
 * byte order mark is skipped. Strings are not checked for valid UTF-8 (callers do, to name the field). */
fk_status json_parse_strict(const char *buf, size_t len, cJSON **out, json_fault *f);

/* json_parse_strict with the message as "<what>: <why>" in err. */
fk_status json_parse(const char *buf, size_t len, const char *what, cJSON **out, fk_error *err);

/* Reads and parses a whole file (at most max_bytes). A missing file is FK_ERR_IO. */
fk_status json_parse_file(const char *path, size_t max_bytes, cJSON **out, fk_error *err);

/* The value as an exact integer: a JSON number with no fraction, |v| <= 2^53. */
bool json_as_int(const cJSON *item, int64_t *out);

/* Typed fields of an object. An absent key or a JSON null leaves *out untouched and succeeds unless
 * `required`; a wrong type or a value outside [min, max] is FK_ERR_FORMAT naming file, key and value. */
fk_status json_get_int(const cJSON *obj, const char *key, bool required, int64_t min, int64_t max, int64_t *out,
                       const char *file, fk_error *err);
fk_status json_get_double(const cJSON *obj, const char *key, bool required, double min, double max, double *out,
                          const char *file, fk_error *err);
fk_status json_get_bool(const cJSON *obj, const char *key, bool *out, const char *file, fk_error *err);
fk_status json_get_string(const cJSON *obj, const char *key, bool required, const char **out, const char *file,
                          fk_error *err);

#endif
