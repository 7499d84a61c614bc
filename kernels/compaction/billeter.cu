// `billeter-{prefix,popc}-{scattered,staged,buffered,selective}`: Billeter,
// Olsson and Assarsson's three-phase compaction for wide SIMD machines (seed
// 000 §3-4), with the stream split (§5.3) and the global prefix sum (§5.2).
//
// The paper's machine is P virtual processors of S = 32 lanes (§3.1); here
// one processor is one warp, owning a contiguous range of whole 32-element
// groups (ranges differ by at most one group, §4.1; the last group may be
// partial, its missing lanes invalid). Phases, named as on the CPU
// (src/compaction/cpu/billeter.rs):
// - count (Listing 3): per-lane counts, one reduction per warp. Popc also
//   stores one ballot word per group (§4.2).
// - scan: exclusive scan of the P counts by one block; writes the total.
// - move (Listing 4): compactSIMD per group, by a warp prefix sum of the flags
//   (Listing 5) or a popcount of the stored word (Listing 6), then one of four
//   output modes (§3.5, §4.2). Partition also writes the rejected lanes, after
//   every kept element (§5.3).
// Scan (§5.2): sum / scan / prefix, the same three phases over values.
//
// Each warp only ever synchronises with itself (__syncwarp), so warps beyond
// P return at once, and every loop is bounded by warp-uniform values so the
// full-mask shuffles and ballots always see all 32 lanes.
//
// A counted call's P is sized for the capacity; the groups come from the
// device length. Where P exceeds the groups, processor_range gives the first
// processors one group each, exactly the ranges P = groups would give, and the
// rest empty ranges: they count 0 and move nothing.
#include "common.cuh"

// Warps per block of the count, move, sum and prefix kernels.
#ifndef REAP_BILLETER_WARPS
#define REAP_BILLETER_WARPS 8
#endif
// Groups each warp loads before it processes them: independent loads in
// flight per lane, as the paper's 64-bit loads (§4.3) gave on the GTX 280.
#ifndef REAP_BILLETER_UNROLL
#define REAP_BILLETER_UNROLL 4
#endif
#define BT_THREADS (REAP_BILLETER_WARPS * 32)
// Phase 2 runs as one block of this many threads: P is small (§3.2).
#define BT_SCAN_THREADS 1024

#define OUT_SCATTERED 0
#define OUT_STAGED 1
#define OUT_BUFFERED 2
#define OUT_SELECTIVE 3

// Processor p's groups [g0, g1) out of `groups`, balanced and in order.
// Written without p * groups, which could overflow 64 bits.
struct Range {
    u64 g0, g1;
};
__device__ __forceinline__ Range processor_range(u64 groups, u64 procs, u64 p) {
    u64 base = groups / procs, rem = groups % procs;
    u64 g0 = p * base + min(p, rem);
    return Range{g0, g0 + base + (p < rem ? 1 : 0)};
}

// This warp's processor id.
__device__ __forceinline__ u64 processor_id() { return (u64)blockIdx.x * REAP_BILLETER_WARPS + (threadIdx.x >> 5); }

__device__ __forceinline__ Elem load_lane(const Elem* in, u64 i, bool ok) { return ok ? reap_ldg(in + i) : Elem{}; }

// Loads groups g .. g + REAP_BILLETER_UNROLL - 1, the lane's column of each:
// all loads in flight before any is used; zero past the range or n.
__device__ __forceinline__ void load_groups(const Elem* in, u64 g, Range r, u64 n, u32 lane,
                                            Elem (&x)[REAP_BILLETER_UNROLL]) {
#pragma unroll
    for (u32 u = 0; u < REAP_BILLETER_UNROLL; u++) {
        u64 i = (g + u) * 32 + lane;
        x[u] = load_lane(in, i, g + u < r.g1 && i < n);
    }
}

// Runs f(x, g, i) on every group g of the range in order, x being the lane's
// element i of it, loading REAP_BILLETER_UNROLL groups at a time.
template <typename F>
__device__ __forceinline__ void for_groups(const Elem* in, Range r, u64 n, u32 lane, F f) {
    for (u64 g = r.g0; g < r.g1; g += REAP_BILLETER_UNROLL) {
        Elem x[REAP_BILLETER_UNROLL];
        load_groups(in, g, r, n, lane, x);
#pragma unroll
        for (u32 u = 0; u < REAP_BILLETER_UNROLL; u++) {
            if (g + u >= r.g1) break;  // warp-uniform
            f(x[u], g + u, (g + u) * 32 + lane);
        }
    }
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

// Phase 1, Listing 3. Lane s counts the valid elements of its column. POPC
// also stores each group's ballot word; the paper built it by a bit-matrix
// transpose in shared memory (§4.2), `__ballot_sync` builds it in one
// instruction today. Words are gathered 32 at a time, lane k holding the k-th,
// so they leave as one coalesced store instead of 32 single-word ones.
template <bool POPC>
__device__ __forceinline__ void count(Extent ext, const Elem* in, const KeepArgs& keep, u64 procs, u64* counts,
                                      u32* masks) {
    u64 p = processor_id();
    if (p >= procs) return;  // whole warp
    u64 n = extent_n(ext);
    u32 lane = reap_lane();
    Range r = processor_range((n + 31) / 32, procs, p);
    u64 c = 0;
    u32 word = 0;
    for_groups(in, r, n, lane, [&](Elem x, u64 g, u64 i) {
        bool valid = i < n && reap_keep(x, i, keep);
        c += valid ? 1 : 0;
        if (POPC) {
            u32 m = __ballot_sync(0xffffffffu, valid);
            u32 slot = (u32)((g - r.g0) & 31);
            if (lane == slot) word = m;
            if (slot == 31 || g + 1 == r.g1) {
                if (lane <= slot) masks[g - slot + lane] = word;
            }
        }
    });
    c = warp_sum(c);  // once per processor: not time critical (Listing 3 line 9)
    if (lane == 0) counts[p] = c;
}

// Phase 2: exclusive scan of `procs` values by one block, in chunks of
// BT_SCAN_THREADS; the total goes to *total (the caller's count).
template <typename T>
__device__ __forceinline__ void scan_processors(u64 procs, const T* in, T* out, u64* total) {
    __shared__ T s_warp[BT_SCAN_THREADS / 32];
    u32 lane = reap_lane(), warp = threadIdx.x >> 5;
    T carry = 0;
    // `base` is block-uniform, so the __syncthreads below are too.
    for (u64 base = 0; base < procs; base += BT_SCAN_THREADS) {
        u64 k = base + threadIdx.x;
        T v = k < procs ? in[k] : (T)0;
        T incl = reap_warp_inclusive(v);
        if (lane == 31) s_warp[warp] = incl;
        __syncthreads();
        T before, sum;
        reap_warp_totals<BT_SCAN_THREADS / 32>(s_warp, warp, before, sum);
        if (k < procs) out[k] = carry + before + incl - v;
        carry += sum;
        __syncthreads();  // s_warp is rewritten by the next chunk
    }
    if (threadIdx.x == 0) *total = (u64)carry;
}

// One output stream (kept, or in a split the rejected) of one warp in phase
// 3. Every lane holds the same state; `buf` is the warp's 32 shared slots for
// this stream. For each group a lane passes its element, whether it belongs
// to the stream, its rank d among the group's members and the group's member
// count `num` (warp-uniform).
template <int MODE>
struct Writer {
    u64 j;          // next output slot of this stream
    Elem* buf;      // staging / buffer, 32 elements
    bool staged;    // selective: staged (else scattered) for this warp
    bool aligning;  // buffered: still in alignOutput
    u32 buffered;   // buffered: elements held in buf

    __device__ __forceinline__ Writer(u64 at, Elem* b, bool stage)
        : j(at), buf(b), staged(stage), aligning(true), buffered(0) {}

    __device__ __forceinline__ void put(Elem* out, const Elem& x, bool member, u32 d, u32 num) {
        if (num == 0) return;  // warp-uniform
        u32 lane = reap_lane();
        if (MODE == OUT_SCATTERED || (MODE == OUT_SELECTIVE && !staged)) {
            // Each valid lane stores straight to global memory (§4.2).
            if (member) out[j + d] = x;
            j += num;
        } else if (MODE == OUT_STAGED || MODE == OUT_SELECTIVE) {
            // Compacted in shared memory, then numValid contiguous stores (§4.2).
            if (member) buf[d] = x;
            __syncwarp();  // the lanes' shared writes before the flush reads them
            if (lane < num) out[j + lane] = buf[lane];
            __syncwarp();  // the flush reads before the next group overwrites
            j += num;
        } else {
            buffered_put(out, x, member, d, num);
        }
    }

    // Listing 7. alignOutput writes the first elements unbuffered until j is
    // a multiple of 32; from then on only whole, aligned 32-element writes
    // leave the buffer, and the tail at the end (finish).
    __device__ __forceinline__ void buffered_put(Elem* out, const Elem& x, bool member, u32 d, u32 num) {
        u32 lane = reap_lane();
        if (aligning) {
            u32 need = (u32)((32 - (j & 31)) & 31);
            if (need > 0) {
                if (member) {
                    if (d < need) out[j + d] = x;
                    else buf[d - need] = x;
                }
                if (num >= need) {
                    j += need;
                    buffered = num - need;
                    aligning = false;
                } else {
                    j += num;
                }
                return;
            }
            aligning = false;
        }
        // Listing 7 lines 9-15. Line 11 reads `>`, but it must be `>=`: a
        // buffer filled to exactly 32 would otherwise not be flushed and line
        // 16 would wrap #buffered to 0, losing it (found by the CPU port).
        if (member && d + buffered < 32) buf[d + buffered] = x;
        if (num + buffered >= 32) {
            __syncwarp();  // every lane's buffer writes (this and earlier groups) before the flush
            out[j + lane] = buf[lane];
            __syncwarp();  // the flush reads before the overflow overwrites slots
            j += 32;
            if (member && d + buffered >= 32) buf[d + buffered - 32] = x;
        }
        buffered = (buffered + num) & 31;
    }

    // Listing 7 lines 17-19: the partial buffer left over.
    __device__ __forceinline__ void finish(Elem* out) {
        if (MODE != OUT_BUFFERED) return;
        __syncwarp();
        if (reap_lane() < buffered) out[j + reap_lane()] = buf[reap_lane()];
    }
};

// Phase 3, Listing 4, with compactSIMD by prefix sum (Listing 5) or popcount
// of the stored ballot word (Listing 6, never evaluating the keep rule
// again). Kept elements go to [offsets[p], +counts[p]); in a split the
// rejected ones follow all kept ones: the rejected elements before this range
// number range_start - offsets[p], so they start at *total + that (§5.3).
template <bool POPC, int MODE, bool PARTITION>
__device__ __forceinline__ void move(Extent ext, const Elem* in, const KeepArgs& keep, Elem* out, const u64* total,
                                     u64 procs, const u64* counts, const u64* offsets, const u32* masks,
                                     double staged_ratio) {
    __shared__ Elem s_buf[REAP_BILLETER_WARPS][PARTITION ? 2 : 1][32];
    u64 p = processor_id();
    if (p >= procs) return;  // whole warp; nothing below syncs the block
    u64 n = extent_n(ext);
    u32 lane = reap_lane(), warp = threadIdx.x >> 5;
    Range r = processor_range((n + 31) / 32, procs, p);
    // An empty range past the last group (counted calls) starts at n, not beyond it.
    u64 start = min(r.g0 * 32, n), len = min(r.g1 * 32, n) - start;
    u64 kept = counts[p], at = offsets[p];
    // Selective (§4.2): dense streams gain from staging (contiguous stores of
    // whole groups), sparse ones only pay its shared-memory round trip.
    Writer<MODE> keep_w(at, s_buf[warp][0], (double)kept >= staged_ratio * (double)len);
    u64 rej_at = PARTITION ? *total + start - at : 0;
    Writer<MODE> rej_w(rej_at, s_buf[warp][PARTITION ? 1 : 0], (double)(len - kept) >= staged_ratio * (double)len);
    u32 below_me = (1u << lane) - 1;  // lanemask_lt
    for (u64 g = r.g0; g < r.g1; g += REAP_BILLETER_UNROLL) {
        Elem x[REAP_BILLETER_UNROLL];
        u32 m[REAP_BILLETER_UNROLL];
        load_groups(in, g, r, n, lane, x);
        // Every lane loads the same word: one broadcast transaction.
#pragma unroll
        for (u32 u = 0; u < REAP_BILLETER_UNROLL; u++) m[u] = POPC && g + u < r.g1 ? __ldg(masks + g + u) : 0;
#pragma unroll
        for (u32 u = 0; u < REAP_BILLETER_UNROLL; u++) {
            if (g + u >= r.g1) break;  // warp-uniform
            u64 i = (g + u) * 32 + lane;
            bool f;
            u32 d, num;
            if (POPC) {
                f = (m[u] >> lane) & 1;
                d = __popc(m[u] & below_me);
                num = __popc(m[u]);
            } else {
                f = i < n && reap_keep(x[u], i, keep);
                u32 incl = reap_warp_inclusive((u32)f);
                d = incl - (u32)f;
                num = __shfl_sync(0xffffffffu, incl, 31);
            }
            keep_w.put(out, x[u], f, d, num);
            if (PARTITION) {
                // Valid lanes are a prefix of the group, so the rejected lanes
                // below this one number lane - d.
                u32 width = (u32)min((u64)32, n - (g + u) * 32);
                rej_w.put(out, x[u], i < n && !f, lane - d, width - num);
            }
        }
    }
    keep_w.finish(out);
    if (PARTITION) rej_w.finish(out);
}

extern "C" __global__ void __launch_bounds__(BT_THREADS)
    billeter_prefix_count(Extent ext, const Elem* in, KeepArgs keep, u64 procs, u64* counts, u32* masks) {
    count<false>(ext, in, keep, procs, counts, masks);
}
extern "C" __global__ void __launch_bounds__(BT_THREADS)
    billeter_popc_count(Extent ext, const Elem* in, KeepArgs keep, u64 procs, u64* counts, u32* masks) {
    count<true>(ext, in, keep, procs, counts, masks);
}
extern "C" __global__ void __launch_bounds__(BT_SCAN_THREADS)
    billeter_scan_counts(u64 procs, const u64* counts, u64* offsets, u64* total) {
    scan_processors<u64>(procs, counts, offsets, total);
}

// billeter_{prefix,popc}_{scattered,staged,buffered,selective}_{select,partition}.
#define BT_MOVE(NAME, POPC, MODE, PARTITION)                                                                    \
    extern "C" __global__ void __launch_bounds__(BT_THREADS)                                                   \
        NAME(Extent ext, const Elem* in, KeepArgs keep, Elem* out, const u64* total, u64 procs,               \
             const u64* counts, const u64* offsets, const u32* masks, double staged_ratio) {                   \
        move<POPC, MODE, PARTITION>(ext, in, keep, out, total, procs, counts, offsets, masks, staged_ratio);    \
    }
#define BT_MOVES(SIMD, POPC, OUTPUT, MODE)                                      \
    BT_MOVE(billeter_##SIMD##_##OUTPUT##_select, POPC, MODE, false)            \
    BT_MOVE(billeter_##SIMD##_##OUTPUT##_partition, POPC, MODE, true)
BT_MOVES(prefix, false, scattered, OUT_SCATTERED)
BT_MOVES(prefix, false, staged, OUT_STAGED)
BT_MOVES(prefix, false, buffered, OUT_BUFFERED)
BT_MOVES(prefix, false, selective, OUT_SELECTIVE)
BT_MOVES(popc, true, scattered, OUT_SCATTERED)
BT_MOVES(popc, true, staged, OUT_STAGED)
BT_MOVES(popc, true, buffered, OUT_BUFFERED)
BT_MOVES(popc, true, selective, OUT_SELECTIVE)

#if REAP_ELEM_BYTES <= 8
// Global prefix sum (§5.2) of u32 or u64 values, wrapping as the CPU does.

// Phase 1: each lane sums its column of the range; one reduction per warp.
extern "C" __global__ void __launch_bounds__(BT_THREADS)
    billeter_sum(Extent ext, const Elem* in, u64 procs, Elem* sums) {
    u64 p = processor_id();
    if (p >= procs) return;
    u64 n = extent_n(ext);
    u32 lane = reap_lane();
    Range r = processor_range((n + 31) / 32, procs, p);
    Elem s = 0;
    for (u64 g = r.g0; g < r.g1; g += REAP_BILLETER_UNROLL) {
        Elem x[REAP_BILLETER_UNROLL];
        load_groups(in, g, r, n, lane, x);  // zero outside
#pragma unroll
        for (u32 u = 0; u < REAP_BILLETER_UNROLL; u++) s += x[u];
    }
    s = warp_sum(s);
    if (lane == 0) sums[p] = s;
}

extern "C" __global__ void __launch_bounds__(BT_SCAN_THREADS)
    billeter_scan_sums(u64 procs, const Elem* sums, Elem* offsets, u64* total) {
    scan_processors<Elem>(procs, sums, offsets, total);
}

// Phase 3: a warp prefix sum per group plus the running offset; every group
// is read and written as one whole, aligned 32-element access.
extern "C" __global__ void __launch_bounds__(BT_THREADS)
    billeter_prefix(Extent ext, const Elem* in, Elem* out, u64 procs, const Elem* offsets) {
    u64 p = processor_id();
    if (p >= procs) return;
    u64 n = extent_n(ext);
    u32 lane = reap_lane();
    Range r = processor_range((n + 31) / 32, procs, p);
    Elem carry = offsets[p];
    for_groups(in, r, n, lane, [&](Elem x, u64, u64 i) {
        Elem incl = reap_warp_inclusive(x);
        if (i < n) out[i] = carry + incl - x;
        carry += __shfl_sync(0xffffffffu, incl, 31);
    });
}
#endif
