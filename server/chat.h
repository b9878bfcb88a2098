/* chat.h — the chat route's model side: the chat template (the model directory's tokenizer_config.json, or
 * --chat-template FILE), the bos_token and eos_token strings it is rendered with, the end-of-turn tokens generation
 * also stops on, and a request's prompt: its messages rendered, then tokenized without adding special tokens again
 * (the template has them). Immutable once created: any HTTP thread may render with it. */
#ifndef FK_SERVER_CHAT_H
#define FK_SERVER_CHAT_H

#include "api.h"
#include "flashkernel.h"

typedef struct chat chat;

/* The model's chat side: the template `given` (taken; the parsed `source` of --chat-template `file`), else the
 * model directory's. A model without a usable template or without a tokenizer still gets a chat, whose requests fail
 * with the reason (chat_describe says it). NULL only when out of memory. */
chat *chat_create(const char *model_dir, const char *file, const char *source, fk_chat_template *given,
                  const fk_model *model);

void chat_free(chat *c);

/* One line for the startup log: where the template comes from and the end-of-turn tokens, or why there is none. */
const char *chat_describe(const chat *c);

/* The prompt of a chat request: *ids (fk_free) of its messages rendered with the template; the end-of-turn ids are
 * added to g->params.eos_ids. A 400 when there is no template, when the template raises an exception (its message)
 * or fails, or when the rendered text is empty. */
bool chat_prompt(const chat *c, api_generation *g, int32_t **ids, int *n, api_error *e);

#endif
