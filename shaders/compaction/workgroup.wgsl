// Workgroup-wide scans and reductions through workgroup memory: the helpers
// for adapters without subgroups. Same functions as workgroup_subgroup.wgsl;
// the host includes one or the other (twin of kernels/warp.cuh).
// Every shader's workgroup is WG invocations, set by the host as an override.

override WG: u32 = 256u;

// What an entry point receives; `begin(inv)` keeps it for the helpers.
struct Invocation {
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
}

var<private> inv_lid: u32;
var<workgroup> wg_buf: array<u32, WG>;
var<workgroup> wg_total: u32;

fn begin(inv: Invocation) {
    inv_lid = inv.lid;
}

// (exclusive prefix, workgroup total) of `v` over the workgroup, in
// local_invocation_index order (Hillis & Steele through workgroup memory).
fn wg_exclusive_scan(v: u32) -> vec2<u32> {
    let lid = inv_lid;
    wg_buf[lid] = v;
    workgroupBarrier();
    for (var d = 1u; d < WG; d <<= 1u) {
        var t = 0u;
        if (lid >= d) {
            t = wg_buf[lid - d];
        }
        workgroupBarrier();
        wg_buf[lid] += t;
        workgroupBarrier();
    }
    let incl = wg_buf[lid];
    let total = wg_buf[WG - 1u];
    workgroupBarrier();
    return vec2<u32>(incl - v, total);
}

fn wg_reduce(v: u32) -> u32 {
    return wg_exclusive_scan(v).y;
}

// Whether the adapter's subgroups did the work (reports say which path ran).
const WG_PATH: u32 = 0u;
