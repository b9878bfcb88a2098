/* api_parse_chat.c — requests of POST /v1/chat/completions: the messages (roles system, user and assistant; content
 * a string or an array of text parts, joined with "\n" as vLLM does for templates that take strings), OpenAI's
 * fields and defaults (temperature 1; without max_tokens or max_completion_tokens, as many tokens as the context has
 * room for), logprobs as a boolean with top_logprobs, the extras of /v1/completions (top_k, min_p,
 * repetition_penalty, ignore_eos) and vLLM's add_generation_prompt, and a 400 naming each field this server does
 * not support (tools, response_format, ...). The messages are rebuilt for the template from what was checked: role,
 * content as a string, and name. */
#include "api_parse.h"

#include <string.h>

#include "utf8.h"

static const char *const roles[] = {"system", "user", "assistant"};

static bool no_memory(api_error *e)
{
    api_error_set(e, 500, "server_error", NULL, "out of memory");
    return false;
}

/* Message i's content for the template: a string, or the text parts joined with "\n"; NULL with *e set. */
static cJSON *message_content(const cJSON *c, int i, api_error *e)
{
    if (!c) {
        api_parse_fail(e, "messages", "messages[%d].content is required: a string or an array of text parts", i);
        return NULL;
    }
    cJSON *s = NULL;
    if (cJSON_IsString(c)) {
        if (!(s = cJSON_CreateString(c->valuestring)))
            no_memory(e);
        return s;
    }
    if (!cJSON_IsArray(c)) {
        api_parse_fail(e, "messages", "messages[%d].content must be a string or an array of text parts", i);
        return NULL;
    }
    api_buf text = {0};
    int k = 0;
    bool ok = true;
    for (const cJSON *p = c->child; ok && p; p = p->next, k++) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsObject(p) || !cJSON_IsString(type))
            ok = api_parse_fail(e, "messages",
                                "messages[%d].content[%d] must be an object {\"type\": \"text\", \"text\": string}", i,
                                k);
        else if (strcmp(type->valuestring, "text"))
            ok = api_parse_fail(e, "messages",
                                "messages[%d].content[%d]: parts of type \"%.*s\" are not supported (only \"text\")", i,
                                k, utf8_clip(type->valuestring, 100), type->valuestring);
        else if (!cJSON_IsString(t))
            ok = api_parse_fail(e, "messages", "messages[%d].content[%d].text must be a string", i, k);
        else {
            if (k)
                api_buf_append(&text, "\n", 1);
            api_buf_append(&text, t->valuestring, strlen(t->valuestring));
        }
    }
    if (ok && (text.failed || !(s = cJSON_CreateString(text.s ? text.s : ""))))
        no_memory(e);
    api_buf_free(&text);
    return s;
}

/* Checks message i and appends {"role", "content"(, "name")} to out. */
static bool message(const cJSON *msg, int i, cJSON *out, api_error *e)
{
    if (!cJSON_IsObject(msg))
        return api_parse_fail(e, "messages", "messages[%d] must be an object with a role and a content", i);
    const cJSON *role = api_parse_field(msg, "role"), *name = api_parse_field(msg, "name"),
                *calls = api_parse_field(msg, "tool_calls");
    if (!cJSON_IsString(role))
        return api_parse_fail(e, "messages", "messages[%d].role is required and must be a string", i);
    int r = 0;
    while (r < 3 && strcmp(roles[r], role->valuestring))
        r++;
    if (r == 3)
        return api_parse_fail(e, "messages",
                              "messages[%d].role must be \"system\", \"user\" or \"assistant\", got \"%.*s\"", i,
                              utf8_clip(role->valuestring, 100), role->valuestring);
    if (calls && !(cJSON_IsArray(calls) && !calls->child))
        return api_parse_fail(e, "messages", "messages[%d].tool_calls is not supported", i);
    if (name && !cJSON_IsString(name))
        return api_parse_fail(e, "messages", "messages[%d].name must be a string", i);
    cJSON *content = message_content(api_parse_field(msg, "content"), i, e);
    if (!content)
        return false;
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddItemToArray(out, m)) {
        cJSON_Delete(m);
        cJSON_Delete(content);
        return no_memory(e);
    }
    if (!cJSON_AddStringToObject(m, "role", roles[r]) || !cJSON_AddItemToObject(m, "content", content)) {
        cJSON_Delete(content);
        return no_memory(e);
    }
    if (name && !cJSON_AddStringToObject(m, "name", name->valuestring))
        return no_memory(e);
    return true;
}

/* messages: a non-empty array; g->messages is what the template gets. */
static bool parse_messages(const cJSON *root, api_generation *g, api_error *e)
{
    const cJSON *m = api_parse_field(root, "messages");
    if (!cJSON_IsArray(m))
        return api_parse_fail(e, "messages", "messages is required and must be an array of messages");
    if (!m->child)
        return api_parse_fail(e, "messages", "messages cannot be empty");
    cJSON *out = cJSON_CreateArray();
    bool ok = out || no_memory(e);
    int i = 0;
    for (const cJSON *msg = m->child; ok && msg; msg = msg->next, i++)
        ok = message(msg, i, out, e);
    if (ok && !(g->messages = cJSON_PrintUnformatted(out)))
        ok = no_memory(e);
    if (ok)
        g->messages_len = strlen(g->messages);
    cJSON_Delete(out);
    return ok;
}

/* logprobs (a boolean) and top_logprobs (alternatives per token, in [0, FK_MAX_LOGPROBS], with logprobs only). */
static bool parse_logprobs(const cJSON *root, api_generation *g, api_error *e)
{
    const cJSON *f = api_parse_field(root, "logprobs"), *top = api_parse_field(root, "top_logprobs");
    bool on = false;
    double v = 0;
    if (f && !api_parse_bool(f, "logprobs", &on, e))
        return false;
    if (top) {
        if (!api_parse_integer(top, "top_logprobs", &v, e))
            return false;
        if (v < 0 || v > FK_MAX_LOGPROBS)
            return api_parse_fail(e, "top_logprobs", "top_logprobs must be in [0, %d], got %g", FK_MAX_LOGPROBS, v);
        if (!on)
            return api_parse_fail(e, "top_logprobs", "top_logprobs needs logprobs to be true");
    }
    if (on)
        g->params.sampling.logprobs = (int)v;
    return true;
}

/* OpenAI chat fields this server does not support: a 400 naming the field unless it has the value that asks for
 * nothing (as some clients send by default). */
static bool refuse_unsupported(const cJSON *root, api_error *e)
{
    static const struct {
        const char *name, *neutral; /* the neutral value as cJSON prints it; NULL: none */
    } fields[] = {
        {"tools", "[]"},           {"tool_choice", "\"none\""},           {"functions", "[]"},
        {"function_call", "\"none\""}, {"response_format", "{\"type\":\"text\"}"}, {"modalities", "[\"text\"]"},
        {"audio", NULL},           {"prediction", NULL},                  {"web_search_options", NULL},
        {"reasoning_effort", NULL}, {"echo", "false"},                    {"continue_final_message", "false"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const cJSON *f = api_parse_field(root, fields[i].name);
        if (!f)
            continue;
        char *printed = fields[i].neutral ? cJSON_PrintUnformatted(f) : NULL;
        const bool neutral = printed && !strcmp(printed, fields[i].neutral);
        cJSON_free(printed);
        if (!neutral)
            return api_parse_fail(e, fields[i].name, "%s is not supported", fields[i].name);
    }
    return true;
}

bool api_parse_chat(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e)
{
    g->params.max_tokens = lim->max_model_len; /* not given: api_check_prompt shrinks it to the room left */
    g->params.sampling.temperature = 1;
    g->add_generation_prompt = true;
    const cJSON *f;
    if (!parse_messages(root, g, e) || !api_parse_max_tokens(root, "max_tokens", lim, g, e) ||
        !api_parse_max_tokens(root, "max_completion_tokens", lim, g, e) || !api_parse_sampling(root, lim, g, e) ||
        !parse_logprobs(root, g, e) || !api_parse_stop(root, g, e) || !api_parse_openai(root, lim, g, e) ||
        !refuse_unsupported(root, e))
        return false;
    return !(f = api_parse_field(root, "add_generation_prompt")) ||
           api_parse_bool(f, "add_generation_prompt", &g->add_generation_prompt, e);
}
