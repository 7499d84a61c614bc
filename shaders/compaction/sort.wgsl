// Radix sort by repeated split (seed 000 §5.3) moves key-value pairs
// interleaved, as the paper does; these entry points pack separate keys and
// values into pairs before the splits and unpack them after, or copy bare
// keys in and out. The element is the key (4 or 8 bytes) or the pair: 8
// bytes (a u32 key, its value) or 16 (a u64 key as two words, its value, a
// zero word). The key leads, where keep()'s KEEP_BIT reads it.
// Twin of kernels/compaction/sort.cu. P.cap is n, P.b the words per key
// (1 or 2), P.c 1 with values.

// The caller's keys (P.b words each) and values.
@group(0) @binding(5) var<storage, read_write> keys: array<u32>;
@group(0) @binding(6) var<storage, read_write> values: array<u32>;

@compute @workgroup_size(WG)
fn interleave(inv: Invocation) {
    let i = group_index(inv.wg, inv.nwg) * WG + inv.lid;
    if (i >= P.cap) {
        return;
    }
    let kw = P.b;
    var w = vec4<u32>(keys[i * kw], 0u, 0u, 0u);
    if (kw == 2u) {
        w.y = keys[2u * i + 1u];
    }
    if (P.c != 0u) {
        w[kw] = values[i];
    }
    dst[i] = elem_from_words(w, vec4<u32>(0u));
}

@compute @workgroup_size(WG)
fn deinterleave(inv: Invocation) {
    let i = group_index(inv.wg, inv.nwg) * WG + inv.lid;
    if (i >= P.cap) {
        return;
    }
    let kw = P.b;
    let x = src[i];
    keys[i * kw] = elem_word(x, 0u);
    if (kw == 2u) {
        keys[2u * i + 1u] = elem_word(x, 1u);
    }
    if (P.c != 0u) {
        values[i] = elem_word(x, kw);
    }
}
