// `redzone-block` and `redzone-grid`: Bontes & Gain's Redzone stream
// compaction (seed 004 §4), O(k) in place and unstable. The last k slots of
// the data (dst), the red zone Z = data[z..n) with z = n - k, supply the
// survivors that fill the holes (removal indices below z). Twin of
// kernels/compaction/redzone.cu.
//
// Phases (seed 004 Alg. 1 and 2), one pass each:
// - redzone_mark, phase 1 (lines 3-4): every removal index r >= z sets bit
//   r - z of a k-bit bitmap (a generic Elem has no spare bits to mark in place).
// - redzone_fill, phase 2 (lines 5-15): item i pairs Z[i] with R[i] and applies
//   Table 1. Case A moves Z[i] into hole R[i] at once; source orphans (case D)
//   go in place to the front of the workgroup's batch of Z; destination
//   orphans (case C) to R' at the same offsets. Each workgroup walks its batch
//   in steps of WG * ITEMS items, a workgroup scan of the per-invocation
//   orphan counts (PrefixSumToIndex, lines 9 and 12) giving their slots. One
//   workgroup is Alg. 1; many with batches of s = ceil(k / |P|) are Alg. 2.
// - phase 3 (lines 16-17 / 16-22): redzone_block_orphans pairs Alg. 1's two
//   contiguous lists; Alg. 2 scans the per-workgroup counts
//   (redzone_grid_scan, line 17) and redzone_grid_orphans maps each orphan
//   number t to its slot with the load balancer of Alg. 3.
// Select adds two passes before them: redzone_mark_rejected lists the
// rejected indices (seed 004 §5's phase for every competitor) and
// redzone_copy copies the input to the output, which Redzone then compacts.
//
// k lives on the device when Redzone serves select (the list's length), so
// every pass reads it through rz_k(); `remove` knows k on the host. Dispatches
// are sized on the host from an upper bound of k, and every index is checked
// against n and k, so even a bad removal list cannot make a pass touch memory
// outside its buffers. n is extent_len(): a counted select's is on the device.
//
// P.e: k, or NO_WORD when it is rz_meta[RZ_K] (select). P.f: |P|, the
// workgroups of phase 2. P.g: 1 when R' overwrites R in place (select owns
// its list, as the paper does), 0 when it goes to rz_out (`remove` lends
// the caller's list).

// Items each invocation classifies per step of phase 2 (at most RZ_MAX_ITEMS).
override ITEMS: u32 = 4u;
const RZ_MAX_ITEMS: u32 = 16u;

// R: the removal indices as u64 (low, high) words; R' too with P.g == 1.
@group(0) @binding(5) var<storage, read_write> rz_list: array<vec2<u32>>;
// R' when it cannot overwrite R.
@group(0) @binding(6) var<storage, read_write> rz_out: array<u32>;
// [RZ_K] k (select); then J, the source-orphan counts j_p (|P| + 1 with the
// total), K, the destination-orphan counts k_p (as many), then the red
// zone's bitmap. Cleared by the host before the first pass.
@group(0) @binding(7) var<storage, read_write> rz_meta: array<atomic<u32>>;

const RZ_K: u32 = 0u;

fn rz_j(p: u32) -> u32 {
    return 1u + p;
}

fn rz_kc(p: u32) -> u32 {
    return 2u + P.f + p;
}

fn rz_mark_word(b: u32) -> u32 {
    return 3u + 2u * P.f + (b >> 5u);
}

// k, clamped to n so that z = n - k never wraps.
fn rz_k(n: u32) -> u32 {
    var k = P.e;
    if (k == NO_WORD) {
        k = atomicLoad(&rz_meta[RZ_K]);
    }
    return min(k, n);
}

// A removal index as u32: one past 2^32 saturates, outside any data.
fn rz_index(r: vec2<u32>) -> u32 {
    return select(r.x, 0xffffffffu, r.y != 0u);
}

fn rz_r_prime(d: u32) -> u32 {
    if (P.g != 0u) {
        return rz_index(rz_list[d]);
    }
    return rz_out[d];
}

fn rz_set_r_prime(d: u32, r: u32) {
    if (P.g != 0u) {
        rz_list[d] = vec2<u32>(r, 0u);
    } else {
        rz_out[d] = r;
    }
}

fn rz_invocation(inv: Invocation) -> vec2<u32> {
    let nwg = inv.nwg.x * inv.nwg.y;
    return vec2<u32>(group_index(inv.wg, inv.nwg) * WG + inv.lid, nwg * WG);
}

// (n, k) for the whole workgroup: barriers in loops bounded by them need
// values the workgroup agrees on.
var<workgroup> rz_nk: vec2<u32>;

fn rz_uniform_nk(lid: u32) -> vec2<u32> {
    if (lid == 0u) {
        let n = extent_len();
        rz_nk = vec2<u32>(n, rz_k(n));
    }
    return workgroupUniformLoad(&rz_nk);
}

var<workgroup> rz_tile_base: u32;

// Select's phase before Redzone: appends every rejected index to R, in no
// fixed order, one atomic per workgroup; R's length is k.
@compute @workgroup_size(WG)
fn redzone_mark_rejected(inv: Invocation) {
    begin(inv);
    let n = extent_len();
    let i = group_index(inv.wg, inv.nwg) * WG + inv.lid;
    let drop = i < n && !keep_at(i);
    let scan = wg_exclusive_scan(select(0u, 1u, drop));
    if (inv.lid == 0u && scan.y != 0u) {
        rz_tile_base = atomicAdd(&rz_meta[RZ_K], scan.y);
    }
    let base = workgroupUniformLoad(&rz_tile_base);
    if (drop) {
        rz_list[base + scan.x] = vec2<u32>(i, 0u);
    }
}

// dst[i] = src[i]: Redzone compacts a copy in place.
@compute @workgroup_size(WG)
fn redzone_copy(inv: Invocation) {
    let i = group_index(inv.wg, inv.nwg) * WG + inv.lid;
    if (i < extent_len()) {
        dst[i] = src[i];
    }
}

// Phase 1 (Alg. 1 lines 3-4). Also writes the survivors' count n - k.
@compute @workgroup_size(WG)
fn redzone_mark(inv: Invocation) {
    let n = extent_len();
    let k = rz_k(n);
    let g = rz_invocation(inv);
    if (g.x == 0u) {
        write_count(n - k);
    }
    if (k == 0u || k == n) {
        return; // line 1: nothing moves
    }
    let z = n - k;
    for (var i = g.x; i < k; i += g.y) {
        let r = rz_index(rz_list[i]);
        if (r >= z && r < n) {
            let b = r - z;
            atomicOr(&rz_meta[rz_mark_word(b)], 1u << (b & 31u));
        }
    }
}

const RZ_NONE: u32 = 0u; // case B: both invalid, discarded
const RZ_SOURCE: u32 = 1u; // case D: a valid source with no destination
const RZ_DEST: u32 = 2u; // case C: a valid hole with no source

// Phase 2 (Alg. 1 lines 5-15; Alg. 2 lines 0, 5-15 with |P| workgroups).
// Workgroup p owns items [p*s, p*s + s) of R and Z; it leaves its j_p source
// orphans in data[z + p*s ..] and its k_p destination orphans in R'[p*s ..],
// and writes j_p and k_p to J[p] and K[p].
//
// In place is safe: an orphan's slot is below the end of the current step
// (j_p, k_p <= items seen), every item of the step has been read before the
// scan's barriers, and later steps read only beyond it. For the same reason
// R' may overwrite R (select).
@compute @workgroup_size(WG)
fn redzone_fill(inv: Invocation) {
    begin(inv);
    let nk = rz_uniform_nk(inv.lid);
    let n = nk.x;
    let k = nk.y;
    let p = group_index(inv.wg, inv.nwg);
    var jp = 0u;
    var kp = 0u;
    // n, k and the batch bounds are the same in every invocation, so the
    // barriers inside the loop are reached by the whole workgroup.
    if (k != 0u && k != n) {
        let z = n - k;
        let s = k / P.f + select(0u, 1u, k % P.f != 0u);
        // p * s <= k where p <= k / s: no wrap.
        let start = select(k, p * s, p <= k / s);
        let end = start + min(s, k - start);
        for (var base = start; base < end; base += WG * ITEMS) {
            var a: array<Elem, RZ_MAX_ITEMS>;
            var r: array<u32, RZ_MAX_ITEMS>;
            var cls: array<u32, RZ_MAX_ITEMS>;
            var sources = 0u;
            var dests = 0u;
            for (var e = 0u; e < ITEMS; e++) {
                let i = base + e * WG + inv.lid; // coalesced per e
                cls[e] = RZ_NONE;
                if (i < end) {
                    r[e] = rz_index(rz_list[i]);
                    let deleted = ((atomicLoad(&rz_meta[rz_mark_word(i)]) >> (i & 31u)) & 1u) != 0u;
                    let in_zone = r[e] >= z; // also catches an invalid r >= n: never written
                    if (!deleted) {
                        a[e] = dst[z + i];
                    }
                    if (in_zone && !deleted) {
                        cls[e] = RZ_SOURCE;
                        sources += 1u;
                    } else if (!in_zone && deleted) {
                        cls[e] = RZ_DEST;
                        dests += 1u;
                    } else if (!in_zone) {
                        dst[r[e]] = a[e]; // case A: r < z, outside the red zone phase 2 reads
                    }
                }
            }
            // A step's totals are below 2^16 (WG * ITEMS <= 16,384): both counts scan as one word.
            let scan = wg_exclusive_scan(sources | (dests << 16u));
            var j = start + jp + (scan.x & 0xffffu);
            var d = start + kp + (scan.x >> 16u);
            for (var e = 0u; e < ITEMS; e++) {
                if (cls[e] == RZ_SOURCE) {
                    dst[z + j] = a[e];
                    j += 1u;
                } else if (cls[e] == RZ_DEST) {
                    rz_set_r_prime(d, r[e]);
                    d += 1u;
                }
            }
            jp += scan.y & 0xffffu;
            kp += scan.y >> 16u;
        }
    }
    if (inv.lid == 0u) {
        atomicStore(&rz_meta[rz_j(p)], jp);
        atomicStore(&rz_meta[rz_kc(p)], kp);
    }
}

// Phase 3 of Alg. 1 (lines 16-17): Z'[t] fills hole R'[t]. One workgroup,
// as the whole of Alg. 1. |Z'| = |R'| (Lemma 4.2); min guards a bad list.
@compute @workgroup_size(WG)
fn redzone_block_orphans(inv: Invocation) {
    let n = extent_len();
    let k = rz_k(n);
    if (k == 0u || k == n) {
        return;
    }
    let z = n - k;
    let pairs = min(min(atomicLoad(&rz_meta[rz_j(0u)]), atomicLoad(&rz_meta[rz_kc(0u)])), k);
    for (var t = inv.lid; t < pairs; t += WG) {
        let r = rz_r_prime(t);
        if (r < z) {
            dst[r] = dst[z + t];
        }
    }
}

// Alg. 2 line 17: J and K, the exclusive scans of the per-workgroup orphan
// counts, in place, with the totals in J[|P|] and K[|P|]. The paper has
// every block build them redundantly; one workgroup of a separate dispatch
// does it once here, and the dispatch boundary is the global sync phase 3
// needs anyway.
@compute @workgroup_size(WG)
fn redzone_grid_scan(inv: Invocation) {
    begin(inv);
    let blocks = P.f;
    var cj = 0u;
    var ck = 0u;
    for (var base = 0u; base < blocks; base += WG) {
        let i = base + inv.lid;
        var vj = 0u;
        var vk = 0u;
        if (i < blocks) {
            vj = atomicLoad(&rz_meta[rz_j(i)]);
            vk = atomicLoad(&rz_meta[rz_kc(i)]);
        }
        let sj = wg_exclusive_scan(vj);
        let sk = wg_exclusive_scan(vk);
        if (i < blocks) {
            atomicStore(&rz_meta[rz_j(i)], cj + sj.x);
            atomicStore(&rz_meta[rz_kc(i)], ck + sk.x);
        }
        cj += sj.y;
        ck += sk.y;
    }
    if (inv.lid == 0u) {
        atomicStore(&rz_meta[rz_j(blocks)], cj);
        atomicStore(&rz_meta[rz_kc(blocks)], ck);
    }
}

// The exclusive prefix S[q] (q <= |P|) of J (`j` true) or K.
fn rz_prefix(j: bool, q: u32) -> u32 {
    return atomicLoad(&rz_meta[select(rz_kc(q), rz_j(q), j)]);
}

// Alg. 3: the slot in a batched orphan list of global orphan number t, or
// `none` when t is out of range. No workgroup holds more than s orphans.
fn rz_load_balance(j: bool, blocks: u32, t: u32, s: u32, none: u32) -> u32 {
    // Line 1: S[q] <= q * s, so t's block is at least t / s.
    var lo = t / s;
    if (lo >= blocks || rz_prefix(j, lo) > t || rz_prefix(j, blocks) <= t) {
        return none; // line 2
    }
    // Lines 3-6 by bisection: the last block q with S[q] <= t; S[hi] > t.
    var hi = blocks;
    while (hi - lo > 1u) {
        let mid = lo + (hi - lo) / 2u;
        if (rz_prefix(j, mid) <= t) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo * s + (t - rz_prefix(j, lo)); // lines 7-8: Index * b + SubIndex
}

// Phase 3 of Alg. 2 (lines 16-22): every orphan number t finds its source
// and its destination with Alg. 3. No invocation depends on another.
@compute @workgroup_size(WG)
fn redzone_grid_orphans(inv: Invocation) {
    let n = extent_len();
    let k = rz_k(n);
    if (k == 0u || k == n) {
        return;
    }
    let z = n - k;
    let blocks = P.f;
    let s = k / blocks + select(0u, 1u, k % blocks != 0u); // the batch size redzone_fill used
    let pairs = min(rz_prefix(true, blocks), rz_prefix(false, blocks));
    let g = rz_invocation(inv);
    for (var t = g.x; t < pairs; t += g.y) {
        let y = rz_load_balance(true, blocks, t, s, k); // source address
        let x = rz_load_balance(false, blocks, t, s, k); // destination address
        if (y >= k || x >= k) {
            continue;
        }
        let r = rz_r_prime(x);
        if (r < z) {
            dst[r] = dst[z + y];
        }
    }
}
