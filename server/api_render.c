/* api_render.c — responses: error, tokenizer and model-list bodies, what every family's renderer uses, and the
 * dispatch of generation responses and streams to the family's renderer. Built with cJSON. */
#include "api_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *api_render_print(cJSON *root, size_t *len)
{
    char *s = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (s)
        *len = strlen(s);
    return s;
}

static cJSON *error_object(const api_error *e)
{
    cJSON *root = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(err, "message", e->message);
    cJSON_AddStringToObject(err, "type", e->type ? e->type : "server_error");
    if (e->param[0])
        cJSON_AddStringToObject(err, "param", e->param);
    else
        cJSON_AddNullToObject(err, "param");
    cJSON_AddNumberToObject(err, "code", e->status);
    return root;
}

char *api_error_body(const api_error *e, size_t *len)
{
    return api_render_print(error_object(e), len);
}

static cJSON *id_array(const int32_t *ids, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
    return a;
}

char *api_tokenize_body(const int32_t *ids, int n, int max_model_len, size_t *len)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "tokens", id_array(ids, n));
    cJSON_AddNumberToObject(root, "count", n);
    cJSON_AddNumberToObject(root, "max_model_len", max_model_len);
    return api_render_print(root, len);
}

char *api_detokenize_body(const char *text, size_t *len)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "prompt", text);
    return api_render_print(root, len);
}

char *api_models_body(const char *model_name, int max_model_len, long long created, size_t *len)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", model_name);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)created);
    cJSON_AddStringToObject(m, "owned_by", "flashkernel");
    cJSON_AddNumberToObject(m, "max_model_len", max_model_len);
    cJSON *data = cJSON_AddArrayToObject(root, "data");
    cJSON_AddItemToArray(data, m);
    return api_render_print(root, len);
}

cJSON *api_render_usage(const queue_result *res, bool cached)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", res->prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", res->completion_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", res->prompt_tokens + res->completion_tokens);
    if (cached)
        cJSON_AddNumberToObject(u, "cached_tokens", res->cached_tokens);
    return u;
}

cJSON *api_render_token_name(const fk_tokenizer *tok, int32_t id)
{
    char *s = NULL, num[32];
    size_t n;
    if (!tok || fk_tokenizer_decode(tok, &id, 1, false, &s, &n, NULL)) {
        snprintf(num, sizeof num, "token_id:%d", id);
        s = NULL;
    }
    cJSON *name = cJSON_CreateString(s ? s : num);
    fk_free(s);
    return name;
}

cJSON *api_render_choice(const char *key, cJSON *value, cJSON *logprobs, const char *finish)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    cJSON_AddItemToObject(c, key, value);
    if (logprobs)
        cJSON_AddItemToObject(c, "logprobs", logprobs);
    else
        cJSON_AddNullToObject(c, "logprobs");
    if (finish)
        cJSON_AddStringToObject(c, "finish_reason", finish);
    else
        cJSON_AddNullToObject(c, "finish_reason");
    return c;
}

char *api_result_body(const api_render *rd, const queue_output *o, const queue_result *res, size_t *len)
{
    switch (rd->kind) {
    case API_GENERATE: return api_render_generate_result(rd, o, res, len);
    case API_COMPLETIONS: return api_render_completions_result(rd, o, res, len);
    case API_CHAT: return api_render_chat_result(rd, o, res, len);
    }
    return NULL;
}

/* ---- Server-Sent Events ---- */

/* s[0, n) escaped for a JSON string into dst (at most 6 bytes per input byte, and sprintf's NUL after a last
 * \u00xx): what cJSON escapes (", \, the named controls, other controls as \u00xx), and NUL as \u0000; returns the
 * bytes written. */
static size_t json_escape(char *dst, const char *s, size_t n)
{
    char *p = dst;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        const char *named =
            c == '\n' ? "n" : c == '\r' ? "r" : c == '\t' ? "t" : c == '\b' ? "b" : c == '\f' ? "f" : NULL;
        if (c == '"' || c == '\\')
            *p++ = '\\', *p++ = (char)c;
        else if (named)
            *p++ = '\\', *p++ = *named;
        else if (c < 0x20)
            p += sprintf(p, "\\u%04x", c);
        else
            *p++ = (char)c;
    }
    return (size_t)(p - dst);
}

cJSON *api_render_string_n(const char *s, size_t n)
{
    if (!memchr(s, 0, n)) {
        char *copy = malloc(n + 1);
        if (!copy)
            return NULL;
        memcpy(copy, s, n);
        copy[n] = '\0';
        cJSON *str = cJSON_CreateString(copy);
        free(copy);
        return str;
    }
    /* cJSON strings end at a NUL: write this one as JSON ourselves, a raw item (the quotes and the NUL besides). */
    char *json = malloc(6 * n + 3);
    if (!json)
        return NULL;
    json[0] = '"';
    const size_t len = 1 + json_escape(json + 1, s, n);
    json[len] = '"', json[len + 1] = '\0';
    cJSON *raw = cJSON_CreateRaw(json);
    free(json);
    return raw;
}

void api_buf_json_string(api_buf *b, const char *s, size_t n)
{
    enum { PIECE = 256 };
    char out[6 * PIECE + 1];
    api_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i += PIECE)
        api_buf_append(b, out, json_escape(out, s + i, n - i < PIECE ? n - i : PIECE));
    api_buf_append(b, "\"", 1);
}

/* `data: {"id":..,"object":<object>,"created":..,"model":..` of an OpenAI chunk, as its cJSON object prints. */
static void chunk_head(api_buf *b, const api_render *rd, const char *object)
{
    static const char id[] = "data: {\"id\":", obj[] = ",\"object\":", cr[] = ",\"created\":", model[] = ",\"model\":";
    char created[32];
    const int n = snprintf(created, sizeof created, "%lld", rd->created);
    api_buf_append(b, id, sizeof id - 1);
    api_buf_json_string(b, rd->id, strlen(rd->id));
    api_buf_append(b, obj, sizeof obj - 1);
    api_buf_json_string(b, object, strlen(object));
    api_buf_append(b, cr, sizeof cr - 1);
    api_buf_append(b, created, (size_t)n);
    api_buf_append(b, model, sizeof model - 1);
    api_buf_json_string(b, rd->model_name, strlen(rd->model_name));
}

void api_buf_text_chunk(api_buf *b, const api_render *rd, const char *object, const char *open, const char *text,
                        size_t n, const char *close)
{
    static const char usage_null[] = ",\"usage\":null";
    chunk_head(b, rd, object);
    api_buf_append(b, open, strlen(open));
    api_buf_json_string(b, text, n);
    api_buf_append(b, close, strlen(close));
    if (rd->include_usage)
        api_buf_append(b, usage_null, sizeof usage_null - 1);
    api_buf_append(b, "}\n\n", 3);
}

void api_render_sse(api_buf *b, cJSON *root)
{
    char *s = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!s) {
        b->failed = true;
        return;
    }
    api_buf_append(b, "data: ", 6);
    api_buf_append(b, s, strlen(s));
    api_buf_append(b, "\n\n", 2);
    free(s);
}

void api_render_sse_done(api_buf *b)
{
    static const char done[] = "data: [DONE]\n\n";
    api_buf_append(b, done, sizeof done - 1);
}

void api_sse_events(api_render *rd, const queue_output *o, api_buf *b)
{
    switch (rd->kind) {
    case API_GENERATE: api_render_generate_events(rd, o, b); break;
    case API_COMPLETIONS: api_render_completions_events(rd, o, b); break;
    case API_CHAT: api_render_chat_events(rd, o, b); break;
    }
}

void api_sse_final(const api_render *rd, const queue_result *res, api_buf *b)
{
    switch (rd->kind) {
    case API_GENERATE: api_render_generate_final(rd, res, b); break;
    case API_COMPLETIONS: api_render_completions_final(rd, res, b); break;
    case API_CHAT: api_render_chat_final(rd, res, b); break;
    }
    api_render_sse_done(b);
}

void api_sse_error(const api_error *e, api_buf *b)
{
    api_render_sse(b, error_object(e));
    api_render_sse_done(b);
}
