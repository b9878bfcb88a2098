/* test_model_load.c — loading model directories: config.json and generation_config.json handling, and every bad
 * directory (missing or malformed files, unsupported architecture / rope type / activation / sliding window, missing
 * tensor, wrong shape, truncated shard) rejected with a message naming the file and the problem, and nothing leaked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "flashkernel.h"
#include "test_util.h"

typedef struct ctx {
    char *dir;
    cJSON *config; /* the config being edited; written by save() */
} ctx;

/* A copy of a fixture model in a temp dir. */
static int setup_from(void **state, const char *fixture)
{
    ctx *c = calloc(1, sizeof *c);
    c->dir = tu_make_temp_dir();
    tu_copy_dir(tu_fixture(fixture), c->dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", c->dir);
    c->config = tu_read_json(path);
    *state = c;
    return 0;
}

static int setup_llama(void **state)
{
    return setup_from(state, "models/tiny-llama3");
}

static int setup_gpt2(void **state)
{
    return setup_from(state, "models/tiny-gpt2");
}

static int setup_qwen2(void **state)
{
    return setup_from(state, "models/tiny-qwen2");
}

static int setup_mistral(void **state)
{
    return setup_from(state, "models/tiny-mistral");
}

static int teardown(void **state)
{
    ctx *c = *state;
    tu_remove_dir(c->dir);
    cJSON_Delete(c->config);
    free(c->dir);
    free(c);
    return 0;
}

static const char *file_in(const ctx *c, const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", c->dir, name);
    return path;
}

static void save(const ctx *c)
{
    tu_write_json(file_in(c, "config.json"), c->config);
}

static void set_field(ctx *c, const char *key, cJSON *value)
{
    cJSON_DeleteItemFromObject(c->config, key);
    cJSON_AddItemToObject(c->config, key, value);
    save(c);
}

static fk_model *load(const ctx *c, fk_error *err)
{
    fk_model_params p = fk_model_params_default();
    p.device = FK_DEVICE_CPU;
    fk_model *m = (fk_model *)0x1;
    fk_status s = fk_model_load(c->dir, &p, &m, err);
    if (s) {
        assert_null(m);
        assert_int_equal(err->status, s);
        return NULL;
    }
    return m;
}

/* Loading succeeds (else the test fails with the message). */
static fk_model *must_load(const ctx *c)
{
    fk_error err = {0};
    fk_model *m = load(c, &err);
    if (!m)
        fail_msg("%s", err.message);
    return m;
}

/* Loading fails with status and a message containing both needles (the file, the problem). */
static void expect_error(const ctx *c, fk_status status, const char *file_needle, const char *needle)
{
    fk_error err = {0};
    fk_model *m = load(c, &err);
    if (m || err.status != status || !strstr(err.message, file_needle) || !strstr(err.message, needle))
        fail_msg("expected status %d with \"%s\" and \"%s\"; got %d: %s", status, file_needle, needle, err.status,
                 err.message);
}

static void test_loads_and_describes(void **state)
{
    ctx *c = *state;
    fk_model *m = must_load(c);
    fk_model_info info = fk_model_get_info(m);
    assert_string_equal(info.architecture, "LlamaForCausalLM");
    assert_string_equal(info.device, "cpu");
    assert_int_equal(info.vocab_size, 4096);
    assert_int_equal(info.n_heads, 2);
    assert_int_equal(info.n_kv_heads, 1);
    assert_int_equal(info.head_dim, 64);
    assert_int_equal(info.max_context, 131072);
    assert_int_equal(info.bos_id, 1);
    assert_int_equal(info.n_eos, 1);
    assert_int_equal(info.eos_ids[0], 2);
    fk_model_free(m);
}

static void test_generation_config_eos_overrides(void **state)
{
    ctx *c = *state;
    const char *gen = "{\"eos_token_id\": [7, 9], \"do_sample\": true}";
    tu_write_file(file_in(c, "generation_config.json"), gen, strlen(gen));
    fk_model *m = must_load(c);
    fk_model_info info = fk_model_get_info(m);
    assert_int_equal(info.n_eos, 2);
    assert_int_equal(info.eos_ids[0], 7);
    assert_int_equal(info.eos_ids[1], 9);
    fk_model_free(m);

    tu_write_file(file_in(c, "generation_config.json"), "{\"eos_token_id\": 5", 18);
    expect_error(c, FK_ERR_FORMAT, "generation_config.json", "invalid JSON");
    tu_write_file(file_in(c, "generation_config.json"), "{\"eos_token_id\": \"x\"}", 21);
    expect_error(c, FK_ERR_FORMAT, "generation_config.json", "eos_token_id");
}

static void test_missing_directory_and_config(void **state)
{
    ctx *c = *state;
    unlink(file_in(c, "config.json"));
    expect_error(c, FK_ERR_IO, "config.json", "cannot open");
    fk_error err = {0};
    fk_model *m = (fk_model *)0x1;
    assert_int_equal(fk_model_load("/nonexistent/model", NULL, &m, &err), FK_ERR_IO);
    assert_null(m);
    assert_non_null(strstr(err.message, "/nonexistent/model/config.json"));
}

static void test_malformed_config(void **state)
{
    ctx *c = *state;
    tu_write_file(file_in(c, "config.json"), "{\"architectures\": [", 19);
    expect_error(c, FK_ERR_FORMAT, "config.json", "invalid JSON");
    tu_write_file(file_in(c, "config.json"), "[]", 2);
    expect_error(c, FK_ERR_FORMAT, "config.json", "not a JSON object");
}

static void test_bad_config_fields(void **state)
{
    ctx *c = *state;
    set_field(c, "hidden_size", cJSON_CreateString("big"));
    expect_error(c, FK_ERR_FORMAT, "config.json", "\"hidden_size\" must be an integer");
    set_field(c, "hidden_size", cJSON_CreateNumber(128.5));
    expect_error(c, FK_ERR_FORMAT, "config.json", "\"hidden_size\" must be an integer");
    set_field(c, "hidden_size", cJSON_CreateNumber(-128));
    expect_error(c, FK_ERR_FORMAT, "config.json", "\"hidden_size\" is -128");
    set_field(c, "hidden_size", cJSON_CreateNumber(128));
    set_field(c, "num_key_value_heads", cJSON_CreateNumber(3));
    expect_error(c, FK_ERR_FORMAT, "config.json", "not a multiple of num_key_value_heads");
    set_field(c, "num_key_value_heads", cJSON_CreateNumber(1));
    set_field(c, "rms_norm_eps", cJSON_CreateString("1e-5"));
    expect_error(c, FK_ERR_FORMAT, "config.json", "\"rms_norm_eps\" must be a finite number");
    set_field(c, "rms_norm_eps", cJSON_CreateNumber(1e-5));
    set_field(c, "tie_word_embeddings", cJSON_CreateNumber(1));
    expect_error(c, FK_ERR_FORMAT, "config.json", "\"tie_word_embeddings\" must be true or false");
    set_field(c, "tie_word_embeddings", cJSON_CreateTrue());
    set_field(c, "eos_token_id", cJSON_CreateNumber(99999));
    expect_error(c, FK_ERR_FORMAT, "config.json", "eos_token_id");
}

static void test_unsupported_architecture(void **state)
{
    ctx *c = *state;
    cJSON *archs = cJSON_CreateArray();
    cJSON_AddItemToArray(archs, cJSON_CreateString("MambaForCausalLM"));
    set_field(c, "architectures", archs);
    expect_error(c, FK_ERR_UNSUPPORTED, "config.json", "unsupported architecture \"MambaForCausalLM\"");
}

static void test_unsupported_rope_type(void **state)
{
    ctx *c = *state;
    cJSON *rope = cJSON_CreateObject();
    cJSON_AddStringToObject(rope, "rope_type", "yarn");
    cJSON_AddNumberToObject(rope, "factor", 4);
    set_field(c, "rope_scaling", rope);
    expect_error(c, FK_ERR_UNSUPPORTED, "config.json", "unsupported rope type \"yarn\"");
    rope = cJSON_CreateObject();
    cJSON_AddStringToObject(rope, "rope_type", "llama3");
    cJSON_AddNumberToObject(rope, "factor", 8);
    set_field(c, "rope_scaling", rope);
    expect_error(c, FK_ERR_FORMAT, "config.json", "\"low_freq_factor\" is missing");
}

/* transformers 5's spelling: rope_parameters holds rope_theta and rope_type; an unknown type is refused by name. */
static void test_unsupported_rope_parameters(void **state)
{
    ctx *c = *state;
    const char *types[] = {"yarn", "dynamic", "longrope", "su"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        cJSON *rope = cJSON_CreateObject();
        cJSON_AddNumberToObject(rope, "rope_theta", 1e6);
        cJSON_AddStringToObject(rope, "rope_type", types[i]);
        cJSON_AddNumberToObject(rope, "factor", 4);
        set_field(c, "rope_parameters", rope);
        char want[128];
        snprintf(want, sizeof want, "unsupported rope type \"%s\" in \"rope_parameters\"", types[i]);
        expect_error(c, FK_ERR_UNSUPPORTED, "config.json", want);
    }
    cJSON *rope = cJSON_CreateObject();
    cJSON_AddNumberToObject(rope, "rope_theta", 1e6);
    set_field(c, "rope_parameters", rope);
    expect_error(c, FK_ERR_FORMAT, "config.json", "\"rope_parameters\" has no \"rope_type\"");
}

static void test_qwen2_loads_and_describes(void **state)
{
    ctx *c = *state;
    fk_model *m = must_load(c);
    fk_model_info info = fk_model_get_info(m);
    assert_string_equal(info.architecture, "Qwen2ForCausalLM");
    assert_int_equal(info.n_heads, 2);
    assert_int_equal(info.n_kv_heads, 1);
    assert_int_equal(info.head_dim, 64);
    assert_int_equal(info.max_context, 32768);
    fk_model_free(m);
    /* Without an architectures list, model_type names it. */
    cJSON_DeleteItemFromObject(c->config, "architectures");
    save(c);
    m = must_load(c);
    assert_string_equal(fk_model_get_info(m).architecture, "Qwen2ForCausalLM");
    fk_model_free(m);
}

static void test_qwen2_sliding_window_refused(void **state)
{
    ctx *c = *state;
    set_field(c, "use_sliding_window", cJSON_CreateTrue());
    set_field(c, "sliding_window", cJSON_CreateNumber(4096));
    expect_error(c, FK_ERR_UNSUPPORTED, "config.json",
                 "\"use_sliding_window\" is true: sliding-window attention is not supported");
    set_field(c, "use_sliding_window", cJSON_CreateFalse());
    const char *kinds[2] = {"full_attention", "sliding_attention"};
    set_field(c, "layer_types", cJSON_CreateStringArray(kinds, 2));
    expect_error(c, FK_ERR_UNSUPPORTED, "config.json",
                 "layer_types[1] is \"sliding_attention\": only \"full_attention\" layers are supported");
    set_field(c, "layer_types", cJSON_CreateStringArray(kinds, 1));
    expect_error(c, FK_ERR_FORMAT, "config.json", "\"layer_types\" must be an array of 2 strings");
    const char *full[2] = {"full_attention", "full_attention"};
    set_field(c, "layer_types", cJSON_CreateStringArray(full, 2));
    fk_model *m = must_load(c);
    fk_model_free(m);
}

static bool drop_k_bias(void *ctx_, char *name, bool *f32)
{
    (void)ctx_, (void)f32;
    return strcmp(name, "model.layers.1.self_attn.k_proj.bias") != 0;
}

static void test_qwen2_missing_bias(void **state)
{
    ctx *c = *state;
    char *stage = tu_make_temp_dir();
    tu_copy_dir(c->dir, stage);
    tu_rewrite_weights(stage, file_in(c, "model.safetensors"), drop_k_bias, NULL, NULL, 0);
    tu_remove_dir(stage);
    free(stage);
    expect_error(c, FK_ERR_FORMAT, c->dir, "missing tensor \"model.layers.1.self_attn.k_proj.bias\"");
}

/* Mistral's sliding_window: null is none; a window bounds the context served (attention has no window mask), and
 * a longer max_model_len is refused with both numbers; an absent key is MistralConfig's default 4096. */
static void test_mistral_sliding_window(void **state)
{
    ctx *c = *state;
    fk_model *m = must_load(c);
    fk_model_info info = fk_model_get_info(m);
    assert_string_equal(info.architecture, "MistralForCausalLM");
    assert_int_equal(info.head_dim, 64);
    assert_int_equal(info.hidden_size, 160);
    assert_int_equal(info.max_context, 32768);
    fk_model_free(m);

    set_field(c, "sliding_window", cJSON_CreateNumber(512));
    m = must_load(c);
    assert_int_equal(fk_model_get_info(m).max_context, 512);
    fk_error err = {0};
    fk_engine_params ep = fk_engine_params_default();
    ep.max_model_len = 1024;
    fk_engine *e = NULL;
    assert_int_equal(fk_engine_create(m, &ep, &e, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "max_model_len 1024 exceeds the model's sliding_window 512"));
    ep.max_model_len = 0;
    ep.kv_cache_mb = 16;
    assert_int_equal(fk_engine_create(m, &ep, &e, &err), FK_OK);
    fk_engine_free(e);
    int32_t ids[600] = {0};
    float *logits = malloc(3000 * sizeof(float));
    assert_int_equal(fk_model_logits(m, ids, 600, false, logits, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "exceeds context length 512 (the model's sliding_window"));
    assert_int_equal(fk_model_logits(m, ids, 512, false, logits, &err), FK_OK);
    free(logits);
    fk_model_free(m);

    cJSON_DeleteItemFromObject(c->config, "sliding_window");
    save(c);
    m = must_load(c);
    assert_int_equal(fk_model_get_info(m).max_context, 4096);
    fk_model_free(m);
}

static void test_unsupported_activation(void **state)
{
    ctx *c = *state;
    set_field(c, "hidden_act", cJSON_CreateString("relu"));
    expect_error(c, FK_ERR_UNSUPPORTED, "config.json", "unsupported hidden_act \"relu\"");
}

static void test_gpt2_unsupported_activation(void **state)
{
    ctx *c = *state;
    set_field(c, "activation_function", cJSON_CreateString("relu"));
    expect_error(c, FK_ERR_UNSUPPORTED, "config.json", "unsupported activation_function \"relu\"");
}

static bool drop_down_proj_1(void *ctx_, char *name, bool *f32)
{
    (void)ctx_, (void)f32;
    return strcmp(name, "model.layers.1.mlp.down_proj.weight") != 0;
}

static void test_missing_tensor(void **state)
{
    ctx *c = *state;
    char shard[4096];
    snprintf(shard, sizeof shard, "%s", file_in(c, "model-00002-of-00002.safetensors"));
    char *stage = tu_make_temp_dir();
    tu_copy_dir(c->dir, stage);
    tu_rewrite_weights(stage, shard, drop_down_proj_1, NULL, NULL, 0);
    tu_remove_dir(stage);
    free(stage);
    /* The index still names the dropped tensor. */
    expect_error(c, FK_ERR_FORMAT, "model.safetensors.index.json",
                 "\"model.layers.1.mlp.down_proj.weight\" is mapped to model-00002-of-00002.safetensors");
    /* Without the index entry the model lacks it. */
    char path[4096];
    snprintf(path, sizeof path, "%s", file_in(c, "model.safetensors.index.json"));
    cJSON *index = tu_read_json(path);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(index, "weight_map"), "model.layers.1.mlp.down_proj.weight");
    tu_write_json(path, index);
    cJSON_Delete(index);
    expect_error(c, FK_ERR_FORMAT, c->dir, "missing tensor \"model.layers.1.mlp.down_proj.weight\"");
}

static void test_wrong_shape(void **state)
{
    ctx *c = *state;
    /* A config that disagrees with the tensors: intermediate_size 384 → 256. */
    set_field(c, "intermediate_size", cJSON_CreateNumber(256));
    expect_error(c, FK_ERR_FORMAT, "model-00001-of-00002.safetensors",
                 "\"model.layers.0.mlp.gate_proj.weight\" has shape [384, 128]; expected [256, 128]");
}

static void test_truncated_shard(void **state)
{
    ctx *c = *state;
    const char *shard = file_in(c, "model-00002-of-00002.safetensors");
    size_t len;
    char *data = tu_read_file(shard, &len);
    tu_write_file(shard, data, len / 2);
    free(data);
    expect_error(c, FK_ERR_FORMAT, "model-00002-of-00002.safetensors", "out of range");
    tu_write_file(shard, "\x01\x02", 2);
    expect_error(c, FK_ERR_FORMAT, "model-00002-of-00002.safetensors", "too short");
}

static void test_no_weights(void **state)
{
    ctx *c = *state;
    unlink(file_in(c, "model.safetensors.index.json"));
    expect_error(c, FK_ERR_IO, c->dir, "no model.safetensors or model.safetensors.index.json");
}

static void test_gpt2_missing_tensor(void **state)
{
    ctx *c = *state;
    char *stage = tu_make_temp_dir();
    tu_copy_dir(c->dir, stage);
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", c->dir);
    tu_rewrite_weights(stage, path, NULL, NULL, NULL, 0);
    tu_remove_dir(stage);
    free(stage);
    set_field(c, "tie_word_embeddings", cJSON_CreateFalse());
    expect_error(c, FK_ERR_FORMAT, c->dir, "missing tensor \"lm_head.weight\"");
}

static void test_bad_params(void **state)
{
    ctx *c = *state;
    fk_model_params p = fk_model_params_default();
    p.prefill_chunk = 0;
    fk_model *m = (fk_model *)0x1;
    fk_error err = {0};
    assert_int_equal(fk_model_load(c->dir, &p, &m, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "prefill_chunk"));
    assert_null(m);
    p = fk_model_params_default();
    p.device = FK_DEVICE_CUDA;
#ifndef FK_HAVE_CUDA_BACKEND
    assert_int_equal(fk_model_load(c->dir, &p, &m, &err), FK_ERR_DEVICE);
    assert_non_null(strstr(err.message, "CUDA"));
#endif
}

static void test_bad_prompts(void **state)
{
    ctx *c = *state;
    fk_model *m = must_load(c);
    fk_error err = {0};
    float *logits = malloc(4096 * sizeof(float));
    int32_t bad[2] = {5, 4096}, neg[1] = {-1}, ok[1] = {5};
    assert_int_equal(fk_model_logits(m, bad, 2, false, logits, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "token id 4096 at position 1 is out of vocabulary"));
    assert_int_equal(fk_model_logits(m, neg, 1, false, logits, &err), FK_ERR_INVALID_ARGUMENT);
    assert_int_equal(fk_model_logits(m, ok, 0, false, logits, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "prompt cannot be empty"));
    /* The model still works after the rejected calls. */
    assert_int_equal(fk_model_logits(m, ok, 1, false, logits, &err), FK_OK);
    free(logits);
    fk_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_loads_and_describes, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_generation_config_eos_overrides, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_missing_directory_and_config, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_config, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_bad_config_fields, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_architecture, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_rope_type, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_rope_parameters, setup_qwen2, teardown),
        cmocka_unit_test_setup_teardown(test_qwen2_loads_and_describes, setup_qwen2, teardown),
        cmocka_unit_test_setup_teardown(test_qwen2_sliding_window_refused, setup_qwen2, teardown),
        cmocka_unit_test_setup_teardown(test_qwen2_missing_bias, setup_qwen2, teardown),
        cmocka_unit_test_setup_teardown(test_mistral_sliding_window, setup_mistral, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_activation, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_gpt2_unsupported_activation, setup_gpt2, teardown),
        cmocka_unit_test_setup_teardown(test_missing_tensor, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_shape, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_shard, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_no_weights, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_gpt2_missing_tensor, setup_gpt2, teardown),
        cmocka_unit_test_setup_teardown(test_bad_params, setup_llama, teardown),
        cmocka_unit_test_setup_teardown(test_bad_prompts, setup_llama, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
