/* scheduler.c — continuous batching with chunked prefill, prefix-cache admission and recompute preemption. */
#include "scheduler.h"

#include <stdlib.h>

#include "error.h"

fk_status scheduler_create(block_alloc *blocks, int block_size, int max_num_seqs, int max_num_batched_tokens,
                           bool prefix_caching, scheduler **out, fk_error *err)
{
    scheduler *s = calloc(1, sizeof *s);
    if (s)
        s->out.entries = malloc((size_t)max_num_seqs * sizeof *s->out.entries);
    if (!s || !s->out.entries) {
        scheduler_destroy(s);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "scheduler: out of memory");
    }
    s->blocks = blocks;
    s->block_size = block_size;
    s->max_num_seqs = max_num_seqs;
    s->max_num_batched_tokens = max_num_batched_tokens;
    s->prefix_caching = prefix_caching;
    *out = s;
    return FK_OK;
}

void scheduler_destroy(scheduler *s)
{
    if (!s)
        return;
    free(s->out.entries);
    free(s);
}

static void list_unlink(request_list *l, request *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        l->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        l->tail = r->prev;
    r->prev = r->next = NULL;
    l->count--;
}

static void list_push_tail(request_list *l, request *r)
{
    r->prev = l->tail;
    r->next = NULL;
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
    l->count++;
}

static void list_push_head(request_list *l, request *r)
{
    r->next = l->head;
    r->prev = NULL;
    if (l->head)
        l->head->prev = r;
    else
        l->tail = r;
    l->head = r;
    l->count++;
}

void scheduler_add(scheduler *s, request *r)
{
    r->state = REQ_WAITING;
    list_push_tail(&s->waiting, r);
}

/* Gives back all of r's blocks, last first, so that a prompt's first blocks stay cached longest. */
static void free_blocks(scheduler *s, request *r)
{
    for (int i = r->n_blocks - 1; i >= 0; i--)
        block_alloc_free(s->blocks, r->blocks[i]);
    r->n_blocks = 0;
    r->n_computed = 0;
    r->n_registered = 0;
    r->chain_hash = 0;
}

void scheduler_remove(scheduler *s, request *r)
{
    list_unlink(r->state == REQ_RUNNING ? &s->running : &s->waiting, r);
    free_blocks(s, r);
}

/* Blocks r lacks to hold its first n_computed + n tokens. */
static int blocks_needed(const scheduler *s, const request *r, int n)
{
    int want = (r->n_computed + n + s->block_size - 1) / s->block_size;
    return want > r->n_blocks ? want - r->n_blocks : 0;
}

static void alloc_blocks(scheduler *s, request *r, int n)
{
    for (int k = blocks_needed(s, r, n); k > 0; k--)
        r->blocks[r->n_blocks++] = block_alloc_alloc(s->blocks);
}

/* Back to the head of the waiting queue, to be recomputed from scratch (or from the prefix cache). */
static void preempt(scheduler *s, request *r)
{
    list_unlink(&s->running, r);
    free_blocks(s, r);
    r->state = REQ_WAITING;
    r->preemptions++;
    s->preemptions++;
    list_push_head(&s->waiting, r);
}

/* Takes the cached blocks that hold r's leading full blocks, leaving at least one token to compute. */
static void reuse_cached_prefix(scheduler *s, request *r)
{
    const int B = s->block_size, max_hits = (r->n_tokens - 1) / B;
    while (r->n_blocks < max_hits) {
        const int32_t *t = r->tokens + (size_t)r->n_blocks * B;
        uint64_t h = block_hash(r->chain_hash, t, B);
        int b = block_alloc_lookup(s->blocks, h, t);
        if (b < 0)
            break;
        r->blocks[r->n_blocks++] = b;
        r->chain_hash = h;
    }
    r->n_registered = r->n_blocks;
    r->n_computed = r->n_blocks * B;
}

static void add_entry(scheduler *s, request *r, int n)
{
    s->out.entries[s->out.n++] =
        (sched_entry){.req = r, .n_new = n, .wants_logits = r->n_computed + n == request_n_total(r)};
    s->out.n_tokens += n;
}

const sched_output *scheduler_schedule(scheduler *s)
{
    s->out.n = s->out.n_tokens = 0;
    int budget = s->max_num_batched_tokens;
    bool preempted = false;

    /* Victims are taken from the tail, which is never before r: entries already scheduled are never preempted,
     * and r->next is read only once r is known to still be running. */
    for (request *r = s->running.head; r && budget > 0; r = r->next) {
        if (r->pending_row >= 0 && request_n_generated(r) + 1 >= r->params.max_tokens)
            continue; /* the token in flight is its last: nothing more to compute */
        int n = request_n_total(r) - r->n_computed;
        n = n < budget ? n : budget;
        while (!block_alloc_can_alloc(s->blocks, blocks_needed(s, r, n))) {
            request *victim = s->running.tail;
            preempt(s, victim);
            preempted = true;
            if (victim == r)
                break;
        }
        if (r->state != REQ_RUNNING)
            break; /* r itself was the newest: nothing after it is running */
        alloc_blocks(s, r, n);
        add_entry(s, r, n);
        budget -= n;
    }

    /* A step that had to preempt admits nothing new: the pool is full. */
    while (!preempted && s->waiting.head && budget > 0 && s->running.count < s->max_num_seqs) {
        request *r = s->waiting.head;
        if (r->pending_row >= 0)
            break; /* preempted while its last token was in flight: it returns once that token is known */
        if (s->prefix_caching)
            reuse_cached_prefix(s, r);
        int n = r->n_tokens - r->n_computed;
        n = n < budget ? n : budget;
        if (!block_alloc_can_alloc(s->blocks, blocks_needed(s, r, n))) {
            free_blocks(s, r); /* the cached blocks it took go back to the cache */
            break;
        }
        if (!r->admitted_once) {
            r->admitted_once = true;
            r->cached_tokens = r->n_computed;
            block_alloc_count_query(s->blocks, r->n_tokens, r->n_computed);
        }
        alloc_blocks(s, r, n);
        list_unlink(&s->waiting, r);
        r->state = REQ_RUNNING;
        list_push_tail(&s->running, r);
        add_entry(s, r, n);
        budget -= n;
    }
    return &s->out;
}

void scheduler_postprocess(scheduler *s, const sched_output *out)
{
    const int B = s->block_size;
    for (int i = 0; i < out->n; i++) {
        request *r = out->entries[i].req;
        if (r->finished)
            continue; /* ended while this step was in flight: its blocks are gone */
        r->n_computed += out->entries[i].n_new;
        while (s->prefix_caching && r->n_registered < r->n_computed / B) {
            const int32_t *t = r->tokens + (size_t)r->n_registered * B;
            r->chain_hash = block_hash(r->chain_hash, t, B);
            block_alloc_register(s->blocks, r->blocks[r->n_registered], r->chain_hash, t);
            r->n_registered++;
        }
    }
}
