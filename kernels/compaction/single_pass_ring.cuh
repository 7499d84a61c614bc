// The `bulk-async` load style of the single-pass select and partition
// (REAP_LOAD_BULK_ASYNC, sm_90): a persistent block keeps a ring of RING tiles
// in dynamic shared memory, each filled by one bulk copy that completes on
// the slot's mbarrier, and publishes a tile's aggregate as soon as the tile
// has landed and counted, never behind the previous tile's look-back.
//
// With one block per tile (the register load styles) a block that waits for
// its prefix holds its shared memory and issues no loads, and at saturation
// its predecessors' loads take microseconds: ncu put 44 % of `lookback`'s warp
// stalls at the barrier behind the look-back on an H100
// (docs/bench/lookback-h100-issue17/ncu-stalls.md). Here, per block:
//
//   draw A, load A; draw B, load B; land A, count A, publish A
//   loop: land B, count B, publish B; draw C, load C;
//         look back for A, store A; A <- B <- C
//
// so two tiles of the block are in flight while it looks back for a third,
// whose predecessors have by then most likely counted.
//
// No deadlock: a tile only waits (look-back) for lower tile ids, whose blocks
// are running, since ids are handed out to running blocks in order. Take the
// lowest tile m whose prefix is not out. Every lower tile has its prefix out,
// so if m is its block's A, its look-back ends. If m is the block's B or C,
// the block's A is lower than m, so it finishes, and the block then lands m
// (its copy needs nothing but memory) and counts it; as B it then becomes A.
#pragma once

#define RING 3
#define TILE_VECS (REAP_BLOCK * REAP_VECS)

__device__ __forceinline__ u32 reap_smem(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// One bulk copy of `bytes` (a multiple of 16, both ends 16-byte aligned) into
// shared memory, completing on `bar`, which this thread's arrival arms.
__device__ __forceinline__ void ring_issue(u64* bar, void* dst, const void* src, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(reap_smem(bar)), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     reap_smem(dst)),
                 "l"(src), "r"(bytes), "r"(reap_smem(bar))
                 : "memory");
}

// Waits until `bar` completes the phase of this parity.
__device__ __forceinline__ void ring_wait(u64* bar, u32 parity) {
    u32 done = 0;
    while (!done) {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
            : "=r"(done)
            : "r"(reap_smem(bar)), "r"(parity)
            : "memory");
    }
}

struct Ring {
    uint4* tiles;  // RING x TILE_VECS vectors (dynamic shared memory)
    u64* bars;     // an mbarrier per slot
    u32* ids;      // the tile id each slot holds
    u32* kept;     // the kept count of each slot's tile, once counted
    u32 parity;    // bit s: the phase slot s's barrier completes next
    u32 tiles_live;
    u32 last_draw;
    Elem* slot(u32 s) const { return reinterpret_cast<Elem*>(tiles + s * TILE_VECS); }
};

// Thread 0: draws the next tile id into slot s and, for a whole tile, starts
// its bulk copy. The last, partial tile is loaded by the threads when it
// lands. The caller synchronises before anyone reads `ids[s]`.
__device__ __forceinline__ void ring_draw(Ring& r, u32* counter, u32 s, const Elem* in, u64 n) {
    u32 t = atomicAdd(counter, 1u);
    if (t == r.last_draw) atomicExch(counter, 0u);
    r.ids[s] = t;
    u64 base = (u64)t * TILE;
    if (t < r.tiles_live && base + TILE <= n) ring_issue(&r.bars[s], r.slot(s), in + base, TILE * sizeof(Elem));
}

// Every thread: waits for slot s's tile to land, reads its items (warp-striped,
// as the vectorised style) and stages them in place. Returns the kept count.
template <typename Protocol, bool PARTITION>
__device__ __forceinline__ void ring_count(Ring& r, u32 s, const Elem* in, u64 n, const KeepArgs& k, u64* state,
                                           u32 epoch, u32* s_warp) {
    u32 tile = r.ids[s];
    u64 base = (u64)tile * TILE;
    Elem* slot = r.slot(s);
    if (base + TILE <= n) {
        ring_wait(&r.bars[s], (r.parity >> s) & 1);
        r.parity ^= 1u << s;
    } else {
        for (u32 i = threadIdx.x; i < n - base; i += REAP_BLOCK) slot[i] = in[base + i];
        __syncthreads();
    }
    u32 valid = (u32)min((u64)TILE, n - base);
    Elem x[REAP_VECS][REAP_VEC];
    const uint4* slot4 = r.tiles + s * TILE_VECS;
#pragma unroll
    for (u32 j = 0; j < REAP_VECS; j++) {
        u32 v = item_index(j, 0) / REAP_VEC;
        if (v * REAP_VEC < valid) {
            Vec16 u;
            u.v = slot4[v];
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++) x[j][e] = u.e[e];
        }
    }
    u32 kept = stage_tile<PARTITION>(tile, x, n, k, slot, s_warp);
    if (threadIdx.x == 0) {
        Protocol::publish(state, tile, kept, epoch);
        r.kept[s] = kept;
    }
}

template <typename Protocol, bool PARTITION>
__device__ __forceinline__ void compact_ring(Extent ext, const Elem* in, KeepArgs keep, Elem* out, u64* count,
                                             u64* state, u32* counter, u32 epoch, const u64* kept_total) {
    extern __shared__ uint4 s_ring[];
    __shared__ __align__(8) u64 s_bars[RING];
    __shared__ u32 s_ids[RING], s_kept[RING], s_warp[WARPS];
    u64 n = extent_n(ext);
    // Parameters out of param space: a predicate takes their address.
    KeepArgs k = keep;
    Ring r;
    r.tiles = s_ring;
    r.bars = s_bars;
    r.ids = s_ids;
    r.kept = s_kept;
    r.parity = 0;
    r.tiles_live = (u32)((n + TILE - 1) / TILE);
    // Each block draws until it draws one id past the live tiles: tiles +
    // gridDim.x draws in all (the host checks that they fit in 32 bits).
    r.last_draw = r.tiles_live + gridDim.x - 1;
    if (threadIdx.x == 0) {
        for (u32 s = 0; s < RING; s++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(reap_smem(&s_bars[s])) : "memory");
        // The copy engine must see the initialised barriers.
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        ring_draw(r, counter, 0, in, n);
        if (s_ids[0] < r.tiles_live) ring_draw(r, counter, 1, in, n);
    }
    __syncthreads();
    if (s_ids[0] >= r.tiles_live) return;
    u32 a = 0, b = 1, c = 2;
    ring_count<Protocol, PARTITION>(r, a, in, n, k, state, epoch, s_warp);
    // The next count rewrites s_warp, which slow warps may still be reading.
    __syncthreads();
    while (true) {
        bool more = s_ids[b] < r.tiles_live;
        if (more) {
            ring_count<Protocol, PARTITION>(r, b, in, n, k, state, epoch, s_warp);
            // Slot c's last tile was stored in the previous round, which every
            // thread ended with a proxy fence and a barrier.
            if (threadIdx.x == 0) ring_draw(r, counter, c, in, n);
        }
        // tile_prefix's barrier also publishes s_kept[a] and s_ids[c].
        u32 tile = s_ids[a];
        u64 prefix = tile_prefix<Protocol, true>(state, tile, s_kept[a], epoch);
        emit_tile<PARTITION>(tile, r.tiles_live, n, s_kept[a], prefix, out, count, kept_total, r.slot(a));
        // Slot a's next writer is a bulk copy (the async proxy): order this
        // thread's generic reads and writes of it before that copy.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (!more) break;
        u32 t = a;
        a = b;
        b = c;
        c = t;
    }
}
