// The `bulk-async` load style of the single-pass select, partition and scan
// (REAP_LOAD_BULK_ASYNC, sm_90): a persistent block keeps a ring of RING tiles
// in dynamic shared memory, each filled by one bulk copy that completes on
// the slot's mbarrier, and publishes a tile's aggregate as soon as the tile
// has landed and counted, never behind the previous tile's look-back.
//
// With one block per tile (the register load styles) a block that waits for
// its prefix holds its shared memory and issues no loads, and at saturation
// its predecessors' loads take microseconds: ncu put 44 % of `lookback`'s warp
// stalls at the barrier behind the look-back on an H100
// (docs/bench/lookback-h100-issue17/ncu-stalls.md). Here the block is
// REAP_BLOCK threads that hold tiles plus one more warp, the look-back warp,
// which draws tile ids, starts their copies and walks back; per round, with
// slots numbered from the tile being stored (A) on:
//
//   prologue: draw and load slots 0 .. RING-2; land 0, count 0, publish 0
//   round:    look-back warp: draw and load slot RING-1 (freed by the last
//                             store), look back for 0
//             tile warps:     land 1, count 1, publish 1
//             barrier; tile warps store 0; the ring turns by one slot
//
// (for the scan, "count" ranks the tile in place and publishes its sum)
//
// so the look-back's round trips and the draw's atomic overlap the count
// instead of following it (on an H200 the round's look-back took as long as
// half its count), and RING-1 tiles of the block are in flight meanwhile.
//
// No deadlock: a tile only waits (look-back) for lower tile ids, whose blocks
// are running, since ids are handed out to running blocks in order. Take the
// lowest tile m whose prefix is not out. Every lower tile has its prefix out,
// so if m is its block's A, its look-back ends. Otherwise the block's A is
// lower than m, so it finishes, and the block then lands m (its copy needs
// nothing but memory) and counts it; the ring turns until m is A.
#pragma once

#define RING 3
#define TILE_VECS (REAP_BLOCK * UNITS)

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
    Vec* tiles;    // RING x TILE_VECS Vecs (dynamic shared memory)
    u64* bars;     // an mbarrier per slot
    u32* ids;      // the tile id each slot holds
    u32 parity;    // bit s: the phase slot s's barrier completes next
    u32 tiles_live;
    u32 last_draw;
    bool aligned;  // the input allows 16-byte bulk copies
    __device__ Elem* slot(u32 s) const { return reinterpret_cast<Elem*>(tiles + s * TILE_VECS); }
    __device__ Vec* slot4(u32 s) const { return tiles + s * TILE_VECS; }
    // Whether tile t comes by bulk copy; else the threads load it (the last,
    // partial tile, or an input not 16-byte aligned).
    __device__ bool bulk(u32 t, u64 n) const { return aligned && (u64)t * TILE + TILE <= n; }
};

// The drawer: draws the next tile id into slot s and starts its bulk copy.
// The caller synchronises before anyone reads `ids[s]`.
__device__ __forceinline__ void ring_draw(Ring& r, u32* counter, u32 s, const Elem* in, u64 n) {
    u32 t = atomicAdd(counter, 1u);
    if (t == r.last_draw) atomicExch(counter, 0u);
    r.ids[s] = t;
    if (t < r.tiles_live && r.bulk(t, n)) ring_issue(&r.bars[s], r.slot(s), in + (u64)t * TILE, TILE * sizeof(Elem));
}

// Every tile thread: waits until slot s's tile has landed, and reads its
// items warp-striped, as the vectorised style holds them (items past n: zero).
__device__ __forceinline__ void ring_land(Ring& r, u32 s, const Elem* in, u64 n, Elem (&x)[UNITS][REAP_VEC]) {
    u32 tile = r.ids[s];
    u64 base = (u64)tile * TILE;
    if (r.bulk(tile, n)) {
        ring_wait(&r.bars[s], (r.parity >> s) & 1);
        r.parity ^= 1u << s;
    } else {
        Elem* slot = r.slot(s);
        for (u32 i = threadIdx.x; i < TILE && base + i < n; i += REAP_BLOCK) slot[i] = in[base + i];
        tile_sync();
    }
#pragma unroll
    for (u32 j = 0; j < UNITS; j++) {
        VecItems u;
        u.v = r.slot4(s)[item_index(j, 0) / REAP_VEC];
#pragma unroll
        for (u32 e = 0; e < REAP_VEC; e++) x[j][e] = u.e[e];
    }
    // Only the last tile has items past n (block-uniform: checks off the full tiles' path).
    if (base + TILE > n) {
#pragma unroll
        for (u32 j = 0; j < UNITS; j++)
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++)
                if (base + item_index(j, e) >= n) x[j][e] = Elem{};
    }
}

// The loop above for a Work with count(ring, slot) (the tile threads),
// resolve(ring, slot) (the look-back warp: the prefix into shared memory)
// and store(ring, slot) (the tile threads, after a barrier).
template <typename Work>
__device__ __forceinline__ void ring_loop(Work& w, u32* counter, const Elem* in, u64 n) {
    extern __shared__ Vec s_ring[];
    __shared__ __align__(8) u64 s_bars[RING];
    __shared__ u32 s_ids[RING];
    Ring r;
    r.tiles = s_ring;
    r.bars = s_bars;
    r.ids = s_ids;
    r.parity = 0;
    r.tiles_live = (u32)((n + TILE - 1) / TILE);
    // Each block draws until it draws one id past the live tiles: tiles +
    // gridDim.x draws in all (the host checks that they fit in 32 bits).
    r.last_draw = r.tiles_live + gridDim.x - 1;
    r.aligned = (reinterpret_cast<size_t>(in) & 15) == 0;
    const bool looker = threadIdx.x >= REAP_BLOCK;  // the look-back warp
    const bool drawer = threadIdx.x == REAP_BLOCK;  // its lane 0
    // The drawer only: whether the block's last draw was a live tile (then it draws on).
    bool drawing = true;
    if (drawer) {
        for (u32 s = 0; s < RING; s++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(reap_smem(&s_bars[s])) : "memory");
        // The copy engine must see the initialised barriers.
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (u32 s = 0; s + 1 < RING && drawing; s++) {
            ring_draw(r, counter, s, in, n);
            drawing = s_ids[s] < r.tiles_live;
        }
    }
    __syncthreads();
    if (s_ids[0] >= r.tiles_live) return;
    if (!looker) w.count(r, 0);
    // Slot a is stored this round, b counted; the slots after b are loading.
    for (u32 a = 0;; a = a + 1 == RING ? 0 : a + 1) {
        u32 b = a + 1 == RING ? 0 : a + 1;
        u32 free = a == 0 ? RING - 1 : a - 1;
        // The last barrier published slot a's count and every id drawn so
        // far. Slot a drew a live tile, so slot b was drawn after it.
        __syncthreads();
        bool more = s_ids[b] < r.tiles_live;
        if (looker) {
            // The free slot's last tile was stored in the previous round,
            // which every tile thread ended with a proxy fence and a barrier;
            // nobody reads its id this round.
            if (drawer && drawing) {
                ring_draw(r, counter, free, in, n);
                drawing = s_ids[free] < r.tiles_live;
            }
            w.resolve(r, a);
        } else if (more) {
            w.count(r, b);
        }
        // The prefix of slot a, and slot b's count, to every thread.
        __syncthreads();
        if (!looker) {
            w.store(r, a);
            // Slot a's next writer is a bulk copy (the async proxy): order
            // this thread's generic reads and writes of it before that copy.
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        }
        if (!more) break;
    }
}

// Select / partition: count stages the tile in place (stage_tile) and
// publishes its kept count; resolve looks back, store writes it out.
template <typename Protocol, int SPLIT>
struct CompactWork {
    const Elem* in;
    u64 n;
    KeepArgs k;
    Elem* out;
    u64* count_out;
    u64* state;
    u32 epoch;
    const u64* kept_total;
    u32* s_warp;
    u32* s_kept;    // per slot
    u64* s_prefix;  // the stored slot's
    __device__ void count(Ring& r, u32 s) {
        Elem x[UNITS][REAP_VEC];
        ring_land(r, s, in, n, x);
        u32 kept = stage_any_tile<SPLIT>(r.ids[s], x, n, k, r.slot(s), s_warp);
        if (threadIdx.x == 0) {
            Protocol::publish(state, r.ids[s], kept, epoch);
            s_kept[s] = kept;
        }
    }
    __device__ void resolve(Ring& r, u32 s) {
        u64 p = Protocol::resolve(state, r.ids[s], s_kept[s], epoch);
        if (reap_lane() == 0) *s_prefix = p;
    }
    __device__ void store(Ring& r, u32 s) {
        emit_tile<SPLIT>(r.ids[s], r.tiles_live, n, s_kept[s], *s_prefix, out, count_out, kept_total, r.slot(s));
    }
};

template <typename Protocol, int SPLIT>
__device__ __forceinline__ void compact_ring(Extent ext, const Elem* in, KeepArgs keep, Elem* out, u64* count,
                                             u64* state, u32* counter, u32 epoch, const u64* kept_total) {
    __shared__ u32 s_warp[WARPS], s_kept[RING];
    __shared__ u64 s_prefix;
    u64 n = extent_n(ext);
    // Parameters out of param space: a predicate takes their address.
    CompactWork<Protocol, SPLIT> w{in, n, keep, out, count, state, epoch, kept_total, s_warp, s_kept, &s_prefix};
    ring_loop(w, counter, in, n);
}

#if REAP_ELEM_BYTES <= 8
// Exclusive scan: count ranks the tile, writes the ranks over its items and
// publishes its sum; resolve looks back; store writes carry + prefix + rank,
// 16 bytes a store (carry: a sharded scan's ranks before this one, else 0).
template <typename Protocol>
struct ScanWork {
    const Elem* in;
    u64 n;
    Elem* out;
    u64* total;
    u32* flags;
    u64* values;
    Elem* s_warp;
    Elem* s_sum;     // per slot
    Elem* s_prefix;  // the stored slot's
    Elem carry;
    __device__ void count(Ring& r, u32 s) {
        Elem x[UNITS][REAP_VEC], rank[UNITS][REAP_VEC];
        ring_land(r, s, in, n, x);
        // rank_tile's barrier follows every thread's reads of the slot.
        Elem sum = rank_tile<Elem>(x, rank, s_warp);
#pragma unroll
        for (u32 j = 0; j < UNITS; j++) {
            VecItems u;
#pragma unroll
            for (u32 e = 0; e < REAP_VEC; e++) u.e[e] = rank[j][e];
            r.slot4(s)[item_index(j, 0) / REAP_VEC] = u.v;
        }
        if (threadIdx.x == 0) {
            Protocol::scan_publish(flags, values, r.ids[s], sum);
            s_sum[s] = sum;
        }
    }
    __device__ void resolve(Ring& r, u32 s) {
        Elem p = Protocol::scan_resolve(flags, values, r.ids[s], s_sum[s]);
        if (reap_lane() == 0) *s_prefix = p;
    }
    __device__ void store(Ring& r, u32 s) {
        Elem prefix = *s_prefix, shifted = prefix + carry;
        u32 tile = r.ids[s];
        u64 base = (u64)tile * TILE;
        if (base + TILE <= n && (reinterpret_cast<size_t>(out) & 15) == 0) {
            uint4* out4 = reinterpret_cast<uint4*>(out + base);
            for (u32 v = threadIdx.x; v < TILE_VECS; v += REAP_BLOCK) {
                VecItems u;
                u.v = r.slot4(s)[v];
#pragma unroll
                for (u32 e = 0; e < REAP_VEC; e++) u.e[e] += shifted;
                out4[v] = u.v;
            }
        } else {
            const Elem* slot = r.slot(s);
            for (u32 i = threadIdx.x; i < TILE && base + i < n; i += REAP_BLOCK) out[base + i] = shifted + slot[i];
        }
        if (base + TILE >= n && threadIdx.x == 0) *total = (u64)(Elem)(prefix + s_sum[s]);
    }
};

template <typename Protocol>
__device__ __forceinline__ void scan_ring(Extent ext, const Elem* in, Elem* out, u64* total, u32* flags, u64* values,
                                          u32* counter, Elem carry) {
    __shared__ Elem s_warp[WARPS], s_sum[RING], s_prefix;
    u64 n = extent_n(ext);
    ScanWork<Protocol> w{in, n, out, total, flags, values, s_warp, s_sum, &s_prefix, carry};
    ring_loop(w, counter, in, n);
}
#endif
