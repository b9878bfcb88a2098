/* api_render_chat.c — responses of POST /v1/chat/completions: OpenAI's `chat.completion` object (the assistant's
 * message, logprobs as {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}) and its stream of
 * `chat.completion.chunk`s: the first with the assistant's role, one per token with the content delta, one with
 * an empty delta and the finish reason, with stream_options.include_usage a last one with the usage and none in the
 * others ("usage": null). */
#include "api_render.h"

#include <string.h>

/* {"token", "logprob", "bytes"} of one token, named by its own text (special tokens kept); "bytes" are all of the
 * text's (a NUL byte included, which the string cannot hold), null without a tokenizer. */
static cJSON *token_logprob(const fk_tokenizer *tok, int32_t id, double logprob)
{
    cJSON *l = cJSON_CreateObject();
    cJSON_AddItemToObject(l, "token", api_render_token_name(tok, id));
    cJSON_AddNumberToObject(l, "logprob", logprob);
    char *s = NULL;
    size_t n = 0;
    if (tok && !fk_tokenizer_decode(tok, &id, 1, false, &s, &n, NULL)) {
        cJSON *bytes = cJSON_AddArrayToObject(l, "bytes");
        for (size_t i = 0; i < n; i++)
            cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)s[i]));
    } else {
        cJSON_AddNullToObject(l, "bytes");
    }
    fk_free(s);
    return l;
}

/* {"content": [...]} for the token events [from, to). */
static cJSON *logprobs_object(const api_render *rd, const queue_output *o, int from, int to)
{
    cJSON *l = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(l, "content");
    for (int i = from; i < to; i++) {
        const queue_event *ev = &o->events[i];
        if (ev->token < 0)
            continue;
        cJSON *entry = token_logprob(rd->tok, ev->token, ev->logprob);
        cJSON *top = cJSON_AddArrayToObject(entry, "top_logprobs");
        for (int k = 0; k < ev->n_top; k++) {
            const fk_logprob *t = &o->top[ev->top_off + (size_t)k];
            cJSON_AddItemToArray(top, token_logprob(rd->tok, t->token, t->logprob));
        }
        cJSON_AddItemToArray(content, entry);
    }
    return l;
}

/* The fields every chat object starts with; `object` is "chat.completion" or "chat.completion.chunk". */
static cJSON *chat_object(const api_render *rd, const char *object)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", rd->id);
    cJSON_AddStringToObject(root, "object", object);
    cJSON_AddNumberToObject(root, "created", (double)rd->created);
    cJSON_AddStringToObject(root, "model", rd->model_name);
    return root;
}

/* A chunk of the stream holding one choice; "usage": null when the stream ends with a usage chunk. */
static void chunk(const api_render *rd, cJSON *choice_item, api_buf *b)
{
    cJSON *root = chat_object(rd, "chat.completion.chunk");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice_item);
    if (rd->include_usage)
        cJSON_AddNullToObject(root, "usage");
    api_render_sse(b, root);
}

char *api_render_chat_result(const api_render *rd, const queue_output *o, const queue_result *res, size_t *len)
{
    cJSON *root = chat_object(rd, "chat.completion");
    cJSON *message = cJSON_CreateObject();
    cJSON_AddStringToObject(message, "role", "assistant");
    cJSON_AddItemToObject(message, "content", api_render_string_n(o->text ? o->text : "", o->text_len));
    cJSON *logprobs = rd->logprobs >= 0 ? logprobs_object(rd, o, 0, o->n_events) : NULL;
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"),
                         api_render_choice("message", message, logprobs, api_finish_name(rd->kind, res->finish)));
    cJSON_AddItemToObject(root, "usage", api_render_usage(res, false));
    return api_render_print(root, len);
}

void api_render_chat_events(api_render *rd, const queue_output *o, api_buf *b)
{
    if (!rd->role_sent) {
        cJSON *delta = cJSON_CreateObject();
        cJSON_AddStringToObject(delta, "role", "assistant");
        cJSON_AddStringToObject(delta, "content", "");
        chunk(rd, api_render_choice("delta", delta, NULL, NULL), b);
        rd->role_sent = true;
    }
    for (int i = 0; i < o->n_events; i++) {
        const queue_event *ev = &o->events[i];
        if (rd->logprobs < 0) {
            /* written straight into b: chunk() of the tree below prints the same bytes */
            api_buf_text_chunk(b, rd, "chat.completion.chunk", ",\"choices\":[{\"index\":0,\"delta\":{\"content\":",
                               o->text + ev->text_off, ev->text_len, "},\"logprobs\":null,\"finish_reason\":null}]");
            continue;
        }
        cJSON *delta = cJSON_CreateObject();
        cJSON_AddItemToObject(delta, "content", api_render_string_n(o->text + ev->text_off, ev->text_len));
        cJSON *logprobs = rd->logprobs >= 0 ? logprobs_object(rd, o, i, i + 1) : NULL;
        chunk(rd, api_render_choice("delta", delta, logprobs, NULL), b);
    }
}

void api_render_chat_final(const api_render *rd, const queue_result *res, api_buf *b)
{
    chunk(rd, api_render_choice("delta", cJSON_CreateObject(), NULL, api_finish_name(rd->kind, res->finish)), b);
    if (rd->include_usage) {
        cJSON *root = chat_object(rd, "chat.completion.chunk");
        cJSON_AddArrayToObject(root, "choices");
        cJSON_AddItemToObject(root, "usage", api_render_usage(res, false));
        api_render_sse(b, root);
    }
}
