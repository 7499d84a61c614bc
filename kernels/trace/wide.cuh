// The 8-wide BVH's node test and leaves (src/bvh/wide.rs lays the nodes out;
// src/trace/wide.rs is the CPU twin): what trace_depth_first_wide and
// trace_bf_expand_wide in wavefront.cu share.
#pragma once
#include "common.cuh"

#define WIDE_STACK 32  // trace/cuda.rs WIDE_STACK

// The octant of a direction: bit a set when the ray runs up axis a.
__device__ __forceinline__ u32 octant(float3 d) {
    return (d.x >= 0.0f ? 1u : 0u) | (d.y >= 0.0f ? 2u : 0u) | (d.z >= 0.0f ? 4u : 0u);
}

// What a wide node's child test found: the node's first wide child, which
// slots hold wide children, its leaves' first triangle and their offsets and
// counts (WideNode leaf_meta), and the hit children of each kind as masks
// with slot c at bit c ^ oct (the highest bit is about the nearest).
struct WideHits {
    u32 child_base, internal, leaf_base;
    u64 leaf_meta;
    u32 nodes, leaves;
};

// Byte j of a row of quantized planes as a float, exactly, without a
// conversion (I2F issues at 1/8 of the FMA rate on sm_90, and a node needs 48):
// the byte under the exponent of 2^23 is the float 2^23 + q, less 2^23.
__device__ __forceinline__ float plane(u32 row, u32 j) {
    return __uint_as_float(__byte_perm(row, 0x4b000000u, 0x7440u | j)) - 8388608.0f;
}

// Wide node e's children the ray enters before `limit` (src/trace/wide.rs
// `wide_children`), after Ylitie, Karras & Laine (HPG 2017). The node is five
// 16-byte loads: header, indices, then the six plane rows of 8 bytes. The
// ray is put into the node's grid once: plane q of axis a lies at
// q * is_a + oq_a along it. That rounds otherwise than the dequantized box's
// planes would (origin + q * step, exact but for one rounding, as on the
// CPU), so each axis's interval is widened by 2^-20 of its own magnitudes
// (near planes from oq - err, far ones from oq + err): a box is never
// rejected that the exact box keeps; the triangle test decides every hit.
__device__ __forceinline__ WideHits wide_children(const Scene& s, u32 e, float3 o, float3 inv, u32 oct, float limit) {
    const uint4* w = reinterpret_cast<const uint4*>(s.wide_nodes) + 5 * (u64)e;
    uint4 h = __ldg(w), ix = __ldg(w + 1), px = __ldg(w + 2), py = __ldg(w + 3), pz = __ldg(w + 4);
    float3 org = make_float3(__uint_as_float(h.x), __uint_as_float(h.y), __uint_as_float(h.z));
    float3 step = make_float3(__uint_as_float((h.w & 0xffu) << 23), __uint_as_float(((h.w >> 8) & 0xffu) << 23),
                              __uint_as_float(((h.w >> 16) & 0xffu) << 23));
    u32 valid = h.w >> 24, internal = ix.z & 0xffu;
    // An axis the ray runs parallel to (1/0 = inf) would turn the margin into inf - inf = NaN, which
    // fmaxf/fminf drop: that axis would stop culling and a ray along a coordinate axis would walk most
    // of the tree (0.5 s for one thread, sphereflake). A finite stand-in keeps its slab exact.
    float3 iv = make_float3(fminf(fmaxf(inv.x, -1e30f), 1e30f), fminf(fmaxf(inv.y, -1e30f), 1e30f),
                            fminf(fmaxf(inv.z, -1e30f), 1e30f));
    float3 is = make_float3(step.x * iv.x, step.y * iv.y, step.z * iv.z);
    float3 oq = make_float3((org.x - o.x) * iv.x, (org.y - o.y) * iv.y, (org.z - o.z) * iv.z);
    float3 err = make_float3(9.54e-7f * (fabsf(oq.x) + 255.0f * fabsf(is.x)),
                             9.54e-7f * (fabsf(oq.y) + 255.0f * fabsf(is.y)),
                             9.54e-7f * (fabsf(oq.z) + 255.0f * fabsf(is.z)));
    float3 on = make_float3(oq.x - err.x, oq.y - err.y, oq.z - err.z);
    float3 of = make_float3(oq.x + err.x, oq.y + err.y, oq.z + err.z);
    // The near plane of each axis is the low one where the ray runs up it: pick the rows once.
    uint2 nx = inv.x >= 0.0f ? make_uint2(px.x, px.y) : make_uint2(px.z, px.w);
    uint2 fx = inv.x >= 0.0f ? make_uint2(px.z, px.w) : make_uint2(px.x, px.y);
    uint2 ny = inv.y >= 0.0f ? make_uint2(py.x, py.y) : make_uint2(py.z, py.w);
    uint2 fy = inv.y >= 0.0f ? make_uint2(py.z, py.w) : make_uint2(py.x, py.y);
    uint2 nz = inv.z >= 0.0f ? make_uint2(pz.x, pz.y) : make_uint2(pz.z, pz.w);
    uint2 fz = inv.z >= 0.0f ? make_uint2(pz.z, pz.w) : make_uint2(pz.x, pz.y);
    WideHits r = {ix.x, internal, ix.y, (u64)(ix.z >> 8) | ((u64)ix.w << 24), 0u, 0u};
#pragma unroll
    for (int c = 0; c < 8; c++) {
        if (!((valid >> c) & 1)) continue;
        u32 j = c & 3;
        float qnx = plane(c < 4 ? nx.x : nx.y, j), qfx = plane(c < 4 ? fx.x : fx.y, j);
        float qny = plane(c < 4 ? ny.x : ny.y, j), qfy = plane(c < 4 ? fy.x : fy.y, j);
        float qnz = plane(c < 4 ? nz.x : nz.y, j), qfz = plane(c < 4 ? fz.x : fz.y, j);
        float t0 = fmaxf(fmaxf(qnx * is.x + on.x, qny * is.y + on.y), fmaxf(qnz * is.z + on.z, 0.0f));
        float t1 = fminf(fminf(qfx * is.x + of.x, qfy * is.y + of.y), fminf(qfz * is.z + of.z, limit));
        if (!(t0 <= t1)) continue;
        u32 b = 1u << (c ^ oct);
        if ((internal >> c) & 1) r.nodes |= b;
        else r.leaves |= b;
    }
    return r;
}

// The index behind bit `bit` of a WideHits mask among the children of one
// kind (`kind`: the slots holding them), counted in slot order.
__device__ __forceinline__ u32 wide_rank(u32 kind, u32 bit, u32 oct) {
    return __popc(kind & ((1u << (bit ^ oct)) - 1u));
}

// Intersects the hit leaves of a node, nearest first, each against the
// closest hit of the moment: true when a shadow ray (any_hit) found a blocker.
__device__ __forceinline__ bool wide_leaves(const Scene& s, const WideHits& h, u32 oct, float3 o, float3 d, float tmax,
                                            bool any_hit, u64* best) {
    u32 bits = h.leaves;
    while (bits) {
        u32 bit = 31 - __clz(bits);
        bits &= ~(1u << bit);
        u32 meta = (u32)(h.leaf_meta >> (7 * (bit ^ oct))) & 0x7fu;
        if (leaf_range(s.wide_tris, h.leaf_base + (meta & 31u), (meta >> 5) + 1, o, d, key_dist(*best, tmax), any_hit,
                       best))
            return true;
    }
    return false;
}
