/* scheduler.h — which requests run each step: running sequences first (decodes and the rest of chunked
 * prefills, oldest first), then waiting ones while the token budget, max_num_seqs and free KV blocks allow.
 * A running sequence that cannot get a block preempts the most recently admitted one, which gives back all its
 * blocks and returns to the head of the waiting queue, to be recomputed. */
#ifndef FK_SCHEDULER_H
#define FK_SCHEDULER_H

#include <stdbool.h>

#include "block_alloc.h"
#include "request.h"

/* A request and how many of its tokens this step computes. */
typedef struct sched_entry {
    request *req;
    int n_new;
    bool wants_logits; /* this step reaches the request's last token: a new token is sampled */
} sched_entry;

typedef struct sched_output {
    sched_entry *entries; /* running order */
    int n;
    int n_tokens;
} sched_output;

typedef struct request_list {
    request *head, *tail;
    int count;
} request_list;

typedef struct scheduler {
    block_alloc *blocks;
    int block_size;
    int max_num_seqs;
    int max_num_batched_tokens;
    bool prefix_caching;
    request_list waiting, running; /* running: admission order */
    uint64_t preemptions;
    sched_output out;
} scheduler;

fk_status scheduler_create(block_alloc *blocks, int block_size, int max_num_seqs, int max_num_batched_tokens,
                           bool prefix_caching, scheduler **out, fk_error *err);
void scheduler_destroy(scheduler *s);

/* Queues a new request at the tail of the waiting list. */
void scheduler_add(scheduler *s, request *r);

/* This step's work. Blocks for it are allocated; valid until the next call. */
const sched_output *scheduler_schedule(scheduler *s);

/* After the forward pass (or, overlapped, once it is enqueued and the step before is postprocessed): the scheduled
 * tokens are in the cache; full blocks enter the prefix cache. Requests that finished meanwhile are skipped. */
void scheduler_postprocess(scheduler *s, const sched_output *out);

/* Removes a request from its list and frees its blocks (finish or cancel). The caller destroys it. */
void scheduler_remove(scheduler *s, request *r);

#endif
