// Shared by the wavefront path tracer's stages (wavefront.wgsl), the twin of
// kernels/trace/common.cuh: the bindings, the scene and path-state layouts,
// the per-(pixel, sample, bounce) random numbers, and the ray-box and
// ray-triangle tests. The CPU twin of every function here is in
// src/trace/shading.rs, with the same names. The Rust side of the bindings
// and of `SceneInfo`/`Params` is src/trace/wgpu.rs: keep the two in sync.
//
// WGSL has no u64: a hit key, a frontier item and a frame word are (lo, hi)
// pairs of u32, and the 64-bit atomics of CUDA are built from 32-bit ones.

const TRACE_DEAD32: u32 = 0xffffffffu;

const MAT_DIFFUSE: u32 = 0u;
const MAT_MIRROR: u32 = 1u;
const MAT_GLASS: u32 = 2u;
const MAT_GLOSSY: u32 = 3u;
const NO_TEXTURE: u32 = 0xffffffffu;
const PATH_SPECULAR: u32 = 1u;
const ESTIMATOR_MIS: u32 = 0u;
const ESTIMATOR_LIGHT: u32 = 1u;
const ESTIMATOR_BSDF: u32 = 2u;

// The frame's constants (wgpu.rs `SceneInfo`). The scene lives in one buffer
// read two ways (vec4 records and single words); `at_*` are the sections'
// first vec4 (`at_w`: first word).
struct SceneInfo {
    cam_origin: vec4<f32>,
    cam_forward: vec4<f32>,
    cam_right: vec4<f32>,
    cam_up: vec4<f32>,
    env: vec4<f32>,  // w: eps, the origin offset along the normal
    light: vec4<f32>,  // x: P_total = sum of luminance(Le) * area, y: +inf
    dims: vec4<u32>,  // width, height, seed, max_bounces
    counts: vec4<u32>,  // light_count, paths the path state holds, image pixels, binary BVH nodes
    at_a: vec4<u32>,  // nodes, tris, materials, textures (vec4 units)
    at_b: vec4<u32>,  // texels, wide nodes, wide tris, 0 (vec4 units)
    at_w: vec4<u32>,  // normals, uvs, light_tris, light_cdf (word units)
}

// One dispatch's scalars (wgpu.rs `Params`), at its own 256-byte offset.
// Word indices name u64 words of the frame's word array.
struct Params {
    capacity: u32,  // entries of the buffer the dispatch covers
    shadow: u32,
    queue_len: u32,  // word: the queue's length
    alive: u32,  // word: paths alive after shading
    shadows: u32,  // word: shadow rays cast
    sample: u32,
    bounce: u32,
    estimator: u32,
    base: u32,  // the shard's first pixel
    count: u32,  // the shard's pixels
    descend: u32,
    last: u32,  // the level is the last of the bound
    input_len: u32,  // frontier level words (frontier.wgsl `FrontierLevel`)
    input_live: u32,
    output_len: u32,
    output_live: u32,
    stride: u32,  // invocations of the whole dispatch (grid-stride loops)
    next_len: u32,  // word: the next queue's length (trace_shade_atomic)
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> prm: Params;
@group(0) @binding(1) var<uniform> info: SceneInfo;
@group(0) @binding(2) var<storage, read> sc: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> sw: array<u32>;
// Path state (common.cuh `Paths`): six vec4 fields of `counts.y` entries each.
@group(0) @binding(4) var<storage, read_write> pv: array<vec4<f32>>;
// The hit keys ((lo, hi) pairs, `key_at`), then occluded and flags: four
// u32 fields of `counts.y` entries each.
@group(0) @binding(5) var<storage, read_write> pw: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> queue: array<u32>;
@group(0) @binding(7) var<storage, read_write> next: array<u32>;
@group(0) @binding(8) var<storage, read_write> words: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read> fin: array<vec2<u32>>;
@group(0) @binding(10) var<storage, read_write> fout: array<vec2<u32>>;
@group(0) @binding(11) var<storage, read_write> sums: array<vec4<f32>>;
// The stable sites' tile counter and states (compaction/site.wgsl), cleared
// by the host before each dispatch that uses them.
@group(0) @binding(14) var<storage, read_write> site_states: array<atomic<u32>>;

const F_ORIGIN: u32 = 0u;
const F_DIR: u32 = 1u;  // w: the solid-angle pdf of the BSDF sample that chose it
const F_THROUGHPUT: u32 = 2u;
const F_RADIANCE: u32 = 3u;
const F_SHADOW_DIR: u32 = 4u;  // w: the shadow ray's length; 0 when the path has none
const F_SHADOW_RADIANCE: u32 = 5u;
const W_OCCLUDED: u32 = 2u;
const W_FLAGS: u32 = 3u;

fn pv_at(field: u32, path: u32) -> u32 { return field * info.counts.y + path; }
fn pw_at(field: u32, path: u32) -> u32 { return field * info.counts.y + path; }
fn pget(field: u32, path: u32) -> vec4<f32> { return pv[pv_at(field, path)]; }
fn pset(field: u32, path: u32, v: vec4<f32>) { pv[pv_at(field, path)] = v; }
fn wget(field: u32, path: u32) -> u32 { return atomicLoad(&pw[pw_at(field, path)]); }
fn wset(field: u32, path: u32, v: u32) { atomicStore(&pw[pw_at(field, path)], v); }
// A path's closest-hit key: float bits of t (hi), triangle (lo); all ones is
// a miss. Its two words lie side by side (lo first), so that hit64.wgsl can
// merge them as one little-endian u64, whose order is (t, triangle)'s.
fn key_at(path: u32) -> u32 { return 2u * path; }
fn key_get(path: u32) -> vec2<u32> {
    return vec2<u32>(atomicLoad(&pw[key_at(path)]), atomicLoad(&pw[key_at(path) + 1u]));
}
fn key_set(path: u32, key: vec2<u32>) {
    atomicStore(&pw[key_at(path)], key.x);
    atomicStore(&pw[key_at(path) + 1u], key.y);
}

// A frame word (u64) as (lo, hi).
fn word_get(w: u32) -> vec2<u32> {
    return vec2<u32>(atomicLoad(&words[2u * w]), atomicLoad(&words[2u * w + 1u]));
}
fn word_set(w: u32, v: vec2<u32>) {
    atomicStore(&words[2u * w], v.x);
    atomicStore(&words[2u * w + 1u], v.y);
}
// A 64-bit atomic add from two 32-bit ones: the carry out of the low word
// goes to the high one, exact whatever the order the adds land in.
fn word_add(w: u32, v: u32) {
    let old = atomicAdd(&words[2u * w], v);
    let carry = select(0u, 1u, old + v < old);
    if carry != 0u {
        atomicAdd(&words[2u * w + 1u], carry);
    }
}
// A length word clamped to `capacity` (both below 2^32 on this backend).
fn length_of(w: u32, capacity: u32) -> u32 {
    let n = word_get(w);
    if n.y != 0u { return capacity; }
    return min(n.x, capacity);
}

struct Node {  // src/bvh/mod.rs `Node`
    lo: vec3<f32>,
    first: u32,
    hi: vec3<f32>,
    count: u32,
}
fn node(i: u32) -> Node {
    let a = sc[info.at_a.x + 2u * i];
    let b = sc[info.at_a.x + 2u * i + 1u];
    return Node(bitcast<vec3<f32>>(a.xyz), a.w, bitcast<vec3<f32>>(b.xyz), b.w);
}

struct Tri {  // v0, edges v1 - v0 and v2 - v0; pad0 the BVH position
    v0: vec3<f32>,
    material: u32,
    e1: vec3<f32>,
    pad0: u32,
    e2: vec3<f32>,
}
// Triangle k of the array starting at vec4 `at` (the binary BVH's or the wide one's).
fn tri_in(at: u32, k: u32) -> Tri {
    let a = sc[at + 3u * k];
    let b = sc[at + 3u * k + 1u];
    let c = sc[at + 3u * k + 2u];
    return Tri(bitcast<vec3<f32>>(a.xyz), a.w, bitcast<vec3<f32>>(b.xyz), b.w, bitcast<vec3<f32>>(c.xyz));
}
fn tri(k: u32) -> Tri { return tri_in(info.at_a.y, k); }

struct Material {
    albedo: vec3<f32>,
    kind: u32,
    emission: vec3<f32>,
    roughness: f32,
    ior: f32,
    emissive: u32,
    texture: u32,
}
fn material(i: u32) -> Material {
    let a = sc[info.at_a.z + 3u * i];
    let b = sc[info.at_a.z + 3u * i + 1u];
    let c = sc[info.at_a.z + 3u * i + 2u];
    return Material(bitcast<vec3<f32>>(a.xyz), a.w, bitcast<vec3<f32>>(b.xyz), bitcast<f32>(b.w), bitcast<f32>(c.x), c.y, c.z);
}

fn swf(i: u32) -> f32 { return bitcast<f32>(sw[i]); }
fn sw3(i: u32) -> vec3<f32> { return vec3<f32>(swf(i), swf(i + 1u), swf(i + 2u)); }

// +inf, from the host: WGSL's constant expressions cannot hold it.
fn trace_inf() -> f32 { return info.light.y; }

fn max3(a: vec3<f32>) -> f32 { return max(a.x, max(a.y, a.z)); }

// PCG hash (Jarzynski & Olano 2020).
fn pcg(v: u32) -> u32 {
    let s = v * 747796405u + 2891336453u;
    let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

// A uniform number in [0, 1) that depends only on (pixel, sample, bounce,
// dimension, seed), never on the path's queue slot.
fn rnd(pixel: u32, sample: u32, bounce: u32, dim: u32, seed: u32) -> f32 {
    let h = pcg(seed ^ pcg(pixel ^ pcg(sample ^ pcg(bounce * 64u + dim))));
    return f32(h >> 8u) * (1.0 / 16777216.0);
}

const TRACE_CULL_SLACK: f32 = 1.0000152587890625;  // 1 + 2^-16

// Entry distance of the ray into the box if it enters before tmax, else -1
// (common.cuh `hit_box`, the exit stretched by TRACE_CULL_SLACK).
fn hit_box(n: Node, o: vec3<f32>, inv: vec3<f32>, tmax: f32) -> f32 {
    let a = (n.lo - o) * inv;
    let b = (n.hi - o) * inv;
    let near = min(a, b);
    let far = max(a, b);
    let t0 = max(max(near.x, near.y), max(near.z, 0.0));
    let t1 = min(min(far.x, far.y), min(far.z, tmax));
    return select(-1.0, t0, t0 <= t1 * TRACE_CULL_SLACK);
}

// Möller-Trumbore, in common.cuh's order of operations (WGSL cannot forbid
// the driver's FMA contraction, so t may differ from the CPU's in the last bit).
struct TriHit {
    ok: bool,
    t: f32,
    u: f32,
    v: f32,
}
fn hit_tri(tr: Tri, o: vec3<f32>, d: vec3<f32>) -> TriHit {
    var r = TriHit(false, 0.0, 0.0, 0.0);
    let p = cross(d, tr.e2);
    let det = dot(tr.e1, p);
    if det == 0.0 { return r; }
    let inv = 1.0 / det;
    let s = o - tr.v0;
    r.u = dot(s, p) * inv;
    if r.u < 0.0 || r.u > 1.0 { return r; }
    let q = cross(s, tr.e1);
    r.v = dot(d, q) * inv;
    if r.v < 0.0 || r.u + r.v > 1.0 { return r; }
    r.t = dot(tr.e2, q) * inv;
    r.ok = r.t > 0.0 && r.t < trace_inf();  // finite: a hit at infinity has no point to shade
    return r;
}

// Hit keys order by (t, triangle): (lo = triangle, hi = t's bits).
const KEY_DEAD: vec2<u32> = vec2<u32>(0xffffffffu, 0xffffffffu);
fn key_less(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }
fn key_dist(key: vec2<u32>, none: f32) -> f32 {
    if key.y >= 0x7f800000u { return none; }  // a miss (or a key being updated: frontier.wgsl)
    return bitcast<f32>(key.y);
}

// Triangles [first, first + count) of the array at `at` against the ray:
// the closest-hit key into `best`, or (any_hit) whether one lies before
// tmax. A candidate at exactly tmax still competes on its index.
fn leaf_range(at: u32, first: u32, count: u32, o: vec3<f32>, d: vec3<f32>, tmax: f32, any_hit: bool,
              best: ptr<function, vec2<u32>>) -> bool {
    for (var k = first; k < first + count; k++) {
        let tr = tri_in(at, k);
        let h = hit_tri(tr, o, d);
        if h.ok && (h.t < tmax || (!any_hit && h.t == tmax)) {
            if any_hit { return true; }
            let key = vec2<u32>(tr.pad0, bitcast<u32>(h.t));
            if key_less(key, *best) { *best = key; }
        }
    }
    return false;
}
