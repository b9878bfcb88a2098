// online_softmax.cuh — one step of the online softmax of the mma.sync attention kernels (attention_prefill.cu's
// sm_80/sm_75 kernel, attention_decode.cu and attention_decode_fragments.cu).
//
// A warp holds the scores of 16 query rows against a tile of NS * 8 keys as m16n8 C fragments: s[j][e] is row
// g + 8 * (e >> 1) (g = lane / 4) and key 8 j + 2 t + (e & 1) (t = lane % 4), already scaled to log2 units, with
// masked keys at -INFINITY. m and l are the running max and sum of rows g and g + 8 (the sum over this thread's
// keys only: the caller adds the quad's sums at the end); o[NO][4] the output fragments in the same rows.
#ifndef FK_ONLINE_SOFTMAX_CUH
#define FK_ONLINE_SOFTMAX_CUH

#include "common.cuh"

// Folds the tile into m and l, rescales o's rows to the new max, and returns P = exp2(s - max) as the A fragments of
// P V: p[kc] covers keys 16 kc ... 16 kc + 15.
template <int NS, int NO>
__device__ __forceinline__ void online_softmax_tile(const float (&s)[NS][4], float (&m)[2], float (&l)[2],
                                                    float (&o)[NO][4], uint32_t (&p)[NS / 2][4])
{
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < NS; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            mx[e >> 1] = fmaxf(mx[e >> 1], s[j][e]);
    float corr[2], base[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float m_new = fmaxf(m[r], mx[r]);
        base[r] = m_new == -INFINITY ? 0.0f : m_new; // a row with nothing visible yet stays at zero
        corr[r] = fast_exp2(m[r] - base[r]);
        m[r] = m_new;
        l[r] *= corr[r];
    }
#pragma unroll
    for (int j = 0; j < NO; j++) {
        o[j][0] *= corr[0], o[j][1] *= corr[0];
        o[j][2] *= corr[1], o[j][3] *= corr[1];
    }
#pragma unroll
    for (int j = 0; j < NS; j++) {
        const float p0 = fast_exp2(s[j][0] - base[0]), p1 = fast_exp2(s[j][1] - base[0]);
        const float p2 = fast_exp2(s[j][2] - base[1]), p3 = fast_exp2(s[j][3] - base[1]);
        l[0] += p0 + p1;
        l[1] += p2 + p3;
        p[j / 2][(j % 2) * 2 + 0] = pack_half2(p0, p1);
        p[j / 2][(j % 2) * 2 + 1] = pack_half2(p2, p3);
    }
}

#endif
