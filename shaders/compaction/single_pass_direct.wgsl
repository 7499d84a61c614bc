// Select and partition by direct scatter: the tile path `lookback` and
// `chained` take where the adapter has subgroups (src/compaction/wgpu/single_pass.rs
// picks it). Its own file beside single_pass.wgsl, whose tile machinery
// (next_tile, tile_prefix, keep) it uses; the staged path stays there.

// Direct scatter, the twin of CUB's: each invocation keeps its ITEMS
// elements (striped, so loads coalesce) in registers, ranks them with one
// ballot per row and writes each kept one straight to its place: no copy of
// the tile in workgroup memory, so more workgroups fit and a tile can be
// larger. Only the rows' counts per SIMD group go through workgroup memory.
// Ranks follow input order: element base + e * WG + lid comes after every
// element of rows before e and of SIMD groups before its own in row e.
const DIRECT_MAX: u32 = 16u;
// ITEMS x (SIMD groups of the workgroup) counts: ITEMS * WG / 4 at most.
override DC_LEN: u32 = 1024u;
var<workgroup> dc: array<u32, DC_LEN>;

fn ones(b: vec4<u32>) -> u32 {
    return countOneBits(b.x) + countOneBits(b.y) + countOneBits(b.z) + countOneBits(b.w);
}

// Set bits of b below `lane`.
fn ones_below(b: vec4<u32>, lane: u32) -> u32 {
    var c = 0u;
    for (var w = 0u; w < 4u; w++) {
        let lo = w * 32u;
        if (lane >= lo + 32u) {
            c += countOneBits(b[w]);
        } else if (lane > lo) {
            c += countOneBits(b[w] & ((1u << (lane - lo)) - 1u));
        }
    }
    return c;
}

fn compact_tile_direct(n: u32, total: u32) {
    let t = next_tile(n);
    if (t == LB_DONE) {
        return;
    }
    let lid = inv_lid;
    let base = t * TILE;
    let m = tile_len(t, n);
    let width = vp_width();
    let lane = vp_lane();
    let g = lid / width;
    let groups = WG / width;
    // Every load goes out before any is used.
    var x: array<Elem, DIRECT_MAX>;
    if (m == TILE) {
        for (var e = 0u; e < ITEMS; e++) {
            x[e] = src[base + e * WG + lid];
        }
    } else {
        for (var e = 0u; e < ITEMS; e++) {
            let k = e * WG + lid;
            if (k < m) {
                x[e] = src[base + k];
            }
        }
    }
    var mask = 0u;
    for (var e = 0u; e < ITEMS; e++) {
        let k = e * WG + lid;
        if (k < m && keep(base + k, x[e])) {
            mask |= 1u << e;
        }
    }
    // Rank within the row's SIMD group; the group's count to workgroup memory.
    var rank: array<u32, DIRECT_MAX>;
    for (var e = 0u; e < ITEMS; e++) {
        let b = vp_ballot(((mask >> e) & 1u) != 0u);
        rank[e] = ones_below(b, lane);
        if (lane == 0u) {
            dc[e * groups + g] = ones(b);
        }
    }
    workgroupBarrier();
    // Exclusive scan of the counts in row order, each invocation a run of them.
    let len = ITEMS * groups;
    let per = (len + WG - 1u) / WG;
    let lo = min(lid * per, len);
    let hi = min(lo + per, len);
    var sum = 0u;
    for (var i = lo; i < hi; i++) {
        sum += dc[i];
    }
    let sc = wg_exclusive_scan(sum);
    var run = sc.x;
    for (var i = lo; i < hi; i++) {
        let c = dc[i];
        dc[i] = run;
        run += c;
    }
    workgroupBarrier();
    let tile_kept = sc.y;
    let prefix = tile_prefix(t, vec2<u32>(tile_kept, 0u), n, MODE_COUNT).x;
    if ((PROBE & 2u) != 0u) {
        if (base + m == n && lid == 0u) {
            write_count(prefix + tile_kept);
        }
        return;
    }
    let rejected_before = base - prefix;
    for (var e = 0u; e < ITEMS; e++) {
        let k = e * WG + lid;
        let kept_before = dc[e * groups + g] + rank[e];
        if (((mask >> e) & 1u) != 0u) {
            dst[prefix + kept_before] = x[e];
        } else if (P.split != 0u && k < m) {
            // k - kept_before rejected elements of the tile precede this one.
            let r = rejected_before + k - kept_before;
            if (P.split == 2u) {
                dst[n - 1u - r] = x[e];
            } else {
                dst[total + r] = x[e];
            }
        }
    }
    if (base + m == n && lid == 0u) {
        write_count(prefix + tile_kept);
    }
}

@compute @workgroup_size(WG)
fn sp_select_direct(inv: Invocation) {
    begin(inv);
    compact_tile_direct(extent_len(), 0u);
}

@compute @workgroup_size(WG)
fn sp_partition_direct(inv: Invocation) {
    begin(inv);
    compact_tile_direct(extent_len(), atomicLoad(&counters[1]));
}
