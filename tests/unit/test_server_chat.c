/* test_server_chat.c — the JSON of POST /v1/chat/completions (server/api_parse_chat.c, api_render_chat.c): the
 * messages as the template gets them, every field's types and ranges, the fields refused as unsupported, the
 * context check's counts; the chat.completion object and the chunk stream (role first, deltas that concatenate to
 * the text, finish reason, usage) parsed back, on outputs of random tokens of the demo model's tokenizer. */
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

static const api_limits limits = {.vocab_size = 2048, .max_model_len = 2048, .model_name = "demo-model"};

/* The tree of the last parse (a generation's strings point into it); done() frees both. */
static cJSON *last_root;

static void done(api_generation *g)
{
    api_generation_free(g);
    cJSON_Delete(last_root);
    last_root = NULL;
}

/* Parses a chat request that must be accepted (release with done). */
static void parse_chat(const char *body, api_generation *g)
{
    api_error e = {0};
    if (!api_parse_body(body, strlen(body), &last_root, &e))
        fail_msg("%s: body rejected: %s", body, e.message);
    if (!api_parse_generation(last_root, API_CHAT, &limits, g, &e))
        fail_msg("%s: rejected: %s", body, e.message);
}

/* A request that must be refused with `status`, the exact message and param (NULL: not checked). */
static void expect_chat_error(const char *body, int status, const char *message, const char *param)
{
    api_generation g;
    cJSON *root = NULL;
    api_error e = {0};
    bool ok = api_parse_body(body, strlen(body), &root, &e);
    if (ok) {
        ok = api_parse_generation(root, API_CHAT, &limits, &g, &e);
        if (ok)
            api_generation_free(&g);
    }
    cJSON_Delete(root);
    if (ok)
        fail_msg("%s: accepted, want \"%s\"", body, message);
    if (e.status != status || strcmp(e.message, message) || (param && strcmp(e.param, param)))
        fail_msg("%s: %d \"%s\" (param %s), want %d \"%s\" (param %s)", body, e.status, e.message, e.param, status,
                 message, param ? param : "-");
}

static void test_messages(void **state)
{
    (void)state;
    api_generation g;
    parse_chat("{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
               "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}],"
               "\"name\":\"ann\",\"extra\":1},"
               "{\"role\":\"assistant\",\"content\":\"\\\"{{ x }}\\\" \\u00e9\",\"tool_calls\":[]},"
               "{\"role\":\"user\",\"content\":[]}]}",
               &g);
    /* What the template gets: role, content as one string (parts joined with "\n"), name; nothing else. */
    assert_string_equal(g.messages, "[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                                    "{\"role\":\"user\",\"content\":\"a\\nb\",\"name\":\"ann\"},"
                                    "{\"role\":\"assistant\",\"content\":\"\\\"{{ x }}\\\" \xc3\xa9\"},"
                                    "{\"role\":\"user\",\"content\":\"\"}]");
    assert_int_equal(g.messages_len, strlen(g.messages));
    assert_null(g.prompt_text);
    assert_null(g.prompt_ids);
    done(&g);
}

static void test_defaults_and_fields(void **state)
{
    (void)state;
    api_generation g;
    api_error e;
    /* OpenAI's defaults: temperature 1, as many tokens as the context has room for, the generation prompt. */
    parse_chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", &g);
    assert_true(g.params.sampling.temperature == 1.0f);
    assert_int_equal(g.params.sampling.logprobs, -1);
    assert_false(g.max_tokens_given || g.seed_given || g.stream || g.include_usage);
    assert_true(g.add_generation_prompt);
    assert_true(api_check_prompt(&g, 48, &limits, &e));
    assert_int_equal(g.params.max_tokens, 2048 - 48);
    done(&g);
    /* Every field; max_completion_tokens wins over the deprecated max_tokens. */
    parse_chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"model\":\"demo-model\",\"max_tokens\":9,"
               "\"max_completion_tokens\":7,\"temperature\":0,\"top_p\":0.5,\"n\":1,\"stop\":[\"x\",\"y\"],\"seed\":42,"
               "\"presence_penalty\":0.5,\"frequency_penalty\":-0.5,\"logprobs\":true,\"top_logprobs\":3,"
               "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"user\":\"u\",\"top_k\":5,"
               "\"ignore_eos\":true,\"add_generation_prompt\":false,\"tools\":[],\"tool_choice\":\"none\","
               "\"response_format\":{\"type\":\"text\"},\"logit_bias\":{},\"parallel_tool_calls\":false,"
               "\"modalities\":[\"text\"],\"echo\":false,\"store\":false,\"metadata\":{\"k\":\"v\"}}",
               &g);
    assert_int_equal(g.params.max_tokens, 7);
    assert_true(g.max_tokens_given && g.seed_given && g.stream && g.include_usage && g.params.ignore_eos);
    assert_false(g.add_generation_prompt);
    assert_true(g.params.sampling.temperature == 0.0f);
    assert_true(fabsf(g.params.sampling.top_p - 0.5f) < 1e-6f);
    assert_true(g.params.sampling.seed == 42);
    assert_int_equal(g.params.sampling.logprobs, 3);
    assert_int_equal(g.params.sampling.top_k, 5);
    assert_int_equal(g.params.n_stop, 2);
    assert_string_equal(g.stop[1], "y");
    done(&g);
    /* logprobs alone: the chosen token's only. */
    parse_chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":true,\"top_logprobs\":null}", &g);
    assert_int_equal(g.params.sampling.logprobs, 0);
    done(&g);
    parse_chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":false}", &g);
    assert_int_equal(g.params.sampling.logprobs, -1);
    done(&g);
}

static void test_bad_requests(void **state)
{
    (void)state;
    static const struct {
        const char *body, *message, *param;
        int status;
    } cases[] = {
        /* messages missing, empty, not an array */
        {"{}", "messages is required and must be an array of messages", "messages", 400},
        {"{\"messages\":null}", "messages is required and must be an array of messages", "messages", 400},
        {"{\"messages\":\"hi\"}", "messages is required and must be an array of messages", "messages", 400},
        {"{\"messages\":{\"role\":\"user\",\"content\":\"hi\"}}",
         "messages is required and must be an array of messages",
         "messages", 400},
        {"{\"messages\":[]}", "messages cannot be empty", "messages", 400},
        {"{\"prompt\":\"hi\"}", "messages is required and must be an array of messages", "messages", 400},
        /* messages that are not messages */
        {"{\"messages\":[\"hi\"]}", "messages[0] must be an object with a role and a content", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},[]]}",
         "messages[1] must be an object with a role and a content", "messages", 400},
        /* roles */
        {"{\"messages\":[{\"content\":\"hi\"}]}", "messages[0].role is required and must be a string", "messages", 400},
        {"{\"messages\":[{\"role\":1,\"content\":\"hi\"}]}", "messages[0].role is required and must be a string",
         "messages", 400},
        {"{\"messages\":[{\"role\":\"tool\",\"content\":\"hi\"}]}",
         "messages[0].role must be \"system\", \"user\" or \"assistant\", got \"tool\"", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"User\",\"content\":\"b\"}]}",
         "messages[1].role must be \"system\", \"user\" or \"assistant\", got \"User\"", "messages", 400},
        {"{\"messages\":[{\"role\":\"\",\"content\":\"hi\"}]}",
         "messages[0].role must be \"system\", \"user\" or \"assistant\", got \"\"", "messages", 400},
        /* content of the wrong type */
        {"{\"messages\":[{\"role\":\"user\"}]}", "messages[0].content is required: a string or an array of text parts",
         "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":null}]}",
         "messages[0].content is required: a string or an array of text parts", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":5}]}",
         "messages[0].content must be a string or an array of text parts", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":{\"text\":\"hi\"}}]}",
         "messages[0].content must be a string or an array of text parts", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":true}]}",
         "messages[0].content must be a string or an array of text parts", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[\"hi\"]}]}",
         "messages[0].content[0] must be an object {\"type\": \"text\", \"text\": string}", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hi\"}]}]}",
         "messages[0].content[0] must be an object {\"type\": \"text\", \"text\": string}", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
         "{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x\"}}]}]}",
         "messages[0].content[1]: parts of type \"image_url\" are not supported (only \"text\")", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":7}]}]}",
         "messages[0].content[0].text must be a string", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"name\":3}]}", "messages[0].name must be a string",
         "messages", 400},
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c\"}]}]}",
         "messages[0].tool_calls is not supported", "messages", 400},
        /* what the strict body parser says, naming the field */
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\xff\"}]}", "messages is not valid UTF-8", "messages", 400},
        {"{\"messages\":[{\"role\":\"user\",\"role\":\"system\",\"content\":\"a\"}]}", "duplicate key \"role\"",
         "role", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000\"}]}",
         "NUL character not allowed (\\u0000 at byte 40)",
         NULL, 400},
        /* fields */
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"max_completion_tokens\":0}",
         "max_completion_tokens must be at least 1, got 0", "max_completion_tokens", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"max_completion_tokens\":1e9}",
         "max_completion_tokens must be <= 2048 (the context length), got 1e+09", "max_completion_tokens", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"max_tokens\":2.5}", "max_tokens must be an integer",
         "max_tokens", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"temperature\":3}",
         "temperature must be in [0, 2], got 3",
         "temperature", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"logprobs\":2}",
         "logprobs must be a boolean (true or false)", "logprobs", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"top_logprobs\":2}",
         "top_logprobs needs logprobs to be true", "top_logprobs", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"logprobs\":true,\"top_logprobs\":21}",
         "top_logprobs must be in [0, 20], got 21", "top_logprobs", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"logprobs\":true,\"top_logprobs\":-1}",
         "top_logprobs must be in [0, 20], got -1", "top_logprobs", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"seed\":-1}",
         "seed must be in [0, 9007199254740991], got -1", "seed", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"stop\":[\"\"]}",
         "stop cannot contain an empty string",
         "stop", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"stream\":\"yes\"}",
         "stream must be a boolean (true or false)", "stream", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"stream_options\":{\"include_usage\":true}}",
         "stream_options is only allowed when stream is true", "stream_options", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"add_generation_prompt\":1}",
         "add_generation_prompt must be a boolean (true or false)", "add_generation_prompt", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"model\":\"gpt-4o\"}",
         "The model \"gpt-4o\" does not exist; this server serves \"demo-model\"", "model", 404},
        /* unsupported: a 400 naming the field */
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"n\":2}",
         "n must be 1 (one completion per request), got 2", "n", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"tools\":[{\"type\":\"function\"}]}",
         "tools is not supported", "tools", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"tool_choice\":\"auto\"}",
         "tool_choice is not supported",
         "tool_choice", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"functions\":[{}]}", "functions is not supported",
         "functions", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"function_call\":\"auto\"}",
         "function_call is not supported", "function_call", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"response_format\":{\"type\":\"json_object\"}}",
         "response_format is not supported", "response_format", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"modalities\":[\"text\",\"audio\"]}",
         "modalities is not supported", "modalities", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"audio\":{}}", "audio is not supported", "audio", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"logit_bias\":{\"5\":1}}",
         "logit_bias is not supported",
         "logit_bias", 400},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"echo\":true}", "echo is not supported", "echo", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_chat_error(cases[i].body, cases[i].status, cases[i].message, cases[i].param);
}

/* A conversation longer than the context: 400 with both counts, naming messages; the same rule as a prompt's for
 * max_tokens. */
static void test_context_counts(void **state)
{
    (void)state;
    api_generation g;
    api_error e;
    parse_chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", &g);
    assert_false(api_check_prompt(&g, 3000, &limits, &e));
    assert_int_equal(e.status, 400);
    assert_string_equal(e.param, "messages");
    assert_string_equal(e.message,
                        "the messages have 3000 tokens once rendered with the chat template; "
                        "maximum context length is 2048");
    done(&g);
    parse_chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":100}", &g);
    assert_false(api_check_prompt(&g, 2000, &limits, &e));
    assert_string_equal(e.message, "requested 2000 + 100 tokens exceeds context length 2048");
    done(&g);
}

/* ---- responses ---- */

/* An output of n random tokens of the demo model's tokenizer, each event's text the token's own text, with
 * `top` alternatives each, ending as `finish`. */
typedef struct fake {
    queue_output o;
    queue_result res;
    queue_event events[64];
    fk_logprob top[64 * 4];
    char text[64 * 64];
} fake;

static void make_output(fake *f, const fk_tokenizer *tok, int n, int top, fk_finish_reason finish, uint64_t *rng)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        int32_t id;
        char *s = NULL;
        size_t len = 0;
        /* Tokens whose text holds a NUL byte are drawn again: a cJSON string read back ends there, so these tests
         * could not compare it (test_server_api's nul_in_generated_text checks how such text is written). */
        do {
            fk_free(s);
            id = 2 + (int32_t)tu_below(rng, 2000);
            assert_int_equal(fk_tokenizer_decode(tok, &id, 1, false, &s, &len, NULL), FK_OK);
        } while (memchr(s, 0, len));
        assert_true(off + len < sizeof f->text);
        memcpy(f->text + off, s, len);
        fk_free(s);
        f->events[i] = (queue_event){.token = id, .logprob = -tu_uniform(rng, 0, 5), .n_top = top, .text_off = off,
                                     .text_len = len, .top_off = (size_t)(i * top)};
        for (int k = 0; k < top; k++)
            f->top[i * top + k] = (fk_logprob){(int32_t)tu_below(rng, 2048), -tu_uniform(rng, 0, 9)};
        off += len;
    }
    f->text[off] = '\0';
    f->o = (queue_output){.events = f->events, .n_events = n, .text = f->text, .text_len = off, .top = f->top,
                          .n_top = (size_t)(n * top)};
    f->res = (queue_result){.phase = QUEUE_FINISHED, .finish = finish, .prompt_tokens = 11, .completion_tokens = n,
                            .cached_tokens = 4};
}

static cJSON *item(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        fail_msg("no \"%s\"", key);
    return (cJSON *)v;
}

/* A logprob entry: "token" is the token's own text, "bytes" its bytes (all of them: a byte-level token's text may be
 * a NUL byte, which a JSON string from cJSON cannot hold). */
static void expect_token_entry(const cJSON *entry, const fk_tokenizer *tok, int32_t id, float logprob)
{
    char *s = NULL;
    size_t len = 0;
    assert_int_equal(fk_tokenizer_decode(tok, &id, 1, false, &s, &len, NULL), FK_OK);
    assert_string_equal(item(entry, "token")->valuestring, s);
    assert_true(fabs(item(entry, "logprob")->valuedouble - logprob) < 1e-6);
    const cJSON *bytes = item(entry, "bytes");
    assert_int_equal(cJSON_GetArraySize(bytes), (int)len);
    for (size_t k = 0; k < len; k++)
        assert_int_equal(cJSON_GetArrayItem(bytes, (int)k)->valueint, (unsigned char)s[k]);
    fk_free(s);
}

static fk_tokenizer *demo_tokenizer(void)
{
    fk_tokenizer *tok = NULL;
    assert_int_equal(fk_tokenizer_load(tu_fixture("models/shakespeare-llama/tokenizer.json"), &tok, NULL), FK_OK);
    return tok;
}

static void test_result_body(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    fk_tokenizer *tok = demo_tokenizer();
    static fake f;
    const int n = 1 + (int)tu_below(&rng, 40);
    make_output(&f, tok, n, 2, FK_FINISH_EOS, &rng);
    api_render rd = {.kind = API_CHAT, .id = "chatcmpl-3", .model_name = "demo-model", .created = 1700000000,
                     .logprobs = -1, .tok = tok};
    size_t len = 0;
    char *body = api_result_body(&rd, &f.o, &f.res, &len);
    assert_int_equal(len, strlen(body));
    cJSON *root = cJSON_Parse(body);
    free(body);
    assert_string_equal(item(root, "id")->valuestring, "chatcmpl-3");
    assert_string_equal(item(root, "object")->valuestring, "chat.completion");
    assert_int_equal(item(root, "created")->valueint, 1700000000);
    assert_string_equal(item(root, "model")->valuestring, "demo-model");
    assert_int_equal(cJSON_GetArraySize(item(root, "choices")), 1);
    const cJSON *choice = cJSON_GetArrayItem(item(root, "choices"), 0);
    assert_int_equal(item(choice, "index")->valueint, 0);
    assert_string_equal(item(item(choice, "message"), "role")->valuestring, "assistant");
    assert_string_equal(item(item(choice, "message"), "content")->valuestring, f.text);
    assert_string_equal(item(choice, "finish_reason")->valuestring, "stop"); /* eos */
    assert_true(cJSON_IsNull(item(choice, "logprobs")));
    const cJSON *usage = item(root, "usage");
    assert_int_equal(item(usage, "prompt_tokens")->valueint, 11);
    assert_int_equal(item(usage, "completion_tokens")->valueint, n);
    assert_int_equal(item(usage, "total_tokens")->valueint, 11 + n);
    assert_null(cJSON_GetObjectItem(usage, "cached_tokens"));
    cJSON_Delete(root);

    /* logprobs: one entry per token, each with its top alternatives; finish "length". */
    f.res.finish = FK_FINISH_LENGTH;
    rd.logprobs = 2;
    root = cJSON_Parse(body = api_result_body(&rd, &f.o, &f.res, &len));
    free(body);
    choice = cJSON_GetArrayItem(item(root, "choices"), 0);
    assert_string_equal(item(choice, "finish_reason")->valuestring, "length");
    const cJSON *content = item(item(choice, "logprobs"), "content");
    assert_int_equal(cJSON_GetArraySize(content), n);
    for (int i = 0; i < n; i++) {
        const cJSON *entry = cJSON_GetArrayItem(content, i);
        expect_token_entry(entry, tok, f.events[i].token, f.events[i].logprob);
        const cJSON *top = item(entry, "top_logprobs");
        assert_int_equal(cJSON_GetArraySize(top), 2);
        for (int k = 0; k < 2; k++)
            expect_token_entry(cJSON_GetArrayItem(top, k), tok, f.top[i * 2 + k].token, f.top[i * 2 + k].logprob);
    }
    cJSON_Delete(root);
    fk_tokenizer_free(tok);
}

/* The "data: " payloads of an SSE buffer, parsed; the last one must be [DONE]. */
static int sse_chunks(const api_buf *b, cJSON **out, int max)
{
    int n = 0;
    const char *p = b->s;
    for (;;) {
        assert_memory_equal(p, "data: ", 6);
        const char *end = strstr(p, "\n\n");
        assert_non_null(end);
        if (!strncmp(p + 6, "[DONE]", 6)) {
            assert_ptr_equal(end, p + 12);
            assert_string_equal(end + 2, "");
            return n;
        }
        assert_true(n < max);
        out[n] = cJSON_ParseWithLength(p + 6, (size_t)(end - p - 6));
        assert_non_null(out[n]);
        n++;
        p = end + 2;
    }
}

static void test_stream(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    fk_tokenizer *tok = demo_tokenizer();
    static fake f;
    static cJSON *chunks[80];
    for (int usage = 0; usage < 2; usage++) {
        const int n = 1 + (int)tu_below(&rng, 40), logprobs = usage ? 1 : -1;
        make_output(&f, tok, n, 1, usage ? FK_FINISH_STOP : FK_FINISH_LENGTH, &rng);
        api_render rd = {.kind = API_CHAT, .id = "chatcmpl-9", .model_name = "demo-model", .created = 1700000001,
                         .logprobs = logprobs, .include_usage = usage, .tok = tok};
        /* The events arrive over two polls, split at random. */
        const int split = (int)tu_below(&rng, (uint32_t)n + 1);
        queue_output first = f.o, second = f.o;
        first.n_events = split;
        second.events += split;
        second.n_events = n - split;
        api_buf b = {0};
        api_sse_events(&rd, &first, &b);
        api_sse_events(&rd, &second, &b);
        api_sse_final(&rd, &f.res, &b);
        assert_false(b.failed);
        const int got = sse_chunks(&b, chunks, 80);
        assert_int_equal(got, 1 + n + 1 + usage); /* role, tokens, finish, usage */
        char text[sizeof f.text] = "";
        for (int i = 0; i < got; i++) {
            const cJSON *c = chunks[i];
            assert_string_equal(item(c, "id")->valuestring, "chatcmpl-9");
            assert_string_equal(item(c, "object")->valuestring, "chat.completion.chunk");
            assert_int_equal(item(c, "created")->valueint, 1700000001);
            assert_string_equal(item(c, "model")->valuestring, "demo-model");
            if (usage && i == got - 1) { /* the usage chunk */
                assert_int_equal(cJSON_GetArraySize(item(c, "choices")), 0);
                assert_int_equal(item(item(c, "usage"), "completion_tokens")->valueint, n);
                assert_int_equal(item(item(c, "usage"), "total_tokens")->valueint, 11 + n);
                continue;
            }
            if (usage)
                assert_true(cJSON_IsNull(item(c, "usage")));
            else
                assert_null(cJSON_GetObjectItem(c, "usage"));
            assert_int_equal(cJSON_GetArraySize(item(c, "choices")), 1);
            const cJSON *choice = cJSON_GetArrayItem(item(c, "choices"), 0), *delta = item(choice, "delta");
            const cJSON *role = cJSON_GetObjectItem(delta, "role"), *content = cJSON_GetObjectItem(delta, "content");
            assert_int_equal(role != NULL, i == 0); /* the role in the first chunk only */
            if (i == 0)
                assert_string_equal(role->valuestring, "assistant");
            if (i <= n) {
                assert_true(cJSON_IsNull(item(choice, "finish_reason")));
                strcat(text, content->valuestring);
            } else { /* the finish chunk: an empty delta */
                assert_null(delta->child);
                assert_string_equal(item(choice, "finish_reason")->valuestring, usage ? "stop" : "length");
            }
            if (i >= 1 && i <= n && logprobs >= 0) {
                const cJSON *entries = item(item(choice, "logprobs"), "content");
                assert_int_equal(cJSON_GetArraySize(entries), 1);
                expect_token_entry(entries->child, tok, f.events[i - 1].token, f.events[i - 1].logprob);
            } else {
                assert_true(cJSON_IsNull(item(choice, "logprobs")));
            }
        }
        assert_string_equal(text, f.text); /* the deltas concatenate to the text */
        for (int i = 0; i < got; i++)
            cJSON_Delete(chunks[i]);
        api_buf_free(&b);
    }
    fk_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages),        cmocka_unit_test(test_defaults_and_fields),
        cmocka_unit_test(test_bad_requests),    cmocka_unit_test(test_context_counts),
        cmocka_unit_test(test_result_body),     cmocka_unit_test(test_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
