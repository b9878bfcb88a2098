/* api_render_generate.c — responses of POST /generate: the whole result (text, token ids, finish reason, usage with
 * cached tokens, timings, logprobs), and its stream: one event per token, then the finish reason, usage and timings. */
#include "api_render.h"

#include <math.h>
#include <stdio.h>

static double ms(double s)
{
    return round(s * 1e6) / 1e3;
}

/* queue_ms: arrival → first scheduled; prefill_ms: → first token; decode_ms: → last; tokens_per_s: decode speed,
 * (completion_tokens - 1) / decode time. */
static cJSON *timings_object(const queue_result *res)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "queue_ms", ms(res->queue_s));
    cJSON_AddNumberToObject(t, "prefill_ms", ms(res->prefill_s));
    cJSON_AddNumberToObject(t, "decode_ms", ms(res->decode_s));
    cJSON_AddNumberToObject(t, "ttft_ms", ms(res->ttft_s));
    const double tps = res->completion_tokens > 1 && res->decode_s > 0 ? (res->completion_tokens - 1) / res->decode_s
                                                                        : 0;
    cJSON_AddNumberToObject(t, "tokens_per_s", round(tps * 100) / 100);
    return t;
}

/* The logprob entry of one event: {"token", "logprob", "top_logprobs": [{"token", "logprob"}]}. */
static cJSON *event_logprob(const queue_output *o, const queue_event *ev, int logprobs)
{
    cJSON *l = cJSON_CreateObject();
    cJSON_AddNumberToObject(l, "token", ev->token);
    cJSON_AddNumberToObject(l, "logprob", ev->logprob);
    if (logprobs > 0) {
        cJSON *top = cJSON_AddArrayToObject(l, "top_logprobs");
        for (int k = 0; k < ev->n_top; k++) {
            cJSON *t = cJSON_CreateObject();
            cJSON_AddNumberToObject(t, "token", o->top[ev->top_off + (size_t)k].token);
            cJSON_AddNumberToObject(t, "logprob", o->top[ev->top_off + (size_t)k].logprob);
            cJSON_AddItemToArray(top, t);
        }
    }
    return l;
}

char *api_render_generate_result(const api_render *rd, const queue_output *o, const queue_result *res, size_t *len)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", rd->id);
    cJSON_AddItemToObject(root, "text", api_render_string_n(o->text ? o->text : "", o->text_len));
    cJSON *tokens = cJSON_AddArrayToObject(root, "tokens");
    for (int i = 0; i < o->n_events; i++)
        if (o->events[i].token >= 0)
            cJSON_AddItemToArray(tokens, cJSON_CreateNumber(o->events[i].token));
    if (rd->logprobs >= 0) {
        cJSON *l = cJSON_AddArrayToObject(root, "logprobs");
        for (int i = 0; i < o->n_events; i++)
            if (o->events[i].token >= 0)
                cJSON_AddItemToArray(l, event_logprob(o, &o->events[i], rd->logprobs));
    }
    cJSON_AddStringToObject(root, "finish_reason", api_finish_name(rd->kind, res->finish));
    cJSON_AddItemToObject(root, "usage", api_render_usage(res, true));
    cJSON_AddItemToObject(root, "timings", timings_object(res));
    return api_render_print(root, len);
}

void api_render_generate_events(api_render *rd, const queue_output *o, api_buf *b)
{
    for (int i = 0; i < o->n_events; i++) {
        const queue_event *ev = &o->events[i];
        if (rd->logprobs < 0) { /* written straight into b: the tree below prints the same bytes */
            static const char head[] = "data: {\"text\":";
            char token[24];
            api_buf_append(b, head, sizeof head - 1);
            api_buf_json_string(b, o->text + ev->text_off, ev->text_len);
            if (ev->token >= 0)
                api_buf_append(b, token, (size_t)snprintf(token, sizeof token, ",\"token\":%d", ev->token));
            api_buf_append(b, "}\n\n", 3);
            continue;
        }
        cJSON *root = cJSON_CreateObject();
        cJSON_AddItemToObject(root, "text", api_render_string_n(o->text + ev->text_off, ev->text_len));
        if (ev->token >= 0)
            cJSON_AddNumberToObject(root, "token", ev->token);
        if (rd->logprobs >= 0 && ev->token >= 0) {
            cJSON *l = event_logprob(o, ev, rd->logprobs);
            cJSON_AddNumberToObject(root, "logprob", ev->logprob);
            cJSON *top = cJSON_DetachItemFromObjectCaseSensitive(l, "top_logprobs");
            if (top)
                cJSON_AddItemToObject(root, "top_logprobs", top);
            cJSON_Delete(l);
        }
        api_render_sse(b, root);
    }
}

void api_render_generate_final(const api_render *rd, const queue_result *res, api_buf *b)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", rd->id);
    cJSON_AddStringToObject(root, "finish_reason", api_finish_name(rd->kind, res->finish));
    cJSON_AddItemToObject(root, "usage", api_render_usage(res, true));
    cJSON_AddItemToObject(root, "timings", timings_object(res));
    api_render_sse(b, root);
}
