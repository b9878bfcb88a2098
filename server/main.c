/* main.c — `flashkernel-server`: flags, startup (the HTTP daemon first, answering 503 while the model loads),
 * the engine thread's loop, signals and shutdown. The main thread is the engine thread: it alone touches the model
 * and the engine. Its loop takes submissions and cancels from the queue, steps the engine while there is work, and
 * otherwise sleeps on the queue's condition variable. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "chat.h"
#include "cli_flags.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "queue.h"
#include "routes.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel-server [--model DIR] [--host ADDR] [--port N] [--device cpu|cuda|auto] [--threads N]\n"
            "                          [--quantization none|int8|int4] [--quantize-lm-head]\n"
            "                          [engine options] [--max-queue N] [--max-concurrent-requests N]\n"
            "                          [--max-body-bytes N]\n"
            "                          [--api-key KEY | --api-key-file F] [--served-model-name NAME]\n"
            "                          [--shutdown-timeout S] [--max-connections N] [--max-connections-per-ip N]\n"
            "                          [--timeout S] [--http-threads N] [--sse-ping-interval S]\n"
            "                          [--chat-template FILE]\n"
            "\n"
            "Serves one model over HTTP: POST /generate, POST /v1/completions, POST /v1/chat/completions,\n"
            "GET /v1/models, POST /tokenize, POST /detokenize, GET /health, GET /metrics (docs/API.md).\n"
            "  --model DIR         Hugging Face model directory (default: the bundled demo model,\n"
            "                      or $FLASHKERNEL_MODEL)\n"
            "  --host ADDR         address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)\n"
            "  --port N            port (default 8080; 0: any free port, logged at startup)\n"
            "  --device D          cpu, cuda or auto (default auto)\n"
            "  --threads N         CPU backend threads (default: one per core)\n"
            "%s%s"
            "  --max-queue N       requests waiting for the engine before new ones get 429 (default 1024)\n"
            "  --max-concurrent-requests N\n"
            "                      requests admitted at once, waiting or running, before new ones get 429\n"
            "                      (default 0: only --max-queue limits them); equal to --max-num-seqs, every\n"
            "                      admitted request starts at once, so a burst cannot delay its first token\n"
            "  --max-body-bytes N  largest request body (default 1048576); larger ones get 413\n"
            "  --api-key KEY       require \"Authorization: Bearer KEY\" on every route but /health\n"
            "  --api-key-file F    the same, with the key read from the first line of F\n"
            "  --served-model-name NAME\n"
            "                      the model's name in the API (default: the model directory's name)\n"
            "  --shutdown-timeout S\n"
            "                      on SIGTERM/SIGINT, how long in-flight requests may take to finish\n"
            "                      before they are aborted (default 30)\n"
            "  --max-connections N open connections at most; more are refused at once (default 1024)\n"
            "  --max-connections-per-ip N\n"
            "                      open connections from one address at most (default 256)\n"
            "  --timeout S         close a connection idle (or not reading a stream) this long (default 60)\n"
            "  --http-threads N    HTTP threads: parsing, validation, tokenization (default 4)\n"
            "  --sse-ping-interval S\n"
            "                      send an SSE comment on a stream that has been quiet this long (default 15)\n"
            "  --chat-template FILE\n"
            "                      the Jinja chat template of /v1/chat/completions (default: the model's, from its\n"
            "                      chat_template.jinja or tokenizer_config.json)\n"
            "Test hook: FLASHKERNEL_FAULT_AFTER_STEPS=N makes the device fail after N engine steps, as a real fault\n"
            "would (the server then answers 503 and exits with status 1).\n"
            "Exit status: 0 after a clean shutdown, 1 startup or engine failure, 2 bad usage.\n",
            cli_model_usage, cli_engine_usage);
}

/* ---- the engine thread ---- */

/* The engine thread's state (one engine per process). */
static struct {
    queue *q;
    fk_engine *engine;
    metrics metrics;
    queue_request *head; /* requests in the engine, linked by engine_next */
    double deadline;     /* draining: when in-flight requests are aborted */
} loop;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void unlink_request(queue_request *r)
{
    if (r->engine_prev)
        r->engine_prev->engine_next = r->engine_next;
    else
        loop.head = r->engine_next;
    if (r->engine_next)
        r->engine_next->engine_prev = r->engine_prev;
    r->engine_prev = r->engine_next = NULL;
    r->in_engine = false;
}

/* The engine's token callback: timing metrics, the request's output buffer, and on the final event the log line and
 * the end of the engine side's reference. */
static void on_token(const fk_token_event *ev, void *user)
{
    queue_request *r = user;
    const double now = now_s(), waited = r->t_submit - r->t_arrival;
    if (ev->token >= 0) {
        if (r->t_first == 0) {
            r->t_first = now;
            metrics_observe(&loop.metrics.ttft, now - r->t_arrival);
        } else {
            metrics_observe(&loop.metrics.itl, now - r->t_last);
        }
        r->t_last = now;
    }
    if (!queue_deliver(r, ev, waited))
        queue_cancel(loop.q, r); /* the stream's buffer is full: the client is not reading */
    if (ev->finish == FK_FINISH_NONE)
        return;
    metrics_observe(&loop.metrics.e2e, now - r->t_arrival);
    metrics_observe(&loop.metrics.queue_time, waited + ev->queue_s);
    metrics_count_finish(&loop.metrics, ev->finish);
    log_info("request %s: %d prompt + %d completion tokens (%d cached), ttft %.1f ms, total %.1f ms, finish %s", r->id,
             ev->prompt_tokens, ev->completion_tokens, ev->cached_tokens,
             r->t_first > 0 ? (r->t_first - r->t_arrival) * 1e3 : 0.0, (now - r->t_arrival) * 1e3,
             fk_finish_reason_name(ev->finish));
    unlink_request(r);
    queue_release(r);
}

static void submit(queue_request *r)
{
    fk_request_params p = r->params;
    p.on_token = on_token;
    p.user = r;
    fk_error err = {0};
    r->t_submit = now_s();
    const fk_status s = fk_engine_submit(loop.engine, r->prompt, r->n_prompt, &p, &r->engine_id, &err);
    if (s) {
        queue_reject(r, s, err.message);
        queue_release(r);
        return;
    }
    r->in_engine = true;
    r->engine_next = loop.head;
    if (loop.head)
        loop.head->engine_prev = r;
    loop.head = r;
    queue_accept(r);
}

/* Ends every request in the engine now (each gets its final FK_FINISH_CANCEL event, which unlinks it). */
static void cancel_all(void)
{
    int n = 0;
    while (loop.head) {
        queue_request *r = loop.head;
        if (fk_engine_cancel(loop.engine, r->engine_id, NULL)) { /* not in the engine after all */
            unlink_request(r);
            queue_release(r);
        }
        n++;
    }
    if (n)
        log_info("shutdown deadline: %d request%s aborted", n, n == 1 ? "" : "s");
}

static void release_list(queue_request *r, bool cancels)
{
    while (r) {
        queue_request *next = cancels ? r->cancel_next : r->pending_next;
        if (cancels && r->in_engine)
            fk_engine_cancel(loop.engine, r->engine_id, NULL);
        queue_release(r);
        r = next;
    }
}

static void publish(void)
{
    const fk_engine_stats s = fk_engine_get_stats(loop.engine);
    queue_publish(loop.q, &s, &loop.metrics);
}

/* Runs until shutdown has drained the engine (returns true) or the engine failed (false). */
static bool run_engine(void)
{
    bool aborted = false;
    for (;;) {
        queue_work w;
        queue_take(loop.q, fk_engine_has_work(loop.engine), &w);
        release_list(w.dropped, false); /* cancelled before submission: never scheduled */
        for (queue_request *r = w.submit, *next; r; r = next) {
            next = r->pending_next;
            submit(r);
        }
        release_list(w.cancel, true);
        loop.deadline = w.deadline;
        if (w.state == QUEUE_DRAINING && !aborted && now_s() >= w.deadline) {
            cancel_all();
            aborted = true;
        }
        if (fk_engine_has_work(loop.engine)) {
            fk_error err = {0};
            if (fk_engine_step(loop.engine, &err)) {
                log_info("%s", err.message);
                queue_request *pending = queue_fail(loop.q);
                for (queue_request *r = pending, *next; r; r = next) {
                    next = r->pending_next;
                    queue_reject(r, FK_ERR_DEVICE, err.message);
                    queue_release(r);
                }
                publish();
                return false;
            }
        }
        publish();
        if (w.state == QUEUE_DRAINING && !fk_engine_has_work(loop.engine))
            return true;
    }
}

/* ---- signals ---- */

static struct {
    sigset_t set; /* SIGINT, SIGTERM, and SIGUSR1 which ends the thread */
    queue *q;
    double timeout;
} sig;

/* The first SIGTERM/SIGINT starts a graceful shutdown; a second one aborts in-flight requests at once. */
static void *signal_thread(void *arg)
{
    (void)arg;
    for (;;) {
        int s = 0;
        if (sigwait(&sig.set, &s) || s == SIGUSR1)
            return NULL;
        log_info("%s: %s", strsignal(s),
                 queue_get_state(sig.q) == QUEUE_DRAINING ? "aborting in-flight requests"
                                                          : "shutting down (new requests get 503)");
        queue_shutdown(sig.q, now_s(), sig.timeout);
    }
}

/* Grows the descriptor table to hold `n` (at most the limit) while the process has one thread: a threaded process
 * whose table grows during a burst of connections waits for an RCU grace period at each doubling (milliseconds
 * each), and accept() waits with it, so the burst's first requests would be answered late. */
static void reserve_descriptors(unsigned n)
{
    struct rlimit files;
    if (!getrlimit(RLIMIT_NOFILE, &files) && n >= files.rlim_cur)
        n = files.rlim_cur > 1 ? (unsigned)files.rlim_cur - 1 : 0;
    const int any = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (any < 0)
        return;
    const int high = fcntl(any, F_DUPFD_CLOEXEC, (int)n);
    if (high >= 0)
        close(high);
    close(any);
}

/* ---- flags ---- */

typedef struct options {
    const char *model_dir, *api_key, *served_name;
    char *api_key_buf;
    const char *chat_template_file;
    char *chat_template_source;
    fk_chat_template *chat_template; /* parsed from chat_template_source */
    fk_model_params mp;
    fk_engine_params ep;
    http_options http;
    int max_queue, max_concurrent;
    double shutdown_timeout;
} options;

enum {
    OPT_MODEL = 1, OPT_HOST, OPT_PORT, OPT_DEVICE, OPT_THREADS, OPT_MAX_QUEUE, OPT_MAX_BODY, OPT_API_KEY,
    OPT_API_KEY_FILE, OPT_SERVED_NAME, OPT_SHUTDOWN_TIMEOUT, OPT_MAX_CONNECTIONS, OPT_MAX_PER_IP, OPT_TIMEOUT,
    OPT_HTTP_THREADS, OPT_SSE_PING, OPT_CHAT_TEMPLATE, OPT_MAX_CONCURRENT, OPT_HELP, N_OPTS = OPT_HELP,
};

static bool read_key_file(const char *path, options *o)
{
    size_t len = 0;
    char *s = cli_read_file(path, &len);
    if (!s)
        return false;
    s[strcspn(s, "\r\n")] = '\0';
    if (!*s) {
        fprintf(stderr, "error: --api-key-file %s: the first line is empty\n", path);
        free(s);
        return false;
    }
    free(o->api_key_buf);
    o->api_key_buf = s;
    o->api_key = s;
    return true;
}

/* --chat-template FILE: read and parsed now, so that a broken template fails before the model loads. */
static bool read_chat_template(const char *path, options *o)
{
    size_t len = 0;
    char *s = cli_read_file(path, &len);
    if (!s)
        return false;
    fk_chat_template *t = NULL;
    fk_error err = {0};
    if (fk_chat_template_parse(s, len, &t, &err)) {
        fprintf(stderr, "error: --chat-template %s: %s\n", path, err.message);
        free(s);
        return false;
    }
    fk_chat_template_free(o->chat_template);
    free(o->chat_template_source);
    o->chat_template = t;
    o->chat_template_source = s;
    o->chat_template_file = path;
    return true;
}

/* The last component of the model path: the default served name. */
static const char *base_name(const char *dir, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", dir);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    const char *slash = strrchr(buf, '/');
    return slash && slash[1] ? slash + 1 : buf;
}

static void free_options(options *o)
{
    free(o->api_key_buf);
    fk_chat_template_free(o->chat_template);
    free(o->chat_template_source);
}

/* -1 when parsed, else the exit status (EXIT_OK after --help). */
static int parse_flags(int argc, char **argv, options *o)
{
    static struct option options[N_OPTS + CLI_ENGINE_OPTION_COUNT + CLI_MODEL_OPTION_COUNT + 1] = {
        {"model", required_argument, 0, OPT_MODEL},
        {"host", required_argument, 0, OPT_HOST},
        {"port", required_argument, 0, OPT_PORT},
        {"device", required_argument, 0, OPT_DEVICE},
        {"threads", required_argument, 0, OPT_THREADS},
        {"max-queue", required_argument, 0, OPT_MAX_QUEUE},
        {"max-concurrent-requests", required_argument, 0, OPT_MAX_CONCURRENT},
        {"max-body-bytes", required_argument, 0, OPT_MAX_BODY},
        {"api-key", required_argument, 0, OPT_API_KEY},
        {"api-key-file", required_argument, 0, OPT_API_KEY_FILE},
        {"served-model-name", required_argument, 0, OPT_SERVED_NAME},
        {"shutdown-timeout", required_argument, 0, OPT_SHUTDOWN_TIMEOUT},
        {"max-connections", required_argument, 0, OPT_MAX_CONNECTIONS},
        {"max-connections-per-ip", required_argument, 0, OPT_MAX_PER_IP},
        {"timeout", required_argument, 0, OPT_TIMEOUT},
        {"http-threads", required_argument, 0, OPT_HTTP_THREADS},
        {"sse-ping-interval", required_argument, 0, OPT_SSE_PING},
        {"chat-template", required_argument, 0, OPT_CHAT_TEMPLATE},
        {"help", no_argument, 0, OPT_HELP},
    };
    for (int i = 0; i < CLI_ENGINE_OPTION_COUNT; i++)
        options[N_OPTS + i] = cli_engine_options[i];
    for (int i = 0; i < CLI_MODEL_OPTION_COUNT; i++)
        options[N_OPTS + CLI_ENGINE_OPTION_COUNT + i] = cli_model_options[i];
    int opt, v;
    float f;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        bool ok = true;
        switch (opt) {
        case OPT_MODEL: o->model_dir = optarg; break;
        case OPT_HOST: o->http.host = optarg; break;
        case OPT_PORT: ok = cli_parse_int("--port", optarg, 0, 65535, &o->http.port); break;
        case OPT_DEVICE: ok = cli_parse_device(optarg, &o->mp.device); break;
        case OPT_THREADS: ok = cli_parse_int("--threads", optarg, 1, 4096, &o->mp.n_threads); break;
        case OPT_MAX_QUEUE: ok = cli_parse_int("--max-queue", optarg, 1, 1 << 24, &o->max_queue); break;
        case OPT_MAX_CONCURRENT:
            ok = cli_parse_int("--max-concurrent-requests", optarg, 0, 1 << 24, &o->max_concurrent);
            break;
        case OPT_MAX_BODY:
            ok = cli_parse_int("--max-body-bytes", optarg, 1, INT_MAX, &v);
            o->http.max_body_bytes = (size_t)v;
            break;
        case OPT_API_KEY:
            o->api_key = optarg;
            if (!*optarg) {
                fprintf(stderr, "error: --api-key must not be empty\n");
                ok = false;
            }
            break;
        case OPT_API_KEY_FILE: ok = read_key_file(optarg, o); break;
        case OPT_SERVED_NAME: o->served_name = optarg; break;
        case OPT_SHUTDOWN_TIMEOUT:
            ok = cli_parse_float("--shutdown-timeout", optarg, 0, 86400, &f);
            o->shutdown_timeout = f;
            break;
        case OPT_MAX_CONNECTIONS:
            ok = cli_parse_int("--max-connections", optarg, 1, 1 << 20, &v);
            o->http.max_connections = (unsigned)v;
            break;
        case OPT_MAX_PER_IP:
            ok = cli_parse_int("--max-connections-per-ip", optarg, 1, 1 << 20, &v);
            o->http.max_connections_per_ip = (unsigned)v;
            break;
        case OPT_TIMEOUT:
            ok = cli_parse_int("--timeout", optarg, 1, 86400, &v);
            o->http.timeout_s = (unsigned)v;
            break;
        case OPT_HTTP_THREADS:
            ok = cli_parse_int("--http-threads", optarg, 1, 256, &v);
            o->http.threads = (unsigned)v;
            break;
        case OPT_SSE_PING:
            ok = cli_parse_float("--sse-ping-interval", optarg, 0.1f, 3600, &f);
            o->http.ping_interval_s = f;
            break;
        case OPT_CHAT_TEMPLATE: ok = read_chat_template(optarg, o); break;
        case OPT_HELP: usage(stdout); return EXIT_OK;
        default:
            ok = opt >= CLI_MODEL_OPTION_BASE ? cli_model_option(opt, optarg, &o->mp)
                                              : opt >= CLI_ENGINE_OPTION_BASE && cli_engine_option(opt, optarg, &o->ep);
        }
        if (!ok) {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "error: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *fault = getenv("FLASHKERNEL_FAULT_AFTER_STEPS");
    if (fault && *fault && !cli_parse_int("FLASHKERNEL_FAULT_AFTER_STEPS", fault, 0, INT_MAX, &o->ep.fault_after_steps))
        return EXIT_USAGE;
    return -1;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    options o = {
        .model_dir = cli_default_model(),
        .mp = fk_model_params_default(),
        .ep = fk_engine_params_default(),
        .http = {.host = "127.0.0.1", .port = 8080, .threads = 4, .max_connections = 1024,
                 .max_connections_per_ip = 256, .timeout_s = 60, .memory_limit = 32 * 1024,
                 .max_body_bytes = 1 << 20, .ping_interval_s = 15},
        .max_queue = 1024,
        .shutdown_timeout = 30,
    };
    o.ep.decode_graphs_at_start = true; /* a server records them once, before it takes requests */
    const int rc = parse_flags(argc, argv, &o);
    if (rc >= 0) {
        free_options(&o);
        return rc;
    }
    char name_buf[4096];
    const char *name = o.served_name ? o.served_name : base_name(o.model_dir, name_buf, sizeof name_buf);

    /* Signals go to the signal thread only; a closed client socket must not kill the process. */
    sigemptyset(&sig.set);
    sigaddset(&sig.set, SIGINT);
    sigaddset(&sig.set, SIGTERM);
    sigaddset(&sig.set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sig.set, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Every connection is a descriptor: take what the hard limit allows. */
    struct rlimit files;
    if (!getrlimit(RLIMIT_NOFILE, &files) && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }
    if (!getrlimit(RLIMIT_NOFILE, &files) && files.rlim_cur < (rlim_t)o.http.max_connections + 64)
        log_info("warning: --max-connections %u but only %llu file descriptors (ulimit -n)", o.http.max_connections,
                 (unsigned long long)files.rlim_cur);
    reserve_descriptors(o.http.max_connections + 64);

    queue *q = queue_create(o.max_queue, o.max_concurrent, &http_queue_hooks);
    const routes_config rc_cfg = {.api_key = o.api_key, .model_name = name, .max_body_bytes = o.http.max_body_bytes};
    routes *rt = q ? routes_create(&rc_cfg, q) : NULL;
    char err[512] = "out of memory";
    http *h = rt ? http_start(&o.http, rt, q, err, sizeof err) : NULL;
    if (!h) {
        log_info("error: %s", err);
        routes_destroy(rt);
        queue_destroy(q);
        free_options(&o);
        return EXIT_RUNTIME;
    }
    log_info("listening on http://%s%s%s:%d (503 until the model is loaded)", strchr(o.http.host, ':') ? "[" : "",
             o.http.host, strchr(o.http.host, ':') ? "]" : "", http_port(h));
    sig.q = q;
    sig.timeout = o.shutdown_timeout;
    pthread_t signals;
    const bool have_signals = pthread_create(&signals, NULL, signal_thread, NULL) == 0;

    const double t0 = now_s();
    fk_model *model = NULL;
    fk_engine *engine = NULL;
    chat *chat = NULL;
    fk_error ferr = {0};
    bool drained = false;
    if (!fk_model_load(o.model_dir, &o.mp, &model, &ferr) && !fk_engine_create(model, &o.ep, &engine, &ferr)) {
        chat = chat_create(o.model_dir, o.chat_template_file, o.chat_template_source, o.chat_template, model);
        o.chat_template = NULL; /* taken */
        if (!chat)
            snprintf(ferr.message, sizeof ferr.message, "out of memory");
    }
    if (!chat) {
        log_info("error: %s", ferr.message);
        queue_fail(q); /* nothing was pushed while loading */
    } else {
        const fk_model_info info = fk_model_get_info(model);
        const fk_engine_stats st = fk_engine_get_stats(engine);
        const int max_model_len = o.ep.max_model_len ? o.ep.max_model_len : info.max_context;
        char weights[128];
        cli_describe_weights(model, weights, sizeof weights);
        log_info("model %s (%s, %d layers, vocab %d) served as \"%s\" on %s; %s; KV cache %d blocks of %d tokens "
                 "(%.1f MiB); max_model_len %d, max_num_seqs %d, max_num_batched_tokens %d; %d decode graphs "
                 "recorded; ready in %.2f s",
                 o.model_dir, info.architecture, info.n_layers, info.vocab_size, name, info.device, weights,
                 st.blocks_total, o.ep.block_size,
                 (double)st.blocks_total * o.ep.block_size * info.kv_bytes_per_token / 1048576, max_model_len,
                 o.ep.max_num_seqs,
                 o.ep.max_num_batched_tokens ? o.ep.max_num_batched_tokens : fk_default_batched_tokens(model),
                 st.decode_graphs, now_s() - t0);
        log_info("%s", chat_describe(chat));
        if (o.ep.fault_after_steps)
            log_info("test hook: the device fails after %d engine steps", o.ep.fault_after_steps);
        loop.q = q;
        loop.engine = engine;
        metrics_init(&loop.metrics);
        publish();
        routes_set_model(rt, model, max_model_len, chat);
        queue_serve(q);
        log_info("ready");
        drained = run_engine();
    }

    /* Shutdown: let the last responses go out (until a second past the shutdown deadline), wake every parked
     * connection, stop the daemon. After an engine failure, keep answering 503 for a second (health checks see it),
     * then exit well within 5 s. */
    double flush_until = now_s() + 3;
    if (drained)
        flush_until = (loop.deadline > now_s() ? loop.deadline : now_s()) + 1;
    else if (engine) {
        const struct timespec linger = {.tv_sec = 1};
        nanosleep(&linger, NULL);
    }
    if (!queue_wait_idle(q, flush_until))
        log_info("closing connections that are still open");
    queue_close(q);
    http_stop(h);
    if (engine) {
        queue_work w;
        queue_take(q, true, &w); /* cancels that arrived after the loop */
        release_list(w.dropped, false);
        release_list(w.submit, false);
        release_list(w.cancel, true);
        cancel_all();
    }
    if (have_signals) {
        pthread_kill(signals, SIGUSR1);
        pthread_join(signals, NULL);
    }
    fk_engine_free(engine);
    chat_free(chat);
    fk_model_free(model);
    routes_destroy(rt);
    queue_destroy(q);
    free_options(&o);
    log_info("exiting with status %d", drained ? 0 : 1);
    return drained ? EXIT_OK : EXIT_RUNTIME;
}
