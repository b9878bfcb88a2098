/* api_parse.h — what the request parsers of the API families share (api_parse_generate.c, api_parse_completions.c,
 * api_parse_chat.c):
 * typed, range-checked fields whose messages name the field and the value, and the generation fields every family
 * takes. Each returns false with a 400 in *e (a 500 when memory runs out). */
#ifndef FK_SERVER_API_PARSE_H
#define FK_SERVER_API_PARSE_H

#include "api.h"

/* A 400 invalid_request_error about `param`; returns false for `return api_parse_fail(...)`. */
bool api_parse_fail(api_error *e, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The field, or NULL when absent or null (optional fields treat null as absent). */
const cJSON *api_parse_field(const cJSON *root, const char *name);

/* An integral number (possibly ±inf, which the caller's range check rejects). */
bool api_parse_integer(const cJSON *f, const char *name, double *out, api_error *e);
bool api_parse_bool(const cJSON *f, const char *name, bool *out, api_error *e);

/* A token id array: integers in [0, vocab), *ids malloc'd. */
bool api_parse_ids(const cJSON *a, const char *name, int vocab, int32_t **ids, int *n, api_error *e);

/* ---- generation fields ---- */

/* The field `name` (max_tokens, or OpenAI chat's max_completion_tokens): an integer in [1, max_model_len]. */
bool api_parse_max_tokens(const cJSON *root, const char *name, const api_limits *lim, api_generation *g,
                          api_error *e);

/* temperature, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty, top_k, seed, logprobs (the
 * integer of /generate and /v1/completions; not for a chat, whose logprobs is a boolean), ignore_eos and stream. */
bool api_parse_sampling(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e);

/* stop: a string or up to FK_MAX_STOP non-empty strings of at most FK_MAX_STOP_BYTES. */
bool api_parse_stop(const cJSON *root, api_generation *g, api_error *e);

/* The OpenAI fields /v1/completions and /v1/chat/completions share: model (the served one, else 404), n (1),
 * logit_bias (empty) and stream_options (include_usage). After api_parse_sampling, which reads stream. */
bool api_parse_openai(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e);

/* A field that must be 1 when given: n, best_of. */
bool api_parse_one(const cJSON *root, const char *name, api_error *e);

/* ---- the families ---- */

/* prompt (of /generate, or the one prompt of /v1/completions' list): a non-empty string or token-id array. */
bool api_parse_prompt(const cJSON *p, const api_limits *lim, api_generation *g, api_error *e);

/* The whole request of POST /generate, /v1/completions, /v1/chat/completions; g holds the defaults of
 * fk_request_params. */
bool api_parse_generate(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e);
bool api_parse_completions(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e);
bool api_parse_chat(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e);

#endif
