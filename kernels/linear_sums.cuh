// linear_sums.cuh — where the small-batch linears (linear_small.cu, linear_quant.cu) meet after their main loop: the
// warps of a block (which split k) add their m16n8 accumulators in shared memory, and with split-K across blocks the
// tile's splits add theirs through global memory in a fixed order (the tiled linear_quant_mma.cu shares the last
// split's handshake).
#ifndef FK_LINEAR_SUMS_CUH
#define FK_LINEAR_SUMS_CUH

// Split-K's meeting point, after every thread of the block has written its split's partials of a tile: whether this
// block is the tile's last split to arrive (its counter counts arrivals), in which case every split's partials are
// visible to it and it resets the counter for the next launch. All threads of the block call it (it synchronizes).
__device__ __forceinline__ bool last_split_arrived(unsigned *counter, unsigned n_splits)
{
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(counter, 1u) == n_splits - 1;
        if (last)
            *counter = 0; // no other split of this tile is left
    }
    __syncthreads();
    if (last)
        __threadfence();
    return last;
}

// A row tile's NT x 128 accumulator floats spread over the block's threads: how many each holds in the epilogue.
template <int WARPS, int NT> __host__ __device__ constexpr int sums_per_thread()
{
    return (NT * 128 + 32 * WARPS - 1) / (32 * WARPS);
}

// The block's sums of its tile of y, from each warp's acc[rt][nt][e]: sum[rt][q] holds entry i = threadIdx.x +
// q * 32 WARPS of row tile rt, i.e. accumulator e of lane l of token tile nt for i = (nt * 4 + e) * 32 + l (local row
// g(l) + 8 (e >= 2), token nt * 8 + 2 t(l) + (e & 1)); entries past NT x 128 are 0. With split-K (gridDim.y > 1)
// every split writes its sums to partials[tile][split][RT][NT x 128] and the tile's last split to arrive adds all of
// them in split order, so the result does not depend on timing, and resets the tile's counter for the next launch;
// the other splits get false (they have nothing to write).
template <int WARPS, int RT, int NT>
__device__ __forceinline__ bool tile_sums(const float (&acc)[RT][NT][4], float (&sum)[RT][sums_per_thread<WARPS, NT>()],
                                          float *__restrict__ partials, unsigned *__restrict__ counters)
{
    constexpr int THREADS = 32 * WARPS, FRAG = NT * 4 * 32, PER = sums_per_thread<WARPS, NT>();
    __shared__ float red[WARPS][RT][FRAG];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, split = blockIdx.y, n_splits = gridDim.y;

#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                red[warp][rt][(nt * 4 + e) * 32 + lane] = acc[rt][nt][e];
    __syncthreads();
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = threadIdx.x + q * THREADS;
            float v = 0;
            if (i < FRAG)
#pragma unroll
                for (int wp = 0; wp < WARPS; wp++)
                    v += red[wp][rt][i];
            sum[rt][q] = v;
        }
    if (n_splits == 1)
        return true;

    float *mine = partials + ((size_t)blockIdx.x * n_splits + split) * RT * FRAG;
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = threadIdx.x + q * THREADS;
            if (i < FRAG)
                mine[rt * FRAG + i] = sum[rt][q];
        }
    if (!last_split_arrived(&counters[blockIdx.x], n_splits))
        return false;
    // Split by split in order, each split's RT x PER loads independent of one another (in flight together).
    const float *all = partials + (size_t)blockIdx.x * n_splits * RT * FRAG;
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
        for (int q = 0; q < PER; q++)
            sum[rt][q] = 0;
    for (int sp = 0; sp < n_splits; sp++)
#pragma unroll
        for (int rt = 0; rt < RT; rt++)
#pragma unroll
            for (int q = 0; q < PER; q++) {
                const int i = threadIdx.x + q * THREADS;
                if (i < FRAG)
                    sum[rt][q] += __ldcg(all + (size_t)sp * RT * FRAG + rt * FRAG + i);
            }
    return true;
}

#endif
