// `roger`: the hierarchical stream reduction of seed 003 §III (Roger,
// Assarsson, Holzschuch 2007).
//
// The stream is cut into blocks of s = REAP_S elements (64 in 003 §V-A); a
// CUDA block of s threads (rounded up to whole warps) stands for one, looping
// when there are more than the grid holds. Per block: pSum, the empty
// elements at or before each element (§III-B1, "sum inside blocks"); then
// one thread per output position runs the improved dichotomic search of
// Fig. 5 to gather the block's kept elements to its front (§III-B2). A scan
// of the blocks' empty counts (blelloch.cu, §III-C "global sum") gives each
// block's displacement, and the concatenation moves every block's run into
// place, the work the paper does by line drawing.
//
// Grids are sized from the capacity's blocks; the kernels loop over the
// device length's. A counted call's global sum covers a derived length, the
// number of blocks, which roger_sum_inside_blocks leaves in a device word.
#include "common.cuh"

#ifndef REAP_S
#define REAP_S 64
#endif
#define THREADS ((REAP_S + 31) / 32 * 32)
#define WARPS (THREADS / 32)

// 003 Fig. 5: in a block of `len` elements whose unwanted elements through j
// number p(j), the wanted element j_i with j_i - p(j_i) = i; -1 when fewer
// than i + 1 are wanted. j - p(j) is non-decreasing and contracting
// (|j - j_i| >= |j - p(j) - i|), so each probe both halves the interval and
// moves the far bound by its miss. REJECTED searches for the unwanted
// elements instead: the kept ones through j, j + 1 - pSum[j], play pSum's part.
template <bool REJECTED>
__device__ __forceinline__ int roger_search(int len, const u32* psum, const u32* flag, int i) {
    auto p = [&](int j) { return REJECTED ? j + 1 - (int)psum[j] : (int)psum[j]; };
    auto wanted = [&](int j) { return REJECTED ? flag[j] == 0 : flag[j] != 0; };
    int lower = i + p(i);
    int upper = i + p(len - 1);
    if (upper > len - 1) return -1;  // no element at position i
    int j = (lower + upper) / 2;
    int found = j - p(j) - i;
    // found == 0 at an unwanted j means j_i lies to the left (j - p(j) only
    // reaches i there after passing j_i), hence max(1, found).
    while (found != 0 || !wanted(j)) {
        if (found < 0) lower = j - found;
        else upper = j - max(1, found);
        j = (lower + upper) / 2;
        found = j - p(j) - i;
    }
    return j;
}

// Elements of block `blk` (n > blk * REAP_S).
__device__ __forceinline__ u32 roger_len(u64 n, u64 blk) {
    return (u32)min((u64)REAP_S, n - blk * REAP_S);
}

// Sum inside blocks: psum[i] = empty elements of i's block at or before i,
// and counts[blk] = the block's empty elements (its last pSum term). The
// scan is by warp shuffles, where the paper's fragments ran Blelloch's [5].
template <typename S>
__device__ __forceinline__ void roger_sum_inside_blocks(Extent ext, const u32* flags, u32* psum, S* counts,
                                                        u64* blocks_len) {
    __shared__ u32 s_warp[WARPS];
    u64 n = extent_n(ext);
    u32 t = threadIdx.x, warp = t >> 5;
    u64 blocks = n / REAP_S + (n % REAP_S != 0);
    // The global sum's length: read by the launches after this one.
    if (blocks_len && blockIdx.x == 0 && t == 0) *blocks_len = blocks;
    for (u64 blk = blockIdx.x; blk < blocks; blk += gridDim.x) {  // uniform per block
        u32 len = roger_len(n, blk);
        u64 i = blk * REAP_S + t;
        // Every lane of every warp takes part in the shuffles; padding counts 0.
        u32 empty = t < len && flags[i] == 0 ? 1u : 0u;
        u32 incl = reap_warp_inclusive(empty);
        if (reap_lane() == 31) s_warp[warp] = incl;
        __syncthreads();
        u32 before, total;
        reap_warp_totals<WARPS>(s_warp, warp, before, total);
        if (t < len) psum[i] = before + incl;
        if (t == 0) counts[blk] = (S)total;
        __syncthreads();  // the next block overwrites s_warp
    }
}

// Dichotomic search: thread i of a block gathers the element for position i
// of its reduced block: kept elements first, then (split) rejected ones.
// pSum and flags are staged in shared memory, the texture the paper reads.
__device__ __forceinline__ void roger_gather_blocks(Extent ext, const Elem* in, const u32* flags, const u32* psum,
                                                    Elem* reduced, u32 split) {
    __shared__ u32 s_psum[REAP_S], s_flag[REAP_S];
    u64 n = extent_n(ext);
    int t = threadIdx.x;
    u64 blocks = n / REAP_S + (n % REAP_S != 0);
    for (u64 blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
        u64 base = blk * REAP_S;
        int len = (int)roger_len(n, blk);
        if (t < len) {
            s_psum[t] = psum[base + t];
            s_flag[t] = flags[base + t];
        }
        __syncthreads();
        int kept = len - (int)s_psum[len - 1];
        int j = -1;
        if (t < kept) j = roger_search<false>(len, s_psum, s_flag, t);
        else if (split && t < len) j = roger_search<true>(len, s_psum, s_flag, t - kept);
        if (j >= 0) reduced[base + t] = in[base + j];
        __syncthreads();  // the next block overwrites the staging
    }
}

// Concatenation: thread k of a block moves element k of its reduced block,
// the segment the paper draws as a line. The kept run starts after the kept
// elements of the blocks before it (blk * s - empty_before); with split, the
// rejected run after all kept elements and the rejected ones before it.
template <typename S>
__device__ __forceinline__ void roger_concatenation(Extent ext, const Elem* reduced, const S* counts,
                                                    const S* empty_before, const u64* empty_total, Elem* out,
                                                    u64* count, u32 split) {
    u64 n = extent_n(ext);
    u64 kept = n - *empty_total;
    u32 k = threadIdx.x;
    u64 blocks = n / REAP_S + (n % REAP_S != 0);
    for (u64 blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
        u64 base = blk * REAP_S, before = (u64)empty_before[blk];
        u32 len = roger_len(n, blk), block_kept = len - (u32)counts[blk];
        if (k < block_kept) out[base - before + k] = reduced[base + k];
        else if (split && k < len) out[kept + before + (k - block_kept)] = reduced[base + k];
    }
    if (blockIdx.x == 0 && k == 0) *count = kept;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    roger_dichotomic_search(Extent ext, const Elem* in, const u32* flags, const u32* psum, Elem* reduced, u32 split) {
    roger_gather_blocks(ext, in, flags, psum, reduced, split);
}

#define ROGER_SUM(S)                                                                                        \
    extern "C" __global__ void __launch_bounds__(THREADS)                                                  \
        roger_sum_inside_blocks_##S(Extent ext, const u32* flags, u32* psum, S* counts, u64* blocks_len) {  \
        roger_sum_inside_blocks<S>(ext, flags, psum, counts, blocks_len);                                   \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(THREADS)                                                  \
        roger_concatenation_##S(Extent ext, const Elem* reduced, const S* counts, const S* empty_before,    \
                                const u64* empty_total, Elem* out, u64* count, u32 split) {                 \
        roger_concatenation<S>(ext, reduced, counts, empty_before, empty_total, out, count, split);          \
    }

ROGER_SUM(u32)
ROGER_SUM(u64)
