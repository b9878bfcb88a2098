/* report.c — the table on stdout and the JSON file. Latencies in milliseconds, throughput per second. */
#include "report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

void report_header(FILE *f, const options *o, const run_info *ri)
{
    fprintf(f, "server: %s%s, model %s", o->url, endpoint_path(o->ep), ri->model ? ri->model : "(unknown)");
    if (ri->max_model_len > 0)
        fprintf(f, " (max_model_len %d)", ri->max_model_len);
    fprintf(f, "\n");
    if (o->prompts_file)
        fprintf(f, "prompts: %s", o->prompts_file);
    else
        fprintf(f, "prompts: random, %d token ids from a vocabulary of %d (%s)", o->prompt_len, ri->vocab,
                ri->vocab_source ? ri->vocab_source : "--vocab");
    fprintf(f, "; max_tokens %d%s%s", o->max_tokens, o->ignore_eos ? ", ignore_eos" : "", o->stream ? ", stream" : "");
    if (o->cancel_rate > 0)
        fprintf(f, ", %g of the streams abandoned mid-way", o->cancel_rate);
    fprintf(f, "; seed %llu\n", (unsigned long long)ri->seed);
    if (o->n_rates == 1)
        fprintf(f, "open loop: Poisson arrivals, %g requests/s, at most `conc` in flight", o->rates[0]);
    else if (o->n_rates > 1)
        fprintf(f, "open loop: Poisson arrivals at `rate` requests/s (a level per rate), at most `conc` in flight");
    else
        fprintf(f, "closed loop: `conc` clients, each sending its next request when the last one finishes");
    if (o->duration_s > 0)
        fprintf(f, "; %g s per level", o->duration_s);
    else if (o->n_requests == 1)
        fprintf(f, "; %lld requests per level", o->requests[0]);
    else if (o->n_requests > 1)
        fprintf(f, "; requests per level as --requests lists them");
    else
        fprintf(f, "; max(32, 4 x conc) requests per level");
    fprintf(f, "; timeout %g s\n", o->timeout_s);
    fprintf(f, "latencies in ms (nearest-rank percentiles)%s\n",
            o->stream ? "" : "; TTFT and ITL not measured: responses are not streamed (--stream)");
}

void report_table_header(FILE *f, bool open_loop)
{
    fprintf(f, "%5s", "conc");
    if (open_loop)
        fprintf(f, " %7s", "rate");
    fprintf(f, " %6s %5s %8s %10s %10s %9s %9s %9s %8s %8s %9s %9s  %s\n", "reqs", "errs", "req/s",
            "out tok/s", "tot tok/s", "TTFT p50", "TTFT p90", "TTFT p99", "ITL p50", "ITL p99", "e2e p50", "e2e p99",
            "errors");
    fflush(f);
}

/* A latency column: the value, or n/a when nothing was measured. */
static void cell(FILE *f, int width, int decimals, const dist *d, double v)
{
    if (d->n)
        fprintf(f, " %*.*f", width, decimals, v);
    else
        fprintf(f, " %*s", width, "n/a");
}

void report_row(FILE *f, const level_summary *s, bool partial, bool open_loop)
{
    fprintf(f, "%5d", s->concurrency);
    if (open_loop)
        fprintf(f, " %7.4g", s->rate);
    fprintf(f, " %6zu %5zu %8.2f %10.1f %10.1f", s->requests, s->failed, s->req_per_s, s->output_tok_per_s,
            s->total_tok_per_s);
    cell(f, 9, 1, &s->ttft, s->ttft.p50);
    cell(f, 9, 1, &s->ttft, s->ttft.p90);
    cell(f, 9, 1, &s->ttft, s->ttft.p99);
    cell(f, 8, 2, &s->itl, s->itl.p50);
    cell(f, 8, 2, &s->itl, s->itl.p99);
    cell(f, 9, 1, &s->e2e, s->e2e.p50);
    cell(f, 9, 1, &s->e2e, s->e2e.p99);
    fprintf(f, " ");
    if (!s->n_kinds && !s->interrupted && !s->cancelled)
        fprintf(f, " -");
    for (size_t k = 0; k < s->n_kinds; k++)
        fprintf(f, " %s:%zu", s->kinds[k].name, s->kinds[k].count);
    if (s->cancelled)
        fprintf(f, " (cancelled:%zu)", s->cancelled);
    if (s->interrupted)
        fprintf(f, " (interrupted:%zu)", s->interrupted);
    if (partial)
        fprintf(f, " [partial: stopped by a signal]");
    fprintf(f, "\n");
    fflush(f);
}

/* JSON building: every add goes through these, which note a failed allocation in *ok (adding to a NULL object
 * fails too, so one check at the end covers the whole tree). */
static void put_num(cJSON *o, const char *k, double v, bool *ok)
{
    /* figures rounded to 1e-6 (ms to ns), so that the file stays readable */
    *ok = cJSON_AddNumberToObject(o, k, round(v * 1e6) / 1e6) && *ok;
}

/* Every string goes in as valid UTF-8 (cJSON copies bytes as they are): what the server sent (model name, finish
 * reason, messages), the command line and file names may hold anything; invalid sequences become U+FFFD. */
static void put_str(cJSON *o, const char *k, const char *v, bool *ok)
{
    if (!v) {
        *ok = cJSON_AddNullToObject(o, k) && *ok;
        return;
    }
    const size_t n = strlen(v);
    char *fixed = NULL;
    if (utf8_check(v, n) != n) {
        if (!(fixed = malloc(3 * n + 1))) {
            *ok = false;
            return;
        }
        fixed[utf8_lossy(v, n, fixed)] = 0;
    }
    *ok = cJSON_AddStringToObject(o, k, fixed ? fixed : v) && *ok;
    free(fixed);
}

static void put_null(cJSON *o, const char *k, bool *ok)
{
    *ok = cJSON_AddNullToObject(o, k) && *ok;
}

static void put_bool(cJSON *o, const char *k, bool v, bool *ok)
{
    *ok = cJSON_AddBoolToObject(o, k, v) && *ok;
}

static void put_item(cJSON *o, const char *k, cJSON *item, bool *ok)
{
    if (!item || !o || !cJSON_AddItemToObject(o, k, item)) {
        cJSON_Delete(item);
        *ok = false;
    }
}

/* {"measured", ["reason"], "n", "mean", "min", "max", "p50", "p90", "p99"}: null figures when nothing was measured. */
static cJSON *dist_json(const dist *d, bool measured, const char *why_not, bool *ok)
{
    cJSON *o = cJSON_CreateObject();
    put_bool(o, "measured", measured, ok);
    if (!measured)
        put_str(o, "reason", why_not, ok);
    put_num(o, "n", (double)d->n, ok);
    const char *names[] = {"mean", "min", "max", "p50", "p90", "p99"};
    const double vals[] = {d->mean, d->min, d->max, d->p50, d->p90, d->p99};
    for (int i = 0; i < 6; i++) {
        if (d->n)
            put_num(o, names[i], vals[i], ok);
        else
            put_null(o, names[i], ok);
    }
    return o;
}

/* One record per request, in finishing order. */
static cJSON *results_json(const level_results *r, bool *ok)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && *ok && i < r->n; i++) {
        const req_result *q = &r->r[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(a, o)) {
            cJSON_Delete(o);
            *ok = false;
            break;
        }
        put_num(o, "start_s", q->start, ok);
        if (q->ttft >= 0)
            put_num(o, "ttft_ms", q->ttft * 1e3, ok);
        else
            put_null(o, "ttft_ms", ok);
        put_num(o, "e2e_ms", q->e2e * 1e3, ok);
        put_num(o, "status", q->status, ok);
        put_num(o, "prompt_tokens", q->prompt_tokens, ok);
        put_num(o, "output_tokens", q->output_tokens, ok);
        put_num(o, "token_events", q->token_events, ok);
        put_str(o, "finish_reason", q->finish[0] ? q->finish : NULL, ok);
        char name[24];
        request_error_name(q, name, sizeof name);
        put_bool(o, "cancelled", q->error == REQ_CANCELLED, ok);
        put_str(o, "error", q->error == REQ_OK || q->error == REQ_CANCELLED ? NULL : name, ok);
        if (q->error != REQ_OK && q->error != REQ_CANCELLED)
            put_str(o, "message", q->message ? q->message : "", ok);
    }
    return a;
}

static cJSON *level_json(const options *o, const level_summary *s, const level_results *r, bool *ok)
{
    cJSON *l = cJSON_CreateObject();
    put_num(l, "concurrency", s->concurrency, ok);
    if (s->rate > 0)
        put_num(l, "rate", s->rate, ok);
    else
        put_null(l, "rate", ok);
    put_num(l, "requests", (double)s->requests, ok);
    put_num(l, "ok", (double)s->ok, ok);
    put_num(l, "failed", (double)s->failed, ok);
    put_num(l, "cancelled", (double)s->cancelled, ok);
    put_num(l, "interrupted", (double)s->interrupted, ok);
    put_num(l, "duration_s", s->duration_s, ok);
    put_num(l, "req_per_s", s->req_per_s, ok);
    put_num(l, "output_tok_per_s", s->output_tok_per_s, ok);
    put_num(l, "total_tok_per_s", s->total_tok_per_s, ok);
    put_num(l, "prompt_tokens", (double)s->prompt_tokens, ok);
    put_num(l, "output_tokens", (double)s->output_tokens, ok);
    put_num(l, "cached_prompt_tokens", (double)s->cached_tokens, ok);
    const char *why = "not streamed: a whole response has no first-token time (use --stream)";
    put_item(l, "ttft_ms", dist_json(&s->ttft, o->stream, why, ok), ok);
    put_item(l, "itl_ms", dist_json(&s->itl, o->stream, why, ok), ok);
    put_item(l, "e2e_ms", dist_json(&s->e2e, true, NULL, ok), ok);
    cJSON *errors = cJSON_CreateObject(), *examples = cJSON_CreateObject();
    for (size_t k = 0; k < s->n_kinds; k++) {
        put_num(errors, s->kinds[k].name, (double)s->kinds[k].count, ok);
        put_str(examples, s->kinds[k].name, s->kinds[k].example ? s->kinds[k].example : "", ok);
    }
    put_item(l, "errors", errors, ok);
    put_item(l, "error_examples", examples, ok);
    cJSON *finish = cJSON_CreateObject();
    for (size_t i = 0; finish && i < r->n; i++) {
        const req_result *q = &r->r[i];
        if (q->error != REQ_OK)
            continue;
        const char *name = q->finish[0] ? q->finish : "unknown";
        cJSON *c = cJSON_GetObjectItemCaseSensitive(finish, name);
        if (c)
            cJSON_SetNumberValue(c, c->valuedouble + 1);
        else
            put_num(finish, name, 1, ok);
    }
    put_item(l, "finish_reasons", finish, ok);
    put_item(l, "results", results_json(r, ok), ok);
    return l;
}

static cJSON *params_json(const options *o, const run_info *ri, bool *ok)
{
    cJSON *p = cJSON_CreateObject();
    put_str(p, "url", o->url, ok);
    put_str(p, "endpoint", endpoint_name(o->ep), ok);
    const int levels = options_levels(o);
    cJSON *conc = cJSON_CreateArray(), *rate = o->n_rates ? cJSON_CreateArray() : NULL; /* per level */
    for (int i = 0; i < levels; i++) {
        *ok = conc && cJSON_AddItemToArray(conc, cJSON_CreateNumber(options_concurrency(o, i))) && *ok;
        if (o->n_rates)
            *ok = rate && cJSON_AddItemToArray(rate, cJSON_CreateNumber(options_rate(o, i))) && *ok;
    }
    put_item(p, "concurrency", conc, ok);
    put_str(p, "loop", o->n_rates ? "open" : "closed", ok);
    if (o->n_rates)
        put_item(p, "rate", rate, ok);
    else
        put_null(p, "rate", ok);
    if (o->duration_s > 0) {
        put_null(p, "requests", ok);
        put_num(p, "duration_s", o->duration_s, ok);
    } else {
        cJSON *req = cJSON_CreateArray(); /* per level, in the order of "concurrency" */
        for (int i = 0; req && i < levels; i++)
            *ok = cJSON_AddItemToArray(req, cJSON_CreateNumber((double)options_requests(o, i))) && *ok;
        put_item(p, "requests", req, ok);
        put_null(p, "duration_s", ok);
    }
    if (o->prompts_file) {
        put_null(p, "prompt_len", ok);
        put_str(p, "prompts_file", o->prompts_file, ok);
        put_null(p, "vocab", ok);
    } else {
        put_num(p, "prompt_len", o->prompt_len, ok);
        put_null(p, "prompts_file", ok);
        put_num(p, "vocab", ri->vocab, ok);
    }
    put_num(p, "max_tokens", o->max_tokens, ok);
    put_bool(p, "ignore_eos", o->ignore_eos, ok);
    put_bool(p, "stream", o->stream, ok);
    put_num(p, "cancel_rate", o->cancel_rate, ok);
    put_num(p, "temperature", 0, ok);
    char seed[24]; /* a JSON number loses digits past 2^53: the seed is a string */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)ri->seed);
    put_str(p, "seed", seed, ok);
    put_num(p, "timeout_s", o->timeout_s, ok);
    return p;
}

int report_json(FILE *f, const options *o, const run_info *ri, const level_summary *s, const level_results *r,
                int n_levels)
{
    bool ok = true;
    cJSON *root = cJSON_CreateObject();
    put_str(root, "tool", "flashkernel-loadtest", &ok);
    put_str(root, "command", ri->command, &ok);
    put_str(root, "started_at", ri->started, &ok);
    put_str(root, "model", ri->model, &ok);
    if (ri->max_model_len > 0)
        put_num(root, "max_model_len", ri->max_model_len, &ok);
    else
        put_null(root, "max_model_len", &ok);
    put_item(root, "params", params_json(o, ri, &ok), &ok);
    put_str(root, "percentiles",
            "nearest-rank: pN is the smallest measured value with at least N% of the values at or below it; "
            "latencies over successful requests, in ms",
            &ok);
    put_bool(root, "interrupted", ri->interrupted, &ok);
    cJSON *levels = cJSON_CreateArray();
    for (int i = 0; levels && ok && i < n_levels; i++) {
        cJSON *l = level_json(o, &s[i], &r[i], &ok);
        if (!l || !cJSON_AddItemToArray(levels, l)) {
            cJSON_Delete(l);
            ok = false;
        }
    }
    put_item(root, "levels", levels, &ok);
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return -1;
    size_t n = strlen(text);
    int rc = fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF ? 0 : -1;
    free(text);
    return rc;
}
