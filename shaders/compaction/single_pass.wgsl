// (Over 600 lines: the tile states, the look-back, the staged tile and the
// scan share this file's workgroup memory and helpers; the direct-scatter
// tile, which only calls them, is single_pass_direct.wgsl.)
//
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
// Tile state: CHUNKS u32 words per tile. With CHUNKS = 1 (counts, whose
// totals stay below 2^30) a tile's state is one word, the value shifted left
// by 2 over a 2-bit flag (1 aggregate, 2 inclusive prefix), as in
// GPUPrefixSums: one load reads a tile whole, so a poll is one load per
// tile. Wider values (scans) take 2 or 4 words, each 16 bits of the 64-bit
// value over the same flag; a word is written whole, so no ordering between
// words is needed: a reader takes a tile only when all its words carry the
// same non-zero flag.
//
// The hop (a tile learning its predecessor's prefix and publishing its own)
// is the chain's critical path, so it is kept short: the invocations that
// poll publish the inclusive prefix the moment they have it, from inside the
// poll loop, before any workgroup barrier; the rest of the workgroup learns
// it afterwards. `chained` polls with one invocation and one word, since only
// its predecessor can end its wait.

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
// Words per tile state: 1 for counts below 2^30, 2 for 32-bit values, 4 for 64-bit scans.
override CHUNKS: u32 = 1u;
// `lookback`: predecessors each polling invocation reads per poll (at most
// LB_SPAN_MAX), so one poll of a subgroup of S covers S x LB_SPAN tiles and
// the prefix front moves that far per hop.
override LB_SPAN: u32 = 2u;
const LB_SPAN_MAX: u32 = 4u;
// Debugging (0 in timed runs): 1 counts into counters[4..8] the polls that
// found a silent predecessor, the tiles walked back, the fallbacks and the
// tiles that walked back.
override STATS: u32 = 0u;
// Measuring only (0 otherwise; results are then wrong): 1 skips the
// look-back's wait (each tile takes a prefix of 0), 2 skips the staging and
// the writes, so that timing the rest shows each part's share.
override PROBE: u32 = 0u;

// CHUNKS words per tile.
@group(0) @binding(5) var<storage, read_write> state: array<atomic<u32>>;
// [0] the tile counter, [1] a partition's kept total (the count pass's),
// [4..8] the look-back's statistics (STATS).
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
// The look-back's message to the workgroup: (silent tile or LB_DONE, prefix low, prefix high).
var<workgroup> lb_msg: vec4<u32>;
var<workgroup> sp_wide: array<vec2<u32>, WG>;

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn chunk(v: vec2<u32>, k: u32) -> u32 {
    return (v[k >> 1u] >> ((k & 1u) * 16u)) & 0xffffu;
}

// The word k of a tile state holding v under flag.
fn state_word(v: vec2<u32>, k: u32, flag: u32) -> u32 {
    if (CHUNKS == 1u) {
        return (v.x << 2u) | flag;
    }
    return (chunk(v, k) << 2u) | flag;
}

fn publish(tile: u32, v: vec2<u32>, flag: u32) {
    if (WITHHOLD != 0u && tile % max(WITHHOLD, 1u) == WITHHOLD - 1u) {
        return;
    }
    if (CHUNKS == 1u) {
        atomicStore(&state[tile], state_word(v, 0u, flag));
        return;
    }
    for (var k = 0u; k < CHUNKS; k++) {
        atomicStore(&state[tile * CHUNKS + k], state_word(v, k, flag));
    }
}

// Fills tile's empty words with its aggregate, found by a fallback.
fn offer(tile: u32, v: vec2<u32>) {
    for (var k = 0u; k < CHUNKS; k++) {
        atomicCompareExchangeWeak(&state[tile * CHUNKS + k], 0u, state_word(v, k, FLAG_AGGREGATE));
    }
}

// (flag, value) of a tile's state: NOT_READY unless every word agrees.
struct Read {
    flag: u32,
    value: vec2<u32>,
}

fn read_state(tile: u32) -> Read {
    if (CHUNKS == 1u) {
        let w = atomicLoad(&state[tile]);
        return Read(w & 3u, vec2<u32>(w >> 2u, 0u));
    }
    // All words loaded before any is looked at, so the loads overlap.
    var w: array<u32, 4>;
    for (var k = 0u; k < CHUNKS; k++) {
        w[k] = atomicLoad(&state[tile * CHUNKS + k]);
    }
    var flag = w[0] & 3u;
    var v = vec2<u32>(0u);
    for (var k = 0u; k < CHUNKS; k++) {
        if ((w[k] & 3u) != flag) {
            flag = NOT_READY;
        }
        v[k >> 1u] |= (w[k] >> 2u) << ((k & 1u) * 16u);
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

// The invocations that poll: the first subgroup for `lookback` (lb_window()
// of them, or invocation 0 without subgroups); invocation 0 alone for
// `chained`, whose wait only its predecessor can end.
fn lb_lanes() -> u32 {
    if (PUBLISH_AGGREGATE) {
        return lb_window();
    }
    return 1u;
}

// Tiles one polling invocation reads per poll.
fn lb_span() -> u32 {
    if (PUBLISH_AGGREGATE) {
        return clamp(LB_SPAN, 1u, LB_SPAN_MAX);
    }
    return 1u;
}

fn stat(k: u32, v: u32) {
    if (STATS != 0u && v != 0u) {
        atomicAdd(&counters[4u + k], v);
    }
}

// The subgroup helpers (workgroup_subgroup.wgsl) over `lanes` polling
// invocations: one invocation needs no subgroup operation.
fn lb_first_of(b: bool, lanes: u32) -> u32 {
    if (lanes == 1u) {
        return select(1u, 0u, b);
    }
    return lb_first(b);
}

fn lb_sum_of(v: vec2<u32>, lanes: u32) -> vec2<u32> {
    if (lanes == 1u) {
        return v;
    }
    if (CHUNKS == 1u) {
        // Counts of distinct tiles: their sum stays below the call's 2^30.
        return vec2<u32>(lb_sum32(v.x), 0u);
    }
    return lb_sum64(v);
}

fn lb_shuffle_of(v: u32, lane: u32, lanes: u32) -> u32 {
    if (lanes == 1u) {
        return v;
    }
    return lb_shuffle(v, lane);
}

// What one poll found: how many predecessors (from the nearest) it summed,
// whether it ended on an inclusive prefix, and their sum.
struct Poll {
    summed: u32,
    prefix: bool,
    sum: vec2<u32>,
}

// One invocation's walk over its span, nearest tile first: aggregates are
// summed up to the first tile that is not one (`first`, span if none); a
// prefix there is summed too and ends the walk.
struct Span {
    first: u32,
    ends: bool,
    sum: vec2<u32>,
}

fn span_step(a: Span, r: Read, s: u32) -> Span {
    if (a.first != LB_SPAN_MAX) {
        return a;
    }
    if (r.flag == FLAG_AGGREGATE) {
        return Span(a.first, false, add64(a.sum, r.value));
    }
    if (r.flag == FLAG_PREFIX) {
        return Span(s, true, add64(a.sum, r.value));
    }
    return Span(s, false, a.sum);
}

// Tile j - d's state as a poll sees it: past tile 0, an inclusive prefix of 0.
fn poll_read(j: u32, d: u32) -> Read {
    if (d > j) {
        return Read(FLAG_PREFIX, vec2<u32>(0u));
    }
    var r = read_state(j - d);
    // Tile 0's aggregate (offered by a fallback) is its prefix.
    if (d == j && r.flag == FLAG_AGGREGATE) {
        r.flag = FLAG_PREFIX;
    }
    return r;
}

// One poll by the `lanes` polling invocations of the predecessors j, j - 1,
// ...: invocation l reads the `span` tiles from j - l * span down. Every
// invocation returns the same. The reads are written out (no array indexed
// by the loop), so they stay in registers and all go out before any is used.
fn poll(j: u32, lanes: u32, span: u32) -> Poll {
    let lid = inv_lid;
    let d = lid * span;
    let r0 = poll_read(j, d);
    var r1 = Read(FLAG_PREFIX, vec2<u32>(0u));
    var r2 = r1;
    var r3 = r1;
    if (span > 1u) {
        r1 = poll_read(j, d + 1u);
    }
    if (span > 2u) {
        r2 = poll_read(j, d + 2u);
    }
    if (span > 3u) {
        r3 = poll_read(j, d + 3u);
    }
    var a = span_step(Span(LB_SPAN_MAX, false, vec2<u32>(0u)), r0, 0u);
    if (span > 1u) {
        a = span_step(a, r1, 1u);
    }
    if (span > 2u) {
        a = span_step(a, r2, 2u);
    }
    if (span > 3u) {
        a = span_step(a, r3, 3u);
    }
    let first = min(a.first, span);
    var sum = a.sum;
    // The first invocation that met something other than an aggregate
    // decides: a prefix there ends the walk, a silent tile is waited on.
    let k = lb_first_of(first < span, lanes);
    if (k < lanes && lid > k) {
        sum = vec2<u32>(0u);
    }
    let total = lb_sum_of(sum, lanes);
    if (k == lanes) {
        return Poll(lanes * span, false, total);
    }
    let at = lb_shuffle_of(first, k, lanes);
    let prefix = lb_first_of(a.ends, lanes) == k;
    return Poll(k * span + at, prefix, total);
}

// The exclusive prefix of tile `tile` whose own reduction is `agg`; publishes
// its inclusive prefix. The polling invocations walk back over their
// predecessors; the workgroup joins them only to reduce a predecessor that
// stayed silent for MAX_SPIN polls.
fn tile_prefix(tile: u32, agg: vec2<u32>, n: u32, mode: u32) -> vec2<u32> {
    let lid = inv_lid;
    if (tile == 0u) {
        if (lid == 0u) {
            publish(0u, agg, FLAG_PREFIX);
        }
        return vec2<u32>(0u);
    }
    if ((PROBE & 1u) != 0u) {
        if (lid == 0u) {
            publish(tile, agg, FLAG_PREFIX);
        }
        return vec2<u32>(0u);
    }
    let lanes = lb_lanes();
    let span = lb_span();
    if (lid == 0u && PUBLISH_AGGREGATE) {
        publish(tile, agg, FLAG_AGGREGATE);
    }
    var acc = vec2<u32>(0u);
    // The nearest predecessor not yet summed.
    var j = tile - 1u;
    var done = false;
    var polls = 0u;
    var walked = 0u;
    var fallbacks = 0u;
    var waits = 0u;
    var prefix = vec2<u32>(0u);
    loop {
        if (lid < lanes) {
            var ctl = LB_DONE;
            var spins = 0u;
            while (!done) {
                let p = poll(j, lanes, span);
                acc = add64(acc, p.sum);
                walked += p.summed;
                if (p.prefix) {
                    done = true;
                    // The hop's end: publish before anything else.
                    if (lid == 0u) {
                        publish(tile, add64(acc, agg), FLAG_PREFIX);
                    }
                } else {
                    if (p.summed > 0u) {
                        spins = 0u;
                    }
                    j -= p.summed;
                    if (p.summed < lanes * span) {
                        // Tile j is silent: wait on it.
                        spins += 1u;
                        polls += 1u;
                        waits += 1u;
                        if (spins > MAX_SPIN || polls > MAX_POLLS) {
                            ctl = j;
                            break;
                        }
                    }
                }
            }
            if (lid == 0u) {
                lb_msg = vec4<u32>(ctl, acc, 0u);
            }
        }
        let msg = workgroupUniformLoad(&lb_msg);
        if (msg.x == LB_DONE) {
            prefix = msg.yz;
            break;
        }
        // Decoupled Fallback: reduce the silent predecessor ourselves.
        let ctl = msg.x;
        let v = tile_reduce(ctl, n, mode);
        if (lid == 0u) {
            offer(ctl, v);
        }
        if (lid < lanes) {
            acc = add64(acc, v);
            walked += 1u;
            fallbacks += 1u;
            if (ctl == 0u) {
                done = true;
                if (lid == 0u) {
                    publish(tile, add64(acc, agg), FLAG_PREFIX);
                }
            } else {
                j = ctl - 1u;
            }
        }
    }
    if (STATS != 0u && lid == 0u) {
        stat(0u, waits);
        stat(1u, walked);
        stat(2u, fallbacks);
        stat(3u, 1u);
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
    if ((PROBE & 2u) != 0u) {
        if (base + m == n && lid == 0u) {
            write_count(prefix + tile_kept);
        }
        return;
    }
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
