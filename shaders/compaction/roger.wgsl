// `roger`: the hierarchical stream reduction of seed 003 §III (Roger,
// Assarsson, Holzschuch 2007). Twin of kernels/compaction/roger.cu.
//
// The stream is cut into blocks of s = S elements (64 in 003 §V-A); one
// workgroup of WG >= S invocations stands for one block. Per block: pSum,
// the empty elements at or before each element (§III-B1, "sum inside
// blocks"); then one invocation per output position runs the improved
// dichotomic search of Fig. 5 to gather the block's kept elements to its
// front (§III-B2). A scan of the blocks' empty counts (§III-C, Fig. 6,
// "global sum") gives each block's displacement, and the concatenation moves
// every block's run into place, the work the paper does by line drawing.
//
// Dispatches are sized from the capacity's blocks; a block past the device
// length's is empty and counts 0 empty elements, so the global sum can run
// over the capacity's blocks and still total the call's own.

// Elements per block, s.
override S: u32 = 64u;

// 1 per kept element, 0 per empty one ("mark").
@group(0) @binding(5) var<storage, read_write> marks: array<u32>;
// pSum: per element, the empty elements of its block at or before it.
@group(0) @binding(6) var<storage, read_write> psum: array<u32>;
// [0]: all empty elements; from 1 the global sum's levels, the first one
// each block's empty count (scanned in place into the empties before it).
@group(0) @binding(7) var<storage, read_write> sums: array<u32>;

const SUMS_TOTAL: u32 = 0u;
const SUMS_LEVEL0: u32 = 1u;

// The first element and the length of block `blk` of an n-element stream
// (length 0 past the stream).
fn roger_block(blk: u32, n: u32) -> vec2<u32> {
    let base = blk * S;
    if (base >= n) {
        return vec2<u32>(base, 0u);
    }
    return vec2<u32>(base, min(S, n - base));
}

// Mark: marks[i] = 1 when element i survives.
@compute @workgroup_size(WG)
fn roger_mark(inv: Invocation) {
    let i = group_index(inv.wg, inv.nwg) * WG + inv.lid;
    if (i < extent_len()) {
        marks[i] = select(0u, 1u, keep_at(i));
    }
}

// Sum inside blocks: psum[i] = empty elements of i's block at or before i,
// and the block's empty count (its last pSum term) into the global sum's
// first level. The paper's fragments ran Blelloch's scan [5]; here it is the
// workgroup scan (subgroups or workgroup memory).
@compute @workgroup_size(WG)
fn roger_sum_inside_blocks(inv: Invocation) {
    begin(inv);
    let blk = group_index(inv.wg, inv.nwg);
    let b = roger_block(blk, extent_len());
    let t = inv.lid;
    var empty = 0u;
    if (t < b.y && marks[b.x + t] == 0u) {
        empty = 1u;
    }
    let scan = wg_exclusive_scan(empty);
    if (t < b.y) {
        psum[b.x + t] = scan.x + empty;
    }
    if (t == 0u) {
        sums[SUMS_LEVEL0 + blk] = scan.y;
    }
}

// The block's pSum and marks, staged in workgroup memory (the texture the paper reads).
var<workgroup> s_psum: array<u32, S>;
var<workgroup> s_mark: array<u32, S>;

// p(j): the unwanted elements through j. Searching for the kept elements,
// pSum itself; for the rejected ones (a split), the kept elements through j,
// j + 1 - pSum[j], play its part.
fn roger_p(j: i32, rejected: bool) -> i32 {
    let e = i32(s_psum[j]);
    return select(e, j + 1 - e, rejected);
}

fn roger_wanted(j: i32, rejected: bool) -> bool {
    return (s_mark[j] != 0u) != rejected;
}

// 003 Fig. 5: in a block of `len` elements, the wanted element j_i with
// j_i - p(j_i) = i; -1 when fewer than i + 1 are wanted. j - p(j) is
// non-decreasing and contracting (|j - j_i| >= |j - p(j) - i|), so each probe
// both halves the interval and moves the far bound by its miss.
fn roger_search(len: i32, i: i32, rejected: bool) -> i32 {
    var lower = i + roger_p(i, rejected);
    var upper = i + roger_p(len - 1, rejected);
    if (upper > len - 1) {
        return -1; // no element at position i
    }
    var j = (lower + upper) / 2;
    var found = j - roger_p(j, rejected) - i;
    // found == 0 at an unwanted j means j_i lies to the left (j - p(j) only
    // reaches i there after passing j_i), hence max(1, found).
    while (found != 0 || !roger_wanted(j, rejected)) {
        if (found < 0) {
            lower = j - found;
        } else {
            upper = j - max(1, found);
        }
        j = (lower + upper) / 2;
        found = j - roger_p(j, rejected) - i;
    }
    return j;
}

// Dichotomic search: invocation t of a block gathers the element for
// position t of its reduced block (dst): kept elements first, then with a
// split the rejected ones.
@compute @workgroup_size(WG)
fn roger_dichotomic_search(inv: Invocation) {
    let blk = group_index(inv.wg, inv.nwg);
    let b = roger_block(blk, extent_len());
    let t = inv.lid;
    if (t < b.y) {
        s_psum[t] = psum[b.x + t];
        s_mark[t] = marks[b.x + t];
    }
    workgroupBarrier();
    if (t >= b.y) {
        return;
    }
    let len = i32(b.y);
    let kept = len - i32(s_psum[len - 1]);
    var j = -1;
    if (i32(t) < kept) {
        j = roger_search(len, i32(t), false);
    } else if (P.split != 0u) {
        j = roger_search(len, i32(t) - kept, true);
    }
    if (j >= 0) {
        dst[b.x + t] = src[b.x + u32(j)];
    }
}

// Global sum, up the tree: each workgroup scans a tile of WG * SUM_ITEMS
// values of a level in place (exclusive) and leaves the tile's total in the
// next level; a level of one tile leaves it in SUMS_TOTAL instead.
// P.b: the level's first index in `sums`, P.c its length, P.d the next
// level's first index (SUMS_TOTAL at the top).
const SUM_ITEMS: u32 = 4u;

@compute @workgroup_size(WG)
fn roger_global_sum_up(inv: Invocation) {
    begin(inv);
    let tile = group_index(inv.wg, inv.nwg);
    let first = tile * WG * SUM_ITEMS + inv.lid * SUM_ITEMS;
    var v: array<u32, SUM_ITEMS>;
    var mine = 0u;
    for (var e = 0u; e < SUM_ITEMS; e++) {
        let i = first + e;
        v[e] = select(0u, sums[P.b + i], i < P.c);
        mine += v[e];
    }
    let scan = wg_exclusive_scan(mine);
    var acc = scan.x;
    for (var e = 0u; e < SUM_ITEMS; e++) {
        let i = first + e;
        if (i < P.c) {
            sums[P.b + i] = acc;
        }
        acc += v[e];
    }
    if (inv.lid == 0u) {
        sums[P.d + tile] = scan.y;
    }
}

// Global sum, down the tree: every value of a level gets its tile's prefix
// from the level above (P.d; P.b and P.c as above).
@compute @workgroup_size(WG)
fn roger_global_sum_down(inv: Invocation) {
    let i = group_index(inv.wg, inv.nwg) * WG + inv.lid;
    if (i < P.c) {
        sums[P.b + i] += sums[P.d + i / (WG * SUM_ITEMS)];
    }
}

// Concatenation: invocation k of a block moves element k of its reduced
// block (src), the segment the paper draws as a line. The kept run starts
// after the kept elements of the blocks before it (base - empty before);
// with a split, the rejected run after all kept elements and the rejected
// ones before it.
@compute @workgroup_size(WG)
fn roger_concatenation(inv: Invocation) {
    let n = extent_len();
    let blk = group_index(inv.wg, inv.nwg);
    let b = roger_block(blk, n);
    let kept = n - sums[SUMS_TOTAL];
    let k = inv.lid;
    if (blk == 0u && k == 0u) {
        write_count(kept);
    }
    if (k >= b.y) {
        return;
    }
    let before = sums[SUMS_LEVEL0 + blk];
    let block_kept = b.y - psum[b.x + b.y - 1u];
    if (k < block_kept) {
        dst[b.x - before + k] = src[b.x + k];
    } else if (P.split != 0u) {
        dst[kept + before + (k - block_kept)] = src[b.x + k];
    }
}
