/* api_parse_generate.c — requests of the native API: POST /generate (greedy and 128 tokens unless asked otherwise,
 * as `flashkernel generate`), POST /tokenize and POST /detokenize. */
#include "api_parse.h"

#include <string.h>

static bool all_numbers(const cJSON *a)
{
    for (const cJSON *t = a->child; t; t = t->next)
        if (!cJSON_IsNumber(t))
            return false;
    return true;
}

bool api_parse_prompt(const cJSON *p, const api_limits *lim, api_generation *g, api_error *e)
{
    static const char need[] = "prompt is required and must be a string or an array of token ids";
    if (!p)
        return api_parse_fail(e, "prompt", "%s", need);
    if (cJSON_IsString(p)) {
        if (!p->valuestring[0])
            return api_parse_fail(e, "prompt", "prompt cannot be empty");
        g->prompt_text = p->valuestring;
        g->prompt_text_len = strlen(p->valuestring);
        return true;
    }
    if (!cJSON_IsArray(p) || !all_numbers(p))
        return api_parse_fail(e, "prompt", "%s", need);
    if (!p->child)
        return api_parse_fail(e, "prompt", "prompt cannot be empty");
    return api_parse_ids(p, "prompt", lim->vocab_size, &g->prompt_ids, &g->n_prompt_ids, e);
}

bool api_parse_generate(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e)
{
    g->params.max_tokens = 128;
    g->params.sampling.temperature = 0;
    return api_parse_prompt(api_parse_field(root, "prompt"), lim, g, e) &&
           api_parse_max_tokens(root, "max_tokens", lim, g, e) && api_parse_sampling(root, lim, g, e) &&
           api_parse_stop(root, g, e);
}

bool api_parse_tokenize(const cJSON *root, const char **text, size_t *len, bool *add_special, api_error *e)
{
    const cJSON *p = api_parse_field(root, "prompt"), *f;
    if (!cJSON_IsString(p))
        return api_parse_fail(e, "prompt", "prompt is required and must be a string");
    *text = p->valuestring;
    *len = strlen(p->valuestring);
    *add_special = true;
    return !(f = api_parse_field(root, "add_special_tokens")) ||
           api_parse_bool(f, "add_special_tokens", add_special, e);
}

bool api_parse_detokenize(const cJSON *root, const api_limits *lim, int32_t **ids, int *n, api_error *e)
{
    const cJSON *t = api_parse_field(root, "tokens");
    if (!cJSON_IsArray(t))
        return api_parse_fail(e, "tokens", "tokens is required and must be an array of token ids");
    return api_parse_ids(t, "tokens", lim->vocab_size, ids, n, e);
}
