// The sharded scan's steps (src/compaction/shard/). Integer elements only
// (a scan's), so every sum is exact whatever the order.
#include "common.cuh"

#if REAP_ELEM_BYTES <= 8
// Before a scan that takes a carry (lookback, chained): this rank's total,
// all-gathered so that each rank knows the totals of the ranks before it
// before it stores. *total is zero before; the sum wraps as the scan's does
// once the reader casts it to Elem.
extern "C" __global__ void shard_total(const Elem* in, u64 n, u64* total) {
    // 16 bytes a load where the input is aligned (allocations are): the pass
    // reads at the copy rate, and only the tail goes an element at a time.
    constexpr u32 PER = 16 / sizeof(Elem);
    u64 stride = (u64)gridDim.x * blockDim.x, t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 vecs = (reinterpret_cast<size_t>(in) & 15) == 0 ? n / PER : 0;
    const uint4* in4 = reinterpret_cast<const uint4*>(in);
    u64 sum = 0;
#pragma unroll 4
    for (u64 v = t; v < vecs; v += stride) {
        uint4 q = in4[v];
        const Elem* e = reinterpret_cast<const Elem*>(&q);
#pragma unroll
        for (u32 k = 0; k < PER; k++) sum += (u64)e[k];
    }
    for (u64 i = vecs * PER + t; i < n; i += stride) sum += (u64)in[i];
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    __shared__ u64 s_warp[32];
    u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) s_warp[warp] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 block = 0;
        for (u32 w = 0; w < (blockDim.x + 31) / 32; w++) block += s_warp[w];
        if (block) atomicAdd((unsigned long long*)total, (unsigned long long)block);
    }
}

// Otherwise, after the scan: a rank's exclusive scan becomes its part of the
// global scan by adding the totals of the ranks before it, which the
// all-gather left in device words.
extern "C" __global__ void shard_add_prefix(Elem* data, u64 n, const u64* totals, u32 ranks_before) {
    Elem prefix = 0;
    for (u32 r = 0; r < ranks_before; r++) prefix += (Elem)totals[r];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        data[i] += prefix;
}
#endif
