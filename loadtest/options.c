/* options.c — command-line parsing (getopt_long: "--flag value" and "--flag=value"); every value is checked for
 * type and range, and a mistake is a usage error that names the flag and the value. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void options_usage(FILE *f)
{
    fputs(
        "usage: flashkernel-loadtest --url http://HOST:PORT [--endpoint generate|completions|llama]\n"
        "           [--concurrency 1,4,16,64] [--rate R[,R..]] [--requests N | --duration S]\n"
        "           [--prompt-len P | --prompts FILE] [--max-tokens M] [--ignore-eos] [--stream]\n"
        "           [--cancel-rate F] [--seed S] [--timeout S] [--vocab N] [--json OUT]\n"
        "\n"
        "Load-tests a FlashKernel server (or any server of the same API, or llama.cpp's llama-server) over HTTP and\n"
        "prints, per level (a concurrency, or an arrival rate), throughput and latency: requests, errors, req/s,\n"
        "output tok/s, total tok/s, TTFT p50/p90/p99,\n"
        "inter-token latency (ITL) p50/p99, end-to-end latency p50/p99, and errors by kind.\n"
        "\n"
        "  --url URL          the server: http://HOST[:PORT][/PREFIX] (required; plain http only)\n"
        "  --endpoint E       generate (POST /generate, the default), completions (POST /v1/completions) or\n"
        "                     llama (POST /completion, llama.cpp's llama-server's own API: n_predict,\n"
        "                     tokens_predicted, a stream that ends with \"stop\": true)\n"
        "  --concurrency LIST clients per level, comma-separated, each in [1, 4096] (default 1); one level each\n"
        "  --rate R[,R..]     open loop: requests arrive as a Poisson process of R per second, at most\n"
        "                     `concurrency` in flight (an arrival waits for a free client); without it the loop\n"
        "                     is closed: each client sends its next request as soon as its last one finishes.\n"
        "                     A list is a sweep, one level per rate (the throughput-latency curve), with one\n"
        "                     --concurrency for all of them or one per rate\n"
        "  --requests N[,N..] requests per level: one value for every level, or one per level\n"
        "                     (default: max(32, 4 x concurrency))\n"
        "  --duration S       instead: send new requests for S seconds per level (in-flight ones then finish)\n"
        "  --prompt-len P     random prompts of P token ids each, sent as an id array (default 128); drawn\n"
        "                     uniformly from the vocabulary, different for every request and level\n"
        "  --prompts FILE     prompts from FILE, one per line, used in order and repeated: a line starting\n"
        "                     with '\"' is a JSON string (for text with escapes, e.g. \"a\\nb\"), one starting with\n"
        "                     '[' a JSON array of token ids, any other line is the prompt's text as it is;\n"
        "                     blank lines are skipped, a CR before the LF is dropped\n"
        "  --max-tokens M     max_tokens of every request (default 128)\n"
        "  --ignore-eos       send ignore_eos: true (every request then generates M tokens)\n"
        "  --stream           stream the responses (SSE): needed for TTFT and ITL, which a whole response\n"
        "                     cannot show; without it they are reported as not measured\n"
        "  --cancel-rate F    abandon a fraction F in (0, 1] of the streams mid-way: after a number of token\n"
        "                     events drawn uniformly in [1, max-tokens - 1] the client closes its socket, as a\n"
        "                     user who gives up does; counted as cancelled, not as errors nor in the latencies\n"
        "                     (needs --stream and --max-tokens of 2 or more)\n"
        "  --seed S           seed of the random prompts, arrival times and cancellations (default: from the\n"
        "                     clock; printed)\n"
        "  --timeout S        limit for one request, from connect to its last byte (default 300); a request\n"
        "                     over it counts as a timeout error\n"
        "  --vocab N          vocabulary size for random prompts (default: asked from the server: n_vocab\n"
        "                     where GET /v1/models gives it (llama-server), else the first token id POST\n"
        "                     /detokenize refuses)\n"
        "  --json OUT         write the parameters, per-level summaries and per-request records to OUT\n"
        "  --help             this text\n"
        "\n"
        "Requests are greedy (temperature 0) on every endpoint. Output tokens are the server's\n"
        "usage.completion_tokens (llama: tokens_predicted); with --stream each request's token events must match\n"
        "it, else the request counts as a token_count_mismatch error. TTFT: connect to the first token event.\n"
        "ITL: gaps between consecutive token events (tokens that arrive in one read are ~0 apart). e2e: connect\n"
        "to the last byte.\n"
        "Percentiles are nearest-rank: pN is the smallest measured value with at least N% of the values at or\n"
        "below it. Latencies cover successful requests; throughput is successful requests' tokens divided by the\n"
        "level's span (first connect to last byte). Error kinds: http_<status> (e.g. http_429, http_503),\n"
        "refused, connect_failed, timeout, dropped (the connection closed before the response was complete),\n"
        "bad_response, stream_error (an error event), token_count_mismatch, client_error.\n"
        "\n"
        "Ctrl-C (SIGINT) stops sending, gives requests in flight up to 5 s (then they count as interrupted, not\n"
        "as errors), prints and writes what was measured, and exits with 130 (SIGTERM: the same, 143). A second\n"
        "Ctrl-C exits at once.\n"
        "A progress line goes to stderr on levels longer than 2 s.\n"
        "\n"
        "Exit status: 0 every request succeeded; 1 some requests failed; 2 bad usage; 3 the run could not start\n"
        "(server unreachable, vocabulary unknown, prompts file or --json OUT unusable) or its results could not\n"
        "be written; 130 (143) interrupted by SIGINT (SIGTERM): partial results printed and written.\n",
        f);
}

void options_free(options *o)
{
    free(o->concurrency);
    free(o->requests);
    free(o->rates);
    o->concurrency = NULL;
    o->requests = NULL;
    o->rates = NULL;
}

enum {
    OPT_URL = 1000, OPT_ENDPOINT, OPT_CONCURRENCY, OPT_RATE, OPT_REQUESTS, OPT_DURATION, OPT_PROMPT_LEN,
    OPT_PROMPTS, OPT_MAX_TOKENS, OPT_IGNORE_EOS, OPT_STREAM, OPT_SEED, OPT_TIMEOUT, OPT_VOCAB, OPT_JSON,
    OPT_CANCEL_RATE, OPT_HELP,
};

static const struct option long_options[] = {
    {"url", required_argument, 0, OPT_URL},
    {"endpoint", required_argument, 0, OPT_ENDPOINT},
    {"concurrency", required_argument, 0, OPT_CONCURRENCY},
    {"rate", required_argument, 0, OPT_RATE},
    {"requests", required_argument, 0, OPT_REQUESTS},
    {"duration", required_argument, 0, OPT_DURATION},
    {"prompt-len", required_argument, 0, OPT_PROMPT_LEN},
    {"prompts", required_argument, 0, OPT_PROMPTS},
    {"max-tokens", required_argument, 0, OPT_MAX_TOKENS},
    {"ignore-eos", no_argument, 0, OPT_IGNORE_EOS},
    {"stream", no_argument, 0, OPT_STREAM},
    {"seed", required_argument, 0, OPT_SEED},
    {"timeout", required_argument, 0, OPT_TIMEOUT},
    {"vocab", required_argument, 0, OPT_VOCAB},
    {"json", required_argument, 0, OPT_JSON},
    {"cancel-rate", required_argument, 0, OPT_CANCEL_RATE},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

/* An integer in [min, max], all of s. */
static bool parse_ll(const char *s, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max || strchr(s, ' ') || s[0] == '+')
        return false;
    *out = v;
    return true;
}

/* A finite number in (min, max], all of s. */
static bool parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v <= min || v > max)
        return false;
    *out = v;
    return true;
}

static int bad_value(char *err, size_t err_len, const char *flag, const char *want, const char *got)
{
    snprintf(err, err_len, "--%s must be %s, got \"%s\"", flag, want, got);
    return -1;
}

/* A comma-separated list of integers in [min, max] into a malloc'd array (*out, *n). */
static int parse_list(const char *flag, const char *s, long long min, long long max, long long **out, int *n,
                      char *err, size_t err_len)
{
    free(*out);
    *out = NULL;
    *n = 0;
    size_t cap = 1;
    for (const char *c = s; *c; c++)
        cap += *c == ',';
    *out = malloc(cap * sizeof **out);
    if (!*out) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        char item[32];
        long long v;
        if (len == 0 || len >= sizeof item) {
            snprintf(err, err_len, "--%s must be a comma-separated list of integers in [%lld, %lld], got \"%s\"",
                     flag, min, max, s);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = 0;
        if (!parse_ll(item, min, max, &v)) {
            snprintf(err, err_len, "--%s values must be integers in [%lld, %lld], got \"%s\"", flag, min, max,
                     item);
            return -1;
        }
        (*out)[(*n)++] = v;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

static int parse_concurrency(options *o, const char *s, char *err, size_t err_len)
{
    long long *v = NULL;
    int n = 0;
    free(o->concurrency);
    o->concurrency = NULL;
    o->n_concurrency = 0;
    if (parse_list("concurrency", s, 1, OPTIONS_MAX_CONCURRENCY, &v, &n, err, err_len)) {
        free(v);
        return -1;
    }
    o->concurrency = malloc((size_t)n * sizeof *o->concurrency);
    if (!o->concurrency) {
        free(v);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        o->concurrency[i] = (int)v[i];
    o->n_concurrency = n;
    free(v);
    return 0;
}

/* A comma-separated list of rates in (0, 1e6] into a malloc'd array. */
static int parse_rates(options *o, const char *s, char *err, size_t err_len)
{
    free(o->rates);
    o->n_rates = 0;
    size_t cap = 1;
    for (const char *c = s; *c; c++)
        cap += *c == ',';
    o->rates = malloc(cap * sizeof *o->rates);
    if (!o->rates) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        char item[32];
        if (len == 0 || len >= sizeof item)
            return bad_value(err, err_len, "rate", "a comma-separated list of requests per second in (0, 1e6]", s);
        memcpy(item, p, len);
        item[len] = 0;
        if (!parse_double(item, 0, 1e6, &o->rates[o->n_rates]))
            return bad_value(err, err_len, "rate", "a number of requests per second in (0, 1e6]", item);
        o->n_rates++;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

int options_levels(const options *o)
{
    return o->n_rates > o->n_concurrency ? o->n_rates : o->n_concurrency;
}

int options_concurrency(const options *o, int level)
{
    return o->concurrency[o->n_concurrency == 1 ? 0 : level];
}

double options_rate(const options *o, int level)
{
    return o->n_rates == 0 ? 0 : o->rates[o->n_rates == 1 ? 0 : level];
}

int options_max_concurrency(const options *o)
{
    int most = 0;
    for (int i = 0; i < o->n_concurrency; i++)
        most = o->concurrency[i] > most ? o->concurrency[i] : most;
    return most;
}

long long options_requests(const options *o, int level)
{
    if (o->duration_s > 0)
        return 0;
    if (o->n_requests == 1)
        return o->requests[0];
    if (o->n_requests > 1)
        return o->requests[level];
    int c = options_concurrency(o, level);
    return c * 4LL > 32 ? c * 4LL : 32;
}

int options_parse(int argc, char **argv, options *o, char *err, size_t err_len)
{
    *o = (options){.ep = ENDPOINT_GENERATE, .max_tokens = 128, .timeout_s = 300};
    bool have_prompt_len = false;
    long long v;
    opterr = 0; /* the messages are ours */
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
        const char *a = optarg;
        const char *name = opt >= OPT_URL && opt <= OPT_HELP ? long_options[opt - OPT_URL].name : "";
        switch (opt) {
        case OPT_URL: o->url = a; break;
        case OPT_ENDPOINT:
            if (!endpoint_parse(a, &o->ep))
                return bad_value(err, err_len, name, "generate, completions or llama", a);
            break;
        case OPT_CONCURRENCY:
            if (parse_concurrency(o, a, err, err_len))
                return -1;
            break;
        case OPT_RATE:
            if (parse_rates(o, a, err, err_len))
                return -1;
            break;
        case OPT_REQUESTS:
            if (parse_list(name, a, 1, 1000000000LL, &o->requests, &o->n_requests, err, err_len))
                return -1;
            break;
        case OPT_DURATION:
            if (!parse_double(a, 0, 1e7, &o->duration_s))
                return bad_value(err, err_len, name, "a number of seconds in (0, 1e7]", a);
            break;
        case OPT_PROMPT_LEN:
            if (!parse_ll(a, 1, 1 << 20, &v))
                return bad_value(err, err_len, name, "an integer in [1, 1048576]", a);
            o->prompt_len = (int)v;
            have_prompt_len = true;
            break;
        case OPT_PROMPTS: o->prompts_file = a; break;
        case OPT_MAX_TOKENS:
            if (!parse_ll(a, 1, 1 << 20, &v))
                return bad_value(err, err_len, name, "an integer in [1, 1048576]", a);
            o->max_tokens = (int)v;
            break;
        case OPT_IGNORE_EOS: o->ignore_eos = true; break;
        case OPT_STREAM: o->stream = true; break;
        case OPT_SEED: {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(a, &end, 10);
            if (errno || end == a || *end || a[0] == '-' || a[0] == '+' || a[0] == ' ')
                return bad_value(err, err_len, name, "an integer in [0, 2^64)", a);
            o->seed = s;
            o->seed_given = true;
            break;
        }
        case OPT_TIMEOUT:
            if (!parse_double(a, 0, 1e6, &o->timeout_s))
                return bad_value(err, err_len, name, "a number of seconds in (0, 1e6]", a);
            break;
        case OPT_VOCAB:
            if (!parse_ll(a, 1, 2147483647LL, &v))
                return bad_value(err, err_len, name, "an integer in [1, 2^31)", a);
            o->vocab = (int)v;
            break;
        case OPT_JSON: o->json_out = a; break;
        case OPT_CANCEL_RATE:
            if (!parse_double(a, 0, 1, &o->cancel_rate))
                return bad_value(err, err_len, name, "a fraction in (0, 1]", a);
            break;
        case OPT_HELP: o->help = true; return 0;
        case ':':
            snprintf(err, err_len, "%s needs a value", argv[optind - 1]);
            return -1;
        default:
            snprintf(err, err_len, "unknown option %s", argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        snprintf(err, err_len, "unexpected argument \"%s\" (every option starts with --)", argv[optind]);
        return -1;
    }
    if (!o->url) {
        snprintf(err, err_len, "--url is required (e.g. --url http://127.0.0.1:8080)");
        return -1;
    }
    if (o->n_requests && o->duration_s > 0) {
        snprintf(err, err_len, "--requests and --duration exclude each other: give one");
        return -1;
    }
    if (have_prompt_len && o->prompts_file) {
        snprintf(err, err_len, "--prompt-len and --prompts exclude each other: give one");
        return -1;
    }
    if (o->vocab && o->prompts_file) {
        snprintf(err, err_len, "--vocab is for random prompts; it has no use with --prompts");
        return -1;
    }
    if (o->cancel_rate > 0 && (!o->stream || o->max_tokens < 2)) {
        snprintf(err, err_len, "--cancel-rate abandons streams mid-way: it needs --stream and --max-tokens 2 or more");
        return -1;
    }
    if (!have_prompt_len)
        o->prompt_len = 128;
    if (!o->n_concurrency && parse_concurrency(o, "1", err, err_len))
        return -1;
    int levels = options_levels(o);
    if (o->n_concurrency > 1 && o->n_rates > 1 && o->n_concurrency != o->n_rates) {
        snprintf(err, err_len, "--concurrency has %d values and --rate %d: give one of them a single value, or as "
                 "many values to both", o->n_concurrency, o->n_rates);
        return -1;
    }
    if (o->n_requests > 1 && o->n_requests != levels) {
        snprintf(err, err_len, "--requests has %d values for %d --%s levels: give one, or one per level",
                 o->n_requests, levels, o->n_rates > o->n_concurrency ? "rate" : "concurrency");
        return -1;
    }
    return 0;
}
