/* routes.c — method and path dispatch, the API key, content types and body limits, and each route: health,
 * metrics, models, tokenize/detokenize, and generation (/generate, /v1/completions, /v1/chat/completions), which is
 * validated and tokenized here (a chat's messages rendered with the chat template first), handed to the engine
 * thread through the queue, then answered whole or streamed. */
#include "routes.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "api.h"
#include "chat.h"
#include "metrics.h"

struct routes {
    routes_config cfg;
    queue *q;
    /* Set by routes_set_model before the state becomes QUEUE_SERVING, read only after seeing that state. */
    const fk_tokenizer *tok;
    const chat *chat;
    api_limits lim;
    long long created;
    atomic_uint_fast64_t next_id;
    atomic_uint_fast64_t seed_state;
};

typedef enum route_kind {
    R_HEALTH, R_METRICS, R_MODELS, R_GENERATE, R_COMPLETIONS, R_CHAT, R_TOKENIZE, R_DETOKENIZE
} route_kind;

static const struct route {
    const char *path;
    bool post; /* else GET (and HEAD) */
    route_kind kind;
} route_table[] = {
    {"/health", false, R_HEALTH},       {"/metrics", false, R_METRICS},       {"/v1/models", false, R_MODELS},
    {"/generate", true, R_GENERATE},    {"/v1/completions", true, R_COMPLETIONS},
    {"/v1/chat/completions", true, R_CHAT},
    {"/tokenize", true, R_TOKENIZE},    {"/detokenize", true, R_DETOKENIZE},
};

struct routes_call {
    routes *rt;
    void *consumer;
    route_kind kind;
    /* generation */
    queue_request *req;
    api_render rd;
    queue_output out;
    queue_result res;
    bool unrendered; /* out holds events taken by the poll that started the stream */
    api_buf sse;
    size_t sse_off;
    bool sse_done;
};

routes *routes_create(const routes_config *cfg, queue *q)
{
    routes *rt = calloc(1, sizeof *rt);
    if (!rt)
        return NULL;
    rt->cfg = *cfg;
    rt->q = q;
    rt->lim.model_name = cfg->model_name;
    rt->created = (long long)time(NULL);
    atomic_init(&rt->next_id, 1);
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
        seed = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull;
    atomic_init(&rt->seed_state, seed);
    return rt;
}

void routes_set_model(routes *rt, const fk_model *model, int max_model_len, const chat *chat)
{
    rt->tok = fk_model_tokenizer(model);
    rt->chat = chat;
    rt->lim.vocab_size = fk_model_get_info(model).vocab_size;
    rt->lim.max_model_len = max_model_len;
}

void routes_destroy(routes *rt)
{
    free(rt);
}

/* splitmix64 over a shared counter: a seed for requests that give none. */
static uint64_t random_seed(routes *rt)
{
    uint64_t z = atomic_fetch_add(&rt->seed_state, 0x9E3779B97F4A7C15ull) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) & ((1ull << 53) - 1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- replies ---- */

static void reply_json(routes_reply *reply, int status, char *body, size_t len)
{
    *reply = (routes_reply){.status = status, .body = body, .len = len, .content_type = "application/json"};
    if (!body) /* out of memory building it: the status alone */
        reply->len = 0;
}

static void reply_error(routes_reply *reply, const api_error *e)
{
    size_t len = 0;
    char *body = api_error_body(e, &len);
    reply_json(reply, e->status, body, len);
    if (e->status == 401)
        reply->www_authenticate = true;
}

/* An error reply: "<prefix><message>". */
static routes_action error(routes_reply *reply, int status, const char *type, const char *prefix, const char *message)
{
    api_error e;
    api_error_set(&e, status, type, NULL, "%s%s", prefix, message);
    reply_error(reply, &e);
    return ROUTES_REPLY;
}

/* 503 for a state other than serving. */
static routes_action unavailable(routes_reply *reply, queue_state s)
{
    static const char *const why[] = {
        [QUEUE_LOADING] = "the model is still loading",
        [QUEUE_SERVING] = "the server is not ready",
        [QUEUE_DRAINING] = "the server is shutting down",
        [QUEUE_FAILED] = "the engine failed (device error); the server is restarting",
    };
    return error(reply, 503, "service_unavailable", "", why[s]);
}

/* ---- headers ---- */

/* The key, compared in constant time. */
static bool authorized(const routes *rt, const char *header)
{
    const char *key = rt->cfg.api_key;
    if (!key)
        return true;
    if (!header || strncasecmp(header, "Bearer ", 7) != 0)
        return false;
    const char *given = header + 7;
    while (*given == ' ')
        given++;
    const size_t n = strlen(key), m = strlen(given);
    unsigned char diff = n != m;
    for (size_t i = 0; i < m; i++)
        diff |= (unsigned char)(given[i] ^ key[i % (n ? n : 1)]);
    return diff == 0;
}

/* No type (as curl -d sends with -H ''), application/json, or application/x-www-form-urlencoded (what curl -d sends),
 * with any parameters. */
static bool json_content_type(const char *type)
{
    if (!type)
        return true;
    static const char *const ok[] = {"application/json", "application/x-www-form-urlencoded"};
    for (int i = 0; i < 2; i++) {
        const size_t n = strlen(ok[i]);
        if (!strncasecmp(type, ok[i], n) && (type[n] == '\0' || type[n] == ';' || type[n] == ' '))
            return true;
    }
    return false;
}

routes_call *routes_begin(routes *rt, const routes_request *req, void *consumer, routes_reply *reply)
{
    const struct route *route = NULL;
    for (size_t i = 0; i < sizeof route_table / sizeof route_table[0]; i++)
        if (!strcmp(req->url, route_table[i].path))
            route = &route_table[i];
    const bool get = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
    api_error e;
    if (!route) {
        api_error_set(&e, 404, "not_found_error", NULL, "no route for %s %.200s", req->method, req->url);
        reply_error(reply, &e);
        return NULL;
    }
    if (route->post ? strcmp(req->method, "POST") != 0 : !get) {
        api_error_set(&e, 405, "invalid_request_error", NULL, "method %.20s is not allowed on %s; use %s",
                      req->method, route->path, route->post ? "POST" : "GET");
        reply_error(reply, &e);
        reply->allow = route->post ? "POST" : "GET, HEAD";
        return NULL;
    }
    if (route->kind != R_HEALTH && !authorized(rt, req->authorization)) {
        api_error_set(&e, 401, "authentication_error", NULL,
                      "missing or invalid API key: send the header \"Authorization: Bearer <key>\"");
        reply_error(reply, &e);
        return NULL;
    }
    if (route->post && !json_content_type(req->content_type)) {
        api_error_set(&e, 415, "invalid_request_error", NULL, "Content-Type must be application/json, got \"%.100s\"",
                      req->content_type);
        reply_error(reply, &e);
        return NULL;
    }
    if (req->content_length > (long long)rt->cfg.max_body_bytes) {
        api_error_set(&e, 413, "invalid_request_error", NULL, "body exceeds %zu bytes (Content-Length: %lld)",
                      rt->cfg.max_body_bytes, req->content_length);
        reply_error(reply, &e);
        return NULL;
    }
    routes_call *c = calloc(1, sizeof *c);
    if (!c) {
        api_error_set(&e, 503, "server_error", NULL, "out of memory");
        reply_error(reply, &e);
        return NULL;
    }
    c->rt = rt;
    c->consumer = consumer;
    c->kind = route->kind;
    return c;
}

/* ---- GET routes ---- */

static routes_action health(routes_call *c, routes_reply *reply)
{
    static const char *const status[] = {
        [QUEUE_LOADING] = "loading", [QUEUE_SERVING] = "ok", [QUEUE_DRAINING] = "shutting down",
        [QUEUE_FAILED] = "failed"};
    const queue_state s = queue_get_state(c->rt->q);
    char body[64];
    const int n = snprintf(body, sizeof body, "{\"status\":\"%s\"}", status[s]);
    reply_json(reply, s == QUEUE_SERVING ? 200 : 503, strdup(body), (size_t)n);
    return ROUTES_REPLY;
}

static routes_action metrics_text(routes_call *c, routes_reply *reply)
{
    metrics m;
    metrics_gauges g;
    queue_snapshot(c->rt->q, &m, &g);
    size_t len = 0;
    char *body = metrics_format(&m, &g, c->rt->cfg.model_name, &len);
    *reply = (routes_reply){.status = body ? 200 : 503, .body = body, .len = body ? len : 0,
                            .content_type = "text/plain; version=0.0.4; charset=utf-8"};
    return ROUTES_REPLY;
}

/* ---- tokenize, detokenize ---- */

static routes_action tokenize(routes_call *c, const cJSON *root, routes_reply *reply)
{
    const routes *rt = c->rt;
    const char *text;
    size_t len, out_len = 0;
    bool special;
    api_error e;
    if (!api_parse_tokenize(root, &text, &len, &special, &e)) {
        reply_error(reply, &e);
        return ROUTES_REPLY;
    }
    int32_t *ids = NULL;
    int n = 0;
    fk_error err = {0};
    if (fk_tokenizer_encode(rt->tok, text, len, special, &ids, &n, &err))
        return error(reply, 400, "invalid_request_error", "prompt: ", err.message);
    char *body = api_tokenize_body(ids, n, rt->lim.max_model_len, &out_len);
    fk_free(ids);
    reply_json(reply, 200, body, out_len);
    return ROUTES_REPLY;
}

static routes_action detokenize(routes_call *c, const cJSON *root, routes_reply *reply)
{
    const routes *rt = c->rt;
    int32_t *ids = NULL;
    int n = 0;
    api_error e;
    if (!api_parse_detokenize(root, &rt->lim, &ids, &n, &e)) {
        reply_error(reply, &e);
        return ROUTES_REPLY;
    }
    char *text = NULL;
    size_t len = 0, out_len = 0;
    fk_error err = {0};
    const fk_status s = fk_tokenizer_decode(rt->tok, ids, n, false, &text, &len, &err);
    free(ids);
    if (s)
        return error(reply, 400, "invalid_request_error", "tokens: ", err.message);
    char *body = api_detokenize_body(text, &out_len);
    fk_free(text);
    reply_json(reply, 200, body, out_len);
    return ROUTES_REPLY;
}

/* ---- generation ---- */

/* What a poll of the request answers; ROUTES_WAIT when it parked the connection. */
static routes_action generation_result(routes_call *c, routes_reply *reply)
{
    if (!queue_poll(c->req, &c->out, &c->res, now_s()))
        return ROUTES_WAIT;
    const queue_result *res = &c->res;
    api_error e;
    size_t len = 0;
    if (res->client_gone)
        return ROUTES_CLOSE;
    if (res->phase == QUEUE_REJECTED) {
        api_engine_error(res->status, res->message, &e);
        reply_error(reply, &e);
        return ROUTES_REPLY;
    }
    if (res->phase == QUEUE_WAITING || (res->closing && res->phase != QUEUE_FINISHED && !c->req->stream))
        return unavailable(reply, QUEUE_DRAINING);
    if (c->req->stream) {
        c->unrendered = true;
        return ROUTES_STREAM;
    }
    if (res->finish == FK_FINISH_ERROR)
        return unavailable(reply, QUEUE_FAILED);
    char *body = api_result_body(&c->rd, &c->out, res, &len);
    reply_json(reply, 200, body, len);
    return ROUTES_REPLY;
}

/* Validates and tokenizes a generation request and hands it to the engine thread. */
static routes_action generation(routes_call *c, const cJSON *root, api_kind kind, routes_reply *reply)
{
    routes *rt = c->rt;
    const double arrival = now_s(); /* timings count from here: tokenizing is part of them */
    api_generation g;
    api_error e;
    if (!api_parse_generation(root, kind, &rt->lim, &g, &e)) {
        reply_error(reply, &e);
        return ROUTES_REPLY;
    }
    int32_t *ids = g.prompt_ids;
    int n = g.n_prompt_ids;
    if (kind == API_CHAT && !chat_prompt(rt->chat, &g, &ids, &n, &e)) {
        api_generation_free(&g);
        reply_error(reply, &e);
        return ROUTES_REPLY;
    }
    if (g.prompt_text) {
        fk_error err = {0};
        if (!rt->tok) {
            api_generation_free(&g);
            return error(reply, 400, "invalid_request_error", "",
                         "the model has no tokenizer: send the prompt as an array of token ids");
        }
        if (fk_tokenizer_encode(rt->tok, g.prompt_text, g.prompt_text_len, true, &ids, &n, &err)) {
            api_generation_free(&g);
            return error(reply, 400, "invalid_request_error", "prompt: ", err.message);
        }
    }
    queue_request *r = NULL;
    bool ok = api_check_prompt(&g, n, &rt->lim, &e);
    if (ok && (r = queue_request_create(rt->q, c->consumer, g.stream))) {
        const uint64_t serial = atomic_fetch_add(&rt->next_id, 1);
        static const char *const prefix[] = {
            [API_GENERATE] = "gen", [API_COMPLETIONS] = "cmpl", [API_CHAT] = "chatcmpl"};
        snprintf(r->id, sizeof r->id, "%s-%llu", prefix[kind], (unsigned long long)serial);
        r->params = g.params;
        if (!g.seed_given)
            r->params.sampling.seed = random_seed(rt);
        r->n_prompt = n;
        r->prompt = malloc((size_t)n * sizeof *r->prompt);
        ok = r->prompt != NULL;
        for (int i = 0; ok && i < g.params.n_stop; i++)
            ok = (r->stop_copies[i] = strdup(g.stop[i])) != NULL;
        if (ok)
            memcpy(r->prompt, ids, (size_t)n * sizeof *ids);
        r->params.stop = (const char *const *)r->stop_copies;
        r->t_arrival = arrival;
        if (!ok)
            api_error_set(&e, 503, "server_error", NULL, "out of memory");
    } else if (ok) {
        ok = false;
        api_error_set(&e, 503, "server_error", NULL, "out of memory");
    }
    if (ids != g.prompt_ids)
        fk_free(ids);
    api_generation_free(&g);
    if (!ok) {
        if (r)
            queue_release(r);
        reply_error(reply, &e);
        return ROUTES_REPLY;
    }
    const queue_push_result pushed = queue_push(rt->q, r);
    if (pushed != QUEUE_PUSHED) {
        queue_release(r);
        if (pushed == QUEUE_NOT_SERVING)
            return unavailable(reply, queue_get_state(rt->q));
        error(reply, 429, "rate_limit_error", "", "server overloaded, retry later");
        reply->retry_after = 1;
        return ROUTES_REPLY;
    }
    c->req = r;
    c->rd = (api_render){.kind = kind, .model_name = rt->cfg.model_name, .created = (long long)time(NULL),
                         .logprobs = r->params.sampling.logprobs, .include_usage = g.include_usage, .tok = rt->tok};
    snprintf(c->rd.id, sizeof c->rd.id, "%s", r->id);
    return generation_result(c, reply);
}

routes_action routes_body(routes_call *c, const char *body, size_t len, bool too_large, routes_reply *reply)
{
    routes *rt = c->rt;
    if (too_large) {
        api_error e;
        api_error_set(&e, 413, "invalid_request_error", NULL, "body exceeds %zu bytes", rt->cfg.max_body_bytes);
        reply_error(reply, &e);
        return ROUTES_REPLY;
    }
    if (c->kind == R_HEALTH)
        return health(c, reply);
    if (c->kind == R_METRICS)
        return metrics_text(c, reply);
    const queue_state s = queue_get_state(rt->q);
    if (s != QUEUE_SERVING)
        return unavailable(reply, s);
    size_t out_len = 0;
    if (c->kind == R_MODELS) {
        char *models = api_models_body(rt->cfg.model_name, rt->lim.max_model_len, rt->created, &out_len);
        reply_json(reply, 200, models, out_len);
        return ROUTES_REPLY;
    }
    if ((c->kind == R_TOKENIZE || c->kind == R_DETOKENIZE) && !rt->tok)
        return error(reply, 400, "invalid_request_error", "", "the model has no tokenizer");
    cJSON *root = NULL;
    api_error e;
    if (!api_parse_body(body, len, &root, &e)) {
        reply_error(reply, &e);
        return ROUTES_REPLY;
    }
    routes_action a;
    switch (c->kind) {
    case R_TOKENIZE: a = tokenize(c, root, reply); break;
    case R_DETOKENIZE: a = detokenize(c, root, reply); break;
    case R_GENERATE: a = generation(c, root, API_GENERATE, reply); break;
    case R_CHAT: a = generation(c, root, API_CHAT, reply); break;
    default: a = generation(c, root, API_COMPLETIONS, reply); break;
    }
    cJSON_Delete(root);
    return a;
}

routes_action routes_resume(routes_call *c, routes_reply *reply)
{
    return generation_result(c, reply);
}

/* Renders what the last poll took into c->sse. */
static void render(routes_call *c)
{
    const queue_result *res = &c->res;
    api_error e;
    api_sse_events(&c->rd, &c->out, &c->sse);
    if (res->ping)
        api_buf_append(&c->sse, ": ping\n\n", 8);
    if (res->overflow) {
        api_error_set(&e, 503, "server_error", NULL,
                      "the client did not read the stream: its buffer of %u bytes filled up and the request was "
                      "cancelled",
                      QUEUE_STREAM_BUFFER_MAX);
        api_sse_error(&e, &c->sse);
        c->sse_done = true;
    } else if (res->phase == QUEUE_FINISHED) {
        if (res->finish == FK_FINISH_ERROR) {
            api_error_set(&e, 503, "server_error", NULL, "the engine failed (device error); the request is lost");
            api_sse_error(&e, &c->sse);
        } else {
            api_sse_final(&c->rd, res, &c->sse);
        }
        c->sse_done = true;
    } else if (res->closing) {
        api_error_set(&e, 503, "service_unavailable", NULL, "the server is shutting down");
        api_sse_error(&e, &c->sse);
        c->sse_done = true;
    }
}

ssize_t routes_stream(routes_call *c, char *buf, size_t max)
{
    for (;;) {
        if (c->sse_off < c->sse.len) {
            size_t n = c->sse.len - c->sse_off;
            if (n > max)
                n = max;
            memcpy(buf, c->sse.s + c->sse_off, n);
            c->sse_off += n;
            return (ssize_t)n;
        }
        c->sse.len = c->sse_off = 0;
        if (c->sse_done)
            return ROUTES_STREAM_END;
        if (!c->unrendered && !queue_poll(c->req, &c->out, &c->res, now_s()))
            return 0;
        c->unrendered = false;
        if (c->res.client_gone)
            return ROUTES_STREAM_ABORT;
        render(c);
        if (c->sse.failed)
            return ROUTES_STREAM_ABORT;
    }
}

void routes_protocol_error(int status, size_t head_limit, routes_reply *reply)
{
    api_error e;
    const char *type = status >= 500 ? "server_error" : "invalid_request_error";
    switch (status) {
    case 400: api_error_set(&e, status, type, NULL, "malformed HTTP request"); break;
    case 413:
        api_error_set(&e, status, type, NULL, "body too large: its Content-Length or a chunk size is out of range");
        break;
    case 414:
        api_error_set(&e, status, type, NULL, "URL too long: the request line and headers must fit in %zu bytes",
                      head_limit);
        break;
    case 431:
        api_error_set(&e, status, type, NULL,
                      "request headers too large: the request line and headers must fit in %zu bytes", head_limit);
        break;
    case 505: api_error_set(&e, status, type, NULL, "HTTP version not supported: use HTTP/1.1 or 1.0"); break;
    default: api_error_set(&e, status, type, NULL, "the HTTP request failed (status %d)", status); break;
    }
    reply_error(reply, &e);
}

void routes_end(routes_call *c)
{
    if (!c)
        return;
    if (c->req) {
        if (queue_detach(c->req))
            queue_cancel(c->rt->q, c->req);
        queue_release(c->req);
    }
    queue_output_free(&c->out);
    api_buf_free(&c->sse);
    free(c);
}
