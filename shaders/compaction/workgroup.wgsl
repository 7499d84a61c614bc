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

// A virtual processor's SIMD group (seed 000 §3.1) where the adapter has no
// subgroups: VP_WIDTH consecutive invocations exchange values through
// workgroup memory, as the paper's CUDA did through shared memory (§4.1).
// Each function holds workgroup barriers: call it in workgroup-uniform
// control flow, every invocation of the workgroup together (WG is a multiple
// of VP_WIDTH). Same functions as workgroup_subgroup.wgsl.
const VP_WIDTH: u32 = 32u;

var<workgroup> vp_buf: array<u32, WG>;
// One word per SIMD group used (WG / VP_WIDTH); an override expression as
// the size trips naga 30 (process_overrides panics), so WG words.
var<workgroup> vp_bits: array<atomic<u32>, WG>;

// Lanes of the SIMD group, S.
fn vp_width() -> u32 {
    return VP_WIDTH;
}

// This invocation's lane in its SIMD group.
fn vp_lane() -> u32 {
    return inv_lid % VP_WIDTH;
}

// Bit s of the result is lane s's `f` (subgroupBallot's layout).
fn vp_ballot(f: bool) -> vec4<u32> {
    let g = inv_lid / VP_WIDTH;
    if (vp_lane() == 0u) {
        atomicStore(&vp_bits[g], 0u);
    }
    workgroupBarrier();
    if (f) {
        atomicOr(&vp_bits[g], 1u << vp_lane());
    }
    workgroupBarrier();
    let m = atomicLoad(&vp_bits[g]);
    workgroupBarrier(); // every lane has read before the next ballot clears
    return vec4<u32>(m, 0u, 0u, 0u);
}

// (inclusive prefix sum, total) of `v` over the SIMD group: Hillis and
// Steele in log S steps (seed 000 §3.3).
fn vp_inclusive_add(v: u32) -> vec2<u32> {
    let lid = inv_lid;
    let lane = vp_lane();
    vp_buf[lid] = v;
    workgroupBarrier();
    for (var d = 1u; d < VP_WIDTH; d <<= 1u) {
        var t = 0u;
        if (lane >= d) {
            t = vp_buf[lid - d];
        }
        workgroupBarrier();
        vp_buf[lid] += t;
        workgroupBarrier();
    }
    let r = vec2<u32>(vp_buf[lid], vp_buf[lid - lane + VP_WIDTH - 1u]);
    workgroupBarrier(); // every lane has read before the next call writes
    return r;
}

// The look-back window (single_pass.wgsl) without subgroups: invocation 0
// alone inspects one predecessor at a time.
fn lb_window() -> u32 {
    return 1u;
}

fn lb_first(b: bool) -> u32 {
    return select(1u, 0u, b);
}

fn lb_sum64(v: vec2<u32>) -> vec2<u32> {
    return v;
}

fn lb_sum32(v: u32) -> u32 {
    return v;
}

fn lb_shuffle(v: u32, lane: u32) -> u32 {
    return v;
}
