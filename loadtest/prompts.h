/* prompts.h — the prompts of a run: random token ids (--prompt-len, from --seed), or the lines of a file
 * (--prompts). Each prompt is rendered as the JSON value of the request's "prompt" field. */
#ifndef FK_LOADTEST_PROMPTS_H
#define FK_LOADTEST_PROMPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct prompts {
    int len;      /* random: token ids per prompt (0: prompts come from a file) */
    int vocab;    /* random: ids are drawn uniformly from [0, vocab) */
    uint64_t seed;
    char **json;  /* from a file: each prompt as JSON, a string or an array of token ids */
    size_t n;
} prompts;

void prompts_random(prompts *p, int len, int vocab, uint64_t seed);
/* One prompt per line (see the help text for the format). 0, or -1 with the reason in err. */
int prompts_load(prompts *p, const char *path, char *err, size_t err_len);
/* Appends request i of level `level`'s prompt to out: random ids drawn from (seed, level, i), so that no two
 * requests of a run share a prefix (and so a prefix cache cannot flatter the numbers), or line i mod n of the
 * file. False when memory runs out. */
bool prompts_render(const prompts *p, uint64_t level, uint64_t i, buf *out);
void prompts_free(prompts *p);

#endif
