/* api_render_completions.c — responses of POST /v1/completions: OpenAI's `text_completion` object (with the legacy
 * logprobs shape) and its stream: one chunk per token, a chunk with the finish reason, with
 * stream_options.include_usage a last chunk with the usage and none in the others ("usage": null). */
#include "api_render.h"

static size_t characters(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* OpenAI's legacy logprobs of events [from, to): {"tokens", "token_logprobs", "top_logprobs", "text_offset"}. */
static cJSON *logprobs_object(const api_render *rd, const queue_output *o, int from, int to, size_t offset)
{
    cJSON *l = cJSON_CreateObject(), *tokens = cJSON_AddArrayToObject(l, "tokens"),
          *lps = cJSON_AddArrayToObject(l, "token_logprobs"), *tops = cJSON_AddArrayToObject(l, "top_logprobs"),
          *offsets = cJSON_AddArrayToObject(l, "text_offset");
    for (int i = from; i < to; i++) {
        const queue_event *ev = &o->events[i];
        if (ev->token >= 0) {
            cJSON_AddItemToArray(tokens, api_render_token_name(rd->tok, ev->token));
            cJSON_AddItemToArray(lps, cJSON_CreateNumber(ev->logprob));
            cJSON *top = cJSON_CreateObject();
            for (int k = 0; k < ev->n_top; k++) {
                const fk_logprob *t = &o->top[ev->top_off + (size_t)k];
                cJSON *name = api_render_token_name(rd->tok, t->token);
                if (name)
                    cJSON_AddNumberToObject(top, name->valuestring, t->logprob);
                cJSON_Delete(name);
            }
            cJSON_AddItemToArray(tops, top);
            cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset));
        }
        offset += characters(o->text + ev->text_off, ev->text_len);
    }
    return l;
}

/* The fields every completion object starts with. */
static cJSON *completion_object(const api_render *rd)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", rd->id);
    cJSON_AddStringToObject(root, "object", "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)rd->created);
    cJSON_AddStringToObject(root, "model", rd->model_name);
    return root;
}

char *api_render_completions_result(const api_render *rd, const queue_output *o, const queue_result *res,
                                    size_t *len)
{
    cJSON *root = completion_object(rd);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    cJSON *logprobs = rd->logprobs >= 0 ? logprobs_object(rd, o, 0, o->n_events, 0) : NULL;
    cJSON *text = api_render_string_n(o->text ? o->text : "", o->text_len);
    cJSON_AddItemToArray(choices, api_render_choice("text", text, logprobs, api_finish_name(rd->kind, res->finish)));
    cJSON_AddItemToObject(root, "usage", api_render_usage(res, false));
    return api_render_print(root, len);
}

void api_render_completions_events(api_render *rd, const queue_output *o, api_buf *b)
{
    for (int i = 0; i < o->n_events; i++) {
        const queue_event *ev = &o->events[i];
        if (rd->logprobs < 0) {
            /* written straight into b: the tree below prints the same bytes */
            api_buf_text_chunk(b, rd, "text_completion", ",\"choices\":[{\"index\":0,\"text\":",
                               o->text + ev->text_off, ev->text_len, ",\"logprobs\":null,\"finish_reason\":null}]");
            rd->text_offset += characters(o->text + ev->text_off, ev->text_len);
            continue;
        }
        cJSON *root = completion_object(rd);
        cJSON *choices = cJSON_AddArrayToObject(root, "choices");
        cJSON *logprobs = rd->logprobs >= 0 ? logprobs_object(rd, o, i, i + 1, rd->text_offset) : NULL;
        cJSON *text = api_render_string_n(o->text + ev->text_off, ev->text_len);
        cJSON_AddItemToArray(choices, api_render_choice("text", text, logprobs, NULL));
        if (rd->include_usage)
            cJSON_AddNullToObject(root, "usage");
        rd->text_offset += characters(o->text + ev->text_off, ev->text_len);
        api_render_sse(b, root);
    }
}

void api_render_completions_final(const api_render *rd, const queue_result *res, api_buf *b)
{
    cJSON *root = completion_object(rd);
    cJSON *choice = api_render_choice("text", cJSON_CreateString(""), NULL, api_finish_name(rd->kind, res->finish));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
    if (rd->include_usage)
        cJSON_AddNullToObject(root, "usage");
    api_render_sse(b, root);
    if (rd->include_usage) {
        root = completion_object(rd);
        cJSON_AddArrayToObject(root, "choices");
        cJSON_AddItemToObject(root, "usage", api_render_usage(res, false));
        api_render_sse(b, root);
    }
}
