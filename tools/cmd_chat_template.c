/* cmd_chat_template.c — `flashkernel chat-template`: renders a model's chat template (or a template file) for a
 * conversation, exactly as the chat route will prompt the model. */
#define _XOPEN_SOURCE 700 /* strptime */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel chat-template [--model DIR | --template FILE] --messages JSON\n"
            "                                 [--add-generation-prompt] [--bos-token S] [--eos-token S]\n"
            "                                 [--now 2024-07-26T12:00:00]\n"
            "\n"
            "Prints the text the chat template makes of the messages, exactly (no newline added), as Hugging Face\n"
            "transformers' apply_chat_template(..., tokenize=False) would.\n"
            "  --model DIR         the template of DIR (chat_template.jinja, or tokenizer_config.json's chat_template)\n"
            "                      and its bos_token/eos_token (default: the bundled demo model, or $FLASHKERNEL_MODEL)\n"
            "  --template FILE     a Jinja template file instead\n"
            "  --messages JSON     a JSON array of messages, e.g. '[{\"role\": \"user\", \"content\": \"Hi\"}]';\n"
            "                      @FILE reads it from FILE\n"
            "  --add-generation-prompt\n"
            "                      end with the start of an assistant turn\n"
            "  --bos-token S, --eos-token S\n"
            "                      the template's bos_token and eos_token (default: the model's; none with --template)\n"
            "  --now TIME          the time strftime_now() sees, YYYY-MM-DDTHH:MM:SS local time (default: now)\n"
            "Exit status: 0 ok, 1 template error (\"error: <message>\"; raise_exception's is \"TemplateError: ...\"),\n"
            "2 bad usage.\n");
}

typedef struct options {
    const char *model, *template_file, *messages, *bos, *eos, *now;
    bool model_given, add_generation_prompt;
} options;

/* Parses argv; returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, options *o)
{
    static const struct option long_options[] = {
        {"model", required_argument, 0, 'm'},     {"template", required_argument, 0, 't'},
        {"messages", required_argument, 0, 'j'},  {"add-generation-prompt", no_argument, 0, 'g'},
        {"bos-token", required_argument, 0, 'b'}, {"eos-token", required_argument, 0, 'e'},
        {"now", required_argument, 0, 'n'},       {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
        switch (opt) {
        case 'm':
            o->model = optarg;
            o->model_given = true;
            break;
        case 't': o->template_file = optarg; break;
        case 'j': o->messages = optarg; break;
        case 'g': o->add_generation_prompt = true; break;
        case 'b': o->bos = optarg; break;
        case 'e': o->eos = optarg; break;
        case 'n': o->now = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    const char *problem = optind < argc                         ? "unexpected argument"
                          : o->model_given && o->template_file ? "give --model or --template, not both"
                          : !o->messages                       ? "--messages is required"
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

/* --now: a local time YYYY-MM-DDTHH:MM:SS as seconds since the epoch. */
static bool parse_now(const char *s, int64_t *out)
{
    struct tm tm = {0};
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end || *end) {
        fprintf(stderr, "error: --now must be a time like 2024-07-26T12:00:00, got \"%s\"\n", s);
        return false;
    }
    tm.tm_isdst = -1;
    *out = (int64_t)mktime(&tm);
    return true;
}

int cmd_chat_template(int argc, char **argv)
{
    options o = {.model = cli_default_model()};
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    fk_chat_render_params p = {.add_generation_prompt = o.add_generation_prompt};
    if (o.now && !parse_now(o.now, &p.now)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    p.fixed_now = o.now != NULL;
    char *source = NULL, *bos = NULL, *eos = NULL, *messages = NULL, *text = NULL;
    size_t source_len = 0, messages_len = 0, len;
    fk_chat_template *t = NULL;
    fk_error err = {0};
    rc = EXIT_RUNTIME;
    if (o.template_file) {
        if (!(source = cli_read_file(o.template_file, &source_len)))
            goto done;
    } else if (fk_chat_template_find(o.model, &source, &bos, &eos, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        goto done;
    } else {
        source_len = strlen(source);
    }
    if (o.messages[0] == '@') {
        if (!(messages = cli_read_file(o.messages + 1, &messages_len)))
            goto done;
    } else {
        messages_len = strlen(o.messages);
    }
    p.messages_json = messages ? messages : o.messages;
    p.messages_len = messages_len;
    p.bos_token = o.bos ? o.bos : bos;
    p.eos_token = o.eos ? o.eos : eos;
    if (fk_chat_template_parse(source, source_len, &t, &err) ||
        fk_chat_template_render(t, &p, &text, &len, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        goto done;
    }
    rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
done:
    fk_chat_template_free(t);
    fk_free(text);
    fk_free(source);
    fk_free(bos);
    fk_free(eos);
    free(messages);
    return rc;
}
