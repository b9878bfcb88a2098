/* cli.h — what the flashkernel subcommands share: option parsing helpers and model loading. */
#ifndef FK_CLI_H
#define FK_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "flashkernel.h"

/* Exit codes of every subcommand. */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Parses "1,2,3" into a malloc'd array; false (after printing why) on anything else. */
bool cli_parse_ids(const char *flag, const char *s, int32_t **ids, int *n);
bool cli_parse_int(const char *flag, const char *s, int min, int max, int *out);
bool cli_parse_u64(const char *flag, const char *s, uint64_t *out);
bool cli_parse_float(const char *flag, const char *s, float min, float max, float *out);
bool cli_parse_device(const char *s, fk_device *out);

/* The directory used when no --model is given: the bundled demo model. */
const char *cli_default_model(void);

/* Loads a model, printing the loader's message on failure. */
fk_model *cli_load_model(const char *dir, const fk_model_params *params);

/* A tokenizer from a tokenizer.json file, or from DIR/tokenizer.json when file is NULL; prints why on failure. */
fk_tokenizer *cli_load_tokenizer(const char *dir, const char *file);

/* A whole file, malloc'd and NUL-terminated; prints why and returns NULL on failure. */
char *cli_read_file(const char *path, size_t *len);

/* Writes s[len] as a JSON string (quoted, escaped). */
void cli_print_json_string(FILE *f, const char *s, size_t len);
/* Engine flags shared by generate and bench-engine: --block-size --num-blocks --kv-cache-mb --max-num-seqs
 * --max-num-batched-tokens --max-model-len --gpu-memory-utilization. Option values start at
 * CLI_ENGINE_OPTION_BASE. */
enum { CLI_ENGINE_OPTION_BASE = 1000, CLI_ENGINE_OPTION_COUNT = 7 };
extern const struct option cli_engine_options[CLI_ENGINE_OPTION_COUNT];
extern const char cli_engine_usage[];
/* Applies one of those options; false (after printing why) for a bad value. */
bool cli_engine_option(int opt, const char *arg, fk_engine_params *ep);

/* Model flags shared by generate, logits, perplexity, bench-engine and flashkernel-server: --quantization
 * --quantize-lm-head. Option values start at CLI_MODEL_OPTION_BASE. */
enum { CLI_MODEL_OPTION_BASE = 1100, CLI_MODEL_OPTION_COUNT = 2 };
extern const struct option cli_model_options[CLI_MODEL_OPTION_COUNT];
extern const char cli_model_usage[];
/* Applies one of those options; false (after printing why) for a bad value. */
bool cli_model_option(int opt, const char *arg, fk_model_params *mp);

/* "int4 weights 712.3 MiB, loaded in 1.52 s": how a loaded model holds its weights, for the commands' reports. */
void cli_describe_weights(const fk_model *m, char *buf, size_t size);

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

#endif
