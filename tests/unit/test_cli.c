/* test_cli.c — the `flashkernel` command as scripts use it: exit codes (0 ok, 1 runtime, 2 usage), --help,
 * `generate --json` output checked against the transformers greedy reference (ids, and text from --prompt),
 * `logits --out` against the reference logits, finish_reason "eos", `tokenize`/`detokenize` against Hugging
 * Face's ids, `perplexity` against the reference perplexity, `bench-tokenizer`. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "test_util.h"

static char *tmp_dir;

/* Runs `flashkernel ARGS`; returns its exit status, stdout in *out and stderr in *errtext (malloc'd). */
static int run(const char *args, char **out, char **errtext)
{
    char cmd[16384], err_path[4096];
    snprintf(err_path, sizeof err_path, "%s/stderr", tmp_dir);
    snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", FK_BINARY, args, err_path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 2)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    int status = pclose(p);
    if (out)
        *out = buf;
    else
        free(buf);
    char *e = tu_read_file(err_path, NULL);
    if (errtext)
        *errtext = e;
    else
        free(e);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void expect_exit(const char *args, int code, const char *stderr_needle)
{
    char *e;
    int rc = run(args, NULL, &e);
    if (rc != code || (stderr_needle && !strstr(e, stderr_needle)))
        fail_msg("flashkernel %s: exit %d (want %d), stderr: %s", args, rc, code, e);
    free(e);
}

static void test_help_and_usage_errors(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("--help", &o, NULL), 0);
    assert_non_null(strstr(o, "generate"));
    free(o);
    assert_int_equal(run("generate --help", &o, NULL), 0);
    assert_non_null(strstr(o, "--prompt-ids"));
    free(o);
    assert_int_equal(run("logits --help", &o, NULL), 0);
    assert_non_null(strstr(o, "--out"));
    free(o);
    const char *helps[4][2] = {{"tokenize", "--special"}, {"detokenize", "--skip-special"},
                               {"perplexity", "--ctx"}, {"bench-tokenizer", "--seconds"}};
    for (int i = 0; i < 4; i++) {
        char args[128];
        snprintf(args, sizeof args, "%s --help", helps[i][0]);
        assert_int_equal(run(args, &o, NULL), 0);
        assert_non_null(strstr(o, helps[i][1]));
        free(o);
    }
    assert_int_equal(run("generate --help", &o, NULL), 0);
    assert_non_null(strstr(o, "--prompt TEXT"));
    free(o);
    expect_exit("", 2, "usage");
    expect_exit("frobnicate", 2, "unknown command");
    expect_exit("generate --bogus", 2, "usage");
    expect_exit("generate", 2, "give exactly one of --prompt-ids, --prompt and --batch");
    expect_exit("generate --prompt-ids 1 --batch x.jsonl", 2, "give exactly one of");
    expect_exit("generate --prompt-ids 1 --top-p 0", 2, "--top-p must be a number");
    expect_exit("generate --prompt-ids 1 --top-k -1", 2, "--top-k must be an integer");
    expect_exit("generate --prompt-ids 1 --stop a --stop b --stop c --stop d --stop e", 2, "at most 4 --stop");
    expect_exit("generate --prompt-ids 1 --block-size 0", 2, "--block-size must be an integer");
    expect_exit("generate --prompt-ids 1 --decode-graphs sometimes", 2, "--decode-graphs must be start or first-use");
    for (int i = 0; i < 2; i++) {
        char args[128];
        snprintf(args, sizeof args, "generate --prompt-ids 1 --max-tokens 2 --decode-graphs %s",
                 i ? "start" : "first-use");
        assert_int_equal(run(args, &o, NULL), 0);
        free(o);
    }
    expect_exit("bench-engine --requests 2", 2, "are required");
    expect_exit("generate --prompt-ids 1,,2", 2, "comma-separated integers");
    expect_exit("generate --prompt-ids 1,x", 2, "comma-separated integers");
    expect_exit("generate --prompt-ids 1 --max-tokens abc", 2, "--max-tokens must be an integer");
    expect_exit("generate --prompt-ids 1 --max-tokens 0", 2, "--max-tokens must be an integer");
    expect_exit("generate --prompt-ids 1 --temperature nan", 2, "--temperature");
    expect_exit("generate --prompt-ids 1 --device tpu", 2, "--device must be");
    expect_exit("generate --prompt-ids 1 stray", 2, "unexpected argument");
    expect_exit("logits --prompt-ids 1", 2, "--out are required");
    expect_exit("tokenize", 2, "--text is required");
    expect_exit("tokenize --text a --ids 1", 2, "usage");
    expect_exit("tokenize --text a --model m --tokenizer t", 2, "give --model or --tokenizer, not both");
    expect_exit("detokenize", 2, "--ids is required");
    expect_exit("detokenize --ids 1,a", 2, "comma-separated integers");
    expect_exit("detokenize --ids 1 --special", 2, "usage");
    expect_exit("perplexity", 2, "--file is required");
    expect_exit("perplexity --file f --ctx 1", 2, "--ctx must be an integer");
    expect_exit("bench-tokenizer", 2, "--file is required");
    expect_exit("bench-tokenizer --file f --seconds -1", 2, "--seconds must be a number");
}

static void test_runtime_errors(void **state)
{
    (void)state;
    expect_exit("generate --model /nonexistent --prompt-ids 1", 1, "/nonexistent/config.json");
    char args[8192];
    snprintf(args, sizeof args, "generate --model '%s' --prompt-ids 1,99999", tu_fixture("models/tiny-gpt2"));
    expect_exit(args, 1, "Token id 99999 is out of vocabulary");
    snprintf(args, sizeof args, "generate --model '%s' --prompt-ids 1 --stop x", tu_fixture("models/tiny-gpt2"));
    expect_exit(args, 1, "stop strings need a tokenizer");
    snprintf(args, sizeof args, "generate --model '%s' --prompt-ids 1 --kv-cache-mb 1", tu_fixture("models/tiny-llama3"));
    expect_exit(args, 1, "cannot hold one sequence of max_model_len 131072");
    snprintf(args, sizeof args, "logits --model '%s' --prompt-ids 1 --out /nonexistent/dir/x.f32",
             tu_fixture("models/tiny-gpt2"));
    expect_exit(args, 1, "cannot open /nonexistent/dir/x.f32");
    expect_exit("tokenize --tokenizer /nonexistent/tokenizer.json --text a", 1,
                "/nonexistent/tokenizer.json: cannot open");
    snprintf(args, sizeof args, "tokenize --model '%s' --text a", tu_fixture("models/tiny-gpt2"));
    expect_exit(args, 1, "tiny-gpt2/tokenizer.json: cannot open");
    snprintf(args, sizeof args, "generate --model '%s' --prompt a", tu_fixture("models/tiny-gpt2"));
    expect_exit(args, 1, "has no tokenizer.json; give --prompt-ids");
    expect_exit("tokenize --text 'ok\xff'", 1, "text is not valid UTF-8 at byte 2");
    expect_exit("generate --prompt '\xc3' --max-tokens 1", 1, "--prompt: text is not valid UTF-8 at byte 0");
    expect_exit("detokenize --ids 5,2048", 1, "token id 2048 at position 1 is out of range [0, 2048)");
    expect_exit("perplexity --file /nonexistent/text.txt", 1, "cannot open /nonexistent/text.txt");
    snprintf(args, sizeof args, "perplexity --model '%s' --file '%s'", tu_fixture("models/tiny-gpt2"),
             tu_fixture("corpus/tinyshakespeare-val.txt"));
    expect_exit(args, 1, "has no tokenizer.json");
    snprintf(args, sizeof args, "perplexity --file '%s' --ctx 4096", tu_fixture("corpus/tinyshakespeare-val.txt"));
    expect_exit(args, 1, "--ctx 4096 exceeds the model's context length 2048");
}

/* "1,2,3" from a JSON array of ids. */
static void ids_arg(const cJSON *arr, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const cJSON *e = arr->child; e; e = e->next)
        len += (size_t)snprintf(buf + len, size - len, "%s%d", e == arr->child ? "" : ",", e->valueint);
}

static void test_generate_json_matches_reference(void **state)
{
    (void)state;
    const char *models[2] = {"tiny-gpt2", "tiny-llama3"};
    for (int m = 0; m < 2; m++) {
        char path[512];
        snprintf(path, sizeof path, "models/%s/reference.json", models[m]);
        cJSON *ref = tu_read_json(tu_fixture(path));
        const cJSON *cs = cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "cases"), 2);
        char ids[16384], args[32768];
        ids_arg(cJSON_GetObjectItem(cs, "prompt_ids"), ids, sizeof ids);
        snprintf(path, sizeof path, "models/%s", models[m]);
        snprintf(args, sizeof args, "generate --model '%s' --prompt-ids %s --max-tokens 24 --ignore-eos --json",
                 tu_fixture(path), ids);
        char *out;
        assert_int_equal(run(args, &out, NULL), 0);
        cJSON *got = cJSON_Parse(out);
        assert_non_null(got);
        assert_int_equal(cJSON_GetArraySize(got), 3);
        assert_string_equal(cJSON_GetObjectItem(got, "finish_reason")->valuestring, "length");
        assert_true(cJSON_Compare(cJSON_GetObjectItem(got, "prompt_ids"), cJSON_GetObjectItem(cs, "prompt_ids"), 1));
        assert_true(cJSON_Compare(cJSON_GetObjectItem(got, "ids"), cJSON_GetObjectItem(cs, "greedy_24"), 1));
        cJSON_Delete(got);
        free(out);
        cJSON_Delete(ref);
    }
}

static void test_generate_stops_at_eos(void **state)
{
    (void)state;
    /* A copy of tiny-llama3 whose eos is the first greedy token of a reference prompt. */
    cJSON *ref = tu_read_json(tu_fixture("models/tiny-llama3/reference.json"));
    const cJSON *cs = cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "cases"), 1);
    int eos = cJSON_GetArrayItem(cJSON_GetObjectItem(cs, "greedy_24"), 0)->valueint;
    char *dir = tu_make_temp_dir(), gen[128], path[4096];
    tu_copy_dir(tu_fixture("models/tiny-llama3"), dir);
    snprintf(gen, sizeof gen, "{\"eos_token_id\": %d}", eos);
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    tu_write_file(path, gen, strlen(gen));
    char ids[4096], args[8192];
    ids_arg(cJSON_GetObjectItem(cs, "prompt_ids"), ids, sizeof ids);
    snprintf(args, sizeof args, "generate --model '%s' --prompt-ids %s --max-tokens 24 --json", dir, ids);
    char *out;
    assert_int_equal(run(args, &out, NULL), 0);
    cJSON *got = cJSON_Parse(out);
    assert_non_null(got);
    assert_string_equal(cJSON_GetObjectItem(got, "finish_reason")->valuestring, "eos");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(got, "ids")), 1);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(got, "ids"), 0)->valueint, eos);
    cJSON_Delete(got);
    free(out);
    tu_remove_dir(dir);
    free(dir);
    cJSON_Delete(ref);
}

static void test_logits_file_matches_reference(void **state)
{
    (void)state;
    cJSON *ref = tu_read_json(tu_fixture("models/tiny-gpt2/reference.json"));
    size_t ref_len;
    float *want = (float *)tu_read_file(tu_fixture("models/tiny-gpt2/last_logits.f32"), &ref_len);
    const int vocab = 4096, case_index = 3;
    const cJSON *cs = cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "cases"), case_index);
    char ids[16384], args[32768], out_path[4096];
    ids_arg(cJSON_GetObjectItem(cs, "prompt_ids"), ids, sizeof ids);
    snprintf(out_path, sizeof out_path, "%s/logits.f32", tmp_dir);
    snprintf(args, sizeof args, "logits --model '%s' --prompt-ids %s --out '%s'", tu_fixture("models/tiny-gpt2"),
             ids, out_path);
    assert_int_equal(run(args, NULL, NULL), 0);
    size_t len;
    float *got = (float *)tu_read_file(out_path, &len);
    assert_int_equal(len, vocab * sizeof(float));
    float max_diff = 0;
    for (int v = 0; v < vocab; v++)
        max_diff = fmaxf(max_diff, fabsf(got[v] - want[(size_t)case_index * vocab + v]));
    assert_true(max_diff <= 1e-3f);
    free(got);
    free(want);
    cJSON_Delete(ref);
}

static void test_demo_model_is_default(void **state)
{
    (void)state;
    /* shakespeare-llama's first reference prompt, with no --model. */
    cJSON *ref = tu_read_json(tu_fixture("models/shakespeare-llama/reference.json"));
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "greedy"), 0);
    char ids[4096], args[8192];
    ids_arg(cJSON_GetObjectItem(g, "prompt_ids"), ids, sizeof ids);
    snprintf(args, sizeof args, "generate --prompt-ids %s --max-tokens 8 --json", ids);
    char *out;
    assert_int_equal(run(args, &out, NULL), 0);
    cJSON *got = cJSON_Parse(out);
    assert_non_null(got);
    const cJSON *want = cJSON_GetObjectItem(g, "greedy_64");
    int i = 0;
    for (const cJSON *e = cJSON_GetObjectItem(got, "ids")->child; e; e = e->next, i++)
        assert_int_equal(e->valueint, cJSON_GetArrayItem(want, i)->valueint);
    assert_int_equal(i, 8);
    cJSON_Delete(got);
    free(out);
    cJSON_Delete(ref);
}

/* Five reference prompts in one --batch file, with a KV pool small enough to force preemption: results come
 * back in input order, equal to transformers' greedy tokens, with the preemptions counted. */
static void test_batch_file_with_preemption(void **state)
{
    (void)state;
    cJSON *ref = tu_read_json(tu_fixture("models/tiny-gpt2/reference.json"));
    char path[4096], args[8192];
    snprintf(path, sizeof path, "%s/requests.jsonl", tmp_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (const cJSON *c = cJSON_GetObjectItem(ref, "cases")->child; c; c = c->next) {
        char *ids = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "prompt_ids"));
        fprintf(f, "{\"prompt_ids\": %s, \"max_tokens\": 24, \"ignore_eos\": true}\n\n", ids);
        free(ids);
    }
    fclose(f);
    /* The five need 2 + 2 + 4 + 10 + 46 = 64 blocks of 16 at once; the pool has 60 (one 800-token sequence needs 50). */
    snprintf(args, sizeof args, "generate --model '%s' --batch '%s' --num-blocks 60 --max-model-len 800 --json",
             tu_fixture("models/tiny-gpt2"), path);
    char *out;
    assert_int_equal(run(args, &out, NULL), 0);
    char *line = out, *nl;
    int preemptions = 0;
    for (const cJSON *c = cJSON_GetObjectItem(ref, "cases")->child; c; c = c->next, line = nl + 1) {
        nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        cJSON *got = cJSON_Parse(line);
        assert_non_null(got);
        assert_true(cJSON_Compare(cJSON_GetObjectItem(got, "prompt_ids"), cJSON_GetObjectItem(c, "prompt_ids"), 1));
        assert_true(cJSON_Compare(cJSON_GetObjectItem(got, "ids"), cJSON_GetObjectItem(c, "greedy_24"), 1));
        assert_string_equal(cJSON_GetObjectItem(got, "finish_reason")->valuestring, "length");
        preemptions += cJSON_GetObjectItem(got, "preemptions")->valueint;
        cJSON_Delete(got);
    }
    assert_string_equal(line, "");
    assert_true(preemptions > 0);
    free(out);

    /* A bad line: the file and line are named, nothing runs. */
    f = fopen(path, "w");
    fprintf(f, "{\"prompt_ids\": [1, 2]}\n{\"prompt_ids\": [1], \"bogus\": 1}\n");
    fclose(f);
    snprintf(args, sizeof args, "generate --model '%s' --batch '%s'", tu_fixture("models/tiny-gpt2"), path);
    char expect[4200];
    snprintf(expect, sizeof expect, "%s:2: unknown field \"bogus\"", path);
    expect_exit(args, 1, expect);
    f = fopen(path, "w");
    fprintf(f, "{\"prompt_ids\": [1, 2], \"max_tokens\": 0}\n");
    fclose(f);
    expect_exit(args, 1, "max_tokens must be at least 1, got 0");
    cJSON_Delete(ref);
}

/* --batch reads each line with the strict parser: what cJSON alone lets through (trailing bytes, duplicate keys) is
 * refused with the file, the line and the byte, and nothing runs. */
static void test_batch_lines_are_strict(void **state)
{
    (void)state;
    static const struct {
        const char *line, *want;
    } cases[] = {
        {"{\"prompt_ids\": [1, 2]} xyz", "trailing data after JSON value (at byte 23)"},
        {"{\"prompt_ids\": [1, 2]}{\"prompt_ids\": [3]}", "trailing data after JSON value (at byte 22)"},
        {"{\"prompt_ids\": [1], \"max_tokens\": 4, \"max_tokens\": 8}", "duplicate key \"max_tokens\""},
        {"{\"prompt_ids\": [1, 2]", "invalid JSON at byte"},
        {"[1, 2]", "not a JSON object"},
    };
    char path[4096], args[8192], expect[4300];
    snprintf(path, sizeof path, "%s/strict.jsonl", tmp_dir);
    snprintf(args, sizeof args, "generate --model '%s' --batch '%s'", tu_fixture("models/tiny-gpt2"), path);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "{\"prompt_ids\": [5], \"max_tokens\": 2}\n%s\n", cases[i].line);
        fclose(f);
        snprintf(expect, sizeof expect, "%s:2: %s", path, cases[i].want);
        expect_exit(args, 1, expect);
    }
}

static void test_bench_engine(void **state)
{
    (void)state;
    char args[4096], *out;
    snprintf(args, sizeof args,
             "bench-engine --model '%s' --requests 12 --prompt-len 40 --shared-prefix 32 --max-tokens 8 "
             "--max-num-batched-tokens 40",
             tu_fixture("models/tiny-llama3"));
    assert_int_equal(run(args, &out, NULL), 0);
    int requests = 0;
    unsigned long long out_tokens = 0, hits = 0, queried = 0;
    assert_non_null(strstr(out, "output tokens/s"));
    assert_int_equal(sscanf(strstr(out, "requests"), "requests %d", &requests), 1);
    assert_int_equal(sscanf(strstr(out, "output tokens "), "output tokens %llu", &out_tokens), 1);
    const char *h = strstr(out, "prefix-cache hits");
    assert_non_null(h);
    assert_int_equal(sscanf(strchr(h, '('), "(%llu of %llu", &hits, &queried), 2);
    assert_int_equal(requests, 12);
    assert_int_equal(out_tokens, 12 * 8);
    assert_int_equal(queried, 12 * 40);
    /* A 40-token budget admits one prompt per step: every request after the first finds the shared 32 tokens
     * (two full blocks) in the prefix cache. */
    assert_int_equal(hits, 11 * 32);
    free(out);
}

/* 'text' for sh: single quotes, with ' written as '\''. */
static void quote(const char *s, char *out, size_t size)
{
    size_t k = 0;
    out[k++] = '\'';
    for (; *s && k + 6 < size; s++) {
        if (*s == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *s;
        }
    }
    out[k++] = '\'';
    out[k] = '\0';
}

/* tokenize (plain and --json) and detokenize agree with Hugging Face's ids and text (the extra cases of gpt2
 * and llama2-spm, a few of each, through the shell). */
static void test_tokenize_detokenize(void **state)
{
    (void)state;
    const char *names[2] = {"gpt2", "llama2-spm"};
    for (int k = 0; k < 2; k++) {
        char path[256], tok[4096];
        snprintf(path, sizeof path, "tokenizers/%s/extra_cases.json", names[k]);
        cJSON *doc = tu_read_json(tu_fixture(path));
        snprintf(path, sizeof path, "tokenizers/%s/tokenizer.json", names[k]);
        snprintf(tok, sizeof tok, "%s", tu_fixture(path));
        int i = 0;
        for (const cJSON *c = cJSON_GetObjectItem(doc, "cases")->child; c && i < 40; c = c->next, i++) {
            const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
            if (!text[0])
                continue;
            char q[8192], args[16384], ids[8192];
            quote(text, q, sizeof q);
            snprintf(args, sizeof args, "tokenize --tokenizer '%s' --text %s --special --json", tok, q);
            char *out;
            assert_int_equal(run(args, &out, NULL), 0);
            cJSON *got = cJSON_Parse(out);
            assert_non_null(got);
            assert_true(cJSON_Compare(cJSON_GetObjectItem(got, "ids"), cJSON_GetObjectItem(c, "ids_with_special"), 1));
            cJSON_Delete(got);
            free(out);
            snprintf(args, sizeof args, "tokenize --tokenizer '%s' --text %s", tok, q);
            assert_int_equal(run(args, &out, NULL), 0);
            ids_arg(cJSON_GetObjectItem(c, "ids"), ids, sizeof ids);
            assert_int_equal(strlen(out), strlen(ids) + 1);
            assert_memory_equal(out, ids, strlen(ids));
            free(out);
            if (!ids[0])
                continue;
            snprintf(args, sizeof args, "detokenize --tokenizer '%s' --ids %s", tok, ids);
            assert_int_equal(run(args, &out, NULL), 0);
            const char *want = cJSON_GetObjectItem(c, "decoded")->valuestring;
            assert_int_equal(strlen(out), strlen(want) + 1);
            assert_memory_equal(out, want, strlen(want));
            free(out);
        }
        cJSON_Delete(doc);
    }
    /* The demo model is the default; --skip-special drops BOS. */
    char *out;
    assert_int_equal(run("tokenize --text 'ROMEO:\n' --special", &out, NULL), 0);
    assert_string_equal(out, "0,826,270\n");
    free(out);
    assert_int_equal(run("detokenize --ids 0,826,270 --skip-special", &out, NULL), 0);
    assert_string_equal(out, "ROMEO:\n\n");
    free(out);
    assert_int_equal(run("detokenize --ids 0,826,270", &out, NULL), 0);
    assert_string_equal(out, "<|begin_of_text|>ROMEO:\n\n");
    free(out);
}

/* generate --prompt: the prompt encodes (with BOS) to the reference prompt ids, and the greedy continuation
 * reads as the reference text; without --json the text is printed. */
static void test_generate_text_matches_reference(void **state)
{
    (void)state;
    cJSON *ref = tu_read_json(tu_fixture("models/shakespeare-llama/reference.json"));
    for (const cJSON *g = cJSON_GetObjectItem(ref, "greedy")->child; g; g = g->next) {
        char q[1024], args[4096];
        quote(cJSON_GetObjectItem(g, "prompt")->valuestring, q, sizeof q);
        snprintf(args, sizeof args, "generate --prompt %s --max-tokens 64 --ignore-eos --json", q);
        char *out;
        assert_int_equal(run(args, &out, NULL), 0);
        cJSON *got = cJSON_Parse(out);
        assert_non_null(got);
        assert_true(cJSON_Compare(cJSON_GetObjectItem(got, "prompt_ids"), cJSON_GetObjectItem(g, "prompt_ids"), 1));
        assert_true(cJSON_Compare(cJSON_GetObjectItem(got, "ids"), cJSON_GetObjectItem(g, "greedy_64"), 1));
        assert_string_equal(cJSON_GetObjectItem(got, "text")->valuestring,
                            cJSON_GetObjectItem(g, "greedy_64_text")->valuestring);
        cJSON_Delete(got);
        free(out);
    }
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "greedy"), 0);
    char *out;
    assert_int_equal(run("generate --prompt 'ROMEO:\n' --max-tokens 64 --ignore-eos", &out, NULL), 0);
    char want[4096];
    snprintf(want, sizeof want, "%s\nfinish_reason: length\n", cJSON_GetObjectItem(g, "greedy_64_text")->valuestring);
    assert_string_equal(out, want);
    free(out);
    cJSON_Delete(ref);
}

/* Perplexity of shakespeare-llama on the validation text, within 0.1% of the transformers reference. */
static void test_perplexity_matches_reference(void **state)
{
    (void)state;
    cJSON *ref = tu_read_json(tu_fixture("models/shakespeare-llama/reference.json"));
    const cJSON *p = cJSON_GetObjectItem(ref, "perplexity");
    char args[4096];
    snprintf(args, sizeof args, "perplexity --file '%s' --ctx 512", tu_fixture("corpus/tinyshakespeare-val.txt"));
    char *out;
    assert_int_equal(run(args, &out, NULL), 0);
    double ppl = 0, tps = 0;
    int tokens = 0;
    assert_int_equal(sscanf(out, "ppl: %lf\ntokens: %d\ntokens/s: %lf", &ppl, &tokens, &tps), 3);
    double want = cJSON_GetObjectItem(p, "ppl")->valuedouble;
    print_message("perplexity %.6f (reference %.6f, %+.2e relative), %d tokens, %.0f tokens/s\n", ppl, want,
                  (ppl - want) / want, tokens, tps);
    assert_int_equal(tokens, cJSON_GetObjectItem(p, "val_tokens")->valueint);
    assert_true(fabs(ppl - want) <= 1e-3 * want);
    assert_true(tps > 0);
    free(out);
    cJSON_Delete(ref);
}

static void test_bench_tokenizer(void **state)
{
    (void)state;
    char args[4096];
    snprintf(args, sizeof args, "bench-tokenizer --tokenizer '%s' --file '%s' --seconds 0.2",
             tu_fixture("tokenizers/gpt2/tokenizer.json"), tu_fixture("corpus/tinyshakespeare-val.txt"));
    char *out;
    assert_int_equal(run(args, &out, NULL), 0);
    const char *mb = strstr(out, "MB/s: ");
    assert_non_null(mb);
    assert_true(atof(mb + 6) > 0);
    assert_non_null(strstr(out, "(111606 bytes, "));
    free(out);
}

static int setup(void **state)
{
    (void)state;
    tmp_dir = tu_make_temp_dir();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_remove_dir(tmp_dir);
    free(tmp_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_usage_errors),
        cmocka_unit_test(test_runtime_errors),
        cmocka_unit_test(test_generate_json_matches_reference),
        cmocka_unit_test(test_generate_stops_at_eos),
        cmocka_unit_test(test_logits_file_matches_reference),
        cmocka_unit_test(test_demo_model_is_default),
        cmocka_unit_test(test_batch_file_with_preemption),
        cmocka_unit_test(test_batch_lines_are_strict),
        cmocka_unit_test(test_bench_engine),
        cmocka_unit_test(test_tokenize_detokenize),
        cmocka_unit_test(test_generate_text_matches_reference),
        cmocka_unit_test(test_perplexity_matches_reference),
        cmocka_unit_test(test_bench_tokenizer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
