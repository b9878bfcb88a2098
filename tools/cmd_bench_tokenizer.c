/* cmd_bench_tokenizer.c — `flashkernel bench-tokenizer`: encoding speed of one thread on a text file, in MB/s. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel bench-tokenizer [--model DIR | --tokenizer FILE] --file F [--seconds S]\n"
            "\n"
            "Encodes the whole file (UTF-8, no special tokens) again and again on one thread for S seconds and\n"
            "prints the speed: MB/s (10^6 bytes of text per second) and tokens/s.\n"
            "  --model DIR         use DIR/tokenizer.json (default: the bundled demo model, or $FLASHKERNEL_MODEL)\n"
            "  --tokenizer FILE    use this tokenizer.json\n"
            "  --file F            the text\n"
            "  --seconds S         how long to measure (default 3; at least one pass runs)\n"
            "Exit status: 0 ok, 1 tokenizer or runtime error, 2 bad usage.\n");
}

int cmd_bench_tokenizer(int argc, char **argv)
{
    static const struct option options[] = {
        {"model", required_argument, 0, 'm'}, {"tokenizer", required_argument, 0, 't'},
        {"file", required_argument, 0, 'f'},  {"seconds", required_argument, 0, 's'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0},
    };
    const char *model = cli_default_model(), *tokenizer = NULL, *file = NULL;
    bool model_given = false;
    float seconds = 3;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        bool ok = true;
        switch (opt) {
        case 'm':
            model = optarg;
            model_given = true;
            break;
        case 't': tokenizer = optarg; break;
        case 'f': file = optarg; break;
        case 's': ok = cli_parse_float("--seconds", optarg, 0, 3600, &seconds); break;
        case 'h': usage(stdout); return EXIT_OK;
        default: ok = false;
        }
        if (!ok) {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc || !file || (model_given && tokenizer)) {
        fprintf(stderr, "error: %s\n", optind < argc ? "unexpected argument"
                                       : !file       ? "--file is required"
                                                     : "give --model or --tokenizer, not both");
        usage(stderr);
        return EXIT_USAGE;
    }
    size_t len;
    char *text = cli_read_file(file, &len);
    fk_tokenizer *t = text ? cli_load_tokenizer(model, tokenizer) : NULL;
    if (!t) {
        free(text);
        return EXIT_RUNTIME;
    }
    int rc = EXIT_OK, passes = 0, n = 0;
    double start = cli_now(), elapsed = 0;
    do { /* the first pass warms up and is not counted */
        int32_t *ids;
        fk_error err = {0};
        if (fk_tokenizer_encode(t, text, len, false, &ids, &n, &err)) {
            fprintf(stderr, "error: %s: %s\n", file, err.message);
            rc = EXIT_RUNTIME;
            break;
        }
        fk_free(ids);
        if (passes++ == 0)
            start = cli_now();
        elapsed = cli_now() - start;
    } while (passes < 2 || elapsed < seconds);
    if (rc == EXIT_OK) {
        int counted = passes - 1;
        printf("file: %s (%zu bytes, %d tokens)\n", file, len, n);
        printf("passes: %d in %.3f s, 1 thread\n", counted, elapsed);
        printf("MB/s: %.2f\n", (double)len * counted / elapsed / 1e6);
        printf("tokens/s: %.0f\n", (double)n * counted / elapsed);
    }
    fk_tokenizer_free(t);
    free(text);
    return rc;
}
