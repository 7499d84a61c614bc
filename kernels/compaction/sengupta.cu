// `sengupta`: the work-efficient, step-efficient hybrid scan of seed 002
// §2.4. Reduce (002 Algorithm 3) halves the array launch by launch, keeping
// every level, until no more partial sums remain than the degree of
// parallelism; Horn's scan runs over those (horn.cu's passes); the down-sweep
// (002 Algorithm 4) walks back down the kept levels to the inclusive scan of
// all n. Horn's gather (horn.cu) then compacts, as 002 §4 does.
//
// Each kernel is one level: a map over that level, in its own launch, since
// every level reads the whole level written by the launch before it.
//
// The host launches the levels the capacity needs; each kernel works out from
// the device length how many levels n needs (a counted call's n may need
// fewer) and returns at once past them. The last level n needs goes to a fixed
// buffer `top`, so that Horn's scan over it reads one place whatever n is.
#include "common.cuh"

#ifndef REAP_BLOCK
#define REAP_BLOCK 256
#endif

// ceil(n / 2^h): the length of level h - 1, that is of n halved h times.
__device__ __forceinline__ u64 sengupta_len(u64 n, u32 h) {
    return h >= 64 ? (n != 0) : (n >> h) + ((n & ((1ull << h) - 1)) != 0);
}

// Reduce levels that n values need before at most p partial sums remain (p >= 1).
__device__ __forceinline__ u32 sengupta_levels(u64 n, u64 p) {
    u32 levels = 0;
    for (u64 len = n; len > p; len = (len + 1) / 2) levels++;
    return levels;
}

// Reduce step d over the level below it (x itself for d = 0):
// next[i] = a[2i] + a[2i + 1]. An odd level's last value has no partner and
// passes up alone. The last level n needs goes to `top` instead of `next`.
template <typename In, typename S>
__device__ __forceinline__ void sengupta_reduce(Extent ext, u32 d, u64 p, const In* a, u32 shift, S* next, S* top) {
    u64 n = extent_n(ext);
    u32 levels = sengupta_levels(n, p);
    if (d >= levels) return;  // whole grid: n needs fewer levels than the capacity
    u64 len = sengupta_len(n, d);
    S* dst = d + 1 == levels ? top : next;
    REAP_GRID_STRIDE(i, (len + 1) / 2) {
        S v = (S)reap_shifted(a, 2 * i, shift);
        if (2 * i + 1 < len) v += (S)reap_shifted(a, 2 * i + 1, shift);
        dst[i] = v;
    }
}

// Down-sweep step d over the level below it (x itself for d = 0), whose level
// above (`up`, pair sums; Horn's scan of `top` for the last level n needs) is
// already an inclusive scan: an odd i ends pair i / 2; an even i > 0 adds its
// own value to the prefix through the previous pair. `a` and `out` may be the
// same buffer: each thread reads and writes only its own slot.
template <typename In, typename S>
__device__ __forceinline__ void sengupta_down_sweep(Extent ext, u32 d, u64 p, const In* a, u32 shift, const S* up,
                                                    const S* top_scan, S* out) {
    u64 n = extent_n(ext);
    u32 levels = sengupta_levels(n, p);
    if (d >= levels) return;
    u64 len = sengupta_len(n, d);
    if (d + 1 == levels) up = top_scan;
    REAP_GRID_STRIDE(i, len) {
        S v;
        if (i & 1) v = up[i / 2];
        else if (i > 0) v = (S)reap_shifted(a, i, shift) + up[i / 2 - 1];
        else v = (S)reap_shifted(a, i, shift);
        out[i] = v;
    }
}

// A counted call's plan, for the two Horn scans the host enqueues: plan[0]
// is what the one over x itself covers (n, when n needs no level; else 0),
// plan[1] what the one over `top` covers (the last level's length, or 0).
extern "C" __global__ void sengupta_plan(Extent ext, u64 p, u64* plan) {
    u64 n = extent_n(ext);
    u32 levels = sengupta_levels(n, p);
    plan[0] = levels == 0 ? n : 0;
    plan[1] = levels == 0 ? 0 : sengupta_len(n, levels);
}

#define SENGUPTA_ENTRIES(IN, S)                                                                             \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                               \
        sengupta_reduce_##IN##_##S(Extent ext, u32 d, u64 p, const IN* a, u32 shift, S* next, S* top) {     \
        sengupta_reduce<IN, S>(ext, d, p, a, shift, next, top);                                             \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK) sengupta_down_sweep_##IN##_##S(               \
        Extent ext, u32 d, u64 p, const IN* a, u32 shift, const S* up, const S* top_scan, S* out) {         \
        sengupta_down_sweep<IN, S>(ext, d, p, a, shift, up, top_scan, out);                                 \
    }

SENGUPTA_ENTRIES(u32, u32)
SENGUPTA_ENTRIES(u32, u64)
SENGUPTA_ENTRIES(u64, u64)
