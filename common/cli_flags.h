/* cli_flags.h — what the command-line programs (`flashkernel`, tools/, and `flashkernel-server`, server/) share:
 * exit codes, strict flag values, the default model, reading a file, the engine's and the model's flags. Messages go
 * to stderr. */
#ifndef FK_CLI_FLAGS_H
#define FK_CLI_FLAGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flashkernel.h"

/* Exit codes of every program. */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Flag values; false (after printing why) on anything else. cli_parse_ids parses "1,2,3" into a malloc'd array. */
bool cli_parse_ids(const char *flag, const char *s, int32_t **ids, int *n);
bool cli_parse_int(const char *flag, const char *s, int min, int max, int *out);
bool cli_parse_u64(const char *flag, const char *s, uint64_t *out);
bool cli_parse_float(const char *flag, const char *s, float min, float max, float *out);
bool cli_parse_device(const char *s, fk_device *out);

/* The directory used when no --model is given: $FLASHKERNEL_MODEL, else the bundled demo model. */
const char *cli_default_model(void);

/* A whole file, malloc'd and NUL-terminated; prints why and returns NULL on failure. */
char *cli_read_file(const char *path, size_t *len);

/* Engine flags: --block-size --num-blocks --kv-cache-mb --max-num-seqs --max-num-batched-tokens --max-model-len
 * --gpu-memory-utilization --no-overlap --no-mixed-graphs --decode-graphs. Option values start at
 * CLI_ENGINE_OPTION_BASE. */
enum { CLI_ENGINE_OPTION_BASE = 1000, CLI_ENGINE_OPTION_COUNT = 10 };
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

#endif
