/* request.c — creating and destroying a request (it owns copies of everything the caller passed). */
#include "request.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

fk_status request_create(uint64_t id, const int32_t *prompt, int n_prompt, const fk_request_params *params,
                         int max_blocks, request **out, fk_error *err)
{
    *out = NULL;
    request *r = calloc(1, sizeof *r);
    if (!r)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "request: out of memory");
    r->id = id;
    r->params = *params;
    r->tokens = malloc(((size_t)n_prompt + (size_t)params->max_tokens) * sizeof *r->tokens);
    r->blocks = malloc((size_t)max_blocks * sizeof *r->blocks);
    bool ok = r->tokens && r->blocks;
    for (int i = 0; ok && i < params->n_stop; i++)
        ok = (r->stop_copies[i] = strdup(params->stop[i])) != NULL;
    if (!ok) {
        request_destroy(r);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "request of %d + %d tokens: out of memory", n_prompt,
                            params->max_tokens);
    }
    r->params.stop = (const char *const *)r->stop_copies;
    memcpy(r->tokens, prompt, (size_t)n_prompt * sizeof *prompt);
    r->n_prompt = r->n_tokens = n_prompt;
    r->pending_row = -1;
    rng_seed(&r->rng, params->sampling.seed);
    *out = r;
    return FK_OK;
}

void request_destroy(request *r)
{
    if (!r)
        return;
    detok_free(r->detok);
    for (int i = 0; i < FK_MAX_STOP; i++)
        free(r->stop_copies[i]);
    free(r->tokens);
    free(r->blocks);
    free(r);
}

int request_n_generated(const request *r)
{
    return r->n_tokens - r->n_prompt;
}

int request_n_total(const request *r)
{
    return r->n_tokens + (r->pending_row >= 0);
}
