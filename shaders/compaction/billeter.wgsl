// `billeter-{prefix,popc}-{scattered,staged,buffered,selective}`: Billeter,
// Olsson and Assarsson's three-phase compaction for wide SIMD machines (seed
// 000 §3-4), with the stream split (§5.3) and the global prefix sum (§5.2).
// Twin of kernels/compaction/billeter.cu.
//
// The paper's machine is P virtual processors of S lanes (§3.1). Here one
// processor is one subgroup, S its size read at run time (8 on lavapipe, 32
// on NVIDIA, 64 on AMD), or, on adapters without subgroups, VP_WIDTH = 32
// invocations that exchange values through workgroup memory (the `vp_*`
// helpers of workgroup.wgsl and workgroup_subgroup.wgsl). Processor p owns a
// contiguous range of whole granules of P.c elements (32, or S where larger,
// so a processor's ballot words are its own), ranges differing by at most one
// granule (§4.1), and walks it S elements at a time; the last group may be
// partial, its missing lanes invalid. Phases, named as on CUDA:
// - count (Listing 3): per-lane counts, one reduction per processor. Popc
//   also stores each group's ballot, one bit per element (§4.2).
// - scan: exclusive scan of the P counts by one workgroup; writes the total.
// - move (Listing 4): compactSIMD per group, by a prefix sum of the lanes'
//   flags (Listing 5) or the popcount of the stored ballot below the lane
//   (Listing 6), then one of four output modes (§3.5, §4.2). A partition also
//   writes the rejected lanes, after every kept element (§5.3).
// Scan (§5.2): sum / scan / prefix, the same three phases over values.
//
// Processors are dealt to the dispatch's SIMD groups round-robin, so P and
// the ranges do not depend on S, nor on a counted call's length, which the
// ranges are cut from (P is sized for the capacity; surplus processors get
// empty ranges, as on CUDA). A CUDA warp stages through shared memory with
// __syncwarp; WGSL has no barrier for one subgroup alone (SUBGROUP_BARRIER
// is not among the features reap asks for), so staging and buffering use
// workgroupBarrier. Every loop therefore runs the workgroup's longest range
// and processors with less left idle through the barriers.

// Tuning numbers (BilleterTuning in src/compaction/wgpu/billeter.rs).
// Groups a processor loads before processing them (at most BT_MAX_UNROLL).
override UNROLL: u32 = 4u;
// 1: popc compactSIMD (ballots stored by count), 0: prefix sum.
override BT_POPC: u32 = 0u;
// One of OUT_*.
override BT_OUTPUT: u32 = 0u;
// Staging slots: WG per output stream for staged, buffered and selective.
override BT_SLOTS: u32 = 1u;

const BT_MAX_UNROLL: u32 = 8u;
const OUT_SCATTERED: u32 = 0u;
const OUT_STAGED: u32 = 1u;
const OUT_BUFFERED: u32 = 2u;
const OUT_SELECTIVE: u32 = 3u;

// Per processor: its count (a sum's u64 as low, high words).
@group(0) @binding(5) var<storage, read_write> counts: array<vec2<u32>>;
// Per processor: where its output starts (phase 2).
@group(0) @binding(6) var<storage, read_write> offsets: array<vec2<u32>>;
// Popc: the ballots, one bit per element, 32 to a word.
@group(0) @binding(7) var<storage, read_write> masks: array<u32>;

var<workgroup> bt_shape: vec4<u32>;
// Each processor's S slots per stream (the rejected stream's from WG on).
var<workgroup> bt_buf: array<Elem, BT_SLOTS>;

// What every invocation of a workgroup agrees on.
struct Machine {
    // Elements the call covers.
    n: u32,
    // SIMD width.
    s: u32,
    // Processors P and elements per granule.
    procs: u32,
    gran: u32,
    granules: u32,
    // SIMD groups in the dispatch, and this workgroup's first.
    groups: u32,
    first: u32,
    // Rounds of processors, and groups of S in the longest range.
    rounds: u32,
    trips: u32,
}

// Reads the shape once and hands it to every invocation through workgroup
// memory, so that loops bounded by it are workgroup-uniform.
fn bt_machine(inv: Invocation) -> Machine {
    if (inv.lid == 0u) {
        bt_shape = vec4<u32>(extent_len(), vp_width(), inv.nwg.x * inv.nwg.y, group_index(inv.wg, inv.nwg));
    }
    let sh = workgroupUniformLoad(&bt_shape);
    var m: Machine;
    m.n = sh.x;
    m.s = sh.y;
    m.procs = P.b;
    m.gran = P.c;
    m.granules = m.n / m.gran + select(0u, 1u, m.n % m.gran != 0u);
    let per_wg = WG / m.s;
    m.groups = sh.z * per_wg;
    m.first = sh.w * per_wg;
    m.rounds = (m.procs + m.groups - 1u) / m.groups;
    let longest = m.granules / m.procs + select(0u, 1u, m.granules % m.procs != 0u);
    m.trips = longest * (m.gran / m.s);
    return m;
}

// The processor this invocation's SIMD group runs in round r.
fn bt_processor(m: Machine, r: u32, lid: u32) -> u32 {
    return r * m.groups + m.first + lid / m.s;
}

// Processor p's elements [x, y): its granules, balanced and in order
// (CUDA's processor_range); empty for p >= P.
fn bt_range(m: Machine, p: u32) -> vec2<u32> {
    if (p >= m.procs) {
        return vec2<u32>(m.n, m.n);
    }
    let base = m.granules / m.procs;
    let rem = m.granules % m.procs;
    let g0 = p * base + min(p, rem);
    let g1 = g0 + base + select(0u, 1u, p < rem);
    return vec2<u32>(min(g0 * m.gran, m.n), min(g1 * m.gran, m.n));
}

fn bt_unroll() -> u32 {
    return clamp(UNROLL, 1u, BT_MAX_UNROLL);
}

// Loads groups t .. t + UNROLL - 1 of range e, the lane's column of each: all
// loads issued before any is used (§4.3's wider loads); zero outside.
fn bt_load(x: ptr<function, array<Elem, BT_MAX_UNROLL>>, e: vec2<u32>, t: u32, s: u32, lane: u32) {
    for (var u = 0u; u < bt_unroll(); u++) {
        let i = e.x + (t + u) * s + lane;
        if (i < e.y) {
            (*x)[u] = src[i];
        } else {
            (*x)[u] = elem_zero();
        }
    }
}

// Phase 1, Listing 3. Lane s counts the valid elements of its column. Popc
// also stores each group's ballot (the paper built it by a bit-matrix
// transpose in shared memory, §4.2): S >= 32 lanes give whole words, smaller
// groups are gathered into a word first.
@compute @workgroup_size(WG)
fn billeter_count(inv: Invocation) {
    begin(inv);
    let m = bt_machine(inv);
    let lane = vp_lane();
    for (var r = 0u; r < m.rounds; r++) {
        let p = bt_processor(m, r, inv.lid);
        let e = bt_range(m, p);
        var c = 0u;
        var word = 0u;
        for (var t = 0u; t < m.trips; t += bt_unroll()) {
            var x: array<Elem, BT_MAX_UNROLL>;
            bt_load(&x, e, t, m.s, lane);
            for (var u = 0u; u < bt_unroll(); u++) {
                if (t + u >= m.trips) {
                    break;
                }
                let i0 = e.x + (t + u) * m.s;
                let i = i0 + lane;
                let valid = i < e.y && keep(i, x[u]);
                c += select(0u, 1u, valid);
                if (BT_POPC != 0u) {
                    let bits = vp_ballot(valid);
                    if (i0 < e.y) {
                        if (m.s >= 32u) {
                            if (lane < m.s / 32u) {
                                masks[i0 / 32u + lane] = bits[lane];
                            }
                        } else {
                            word |= bits.x << (i0 % 32u);
                            if ((i0 + m.s) % 32u == 0u || i0 + m.s >= e.y) {
                                if (lane == 0u) {
                                    masks[i0 / 32u] = word;
                                }
                                word = 0u;
                            }
                        }
                    }
                }
            }
        }
        // Once per processor: not time critical (Listing 3 line 9).
        let total = vp_inclusive_add(c).y;
        if (p < m.procs && lane == 0u) {
            counts[p] = vec2<u32>(total, 0u);
        }
    }
}

// 64-bit arithmetic on (low, high) words, wrapping.
fn bt_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn bt_sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

// The u64 whose low words' 16-bit halves sum to a (low) and b (high) and
// whose high words sum to h: sums of 32-bit words in u32 lose their carries,
// sums of 16-bit halves over at most 2^16 terms keep them.
fn bt_join(a: u32, b: u32, h: u32) -> vec2<u32> {
    return vec2<u32>(a + (b << 16u), h + ((b + (a >> 16u)) >> 16u));
}

// A prefix (inclusive or exclusive) and the total.
struct Scan64 {
    prefix: vec2<u32>,
    total: vec2<u32>,
}

// Phase 2: exclusive scan of the P values of `counts` into `offsets` by one
// workgroup, in chunks of WG; the total is the call's count or the scan's
// total. P.e = 1: u64 values (a u64 scan's sums), else u32 (counts, u32 sums).
@compute @workgroup_size(WG)
fn billeter_scan(inv: Invocation) {
    begin(inv);
    let procs = P.b;
    var carry = vec2<u32>(0u);
    for (var base = 0u; base < procs; base += WG) {
        let k = base + inv.lid;
        var v = vec2<u32>(0u);
        if (k < procs) {
            v = counts[k];
        }
        var s: Scan64;
        if (P.e != 0u) {
            let a = wg_exclusive_scan(v.x & 0xffffu);
            let b = wg_exclusive_scan(v.x >> 16u);
            let h = wg_exclusive_scan(v.y);
            s = Scan64(bt_join(a.x, b.x, h.x), bt_join(a.y, b.y, h.y));
        } else {
            let lo = wg_exclusive_scan(v.x);
            s = Scan64(vec2<u32>(lo.x, 0u), vec2<u32>(lo.y, 0u));
        }
        if (k < procs) {
            offsets[k] = bt_add64(carry, s.prefix);
        }
        carry = bt_add64(carry, s.total);
    }
    if (inv.lid == 0u) {
        // u32 values wrap at 32 bits, as on the CPU.
        write_words(vec2<u32>(carry.x, select(0u, carry.y, P.e != 0u)));
    }
}

// Popc: group i0's ballot from the stored words, in subgroupBallot's layout.
fn bt_group_bits(i0: u32, s: u32) -> vec4<u32> {
    let w = i0 / 32u;
    if (s < 32u) {
        return vec4<u32>((masks[w] >> (i0 % 32u)) & ((1u << s) - 1u), 0u, 0u, 0u);
    }
    var bits = vec4<u32>(0u);
    for (var k = 0u; k < s / 32u; k++) {
        bits[k] = masks[w + k];
    }
    return bits;
}

fn bt_sum4(v: vec4<u32>) -> u32 {
    return v.x + v.y + v.z + v.w;
}

// Listing 6 lines 9-10: POPC of the ballot's bits below the lane.
fn bt_rank(bits: vec4<u32>, lane: u32) -> u32 {
    let k = vec4<u32>(0u, 1u, 2u, 3u);
    let w = vec4<u32>(lane / 32u);
    let part = select(vec4<u32>(0u), vec4<u32>((1u << (lane % 32u)) - 1u), k == w);
    return bt_sum4(countOneBits(bits & select(part, vec4<u32>(0xffffffffu), k < w)));
}

// One output stream (kept, or in a split the rejected) of one processor in
// phase 3. Every lane of the processor holds the same state.
struct Writer {
    // Next output slot of this stream.
    j: u32,
    // Selective: staged (else scattered) for this processor.
    staged: bool,
    // Buffered: still in alignOutput.
    aligning: bool,
    // Buffered: elements held in the buffer.
    buffered: u32,
    // The processor's first slot of bt_buf for this stream.
    slot: u32,
}

// Passes one group to a stream: the lane's element, whether it belongs to
// the stream, its rank d among the group's members and their count `num`.
// `inside`: the group lies in the processor's range. Every invocation of
// the workgroup calls this together (it may hold barriers).
fn bt_put(w: ptr<function, Writer>, x: Elem, member: bool, d: u32, num: u32, inside: bool, s: u32, lane: u32) {
    if (BT_OUTPUT == OUT_BUFFERED) {
        bt_put_buffered(w, x, member, d, num, inside, s, lane);
        return;
    }
    let staged = BT_OUTPUT == OUT_STAGED || (BT_OUTPUT == OUT_SELECTIVE && (*w).staged);
    if (inside && !staged) {
        // Each valid lane stores straight to global memory (§4.2).
        if (member) {
            dst[(*w).j + d] = x;
        }
        (*w).j += num;
    }
    if (BT_OUTPUT == OUT_SCATTERED) {
        return;
    }
    // Compacted in workgroup memory, then numValid contiguous stores (§4.2).
    let stage = inside && staged;
    if (stage && member) {
        bt_buf[(*w).slot + d] = x;
    }
    workgroupBarrier(); // the lanes' writes before the flush reads them
    if (stage && lane < num) {
        dst[(*w).j + lane] = bt_buf[(*w).slot + lane];
    }
    workgroupBarrier(); // the flush reads before the next group overwrites
    if (stage) {
        (*w).j += num;
    }
}

// Listing 7. alignOutput writes the first elements unbuffered until j is a
// multiple of S; from then on only whole, aligned S-element writes leave the
// buffer, and the tail at the end (bt_finish). Line 11 reads `>`, but it
// must be `>=`: a buffer filled to exactly S would otherwise not be flushed
// and line 16 would wrap #buffered to 0, losing it (as on CPU and CUDA).
fn bt_put_buffered(w: ptr<function, Writer>, x: Elem, member: bool, d: u32, num: u32, inside: bool, s: u32, lane: u32) {
    let held = (*w).buffered;
    var flush = false;
    if (inside && num > 0u) {
        var aligned = true;
        if ((*w).aligning) {
            let need = (s - (*w).j % s) % s;
            if (need > 0u) {
                aligned = false;
                if (member) {
                    if (d < need) {
                        dst[(*w).j + d] = x;
                    } else {
                        bt_buf[(*w).slot + d - need] = x;
                    }
                }
                if (num >= need) {
                    (*w).j += need;
                    (*w).buffered = num - need;
                    (*w).aligning = false;
                } else {
                    (*w).j += num;
                }
            } else {
                (*w).aligning = false;
            }
        }
        if (aligned) {
            // Lines 9-10.
            if (member && d + held < s) {
                bt_buf[(*w).slot + d + held] = x;
            }
            flush = num + held >= s;
            // Line 16.
            (*w).buffered = (held + num) % s;
        }
    }
    workgroupBarrier(); // every lane's buffer writes (this and earlier groups) before the flush
    if (flush) {
        // Lines 11-13.
        dst[(*w).j + lane] = bt_buf[(*w).slot + lane];
    }
    workgroupBarrier(); // the flush reads before the overflow overwrites slots
    if (flush) {
        (*w).j += s;
        // Lines 14-15.
        if (member && d + held >= s) {
            bt_buf[(*w).slot + d + held - s] = x;
        }
    }
}

// Listing 7 lines 17-19: the partial buffer left over.
fn bt_finish(w: ptr<function, Writer>, lane: u32) {
    if (BT_OUTPUT != OUT_BUFFERED) {
        return;
    }
    workgroupBarrier();
    if (lane < (*w).buffered) {
        dst[(*w).j + lane] = bt_buf[(*w).slot + lane];
    }
}

// Phase 3, Listing 4, with compactSIMD by prefix sum (Listing 5) or the
// popcount of the stored ballot (Listing 6, never evaluating the keep rule
// again). Kept elements go to [offsets[p], +counts[p]); in a split the
// rejected ones follow all kept ones: the rejected elements before this
// range number its start - offsets[p], so they start at the total plus that
// (§5.3). P.d: the selective ratio as f32 bits.
@compute @workgroup_size(WG)
fn billeter_move(inv: Invocation) {
    begin(inv);
    let m = bt_machine(inv);
    let lane = vp_lane();
    let home = inv.lid - lane;
    let ratio = bitcast<f32>(P.d);
    // A split's kept total, written by phase 2.
    let total = atomicLoad(&words[P.count_word]);
    for (var r = 0u; r < m.rounds; r++) {
        let p = bt_processor(m, r, inv.lid);
        let e = bt_range(m, p);
        var kept = 0u;
        var at = 0u;
        if (p < m.procs) {
            kept = counts[p].x;
            at = offsets[p].x;
        }
        // Selective (§4.2): dense streams gain from staging (contiguous
        // stores of whole groups), sparse ones only pay its round trip.
        let len = f32(e.y - e.x);
        var kw = Writer(at, f32(kept) >= ratio * len, true, 0u, home);
        var rw = Writer(total + e.x - at, f32(e.y - e.x - kept) >= ratio * len, true, 0u, WG + home);
        workgroupBarrier(); // the last round's final flushes have read the buffers
        for (var t = 0u; t < m.trips; t += bt_unroll()) {
            var x: array<Elem, BT_MAX_UNROLL>;
            bt_load(&x, e, t, m.s, lane);
            for (var u = 0u; u < bt_unroll(); u++) {
                if (t + u >= m.trips) {
                    break;
                }
                let i0 = e.x + (t + u) * m.s;
                let i = i0 + lane;
                let inside = i0 < e.y;
                var f = false;
                var d = 0u;
                var num = 0u;
                if (BT_POPC != 0u) {
                    // Every lane reads the same words: one broadcast.
                    var bits = vec4<u32>(0u);
                    if (inside) {
                        bits = bt_group_bits(i0, m.s);
                    }
                    f = ((bits[lane / 32u] >> (lane % 32u)) & 1u) != 0u;
                    d = bt_rank(bits, lane);
                    num = bt_sum4(countOneBits(bits));
                } else {
                    f = i < e.y && keep(i, x[u]);
                    let sc = vp_inclusive_add(select(0u, 1u, f));
                    d = sc.x - select(0u, 1u, f);
                    num = sc.y;
                }
                bt_put(&kw, x[u], f, d, num, inside, m.s, lane);
                if (P.split != 0u) {
                    // Lanes inside the range are a prefix of the group, so
                    // the rejected lanes below this one number lane - d.
                    var width = 0u;
                    if (inside) {
                        width = min(m.s, e.y - i0);
                    }
                    bt_put(&rw, x[u], i < e.y && !f, lane - d, width - num, inside, m.s, lane);
                }
            }
        }
        bt_finish(&kw, lane);
        if (P.split != 0u) {
            bt_finish(&rw, lane);
        }
    }
}

// The value of a scan element: u32, or u64 as (low, high).
fn bt_value(x: Elem) -> vec2<u32> {
    return vec2<u32>(elem_word(x, 0u), select(0u, elem_word(x, 1u), ELEM_BYTES == 8u));
}

fn bt_elem(v: vec2<u32>) -> Elem {
    return elem_from_words(vec4<u32>(v.x, v.y, 0u, 0u), vec4<u32>(0u));
}

// (inclusive prefix, total) of u32 or u64 values over the SIMD group.
fn bt_vp_add(v: vec2<u32>) -> Scan64 {
    if (ELEM_BYTES == 4u) {
        let r = vp_inclusive_add(v.x);
        return Scan64(vec2<u32>(r.x, 0u), vec2<u32>(r.y, 0u));
    }
    let a = vp_inclusive_add(v.x & 0xffffu);
    let b = vp_inclusive_add(v.x >> 16u);
    let h = vp_inclusive_add(v.y);
    return Scan64(bt_join(a.x, b.x, h.x), bt_join(a.y, b.y, h.y));
}

// Global prefix sum (§5.2), phase 1: each lane sums its column of the range,
// one reduction per processor.
@compute @workgroup_size(WG)
fn billeter_sum(inv: Invocation) {
    begin(inv);
    let m = bt_machine(inv);
    let lane = vp_lane();
    for (var r = 0u; r < m.rounds; r++) {
        let p = bt_processor(m, r, inv.lid);
        let e = bt_range(m, p);
        var s = vec2<u32>(0u);
        for (var t = 0u; t < m.trips; t += bt_unroll()) {
            var x: array<Elem, BT_MAX_UNROLL>;
            bt_load(&x, e, t, m.s, lane);
            for (var u = 0u; u < bt_unroll(); u++) {
                s = bt_add64(s, bt_value(x[u])); // zero outside the range
            }
        }
        let sum = bt_vp_add(s).total;
        if (p < m.procs && lane == 0u) {
            counts[p] = sum;
        }
    }
}

// Phase 3 of the prefix sum: a SIMD prefix sum per group plus the running
// offset; every group is read and written as one whole, aligned S-element
// access.
@compute @workgroup_size(WG)
fn billeter_prefix(inv: Invocation) {
    begin(inv);
    let m = bt_machine(inv);
    let lane = vp_lane();
    for (var r = 0u; r < m.rounds; r++) {
        let p = bt_processor(m, r, inv.lid);
        let e = bt_range(m, p);
        var carry = vec2<u32>(0u);
        if (p < m.procs) {
            carry = offsets[p];
        }
        for (var t = 0u; t < m.trips; t += bt_unroll()) {
            var x: array<Elem, BT_MAX_UNROLL>;
            bt_load(&x, e, t, m.s, lane);
            for (var u = 0u; u < bt_unroll(); u++) {
                if (t + u >= m.trips) {
                    break;
                }
                let i = e.x + (t + u) * m.s + lane;
                let v = bt_value(x[u]);
                let sc = bt_vp_add(v);
                if (i < e.y) {
                    dst[i] = bt_elem(bt_add64(carry, bt_sub64(sc.prefix, v)));
                }
                carry = bt_add64(carry, sc.total);
            }
        }
    }
}
