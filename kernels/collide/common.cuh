// Shared by the collision demo's kernels (collide.cu): the layouts of
// src/collide/layout.rs and the arithmetic of src/collide/physics/ (mod.rs and
// broad.rs here; narrow.cuh and solver.cuh hold the rest).
//
// Each struct has a #[repr(C)] twin in layout.rs: keep the two in sync.
// Each function in `namespace physics` repeats the Rust function of the same
// name expression for expression, in the same order. src/collide/cuda.rs compiles
// collide.cu with --fmad=false (and IEEE division and square root, no
// flush-to-zero), so every add, multiply, divide and sqrt rounds as the CPU's
// does and one state gives bit-identical results on both. Rules kept here:
// every literal is a float (`1.0f`: a bare 1.0 would compute in double);
// Rust's `as` from f32 to an integer truncates, saturates and sends NaN to 0,
// which is PTX's cvt.rzi (the __float2*_rz intrinsics; a C cast out of range
// is undefined); f32::clamp is spelled out (fminf/fmaxf treat NaN differently).
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// layout.rs DEAD64 (mod.rs), SPHERE, BOX, LEAF.
#define COLLIDE_DEAD64 0xffffffffffffffffull
#define COLLIDE_SPHERE 0u
#define COLLIDE_BOX 1u
#define COLLIDE_LEAF 0xffffffffu
#define COLLIDE_NONE 0xffffffffu  // the root's parent
#define COLLIDE_INF __int_as_float(0x7f800000)

// Keep in sync with layout.rs `Body` (80 bytes). Aligned to 16 bytes (its
// size is a multiple, as Contact's is) so that a copy is five 16-byte loads,
// not twenty scattered 4-byte ones: the solver's reads are random.
struct __align__(16) Body {
    float pos[3];
    u32 shape;
    float vel[3];
    float inv_mass;
    float half[3];
    u32 id;  // the spawn number (layout.rs `Body::id`)
    float rot[4];
    float omega[3];
    float pad2;
};

// Keep in sync with layout.rs `Node` (32 bytes).
struct Node {
    float min[3];
    u32 left;
    float max[3];
    u32 right;
};

// Keep in sync with layout.rs `Contact` (64 bytes).
struct __align__(16) Contact {
    u32 a;
    u32 b;
    float depth;
    float sep;
    float normal[3];
    float lambda;
    float point[3];
    float bounce;
    float friction[3];
    u32 slot;
};

// Keep in sync with layout.rs `World` (112 bytes).
struct World {
    float min[3];
    float dt;
    float max[3];
    float restitution;
    float gravity[3];
    float friction;
    float inv_extent[3];
    float slop;
    float baumgarte;
    float drum_radius;
    float drum_x;
    float drum_y;
    float drum_omega;
    float static_friction;
    float rest_speed;
    float split;
    float margin;
    u32 bounce_passes;  // read on the host only
    u32 colours;        // read on the host only
    float contact_hertz;
};

static_assert(sizeof(Body) == 80, "Body: keep in sync with layout.rs");
static_assert(sizeof(Node) == 32, "Node: keep in sync with layout.rs");
static_assert(sizeof(Contact) == 64, "Contact: keep in sync with layout.rs");
static_assert(sizeof(World) == 112, "World: keep in sync with layout.rs");

// layout.rs pack / unpack.
__device__ __forceinline__ u64 pack(u32 a, u32 b) { return ((u64)a << 32) | (u64)b; }
__device__ __forceinline__ u32 unpack_a(u64 p) { return (u32)(p >> 32); }
__device__ __forceinline__ u32 unpack_b(u64 p) { return (u32)p; }

namespace physics {

// physics/mod.rs `V3` ([f32; 3]).
struct V3 {
    float v[3];
    __device__ __forceinline__ float& operator[](int k) { return v[k]; }
    __device__ __forceinline__ const float& operator[](int k) const { return v[k]; }
};

__device__ __forceinline__ V3 v3(float x, float y, float z) {
    V3 r;
    r[0] = x;
    r[1] = y;
    r[2] = z;
    return r;
}
__device__ __forceinline__ V3 v3(const float* p) { return v3(p[0], p[1], p[2]); }
__device__ __forceinline__ void store(float* p, V3 a) {
    p[0] = a[0];
    p[1] = a[1];
    p[2] = a[2];
}

// f32::abs, f32::sqrt, f32::clamp, f32::min, f32::max.
__device__ __forceinline__ float abs(float x) { return fabsf(x); }
__device__ __forceinline__ float sqrt(float x) { return __fsqrt_rn(x); }
__device__ __forceinline__ float clamp(float x, float lo, float hi) {
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    return x;
}
// IEEE minNum / maxNum, as Rust's: a NaN operand yields the other. The sign
// of a zero result may differ from the CPU's (both compare equal).
__device__ __forceinline__ float min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ float max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ i64 min(i64 a, i64 b) { return a < b ? a : b; }
__device__ __forceinline__ i64 max(i64 a, i64 b) { return a > b ? a : b; }

__device__ __forceinline__ V3 add(V3 a, V3 b) { return v3(a[0] + b[0], a[1] + b[1], a[2] + b[2]); }
__device__ __forceinline__ V3 sub(V3 a, V3 b) { return v3(a[0] - b[0], a[1] - b[1], a[2] - b[2]); }
__device__ __forceinline__ V3 scale(V3 a, float s) { return v3(a[0] * s, a[1] * s, a[2] * s); }
__device__ __forceinline__ float dot(V3 a, V3 b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
__device__ __forceinline__ V3 cross(V3 a, V3 b) {
    return v3(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]);
}

// A box's local axes in world space (the columns of its rotation matrix).
struct Axes {
    V3 u[3];
    __device__ __forceinline__ V3& operator[](int k) { return u[k]; }
    __device__ __forceinline__ const V3& operator[](int k) const { return u[k]; }
};

__device__ __forceinline__ Axes axes(const float* q) {
    float x = q[0], y = q[1], z = q[2], w = q[3];
    float xx = x * x, yy = y * y, zz = z * z;
    float xy = x * y, xz = x * z, yz = y * z;
    float wx = w * x, wy = w * y, wz = w * z;
    Axes r;
    r[0] = v3(1.0f - 2.0f * (yy + zz), 2.0f * (xy + wz), 2.0f * (xz - wy));
    r[1] = v3(2.0f * (xy - wz), 1.0f - 2.0f * (xx + zz), 2.0f * (yz + wx));
    r[2] = v3(2.0f * (xz + wy), 2.0f * (yz - wx), 1.0f - 2.0f * (xx + yy));
    return r;
}

// Half the size of a body's axis-aligned box.
__device__ __forceinline__ V3 extent(const Body& b) {
    if (b.shape == COLLIDE_SPHERE) return v3(b.half[0], b.half[0], b.half[0]);
    Axes u = axes(b.rot);
    V3 h = v3(b.half);
    V3 e;
#pragma unroll
    for (int k = 0; k < 3; k++) e[k] = abs(u[0][k]) * h[0] + abs(u[1][k]) * h[1] + abs(u[2][k]) * h[2];
    return e;
}

// How fast a body's surface can move in a frame besides its centre's
// velocity: gravity over the frame, a box's turning corners (mod.rs `extra_speed`).
__device__ __forceinline__ float extra_speed(const Body& b, const World& w) {
    V3 g = v3(w.gravity);
    float speed = sqrt(dot(g, g)) * w.dt;
    if (b.shape != COLLIDE_SPHERE) {
        V3 o = v3(b.omega), h = v3(b.half);
        speed = speed + sqrt(dot(o, o)) * sqrt(dot(h, h));
    }
    return speed;
}

// How far from a body's surface its wall points are looked for (mod.rs `reach`).
__device__ __forceinline__ float reach(const Body& b, const World& w) {
    V3 v = v3(b.vel);
    return w.margin + (sqrt(dot(v, v)) + extra_speed(b, w)) * w.dt;
}

// How far apart two bodies' surfaces may be and still make a contact: both
// margins and how far they can close in a frame (mod.rs `pair_reach`).
__device__ __forceinline__ float pair_reach(const Body& a, const Body& b, const World& w) {
    V3 dv = sub(v3(a.vel), v3(b.vel)), va = v3(a.vel), vb = v3(b.vel);
    float closing = fmaxf(fmaxf(sqrt(dot(dv, dv)), sqrt(dot(va, va))), sqrt(dot(vb, vb)));
    return 2.0f * w.margin + (closing + extra_speed(a, w) + extra_speed(b, w)) * w.dt;
}

// A body's swept box (a leaf's bounds): where it is and where its velocity
// takes it by the frame's end, grown by the margin and its extra speed
// (mod.rs `aabb`): (min, max).
__device__ __forceinline__ void aabb(const Body& b, const World& w, V3* lo, V3* hi) {
    float r = w.margin + extra_speed(b, w) * w.dt;
    V3 e = add(extent(b), v3(r, r, r));
    V3 p = v3(b.pos), end = add(p, scale(v3(b.vel), w.dt));
    V3 l, h;
#pragma unroll
    for (int k = 0; k < 3; k++) {
        l[k] = fminf(p[k], end[k]);
        h[k] = fmaxf(p[k], end[k]);
    }
    *lo = sub(l, e);
    *hi = add(h, e);
}

// Spreads the low 10 bits of `v` to every third bit.
__device__ __forceinline__ u32 expand_bits(u32 v) {
    v = v & 0x3ffu;
    v = (v | (v << 16)) & 0x030000ffu;
    v = (v | (v << 8)) & 0x0300f00fu;
    v = (v | (v << 4)) & 0x030c30c3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}

// The 30-bit Morton code of a point, 10 bits per axis over the world box.
__device__ __forceinline__ u32 morton(V3 p, const World& w) {
    u32 cell[3];
#pragma unroll
    for (int k = 0; k < 3; k++) {
        float t = (p[k] - w.min[k]) * w.inv_extent[k];
        float c = clamp(t * 1024.0f, 0.0f, 1023.0f);
        cell[k] = __float2uint_rz(c);  // Rust `c as u32`
    }
    return (expand_bits(cell[0]) << 2) | (expand_bits(cell[1]) << 1) | expand_bits(cell[2]);
}

// A split collider's rank (split/cuda/) owns the bodies whose Morton codes
// lie in [lo, hi), the codes of the frame's start (narrow runs before the
// solver moves a body); the others are ghosts. One engine: lo 0, hi
// u32::MAX, which hold every 30-bit code.
__device__ __forceinline__ bool is_ghost(const Body& b, const World& w, u32 lo, u32 hi) {
    u32 code = morton(v3(b.pos), w);
    return code < lo || code >= hi;
}

// Karras 2012's δ(i, j) over `n` sorted codes, the index breaking ties; -1
// when j is out of range.
__device__ __forceinline__ int delta(const u32* codes, i64 n, i64 i, i64 j) {
    if (j < 0 || j >= n) return -1;
    u32 a = codes[i], b = codes[j];
    return a == b ? 32 + __clz((u32)(i ^ j)) : __clz(a ^ b);
}

// Karras 2012, Fig. 4: internal node i's children (node indices: internal
// 0..n-1, leaves n-1+k).
__device__ __forceinline__ void karras_node(const u32* codes, i64 n, i64 i, u32* left, u32* right) {
    i64 d = delta(codes, n, i, i + 1) - delta(codes, n, i, i - 1) >= 0 ? 1 : -1;
    int dmin = delta(codes, n, i, i - d);
    i64 lmax = 2;
    while (delta(codes, n, i, i + lmax * d) > dmin) lmax *= 2;
    i64 l = 0;
    for (i64 t = lmax / 2; t >= 1; t /= 2) {
        if (delta(codes, n, i, i + (l + t) * d) > dmin) l += t;
    }
    i64 j = i + l * d;
    int dnode = delta(codes, n, i, j);
    i64 s = 0;
    i64 t = l;
    while (true) {
        t = (t + 1) / 2;
        if (delta(codes, n, i, i + (s + t) * d) > dnode) s += t;
        if (t == 1) break;
    }
    i64 gamma = i + s * d + min(d, (i64)0);
    *left = min(i, j) == gamma ? (u32)(n - 1 + gamma) : (u32)gamma;
    *right = max(i, j) == gamma + 1 ? (u32)(n - 1 + gamma + 1) : (u32)(gamma + 1);
}

// Whether two nodes' boxes overlap (touching counts).
__device__ __forceinline__ bool overlap(const Node& a, const Node& b) {
    return a.min[0] <= b.max[0] && b.min[0] <= a.max[0] && a.min[1] <= b.max[1] && b.min[1] <= a.max[1] &&
           a.min[2] <= b.max[2] && b.min[2] <= a.max[2];
}

// The union of two boxes: (min, max).
__device__ __forceinline__ void union_(const Node& a, const Node& b, V3* mn, V3* mx) {
    *mn = v3(min(a.min[0], b.min[0]), min(a.min[1], b.min[1]), min(a.min[2], b.min[2]));
    *mx = v3(max(a.max[0], b.max[0]), max(a.max[1], b.max[1]), max(a.max[2], b.max[2]));
}

// walls.rs WALL, is_wall and wall_body: Contact::b of a wall point is
// WALL - k (plane k = 2 axis + side), WALL - 6 the drum.
#define COLLIDE_WALL 0xffffffffu
__device__ __forceinline__ bool is_wall(u32 b) { return b >= COLLIDE_WALL - 6u; }

// The immovable body that wall `id` puts at `point`: at rest, or moving with
// the drum's wall (counter-clockwise about z).
__device__ __forceinline__ Body wall_body(u32 id, V3 point, const World& w) {
    Body b;
    store(b.pos, point);
    b.shape = COLLIDE_SPHERE;
    store(b.vel, v3(0.0f, 0.0f, 0.0f));
    b.inv_mass = 0.0f;
    store(b.half, v3(1.0f, 1.0f, 1.0f));
    b.id = 0u;
    b.rot[0] = b.rot[1] = b.rot[2] = 0.0f;
    b.rot[3] = 1.0f;
    store(b.omega, v3(0.0f, 0.0f, 0.0f));
    b.pad2 = 0.0f;
    if (id == COLLIDE_WALL - 6u) {
        float px = point[0] - w.drum_x;
        float py = point[1] - w.drum_y;
        store(b.vel, v3(-py * w.drum_omega, px * w.drum_omega, 0.0f));
    }
    return b;
}

// motion.rs point_velocity: the velocity of the body's point at `r` from its centre.
__device__ __forceinline__ V3 point_velocity(const Body& b, V3 r) { return add(v3(b.vel), cross(v3(b.omega), r)); }

}  // namespace physics
