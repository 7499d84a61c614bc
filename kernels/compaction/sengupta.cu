// `sengupta`: the work-efficient, step-efficient hybrid scan of seed 002
// §2.4. Reduce (002 Algorithm 3) halves the array launch by launch, keeping
// every level, until no more partial sums remain than the degree of
// parallelism; Horn's scan runs over those (horn.cu's passes); the down-sweep
// (002 Algorithm 4) walks back down the kept levels to the inclusive scan of
// all n. Horn's gather (horn.cu) then compacts, as 002 §4 does.
//
// Each kernel is one level: a map over that level, in its own launch, since
// every level reads the whole level written by the launch before it.
#include "common.cuh"

#ifndef REAP_BLOCK
#define REAP_BLOCK 256
#endif

#define GRID_STRIDE(k, n) \
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < (n); k += (u64)gridDim.x * blockDim.x)

// x(k) of level 0: the input, or (shift) the input moved right by one slot,
// whose inclusive scan is the input's exclusive scan.
template <typename In>
__device__ __forceinline__ In sengupta_x(const In* x, u64 k, u32 shift) {
    return shift ? (k ? x[k - 1] : (In)0) : x[k];
}

// One reduce step over `len` values: next[i] = a[2i] + a[2i + 1]. An odd
// level's last value has no partner and passes up alone.
template <typename In, typename S>
__device__ __forceinline__ void sengupta_reduce(u64 len, const In* a, u32 shift, S* next) {
    GRID_STRIDE(i, (len + 1) / 2) {
        S v = (S)sengupta_x(a, 2 * i, shift);
        if (2 * i + 1 < len) v += (S)sengupta_x(a, 2 * i + 1, shift);
        next[i] = v;
    }
}

// One down-sweep step over `len` values whose level above (`up`, pair sums)
// is already an inclusive scan: an odd i ends pair i / 2; an even i > 0 adds
// its own value to the prefix through the previous pair. `a` and `out` may be
// the same buffer: each thread reads and writes only its own slot.
template <typename In, typename S>
__device__ __forceinline__ void sengupta_down_sweep(u64 len, const In* a, u32 shift, const S* up, S* out) {
    GRID_STRIDE(i, len) {
        S v;
        if (i & 1) v = up[i / 2];
        else if (i > 0) v = (S)sengupta_x(a, i, shift) + up[i / 2 - 1];
        else v = (S)sengupta_x(a, i, shift);
        out[i] = v;
    }
}

#define SENGUPTA_ENTRIES(IN, S)                                                                             \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                               \
        sengupta_reduce_##IN##_##S(u64 len, const IN* a, u32 shift, S* next) {                              \
        sengupta_reduce<IN, S>(len, a, shift, next);                                                        \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                               \
        sengupta_down_sweep_##IN##_##S(u64 len, const IN* a, u32 shift, const S* up, S* out) {              \
        sengupta_down_sweep<IN, S>(len, a, shift, up, out);                                                 \
    }

SENGUPTA_ENTRIES(u32, u32)
SENGUPTA_ENTRIES(u32, u64)
SENGUPTA_ENTRIES(u64, u64)
