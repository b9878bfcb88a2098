// attention_prefill_hopper.cuh — the Hopper (sm_90a, wgmma) prefill attention kernel, behind k_attention_prefill.
#ifndef FK_ATTENTION_PREFILL_HOPPER_CUH
#define FK_ATTENTION_PREFILL_HOPPER_CUH

#include "kernels.h"

// Whether the running device can use it: compute capability 9.0 and the kernels compiled for sm_90a.
cudaError_t prefill_hopper_available(bool *available);

// k_attention_prefill for 128-query tiles, head_dim 64 or 128.
cudaError_t prefill_hopper(const k_attn_args *a, const int32_t *tiles, int n_tiles, cudaStream_t stream);

#endif
