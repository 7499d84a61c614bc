// `horn`: Horn's stream reduction (GPU Gems 2 ch. 36) as seed 003 §II
// describes it (Figs. 2-3), on the scan of seed 002 §2.2 Algorithm 2.
//
// The scan is Hillis-Steele over all n: ceil(log2 n) dispatches, each one
// pass `dst[k] = src[k] + src[k - 2^p]` between two buffers (the paper's two
// textures swapping roles), O(n log n) work. The gather gives every output
// slot one invocation that finds its source by a dichotomic (binary) search
// of the inclusive scan, O(n log n) again. Slow on purpose: it is the baseline
// seeds 002 and 003 improve on. Every dispatch is one invocation per item, so
// no invocation loops over more than log2 n steps.
//
// Also the family's shared part (sengupta.wgsl and blelloch.wgsl include this
// file): the marking phase (kernels/compaction/mark.cu's mark_flags), Horn's
// passes and his gather. Twin of kernels/compaction/horn.cu.
//
// Running sums are a scan variant's Elem, added with elem_add: u32 (the u32
// scan, and every compaction, whose counts fit 32 bits) or u64 as (low, high).
// The scan-phase entry points run only under those two; the mark and the
// gather run under the element's own variant.
//
// A counted call sizes its passes from the capacity, ceil(log2 cap) of them;
// the device length may need fewer (horn_pass).

// u32 words under any variant: the mark's flags, or a scan of them (inclusive
// for the gather, exclusive for blelloch's scatter), or sengupta's plan.
@group(0) @binding(7) var<storage, read_write> marks: array<u32>;

// src[i - shift], 0 before the start: the inclusive scan of the input
// shifted right by one slot is the exclusive scan of the input.
fn horn_shifted(i: u32, shift: u32) -> Elem {
    if (i < shift) {
        return elem_zero();
    }
    return src[i - shift];
}

// This invocation's item: one per invocation over the whole dispatch.
fn horn_item(inv: Invocation) -> u32 {
    return group_index(inv.wg, inv.nwg) * WG + inv.lid;
}

// Stage "mark": marks[i] = 1 when element i survives.
@compute @workgroup_size(WG)
fn horn_mark(inv: Invocation) {
    let i = horn_item(inv);
    if (i < extent_len()) {
        marks[i] = select(0u, 1u, keep_at(i));
    }
}

// First pass (offset 1) over src, shifted right by P.a slots (0 or 1).
@compute @workgroup_size(WG)
fn horn_first(inv: Invocation) {
    let k = horn_item(inv);
    if (k >= extent_len()) {
        return;
    }
    var v = horn_shifted(k, P.a);
    if (k >= 1u) {
        v = elem_add(v, horn_shifted(k - 1u, P.a));
    }
    dst[k] = v;
}

// Passes that n values need: ceil(log2 n), and at least the first.
fn horn_passes(n: u32) -> u32 {
    if (n <= 1u) {
        return 1u;
    }
    return 32u - countLeadingZeros(n - 1u);
}

// Every later pass (002 Algorithm 2, one iteration): offset P.a = 2^p to the
// left, pass p of the P.b passes the host dispatched. A pass with 2^p >= n is
// one the device length does not need (a counted call's passes are sized from
// the capacity): the scan is already complete in one of the two buffers. The
// host ordered the buffers so that the last pass writes the output; the real
// passes stopped an even number of passes short of it, and nothing moves, or
// an odd number, and the last pass copies the scan over.
@compute @workgroup_size(WG)
fn horn_pass(inv: Invocation) {
    let k = horn_item(inv);
    let n = extent_len();
    if (k >= n) {
        return;
    }
    let offset = P.a;
    if (offset >= n) {
        let p = firstLeadingBit(offset);
        if (p + 1u != P.b || (P.b - horn_passes(n)) % 2u == 0u) {
            return;
        }
        dst[k] = src[k];
        return;
    }
    if (k >= offset) {
        dst[k] = elem_add(src[k], src[k - offset]);
    } else {
        dst[k] = src[k];
    }
}

// An exclusive scan's total: its last prefix (dst) plus the last input (src),
// 0 for none. One invocation.
@compute @workgroup_size(WG)
fn horn_total(inv: Invocation) {
    if (horn_item(inv) != 0u) {
        return;
    }
    let n = extent_len();
    var total = elem_zero();
    if (n > 0u) {
        total = elem_add(dst[n - 1u], src[n - 1u]);
    }
    write_words(elem_words(total));
}

// The first i < n with f(i) > rank, f non-decreasing and exceeding rank
// somewhere (003 §II's dichotomic search): f(i) = marks[i], the kept elements
// through i, or with `rejected` i + 1 - marks[i], the rejected ones.
fn horn_search(n: u32, rank: u32, rejected: bool) -> u32 {
    var lo = 0u;
    var hi = n - 1u;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        var f = marks[mid];
        if (rejected) {
            f = mid + 1u - f;
        }
        if (f > rank) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    return lo;
}

// Gather (003 §II): slot j < kept takes the (j + 1)-th kept element; with
// P.split, slot kept + r takes the (r + 1)-th rejected one. One invocation
// per slot over all n, since the kept count stays on the device. `marks`
// holds the inclusive scan of the flags.
@compute @workgroup_size(WG)
fn horn_gather(inv: Invocation) {
    let j = horn_item(inv);
    let n = extent_len();
    var kept = 0u;
    if (n > 0u) {
        kept = marks[n - 1u];
    }
    if (j == 0u) {
        write_count(kept);
    }
    if (j < kept) {
        dst[j] = src[horn_search(n, j, false)];
    } else if (P.split != 0u && j < n) {
        dst[j] = src[horn_search(n, j - kept, true)];
    }
}
