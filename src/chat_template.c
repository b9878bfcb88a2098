/* chat_template.c — the public chat-template API (flashkernel.h): a model's template found as transformers finds it,
 * and rendered as transformers' render_jinja_template renders it: messages (reasoning fields aliased), tools and
 * documents None, add_generation_prompt, and the tokenizer's bos_token/eos_token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "file.h"
#include "jinja.h"
#include "json.h"
#include "utf8.h"

struct fk_chat_template {
    jinja_template *tmpl;
};

/* Template files and tokenizer_config.json larger than this are refused. */
#define CHAT_TEMPLATE_MAX_BYTES ((size_t)16 << 20)
#define TOKENIZER_CONFIG_MAX_BYTES ((size_t)256 << 20)

fk_status fk_chat_template_parse(const char *source, size_t len, fk_chat_template **out, fk_error *err)
{
    *out = NULL;
    if (!source)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "chat template: no source given");
    fk_chat_template *t = malloc(sizeof *t);
    if (!t)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "chat template: out of memory");
    fk_status st = jinja_parse(source, len, jinja_limits_default().max_depth, &t->tmpl, err);
    if (st) {
        free(t);
        return st;
    }
    *out = t;
    return FK_OK;
}

void fk_chat_template_free(fk_chat_template *tmpl)
{
    if (tmpl) {
        jinja_free(tmpl->tmpl);
        free(tmpl);
    }
}

static char *copy_string(const char *s)
{
    size_t n = strlen(s);
    char *r = malloc(n + 1);
    if (r)
        memcpy(r, s, n + 1);
    return r;
}

/* A special token of tokenizer_config.json: a string or {"content": "..."} (a serialized AddedToken). */
static fk_status special_token(const cJSON *config, const char *key, const char *path, char **out, fk_error *err)
{
    *out = NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, key);
    if (cJSON_IsObject(v))
        v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!v || cJSON_IsNull(v))
        return FK_OK;
    if (!cJSON_IsString(v))
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"%s\" must be a string or {\"content\": string}", path, key);
    if (!(*out = copy_string(v->valuestring)))
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    return FK_OK;
}

/* tokenizer_config.json's chat_template: a string, or [{name, template}, ...] of which "default". */
static fk_status config_template(const cJSON *config, const char *path, char **out, fk_error *err)
{
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(config, "chat_template");
    const char *text = NULL;
    if (!ct || cJSON_IsNull(ct))
        return fk_error_set(err, FK_ERR_UNSUPPORTED, "%s has no chat_template: this model has no chat template",
                            path);
    if (cJSON_IsString(ct)) {
        text = ct->valuestring;
    } else if (cJSON_IsArray(ct)) {
        char names[256] = "";
        for (const cJSON *e = ct->child; e && !text; e = e->next) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
            const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(e, "template");
            if (!cJSON_IsString(name) || !cJSON_IsString(tmpl))
                return fk_error_set(err, FK_ERR_FORMAT,
                                    "%s: chat_template entries must be {\"name\": string, \"template\": string}", path);
            if (!strcmp(name->valuestring, "default"))
                text = tmpl->valuestring;
            else
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s\"%s\"", names[0] ? ", " : "",
                         name->valuestring);
        }
        if (!text)
            return fk_error_set(err, FK_ERR_UNSUPPORTED, "%s: no chat template is named \"default\" (there are %s)",
                                path, names[0] ? names : "none");
    } else {
        return fk_error_set(err, FK_ERR_FORMAT, "%s: chat_template must be a string or a list of named templates",
                            path);
    }
    if (!(*out = copy_string(text)))
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    return FK_OK;
}

fk_status fk_chat_template_find(const char *model_dir, char **source, char **bos, char **eos, fk_error *err)
{
    *source = *bos = *eos = NULL;
    char config_path[4096], jinja_path[4096];
    snprintf(config_path, sizeof config_path, "%s/tokenizer_config.json", model_dir);
    snprintf(jinja_path, sizeof jinja_path, "%s/chat_template.jinja", model_dir);
    /* transformers: a chat_template.jinja file takes priority over tokenizer_config.json's chat_template. */
    size_t len;
    fk_status st = file_read(jinja_path, CHAT_TEMPLATE_MAX_BYTES, source, &len, err);
    bool have_file = st == FK_OK;
    if (st && st != FK_ERR_IO)
        return st;
    cJSON *config = NULL;
    st = json_parse_file(config_path, TOKENIZER_CONFIG_MAX_BYTES, &config, err);
    if (st == FK_ERR_IO && have_file)
        return FK_OK;
    if (!st && !cJSON_IsObject(config))
        st = fk_error_set(err, FK_ERR_FORMAT, "%s: must be a JSON object", config_path);
    if (!st && !have_file)
        st = config_template(config, config_path, source, err);
    if (!st)
        st = special_token(config, "bos_token", config_path, bos, err);
    if (!st)
        st = special_token(config, "eos_token", config_path, eos, err);
    cJSON_Delete(config);
    if (st) {
        free(*source);
        free(*bos);
        free(*eos);
        *source = *bos = *eos = NULL;
    }
    return st;
}

/* transformers' _alias_reasoning_fields: a message with reasoning under any of its names becomes
 * {"thinking": r, **message, "reasoning_content": r}. */
static fk_status alias_reasoning(jrt *rt, jv *message)
{
    static const char *const names[] = {"reasoning_content", "thinking", "reasoning"};
    const jv *reasoning = NULL;
    for (int i = 0; i < 3 && !reasoning; i++) {
        const jv *v = jv_dict_get(rt, message->u.d, names[i]);
        if (v && v->type != JV_NONE)
            reasoning = v;
    }
    if (!reasoning)
        return FK_OK;
    jv aliased, key;
    fk_status st = jv_dict(rt, message->u.d->n + 2, &aliased);
    if (st)
        return st;
    if (!(st = jv_str(rt, "thinking", 8, &key)))
        st = jv_dict_set(rt, aliased.u.d, key, jv_ref(*reasoning));
    for (size_t i = 0; i < message->u.d->n && !st; i++)
        st = jv_dict_set(rt, aliased.u.d, jv_ref(message->u.d->keys[i]), jv_ref(message->u.d->vals[i]));
    if (!st && !(st = jv_str(rt, "reasoning_content", 17, &key)))
        st = jv_dict_set(rt, aliased.u.d, key, jv_ref(*reasoning));
    if (st) {
        jv_unref(aliased);
        return st;
    }
    jv_unref(*message);
    *message = aliased;
    return FK_OK;
}

static fk_status token_value(jrt *rt, const char *token, const char *what, jv *out)
{
    size_t len = strlen(token);
    size_t bad = utf8_check(token, len);
    if (bad < len)
        return fk_error_set(rt->err, FK_ERR_INVALID_ARGUMENT, "%s is not valid UTF-8 at byte %zu", what, bad);
    return jv_str(rt, token, len, out);
}

fk_status fk_chat_template_render(const fk_chat_template *tmpl, const fk_chat_render_params *params, char **text,
                                  size_t *len, fk_error *err)
{
    *text = NULL;
    *len = 0;
    if (!tmpl || !params || !params->messages_json)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "chat template render: no template or messages given");
    jinja_limits limits = jinja_limits_default();
    jrt rt;
    jrt_init(&rt, &limits, err);
    rt.fixed_now = params->fixed_now;
    rt.now = params->now;
    jv messages = jv_none(), bos = jv_none(), eos = jv_none();
    fk_status st = jv_from_json(&rt, params->messages_json, params->messages_len, "messages", &messages);
    if (!st && messages.type != JV_LIST)
        st = fk_error_set(rt.err, FK_ERR_INVALID_ARGUMENT, "messages must be a JSON array");
    for (size_t i = 0; !st && i < messages.u.l->n; i++) {
        if (messages.u.l->items[i].type != JV_DICT)
            st = fk_error_set(rt.err, FK_ERR_INVALID_ARGUMENT, "messages[%zu] must be an object", i);
        else
            st = alias_reasoning(&rt, &messages.u.l->items[i]);
    }
    if (!st && params->bos_token)
        st = token_value(&rt, params->bos_token, "bos_token", &bos);
    if (!st && params->eos_token)
        st = token_value(&rt, params->eos_token, "eos_token", &eos);
    if (!st) {
        jinja_var vars[6] = {
            {"messages", messages},
            {"tools", jv_none()},
            {"documents", jv_none()},
            {"add_generation_prompt", jv_bool(params->add_generation_prompt)},
        };
        size_t n = 4;
        if (params->bos_token)
            vars[n++] = (jinja_var){"bos_token", bos};
        if (params->eos_token)
            vars[n++] = (jinja_var){"eos_token", eos};
        st = jinja_render(tmpl->tmpl, &rt, vars, n, text, len);
    }
    jv_unref(messages);
    jv_unref(bos);
    jv_unref(eos);
    jrt_free(&rt);
    return st;
}
