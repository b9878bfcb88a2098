/* cmd_generate.c — `flashkernel generate`: continue a prompt (text or token ids) with the model; the generated
 * ids become text through detok, the incremental detokenizer the engine streams with (the text is its deltas
 * concatenated), so the command shows what a stream would. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "detok.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel generate [--model DIR] (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N]\n"
            "                            [--temperature T] [--seed S] [--ignore-eos] [--device cpu|cuda|auto]\n"
            "                            [--threads N] [--json]\n"
            "\n"
            "Generates up to N tokens after the prompt and prints them: as text when the model has a\n"
            "tokenizer.json (special tokens left out), else as ids.\n"
            "  --model DIR         Hugging Face model directory (default: the bundled demo model,\n"
            "                      or $FLASHKERNEL_MODEL)\n"
            "  --prompt TEXT       prompt as UTF-8 text, tokenized with the model's special tokens (e.g. BOS)\n"
            "  --prompt-ids LIST   prompt as comma-separated token ids\n"
            "  --max-tokens N      tokens to generate (default 16)\n"
            "  --temperature T     0 = greedy (default); up to 2\n"
            "  --seed S            random seed for temperature > 0 (default 0)\n"
            "  --ignore-eos        do not stop at end-of-sequence ids\n"
            "  --device D          cpu, cuda or auto (default auto)\n"
            "  --threads N         CPU threads (default: one per core)\n"
            "  --json              print {\"prompt_ids\":[...],\"ids\":[...],\"finish_reason\":\"length\"|\"eos\",\n"
            "                      \"text\":\"...\"} (text only when the model has a tokenizer)\n"
            "Exit status: 0 ok, 1 model or runtime error, 2 bad usage.\n");
}

static void print_ids(const int32_t *ids, int n, const char *sep)
{
    for (int i = 0; i < n; i++)
        printf("%s%d", i ? sep : "", ids[i]);
}

/* The text of the generated ids after the prompt: detok's deltas concatenated, special tokens left out.
 * Returns a malloc'd string, or NULL after printing why. */
static char *generated_text(const fk_tokenizer *t, const int32_t *prompt, int n_prompt, const int32_t *ids, int n,
                            size_t *len)
{
    detok *d;
    fk_error err = {0};
    if (detok_create(t, prompt, n_prompt, true, NULL, 0, &d, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        return NULL;
    }
    const char *delta;
    size_t delta_len;
    int stop_hit;
    fk_status s = FK_OK;
    for (int i = 0; i < n && !s; i++)
        s = detok_push(d, ids[i], &delta, &delta_len, &stop_hit, &err);
    if (!s)
        s = detok_finish(d, &delta, &delta_len, &err);
    char *text = NULL;
    if (s) {
        fprintf(stderr, "error: %s\n", err.message);
    } else {
        const char *all = detok_text(d, len);
        text = malloc(*len + 1);
        if (text)
            memcpy(text, all, *len + 1);
        else
            fprintf(stderr, "error: out of memory\n");
    }
    detok_free(d);
    return text;
}

int cmd_generate(int argc, char **argv)
{
    static const struct option options[] = {
        {"model", required_argument, 0, 'm'},       {"prompt", required_argument, 0, 'P'},
        {"prompt-ids", required_argument, 0, 'p'},  {"max-tokens", required_argument, 0, 'n'},
        {"temperature", required_argument, 0, 't'}, {"seed", required_argument, 0, 's'},
        {"ignore-eos", no_argument, 0, 'e'},        {"device", required_argument, 0, 'd'},
        {"threads", required_argument, 0, 'j'},     {"json", no_argument, 0, 'J'},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0},
    };
    const char *model_dir = cli_default_model(), *prompt_text = NULL;
    int32_t *prompt = NULL;
    int n_prompt = 0;
    bool json = false;
    fk_model_params mp = fk_model_params_default();
    fk_generate_params gp = fk_generate_params_default();
    int opt, rc = EXIT_USAGE;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        bool ok = true;
        switch (opt) {
        case 'm': model_dir = optarg; break;
        case 'p':
            free(prompt);
            prompt = NULL;
            ok = cli_parse_ids("--prompt-ids", optarg, &prompt, &n_prompt);
            break;
        case 'P': prompt_text = optarg; break;
        case 'n': ok = cli_parse_int("--max-tokens", optarg, 1, 1 << 24, &gp.max_tokens); break;
        case 't': ok = cli_parse_float("--temperature", optarg, 0, 2, &gp.temperature); break;
        case 's': ok = cli_parse_u64("--seed", optarg, &gp.seed); break;
        case 'e': gp.ignore_eos = true; break;
        case 'd': ok = cli_parse_device(optarg, &mp.device); break;
        case 'j': ok = cli_parse_int("--threads", optarg, 1, 4096, &mp.n_threads); break;
        case 'J': json = true; break;
        case 'h': usage(stdout); free(prompt); return EXIT_OK;
        default: ok = false;
        }
        if (!ok)
            goto usage_error;
    }
    if (optind < argc) {
        fprintf(stderr, "error: unexpected argument \"%s\"\n", argv[optind]);
        goto usage_error;
    }
    if (!prompt == !prompt_text) {
        fprintf(stderr, "error: give --prompt or --prompt-ids (one of them)\n");
        goto usage_error;
    }

    double t0 = cli_now();
    fk_model *m = cli_load_model(model_dir, &mp);
    if (!m) {
        free(prompt);
        return EXIT_RUNTIME;
    }
    double t1 = cli_now();
    const fk_tokenizer *tok = fk_model_tokenizer(m);
    int32_t *out = malloc((size_t)gp.max_tokens * sizeof *out);
    int n_out = 0;
    fk_finish_reason reason = FK_FINISH_NONE;
    fk_error err = {0};
    char *text = NULL;
    size_t text_len = 0;
    if (prompt_text && !tok) {
        fprintf(stderr, "error: %s has no tokenizer.json; give --prompt-ids\n", model_dir);
        rc = EXIT_RUNTIME;
    } else if (prompt_text && fk_tokenizer_encode(tok, prompt_text, strlen(prompt_text), true, &prompt, &n_prompt,
                                                  &err)) {
        fprintf(stderr, "error: --prompt: %s\n", err.message);
        rc = EXIT_RUNTIME;
    } else if (!out) {
        fprintf(stderr, "error: out of memory for %d tokens\n", gp.max_tokens);
        rc = EXIT_RUNTIME;
    } else if (fk_model_generate(m, prompt, n_prompt, &gp, out, &n_out, &reason, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        rc = EXIT_RUNTIME;
    } else if (tok && !(text = generated_text(tok, prompt, n_prompt, out, n_out, &text_len))) {
        rc = EXIT_RUNTIME;
    } else {
        double t2 = cli_now();
        if (json) {
            printf("{\"prompt_ids\":[");
            print_ids(prompt, n_prompt, ",");
            printf("],\"ids\":[");
            print_ids(out, n_out, ",");
            printf("],\"finish_reason\":\"%s\"", fk_finish_reason_name(reason));
            if (text) {
                printf(",\"text\":");
                cli_print_json_string(stdout, text, text_len);
            }
            printf("}\n");
        } else {
            if (text)
                fwrite(text, 1, text_len, stdout);
            else
                print_ids(out, n_out, " ");
            printf("\nfinish_reason: %s\n", fk_finish_reason_name(reason));
        }
        fprintf(stderr, "[%s] loaded in %.2f s; %d prompt + %d generated tokens in %.2f s (%.1f tokens/s)\n",
                fk_model_get_info(m).device, t1 - t0, n_prompt, n_out, t2 - t1, n_out / (t2 - t1));
        rc = EXIT_OK;
    }
    free(text);
    free(out);
    fk_model_free(m);
    free(prompt);
    return rc;
usage_error:
    usage(stderr);
    free(prompt);
    return EXIT_USAGE;
}
