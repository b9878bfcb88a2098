/* api_render.h — what the response renderers of the API families share (api_render_generate.c,
 * api_render_completions.c, api_render_chat.c): cJSON trees printed into bodies and Server-Sent Events, the writers
 * of the per-token events (no tree), the usage object, OpenAI choices, token names. */
#ifndef FK_SERVER_API_RENDER_H
#define FK_SERVER_API_RENDER_H

#include "api.h"

/* Prints the tree (and deletes it): malloc'd, *len bytes; NULL when out of memory. */
char *api_render_print(cJSON *root, size_t *len);

/* "data: <json>\n\n" (takes the tree); "data: [DONE]\n\n". */
void api_render_sse(api_buf *b, cJSON *root);
void api_render_sse_done(api_buf *b);

/* The writers of the per-token stream events, which skip cJSON's tree (an allocation per field, once per token):
 * api_buf_json_string appends s[0, n) as a JSON string, escaped exactly as cJSON prints one (NUL as \u0000);
 * api_buf_text_chunk appends a whole OpenAI chunk event, "data: " to the blank line: {"id", "object": object,
 * "created", "model", then `open`, the text, `close` (the rest of "choices") and, with include_usage, "usage": null,
 * the bytes the family's cJSON objects print. Neither allocates beyond b's growth. */
void api_buf_json_string(api_buf *b, const char *s, size_t n);
void api_buf_text_chunk(api_buf *b, const api_render *rd, const char *object, const char *open, const char *text,
                        size_t n, const char *close);

/* A JSON string of s[0, n), valid UTF-8, NUL bytes included (U+0000, which byte-level tokens can decode to, as
 * \u0000: a cJSON string would end there). */
cJSON *api_render_string_n(const char *s, size_t n);

/* {"prompt_tokens", "completion_tokens", "total_tokens"} and, when `cached`, "cached_tokens". */
cJSON *api_render_usage(const queue_result *res, bool cached);

/* A token's name in OpenAI logprobs: its own text (decoded alone, special tokens kept), "token_id:N" without a
 * tokenizer. A cJSON string; NULL when out of memory. */
cJSON *api_render_token_name(const fk_tokenizer *tok, int32_t id);

/* An OpenAI choice: {"index": 0, <key>: value, "logprobs", "finish_reason"} (logprobs and finish null when NULL);
 * takes value and logprobs. */
cJSON *api_render_choice(const char *key, cJSON *value, cJSON *logprobs, const char *finish);

/* ---- the families: the whole response, the events of one poll, the final events before [DONE] ---- */

char *api_render_generate_result(const api_render *rd, const queue_output *o, const queue_result *res, size_t *len);
void api_render_generate_events(api_render *rd, const queue_output *o, api_buf *b);
void api_render_generate_final(const api_render *rd, const queue_result *res, api_buf *b);

char *api_render_completions_result(const api_render *rd, const queue_output *o, const queue_result *res,
                                    size_t *len);
void api_render_completions_events(api_render *rd, const queue_output *o, api_buf *b);
void api_render_completions_final(const api_render *rd, const queue_result *res, api_buf *b);

char *api_render_chat_result(const api_render *rd, const queue_output *o, const queue_result *res, size_t *len);
void api_render_chat_events(api_render *rd, const queue_output *o, api_buf *b);
void api_render_chat_final(const api_render *rd, const queue_result *res, api_buf *b);

#endif
