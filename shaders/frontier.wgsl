// The breadth-first level loop's device side on wgpu: kernels/frontier.cuh's
// twin (src/frontier.rs is the host side and says why the loop looks like
// this; its `host` module is the CPU twin). Every length of a frame is a u64
// word of one array, here a (lo, hi) pair of atomic<u32> in `words`; a stage
// reads its input's length from one word and writes its output's to
// another, and never writes past a capacity. The including shader declares
// `words`, `Params` (`prm`) with the level's word indices, and `WG`.

const FRONTIER_STATUS: u32 = 0u;
const FRONTIER_NEEDED: u32 = 1u;
const FRONTIER_OVERFLOW: u32 = 1u;
const FRONTIER_UNFINISHED: u32 = 2u;

var<workgroup> frontier_live: atomic<u32>;

// Items the expansion reads: the input's length, or 0 when the level before
// held no live item. Lengths past 2^32 cannot occur on this backend (its
// buffers index with u32), so the high word only clamps.
fn frontier_n(capacity: u32) -> u32 {
    let live = word_get(prm.input_live);
    if live.x == 0u && live.y == 0u { return 0u; }
    return length_of(prm.input_len, capacity);
}

// Whether `fan * n` slots fit `capacity`. When they do not, invocation 0
// says so in the status and records what was needed; every invocation
// computes the same answer and writes nothing. One invocation writes NEEDED
// per dispatch and dispatches run in order, so its max needs no atomic.
fn frontier_fits(first: bool, n: u32, fan: u32, capacity: u32) -> bool {
    let fits = n <= capacity / fan;
    if first {
        // n * fan as a u64: it may pass 2^32 when it does not fit.
        let lo = n * fan;
        let hi = u64_mul_hi(n, fan);
        word_set(prm.output_len, select(vec2<u32>(0u, 0u), vec2<u32>(lo, hi), fits));
        if !fits {
            atomicOr(&words[2u * FRONTIER_STATUS], FRONTIER_OVERFLOW);
            let had = word_get(FRONTIER_NEEDED);
            if hi > had.y || (hi == had.y && lo > had.x) {
                word_set(FRONTIER_NEEDED, vec2<u32>(lo, hi));
            }
        }
    }
    return fits;
}

// The high word of a * b.
fn u64_mul_hi(a: u32, b: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let mid = a1 * b0 + ((a0 * b0) >> 16u);
    let mid2 = a0 * b1 + (mid & 0xffffu);
    return a1 * b1 + (mid >> 16u) + (mid2 >> 16u);
}

// Adds the workgroup's live slots to the output's live count (one 64-bit
// add per workgroup); at the last level of the bound, a live slot means
// unfinished. Every invocation of the workgroup must call it.
fn frontier_count_live(lid: u32, live: u32) {
    if lid == 0u { atomicStore(&frontier_live, 0u); }
    workgroupBarrier();
    if live != 0u { atomicAdd(&frontier_live, live); }
    workgroupBarrier();
    if lid == 0u {
        let total = atomicLoad(&frontier_live);
        if total != 0u {
            word_add(prm.output_live, total);
            if prm.last != 0u { atomicOr(&words[2u * FRONTIER_STATUS], FRONTIER_UNFINISHED); }
        }
    }
}

// A fused expansion's round (compaction/site.wgsl, `atomic`): this
// invocation's `kept` items get slots from the level's length word, which
// ends as the level's kept total; the live word follows it. A total past the
// capacity is an overflow (the slots below it are written, the host redoes
// the frame, as frontier.cuh's `frontier_close`); at the last level of the
// bound, a kept item means unfinished. Returns this invocation's first slot.
fn frontier_reserve(lid: u32, kept: u32, capacity: u32) -> u32 {
    let r = site_reserve(lid, kept, prm.output_len);
    if lid == 0u && r.kept != 0u {
        word_add(prm.output_live, r.kept);
        if r.wrapped {
            atomicOr(&words[2u * FRONTIER_STATUS], FRONTIER_OVERFLOW);
            atomicMax(&words[2u * FRONTIER_NEEDED + 1u], 1u);
        } else if r.end > capacity {
            atomicOr(&words[2u * FRONTIER_STATUS], FRONTIER_OVERFLOW);
            atomicMax(&words[2u * FRONTIER_NEEDED], r.end);
        }
        if prm.last != 0u { atomicOr(&words[2u * FRONTIER_STATUS], FRONTIER_UNFINISHED); }
    }
    return r.first;
}

// Whether a stage that changes persistent state may run: not after an
// overflow or an unfinished loop (the host redoes the frame).
fn frontier_ok() -> bool {
    return atomicLoad(&words[2u * FRONTIER_STATUS]) == 0u && atomicLoad(&words[2u * FRONTIER_STATUS + 1u]) == 0u;
}

// A fused expansion's tile through a stable site (compaction/site.wgsl,
// `lookback` or `chained`): this invocation's `kept` items get slots in
// input order; the level's last tile writes the length word (its kept
// total) and the live word, and flags an overflow or an unfinished loop as
// frontier_reserve does. Returns this invocation's first slot.
fn frontier_stable(lid: u32, tile: u32, tiles: u32, kept: u32, capacity: u32, alg: u32) -> u32 {
    let r = site_stable(lid, tile, kept, alg);
    if lid == 0u && tile == tiles - 1u {
        word_set(prm.output_len, vec2<u32>(r.end, 0u));
        if r.end != 0u {
            word_add(prm.output_live, r.end);
            if r.end > capacity {
                atomicOr(&words[2u * FRONTIER_STATUS], FRONTIER_OVERFLOW);
                atomicMax(&words[2u * FRONTIER_NEEDED], r.end);
            }
            if prm.last != 0u { atomicOr(&words[2u * FRONTIER_STATUS], FRONTIER_UNFINISHED); }
        }
    }
    return r.first;
}
