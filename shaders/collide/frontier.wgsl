// The breadth-first level loop's device side for the collider: the WGSL twin
// of kernels/frontier.cuh (src/frontier.rs is the host side and says why the
// loop looks like this; frontier.rs `host` is the CPU twin of each function).
// Every length of a frame is a u64 word of one array, here two u32 halves of
// `words` (lo at 2w, hi at 2w + 1); the level's word indices come in the
// parameters `P` (len_in, live_in, len_out, live_out, last). A kernel reads its
// input's length from one word and writes its output's to another, and never
// writes past a capacity.
//
// Collider-local for now: the tracer's twin (shaders/frontier.wgsl) is written
// beside this one; the two can become one header once both have landed.

const STATUS: u32 = 0u;
const NEEDED: u32 = 1u;
const OVERFLOW: u32 = 1u;
const UNFINISHED: u32 = 2u;
const CANDIDATES: u32 = 4u;

fn load64(w: u32) -> vec2<u32> {
    return vec2<u32>(atomicLoad(&words[2u * w]), atomicLoad(&words[2u * w + 1u]));
}

fn store64(w: u32, v: vec2<u32>) {
    atomicStore(&words[2u * w], v.x);
    atomicStore(&words[2u * w + 1u], v.y);
}

// A u64 word as a u32 length: past u32 it is more than any capacity here.
fn load_len(w: u32) -> u32 {
    let v = load64(w);
    return select(v.x, 0xffffffffu, v.y != 0u);
}

// Adds `v` to the u64 word `w` with two u32 atomics: the low half's carry
// goes to the high half, so the total is exact whatever the order of the adds.
// Returns the low half before the add, and whether this add's place lies past
// 2^32 (a carry, or a high half already set): such a place is past every
// capacity, and the frame that saw it is redone anyway.
fn add64(w: u32, v: u32) -> vec2<u32> {
    let old = atomicAdd(&words[2u * w], v);
    let carry = old + v < old;
    let hi = atomicAdd(&words[2u * w + 1u], select(0u, 1u, carry));
    return vec2<u32>(old, select(0u, 1u, carry || hi != 0u));
}

fn set_status(flag: u32) {
    atomicOr(&words[2u * STATUS], flag);
}

// Items the expansion reads: the input's length, or 0 when the level before
// held no live item (the `none` loop ends there without a host read).
fn frontier_n() -> u32 {
    let live = load64(P.live_in);
    if (live.x == 0u && live.y == 0u) {
        return 0u;
    }
    return load_len(P.len_in);
}

// Whether `fan_out * n` slots fit `capacity`. When they do not, the first
// invocation says so in the status, records what was needed (the frame's
// largest need: the dispatches of a frame run in order, and only this one
// invocation writes the word in each), and the output is empty. Every
// invocation computes the same answer.
fn frontier_fits(first: bool, n: u32, fan_out: u32, capacity: u32) -> bool {
    let fits = n <= capacity / fan_out;
    if (first) {
        // n * fan_out as a u64 (fan_out is 4 at most).
        let need = vec2<u32>(n * fan_out, select(0u, n >> (32u - firstLeadingBit(fan_out)), fan_out > 1u));
        if (fits) {
            store64(P.len_out, need);
        } else {
            store64(P.len_out, vec2<u32>(0u, 0u));
            set_status(OVERFLOW);
            let had = load64(NEEDED);
            if (need.y > had.y || (need.y == had.y && need.x > had.x)) {
                store64(NEEDED, need);
            }
        }
    }
    return fits;
}

// Whether a stage that changes persistent state may run: not after an
// overflow or an unfinished loop (the host redoes the frame).
fn frontier_ok() -> bool {
    let s = load64(STATUS);
    return s.x == 0u && s.y == 0u;
}

var<workgroup> wg_sum: atomic<u32>;
var<workgroup> wg_base: vec2<u32>;

// Reserves `count` consecutive entries of the list counted by word `w`, one
// global atomic per workgroup: returns the invocation's first index and
// whether the places lie past 2^32 (add64). Every invocation of the
// workgroup must call it (it holds barriers), from uniform control flow.
fn wg_append(lid: u32, w: u32, count: u32) -> vec2<u32> {
    if (lid == 0u) {
        atomicStore(&wg_sum, 0u);
    }
    workgroupBarrier();
    let local = atomicAdd(&wg_sum, count);
    workgroupBarrier();
    if (lid == 0u) {
        let total = atomicLoad(&wg_sum);
        var base = vec2<u32>(0u, 0u);
        if (total > 0u) {
            base = add64(w, total);
        }
        wg_base = base;
    }
    workgroupBarrier();
    let base = wg_base;
    let first = base.x + local;
    return vec2<u32>(first, select(base.y, 1u, first < base.x));
}

// Adds the workgroup's live slots to the output's live count (one atomic per
// workgroup); at the last level of the bound, a live slot means unfinished.
// Every invocation must call it, from uniform control flow.
fn frontier_count_live(lid: u32, live: u32) {
    if (lid == 0u) {
        atomicStore(&wg_sum, 0u);
    }
    workgroupBarrier();
    atomicAdd(&wg_sum, live);
    workgroupBarrier();
    if (lid == 0u) {
        let total = atomicLoad(&wg_sum);
        if (total > 0u) {
            add64(P.live_out, total);
            if (P.last != 0u) {
                set_status(UNFINISHED);
            }
        }
    }
}
