// Shared by the collision demo's kernels (collide.cu): the layouts of
// src/collide/layout.rs and the arithmetic of src/collide/physics/.
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

// Keep in sync with layout.rs `Body` (64 bytes).
struct Body {
    float pos[3];
    u32 shape;
    float vel[3];
    float inv_mass;
    float half[3];
    float pad;
    float rot[4];
};

// Keep in sync with layout.rs `Node` (32 bytes).
struct Node {
    float min[3];
    u32 left;
    float max[3];
    u32 right;
};

// Keep in sync with layout.rs `Contact` (32 bytes).
struct Contact {
    u32 a;
    u32 b;
    float depth;
    u32 pad;
    float normal[3];
    float pad2;
};

// Keep in sync with layout.rs `World` (96 bytes).
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
    float pad[3];
};

static_assert(sizeof(Body) == 64, "Body: keep in sync with layout.rs");
static_assert(sizeof(Node) == 32, "Node: keep in sync with layout.rs");
static_assert(sizeof(Contact) == 32, "Contact: keep in sync with layout.rs");
static_assert(sizeof(World) == 96, "World: keep in sync with layout.rs");

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

// A body's axis-aligned box (a leaf's bounds): (min, max).
__device__ __forceinline__ void aabb(const Body& b, V3* lo, V3* hi) {
    V3 e = extent(b);
    *lo = sub(v3(b.pos), e);
    *hi = add(v3(b.pos), e);
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

// Normal from a to b and depth; false for none.
__device__ __forceinline__ bool sphere_sphere(const Body& a, const Body& b, V3* normal, float* depth) {
    V3 d = sub(v3(b.pos), v3(a.pos));
    float dist2 = dot(d, d);
    float rsum = a.half[0] + b.half[0];
    if (dist2 >= rsum * rsum) return false;
    float dist = sqrt(dist2);
    *normal = dist > 1e-6f ? scale(d, 1.0f / dist) : v3(0.0f, 1.0f, 0.0f);
    *depth = rsum - dist;
    return true;
}

// Sphere `s` against box `b`: the normal points from the box to the sphere.
__device__ __forceinline__ bool sphere_box(const Body& s, const Body& b, V3* normal, float* depth) {
    Axes u = axes(b.rot);
    V3 h = v3(b.half);
    float r = s.half[0];
    V3 d = sub(v3(s.pos), v3(b.pos));
    V3 l = v3(dot(d, u[0]), dot(d, u[1]), dot(d, u[2]));
    V3 c = v3(clamp(l[0], -h[0], h[0]), clamp(l[1], -h[1], h[1]), clamp(l[2], -h[2], h[2]));
    V3 diff = sub(l, c);
    float d2 = dot(diff, diff);
    if (d2 >= r * r) return false;
    V3 nl;
    if (d2 > 1e-12f) {
        float dist = sqrt(d2);
        nl = scale(diff, 1.0f / dist);
        *depth = r - dist;
    } else {
        // The centre is inside the box: leave through the nearest face.
        int k = 0;
        float best = h[0] - abs(l[0]);
        for (int i = 1; i < 3; i++) {
            float gap = h[i] - abs(l[i]);
            if (gap < best) {
                best = gap;
                k = i;
            }
        }
        nl = v3(0.0f, 0.0f, 0.0f);
        nl[k] = l[k] >= 0.0f ? 1.0f : -1.0f;
        *depth = r + best;
    }
    *normal = add(add(scale(u[0], nl[0]), scale(u[1], nl[1])), scale(u[2], nl[2]));
    return true;
}

// Separating-axis test of two oriented boxes over the 15 axes; the axis of
// least overlap gives the normal (a to b) and the depth.
__device__ __forceinline__ bool box_box(const Body& a, const Body& b, V3* normal_out, float* depth) {
    Axes ua = axes(a.rot);
    Axes ub = axes(b.rot);
    V3 t = sub(v3(b.pos), v3(a.pos));
    float best = COLLIDE_INF;
    V3 normal = v3(0.0f, 1.0f, 0.0f);
    for (int k = 0; k < 15; k++) {
        V3 l = k < 3 ? ua[k] : k < 6 ? ub[k - 3] : cross(ua[(k - 6) / 3], ub[(k - 6) % 3]);
        if (k >= 6) {
            float len2 = dot(l, l);
            // Parallel edges: the face axes already cover this direction.
            if (len2 < 1e-6f) continue;
            l = scale(l, 1.0f / sqrt(len2));
        }
        float ra = abs(dot(ua[0], l)) * a.half[0] + abs(dot(ua[1], l)) * a.half[1] + abs(dot(ua[2], l)) * a.half[2];
        float rb = abs(dot(ub[0], l)) * b.half[0] + abs(dot(ub[1], l)) * b.half[1] + abs(dot(ub[2], l)) * b.half[2];
        float s = dot(t, l);
        float o = ra + rb - abs(s);
        if (o <= 0.0f) return false;
        if (o < best) {
            best = o;
            normal = s < 0.0f ? scale(l, -1.0f) : l;
        }
    }
    *normal_out = normal;
    *depth = best;
    return true;
}

// The exact test of candidate (ia, ib), ia < ib: a contact whose normal
// points from a to b, or false.
__device__ __forceinline__ bool collide(u32 ia, const Body& a, u32 ib, const Body& b, Contact* out) {
    V3 n;
    float d;
    bool found;
    if (a.shape == COLLIDE_SPHERE && b.shape == COLLIDE_SPHERE) {
        found = sphere_sphere(a, b, &n, &d);
    } else if (a.shape == COLLIDE_BOX && b.shape == COLLIDE_BOX) {
        found = box_box(a, b, &n, &d);
    } else if (a.shape == COLLIDE_BOX) {
        found = sphere_box(b, a, &n, &d);
    } else {
        found = sphere_box(a, b, &n, &d);
        if (found) n = scale(n, -1.0f);
    }
    if (!found) return false;
    out->a = ia;
    out->b = ib;
    out->depth = d;
    out->pad = 0;
    store(out->normal, n);
    out->pad2 = 0.0f;
    return true;
}

// Fixed point of the solver's sums: 2^24 steps per unit.
#define FIXED 16777216.0f

// Rust `(x * FIXED) as i64`: truncating, saturating, NaN to 0.
__device__ __forceinline__ i64 to_fixed(float x) { return __float2ll_rz(x * FIXED); }

// The mean of `count` fixed-point addends.
__device__ __forceinline__ float from_fixed(i64 sum, u32 count) {
    return (__ll2float_rn(sum) * (1.0f / FIXED)) / __uint2float_rn(count);
}

// One Jacobi pass's change for one contact: velocity of a, of b, and (on the
// first pass only) position of a, of b.
struct Response {
    V3 r[4];
};

__device__ __forceinline__ Response contact_response(const Contact& c, const Body& a, const Body& b, const World& w,
                                                     bool first) {
    V3 zero = v3(0.0f, 0.0f, 0.0f);
    Response out;
    out.r[0] = out.r[1] = out.r[2] = out.r[3] = zero;
    float inv = a.inv_mass + b.inv_mass;
    if (inv <= 0.0f) return out;
    V3 n = v3(c.normal);
    V3 rel = sub(v3(b.vel), v3(a.vel));
    float vn = dot(rel, n);
    V3 p = zero;
    if (vn < 0.0f) {
        float j = -(1.0f + w.restitution) * vn / inv;
        p = scale(n, j);
        // Coulomb friction, capped by the normal impulse.
        V3 t = sub(rel, scale(n, vn));
        float tl2 = dot(t, t);
        if (tl2 > 1e-12f) {
            float tl = sqrt(tl2);
            float jt = min(tl / inv, w.friction * j);
            p = add(p, scale(t, -jt / tl));
        }
    }
    V3 pa = zero, pb = zero;
    if (first) {
        float corr = max(c.depth - w.slop, 0.0f) * w.baumgarte / inv;
        pa = scale(n, -corr * a.inv_mass);
        pb = scale(n, corr * b.inv_mass);
    }
    out.r[0] = scale(p, -a.inv_mass);
    out.r[1] = scale(p, b.inv_mass);
    out.r[2] = pa;
    out.r[3] = pb;
    return out;
}

// Gravity for one step.
__device__ __forceinline__ void gravity(Body& b, const World& w) {
    if (b.inv_mass > 0.0f) store(b.vel, add(v3(b.vel), scale(v3(w.gravity), w.dt)));
}

// Moves a body by its velocity and keeps it inside the walls and the drum.
__device__ __forceinline__ void integrate(Body& b, const World& w) {
    if (b.inv_mass <= 0.0f) return;
    store(b.pos, add(v3(b.pos), scale(v3(b.vel), w.dt)));
    V3 e = extent(b);
    for (int k = 0; k < 3; k++) {
        float lo = w.min[k] + e[k];
        float hi = w.max[k] - e[k];
        if (b.pos[k] < lo) {
            b.pos[k] = lo;
            if (b.vel[k] < 0.0f) b.vel[k] = -b.vel[k] * w.restitution;
        } else if (b.pos[k] > hi) {
            b.pos[k] = hi;
            if (b.vel[k] > 0.0f) b.vel[k] = -b.vel[k] * w.restitution;
        }
    }
    if (w.drum_radius > 0.0f) {
        float dx = b.pos[0] - w.drum_x;
        float dy = b.pos[1] - w.drum_y;
        float d = sqrt(dx * dx + dy * dy);
        float lim = w.drum_radius - max(e[0], e[1]);
        if (d > lim && d > 0.0f) {
            float nx = dx / d, ny = dy / d;
            b.pos[0] = w.drum_x + nx * lim;
            b.pos[1] = w.drum_y + ny * lim;
            float vr = b.vel[0] * nx + b.vel[1] * ny;
            if (vr > 0.0f) vr = -vr * w.restitution;
            // The wall drags the body along: its tangential speed moves
            // towards the wall's by the friction coefficient.
            float vt = b.vel[0] * -ny + b.vel[1] * nx;
            float wall = w.drum_omega * w.drum_radius;
            vt = vt + (wall - vt) * w.friction;
            b.vel[0] = vr * nx + vt * -ny;
            b.vel[1] = vr * ny + vt * nx;
        }
    }
}

}  // namespace physics
