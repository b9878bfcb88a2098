/* api_parse.c — requests: the body parsed strictly (src/json.c) with its strings checked as UTF-8, the typed field
 * getters every family uses, the generation fields they share, and the dispatch to each family's parser
 * (api_parse_generate.c, api_parse_completions.c, api_parse_chat.c). */
#include "api_parse.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "utf8.h"

bool api_parse_fail(api_error *e, const char *param, const char *fmt, ...)
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

static bool utf8_valid(const char *s)
{
    const size_t n = strlen(s);
    return utf8_check(s, n) == n;
}

/* Every string of the tree is valid UTF-8, named by its top-level field. */
static bool check_utf8(const cJSON *node, const char *field, api_error *e)
{
    if (cJSON_IsString(node) && !utf8_valid(node->valuestring))
        return api_parse_fail(e, field, "%s is not valid UTF-8", field);
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
        return true;
    for (const cJSON *c = node->child; c; c = c->next) {
        if (cJSON_IsObject(node) && !utf8_valid(c->string))
            return api_parse_fail(e, field, "a field name%s%s is not valid UTF-8", field ? " in " : "",
                                  field ? field : "");
        if (!check_utf8(c, field ? field : c->string, e))
            return false;
    }
    return true;
}

bool api_parse_body(const char *body, size_t len, cJSON **root, api_error *e)
{
    *root = NULL;
    if (len == 0)
        return api_parse_fail(e, NULL, "invalid JSON at byte 0: empty body");
    cJSON *tree = NULL;
    json_fault f;
    const fk_status s = json_parse_strict(body, len, &tree, &f);
    if (s == FK_ERR_OUT_OF_MEMORY) {
        api_error_set(e, 500, "server_error", NULL, "cannot parse the body: out of memory");
        return false;
    }
    if (s)
        return api_parse_fail(e, f.key[0] ? f.key : NULL, "%s", f.message);
    if (!cJSON_IsObject(tree)) {
        cJSON_Delete(tree);
        return api_parse_fail(e, NULL, "body must be a JSON object");
    }
    if (!check_utf8(tree, NULL, e)) {
        cJSON_Delete(tree);
        return false;
    }
    *root = tree;
    return true;
}

/* ---- fields ---- */

const cJSON *api_parse_field(const cJSON *root, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, name);
    return cJSON_IsNull(f) ? NULL : f;
}

bool api_parse_integer(const cJSON *f, const char *name, double *out, api_error *e)
{
    if (!cJSON_IsNumber(f) || (isfinite(f->valuedouble) && f->valuedouble != floor(f->valuedouble)))
        return api_parse_fail(e, name, "%s must be an integer", name);
    *out = f->valuedouble;
    return true;
}

static bool get_number(const cJSON *f, const char *name, double *out, api_error *e)
{
    if (!cJSON_IsNumber(f))
        return api_parse_fail(e, name, "%s must be a number", name);
    if (!isfinite(f->valuedouble))
        return api_parse_fail(e, name, "%s must be a finite number", name);
    *out = f->valuedouble;
    return true;
}

bool api_parse_bool(const cJSON *f, const char *name, bool *out, api_error *e)
{
    if (!cJSON_IsBool(f))
        return api_parse_fail(e, name, "%s must be a boolean (true or false)", name);
    *out = cJSON_IsTrue(f);
    return true;
}

/* A float field in [lo, hi] ((lo, hi] when lo_open), with the engine's wording. */
static bool get_float(const cJSON *root, const char *name, double lo, double hi, bool lo_open, float *out,
                      api_error *e)
{
    const cJSON *f = api_parse_field(root, name);
    double v = 0;
    if (!f)
        return true;
    if (!get_number(f, name, &v, e))
        return false;
    if (v > hi || (lo_open ? v <= lo : v < lo))
        return api_parse_fail(e, name, "%s must be in %c%g, %g], got %g", name, lo_open ? '(' : '[', lo, hi, v);
    *out = (float)v;
    return true;
}

bool api_parse_ids(const cJSON *a, const char *name, int vocab, int32_t **ids, int *n, api_error *e)
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
            return api_parse_fail(e, name, "%s[%d] must be an integer token id", name, i);
        }
        if (id < 0 || id >= vocab) {
            free(v);
            return api_parse_fail(e, name, "Token id %g is out of vocabulary (%d)", id, vocab);
        }
        v[i] = (int32_t)id;
    }
    *ids = v;
    *n = count;
    return true;
}

/* ---- generation fields ---- */

bool api_parse_max_tokens(const cJSON *root, const char *name, const api_limits *lim, api_generation *g,
                          api_error *e)
{
    const cJSON *f = api_parse_field(root, name);
    double v = 0;
    if (!f)
        return true;
    if (!api_parse_integer(f, name, &v, e))
        return false;
    if (v < 1)
        return api_parse_fail(e, name, "%s must be at least 1, got %g", name, v);
    if (v > lim->max_model_len)
        return api_parse_fail(e, name, "%s must be <= %d (the context length), got %g", name, lim->max_model_len, v);
    g->params.max_tokens = (int)v;
    g->max_tokens_given = true;
    return true;
}

bool api_parse_sampling(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e)
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
    if ((f = api_parse_field(root, "top_k"))) {
        if (!api_parse_integer(f, "top_k", &v, e))
            return false;
        if (v < -1)
            return api_parse_fail(e, "top_k", "top_k must be -1 or 0 (off) or at least 1, got %g", v);
        sp->top_k = v <= 0 ? 0 : v > lim->vocab_size ? lim->vocab_size : (int)v; /* above the vocabulary: all */
    }
    if ((f = api_parse_field(root, "seed"))) {
        if (!api_parse_integer(f, "seed", &v, e))
            return false;
        if (v < 0 || v > API_MAX_SEED)
            return api_parse_fail(e, "seed", "seed must be in [0, %.0f], got %g", API_MAX_SEED, v);
        sp->seed = (uint64_t)v;
        g->seed_given = true;
    }
    if (g->kind != API_CHAT && (f = api_parse_field(root, "logprobs"))) {
        if (!api_parse_integer(f, "logprobs", &v, e))
            return false;
        if (v < 0 || v > FK_MAX_LOGPROBS)
            return api_parse_fail(e, "logprobs", "logprobs must be in [0, %d], got %g", FK_MAX_LOGPROBS, v);
        sp->logprobs = (int)v;
    }
    if ((f = api_parse_field(root, "ignore_eos")) && !api_parse_bool(f, "ignore_eos", &g->params.ignore_eos, e))
        return false;
    if ((f = api_parse_field(root, "stream")) && !api_parse_bool(f, "stream", &g->stream, e))
        return false;
    return true;
}

bool api_parse_stop(const cJSON *root, api_generation *g, api_error *e)
{
    const cJSON *s = api_parse_field(root, "stop");
    if (!s)
        return true;
    const bool one = cJSON_IsString(s);
    if (!one && !cJSON_IsArray(s))
        return api_parse_fail(e, "stop", "stop must be a string or an array of strings");
    const int n = one ? 1 : cJSON_GetArraySize(s);
    const cJSON *item = one ? s : s->child;
    for (int i = 0; i < n; i++, item = item->next) {
        if (!cJSON_IsString(item))
            return api_parse_fail(e, "stop", "stop must be a string or an array of strings");
        if (!item->valuestring[0])
            return api_parse_fail(e, "stop", "stop cannot contain an empty string");
        if (n > FK_MAX_STOP || strlen(item->valuestring) > FK_MAX_STOP_BYTES)
            return api_parse_fail(e, "stop", "at most %d stop sequences of <= %d bytes (got %d%s)", FK_MAX_STOP,
                                  FK_MAX_STOP_BYTES, n, n > FK_MAX_STOP ? "" : ", one longer");
        g->stop[i] = item->valuestring;
    }
    g->params.n_stop = n;
    return true;
}

bool api_parse_one(const cJSON *root, const char *name, api_error *e)
{
    const cJSON *f = api_parse_field(root, name);
    double v = 0;
    if (!f)
        return true;
    if (!api_parse_integer(f, name, &v, e))
        return false;
    if (v != 1)
        return api_parse_fail(e, name, "%s must be 1 (one completion per request), got %g", name, v);
    return true;
}

bool api_parse_openai(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e)
{
    const cJSON *f;
    if ((f = api_parse_field(root, "model"))) {
        if (!cJSON_IsString(f))
            return api_parse_fail(e, "model", "model must be a string");
        if (strcmp(f->valuestring, lim->model_name)) {
            api_error_set(e, 404, "not_found_error", "model", "The model \"%.*s\" does not exist; this server serves \"%s\"",
                          utf8_clip(f->valuestring, 200), f->valuestring, lim->model_name);
            return false;
        }
    }
    if (!api_parse_one(root, "n", e))
        return false;
    if ((f = api_parse_field(root, "logit_bias")) && !(cJSON_IsObject(f) && !f->child))
        return api_parse_fail(e, "logit_bias", "logit_bias is not supported");
    if ((f = api_parse_field(root, "stream_options"))) {
        if (!cJSON_IsObject(f))
            return api_parse_fail(e, "stream_options", "stream_options must be an object");
        if (!g->stream)
            return api_parse_fail(e, "stream_options", "stream_options is only allowed when stream is true");
        const cJSON *u = api_parse_field(f, "include_usage");
        if (u && !api_parse_bool(u, "stream_options.include_usage", &g->include_usage, e))
            return false;
    }
    return true;
}

/* ---- the request ---- */

bool api_parse_generation(const cJSON *root, api_kind kind, const api_limits *lim, api_generation *g, api_error *e)
{
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->params = fk_request_params_default();
    bool ok = false;
    switch (kind) {
    case API_GENERATE: ok = api_parse_generate(root, lim, g, e); break;
    case API_COMPLETIONS: ok = api_parse_completions(root, lim, g, e); break;
    case API_CHAT: ok = api_parse_chat(root, lim, g, e); break;
    }
    if (!ok)
        api_generation_free(g);
    return ok;
}

bool api_check_prompt(api_generation *g, int n_prompt, const api_limits *lim, api_error *e)
{
    const int m = lim->max_model_len;
    if (n_prompt > m && g->kind == API_CHAT)
        return api_parse_fail(e, "messages",
                              "the messages have %d tokens once rendered with the chat template; maximum context "
                              "length is %d",
                              n_prompt, m);
    if (n_prompt > m)
        return api_parse_fail(e, "prompt", "prompt has %d tokens; maximum context length is %d", n_prompt, m);
    if (!g->max_tokens_given && n_prompt + g->params.max_tokens > m && n_prompt < m)
        g->params.max_tokens = m - n_prompt;
    if ((long long)n_prompt + g->params.max_tokens > m)
        return api_parse_fail(e, "max_tokens", "requested %d + %d tokens exceeds context length %d", n_prompt,
                              g->params.max_tokens, m);
    return true;
}

void api_generation_free(api_generation *g)
{
    free(g->prompt_ids);
    g->prompt_ids = NULL;
    cJSON_free(g->messages);
    g->messages = NULL;
}
