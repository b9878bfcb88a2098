// lt_algos.cu — experiment: cuBLASLt's heuristic algorithms for the decode linears y[m][n] = x[m][k] W[n][k]^T at
// m = 32..128, each timed (CUDA graph of 20 calls cycling through copies of W past the L2), against cublasGemmEx's
// default (as backend_cuda.c calls it). Prints the default, cuBLASLt's first choice and the fastest of up to 32.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)
#define BK(x) do { cublasStatus_t e = (x); if (e != CUBLAS_STATUS_SUCCESS) { printf("cublas %d line %d\n", (int)e, __LINE__); exit(1); } } while (0)
template <typename F> static double us(cudaStream_t st, F rec, bool *ok)
{
    cudaGraph_t g; cudaGraphExec_t ex;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 20; i++) if (!rec(i)) *ok = false;
    CK(cudaStreamEndCapture(st, &g));
    if (!*ok) { cudaGraphDestroy(g); return 0; }
    CK(cudaGraphInstantiate(&ex, g, 0));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int r = 0; r < 12; r++) {
        CK(cudaEventRecord(a, st)); CK(cudaGraphLaunch(ex, st)); CK(cudaEventRecord(b, st)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (r >= 2) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    cudaGraphExecDestroy(ex); cudaGraphDestroy(g); cudaEventDestroy(a); cudaEventDestroy(b);
    return t[t.size() / 2] * 1e3 / 20;
}
int main()
{
    struct { const char *name; int n, k; } shapes[] = {{"1b qkv", 3072, 2048}, {"1b o", 2048, 2048}, {"1b gate_up", 16384, 2048},
        {"1b down", 2048, 8192}, {"8b qkv", 6144, 4096}, {"8b o", 4096, 4096}, {"8b gate_up", 28672, 4096}, {"8b down", 4096, 14336}};
    const int ms[] = {32, 64, 128, 256};
    cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cublasHandle_t blas; BK(cublasCreate(&blas)); BK(cublasSetStream(blas, st));
    cublasLtHandle_t lt; BK(cublasLtCreate(&lt));
    const size_t ws_bytes = 32u << 20; void *ws; CK(cudaMalloc(&ws, ws_bytes)); BK(cublasSetWorkspace(blas, ws, ws_bytes));
    __half *x, *y; CK(cudaMalloc(&x, 256 * 14336 * 2)); CK(cudaMalloc(&y, 256 * 28672 * 2));
    CK(cudaMemset(x, 0, 256 * 14336 * 2));
    for (auto &s : shapes) {
        const size_t wb = (size_t)s.n * s.k * 2; const int copies = std::max(2, (int)(256e6 / wb) + 1);
        std::vector<__half *> w(copies); for (auto &p : w) { CK(cudaMalloc(&p, wb)); CK(cudaMemset(p, 0, wb)); }
        for (int m : ms) {
            bool ok = true; const float one = 1, zero = 0;
            double def = us(st, [&](int i) { return cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, s.n, m, s.k, &one, w[i % copies], CUDA_R_16F, s.k, x, CUDA_R_16F, s.k, &zero, y, CUDA_R_16F, s.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS; }, &ok);
            cublasLtMatmulDesc_t d; BK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
            cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
            BK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T));
            BK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &N, sizeof N));
            cublasLtMatrixLayout_t la, lb, lc;
            BK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, s.k, s.n, s.k)); BK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, s.k, m, s.k));
            BK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, s.n, m, s.n));
            cublasLtMatmulPreference_t pref; BK(cublasLtMatmulPreferenceCreate(&pref));
            BK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
            cublasLtMatmulHeuristicResult_t res[32]; int nres = 0;
            BK(cublasLtMatmulAlgoGetHeuristic(lt, d, la, lb, lc, lc, pref, 32, res, &nres));
            double first = 0, best = 1e30; int best_i = -1;
            for (int a = 0; a < nres; a++) {
                bool aok = true;
                double t = us(st, [&](int i) { return cublasLtMatmul(lt, d, &one, w[i % copies], la, x, lb, &zero, y, lc, y, lc, &res[a].algo, ws, ws_bytes, st) == CUBLAS_STATUS_SUCCESS; }, &aok);
                if (!aok) continue;
                if (a == 0) first = t;
                if (t < best) best = t, best_i = a;
            }
            const double bytes = wb + (double)m * s.k * 2 + (double)m * s.n * 2;
            printf("%-11s m=%3d: gemmEx %7.2f us (%4.1f%%) | lt first %7.2f | lt best %7.2f us (%4.1f%%, #%d of %d) | best/gemmEx %.2f\n", s.name, m, def,
                   bytes / def / 1e3 / 30.17, first, best, bytes / best / 1e3 / 30.17, best_i, nres, best / def);
            fflush(stdout);
            cublasLtMatmulPreferenceDestroy(pref); cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(lc); cublasLtMatmulDescDestroy(d);
        }
        for (auto p : w) cudaFree(p);
    }
    return 0;
}
