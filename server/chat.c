/* chat.c — the chat route's model side: which template (the model directory's, from chat_template.jinja or
 * tokenizer_config.json as transformers finds it, or --chat-template FILE) with which bos_token and eos_token, the
 * end-of-turn tokens generation stops on besides the model's eos ids, and a request's prompt: rendered, then
 * tokenized without adding special tokens. */
#include "chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* End-of-turn markers of the template families (Llama 3 and its tool-call turn, ChatML, Gemma, Phi-3). Generation
 * stops on those the template writes, when the tokenizer has them as one special token. */
static const char *const turn_ends[] = {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>"};

struct chat {
    fk_chat_template *tmpl; /* NULL: requests get `why` */
    char *bos, *eos;        /* the template's bos_token and eos_token; NULL: undefined */
    const fk_tokenizer *tok;
    int32_t eot[FK_MAX_EOS_IDS]; /* end-of-turn ids that are not among the model's eos ids */
    int n_eot;
    char why[FK_ERROR_MESSAGE_MAX + 160];
    char describe[FK_ERROR_MESSAGE_MAX + 512];
};

/* The id of s when the tokenizer has it as one special token, else -1. */
static int32_t special_id(const fk_tokenizer *tok, const char *s)
{
    int32_t *ids = NULL, id = -1;
    int n = 0;
    char *text = NULL;
    size_t len = 1;
    if (!fk_tokenizer_encode(tok, s, strlen(s), false, &ids, &n, NULL) && n == 1 &&
        !fk_tokenizer_decode(tok, ids, 1, true, &text, &len, NULL) && len == 0)
        id = ids[0];
    fk_free(ids);
    fk_free(text);
    return id;
}

/* A token's own text (special tokens kept), for a bos or eos string tokenizer_config.json did not give; NULL when
 * there is no such token. */
static char *token_string(const fk_tokenizer *tok, int32_t id)
{
    char *s = NULL;
    size_t n;
    return id >= 0 && !fk_tokenizer_decode(tok, &id, 1, false, &s, &n, NULL) ? s : NULL;
}

/* Adds the end-of-turn ids: the template's eos_token (written literally or as the variable) and the markers it
 * writes, when each is one special token that is not already one of the model's eos ids. */
static void find_turn_ends(chat *c, const char *source, const fk_model_info *info)
{
    const int n_candidates = 1 + (int)(sizeof turn_ends / sizeof turn_ends[0]);
    for (int k = 0; k < n_candidates && c->n_eot < FK_MAX_EOS_IDS; k++) {
        const char *s = k ? turn_ends[k - 1] : c->eos;
        if (!s || !(strstr(source, s) || (!k && strstr(source, "eos_token"))))
            continue;
        const int32_t id = special_id(c->tok, s);
        bool known = id < 0;
        for (int i = 0; i < info->n_eos; i++)
            known |= info->eos_ids[i] == id;
        for (int i = 0; i < c->n_eot; i++)
            known |= c->eot[i] == id;
        if (!known)
            c->eot[c->n_eot++] = id;
    }
}

static void describe(chat *c, const char *from)
{
    if (!c->tmpl) {
        snprintf(c->describe, sizeof c->describe, "chat: %s; POST /v1/chat/completions answers 400", c->why);
        return;
    }
    int n = snprintf(c->describe, sizeof c->describe, "chat template from %s; generation stops on the model's eos ids",
                     from);
    for (int i = 0; i < c->n_eot && n > 0 && (size_t)n < sizeof c->describe; i++) {
        char *name = token_string(c->tok, c->eot[i]);
        n += snprintf(c->describe + n, sizeof c->describe - (size_t)n, "%s %s (%d)", i ? "," : " and",
                      name ? name : "?", c->eot[i]);
        fk_free(name);
    }
}

chat *chat_create(const char *model_dir, const char *file, const char *source, fk_chat_template *given,
                  const fk_model *model)
{
    chat *c = calloc(1, sizeof *c);
    if (!c) {
        fk_chat_template_free(given);
        return NULL;
    }
    const fk_model_info info = fk_model_get_info(model);
    c->tok = fk_model_tokenizer(model);
    char *found = NULL;
    fk_error why = {0};
    if (fk_chat_template_find(model_dir, &found, &c->bos, &c->eos, &why)) {
        found = c->bos = c->eos = NULL;
        if (c->tok) { /* the bos and eos strings of the model's ids */
            c->bos = token_string(c->tok, info.bos_id);
            c->eos = token_string(c->tok, info.n_eos ? info.eos_ids[0] : -1);
        }
    }
    const char *text = NULL;
    if (!c->tok)
        snprintf(c->why, sizeof c->why, "the model has no tokenizer (tokenizer.json), which chat completions need");
    else if (given)
        c->tmpl = given, given = NULL, text = source;
    else if (!found)
        snprintf(c->why, sizeof c->why,
                 "the model has no chat template (%s); start the server with --chat-template FILE, or use "
                 "/v1/completions",
                 why.message);
    else if (fk_chat_template_parse(found, strlen(found), &c->tmpl, &why))
        snprintf(c->why, sizeof c->why,
                 "the model's chat template cannot be used (%s); start the server with --chat-template FILE, or use "
                 "/v1/completions",
                 why.message);
    else
        text = found;
    if (c->tmpl)
        find_turn_ends(c, text, &info);
    char from[4200];
    if (text == source)
        snprintf(from, sizeof from, "%s", file);
    else
        snprintf(from, sizeof from, "the model directory %s", model_dir);
    describe(c, from);
    fk_chat_template_free(given);
    fk_free(found);
    return c;
}

void chat_free(chat *c)
{
    if (!c)
        return;
    fk_chat_template_free(c->tmpl);
    fk_free(c->bos);
    fk_free(c->eos);
    free(c);
}

const char *chat_describe(const chat *c)
{
    return c->describe;
}

bool chat_prompt(const chat *c, api_generation *g, int32_t **ids, int *n, api_error *e)
{
    if (!c->tmpl) {
        api_error_set(e, 400, "invalid_request_error", "messages", "%s", c->why);
        return false;
    }
    const fk_chat_render_params p = {.messages_json = g->messages, .messages_len = g->messages_len,
                                     .add_generation_prompt = g->add_generation_prompt, .bos_token = c->bos,
                                     .eos_token = c->eos};
    char *text = NULL;
    size_t len = 0;
    fk_error err = {0};
    fk_status s = fk_chat_template_render(c->tmpl, &p, &text, &len, &err);
    if (s == FK_ERR_OUT_OF_MEMORY)
        api_error_set(e, 503, "server_error", NULL, "%s", err.message);
    else if (s == FK_ERR_INVALID_ARGUMENT) /* the template's raise_exception: "TemplateError: <its message>" */
        api_error_set(e, 400, "invalid_request_error", "messages", "%s", err.message);
    else if (s)
        api_error_set(e, 400, "invalid_request_error", "messages", "the chat template failed on these messages: %s",
                      err.message);
    if (s)
        return false;
    s = fk_tokenizer_encode(c->tok, text, len, false, ids, n, &err);
    fk_free(text);
    if (s) {
        api_error_set(e, 400, "invalid_request_error", "messages", "messages: %s", err.message);
        return false;
    }
    if (*n == 0) {
        fk_free(*ids);
        api_error_set(e, 400, "invalid_request_error", "messages", "the chat template rendered these messages as an "
                                                                   "empty prompt");
        return false;
    }
    for (int i = 0; i < c->n_eot && g->params.n_eos < FK_MAX_EOS_IDS; i++)
        g->params.eos_ids[g->params.n_eos++] = c->eot[i];
    return true;
}
