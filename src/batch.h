/* batch.h — one forward pass's tokens, flattened across sequences (host arrays; the model uploads them), and
 * the builder that makes one from the scheduler's output. */
#ifndef FK_BATCH_H
#define FK_BATCH_H

#include <stdint.h>

#include "flashkernel.h"

typedef struct batch {
    int n_tokens;
    int n_seqs;
    int max_blocks;              /* row length of block_tables */
    int n_logits;                /* rows of logits wanted */
    const int32_t *input_ids;    /* [n_tokens]; -1 - r: the token the previous pass samples from its logits row r
                                    (not yet known on the host: a placeholder of an overlapped step) */
    const int32_t *positions;    /* [n_tokens] */
    const int32_t *slot_mapping; /* [n_tokens]: block * block_size + offset where the token's K/V go; -1 skips */
    const int32_t *query_start;  /* [n_seqs + 1] */
    const int32_t *context_len;  /* [n_seqs]: tokens of the sequence in the cache after this pass */
    const int32_t *block_tables; /* [n_seqs][max_blocks] */
    const int32_t *logit_rows;   /* [n_logits]: token indices whose logits are returned, in this order */
} batch;

struct sched_output;

/* Host arrays for batches of up to max_tokens tokens and max_seqs sequences of up to max_blocks blocks. */
typedef struct batch_builder {
    int max_tokens, max_seqs, max_blocks;
    int32_t *ids, *positions, *slots, *query_start, *context_len, *block_tables, *logit_rows;
    int32_t *logit_entry; /* [max_seqs]: the scheduler entry each logits row belongs to */
    batch b;
} batch_builder;

fk_status batch_builder_create(int max_tokens, int max_seqs, int max_blocks, batch_builder **out, fk_error *err);
void batch_builder_destroy(batch_builder *bb);

/* Flattens the scheduled entries: each computes its tokens n_computed .. n_computed + n_new - 1; a token the step
 * in flight is still sampling (request.pending_row) becomes the placeholder id -1 - pending_row. */
const batch *batch_build(batch_builder *bb, const struct sched_output *out, int block_size);

#endif
