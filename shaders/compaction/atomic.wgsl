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
    var kept = 0u;
    for (var e = 0u; e < ITEMS; e++) {
        let i = base + e * WG + inv.lid;
        if (i < n && keep_at(i)) {
            kept += 1u;
        }
    }
    let scan = wg_exclusive_scan(kept);
    if (inv.lid == 0u && scan.y != 0u) {
        tile_base = atomicAdd(&words[P.count_word], scan.y);
    }
    let at0 = workgroupUniformLoad(&tile_base);
    if (scan.y == 0u) {
        return;
    }
    var at = at0 + scan.x;
    for (var e = 0u; e < ITEMS; e++) {
        let i = base + e * WG + inv.lid;
        if (i < n) {
            let x = src[i];
            if (keep(i, x)) {
                dst[at] = x;
                at += 1u;
            }
        }
    }
}
