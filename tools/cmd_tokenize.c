/* cmd_tokenize.c — `flashkernel tokenize` (text → ids) and `flashkernel detokenize` (ids → text) with a model's
 * tokenizer.json or a given one. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void tokenize_usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel tokenize [--model DIR | --tokenizer FILE] --text STR [--special] [--json]\n"
            "\n"
            "Prints the token ids of STR (UTF-8), comma-separated (the form --ids and --prompt-ids take).\n"
            "  --model DIR         use DIR/tokenizer.json (default: the bundled demo model, or $FLASHKERNEL_MODEL)\n"
            "  --tokenizer FILE    use this tokenizer.json\n"
            "  --text STR          the text to encode\n"
            "  --special           add the special tokens of the tokenizer's template (e.g. BOS); default: none\n"
            "  --json              print {\"ids\":[...]}\n"
            "Exit status: 0 ok, 1 tokenizer or runtime error (e.g. text that is not UTF-8), 2 bad usage.\n");
}

static void detokenize_usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel detokenize [--model DIR | --tokenizer FILE] --ids 1,2,3 [--skip-special]\n"
            "\n"
            "Prints the text of the ids, followed by a newline.\n"
            "  --model DIR         use DIR/tokenizer.json (default: the bundled demo model, or $FLASHKERNEL_MODEL)\n"
            "  --tokenizer FILE    use this tokenizer.json\n"
            "  --ids LIST          comma-separated token ids\n"
            "  --skip-special      leave out special tokens (BOS, EOS, ...)\n"
            "Exit status: 0 ok, 1 tokenizer or runtime error (e.g. an id out of range), 2 bad usage.\n");
}

/* Options both commands take. */
typedef struct options {
    const char *model, *tokenizer, *text;
    int32_t *ids;
    int n_ids;
    bool special, json, skip_special;
} options;

/* Parses argv; returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, bool detok, options *o)
{
    static const struct option long_options[] = {
        {"model", required_argument, 0, 'm'}, {"tokenizer", required_argument, 0, 't'},
        {"text", required_argument, 0, 'x'},  {"ids", required_argument, 0, 'i'},
        {"special", no_argument, 0, 's'},     {"skip-special", no_argument, 0, 'k'},
        {"json", no_argument, 0, 'J'},        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    void (*usage)(FILE *) = detok ? detokenize_usage : tokenize_usage;
    bool model_given = false;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
        bool ok = true;
        switch (opt) {
        case 'm':
            o->model = optarg;
            model_given = true;
            break;
        case 't': o->tokenizer = optarg; break;
        case 'x':
            o->text = optarg;
            ok = !detok;
            break;
        case 'i':
            free(o->ids);
            o->ids = NULL;
            ok = detok && cli_parse_ids("--ids", optarg, &o->ids, &o->n_ids);
            break;
        case 's':
            o->special = true;
            ok = !detok;
            break;
        case 'J':
            o->json = true;
            ok = !detok;
            break;
        case 'k':
            o->skip_special = true;
            ok = detok;
            break;
        case 'h': usage(stdout); return EXIT_OK;
        default: ok = false;
        }
        if (!ok) {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    const char *problem = optind < argc                  ? "unexpected argument"
                          : model_given && o->tokenizer ? "give --model or --tokenizer, not both"
                          : detok && !o->ids            ? "--ids is required"
                          : !detok && !o->text          ? "--text is required"
                                                        : NULL;
    if (problem) {
        if (optind < argc)
            fprintf(stderr, "error: unexpected argument \"%s\"\n", argv[optind]);
        else
            fprintf(stderr, "error: %s\n", problem);
        usage(stderr);
        return EXIT_USAGE;
    }
    return -1;
}

int cmd_tokenize(int argc, char **argv)
{
    options o = {.model = cli_default_model()};
    int rc = parse(argc, argv, false, &o);
    if (rc >= 0)
        return rc;
    fk_tokenizer *t = cli_load_tokenizer(o.model, o.tokenizer);
    if (!t)
        return EXIT_RUNTIME;
    int32_t *ids;
    int n;
    fk_error err = {0};
    if (fk_tokenizer_encode(t, o.text, strlen(o.text), o.special, &ids, &n, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        fk_tokenizer_free(t);
        return EXIT_RUNTIME;
    }
    printf("%s", o.json ? "{\"ids\":[" : "");
    for (int i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", ids[i]);
    printf("%s\n", o.json ? "]}" : "");
    fk_free(ids);
    fk_tokenizer_free(t);
    return EXIT_OK;
}

int cmd_detokenize(int argc, char **argv)
{
    options o = {.model = cli_default_model()};
    int rc = parse(argc, argv, true, &o);
    if (rc >= 0) {
        free(o.ids);
        return rc;
    }
    fk_tokenizer *t = cli_load_tokenizer(o.model, o.tokenizer);
    char *text = NULL;
    size_t len;
    fk_error err = {0};
    rc = EXIT_RUNTIME;
    if (t && fk_tokenizer_decode(t, o.ids, o.n_ids, o.skip_special, &text, &len, &err) == FK_OK) {
        fwrite(text, 1, len, stdout);
        putchar('\n');
        rc = EXIT_OK;
    } else if (t) {
        fprintf(stderr, "error: %s\n", err.message);
    }
    fk_free(text);
    fk_tokenizer_free(t);
    free(o.ids);
    return rc;
}
