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
//
// A counted call sizes its passes from the capacity, ceil(log2 cap) of them;
// the device length may need fewer (horn_pass).
#include "common.cuh"

#ifndef REAP_BLOCK
#define REAP_BLOCK 256
#endif

// First pass (offset 1), reading x and widening it to the sum type.
template <typename In, typename S>
__device__ __forceinline__ void horn_first(Extent ext, const In* x, u32 shift, S* dst) {
    u64 n = extent_n(ext);
    REAP_GRID_STRIDE(k, n) {
        S v = (S)reap_shifted(x, k, shift);
        if (k >= 1) v += (S)reap_shifted(x, k - 1, shift);
        dst[k] = v;
    }
}

// Passes that n values need: ceil(log2 n), and at least the first.
__device__ __forceinline__ u32 horn_passes(u64 n) { return n <= 1 ? 1u : 64u - (u32)__clzll((long long)(n - 1)); }

// Every later pass (002 Algorithm 2, one iteration): offset 2^p to the left,
// pass p of the `passes` the host launched. A pass with 2^p >= n is one the
// device length does not need (a counted call's passes are sized from the
// capacity): the scan is already complete in one of the two buffers. The host
// ordered the buffers so that the last pass writes the output; the real passes
// stopped an even number of passes short of it, and nothing moves, or an odd
// number, and the last pass copies the scan over.
template <typename S>
__device__ __forceinline__ void horn_pass(Extent ext, const S* src, S* dst, u64 offset, u32 passes) {
    u64 n = extent_n(ext);
    if (offset >= n) {
        u32 p = 63u - (u32)__clzll((long long)offset);
        if (p + 1 != passes || (passes - horn_passes(n)) % 2 == 0) return;
        REAP_GRID_STRIDE(k, n) dst[k] = src[k];
        return;
    }
    REAP_GRID_STRIDE(k, n) dst[k] = k >= offset ? src[k] + src[k - offset] : src[k];
}

// An exclusive scan's total: its last prefix plus the last input (0 for none).
template <typename T>
__device__ __forceinline__ void horn_total(Extent ext, const T* in, const T* out, u64* total) {
    u64 n = extent_n(ext);
    if (blockIdx.x == 0 && threadIdx.x == 0) *total = n ? (u64)(T)(out[n - 1] + in[n - 1]) : 0;
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
__device__ __forceinline__ void horn_gather(Extent ext, const Elem* in, const S* sum, Elem* out, u64* count,
                                            u32 split) {
    u64 n = extent_n(ext);
    u64 kept = n ? (u64)sum[n - 1] : 0;
    REAP_GRID_STRIDE(j, n) {
        if (j < kept) out[j] = in[horn_search<S, false>(n, sum, j)];
        else if (split) out[j] = in[horn_search<S, true>(n, sum, j - kept)];
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *count = kept;
}

#define HORN_FIRST(IN, S)                                                                                  \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                              \
        horn_first_##IN##_##S(Extent ext, const IN* x, u32 shift, S* dst) {                              \
        horn_first<IN, S>(ext, x, shift, dst);                                                             \
    }
#define HORN_SUM(S)                                                                                        \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                              \
        horn_pass_##S(Extent ext, const S* src, S* dst, u64 offset, u32 passes) {                          \
        horn_pass<S>(ext, src, dst, offset, passes);                                                       \
    }                                                                                                      \
    extern "C" __global__ void horn_total_##S(Extent ext, const S* in, const S* out, u64* total) {         \
        horn_total<S>(ext, in, out, total);                                                                \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                              \
        horn_gather_##S(Extent ext, const Elem* in, const S* sum, Elem* out, u64* count, u32 split) {      \
        horn_gather<S>(ext, in, sum, out, count, split);                                                   \
    }

HORN_FIRST(u32, u32)
HORN_FIRST(u32, u64)
HORN_FIRST(u64, u64)
HORN_SUM(u32)
HORN_SUM(u64)
