/* cmd_perplexity.c — `flashkernel perplexity`: the model's perplexity on a text file. The text is tokenized
 * without special tokens and cut into consecutive chunks of ctx - 1 tokens; each chunk, prefixed with BOS, is
 * one forward pass, and every chunk token is scored by the logits of the position before it.
 * ppl = exp(total NLL / tokens), log-softmax in double. This is the definition of the shakespeare-llama reference
 * (tests/fixtures/models/shakespeare-llama/reference.json). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel perplexity [--model DIR] --file F [--ctx 512] [--device cpu|cuda|auto] [--threads N]\n"
            "                              [--quantization none|int8|int4] [--quantize-lm-head]\n"
            "\n"
            "Prints the perplexity of the model on the text of F, the tokens scored, and tokens/s.\n"
            "The text is tokenized without special tokens and scored in chunks of ctx - 1 tokens, each after BOS.\n"
            "  --model DIR     Hugging Face model directory with a tokenizer.json (default: the bundled demo model,\n"
            "                  or $FLASHKERNEL_MODEL)\n"
            "  --file F        UTF-8 text\n"
            "  --ctx N         tokens per forward pass, BOS included (default 512; at most the model's context)\n"
            "  --device D      cpu, cuda or auto (default auto)\n"
            "  --threads N     CPU threads (default: one per core)\n"
            "%s"
            "Exit status: 0 ok, 1 model or runtime error, 2 bad usage.\n",
            cli_model_usage);
}

/* -log softmax(row)[target], in double. */
static double nll(const float *row, int vocab, int target)
{
    double max = row[0];
    for (int v = 1; v < vocab; v++)
        max = row[v] > max ? row[v] : max;
    double sum = 0;
    for (int v = 0; v < vocab; v++)
        sum += exp((double)row[v] - max);
    return max + log(sum) - (double)row[target];
}

/* Scores ids[n] in chunks; *total_nll is the sum over all n tokens. */
static int score(fk_model *m, const int32_t *ids, int n, int ctx, double *total_nll)
{
    const fk_model_info info = fk_model_get_info(m);
    const int vocab = info.vocab_size;
    float *logits = malloc((size_t)ctx * (size_t)vocab * sizeof *logits);
    int32_t *chunk = malloc((size_t)ctx * sizeof *chunk);
    if (!logits || !chunk) {
        fprintf(stderr, "error: out of memory for %d x %d logits\n", ctx, vocab);
        free(logits);
        free(chunk);
        return EXIT_RUNTIME;
    }
    *total_nll = 0;
    int rc = EXIT_OK;
    chunk[0] = info.bos_id;
    for (int start = 0; start < n && rc == EXIT_OK; start += ctx - 1) {
        int len = n - start < ctx - 1 ? n - start : ctx - 1;
        memcpy(chunk + 1, ids + start, (size_t)len * sizeof *chunk);
        fk_error err = {0};
        if (fk_model_logits(m, chunk, len + 1, true, logits, &err)) {
            fprintf(stderr, "error: %s\n", err.message);
            rc = EXIT_RUNTIME;
            break;
        }
        for (int i = 0; i < len; i++)
            *total_nll += nll(logits + (size_t)i * vocab, vocab, chunk[i + 1]);
    }
    free(logits);
    free(chunk);
    return rc;
}

int cmd_perplexity(int argc, char **argv)
{
    static struct option options[6 + CLI_MODEL_OPTION_COUNT + 1] = {
        {"model", required_argument, 0, 'm'},  {"file", required_argument, 0, 'f'},
        {"ctx", required_argument, 0, 'c'},    {"device", required_argument, 0, 'd'},
        {"threads", required_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
    };
    for (int i = 0; i < CLI_MODEL_OPTION_COUNT; i++)
        options[6 + i] = cli_model_options[i];
    const char *model_dir = cli_default_model(), *file = NULL;
    int ctx = 512, opt;
    fk_model_params mp = fk_model_params_default();
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        bool ok = true;
        switch (opt) {
        case 'm': model_dir = optarg; break;
        case 'f': file = optarg; break;
        case 'c': ok = cli_parse_int("--ctx", optarg, 2, 1 << 20, &ctx); break;
        case 'd': ok = cli_parse_device(optarg, &mp.device); break;
        case 'j': ok = cli_parse_int("--threads", optarg, 1, 4096, &mp.n_threads); break;
        case 'h': usage(stdout); return EXIT_OK;
        default: ok = opt >= CLI_MODEL_OPTION_BASE && cli_model_option(opt, optarg, &mp);
        }
        if (!ok) {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc || !file) {
        if (optind < argc)
            fprintf(stderr, "error: unexpected argument \"%s\"\n", argv[optind]);
        else
            fprintf(stderr, "error: --file is required\n");
        usage(stderr);
        return EXIT_USAGE;
    }
    size_t len;
    char *text = cli_read_file(file, &len);
    fk_model *m = text ? cli_load_model(model_dir, &mp) : NULL;
    if (!m) {
        free(text);
        return EXIT_RUNTIME;
    }
    const fk_tokenizer *t = fk_model_tokenizer(m);
    const fk_model_info info = fk_model_get_info(m);
    int32_t *ids = NULL;
    int n = 0, rc = EXIT_RUNTIME;
    fk_error err = {0};
    if (!t)
        fprintf(stderr, "error: %s has no tokenizer.json\n", model_dir);
    else if (info.bos_id < 0)
        fprintf(stderr, "error: %s has no BOS token id (bos_token_id in config.json)\n", model_dir);
    else if (ctx > info.max_context)
        fprintf(stderr, "error: --ctx %d exceeds the model's context length %d\n", ctx, info.max_context);
    else if (fk_tokenizer_encode(t, text, len, false, &ids, &n, &err))
        fprintf(stderr, "error: %s: %s\n", file, err.message);
    else if (n == 0)
        fprintf(stderr, "error: %s has no tokens\n", file);
    else {
        double total, t0 = cli_now();
        rc = score(m, ids, n, ctx, &total);
        double seconds = cli_now() - t0;
        if (rc == EXIT_OK) {
            printf("ppl: %.6f\n", exp(total / n));
            printf("tokens: %d\n", n);
            printf("tokens/s: %.1f\n", n / seconds);
            char weights[128];
            cli_describe_weights(m, weights, sizeof weights);
            fprintf(stderr, "[%s, %s] nll/token %.9f, %d chunks of up to %d tokens, %.2f s\n", info.device, weights,
                    total / n, (n + ctx - 2) / (ctx - 1), ctx, seconds);
        }
    }
    fk_free(ids);
    fk_model_free(m);
    free(text);
    return rc;
}
