/* cmd_logits.c — `flashkernel logits`: the last position's logits of a prompt, as raw float32. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel logits [--model DIR] --prompt-ids 1,2,3 --out FILE [--device cpu|cuda|auto]\n"
            "                          [--threads N] [--quantization none|int8|int4] [--quantize-lm-head]\n"
            "\n"
            "Writes the logits of the last prompt position to FILE: vocab_size float32 values, little-endian.\n"
            "  --model DIR         Hugging Face model directory (default: the bundled demo model)\n"
            "  --prompt-ids LIST   prompt as comma-separated token ids\n"
            "  --out FILE          output file\n"
            "  --device D          cpu, cuda or auto (default auto)\n"
            "  --threads N         CPU threads (default: one per core)\n"
            "%s"
            "Exit status: 0 ok, 1 model or runtime error, 2 bad usage.\n",
            cli_model_usage);
}

/* Writes n floats as little-endian float32. */
static bool write_f32_le(FILE *f, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                              (unsigned char)(u >> 24)};
        if (fwrite(b, 1, 4, f) != 4)
            return false;
    }
    return true;
}

int cmd_logits(int argc, char **argv)
{
    static struct option options[6 + CLI_MODEL_OPTION_COUNT + 1] = {
        {"model", required_argument, 0, 'm'},  {"prompt-ids", required_argument, 0, 'p'},
        {"out", required_argument, 0, 'o'},    {"device", required_argument, 0, 'd'},
        {"threads", required_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
    };
    for (int i = 0; i < CLI_MODEL_OPTION_COUNT; i++)
        options[6 + i] = cli_model_options[i];
    const char *model_dir = cli_default_model(), *out_path = NULL;
    int32_t *prompt = NULL;
    int n_prompt = 0, opt;
    fk_model_params mp = fk_model_params_default();
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
        case 'o': out_path = optarg; break;
        case 'd': ok = cli_parse_device(optarg, &mp.device); break;
        case 'j': ok = cli_parse_int("--threads", optarg, 1, 4096, &mp.n_threads); break;
        case 'h': usage(stdout); free(prompt); return EXIT_OK;
        default: ok = opt >= CLI_MODEL_OPTION_BASE && cli_model_option(opt, optarg, &mp);
        }
        if (!ok)
            goto usage_error;
    }
    if (optind < argc) {
        fprintf(stderr, "error: unexpected argument \"%s\"\n", argv[optind]);
        goto usage_error;
    }
    if (!prompt || !out_path) {
        fprintf(stderr, "error: --prompt-ids and --out are required\n");
        goto usage_error;
    }

    fk_model *m = cli_load_model(model_dir, &mp);
    if (!m) {
        free(prompt);
        return EXIT_RUNTIME;
    }
    int rc = EXIT_RUNTIME;
    const int vocab = fk_model_get_info(m).vocab_size;
    float *logits = malloc((size_t)vocab * sizeof *logits);
    fk_error err = {0};
    if (!logits) {
        fprintf(stderr, "error: out of memory\n");
    } else if (fk_model_logits(m, prompt, n_prompt, false, logits, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
    } else {
        FILE *f = fopen(out_path, "wb");
        if (!f) {
            fprintf(stderr, "error: cannot open %s: %s\n", out_path, strerror(errno));
        } else {
            bool ok = write_f32_le(f, logits, (size_t)vocab);
            if (fclose(f) != 0 || !ok)
                fprintf(stderr, "error: cannot write %s: %s\n", out_path, strerror(errno));
            else {
                fprintf(stderr, "wrote %d float32 logits to %s\n", vocab, out_path);
                rc = EXIT_OK;
            }
        }
    }
    free(logits);
    fk_model_free(m);
    free(prompt);
    return rc;
usage_error:
    usage(stderr);
    free(prompt);
    return EXIT_USAGE;
}
