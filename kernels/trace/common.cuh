// Shared by the wavefront path tracer's kernels (wavefront.cu): the scene and
// path-state layouts, the per-(pixel, sample, bounce) random numbers, and the
// ray-box and ray-triangle tests. Each struct has a #[repr(C)] twin in
// src/trace/layout.rs: keep the two in sync. The CPU twin of every function
// here is in src/trace/shading.rs, with the same names.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

// A dead queue slot, a dead frontier item, and a miss.
#define TRACE_DEAD32 0xffffffffu
#define TRACE_DEAD64 0xffffffffffffffffull
#define TRACE_INF __int_as_float(0x7f800000)

#define MAT_DIFFUSE 0
#define MAT_MIRROR 1
#define MAT_GLASS 2
#define MAT_GLOSSY 3

// Material::texture of a material without one.
#define NO_TEXTURE 0xffffffffu

// Path flag: the last bounce was a delta one (or the camera's), so an emitter
// hit next is counted fully: next-event estimation could not sample it. After
// a non-delta bounce dir.w holds the sampled direction's solid-angle pdf.
#define PATH_SPECULAR 1u

// trace_shade's estimator (src/trace/estimator.rs `Estimator`).
#define ESTIMATOR_MIS 0u
#define ESTIMATOR_LIGHT 1u
#define ESTIMATOR_BSDF 2u

struct Node {  // src/bvh/mod.rs `Node`
    float lo[3];
    u32 first;
    float hi[3];
    u32 count;
};

struct WideNode {  // src/bvh/wide.rs `WideNode`, 80 bytes
    float origin[3];
    unsigned char exp[3];
    unsigned char valid;
    u32 child_base;
    u32 leaf_base;  // the first triangle (wide order) of the node's leaves
    unsigned char internal;
    unsigned char leaf_meta[7];  // 7 bits a slot: a leaf's offset from leaf_base (5), its count less one (2)
    unsigned char lo_x[8], hi_x[8], lo_y[8], hi_y[8], lo_z[8], hi_z[8];
};

struct Tri {  // v0, edges v1 - v0 and v2 - v0, in BVH order
    float v0[3];
    u32 material;
    float e1[3];
    u32 pad0;  // the BVH position: a hit's key holds it, whichever BVH found the triangle
    float e2[3];
    u32 pad1;
};

struct Material {
    float albedo[3];
    u32 kind;
    float emission[3];
    float roughness;
    float ior;
    u32 emissive;
    u32 texture;  // index into Scene::textures, or NO_TEXTURE
    u32 pad;
};

struct Texture {  // layout.rs `TextureLayout`
    u64 offset;  // first texel in Scene::texels; rows run down from the image's top
    u32 width;
    u32 height;
};

struct Scene {
    const Node* nodes;
    const Tri* tris;
    const float* normals;  // 9 floats per triangle: the three vertex normals
    const Material* materials;
    const u32* light_tris;  // emitting triangles
    const float* light_cdf;  // inclusive, by power luminance(Le) * area, last entry 1
    u32 light_count;
    float light_power;  // P_total = sum of luminance(Le) * area: an emitter point's area pdf is luminance(Le) / P_total
    float env[3];  // radiance of every escaping ray
    float eps;  // origin offset along the normal, scaled to the scene
    const float* uvs;  // 6 floats per triangle: the three vertex UVs; empty when nothing is textured
    const Texture* textures;
    const float4* texels;  // linear RGB, w = 1, every texture's one after the other
    const struct WideNode* wide_nodes;  // the 8-wide BVH (src/bvh/wide.rs), node 0 the root
    const struct Tri* wide_tris;  // the triangles in the wide BVH's order, pad0 their BVH position
};

struct Camera {
    float origin[3];
    float pad0;
    float forward[3];  // unit
    float pad1;
    float right[3];  // scaled by tan(vfov / 2) * aspect
    float pad2;
    float up[3];  // scaled by tan(vfov / 2)
    float pad3;
};

// Structure of arrays, indexed by path id (= pixel).
struct Paths {
    float4* origin;
    float4* dir;  // w: the solid-angle pdf of the BSDF sample that chose it; 0 after the camera or a delta bounce
    float4* throughput;
    float4* radiance;
    u64* hit;  // closest-hit key: float bits of t << 32 | triangle; TRACE_DEAD64 is a miss
    float4* shadow_dir;  // w: the shadow ray's length; 0 when the path has none
    float4* shadow_radiance;  // added when the shadow ray arrives unoccluded
    u32* occluded;
    u32* flags;
};

__device__ __forceinline__ float3 f3(const float* a) { return make_float3(a[0], a[1], a[2]); }
__device__ __forceinline__ float3 f3(float4 a) { return make_float3(a.x, a.y, a.z); }
__device__ __forceinline__ float4 f4(float3 a, float w) { return make_float4(a.x, a.y, a.z, w); }
__device__ __forceinline__ float3 operator+(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
__device__ __forceinline__ float3 operator-(float3 a, float3 b) { return make_float3(a.x - b.x, a.y - b.y, a.z - b.z); }
__device__ __forceinline__ float3 operator-(float3 a) { return make_float3(-a.x, -a.y, -a.z); }
__device__ __forceinline__ float3 operator*(float3 a, float3 b) { return make_float3(a.x * b.x, a.y * b.y, a.z * b.z); }
__device__ __forceinline__ float3 operator*(float3 a, float s) { return make_float3(a.x * s, a.y * s, a.z * s); }
__device__ __forceinline__ float dot(float3 a, float3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
__device__ __forceinline__ float3 cross(float3 a, float3 b) {
    return make_float3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
__device__ __forceinline__ float3 normalize(float3 a) { return a * (1.0f / sqrtf(dot(a, a))); }
__device__ __forceinline__ float max3(float3 a) { return fmaxf(a.x, fmaxf(a.y, a.z)); }

// PCG hash (Jarzynski & Olano 2020).
__device__ __forceinline__ u32 pcg(u32 v) {
    u32 s = v * 747796405u + 2891336453u;
    u32 w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

// A uniform number in [0, 1) that depends only on (pixel, sample, bounce,
// dimension, seed), never on the path's queue slot: this is what makes every
// compaction algorithm render the same image.
__device__ __forceinline__ float rnd(u32 pixel, u32 sample, u32 bounce, u32 dim, u32 seed) {
    u32 h = pcg(seed ^ pcg(pixel ^ pcg(sample ^ pcg(bounce * 64u + dim))));
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

#define TRACE_CULL_SLACK 1.0000152587890625f  // 1 + 2^-16

// Entry distance of the ray into the box if it enters before tmax, else -1.
// The exit is stretched by TRACE_CULL_SLACK (src/bvh CULL_SLACK): a box whose
// triangle the ray hits at exactly tmax, the closest hit so far, computes its
// entry an ulp past it at times, and culling it would make a tie's winner
// depend on the order boxes are visited in.
__device__ __forceinline__ float hit_box(const Node& n, float3 o, float3 inv, float tmax) {
    float tx0 = (n.lo[0] - o.x) * inv.x, tx1 = (n.hi[0] - o.x) * inv.x;
    float ty0 = (n.lo[1] - o.y) * inv.y, ty1 = (n.hi[1] - o.y) * inv.y;
    float tz0 = (n.lo[2] - o.z) * inv.z, tz1 = (n.hi[2] - o.z) * inv.z;
    float t0 = fmaxf(fmaxf(fminf(tx0, tx1), fminf(ty0, ty1)), fmaxf(fminf(tz0, tz1), 0.0f));
    float t1 = fminf(fminf(fmaxf(tx0, tx1), fmaxf(ty0, ty1)), fminf(fmaxf(tz0, tz1), tmax));
    return t0 <= t1 * TRACE_CULL_SLACK ? t0 : -1.0f;
}

// dot and cross rounded after every operation, never fused: the triangle test
// gives one t whichever kernel inlines it (the compiler contracts otherwise
// per call site), and the CPU's t (shading.rs `hit_tri`, glam's order).
__device__ __forceinline__ float dot_rn(float3 a, float3 b) {
    return __fadd_rn(__fadd_rn(__fmul_rn(a.x, b.x), __fmul_rn(a.y, b.y)), __fmul_rn(a.z, b.z));
}
__device__ __forceinline__ float3 cross_rn(float3 a, float3 b) {
    return make_float3(__fsub_rn(__fmul_rn(a.y, b.z), __fmul_rn(a.z, b.y)),
                       __fsub_rn(__fmul_rn(a.z, b.x), __fmul_rn(a.x, b.z)),
                       __fsub_rn(__fmul_rn(a.x, b.y), __fmul_rn(a.y, b.x)));
}

// Möller-Trumbore. Degenerate triangles were dropped at load, so only det == 0
// (a ray in the triangle's plane) is rejected.
__device__ __forceinline__ bool hit_tri(const Tri& tr, float3 o, float3 d, float* t, float* u, float* v) {
    float3 e1 = f3(tr.e1), e2 = f3(tr.e2);
    float3 p = cross_rn(d, e2);
    float det = dot_rn(e1, p);
    if (det == 0.0f) return false;
    float inv = __fdiv_rn(1.0f, det);
    float3 s = o - f3(tr.v0);
    *u = __fmul_rn(dot_rn(s, p), inv);
    if (*u < 0.0f || *u > 1.0f) return false;
    float3 q = cross_rn(s, e1);
    *v = __fmul_rn(dot_rn(d, q), inv);
    if (*v < 0.0f || __fadd_rn(*u, *v) > 1.0f) return false;
    *t = __fmul_rn(dot_rn(e2, q), inv);
    return *t > 0.0f && *t < TRACE_INF;  // finite: a hit at infinity has no point to shade
}

// Hits order by (t, triangle), so the closest hit is unique and both
// traversal modes find the same one.
__device__ __forceinline__ u64 hit_key(float t, u32 tri) { return ((u64)__float_as_uint(t) << 32) | tri; }
__device__ __forceinline__ float key_dist(u64 key, float none) {
    return key == TRACE_DEAD64 ? none : __uint_as_float((u32)(key >> 32));
}

// Triangles [first, first + count) against the ray: the closest-hit key, or
// (any_hit) whether one lies before tmax. A closest-hit candidate at exactly
// tmax (the best t so far) still competes on its index, so ties resolve the
// same whatever order leaves are visited in.
__device__ __forceinline__ bool leaf_range(const Tri* tris, u32 first, u32 count, float3 o, float3 d, float tmax,
                                           bool any_hit, u64* best) {
    for (u32 k = first; k < first + count; k++) {
        float t, u, v;
        // Three 16-byte loads (a Tri is 48 bytes; the arrays start 256-byte aligned), not twelve of 4.
        const float4* t4 = reinterpret_cast<const float4*>(tris) + 3 * (u64)k;
        float4 a = __ldg(t4), b = __ldg(t4 + 1), c = __ldg(t4 + 2);
        Tri tr = {{a.x, a.y, a.z}, __float_as_uint(a.w), {b.x, b.y, b.z}, __float_as_uint(b.w), {c.x, c.y, c.z},
                  __float_as_uint(c.w)};
        if (hit_tri(tr, o, d, &t, &u, &v) && (t < tmax || (!any_hit && t == tmax))) {
            if (any_hit) return true;
            u64 key = hit_key(t, tr.pad0);  // the BVH position, whichever BVH holds the triangle
            if (key < *best) *best = key;
        }
    }
    return false;
}
