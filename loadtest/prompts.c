/* prompts.c — random token-id prompts and prompts read from a file. */
#include "prompts.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

void prompts_random(prompts *p, int len, int vocab, uint64_t seed)
{
    *p = (prompts){.len = len, .vocab = vocab, .seed = seed};
}

void prompts_free(prompts *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->json[i]);
    free(p->json);
    *p = (prompts){0};
}

/* A line that starts with '"' or '[' is JSON: a string, or an array of token ids (integers in [0, 2^31)).
 * Returns it re-printed compactly, or NULL with the reason in err. */
static char *json_line(const char *s, size_t n, char *err, size_t err_len)
{
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(s, n, &end, false);
    if (!v || end != s + n) {
        snprintf(err, err_len, "not a JSON string or array (a line starting with '\"' or '[' is JSON)");
        cJSON_Delete(v);
        return NULL;
    }
    bool ok = cJSON_IsString(v) || (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0);
    if (cJSON_IsArray(v))
        for (const cJSON *id = v->child; id; id = id->next)
            ok = ok && cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < 2147483648.0 &&
                 id->valuedouble == (double)(long)id->valuedouble;
    if (!ok) {
        snprintf(err, err_len, "a JSON prompt must be a string or a non-empty array of token ids");
        cJSON_Delete(v);
        return NULL;
    }
    char *out = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    if (!out)
        snprintf(err, err_len, "out of memory");
    return out;
}

/* Any other line is the prompt's text, as it is. */
static char *text_line(const char *s, size_t n, char *err, size_t err_len)
{
    char *text = malloc(n + 1);
    cJSON *v = NULL;
    char *out = NULL;
    if (text) {
        memcpy(text, s, n);
        text[n] = 0;
        v = cJSON_CreateString(text);
        out = v ? cJSON_PrintUnformatted(v) : NULL;
    }
    if (!out)
        snprintf(err, err_len, "out of memory");
    cJSON_Delete(v);
    free(text);
    return out;
}

int prompts_load(prompts *p, const char *path, char *err, size_t err_len)
{
    *p = (prompts){0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "cannot open prompts file %s: %s", path, strerror(errno));
        return -1;
    }
    buf all = {0};
    char tmp[65536];
    size_t r;
    bool ok = true;
    while (ok && (r = fread(tmp, 1, sizeof tmp, f)) > 0)
        ok = buf_append(&all, tmp, r);
    if (!ok || ferror(f)) {
        snprintf(err, err_len, "cannot read prompts file %s: %s", path, ok ? strerror(errno) : "out of memory");
        fclose(f);
        buf_free(&all);
        return -1;
    }
    fclose(f);

    size_t cap = 0, line_no = 0;
    const char *s = all.s ? all.s : "", *end = s + all.len;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        line_no++;
        size_t n = (size_t)(e - s);
        if (n && s[n - 1] == '\r')
            n--;
        size_t lead = 0;
        while (lead < n && (s[lead] == ' ' || s[lead] == '\t'))
            lead++;
        if (lead < n) { /* blank lines are skipped */
            char why[160];
            char *json = s[lead] == '"' || s[lead] == '[' ? json_line(s + lead, n - lead, why, sizeof why)
                                                          : text_line(s, n, why, sizeof why);
            if (json && p->n == cap) {
                cap = cap ? cap * 2 : 64;
                char **grown = realloc(p->json, cap * sizeof *grown);
                if (!grown) {
                    free(json);
                    json = NULL;
                    snprintf(why, sizeof why, "out of memory");
                } else {
                    p->json = grown;
                }
            }
            if (!json) {
                snprintf(err, err_len, "%s, line %zu: %s", path, line_no, why);
                buf_free(&all);
                prompts_free(p);
                return -1;
            }
            p->json[p->n++] = json;
        }
        s = nl ? nl + 1 : end;
    }
    buf_free(&all);
    if (p->n == 0) {
        snprintf(err, err_len, "no prompts in %s (only blank lines)", path);
        prompts_free(p);
        return -1;
    }
    return 0;
}

bool prompts_render(const prompts *p, uint64_t level, uint64_t i, buf *out)
{
    if (p->n)
        return buf_append(out, p->json[i % p->n], strlen(p->json[i % p->n]));
    rng r;
    rng_init(&r, p->seed, level, i);
    bool ok = buf_append(out, "[", 1);
    for (int k = 0; ok && k < p->len; k++)
        ok = buf_printf(out, k ? ",%llu" : "%llu", (unsigned long long)rng_below(&r, (uint64_t)p->vocab));
    return ok && buf_append(out, "]", 1);
}
