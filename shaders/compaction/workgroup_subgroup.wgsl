// Workgroup-wide scans and reductions through subgroup operations (adapters
// with wgpu's SUBGROUP feature): a subgroup scan, the subgroups' totals
// through workgroup memory, one pass over them. Assumes subgroups are
// contiguous ranges of local_invocation_index and WG a multiple of the
// subgroup size, as on every Vulkan, Metal and DX12 driver for 1-D workgroups.
// Same functions as workgroup.wgsl.

override WG: u32 = 256u;

struct Invocation {
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
}

var<private> inv_lid: u32;
var<private> inv_lane: u32;
var<private> inv_sg_size: u32;
var<workgroup> wg_buf: array<u32, WG>;
var<workgroup> wg_total: u32;

fn begin(inv: Invocation) {
    inv_lid = inv.lid;
    inv_lane = inv.sg_lane;
    inv_sg_size = inv.sg_size;
}

fn wg_exclusive_scan(v: u32) -> vec2<u32> {
    let lid = inv_lid;
    let x = subgroupExclusiveAdd(v);
    let sg = lid / inv_sg_size;
    let groups = WG / inv_sg_size;
    if (inv_lane == inv_sg_size - 1u) {
        wg_buf[sg] = x + v;
    }
    workgroupBarrier();
    if (lid == 0u) {
        var acc = 0u;
        for (var k = 0u; k < groups; k++) {
            let t = wg_buf[k];
            wg_buf[k] = acc;
            acc += t;
        }
        wg_total = acc;
    }
    workgroupBarrier();
    let r = vec2<u32>(wg_buf[sg] + x, wg_total);
    workgroupBarrier();
    return r;
}

fn wg_reduce(v: u32) -> u32 {
    return wg_exclusive_scan(v).y;
}

const WG_PATH: u32 = 1u;

// A virtual processor's SIMD group (seed 000 §3.1): one subgroup, S its
// size. Call in workgroup-uniform control flow, like the workgroup-memory
// twins in workgroup.wgsl.
fn vp_width() -> u32 {
    return inv_sg_size;
}

fn vp_lane() -> u32 {
    return inv_lane;
}

// Bit s of the result is lane s's `f`.
fn vp_ballot(f: bool) -> vec4<u32> {
    return subgroupBallot(f);
}

// (inclusive prefix sum, total) of `v` over the subgroup.
fn vp_inclusive_add(v: u32) -> vec2<u32> {
    return vec2<u32>(subgroupInclusiveAdd(v), subgroupAdd(v));
}

// The look-back window (single_pass.wgsl): the first subgroup inspects
// lb_window() predecessors at once, as CUB's and kernels/compaction/lookback.cuh's
// warp does. Called by that subgroup alone (lid < lb_window()).
fn lb_window() -> u32 {
    return inv_sg_size;
}

// The lowest lane whose `b` is true, or the subgroup size if none is.
fn lb_first(b: bool) -> u32 {
    let m = subgroupBallot(b);
    for (var w = 0u; w < 4u; w++) {
        if (m[w] != 0u) {
            return min(w * 32u + firstTrailingBit(m[w]), inv_sg_size);
        }
    }
    return inv_sg_size;
}

// The subgroup's sum of 64-bit values: 16-bit pieces summed apart, so no
// carry is lost, then put back together.
fn lb_sum64(v: vec2<u32>) -> vec2<u32> {
    let a = subgroupAdd(v.x & 0xffffu);
    let b = subgroupAdd(v.x >> 16u);
    let c = subgroupAdd(v.y & 0xffffu);
    let d = subgroupAdd(v.y >> 16u);
    let lo = a + (b << 16u);
    let carry = select(0u, 1u, lo < a) + (b >> 16u);
    return vec2<u32>(lo, c + (d << 16u) + carry);
}

// The subgroup's sum of 32-bit values (tile counts below 2^30 each, their sum below 2^32).
fn lb_sum32(v: u32) -> u32 {
    return subgroupAdd(v);
}

// Lane `lane`'s `v`.
fn lb_shuffle(v: u32, lane: u32) -> u32 {
    return subgroupShuffle(v, lane);
}
