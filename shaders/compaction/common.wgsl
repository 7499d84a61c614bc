// What every library shader shares: the call's parameters, the keep rule,
// the extent of a counted call and where the count goes. The prelude the host
// puts first declares ELEM_BYTES, KEEP, the `Elem` type and its helpers
// (elem4.wgsl … elem32.wgsl) and `reap_predicate`.
// Twin of kernels/compaction/common.cuh.

// One dispatch's parameters (src/compaction/wgpu/runtime.rs `Params`; keep the two in sync).
struct Params {
    // Elements the call covers at most: sizes the dispatch and scratch.
    cap: u32,
    // Word of `words` holding a counted call's length (low half), or NO_WORD.
    len_word: u32,
    // Word of `words` that receives the count (low half; the high half is zeroed).
    count_word: u32,
    // 0 select, 1 partition with the rejected half in order, 2 reversed.
    split: u32,
    // Stage-specific numbers (a pass's offset, a tile count …); never the keep rule's.
    a: u32,
    b: u32,
    c: u32,
    d: u32,
    sentinel: array<vec4<u32>, 2>,
    // The predicate's two u64 parameters as (lo, hi, lo, hi); a sort split's key bit in .x.
    pred: vec4<u32>,
    e: u32,
    f: u32,
    g: u32,
    h: u32,
}

const NO_WORD: u32 = 0xffffffffu;
const KEEP_FLAGS: u32 = 0u;
const KEEP_SENTINEL: u32 = 1u;
const KEEP_PREDICATE: u32 = 2u;
const KEEP_BIT: u32 = 3u;

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> src: array<Elem>;
@group(0) @binding(2) var<storage, read_write> dst: array<Elem>;
// A byte per element, four to a word.
@group(0) @binding(3) var<storage, read> flags: array<u32>;
// The caller's lens words (u64s as low, high pairs) or the call's own count.
@group(0) @binding(4) var<storage, read_write> words: array<atomic<u32>>;

// The number of elements this call compacts: a counted call's length word,
// clamped to the capacity, else the capacity.
fn extent_len() -> u32 {
    if (P.len_word == NO_WORD) {
        return P.cap;
    }
    let lo = atomicLoad(&words[P.len_word]);
    let hi = atomicLoad(&words[P.len_word + 1u]);
    if (hi != 0u || lo > P.cap) {
        return P.cap;
    }
    return lo;
}

fn write_count(c: u32) {
    atomicStore(&words[P.count_word], c);
    atomicStore(&words[P.count_word + 1u], 0u);
}

// A 64-bit count or total as (low, high) words.
fn write_words(w: vec2<u32>) {
    atomicStore(&words[P.count_word], w.x);
    atomicStore(&words[P.count_word + 1u], w.y);
}

fn flag_at(i: u32) -> u32 {
    return (flags[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn sentinel() -> Elem {
    return elem_from_words(P.sentinel[0], P.sentinel[1]);
}

// Whether element i (value x) survives.
fn keep(i: u32, x: Elem) -> bool {
    if (KEEP == KEEP_FLAGS) {
        return flag_at(i) != 0u;
    } else if (KEEP == KEEP_SENTINEL) {
        return !elem_eq(x, sentinel());
    } else if (KEEP == KEEP_PREDICATE) {
        return reap_predicate(x, P.pred);
    }
    // A radix-sort split: keep keys whose bit P.pred.x is 0 (the key leads the element).
    let bit = P.pred.x;
    return ((elem_word(x, bit >> 5u) >> (bit & 31u)) & 1u) == 0u;
}

// Loads element i and applies the keep rule (i < extent_len()).
fn keep_at(i: u32) -> bool {
    return keep(i, src[i]);
}

// A workgroup's position in a dispatch of more than 65,535 groups (the host
// spreads them over x and y).
fn group_index(wg: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wg.x + wg.y * nwg.x;
}

// Where element i goes in a partition that kept `kept_before` of the i before
// it, `total` in all, over n elements.
fn split_slot(i: u32, kept: bool, kept_before: u32, total: u32, n: u32) -> u32 {
    if (kept) {
        return kept_before;
    }
    let rejected_before = i - kept_before;
    if (P.split == 2u) {
        return n - 1u - rejected_before;
    }
    return total + rejected_before;
}
