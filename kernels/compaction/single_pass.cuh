// Single-pass compaction, partition and scan over tiles with dynamic tile
// ids: the machinery `lookback.cu` and `chained.cu` share. They differ only in
// how a tile learns the prefix of the tiles before it (the PrefixProtocol).
//
// A tile is BLOCK threads x VECS 16-byte vectors each. Loads are warp-striped:
// vector j of lane l in warp w is vector (w*VECS + j)*32 + l of the tile, so
// every load instruction of a warp reads 512 contiguous bytes. Kept elements
// are staged in shared memory at their tile-local rank and written out
// contiguously after the prefix arrives, so stores coalesce too.
#pragma once
#include "common.cuh"

#ifndef REAP_BLOCK
#define REAP_BLOCK 256
#endif
#ifndef REAP_VECS
#define REAP_VECS 4
#endif
#define WARPS (REAP_BLOCK / 32)
#define ITEMS (REAP_VECS * REAP_VEC)
#define TILE (REAP_BLOCK * ITEMS)

// Tile status in the top two bits of a 64-bit word; the value below.
#define ST_INVALID 0ull
#define ST_AGGREGATE 1ull
#define ST_PREFIX 2ull
#define ST_SHIFT 62
#define ST_VALUE(w) ((w) & ((1ull << ST_SHIFT) - 1))
#define ST_STATUS(w) ((w) >> ST_SHIFT)

union Vec16 {
    uint4 v;
    Elem e[REAP_VEC];
};

// Element index (tile-local) of item (j, e) of this thread.
__device__ __forceinline__ u32 item_index(u32 j, u32 e) {
    u32 warp = threadIdx.x >> 5;
    return ((warp * REAP_VECS + j) * 32 + reap_lane()) * REAP_VEC + e;
}

// Loads this thread's items of the tile at `base` (global element index).
// Full tiles use 16-byte loads; the last, partial tile loads element by element.
__device__ __forceinline__ void load_tile(const Elem* in, u64 base, u64 n, Elem (&x)[REAP_VECS][REAP_VEC]) {
    if (base + TILE <= n) {
        const uint4* in4 = reinterpret_cast<const uint4*>(in + base);
#pragma unroll
        for (u32 j = 0; j < REAP_VECS; j++) {
            Vec16 u;
            u.v = __ldg(in4 + item_index(j, 0) / REAP_VEC);
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++) x[j][e] = u.e[e];
        }
    } else {
#pragma unroll
        for (u32 j = 0; j < REAP_VECS; j++)
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++) {
                u64 i = base + item_index(j, e);
                if (i < n) x[j][e] = in[i];
            }
    }
}

// Tile-local exclusive ranks of `v` (a count or a value per item) in memory
// order, and the tile's total. Row j of a warp covers 32 lanes x REAP_VEC items.
template <typename T>
__device__ __forceinline__ T rank_tile(const T (&v)[REAP_VECS][REAP_VEC], T (&rank)[REAP_VECS][REAP_VEC],
                                       T* warp_totals) {
    T carry = 0;
#pragma unroll
    for (u32 j = 0; j < REAP_VECS; j++) {
        T mine = 0;
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) mine += v[j][e];
        T incl = reap_warp_inclusive(mine);
        T run = carry + incl - mine;
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) {
            rank[j][e] = run;
            run += v[j][e];
        }
        carry += __shfl_sync(0xffffffffu, incl, 31);
    }
    u32 warp = threadIdx.x >> 5;
    if (reap_lane() == 31) warp_totals[warp] = carry;
    __syncthreads();
    T before = 0, total = 0;
#pragma unroll
    for (u32 w = 0; w < WARPS; w++) {
        T t = warp_totals[w];
        if (w < warp) before += t;
        total += t;
    }
#pragma unroll
    for (u32 j = 0; j < REAP_VECS; j++)
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) rank[j][e] += before;
    return total;
}

// Takes the next tile id. Ids are handed out in launch order, so a tile only
// ever waits on tiles that are already running: no deadlock, whatever the
// hardware schedules.
__device__ __forceinline__ u32 next_tile(u32* counter) {
    __shared__ u32 s_tile;
    if (threadIdx.x == 0) s_tile = atomicAdd(counter, 1u);
    __syncthreads();
    return s_tile;
}

// The exclusive prefix of `tile` given its aggregate; called by all threads,
// the protocol's work done by warp 0. Counts fit the 62-bit value field.
template <typename Protocol>
__device__ __forceinline__ u64 tile_prefix(u64* state, u32 tile, u64 aggregate) {
    __shared__ u64 s_prefix;
    if (threadIdx.x < 32) {
        u64 prefix = Protocol::prefix(state, tile, aggregate);
        if (threadIdx.x == 0) s_prefix = prefix;
    }
    __syncthreads();
    return s_prefix;
}

// Compaction (and, with PARTITION, stream split) of one tile.
template <typename Protocol, bool PARTITION>
__device__ __forceinline__ void compact_tile(u64 n, const Elem* in, KeepArgs keep, Elem* out, u64* count,
                                             u64* state, u32* counter, const u64* kept_total) {
    __shared__ Elem s_out[TILE];
    __shared__ u32 s_warp[WARPS];
    u32 tile = next_tile(counter);
    u64 base = (u64)tile * TILE;

    Elem x[REAP_VECS][REAP_VEC];
    u32 f[REAP_VECS][REAP_VEC], r[REAP_VECS][REAP_VEC];
    load_tile(in, base, n, x);
#pragma unroll
    for (u32 j = 0; j < REAP_VECS; j++)
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) {
            u64 i = base + item_index(j, e);
            f[j][e] = (i < n && reap_keep(x[j][e], i, keep)) ? 1u : 0u;
        }
    u32 kept = rank_tile<u32>(f, r, s_warp);
    u32 valid = (u32)min((u64)TILE, n - base);

    // Stage before the prefix is known: the look-back's latency hides behind it.
#pragma unroll
    for (u32 j = 0; j < REAP_VECS; j++)
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) {
            u32 li = item_index(j, e);
            if (f[j][e]) {
                s_out[r[j][e]] = x[j][e];
            } else if (PARTITION && li < valid) {
                s_out[kept + li - r[j][e]] = x[j][e];
            }
        }
    u64 prefix = tile_prefix<Protocol>(state, tile, kept);

    for (u32 i = threadIdx.x; i < kept; i += REAP_BLOCK) out[prefix + i] = s_out[i];
    if (PARTITION) {
        // Rejected elements before this tile: base - prefix.
        u64 rej = *kept_total + base - prefix;
        for (u32 i = kept + threadIdx.x; i < valid; i += REAP_BLOCK) out[rej + i - kept] = s_out[i];
    }
    if (base + TILE >= n && threadIdx.x == 0) *count = prefix + kept;
}

// Counts survivors (partition needs the kept total before it places the
// rejected half). Grid-stride; one atomic per block.
__device__ __forceinline__ void count_kept(u64 n, const Elem* in, KeepArgs keep, u64* total) {
    __shared__ u32 s_warp[WARPS];
    u64 c = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        c += reap_keep(in[i], i, keep) ? 1 : 0;
    u32 w = __reduce_add_sync(0xffffffffu, (u32)c);
    if (reap_lane() == 0) s_warp[threadIdx.x >> 5] = w;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 s = 0;
        for (u32 i = 0; i < WARPS; i++) s += s_warp[i];
        if (s) atomicAdd(total, s);
    }
}

#if REAP_ELEM_BYTES != 16
// Exclusive scan of one tile of u32 or u64 values. Values can use all 64
// bits, so status and value live in separate words here: the value is written
// first and the flag released after it; readers acquire the flag first.
template <typename Protocol>
__device__ __forceinline__ void scan_tile(u64 n, const Elem* in, Elem* out, u64* total, u32* flags, u64* values,
                                          u32* counter) {
    __shared__ Elem s_warp[WARPS];
    u32 tile = next_tile(counter);
    u64 base = (u64)tile * TILE;
    Elem x[REAP_VECS][REAP_VEC], r[REAP_VECS][REAP_VEC];
    load_tile(in, base, n, x);
#pragma unroll
    for (u32 j = 0; j < REAP_VECS; j++)
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++)
            if (base + item_index(j, e) >= n) x[j][e] = 0;
    Elem agg = rank_tile<Elem>(x, r, s_warp);
    __shared__ Elem s_prefix;
    if (threadIdx.x < 32) {
        Elem p = Protocol::scan_prefix(flags, values, tile, agg);
        if (threadIdx.x == 0) s_prefix = p;
    }
    __syncthreads();
    Elem prefix = s_prefix;
#pragma unroll
    for (u32 j = 0; j < REAP_VECS; j++)
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) {
            u64 i = base + item_index(j, e);
            if (i < n) out[i] = prefix + r[j][e];
        }
    if (base + TILE >= n && threadIdx.x == 0) *total = (u64)(Elem)(prefix + agg);
}
#endif

// Entry points, stamped out per protocol.
#if REAP_ELEM_BYTES != 16
#define REAP_SCAN_ENTRY(NAME, PROTOCOL)                                                                  \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                            \
        NAME##_scan(u64 n, const Elem* in, Elem* out, u64* total, u32* flags, u64* values, u32* counter) { \
        scan_tile<PROTOCOL>(n, in, out, total, flags, values, counter);                                  \
    }
#else
#define REAP_SCAN_ENTRY(NAME, PROTOCOL)
#endif

#define REAP_SINGLE_PASS_ENTRIES(NAME, PROTOCOL)                                                          \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                             \
        NAME##_select(u64 n, const Elem* in, KeepArgs keep, Elem* out, u64* count, u64* state, u32* counter) { \
        compact_tile<PROTOCOL, false>(n, in, keep, out, count, state, counter, nullptr);                  \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                             \
        NAME##_partition(u64 n, const Elem* in, KeepArgs keep, Elem* out, u64* count, u64* state, u32* counter, \
                         const u64* kept_total) {                                                         \
        compact_tile<PROTOCOL, true>(n, in, keep, out, count, state, counter, kept_total);                \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                             \
        NAME##_count(u64 n, const Elem* in, KeepArgs keep, u64* total) {                                  \
        count_kept(n, in, keep, total);                                                                   \
    }                                                                                                     \
    REAP_SCAN_ENTRY(NAME, PROTOCOL)
