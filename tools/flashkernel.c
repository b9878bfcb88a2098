/* flashkernel.c — the `flashkernel` command: dispatches to its subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"generate", cmd_generate, "continue a prompt (text or token ids)"},
    {"logits", cmd_logits, "write the last position's logits of a prompt as float32"},
    {"tokenize", cmd_tokenize, "text to token ids"},
    {"detokenize", cmd_detokenize, "token ids to text"},
    {"perplexity", cmd_perplexity, "perplexity of the model on a text file"},
    {"bench-tokenizer", cmd_bench_tokenizer, "encoding speed of the tokenizer (MB/s, one thread)"},
    {"bench-engine", cmd_bench_engine, "throughput of N requests run together through the engine"},
    {"make-model", cmd_make_model, "write a model directory of real shapes with random weights"},
    {"chat-template", cmd_chat_template, "render a conversation with a model's chat template"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: flashkernel COMMAND [options]   (flashkernel COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "error: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
