/* test_util.h — helpers shared by the unit tests: files, temp dirs, fixtures, safetensors writing, randomness. */
#ifndef FK_TEST_UTIL_H
#define FK_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Path under tests/fixtures (static buffer per call site: copy if kept). */
const char *tu_fixture(const char *rel);

char *tu_read_file(const char *path, size_t *len);
void tu_write_file(const char *path, const void *data, size_t len);
cJSON *tu_read_json(const char *path);

/* A fresh temporary directory (malloc'd path) and its recursive removal. */
char *tu_make_temp_dir(void);
void tu_remove_dir(const char *dir);
/* Copies every regular file of src into dst. */
void tu_copy_dir(const char *src, const char *dst);

/* A seed that differs per run unless FK_TEST_SEED is set; printed once so a failure can be replayed. */
uint64_t tu_seed(void);
/* xorshift-based uniform floats in [lo, hi) and ints in [0, n). */
float tu_uniform(uint64_t *state, float lo, float hi);
uint32_t tu_below(uint64_t *state, uint32_t n);
/* An embedding's input ids[n] for the ids want[n], about half of them placeholders: -1 - r, with sampled[r] =
 * want[i] (r random, distinct, < n_sampled >= n; the other sampled entries random below vocab). */
void tu_placeholder_ids(uint64_t *state, const int32_t *want, int n, int32_t *ids, int32_t *sampled, int n_sampled,
                        int vocab);

/* One tensor to write: data holds nbytes already in the dtype's encoding. */
typedef struct tu_tensor {
    const char *name;
    const char *dtype;
    int ndim;
    int64_t shape[4];
    const void *data;
    size_t nbytes;
} tu_tensor;

/* Writes a safetensors file from the tensors, laid out back to back in order. */
void tu_write_safetensors(const char *path, const tu_tensor *t, int n);
/* Writes a file whose header is exactly `header` (with the given length prefix) followed by data. */
void tu_write_raw_safetensors(const char *path, uint64_t header_len, const char *header, const void *data,
                              size_t data_len);

/* Writes a cJSON tree to a file. */
void tu_write_json(const char *path, const cJSON *root);

/* Rewrites the weights of model directory src into one safetensors file dst, plus n_extra added tensors.
 * edit() (may be NULL) sees each tensor and may rename it (*name, a buffer of 256), change it to float32
 * (*to_f32) or drop it (return false). */
typedef bool (*tu_tensor_edit)(void *ctx, char *name, bool *to_f32);
void tu_rewrite_weights(const char *src_dir, const char *dst, tu_tensor_edit edit, void *ctx,
                        const tu_tensor *extra, int n_extra);
#endif
