/* api.h — the JSON of the HTTP API: request bodies parsed strictly into engine parameters (api_parse*.c, one file
 * per API family), and the bodies of responses and Server-Sent Events (api_render*.c, likewise). No I/O and no
 * engine calls (the tokenizer is used only to name tokens). */
#ifndef FK_SERVER_API_H
#define FK_SERVER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "flashkernel.h"
#include "json.h"
#include "queue.h"

/* Deepest nesting of arrays and objects a body may have. */
#define API_MAX_DEPTH JSON_MAX_DEPTH
/* Seeds are integers a JSON number represents exactly: [0, 2^53 - 1]. */
#define API_MAX_SEED 9007199254740991.0

/* An error response: {"error": {"message", "type", "param", "code"}} with HTTP status `status`. */
typedef struct api_error {
    int status;
    const char *type; /* "invalid_request_error", "authentication_error", "not_found_error", "server_error", ... */
    char param[64];   /* the offending field, "" when none */
    char message[640];
} api_error;

void api_error_set(api_error *e, int status, const char *type, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* {"error": {...}}: malloc'd, *len bytes. NULL when out of memory. */
char *api_error_body(const api_error *e, size_t *len);

/* Parses a request body that must be one JSON object, strictly (json_parse_strict): rejects (400) invalid JSON with
 * the byte offset, trailing data, nesting deeper than API_MAX_DEPTH, NUL characters, lone surrogates, numbers longer
 * than 63 characters, duplicate keys, and strings that are not valid UTF-8 (naming the field). */
bool api_parse_body(const char *body, size_t len, cJSON **root, api_error *e);

typedef enum api_kind {
    API_GENERATE,    /* POST /generate */
    API_COMPLETIONS, /* POST /v1/completions (OpenAI) */
    API_CHAT,        /* POST /v1/chat/completions (OpenAI) */
} api_kind;

typedef struct api_limits {
    int vocab_size;
    int max_model_len;
    const char *model_name; /* the served name: the OpenAI routes' "model" must match it */
} api_limits;

/* A generation request as parsed. Either prompt_text or prompt_ids is set; for a chat, messages. */
typedef struct api_generation {
    api_kind kind;
    const char *prompt_text; /* into the cJSON tree */
    size_t prompt_text_len;
    int32_t *prompt_ids; /* malloc'd */
    int n_prompt_ids;
    char *messages; /* chat: the messages as the template gets them, a JSON array of {"role", "content"(, "name")}
                     * objects, content a string (text parts joined with "\n"); malloc'd, messages_len bytes */
    size_t messages_len;
    bool add_generation_prompt; /* chat: end the prompt with the assistant's turn (default true) */
    fk_request_params params; /* sampling resolved; max_tokens final after api_check_prompt */
    const char *stop[FK_MAX_STOP]; /* into the cJSON tree; params.stop is NULL until the caller copies them */
    bool max_tokens_given;
    bool seed_given; /* else the caller draws one */
    bool stream;
    bool include_usage; /* OpenAI stream_options.include_usage */
} api_generation;

/* The fields of /generate, /v1/completions or /v1/chat/completions, type- and range-checked (every message names the
 * field and value). Unknown fields are ignored; OpenAI fields this server does not support are refused. */
bool api_parse_generation(const cJSON *root, api_kind kind, const api_limits *lim, api_generation *g, api_error *e);

/* Once the prompt has n_prompt tokens: checks it against max_model_len and resolves max_tokens (when not given, the
 * default shrinks to what the context has room for). */
bool api_check_prompt(api_generation *g, int n_prompt, const api_limits *lim, api_error *e);

void api_generation_free(api_generation *g);

/* POST /tokenize {"prompt": str, "add_special_tokens": bool = true} and POST /detokenize {"tokens": [ids]}. */
bool api_parse_tokenize(const cJSON *root, const char **text, size_t *len, bool *add_special, api_error *e);
bool api_parse_detokenize(const cJSON *root, const api_limits *lim, int32_t **ids, int *n, api_error *e);
char *api_tokenize_body(const int32_t *ids, int n, int max_model_len, size_t *len);
char *api_detokenize_body(const char *text, size_t *len);

/* GET /v1/models. */
char *api_models_body(const char *model_name, int max_model_len, long long created, size_t *len);

/* ---- generation responses ---- */

/* What rendering a generation's response needs besides its output. */
typedef struct api_render {
    api_kind kind;
    char id[48];
    const char *model_name;
    long long created; /* Unix seconds */
    int logprobs;      /* -1: none */
    bool include_usage;
    const fk_tokenizer *tok; /* names tokens in OpenAI logprobs; may be NULL */
    size_t text_offset;      /* completion streams: characters sent so far (OpenAI text_offset) */
    bool role_sent;          /* chat streams: the first chunk, with the assistant's role, went out */
} api_render;

/* A growing byte buffer; `failed` after an allocation failure (appends then do nothing). */
typedef struct api_buf {
    char *s;
    size_t len, cap;
    bool failed;
} api_buf;

void api_buf_append(api_buf *b, const char *s, size_t n);
void api_buf_free(api_buf *b);

/* The non-streaming response of a finished request (its whole output in o). */
char *api_result_body(const api_render *rd, const queue_output *o, const queue_result *res, size_t *len);

/* Server-Sent Events: one "data: {...}\n\n" per event of o; the final events (finish reason, usage, timings) and
 * "data: [DONE]"; an error event and "data: [DONE]". */
void api_sse_events(api_render *rd, const queue_output *o, api_buf *b);
void api_sse_final(const api_render *rd, const queue_result *res, api_buf *b);
void api_sse_error(const api_error *e, api_buf *b);

/* The HTTP status and error of a request the engine refused, or that ended with FK_FINISH_ERROR. */
void api_engine_error(fk_status status, const char *message, api_error *e);

/* "length", "stop", "eos", "abort", "error" (/generate); OpenAI folds eos into "stop". */
const char *api_finish_name(api_kind kind, fk_finish_reason reason);

#endif
