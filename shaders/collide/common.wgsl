// Shared by the collision demo's shaders (collide.wgsl): the layouts of
// src/collide/layout.rs and the arithmetic of src/collide/physics/ (mod.rs and
// broad.rs here; narrow.wgsl and solver.wgsl hold the rest). The WGSL twin of
// kernels/collide/common.cuh, function for function.
//
// Each function repeats the Rust function of the same name expression for
// expression, in the same order, so that the adds, multiplies, divides and
// square roots round as the CPU's do. What WGSL cannot promise: it has no way
// to forbid FMA contraction (SPIR-V's NoContraction is not emitted by naga),
// and Vulkan allows division and sqrt a few ULP of error. `rounded` below
// keeps products out of contraction, and `sqrt_rn` keeps x / sqrt(y) a
// division; with both, lavapipe (whose division and sqrt round correctly)
// matches the CPU bit for bit (tests/collide_wgpu.rs). Elsewhere the results
// may differ in the last bits where division or sqrt round otherwise. The
// solver's sums are exact all the same: 64-bit fixed point, in any order.
// No builtin dot/cross/length/normalize/fma is used: their order of
// operations is the driver's. Integers of 64 bits are vec2<u32> (lo, hi).

// layout.rs SPHERE, BOX, LEAF; a dead frontier slot (mod.rs DEAD64) is (DEAD, DEAD).
const SPHERE: u32 = 0u;
const BOX: u32 = 1u;
const LEAF: u32 = 0xffffffffu;
const DEAD: u32 = 0xffffffffu;
// The root's parent.
const NONE: u32 = 0xffffffffu;
// walls.rs WALL: Contact::b of a wall point is WALL - k (plane k = 2 axis + side), WALL - 6 the drum.
const WALL: u32 = 0xffffffffu;

// Keep in sync with layout.rs `Body` (80 bytes).
struct Body {
    pos: array<f32, 3>,
    shape: u32,
    vel: array<f32, 3>,
    inv_mass: f32,
    half: array<f32, 3>,
    // The spawn number (layout.rs `Body::id`).
    id: u32,
    rot: array<f32, 4>,
    omega: array<f32, 3>,
    pad2: f32,
}

// Keep in sync with layout.rs `Node` (32 bytes).
struct Node {
    min: array<f32, 3>,
    left: u32,
    max: array<f32, 3>,
    right: u32,
}

// Keep in sync with layout.rs `Contact` (64 bytes).
struct Contact {
    a: u32,
    b: u32,
    depth: f32,
    sep: f32,
    normal: array<f32, 3>,
    lambda: f32,
    point: array<f32, 3>,
    bounce: f32,
    friction: array<f32, 3>,
    slot: u32,
}

// A body as the arithmetic reads it (vectors instead of arrays).
struct B {
    pos: vec3<f32>,
    shape: u32,
    vel: vec3<f32>,
    inv_mass: f32,
    half: vec3<f32>,
    rot: vec4<f32>,
    omega: vec3<f32>,
}

// layout.rs `World`, unpacked from the parameters' seven vec4 (collide.wgsl `world()`).
struct W {
    min: vec3<f32>,
    dt: f32,
    max: vec3<f32>,
    restitution: f32,
    gravity: vec3<f32>,
    friction: f32,
    inv_extent: vec3<f32>,
    slop: f32,
    baumgarte: f32,
    drum_radius: f32,
    drum_x: f32,
    drum_y: f32,
    drum_omega: f32,
    static_friction: f32,
    rest_speed: f32,
    split: f32,
    margin: f32,
    contact_hertz: f32,
}

fn v3(p: array<f32, 3>) -> vec3<f32> {
    return vec3<f32>(p[0], p[1], p[2]);
}

fn a3(v: vec3<f32>) -> array<f32, 3> {
    return array<f32, 3>(v.x, v.y, v.z);
}

fn unpack_body(b: Body) -> B {
    return B(v3(b.pos), b.shape, v3(b.vel), b.inv_mass, v3(b.half), vec4<f32>(b.rot[0], b.rot[1], b.rot[2], b.rot[3]),
             v3(b.omega));
}

fn inf() -> f32 {
    return bitcast<f32>(0x7f800000u);
}

// layout.rs pack / unpack: a slot (a << 32) | b is vec2(lo = b, hi = a).
fn pack(a: u32, b: u32) -> vec2<u32> {
    return vec2<u32>(b, a);
}

fn is_dead(p: vec2<u32>) -> bool {
    return p.x == DEAD && p.y == DEAD;
}

// f32::clamp spelled out (WGSL's clamp may treat NaN otherwise).
fn clampf(x: f32, lo: f32, hi: f32) -> f32 {
    var r = x;
    if (r < lo) {
        r = lo;
    }
    if (r > hi) {
        r = hi;
    }
    return r;
}

// IEEE minNum / maxNum as Rust's f32::min / max (the sign of a zero result may differ, as on CUDA).
fn minf(a: f32, b: f32) -> f32 {
    return min(a, b);
}

fn maxf(a: f32, b: f32) -> f32 {
    return max(a, b);
}

// sqrt, hidden from rewrites into a reciprocal square root: a compiler may
// turn x / sqrt(y) into x * inversesqrt(y), which is not correctly rounded
// (lavapipe's NIR does, as its inexact rules allow). XOR with a parameter that
// is always 0 is opaque to it, so the division stays a division.
fn sqrt_rn(x: f32) -> f32 {
    if (EXACT) {
        return bitcast<f32>(bitcast<u32>(sqrt(x)) ^ P.zero);
    }
    return sqrt(x);
}

// A product kept out of FMA contraction the same way: WGSL cannot forbid a
// compiler to fuse a * b + c (lavapipe's NIR fuses a product used once, NVIDIA's
// compiler any), which rounds once where the CPU rounds twice. Every product
// that meets an add or a subtract goes through `rounded` (or `rounded3`), so
// that each rounds as the CPU's does. The prelude's EXACT (src/collide/wgpu
// `CollideTuning::exact`) turns it off, for speed: the results then differ
// from the CPU's in the last bits wherever the compiler fuses.
fn rounded(x: f32) -> f32 {
    if (EXACT) {
        return bitcast<f32>(bitcast<u32>(x) ^ P.zero);
    }
    return x;
}

fn rounded3(v: vec3<f32>) -> vec3<f32> {
    if (EXACT) {
        return bitcast<vec3<f32>>(bitcast<vec3<u32>>(v) ^ vec3<u32>(P.zero));
    }
    return v;
}

fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return rounded(a.x * b.x) + rounded(a.y * b.y) + rounded(a.z * b.z);
}

fn cross3(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(rounded(a.y * b.z) - rounded(a.z * b.y), rounded(a.z * b.x) - rounded(a.x * b.z),
                     rounded(a.x * b.y) - rounded(a.y * b.x));
}

// A box's local axes in world space (the columns of its rotation matrix).
fn axes(q: vec4<f32>) -> array<vec3<f32>, 3> {
    let x = q.x;
    let y = q.y;
    let z = q.z;
    let w = q.w;
    // 1 - 2 s needs no guard: 2 s is exact, so fusing it changes nothing.
    let xx = rounded(x * x);
    let yy = rounded(y * y);
    let zz = rounded(z * z);
    let xy = rounded(x * y);
    let xz = rounded(x * z);
    let yz = rounded(y * z);
    let wx = rounded(w * x);
    let wy = rounded(w * y);
    let wz = rounded(w * z);
    return array<vec3<f32>, 3>(
        vec3<f32>(1.0 - 2.0 * (yy + zz), 2.0 * (xy + wz), 2.0 * (xz - wy)),
        vec3<f32>(2.0 * (xy - wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz + wx)),
        vec3<f32>(2.0 * (xz + wy), 2.0 * (yz - wx), 1.0 - 2.0 * (xx + yy)),
    );
}

// Half the size of a body's axis-aligned box.
fn extent(b: B) -> vec3<f32> {
    if (b.shape == SPHERE) {
        return vec3<f32>(b.half.x, b.half.x, b.half.x);
    }
    var u = axes(b.rot);
    let h = b.half;
    var e = vec3<f32>(0.0);
    for (var k = 0; k < 3; k++) {
        e[k] = rounded(abs(u[0][k]) * h.x) + rounded(abs(u[1][k]) * h.y) + rounded(abs(u[2][k]) * h.z);
    }
    return e;
}

// mod.rs `extra_speed`: how fast a body's surface can move in a frame
// besides its centre's velocity (gravity over the frame, a box's turning corners).
fn extra_speed(b: B, w: W) -> f32 {
    var speed = rounded(sqrt_rn(dot3(w.gravity, w.gravity)) * w.dt);
    if (b.shape != SPHERE) {
        speed = speed + rounded(sqrt_rn(dot3(b.omega, b.omega)) * sqrt_rn(dot3(b.half, b.half)));
    }
    return speed;
}

// mod.rs `reach`: how far from a body's surface its wall points are looked for
// (the substeps reuse the frame's contacts, so they must already be in the list).
fn reach(b: B, w: W) -> f32 {
    return w.margin + rounded((sqrt_rn(dot3(b.vel, b.vel)) + extra_speed(b, w)) * w.dt);
}

// mod.rs `pair_reach`: how far apart two bodies' surfaces may be and still
// make a contact (both margins, and how far they can close in a frame).
fn pair_reach(a: B, b: B, w: W) -> f32 {
    let dv = a.vel - b.vel;
    let closing = max(max(sqrt_rn(dot3(dv, dv)), sqrt_rn(dot3(a.vel, a.vel))), sqrt_rn(dot3(b.vel, b.vel)));
    return rounded(2.0 * w.margin) + rounded((closing + extra_speed(a, w) + extra_speed(b, w)) * w.dt);
}

// mod.rs `aabb`: a body's swept box (a leaf's bounds, min then max): where it
// is and where its velocity takes it by the frame's end, grown by the margin
// and its extra speed.
fn aabb(b: B, w: W) -> array<vec3<f32>, 2> {
    let r = w.margin + rounded(extra_speed(b, w) * w.dt);
    let e = extent(b) + vec3<f32>(r, r, r);
    let end = b.pos + rounded3(b.vel * w.dt);
    return array<vec3<f32>, 2>(min(b.pos, end) - e, max(b.pos, end) + e);
}

// Spreads the low 10 bits of `v` to every third bit.
fn expand_bits(x: u32) -> u32 {
    var v = x & 0x3ffu;
    v = (v | (v << 16u)) & 0x030000ffu;
    v = (v | (v << 8u)) & 0x0300f00fu;
    v = (v | (v << 4u)) & 0x030c30c3u;
    v = (v | (v << 2u)) & 0x09249249u;
    return v;
}

// The 30-bit Morton code of a point, 10 bits per axis over the world box.
fn morton(p: vec3<f32>, w: W) -> u32 {
    var cell = vec3<u32>(0u);
    for (var k = 0; k < 3; k++) {
        let t = (p[k] - w.min[k]) * w.inv_extent[k];
        let c = clampf(t * 1024.0, 0.0, 1023.0);
        cell[k] = u32(c); // Rust `c as u32`: truncation, c is in range
    }
    return (expand_bits(cell.x) << 2u) | (expand_bits(cell.y) << 1u) | expand_bits(cell.z);
}

// Karras 2012's δ(i, j) over `n` sorted codes, the index breaking ties; -1
// when j is out of range. Indices are i32: the engine takes fewer than 2^30 bodies.
fn delta(n: i32, i: i32, j: i32) -> i32 {
    if (j < 0 || j >= n) {
        return -1;
    }
    let a = keys[i];
    let b = keys[j];
    if (a == b) {
        return 32 + i32(countLeadingZeros(bitcast<u32>(i ^ j)));
    }
    return i32(countLeadingZeros(a ^ b));
}

// Karras 2012, Fig. 4: internal node i's children (node indices: internal
// 0..n-1, leaves n-1+k). Every loop runs at most 32 times (the codes' depth).
fn karras_node(n: i32, i: i32) -> vec2<u32> {
    var d = -1;
    if (delta(n, i, i + 1) - delta(n, i, i - 1) >= 0) {
        d = 1;
    }
    let dmin = delta(n, i, i - d);
    var lmax = 2;
    for (var g = 0; g < 32 && delta(n, i, i + lmax * d) > dmin; g++) {
        lmax *= 2;
    }
    var l = 0;
    for (var t = lmax / 2; t >= 1; t /= 2) {
        if (delta(n, i, i + (l + t) * d) > dmin) {
            l += t;
        }
    }
    let j = i + l * d;
    let dnode = delta(n, i, j);
    var s = 0;
    var t = l;
    for (var g = 0; g < 64; g++) {
        t = (t + 1) / 2;
        if (delta(n, i, i + (s + t) * d) > dnode) {
            s += t;
        }
        if (t == 1) {
            break;
        }
    }
    let gamma = i + s * d + min(d, 0);
    var left = u32(gamma);
    if (min(i, j) == gamma) {
        left = u32(n - 1 + gamma);
    }
    var right = u32(gamma + 1);
    if (max(i, j) == gamma + 1) {
        right = u32(n - 1 + gamma + 1);
    }
    return vec2<u32>(left, right);
}

// Whether two nodes' boxes overlap (touching counts).
fn overlap(a: Node, b: Node) -> bool {
    return a.min[0] <= b.max[0] && b.min[0] <= a.max[0] && a.min[1] <= b.max[1] && b.min[1] <= a.max[1] &&
           a.min[2] <= b.max[2] && b.min[2] <= a.max[2];
}

fn is_wall(b: u32) -> bool {
    return b >= WALL - 6u;
}

// The immovable body that wall `id` puts at `point`: at rest, or moving with
// the drum's wall (counter-clockwise about z).
fn wall_body(id: u32, point: vec3<f32>, w: W) -> B {
    // The point is often a.pos + r: hidden, so that b.pos - a.pos is not simplified to r.
    var b = B(rounded3(point), SPHERE, vec3<f32>(0.0, 0.0, 0.0), 0.0, vec3<f32>(1.0, 1.0, 1.0), vec4<f32>(0.0, 0.0, 0.0, 1.0),
              vec3<f32>(0.0, 0.0, 0.0));
    if (id == WALL - 6u) {
        let px = point.x - w.drum_x;
        let py = point.y - w.drum_y;
        b.vel = vec3<f32>(rounded(-py * w.drum_omega), rounded(px * w.drum_omega), 0.0);
    }
    return b;
}

// motion.rs point_velocity: the velocity of the body's point at `r` from its centre.
fn point_velocity(b: B, r: vec3<f32>) -> vec3<f32> {
    return b.vel + cross3(b.omega, r);
}
