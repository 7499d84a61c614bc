// Single-pass select, partition and scan over tiles with dynamic tile ids:
// the machinery lookback.wgsl and chained.wgsl share (twin of
// kernels/compaction/single_pass.cuh). They differ in one constant,
// PUBLISH_AGGREGATE: whether a tile publishes its aggregate before its
// inclusive prefix (decoupled look-back) or only the prefix (chained).
//
// A tile is WG invocations x ITEMS elements (64 bytes an invocation). It is
// loaded striped (coalesced) into workgroup memory, ranked blocked (each
// invocation its ITEMS consecutive elements, so ranks follow input order),
// staged compacted in workgroup memory and written out striped again.
//
// Forward progress. WebGPU promises none between workgroups: a tile spinning
// on a predecessor that the GPU never schedules (Apple, some mobile GPUs;
// lavapipe runs a bounded number of workgroups at a time) would wait
// forever. So every wait is bounded, as in Smith, Levien & Owens's Decoupled
// Fallback (SPAA 2025): after MAX_SPIN polls of a predecessor that has
// published nothing, the whole workgroup reduces that predecessor's input
// itself (it is read-only), offers the aggregate to its slot (a compare-
// exchange that only fills an empty one) and walks on past it. No workgroup
// then depends on another being scheduled, and chained gets the same
// guarantee: it waits for the inclusive prefix, and past the bound it falls
// back the same way.
//
// Tile state: CHUNKS u32 words per tile, each 16 bits of the 64-bit value
// shifted left by 2 over a 2-bit flag (1 aggregate, 2 inclusive prefix). A
// word is written whole, so no ordering between words is needed: a reader
// takes a tile only when all its words carry the same non-zero flag. 30-bit
// values in one word (GPUPrefixSums) are too few for 64-bit scans.

override ITEMS: u32 = 16u;
override TILE: u32 = WG * ITEMS;
// Polls of an unpublished predecessor before the workgroup reduces it itself.
override MAX_SPIN: u32 = 64u;
// Polls in all by one invocation, after which every silent predecessor is
// reduced at once: lavapipe ends all loops of an invocation after 65,535
// iterations (silently, with wrong results), so the walk must stay far below.
override MAX_POLLS: u32 = 16384u;
// Testing: every WITHHOLD-th tile (0: none) publishes nothing, so that its
// successors must fall back (GPUPrefixSums' EmulatedDeadlocking).
override WITHHOLD: u32 = 0u;
// Words per tile state: 2 for 32-bit values, 4 for 64-bit scans.
override CHUNKS: u32 = 2u;

// CHUNKS words per tile.
@group(0) @binding(5) var<storage, read_write> state: array<atomic<u32>>;
// [0] the tile counter, [1] a partition's kept total (the count pass's).
@group(0) @binding(6) var<storage, read_write> counters: array<atomic<u32>>;

const FLAG_AGGREGATE: u32 = 1u;
const FLAG_PREFIX: u32 = 2u;
const NOT_READY: u32 = 0u;
const LB_DONE: u32 = 0xffffffffu;

// One padding slot per 128 bytes, so that an invocation's ITEMS consecutive
// elements (the blocked reads) fall in distinct banks across a subgroup.
// log2(128 / ELEM_BYTES), set by the host.
override PAD_SHIFT: u32 = 5u;
override TILE_PADDED: u32 = TILE + (TILE >> PAD_SHIFT);
var<workgroup> sp_items: array<Elem, TILE_PADDED>;
// The tile compacted: kept elements at their rank, a partition's rejected
// ones after them; written out striped, so stores coalesce too. (A second
// array, not the first reused: ranks run behind positions, and another
// invocation may still be reading the slot a rank lands on.)
var<workgroup> sp_out: array<Elem, TILE_PADDED>;

fn slot(k: u32) -> u32 {
    return k + (k >> PAD_SHIFT);
}
var<workgroup> sp_tile: u32;
var<workgroup> lb_ctl: u32;
var<workgroup> lb_prefix: vec2<u32>;
var<workgroup> sp_wide: array<vec2<u32>, WG>;

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn chunk(v: vec2<u32>, k: u32) -> u32 {
    return (v[k >> 1u] >> ((k & 1u) * 16u)) & 0xffffu;
}

fn publish(tile: u32, v: vec2<u32>, flag: u32) {
    if (WITHHOLD != 0u && tile % max(WITHHOLD, 1u) == WITHHOLD - 1u) {
        return;
    }
    for (var k = 0u; k < CHUNKS; k++) {
        atomicStore(&state[tile * CHUNKS + k], (chunk(v, k) << 2u) | flag);
    }
}

// Fills tile's empty words with its aggregate, found by a fallback.
fn offer(tile: u32, v: vec2<u32>) {
    for (var k = 0u; k < CHUNKS; k++) {
        atomicCompareExchangeWeak(&state[tile * CHUNKS + k], 0u, (chunk(v, k) << 2u) | FLAG_AGGREGATE);
    }
}

// (flag, value) of a tile's state: NOT_READY unless every word agrees.
struct Read {
    flag: u32,
    value: vec2<u32>,
}

fn read_state(tile: u32) -> Read {
    var flag = 0u;
    var v = vec2<u32>(0u);
    for (var k = 0u; k < CHUNKS; k++) {
        let w = atomicLoad(&state[tile * CHUNKS + k]);
        let f = w & 3u;
        if (k == 0u) {
            flag = f;
        } else if (f != flag) {
            flag = NOT_READY;
        }
        v[k >> 1u] |= (w >> 2u) << ((k & 1u) * 16u);
    }
    return Read(flag, v);
}

// The elements of tile t: [t * TILE, min((t + 1) * TILE, n)).
fn tile_len(t: u32, n: u32) -> u32 {
    return min(TILE, n - t * TILE);
}

// A workgroup-wide 64-bit sum (the fallback's reduction of a scan tile).
fn wg_reduce64(v: vec2<u32>) -> vec2<u32> {
    let lid = inv_lid;
    sp_wide[lid] = v;
    workgroupBarrier();
    for (var d = WG / 2u; d > 0u; d >>= 1u) {
        if (lid < d) {
            sp_wide[lid] = add64(sp_wide[lid], sp_wide[lid + d]);
        }
        workgroupBarrier();
    }
    let r = sp_wide[0];
    workgroupBarrier();
    return r;
}

// Re-reduces tile t from its read-only input: its kept count (MODE_COUNT) or
// its sum (MODE_SUM). The whole workgroup calls it.
const MODE_COUNT: u32 = 0u;
const MODE_SUM: u32 = 1u;

fn tile_reduce(t: u32, n: u32, mode: u32) -> vec2<u32> {
    let base = t * TILE;
    let m = tile_len(t, n);
    if (mode == MODE_COUNT) {
        var c = 0u;
        for (var e = 0u; e < ITEMS; e++) {
            let k = e * WG + inv_lid;
            if (k < m && keep_at(base + k)) {
                c += 1u;
            }
        }
        return vec2<u32>(wg_reduce(c), 0u);
    }
    var s = elem_zero();
    for (var e = 0u; e < ITEMS; e++) {
        let k = e * WG + inv_lid;
        if (k < m) {
            s = elem_add(s, src[base + k]);
        }
    }
    return wg_reduce64(elem_words(s));
}

// The exclusive prefix of tile `tile` whose own reduction is `agg`; publishes
// its inclusive prefix. The first lb_window() invocations (a subgroup, or
// invocation 0 without subgroups) walk back over that many predecessors at a
// time; the workgroup joins them only to reduce a predecessor that stayed
// silent for MAX_SPIN polls.
fn tile_prefix(tile: u32, agg: vec2<u32>, n: u32, mode: u32) -> vec2<u32> {
    let lid = inv_lid;
    let window = lb_window();
    var acc = vec2<u32>(0u);
    // The nearest predecessor not yet summed.
    var j = 0u;
    var done = false;
    var polls = 0u;
    if (lid == 0u) {
        if (tile == 0u) {
            publish(0u, agg, FLAG_PREFIX);
        } else if (PUBLISH_AGGREGATE) {
            publish(tile, agg, FLAG_AGGREGATE);
        }
    }
    if (tile == 0u) {
        done = true;
    } else {
        j = tile - 1u;
    }
    loop {
        if (lid < window) {
            var ctl = LB_DONE;
            var spins = 0u;
            while (!done) {
                // Lane l reads tile j - l; lanes past tile 0 read as a prefix of 0.
                var s = Read(FLAG_PREFIX, vec2<u32>(0u));
                if (lid <= j) {
                    s = read_state(j - lid);
                    // Tile 0's aggregate (offered by a fallback) is its prefix.
                    if (j == lid && s.flag == FLAG_AGGREGATE) {
                        s.flag = FLAG_PREFIX;
                    }
                }
                // Aggregates up to the first lane that is not one: a prefix
                // there ends the walk, a silent tile there is waited on.
                let k = lb_first(s.flag != FLAG_AGGREGATE);
                let stop = lb_first(s.flag == FLAG_PREFIX);
                var v = vec2<u32>(0u);
                if (lid < k || (lid == k && stop == k)) {
                    v = s.value;
                }
                acc = add64(acc, lb_sum64(v));
                if (stop == k && k < window) {
                    done = true;
                } else if (k == window) {
                    j -= window;
                    spins = 0u;
                } else {
                    // Lane k's tile is silent: wait on it.
                    if (k > 0u) {
                        spins = 0u;
                    }
                    j -= k;
                    spins += 1u;
                    polls += 1u;
                    if (spins > MAX_SPIN || polls > MAX_POLLS) {
                        ctl = j;
                        break;
                    }
                }
            }
            if (lid == 0u) {
                lb_ctl = ctl;
                lb_prefix = acc;
            }
        }
        let ctl = workgroupUniformLoad(&lb_ctl);
        if (ctl == LB_DONE) {
            break;
        }
        // Decoupled Fallback: reduce the silent predecessor ourselves.
        let v = tile_reduce(ctl, n, mode);
        if (lid == 0u) {
            offer(ctl, v);
        }
        if (lid < window) {
            acc = add64(acc, v);
            if (ctl == 0u) {
                done = true;
            } else {
                j = ctl - 1u;
            }
        }
    }
    let prefix = workgroupUniformLoad(&lb_prefix);
    if (lid == 0u && tile != 0u) {
        publish(tile, add64(prefix, agg), FLAG_PREFIX);
    }
    return prefix;
}

// Takes the next tile id; LB_DONE past the last tile of n elements.
fn next_tile(n: u32) -> u32 {
    if (inv_lid == 0u) {
        sp_tile = atomicAdd(&counters[0], 1u);
    }
    let t = workgroupUniformLoad(&sp_tile);
    if (t * TILE >= n) {
        return LB_DONE;
    }
    return t;
}

// Loads tile t striped into sp_items (elements past n are left as they are).
// Four loads go out before any is used: in a plain loop each store to
// workgroup memory waits for its load, and the next load only goes out after
// it, so an invocation would wait out ITEMS memory latencies one by one.
fn load_tile(t: u32, m: u32) {
    let base = t * TILE;
    var e = 0u;
    if (m == TILE) {
        for (; e + 4u <= ITEMS; e += 4u) {
            let k = e * WG + inv_lid;
            let a = src[base + k];
            let b = src[base + k + WG];
            let c = src[base + k + 2u * WG];
            let d = src[base + k + 3u * WG];
            sp_items[slot(k)] = a;
            sp_items[slot(k + WG)] = b;
            sp_items[slot(k + 2u * WG)] = c;
            sp_items[slot(k + 3u * WG)] = d;
        }
    }
    for (; e < ITEMS; e++) {
        let k = e * WG + inv_lid;
        if (k < m) {
            sp_items[slot(k)] = src[base + k];
        }
    }
    workgroupBarrier();
}

// Select (split 0) or partition (1 in order, 2 reversed) of one tile.
fn compact_tile(n: u32, total: u32) {
    let t = next_tile(n);
    if (t == LB_DONE) {
        return;
    }
    let lid = inv_lid;
    let base = t * TILE;
    let m = tile_len(t, n);
    load_tile(t, m);
    // Blocked: this invocation's ITEMS consecutive elements, kept in a bit mask.
    var mask = 0u;
    var kept = 0u;
    for (var j = 0u; j < ITEMS; j++) {
        let k = lid * ITEMS + j;
        if (k < m && keep(base + k, sp_items[slot(k)])) {
            mask |= 1u << j;
            kept += 1u;
        }
    }
    let s = wg_exclusive_scan(kept);
    let tile_kept = s.y;
    let prefix = tile_prefix(t, vec2<u32>(tile_kept, 0u), n, MODE_COUNT).x;
    // Stage: kept at their rank, rejected after the tile's kept ones.
    var r = s.x;
    for (var j = 0u; j < ITEMS; j++) {
        let k = lid * ITEMS + j;
        if ((mask >> j & 1u) != 0u) {
            sp_out[slot(r)] = sp_items[slot(k)];
            r += 1u;
        } else if (P.split != 0u && k < m) {
            // r is the tile's kept count before k, so k - r rejected precede it.
            sp_out[slot(tile_kept + k - r)] = sp_items[slot(k)];
        }
    }
    workgroupBarrier();
    let out_len = select(tile_kept, m, P.split != 0u);
    let rejected_before = base - prefix;
    for (var e = 0u; e < ITEMS; e++) {
        let k = e * WG + lid;
        if (k < out_len) {
            if (k < tile_kept) {
                dst[prefix + k] = sp_out[slot(k)];
            } else if (P.split == 2u) {
                dst[n - 1u - (rejected_before + k - tile_kept)] = sp_out[slot(k)];
            } else {
                dst[total + rejected_before + k - tile_kept] = sp_out[slot(k)];
            }
        }
    }
    if (base + m == n && lid == 0u) {
        write_count(prefix + tile_kept);
    }
}

var<workgroup> sp_scan_buf: array<Elem, WG>;

struct ElemScan {
    excl: Elem,
    total: Elem,
}

// (exclusive prefix, total) of a 4- or 8-byte value over the workgroup
// (Hillis & Steele; 64-bit values carry across their words).
fn wg_scan_elem(v: Elem) -> ElemScan {
    let lid = inv_lid;
    sp_scan_buf[lid] = v;
    workgroupBarrier();
    for (var d = 1u; d < WG; d <<= 1u) {
        var t = elem_zero();
        if (lid >= d) {
            t = sp_scan_buf[lid - d];
        }
        workgroupBarrier();
        sp_scan_buf[lid] = elem_add(sp_scan_buf[lid], t);
        workgroupBarrier();
    }
    var excl = elem_zero();
    if (lid > 0u) {
        excl = sp_scan_buf[lid - 1u];
    }
    let total = sp_scan_buf[WG - 1u];
    workgroupBarrier();
    return ElemScan(excl, total);
}

// The exclusive scan of one tile.
fn scan_tile(n: u32) {
    let t = next_tile(n);
    if (t == LB_DONE) {
        return;
    }
    let lid = inv_lid;
    let base = t * TILE;
    let m = tile_len(t, n);
    load_tile(t, m);
    var sum = elem_zero();
    for (var j = 0u; j < ITEMS; j++) {
        let k = lid * ITEMS + j;
        if (k < m) {
            sum = elem_add(sum, sp_items[slot(k)]);
        }
    }
    let s = wg_scan_elem(sum);
    let total = elem_words(s.total);
    let prefix = tile_prefix(t, total, n, MODE_SUM);
    // In place: each invocation rewrites only the slots it reads.
    var run = elem_add(elem_from_words(vec4<u32>(prefix, 0u, 0u), vec4<u32>(0u)), s.excl);
    for (var j = 0u; j < ITEMS; j++) {
        let k = lid * ITEMS + j;
        if (k < m) {
            let x = sp_items[slot(k)];
            sp_items[slot(k)] = run;
            run = elem_add(run, x);
        }
    }
    workgroupBarrier();
    for (var e = 0u; e < ITEMS; e++) {
        let k = e * WG + lid;
        if (k < m) {
            dst[base + k] = sp_items[slot(k)];
        }
    }
    if (base + m == n && lid == 0u) {
        var all = add64(prefix, total);
        if (CHUNKS == 2u) {
            all.y = 0u; // a u32 scan's total wraps at 32 bits
        }
        write_words(all);
    }
}

@compute @workgroup_size(WG)
fn sp_select(inv: Invocation) {
    begin(inv);
    compact_tile(extent_len(), 0u);
}

// A partition with the rejected half in order: the count pass has put the kept total in counters[1].
@compute @workgroup_size(WG)
fn sp_partition(inv: Invocation) {
    begin(inv);
    compact_tile(extent_len(), atomicLoad(&counters[1]));
}

// The kept total of every tile, before a partition in order places its rejected elements.
@compute @workgroup_size(WG)
fn sp_count(inv: Invocation) {
    begin(inv);
    let n = extent_len();
    let t = group_index(inv.wg, inv.nwg);
    if (t * TILE >= n) {
        return;
    }
    let c = tile_reduce(t, n, MODE_COUNT).x;
    if (inv.lid == 0u && c != 0u) {
        atomicAdd(&counters[1], c);
    }
}

@compute @workgroup_size(WG)
fn sp_scan(inv: Invocation) {
    begin(inv);
    scan_tile(extent_len());
}
