// `atomic`: pbrt-v4's GPU work queues (src/pbrt/wavefront/workqueue.h), where
// every surviving item reserves its slot with an atomicAdd on the queue size
// and the compiler aggregates those adds. Here the aggregation is explicit
// and spans a workgroup's tile of WG * ITEMS elements: one workgroup scan of
// the invocations' keeper counts, one atomicAdd for the whole tile. Tiles
// land in whatever order their atomics run, so the output is the right
// multiset in no fixed order (unstable). Twin of kernels/compaction/atomic.cu.

override ITEMS: u32 = 16u;

var<workgroup> tile_base: u32;

@compute @workgroup_size(WG)
fn atomic_select(inv: Invocation) {
    begin(inv);
    let n = extent_len();
    let base = group_index(inv.wg, inv.nwg) * WG * ITEMS;
    // Coalesced: WG consecutive elements per item.
    var mask = 0u;
    var e = 0u;
    // Four loads out before any is tested (see single_pass.wgsl's load_tile).
    if (base + WG * ITEMS <= n) {
        for (; e + 4u <= ITEMS; e += 4u) {
            let i = base + e * WG + inv.lid;
            let a = src[i];
            let b = src[i + WG];
            let c = src[i + 2u * WG];
            let d = src[i + 3u * WG];
            let bits = u32(keep(i, a)) | (u32(keep(i + WG, b)) << 1u) | (u32(keep(i + 2u * WG, c)) << 2u)
                | (u32(keep(i + 3u * WG, d)) << 3u);
            mask |= bits << e;
        }
    }
    for (; e < ITEMS; e++) {
        let i = base + e * WG + inv.lid;
        if (i < n && keep_at(i)) {
            mask |= 1u << e;
        }
    }
    let kept = countOneBits(mask);
    let scan = wg_exclusive_scan(kept);
    if (inv.lid == 0u && scan.y != 0u) {
        tile_base = atomicAdd(&words[P.count_word], scan.y);
    }
    var at = workgroupUniformLoad(&tile_base) + scan.x;
    // The keepers are read again (from cache, mostly): an array of ITEMS
    // elements in each invocation would be spilled to memory, slower still.
    for (var e = 0u; e < ITEMS; e++) {
        if ((mask >> e & 1u) != 0u) {
            dst[at] = src[base + e * WG + inv.lid];
            at += 1u;
        }
    }
}
