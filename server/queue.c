/* queue.c — the hand-off between the HTTP threads and the engine thread (pending submissions, cancels, server
 * state, published statistics) and each request's output buffer with its suspend/resume protocol. The server's
 * only mutexes and condition variables; see queue.h for ownership and lock order. */
#include "queue.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct queue {
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* the engine thread waits here when idle */
    pthread_cond_t idle_cv; /* queue_wait_idle waits here for the last request to go */
    queue_hooks hooks;
    int max_queue;
    int max_in_flight; /* 0: no cap but max_queue */

    queue_state state;
    double deadline;

    queue_request *pending_head, *pending_tail;
    int n_pending;
    queue_request *cancel_head;

    queue_request *live_head;
    int n_live;
    int n_in_flight; /* pushed and not yet released: waiting, running, or sending their last bytes */
    uint64_t next_serial;

    fk_engine_stats stats;
    metrics metrics;
};

/* ---- output buffers ---- */

/* Empties it, keeping the memory. */
static void output_clear(queue_output *o)
{
    o->n_events = 0;
    o->text_len = 0;
    o->n_top = 0;
    o->bytes = 0;
}

void queue_output_free(queue_output *o)
{
    free(o->events);
    free(o->text);
    free(o->top);
    memset(o, 0, sizeof *o);
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *grown = realloc(*p, c * elem);
    if (!grown)
        return false;
    *p = grown, *cap = c;
    return true;
}

/* Appends one event; false when out of memory. */
static bool output_append(queue_output *o, const fk_token_event *ev)
{
    size_t cap_events = (size_t)o->cap_events;
    const size_t n_top = ev->n_top > 0 ? (size_t)ev->n_top : 0;
    if (!grow((void **)&o->events, &cap_events, (size_t)o->n_events + 1, sizeof *o->events) ||
        !grow((void **)&o->text, &o->text_cap, o->text_len + ev->text_len + 1, 1) ||
        !grow((void **)&o->top, &o->cap_top, o->n_top + n_top, sizeof *o->top))
        return false;
    o->cap_events = (int)cap_events;
    queue_event *e = &o->events[o->n_events++];
    *e = (queue_event){.token = ev->token, .logprob = ev->logprob, .n_top = (int)n_top,
                       .text_off = o->text_len, .text_len = ev->text_len, .top_off = o->n_top};
    if (ev->text_len)
        memcpy(o->text + o->text_len, ev->text, ev->text_len);
    o->text_len += ev->text_len;
    o->text[o->text_len] = '\0';
    if (n_top)
        memcpy(o->top + o->n_top, ev->top, n_top * sizeof *o->top);
    o->n_top += n_top;
    /* JSON escaping can double text; an event's fields and a top entry's take about this much. */
    o->bytes += 2 * ev->text_len + 64 + 48 * n_top;
    return true;
}

/* ---- the queue ---- */

queue *queue_create(int max_queue, int max_in_flight, const queue_hooks *hooks)
{
    queue *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&q->work_cv, &attr);
    pthread_cond_init(&q->idle_cv, &attr);
    pthread_condattr_destroy(&attr);
    q->hooks = *hooks;
    q->max_queue = max_queue;
    q->max_in_flight = max_in_flight;
    q->state = QUEUE_LOADING;
    q->next_serial = 1;
    metrics_init(&q->metrics);
    return q;
}

void queue_destroy(queue *q)
{
    if (!q)
        return;
    pthread_cond_destroy(&q->work_cv);
    pthread_cond_destroy(&q->idle_cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

static void timespec_at(double t, struct timespec *ts)
{
    ts->tv_sec = (time_t)t;
    ts->tv_nsec = (long)((t - (double)ts->tv_sec) * 1e9);
    if (ts->tv_nsec >= 1000000000L)
        ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

/* ---- HTTP side ---- */

queue_request *queue_request_create(queue *q, void *consumer, bool stream)
{
    queue_request *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    pthread_mutex_init(&r->mu, NULL);
    atomic_init(&r->refs, 1);
    r->q = q;
    r->consumer = consumer;
    r->stream = stream;
    r->params = fk_request_params_default();
    r->res.phase = QUEUE_WAITING;
    pthread_mutex_lock(&q->mu);
    r->serial = q->next_serial++;
    r->live_next = q->live_head;
    if (q->live_head)
        q->live_head->live_prev = r;
    q->live_head = r;
    q->n_live++;
    pthread_mutex_unlock(&q->mu);
    return r;
}

queue_push_result queue_push(queue *q, queue_request *r)
{
    pthread_mutex_lock(&q->mu);
    queue_push_result res = QUEUE_PUSHED;
    if (q->state != QUEUE_SERVING)
        res = QUEUE_NOT_SERVING;
    else if (q->n_pending + q->stats.waiting >= q->max_queue ||
             (q->max_in_flight && q->n_in_flight >= q->max_in_flight))
        res = QUEUE_FULL;
    else {
        atomic_fetch_add(&r->refs, 1);
        r->pushed = true;
        q->n_in_flight++;
        if (q->pending_tail)
            q->pending_tail->pending_next = r;
        else
            q->pending_head = r;
        q->pending_tail = r;
        q->n_pending++;
        pthread_cond_signal(&q->work_cv);
    }
    pthread_mutex_unlock(&q->mu);
    return res;
}

/* Under r->mu: wakes the consumer if it is parked. */
static void wake(queue_request *r)
{
    if (r->consumer && r->suspended) {
        r->suspended = false;
        r->q->hooks.resume(r->consumer);
    }
}

bool queue_poll(queue_request *r, queue_output *out, queue_result *res, double now)
{
    pthread_mutex_lock(&r->mu);
    const queue_result *cur = &r->res;
    const bool ended = cur->phase == QUEUE_REJECTED || cur->phase == QUEUE_FINISHED;
    bool ready = ended || cur->client_gone || cur->closing;
    if (r->stream)
        ready = ready || r->out.n_events > 0 || cur->phase != r->phase_seen || cur->ping;
    if (ready) {
        output_clear(out);
        queue_output t = *out;
        *out = r->out;
        r->out = t;
        *res = *cur;
        r->res.ping = false;
        r->phase_seen = cur->phase;
        r->last_poll = now;
    } else if (r->consumer) {
        r->suspended = true;
        r->q->hooks.suspend(r->consumer, r->serial);
    }
    pthread_mutex_unlock(&r->mu);
    return ready;
}

bool queue_detach(queue_request *r)
{
    pthread_mutex_lock(&r->mu);
    r->consumer = NULL;
    r->suspended = false;
    const bool unfinished = r->res.phase == QUEUE_WAITING || r->res.phase == QUEUE_ACCEPTED;
    pthread_mutex_unlock(&r->mu);
    return unfinished;
}

void queue_cancel(queue *q, queue_request *r)
{
    pthread_mutex_lock(&q->mu);
    if (r->pushed && !r->cancelled) {
        r->cancelled = true;
        if (r->taken) { /* else the engine thread drops it instead of submitting it */
            atomic_fetch_add(&r->refs, 1);
            r->cancel_next = q->cancel_head;
            q->cancel_head = r;
            pthread_cond_signal(&q->work_cv);
        }
    }
    pthread_mutex_unlock(&q->mu);
}

void queue_release(queue_request *r)
{
    if (atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    queue *q = r->q;
    pthread_mutex_lock(&q->mu);
    if (r->live_prev)
        r->live_prev->live_next = r->live_next;
    else
        q->live_head = r->live_next;
    if (r->live_next)
        r->live_next->live_prev = r->live_prev;
    if (r->pushed)
        q->n_in_flight--;
    const bool idle = --q->n_live == 0;
    if (idle)
        pthread_cond_broadcast(&q->idle_cv);
    pthread_mutex_unlock(&q->mu);
    free(r->prompt);
    for (int i = 0; i < FK_MAX_STOP; i++)
        free(r->stop_copies[i]);
    queue_output_free(&r->out);
    pthread_mutex_destroy(&r->mu);
    free(r);
    /* The last request gone: what a burst allocated (its connections' buffers, outputs) is free in malloc's arenas;
     * give it back to the system, or the server's resident size stays at its highest burst for good. */
    if (idle)
        malloc_trim(0);
}

queue_request *queue_find(queue *q, uint64_t serial)
{
    pthread_mutex_lock(&q->mu);
    queue_request *r = q->live_head;
    while (r && r->serial != serial)
        r = r->live_next;
    if (r) {
        /* A request whose count reached 0 is being freed (it waits for this lock to unlink itself). */
        int n = atomic_load(&r->refs);
        while (n > 0 && !atomic_compare_exchange_weak(&r->refs, &n, n + 1))
            ;
        if (n == 0)
            r = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    return r;
}

bool queue_gone(queue_request *r)
{
    pthread_mutex_lock(&r->mu);
    const bool parked = r->consumer && r->suspended;
    if (parked) {
        r->res.client_gone = true;
        wake(r);
    }
    pthread_mutex_unlock(&r->mu);
    return parked;
}

double queue_ping(queue *q, double now, double interval)
{
    double next = interval;
    pthread_mutex_lock(&q->mu);
    for (queue_request *r = q->live_head; r; r = r->live_next) {
        pthread_mutex_lock(&r->mu);
        if (r->stream && r->consumer && r->suspended && r->phase_seen == QUEUE_ACCEPTED) {
            const double due = r->last_poll + interval - now;
            if (due <= 0) {
                r->res.ping = true;
                wake(r);
            } else if (due < next) {
                next = due;
            }
        }
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return next;
}

void queue_close(queue *q)
{
    pthread_mutex_lock(&q->mu);
    for (queue_request *r = q->live_head; r; r = r->live_next) {
        pthread_mutex_lock(&r->mu);
        r->res.closing = true;
        wake(r);
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_unlock(&q->mu);
}

bool queue_wait_idle(queue *q, double deadline)
{
    struct timespec ts;
    timespec_at(deadline, &ts);
    pthread_mutex_lock(&q->mu);
    while (q->n_live > 0 && pthread_cond_timedwait(&q->idle_cv, &q->mu, &ts) == 0)
        ;
    const bool idle = q->n_live == 0;
    pthread_mutex_unlock(&q->mu);
    return idle;
}

queue_state queue_get_state(queue *q)
{
    pthread_mutex_lock(&q->mu);
    queue_state s = q->state;
    pthread_mutex_unlock(&q->mu);
    return s;
}

void queue_serve(queue *q)
{
    pthread_mutex_lock(&q->mu);
    if (q->state == QUEUE_LOADING)
        q->state = QUEUE_SERVING;
    pthread_mutex_unlock(&q->mu);
}

void queue_shutdown(queue *q, double now, double timeout)
{
    pthread_mutex_lock(&q->mu);
    if (q->state == QUEUE_LOADING || q->state == QUEUE_SERVING) {
        q->state = QUEUE_DRAINING;
        q->deadline = now + timeout;
    } else if (q->state == QUEUE_DRAINING) {
        q->deadline = now;
    }
    pthread_cond_broadcast(&q->work_cv);
    pthread_mutex_unlock(&q->mu);
}

void queue_snapshot(queue *q, metrics *m, metrics_gauges *g)
{
    pthread_mutex_lock(&q->mu);
    *m = q->metrics;
    g->engine = q->stats;
    g->pending = q->n_pending;
    pthread_mutex_unlock(&q->mu);
}

/* ---- engine side ---- */

void queue_take(queue *q, bool busy, queue_work *w)
{
    pthread_mutex_lock(&q->mu);
    for (;;) {
        const bool stopping = q->state != QUEUE_LOADING && q->state != QUEUE_SERVING;
        if (busy || q->pending_head || q->cancel_head || stopping)
            break;
        pthread_cond_wait(&q->work_cv, &q->mu);
    }
    /* Requests cancelled before being taken are never submitted. */
    queue_request **submit = &w->submit, **dropped = &w->dropped;
    for (queue_request *r = q->pending_head; r; r = r->pending_next) {
        r->taken = true;
        queue_request ***tail = r->cancelled ? &dropped : &submit;
        **tail = r;
        *tail = &r->pending_next;
    }
    *submit = *dropped = NULL;
    q->pending_head = q->pending_tail = NULL;
    q->stats.waiting += q->n_pending; /* they wait in the engine now; the next queue_publish has the exact count */
    q->n_pending = 0;
    w->cancel = q->cancel_head;
    q->cancel_head = NULL;
    w->state = q->state;
    w->deadline = q->deadline;
    pthread_mutex_unlock(&q->mu);
}

void queue_accept(queue_request *r)
{
    pthread_mutex_lock(&r->mu);
    r->res.phase = QUEUE_ACCEPTED;
    if (r->stream)
        wake(r);
    pthread_mutex_unlock(&r->mu);
}

void queue_reject(queue_request *r, fk_status status, const char *message)
{
    pthread_mutex_lock(&r->mu);
    r->res.phase = QUEUE_REJECTED;
    r->res.status = status;
    snprintf(r->res.message, sizeof r->res.message, "%s", message);
    wake(r);
    pthread_mutex_unlock(&r->mu);
}

bool queue_deliver(queue_request *r, const fk_token_event *ev, double extra_queue_s)
{
    bool ok = true;
    pthread_mutex_lock(&r->mu);
    queue_result *res = &r->res;
    if ((ev->token >= 0 || ev->text_len) && !res->overflow) {
        if (r->stream && r->out.bytes > QUEUE_STREAM_BUFFER_MAX)
            res->overflow = true;
        else if (!output_append(&r->out, ev))
            res->overflow = true; /* out of memory: end it the same way */
        ok = !res->overflow;
    }
    if (ev->finish != FK_FINISH_NONE) {
        res->phase = QUEUE_FINISHED;
        res->finish = ev->finish;
        res->prompt_tokens = ev->prompt_tokens;
        res->completion_tokens = ev->completion_tokens;
        res->cached_tokens = ev->cached_tokens;
        res->preemptions = ev->preemptions;
        res->queue_s = ev->queue_s + extra_queue_s;
        res->prefill_s = ev->prefill_s;
        res->decode_s = ev->decode_s;
        res->ttft_s = r->t_first > 0 ? r->t_first - r->t_arrival : 0;
    }
    if (r->stream || ev->finish != FK_FINISH_NONE)
        wake(r);
    pthread_mutex_unlock(&r->mu);
    return ok;
}

void queue_publish(queue *q, const fk_engine_stats *stats, const metrics *m)
{
    pthread_mutex_lock(&q->mu);
    q->stats = *stats;
    q->metrics = *m;
    pthread_mutex_unlock(&q->mu);
}

queue_request *queue_fail(queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->state = QUEUE_FAILED;
    queue_request *pending = q->pending_head;
    for (queue_request *r = pending; r; r = r->pending_next)
        r->taken = true;
    q->pending_head = q->pending_tail = NULL;
    q->n_pending = 0;
    pthread_mutex_unlock(&q->mu);
    return pending;
}
