/* report.h — what a run prints (a header, one table row per level) and writes (--json OUT). */
#ifndef FK_LOADTEST_REPORT_H
#define FK_LOADTEST_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "options.h"
#include "runner.h"
#include "stats.h"

/* What the run found out besides its options. */
typedef struct run_info {
    const char *command;  /* the command line, as one string */
    const char *started;  /* wall-clock start, ISO 8601 UTC */
    const char *model;    /* NULL when the server did not say */
    int max_model_len;    /* -1 when unknown */
    int vocab;            /* random prompts: the vocabulary size used; 0 with --prompts */
    const char *vocab_source; /* "--vocab", "found through /detokenize", ... */
    uint64_t seed;
    bool interrupted;
} run_info;

void report_header(FILE *f, const options *o, const run_info *ri);
/* open_loop (--rate): a column with each level's arrival rate after `conc`. */
void report_table_header(FILE *f, bool open_loop);
void report_row(FILE *f, const level_summary *s, bool partial, bool open_loop);

/* Writes the whole run as JSON. 0, or -1 when memory runs out or the write fails (errno set by stdio). */
int report_json(FILE *f, const options *o, const run_info *ri, const level_summary *s, const level_results *r,
                int n_levels);

#endif
