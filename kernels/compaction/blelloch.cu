// `blelloch`: scan-then-scatter compaction on Blelloch's work-efficient
// scan, multi-level as seed 001 modules 10.3-10.4 build it (002 §2.3 names
// the two sweeps); what CUDPP did (seed 000 Table 3).
//
// A tile is 2 * REAP_BLOCK values, one block's shared memory, the section of
// 001's kernel. The up-sweep runs 001's reduction phase on every tile of a
// level, writes the partial-sum tree back in place and each tile's total to
// the level above, level by level until one tile holds all. The down-sweep
// then walks back down: each tile reloads its tree, takes its exclusive
// prefix from the finished level above as the root and runs Blelloch's
// exclusive down-sweep (swap and add), leaving the exclusive scan of all n.
// Levels are separate launches: a tile reads sums that other blocks write.
//
// The host launches the levels of the capacity's tree; each kernel works out
// from the device length which levels n's tree has (a counted call's n may
// have fewer), returns at once above its top, and treats its top as the top:
// the one tile whose total is the count.
#include "common.cuh"

#ifndef REAP_BLOCK
#define REAP_BLOCK 256
#endif
#define TILE (2 * REAP_BLOCK)

// The top level of the tree over n leaves: level l + 1 holds one sum per
// tile of level l, up to the first level that fits one tile.
__device__ __forceinline__ u32 blelloch_top(u64 n) {
    u32 top = 0;
    for (u64 m = n; m > TILE; m = (m + TILE - 1) / TILE) top++;
    return top;
}

// Values at level l of the tree over n leaves.
__device__ __forceinline__ u64 blelloch_len(u64 n, u32 l) {
    for (u32 i = 0; i < l; i++) n = (n + TILE - 1) / TILE;
    return n;
}

// Up-sweep of one level of m values: `tree` (which may be `src`: a tile
// reads all of its values before writing any) gets each tile's partial sums,
// `sums[tile]` its total; at the top (one tile) `count` gets the total instead.
// Values past m are zeros, so a short last tile's total is still exact, and
// a top of no values (n = 0) still writes its count, 0.
template <typename In, typename S>
__device__ __forceinline__ void blelloch_up_sweep(Extent ext, u32 level, const In* src, S* tree, S* sums,
                                                  u64* count) {
    __shared__ S xy[TILE];
    u64 n = extent_n(ext);
    u32 top = blelloch_top(n);
    if (level > top) return;  // whole grid: n's tree is lower than the capacity's
    u64 m = blelloch_len(n, level);
    u32 t = threadIdx.x;
    u64 tiles = level == top ? 1 : m / TILE + (m % TILE != 0);
    if (level == top) sums = nullptr;
    else count = nullptr;
    for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {  // uniform per block
        u64 start = tile * TILE;
        xy[t] = start + t < m ? (S)src[start + t] : (S)0;
        xy[t + REAP_BLOCK] = start + REAP_BLOCK + t < m ? (S)src[start + REAP_BLOCK + t] : (S)0;
        __syncthreads();
        // 001 mod. 10.3's reduction phase: slot (t+1)*2*stride - 1 adds the slot stride to its left.
        for (u32 stride = 1; stride <= REAP_BLOCK; stride *= 2) {
            u32 index = (t + 1) * stride * 2 - 1;
            if (index < TILE) xy[index] += xy[index - stride];
            __syncthreads();
        }
        if (start + t < m) tree[start + t] = xy[t];
        if (start + REAP_BLOCK + t < m) tree[start + REAP_BLOCK + t] = xy[t + REAP_BLOCK];
        if (t == 0) {
            if (sums) sums[tile] = xy[TILE - 1];
            if (count) *count = (u64)xy[TILE - 1];
        }
        __syncthreads();  // the next tile overwrites xy
    }
}

// Down-sweep of one level: `tree` holds the up-sweep's partial sums and
// becomes the exclusive scan; `prefix[tile]` (ignored at the top: 0) is what
// precedes each tile. Slots past m reload as zeros: the sweep carries them
// only into slots past m, which are not written back.
template <typename S>
__device__ __forceinline__ void blelloch_down_sweep(Extent ext, u32 level, S* tree, const S* prefix) {
    __shared__ S xy[TILE];
    u64 n = extent_n(ext);
    u32 top = blelloch_top(n);
    if (level > top) return;
    u64 m = blelloch_len(n, level);
    if (level == top) prefix = nullptr;
    u32 t = threadIdx.x;
    u64 tiles = m / TILE + (m % TILE != 0);
    for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        u64 start = tile * TILE;
        xy[t] = start + t < m ? tree[start + t] : (S)0;
        xy[t + REAP_BLOCK] = start + REAP_BLOCK + t < m ? tree[start + REAP_BLOCK + t] : (S)0;
        // The root becomes the tile's prefix; the thread that loaded it replaces it.
        if (t == REAP_BLOCK - 1) xy[TILE - 1] = prefix ? prefix[tile] : (S)0;
        __syncthreads();
        for (u32 stride = REAP_BLOCK; stride >= 1; stride /= 2) {
            u32 index = (t + 1) * stride * 2 - 1;
            if (index < TILE) {
                S left = xy[index - stride];
                xy[index - stride] = xy[index];
                xy[index] += left;
            }
            __syncthreads();
        }
        if (start + t < m) tree[start + t] = xy[t];
        if (start + REAP_BLOCK + t < m) tree[start + REAP_BLOCK + t] = xy[t + REAP_BLOCK];
        __syncthreads();  // the next tile overwrites xy
    }
}

// Each element moves itself to its offset: kept ones to offsets[i], rejected
// ones (with split) after all kept ones, to kept + (i - offsets[i]).
template <typename S>
__device__ __forceinline__ void blelloch_scatter(Extent ext, const Elem* in, const u32* flags, const S* offsets,
                                                 const u64* count, Elem* out, u32 split) {
    u64 n = extent_n(ext);
    u64 kept = *count;
    REAP_GRID_STRIDE(i, n) {
        u64 before = (u64)offsets[i];
        if (flags[i]) out[before] = in[i];
        else if (split) out[kept + i - before] = in[i];
    }
}

#define BLELLOCH_UP_SWEEP(IN, S)                                                                           \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                              \
        blelloch_up_sweep_##IN##_##S(Extent ext, u32 level, const IN* src, S* tree, S* sums, u64* count) { \
        blelloch_up_sweep<IN, S>(ext, level, src, tree, sums, count);                                      \
    }
#define BLELLOCH_SUM(S)                                                                                    \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                              \
        blelloch_down_sweep_##S(Extent ext, u32 level, S* tree, const S* prefix) {                         \
        blelloch_down_sweep<S>(ext, level, tree, prefix);                                                  \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK) blelloch_scatter_##S(                         \
        Extent ext, const Elem* in, const u32* flags, const S* offsets, const u64* count, Elem* out,       \
        u32 split) {                                                                                       \
        blelloch_scatter<S>(ext, in, flags, offsets, count, out, split);                                   \
    }

BLELLOCH_UP_SWEEP(u32, u32)
BLELLOCH_UP_SWEEP(u32, u64)
BLELLOCH_UP_SWEEP(u64, u64)
BLELLOCH_SUM(u32)
BLELLOCH_SUM(u64)
