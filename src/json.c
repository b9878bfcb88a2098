/* json.c — strict JSON, for model files and HTTP bodies alike: an RFC 8259 syntax check first (cJSON accepts
 * trailing bytes, NUL characters, lone surrogates, leading zeros, any depth up to 1000 and duplicate keys), then
 * cJSON's tree, then no duplicate keys; and typed, range-checked getters. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "utf8.h"

/* ---- strict syntax (RFC 8259) ---- */

typedef struct syntax {
    const unsigned char *s;
    size_t n, i;
    int depth;
    json_fault *f;
} syntax;

static bool fault(json_fault *f, fk_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fault(json_fault *f, fk_status status, const char *fmt, ...)
{
    f->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    return false;
}

static bool syntax_fail(syntax *v, const char *what)
{
    return fault(v->f, FK_ERR_FORMAT, "invalid JSON at byte %zu: %s", v->i, what);
}

static void skip_ws(syntax *v)
{
    while (v->i < v->n && (v->s[v->i] == ' ' || v->s[v->i] == '\t' || v->s[v->i] == '\n' || v->s[v->i] == '\r'))
        v->i++;
}

static int hex4(const unsigned char *p)
{
    int x = 0;
    for (int k = 0; k < 4; k++) {
        int c = p[k], d = c >= '0' && c <= '9' ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
        if (d < 0)
            return -1;
        x = x * 16 + d;
    }
    return x;
}

static bool syntax_string(syntax *v)
{
    v->i++; /* the opening quote */
    for (;;) {
        if (v->i >= v->n)
            return syntax_fail(v, "unterminated string");
        const unsigned char c = v->s[v->i];
        if (c == '"') {
            v->i++;
            return true;
        }
        if (c == 0)
            return fault(v->f, FK_ERR_FORMAT, "NUL character not allowed (at byte %zu)", v->i);
        if (c < 0x20)
            return syntax_fail(v, "control character in string");
        if (c != '\\') {
            v->i++; /* bytes >= 0x80: UTF-8 is the caller's to check (to name the field) */
            continue;
        }
        if (v->i + 1 >= v->n)
            return syntax_fail(v, "unterminated string");
        const unsigned char esc = v->s[v->i + 1];
        if (strchr("\"\\/bfnrt", esc) && esc) {
            v->i += 2;
            continue;
        }
        if (esc != 'u')
            return syntax_fail(v, "invalid escape");
        int u = v->i + 6 <= v->n ? hex4(v->s + v->i + 2) : -1;
        if (u < 0)
            return syntax_fail(v, "invalid \\u escape");
        if (u == 0)
            return fault(v->f, FK_ERR_FORMAT, "NUL character not allowed (\\u0000 at byte %zu)", v->i);
        if (u >= 0xDC00 && u <= 0xDFFF)
            return syntax_fail(v, "lone surrogate");
        if (u >= 0xD800 && u <= 0xDBFF) {
            const size_t j = v->i + 6;
            int low = j + 6 <= v->n && v->s[j] == '\\' && v->s[j + 1] == 'u' ? hex4(v->s + j + 2) : -1;
            if (low < 0xDC00 || low > 0xDFFF)
                return syntax_fail(v, "lone surrogate");
            v->i += 6;
        }
        v->i += 6;
    }
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? of at most 63 characters (cJSON copies numbers into 64 bytes). */
static bool syntax_number(syntax *v)
{
    const size_t start = v->i;
#define DIGIT(k) ((k) < v->n && v->s[(k)] >= '0' && v->s[(k)] <= '9')
    if (v->s[v->i] == '-')
        v->i++;
    if (!DIGIT(v->i))
        return syntax_fail(v, "invalid number");
    if (v->s[v->i] == '0')
        v->i++;
    else
        while (DIGIT(v->i))
            v->i++;
    if (v->i < v->n && v->s[v->i] == '.') {
        v->i++;
        if (!DIGIT(v->i))
            return syntax_fail(v, "invalid number");
        while (DIGIT(v->i))
            v->i++;
    }
    if (v->i < v->n && (v->s[v->i] == 'e' || v->s[v->i] == 'E')) {
        v->i++;
        if (v->i < v->n && (v->s[v->i] == '+' || v->s[v->i] == '-'))
            v->i++;
        if (!DIGIT(v->i))
            return syntax_fail(v, "invalid number");
        while (DIGIT(v->i))
            v->i++;
    }
#undef DIGIT
    if (v->i - start > 63) {
        v->i = start;
        return syntax_fail(v, "number longer than 63 characters");
    }
    return true;
}

static bool syntax_value(syntax *v);

/* An array or object; `close` is ']' or '}'. */
static bool syntax_container(syntax *v, char close)
{
    if (++v->depth > JSON_MAX_DEPTH)
        return fault(v->f, FK_ERR_FORMAT, "nesting too deep: more than %d levels of arrays and objects (at byte %zu)",
                     JSON_MAX_DEPTH, v->i);
    v->i++;
    skip_ws(v);
    if (v->i < v->n && v->s[v->i] == close) {
        v->i++;
        v->depth--;
        return true;
    }
    for (;;) {
        if (close == '}') {
            skip_ws(v);
            if (v->i >= v->n || v->s[v->i] != '"')
                return syntax_fail(v, v->i >= v->n ? "unexpected end of input" : "expected a string key");
            if (!syntax_string(v))
                return false;
            skip_ws(v);
            if (v->i >= v->n || v->s[v->i] != ':')
                return syntax_fail(v, v->i >= v->n ? "unexpected end of input" : "expected ':'");
            v->i++;
        }
        if (!syntax_value(v))
            return false;
        skip_ws(v);
        if (v->i >= v->n)
            return syntax_fail(v, "unexpected end of input");
        if (v->s[v->i] == close) {
            v->i++;
            v->depth--;
            return true;
        }
        if (v->s[v->i] != ',')
            return syntax_fail(v, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
        v->i++;
    }
}

static bool syntax_value(syntax *v)
{
    skip_ws(v);
    if (v->i >= v->n)
        return syntax_fail(v, "unexpected end of input");
    const unsigned char c = v->s[v->i];
    static const char *const literals[] = {"true", "false", "null"};
    switch (c) {
    case '{': return syntax_container(v, '}');
    case '[': return syntax_container(v, ']');
    case '"': return syntax_string(v);
    case 't':
    case 'f':
    case 'n':
        for (int k = 0; k < 3; k++) {
            const size_t len = strlen(literals[k]);
            if (literals[k][0] == c && v->n - v->i >= len && !memcmp(v->s + v->i, literals[k], len)) {
                v->i += len;
                return true;
            }
        }
        return syntax_fail(v, "invalid literal");
    case 0: return syntax_fail(v, "unexpected NUL byte");
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return syntax_number(v);
        return syntax_fail(v, "unexpected character");
    }
}

/* ---- the tree: duplicate keys ---- */

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* No object of the tree repeats a key. */
static bool check_keys(const cJSON *node, json_fault *f)
{
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
        return true;
    size_t n = 0;
    for (const cJSON *c = node->child; c; c = c->next, n++)
        if (!check_keys(c, f))
            return false;
    if (!cJSON_IsObject(node) || n < 2)
        return true;
    const char **keys = malloc(n * sizeof *keys);
    if (!keys)
        return fault(f, FK_ERR_OUT_OF_MEMORY, "out of memory checking keys");
    size_t i = 0;
    for (const cJSON *c = node->child; c; c = c->next)
        keys[i++] = c->string;
    qsort(keys, n, sizeof *keys, compare_strings);
    const char *dup = NULL;
    for (i = 1; i < n && !dup; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0)
            dup = keys[i];
    if (dup) {
        /* Named in valid UTF-8 even when the key is not (its bytes are the caller's to check, after this): the message
         * and key go into logs and JSON error bodies. Invalid sequences become U+FFFD; cuts fall between characters. */
        char shown[3 * 200 + 1];
        shown[utf8_lossy(dup, (size_t)utf8_clip(dup, 200), shown)] = '\0';
        shown[utf8_clip(shown, 240)] = '\0'; /* the message holds it whole */
        snprintf(f->key, sizeof f->key, "%.*s", utf8_clip(shown, (int)sizeof f->key - 1), shown);
        fault(f, FK_ERR_FORMAT, "duplicate key \"%s\"", shown);
    }
    free(keys);
    return !dup;
}

fk_status json_parse_strict(const char *buf, size_t len, cJSON **out, json_fault *f)
{
    *out = NULL;
    f->key[0] = '\0';
    syntax v = {.s = (const unsigned char *)buf, .n = len, .f = f};
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
        v.i = 3; /* a UTF-8 byte order mark, which cJSON skips too */
    if (!syntax_value(&v))
        return f->status;
    skip_ws(&v);
    if (v.i < len) {
        fault(f, FK_ERR_FORMAT, "trailing data after JSON value (at byte %zu)", v.i);
        return f->status;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (!root) {
        fault(f, FK_ERR_OUT_OF_MEMORY, "out of memory parsing JSON");
        return f->status;
    }
    /* The syntax check passed, so cJSON ends where it did: only whitespace may follow. */
    size_t at = end && end >= buf ? (size_t)(end - buf) : len + 1;
    while (at < len && (buf[at] == ' ' || buf[at] == '\t' || buf[at] == '\r' || buf[at] == '\n'))
        at++;
    if (at != len) {
        cJSON_Delete(root);
        fault(f, FK_ERR_FORMAT, "trailing data after JSON value");
        return f->status;
    }
    if (!check_keys(root, f)) {
        cJSON_Delete(root);
        return f->status;
    }
    *out = root;
    return FK_OK;
}

fk_status json_parse(const char *buf, size_t len, const char *what, cJSON **out, fk_error *err)
{
    json_fault f;
    const fk_status s = json_parse_strict(buf, len, out, &f);
    return s ? fk_error_set(err, s, "%s: %s", what, f.message) : FK_OK;
}

fk_status json_parse_file(const char *path, size_t max_bytes, cJSON **out, fk_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fk_error_set(err, FK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0;
    fk_status st = FK_OK;
    if (fseek(f, 0, SEEK_END) != 0) {
        st = fk_error_set(err, FK_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
        goto done;
    }
    long size = ftell(f);
    if (size < 0) {
        st = fk_error_set(err, FK_ERR_IO, "%s: cannot tell size: %s", path, strerror(errno));
        goto done;
    }
    if ((unsigned long)size > max_bytes) {
        st = fk_error_set(err, FK_ERR_FORMAT, "%s: file is %ld bytes; at most %zu expected", path, size, max_bytes);
        goto done;
    }
    rewind(f);
    len = (size_t)size;
    buf = malloc(len ? len : 1);
    if (!buf) {
        st = fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", path, len);
        goto done;
    }
    if (fread(buf, 1, len, f) != len) {
        st = fk_error_set(err, FK_ERR_IO, "%s: short read", path);
        goto done;
    }
    st = json_parse(buf, len, path, out, err);
done:
    free(buf);
    fclose(f);
    return st;
}

bool json_as_int(const cJSON *item, int64_t *out)
{
    if (!cJSON_IsNumber(item))
        return false;
    double v = item->valuedouble;
    if (!isfinite(v) || v != floor(v) || fabs(v) > 9007199254740992.0)
        return false;
    *out = (int64_t)v;
    return true;
}

/* The item for key, or NULL when absent or JSON null. */
static const cJSON *field(const cJSON *obj, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNull(item) ? NULL : item;
}

static fk_status missing(const char *key, const char *file, fk_error *err)
{
    return fk_error_set(err, FK_ERR_FORMAT, "%s: required field \"%s\" is missing", file, key);
}

fk_status json_get_int(const cJSON *obj, const char *key, bool required, int64_t min, int64_t max, int64_t *out,
                       const char *file, fk_error *err)
{
    const cJSON *item = field(obj, key);
    if (!item)
        return required ? missing(key, file, err) : FK_OK;
    int64_t v;
    if (!json_as_int(item, &v))
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"%s\" must be an integer", file, key);
    if (v < min || v > max)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"%s\" is %lld; expected %lld to %lld", file, key,
                            (long long)v, (long long)min, (long long)max);
    *out = v;
    return FK_OK;
}

fk_status json_get_double(const cJSON *obj, const char *key, bool required, double min, double max, double *out,
                          const char *file, fk_error *err)
{
    const cJSON *item = field(obj, key);
    if (!item)
        return required ? missing(key, file, err) : FK_OK;
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"%s\" must be a finite number", file, key);
    double v = item->valuedouble;
    if (v < min || v > max)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"%s\" is %g; expected %g to %g", file, key, v, min, max);
    *out = v;
    return FK_OK;
}

fk_status json_get_bool(const cJSON *obj, const char *key, bool *out, const char *file, fk_error *err)
{
    const cJSON *item = field(obj, key);
    if (!item)
        return FK_OK;
    if (!cJSON_IsBool(item))
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"%s\" must be true or false", file, key);
    *out = cJSON_IsTrue(item);
    return FK_OK;
}

fk_status json_get_string(const cJSON *obj, const char *key, bool required, const char **out, const char *file,
                          fk_error *err)
{
    const cJSON *item = field(obj, key);
    if (!item)
        return required ? missing(key, file, err) : FK_OK;
    if (!cJSON_IsString(item))
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"%s\" must be a string", file, key);
    *out = item->valuestring;
    return FK_OK;
}
