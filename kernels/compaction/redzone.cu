// `redzone-block` and `redzone-grid`: Bontes & Gain's Redzone stream
// compaction (seed 004 §4), O(k) in place and unstable. The last k slots of
// data, the red zone Z = data[z..n) with z = n - k, supply the survivors that
// fill the holes (removal indices below z).
//
// Phases (seed 004 Alg. 1 and 2), one launch each:
// - redzone_mark, phase 1 (lines 3-4): every removal index r >= z sets bit
//   r - z of a k-bit bitmap (a generic Elem has no spare bits to mark in place).
// - redzone_fill, phase 2 (lines 5-15): item i pairs Z[i] with R[i] and applies
//   Table 1. Case A moves Z[i] into hole R[i] at once; source orphans (case D)
//   go in place to the front of the block's batch of Z; destination orphans
//   (case C) to `r_out` at the same offsets. Each block walks its batch in
//   steps of BLOCK * ITEMS items, a block-wide scan of the per-thread orphan
//   counts (PrefixSumToIndex, lines 9 and 12) giving their slots. One block is
//   Alg. 1; many blocks with batches of s = ceil(k / blocks) are Alg. 2.
// - phase 3 (lines 16-17 / 16-22): redzone_block_orphans pairs Alg. 1's two
//   contiguous lists; Alg. 2 scans the per-block counts (redzone_grid_scan,
//   line 17) and redzone_grid_orphans maps each orphan number t to its slot
//   with the load balancer of Alg. 3.
//
// k lives on the device when Redzone serves select (the mark pass counts it),
// so every kernel reads it from `k_ptr`; `remove` knows k on the host and
// passes a null `k_ptr` with k in `k_host`. Grids are sized on the host from
// an upper bound of k, and every index is checked against n and k, so even a
// bad removal list cannot make a kernel touch memory outside its buffers. n
// comes as an Extent: a counted select's n is on the device as well.
#include "common.cuh"

// Threads per block and items per thread per step of redzone_fill.
#ifndef REAP_RZ_BLOCK
#define REAP_RZ_BLOCK 256
#endif
#ifndef REAP_RZ_ITEMS
#define REAP_RZ_ITEMS 4
#endif
#define RZ_WARPS (REAP_RZ_BLOCK / 32)
#define RZ_STEP ((u64)REAP_RZ_BLOCK * REAP_RZ_ITEMS)

// k, clamped to n so that z = n - k never wraps.
__device__ __forceinline__ u64 rz_k(const u64* k_ptr, u64 k_host, u64 n) {
    u64 k = k_ptr ? *k_ptr : k_host;
    return k < n ? k : n;
}

// Exclusive block-wide sum of v; *total gets the block's sum. Every thread of
// the block must call it (it holds two barriers).
__device__ __forceinline__ u64 rz_block_exclusive(u64 v, u64* total) {
    __shared__ u64 s_warp[RZ_WARPS];
    u64 incl = reap_warp_inclusive(v);
    // The first barrier keeps a previous call's readers ahead of these writes.
    __syncthreads();
    if (reap_lane() == 31) s_warp[threadIdx.x >> 5] = incl;
    __syncthreads();
    u64 before, sum;
    reap_warp_totals<RZ_WARPS>(s_warp, threadIdx.x >> 5, before, sum);
    *total = sum;
    return before + incl - v;
}

// Phase 1 (Alg. 1 lines 3-4). `marks` holds ceil(k / 32) zeroed words. Also
// writes the survivors' count n - k, the one result the host may wait for.
extern "C" __global__ void redzone_mark(Extent ext, const u64* removal, const u64* k_ptr, u64 k_host, u32* marks,
                                        u64* count) {
    u64 n = extent_n(ext);
    u64 k = rz_k(k_ptr, k_host, n);
    if (blockIdx.x == 0 && threadIdx.x == 0) *count = n - k;
    if (k == 0 || k == n) return;  // line 1: nothing moves
    u64 z = n - k;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < k; i += (u64)gridDim.x * blockDim.x) {
        u64 r = removal[i];
        if (r >= z && r < n) {
            u64 b = r - z;
            atomicOr(marks + (b >> 5), 1u << (b & 31));
        }
    }
}

#define RZ_NONE 0  // case B: both invalid, discarded
#define RZ_SOURCE 1  // case D: a valid source with no destination
#define RZ_DEST 2  // case C: a valid hole with no source

// Phase 2 (Alg. 1 lines 5-15; Alg. 2 lines 0, 5-15 with gridDim.x blocks).
// Block p owns items [p*s, p*s + s) of R and Z; it leaves its j_p source
// orphans in data[z + p*s ..] and its k_p destination orphans in r_out[p*s ..],
// and writes j_p and k_p to j_counts[p] and k_counts[p].
//
// In place is safe: an orphan's slot is below the end of the current step
// (j_p, k_p <= items seen), every item of the step has been read before the
// scan's barriers, and later steps read only beyond it. For the same reason
// r_out may be `removal` itself (select passes its own list).
extern "C" __global__ void __launch_bounds__(REAP_RZ_BLOCK)
    redzone_fill(Extent ext, Elem* data, const u64* removal, const u64* k_ptr, u64 k_host, const u32* marks,
                 u64* r_out, u64* j_counts, u64* k_counts) {
    u64 n = extent_n(ext);
    u64 k = rz_k(k_ptr, k_host, n);
    u64 jp = 0, kp = 0;
    // k and the batch bounds are the same in every thread, so the barriers
    // inside the loop are reached by the whole block.
    if (k != 0 && k != n) {
        u64 z = n - k;
        u64 s = (k + gridDim.x - 1) / gridDim.x;
        u64 start = min((u64)blockIdx.x * s, k);
        u64 end = min(start + s, k);
        for (u64 base = start; base < end; base += RZ_STEP) {
            Elem a[REAP_RZ_ITEMS];
            u64 r[REAP_RZ_ITEMS];
            u32 cls[REAP_RZ_ITEMS];
            u32 sources = 0, dests = 0;
#pragma unroll
            for (u32 e = 0; e < REAP_RZ_ITEMS; e++) {
                u64 i = base + (u64)e * REAP_RZ_BLOCK + threadIdx.x;  // coalesced per e
                cls[e] = RZ_NONE;
                if (i >= end) continue;
                r[e] = removal[i];
                bool deleted = (marks[i >> 5] >> (i & 31)) & 1;
                bool in_zone = r[e] >= z;  // also catches an invalid r >= n: never written
                if (!deleted) a[e] = data[z + i];
                if (in_zone && !deleted) {
                    cls[e] = RZ_SOURCE;
                    sources++;
                } else if (!in_zone && deleted) {
                    cls[e] = RZ_DEST;
                    dests++;
                } else if (!in_zone) {
                    data[r[e]] = a[e];  // case A: r < z, outside the red zone phase 2 reads
                }
            }
            // Per-step totals are below 2^32: both counts scan as one u64.
            u64 total;
            u64 before = rz_block_exclusive((u64)sources | ((u64)dests << 32), &total);
            u64 j = start + jp + (before & 0xffffffffull);
            u64 d = start + kp + (before >> 32);
#pragma unroll
            for (u32 e = 0; e < REAP_RZ_ITEMS; e++) {
                if (cls[e] == RZ_SOURCE) data[z + j++] = a[e];
                else if (cls[e] == RZ_DEST) r_out[d++] = r[e];
            }
            jp += total & 0xffffffffull;
            kp += total >> 32;
        }
    }
    if (threadIdx.x == 0) {
        j_counts[blockIdx.x] = jp;
        k_counts[blockIdx.x] = kp;
    }
}

// Phase 3 of Alg. 1 (lines 16-17): Z'[t] fills hole R'[t]. One block, as the
// whole of Alg. 1. |Z'| = |R'| (Lemma 4.2); min guards a bad list.
extern "C" __global__ void redzone_block_orphans(Extent ext, Elem* data, const u64* k_ptr, u64 k_host,
                                                 const u64* r_out, const u64* j_count, const u64* k_count) {
    u64 n = extent_n(ext);
    u64 k = rz_k(k_ptr, k_host, n);
    if (k == 0 || k == n) return;
    u64 z = n - k;
    u64 pairs = min(min(*j_count, *k_count), k);
    for (u64 t = threadIdx.x; t < pairs; t += blockDim.x) {
        u64 r = r_out[t];
        if (r < z) data[r] = data[z + t];
    }
}

// Alg. 2 line 17: J and K, the exclusive scans of the per-block orphan
// counts, in place, with the totals in J[blocks] and K[blocks]. The paper has
// every block build them redundantly; one block of a separate launch does it
// once here, and the launch boundary is the global sync phase 3 needs anyway.
extern "C" __global__ void __launch_bounds__(REAP_RZ_BLOCK) redzone_grid_scan(u64* j_counts, u64* k_counts,
                                                                               u32 blocks) {
    u64 cj = 0, ck = 0;
    for (u32 base = 0; base < blocks; base += REAP_RZ_BLOCK) {
        u32 i = base + threadIdx.x;
        u64 vj = i < blocks ? j_counts[i] : 0, vk = i < blocks ? k_counts[i] : 0;
        u64 tj, tk;
        u64 ej = rz_block_exclusive(vj, &tj);
        u64 ek = rz_block_exclusive(vk, &tk);
        if (i < blocks) {
            j_counts[i] = cj + ej;
            k_counts[i] = ck + ek;
        }
        cj += tj;
        ck += tk;
    }
    if (threadIdx.x == 0) {
        j_counts[blocks] = cj;
        k_counts[blocks] = ck;
    }
}

// Alg. 3: the slot in a batched orphan list of global orphan number t, or
// `none` when t is out of range. S holds blocks + 1 exclusive prefixes (total
// last); no block holds more than s orphans.
__device__ __forceinline__ u64 rz_load_balance(const u64* S, u32 blocks, u64 t, u64 s, u64 none) {
    // Line 1: S[q] <= q * s, so t's block is at least t / s.
    u64 lo = t / s;
    if (lo >= blocks || S[lo] > t || S[blocks] <= t) return none;  // line 2
    // Lines 3-6 by bisection: the last block q with S[q] <= t; S[hi] > t.
    u64 hi = blocks;
    while (hi - lo > 1) {
        u64 mid = lo + (hi - lo) / 2;
        if (S[mid] <= t) lo = mid;
        else hi = mid;
    }
    return lo * s + (t - S[lo]);  // lines 7-8: Index * b + SubIndex
}

// Phase 3 of Alg. 2 (lines 16-22): every orphan number t, grid-stride, finds
// its source and its destination with Alg. 3. No thread depends on another.
extern "C" __global__ void redzone_grid_orphans(Extent ext, Elem* data, const u64* k_ptr, u64 k_host,
                                                const u64* r_out, const u64* J, const u64* K, u32 blocks) {
    u64 n = extent_n(ext);
    u64 k = rz_k(k_ptr, k_host, n);
    if (k == 0 || k == n) return;
    u64 z = n - k;
    u64 s = (k + blocks - 1) / blocks;  // the batch size redzone_fill used
    u64 pairs = min(J[blocks], K[blocks]);
    for (u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x; t < pairs; t += (u64)gridDim.x * blockDim.x) {
        u64 y = rz_load_balance(J, blocks, t, s, k);  // source address
        u64 x = rz_load_balance(K, blocks, t, s, k);  // destination address
        if (y >= k || x >= k) continue;
        u64 r = r_out[x];
        if (r < z) data[r] = data[z + y];
    }
}
