/* request.h — one generation request: its tokens, parameters, KV block table, RNG and streaming text state. */
#ifndef FK_REQUEST_H
#define FK_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "detok.h"
#include "flashkernel.h"
#include "sampler.h"

typedef enum req_state { REQ_WAITING, REQ_RUNNING } req_state;

typedef struct request {
    uint64_t id;
    req_state state;
    int32_t *tokens; /* [n_prompt + max_tokens]: the prompt, then generated tokens */
    int n_prompt;
    int n_tokens;
    int n_computed;  /* leading tokens whose K/V are in the cache */
    int32_t *blocks; /* [max_blocks]: the block table */
    int n_blocks;
    int n_registered;    /* leading full blocks recorded in the prefix cache */
    uint64_t chain_hash; /* prefix-cache hash of block n_registered - 1 */
    fk_request_params params; /* stop points into stop_copies */
    char *stop_copies[FK_MAX_STOP];
    rng rng;
    detok *detok; /* NULL when the model has no tokenizer */
    bool admitted_once;
    int cached_tokens; /* prefix-cache hits at first admission */
    int preemptions;
    double t_arrival, t_scheduled, t_first_token; /* monotonic seconds */
    /* Overlapped steps (engine.c): the step in flight may have sampled this request's next token, which the host
     * does not know yet; the next step computes it all the same, from a placeholder id whose token the device reads
     * where the sampling left it (batch.h). */
    int pending_row;       /* >= 0: that token is logits row pending_row of step last_step; -1: none */
    uint64_t last_step;    /* the last step that computed any of its tokens (0: none yet); a step that computes
                            * the pending token samples the next one, so the pending row is always that step's */
    bool finished;         /* its final event is sent; it is destroyed once no step in flight holds it */
    struct request *prev, *next; /* in the scheduler's waiting or running list */
} request;

/* Copies prompt and params (stop strings included); max_blocks bounds the block table. Validation is the
 * engine's; this only fails for lack of memory. */
fk_status request_create(uint64_t id, const int32_t *prompt, int n_prompt, const fk_request_params *params,
                         int max_blocks, request **out, fk_error *err);
void request_destroy(request *r);

/* Generated tokens so far (known to the host). */
int request_n_generated(const request *r);

/* Its tokens, the one still being sampled by the step in flight included. */
int request_n_total(const request *r);

#endif
