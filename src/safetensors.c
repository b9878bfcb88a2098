/* safetensors.c — mmap safetensors files, validate their headers, resolve tensors through the shard index.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "fp16.h"
#include "json.h"

#define ST_MAX_HEADER_BYTES (100u << 20) /* the limit safetensors itself enforces */
#define ST_MAX_INDEX_BYTES (64u << 20)

typedef struct st_file {
    char *path;
    void *map;
    size_t size;
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
    const char *px = x->data, *py = y->data;
    return px < py ? -1 : px > py;
}

void safetensors_close(safetensors *st)
{
    if (!st)
        return;
    for (int i = 0; i < st->n_tensors; i++)
        free((char *)st->tensors[i].name);
    free(st->tensors);
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].map && st->files[i].map != MAP_FAILED)
            munmap(st->files[i].map, st->files[i].size);
        free(st->files[i].path);
    }
    free(st->files);
    free(st->source);
    free(st);
}

/* Maps the file into f. */
static fk_status map_file(const char *path, st_file *f, fk_error *err)
{
    f->path = strdup(path);
    if (!f->path)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fk_error_set(err, FK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return fk_error_set(err, FK_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return fk_error_set(err, FK_ERR_IO, "%s: not a regular file", path);
    }
    f->size = (size_t)sb.st_size;
    if (f->size < 8) {
        close(fd);
        return fk_error_set(err, FK_ERR_FORMAT, "%s: file is %zu bytes, too short for a safetensors header", path,
                            f->size);
    }
    f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        return fk_error_set(err, FK_ERR_IO, "%s: cannot mmap: %s", path, strerror(errno));
    }
    return FK_OK;
}

/* Reads one header entry into t; data_len is the size of the data section. */
static fk_status parse_entry(const cJSON *entry, const char *path, const char *data, uint64_t data_len,
                             st_tensor *t, fk_error *err)
{
    const char *name = entry->string;
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
    t->data = data + begin;
    t->nbytes = (size_t)(end - begin);
    t->file = path;
    return FK_OK;
}

/* Validates f's header and appends its tensors to st (which has room for them). */
static fk_status read_header(safetensors *st, st_file *f, fk_error *err)
{
    const unsigned char *b = f->map;
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
    fk_status s = json_parse((const char *)b + 8, (size_t)header_len, what, &root, err);
    if (s)
        return s;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fk_error_set(err, FK_ERR_FORMAT, "%s: header is not a JSON object", f->path);
    }
    const char *data = (const char *)b + 8 + header_len;
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
        s = parse_entry(e, f->path, data, data_len, t, err);
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
        if ((const char *)p->data + p->nbytes > (const char *)q->data)
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
        s = map_file(paths[i], &st->files[i], err);
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

fk_status st_tensor_to_f32(const st_tensor *t, float *out, fk_error *err)
{
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case ST_F32:
        memcpy(out, p, t->nbytes);
        return FK_OK;
    case ST_F16:
        for (int64_t i = 0; i < t->numel; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = fp16_to_f32(h);
        }
        return FK_OK;
    case ST_BF16:
        for (int64_t i = 0; i < t->numel; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = bf16_to_f32(h);
        }
        return FK_OK;
    default:
        return fk_error_set(err, FK_ERR_UNSUPPORTED, "%s: tensor \"%s\" has dtype %s; F32, F16 or BF16 expected",
                            t->file, t->name, st_dtype_name(t->dtype));
    }
}
