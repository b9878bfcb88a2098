/* test_server_api.c — the server's JSON layer (server/api.c): every malformed-body class RELIABILITY.md lists
 * (status and message), every generation field's types and ranges (the messages name the field and value), the
 * defaults of /generate and /v1/completions, and the response and Server-Sent Events bodies parsed back. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "test_util.h"
#include "utf8.h"

static const api_limits limits = {.vocab_size = 2048, .max_model_len = 2048, .model_name = "demo-model"};

/* Parses body[0, len) and expects failure with `status` and a message containing `needle` (NULL: success). */
static void expect_body(const char *body, size_t len, int status, const char *needle)
{
    cJSON *root = NULL;
    api_error e = {0};
    const bool ok = api_parse_body(body, len, &root, &e);
    if (!needle) {
        if (!ok)
            fail_msg("body %.60s: rejected: %s", body, e.message);
        assert_non_null(root);
        cJSON_Delete(root);
        return;
    }
    if (ok)
        fail_msg("body %.60s: accepted, want %d \"%s\"", body, status, needle);
    assert_null(root);
    if (e.status != status || !strstr(e.message, needle))
        fail_msg("body %.60s: %d \"%s\", want %d \"%s\"", body, e.status, e.message, status, needle);
}

static void expect_str(const char *body, int status, const char *needle)
{
    expect_body(body, strlen(body), status, needle);
}

static void test_malformed_bodies(void **state)
{
    (void)state;
    static const struct {
        const char *body, *needle;
    } cases[] = {
        /* rows 1-4 */
        {"", "invalid JSON at byte 0: empty body"},
        {"hello", "invalid JSON at byte 0"},
        {"{\"prompt\":\"a\"", "invalid JSON at byte 13: unexpected end of input"},
        {"{\"prompt\":\"a\"}xyz", "trailing data after JSON value (at byte 14)"},
        {"{\"prompt\":\"a\"} {}", "trailing data after JSON value"},
        {"[]", "body must be a JSON object"},
        {"\"x\"", "body must be a JSON object"},
        {"42", "body must be a JSON object"},
        {"null", "body must be a JSON object"},
        {"  true ", "body must be a JSON object"},
        /* syntax cJSON lets through or mangles */
        {"{\"a\":01}", "invalid JSON at byte 6"},
        {"{\"a\":+1}", "invalid JSON at byte 5"},
        {"{\"a\":.5}", "invalid JSON at byte 5"},
        {"{\"a\":1.}", "invalid JSON at byte 7: invalid number"},
        {"{\"a\":1e}", "invalid number"},
        {"{\"a\":-}", "invalid number"},
        {"{\"a\":0x10}", "invalid JSON at byte 6"},
        {"{\"a\":NaN}", "invalid JSON at byte 5"},
        {"{\"a\":Infinity}", "invalid JSON"},
        {"{\"a\":-Infinity}", "invalid number"},
        {"{\"a\":tru}", "invalid literal"},
        {"{\"a\":nul}", "invalid literal"},
        {"{\"a\" 1}", "expected ':'"},
        {"{\"a\":1,}", "expected a string key"},
        {"{\"a\":[1,]}", "invalid JSON"},
        {"{\"a\":[1 2]}", "expected ',' or ']'"},
        {"{a:1}", "expected a string key"},
        {"{'a':1}", "expected a string key"},
        {"{\"a\":\"x\\q\"}", "invalid escape"},
        {"{\"a\":\"\\u12\"}", "invalid \\u escape"},
        {"{\"a\":\"\t\"}", "control character in string"},
        {"{\"a\":\"x\n\"}", "control character in string"},
        {"{\"a\":\"unterminated}", "unterminated string"},
        {"{\"a\":\"x\\", "unterminated string"},
        /* row 10, row 11 */
        {"{\"prompt\":\"a\\u0000b\"}", "NUL character not allowed"},
        {"{\"a\\u0000\":1}", "NUL character not allowed"},
        {"{\"prompt\":\"\\ud800\"}", "lone surrogate"},
        {"{\"prompt\":\"\\ud800x\"}", "lone surrogate"},
        {"{\"prompt\":\"\\ud800\\u0041\"}", "lone surrogate"},
        {"{\"prompt\":\"\\udc00\"}", "lone surrogate"},
        {"{\"prompt\":\"\\uDFFF\"}", "lone surrogate"},
        /* row 9: invalid UTF-8, named by the top-level field */
        {"{\"prompt\":\"a\xff\"}", "prompt is not valid UTF-8"},
        {"{\"prompt\":\"\xc0\xaf\"}", "prompt is not valid UTF-8"},         /* overlong '/' */
        {"{\"prompt\":\"\xe0\x80\xaf\"}", "prompt is not valid UTF-8"},     /* overlong, 3 bytes */
        {"{\"prompt\":\"\xed\xa0\x80\"}", "prompt is not valid UTF-8"},     /* surrogate D800 encoded */
        {"{\"prompt\":\"\xf4\x90\x80\x80\"}", "prompt is not valid UTF-8"}, /* above U+10FFFF */
        {"{\"prompt\":\"\xe6\x97\"}", "prompt is not valid UTF-8"},         /* truncated */
        {"{\"prompt\":\"\x80\"}", "prompt is not valid UTF-8"},             /* lone continuation byte */
        {"{\"stop\":[\"ok\",\"\xfe\"]}", "stop is not valid UTF-8"},
        {"{\"x\":{\"y\":[\"\xff\"]}}", "x is not valid UTF-8"},
        {"{\"\xff\":1}", "a field name is not valid UTF-8"},
        {"{\"o\":{\"\xff\":1}}", "a field name in o is not valid UTF-8"},
        /* row 12 */
        {"{\"max_tokens\":1,\"max_tokens\":2}", "duplicate key \"max_tokens\""},
        {"{\"prompt\":\"a\",\"\\u0070rompt\":\"b\"}", "duplicate key \"prompt\""},
        {"{\"o\":{\"k\":1,\"j\":2,\"k\":3}}", "duplicate key \"k\""},
        {"{\"o\":[{\"k\":1},{\"k\":1,\"k\":2}]}", "duplicate key \"k\""},
        /* numbers cJSON would truncate */
        {"{\"a\":1234567890123456789012345678901234567890123456789012345678901234567890}",
         "number longer than 63 characters"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_str(cases[i].body, 400, cases[i].needle);
}

static void test_nul_bytes_and_nesting(void **state)
{
    (void)state;
    /* A raw NUL byte inside a string, and outside one. */
    expect_body("{\"prompt\":\"a\0b\"}", 16, 400, "NUL character not allowed");
    expect_body("{\"a\":1}\0", 8, 400, "trailing data after JSON value");
    expect_body("{\0}", 3, 400, "invalid JSON at byte 1");
    /* Row 5: 100,000 nested arrays; nesting of exactly API_MAX_DEPTH is fine, one more is not. */
    const size_t n = 100000;
    char *deep = malloc(n + 1);
    memset(deep, '[', n);
    deep[n] = '\0';
    expect_body(deep, n, 400, "nesting too deep");
    char *ok = malloc(4 * API_MAX_DEPTH + 16);
    size_t len = 0;
    for (int d = 0; d < API_MAX_DEPTH; d++)
        len += (size_t)sprintf(ok + len, "%s", d ? "[" : "{\"a\":");
    for (int d = 1; d < API_MAX_DEPTH; d++)
        ok[len++] = ']';
    ok[len++] = '}';
    ok[len] = '\0';
    expect_body(ok, len, 0, NULL);
    char *over = malloc(4 * API_MAX_DEPTH + 32);
    len = (size_t)sprintf(over, "{\"a\":");
    for (int d = 0; d < API_MAX_DEPTH; d++)
        over[len++] = '[';
    over[len] = '\0';
    expect_body(over, len, 400, "nesting too deep");
    free(deep);
    free(ok);
    free(over);
}

static void test_valid_bodies(void **state)
{
    (void)state;
    expect_str("{}", 0, NULL);
    expect_str(" \t\r\n{\"a\" : [ 1 , -0.5e+3 , true , false , null , \"\\\"\\\\\\/\\b\\f\\n\\r\\t\" ] } \n", 0, NULL);
    expect_str("\xEF\xBB\xBF{\"a\":1}", 0, NULL);                  /* byte order mark */
    expect_str("{\"a\":\"\\ud83d\\ude00 \xf0\x9f\x98\x80 \xc3\xa9\"}", 0, NULL); /* pair, 4- and 2-byte UTF-8 */
    expect_str("{\"a\":1e999}", 0, NULL); /* syntactically fine: the field check says it is not finite */
    cJSON *root = NULL;
    api_error e;
    assert_true(api_parse_body("{\"s\":\"\\ud83d\\ude00\"}", 20, &root, &e));
    assert_string_equal(cJSON_GetObjectItem(root, "s")->valuestring, "\xf0\x9f\x98\x80");
    cJSON_Delete(root);
}

/* The tree of the last parse_gen (a generation's strings point into it); done() frees both. */
static cJSON *last_root;

static void done(api_generation *g)
{
    api_generation_free(g);
    cJSON_Delete(last_root);
    last_root = NULL;
}

/* Parses a generation request that must be accepted (release with done). */
static void parse_gen(const char *body, api_kind kind, api_generation *g)
{
    cJSON *root = NULL;
    api_error e = {0};
    if (!api_parse_body(body, strlen(body), &root, &e))
        fail_msg("%s: body rejected: %s", body, e.message);
    last_root = root;
    if (!api_parse_generation(root, kind, &limits, g, &e))
        fail_msg("%s: rejected: %s", body, e.message);
}

static void expect_gen_error(const char *body, api_kind kind, int status, const char *needle, const char *param)
{
    api_generation g;
    cJSON *root = NULL;
    api_error e = {0};
    assert_true(api_parse_body(body, strlen(body), &root, &e));
    const bool ok = api_parse_generation(root, kind, &limits, &g, &e);
    cJSON_Delete(root);
    if (ok)
        fail_msg("%s: accepted, want \"%s\"", body, needle);
    if (e.status != status || strcmp(e.message, needle) || (param && strcmp(e.param, param)))
        fail_msg("%s: %d \"%s\" (param %s), want %d \"%s\" (param %s)", body, e.status, e.message, e.param, status,
                 needle, param ? param : "-");
}

static void test_generation_fields(void **state)
{
    (void)state;
    static const struct {
        const char *body, *message, *param;
    } cases[] = {
        /* row 13, 14 */
        {"{}", "prompt is required and must be a string or an array of token ids", "prompt"},
        {"{\"prompt\":null}", "prompt is required and must be a string or an array of token ids", "prompt"},
        {"{\"prompt\":5}", "prompt is required and must be a string or an array of token ids", "prompt"},
        {"{\"prompt\":{}}", "prompt is required and must be a string or an array of token ids", "prompt"},
        {"{\"prompt\":[1,\"a\"]}", "prompt is required and must be a string or an array of token ids", "prompt"},
        {"{\"prompt\":[\"a\"]}", "prompt is required and must be a string or an array of token ids", "prompt"},
        {"{\"prompt\":\"\"}", "prompt cannot be empty", "prompt"},
        {"{\"prompt\":[]}", "prompt cannot be empty", "prompt"},
        /* row 26 */
        {"{\"prompt\":[1,2048]}", "Token id 2048 is out of vocabulary (2048)", "prompt"},
        {"{\"prompt\":[-1]}", "Token id -1 is out of vocabulary (2048)", "prompt"},
        {"{\"prompt\":[1e30]}", "Token id 1e+30 is out of vocabulary (2048)", "prompt"},
        {"{\"prompt\":[1,2.5]}", "prompt[1] must be an integer token id", "prompt"},
        {"{\"prompt\":[1e999]}", "prompt[0] must be an integer token id", "prompt"},
        /* rows 17-19, 27 */
        {"{\"prompt\":\"a\",\"max_tokens\":0}", "max_tokens must be at least 1, got 0", "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":-1}", "max_tokens must be at least 1, got -1", "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":-1e999}", "max_tokens must be at least 1, got -inf", "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":2.5}", "max_tokens must be an integer", "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":\"10\"}", "max_tokens must be an integer", "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":true}", "max_tokens must be an integer", "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":1e30}", "max_tokens must be <= 2048 (the context length), got 1e+30",
         "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":1e999}", "max_tokens must be <= 2048 (the context length), got inf",
         "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":4294967297}", "max_tokens must be <= 2048 (the context length), got 4.29497e+09",
         "max_tokens"},
        /* rows 20-22 */
        {"{\"prompt\":\"a\",\"temperature\":1e999}", "temperature must be a finite number", "temperature"},
        {"{\"prompt\":\"a\",\"temperature\":-0.5}", "temperature must be in [0, 2], got -0.5", "temperature"},
        {"{\"prompt\":\"a\",\"temperature\":1e6}", "temperature must be in [0, 2], got 1e+06", "temperature"},
        {"{\"prompt\":\"a\",\"temperature\":1e300}", "temperature must be in [0, 2], got 1e+300", "temperature"},
        {"{\"prompt\":\"a\",\"temperature\":\"hot\"}", "temperature must be a number", "temperature"},
        {"{\"prompt\":\"a\",\"top_p\":2}", "top_p must be in (0, 1], got 2", "top_p"},
        {"{\"prompt\":\"a\",\"top_p\":0}", "top_p must be in (0, 1], got 0", "top_p"},
        {"{\"prompt\":\"a\",\"top_p\":-1}", "top_p must be in (0, 1], got -1", "top_p"},
        {"{\"prompt\":\"a\",\"min_p\":-0.1}", "min_p must be in [0, 1], got -0.1", "min_p"},
        {"{\"prompt\":\"a\",\"repetition_penalty\":0}", "repetition_penalty must be in (0, 2], got 0",
         "repetition_penalty"},
        {"{\"prompt\":\"a\",\"presence_penalty\":2.5}", "presence_penalty must be in [-2, 2], got 2.5",
         "presence_penalty"},
        {"{\"prompt\":\"a\",\"frequency_penalty\":-3}", "frequency_penalty must be in [-2, 2], got -3",
         "frequency_penalty"},
        {"{\"prompt\":\"a\",\"top_k\":-5}", "top_k must be -1 or 0 (off) or at least 1, got -5", "top_k"},
        {"{\"prompt\":\"a\",\"top_k\":1.5}", "top_k must be an integer", "top_k"},
        /* rows 23-25 */
        {"{\"prompt\":\"a\",\"stop\":[\"\"]}", "stop cannot contain an empty string", "stop"},
        {"{\"prompt\":\"a\",\"stop\":\"\"}", "stop cannot contain an empty string", "stop"},
        {"{\"prompt\":\"a\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "at most 4 stop sequences of <= 256 bytes (got 5)",
         "stop"},
        {"{\"prompt\":\"a\",\"stop\":5}", "stop must be a string or an array of strings", "stop"},
        {"{\"prompt\":\"a\",\"stop\":[\"a\",null]}", "stop must be a string or an array of strings", "stop"},
        {"{\"prompt\":\"a\",\"logprobs\":-1}", "logprobs must be in [0, 20], got -1", "logprobs"},
        {"{\"prompt\":\"a\",\"logprobs\":1000000}", "logprobs must be in [0, 20], got 1e+06", "logprobs"},
        {"{\"prompt\":\"a\",\"logprobs\":21}", "logprobs must be in [0, 20], got 21", "logprobs"},
        /* row 28 */
        {"{\"prompt\":\"a\",\"stream\":\"yes\"}", "stream must be a boolean (true or false)", "stream"},
        {"{\"prompt\":\"a\",\"stream\":1}", "stream must be a boolean (true or false)", "stream"},
        {"{\"prompt\":\"a\",\"ignore_eos\":\"true\"}", "ignore_eos must be a boolean (true or false)", "ignore_eos"},
        {"{\"prompt\":\"a\",\"seed\":1.5}", "seed must be an integer", "seed"},
        {"{\"prompt\":\"a\",\"seed\":-1}", "seed must be in [0, 9007199254740991], got -1", "seed"},
        {"{\"prompt\":\"a\",\"seed\":18446744073709551616}", "seed must be in [0, 9007199254740991], got 1.84467e+19",
         "seed"},
        {"{\"prompt\":\"a\",\"seed\":9007199254740992}", "seed must be in [0, 9007199254740991], got 9.0072e+15", "seed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_gen_error(cases[i].body, API_GENERATE, 400, cases[i].message, cases[i].param);
    /* A long stop string. */
    char body[400];
    snprintf(body, sizeof body, "{\"prompt\":\"a\",\"stop\":\"%0257d\"}", 0);
    expect_gen_error(body, API_GENERATE, 400, "at most 4 stop sequences of <= 256 bytes (got 1, one longer)", "stop");
}

static void test_completion_fields(void **state)
{
    (void)state;
    static const struct {
        const char *body, *message;
        int status;
    } cases[] = {
        {"{\"prompt\":\"a\",\"n\":2}", "n must be 1 (one completion per request), got 2", 400},
        {"{\"prompt\":\"a\",\"n\":0}", "n must be 1 (one completion per request), got 0", 400},
        {"{\"prompt\":\"a\",\"best_of\":2}", "best_of must be 1 (one completion per request), got 2", 400},
        {"{\"prompt\":\"a\",\"echo\":true}", "echo is not supported", 400},
        {"{\"prompt\":\"a\",\"suffix\":\"x\"}", "suffix is not supported", 400},
        {"{\"prompt\":\"a\",\"logit_bias\":{\"5\":1}}", "logit_bias is not supported", 400},
        {"{\"prompt\":\"a\",\"stream_options\":{\"include_usage\":true}}",
         "stream_options is only allowed when stream is true", 400},
        {"{\"prompt\":\"a\",\"stream\":true,\"stream_options\":{\"include_usage\":1}}",
         "stream_options.include_usage must be a boolean (true or false)", 400},
        {"{\"prompt\":\"a\",\"stream\":true,\"stream_options\":[]}", "stream_options must be an object", 400},
        {"{\"prompt\":[\"a\",\"b\"]}", "prompt must be one prompt: lists of 2 prompts are not supported", 400},
        {"{\"prompt\":[[1],[2]]}", "prompt must be one prompt: lists of 2 prompts are not supported", 400},
        {"{\"prompt\":[\"\"]}", "prompt cannot be empty", 400},
        {"{\"prompt\":[[]]}", "prompt cannot be empty", 400},
        {"{\"prompt\":\"a\",\"model\":\"gpt-4\"}",
         "The model \"gpt-4\" does not exist; this server serves \"demo-model\"", 404},
        {"{\"prompt\":\"a\",\"model\":7}", "model must be a string", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_gen_error(cases[i].body, API_COMPLETIONS, cases[i].status, cases[i].message, NULL);
}

static void test_generation_values(void **state)
{
    (void)state;
    api_generation g;
    /* Defaults: /generate greedy with 128 tokens; OpenAI's temperature 1 and 16 tokens. */
    parse_gen("{\"prompt\":\"hi\"}", API_GENERATE, &g);
    assert_int_equal(g.params.max_tokens, 128);
    assert_true(g.params.sampling.temperature == 0.0f);
    assert_int_equal(g.params.sampling.logprobs, -1);
    assert_false(g.max_tokens_given || g.seed_given || g.stream);
    assert_string_equal(g.prompt_text, "hi");
    done(&g);
    parse_gen("{\"prompt\":\"hi\",\"temperature\":null,\"max_tokens\":null,\"stop\":null}", API_COMPLETIONS, &g);
    assert_int_equal(g.params.max_tokens, 16);
    assert_true(g.params.sampling.temperature == 1.0f);
    done(&g);
    /* Every field. */
    parse_gen("{\"prompt\":[0,826,27],\"max_tokens\":7,\"temperature\":0.5,\"top_p\":0.9,\"top_k\":40,\"min_p\":0.05,"
              "\"repetition_penalty\":1.1,\"presence_penalty\":-0.5,\"frequency_penalty\":0.5,\"seed\":9007199254740991,"
              "\"stop\":[\"x\",\"yy\"],\"ignore_eos\":true,\"logprobs\":20,\"stream\":true,\"unknown\":{\"a\":1}}",
              API_GENERATE, &g);
    assert_int_equal(g.n_prompt_ids, 3);
    assert_int_equal(g.prompt_ids[1], 826);
    assert_int_equal(g.params.max_tokens, 7);
    assert_true(g.max_tokens_given && g.seed_given && g.stream && g.params.ignore_eos);
    assert_true(fabsf(g.params.sampling.top_p - 0.9f) < 1e-6f);
    assert_int_equal(g.params.sampling.top_k, 40);
    assert_true(g.params.sampling.seed == 9007199254740991ull);
    assert_int_equal(g.params.sampling.logprobs, 20);
    assert_int_equal(g.params.n_stop, 2);
    assert_string_equal(g.stop[1], "yy");
    done(&g);
    /* top_k: -1 and 0 are off, above the vocabulary means all of it (row 22). */
    parse_gen("{\"prompt\":\"a\",\"top_k\":-1}", API_GENERATE, &g);
    assert_int_equal(g.params.sampling.top_k, 0);
    done(&g);
    parse_gen("{\"prompt\":\"a\",\"top_k\":1e9}", API_GENERATE, &g);
    assert_int_equal(g.params.sampling.top_k, 2048);
    done(&g);
    /* One stop string; OpenAI prompt forms; model, n, best_of, echo, suffix, logit_bias at their neutral values. */
    parse_gen("{\"prompt\":\"a\",\"stop\":\"\\n\"}", API_GENERATE, &g);
    assert_int_equal(g.params.n_stop, 1);
    assert_string_equal(g.stop[0], "\n");
    done(&g);
    parse_gen("{\"prompt\":[\"text\"],\"model\":\"demo-model\",\"n\":1,\"best_of\":1,\"echo\":false,\"suffix\":null,"
              "\"logit_bias\":{},\"user\":\"u\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
              API_COMPLETIONS, &g);
    assert_string_equal(g.prompt_text, "text");
    assert_true(g.include_usage);
    done(&g);
    parse_gen("{\"prompt\":[[5,6]]}", API_COMPLETIONS, &g);
    assert_int_equal(g.n_prompt_ids, 2);
    done(&g);
}

static void test_prompt_lengths(void **state)
{
    (void)state;
    api_generation g;
    api_error e;
    /* The default max_tokens shrinks to the room left; a given one does not. */
    parse_gen("{\"prompt\":\"a\"}", API_GENERATE, &g);
    assert_true(api_check_prompt(&g, 2000, &limits, &e));
    assert_int_equal(g.params.max_tokens, 48);
    assert_true(api_check_prompt(&g, 10, &limits, &e));
    done(&g);
    parse_gen("{\"prompt\":\"a\"}", API_GENERATE, &g);
    assert_false(api_check_prompt(&g, 2048, &limits, &e));
    assert_string_equal(e.message, "requested 2048 + 128 tokens exceeds context length 2048");
    assert_false(api_check_prompt(&g, 2049, &limits, &e));
    assert_string_equal(e.message, "prompt has 2049 tokens; maximum context length is 2048");
    assert_string_equal(e.param, "prompt");
    done(&g);
    parse_gen("{\"prompt\":\"a\",\"max_tokens\":100}", API_GENERATE, &g);
    assert_false(api_check_prompt(&g, 2000, &limits, &e));
    assert_string_equal(e.message, "requested 2000 + 100 tokens exceeds context length 2048");
    assert_string_equal(e.param, "max_tokens");
    assert_int_equal(e.status, 400);
    done(&g);
}

static void test_tokenize_fields(void **state)
{
    (void)state;
    cJSON *root;
    api_error e;
    const char *text;
    size_t len;
    bool special;
    int32_t *ids;
    int n;
    assert_true(api_parse_body("{\"prompt\":\"ab\",\"add_special_tokens\":false}", 42, &root, &e));
    assert_true(api_parse_tokenize(root, &text, &len, &special, &e));
    assert_false(special);
    assert_int_equal(len, 2);
    cJSON_Delete(root);
    assert_true(api_parse_body("{\"prompt\":[1]}", 14, &root, &e));
    assert_false(api_parse_tokenize(root, &text, &len, &special, &e));
    assert_string_equal(e.message, "prompt is required and must be a string");
    cJSON_Delete(root);
    assert_true(api_parse_body("{\"tokens\":[0,2047]}", 19, &root, &e));
    assert_true(api_parse_detokenize(root, &limits, &ids, &n, &e));
    assert_int_equal(n, 2);
    assert_int_equal(ids[1], 2047);
    free(ids);
    cJSON_Delete(root);
    assert_true(api_parse_body("{\"tokens\":\"1,2\"}", 16, &root, &e));
    assert_false(api_parse_detokenize(root, &limits, &ids, &n, &e));
    assert_string_equal(e.message, "tokens is required and must be an array of token ids");
    cJSON_Delete(root);
}

/* ---- bodies ---- */

/* An output of three tokens " I", " will", "" (an EOS), with logprobs and two alternatives each. */
static void fake_output(queue_output *o, queue_result *res)
{
    static const int32_t ids[3] = {297, 393, 1};
    static const char *const texts[3] = {" I", " will", ""};
    static char text[32];
    static queue_event events[3];
    static fk_logprob top[6];
    size_t off = 0;
    for (int i = 0; i < 3; i++) {
        events[i] = (queue_event){.token = ids[i], .logprob = -0.5f * (float)(i + 1), .n_top = 2,
                                  .text_off = off, .text_len = strlen(texts[i]), .top_off = (size_t)(2 * i)};
        memcpy(text + off, texts[i], strlen(texts[i]));
        off += strlen(texts[i]);
        top[2 * i] = (fk_logprob){ids[i], events[i].logprob};
        top[2 * i + 1] = (fk_logprob){7, -3};
    }
    text[off] = '\0';
    *o = (queue_output){.events = events, .n_events = 3, .text = text, .text_len = off, .top = top, .n_top = 6};
    *res = (queue_result){.phase = QUEUE_FINISHED, .finish = FK_FINISH_EOS, .prompt_tokens = 3,
                          .completion_tokens = 3, .cached_tokens = 1, .queue_s = 0.001, .prefill_s = 0.002,
                          .decode_s = 0.004, .ttft_s = 0.0031};
}

static cJSON *parsed(char *s)
{
    cJSON *root = cJSON_Parse(s);
    assert_non_null(root);
    free(s);
    return root;
}

static void test_result_bodies(void **state)
{
    (void)state;
    queue_output o;
    queue_result res;
    fake_output(&o, &res);
    size_t len;
    api_render rd = {.kind = API_GENERATE, .id = "gen-7", .model_name = "m", .created = 1700000000, .logprobs = 1};
    cJSON *g = parsed(api_result_body(&rd, &o, &res, &len));
    assert_string_equal(cJSON_GetObjectItem(g, "id")->valuestring, "gen-7");
    assert_string_equal(cJSON_GetObjectItem(g, "text")->valuestring, " I will");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "tokens")), 3);
    assert_string_equal(cJSON_GetObjectItem(g, "finish_reason")->valuestring, "eos");
    cJSON *usage = cJSON_GetObjectItem(g, "usage");
    assert_int_equal(cJSON_GetObjectItem(usage, "total_tokens")->valueint, 6);
    assert_int_equal(cJSON_GetObjectItem(usage, "cached_tokens")->valueint, 1);
    cJSON *t = cJSON_GetObjectItem(g, "timings");
    assert_true(cJSON_GetObjectItem(t, "ttft_ms")->valuedouble == 3.1);
    assert_true(cJSON_GetObjectItem(t, "queue_ms")->valuedouble == 1);
    assert_true(cJSON_GetObjectItem(t, "tokens_per_s")->valuedouble == 500); /* (3 - 1) / 4 ms */
    cJSON *lp = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "logprobs"), 1);
    assert_int_equal(cJSON_GetObjectItem(lp, "token")->valueint, 393);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(lp, "top_logprobs")), 2);
    cJSON_Delete(g);

    rd.kind = API_COMPLETIONS;
    strcpy(rd.id, "cmpl-7");
    cJSON *c = parsed(api_result_body(&rd, &o, &res, &len));
    assert_string_equal(cJSON_GetObjectItem(c, "object")->valuestring, "text_completion");
    assert_int_equal(cJSON_GetObjectItem(c, "created")->valueint, 1700000000);
    cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "choices"), 0);
    assert_string_equal(cJSON_GetObjectItem(choice, "text")->valuestring, " I will");
    assert_string_equal(cJSON_GetObjectItem(choice, "finish_reason")->valuestring, "stop"); /* eos */
    cJSON *offsets = cJSON_GetObjectItem(cJSON_GetObjectItem(choice, "logprobs"), "text_offset");
    assert_int_equal(cJSON_GetArrayItem(offsets, 1)->valueint, 2);
    assert_int_equal(cJSON_GetArrayItem(offsets, 2)->valueint, 7);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "usage"), "cached_tokens"));
    cJSON_Delete(c);

    api_error e;
    api_error_set(&e, 429, "rate_limit_error", NULL, "server overloaded, retry later");
    cJSON *err = parsed(api_error_body(&e, &len));
    cJSON *inner = cJSON_GetObjectItem(err, "error");
    assert_string_equal(cJSON_GetObjectItem(inner, "message")->valuestring, "server overloaded, retry later");
    assert_string_equal(cJSON_GetObjectItem(inner, "type")->valuestring, "rate_limit_error");
    assert_int_equal(cJSON_GetObjectItem(inner, "code")->valueint, 429);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(inner, "param")));
    cJSON_Delete(err);
    assert_string_equal(api_finish_name(API_GENERATE, FK_FINISH_CANCEL), "abort");
    assert_string_equal(api_finish_name(API_COMPLETIONS, FK_FINISH_STOP), "stop");
    api_engine_error(FK_ERR_INVALID_ARGUMENT, "bad", &e);
    assert_int_equal(e.status, 400);
    api_engine_error(FK_ERR_DEVICE, "dead", &e);
    assert_int_equal(e.status, 503);
}

/* The "data: " payloads of an SSE buffer, in order (the last one may be "[DONE]"). */
static int sse_payloads(const api_buf *b, char out[][2048], int max)
{
    int n = 0;
    const char *p = b->s;
    while (p && *p && n < max) {
        assert_memory_equal(p, "data: ", 6);
        const char *end = strstr(p, "\n\n");
        assert_non_null(end);
        snprintf(out[n++], 2048, "%.*s", (int)(end - p - 6), p + 6);
        p = end + 2;
    }
    return n;
}

static void test_sse_bodies(void **state)
{
    (void)state;
    queue_output o;
    queue_result res;
    fake_output(&o, &res);
    char ev[8][2048];
    api_render rd = {.kind = API_GENERATE, .id = "gen-1", .model_name = "m", .logprobs = -1};
    api_buf b = {0};
    api_sse_events(&rd, &o, &b);
    api_sse_final(&rd, &res, &b);
    int n = sse_payloads(&b, ev, 8);
    assert_int_equal(n, 5);
    cJSON *first = cJSON_Parse(ev[0]);
    assert_string_equal(cJSON_GetObjectItem(first, "text")->valuestring, " I");
    assert_int_equal(cJSON_GetObjectItem(first, "token")->valueint, 297);
    assert_null(cJSON_GetObjectItem(first, "logprob"));
    cJSON_Delete(first);
    cJSON *last = cJSON_Parse(ev[3]);
    assert_string_equal(cJSON_GetObjectItem(last, "finish_reason")->valuestring, "eos");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(last, "usage"), "completion_tokens")->valueint, 3);
    assert_non_null(cJSON_GetObjectItem(last, "timings"));
    cJSON_Delete(last);
    assert_string_equal(ev[4], "[DONE]");
    api_buf_free(&b);

    rd = (api_render){.kind = API_COMPLETIONS, .id = "cmpl-1", .model_name = "m", .logprobs = -1,
                      .include_usage = true};
    api_sse_events(&rd, &o, &b);
    api_sse_final(&rd, &res, &b);
    n = sse_payloads(&b, ev, 8);
    assert_int_equal(n, 6); /* 3 tokens, the finish chunk, the usage chunk, [DONE] */
    for (int i = 0; i < 4; i++) {
        cJSON *c = cJSON_Parse(ev[i]);
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "usage")));
        cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "choices"), 0);
        assert_int_equal(cJSON_IsNull(cJSON_GetObjectItem(choice, "finish_reason")), i < 3);
        cJSON_Delete(c);
    }
    cJSON *u = cJSON_Parse(ev[4]);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(u, "choices")), 0);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(u, "usage"), "total_tokens")->valueint, 6);
    cJSON_Delete(u);
    assert_string_equal(ev[5], "[DONE]");
    api_buf_free(&b);

    api_error e;
    api_error_set(&e, 503, "server_error", NULL, "the engine failed");
    api_sse_error(&e, &b);
    n = sse_payloads(&b, ev, 8);
    assert_int_equal(n, 2);
    assert_non_null(strstr(ev[0], "\"message\":\"the engine failed\""));
    assert_string_equal(ev[1], "[DONE]");
    api_buf_free(&b);
}

/* Generated text may hold U+0000 (byte-level vocabularies have a token for byte 0): whole bodies and stream events
 * carry it as \u0000 with what follows, JSON-escaped as RFC 8259 says (a cJSON string would end at the NUL). */
static void test_nul_in_generated_text(void **state)
{
    (void)state;
    static const char text[] = " a\0b\"\\\n\x01";
    queue_event events[2] = {{.token = 5, .text_off = 0, .text_len = 3}, {.token = 6, .text_off = 3, .text_len = 5}};
    queue_output o = {.events = events, .n_events = 2, .text = (char *)text, .text_len = sizeof text - 1};
    queue_result res = {.phase = QUEUE_FINISHED, .finish = FK_FINISH_LENGTH, .prompt_tokens = 1,
                        .completion_tokens = 2};
    const char *want = "\" a\\u0000b\\\"\\\\\\n\\u0001\"";
    const api_kind kinds[] = {API_GENERATE, API_COMPLETIONS, API_CHAT};
    for (int k = 0; k < 3; k++) {
        api_render rd = {.kind = kinds[k], .id = "x-1", .model_name = "m", .logprobs = -1};
        size_t len;
        char *body = api_result_body(&rd, &o, &res, &len);
        if (!strstr(body, want))
            fail_msg("no %s in %s", want, body);
        cJSON *root = cJSON_Parse(body);
        assert_non_null(root);
        cJSON_Delete(root);
        free(body);
    }
    api_render rd = {.kind = API_GENERATE, .id = "gen-1", .model_name = "m", .logprobs = -1};
    api_buf b = {0};
    api_sse_events(&rd, &o, &b);
    char ev[4][2048];
    assert_int_equal(sse_payloads(&b, ev, 4), 2);
    assert_string_equal(ev[0], "{\"text\":\" a\\u0000\",\"token\":5}");
    assert_string_equal(ev[1], "{\"text\":\"b\\\"\\\\\\n\\u0001\",\"token\":6}");
    api_buf_free(&b);
}

/* n random bytes (1..255: the oracle's cJSON strings end at a NUL, which test_nul_in_generated_text covers), quotes,
 * backslashes and control characters among them. */
static void random_bytes(uint64_t *rng, char *s, size_t n)
{
    static const char special[] = "\"\\\n\r\t\b\f\x01\x1f\x7f/";
    for (size_t i = 0; i < n; i++)
        s[i] = tu_below(rng, 4) == 0 ? special[tu_below(rng, sizeof special - 1)] : (char)(1 + tu_below(rng, 255));
    s[n] = '\0';
}

/* What the stream events of a family without logprobs must print, built as a cJSON tree and printed by cJSON (the
 * oracle: the events were cJSON trees before they were written directly). */
static char *oracle_event(const api_render *rd, const char *text, int32_t token)
{
    cJSON *root = cJSON_CreateObject();
    if (rd->kind == API_GENERATE) {
        cJSON_AddStringToObject(root, "text", text);
        if (token >= 0)
            cJSON_AddNumberToObject(root, "token", token);
    } else {
        cJSON_AddStringToObject(root, "id", rd->id);
        cJSON_AddStringToObject(root, "object", rd->kind == API_CHAT ? "chat.completion.chunk" : "text_completion");
        cJSON_AddNumberToObject(root, "created", (double)rd->created);
        cJSON_AddStringToObject(root, "model", rd->model_name);
        cJSON *choice = cJSON_CreateObject();
        cJSON_AddNumberToObject(choice, "index", 0);
        if (rd->kind == API_CHAT)
            cJSON_AddStringToObject(cJSON_AddObjectToObject(choice, "delta"), "content", text);
        else
            cJSON_AddStringToObject(choice, "text", text);
        cJSON_AddNullToObject(choice, "logprobs");
        cJSON_AddNullToObject(choice, "finish_reason");
        cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
        if (rd->include_usage)
            cJSON_AddNullToObject(root, "usage");
    }
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

/* The per-token events, written without cJSON trees, are byte for byte what cJSON prints for the same objects, for
 * random texts (every byte value but NUL, long ones across the writer's 256-byte pieces), ids and model names with
 * characters to escape, creation times up to 2^40, with and without include_usage; every family. */
static void test_sse_events_match_cjson(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static char text[4096], ev[4][2048 * 4];
    char model[24];
    const api_kind kinds[] = {API_GENERATE, API_COMPLETIONS, API_CHAT};
    for (int round = 0; round < 300; round++) {
        api_render rd = {.kind = kinds[round % 3], .logprobs = -1, .include_usage = tu_below(&rng, 2),
                         .created = (long long)tu_below(&rng, 1u << 31) << (round % 2 ? 9 : 0),
                         .role_sent = true};
        random_bytes(&rng, rd.id, 1 + tu_below(&rng, sizeof rd.id - 2));
        random_bytes(&rng, model, 1 + tu_below(&rng, sizeof model - 2));
        rd.model_name = model;
        const size_t a = tu_below(&rng, round % 10 ? 40 : 1500), b = tu_below(&rng, 40);
        random_bytes(&rng, text, a + b);
        queue_event events[2] = {{.token = (int32_t)tu_below(&rng, 200000) - 1, .text_off = 0, .text_len = a},
                                 {.token = 7, .text_off = a, .text_len = b}};
        queue_output o = {.events = events, .n_events = 2, .text = text, .text_len = a + b};
        api_buf buf = {0};
        api_sse_events(&rd, &o, &buf);
        char(*got)[2048 * 4] = ev;
        int n = 0;
        for (const char *p = buf.s; p && *p && n < 4; n++) {
            assert_memory_equal(p, "data: ", 6);
            const char *end = strstr(p, "\n\n");
            assert_non_null(end);
            snprintf(got[n], sizeof got[n], "%.*s", (int)(end - p - 6), p + 6);
            p = end + 2;
        }
        assert_int_equal(n, 2);
        for (int i = 0; i < 2; i++) {
            char part[2048];
            snprintf(part, sizeof part, "%.*s", (int)events[i].text_len, text + events[i].text_off);
            char *want = oracle_event(&rd, part, events[i].token);
            if (strcmp(got[i], want))
                fail_msg("kind %d event %d:\n got %s\nwant %s", (int)rd.kind, i, got[i], want);
            free(want);
        }
        api_buf_free(&buf);
    }
}

static void test_error_messages_stay_utf8(void **state)
{
    (void)state;
    /* A long duplicate key of multi-byte characters is clipped at a character boundary. */
    char body[2048] = "{\"";
    size_t n = 2;
    for (int i = 0; i < 150; i++)
        n += (size_t)sprintf(body + n, "\xc3\xa9");
    memcpy(body + n, "\":1,\"", 5);
    n += 5;
    memcpy(body + n, body + 2, 300);
    n += 300;
    memcpy(body + n, "\":2}", 5);
    n += 4;
    cJSON *root;
    api_error e;
    assert_false(api_parse_body(body, n, &root, &e));
    assert_non_null(strstr(e.message, "duplicate key"));
    for (const char *s = e.param; *s; s++) /* the param is cut at 63 bytes: a whole number of 2-byte characters */
        assert_true((unsigned char)*s >= 0x80);
    assert_int_equal(strlen(e.param) % 2, 0);

    /* A duplicate key that is not UTF-8 at all (the UTF-8 check of keys comes after the duplicate check): each invalid
     * byte is named as U+FFFD, in the message and the param (found by fuzz_api_*: raw bytes went into the body). */
    static const char dup[] = "{\"a\xff\xfe\":1,\"a\xff\xfe\":2}";
    assert_false(api_parse_body(dup, sizeof dup - 1, &root, &e));
    assert_string_equal(e.message, "duplicate key \"a\xef\xbf\xbd\xef\xbf\xbd\"");
    assert_string_equal(e.param, "a\xef\xbf\xbd\xef\xbf\xbd");

    /* Whatever a message echoes (a path, a header) comes out valid UTF-8; a character cut by the size is dropped. */
    api_error_set(&e, 404, "not_found_error", "p\xc3", "no route for GET /x\xff\xe9y");
    assert_string_equal(e.message, "no route for GET /x\xef\xbf\xbd\xef\xbf\xbdy");
    assert_string_equal(e.param, "p");
    char long_message[1000];
    memset(long_message, 'a', sizeof long_message);
    memcpy(long_message + sizeof e.message - 2, "\xe2\x82\xac", 3); /* a euro sign across the end */
    long_message[sizeof long_message - 1] = '\0';
    api_error_set(&e, 400, "invalid_request_error", NULL, "%s", long_message);
    assert_int_equal(strlen(e.message), sizeof e.message - 2);
    assert_true(utf8_check(e.message, strlen(e.message)) == strlen(e.message));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_bodies),  cmocka_unit_test(test_nul_bytes_and_nesting),
        cmocka_unit_test(test_valid_bodies),      cmocka_unit_test(test_generation_fields),
        cmocka_unit_test(test_completion_fields), cmocka_unit_test(test_generation_values),
        cmocka_unit_test(test_prompt_lengths),    cmocka_unit_test(test_tokenize_fields),
        cmocka_unit_test(test_result_bodies),     cmocka_unit_test(test_sse_bodies),
        cmocka_unit_test(test_error_messages_stay_utf8), cmocka_unit_test(test_nul_in_generated_text),
        cmocka_unit_test(test_sse_events_match_cjson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
