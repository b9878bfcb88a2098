/* safetensors.h — read-only access to a model's safetensors weights: one file or shards with an index.
 * Every header is validated against its file before any tensor is handed out; tensors are read (pread) on demand, so
 * a file truncated meanwhile is an error, not a SIGBUS. */
#ifndef FK_SAFETENSORS_H
#define FK_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "flashkernel.h"

#define ST_MAX_DIMS 8

typedef enum st_dtype {
    ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8, ST_U64, ST_U32, ST_U16, ST_U8, ST_BOOL,
    ST_F8_E4M3, ST_F8_E5M2,
} st_dtype;

typedef struct st_tensor {
    const char *name;
    const char *file;           /* path of the file holding it, for messages */
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t numel;
    int fd;                     /* the open file */
    uint64_t offset;            /* of its first byte in the file */
    size_t nbytes;
} st_tensor;

typedef struct safetensors safetensors;

/* Opens the weights of a model directory: model.safetensors if present, else the shards named by
 * model.safetensors.index.json. Errors: FK_ERR_IO (no weights, unreadable file), FK_ERR_FORMAT (any header
 * or index problem: the message names the file). */
fk_status safetensors_open_dir(const char *dir, safetensors **out, fk_error *err);

/* Opens one .safetensors file. */
fk_status safetensors_open_file(const char *path, safetensors **out, fk_error *err);

void safetensors_close(safetensors *st);

/* The tensor called name, or NULL. */
const st_tensor *safetensors_find(const safetensors *st, const char *name);

/* The directory or file the set was opened from, for messages. */
const char *safetensors_source(const safetensors *st);

/* Number of tensors and the i-th one (sorted by name). */
int safetensors_count(const safetensors *st);
const st_tensor *safetensors_at(const safetensors *st, int i);

/* Human-readable dtype name ("BF16"). */
const char *st_dtype_name(st_dtype dtype);

/* Reads the tensor's t->nbytes bytes as they are in the file into out; FK_ERR_IO when the file no longer holds them
 * (truncated since it was opened). */
fk_status st_tensor_read(const st_tensor *t, void *out, fk_error *err);

/* Reads an F32, F16 or BF16 tensor as float32 (out holds t->numel floats); other dtypes are FK_ERR_UNSUPPORTED
 * naming the tensor; a file that no longer holds the tensor's bytes (truncated since it was opened) is FK_ERR_IO
 * naming the file. */
fk_status st_tensor_to_f32(const st_tensor *t, float *out, fk_error *err);

#endif
