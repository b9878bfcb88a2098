/* safetensors.c — open safetensors files, validate their headers, resolve tensors through the shard index, read
 * tensors. Files are read with pread, not mapped: a file truncated while a model loads (a copy or download still
 * going on) is a clean FK_ERR_IO, where a mapping would raise SIGBUS.
 *
 * File format: u64 little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}, then the
 * data; offsets are relative to the first data byte. */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "fp16.h"
#include "json.h"

#define ST_MAX_HEADER_BYTES (100u << 20) /* the limit safetensors itself enforces */
#define ST_MAX_INDEX_BYTES (64u << 20)

typedef struct st_file {
    char *path;
    int fd;
    uint64_t size; /* at open */
} st_file;

struct safetensors {
    char *source; /* directory or file opened */
    st_file *files;
    int n_files;
    st_tensor *tensors; /* sorted by name */
    int n_tensors;
};

static const struct {
    const char *name;
    st_dtype dtype;
    size_t size;
} dtypes[] = {
    {"F64", ST_F64, 8},  {"F32", ST_F32, 4}, {"F16", ST_F16, 2},   {"BF16", ST_BF16, 2},
    {"I64", ST_I64, 8},  {"I32", ST_I32, 4}, {"I16", ST_I16, 2},   {"I8", ST_I8, 1},
    {"U64", ST_U64, 8},  {"U32", ST_U32, 4}, {"U16", ST_U16, 2},   {"U8", ST_U8, 1},
    {"BOOL", ST_BOOL, 1}, {"F8_E4M3", ST_F8_E4M3, 1}, {"F8_E5M2", ST_F8_E5M2, 1},
};

const char *st_dtype_name(st_dtype dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].name;
    return "?";
}

static int compare_tensor_names(const void *a, const void *b)
{
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

static int compare_tensor_offsets(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void safetensors_close(safetensors *st)
{
    if (!st)
        return;
    for (int i = 0; i < st->n_tensors; i++)
        free((char *)st->tensors[i].name);
    free(st->tensors);
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].fd >= 0)
            close(st->files[i].fd);
        free(st->files[i].path);
    }
    free(st->files);
    free(st->source);
    free(st);
}

/* Reads n bytes at offset `at` of f; a short read is the file changing under us (truncated). */
static fk_status read_exact(int fd, const char *path, uint64_t at, void *buf, size_t n, fk_error *err)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return fk_error_set(err, FK_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        if (r == 0) {
            struct stat sb;
            return fk_error_set(err, FK_ERR_IO,
                                "%s: cannot read %zu bytes at offset %llu: the file is now %lld bytes (was it "
                                "changed while the model was loading?)",
                                path, n, (unsigned long long)at, fstat(fd, &sb) ? -1LL : (long long)sb.st_size);
        }
        got += (size_t)r;
    }
    return FK_OK;
}

/* Opens the file into f (f->fd is -1 until it is open). */
static fk_status open_file(const char *path, st_file *f, fk_error *err)
{
    f->fd = -1;
    f->path = strdup(path);
    if (!f->path)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0)
        return fk_error_set(err, FK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(f->fd, &sb) != 0)
        return fk_error_set(err, FK_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return fk_error_set(err, FK_ERR_IO, "%s: not a regular file", path);
    f->size = (uint64_t)sb.st_size;
    if (f->size < 8)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: file is %llu bytes, too short for a safetensors header", path,
                            (unsigned long long)f->size);
    return FK_OK;
}

/* Reads one header entry of f into t; the data section starts at byte data_at and holds data_len bytes. */
static fk_status parse_entry(const cJSON *entry, const st_file *f, uint64_t data_at, uint64_t data_len,
                             st_tensor *t, fk_error *err)
{
    const char *name = entry->string, *path = f->path;
    if (!cJSON_IsObject(entry))
        return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\": entry is not an object", path, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!cJSON_IsString(dtype))
        return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\": missing dtype", path, name);
    size_t elem = 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtype->valuestring, dtypes[i].name) == 0) {
            t->dtype = dtypes[i].dtype;
            elem = dtypes[i].size;
        }
    if (!elem)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\": unknown dtype \"%s\"", path, name,
                            dtype->valuestring);
    if (!cJSON_IsArray(shape))
        return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\": missing shape", path, name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > ST_MAX_DIMS)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\": %d dimensions; at most %d supported", path,
                            name, ndim, ST_MAX_DIMS);
    t->ndim = ndim;
    uint64_t numel = 1;
    int d = 0;
    for (const cJSON *dim = shape->child; dim; dim = dim->next, d++) {
        int64_t v;
        if (!json_as_int(dim, &v) || v < 0)
            return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\": shape[%d] is not a non-negative integer",
                                path, name, d);
        t->shape[d] = v;
        if (v != 0 && numel > UINT64_MAX / (uint64_t)v)
            return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\": shape overflows", path, name);
        numel *= (uint64_t)v;
    }
    int64_t begin, end;
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 || !json_as_int(offsets->child, &begin) ||
        !json_as_int(offsets->child->next, &end) || begin < 0 || end < 0)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\": data_offsets must be [begin, end]", path, name);
    if (begin > end || (uint64_t)end > data_len)
        return fk_error_set(err, FK_ERR_FORMAT,
                            "%s: tensor \"%s\": data_offsets [%lld, %lld] out of range (data section is %llu bytes)",
                            path, name, (long long)begin, (long long)end, (unsigned long long)data_len);
    if (numel > UINT64_MAX / elem || numel * elem != (uint64_t)(end - begin))
        return fk_error_set(err, FK_ERR_FORMAT,
                            "%s: tensor \"%s\": %s shape needs %llu bytes but data_offsets give %lld", path, name,
                            dtype->valuestring, (unsigned long long)(numel * elem), (long long)(end - begin));
    t->numel = (int64_t)numel;
    t->fd = f->fd;
    t->offset = data_at + (uint64_t)begin;
    t->nbytes = (size_t)(end - begin);
    t->file = path;
    return FK_OK;
}

/* Validates f's header and appends its tensors to st (which has room for them). */
static fk_status read_header(safetensors *st, st_file *f, fk_error *err)
{
    unsigned char b[8];
    fk_status s = read_exact(f->fd, f->path, 0, b, 8, err);
    if (s)
        return s;
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--)
        header_len = header_len << 8 | b[i];
    if (header_len > f->size - 8)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%zu bytes)",
                            f->path, (unsigned long long)header_len, f->size);
    if (header_len > ST_MAX_HEADER_BYTES)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: header length %llu exceeds the %u-byte limit", f->path,
                            (unsigned long long)header_len, ST_MAX_HEADER_BYTES);
    cJSON *root;
    char what[PATH_MAX + 16];
    snprintf(what, sizeof what, "%s: header", f->path);
    char *header = malloc((size_t)header_len + 1);
    if (!header)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory for a header of %llu bytes", f->path,
                            (unsigned long long)header_len);
    s = read_exact(f->fd, f->path, 8, header, (size_t)header_len, err);
    if (!s)
        s = json_parse(header, (size_t)header_len, what, &root, err);
    free(header);
    if (s)
        return s;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fk_error_set(err, FK_ERR_FORMAT, "%s: header is not a JSON object", f->path);
    }
    uint64_t data_len = f->size - 8 - header_len;
    int first = st->n_tensors;
    int n_entries = cJSON_GetArraySize(root);
    st_tensor *grown = realloc(st->tensors, (size_t)(first + n_entries + 1) * sizeof *grown);
    if (!grown) {
        cJSON_Delete(root);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory for %d tensors", f->path, n_entries);
    }
    st->tensors = grown;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0)
            continue;
        st_tensor *t = &st->tensors[st->n_tensors];
        memset(t, 0, sizeof *t);
        s = parse_entry(e, f, 8 + header_len, data_len, t, err);
        if (!s && !(t->name = strdup(e->string)))
            s = fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
        if (s)
            break;
        st->n_tensors++;
    }
    cJSON_Delete(root);
    if (s)
        return s;

    /* No two tensors of this file may share bytes. */
    int n = st->n_tensors - first;
    const st_tensor **by_offset = malloc((size_t)(n ? n : 1) * sizeof *by_offset);
    if (!by_offset)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
    for (int i = 0; i < n; i++)
        by_offset[i] = &st->tensors[first + i];
    qsort(by_offset, (size_t)n, sizeof *by_offset, compare_tensor_offsets);
    for (int i = 1; i < n && !s; i++) {
        const st_tensor *p = by_offset[i - 1], *q = by_offset[i];
        if (p->offset + p->nbytes > q->offset)
            s = fk_error_set(err, FK_ERR_FORMAT, "%s: tensors \"%s\" and \"%s\" overlap", f->path, p->name, q->name);
    }
    free(by_offset);
    return s;
}

/* Sorts the tensors by name for lookup; a name found twice is an error. */
static fk_status sort_by_name(safetensors *st, fk_error *err)
{
    qsort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, compare_tensor_names);
    for (int i = 1; i < st->n_tensors; i++)
        if (strcmp(st->tensors[i - 1].name, st->tensors[i].name) == 0)
            return fk_error_set(err, FK_ERR_FORMAT, "tensor \"%s\" appears in both %s and %s", st->tensors[i].name,
                                st->tensors[i - 1].file, st->tensors[i].file);
    return FK_OK;
}

/* Opens and validates the given files into a new set (tensors not yet sorted); source names it. */
static fk_status open_files(const char *source, char **paths, int n_paths, safetensors **out, fk_error *err)
{
    safetensors *st = calloc(1, sizeof *st);
    if (!st)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    st->files = calloc((size_t)n_paths, sizeof *st->files);
    st->source = strdup(source);
    fk_status s = st->files && st->source ? FK_OK : fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < n_paths && !s; i++) {
        st->n_files++;
        s = open_file(paths[i], &st->files[i], err);
        if (!s)
            s = read_header(st, &st->files[i], err);
    }
    if (s) {
        safetensors_close(st);
        return s;
    }
    *out = st;
    return FK_OK;
}

fk_status safetensors_open_file(const char *path, safetensors **out, fk_error *err)
{
    *out = NULL;
    char *paths[1] = {(char *)path};
    safetensors *st;
    fk_status s = open_files(path, paths, 1, &st, err);
    if (!s && (s = sort_by_name(st, err)))
        safetensors_close(st);
    if (!s)
        *out = st;
    return s;
}

static bool is_plain_file_name(const char *s)
{
    return s[0] && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/') && !strchr(s, '\\');
}

/* Opens the shards listed in index_path and keeps only the tensors the index maps, checking that each one
 * is in the file the index names. */
static fk_status open_index(const char *dir, const char *index_path, safetensors **out, fk_error *err)
{
    cJSON *root;
    fk_status s = json_parse_file(index_path, ST_MAX_INDEX_BYTES, &root, err);
    if (s)
        return s;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    char **paths = NULL;
    int n_paths = 0;
    safetensors *st = NULL;
    if (!cJSON_IsObject(map) || !map->child) {
        s = fk_error_set(err, FK_ERR_FORMAT, "%s: \"weight_map\" must be a non-empty object", index_path);
        goto done;
    }
    int n_entries = cJSON_GetArraySize(map);
    paths = calloc((size_t)n_entries, sizeof *paths);
    if (!paths) {
        s = fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (const cJSON *e = map->child; e && !s; e = e->next) {
        if (!cJSON_IsString(e) || !is_plain_file_name(e->valuestring)) {
            s = fk_error_set(err, FK_ERR_FORMAT, "%s: weight_map[\"%s\"] must be a file name in the model directory",
                             index_path, e->string);
            break;
        }
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->valuestring) >= (int)sizeof path) {
            s = fk_error_set(err, FK_ERR_FORMAT, "%s: path too long for \"%s\"", index_path, e->valuestring);
            break;
        }
        bool seen = false;
        for (int i = 0; i < n_paths && !seen; i++)
            seen = strcmp(paths[i], path) == 0;
        if (!seen && !(paths[n_paths++] = strdup(path)))
            s = fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!s)
        s = open_files(dir, paths, n_paths, &st, err);
    if (s)
        goto done;

    /* Keep the mapped tensors, each from the file the index names. */
    int kept = 0;
    for (int i = 0; i < st->n_tensors; i++) {
        st_tensor *t = &st->tensors[i];
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(map, t->name);
        const char *base = strrchr(t->file, '/');
        base = base ? base + 1 : t->file;
        if (e && strcmp(e->valuestring, base) == 0)
            st->tensors[kept++] = *t;
        else
            free((char *)t->name);
    }
    st->n_tensors = kept;
    s = sort_by_name(st, err);
    for (const cJSON *e = map->child; e && !s; e = e->next)
        if (!safetensors_find(st, e->string)) {
            s = fk_error_set(err, FK_ERR_FORMAT, "%s: tensor \"%s\" is mapped to %s, which does not contain it",
                             index_path, e->string, e->valuestring);
            break;
        }
done:
    for (int i = 0; i < n_paths; i++)
        free(paths[i]);
    free(paths);
    cJSON_Delete(root);
    if (s) {
        safetensors_close(st);
        return s;
    }
    *out = st;
    return FK_OK;
}

fk_status safetensors_open_dir(const char *dir, safetensors **out, fk_error *err)
{
    *out = NULL;
    char single[PATH_MAX], index[PATH_MAX];
    if (snprintf(single, sizeof single, "%s/model.safetensors", dir) >= (int)sizeof single ||
        snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir) >= (int)sizeof index)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "%s: path too long", dir);
    if (access(single, F_OK) == 0)
        return safetensors_open_file(single, out, err);
    if (access(index, F_OK) == 0)
        return open_index(dir, index, out, err);
    return fk_error_set(err, FK_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json", dir);
}

const st_tensor *safetensors_find(const safetensors *st, const char *name)
{
    st_tensor key = {.name = name};
    return bsearch(&key, st->tensors, (size_t)st->n_tensors, sizeof key, compare_tensor_names);
}

const char *safetensors_source(const safetensors *st)
{
    return st->source;
}

int safetensors_count(const safetensors *st)
{
    return st->n_tensors;
}

const st_tensor *safetensors_at(const safetensors *st, int i)
{
    return &st->tensors[i];
}

fk_status st_tensor_read(const st_tensor *t, void *out, fk_error *err)
{
    return read_exact(t->fd, t->file, t->offset, out, t->nbytes, err);
}

fk_status st_tensor_to_f32(const st_tensor *t, float *out, fk_error *err)
{
    if (t->dtype == ST_F32)
        return st_tensor_read(t, out, err);
    if (t->dtype != ST_F16 && t->dtype != ST_BF16)
        return fk_error_set(err, FK_ERR_UNSUPPORTED, "%s: tensor \"%s\" has dtype %s; F32, F16 or BF16 expected",
                            t->file, t->name, st_dtype_name(t->dtype));
    /* Half-precision values through a bounded buffer, converted as they come. */
    enum { CHUNK = 1 << 18 };
    uint16_t *h = malloc(CHUNK * sizeof *h);
    if (!h)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory reading \"%s\"", t->name);
    fk_status s = FK_OK;
    for (int64_t i = 0; i < t->numel && !s; i += CHUNK) {
        const int64_t n = t->numel - i < CHUNK ? t->numel - i : CHUNK;
        s = read_exact(t->fd, t->file, t->offset + 2 * (uint64_t)i, h, 2 * (size_t)n, err);
        for (int64_t k = 0; k < n && !s; k++)
            out[i + k] = t->dtype == ST_F16 ? fp16_to_f32(h[k]) : bf16_to_f32(h[k]);
    }
    free(h);
    return s;
}
