/* cli.h — what the flashkernel subcommands share: the flag helpers (common/cli_flags.h), model loading. */
#ifndef FK_CLI_H
#define FK_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli_flags.h"
#include "flashkernel.h"

/* Loads a model, printing the loader's message on failure. */
fk_model *cli_load_model(const char *dir, const fk_model_params *params);

/* A tokenizer from a tokenizer.json file, or from DIR/tokenizer.json when file is NULL; prints why on failure. */
fk_tokenizer *cli_load_tokenizer(const char *dir, const char *file);

/* Writes s[len] as a JSON string (quoted, escaped). */
void cli_print_json_string(FILE *f, const char *s, size_t len);

/* Creates the engine, printing the message on failure. */
fk_engine *cli_create_engine(fk_model *m, const fk_engine_params *ep);

/* Seconds on a monotonic clock. */
double cli_now(void);

int cmd_generate(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_bench_tokenizer(int argc, char **argv);
int cmd_bench_engine(int argc, char **argv);
int cmd_make_model(int argc, char **argv);
int cmd_chat_template(int argc, char **argv);

#endif
