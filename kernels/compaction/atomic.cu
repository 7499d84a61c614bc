// `atomic`: pbrt-v4's GPU work queues (src/pbrt/wavefront/workqueue.h), where
// every surviving item reserves its slot with an atomicAdd on the queue size
// and the compiler aggregates those adds per warp. Here the aggregation is
// explicit and spans REAP_AT_ITEMS ballots: a warp takes 32 * ITEMS
// consecutive elements, one ballot per 32, and lane 0 makes one atomicAdd for
// all their keepers. Warps land in whatever order their atomics run, so the
// output is the right multiset in no fixed order (unstable).
#include "common.cuh"

// Ballots (of 32 elements each) per atomic.
#ifndef REAP_AT_ITEMS
#define REAP_AT_ITEMS 16
#endif

// The count is the caller's zeroed device word; it ends holding the survivors.
// blockDim.x must be a multiple of 32. The grid strides, so it is sized once
// for the capacity and a counted call's shorter length only ends the loop sooner.
extern "C" __global__ void atomic_select(Extent ext, const Elem* in, KeepArgs keep, Elem* out, u64* count) {
    const u64 n = extent_n(ext);
    const u64 span = 32ull * REAP_AT_ITEMS;
    u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    u32 lane = reap_lane();
    u32 below = (1u << lane) - 1;  // lanes before this one
    // The bound depends on the warp only, so whole warps iterate together and
    // the full-mask ballots and shuffle are legal on the tail too.
    for (u64 base = warp * span; base < n; base += warps * span) {
        Elem x[REAP_AT_ITEMS];
        u32 mask[REAP_AT_ITEMS];
        u32 total = 0;
#pragma unroll
        for (u32 e = 0; e < REAP_AT_ITEMS; e++) {
            u64 i = base + e * 32 + lane;  // coalesced: 32 consecutive elements per ballot
            bool kept = false;
            if (i < n) {
                x[e] = in[i];
                kept = reap_keep(x[e], i, keep);
            }
            mask[e] = __ballot_sync(0xffffffffu, kept);
            total += __popc(mask[e]);
        }
        u64 at = 0;
        if (lane == 0 && total) at = atomicAdd(count, (u64)total);
        at = __shfl_sync(0xffffffffu, at, 0);
#pragma unroll
        for (u32 e = 0; e < REAP_AT_ITEMS; e++) {
            if ((mask[e] >> lane) & 1) out[at + __popc(mask[e] & below)] = x[e];
            at += __popc(mask[e]);
        }
    }
}
