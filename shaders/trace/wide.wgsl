// The 8-wide BVH's node test and leaves (kernels/trace/wide.cuh's twin;
// src/bvh/wide.rs lays the nodes out, src/trace/wide.rs is the CPU twin):
// what trace_depth_first_wide and trace_bf_expand_wide share.

const WIDE_STACK: u32 = 32u;  // trace/wgpu.rs WIDE_STACK

// The octant of a direction: bit a set when the ray runs up axis a.
fn octant(d: vec3<f32>) -> u32 {
    return select(0u, 1u, d.x >= 0.0) | select(0u, 2u, d.y >= 0.0) | select(0u, 4u, d.z >= 0.0);
}

// What a wide node's child test found (wide.cuh `WideHits`): masks with slot c at bit c ^ oct.
struct WideHits {
    child_base: u32,
    internal: u32,
    leaf_base: u32,
    meta_lo: u32,  // leaf_meta's 56 bits as (low 32, high 24)
    meta_hi: u32,
    nodes: u32,
    leaves: u32,
}

// Byte j of a row of quantized planes as a float (exact).
fn plane(row: u32, j: u32) -> f32 { return f32((row >> (8u * j)) & 0xffu); }

// Wide node e's children the ray enters before `limit` (wide.cuh
// `wide_children`, Ylitie, Karras & Laine 2017), each axis's interval
// widened by 2^-20 of its magnitudes so no box the exact one keeps is lost.
fn wide_children(e: u32, o: vec3<f32>, inv: vec3<f32>, oct: u32, limit: f32) -> WideHits {
    let w = info.at_b.y + 5u * e;
    let h = sc[w];
    let ix = sc[w + 1u];
    let px = sc[w + 2u];
    let py = sc[w + 3u];
    let pz = sc[w + 4u];
    let org = bitcast<vec3<f32>>(h.xyz);
    let step = vec3<f32>(bitcast<f32>((h.w & 0xffu) << 23u), bitcast<f32>(((h.w >> 8u) & 0xffu) << 23u),
                         bitcast<f32>(((h.w >> 16u) & 0xffu) << 23u));
    let valid = h.w >> 24u;
    let internal = ix.z & 0xffu;
    // An axis the ray runs parallel to (1/0 = inf) would turn the margin into inf - inf = NaN, which
    // max/min drop: that axis would stop culling (a ray along an axis walks most of the tree). A finite
    // stand-in keeps its slab exact.
    let iv = min(max(inv, vec3<f32>(-1e30)), vec3<f32>(1e30));
    let is = step * iv;
    let oq = (org - o) * iv;
    let err = 9.54e-7 * (abs(oq) + 255.0 * abs(is));
    let on = oq - err;
    let ofar = oq + err;
    // The near plane of each axis is the low one where the ray runs up it.
    let nx = select(px.zw, px.xy, inv.x >= 0.0);
    let fx = select(px.xy, px.zw, inv.x >= 0.0);
    let ny = select(py.zw, py.xy, inv.y >= 0.0);
    let fy = select(py.xy, py.zw, inv.y >= 0.0);
    let nz = select(pz.zw, pz.xy, inv.z >= 0.0);
    let fz = select(pz.xy, pz.zw, inv.z >= 0.0);
    var r = WideHits(ix.x, internal, ix.y, (ix.z >> 8u) | (ix.w << 24u), ix.w >> 8u, 0u, 0u);
    for (var c = 0u; c < 8u; c++) {
        if ((valid >> c) & 1u) == 0u { continue; }
        let j = c & 3u;
        let hi = c >= 4u;
        let qnx = plane(select(nx.x, nx.y, hi), j);
        let qfx = plane(select(fx.x, fx.y, hi), j);
        let qny = plane(select(ny.x, ny.y, hi), j);
        let qfy = plane(select(fy.x, fy.y, hi), j);
        let qnz = plane(select(nz.x, nz.y, hi), j);
        let qfz = plane(select(fz.x, fz.y, hi), j);
        let t0 = max(max(qnx * is.x + on.x, qny * is.y + on.y), max(qnz * is.z + on.z, 0.0));
        let t1 = min(min(qfx * is.x + ofar.x, qfy * is.y + ofar.y), min(qfz * is.z + ofar.z, limit));
        if !(t0 <= t1) { continue; }
        let b = 1u << (c ^ oct);
        if ((internal >> c) & 1u) != 0u {
            r.nodes |= b;
        } else {
            r.leaves |= b;
        }
    }
    return r;
}

// The index behind bit `bit` of a WideHits mask among the children of one kind, in slot order.
fn wide_rank(kind: u32, bit: u32, oct: u32) -> u32 {
    return countOneBits(kind & ((1u << (bit ^ oct)) - 1u));
}

// The 7 bits of slot `slot` of a node's leaf_meta.
fn leaf_meta(h: WideHits, slot: u32) -> u32 {
    let s = 7u * slot;
    if s + 7u <= 32u { return (h.meta_lo >> s) & 0x7fu; }
    if s >= 32u { return (h.meta_hi >> (s - 32u)) & 0x7fu; }
    return ((h.meta_lo >> s) | (h.meta_hi << (32u - s))) & 0x7fu;
}

// Intersects the hit leaves of a node, nearest first, each against the
// closest hit of the moment: true when a shadow ray (any_hit) found a blocker.
fn wide_leaves(h: WideHits, oct: u32, o: vec3<f32>, d: vec3<f32>, tmax: f32, any_hit: bool,
               best: ptr<function, vec2<u32>>) -> bool {
    var bits = h.leaves;
    for (var i = 0u; i < 8u && bits != 0u; i++) {
        let bit = firstLeadingBit(bits);
        bits &= ~(1u << bit);
        let m = leaf_meta(h, bit ^ oct);
        if leaf_range(info.at_b.z, h.leaf_base + (m & 31u), (m >> 5u) + 1u, o, d, key_dist(*best, tmax), any_hit, best) {
            return true;
        }
    }
    return false;
}
