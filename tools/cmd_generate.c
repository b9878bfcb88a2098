/* cmd_generate.c — `flashkernel generate`: continue a prompt of token ids with the model. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel generate [--model DIR] --prompt-ids 1,2,3 [--max-tokens N] [--temperature T]\n"
            "                            [--seed S] [--ignore-eos] [--device cpu|cuda|auto] [--threads N] [--json]\n"
            "\n"
            "Generates up to N tokens after the prompt and prints their ids.\n"
            "  --model DIR         Hugging Face model directory (default: the bundled demo model,\n"
            "                      or $FLASHKERNEL_MODEL)\n"
            "  --prompt-ids LIST   prompt as comma-separated token ids\n"
            "  --max-tokens N      tokens to generate (default 16)\n"
            "  --temperature T     0 = greedy (default); up to 2\n"
            "  --seed S            random seed for temperature > 0 (default 0)\n"
            "  --ignore-eos        do not stop at end-of-sequence ids\n"
            "  --device D          cpu, cuda or auto (default auto)\n"
            "  --threads N         CPU threads (default: one per core)\n"
            "  --json              print {\"prompt_ids\":[...],\"ids\":[...],\"finish_reason\":\"length\"|\"eos\"}\n"
            "Exit status: 0 ok, 1 model or runtime error, 2 bad usage.\n");
}

static void print_ids(const int32_t *ids, int n, const char *sep)
{
    for (int i = 0; i < n; i++)
        printf("%s%d", i ? sep : "", ids[i]);
}

int cmd_generate(int argc, char **argv)
{
    static const struct option options[] = {
        {"model", required_argument, 0, 'm'},       {"prompt-ids", required_argument, 0, 'p'},
        {"max-tokens", required_argument, 0, 'n'},  {"temperature", required_argument, 0, 't'},
        {"seed", required_argument, 0, 's'},        {"ignore-eos", no_argument, 0, 'e'},
        {"device", required_argument, 0, 'd'},      {"threads", required_argument, 0, 'j'},
        {"json", no_argument, 0, 'J'},              {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *model_dir = cli_default_model();
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
    if (!prompt) {
        fprintf(stderr, "error: --prompt-ids is required\n");
        goto usage_error;
    }

    double t0 = cli_now();
    fk_model *m = cli_load_model(model_dir, &mp);
    if (!m) {
        free(prompt);
        return EXIT_RUNTIME;
    }
    double t1 = cli_now();
    int32_t *out = malloc((size_t)gp.max_tokens * sizeof *out);
    int n_out = 0;
    fk_finish_reason reason = FK_FINISH_NONE;
    fk_error err = {0};
    if (!out) {
        fprintf(stderr, "error: out of memory for %d tokens\n", gp.max_tokens);
        rc = EXIT_RUNTIME;
    } else if (fk_model_generate(m, prompt, n_prompt, &gp, out, &n_out, &reason, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        rc = EXIT_RUNTIME;
    } else {
        double t2 = cli_now();
        if (json) {
            printf("{\"prompt_ids\":[");
            print_ids(prompt, n_prompt, ",");
            printf("],\"ids\":[");
            print_ids(out, n_out, ",");
            printf("],\"finish_reason\":\"%s\"}\n", fk_finish_reason_name(reason));
        } else {
            print_ids(out, n_out, " ");
            printf("\nfinish_reason: %s\n", fk_finish_reason_name(reason));
        }
        fprintf(stderr, "[%s] loaded in %.2f s; %d prompt + %d generated tokens in %.2f s (%.1f tokens/s)\n",
                fk_model_get_info(m).device, t1 - t0, n_prompt, n_out, t2 - t1, n_out / (t2 - t1));
        rc = EXIT_OK;
    }
    free(out);
    fk_model_free(m);
    free(prompt);
    return rc;
usage_error:
    usage(stderr);
    free(prompt);
    return EXIT_USAGE;
}
