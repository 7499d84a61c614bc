// `horn`: Horn's stream reduction (GPU Gems 2 ch. 36) as seed 003 §II
// describes it (Figs. 2-3), on the scan of seed 002 §2.2 Algorithm 2.
//
// The scan is Hillis-Steele over all n: ceil(log2 n) launches, each one pass
// `dst[k] = src[k] + src[k - 2^p]` between two buffers (the paper's two
// textures swapping roles), O(n log n) work. The gather gives every output
// slot one thread that finds its source by a dichotomic (binary) search of
// the inclusive scan, O(n log n) again. Slow on purpose: it is the baseline
// seeds 002 and 003 improve on. `sengupta` reuses these kernels for its Horn
// scan over the partial sums and for its gather.
//
// Sums are u32 or u64 (the host picks u32 when n < 2^32); every kernel is
// stamped out for the pairs of input and sum types it is used with.
#include "common.cuh"

#ifndef REAP_BLOCK
#define REAP_BLOCK 256
#endif

#define GRID_STRIDE(k, n) \
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < (n); k += (u64)gridDim.x * blockDim.x)

// x(k) of the scanned sequence: the input itself, or (shift) the input moved
// right by one slot, whose inclusive scan is the input's exclusive scan.
template <typename In>
__device__ __forceinline__ In horn_x(const In* x, u64 k, u32 shift) {
    return shift ? (k ? x[k - 1] : (In)0) : x[k];
}

// First pass (offset 1), reading x and widening it to the sum type.
template <typename In, typename S>
__device__ __forceinline__ void horn_first(u64 n, const In* x, u32 shift, S* dst) {
    GRID_STRIDE(k, n) {
        S v = (S)horn_x(x, k, shift);
        if (k >= 1) v += (S)horn_x(x, k - 1, shift);
        dst[k] = v;
    }
}

// Every later pass (002 Algorithm 2, one iteration): offset 2^p to the left.
template <typename S>
__device__ __forceinline__ void horn_pass(u64 n, const S* src, S* dst, u64 offset) {
    GRID_STRIDE(k, n) dst[k] = k >= offset ? src[k] + src[k - offset] : src[k];
}

// An exclusive scan's total: its last prefix plus the last input.
template <typename T>
__device__ __forceinline__ void horn_total(u64 n, const T* in, const T* out, u64* total) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *total = (u64)(T)(out[n - 1] + in[n - 1]);
}

// The first i < n with f(i) > target, f non-decreasing and exceeding target
// somewhere (003 §II's dichotomic search).
template <typename S, bool REJECTED>
__device__ __forceinline__ u64 horn_search(u64 n, const S* sum, u64 target) {
    u64 lo = 0, hi = n - 1;
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        // Kept elements through mid: sum[mid]; rejected ones: mid + 1 - sum[mid].
        u64 f = REJECTED ? mid + 1 - (u64)sum[mid] : (u64)sum[mid];
        if (f > target) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

// Gather (003 §II): slot j < kept takes the (j + 1)-th kept element; with
// `split`, slot kept + r takes the (r + 1)-th rejected one. One thread per
// slot over all n, since the kept count stays on the device.
template <typename S>
__device__ __forceinline__ void horn_gather(u64 n, const Elem* in, const S* sum, Elem* out, u64* count, u32 split) {
    u64 kept = (u64)sum[n - 1];
    GRID_STRIDE(j, n) {
        if (j < kept) out[j] = in[horn_search<S, false>(n, sum, j)];
        else if (split) out[j] = in[horn_search<S, true>(n, sum, j - kept)];
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *count = kept;
}

#define HORN_FIRST(IN, S)                                                                                  \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                              \
        horn_first_##IN##_##S(u64 n, const IN* x, u32 shift, S* dst) {                                   \
        horn_first<IN, S>(n, x, shift, dst);                                                               \
    }
#define HORN_SUM(S)                                                                                        \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK) horn_pass_##S(u64 n, const S* src, S* dst, u64 offset) { \
        horn_pass<S>(n, src, dst, offset);                                                                 \
    }                                                                                                      \
    extern "C" __global__ void horn_total_##S(u64 n, const S* in, const S* out, u64* total) {              \
        horn_total<S>(n, in, out, total);                                                                  \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                              \
        horn_gather_##S(u64 n, const Elem* in, const S* sum, Elem* out, u64* count, u32 split) {           \
        horn_gather<S>(n, in, sum, out, count, split);                                                     \
    }

HORN_FIRST(u32, u32)
HORN_FIRST(u32, u64)
HORN_FIRST(u64, u64)
HORN_SUM(u32)
HORN_SUM(u64)
