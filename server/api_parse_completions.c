/* api_parse_completions.c — requests of POST /v1/completions: OpenAI's fields and defaults (temperature 1, 16
 * tokens), vLLM's extras (those of /generate), and a 400 for what is not supported (n or best_of other than 1,
 * echo, suffix, logit_bias, several prompts). */
#include "api_parse.h"

bool api_parse_completions(const cJSON *root, const api_limits *lim, api_generation *g, api_error *e)
{
    g->params.max_tokens = 16;
    g->params.sampling.temperature = 1;
    /* prompt: also a list holding one string or one token-id array. */
    const cJSON *p = api_parse_field(root, "prompt"), *f;
    if (cJSON_IsArray(p) && p->child && (cJSON_IsString(p->child) || cJSON_IsArray(p->child))) {
        if (cJSON_GetArraySize(p) > 1)
            return api_parse_fail(e, "prompt", "prompt must be one prompt: lists of %d prompts are not supported",
                                  cJSON_GetArraySize(p));
        p = p->child;
    }
    if (!api_parse_prompt(p, lim, g, e) || !api_parse_max_tokens(root, "max_tokens", lim, g, e) ||
        !api_parse_sampling(root, lim, g, e) || !api_parse_stop(root, g, e) || !api_parse_openai(root, lim, g, e) ||
        !api_parse_one(root, "best_of", e))
        return false;
    bool echo = false;
    if ((f = api_parse_field(root, "echo"))) {
        if (!api_parse_bool(f, "echo", &echo, e))
            return false;
        if (echo)
            return api_parse_fail(e, "echo", "echo is not supported");
    }
    if ((f = api_parse_field(root, "suffix")) && !(cJSON_IsString(f) && !f->valuestring[0]))
        return api_parse_fail(e, "suffix", "suffix is not supported");
    return true;
}
