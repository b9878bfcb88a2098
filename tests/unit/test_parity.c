/* test_parity.c — the CPU backend against Hugging Face transformers' outputs (tests/fixtures/models: Llama, GPT-2,
 * Qwen2, Mistral, SmolLM shapes; tests/fixtures/hf-variants):
 * last-position logits within 1e-3, argmax at every position, greedy continuations (through the engine); for
 * several prefill chunk
 * and KV block sizes, and for directories rewritten in ways that must not change the outputs (other tensor
 * names, dtype, sharding, config spellings, zero biases, an untied copy of the head). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flashkernel.h"
#include "safetensors.h"
#include "test_util.h"

#define LOGIT_TOLERANCE 1e-3f

static int argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

static int32_t *json_ids(const cJSON *arr, int *n)
{
    *n = cJSON_GetArraySize(arr);
    int32_t *ids = malloc((size_t)*n * sizeof *ids + 1);
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next)
        ids[i++] = (int32_t)e->valueint;
    return ids;
}

static fk_model *load(const char *dir, int prefill_chunk, int block_size)
{
    fk_model_params p = fk_model_params_default();
    p.device = FK_DEVICE_CPU;
    p.prefill_chunk = prefill_chunk;
    p.kv_block_size = block_size;
    fk_model *m = NULL;
    fk_error err = {0};
    if (fk_model_load(dir, &p, &m, &err))
        fail_msg("loading %s: %s", dir, err.message);
    return m;
}

static void take_token(const fk_token_event *ev, void *user)
{
    int32_t **out = user;
    if (ev->token >= 0)
        *(*out)++ = ev->token;
}

/* n_out greedy tokens after ids, EOS ignored, through an engine of its own. */
static void greedy_through_engine(fk_model *m, const int32_t *ids, int n, int n_out, int32_t *out)
{
    fk_engine_params ep = fk_engine_params_default();
    ep.max_model_len = n + n_out;
    fk_engine *e;
    fk_error err = {0};
    if (fk_engine_create(m, &ep, &e, &err))
        fail_msg("%s", err.message);
    fk_request_params rp = fk_request_params_default();
    rp.max_tokens = n_out;
    rp.ignore_eos = true;
    rp.on_token = take_token;
    int32_t *cursor = out;
    rp.user = &cursor;
    uint64_t id;
    if (fk_engine_submit(e, ids, n, &rp, &id, &err))
        fail_msg("%s", err.message);
    while (fk_engine_has_work(e))
        if (fk_engine_step(e, &err))
            fail_msg("%s", err.message);
    assert_int_equal(cursor - out, n_out);
    fk_engine_free(e);
}

/* Checks model_dir against the references in fixture directory ref ("models/tiny-gpt2", ...). */
static void check_against_reference(const char *model_dir, const char *ref, int prefill_chunk, int block_size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/reference.json", ref);
    cJSON *refj = tu_read_json(tu_fixture(path));
    snprintf(path, sizeof path, "%s/last_logits.f32", ref);
    size_t ref_len;
    float *ref_logits = (float *)tu_read_file(tu_fixture(path), &ref_len);
    const int vocab = cJSON_GetObjectItem(refj, "vocab_size")->valueint;

    fk_model *m = load(model_dir, prefill_chunk, block_size);
    assert_int_equal(fk_model_get_info(m).vocab_size, vocab);
    const cJSON *cases = cJSON_GetObjectItem(refj, "cases");
    assert_int_equal(ref_len, (size_t)cJSON_GetArraySize(cases) * vocab * sizeof(float));
    int c = 0;
    float worst = 0;
    for (const cJSON *cs = cases->child; cs; cs = cs->next, c++) {
        int n, n_argmax, n_greedy;
        int32_t *ids = json_ids(cJSON_GetObjectItem(cs, "prompt_ids"), &n);
        int32_t *want_argmax = json_ids(cJSON_GetObjectItem(cs, "argmax_per_position"), &n_argmax);
        int32_t *want_greedy = json_ids(cJSON_GetObjectItem(cs, "greedy_24"), &n_greedy);
        assert_int_equal(n_argmax, n);

        float *logits = malloc((size_t)n * vocab * sizeof(float));
        fk_error err = {0};
        if (fk_model_logits(m, ids, n, true, logits, &err))
            fail_msg("%s: %s", model_dir, err.message);
        for (int i = 0; i < n; i++)
            if (argmax(logits + (size_t)i * vocab, vocab) != want_argmax[i])
                fail_msg("%s, prompt of %d: argmax at position %d is %d, transformers gives %d", model_dir, n, i,
                         argmax(logits + (size_t)i * vocab, vocab), want_argmax[i]);
        const float *last = logits + (size_t)(n - 1) * vocab, *want = ref_logits + (size_t)c * vocab;
        float max_diff = 0;
        for (int v = 0; v < vocab; v++)
            max_diff = fmaxf(max_diff, fabsf(last[v] - want[v]));
        worst = fmaxf(worst, max_diff);
        if (!(max_diff <= LOGIT_TOLERANCE))
            fail_msg("%s, prompt of %d: last logits differ by %g > %g", model_dir, n, max_diff, LOGIT_TOLERANCE);

        /* The last-position-only path agrees with the all-positions one. */
        float *only_last = malloc((size_t)vocab * sizeof(float));
        if (fk_model_logits(m, ids, n, false, only_last, &err))
            fail_msg("%s: %s", model_dir, err.message);
        for (int v = 0; v < vocab; v++)
            assert_true(fabsf(only_last[v] - want[v]) <= LOGIT_TOLERANCE);

        int32_t *got = malloc((size_t)n_greedy * sizeof *got);
        greedy_through_engine(m, ids, n, n_greedy, got);
        for (int i = 0; i < n_greedy; i++)
            if (got[i] != want_greedy[i])
                fail_msg("%s, prompt of %d: greedy token %d is %d, transformers gives %d", model_dir, n, i, got[i],
                         want_greedy[i]);
        free(got);
        free(only_last);
        free(logits);
        free(ids);
        free(want_argmax);
        free(want_greedy);
    }
    printf("%-60s chunk %4d block %2d: %d cases, max |logit diff| %.3g\n", model_dir, prefill_chunk, block_size, c,
           (double)worst);
    fk_model_free(m);
    free(ref_logits);
    cJSON_Delete(refj);
}

static void test_tiny_llama3(void **state)
{
    (void)state;
    const char *dir = tu_fixture("models/tiny-llama3");
    check_against_reference(dir, "models/tiny-llama3", 512, 16);
    check_against_reference(dir, "models/tiny-llama3", 33, 16); /* chunks that end mid-block */
    check_against_reference(dir, "models/tiny-llama3", 64, 5);  /* odd block size */
}

static void test_tiny_gpt2(void **state)
{
    (void)state;
    const char *dir = tu_fixture("models/tiny-gpt2");
    check_against_reference(dir, "models/tiny-gpt2", 512, 16);
    check_against_reference(dir, "models/tiny-gpt2", 33, 16);
    check_against_reference(dir, "models/tiny-gpt2", 64, 5);
}

/* Directories written by transformers' save_pretrained with varied configs (tests/fixtures/hf-variants). */
static void test_hf_variants(void **state)
{
    (void)state;
    const char *variants[] = {"llama-mha-untied-f32", "llama-gqa-headdim-linear-bf16", "llama-bias-llama3-f16-sharded",
                              "gpt2-inner-layerscale-f16", "gpt2-untied-f32-sharded"};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "hf-variants/%s", variants[i]);
        check_against_reference(tu_fixture(rel), rel, 512, 16);
        check_against_reference(tu_fixture(rel), rel, 7, 3);
    }
}

/* Qwen2 (biased q/k/v, untied; tied with head_dim 128), Mistral (head_dim != hidden / heads) and a SmolLM-shaped
 * Llama (3 heads, 1 KV head, tied), as transformers 5 saved them (tests/fixtures/models/make_family_models.py). */
static void test_families(void **state)
{
    (void)state;
    const char *models[] = {"tiny-qwen2", "tiny-qwen2-tied", "tiny-mistral", "tiny-smollm"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "models/%s", models[i]);
        check_against_reference(tu_fixture(rel), rel, 512, 16);
        check_against_reference(tu_fixture(rel), rel, 64, 5);
    }
}

/* ---- rewritten directories that must give the same outputs ---- */

/* A copy of fixture models/NAME whose config.json is the fixture's file `config`, checked against the fixture's
 * reference. */
static void check_config_file(const char *name, const char *config)
{
    char rel[256], path[4096];
    snprintf(rel, sizeof rel, "models/%s", name);
    char *dir = tu_make_temp_dir();
    tu_copy_dir(tu_fixture(rel), dir);
    snprintf(path, sizeof path, "%s/%s", rel, config);
    cJSON *cfg = tu_read_json(tu_fixture(path));
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_json(path, cfg);
    cJSON_Delete(cfg);
    check_against_reference(dir, rel, 512, 16);
    tu_remove_dir(dir);
    free(dir);
}

/* One model of each architecture in both config.json layouts: the family models' config.classic.json (transformers
 * 4.43: rope_theta, torch_dtype) and tiny-llama3's and tiny-gpt2's config.transformers5.json (rope_parameters with
 * llama3 scaling, dtype), each against the reference made with the other layout. */
static void test_both_config_layouts(void **state)
{
    (void)state;
    check_config_file("tiny-qwen2", "config.classic.json");
    check_config_file("tiny-mistral", "config.classic.json");
    check_config_file("tiny-smollm", "config.classic.json");
    check_config_file("tiny-llama3", "config.transformers5.json");
    check_config_file("tiny-gpt2", "config.transformers5.json");
}

/* tiny-qwen2 with the sliding-window fields of Qwen2.5's published configs (a window and max_window_layers, with
 * use_sliding_window false): transformers ignores them, and so must the loader. */
static void test_qwen2_unused_window(void **state)
{
    (void)state;
    char *dir = tu_make_temp_dir(), path[4096];
    tu_copy_dir(tu_fixture("models/tiny-qwen2"), dir);
    cJSON *cfg = tu_read_json(tu_fixture("models/tiny-qwen2/config.classic.json"));
    cJSON_ReplaceItemInObject(cfg, "sliding_window", cJSON_CreateNumber(128));
    cJSON_ReplaceItemInObject(cfg, "max_window_layers", cJSON_CreateNumber(1));
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_json(path, cfg);
    cJSON_Delete(cfg);
    check_against_reference(dir, "models/tiny-qwen2", 512, 16);
    tu_remove_dir(dir);
    free(dir);
}


static bool to_f32(void *ctx, char *name, bool *f32)
{
    (void)ctx, (void)name;
    *f32 = true;
    return true;
}

static bool add_prefix(void *ctx, char *name, bool *f32)
{
    (void)f32;
    char old[256];
    snprintf(old, sizeof old, "%s", name);
    snprintf(name, 256, "%s%s", (const char *)ctx, old);
    return true;
}

static cJSON *config_of(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    return tu_read_json(path);
}

static void save_config(const char *dir, const cJSON *cfg)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_json(path, cfg);
}

/* tiny-llama3 as one float32 file (bf16 → f32 is exact), with head_dim left to its default and the rope
 * scaling in the newer "rope_parameters" spelling. */
static void test_llama_single_file_f32_new_config(void **state)
{
    (void)state;
    char *dir = tu_make_temp_dir(), path[4096];
    const char *src = tu_fixture("models/tiny-llama3");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tu_rewrite_weights(src, path, to_f32, NULL, NULL, 0);
    cJSON *cfg = config_of(src);
    cJSON_DeleteItemFromObject(cfg, "head_dim"); /* 128 / 2 heads = 64, as before */
    cJSON *rope = cJSON_DetachItemFromObject(cfg, "rope_scaling");
    cJSON_AddNumberToObject(rope, "rope_theta", cJSON_GetObjectItem(cfg, "rope_theta")->valuedouble);
    cJSON_DeleteItemFromObject(cfg, "rope_theta");
    cJSON_AddItemToObject(cfg, "rope_parameters", rope);
    save_config(dir, cfg);
    cJSON_Delete(cfg);
    check_against_reference(dir, "models/tiny-llama3", 512, 16);
    tu_remove_dir(dir);
    free(dir);
}

/* A tensor of the fixture as float32 (malloc'd). */
static float *fixture_tensor_f32(const char *dir, const char *name)
{
    safetensors *st;
    assert_int_equal(safetensors_open_dir(dir, &st, NULL), FK_OK);
    const st_tensor *t = safetensors_find(st, name);
    assert_non_null(t);
    float *v = malloc((size_t)t->numel * sizeof(float));
    assert_int_equal(st_tensor_to_f32(t, v, NULL), FK_OK);
    safetensors_close(st);
    return v;
}

/* tiny-llama3 with attention_bias and mlp_bias on and every bias zero, and an untied lm_head equal to the
 * embeddings. */
static void test_llama_zero_biases_untied_head(void **state)
{
    (void)state;
    const char *src = tu_fixture("models/tiny-llama3");
    const int d = 128, q = 128, kv = 64, f = 384, layers = 2, vocab = 4096;
    float *zeros = calloc(f, sizeof(float));
    float *head = fixture_tensor_f32(src, "model.embed_tokens.weight");
    tu_tensor extra[1 + 7 * 2];
    char names[7 * 2][128];
    int n = 0;
    extra[n++] = (tu_tensor){"lm_head.weight", "F32", 2, {vocab, d}, head, (size_t)vocab * d * sizeof(float)};
    const char *bias_names[7] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    const int bias_len[7] = {q, kv, kv, d, f, f, d};
    for (int l = 0; l < layers; l++)
        for (int b = 0; b < 7; b++) {
            char *nm = names[l * 7 + b];
            snprintf(nm, 128, "model.layers.%d.%s.%s.bias", l, b < 4 ? "self_attn" : "mlp", bias_names[b]);
            extra[n++] = (tu_tensor){nm, "F32", 1, {bias_len[b]}, zeros, (size_t)bias_len[b] * sizeof(float)};
        }
    char *dir = tu_make_temp_dir(), path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tu_rewrite_weights(src, path, NULL, NULL, extra, n);
    cJSON *cfg = config_of(src);
    cJSON_ReplaceItemInObject(cfg, "attention_bias", cJSON_CreateTrue());
    cJSON_ReplaceItemInObject(cfg, "mlp_bias", cJSON_CreateTrue());
    cJSON_ReplaceItemInObject(cfg, "tie_word_embeddings", cJSON_CreateFalse());
    save_config(dir, cfg);
    cJSON_Delete(cfg);
    check_against_reference(dir, "models/tiny-llama3", 512, 16);
    free(head);
    free(zeros);
    tu_remove_dir(dir);
    free(dir);
}

/* Keeps the tensors of one shard: layer 1 goes to the second, the rest to the first. */
static bool shard_filter(void *ctx, char *name, bool *f32)
{
    (void)f32;
    bool want_second = *(const bool *)ctx;
    return (strstr(name, "h.1.") != NULL) == want_second;
}

/* tiny-gpt2 with "transformer."-prefixed names, split into two shards with an index. */
static void test_gpt2_prefixed_sharded(void **state)
{
    (void)state;
    const char *src = tu_fixture("models/tiny-gpt2");
    char *dir = tu_make_temp_dir(), *stage = tu_make_temp_dir(), path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", stage);
    tu_rewrite_weights(src, path, add_prefix, "transformer.", NULL, 0);
    const char *shard_names[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    cJSON *index = cJSON_CreateObject(), *map = cJSON_AddObjectToObject(index, "weight_map");
    for (int i = 0; i < 2; i++) {
        bool second = i == 1;
        snprintf(path, sizeof path, "%s/%s", dir, shard_names[i]);
        tu_rewrite_weights(stage, path, shard_filter, &second, NULL, 0);
        safetensors *st;
        assert_int_equal(safetensors_open_file(path, &st, NULL), FK_OK);
        assert_true(safetensors_count(st) > 0);
        for (int t = 0; t < safetensors_count(st); t++)
            cJSON_AddStringToObject(map, safetensors_at(st, t)->name, shard_names[i]);
        safetensors_close(st);
    }
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    tu_write_json(path, index);
    cJSON_Delete(index);
    cJSON *cfg = config_of(src);
    save_config(dir, cfg);
    cJSON_Delete(cfg);
    check_against_reference(dir, "models/tiny-gpt2", 512, 16);
    tu_remove_dir(stage);
    tu_remove_dir(dir);
    free(stage);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_llama3),
        cmocka_unit_test(test_tiny_gpt2),
        cmocka_unit_test(test_hf_variants),
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_both_config_layouts),
        cmocka_unit_test(test_qwen2_unused_window),
        cmocka_unit_test(test_llama_single_file_f32_new_config),
        cmocka_unit_test(test_llama_zero_biases_untied_head),
        cmocka_unit_test(test_gpt2_prefixed_sharded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
