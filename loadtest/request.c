/* request.c — one request: renders the body, runs the exchange, and reads the answer. A stream's events are
 * parsed as they arrive, each token event timed where its bytes were read; a whole response is parsed at the end.
 * The output token count is the server's usage, checked against the token events (or /generate's "tokens"). */
#include "request.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "rng.h"
#include "sse.h"
#include "utf8.h"

enum {
    ERROR_BODY_MAX = 64 * 1024,       /* of a non-200 body, kept for its message */
    WHOLE_BODY_MAX = 64 * 1024 * 1024, /* a non-streamed response */
    EVENT_MAX = 16 * 1024 * 1024,      /* one SSE event */
    MESSAGE_MAX = 200,                 /* bytes of a message kept per failed request */
};

static const struct {
    const char *name, *path;
} endpoints[] = {
    [ENDPOINT_GENERATE] = {"generate", "/generate"},
    [ENDPOINT_COMPLETIONS] = {"completions", "/v1/completions"},
    [ENDPOINT_LLAMA] = {"llama", "/completion"},
};

const char *endpoint_name(endpoint ep)
{
    return endpoints[ep].name;
}

const char *endpoint_path(endpoint ep)
{
    return endpoints[ep].path;
}

bool endpoint_parse(const char *s, endpoint *ep)
{
    for (size_t i = 0; i < sizeof endpoints / sizeof endpoints[0]; i++)
        if (!strcmp(s, endpoints[i].name)) {
            *ep = (endpoint)i;
            return true;
        }
    return false;
}

int request_config_init(request_config *c, endpoint ep, bool stream, int max_tokens, bool ignore_eos,
                        const char *model)
{
    c->ep = ep;
    c->stream = stream;
    c->fields = NULL;
    /* Greedy on every endpoint (/v1/completions defaults to temperature 1), so all do the same work. llama-server's
     * /completion calls max_tokens n_predict. */
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddNumberToObject(o, ep == ENDPOINT_LLAMA ? "n_predict" : "max_tokens", max_tokens) &&
              cJSON_AddNumberToObject(o, "temperature", 0) && cJSON_AddBoolToObject(o, "stream", stream);
    if (ok && ignore_eos)
        ok = cJSON_AddBoolToObject(o, "ignore_eos", true) != NULL;
    if (ok && ep == ENDPOINT_COMPLETIONS && model)
        ok = cJSON_AddStringToObject(o, "model", model) != NULL;
    if (ok && ep == ENDPOINT_LLAMA && !stream) /* the ids too, to check tokens_predicted against */
        ok = cJSON_AddBoolToObject(o, "return_tokens", true) != NULL;
    if (ok && ep == ENDPOINT_COMPLETIONS && stream) { /* the usage comes in a last chunk only when asked for */
        cJSON *so = cJSON_AddObjectToObject(o, "stream_options");
        ok = so && cJSON_AddBoolToObject(so, "include_usage", true);
    }
    char *s = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s)
        return -1;
    /* "{...}" → ",..." to follow the prompt */
    size_t n = strlen(s);
    s[0] = ',';
    s[n - 1] = 0;
    c->fields = s;
    return 0;
}

void request_config_free(request_config *c)
{
    free(c->fields);
    c->fields = NULL;
}

bool request_body(const request_config *c, const prompts *p, unsigned level, unsigned long long i, buf *out)
{
    out->len = 0;
    return buf_append(out, "{\"prompt\":", 10) && prompts_render(p, level, i, out) &&
           buf_append(out, c->fields, strlen(c->fields)) && buf_append(out, "}", 1);
}

void request_result_free(req_result *r)
{
    free(r->itl);
    free(r->message);
    r->itl = NULL;
    r->message = NULL;
}

void request_error_name(const req_result *r, char *out, size_t n)
{
    static const char *const names[] = {
        [REQ_OK] = "ok", [REQ_REFUSED] = "refused", [REQ_CONNECT] = "connect_failed", [REQ_TIMEOUT] = "timeout",
        [REQ_DROPPED] = "dropped", [REQ_BAD_RESPONSE] = "bad_response", [REQ_STREAM_ERROR] = "stream_error",
        [REQ_COUNT_MISMATCH] = "token_count_mismatch", [REQ_INTERRUPTED] = "interrupted",
        [REQ_CLIENT] = "client_error", [REQ_CANCELLED] = "cancelled",
    };
    if (r->error == REQ_HTTP_STATUS)
        snprintf(out, n, "http_%d", r->status);
    else
        snprintf(out, n, "%s", names[r->error]);
}

/* What one request's callbacks gather. */
typedef struct ctx {
    const request_config *c;
    req_result *r;
    double t_start, t_last;
    buf body;        /* a non-200 body (its first bytes), or a whole 200 response */
    sse parser;
    buf itl;         /* double[] */
    bool done;       /* [DONE] seen (llama: the event with "stop": true) */
    bool got_usage;
    int cancel_after; /* abandon the stream after this many token events (0: never) */
    bool cancelled;   /* ... and it was */
    req_error fail;  /* a failure found while reading (bad event, stream error, too long) */
    char why[MESSAGE_MAX];
} ctx;

static void set_fail(ctx *x, req_error e, const char *fmt, const char *arg)
{
    if (x->fail != REQ_OK)
        return;
    x->fail = e;
    snprintf(x->why, sizeof x->why, fmt, arg);
}

/* An integer count from obj[name]: a number, integral, in [0, INT_MAX]. */
static bool get_count(const cJSON *obj, const char *name, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > INT_MAX ||
        v->valuedouble != (double)(int)v->valuedouble)
        return false;
    *out = (int)v->valuedouble;
    return true;
}

/* usage: {"prompt_tokens", "completion_tokens"[, "cached_tokens"]}. */
static bool read_usage(ctx *x, const cJSON *usage)
{
    if (!cJSON_IsObject(usage))
        return false;
    if (!get_count(usage, "prompt_tokens", &x->r->prompt_tokens) ||
        !get_count(usage, "completion_tokens", &x->r->output_tokens))
        return false;
    if (!get_count(usage, "cached_tokens", &x->r->cached_tokens))
        x->r->cached_tokens = -1;
    x->got_usage = true;
    return true;
}

/* Copies s into dst[cap] as printable, valid UTF-8 whatever the server sent: cut before a character that does not
 * fit, control characters as spaces, invalid sequences as U+FFFD. */
static void clean_text(char *dst, size_t cap, const char *s)
{
    const size_t len = strlen(s);
    size_t in = 0, out = 0;
    while (in < len) {
        uint32_t cp;
        int k = utf8_next(s + in, len - in, &cp);
        const char *piece = s + in;
        size_t n = (size_t)k;
        if (k < 0)
            piece = UTF8_REPLACEMENT, n = 3, k = -k;
        else if (cp < 0x20 || cp == 0x7f)
            piece = " ", n = 1;
        if (out + n >= cap)
            break;
        memcpy(dst + out, piece, n);
        out += n;
        in += (size_t)k;
    }
    dst[out] = 0;
}

/* A short copy of a message (at most MESSAGE_MAX bytes), cleaned as above. */
static char *clean_copy(const char *s)
{
    char *m = malloc(MESSAGE_MAX + 1);
    if (m)
        clean_text(m, MESSAGE_MAX + 1, s);
    return m;
}

static void read_finish(ctx *x, const cJSON *f)
{
    if (cJSON_IsString(f))
        clean_text(x->r->finish, sizeof x->r->finish, f->valuestring);
}

/* The message of an error object {"error": {"message": ...}} (or {"error": "..."}), else NULL. */
static const char *error_message(const cJSON *root)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (cJSON_IsString(e))
        return e->valuestring;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (cJSON_IsString(m))
        return m->valuestring;
    return e ? "(no message)" : NULL;
}

static void token_event(ctx *x, double t)
{
    req_result *r = x->r;
    if (r->token_events++ == 0) {
        r->ttft = t - x->t_start;
    } else {
        double gap = t - x->t_last;
        if (!buf_append(&x->itl, &gap, sizeof gap))
            set_fail(x, REQ_CLIENT, "%s", "out of memory");
    }
    x->t_last = t;
    x->cancelled = x->cancelled || r->token_events == x->cancel_after;
}

/* llama-server's counts and end: tokens_evaluated and tokens_predicted (its usage), stop_type ("limit", "eos",
 * "word") as the finish reason OpenAI's API would give. */
static bool read_llama_end(ctx *x, const cJSON *root)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "stop_type");
    if (cJSON_IsString(type)) {
        const char *t = type->valuestring;
        const char *openai = !strcmp(t, "limit") ? "length" : !strcmp(t, "eos") || !strcmp(t, "word") ? "stop" : t;
        clean_text(x->r->finish, sizeof x->r->finish, openai);
    }
    if (!get_count(root, "tokens_evaluated", &x->r->prompt_tokens) ||
        !get_count(root, "tokens_predicted", &x->r->output_tokens))
        return false;
    x->got_usage = true;
    return true;
}

/* A llama-server stream event: {"content", "tokens": [ids], "stop": false, ...} for each piece of output (one token
 * each; a prompt-progress event has no tokens), then one with "stop": true and the counts. No [DONE] follows. */
static void llama_event(ctx *x, const cJSON *root, double t)
{
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "stop"))) {
        x->done = true;
        if (!read_llama_end(x, root))
            set_fail(x, REQ_BAD_RESPONSE, "%s", "the last event has no valid tokens_evaluated/tokens_predicted");
        return;
    }
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(root, "tokens");
    int n = cJSON_IsArray(tokens) ? cJSON_GetArraySize(tokens) : 0;
    for (int i = 0; i < n && !x->cancelled; i++) /* tokens that come in one event arrive together */
        token_event(x, t);
}

static bool on_event(void *user, const char *data, size_t n, double t)
{
    ctx *x = user;
    if (x->done)
        return true; /* nothing follows the end in any API; ignore it if it does */
    if (n == 6 && !memcmp(data, "[DONE]", 6) && x->c->ep != ENDPOINT_LLAMA) {
        x->done = true;
        return true;
    }
    cJSON *root = cJSON_ParseWithLength(data, n);
    if (!cJSON_IsObject(root)) {
        set_fail(x, REQ_BAD_RESPONSE, "an event is not a JSON object: %.80s", data);
        cJSON_Delete(root);
        return false;
    }
    const char *err = error_message(root);
    if (err) {
        set_fail(x, REQ_STREAM_ERROR, "error event: %s", err);
    } else if (x->c->ep == ENDPOINT_LLAMA) {
        llama_event(x, root, t);
    } else if (x->c->ep == ENDPOINT_GENERATE) {
        /* token events: {"text", "token"}; a text-only event (no "token") carries no new token; the final event
         * has finish_reason and usage */
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, "token")))
            token_event(x, t);
        const cJSON *finish = cJSON_GetObjectItemCaseSensitive(root, "finish_reason");
        if (finish) {
            read_finish(x, finish);
            if (!read_usage(x, cJSON_GetObjectItemCaseSensitive(root, "usage")))
                set_fail(x, REQ_BAD_RESPONSE, "%s", "the final event has no valid usage");
        }
    } else {
        /* chunks: choices[0] with finish_reason null is a token; then one with the finish reason; then (with
         * include_usage) a chunk with "choices": [] and the usage */
        const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
        const cJSON *c0 = cJSON_GetArrayItem(choices, 0);
        if (c0) {
            const cJSON *finish = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
            if (!finish || cJSON_IsNull(finish))
                token_event(x, t);
            else
                read_finish(x, finish);
        }
        const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
        if (usage && !cJSON_IsNull(usage) && !read_usage(x, usage))
            set_fail(x, REQ_BAD_RESPONSE, "%s", "a chunk has an invalid usage");
    }
    cJSON_Delete(root);
    return x->fail == REQ_OK && !x->cancelled; /* false closes the connection */
}

static bool on_body(void *user, int status, const char *data, size_t n, double t)
{
    ctx *x = user;
    if (status != 200) { /* keep the start of an error body for its message */
        size_t room = ERROR_BODY_MAX - x->body.len;
        if (n > room)
            n = room;
        if (n && !buf_append(&x->body, data, n))
            set_fail(x, REQ_CLIENT, "%s", "out of memory");
        return x->fail == REQ_OK;
    }
    if (!x->c->stream) {
        if (x->body.len + n > WHOLE_BODY_MAX) {
            set_fail(x, REQ_BAD_RESPONSE, "%s", "the response is longer than 64 MiB");
            return false;
        }
        if (!buf_append(&x->body, data, n))
            set_fail(x, REQ_CLIENT, "%s", "out of memory");
        return x->fail == REQ_OK;
    }
    int rc = sse_feed(&x->parser, data, n, t, on_event, x);
    if (rc == -1)
        set_fail(x, REQ_BAD_RESPONSE, "%s", "an SSE event longer than 16 MiB (or out of memory)");
    return rc == 0;
}

/* A whole (non-streamed) 200 response. */
static void read_whole(ctx *x)
{
    cJSON *root = cJSON_ParseWithLength(x->body.s ? x->body.s : "", x->body.len);
    if (!cJSON_IsObject(root)) {
        set_fail(x, REQ_BAD_RESPONSE, "the response is not a JSON object: %.80s", x->body.s ? x->body.s : "");
        cJSON_Delete(root);
        return;
    }
    const char *err = error_message(root);
    if (err) {
        set_fail(x, REQ_STREAM_ERROR, "error in a 200 response: %s", err);
    } else if (x->c->ep == ENDPOINT_LLAMA) {
        /* {"content", "tokens": [the ids], "tokens_predicted", "tokens_evaluated", "stop_type", ...} */
        if (!read_llama_end(x, root)) {
            set_fail(x, REQ_BAD_RESPONSE, "%s", "the response has no valid tokens_evaluated/tokens_predicted");
        } else {
            const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(root, "tokens");
            if (cJSON_IsArray(tokens) && cJSON_GetArraySize(tokens) != x->r->output_tokens) {
                char m[64];
                snprintf(m, sizeof m, "%d ids in \"tokens\"", cJSON_GetArraySize(tokens));
                set_fail(x, REQ_COUNT_MISMATCH, "%s, but tokens_predicted differs", m);
            }
        }
    } else if (!read_usage(x, cJSON_GetObjectItemCaseSensitive(root, "usage"))) {
        set_fail(x, REQ_BAD_RESPONSE, "%s", "the response has no valid usage");
    } else if (x->c->ep == ENDPOINT_GENERATE) {
        read_finish(x, cJSON_GetObjectItemCaseSensitive(root, "finish_reason"));
        const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(root, "tokens");
        if (cJSON_IsArray(tokens) && cJSON_GetArraySize(tokens) != x->r->output_tokens) {
            char m[64];
            snprintf(m, sizeof m, "%d ids in \"tokens\"", cJSON_GetArraySize(tokens));
            set_fail(x, REQ_COUNT_MISMATCH, "%s, but usage.completion_tokens differs", m);
        }
    } else {
        read_finish(x, cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(
                           cJSON_GetObjectItemCaseSensitive(root, "choices"), 0), "finish_reason"));
    }
    cJSON_Delete(root);
}

static req_error from_http(http_error e)
{
    switch (e) {
    case HTTP_OK: return REQ_OK;
    case HTTP_ERR_REFUSED: return REQ_REFUSED;
    case HTTP_ERR_CONNECT: return REQ_CONNECT;
    case HTTP_ERR_TIMEOUT: return REQ_TIMEOUT;
    case HTTP_ERR_DROPPED: return REQ_DROPPED;
    case HTTP_ERR_PROTOCOL: return REQ_BAD_RESPONSE;
    case HTTP_ERR_INTERRUPTED: return REQ_INTERRUPTED;
    case HTTP_ERR_ABORTED: return REQ_BAD_RESPONSE; /* a callback stopped: its own reason is in ctx.fail */
    case HTTP_ERR_SYSTEM: return REQ_CLIENT;
    }
    return REQ_CLIENT;
}

/* The request's fate once the exchange (he, err) is over. */
static void judge(ctx *x, http_error he, const char *err)
{
    const request_config *c = x->c;
    req_result *r = x->r;
    req_error e = REQ_OK;
    const char *why = NULL;
    char msg[MESSAGE_MAX + 64];
    if (x->cancelled) { /* abandoned on purpose: whatever the exchange says after that is moot */
        e = REQ_CANCELLED;
    } else if (x->fail != REQ_OK) { /* found while reading: the most specific reason */
        e = x->fail;
        why = x->why;
    } else if (he != HTTP_OK) {
        e = from_http(he);
        why = err;
    } else if (r->status != 200) {
        e = REQ_HTTP_STATUS;
        cJSON *root = cJSON_ParseWithLength(x->body.s ? x->body.s : "", x->body.len);
        const char *m = root ? error_message(root) : NULL;
        snprintf(msg, sizeof msg, "%s", m ? m : x->body.s ? x->body.s : "(empty body)");
        cJSON_Delete(root);
        why = msg;
    } else if (c->stream) {
        if (!x->done) {
            e = REQ_BAD_RESPONSE;
            why = c->ep == ENDPOINT_LLAMA ? "the stream ended without its \"stop\": true event"
                                          : "the stream ended without data: [DONE]";
        } else if (!x->got_usage) {
            e = REQ_BAD_RESPONSE;
            why = "the stream carried no usage";
        } else if (r->token_events != r->output_tokens) {
            e = REQ_COUNT_MISMATCH;
            snprintf(msg, sizeof msg, "%d token events, %s %d", r->token_events,
                     c->ep == ENDPOINT_LLAMA ? "tokens_predicted" : "usage.completion_tokens", r->output_tokens);
            why = msg;
        }
    } else {
        read_whole(x);
        e = x->fail;
        why = x->why;
    }
    r->error = e;
    if (e != REQ_OK && e != REQ_CANCELLED)
        r->message = clean_copy(why && why[0] ? why : "failed");
    if (c->stream && x->itl.len) {
        r->itl = (double *)x->itl.s; /* the buffer's bytes are the double array; keep them */
        r->n_itl = (int)(x->itl.len / sizeof(double));
        x->itl = (buf){0};
    }
    buf_free(&x->itl);
    buf_free(&x->body);
    sse_free(&x->parser);
}

int request_cancel_point(const request_config *c, uint64_t seed, unsigned level, unsigned long long i)
{
    if (!c->stream || c->cancel_rate <= 0 || c->max_tokens < 2)
        return 0;
    rng g;
    rng_init(&g, seed ^ 0xca9ce1ull, level, i); /* a stream apart from the prompts' and the arrivals' */
    if ((double)(rng_next(&g) >> 11) * 0x1p-53 >= c->cancel_rate)
        return 0;
    return 1 + (int)rng_below(&g, (uint64_t)c->max_tokens - 1);
}

void request_run(const request_config *c, const char *body, size_t len, int cancel_after, double t0,
                 req_result *r)
{
    *r = (req_result){.ttft = -1, .prompt_tokens = -1, .output_tokens = -1, .cached_tokens = -1};
    ctx x = {.c = c, .r = r, .cancel_after = cancel_after};
    sse_init(&x.parser, EVENT_MAX);
    http_request rq = {.method = "POST", .path = endpoint_path(c->ep), .accept = c->stream ? "text/event-stream" : "application/json",
                       .body = body, .body_len = len};
    x.t_start = clock_now();
    r->start = x.t_start - t0;
    http_limits lim = {.deadline = x.t_start + c->timeout_s, .stop_fd = c->stop_fd, .grace_s = c->grace_s};
    char err[256] = "";
    http_error he = http_exchange(c->target, &rq, &lim, &r->status, on_body, &x, err, sizeof err);
    r->e2e = clock_now() - x.t_start;
    judge(&x, he, err);
}

void request_read(const request_config *c, int fd, req_result *r)
{
    *r = (req_result){.ttft = -1, .prompt_tokens = -1, .output_tokens = -1, .cached_tokens = -1};
    ctx x = {.c = c, .r = r};
    sse_init(&x.parser, EVENT_MAX);
    x.t_start = clock_now();
    http_limits lim = {.deadline = x.t_start + c->timeout_s, .stop_fd = -1};
    char err[256] = "";
    http_error he = http_read_response(fd, &lim, &r->status, on_body, &x, err, sizeof err);
    r->e2e = clock_now() - x.t_start;
    judge(&x, he, err);
}
