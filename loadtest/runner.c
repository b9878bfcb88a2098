/* runner.c — the client threads of one level. They share one mutex: it hands out request indexes (and, in the
 * open loop, arrival times) and takes back results; a request itself runs outside it. The calling thread waits on
 * a condition variable and draws the progress line. */
#include "runner.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "rng.h"

enum { THREAD_STACK = 512 * 1024 }; /* a request needs ~20 KiB (a 16 KiB read buffer); 256+ threads stay cheap */

typedef struct shared {
    const runner_config *c;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* a request finished or a client exited */
    long long next;         /* the next request's index */
    double next_arrival;    /* open loop: when the next request is due */
    rng arrivals;
    double t0, t_end;       /* the level's start; when sending stops (--duration), else 0 */
    level_results *out;
    size_t failed;          /* finished with an error (not counting interruptions) */
    long long out_tokens;
    int clients;            /* threads still running */
    atomic_int in_flight;   /* requests sent and not finished */
    bool abort;             /* out of memory, or a thread failed to start: stop the level */
} shared;

static bool done_sending(const shared *s)
{
    const runner_config *c = s->c;
    return atomic_load(c->stop) || s->abort || (c->requests > 0 && s->next >= c->requests) ||
           (s->t_end > 0 && clock_now() >= s->t_end);
}

/* Sleeps until time `at`; false if the run is stopped meanwhile. */
static bool wait_until(const runner_config *c, double at)
{
    for (;;) {
        if (atomic_load(c->stop))
            return false;
        double left = at - clock_now();
        if (left <= 0)
            return true;
        struct pollfd p = {.fd = c->stop_fd, .events = POLLIN};
        poll(&p, c->stop_fd >= 0 ? 1 : 0, (int)(left * 1e3) + 1); /* EINTR: just look again */
    }
}

static void *client(void *arg)
{
    shared *s = arg;
    const runner_config *c = s->c;
    buf body = {0};
    pthread_mutex_lock(&s->mu);
    while (!done_sending(s)) {
        long long i = s->next++;
        double at = 0;
        if (c->rate > 0) {
            at = s->next_arrival;
            s->next_arrival += rng_exponential(&s->arrivals, c->rate);
            if (s->t_end > 0 && at >= s->t_end)
                break;
        }
        pthread_mutex_unlock(&s->mu);

        bool sent = false, oom = false;
        req_result r;
        if (c->rate <= 0 || wait_until(c, at)) {
            if (request_body(c->rq, c->prompts, c->level, (unsigned long long)i, &body)) {
                atomic_fetch_add(&s->in_flight, 1);
                request_run(c->rq, body.s, body.len,
                            request_cancel_point(c->rq, c->seed, c->level, (unsigned long long)i), s->t0, &r);
                atomic_fetch_sub(&s->in_flight, 1);
                sent = true;
            } else {
                oom = true;
            }
        }

        pthread_mutex_lock(&s->mu);
        if (sent) {
            level_results *o = s->out;
            if (o->n == o->cap) {
                size_t cap = o->cap ? o->cap * 2 : 256;
                req_result *grown = realloc(o->r, cap * sizeof *grown);
                if (grown) {
                    o->r = grown;
                    o->cap = cap;
                }
            }
            if (o->n < o->cap) {
                o->r[o->n++] = r;
                if (r.error != REQ_OK && r.error != REQ_INTERRUPTED && r.error != REQ_CANCELLED)
                    s->failed++;
                if (r.error == REQ_OK)
                    s->out_tokens += r.output_tokens;
            } else {
                request_result_free(&r);
                oom = true;
            }
            pthread_cond_signal(&s->cv);
        }
        if (oom)
            s->abort = true;
        if (!sent)
            break;
    }
    s->clients--;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    buf_free(&body);
    return NULL;
}

static void progress(const runner_config *c, double elapsed, size_t done, int in_flight, size_t failed,
                     long long tokens, bool last)
{
    char line[160];
    int n = snprintf(line, sizeof line, "[concurrency %d] %zu", c->concurrency, done);
    if (c->requests > 0)
        n += snprintf(line + n, sizeof line - (size_t)n, "/%lld", c->requests);
    snprintf(line + n, sizeof line - (size_t)n, " requests done, %d in flight, %zu failed, %.0f output tok/s, %.0f s",
             in_flight, failed, elapsed > 0 ? (double)tokens / elapsed : 0.0, elapsed);
    if (c->progress_tty)
        fprintf(stderr, last ? "\r\033[K" : "\r%s\033[K", line);
    else if (!last)
        fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

int runner_run(const runner_config *c, level_results *out, char *err, size_t err_len)
{
    *out = (level_results){0};
    shared s = {.c = c, .out = out};
    rng_init(&s.arrivals, c->seed, c->level, 0xa771a15ull); /* a stream apart from the prompts' */
    pthread_t *th = calloc((size_t)c->concurrency, sizeof *th);
    pthread_condattr_t ca;
    pthread_attr_t ta;
    if (!th) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    pthread_mutex_init(&s.mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_attr_init(&ta);
    pthread_attr_setstacksize(&ta, THREAD_STACK);

    int rc = 0, started = 0;
    pthread_mutex_lock(&s.mu); /* every client starts when all exist */
    for (; started < c->concurrency; started++) {
        int e = pthread_create(&th[started], &ta, client, &s);
        if (e) {
            snprintf(err, err_len, "cannot start client thread %d of %d: %s", started + 1, c->concurrency,
                     strerror(e));
            s.abort = true;
            rc = -1;
            break;
        }
        s.clients++;
    }
    s.t0 = clock_now();
    s.next_arrival = s.t0;
    s.t_end = c->duration_s > 0 ? s.t0 + c->duration_s : 0;

    double shown = 0, every = c->progress_tty ? 1 : 10;
    bool drawn = false;
    while (s.clients > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&s.cv, &s.mu, &ts);
        double elapsed = clock_now() - s.t0;
        if (elapsed >= 2 && elapsed - shown >= every) { /* long levels only */
            shown = elapsed;
            size_t done = out->n, failed = s.failed;
            long long tokens = s.out_tokens;
            pthread_mutex_unlock(&s.mu);
            progress(c, elapsed, done, atomic_load(&s.in_flight), failed, tokens, false);
            drawn = true;
            pthread_mutex_lock(&s.mu);
        }
    }
    if (s.abort && rc == 0) {
        snprintf(err, err_len, "out of memory");
        rc = -1;
    }
    pthread_mutex_unlock(&s.mu);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    if (drawn)
        progress(c, 0, 0, 0, 0, 0, true);
    pthread_attr_destroy(&ta);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    free(th);
    return rc;
}

void runner_results_free(level_results *out)
{
    for (size_t i = 0; i < out->n; i++)
        request_result_free(&out->r[i]);
    free(out->r);
    *out = (level_results){0};
}
