// Single-pass compaction, partition and scan over tiles with dynamic tile
// ids: the machinery `lookback.cu` and `chained.cu` share. They differ only in
// how a tile learns the prefix of the tiles before it (the PrefixProtocol).
//
// A tile is BLOCK threads x VECS 16-byte vectors each, which a thread loads
// as UNITS Vecs (common.cuh: 16 bytes, or one 32-byte element). Every load
// instruction of a warp reads 32 contiguous Vecs; which items a thread then holds is the
// load style (REAP_LOAD, `LoadStyle` in src/compaction/cuda/single_pass.rs):
// - vectorised: warp-striped, vector j of lane l in warp w is vector
//   (w*VECS + j)*32 + l of the tile, straight into registers;
// - warp-transposed (CUB's BLOCK_LOAD_WARP_TRANSPOSE): the warp's segment goes
//   through shared memory so that lane l holds the warp's vectors l*VECS ..
//   l*VECS + VECS-1, consecutive items, ranked by one warp scan per tile.
// Kept elements are staged in shared memory at their tile-local rank and
// written out contiguously after the prefix arrives, so stores coalesce too.
#pragma once
#include "common.cuh"

#ifndef REAP_BLOCK
#define REAP_BLOCK 256
#endif
#ifndef REAP_VECS
#define REAP_VECS 4
#endif
#define REAP_LOAD_VECTORISED 0
#define REAP_LOAD_WARP_TRANSPOSED 1
// Bulk copies into a ring of tiles in shared memory (sm_90, single_pass_ring.cuh);
// the items are then read warp-striped, as the vectorised style holds them.
#define REAP_LOAD_BULK_ASYNC 2
#ifndef REAP_LOAD
#define REAP_LOAD REAP_LOAD_VECTORISED
#endif
#define WARPS (REAP_BLOCK / 32)
// The bulk-async ring adds a warp that only draws tiles and looks back
// (single_pass_ring.cuh), so the block has REAP_THREADS threads; the tile's
// REAP_BLOCK threads synchronise among themselves (tile_sync) while it waits.
#if REAP_LOAD == REAP_LOAD_BULK_ASYNC
#define REAP_THREADS (REAP_BLOCK + 32)
__device__ __forceinline__ void tile_sync() { asm volatile("bar.sync 1, %0;" ::"n"(REAP_BLOCK) : "memory"); }
#else
#define REAP_THREADS REAP_BLOCK
__device__ __forceinline__ void tile_sync() { __syncthreads(); }
#endif
// Vecs a thread loads per tile (REAP_VECS counts 16-byte vectors, as the host's Shape does).
#define UNITS (REAP_VECS * 16 / REAP_VEC_BYTES)
static_assert(UNITS * REAP_VEC_BYTES == REAP_VECS * 16, "a thread loads whole elements");
#define ITEMS (UNITS * REAP_VEC)
#define TILE (REAP_BLOCK * ITEMS)

// Warp-transposed staging: a warp's 32*UNITS Vecs, one padding Vec
// after every 8 so that lanes reading UNITS-strided Vecs hit distinct banks.
#define STAGE_PAD(i) ((i) + (i) / 8)
#define STAGE_WARP_VECS (36 * UNITS)
#if REAP_LOAD == REAP_LOAD_WARP_TRANSPOSED
#define STAGE_VECS (WARPS * STAGE_WARP_VECS)
#else
#define STAGE_VECS 1
#endif

union VecItems {
    Vec v;
    Elem e[REAP_VEC];
};

// Element index (tile-local) of item (j, e) of this thread.
__device__ __forceinline__ u32 item_index(u32 j, u32 e) {
    u32 warp = threadIdx.x >> 5;
#if REAP_LOAD == REAP_LOAD_WARP_TRANSPOSED
    return ((warp * 32 + reap_lane()) * UNITS + j) * REAP_VEC + e;
#else
    return ((warp * UNITS + j) * 32 + reap_lane()) * REAP_VEC + e;
#endif
}

// Loads this thread's items of the tile at `base` (global element index).
// Full tiles use Vec loads; the last, partial tile loads element by element.
// `stage` holds STAGE_VECS Vecs; only the warp-transposed load uses it, and
// only the warp's own part, so a warp barrier orders it.
__device__ __forceinline__ void load_tile(const Elem* in, u64 base, u64 n, Elem (&x)[UNITS][REAP_VEC],
                                          Vec* stage) {
    if (base + TILE <= n) {
        const Vec* in4 = reinterpret_cast<const Vec*>(in + base);
#if REAP_LOAD == REAP_LOAD_WARP_TRANSPOSED
        u32 warp = threadIdx.x >> 5, lane = reap_lane();
        const Vec* seg = in4 + warp * 32 * UNITS;
        Vec* mine = stage + warp * STAGE_WARP_VECS;
#pragma unroll
        for (u32 j = 0; j < UNITS; j++) mine[STAGE_PAD(j * 32 + lane)] = reap_ldg(seg + j * 32 + lane);
        __syncwarp();
#pragma unroll
        for (u32 j = 0; j < UNITS; j++) {
            VecItems u;
            u.v = mine[STAGE_PAD(lane * UNITS + j)];
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++) x[j][e] = u.e[e];
        }
        // The warp's next write of its stage must follow every lane's read.
        __syncwarp();
#else
#pragma unroll
        for (u32 j = 0; j < UNITS; j++) {
            VecItems u;
            u.v = reap_ldg(in4 + item_index(j, 0) / REAP_VEC);
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++) x[j][e] = u.e[e];
        }
#endif
    } else {
#pragma unroll
        for (u32 j = 0; j < UNITS; j++)
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++) {
                u64 i = base + item_index(j, e);
                if (i < n) x[j][e] = in[i];
            }
    }
}

// Tile-local exclusive ranks of `v` (a count or a value per item) in memory
// order, and the tile's total. Vectorised: row j of a warp covers 32 lanes x
// REAP_VEC items. Warp-transposed: a lane's items are consecutive.
template <typename T>
__device__ __forceinline__ T rank_tile(const T (&v)[UNITS][REAP_VEC], T (&rank)[UNITS][REAP_VEC],
                                       T* warp_totals) {
    T carry = 0;
#if REAP_LOAD == REAP_LOAD_WARP_TRANSPOSED
    T mine = 0;
#pragma unroll
    for (u32 j = 0; j < UNITS; j++)
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) mine += v[j][e];
    T incl = reap_warp_inclusive(mine);
    T run = incl - mine;
#pragma unroll
    for (u32 j = 0; j < UNITS; j++)
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) {
            rank[j][e] = run;
            run += v[j][e];
        }
    carry = __shfl_sync(0xffffffffu, incl, 31);
#else
#pragma unroll
    for (u32 j = 0; j < UNITS; j++) {
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
#endif
    u32 warp = threadIdx.x >> 5;
    if (reap_lane() == 31) warp_totals[warp] = carry;
    tile_sync();
    T before, total;
    reap_warp_totals<WARPS>(warp_totals, warp, before, total);
#pragma unroll
    for (u32 j = 0; j < UNITS; j++)
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) rank[j][e] += before;
    return total;
}

// Takes the next tile id. Ids are handed out in the order blocks ask, so a
// tile only ever waits on tiles whose blocks are already running: no
// deadlock, whatever the hardware schedules. The caller knows how many draws
// a launch makes; the block with the final one (`last_draw`) rewinds the
// counter for the next call, so no call clears it first. Ends with a
// barrier, which also separates a persistent block's loop iterations.
__device__ __forceinline__ u32 next_tile(u32* counter, u32 last_draw) {
    __shared__ u32 s_tile;
    if (threadIdx.x == 0) {
        u32 t = atomicAdd(counter, 1u);
        if (t == last_draw) atomicExch(counter, 0u);
        s_tile = t;
    }
    __syncthreads();
    return s_tile;
}

// The tile's exclusive prefix, to every thread. PUBLISHED: the tile's
// aggregate is already out (Protocol::publish), only the walk remains.
template <typename Protocol, bool PUBLISHED = false>
__device__ __forceinline__ u64 tile_prefix(u64* state, u32 tile, u64 aggregate, u32 epoch) {
    __shared__ u64 s_prefix;
    if (threadIdx.x < 32) {
        u64 prefix = PUBLISHED ? Protocol::resolve(state, tile, aggregate, epoch)
                               : Protocol::prefix(state, tile, aggregate, epoch);
        if (threadIdx.x == 0) s_prefix = prefix;
    }
    __syncthreads();
    return s_prefix;
}

// What a compaction writes: the kept elements (select), or also the rejected
// ones after them, in input order (the host counts the kept total first) or
// reversed from the end of the output (CUB's contract; no count needed).
#define SPLIT_NONE 0
#define SPLIT_IN_ORDER 1
#define SPLIT_REVERSED 2

// Ranks one loaded tile and stages it in s_out: kept elements at their
// tile-local rank, and with a SPLIT the rejected ones after them, in order.
// Returns the tile's kept count. Each thread's keep flags are a bit mask per
// row (its j-th vector). Vectorised: one warp scan of the rows' counts packed
// 8 bits apiece (a row of a warp holds at most 128 items) ranks every item.
// Warp-transposed: one warp scan of each lane's count, its rows following
// each other. s_out may be the tile's own input: every thread has read its
// items before the barrier that precedes the first write.
// FULL: the tile lies wholly below n, so no item needs its index checked
// (a 64-bit compare an item, a quarter of the ranking's instructions).
template <int SPLIT, bool FULL>
__device__ __forceinline__ u32 stage_tile(u32 tile, const Elem (&x)[UNITS][REAP_VEC], u64 n,
                                          const KeepArgs& k, Elem* s_out, u32* s_warp) {
    u64 base = (u64)tile * TILE;
    u32 m[UNITS];
#pragma unroll
    for (u32 j = 0; j < UNITS; j++) {
        m[j] = 0;
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) {
            u64 i = base + item_index(j, e);
            if ((FULL || i < n) && reap_keep(x[j][e], i, k)) m[j] |= 1u << e;
        }
    }
    u32 warp = threadIdx.x >> 5;
    u32 row_base[UNITS];
    u32 wsum = 0;
#if REAP_LOAD == REAP_LOAD_WARP_TRANSPOSED
    u32 mine = 0;
#pragma unroll
    for (u32 j = 0; j < UNITS; j++) mine += __popc(m[j]);
    u32 lane_incl = reap_warp_inclusive(mine);
    wsum = __shfl_sync(0xffffffffu, lane_incl, 31);
    u32 run = lane_incl - mine;
#pragma unroll
    for (u32 j = 0; j < UNITS; j++) {
        row_base[j] = run;
        run += __popc(m[j]);
    }
#else
    static_assert(UNITS <= 8, "row counts are packed 8 bits each into 64 bits");
    u64 packed = 0;
#pragma unroll
    for (u32 j = 0; j < UNITS; j++) packed |= (u64)__popc(m[j]) << (8 * j);
    u64 incl = reap_warp_inclusive(packed);
    u64 wtot = __shfl_sync(0xffffffffu, incl, 31);
    u64 excl = incl - packed;
    // Rows of a warp are consecutive in memory: row j starts after rows < j.
#pragma unroll
    for (u32 j = 0; j < UNITS; j++) {
        row_base[j] = wsum + (u32)((excl >> (8 * j)) & 0xff);
        wsum += (u32)((wtot >> (8 * j)) & 0xff);
    }
#endif
    if (reap_lane() == 0) s_warp[warp] = wsum;
    tile_sync();
    u32 before, kept;
    reap_warp_totals<WARPS>(s_warp, warp, before, kept);
    u32 valid = FULL ? TILE : (u32)min((u64)TILE, n - base);

#pragma unroll
    for (u32 j = 0; j < UNITS; j++)
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) {
            u32 r = before + row_base[j] + __popc(m[j] & ((1u << e) - 1));
            if (m[j] & (1u << e)) {
                s_out[r] = x[j][e];
            } else if (SPLIT != SPLIT_NONE) {
                u32 li = item_index(j, e);
                if (FULL || li < valid) s_out[kept + li - r] = x[j][e];
            }
        }
    return kept;
}

// stage_tile for any tile: full tiles take the unchecked path.
template <int SPLIT>
__device__ __forceinline__ u32 stage_any_tile(u32 tile, const Elem (&x)[UNITS][REAP_VEC], u64 n,
                                              const KeepArgs& k, Elem* s_out, u32* s_warp) {
    if ((u64)tile * TILE + TILE <= n) return stage_tile<SPLIT, true>(tile, x, n, k, s_out, s_warp);
    return stage_tile<SPLIT, false>(tile, x, n, k, s_out, s_warp);
}

// Writes a staged tile (stage_tile) once its exclusive prefix is known; the
// caller has synchronised the block since the staging.
template <int SPLIT>
__device__ __forceinline__ void emit_tile(u32 tile, u32 tiles, u64 n, u32 kept, u64 prefix, Elem* out, u64* count,
                                          const u64* kept_total, const Elem* s_out) {
    u64 base = (u64)tile * TILE;
    u32 valid = (u32)min((u64)TILE, n - base);
#if REAP_ELEM_BYTES == 32
    // By 16-byte halves: a warp's loads and stores cover 512 dense bytes,
    // where whole elements would leave every other 16 bytes to a second pass.
    const uint4* s4 = reinterpret_cast<const uint4*>(s_out);
    uint4* out4 = reinterpret_cast<uint4*>(out);
    for (u32 i = threadIdx.x; i < 2 * kept; i += REAP_BLOCK) out4[2 * prefix + i] = s4[i];
#else
    for (u32 i = threadIdx.x; i < kept; i += REAP_BLOCK) out[prefix + i] = s_out[i];
#endif
    // Rejected elements before this tile: base - prefix.
    if (SPLIT == SPLIT_IN_ORDER) {
        u64 rej = *kept_total + base - prefix;
#if REAP_ELEM_BYTES == 32
        for (u32 i = 2 * kept + threadIdx.x; i < 2 * valid; i += REAP_BLOCK) out4[2 * (rej - kept) + i] = s4[i];
#else
        for (u32 i = kept + threadIdx.x; i < valid; i += REAP_BLOCK) out[rej + i - kept] = s_out[i];
#endif
    }
    if (SPLIT == SPLIT_REVERSED) {
        u64 last = n - 1 - (base - prefix);
        for (u32 i = kept + threadIdx.x; i < valid; i += REAP_BLOCK) out[last - (i - kept)] = s_out[i];
    }
    if (tile == tiles - 1 && threadIdx.x == 0) *count = prefix + kept;
}

// Compaction (and, with a SPLIT, stream split) of one loaded tile. Staged
// before the prefix is known, so the look-back's latency hides behind it.
template <typename Protocol, int SPLIT>
__device__ __forceinline__ void compact_one(u32 tile, u32 tiles, const Elem (&x)[UNITS][REAP_VEC], u64 n,
                                            const KeepArgs& k, Elem* out, u64* count, u64* state, u32 epoch,
                                            const u64* kept_total, Elem* s_out, u32* s_warp) {
    u32 kept = stage_any_tile<SPLIT>(tile, x, n, k, s_out, s_warp);
    u64 prefix = tile_prefix<Protocol>(state, tile, kept, epoch);
    emit_tile<SPLIT>(tile, tiles, n, kept, prefix, out, count, kept_total, s_out);
}

// Which tiles a launch covers. With a host length the grid is one block per
// tile and each block draws one id. A counted launch is at most the resident
// grid and each block draws ids until it draws one past the live tiles (a
// capacity-sized grid of empty blocks would cost tens of µs at 2^28): every
// block then makes exactly one draw past them, so the launch makes
// tiles + gridDim.x draws and knows its last one on the device. A block draws
// its next id only after finishing its tile, never prefetching (a persistent
// block that prefetched was measured 1.8x slower on an H200: the prefetched
// tile's aggregate is published only after the current tile is done, and
// look-backs queue behind it), so a tile only waits on tiles whose blocks
// are running.
struct TileLoop {
    u32 tiles;      // live tiles
    u32 last_draw;  // the id drawn last, by the block that rewinds the counter
    bool persistent;
};

__device__ __forceinline__ TileLoop tile_loop(const Extent& ext, u64 n) {
    TileLoop t;
    t.tiles = (u32)((n + TILE - 1) / TILE);
    t.persistent = ext.len != nullptr;
    // The host checks that tiles + grid of the capacity fit in 32 bits.
    t.last_draw = t.persistent ? t.tiles + gridDim.x - 1 : t.tiles - 1;
    return t;
}

__device__ __forceinline__ u32 following_tile(u32* counter, const TileLoop& t) {
    return t.persistent ? next_tile(counter, t.last_draw) : t.tiles;
}

#if REAP_LOAD == REAP_LOAD_BULK_ASYNC
#include "single_pass_ring.cuh"
#endif

template <typename Protocol, int SPLIT>
__device__ __forceinline__ void compact_tiles(Extent ext, const Elem* in, KeepArgs keep, Elem* out, u64* count,
                                              u64* state, u32* counter, u32 epoch, const u64* kept_total) {
#if REAP_LOAD == REAP_LOAD_BULK_ASYNC
    compact_ring<Protocol, SPLIT>(ext, in, keep, out, count, state, counter, epoch, kept_total);
#else
    // The tile's staging for the output; a warp-transposed load stages its
    // input in the same memory, which compact_one's first barrier frees.
    __shared__ Vec s_raw[STAGE_VECS > REAP_BLOCK * UNITS ? STAGE_VECS : REAP_BLOCK * UNITS];
    Elem* s_out = reinterpret_cast<Elem*>(s_raw);
    __shared__ u32 s_warp[WARPS];
    u64 n = extent_n(ext);
    TileLoop t = tile_loop(ext, n);
    // Parameters out of param space: a predicate takes their address, which
    // would otherwise spill the whole argument struct to local memory.
    KeepArgs k = keep;
    // next_tile's barrier also keeps the previous tile's reads of s_out and
    // s_warp ahead of the next tile's writes.
    for (u32 tile = next_tile(counter, t.last_draw); tile < t.tiles; tile = following_tile(counter, t)) {
        Elem x[UNITS][REAP_VEC];
        load_tile(in, (u64)tile * TILE, n, x, s_raw);
        compact_one<Protocol, SPLIT>(tile, t.tiles, x, n, k, out, count, state, epoch, kept_total, s_out, s_warp);
    }
#endif
}

// Counts survivors (partition needs the kept total before it places the
// rejected half). Grid-stride; one atomic per block.
__device__ __forceinline__ void count_kept(Extent ext, const Elem* in, KeepArgs keep, u64* total) {
    __shared__ u32 s_warp[WARPS];
    u64 n = extent_n(ext);
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

#if REAP_ELEM_BYTES <= 8
// The sum of a sharded scan's carry words (none: 0), wrapping as the scan does.
__device__ __forceinline__ Elem scan_carry(const u64* carry, u32 count) {
    Elem c = 0;
    for (u32 i = 0; i < count; i++) c += (Elem)carry[i];
    return c;
}

// Exclusive scan of one tile of u32 or u64 values. Values can use all 64
// bits, so status and value live in separate words here: the value is written
// first and the flag released after it; readers acquire the flag first.
// `carry` (count words, a sharded scan's totals of the ranks before this one)
// is added to every output; the total written is this call's own.
template <typename Protocol>
__device__ __forceinline__ void scan_tiles(Extent ext, const Elem* in, Elem* out, u64* total, u32* flags,
                                           u64* values, u32* counter, const u64* carry, u32 carry_count) {
    Elem c = scan_carry(carry, carry_count);
#if REAP_LOAD == REAP_LOAD_BULK_ASYNC
    scan_ring<Protocol>(ext, in, out, total, flags, values, counter, c);
#else
    __shared__ Elem s_warp[WARPS];
    __shared__ Elem s_prefix;
    __shared__ Vec s_stage[STAGE_VECS];
    u64 n = extent_n(ext);
    TileLoop t = tile_loop(ext, n);
    for (u32 tile = next_tile(counter, t.last_draw); tile < t.tiles; tile = following_tile(counter, t)) {
        u64 base = (u64)tile * TILE;
        Elem x[UNITS][REAP_VEC], r[UNITS][REAP_VEC];
        load_tile(in, base, n, x, s_stage);
#pragma unroll
        for (u32 j = 0; j < UNITS; j++)
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++)
                if (base + item_index(j, e) >= n) x[j][e] = 0;
        Elem agg = rank_tile<Elem>(x, r, s_warp);
        if (threadIdx.x < 32) {
            Elem p = Protocol::scan_prefix(flags, values, tile, agg);
            if (threadIdx.x == 0) s_prefix = p;
        }
        __syncthreads();
        Elem prefix = s_prefix, shifted = prefix + c;
#pragma unroll
        for (u32 j = 0; j < UNITS; j++)
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++) {
                u64 i = base + item_index(j, e);
                if (i < n) out[i] = shifted + r[j][e];
            }
        if (base + TILE >= n && threadIdx.x == 0) *total = (u64)(Elem)(prefix + agg);
    }
#endif
}
#endif

// Entry points, stamped out per protocol.
#if REAP_ELEM_BYTES <= 8
#define REAP_SCAN_ENTRY(NAME, PROTOCOL)                                                                  \
    extern "C" __global__ void __launch_bounds__(REAP_THREADS)                                            \
        NAME##_scan(Extent ext, const Elem* in, Elem* out, u64* total, u32* flags, u64* values, u32* counter,  \
                    const u64* carry, u32 carry_count) {                                                 \
        scan_tiles<PROTOCOL>(ext, in, out, total, flags, values, counter, carry, carry_count);           \
    }
#else
#define REAP_SCAN_ENTRY(NAME, PROTOCOL)
#endif

#define REAP_SINGLE_PASS_ENTRIES(NAME, PROTOCOL)                                                          \
    extern "C" __global__ void __launch_bounds__(REAP_THREADS)                                           \
        NAME##_select(Extent ext, const Elem* in, KeepArgs keep, Elem* out, u64* count, u64* state,        \
                      u32* counter, u32 epoch) {                                                          \
        compact_tiles<PROTOCOL, SPLIT_NONE>(ext, in, keep, out, count, state, counter, epoch, nullptr);   \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(REAP_THREADS)                                           \
        NAME##_partition(Extent ext, const Elem* in, KeepArgs keep, Elem* out, u64* count, u64* state,     \
                         u32* counter, u32 epoch, const u64* kept_total) {                                \
        compact_tiles<PROTOCOL, SPLIT_IN_ORDER>(ext, in, keep, out, count, state, counter, epoch, kept_total); \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(REAP_THREADS)                                           \
        NAME##_partition_reversed(Extent ext, const Elem* in, KeepArgs keep, Elem* out, u64* count, u64* state, \
                                  u32* counter, u32 epoch) {                                              \
        compact_tiles<PROTOCOL, SPLIT_REVERSED>(ext, in, keep, out, count, state, counter, epoch, nullptr); \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(REAP_BLOCK)                                             \
        NAME##_count(Extent ext, const Elem* in, KeepArgs keep, u64* total) {                             \
        count_kept(ext, in, keep, total);                                                                 \
    }                                                                                                     \
    REAP_SCAN_ENTRY(NAME, PROTOCOL)
