/* batch.h — one forward pass's tokens, flattened across sequences (host arrays; the model uploads them). */
#ifndef FK_BATCH_H
#define FK_BATCH_H

#include <stdint.h>

typedef struct batch {
    int n_tokens;
    int n_seqs;
    int max_blocks;              /* row length of block_tables */
    int n_logits;                /* rows of logits wanted */
    const int32_t *input_ids;    /* [n_tokens] */
    const int32_t *positions;    /* [n_tokens] */
    const int32_t *slot_mapping; /* [n_tokens]: block * block_size + offset where the token's K/V go; -1 skips */
    const int32_t *query_start;  /* [n_seqs + 1] */
    const int32_t *context_len;  /* [n_seqs]: tokens of the sequence in the cache after this pass */
    const int32_t *block_tables; /* [n_seqs][max_blocks] */
    const int32_t *logit_rows;   /* [n_logits]: token indices whose logits are returned, in this order */
} batch;

#endif
