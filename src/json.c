/* json.c — strict JSON parsing (length-bounded, no trailing bytes, no duplicate keys) and typed getters. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Finds a key that occurs twice in one object, anywhere in the tree; NULL when there is none. */
static const char *find_duplicate_key(const cJSON *node)
{
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
        return NULL;
    size_t n = 0;
    for (const cJSON *c = node->child; c; c = c->next) {
        const char *dup = find_duplicate_key(c);
        if (dup)
            return dup;
        n++;
    }
    if (!cJSON_IsObject(node) || n < 2)
        return NULL;
    const char **keys = malloc(n * sizeof *keys);
    if (!keys)
        return NULL; /* cannot check: accept rather than fail on a tiny allocation */
    size_t i = 0;
    for (const cJSON *c = node->child; c; c = c->next)
        keys[i++] = c->string;
    qsort(keys, n, sizeof *keys, compare_strings);
    const char *dup = NULL;
    for (i = 1; i < n && !dup; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0)
            dup = keys[i];
    free(keys);
    return dup;
}

fk_status json_parse(const char *buf, size_t len, const char *what, cJSON **out, fk_error *err)
{
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (!root) {
        size_t at = end && end >= buf ? (size_t)(end - buf) : 0;
        const char *e = cJSON_GetErrorPtr();
        if (e && e >= buf && e <= buf + len)
            at = (size_t)(e - buf);
        return fk_error_set(err, FK_ERR_FORMAT, "%s: invalid JSON at byte %zu", what, at);
    }
    size_t at = (size_t)(end - buf);
    while (at < len && (buf[at] == ' ' || buf[at] == '\t' || buf[at] == '\n' || buf[at] == '\r'))
        at++;
    if (at < len) {
        cJSON_Delete(root);
        return fk_error_set(err, FK_ERR_FORMAT, "%s: trailing data after JSON value at byte %zu", what, at);
    }
    const char *dup = find_duplicate_key(root);
    if (dup) {
        fk_error_set(err, FK_ERR_FORMAT, "%s: duplicate key \"%s\"", what, dup);
        cJSON_Delete(root);
        return FK_ERR_FORMAT;
    }
    *out = root;
    return FK_OK;
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
