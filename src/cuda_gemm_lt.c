/* cuda_gemm_lt.c — cuBLASLt matmuls with a bias or GELU(+bias) epilogue; see cuda_gemm_lt.h. */
#include <stdint.h>
#include <stdlib.h>

#include <cublasLt.h>

#include "cuda_gemm_lt.h"

#define PLAN_CACHE 64 /* distinct (n, in, out, alignment, epilogue) shapes kept; a forward pass uses a handful */

typedef struct plan {
    int n, in, out, align;
    cublasLtEpilogue_t epilogue;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c; /* W as in x out (used transposed), x as in x n, y as out x n: column-major */
    cublasLtMatmulAlgo_t algo;
} plan;

struct gemm_lt {
    cublasLtHandle_t lt;
    void *workspace;
    size_t workspace_bytes;
    plan plans[PLAN_CACHE];
    int n_plans, next_evict;
};

#define LT_OK(call, what)                                                                                          \
    do {                                                                                                           \
        cublasStatus_t s_ = (call);                                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                           \
            return fk_error_set(err, FK_ERR_DEVICE, "cublasLt: %s: %s", what, cublasLtGetStatusString(s_));        \
    } while (0)

static void plan_clear(plan *p)
{
    if (p->desc)
        cublasLtMatmulDescDestroy(p->desc);
    if (p->a)
        cublasLtMatrixLayoutDestroy(p->a);
    if (p->b)
        cublasLtMatrixLayoutDestroy(p->b);
    if (p->c)
        cublasLtMatrixLayoutDestroy(p->c);
    *p = (plan){0};
}

fk_status gemm_lt_create(gemm_lt **out, void *workspace, size_t workspace_bytes, fk_error *err)
{
    *out = NULL;
    gemm_lt *g = calloc(1, sizeof *g);
    if (!g)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "cublasLt: out of memory");
    cublasStatus_t s = cublasLtCreate(&g->lt);
    if (s != CUBLAS_STATUS_SUCCESS) {
        free(g);
        return fk_error_set(err, FK_ERR_DEVICE, "cublasLt: cublasLtCreate: %s", cublasLtGetStatusString(s));
    }
    g->workspace = workspace;
    g->workspace_bytes = workspace_bytes;
    *out = g;
    return FK_OK;
}

void gemm_lt_destroy(gemm_lt *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_plans; i++)
        plan_clear(&g->plans[i]);
    cublasLtDestroy(g->lt);
    free(g);
}

/* The largest power of two, up to 256, dividing every pointer: what the heuristic may assume. */
static int common_alignment(const void *const *ptrs, int n)
{
    uintptr_t bits = 256;
    for (int i = 0; i < n; i++)
        if (ptrs[i])
            bits |= (uintptr_t)ptrs[i];
    return (int)(bits & -bits);
}

static fk_status plan_make(gemm_lt *g, plan *p, int n, int in, int out, int align, cublasLtEpilogue_t epilogue,
                           fk_error *err)
{
    *p = (plan){.n = n, .in = in, .out = out, .align = align, .epilogue = epilogue};
    const cublasOperation_t trans_w = CUBLAS_OP_T;
    const uint32_t al = (uint32_t)align;
    const size_t ws = g->workspace_bytes;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t found;
    int n_found = 0;
    cublasStatus_t s;
    if ((s = cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) ||
        (s = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_w, sizeof trans_w)) ||
        (s = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue)) ||
        (s = cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16F, (uint64_t)in, (uint64_t)out, in)) ||
        (s = cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16F, (uint64_t)in, (uint64_t)n, in)) ||
        (s = cublasLtMatrixLayoutCreate(&p->c, CUDA_R_16F, (uint64_t)out, (uint64_t)n, out)) ||
        (s = cublasLtMatmulPreferenceCreate(&pref)) ||
        (s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws)))
        goto fail;
    const cublasLtMatmulPreferenceAttributes_t aligns[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        if ((s = cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &al, sizeof al)))
            goto fail;
    s = cublasLtMatmulAlgoGetHeuristic(g->lt, p->desc, p->a, p->b, p->c, p->c, pref, 1, &found, &n_found);
    cublasLtMatmulPreferenceDestroy(pref);
    pref = NULL;
    if (s == CUBLAS_STATUS_SUCCESS && n_found == 0)
        s = CUBLAS_STATUS_NOT_SUPPORTED;
    if (s)
        goto fail;
    p->algo = found.algo;
    return FK_OK;
fail:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    plan_clear(p);
    return fk_error_set(err, FK_ERR_DEVICE, "cublasLt: no matmul with epilogue %d for %d x %d -> %d: %s", (int)epilogue,
                        n, in, out, cublasLtGetStatusString(s));
}

static fk_status plan_for(gemm_lt *g, int n, int in, int out, int align, cublasLtEpilogue_t epilogue, plan **found,
                          fk_error *err)
{
    for (int i = 0; i < g->n_plans; i++) {
        plan *p = &g->plans[i];
        if (p->n == n && p->in == in && p->out == out && p->align == align && p->epilogue == epilogue) {
            *found = p;
            return FK_OK;
        }
    }
    plan *p = &g->plans[g->n_plans];
    if (g->n_plans == PLAN_CACHE) { /* full: replace the oldest */
        p = &g->plans[g->next_evict];
        g->next_evict = (g->next_evict + 1) % PLAN_CACHE;
        plan_clear(p);
    }
    fk_status s = plan_make(g, p, n, in, out, align, epilogue, err); /* a failed plan is left zeroed: n = 0 */
    if (s)
        return s;
    if (p == &g->plans[g->n_plans])
        g->n_plans++;
    *found = p;
    return FK_OK;
}

fk_status gemm_lt_run(gemm_lt *g, cudaStream_t stream, void *y, const void *x, const void *w, const void *bias, int n,
                      int in, int out, gemm_lt_epilogue epilogue, fk_error *err)
{
    if (n == 0 || out == 0)
        return FK_OK;
    if (epilogue == GEMM_LT_BIAS && !bias)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "cublasLt: bias epilogue without a bias");
    const cublasLtEpilogue_t lt_epilogue = epilogue == GEMM_LT_BIAS ? CUBLASLT_EPILOGUE_BIAS
                                           : bias                   ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                                    : CUBLASLT_EPILOGUE_GELU;
    const void *ptrs[] = {y, x, w, bias};
    plan *p;
    fk_status s = plan_for(g, n, in, out, common_alignment(ptrs, 4), lt_epilogue, &p, err);
    if (s)
        return s;
    if (bias)
        LT_OK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
              "bias pointer");
    const float one = 1.0f, zero = 0.0f;
    LT_OK(cublasLtMatmul(g->lt, p->desc, &one, w, p->a, x, p->b, &zero, y, p->c, y, p->c, &p->algo, g->workspace,
                         g->workspace_bytes, stream),
          "cublasLtMatmul");
    return FK_OK;
}
