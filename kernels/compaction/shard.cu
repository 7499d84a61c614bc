// The sharded scan's last step (src/compaction/shard/): a rank's exclusive
// scan becomes its part of the global scan by adding the totals of the ranks
// before it, which the all-gather left in device words. Integer elements
// only (a scan's), so the sum is exact whatever the order.
#include "common.cuh"

#if REAP_ELEM_BYTES <= 8
extern "C" __global__ void shard_add_prefix(Elem* data, u64 n, const u64* totals, u32 ranks_before) {
    Elem prefix = 0;
    for (u32 r = 0; r < ranks_before; r++) prefix += (Elem)totals[r];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        data[i] += prefix;
}
#endif
