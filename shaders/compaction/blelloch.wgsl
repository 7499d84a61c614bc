// `blelloch`: scan-then-scatter compaction on Blelloch's work-efficient
// scan, multi-level as seed 001 modules 10.3-10.4 build it (002 §2.3 names
// the two sweeps); what CUDPP did (seed 000 Table 3). Twin of
// kernels/compaction/blelloch.cu.
//
// A tile is 2 * WG values, one workgroup's memory, the section of 001's
// kernel. The up-sweep runs 001's reduction phase on every tile of a level,
// writes the partial-sum tree back in place and each tile's total to the
// level above, level by level until one tile holds all. The down-sweep then
// walks back down: each tile reloads its tree, takes its exclusive prefix
// from the finished level above as the root and runs Blelloch's exclusive
// down-sweep (swap and add), leaving the exclusive scan of all n. Levels are
// separate dispatches (a tile reads sums that other workgroups write), one
// workgroup per tile. Running sums are the scan variant's Elem (elem_add);
// WG is a power of two.
//
// The host dispatches the levels of the capacity's tree; each entry point
// works out from the device length which levels n's tree has (a counted
// call's n may have fewer), returns at once above its top, and treats its
// top as the top: the one tile whose total is the count.

// Levels 1.. of the tree back to back; level 0 (the leaves) is dst.
@group(0) @binding(5) var<storage, read_write> tree: array<Elem>;

var<workgroup> xy: array<Elem, 2u * WG>;
// The device length, read by one invocation: every barrier below must be in
// uniform control flow, and a storage load is not uniform to naga.
var<workgroup> blelloch_n: u32;

// Values per tile.
fn blelloch_tile() -> u32 {
    return 2u * WG;
}

fn blelloch_tiles(m: u32) -> u32 {
    return m / blelloch_tile() + select(0u, 1u, m % blelloch_tile() != 0u);
}

// The top level of the tree over n leaves: level l + 1 holds one sum per
// tile of level l, up to the first level that fits one tile.
fn blelloch_top(n: u32) -> u32 {
    var top = 0u;
    for (var m = n; m > blelloch_tile(); m = blelloch_tiles(m)) {
        top++;
    }
    return top;
}

// Values at level l of the tree over n leaves.
fn blelloch_len(n: u32, l: u32) -> u32 {
    var m = n;
    for (var i = 0u; i < l; i++) {
        m = blelloch_tiles(m);
    }
    return m;
}

// Invocation t's two values of level P.a's tile from `start` into xy, zeros
// past m: the leaves come from src on the way up (`up`) and from dst on the
// way down; a higher level from `tree` at P.b.
fn blelloch_fill(t: u32, start: u32, m: u32, up: bool) {
    for (var h = 0u; h < 2u; h++) {
        let i = start + h * WG + t;
        var v = elem_zero();
        if (i < m) {
            if (P.a != 0u) {
                v = tree[P.b + i];
            } else if (up) {
                v = src[i];
            } else {
                v = dst[i];
            }
        }
        xy[h * WG + t] = v;
    }
}

// Writes invocation t's two values back: leaves to dst, a higher level to `tree`.
fn blelloch_drain(t: u32, start: u32, m: u32) {
    for (var h = 0u; h < 2u; h++) {
        let i = start + h * WG + t;
        if (i < m) {
            if (P.a == 0u) {
                dst[i] = xy[h * WG + t];
            } else {
                tree[P.b + i] = xy[h * WG + t];
            }
        }
    }
}

// Up-sweep of level P.a (m values): reads the leaves from src (level 0) or
// its level of `tree`, writes each tile's partial sums back (dst for level
// 0), and each tile's total to the level above (`tree` from P.c); at the top
// (one tile) the count gets the total instead. Values past m are zeros, so
// a short last tile's total is still exact, and a top of no values (n = 0)
// still writes its count, 0.
@compute @workgroup_size(WG)
fn blelloch_up_sweep(inv: Invocation) {
    if (inv.lid == 0u) {
        blelloch_n = extent_len();
    }
    let n = workgroupUniformLoad(&blelloch_n);
    let top = blelloch_top(n);
    let level = P.a;
    if (level > top) {
        return; // n's tree is lower than the capacity's
    }
    let m = blelloch_len(n, level);
    var tiles = blelloch_tiles(m);
    if (level == top) {
        tiles = 1u;
    }
    let tile = group_index(inv.wg, inv.nwg);
    if (tile >= tiles) {
        return;
    }
    let t = inv.lid;
    let start = tile * blelloch_tile();
    blelloch_fill(t, start, m, true);
    workgroupBarrier();
    // 001 mod. 10.3's reduction phase: slot (t+1)*2*stride - 1 adds the slot stride to its left.
    for (var stride = 1u; stride <= WG; stride *= 2u) {
        let index = (t + 1u) * stride * 2u - 1u;
        if (index < blelloch_tile()) {
            xy[index] = elem_add(xy[index], xy[index - stride]);
        }
        workgroupBarrier();
    }
    blelloch_drain(t, start, m);
    if (t == 0u) {
        let total = xy[blelloch_tile() - 1u];
        if (level == top) {
            write_words(elem_words(total));
        } else {
            tree[P.c + tile] = total;
        }
    }
}

// Down-sweep of level P.a: its values (dst for level 0, else `tree` from
// P.b) hold the up-sweep's partial sums and become the exclusive scan;
// `tree` from P.c (the finished level above; ignored at the top: 0) holds
// what precedes each tile. Slots past m reload as zeros: the sweep carries
// them only into slots past m, which are not written back.
@compute @workgroup_size(WG)
fn blelloch_down_sweep(inv: Invocation) {
    if (inv.lid == 0u) {
        blelloch_n = extent_len();
    }
    let n = workgroupUniformLoad(&blelloch_n);
    let top = blelloch_top(n);
    let level = P.a;
    if (level > top) {
        return;
    }
    let m = blelloch_len(n, level);
    let tile = group_index(inv.wg, inv.nwg);
    if (tile >= blelloch_tiles(m)) {
        return;
    }
    let t = inv.lid;
    let start = tile * blelloch_tile();
    blelloch_fill(t, start, m, false);
    // The root becomes the tile's prefix; the invocation that loaded it replaces it.
    if (t == WG - 1u) {
        var prefix = elem_zero();
        if (level != top) {
            prefix = tree[P.c + tile];
        }
        xy[blelloch_tile() - 1u] = prefix;
    }
    workgroupBarrier();
    for (var stride = WG; stride >= 1u; stride /= 2u) {
        let index = (t + 1u) * stride * 2u - 1u;
        if (index < blelloch_tile()) {
            let left = xy[index - stride];
            xy[index - stride] = xy[index];
            xy[index] = elem_add(xy[index], left);
        }
        workgroupBarrier();
    }
    blelloch_drain(t, start, m);
}

// Each element moves itself to its offset: kept ones to offsets[i], rejected
// ones (with P.split) after all kept ones, to kept + (i - offsets[i]). Runs
// under the element's variant; the flags binding holds the mark's u32 flags
// (one word per element, not four bytes) and `marks` the exclusive scan of
// them; the count is the up-sweep's.
@compute @workgroup_size(WG)
fn blelloch_scatter(inv: Invocation) {
    let i = horn_item(inv);
    if (i >= extent_len()) {
        return;
    }
    let kept = atomicLoad(&words[P.count_word]);
    let before = marks[i];
    if (flags[i] != 0u) {
        dst[before] = src[i];
    } else if (P.split != 0u) {
        dst[kept + i - before] = src[i];
    }
}
