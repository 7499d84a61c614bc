// `sengupta`: the work-efficient, step-efficient hybrid scan of seed 002
// §2.4. Reduce (002 Algorithm 3) halves the array dispatch by dispatch,
// keeping every level, until no more partial sums remain than the degree of
// parallelism; Horn's scan runs over those (horn.wgsl's passes); the
// down-sweep (002 Algorithm 4) walks back down the kept levels to the
// inclusive scan of all n. Horn's gather (horn.wgsl) then compacts, as 002 §4
// does. Twin of kernels/compaction/sengupta.cu.
//
// Each entry point is one level: a map over that level, one invocation per
// value, in its own dispatch, since every level reads the whole level written
// by the dispatch before it. Running sums are the scan variant's Elem.
//
// The host dispatches the levels the capacity needs; each entry point works
// out from the device length how many levels n needs (a counted call's n may
// need fewer) and returns at once past them. The last level n needs goes to
// a fixed buffer `top`, so that Horn's scan over it reads one place whatever
// n is.

// The reduce levels a_1, a_2, … back to back; P.d and P.e are offsets into it.
@group(0) @binding(5) var<storage, read_write> partial: array<Elem>;
// The last level n needs: written by the reduce, its Horn scan read by the down-sweep.
@group(0) @binding(6) var<storage, read_write> top: array<Elem>;

// ceil(n / 2^h): the length of level h - 1, that is of n halved h times.
fn sengupta_len(n: u32, h: u32) -> u32 {
    if (h >= 32u) {
        return select(0u, 1u, n != 0u);
    }
    return (n >> h) + select(0u, 1u, (n & ((1u << h) - 1u)) != 0u);
}

// Reduce levels that n values need before at most p partial sums remain (p >= 1).
fn sengupta_levels(n: u32, p: u32) -> u32 {
    var levels = 0u;
    for (var len = n; len > p; len = len / 2u + (len & 1u)) {
        levels++;
    }
    return levels;
}

// Value i of level d - 1, the level below step d: x itself (src, shifted by
// P.c) for d = 0, else `partial` from P.d.
fn sengupta_below(d: u32, i: u32) -> Elem {
    if (d == 0u) {
        return horn_shifted(i, P.c);
    }
    return partial[P.d + i];
}

// Reduce step d = P.a over the level below it, p = P.b:
// next[i] = a[2i] + a[2i + 1]. An odd level's last value has no partner and
// passes up alone. Level d goes to `partial` from P.e, or to `top` when it is
// the last level n needs.
@compute @workgroup_size(WG)
fn sengupta_reduce(inv: Invocation) {
    let n = extent_len();
    let d = P.a;
    let levels = sengupta_levels(n, P.b);
    if (d >= levels) {
        return; // n needs fewer levels than the capacity
    }
    let len = sengupta_len(n, d);
    let i = horn_item(inv);
    if (i >= len / 2u + (len & 1u)) {
        return;
    }
    var v = sengupta_below(d, 2u * i);
    if (2u * i + 1u < len) {
        v = elem_add(v, sengupta_below(d, 2u * i + 1u));
    }
    if (d + 1u == levels) {
        top[i] = v;
    } else {
        partial[P.e + i] = v;
    }
}

// Down-sweep step d = P.a over the level below it, whose level above (`up`:
// pair sums in `partial` from P.e; Horn's scan of `top` for the last level n
// needs) is already an inclusive scan: an odd i ends pair i / 2; an even
// i > 0 adds its own value to the prefix through the previous pair. Level 0
// goes to dst; a higher one back into its own slots of `partial` (each
// invocation reads and writes only its own slot).
@compute @workgroup_size(WG)
fn sengupta_down_sweep(inv: Invocation) {
    let n = extent_len();
    let d = P.a;
    let levels = sengupta_levels(n, P.b);
    if (d >= levels) {
        return;
    }
    let len = sengupta_len(n, d);
    let i = horn_item(inv);
    if (i >= len) {
        return;
    }
    let last = d + 1u == levels;
    var v: Elem;
    if ((i & 1u) != 0u) {
        if (last) {
            v = top[i / 2u];
        } else {
            v = partial[P.e + i / 2u];
        }
    } else if (i > 0u) {
        var up: Elem;
        if (last) {
            up = top[i / 2u - 1u];
        } else {
            up = partial[P.e + i / 2u - 1u];
        }
        v = elem_add(sengupta_below(d, i), up);
    } else {
        v = sengupta_below(d, i);
    }
    if (d == 0u) {
        dst[i] = v;
    } else {
        partial[P.d + i] = v;
    }
}

// A counted call's plan, for the two Horn scans the host enqueues, as u64
// words (low, high) in `marks`: word 0 is what the one over x itself covers
// (n, when n needs no level; else 0), word 2 what the one over `top` covers
// (the last level's length, or 0). Those scans read their length there.
@compute @workgroup_size(WG)
fn sengupta_plan(inv: Invocation) {
    if (horn_item(inv) != 0u) {
        return;
    }
    let n = extent_len();
    let levels = sengupta_levels(n, P.b);
    marks[0] = select(0u, n, levels == 0u);
    marks[1] = 0u;
    marks[2] = select(sengupta_len(n, levels), 0u, levels == 0u);
    marks[3] = 0u;
}
