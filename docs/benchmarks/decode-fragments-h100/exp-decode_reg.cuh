// Prototype: decode attention with K/V loaded straight into MMA fragments (no shared-memory staging).
// A warp takes a (sequence, KV head) pair's 16-key tiles part, part + WPP, ...; WPP warps per pair merge in smem.
namespace {
template <int D> struct reg_tile {
    uint4 k[2][D / 32]; // K rows g and 8 + g, dims 32p + 8t .. + 7
    uint4 v[4][D / 64]; // V rows 2t, 2t + 1, 8 + 2t, 9 + 2t, dims 64q + 8g .. + 7
};
__device__ __forceinline__ uint32_t word_of(const uint4 &v, int w)
{
    return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}
template <int D, int DEPTH, int WPP, int MINB, bool BIG_G = true, int NW = 4>
__global__ void __launch_bounds__(32 * NW, MINB) decode_reg_kernel(k_attn_args a)
{
    constexpr int NP = D / 32, NV = D / 64, PAIRS = NW / WPP;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int pair = blockIdx.x * PAIRS + warp / WPP, part = warp % WPP;
    const bool active = pair < a.n_seqs * a.n_kv_heads;
    const int seq = active ? pair / a.n_kv_heads : 0, kvh = pair % a.n_kv_heads;
    const int G = a.n_heads / a.n_kv_heads, B = a.block_size;
    const int ctx = active ? a.context_len[seq] : 0, tok = a.query_start[seq];
    const int32_t *blocks = a.block_tables + (size_t)seq * a.max_blocks;
    const int n_pages = (ctx + B - 1) / B;
    const int tbl = lane < n_pages ? blocks[lane] : 0; // pages 0..31 of the sequence
    const int n_tiles = (ctx + 15) / 16;
    const int my_tiles = n_tiles > part ? (n_tiles - part + WPP - 1) / WPP : 0;
    pdl_wait();
    pdl_launch_dependents();
    const float scale_log2 = a.scale * 1.4426950408889634f;
    const __half *q = (const __half *)a.qkv + (size_t)tok * (a.n_heads + 2 * a.n_kv_heads) * D + (size_t)kvh * G * D;
    uint32_t qa[D / 16][4];
#pragma unroll
    for (int p = 0; p < NP; p++) {
        uint4 r0 = make_uint4(0, 0, 0, 0), r1 = r0;
        if (g < G)
            r0 = *reinterpret_cast<const uint4 *>(q + (size_t)g * D + 32 * p + 8 * t);
        if (BIG_G && g + 8 < G)
            r1 = *reinterpret_cast<const uint4 *>(q + (size_t)(g + 8) * D + 32 * p + 8 * t);
        uint32_t w0[4] = {r0.x, r0.y, r0.z, r0.w}, w1[4] = {r1.x, r1.y, r1.z, r1.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f0 = __half22float2(*reinterpret_cast<__half2 *>(&w0[i]));
            const float2 f1 = __half22float2(*reinterpret_cast<__half2 *>(&w1[i]));
            w0[i] = pack_half2(f0.x * scale_log2, f0.y * scale_log2);
            w1[i] = pack_half2(f1.x * scale_log2, f1.y * scale_log2);
        }
        qa[2 * p][0] = w0[0], qa[2 * p][1] = w1[0], qa[2 * p][2] = w0[1], qa[2 * p][3] = w1[1];
        qa[2 * p + 1][0] = w0[2], qa[2 * p + 1][1] = w1[2], qa[2 * p + 1][2] = w0[3], qa[2 * p + 1][3] = w1[3];
    }
    const __half *kc = (const __half *)a.k_cache, *vc = (const __half *)a.v_cache;
    auto load_tile = [&](int ti, reg_tile<D> &r) {
        const int kb = ti * 16, page = kb / B;
        const int blk = page < 32 ? __shfl_sync(0xffffffffu, tbl, page) : blocks[page];
        const size_t base = (((size_t)blk * a.n_kv_heads + kvh) * B + kb % B) * D;
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int p = 0; p < NP; p++)
                r.k[j][p] = kb + 8 * j + g < ctx
                                ? load_stream16(kc + base + (size_t)(8 * j + g) * D + 32 * p + 8 * t)
                                : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = (i / 2) * 8 + 2 * t + i % 2;
#pragma unroll
            for (int qq = 0; qq < NV; qq++)
                r.v[i][qq] = kb + row < ctx ? load_stream16(vc + base + (size_t)row * D + 64 * qq + 8 * g)
                                            : make_uint4(0, 0, 0, 0);
        }
    };
    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; j++)
        o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
    auto compute = [&](const reg_tile<D> &r, int ti) {
        float s[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const uint32_t b[2] = {word_of(r.k[j][kk / 2], 2 * (kk % 2)), word_of(r.k[j][kk / 2], 2 * (kk % 2) + 1)};
                mma_16816(s[j], qa[kk], b);
            }
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                if (ti * 16 + j * 8 + 2 * t + (e & 1) >= ctx)
                    s[j][e] = -INFINITY;
                mx[e >> 1] = fmaxf(mx[e >> 1], s[j][e]);
            }
        float corr[2], base[2];
#pragma unroll
        for (int rr = 0; rr < 2; rr++) {
            mx[rr] = fmaxf(mx[rr], __shfl_xor_sync(0xffffffffu, mx[rr], 1));
            mx[rr] = fmaxf(mx[rr], __shfl_xor_sync(0xffffffffu, mx[rr], 2));
            const float m_new = fmaxf(m[rr], mx[rr]);
            base[rr] = m_new == -INFINITY ? 0.0f : m_new;
            corr[rr] = exp2f(m[rr] - base[rr]);
            m[rr] = m_new;
            l[rr] *= corr[rr];
        }
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            o[j][0] *= corr[0], o[j][1] *= corr[0];
            o[j][2] *= corr[1], o[j][3] *= corr[1];
        }
        uint32_t p[4];
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const float p0 = exp2f(s[j][0] - base[0]), p1 = exp2f(s[j][1] - base[0]);
            const float p2 = exp2f(s[j][2] - base[1]), p3 = exp2f(s[j][3] - base[1]);
            l[0] += p0 + p1;
            l[1] += p2 + p3;
            p[j * 2 + 0] = pack_half2(p0, p1);
            p[j * 2 + 1] = pack_half2(p2, p3);
        }
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            const int qq = dn / 8, w = (dn % 8) / 2;
            const unsigned sel = dn % 2 ? 0x7632 : 0x5410;
            const uint32_t b[2] = {__byte_perm(word_of(r.v[0][qq], w), word_of(r.v[1][qq], w), sel),
                                   __byte_perm(word_of(r.v[2][qq], w), word_of(r.v[3][qq], w), sel)};
            mma_16816(o[dn], p, b);
        }
    };
    reg_tile<D> buf[DEPTH];
#pragma unroll
    for (int d = 0; d < DEPTH; d++)
        if (d < my_tiles)
            load_tile(part + d * WPP, buf[d]);
    for (int i0 = 0; i0 < my_tiles; i0 += DEPTH) {
#pragma unroll
        for (int d = 0; d < DEPTH; d++) {
            const int i = i0 + d;
            if (i < my_tiles) {
                compute(buf[d], part + i * WPP);
                if (i + DEPTH < my_tiles)
                    load_tile(part + (i + DEPTH) * WPP, buf[d]);
            }
        }
    }
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        l[rr] += __shfl_xor_sync(0xffffffffu, l[rr], 1);
        l[rr] += __shfl_xor_sync(0xffffffffu, l[rr], 2);
    }
    __half *out = (__half *)a.out + ((size_t)tok * a.n_heads + (size_t)kvh * G) * D;
    if (WPP == 1) {
        if (!active)
            return;
#pragma unroll
        for (int rr = 0; rr < 2; rr++) {
            const int row = g + 8 * rr;
            if (row >= G)
                continue;
            const float inv = 1.0f / l[rr];
#pragma unroll
            for (int qq = 0; qq < NV; qq++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    uint4 v;
                    uint32_t *w = reinterpret_cast<uint32_t *>(&v);
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        w[i] = pack_half2(o[8 * qq + 2 * i][2 * rr + c] * inv, o[8 * qq + 2 * i + 1][2 * rr + c] * inv);
                    *reinterpret_cast<uint4 *>(out + (size_t)row * D + 64 * qq + 16 * t + 8 * c) = v;
                }
        }
        return;
    }
    __shared__ float wo[NW][16][D];
    __shared__ float wm[NW][16], wl[NW][16];
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        const int row = g + 8 * rr;
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++)
#pragma unroll
            for (int c = 0; c < 2; c++)
                wo[warp][row][64 * (dn / 8) + 16 * t + 8 * c + dn % 8] = o[dn][2 * rr + c];
        if (t == 0)
            wm[warp][row] = m[rr], wl[warp][row] = l[rr];
    }
    __syncthreads();
    // warps of pair P: P*WPP .. ; each pair's G rows x D merged by its WPP warps' threads
    if (!active)
        return;
    const int w0 = (warp / WPP) * WPP;
    for (int i = part * 32 + lane; i < G * D; i += WPP * 32) {
        const int row = i / D, d = i % D;
        float mx = -INFINITY;
#pragma unroll
        for (int w = 0; w < WPP; w++)
            mx = fmaxf(mx, wm[w0 + w][row]);
        float num = 0, den = 0;
#pragma unroll
        for (int w = 0; w < WPP; w++) {
            const float wt = wm[w0 + w][row] == -INFINITY ? 0.0f : exp2f(wm[w0 + w][row] - mx);
            num += wt * wo[w0 + w][row][d];
            den += wt * wl[w0 + w][row];
        }
        out[(size_t)row * D + d] = __float2half(num / den);
    }
}
template <int D, int DEPTH, int WPP, int MINB, bool BIG_G = true, int NW = 4>
cudaError_t launch_reg(const k_attn_args *a, int, int, float *, cudaStream_t stream)
{
    const int pairs = a->n_seqs * a->n_kv_heads, per_block = NW / WPP;
    return fk_launch(decode_reg_kernel<D, DEPTH, WPP, MINB, BIG_G, NW>, dim3((pairs + per_block - 1) / per_block), dim3(32 * NW), 0,
                     stream, *a);
}
} // namespace
