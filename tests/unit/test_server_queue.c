/* test_server_queue.c — server/queue.c: the hand-off between HTTP threads and the engine thread (states, the queue
 * cap and the in-flight cap, cancels before and after the engine takes a request, references), the consumer's
 * park/wake protocol (a poll with nothing parks, the producer's next change wakes, exactly once), pings, disconnects,
 * closing, and a producer and consumer on two threads passing 20,000 events with no wake-up lost. */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "queue.h"

/* A consumer that counts the hooks' calls; a wake posts the semaphore. */
typedef struct consumer {
    int suspends, resumes;
    uint64_t serial;
    sem_t wake;
} consumer;

static void on_suspend(void *c, uint64_t serial)
{
    ((consumer *)c)->suspends++;
    ((consumer *)c)->serial = serial;
}

static void on_resume(void *c)
{
    ((consumer *)c)->resumes++;
    sem_post(&((consumer *)c)->wake);
}

static const queue_hooks hooks = {.suspend = on_suspend, .resume = on_resume};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static fk_token_event token(int32_t id, const char *text, fk_finish_reason finish)
{
    return (fk_token_event){.token = id, .text = text, .text_len = text ? strlen(text) : 0, .finish = finish,
                            .prompt_tokens = 3, .completion_tokens = 2, .queue_s = 0.5};
}

static queue *serving(int max_queue)
{
    queue *q = queue_create(max_queue, 0, &hooks);
    assert_non_null(q);
    queue_serve(q);
    return q;
}

static void test_states(void **state)
{
    (void)state;
    consumer c = {0};
    queue *q = queue_create(4, 0, &hooks);
    assert_int_equal(queue_get_state(q), QUEUE_LOADING);
    queue_request *r = queue_request_create(q, &c, false);
    assert_int_equal(queue_push(q, r), QUEUE_NOT_SERVING);
    queue_serve(q);
    assert_int_equal(queue_get_state(q), QUEUE_SERVING);
    queue_shutdown(q, 100.0, 30.0);
    assert_int_equal(queue_get_state(q), QUEUE_DRAINING);
    queue_serve(q); /* a shutdown during loading stays */
    assert_int_equal(queue_get_state(q), QUEUE_DRAINING);
    assert_int_equal(queue_push(q, r), QUEUE_NOT_SERVING);
    queue_work w;
    queue_take(q, false, &w); /* does not wait once draining */
    assert_int_equal(w.state, QUEUE_DRAINING);
    assert_true(w.deadline == 130.0);
    queue_shutdown(q, 110.0, 30.0); /* a second signal: the deadline is now */
    queue_take(q, false, &w);
    assert_true(w.deadline == 110.0);
    assert_null(queue_fail(q));
    assert_int_equal(queue_get_state(q), QUEUE_FAILED);
    queue_release(r);
    assert_true(queue_wait_idle(q, now_s()));
    queue_destroy(q);
}

static void test_queue_cap(void **state)
{
    (void)state;
    consumer c = {0};
    queue *q = serving(2);
    queue_request *r[4];
    for (int i = 0; i < 4; i++)
        r[i] = queue_request_create(q, &c, false);
    assert_int_equal(queue_push(q, r[0]), QUEUE_PUSHED);
    assert_int_equal(queue_push(q, r[1]), QUEUE_PUSHED);
    assert_int_equal(queue_push(q, r[2]), QUEUE_FULL);
    queue_work w;
    queue_take(q, false, &w);
    assert_ptr_equal(w.submit, r[0]);
    assert_ptr_equal(r[0]->pending_next, r[1]);
    assert_null(r[1]->pending_next);
    /* Taken requests wait in the engine: still full until the engine publishes fewer waiting. */
    assert_int_equal(queue_push(q, r[2]), QUEUE_FULL);
    metrics m;
    metrics_init(&m);
    fk_engine_stats st = {.waiting = 1};
    queue_publish(q, &st, &m);
    assert_int_equal(queue_push(q, r[2]), QUEUE_PUSHED);
    assert_int_equal(queue_push(q, r[3]), QUEUE_FULL);
    metrics_gauges g;
    queue_snapshot(q, &m, &g);
    assert_int_equal(g.pending, 1);
    assert_int_equal(g.engine.waiting, 1);
    queue_take(q, true, &w);
    assert_ptr_equal(w.submit, r[2]);
    for (int i = 0; i < 3; i++) { /* the engine side's references */
        queue_reject(r[i], FK_ERR_INVALID_ARGUMENT, "x");
        queue_release(r[i]);
    }
    for (int i = 0; i < 4; i++)
        queue_release(r[i]);
    assert_true(queue_wait_idle(q, now_s()));
    queue_destroy(q);
}

/* max_in_flight counts requests from their push to their last release, whether they wait or run. */
static void in_flight_cap(int cap)
{
    consumer c = {0};
    queue *q = queue_create(1000, cap, &hooks);
    assert_non_null(q);
    queue_serve(q);
    queue_request *r[8];
    for (int i = 0; i <= cap; i++)
        r[i] = queue_request_create(q, &c, false);
    for (int i = 0; i < cap; i++)
        assert_int_equal(queue_push(q, r[i]), QUEUE_PUSHED);
    assert_int_equal(queue_push(q, r[cap]), QUEUE_FULL);
    queue_work w;
    queue_take(q, false, &w);
    metrics m;
    metrics_init(&m);
    fk_engine_stats st = {.running = cap}; /* all running now, none waiting: still full */
    queue_publish(q, &st, &m);
    assert_int_equal(queue_push(q, r[cap]), QUEUE_FULL);
    queue_deliver(r[0], &(fk_token_event){.token = -1, .finish = FK_FINISH_LENGTH}, 0);
    queue_release(r[0]); /* the engine's reference: the HTTP side still sends the response */
    assert_int_equal(queue_push(q, r[cap]), QUEUE_FULL);
    queue_release(r[0]); /* the response sent */
    assert_int_equal(queue_push(q, r[cap]), QUEUE_PUSHED);
    queue_take(q, true, &w);
    for (int i = 1; i <= cap; i++) {
        queue_reject(r[i], FK_ERR_INVALID_ARGUMENT, "x");
        queue_release(r[i]);
        queue_release(r[i]);
    }
    assert_true(queue_wait_idle(q, now_s()));
    queue_destroy(q);
}

static void test_in_flight_cap(void **state)
{
    (void)state;
    for (int cap = 1; cap <= 7; cap++)
        in_flight_cap(cap);
}

static void test_stream_protocol(void **state)
{
    (void)state;
    consumer c = {0};
    queue *q = serving(8);
    queue_request *r = queue_request_create(q, &c, true);
    assert_int_equal(queue_push(q, r), QUEUE_PUSHED);
    queue_output out = {0};
    queue_result res;
    /* Nothing yet: the consumer is parked. */
    assert_false(queue_poll(r, &out, &res, 1.0));
    assert_int_equal(c.suspends, 1);
    assert_true(c.serial == r->serial);
    queue_work w;
    queue_take(q, false, &w);
    queue_accept(r);
    assert_int_equal(c.resumes, 1);
    assert_true(queue_poll(r, &out, &res, 1.0));
    assert_int_equal(res.phase, QUEUE_ACCEPTED);
    assert_int_equal(out.n_events, 0);
    assert_false(queue_poll(r, &out, &res, 1.0));
    assert_int_equal(c.suspends, 2);
    /* Two tokens: one wake (the first), both taken by the next poll. */
    fk_logprob top[2] = {{5, -0.1f}, {6, -2.0f}};
    fk_token_event ev = token(5, "he", FK_FINISH_NONE);
    ev.n_top = 2, ev.top = top, ev.logprob = -0.1f;
    assert_true(queue_deliver(r, &ev, 0));
    ev = token(6, "llo", FK_FINISH_NONE);
    assert_true(queue_deliver(r, &ev, 0));
    assert_int_equal(c.resumes, 2);
    assert_true(queue_poll(r, &out, &res, 2.0));
    assert_int_equal(out.n_events, 2);
    assert_string_equal(out.text, "hello");
    assert_int_equal(out.events[1].text_off, 2);
    assert_int_equal(out.events[0].n_top, 2);
    assert_int_equal(out.top[1].token, 6);
    /* The final event: phase, usage, timings (queue time counted from arrival). */
    ev = token(1, "", FK_FINISH_EOS);
    assert_false(queue_poll(r, &out, &res, 2.0));
    assert_true(queue_deliver(r, &ev, 0.25));
    assert_int_equal(c.resumes, 3);
    assert_true(queue_poll(r, &out, &res, 3.0));
    assert_int_equal(res.phase, QUEUE_FINISHED);
    assert_int_equal(res.finish, FK_FINISH_EOS);
    assert_true(res.queue_s == 0.75);
    assert_int_equal(out.n_events, 1);
    /* Finished: polls never park again. */
    assert_true(queue_poll(r, &out, &res, 3.0));
    assert_int_equal(c.suspends, 3);
    assert_false(queue_detach(r)); /* finished: nothing to cancel */
    queue_release(r);                /* engine side */
    queue_release(r);                /* HTTP side */
    queue_output_free(&out);
    assert_true(queue_wait_idle(q, now_s()));
    queue_destroy(q);
}

static void test_plain_request_waits_for_the_end(void **state)
{
    (void)state;
    consumer c = {0};
    queue *q = serving(8);
    queue_request *r = queue_request_create(q, &c, false);
    queue_push(q, r);
    queue_output out = {0};
    queue_result res;
    assert_false(queue_poll(r, &out, &res, 0));
    queue_work w;
    queue_take(q, false, &w);
    queue_accept(r); /* not a stream: no wake */
    fk_token_event ev = token(5, "a", FK_FINISH_NONE);
    queue_deliver(r, &ev, 0);
    assert_int_equal(c.resumes, 0);
    ev = token(6, "b", FK_FINISH_LENGTH);
    queue_deliver(r, &ev, 0);
    assert_int_equal(c.resumes, 1);
    assert_true(queue_poll(r, &out, &res, 0));
    assert_int_equal(out.n_events, 2);
    assert_string_equal(out.text, "ab");
    assert_int_equal(res.finish, FK_FINISH_LENGTH);
    queue_release(r);
    queue_release(r);
    queue_output_free(&out);
    queue_destroy(q);
}

static void test_rejection_and_cancels(void **state)
{
    (void)state;
    consumer c = {0};
    queue *q = serving(8);
    /* Rejected by the engine: the consumer is woken with the status and message. */
    queue_request *r = queue_request_create(q, &c, true);
    queue_push(q, r);
    queue_output out = {0};
    queue_result res;
    assert_false(queue_poll(r, &out, &res, 0));
    queue_work w;
    queue_take(q, false, &w);
    queue_reject(r, FK_ERR_INVALID_ARGUMENT, "prompt has 9 tokens; maximum context length is 4");
    queue_release(r);
    assert_int_equal(c.resumes, 1);
    assert_true(queue_poll(r, &out, &res, 0));
    assert_int_equal(res.phase, QUEUE_REJECTED);
    assert_string_equal(res.message, "prompt has 9 tokens; maximum context length is 4");
    queue_release(r);

    /* Cancelled before the engine took it: dropped, never submitted (row 36). */
    r = queue_request_create(q, &c, false);
    queue_push(q, r);
    assert_true(queue_detach(r));
    queue_cancel(q, r);
    queue_cancel(q, r); /* idempotent */
    queue_release(r);
    queue_take(q, false, &w);
    assert_null(w.submit);
    assert_ptr_equal(w.dropped, r);
    assert_null(w.cancel);
    queue_release(w.dropped);

    /* Cancelled after: on the cancel list with a reference of its own; the engine's final event may come first. */
    r = queue_request_create(q, &c, true);
    queue_push(q, r);
    queue_take(q, false, &w);
    assert_ptr_equal(w.submit, r);
    queue_accept(r);
    assert_true(queue_detach(r));
    queue_cancel(q, r);
    queue_release(r); /* the HTTP side is gone */
    fk_token_event ev = token(-1, NULL, FK_FINISH_CANCEL);
    queue_deliver(r, &ev, 0); /* no consumer: nothing to wake */
    queue_release(r);         /* the engine side's final event */
    queue_take(q, true, &w);
    assert_ptr_equal(w.cancel, r);
    assert_null(w.submit);
    queue_release(w.cancel); /* the last reference */
    queue_output_free(&out);
    assert_true(queue_wait_idle(q, now_s()));
    queue_destroy(q);
}

static void test_stream_buffer_cap(void **state)
{
    (void)state;
    consumer c = {0};
    queue *q = serving(8);
    queue_request *r = queue_request_create(q, &c, true);
    queue_push(q, r);
    queue_work w;
    queue_take(q, false, &w);
    queue_accept(r);
    static char text[1024];
    memset(text, 'x', sizeof text - 1);
    fk_token_event ev = token(5, text, FK_FINISH_NONE);
    int n = 0;
    while (queue_deliver(r, &ev, 0))
        n++;
    assert_true((size_t)n * 2 * sizeof text > QUEUE_STREAM_BUFFER_MAX / 2);
    assert_true((size_t)n * 2 * sizeof text < 2 * QUEUE_STREAM_BUFFER_MAX);
    assert_true(queue_deliver(r, &ev, 0)); /* reported once; later tokens are dropped */
    queue_output out = {0};
    queue_result res;
    assert_true(queue_poll(r, &out, &res, 0));
    assert_true(res.overflow);
    assert_int_equal(out.n_events, n);
    queue_release(r);
    queue_release(r);
    queue_output_free(&out);
    queue_destroy(q);
}

static void test_gone_ping_close(void **state)
{
    (void)state;
    consumer c = {0};
    queue *q = serving(8);
    queue_request *r = queue_request_create(q, &c, true);
    queue_push(q, r);
    queue_work w;
    queue_take(q, false, &w);
    queue_accept(r);
    queue_output out = {0};
    queue_result res;
    assert_true(queue_poll(r, &out, &res, 100.0));
    /* Not parked: no ping, and a hang-up is the connection's own business. */
    assert_true(queue_ping(q, 200.0, 15.0) == 15.0);
    assert_false(queue_gone(r));
    /* Parked at 100: a ping is due at 115. */
    assert_false(queue_poll(r, &out, &res, 100.0));
    assert_true(queue_ping(q, 110.0, 15.0) == 5.0);
    assert_int_equal(c.resumes, 0);
    queue_ping(q, 116.0, 15.0);
    assert_int_equal(c.resumes, 1);
    assert_true(queue_poll(r, &out, &res, 116.0));
    assert_true(res.ping);
    assert_false(queue_poll(r, &out, &res, 116.0)); /* the ping is reported once */
    /* The watcher finds it by serial and reports the hang-up. */
    queue_request *found = queue_find(q, c.serial);
    assert_ptr_equal(found, r);
    assert_true(queue_gone(found));
    queue_release(found);
    assert_int_equal(c.resumes, 2);
    assert_true(queue_poll(r, &out, &res, 117.0));
    assert_true(res.client_gone);
    assert_null(queue_find(q, 9999));
    /* Closing wakes every parked consumer and keeps them from parking again. */
    queue_request *r2 = queue_request_create(q, &c, false);
    assert_false(queue_poll(r2, &out, &res, 0));
    queue_close(q);
    assert_int_equal(c.resumes, 3);
    assert_true(queue_poll(r2, &out, &res, 0));
    assert_true(res.closing);
    assert_false(queue_wait_idle(q, now_s() + 0.05)); /* still alive */
    queue_release(r2);
    const fk_token_event fin = token(-1, NULL, FK_FINISH_CANCEL);
    queue_deliver(r, &fin, 0);
    queue_release(r);
    queue_release(r);
    assert_null(queue_find(q, c.serial));
    assert_true(queue_wait_idle(q, now_s()));
    queue_output_free(&out);
    queue_destroy(q);
}

/* ---- two threads ---- */

enum { N_EVENTS = 20000 };

typedef struct duo {
    queue *q;
    queue_request *r;
    atomic_int consumed; /* events the consumer has taken */
    atomic_int overflows;
} duo;

/* The engine thread: accept, then N_EVENTS tokens "0 1 2 ..." and a final event, in bursts of 100 with no pause
 * inside a burst; before the next burst the consumer must have taken the previous one (so that the stream's buffer
 * cap is never reached). */
static void *produce(void *arg)
{
    duo *d = arg;
    queue_work w;
    queue_take(d->q, false, &w);
    queue_accept(d->r);
    char text[16];
    for (int i = 0; i < N_EVENTS; i++) {
        while (i % 100 == 0 && atomic_load(&d->consumed) < i)
            sched_yield();
        snprintf(text, sizeof text, "%d ", i);
        fk_token_event ev = token(i, text, i == N_EVENTS - 1 ? FK_FINISH_LENGTH : FK_FINISH_NONE);
        if (!queue_deliver(d->r, &ev, 0))
            atomic_fetch_add(&d->overflows, 1);
    }
    queue_release(d->r);
    return NULL;
}

static void test_no_lost_wakeups(void **state)
{
    (void)state;
    consumer c = {0};
    sem_init(&c.wake, 0, 0);
    queue *q = serving(8);
    queue_request *r = queue_request_create(q, &c, true);
    queue_push(q, r);
    duo d = {.q = q, .r = r};
    atomic_init(&d.consumed, 0);
    atomic_init(&d.overflows, 0);
    pthread_t t;
    pthread_create(&t, NULL, produce, &d);
    queue_output out = {0};
    queue_result res = {0};
    int next = 0, polls = 0;
    for (;;) {
        if (!queue_poll(r, &out, &res, 0)) { /* parked: like a suspended connection, wait for the wake */
            sem_wait(&c.wake);
            continue;
        }
        polls++;
        for (int i = 0; i < out.n_events; i++) {
            char want[16];
            snprintf(want, sizeof want, "%d ", next);
            assert_int_equal(out.events[i].token, next);
            assert_memory_equal(out.text + out.events[i].text_off, want, strlen(want));
            next++;
        }
        atomic_store(&d.consumed, next);
        if (res.phase == QUEUE_FINISHED)
            break;
    }
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&d.overflows), 0);
    assert_int_equal(next, N_EVENTS);
    /* Every park was followed by exactly one wake (the last poll did not park). */
    assert_int_equal(c.suspends, c.resumes);
    fprintf(stderr, "%d events in %d polls, %d parks\n", N_EVENTS, polls, c.suspends);
    queue_release(r);
    queue_output_free(&out);
    assert_true(queue_wait_idle(q, now_s()));
    queue_destroy(q);
    sem_destroy(&c.wake);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_queue_cap),
        cmocka_unit_test(test_in_flight_cap),
        cmocka_unit_test(test_stream_protocol),
        cmocka_unit_test(test_plain_request_waits_for_the_end),
        cmocka_unit_test(test_rejection_and_cancels),
        cmocka_unit_test(test_stream_buffer_cap),
        cmocka_unit_test(test_gone_ping_close),
        cmocka_unit_test(test_no_lost_wakeups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
