/* test_safetensors.c — the safetensors reader: random tensors read back exactly, and every malformed file or
 * index rejected with an error that names the file and the problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fp16.h"
#include "safetensors.h"
#include "test_util.h"

typedef struct ctx {
    char *dir;
    char path[4096];
    uint64_t rng;
} ctx;

static int setup(void **state)
{
    ctx *c = calloc(1, sizeof *c);
    c->dir = tu_make_temp_dir();
    snprintf(c->path, sizeof c->path, "%s/model.safetensors", c->dir);
    c->rng = tu_seed();
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    ctx *c = *state;
    tu_remove_dir(c->dir);
    free(c->dir);
    free(c);
    return 0;
}

/* Opening `path` fails with `status` and a message containing `path`'s file name and `needle`. */
static void expect_open_error(const char *path, fk_status status, const char *needle)
{
    safetensors *st = (safetensors *)0x1;
    fk_error err = {0};
    fk_status s = safetensors_open_file(path, &st, &err);
    if (s != status || !strstr(err.message, needle) || !strstr(err.message, path))
        fail_msg("expected status %d with \"%s\" naming %s; got %d: %s", status, needle, path, s, err.message);
    assert_null(st);
}

static void write_header(const char *path, const char *header, size_t data_len)
{
    void *data = calloc(1, data_len + 1);
    tu_write_raw_safetensors(path, strlen(header), header, data, data_len);
    free(data);
}

static void test_random_tensors_round_trip(void **state)
{
    ctx *c = *state;
    enum { N = 6 };
    tu_tensor t[N];
    float *expect[N];
    void *data[N];
    char names[N][32];
    const char *dtypes[3] = {"F32", "F16", "BF16"};
    for (int i = 0; i < N; i++) {
        int rows = 1 + (int)tu_below(&c->rng, 37), cols = 1 + (int)tu_below(&c->rng, 19);
        const char *dt = dtypes[i % 3];
        size_t n = (size_t)rows * cols, elem = dt[1] == '3' ? 4 : 2;
        expect[i] = malloc(n * sizeof(float));
        data[i] = malloc(n * elem);
        for (size_t k = 0; k < n; k++) {
            float v = tu_uniform(&c->rng, -1000, 1000);
            if (elem == 4) {
                memcpy((char *)data[i] + 4 * k, &v, 4);
                expect[i][k] = v;
            } else if (dt[0] == 'F') {
                _Float16 h = (_Float16)v; /* the compiler's conversion, independent of fp16.h */
                memcpy((char *)data[i] + 2 * k, &h, 2);
                expect[i][k] = (float)h;
            } else {
                uint32_t u;
                memcpy(&u, &v, 4);
                uint16_t b = (uint16_t)(u >> 16); /* truncation is a valid bf16 value */
                memcpy((char *)data[i] + 2 * k, &b, 2);
                u = (uint32_t)b << 16;
                memcpy(&expect[i][k], &u, 4);
            }
        }
        snprintf(names[i], sizeof names[i], "layer.%d.weight", i);
        t[i] = (tu_tensor){names[i], dt, 2, {rows, cols}, data[i], n * elem};
    }
    tu_write_safetensors(c->path, t, N);
    safetensors *st;
    fk_error err = {0};
    if (safetensors_open_file(c->path, &st, &err))
        fail_msg("%s", err.message);
    assert_int_equal(safetensors_count(st), N);
    for (int i = 0; i < N; i++) {
        const st_tensor *got = safetensors_find(st, names[i]);
        assert_non_null(got);
        assert_int_equal(got->ndim, 2);
        assert_int_equal(got->shape[0], t[i].shape[0]);
        assert_int_equal(got->shape[1], t[i].shape[1]);
        float *v = malloc((size_t)got->numel * sizeof(float));
        assert_int_equal(st_tensor_to_f32(got, v, &err), FK_OK);
        assert_memory_equal(v, expect[i], (size_t)got->numel * sizeof(float));
        free(v);
        free(expect[i]);
        free(data[i]);
    }
    assert_null(safetensors_find(st, "absent"));
    safetensors_close(st);
}

static void test_metadata_and_empty_tensor(void **state)
{
    ctx *c = *state;
    write_header(c->path,
                 "{\"__metadata__\":{\"format\":\"pt\"},\"e\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[0,0]},"
                 "\"x\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}   ",
                 4);
    safetensors *st;
    fk_error err = {0};
    if (safetensors_open_file(c->path, &st, &err))
        fail_msg("%s", err.message);
    assert_int_equal(safetensors_count(st), 2);
    assert_int_equal(safetensors_find(st, "e")->numel, 0);
    safetensors_close(st);
}

static void test_missing_file(void **state)
{
    ctx *c = *state;
    expect_open_error(c->path, FK_ERR_IO, "cannot open");
}

static void test_too_short(void **state)
{
    ctx *c = *state;
    tu_write_file(c->path, "\x10\x00\x00", 3);
    expect_open_error(c->path, FK_ERR_FORMAT, "too short");
}

static void test_header_length_past_end(void **state)
{
    ctx *c = *state;
    tu_write_raw_safetensors(c->path, 1000, "{}", NULL, 0);
    expect_open_error(c->path, FK_ERR_FORMAT, "runs past the end");
    tu_write_raw_safetensors(c->path, UINT64_MAX, "{}", NULL, 0);
    expect_open_error(c->path, FK_ERR_FORMAT, "runs past the end");
}

static void test_truncated_data(void **state)
{
    ctx *c = *state;
    /* The header promises 400 bytes; the file holds 100. */
    write_header(c->path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[10,10],\"data_offsets\":[0,400]}}", 100);
    expect_open_error(c->path, FK_ERR_FORMAT, "out of range");
}

/* A file truncated after it was opened — a model directory still being copied or downloaded when the server starts —
 * fails the read that reaches past its new end with FK_ERR_IO naming the file; the tensors before it still read.
 * (When the weights were mapped, that read was a SIGBUS: the process died without a word.) */
static void test_truncated_while_open(void **state)
{
    ctx *c = *state;
    float a[64], got[1000];
    uint16_t h[1000];
    for (int i = 0; i < 64; i++)
        a[i] = tu_uniform(&c->rng, -1, 1);
    for (int i = 0; i < 1000; i++)
        h[i] = f32_to_fp16((float)i / 8);
    const tu_tensor t[2] = {{"a", "F32", 1, {64}, a, sizeof a}, {"h", "F16", 1, {1000}, h, sizeof h}};
    tu_write_safetensors(c->path, t, 2); /* back to back: h is last */
    safetensors *st;
    fk_error err = {0};
    assert_int_equal(safetensors_open_file(c->path, &st, &err), FK_OK);
    const st_tensor *ta = safetensors_find(st, "a"), *th = safetensors_find(st, "h");
    assert_int_equal(truncate(c->path, (off_t)(th->offset + th->nbytes / 2)), 0);
    assert_int_equal(st_tensor_to_f32(ta, got, &err), FK_OK);
    assert_memory_equal(got, a, sizeof a);
    assert_int_equal(st_tensor_to_f32(th, got, &err), FK_ERR_IO);
    assert_non_null(strstr(err.message, c->path));
    assert_non_null(strstr(err.message, "was it changed while the model was loading?"));
    safetensors_close(st);
}

static void test_offsets_out_of_range(void **state)
{
    ctx *c = *state;
    write_header(c->path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 8);
    expect_open_error(c->path, FK_ERR_FORMAT, "out of range");
    write_header(c->path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 8);
    expect_open_error(c->path, FK_ERR_FORMAT, "out of range");
    write_header(c->path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8);
    expect_open_error(c->path, FK_ERR_FORMAT, "data_offsets");
    write_header(c->path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8);
    expect_open_error(c->path, FK_ERR_FORMAT, "data_offsets");
    write_header(c->path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,1e300]}}", 8);
    expect_open_error(c->path, FK_ERR_FORMAT, "data_offsets");
}

static void test_overlapping_offsets(void **state)
{
    ctx *c = *state;
    write_header(c->path,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[12,28]}}",
                 28);
    expect_open_error(c->path, FK_ERR_FORMAT, "overlap");
}

static void test_size_mismatch(void **state)
{
    ctx *c = *state;
    write_header(c->path, "{\"a\":{\"dtype\":\"BF16\",\"shape\":[4,4],\"data_offsets\":[0,16]}}", 16);
    expect_open_error(c->path, FK_ERR_FORMAT, "needs 32 bytes");
}

static void test_bad_shape(void **state)
{
    ctx *c = *state;
    write_header(c->path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4);
    expect_open_error(c->path, FK_ERR_FORMAT, "shape[0]");
    write_header(c->path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4);
    expect_open_error(c->path, FK_ERR_FORMAT, "shape[0]");
    write_header(c->path, "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4);
    expect_open_error(c->path, FK_ERR_FORMAT, "missing shape");
    write_header(c->path,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 4);
    expect_open_error(c->path, FK_ERR_FORMAT, "overflows");
}

static void test_unknown_dtype(void **state)
{
    ctx *c = *state;
    write_header(c->path, "{\"a\":{\"dtype\":\"F99\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    expect_open_error(c->path, FK_ERR_FORMAT, "unknown dtype \"F99\"");
}

static void test_malformed_json(void **state)
{
    ctx *c = *state;
    write_header(c->path, "{\"a\":{\"dtype\":\"F32\",", 0);
    expect_open_error(c->path, FK_ERR_FORMAT, "invalid JSON");
    write_header(c->path, "[1,2]", 0);
    expect_open_error(c->path, FK_ERR_FORMAT, "not a JSON object");
    write_header(c->path, "{}xyz", 0);
    expect_open_error(c->path, FK_ERR_FORMAT, "trailing data");
    write_header(c->path,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                 8);
    expect_open_error(c->path, FK_ERR_FORMAT, "duplicate key \"a\"");
    write_header(c->path, "{\"a\":[1]}", 0);
    expect_open_error(c->path, FK_ERR_FORMAT, "not an object");
}

static void test_unsupported_dtype_conversion(void **state)
{
    ctx *c = *state;
    write_header(c->path, "{\"ids\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16);
    safetensors *st;
    fk_error err = {0};
    assert_int_equal(safetensors_open_file(c->path, &st, &err), FK_OK);
    float out[2];
    assert_int_equal(st_tensor_to_f32(safetensors_find(st, "ids"), out, &err), FK_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "\"ids\" has dtype I64"));
    safetensors_close(st);
}

/* ---- sharded models: model.safetensors.index.json ---- */

static void write_shard(const char *dir, const char *file, const char *tensor)
{
    char path[4096], header[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", tensor);
    write_header(path, header, 4);
}

static void write_index(const char *dir, const char *json)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    tu_write_file(path, json, strlen(json));
}

static void expect_dir_error(const char *dir, fk_status status, const char *needle)
{
    safetensors *st = (safetensors *)0x1;
    fk_error err = {0};
    fk_status s = safetensors_open_dir(dir, &st, &err);
    if (s != status || !strstr(err.message, needle))
        fail_msg("expected status %d with \"%s\"; got %d: %s", status, needle, s, err.message);
    assert_null(st);
}

static void test_index_resolves_shards(void **state)
{
    ctx *c = *state;
    write_shard(c->dir, "a.safetensors", "x");
    write_shard(c->dir, "b.safetensors", "y");
    write_index(c->dir, "{\"metadata\":{},\"weight_map\":{\"x\":\"a.safetensors\",\"y\":\"b.safetensors\"}}");
    safetensors *st;
    fk_error err = {0};
    if (safetensors_open_dir(c->dir, &st, &err))
        fail_msg("%s", err.message);
    assert_int_equal(safetensors_count(st), 2);
    assert_non_null(strstr(safetensors_find(st, "y")->file, "b.safetensors"));
    safetensors_close(st);
}

static void test_index_errors(void **state)
{
    ctx *c = *state;
    expect_dir_error(c->dir, FK_ERR_IO, "no model.safetensors");
    write_shard(c->dir, "a.safetensors", "x");
    write_index(c->dir, "{\"weight_map\":{\"x\":\"missing.safetensors\"}}");
    expect_dir_error(c->dir, FK_ERR_IO, "missing.safetensors: cannot open");
    write_index(c->dir, "{\"weight_map\":{\"y\":\"a.safetensors\"}}");
    expect_dir_error(c->dir, FK_ERR_FORMAT, "tensor \"y\" is mapped to a.safetensors, which does not contain it");
    write_index(c->dir, "{\"weight_map\":{\"x\":\"../a.safetensors\"}}");
    expect_dir_error(c->dir, FK_ERR_FORMAT, "must be a file name in the model directory");
    write_index(c->dir, "{\"weight_map\":[]}");
    expect_dir_error(c->dir, FK_ERR_FORMAT, "\"weight_map\" must be a non-empty object");
    write_index(c->dir, "{\"weight_map\":{\"x\":\"a.safetensors\"");
    expect_dir_error(c->dir, FK_ERR_FORMAT, "model.safetensors.index.json: invalid JSON");
    write_index(c->dir, "{\"weight_map\":{\"x\":\"a.safetensors\",\"x\":\"a.safetensors\"}}");
    expect_dir_error(c->dir, FK_ERR_FORMAT, "duplicate key \"x\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_random_tensors_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata_and_empty_tensor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_length_past_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_while_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offsets_out_of_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlapping_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_dtype_conversion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_resolves_shards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
