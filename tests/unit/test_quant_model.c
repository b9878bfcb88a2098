/* test_quant_model.c — quantized models on the CPU, end to end: shakespeare-llama's perplexity on the validation
 * text through `flashkernel perplexity --quantization` within +0.5% (INT8) and +5% (INT4) of the transformers
 * reference; tiny-llama3 and tiny-gpt2 with INT8 choosing transformers' token at >= 95% of the reference positions
 * (every prompt position and the greedy continuation, teacher-forced); the weight bytes a model reports against
 * config.json's shapes; and the flags of the commands. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "flashkernel.h"
#include "test_util.h"

/* `flashkernel ARGS 2>&1`: the exit status, and the output in *out (malloc'd). */
static int flashkernel(const char *args, char **out)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", FK_BINARY, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0)
        if ((len += got) + 2 > cap)
            buf = realloc(buf, cap *= 2);
    buf[len] = '\0';
    const int status = pclose(p);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static fk_model *load(const char *fixture, fk_quantization q, bool lm_head)
{
    fk_model_params p = fk_model_params_default();
    p.device = FK_DEVICE_CPU;
    p.quantization = q;
    p.quantize_lm_head = lm_head;
    fk_model *m = NULL;
    fk_error err = {0};
    if (fk_model_load(tu_fixture(fixture), &p, &m, &err))
        fail_msg("%s: %s", fixture, err.message);
    return m;
}

static void test_perplexity(void **state)
{
    (void)state;
    cJSON *ref = tu_read_json(tu_fixture("models/shakespeare-llama/reference.json"));
    const cJSON *p = cJSON_GetObjectItem(ref, "perplexity");
    const double want = cJSON_GetObjectItem(p, "ppl")->valuedouble;
    const struct {
        const char *q;
        double limit;
    } cases[] = {{"int8", 5e-3}, {"int4", 5e-2}};
    for (int i = 0; i < 2; i++) {
        char args[4096], *out;
        snprintf(args, sizeof args, "perplexity --device cpu --quantization %s --model '%s' --file '%s' --ctx 512",
                 cases[i].q, tu_fixture("models/shakespeare-llama"), tu_fixture("corpus/tinyshakespeare-val.txt"));
        const int rc = flashkernel(args, &out);
        const char *at = strstr(out, "ppl: ");
        if (rc != 0 || !at)
            fail_msg("flashkernel %s: exit %d: %s", args, rc, out);
        const double ppl = strtod(at + 5, NULL);
        const char *tokens = strstr(out, "tokens: ");
        assert_non_null(tokens);
        assert_int_equal(atoi(tokens + 8), cJSON_GetObjectItem(p, "val_tokens")->valueint);
        assert_non_null(strstr(out, cases[i].q)); /* the report names the weights' format */
        printf("shakespeare-llama %s on the CPU: perplexity %.4f, reference %.4f (%+.3f%%, limit +%.1f%%)\n",
               cases[i].q, ppl, want, 100 * (ppl - want) / want, 100 * cases[i].limit);
        assert_true(ppl <= want * (1 + cases[i].limit) && ppl >= want * (1 - cases[i].limit));
        free(out);
    }
    cJSON_Delete(ref);
}

static int argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        best = v[i] > v[best] ? i : best;
    return best;
}

/* Of the reference positions of every case (each prompt position's next token, then the greedy continuation fed
 * back as transformers chose it), the share where the model's argmax is transformers'. */
static double agreement(const char *fixture, fk_quantization q)
{
    char path[512];
    snprintf(path, sizeof path, "models/%s/reference.json", fixture);
    cJSON *ref = tu_read_json(tu_fixture(path));
    snprintf(path, sizeof path, "models/%s", fixture);
    fk_model *m = load(path, q, false);
    const int V = fk_model_get_info(m).vocab_size;
    int equal = 0, total = 0;
    for (const cJSON *c = cJSON_GetObjectItem(ref, "cases")->child; c; c = c->next) {
        const cJSON *prompt = cJSON_GetObjectItem(c, "prompt_ids"), *per_pos = cJSON_GetObjectItem(c, "argmax_per_position");
        const cJSON *greedy = cJSON_GetObjectItem(c, "greedy_24");
        const int n = cJSON_GetArraySize(prompt), g = cJSON_GetArraySize(greedy), len = n + g - 1;
        int32_t *ids = malloc((size_t)len * sizeof *ids), *want = malloc((size_t)len * sizeof *want);
        for (int i = 0; i < n; i++)
            ids[i] = cJSON_GetArrayItem(prompt, i)->valueint, want[i] = cJSON_GetArrayItem(per_pos, i)->valueint;
        for (int i = 1; i < g; i++) {
            ids[n + i - 1] = cJSON_GetArrayItem(greedy, i - 1)->valueint;
            want[n + i - 1] = cJSON_GetArrayItem(greedy, i)->valueint;
        }
        float *logits = malloc((size_t)len * V * sizeof *logits);
        fk_error err = {0};
        if (fk_model_logits(m, ids, len, true, logits, &err))
            fail_msg("%s: %s", fixture, err.message);
        for (int i = 0; i < len; i++)
            equal += argmax(logits + (size_t)i * V, V) == want[i];
        total += len;
        free(ids), free(want), free(logits);
    }
    fk_model_free(m);
    cJSON_Delete(ref);
    return (double)equal / total;
}

static void test_greedy_agreement(void **state)
{
    (void)state;
    const char *fixtures[] = {"tiny-llama3", "tiny-gpt2"};
    for (int i = 0; i < 2; i++) {
        assert_true(agreement(fixtures[i], FK_QUANT_NONE) == 1); /* the references are the unquantized model's */
        const double int8 = agreement(fixtures[i], FK_QUANT_INT8), int4 = agreement(fixtures[i], FK_QUANT_INT4);
        printf("%s: transformers' token at %.1f%% of the reference positions with int8, %.1f%% with int4\n",
               fixtures[i], 100 * int8, 100 * int4);
        assert_true(int8 >= 0.95);
    }
}

/* The weights as the CPU holds them: float32 for the embedding and norms, the block linears (and the head when
 * asked; a tied head is a quantized copy) in the format's bytes, from config.json's shapes. */
static void test_weight_bytes(void **state)
{
    (void)state;
    cJSON *c = tu_read_json(tu_fixture("models/shakespeare-llama/config.json"));
    const size_t d = (size_t)cJSON_GetObjectItem(c, "hidden_size")->valueint;
    const size_t f = (size_t)cJSON_GetObjectItem(c, "intermediate_size")->valueint;
    const size_t hd = (size_t)cJSON_GetObjectItem(c, "head_dim")->valueint;
    const size_t q = hd * cJSON_GetObjectItem(c, "num_attention_heads")->valueint;
    const size_t kv = hd * cJSON_GetObjectItem(c, "num_key_value_heads")->valueint;
    const size_t layers = (size_t)cJSON_GetObjectItem(c, "num_hidden_layers")->valueint;
    const size_t vocab = (size_t)cJSON_GetObjectItem(c, "vocab_size")->valueint;
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "tie_word_embeddings")));
    cJSON_Delete(c);
    const size_t linears[4][2] = {{q + 2 * kv, d}, {d, q}, {2 * f, d}, {d, f}}; /* [rows][cols] */
    for (fk_quantization fmt = FK_QUANT_NONE; fmt <= FK_QUANT_INT4; fmt++)
        for (int head = 0; head < 2; head++) {
            /* bytes of a [rows][cols] linear: INT8 a byte per weight and an fp16 scale per row; INT4 half a byte per
             * weight and an fp16 (scale, zero) pair per row and group of 128 */
            size_t want = 4 * (vocab * d + d + layers * 2 * d);
            for (size_t l = 0; l < 4 + (size_t)head; l++) {
                const size_t rows = l < 4 ? linears[l][0] : vocab, cols = l < 4 ? linears[l][1] : d;
                const size_t times = l < 4 ? layers : 1;
                want += times * (fmt == FK_QUANT_NONE   ? 4 * rows * cols
                                 : fmt == FK_QUANT_INT8 ? rows * cols + 2 * rows
                                                        : rows * cols / 2 + 4 * rows * (cols / 128));
            }
            if (fmt == FK_QUANT_NONE && head) /* a tied head that is not quantized is the embedding itself */
                want -= 4 * vocab * d;
            fk_model *m = load("models/shakespeare-llama", fmt, head);
            const fk_model_info info = fk_model_get_info(m);
            printf("shakespeare-llama %s%s: %zu weight bytes\n", fk_quantization_name(fmt), head ? " + lm_head" : "",
                   info.weight_bytes);
            assert_int_equal(info.weight_bytes, want);
            assert_int_equal(info.quantization, fmt);
            assert_true(info.quantize_lm_head == (head == 1));
            assert_true(info.load_s > 0);
            fk_model_free(m);
        }
}

static void test_flags(void **state)
{
    (void)state;
    char *out, args[4096];
    const char *helps[] = {"generate", "logits", "perplexity", "bench-engine"};
    for (int i = 0; i < 4; i++) {
        snprintf(args, sizeof args, "%s --help", helps[i]);
        assert_int_equal(flashkernel(args, &out), 0);
        assert_non_null(strstr(out, "--quantization"));
        assert_non_null(strstr(out, "--quantize-lm-head"));
        free(out);
    }
    assert_int_equal(flashkernel("generate --device cpu --quantization int5 --prompt-ids 0,826,270", &out), 2);
    assert_non_null(strstr(out, "--quantization must be none, int8 or int4, got \"int5\""));
    free(out);
    assert_int_equal(flashkernel("generate --device cpu --quantization int4 --quantize-lm-head --prompt-ids 0,826,270 "
                                 "--max-tokens 8 --json",
                                 &out),
                     0);
    assert_non_null(strstr(out, "\"finish_reason\":\"length\""));
    assert_non_null(strstr(out, "int4 (lm_head too) weights"));
    free(out);
    snprintf(args, sizeof args, "bench-engine --device cpu --quantization int8 --requests 2 --prompt-len 8 "
                                "--max-tokens 4 --model '%s'",
             tu_fixture("models/tiny-gpt2"));
    assert_int_equal(flashkernel(args, &out), 0);
    assert_non_null(strstr(out, "weights           int8 weights"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_bytes),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_greedy_agreement),
        cmocka_unit_test(test_perplexity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
