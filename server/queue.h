/* queue.h — the hand-off between the HTTP threads and the engine thread, and each request's output buffer: the
 * server's only mutexes and condition variables.
 *
 * A request has two owners. The HTTP side holds it from queue_request_create until its connection is done
 * (queue_detach, then queue_release); the engine side from queue_push until the request's final event, or until
 * it is rejected or dropped unsubmitted. A pending cancel holds a third reference. The last queue_release frees it.
 *
 * The consumer (the HTTP connection) never waits on a condition variable: when queue_poll finds nothing for it, the
 * suspend hook parks the connection, and the producer's next change calls the resume hook. Both hooks run under
 * the request's lock, so a resume always follows its suspend.
 *
 * Lock order: the queue's lock, then a request's lock, then whatever the hooks take (libmicrohttpd's). Nothing
 * takes the queue's lock while holding a request's. */
#ifndef FK_SERVER_QUEUE_H
#define FK_SERVER_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flashkernel.h"
#include "metrics.h"

/* A stream's undelivered output is capped: past this (roughly, in rendered bytes) the request is cancelled and the
 * stream ends with an error, so a client that stops reading cannot make the server buffer without bound (the socket's
 * send buffer is capped too: http.c). */
#define QUEUE_STREAM_BUFFER_MAX (256u << 10)

typedef enum queue_state {
    QUEUE_LOADING,  /* the model is loading: requests are refused (503) */
    QUEUE_SERVING,
    QUEUE_DRAINING, /* shutting down: new requests refused, in-flight ones finish until the deadline */
    QUEUE_FAILED,   /* the engine failed (device error): everything refused */
} queue_state;

typedef struct queue_hooks {
    void (*suspend)(void *consumer, uint64_t serial); /* the consumer of request `serial` has nothing to do: park it */
    void (*resume)(void *consumer);                   /* wake a parked consumer */
} queue_hooks;

/* One generated token (token -1: text without a token). */
typedef struct queue_event {
    int32_t token;
    float logprob;
    int n_top;
    size_t text_off, text_len; /* in queue_output.text */
    size_t top_off;            /* in queue_output.top */
} queue_event;

/* Output handed from the engine thread to the consumer; queue_poll swaps the request's buffer with the consumer's. */
typedef struct queue_output {
    queue_event *events;
    int n_events, cap_events;
    char *text;
    size_t text_len, text_cap;
    fk_logprob *top;
    size_t n_top, cap_top;
    size_t bytes; /* rendered size, roughly: what QUEUE_STREAM_BUFFER_MAX applies to */
} queue_output;

void queue_output_free(queue_output *o);

typedef enum queue_phase {
    QUEUE_WAITING,  /* not yet handed to the engine */
    QUEUE_ACCEPTED, /* the engine took it */
    QUEUE_REJECTED, /* the engine refused it: status and message say why */
    QUEUE_FINISHED, /* final event seen: finish, usage and timings are set */
} queue_phase;

/* What the consumer sees of a request. */
typedef struct queue_result {
    queue_phase phase;
    fk_status status;                    /* QUEUE_REJECTED */
    char message[FK_ERROR_MESSAGE_MAX];  /* QUEUE_REJECTED */
    fk_finish_reason finish;             /* QUEUE_FINISHED, and the fields below */
    int prompt_tokens, completion_tokens, cached_tokens, preemptions;
    double queue_s, prefill_s, decode_s; /* queue_s counts from arrival at the server */
    double ttft_s;                       /* arrival → first token; 0 without one */
    bool ping;        /* a keep-alive comment is due (streams) */
    bool client_gone; /* the client disconnected while parked: end the response */
    bool overflow;    /* the stream buffer filled up: the request was cancelled */
    bool closing;     /* the server is stopping: end now */
} queue_result;

typedef struct queue queue;
typedef struct queue_request queue_request;

struct queue_request {
    /* Set by the HTTP thread before queue_push; read-only afterwards. */
    char id[48];
    int32_t *prompt; /* malloc'd; freed with the request */
    int n_prompt;
    fk_request_params params; /* stop points to stop_copies; on_token and user are the engine thread's */
    char *stop_copies[FK_MAX_STOP];
    bool stream;
    double t_arrival; /* monotonic seconds */

    /* Engine thread only. */
    uint64_t engine_id;
    bool in_engine;
    double t_submit, t_first, t_last;
    queue_request *engine_prev, *engine_next;

    /* Under the queue's lock. */
    queue *q;
    uint64_t serial;
    queue_request *live_prev, *live_next; /* every request alive */
    queue_request *pending_next, *cancel_next;
    bool pushed, taken;
    bool cancelled; /* once: before it was taken the engine thread drops it, after that it is on a cancel list */

    atomic_int refs;

    /* Under mu. */
    pthread_mutex_t mu;
    void *consumer; /* NULL once detached */
    bool suspended;
    queue_phase phase_seen; /* what the consumer has seen */
    queue_output out;
    queue_result res;
    double last_poll; /* when the consumer last took something (for pings) */
};

/* max_queue: requests waiting (pending here or in the engine's queue) at most; max_in_flight: requests pushed and not
 * yet released (waiting, running or sending their last bytes) at most, 0 for no such cap. */
queue *queue_create(int max_queue, int max_in_flight, const queue_hooks *hooks);
/* After every request is released. */
void queue_destroy(queue *q);

/* ---- HTTP side ---- */

/* A new request, registered, holding the HTTP side's reference. NULL when out of memory. */
queue_request *queue_request_create(queue *q, void *consumer, bool stream);

typedef enum queue_push_result { QUEUE_PUSHED, QUEUE_FULL, QUEUE_NOT_SERVING } queue_push_result;
/* Hands the request to the engine thread (which takes its own reference). QUEUE_FULL when max_queue requests are
 * already waiting (pending here or in the engine's queue) or max_in_flight are in flight; QUEUE_NOT_SERVING outside
 * QUEUE_SERVING. */
queue_push_result queue_push(queue *q, queue_request *r);

/* Takes what is new for the consumer: swaps the request's output with *out (cleared first) and fills *res. A stream
 * is ready on any output or phase change; otherwise only once rejected or finished. When nothing is ready the
 * suspend hook parks the consumer and false is returned. */
bool queue_poll(queue_request *r, queue_output *out, queue_result *res, double now);

/* The consumer is gone (its connection closed). True when the request has not finished: then cancel it. */
bool queue_detach(queue_request *r);

/* Asks the engine thread to end the request (dropped if not yet submitted, else fk_engine_cancel). Idempotent. */
void queue_cancel(queue *q, queue_request *r);

void queue_release(queue_request *r);

/* The request with this serial, with a reference, or NULL when it is gone. */
queue_request *queue_find(queue *q, uint64_t serial);

/* The client of a parked consumer disconnected: wake it with client_gone set. False when the consumer was not
 * parked (it is running and will see the disconnect itself). */
bool queue_gone(queue_request *r);

/* Wakes parked streams that have had nothing to send for `interval` seconds, with ping set. Returns the seconds
 * until the next one is due (interval when none is parked). */
double queue_ping(queue *q, double now, double interval);

/* Server stopping: every consumer, parked or not, is told to end (closing), and parked ones are woken. */
void queue_close(queue *q);

/* Waits until no request is alive or until `deadline` (monotonic seconds); true when none is. */
bool queue_wait_idle(queue *q, double deadline);

queue_state queue_get_state(queue *q);
/* The model is loaded: LOADING becomes SERVING (a shutdown requested meanwhile stays). */
void queue_serve(queue *q);
/* SIGTERM/SIGINT: from LOADING or SERVING to DRAINING with a deadline `timeout` seconds from `now`; when already
 * draining, the deadline becomes now. */
void queue_shutdown(queue *q, double now, double timeout);

/* A copy of the last published engine statistics and metrics, and the hand-off queue's length. */
void queue_snapshot(queue *q, metrics *m, metrics_gauges *g);

/* ---- engine side ---- */

typedef struct queue_work {
    queue_request *submit;  /* linked by pending_next; each holds the engine side's reference */
    queue_request *dropped; /* cancelled before being taken, never to be submitted: release them */
    queue_request *cancel; /* linked by cancel_next; each holds a reference of its own */
    queue_state state;
    double deadline; /* QUEUE_DRAINING: when in-flight requests are cancelled */
} queue_work;

/* Takes the pending submissions and cancels. When the engine is idle (busy false) it first waits until there is
 * something: a submission, a cancel, or a state other than LOADING/SERVING. */
void queue_take(queue *q, bool busy, queue_work *w);

void queue_accept(queue_request *r);
void queue_reject(queue_request *r, fk_status status, const char *message);

/* One engine event (on the engine thread, in the token callback); extra_queue_s is the time from arrival to
 * submission. Returns false when a stream's buffer overflowed: then cancel the request. */
bool queue_deliver(queue_request *r, const fk_token_event *ev, double extra_queue_s);

/* Publishes the engine's statistics and the metrics for queue_snapshot and the QUEUE_FULL check. */
void queue_publish(queue *q, const fk_engine_stats *stats, const metrics *m);

/* The engine failed: state QUEUE_FAILED, and the pending submissions are returned (linked by pending_next, each
 * with the engine side's reference) to be rejected. */
queue_request *queue_fail(queue *q);

#endif
