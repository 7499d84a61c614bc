// A stable site's rank and walk back (compaction/site.wgsl) without subgroup
// operations: a Hillis-Steele scan in workgroup memory, and invocation 0
// alone polling one tile state per load (site.wgsl `site_walk_one`). site_subgroup.wgsl is the faster
// twin where the device has subgroups.

// Double-buffered: each step reads one half and writes the other.
var<workgroup> site_scan: array<u32, 2 * WG>;

// (inclusive rank, the tile's total) of `kept` over the workgroup.
fn site_rank(lid: u32, kept: u32) -> vec2<u32> {
    site_scan[lid] = kept;
    var half = 0u;
    for (var d = 1u; d < WG; d <<= 1u) {
        workgroupBarrier();
        var v = site_scan[half + lid];
        if lid >= d {
            v += site_scan[half + lid - d];
        }
        half = WG - half;
        site_scan[half + lid] = v;
    }
    workgroupBarrier();
    return vec2<u32>(site_scan[half + lid], site_scan[half + WG - 1u]);
}

fn site_walker(lid: u32) -> bool {
    return lid == 0u;
}

// One invocation walks (site.wgsl `site_walk_one`).
fn site_walk(tile: u32, kept: u32, alg: u32) -> u32 {
    return site_walk_one(tile, kept, alg);
}
