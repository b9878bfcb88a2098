/* cli.c — helpers of the flashkernel subcommands: loading models, tokenizers and engines (printing why they failed),
 * JSON strings, the clock. The flag helpers it shares with flashkernel-server are in common/cli_flags.c. */
#include "cli.h"

#include <stdio.h>
#include <time.h>

fk_model *cli_load_model(const char *dir, const fk_model_params *params)
{
    fk_model *m = NULL;
    fk_error err = {0};
    if (fk_model_load(dir, params, &m, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        return NULL;
    }
    return m;
}

fk_tokenizer *cli_load_tokenizer(const char *dir, const char *file)
{
    char path[4096];
    if (!file) {
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        file = path;
    }
    fk_tokenizer *t = NULL;
    fk_error err = {0};
    if (fk_tokenizer_load(file, &t, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        return NULL;
    }
    return t;
}

void cli_print_json_string(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c == '\r')
            fputs("\\r", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

fk_engine *cli_create_engine(fk_model *m, const fk_engine_params *ep)
{
    fk_engine *e = NULL;
    fk_error err = {0};
    if (fk_engine_create(m, ep, &e, &err)) {
        fprintf(stderr, "error: %s\n", err.message);
        return NULL;
    }
    return e;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
