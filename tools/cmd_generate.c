/* cmd_generate.c — `flashkernel generate`: one prompt (token ids or text), or a file of requests run together,
 * through the continuous-batching engine. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "json.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel generate [--model DIR] (--prompt-ids 1,2,3 | --prompt TEXT | --batch FILE)\n"
            "                            [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--min-p P]\n"
            "                            [--seed S] [--stop STR]... [--ignore-eos] [--json] [engine options]\n"
            "                            [--device cpu|cuda|auto] [--threads N] [--quantization none|int8|int4]\n"
            "                            [--quantize-lm-head]\n"
            "\n"
            "Generates after a prompt and prints the text (or the ids, for a model without a tokenizer).\n"
            "  --model DIR         Hugging Face model directory (default: the bundled demo model,\n"
            "                      or $FLASHKERNEL_MODEL)\n"
            "  --prompt-ids LIST   prompt as comma-separated token ids\n"
            "  --prompt TEXT       prompt as text; special tokens are added as the model's template says\n"
            "  --batch FILE        one JSON request per line: {\"prompt_ids\":[...]} or {\"prompt\":\"...\"} with\n"
            "                      optional max_tokens, temperature, top_k, top_p, min_p, seed, stop, ignore_eos;\n"
            "                      all run together, one JSON result per line in input order; a line that\n"
            "                      is not exactly one JSON object (trailing bytes, duplicate keys) is an error\n"
            "  --max-tokens N      tokens to generate (default 16)\n"
            "  --temperature T     0 = greedy (default); up to 2\n"
            "  --top-k K           sample from the K most likely tokens (default 0: off)\n"
            "  --top-p P           sample from the smallest set with probability >= P (default 1: off)\n"
            "  --min-p P           drop tokens less likely than P times the most likely (default 0: off)\n"
            "  --seed S            random seed for sampling (default 0)\n"
            "  --stop STR          stop before this text (repeatable, up to 4; needs a tokenizer)\n"
            "  --ignore-eos        do not stop at end-of-sequence ids\n"
            "  --json              print {\"prompt_ids\":[...],\"ids\":[...],\"text\":\"...\",\"finish_reason\":...}\n"
            "                      (\"text\" when the model has a tokenizer; --batch adds \"preemptions\")\n"
            "%s"
            "  --device D          cpu, cuda or auto (default auto)\n"
            "  --threads N         CPU threads (default: one per core)\n"
            "%s"
            "Exit status: 0 ok, 1 model, input or runtime error, 2 bad usage.\n",
            cli_engine_usage, cli_model_usage);
}

/* One request's result, filled by the token callback. */
typedef struct output {
    int32_t *ids;
    int n, cap;
    char *text;
    size_t len, text_cap;
    bool has_text;
    bool stream; /* print text as it arrives */
    bool out_of_memory;
    fk_finish_reason finish;
    int preemptions;
} output;

static void on_token(const fk_token_event *ev, void *user)
{
    output *o = user;
    if (ev->token >= 0) {
        if (o->n == o->cap) {
            int cap = o->cap ? 2 * o->cap : 64;
            int32_t *grown = realloc(o->ids, (size_t)cap * sizeof *grown);
            if (!grown) {
                o->out_of_memory = true;
                return;
            }
            o->ids = grown, o->cap = cap;
        }
        o->ids[o->n++] = ev->token;
    }
    if (ev->text) {
        o->has_text = true;
        if (o->len + ev->text_len + 1 > o->text_cap) {
            size_t cap = 2 * (o->len + ev->text_len + 1);
            char *grown = realloc(o->text, cap);
            if (!grown) {
                o->out_of_memory = true;
                return;
            }
            o->text = grown, o->text_cap = cap;
        }
        memcpy(o->text + o->len, ev->text, ev->text_len);
        o->len += ev->text_len;
        o->text[o->len] = '\0';
        if (o->stream) {
            fwrite(ev->text, 1, ev->text_len, stdout);
            fflush(stdout);
        }
    }
    o->finish = ev->finish;
    o->preemptions = ev->preemptions;
}

/* The JSON result line: prompt_ids, ids, text (with a tokenizer), finish_reason, preemptions (batch). */
static void print_json(const int32_t *prompt, int n_prompt, const output *o, bool with_preemptions)
{
    cJSON *root = cJSON_CreateObject(), *p = cJSON_AddArrayToObject(root, "prompt_ids");
    for (int i = 0; i < n_prompt; i++)
        cJSON_AddItemToArray(p, cJSON_CreateNumber(prompt[i]));
    cJSON *ids = cJSON_AddArrayToObject(root, "ids");
    for (int i = 0; i < o->n; i++)
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(o->ids[i]));
    if (o->has_text)
        cJSON_AddStringToObject(root, "text", o->text ? o->text : "");
    cJSON_AddStringToObject(root, "finish_reason", fk_finish_reason_name(o->finish));
    if (with_preemptions)
        cJSON_AddNumberToObject(root, "preemptions", o->preemptions);
    char *s = cJSON_PrintUnformatted(root);
    if (s)
        puts(s);
    free(s);
    cJSON_Delete(root);
}

/* Runs the engine until every request is done. */
static bool run_to_completion(fk_engine *e)
{
    fk_error err = {0};
    while (fk_engine_has_work(e))
        if (fk_engine_step(e, &err)) {
            fprintf(stderr, "error: %s\n", err.message);
            return false;
        }
    return true;
}

/* Encodes text with the model's tokenizer and template; NULL (after printing why, after `what`) on failure. */
static int32_t *encode_prompt(fk_model *m, const char *model_dir, const char *what, const char *text, int *n)
{
    const fk_tokenizer *tok = fk_model_tokenizer(m);
    if (!tok) {
        fprintf(stderr, "error: %s has no tokenizer.json; give --prompt-ids\n", model_dir);
        return NULL;
    }
    int32_t *ids = NULL;
    fk_error err = {0};
    if (fk_tokenizer_encode(tok, text, strlen(text), true, &ids, n, &err)) {
        fprintf(stderr, "error: %s: %s\n", what, err.message);
        return NULL;
    }
    return ids;
}

/* ---- --batch FILE ---- */

typedef struct batch_request {
    int32_t *prompt;
    int n_prompt;
    fk_request_params params;
    char *stops[FK_MAX_STOP];
    output out;
} batch_request;

static bool json_int(const cJSON *v, double lo, double hi, int64_t *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < lo || v->valuedouble > hi)
        return false;
    *out = (int64_t)v->valuedouble;
    return true;
}

static bool parse_prompt_ids(const cJSON *f, batch_request *r)
{
    int n = cJSON_GetArraySize(f), i = 0;
    if (!cJSON_IsArray(f) || r->prompt || !(r->prompt = malloc((size_t)(n ? n : 1) * sizeof(int32_t))))
        return false;
    for (const cJSON *t = f->child; t; t = t->next) {
        int64_t v;
        if (!json_int(t, INT32_MIN, INT32_MAX, &v))
            return false;
        r->prompt[i++] = (int32_t)v;
    }
    r->n_prompt = n;
    return true;
}

static bool parse_stop(const cJSON *f, batch_request *r)
{
    const bool one = cJSON_IsString(f);
    const int n = one ? 1 : cJSON_GetArraySize(f);
    if ((!one && !cJSON_IsArray(f)) || n > FK_MAX_STOP)
        return false;
    const cJSON *s = one ? f : f->child;
    for (int i = 0; i < n; i++, s = s->next)
        if (!cJSON_IsString(s) || !(r->stops[i] = strdup(s->valuestring)))
            return false;
    r->params.stop = (const char *const *)r->stops;
    r->params.n_stop = n;
    return true;
}

/* One field of a request line; false for a wrong type or range. */
static bool parse_field(fk_model *m, const char *model_dir, const char *where, const cJSON *f, batch_request *r)
{
    const char *k = f->string;
    fk_sampling_params *sp = &r->params.sampling;
    int64_t v;
    if (!strcmp(k, "prompt_ids"))
        return parse_prompt_ids(f, r);
    if (!strcmp(k, "prompt"))
        return cJSON_IsString(f) && !r->prompt &&
               (r->prompt = encode_prompt(m, model_dir, where, f->valuestring, &r->n_prompt));
    if (!strcmp(k, "stop"))
        return parse_stop(f, r);
    if (!strcmp(k, "ignore_eos")) {
        r->params.ignore_eos = cJSON_IsTrue(f);
        return cJSON_IsBool(f);
    }
    if (!strcmp(k, "max_tokens") || !strcmp(k, "top_k") || !strcmp(k, "seed")) {
        if (!json_int(f, 0, 9007199254740992.0, &v))
            return false;
        if (!strcmp(k, "seed"))
            sp->seed = (uint64_t)v;
        else if (v > INT32_MAX)
            return false;
        else if (!strcmp(k, "max_tokens"))
            r->params.max_tokens = (int)v; /* range: the engine says why */
        else
            sp->top_k = (int)v;
        return true;
    }
    float *dst = !strcmp(k, "temperature") ? &sp->temperature
                 : !strcmp(k, "top_p")     ? &sp->top_p
                 : !strcmp(k, "min_p")     ? &sp->min_p
                                           : NULL;
    if (!dst || !cJSON_IsNumber(f))
        return false;
    *dst = (float)f->valuedouble; /* range: the engine says why */
    return true;
}

static const char *const known_fields[] = {"prompt_ids", "prompt", "max_tokens", "temperature", "top_k", "top_p",
                                           "min_p",      "seed",   "stop",       "ignore_eos"};

/* Reads one request line (len bytes) into r with the strict parser: trailing bytes and duplicate keys are errors.
 * Messages name the file, line and field. */
static bool parse_request(fk_model *m, const char *model_dir, const char *line, size_t len, const char *where,
                          batch_request *r)
{
    cJSON *root = NULL;
    fk_error err = {0};
    bool ok = false;
    r->params = fk_request_params_default();
    if (json_parse(line, len, where, &root, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        fprintf(stderr, "error: %s: not a JSON object\n", where);
        goto done;
    }
    for (const cJSON *f = root->child; f; f = f->next) {
        bool known = false;
        for (size_t i = 0; i < sizeof known_fields / sizeof known_fields[0]; i++)
            known |= !strcmp(f->string, known_fields[i]);
        if (!known) {
            fprintf(stderr, "error: %s: unknown field \"%s\"\n", where, f->string);
            goto done;
        }
        if (!parse_field(m, model_dir, where, f, r)) {
            fprintf(stderr, "error: %s: bad value for \"%s\"\n", where, f->string);
            goto done;
        }
    }
    if (!r->prompt) {
        fprintf(stderr, "error: %s: \"prompt_ids\" or \"prompt\" is required\n", where);
        goto done;
    }
    ok = true;
done:
    cJSON_Delete(root);
    return ok;
}

static void free_batch(batch_request *reqs, int n)
{
    for (int i = 0; i < n; i++) {
        fk_free(reqs[i].prompt);
        free(reqs[i].out.ids);
        free(reqs[i].out.text);
        for (int s = 0; s < FK_MAX_STOP; s++)
            free(reqs[i].stops[s]);
    }
    free(reqs);
}

static int run_batch(fk_model *m, const char *model_dir, fk_engine *e, const char *path, bool json)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "error: cannot open %s: %s\n", path, strerror(errno));
        return EXIT_RUNTIME;
    }
    batch_request *reqs = NULL;
    int n = 0, cap = 0, rc = EXIT_RUNTIME, line_no = 0;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    while ((len = getline(&line, &line_cap, f)) > 0) {
        line_no++;
        if (strspn(line, " \t\r\n") == (size_t)len)
            continue; /* blank line */
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            batch_request *grown = realloc(reqs, (size_t)cap * sizeof *grown);
            if (!grown)
                goto done;
            reqs = grown;
        }
        memset(&reqs[n], 0, sizeof reqs[n]);
        char where[4096 + 32];
        snprintf(where, sizeof where, "%s:%d", path, line_no);
        bool parsed = parse_request(m, model_dir, line, (size_t)len, where, &reqs[n]);
        n++;
        if (!parsed)
            goto done;
        fk_request_params p = reqs[n - 1].params;
        p.on_token = on_token;
        p.user = &reqs[n - 1].out;
        uint64_t id;
        fk_error err = {0};
        if (fk_engine_submit(e, reqs[n - 1].prompt, reqs[n - 1].n_prompt, &p, &id, &err)) {
            fprintf(stderr, "error: %s: %s\n", where, err.message);
            goto done;
        }
    }
    if (!run_to_completion(e))
        goto done;
    for (int i = 0; i < n; i++) {
        if (json)
            print_json(reqs[i].prompt, reqs[i].n_prompt, &reqs[i].out, true);
        else
            printf("%s\n", reqs[i].out.has_text ? reqs[i].out.text ? reqs[i].out.text : "" : "(no tokenizer)");
    }
    rc = EXIT_OK;
done:
    free(line);
    fclose(f);
    free_batch(reqs, n);
    return rc;
}

/* ---- the command ---- */

enum {
    OPT_MODEL = 1, OPT_PROMPT_IDS, OPT_PROMPT, OPT_BATCH, OPT_MAX_TOKENS, OPT_TEMPERATURE, OPT_TOP_K, OPT_TOP_P,
    OPT_MIN_P, OPT_SEED, OPT_STOP, OPT_IGNORE_EOS, OPT_JSON, OPT_DEVICE, OPT_THREADS, OPT_HELP,
};

int cmd_generate(int argc, char **argv)
{
    static struct option options[16 + CLI_ENGINE_OPTION_COUNT + CLI_MODEL_OPTION_COUNT + 1] = {
        {"model", required_argument, 0, OPT_MODEL},          {"prompt-ids", required_argument, 0, OPT_PROMPT_IDS},
        {"prompt", required_argument, 0, OPT_PROMPT},        {"batch", required_argument, 0, OPT_BATCH},
        {"max-tokens", required_argument, 0, OPT_MAX_TOKENS}, {"temperature", required_argument, 0, OPT_TEMPERATURE},
        {"top-k", required_argument, 0, OPT_TOP_K},          {"top-p", required_argument, 0, OPT_TOP_P},
        {"min-p", required_argument, 0, OPT_MIN_P},          {"seed", required_argument, 0, OPT_SEED},
        {"stop", required_argument, 0, OPT_STOP},            {"ignore-eos", no_argument, 0, OPT_IGNORE_EOS},
        {"json", no_argument, 0, OPT_JSON},                  {"device", required_argument, 0, OPT_DEVICE},
        {"threads", required_argument, 0, OPT_THREADS},      {"help", no_argument, 0, OPT_HELP},
    };
    for (int i = 0; i < CLI_ENGINE_OPTION_COUNT; i++)
        options[16 + i] = cli_engine_options[i];
    for (int i = 0; i < CLI_MODEL_OPTION_COUNT; i++)
        options[16 + CLI_ENGINE_OPTION_COUNT + i] = cli_model_options[i];

    const char *model_dir = cli_default_model(), *text = NULL, *batch_path = NULL;
    const char *stops[FK_MAX_STOP];
    int32_t *ids = NULL;
    int n_ids = 0, opt;
    bool json = false;
    fk_model_params mp = fk_model_params_default();
    fk_engine_params ep = fk_engine_params_default();
    fk_request_params rp = fk_request_params_default();
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        bool ok = true;
        switch (opt) {
        case OPT_MODEL: model_dir = optarg; break;
        case OPT_PROMPT_IDS:
            free(ids);
            ids = NULL;
            ok = cli_parse_ids("--prompt-ids", optarg, &ids, &n_ids);
            break;
        case OPT_PROMPT: text = optarg; break;
        case OPT_BATCH: batch_path = optarg; break;
        case OPT_MAX_TOKENS: ok = cli_parse_int("--max-tokens", optarg, 1, 1 << 24, &rp.max_tokens); break;
        case OPT_TEMPERATURE: ok = cli_parse_float("--temperature", optarg, 0, 2, &rp.sampling.temperature); break;
        case OPT_TOP_K: ok = cli_parse_int("--top-k", optarg, 0, INT32_MAX, &rp.sampling.top_k); break;
        case OPT_TOP_P: ok = cli_parse_float("--top-p", optarg, 1e-6f, 1, &rp.sampling.top_p); break;
        case OPT_MIN_P: ok = cli_parse_float("--min-p", optarg, 0, 1, &rp.sampling.min_p); break;
        case OPT_SEED: ok = cli_parse_u64("--seed", optarg, &rp.sampling.seed); break;
        case OPT_STOP:
            if (rp.n_stop == FK_MAX_STOP) {
                fprintf(stderr, "error: at most %d --stop strings\n", FK_MAX_STOP);
                ok = false;
            } else {
                stops[rp.n_stop++] = optarg;
            }
            break;
        case OPT_IGNORE_EOS: rp.ignore_eos = true; break;
        case OPT_JSON: json = true; break;
        case OPT_DEVICE: ok = cli_parse_device(optarg, &mp.device); break;
        case OPT_THREADS: ok = cli_parse_int("--threads", optarg, 1, 4096, &mp.n_threads); break;
        case OPT_HELP: usage(stdout); free(ids); return EXIT_OK;
        default:
            ok = opt >= CLI_MODEL_OPTION_BASE ? cli_model_option(opt, optarg, &mp)
                                              : opt >= CLI_ENGINE_OPTION_BASE && cli_engine_option(opt, optarg, &ep);
        }
        if (!ok)
            goto usage_error;
    }
    rp.stop = stops;
    if (optind < argc) {
        fprintf(stderr, "error: unexpected argument \"%s\"\n", argv[optind]);
        goto usage_error;
    }
    if ((ids != NULL) + (text != NULL) + (batch_path != NULL) != 1) {
        fprintf(stderr, "error: give exactly one of --prompt-ids, --prompt and --batch\n");
        goto usage_error;
    }

    fk_model *m = cli_load_model(model_dir, &mp);
    fk_engine *e = m ? cli_create_engine(m, &ep) : NULL;
    int rc = EXIT_RUNTIME;
    if (!e)
        goto done;
    double t1 = cli_now();
    if (batch_path) {
        rc = run_batch(m, model_dir, e, batch_path, json);
        goto done;
    }
    if (text && !(ids = encode_prompt(m, model_dir, "--prompt", text, &n_ids)))
        goto done;
    output out = {.stream = !json};
    rp.on_token = on_token;
    rp.user = &out;
    uint64_t id;
    fk_error err = {0};
    if (fk_engine_submit(e, ids, n_ids, &rp, &id, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
    } else if (run_to_completion(e) && !out.out_of_memory) {
        double t2 = cli_now();
        if (json) {
            print_json(ids, n_ids, &out, false);
        } else {
            if (!out.has_text) /* the text was printed as it came */
                for (int i = 0; i < out.n; i++)
                    printf("%s%d", i ? " " : "", out.ids[i]);
            printf("\nfinish_reason: %s\n", fk_finish_reason_name(out.finish));
        }
        char weights[128];
        cli_describe_weights(m, weights, sizeof weights);
        fprintf(stderr, "[%s, %s] %d prompt + %d generated tokens in %.2f s (%.1f tokens/s)\n",
                fk_model_get_info(m).device, weights, n_ids, out.n, t2 - t1, out.n / (t2 - t1));
        rc = EXIT_OK;
    }
    free(out.ids);
    free(out.text);
done:
    fk_engine_free(e);
    fk_model_free(m);
    fk_free(ids); /* from the tokenizer or from cli_parse_ids: both plain malloc */
    return rc;
usage_error:
    usage(stderr);
    free(ids);
    return EXIT_USAGE;
}
