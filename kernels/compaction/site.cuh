// Fused compaction sites: a producer kernel compacts the items it makes in
// the kernel that makes them, with the library's single-pass algorithms, so
// no dead slot is ever written and no separate pass reads one back (Merrill &
// Garland give this as the reason for single-pass designs). The host side is
// src/compaction/cuda/site.rs (`CudaSite`), which owns the scratch, picks the
// algorithm at run time and compiles the producer with it.
//
// The algorithm is a template argument (REAP_SITE_*), so one producer source
// can hold several sites with different algorithms:
// - lookback, chained: stable. The producer's input is cut into tiles of
//   BLOCK items in input order, handed out by dynamic tile id (so a tile only
//   waits on tiles whose blocks already run); a tile ranks its kept items,
//   stages them in shared memory and publishes its count; one tile later,
//   while the next is staged, it learns its prefix through the algorithm's
//   protocol (lookback.cuh, chained.cuh) and is written out contiguously.
//   The output is exactly what the library's separate select of the
//   producer's slots gives.
// - atomic: unstable, pbrt-v4's queues. Each warp reserves its kept items'
//   slots with one atomicAdd; no tile waits for another.
//
// How a producer uses a site (every thread of the block makes every call, with
// block-uniform control flow; items past the input carry keep = 0):
//
//   SiteLoop l = site_loop<ALG, BLOCK>(n);
//   for (u32 t = site_first<ALG>(site, l); t < l.tiles; t = site_next<ALG>(site, l, t)) {
//       u64 i = (u64)t * BLOCK + threadIdx.x;   // this thread's input item
//       T items[K]; u32 keep = ...;              // candidates, bit j keeps items[j]
//       site_emit<ALG, BLOCK, K>(site, l, t, items, keep, out);
//   }
//   u64 total;
//   if (site_finish<ALG, BLOCK, K>(site, l, out, &total)) ...;  // one thread: the kept count
//
// Nothing at or past `capacity` is written; the total counts every kept item,
// so a caller sees how much room it needed.
#pragma once
#include "../warp.cuh"
#include "tile_state.cuh"
#include "lookback.cuh"
#include "chained.cuh"

// Which algorithm a site runs (site.rs `SiteKernel`); SEPARATE: the producer
// writes its slots with dead ones in place and the library's pass runs after.
#define REAP_SITE_SEPARATE 0
#define REAP_SITE_LOOKBACK 1
#define REAP_SITE_CHAINED 2
#define REAP_SITE_ATOMIC 3

// The site's scratch words, u32 indices (site.rs `SCRATCH_WORDS`): the tile-id
// counter (lookback, chained), the blocks that finished (atomic), and at u32
// index 2 the atomic's u64 tally. Each is back at 0 when a launch ends, so no
// use clears them first.
#define SITE_COUNTER 0
#define SITE_DONE 1
#define SITE_TALLY 2

// A site as a kernel argument: site.rs `DeviceSite`, keep in sync (32 bytes).
struct Site {
    u64* state;    // one tile state per tile (lookback, chained)
    u32* scratch;  // SITE_* words
    u64 capacity;  // output slots
    u32 epoch;     // of the tile states (tile_state.cuh)
    u32 pad;
};
static_assert(sizeof(Site) == 32, "Site: keep in sync with site.rs DeviceSite");

struct SiteLoop {
    u32 tiles;      // tiles of the input
    u32 blocks;     // blocks that take part: the first min(grid, tiles), at least one
    u32 last_draw;  // the id drawn last: its block rewinds the counter
};

// Per-block state of a site, one instance per block.
#define SITE_NONE 0xffffffffu
struct SiteShared {
    u32 tile;
    u32 finish;        // this block knows the total
    u32 pending;       // a staged tile waiting for its prefix (lookback, chained), or SITE_NONE
    u32 pending_kept;  // its kept count
    u32 cur;           // the staging slot the next tile goes to
    u64 prefix;
    u64 total;
    u32 warp[32];
};

__device__ __forceinline__ SiteShared& site_shared() {
    __shared__ SiteShared s;
    return s;
}

// The host sizes the grid so that tiles + grid fit in 32 bits.
template <int ALG, u32 BLOCK>
__device__ __forceinline__ SiteLoop site_loop(u64 n) {
    SiteLoop l;
    l.tiles = (u32)((n + BLOCK - 1) / BLOCK);
    // The grid is sized for the most tiles a launch may see (the host cannot
    // read n); blocks past the tiles take no part, so a short input costs no
    // more than its tiles: a grid-wide draw on one counter cost a breadth-first
    // level of 19 items 9.5 us on an H200 (docs/render/bf-bytes-h200).
    l.blocks = min(gridDim.x, max(l.tiles, 1u));
    // Every taking part block draws until it draws an id past the tiles: tiles + blocks draws.
    l.last_draw = l.tiles + l.blocks - 1;
    return l;
}

// The block's next tile id; the block with the launch's last draw rewinds
// the counter for the next use (and, with no tile at all, reports the total).
__device__ __forceinline__ u32 site_draw(const Site& s, const SiteLoop& l) {
    SiteShared& sh = site_shared();
    if (threadIdx.x == 0) {
        u32 t = atomicAdd(s.scratch + SITE_COUNTER, 1u);
        if (t == l.last_draw) {
            atomicExch(s.scratch + SITE_COUNTER, 0u);
            if (l.tiles == 0) {
                sh.total = 0;
                sh.finish = 1;
            }
        }
        sh.tile = t;
    }
    // Also orders the last tile's reads of the staging before the next tile's writes.
    __syncthreads();
    return sh.tile;
}

template <int ALG>
__device__ __forceinline__ u32 site_first(const Site& s, const SiteLoop& l) {
    if (threadIdx.x == 0) {
        SiteShared& sh = site_shared();
        sh.finish = 0;
        sh.pending = SITE_NONE;
        sh.cur = 0;
    }
    if (blockIdx.x >= l.blocks) return l.tiles;  // takes no part: no draw, no count (block-uniform)
    if (ALG == REAP_SITE_ATOMIC) return blockIdx.x;  // no tile waits on another: a plain stride
    return site_draw(s, l);
}

template <int ALG>
__device__ __forceinline__ u32 site_next(const Site& s, const SiteLoop& l, u32 tile) {
    if (ALG == REAP_SITE_ATOMIC) return tile + l.blocks;
    return site_draw(s, l);
}

// lookback, chained: tiles are staged in shared memory up to 16 KiB a tile
// (coalesced stores); wider producers keep their items in registers.
template <u32 BLOCK, u32 K, typename T>
struct SiteStage {
    static constexpr bool STAGED = BLOCK * K * sizeof(T) <= 16384;
    static constexpr u32 SLOT = STAGED ? BLOCK * K : 1;
    // Two slots: the tile being made and the one waiting for its prefix.
    static __device__ __forceinline__ T* slot(u32 which) {
        __shared__ __align__(16) unsigned char raw[2 * SLOT * sizeof(T)];
        return reinterpret_cast<T*>(raw) + which * SLOT;
    }
};

// The prefix of tile `tile` (its aggregate already published), to every
// thread: warp 0 walks back, a barrier hands it out.
template <int ALG>
__device__ __forceinline__ u64 site_resolve(const Site& s, u32 tile, u32 kept) {
    SiteShared& sh = site_shared();
    if (threadIdx.x < 32) {
        u64 prefix;
        if (ALG == REAP_SITE_LOOKBACK) prefix = Decoupled::resolve(s.state, tile, kept, s.epoch);
        else prefix = Chained::resolve(s.state, tile, kept, s.epoch);
        if (threadIdx.x == 0) sh.prefix = prefix;
    }
    __syncthreads();
    return sh.prefix;
}

// Writes a staged tile at its prefix; the tile that is last in input order
// knows the total.
template <u32 BLOCK, typename T>
__device__ __forceinline__ void site_write(const Site& s, const SiteLoop& l, u32 tile, u32 kept, u64 prefix,
                                           const T* stage, T* out) {
    for (u32 i = threadIdx.x; i < kept; i += BLOCK) {
        u64 p = prefix + i;
        if (p < s.capacity) out[p] = stage[i];
    }
    if (tile == l.tiles - 1 && threadIdx.x == 0) {
        SiteShared& sh = site_shared();
        sh.total = prefix + kept;
        sh.finish = 1;
    }
}

template <int ALG, u32 BLOCK, u32 K, typename T>
__device__ __forceinline__ void site_emit(const Site& s, const SiteLoop& l, u32 tile, const T (&items)[K], u32 keep,
                                          T* out) {
    static_assert(K <= 32, "a thread keeps at most 32 candidates (one bit each)");
    static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "a block is whole warps");
    u32 c = __popc(keep);
    u32 incl = reap_warp_inclusive(c);
    u32 lane = reap_lane(), warp = threadIdx.x >> 5;
    u32 wsum = __shfl_sync(0xffffffffu, incl, 31);
    if (ALG == REAP_SITE_ATOMIC) {
        // One reservation per warp (atomic.cu's aggregation), no barrier.
        u64 base = 0;
        if (lane == 31 && wsum) base = atomicAdd(reinterpret_cast<unsigned long long*>(s.scratch + SITE_TALLY), (u64)wsum);
        base = __shfl_sync(0xffffffffu, base, 31);
        u64 at = base + incl - c;
#pragma unroll
        for (u32 j = 0; j < K; j++)
            if ((keep >> j) & 1) {
                u64 p = at + __popc(keep & ((1u << j) - 1));
                if (p < s.capacity) out[p] = items[j];
            }
        return;
    }
    // lookback, chained: rank in the tile, stage, publish the count.
    typedef SiteStage<BLOCK, K, T> Stage;
    SiteShared& sh = site_shared();
    // Read before the barrier below: thread 0 changes them after it.
    u32 pending = sh.pending, pending_kept = sh.pending_kept, cur = sh.cur;
    if (lane == 31) sh.warp[warp] = wsum;
    __syncthreads();
    u32 before = 0, kept = 0;
#pragma unroll
    for (u32 w = 0; w < BLOCK / 32; w++) {
        u32 t = sh.warp[w];
        if (w < warp) before += t;
        kept += t;
    }
    u32 rank = before + incl - c;
    if (!Stage::STAGED) {
        // Items stay in registers: learn the prefix now and write them.
        if (threadIdx.x < 32 && reap_lane() == 0) {
            if (ALG == REAP_SITE_LOOKBACK) Decoupled::publish(s.state, tile, kept, s.epoch);
        }
        u64 prefix = site_resolve<ALG>(s, tile, kept);
#pragma unroll
        for (u32 j = 0; j < K; j++)
            if ((keep >> j) & 1) {
                u64 p = prefix + rank + __popc(keep & ((1u << j) - 1));
                if (p < s.capacity) out[p] = items[j];
            }
        if (tile == l.tiles - 1 && threadIdx.x == 0) {
            sh.total = prefix + kept;
            sh.finish = 1;
        }
        return;
    }
    // Staged: this tile goes to the free slot and publishes its count at once;
    // the tile made before it (pending since) then resolves its prefix and is
    // written. A block never waits on its predecessors right after making a
    // tile, only one tile later, by when they have mostly counted: each tile
    // still waits only on lower ids, all drawn by running blocks that publish
    // a count as soon as they made the tile, so no wait can deadlock.
    T* stage = Stage::slot(cur);
#pragma unroll
    for (u32 j = 0; j < K; j++)
        if ((keep >> j) & 1) stage[rank + __popc(keep & ((1u << j) - 1))] = items[j];
    if (threadIdx.x == 0 && ALG == REAP_SITE_LOOKBACK) Decoupled::publish(s.state, tile, kept, s.epoch);
    if (pending != SITE_NONE) {
        u64 prefix = site_resolve<ALG>(s, pending, pending_kept);  // its barrier also orders the staging above
        site_write<BLOCK>(s, l, pending, pending_kept, prefix, Stage::slot(cur ^ 1), out);
    }
    // Every thread read these before the barrier above; the next draw's
    // barrier orders the writes before their next reads.
    if (threadIdx.x == 0) {
        sh.pending = tile;
        sh.pending_kept = kept;
        sh.cur = cur ^ 1;
    }
}

// After the loop, every thread: true in exactly one thread of the launch,
// which gets the kept total (the tile that was last in input order knows it;
// atomic: the block that finished last reads the tally and rewinds it).
// lookback and chained first resolve and write the block's pending tile.
template <int ALG, u32 BLOCK, u32 K, typename T>
__device__ __forceinline__ bool site_finish(const Site& s, const SiteLoop& l, T* out, u64* total) {
    SiteShared& sh = site_shared();
    if (blockIdx.x >= l.blocks) return false;  // took no part: made nothing, counts nothing
    if (ALG == REAP_SITE_ATOMIC) {
        __shared__ u32 s_last;
        // Every warp of the block has reserved: then one thread counts the block done.
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();  // this block's reservations before its done count
            s_last = atomicAdd(s.scratch + SITE_DONE, 1u) == l.blocks - 1;
        }
        __syncthreads();
        if (!s_last || threadIdx.x != 0) return false;
        __threadfence();  // every block's reservations are visible after the done counts
        unsigned long long* tally = reinterpret_cast<unsigned long long*>(s.scratch + SITE_TALLY);
        *total = atomicExch(tally, 0ull);
        atomicExch(s.scratch + SITE_DONE, 0u);
        return true;
    }
    // The last draw's barrier made `pending` the same in every thread.
    u32 p = sh.pending;
    if (p != SITE_NONE) {
        u64 prefix = site_resolve<ALG>(s, p, sh.pending_kept);
        site_write<BLOCK>(s, l, p, sh.pending_kept, prefix, SiteStage<BLOCK, K, T>::slot(sh.cur ^ 1), out);
        __syncthreads();
    }
    if (threadIdx.x != 0 || !sh.finish) return false;
    *total = sh.total;
    return true;
}
