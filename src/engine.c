/* engine.c — the continuous-batching engine: owns the KV pool, block allocator, scheduler, batch builder and
 * sampler for one model, and turns submitted requests into token events, one step at a time. Single-threaded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "block_alloc.h"
#include "error.h"
#include "kv_cache.h"
#include "model.h"
#include "request.h"
#include "sampler.h"
#include "scheduler.h"

/* What one scheduler entry sampled this step. */
typedef struct sampled {
    int32_t token; /* -1: the entry computed a prefill chunk only */
    float logprob;
    fk_logprob top[FK_MAX_LOGPROBS];
} sampled;

/* A step on the device whose tokens are not yet reported (overlapped steps). */
typedef struct step_in_flight {
    uint64_t id;
    sched_entry *entries; /* [max_num_seqs]: its schedule */
    int n;
    int32_t *logit_entry; /* [max_num_seqs]: the entry of each logits row */
    int n_logits;
    int slot;             /* the workspace staging slot its tokens arrive in */
    double start;
} step_in_flight;

struct fk_engine {
    fk_model *model;
    const fk_tokenizer *tok; /* NULL: no text, no stop strings */
    fk_engine_params p;      /* resolved: num_blocks and max_model_len filled in */
    int vocab;
    kv_cache *kv;
    forward_ws *ws;
    block_alloc *blocks;
    scheduler *sched;
    batch_builder *bb;
    sampler *smp;
    float *logits;    /* [max_num_seqs][vocab], for host sampling */
    sample_row *rows; /* [max_num_seqs]: sampling values for the device sampler */
    sampled *picks;   /* [max_num_seqs], by scheduler entry */
    char *text;       /* event text: a token's delta plus what a finish flushes */
    size_t text_cap;
    uint64_t next_id;
    uint64_t prompt_tokens, generation_tokens, steps;
    fk_step_profile profile[2]; /* FK_PROFILE_DECODE, FK_PROFILE_PREFILL (params.profile) */
    uint64_t kind_launches[2], kind_steps[2]; /* device launches per kind of step, likewise indexed */
    /* Overlapped steps: while step N runs on the device the host reports step N-1 and then schedules N+1. */
    step_in_flight flights[2];
    int in_flight;       /* the flights[] entry on the device, -1: none */
    uint64_t launched;   /* steps enqueued so far (the last one's id) */
    request *zombies;    /* finished while the step in flight holds them; linked by next */
    int n_host_requests; /* requests that need the host sampler: while there are any, steps run one at a time */
    bool failed;
    char failure[FK_ERROR_MESSAGE_MAX];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

fk_engine_params fk_engine_params_default(void)
{
    return (fk_engine_params){.block_size = 16, .num_blocks = 0, .kv_cache_mb = 0, .gpu_memory_utilization = 0.9f,
                              .max_num_seqs = 256, .max_num_batched_tokens = 0, .max_model_len = 0,
                              .enable_prefix_caching = true, .overlap = true,
                              .mixed_graphs = true};
}

fk_request_params fk_request_params_default(void)
{
    return (fk_request_params){
        .max_tokens = 16,
        .sampling = {.temperature = 0, .top_p = 1, .top_k = 0, .min_p = 0, .repetition_penalty = 1,
                     .presence_penalty = 0, .frequency_penalty = 0, .seed = 0, .logprobs = -1},
    };
}

#define CPU_KV_CACHE_MB 512

int fk_default_batched_tokens(const fk_model *model)
{
    const model_config *c = &model->cfg;
    const double d = c->hidden_size, f = c->intermediate_size;
    const double qkv = d * (c->n_heads + 2 * c->n_kv_heads) * c->head_dim, o = (double)c->n_heads * c->head_dim * d;
    const double mlp = (c->arch == ARCH_GPT2 ? 2 : 3) * d * f; /* GPT-2: c_fc, c_proj; Llama: gate, up, down */
    const double params = c->n_layers * (qkv + o + mlp);       /* what each prefill token multiplies */
    int tokens = 4096;
    while (tokens > 512 && params * tokens > 4e9 * 4096)
        tokens /= 2;
    return tokens;
}

/* Fills in max_model_len and checks every value (num_blocks is resolved once the workspace exists). */
static fk_status resolve_params(const fk_model *m, fk_engine_params *p, fk_error *err)
{
    const model_config *c = &m->cfg;
    if (p->block_size < 1 || p->block_size > 1024)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "block_size must be in [1, 1024], got %d", p->block_size);
    if (p->max_num_seqs < 1 || p->max_num_seqs > 65536)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "max_num_seqs must be in [1, 65536], got %d",
                            p->max_num_seqs);
    if (p->max_num_batched_tokens < 0 || p->max_num_batched_tokens > (1 << 20))
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT,
                            "max_num_batched_tokens must be in [0, 1048576] (0: from the model's size), got %d",
                            p->max_num_batched_tokens);
    if (p->max_num_batched_tokens == 0)
        p->max_num_batched_tokens = fk_default_batched_tokens(m);
    if (c->sliding_window && p->max_model_len > c->sliding_window)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT,
                            "max_model_len %d exceeds the model's sliding_window %d: FlashKernel's attention has no "
                            "sliding-window mask, so it serves such a model up to its window (max_model_len <= %d)",
                            p->max_model_len, c->sliding_window, c->sliding_window);
    if (p->max_model_len < 0 || p->max_model_len > c->max_context)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "max_model_len must be in [0, %d] (0: the model's), got %d",
                            c->max_context, p->max_model_len);
    if (p->max_model_len == 0)
        p->max_model_len = c->max_context;
    if (p->num_blocks < 0 || p->kv_cache_mb < 0 || p->fault_after_steps < 0)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT,
                            "num_blocks (%d), kv_cache_mb (%d) and fault_after_steps (%d) must be >= 0", p->num_blocks,
                            p->kv_cache_mb, p->fault_after_steps);
    if (!(p->gpu_memory_utilization > 0 && p->gpu_memory_utilization <= 1))
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "gpu_memory_utilization must be in (0, 1], got %g",
                            (double)p->gpu_memory_utilization);
    return FK_OK;
}

/* The KV pool's size in blocks: num_blocks, or what kv_cache_mb holds, or (automatic) on a GPU what
 * gpu_memory_utilization of its memory leaves now that weights and workspaces are allocated. It must hold one
 * sequence of max_model_len; otherwise the error gives the sizes and what to change. */
static fk_status size_kv_pool(const fk_model *m, fk_engine_params *p, fk_error *err)
{
    const model_config *c = &m->cfg;
    const size_t block_bytes = kv_cache_block_bytes(m->be, c->n_layers, p->block_size, c->n_kv_heads, c->head_dim);
    const int needed = (p->max_model_len + p->block_size - 1) / p->block_size;
    const double mib = 1048576.0, gib = 1073741824.0;
    if (p->num_blocks == 0) {
        size_t budget = (size_t)p->kv_cache_mb << 20, free_bytes = 0, total = 0;
        fk_status s = m->be->ops->memory_info(m->be, &free_bytes, &total, err);
        if (s)
            return s;
        if (!p->kv_cache_mb && total) {
            /* Of utilization x total, what is in use already (weights, workspaces, context) is gone. */
            const double allowed = p->gpu_memory_utilization * (double)total - (double)(total - free_bytes);
            if (allowed < (double)needed * block_bytes)
                return fk_error_set(err, FK_ERR_OUT_OF_MEMORY,
                                    "GPU memory: %.2f GiB total, %.2f GiB in use after loading; at "
                                    "gpu_memory_utilization %.2f that leaves %.2f GiB for the KV cache, but one sequence "
                                    "of max_model_len %d needs %.2f GiB: lower --max-model-len or raise "
                                    "--gpu-memory-utilization",
                                    total / gib, (total - free_bytes) / gib, (double)p->gpu_memory_utilization,
                                    allowed > 0 ? allowed / gib : 0.0, p->max_model_len, needed * block_bytes / gib);
            budget = (size_t)allowed;
        } else if (!p->kv_cache_mb) {
            budget = (size_t)CPU_KV_CACHE_MB << 20;
        }
        size_t n = budget / block_bytes;
        p->num_blocks = n > (1u << 30) ? 1 << 30 : (int)n;
    }
    if (p->num_blocks < needed)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT,
                            "KV pool of %d blocks (%.1f MiB) cannot hold one sequence of max_model_len %d, which needs "
                            "%d blocks (%.1f MiB): raise kv_cache_mb / num_blocks or lower max_model_len",
                            p->num_blocks, p->num_blocks * block_bytes / mib, p->max_model_len, needed,
                            needed * block_bytes / mib);
    return FK_OK;
}

static bool needs_host(const request *r);

/* Destroys the zombies that no step in flight holds any more. */
static void bury(fk_engine *e)
{
    request **at = &e->zombies;
    while (*at) {
        request *r = *at;
        if (e->in_flight >= 0 && r->last_step == e->flights[e->in_flight].id) {
            at = &r->next;
            continue;
        }
        *at = r->next;
        request_destroy(r);
    }
}

/* A finished request, out of the scheduler's lists: destroyed now, or, while the step in flight holds it, kept as
 * a zombie (skipped when that step is reported, destroyed by the bury() after it). Other zombies are left alone: the
 * step being reported may still hold them further down its entries. */
static void release(fk_engine *e, request *r)
{
    if (needs_host(r))
        e->n_host_requests--;
    r->finished = true;
    if (e->in_flight >= 0 && r->last_step == e->flights[e->in_flight].id) {
        r->next = e->zombies;
        e->zombies = r;
    } else {
        request_destroy(r);
    }
}

void fk_engine_free(fk_engine *e)
{
    if (!e)
        return;
    e->in_flight = -1;
    bury(e);
    if (e->sched) {
        request_list *lists[2] = {&e->sched->running, &e->sched->waiting};
        for (int l = 0; l < 2; l++)
            while (lists[l]->head) {
                request *r = lists[l]->head;
                scheduler_remove(e->sched, r);
                request_destroy(r);
            }
    }
    scheduler_destroy(e->sched);
    block_alloc_destroy(e->blocks);
    batch_builder_destroy(e->bb);
    sampler_destroy(e->smp);
    forward_ws_free(e->model, e->ws);
    kv_cache_free(e->kv);
    free(e->logits);
    free(e->picks);
    free(e->rows);
    free(e->text);
    for (int i = 0; i < 2; i++) {
        free(e->flights[i].entries);
        free(e->flights[i].logit_entry);
    }
    free(e);
}

fk_status fk_engine_create(fk_model *m, const fk_engine_params *params, fk_engine **out, fk_error *err)
{
    *out = NULL;
    fk_engine_params p = params ? *params : fk_engine_params_default();
    fk_status s = resolve_params(m, &p, err);
    if (s)
        return s;
    fk_engine *e = calloc(1, sizeof *e);
    if (!e)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "engine: out of memory");
    e->model = m;
    e->tok = fk_model_tokenizer(m);
    e->p = p;
    e->vocab = m->cfg.vocab_size;
    e->next_id = 1;
    e->in_flight = -1;
    const model_config *c = &m->cfg;
    const int max_blocks = (p.max_model_len + p.block_size - 1) / p.block_size;
    const int max_tokens = p.max_num_batched_tokens;
    if ((s = forward_ws_create(m, max_tokens, p.max_num_seqs, max_blocks, p.max_num_seqs, true, p.mixed_graphs,
                               p.profile, &e->ws, err)) ||
        (s = size_kv_pool(m, &e->p, err)) ||
        (s = kv_cache_create(m->be, c->n_layers, e->p.num_blocks, p.block_size, c->n_kv_heads, c->head_dim, &e->kv,
                             err)) ||
        (s = forward_record_pieces(m, e->ws, e->kv, err)) ||
        (p.decode_graphs_at_start && (s = forward_record_decode_graphs(m, e->ws, e->kv, err))) ||
        (s = block_alloc_create(e->p.num_blocks, p.block_size, &e->blocks, err)) ||
        (s = scheduler_create(e->blocks, p.block_size, p.max_num_seqs, max_tokens, p.enable_prefix_caching,
                              &e->sched, err)) ||
        (s = batch_builder_create(max_tokens, p.max_num_seqs, max_blocks, &e->bb, err)) ||
        (s = sampler_create(e->vocab, &e->smp, err)))
        goto fail;
    e->logits = malloc((size_t)p.max_num_seqs * e->vocab * sizeof *e->logits);
    e->picks = malloc((size_t)p.max_num_seqs * sizeof *e->picks);
    e->rows = malloc((size_t)p.max_num_seqs * sizeof *e->rows);
    bool ok = e->logits && e->picks && e->rows;
    for (int i = 0; i < 2; i++) {
        e->flights[i].entries = malloc((size_t)p.max_num_seqs * sizeof *e->flights[i].entries);
        e->flights[i].logit_entry = malloc((size_t)p.max_num_seqs * sizeof *e->flights[i].logit_entry);
        ok = ok && e->flights[i].entries && e->flights[i].logit_entry;
    }
    if (!ok) {
        s = fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "engine: logits for %d sequences: out of memory", p.max_num_seqs);
        goto fail;
    }
    *out = e;
    return FK_OK;
fail:
    fk_engine_free(e);
    return s;
}

/* ---- submitting ---- */

static fk_status check_range(const char *name, double v, double lo, double hi, bool lo_open, fk_error *err)
{
    if (!isfinite(v))
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "%s must be a finite number", name);
    if (v > hi || (lo_open ? v <= lo : v < lo))
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "%s must be in %c%g, %g], got %g", name, lo_open ? '(' : '[',
                            lo, hi, v);
    return FK_OK;
}

static fk_status check_request(const fk_engine *e, const int32_t *prompt, int n, const fk_request_params *rp,
                               fk_error *err)
{
    const fk_sampling_params *sp = &rp->sampling;
    const int limit = e->p.max_model_len;
    fk_status s;
    if (!prompt || n < 1)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "prompt cannot be empty");
    for (int i = 0; i < n; i++)
        if (prompt[i] < 0 || prompt[i] >= e->vocab)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "Token id %d is out of vocabulary (%d)", prompt[i],
                                e->vocab);
    if (n > limit)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "prompt has %d tokens; maximum context length is %d", n,
                            limit);
    if (rp->max_tokens < 1)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "max_tokens must be at least 1, got %d", rp->max_tokens);
    if ((int64_t)n + rp->max_tokens > limit)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "requested %d + %d tokens exceeds context length %d", n,
                            rp->max_tokens, limit);
    if ((s = check_range("temperature", sp->temperature, 0, 2, false, err)) ||
        (s = check_range("top_p", sp->top_p, 0, 1, true, err)) ||
        (s = check_range("min_p", sp->min_p, 0, 1, false, err)) ||
        (s = check_range("repetition_penalty", sp->repetition_penalty, 0, 2, true, err)) ||
        (s = check_range("presence_penalty", sp->presence_penalty, -2, 2, false, err)) ||
        (s = check_range("frequency_penalty", sp->frequency_penalty, -2, 2, false, err)))
        return s;
    if (sp->top_k < 0)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "top_k must be >= 0, got %d", sp->top_k);
    if (sp->logprobs < -1 || sp->logprobs > FK_MAX_LOGPROBS)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "logprobs must be in [0, %d], got %d", FK_MAX_LOGPROBS,
                            sp->logprobs);
    if (rp->n_eos < 0 || rp->n_eos > FK_MAX_EOS_IDS)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "at most %d eos_ids, got %d", FK_MAX_EOS_IDS, rp->n_eos);
    for (int i = 0; i < rp->n_eos; i++)
        if (rp->eos_ids[i] < 0 || rp->eos_ids[i] >= e->vocab)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "eos id %d is out of vocabulary (%d)", rp->eos_ids[i],
                                e->vocab);
    if (rp->n_stop < 0 || rp->n_stop > FK_MAX_STOP || (rp->n_stop && !rp->stop))
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "at most %d stop sequences, got %d", FK_MAX_STOP,
                            rp->n_stop);
    if (rp->n_stop && !e->tok)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "stop strings need a tokenizer; the model has none");
    for (int i = 0; i < rp->n_stop; i++) {
        if (!rp->stop[i] || !rp->stop[i][0])
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "stop cannot contain an empty string");
        if (strlen(rp->stop[i]) > FK_MAX_STOP_BYTES)
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "at most %d stop sequences of <= %d bytes", FK_MAX_STOP,
                                FK_MAX_STOP_BYTES);
    }
    return FK_OK;
}

fk_status fk_engine_submit(fk_engine *e, const int32_t *prompt, int n_prompt, const fk_request_params *params,
                           uint64_t *id, fk_error *err)
{
    if (e->failed)
        return fk_error_set(err, FK_ERR_DEVICE, "engine has failed: %s", e->failure);
    const fk_request_params rp = params ? *params : fk_request_params_default();
    fk_status s = check_request(e, prompt, n_prompt, &rp, err);
    request *r;
    if (s || (s = request_create(e->next_id, prompt, n_prompt, &rp, e->bb->max_blocks, &r, err)))
        return s;
    if (e->tok && (s = detok_create(e->tok, prompt, n_prompt, true, r->params.stop, r->params.n_stop, &r->detok, err))) {
        request_destroy(r);
        return s;
    }
    r->t_arrival = now_s();
    e->n_host_requests += needs_host(r);
    scheduler_add(e->sched, r);
    e->prompt_tokens += (uint64_t)n_prompt;
    *id = e->next_id++;
    return FK_OK;
}

/* ---- one step ---- */

/* Whether a request needs the host sampler: penalties read its token history, logprobs the whole distribution. */
static bool needs_host(const request *r)
{
    const fk_sampling_params *sp = &r->params.sampling;
    return sp->logprobs >= 0 || sp->repetition_penalty != 1 || sp->presence_penalty != 0 ||
           sp->frequency_penalty != 0;
}

/* Enqueues sampling of the batch's logits rows where the logits are, each request's RNG draw taken now; the ids come
 * back through model_sample_wait. */
static fk_status sample_on_device(fk_engine *e, const sched_output *work, const batch *b, fk_error *err)
{
    for (int row = 0; row < b->n_logits; row++) {
        request *r = work->entries[e->bb->logit_entry[row]].req;
        e->rows[row] = sampler_row(&r->params.sampling, &r->rng);
    }
    return model_sample_begin(e->model, e->ws, e->rows, b->n_logits, err);
}

/* Samples a token for every entry that reached its last token; -1 for prefill chunks. Unless some request needs
 * the host sampler, tokens are sampled where the logits are and only their ids come back; either way each
 * request's RNG gives one draw per sampled token, so its tokens do not depend on the path or the batch. */
static fk_status sample(fk_engine *e, const sched_output *work, const batch *b, fk_error *err)
{
    for (int i = 0; i < work->n; i++)
        e->picks[i] = (sampled){.token = -1};
    if (b->n_logits == 0)
        return FK_OK;
    bool on_host = false;
    for (int row = 0; row < b->n_logits; row++)
        on_host |= needs_host(work->entries[e->bb->logit_entry[row]].req);
    fk_status s;
    if (!on_host) {
        const int32_t *ids;
        if ((s = sample_on_device(e, work, b, err)) || (s = model_sample_wait(e->model, e->ws, e->ws->slot, &ids, err)))
            return s;
        for (int row = 0; row < b->n_logits; row++)
            e->picks[e->bb->logit_entry[row]].token = ids[row];
        return FK_OK;
    }
    if ((s = model_fetch_logits(e->model, e->ws, b->n_logits, e->logits, err)))
        return s;
    for (int row = 0; row < b->n_logits; row++) {
        const int i = e->bb->logit_entry[row];
        request *r = work->entries[i].req;
        const float *logits = e->logits + (size_t)row * e->vocab;
        const fk_sampling_params *sp = &r->params.sampling;
        sampled *pick = &e->picks[i];
        pick->token = sampler_sample(e->smp, logits, sp, r->tokens, r->n_prompt, r->n_tokens, &r->rng);
        if (sp->logprobs >= 0)
            pick->logprob = sampler_logprobs(e->smp, logits, pick->token, sp->logprobs, pick->top);
    }
    return FK_OK;
}

/* One of the model's end-of-sequence ids, or of the request's own. */
static bool is_eos(const fk_engine *e, const request *r, int32_t token)
{
    const model_config *c = &e->model->cfg;
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] == token)
            return true;
    for (int i = 0; i < r->params.n_eos; i++)
        if (r->params.eos_ids[i] == token)
            return true;
    return false;
}

/* Appends text to e->text (at *len). Returns false when memory runs out (the text is then cut). */
static bool text_append(fk_engine *e, size_t *len, const char *s, size_t n)
{
    if (*len + n + 1 > e->text_cap) {
        size_t cap = (*len + n + 1) * 2;
        char *grown = realloc(e->text, cap);
        if (!grown)
            return false;
        e->text = grown;
        e->text_cap = cap;
    }
    memcpy(e->text + *len, s, n);
    *len += n;
    e->text[*len] = '\0';
    return true;
}

/* ev->text = what the token adds (unless it ended the request as eos); a stop string found ends it. */
static bool text_of_token(fk_engine *e, request *r, fk_token_event *ev)
{
    const char *delta = "";
    size_t n = 0;
    int stop_hit = -1;
    ev->text = e->text;
    ev->text_len = 0;
    if (ev->finish == FK_FINISH_NONE && detok_push(r->detok, ev->token, &delta, &n, &stop_hit, NULL) != FK_OK)
        return false;
    if (stop_hit >= 0)
        ev->finish = FK_FINISH_STOP;
    if (!text_append(e, &ev->text_len, delta, n))
        return false;
    ev->text = e->text;
    return true;
}

/* Adds to ev->text what the sequence still owes at its end (text held back for a stop string that never came). */
static bool text_of_finish(fk_engine *e, request *r, fk_token_event *ev)
{
    const char *owed;
    size_t n;
    if (detok_finish(r->detok, &owed, &n, NULL) != FK_OK || !text_append(e, &ev->text_len, owed, n))
        return false;
    ev->text = e->text;
    return true;
}

/* Tells the request's caller; on a final event, removes and destroys the request. */
static void emit(fk_engine *e, request *r, fk_token_event *ev)
{
    ev->request_id = r->id;
    if (ev->finish != FK_FINISH_NONE) {
        double t = now_s();
        ev->prompt_tokens = r->n_prompt;
        ev->completion_tokens = request_n_generated(r);
        ev->cached_tokens = r->cached_tokens;
        ev->preemptions = r->preemptions;
        ev->queue_s = r->t_scheduled ? r->t_scheduled - r->t_arrival : t - r->t_arrival;
        ev->prefill_s = r->t_first_token ? r->t_first_token - r->t_scheduled : 0;
        ev->decode_s = r->t_first_token ? t - r->t_first_token : 0;
    }
    if (r->params.on_token)
        r->params.on_token(ev, r->params.user);
    if (ev->finish != FK_FINISH_NONE) {
        scheduler_remove(e->sched, r);
        release(e, r);
    }
}

/* Appends each token step `step` sampled (e->picks, by entry), decides whether its request is finished (eos, stop
 * string, max_tokens) and reports it; finished requests give back their blocks now. Requests that finished after
 * the step was enqueued are skipped: what it computed for them is dropped. */
static void report(fk_engine *e, const sched_entry *entries, int n, uint64_t step, double step_start)
{
    for (int i = 0; i < n; i++) {
        request *r = entries[i].req;
        if (r->finished)
            continue;
        if (!r->t_scheduled)
            r->t_scheduled = step_start;
        if (r->pending_row >= 0 && r->last_step == step)
            r->pending_row = -1; /* known now: appended below */
        const sampled *pick = &e->picks[i];
        if (pick->token < 0)
            continue;
        if (!r->t_first_token)
            r->t_first_token = now_s();
        r->tokens[r->n_tokens++] = pick->token;
        e->generation_tokens++;
        fk_token_event ev = {.token = pick->token, .logprob = pick->logprob, .finish = FK_FINISH_NONE};
        if (r->params.sampling.logprobs > 0) {
            ev.n_top = r->params.sampling.logprobs;
            ev.top = pick->top;
        }
        if (!r->params.ignore_eos && is_eos(e, r, pick->token))
            ev.finish = FK_FINISH_EOS; /* the eos token adds no text */
        if (r->detok && !text_of_token(e, r, &ev))
            ev.finish = FK_FINISH_ERROR;
        else if (ev.finish == FK_FINISH_NONE && request_n_generated(r) == r->params.max_tokens)
            ev.finish = FK_FINISH_LENGTH;
        if (r->detok && (ev.finish == FK_FINISH_EOS || ev.finish == FK_FINISH_LENGTH) && !text_of_finish(e, r, &ev))
            ev.finish = FK_FINISH_ERROR;
        emit(e, r, &ev);
    }
}

/* The model on the batch; the fault_after_steps test hook first makes the device fail, as a real fault would. */
static fk_status forward(fk_engine *e, const batch *b, fk_error *err)
{
    if (e->p.fault_after_steps && e->steps == (uint64_t)e->p.fault_after_steps) {
        fk_status s = e->model->be->ops->inject_fault(e->model->be, err);
        if (s)
            return s;
    }
    return model_forward(e->model, e->ws, e->kv, b, err);
}

/* Waits for the tokens of step f (enqueued earlier) and reports them. */
static fk_status finish_step(fk_engine *e, const step_in_flight *f, fk_error *err)
{
    const int32_t *tokens;
    fk_status s = model_sample_wait(e->model, e->ws, f->slot, &tokens, err);
    if (s)
        return s;
    for (int i = 0; i < f->n; i++)
        e->picks[i] = (sampled){.token = -1};
    for (int row = 0; row < f->n_logits; row++)
        e->picks[f->logit_entry[row]].token = tokens[row];
    report(e, f->entries, f->n, f->id, f->start);
    bury(e);
    return FK_OK;
}

/* Reports the step in flight, if any: nothing is on the device afterwards. */
static fk_status drain(fk_engine *e, fk_error *err)
{
    if (e->in_flight < 0)
        return FK_OK;
    const step_in_flight *f = &e->flights[e->in_flight];
    e->in_flight = -1;
    return finish_step(e, f, err);
}

/* Overlapped: enqueues this step's sampling on the device (the same draws as the synchronous path), marks its sampled tokens pending, reports the step before it while the device computes, and then
 * books this step's tokens into the cache, so that the next schedule sees them (scheduler_postprocess). */
static fk_status launch_then_report_previous(fk_engine *e, const sched_output *work, const batch *b, double start,
                                             fk_error *err)
{
    fk_status s = sample_on_device(e, work, b, err);
    if (s)
        return s;
    const int prev = e->in_flight, k = prev < 0 ? 0 : prev ^ 1;
    step_in_flight *f = &e->flights[k];
    *f = (step_in_flight){.id = ++e->launched, .entries = f->entries, .n = work->n, .logit_entry = f->logit_entry,
                          .n_logits = b->n_logits, .slot = e->ws->slot, .start = start};
    memcpy(f->entries, work->entries, (size_t)work->n * sizeof *f->entries);
    memcpy(f->logit_entry, e->bb->logit_entry, (size_t)b->n_logits * sizeof *f->logit_entry);
    for (int i = 0; i < work->n; i++)
        work->entries[i].req->last_step = f->id;
    for (int row = 0; row < b->n_logits; row++)
        work->entries[f->logit_entry[row]].req->pending_row = row;
    e->in_flight = k;
    if (prev >= 0 && (s = finish_step(e, &e->flights[prev], err)))
        return s;
    scheduler_postprocess(e->sched, work);
    return FK_OK;
}

/* A forward pass failed: the engine is done for. Every request ends with FK_FINISH_ERROR. */
static fk_status fail(fk_engine *e, fk_status s, fk_error *err)
{
    e->failed = true;
    e->in_flight = -1; /* abandoned: what it computed is never reported */
    snprintf(e->failure, sizeof e->failure, "%s", err ? err->message : fk_status_name(s));
    request_list *lists[2] = {&e->sched->running, &e->sched->waiting};
    for (int l = 0; l < 2; l++)
        while (lists[l]->head) {
            fk_token_event ev = {.token = -1, .finish = FK_FINISH_ERROR};
            emit(e, lists[l]->head, &ev);
        }
    bury(e); /* nothing is in flight any more */
    return fk_error_prefix(err, FK_ERR_DEVICE, "engine failed: ");
}

/* A step of this kind is enqueued: ws->launches was `before` when it began. */
static void count_step(fk_engine *e, int kind, uint64_t before)
{
    e->steps++;
    e->kind_steps[kind]++;
    e->kind_launches[kind] += e->ws->launches - before;
}

fk_status fk_engine_step(fk_engine *e, fk_error *err)
{
    if (e->failed)
        return fk_error_set(err, FK_ERR_DEVICE, "engine has failed: %s", e->failure);
    const double start = now_s();
    /* Overlapped unless profiling (it times each step alone) or a request needs the host sampler (its logits). */
    const bool overlap = e->p.overlap && !e->p.profile && e->n_host_requests == 0;
    fk_status s;
    if (!overlap && (s = drain(e, err)))                            /* one step at a time from here */
        return fail(e, s, err);
    const sched_output *work = scheduler_schedule(e->sched);        /* running decodes first, then prefill chunks */
    if (work->n == 0)
        return (s = drain(e, err)) ? fail(e, s, err) : FK_OK;
    const batch *b = batch_build(e->bb, work, e->p.block_size);     /* flat arrays of the KV contract */
    const int kind = b->n_tokens == b->n_seqs ? FK_PROFILE_DECODE : FK_PROFILE_PREFILL;
    const uint64_t launches = e->ws->launches;
    s = forward(e, b, err);                                         /* the model, on the device */
    if (overlap) {
        if (!s)
            s = launch_then_report_previous(e, work, b, start, err); /* step N-1's tokens, reported meanwhile */
        if (s)
            return fail(e, s, err);
        count_step(e, kind, launches);
        return FK_OK;
    }
    if (!s)
        s = sample(e, work, b, err);                                /* per-request params and RNG */
    fk_step_profile *prof = &e->profile[kind];
    if (!s && e->p.profile)
        s = model_profile_take(e->model, e->ws, prof->op_s, prof->ops, err);
    if (s)
        return fail(e, s, err);
    scheduler_postprocess(e->sched, work);                          /* the tokens are in the cache */
    report(e, work->entries, work->n, 0, start);                    /* append, finish, free blocks, report */
    count_step(e, kind, launches);
    if (e->p.profile)
        prof->steps++, prof->sequences += (uint64_t)b->n_seqs, prof->wall_s += now_s() - start;
    return FK_OK;
}

void fk_engine_get_profile(const fk_engine *e, fk_step_profile out[2])
{
    out[FK_PROFILE_DECODE] = e->profile[FK_PROFILE_DECODE];
    out[FK_PROFILE_PREFILL] = e->profile[FK_PROFILE_PREFILL];
}

const char *fk_op_class_name(fk_op_class c)
{
    static const char *const names[FK_OP_CLASSES] = {"linears", "attention", "norms", "sampling", "other kernels"};
    return c >= 0 && c < FK_OP_CLASSES ? names[c] : "unknown";
}

/* ---- the rest of the API ---- */

static request *find(const fk_engine *e, uint64_t id)
{
    const request_list *lists[2] = {&e->sched->running, &e->sched->waiting};
    for (int l = 0; l < 2; l++)
        for (request *r = lists[l]->head; r; r = r->next)
            if (r->id == id)
                return r;
    return NULL;
}

fk_status fk_engine_cancel(fk_engine *e, uint64_t id, fk_error *err)
{
    request *r = find(e, id);
    if (!r)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "unknown request id %llu", (unsigned long long)id);
    fk_token_event ev = {.token = -1, .finish = FK_FINISH_CANCEL};
    emit(e, r, &ev);
    return FK_OK;
}

bool fk_engine_has_work(const fk_engine *e)
{
    return e->sched->running.count + e->sched->waiting.count > 0 || e->in_flight >= 0;
}

fk_engine_stats fk_engine_get_stats(const fk_engine *e)
{
    block_alloc_stats b = block_alloc_get_stats(e->blocks);
    return (fk_engine_stats){
        .running = e->sched->running.count,
        .waiting = e->sched->waiting.count,
        .blocks_total = b.total,
        .blocks_used = b.used,
        .blocks_free = b.free,
        .blocks_cached = b.cached,
        .prefix_query_tokens = b.query_tokens,
        .prefix_hit_tokens = b.hit_tokens,
        .preemptions = e->sched->preemptions,
        .prompt_tokens = e->prompt_tokens,
        .generation_tokens = e->generation_tokens,
        .steps = e->steps,
        .decode_launches = e->kind_launches[FK_PROFILE_DECODE],
        .decode_steps = e->kind_steps[FK_PROFILE_DECODE],
        .prefill_launches = e->kind_launches[FK_PROFILE_PREFILL],
        .prefill_steps = e->kind_steps[FK_PROFILE_PREFILL],
        .decode_graphs = e->ws->n_graphs,
        .failed = e->failed,
    };
}
