// A stable site's rank and walk back (compaction/site.wgsl) without subgroup
// operations: a Hillis-Steele scan in workgroup memory, and invocation 0
// alone polling one tile state per load (site.wgsl `site_walk_one`). site_subgroup.wgsl is the faster
// twin where the device has subgroups.

// Double-buffered: each step reads one array and writes the other. (Two
// arrays of WG, not one of 2 * WG: naga 30 panics on an override expression
// in a workgroup array's size.)
var<workgroup> site_scan_a: array<u32, WG>;
var<workgroup> site_scan_b: array<u32, WG>;

// (inclusive rank, the tile's total) of `kept` over the workgroup.
fn site_rank(lid: u32, kept: u32) -> vec2<u32> {
    site_scan_a[lid] = kept;
    var in_a = true;
    for (var d = 1u; d < WG; d <<= 1u) {
        workgroupBarrier();
        if in_a {
            site_scan_b[lid] = site_scan_a[lid] + select(0u, site_scan_a[lid - min(d, lid)], lid >= d);
        } else {
            site_scan_a[lid] = site_scan_b[lid] + select(0u, site_scan_b[lid - min(d, lid)], lid >= d);
        }
        in_a = !in_a;
    }
    workgroupBarrier();
    if in_a {
        return vec2<u32>(site_scan_a[lid], site_scan_a[WG - 1u]);
    }
    return vec2<u32>(site_scan_b[lid], site_scan_b[WG - 1u]);
}

fn site_walker(lid: u32) -> bool {
    return lid == 0u;
}

// One invocation walks (site.wgsl `site_walk_one`).
fn site_walk(tile: u32, kept: u32, alg: u32) -> u32 {
    return site_walk_one(tile, kept, alg);
}
