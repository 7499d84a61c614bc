// Phase-1 kernels shared by several algorithms: the flag-consuming ones
// (horn, sengupta, blelloch, roger) start by marking, and Redzone's select
// starts by listing the rejected indices, as seed 004 §5 adds to every
// competitor. All grid-stride over the extent's length.
#include "common.cuh"

// flags[i] = 1 if element i survives, else 0 (one u32 per element, what the scans read).
extern "C" __global__ void mark_flags(Extent ext, const Elem* in, KeepArgs keep, u32* flags) {
    u64 n = extent_n(ext);
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        flags[i] = reap_keep(in[i], i, keep) ? 1u : 0u;
}

// Appends the index of every rejected element to `list` (any order), one
// atomic per warp: seed 004's phase 1.
extern "C" __global__ void mark_rejected(Extent ext, const Elem* in, KeepArgs keep, u64* list, u64* len) {
    u64 n = extent_n(ext);
    u64 stride = (u64)gridDim.x * blockDim.x;
    // Whole warps iterate together so the ballot sees every lane.
    for (u64 base = (u64)blockIdx.x * blockDim.x; base < n; base += stride) {
        u64 i = base + threadIdx.x;
        bool drop = i < n && !reap_keep(in[i], i, keep);
        u32 mask = __ballot_sync(0xffffffffu, drop);
        u64 at = 0;
        if (reap_lane() == 0 && mask) at = atomicAdd(len, (u64)__popc(mask));
        at = __shfl_sync(0xffffffffu, at, 0);
        if (drop) list[at + __popc(mask & ((1u << reap_lane()) - 1))] = i;
    }
}

// out[i] = in[i] (Redzone compacts a copy in place).
extern "C" __global__ void copy_elems(Extent ext, const Elem* in, Elem* out) {
    u64 n = extent_n(ext);
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) out[i] = in[i];
}
