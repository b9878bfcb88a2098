/* api.c — the JSON of the HTTP API. In: the body parsed strictly (src/json.c) and its strings checked as UTF-8,
 * then every field type- and range-checked into fk_request_params. Out: response bodies and Server-Sent Events,
 * built with cJSON. */
#include "api.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "utf8.h"

/* Drops a UTF-8 sequence that truncation cut short at the end of s. */
static void trim_utf8(char *s)
{
    size_t n = strlen(s), k = 0;
    while (k < n && k < 4 && ((unsigned char)s[n - 1 - k] & 0xC0) == 0x80)
        k++;
    if (k < n) {
        const unsigned char lead = (unsigned char)s[n - 1 - k];
        const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (need > k + 1)
            s[n - 1 - k] = '\0';
    }
}

void api_error_set(api_error *e, int status, const char *type, const char *param, const char *fmt, ...)
{
    e->status = status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    trim_utf8(e->param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    trim_utf8(e->message);
}

/* A 400 invalid_request_error; returns false for `return bad(...)`. */
static bool bad(api_error *e, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool bad(api_error *e, const char *param, const char *fmt, ...)
{
    char message[sizeof e->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    api_error_set(e, 400, "invalid_request_error", param, "%s", message);
    return false;
}

/* ---- the body ---- */

/* At most `max` bytes of s, cut at a character boundary (for messages). */
static int clip(const char *s, int max)
{
    int n = (int)strlen(s);
    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

static bool utf8_valid(const char *s)
{
    const size_t n = strlen(s);
    return utf8_check(s, n) == n;
}

/* Every string of the tree is valid UTF-8, named by its top-level field. */
static bool check_utf8(const cJSON *node, const char *field, api_error *e)
{
    if (cJSON_IsString(node) && !utf8_valid(node->valuestring))
        return bad(e, field, "%s is not valid UTF-8", field);
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
        return true;
    for (const cJSON *c = node->child; c; c = c->next) {
        if (cJSON_IsObject(node) && !utf8_valid(c->string))
            return bad(e, field, "a field name%s%s is not valid UTF-8", field ? " in " : "", field ? field : "");
        if (!check_utf8(c, field ? field : c->string, e))
            return false;
    }
    return true;
}

bool api_parse_body(const char *body, size_t len, cJSON **root, api_error *e)
{
    *root = NULL;
    if (len == 0)
        return bad(e, NULL, "invalid JSON at byte 0: empty body");
    cJSON *tree = NULL;
    json_fault f;
    const fk_status s = json_parse_strict(body, len, &tree, &f);
    if (s == FK_ERR_OUT_OF_MEMORY) {
        api_error_set(e, 500, "server_error", NULL, "cannot parse the body: out of memory");
        return false;
    }
    if (s)
        return bad(e, f.key[0] ? f.key : NULL, "%s", f.message);
    if (!cJSON_IsObject(tree)) {
        cJSON_Delete(tree);
        return bad(e, NULL, "body must be a JSON object");
    }
    if (!check_utf8(tree, NULL, e)) {
        cJSON_Delete(tree);
        return false;
    }
    *root = tree;
    return true;
}

/* ---- fields ---- */

/* The field, or NULL when absent or null (optional fields treat null as absent). */
static const cJSON *field(const cJSON *root, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, name);
    return cJSON_IsNull(f) ? NULL : f;
}

/* An integral number (possibly ±inf, which the caller's range check rejects). */
static bool get_integer(const cJSON *f, const char *name, double *out, api_error *e)
{
    if (!cJSON_IsNumber(f) || (isfinite(f->valuedouble) && f->valuedouble != floor(f->valuedouble)))
        return bad(e, name, "%s must be an integer", name);
    *out = f->valuedouble;
    return true;
}

static bool get_number(const cJSON *f, const char *name, double *out, api_error *e)
{
    if (!cJSON_IsNumber(f))
        return bad(e, name, "%s must be a number", name);
    if (!isfinite(f->valuedouble))
        return bad(e, name, "%s must be a finite number", name);
    *out = f->valuedouble;
    return true;
}

static bool get_bool(const cJSON *f, const char *name, bool *out, api_error *e)
{
    if (!cJSON_IsBool(f))
        return bad(e, name, "%s must be a boolean (true or false)", name);
    *out = cJSON_IsTrue(f);
    return true;
}

/* A float field in [lo, hi] ((lo, hi] when lo_open), with the engine's wording. */
static bool get_float(const cJSON *root, const char *name, double lo, double hi, bool lo_open, float *out,
                      api_error *e)
{
    const cJSON *f = field(root, name);
    double v = 0;
    if (!f)
        return true;
    if (!get_number(f, name, &v, e))
        return false;
    if (v > hi || (lo_open ? v <= lo : v < lo))
        return bad(e, name, "%s must be in %c%g, %g], got %g", name, lo_open ? '(' : '[', lo, hi, v);
    *out = (float)v;
    return true;
}

/* A token id array (prompt or tokens): integers in [0, vocab). */
static bool get_ids(const cJSON *a, const char *name, int vocab, int32_t **ids, int *n, api_error *e)
{
    const int count = cJSON_GetArraySize(a);
    int32_t *v = malloc((size_t)(count ? count : 1) * sizeof *v);
    if (!v) {
        api_error_set(e, 500, "server_error", NULL, "out of memory");
        return false;
    }
    int i = 0;
    for (const cJSON *t = a->child; t; t = t->next, i++) {
        const double id = cJSON_IsNumber(t) ? t->valuedouble : NAN;
        if (!isfinite(id) || id != floor(id)) {
            free(v);
            return bad(e, name, "%s[%d] must be an integer token id", name, i);
        }
        if (id < 0 || id >= vocab) {
            free(v);
            return bad(e, name, "Token id %g is out of vocabulary (%d)", id, vocab);
        }
        v[i] = (int32_t)id;
    }
    *ids = v;
    *n = count;
    return true;
}

static bool all_numbers(const cJSON *a)
{
    for (const cJSON *t = a->child; t; t = t->next)
        if (!cJSON_IsNumber(t))
            return false;
    return true;
}

/* prompt: a non-empty string or token-id array; /v1/completions also takes a list holding one of them. */
static bool parse_prompt(const cJSON *root, api_kind kind, const api_limits *lim, api_generation *g, api_error *e)
{
    static const char need[] = "prompt is required and must be a string or an array of token ids";
    const cJSON *p = field(root, "prompt");
    if (!p)
        return bad(e, "prompt", "%s", need);
    if (kind == API_COMPLETIONS && cJSON_IsArray(p) && p->child &&
        (cJSON_IsString(p->child) || cJSON_IsArray(p->child))) {
        if (cJSON_GetArraySize(p) > 1)
            return bad(e, "prompt", "prompt must be one prompt: lists of %d prompts are not supported",
                       cJSON_GetArraySize(p));
        p = p->child;
    }
    if (cJSON_IsString(p)) {
        if (!p->valuestring[0])
            return bad(e, "prompt", "prompt cannot be empty");
        g->prompt_text = p->valuestring;
        g->prompt_text_len = strlen(p->valuestring);
        return true;
    }
    if (!cJSON_IsArray(p) || !all_numbers(p))
        return bad(e, "prompt", "%s", need);
    if (!p->child)
        return bad(e, "prompt", "prompt cannot be empty");
    return get_ids(p, "prompt", lim->vocab_size, &g->prompt_ids, &g->n_prompt_ids, e);
}

static bool parse_stop(const cJSON *root, api_generation *g, api_error *e)
{
    const cJSON *s = field(root, "stop");
    if (!s)
        return true;
    const bool one = cJSON_IsString(s);
    if (!one && !cJSON_IsArray(s))
        return bad(e, "stop", "stop must be a string or an array of strings");
    const int n = one ? 1 : cJSON_GetArraySize(s);
    const cJSON *item = one ? s : s->child;
    for (int i = 0; i < n; i++, item = item->next) {
        if (!cJSON_IsString(item))
            return bad(e, "stop", "stop must be a string or an array of strings");
        if (!item->valuestring[0])
            return bad(e, "stop", "stop cannot contain an empty string");
        if (n > FK_MAX_STOP || strlen(item->valuestring) > FK_MAX_STOP_BYTES)
            return bad(e, "stop", "at most %d stop sequences of <= %d bytes (got %d%s)", FK_MAX_STOP,
                       FK_MAX_STOP_BYTES, n, n > FK_MAX_STOP ? "" : ", one longer");
        g->stop[i] = item->valuestring;
    }
    g->params.n_stop = n;
    return true;
}

static bool parse_max_tokens(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e)
{
    const cJSON *f = field(root, "max_tokens");
    double v = 0;
    if (!f)
        return true;
    if (!get_integer(f, "max_tokens", &v, e))
        return false;
    if (v < 1)
        return bad(e, "max_tokens", "max_tokens must be at least 1, got %g", v);
    if (v > lim->max_model_len)
        return bad(e, "max_tokens", "max_tokens must be <= %d (the context length), got %g", lim->max_model_len, v);
    g->params.max_tokens = (int)v;
    g->max_tokens_given = true;
    return true;
}

/* The sampling fields both routes share. */
static bool parse_sampling(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e)
{
    fk_sampling_params *sp = &g->params.sampling;
    if (!get_float(root, "temperature", 0, 2, false, &sp->temperature, e) ||
        !get_float(root, "top_p", 0, 1, true, &sp->top_p, e) || !get_float(root, "min_p", 0, 1, false, &sp->min_p, e) ||
        !get_float(root, "repetition_penalty", 0, 2, true, &sp->repetition_penalty, e) ||
        !get_float(root, "presence_penalty", -2, 2, false, &sp->presence_penalty, e) ||
        !get_float(root, "frequency_penalty", -2, 2, false, &sp->frequency_penalty, e))
        return false;
    const cJSON *f;
    double v = 0;
    if ((f = field(root, "top_k"))) {
        if (!get_integer(f, "top_k", &v, e))
            return false;
        if (v < -1)
            return bad(e, "top_k", "top_k must be -1 or 0 (off) or at least 1, got %g", v);
        sp->top_k = v <= 0 ? 0 : v > lim->vocab_size ? lim->vocab_size : (int)v; /* above the vocabulary: all */
    }
    if ((f = field(root, "seed"))) {
        if (!get_integer(f, "seed", &v, e))
            return false;
        if (v < 0 || v > API_MAX_SEED)
            return bad(e, "seed", "seed must be in [0, %.0f], got %g", API_MAX_SEED, v);
        sp->seed = (uint64_t)v;
        g->seed_given = true;
    }
    if ((f = field(root, "logprobs"))) {
        if (!get_integer(f, "logprobs", &v, e))
            return false;
        if (v < 0 || v > FK_MAX_LOGPROBS)
            return bad(e, "logprobs", "logprobs must be in [0, %d], got %g", FK_MAX_LOGPROBS, v);
        sp->logprobs = (int)v;
    }
    if ((f = field(root, "ignore_eos")) && !get_bool(f, "ignore_eos", &g->params.ignore_eos, e))
        return false;
    if ((f = field(root, "stream")) && !get_bool(f, "stream", &g->stream, e))
        return false;
    return true;
}

/* The OpenAI fields of /v1/completions that /generate does not have. */
static bool parse_openai(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e)
{
    const cJSON *f;
    double v = 0;
    bool b = false;
    if ((f = field(root, "model"))) {
        if (!cJSON_IsString(f))
            return bad(e, "model", "model must be a string");
        if (strcmp(f->valuestring, lim->model_name)) {
            api_error_set(e, 404, "not_found_error", "model", "The model \"%.*s\" does not exist; this server serves \"%s\"",
                          clip(f->valuestring, 200), f->valuestring, lim->model_name);
            return false;
        }
    }
    static const char *const only_one[] = {"n", "best_of"};
    for (int i = 0; i < 2; i++)
        if ((f = field(root, only_one[i]))) {
            if (!get_integer(f, only_one[i], &v, e))
                return false;
            if (v != 1)
                return bad(e, only_one[i], "%s must be 1 (one completion per request), got %g", only_one[i], v);
        }
    if ((f = field(root, "echo"))) {
        if (!get_bool(f, "echo", &b, e))
            return false;
        if (b)
            return bad(e, "echo", "echo is not supported");
    }
    if ((f = field(root, "suffix")) && !(cJSON_IsString(f) && !f->valuestring[0]))
        return bad(e, "suffix", "suffix is not supported");
    if ((f = field(root, "logit_bias")) && !(cJSON_IsObject(f) && !f->child))
        return bad(e, "logit_bias", "logit_bias is not supported");
    if ((f = field(root, "stream_options"))) {
        if (!cJSON_IsObject(f))
            return bad(e, "stream_options", "stream_options must be an object");
        if (!g->stream)
            return bad(e, "stream_options", "stream_options is only allowed when stream is true");
        const cJSON *u = field(f, "include_usage");
        if (u && !get_bool(u, "stream_options.include_usage", &g->include_usage, e))
            return false;
    }
    return true;
}

bool api_parse_generation(const cJSON *root, api_kind kind, const api_limits *lim, api_generation *g, api_error *e)
{
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->params = fk_request_params_default();
    /* /generate is greedy unless asked otherwise (as `flashkernel generate`); OpenAI's defaults are
     * temperature 1 and 16 tokens. */
    g->params.max_tokens = kind == API_GENERATE ? 128 : 16;
    g->params.sampling.temperature = kind == API_GENERATE ? 0.0f : 1.0f;
    bool ok = parse_prompt(root, kind, lim, g, e) && parse_max_tokens(root, lim, g, e) &&
              parse_sampling(root, lim, g, e) && parse_stop(root, g, e) &&
              (kind == API_GENERATE || parse_openai(root, lim, g, e));
    if (!ok)
        api_generation_free(g);
    return ok;
}

bool api_check_prompt(api_generation *g, int n_prompt, const api_limits *lim, api_error *e)
{
    const int m = lim->max_model_len;
    if (n_prompt > m)
        return bad(e, "prompt", "prompt has %d tokens; maximum context length is %d", n_prompt, m);
    if (!g->max_tokens_given && n_prompt + g->params.max_tokens > m && n_prompt < m)
        g->params.max_tokens = m - n_prompt;
    if ((long long)n_prompt + g->params.max_tokens > m)
        return bad(e, "max_tokens", "requested %d + %d tokens exceeds context length %d", n_prompt,
                   g->params.max_tokens, m);
    return true;
}

void api_generation_free(api_generation *g)
{
    free(g->prompt_ids);
    g->prompt_ids = NULL;
}

bool api_parse_tokenize(const cJSON *root, const char **text, size_t *len, bool *add_special, api_error *e)
{
    const cJSON *p = field(root, "prompt"), *f;
    if (!cJSON_IsString(p))
        return bad(e, "prompt", "prompt is required and must be a string");
    *text = p->valuestring;
    *len = strlen(p->valuestring);
    *add_special = true;
    return !(f = field(root, "add_special_tokens")) || get_bool(f, "add_special_tokens", add_special, e);
}

bool api_parse_detokenize(const cJSON *root, const api_limits *lim, int32_t **ids, int *n, api_error *e)
{
    const cJSON *t = field(root, "tokens");
    if (!cJSON_IsArray(t))
        return bad(e, "tokens", "tokens is required and must be an array of token ids");
    return get_ids(t, "tokens", lim->vocab_size, ids, n, e);
}

/* ---- bodies ---- */

static char *print(cJSON *root, size_t *len)
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
    return print(error_object(e), len);
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
    return print(root, len);
}

char *api_detokenize_body(const char *text, size_t *len)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "prompt", text);
    return print(root, len);
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
    return print(root, len);
}

const char *api_finish_name(api_kind kind, fk_finish_reason reason)
{
    switch (reason) {
    case FK_FINISH_LENGTH: return "length";
    case FK_FINISH_EOS: return kind == API_GENERATE ? "eos" : "stop";
    case FK_FINISH_STOP: return "stop";
    case FK_FINISH_CANCEL: return "abort";
    case FK_FINISH_ERROR: return "error";
    default: return "none";
    }
}

void api_engine_error(fk_status status, const char *message, api_error *e)
{
    if (status == FK_ERR_INVALID_ARGUMENT)
        api_error_set(e, 400, "invalid_request_error", NULL, "%s", message);
    else if (status == FK_ERR_DEVICE || status == FK_ERR_OUT_OF_MEMORY)
        api_error_set(e, 503, "server_error", NULL, "%s", message);
    else
        api_error_set(e, 500, "server_error", NULL, "%s", message);
}

static double ms(double s)
{
    return round(s * 1e6) / 1e3;
}

static cJSON *usage_object(const queue_result *res, bool cached)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", res->prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", res->completion_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", res->prompt_tokens + res->completion_tokens);
    if (cached)
        cJSON_AddNumberToObject(u, "cached_tokens", res->cached_tokens);
    return u;
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

/* /generate's logprob entry of one event: {"token", "logprob", "top_logprobs": [{"token", "logprob"}]}. */
static cJSON *generate_logprob(const queue_output *o, const queue_event *ev, int logprobs)
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

/* A token's own text for OpenAI logprobs (decoded alone, special tokens kept): appended to an array, or as the key
 * of `logprob` in an object. */
static void add_token_text(cJSON *to, bool as_key, const fk_tokenizer *tok, int32_t id, double logprob)
{
    char *s = NULL, num[32];
    size_t n;
    if (!tok || fk_tokenizer_decode(tok, &id, 1, false, &s, &n, NULL)) {
        snprintf(num, sizeof num, "token_id:%d", id);
        s = NULL;
    }
    const char *name = s ? s : num;
    if (as_key)
        cJSON_AddNumberToObject(to, name, logprob);
    else
        cJSON_AddItemToArray(to, cJSON_CreateString(name));
    fk_free(s);
}

static size_t characters(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* OpenAI's legacy logprobs of events [from, to): {"tokens", "token_logprobs", "top_logprobs", "text_offset"}. */
static cJSON *openai_logprobs(const api_render *rd, const queue_output *o, int from, int to, size_t offset)
{
    cJSON *l = cJSON_CreateObject(), *tokens = cJSON_AddArrayToObject(l, "tokens"),
          *lps = cJSON_AddArrayToObject(l, "token_logprobs"), *tops = cJSON_AddArrayToObject(l, "top_logprobs"),
          *offsets = cJSON_AddArrayToObject(l, "text_offset");
    for (int i = from; i < to; i++) {
        const queue_event *ev = &o->events[i];
        if (ev->token >= 0) {
            add_token_text(tokens, false, rd->tok, ev->token, 0);
            cJSON_AddItemToArray(lps, cJSON_CreateNumber(ev->logprob));
            cJSON *top = cJSON_CreateObject();
            for (int k = 0; k < ev->n_top; k++) {
                const fk_logprob *t = &o->top[ev->top_off + (size_t)k];
                add_token_text(top, true, rd->tok, t->token, t->logprob);
            }
            cJSON_AddItemToArray(tops, top);
            cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset));
        }
        offset += characters(o->text + ev->text_off, ev->text_len);
    }
    return l;
}

/* The fields every OpenAI completion object starts with. */
static cJSON *openai_object(const api_render *rd)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", rd->id);
    cJSON_AddStringToObject(root, "object", "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)rd->created);
    cJSON_AddStringToObject(root, "model", rd->model_name);
    return root;
}

/* {"index": 0, "text", "logprobs", "finish_reason"}; takes text and logprobs. */
static cJSON *openai_choice(cJSON *text, cJSON *logprobs, const char *finish)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    cJSON_AddItemToObject(c, "text", text);
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
    const char *text = o->text ? o->text : "";
    const char *finish = api_finish_name(rd->kind, res->finish);
    cJSON *root;
    if (rd->kind == API_COMPLETIONS) {
        root = openai_object(rd);
        cJSON *choices = cJSON_AddArrayToObject(root, "choices");
        cJSON *logprobs = rd->logprobs >= 0 ? openai_logprobs(rd, o, 0, o->n_events, 0) : NULL;
        cJSON_AddItemToArray(choices, openai_choice(cJSON_CreateString(text), logprobs, finish));
        cJSON_AddItemToObject(root, "usage", usage_object(res, false));
        return print(root, len);
    }
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", rd->id);
    cJSON_AddStringToObject(root, "text", text);
    cJSON *tokens = cJSON_AddArrayToObject(root, "tokens");
    for (int i = 0; i < o->n_events; i++)
        if (o->events[i].token >= 0)
            cJSON_AddItemToArray(tokens, cJSON_CreateNumber(o->events[i].token));
    if (rd->logprobs >= 0) {
        cJSON *l = cJSON_AddArrayToObject(root, "logprobs");
        for (int i = 0; i < o->n_events; i++)
            if (o->events[i].token >= 0)
                cJSON_AddItemToArray(l, generate_logprob(o, &o->events[i], rd->logprobs));
    }
    cJSON_AddStringToObject(root, "finish_reason", finish);
    cJSON_AddItemToObject(root, "usage", usage_object(res, true));
    cJSON_AddItemToObject(root, "timings", timings_object(res));
    return print(root, len);
}

/* ---- Server-Sent Events ---- */

void api_buf_append(api_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->s = grown, b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void api_buf_free(api_buf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

/* A JSON string of s[0, n) (one event's text is not NUL-terminated inside the output buffer). */
static cJSON *string_n(const char *s, size_t n)
{
    char *copy = malloc(n + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s, n);
    copy[n] = '\0';
    cJSON *str = cJSON_CreateString(copy);
    free(copy);
    return str;
}

/* "data: <json>\n\n"; takes the tree. */
static void sse_data(api_buf *b, cJSON *root)
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

static void sse_done(api_buf *b)
{
    static const char done[] = "data: [DONE]\n\n";
    api_buf_append(b, done, sizeof done - 1);
}

void api_sse_events(api_render *rd, const queue_output *o, api_buf *b)
{
    for (int i = 0; i < o->n_events; i++) {
        const queue_event *ev = &o->events[i];
        cJSON *text = string_n(o->text + ev->text_off, ev->text_len);
        cJSON *root;
        if (rd->kind == API_GENERATE) {
            root = cJSON_CreateObject();
            cJSON_AddItemToObject(root, "text", text);
            if (ev->token >= 0)
                cJSON_AddNumberToObject(root, "token", ev->token);
            if (rd->logprobs >= 0 && ev->token >= 0) {
                cJSON *l = generate_logprob(o, ev, rd->logprobs);
                cJSON_AddNumberToObject(root, "logprob", ev->logprob);
                cJSON *top = cJSON_DetachItemFromObjectCaseSensitive(l, "top_logprobs");
                if (top)
                    cJSON_AddItemToObject(root, "top_logprobs", top);
                cJSON_Delete(l);
            }
        } else {
            root = openai_object(rd);
            cJSON *choices = cJSON_AddArrayToObject(root, "choices");
            cJSON *logprobs = rd->logprobs >= 0 ? openai_logprobs(rd, o, i, i + 1, rd->text_offset) : NULL;
            cJSON_AddItemToArray(choices, openai_choice(text, logprobs, NULL));
            if (rd->include_usage)
                cJSON_AddNullToObject(root, "usage");
        }
        rd->text_offset += characters(o->text + ev->text_off, ev->text_len);
        sse_data(b, root);
    }
}

void api_sse_final(const api_render *rd, const queue_result *res, api_buf *b)
{
    const char *finish = api_finish_name(rd->kind, res->finish);
    if (rd->kind == API_GENERATE) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "id", rd->id);
        cJSON_AddStringToObject(root, "finish_reason", finish);
        cJSON_AddItemToObject(root, "usage", usage_object(res, true));
        cJSON_AddItemToObject(root, "timings", timings_object(res));
        sse_data(b, root);
    } else {
        cJSON *root = openai_object(rd);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"),
                             openai_choice(cJSON_CreateString(""), NULL, finish));
        if (rd->include_usage)
            cJSON_AddNullToObject(root, "usage");
        sse_data(b, root);
        if (rd->include_usage) {
            root = openai_object(rd);
            cJSON_AddArrayToObject(root, "choices");
            cJSON_AddItemToObject(root, "usage", usage_object(res, false));
            sse_data(b, root);
        }
    }
    sse_done(b);
}

void api_sse_error(const api_error *e, api_buf *b)
{
    sse_data(b, error_object(e));
    sse_done(b);
}
