// The solver and the step: physics/solver.rs and physics/motion.rs, function
// for function (common.cuh says how the two sides are kept bit-identical).
#pragma once
#include "common.cuh"

namespace physics {

// The diagonal of a body's inverse inertia in its own frame.
__device__ __forceinline__ V3 inv_inertia(const Body& b) {
    if (b.shape == COLLIDE_SPHERE) {
        float i = 2.5f * b.inv_mass / (b.half[0] * b.half[0]);
        return v3(i, i, i);
    }
    float x = b.half[0] * b.half[0], y = b.half[1] * b.half[1], z = b.half[2] * b.half[2];
    return v3(3.0f * b.inv_mass / (y + z), 3.0f * b.inv_mass / (x + z), 3.0f * b.inv_mass / (x + y));
}

// motion.rs `Inertia`: a body's axes and the diagonal of its inverse inertia
// in its own frame, taken once for all the points of a manifold (a pass
// never turns a body).
struct Inertia {
    Axes u;
    V3 d;
};

__device__ __forceinline__ Inertia inertia(const Body& b) {
    Inertia m;
    m.d = inv_inertia(b);
    m.u = axes(b.rot);
    return m;
}

// The world-space inverse inertia times v: R diag(inv_inertia) Rᵀ v.
__device__ __forceinline__ V3 inertia_mul(const Inertia& m, V3 v) {
    V3 l = v3(dot(v, m.u[0]) * m.d[0], dot(v, m.u[1]) * m.d[1], dot(v, m.u[2]) * m.d[2]);
    return add(add(scale(m.u[0], l[0]), scale(m.u[1], l[1])), scale(m.u[2], l[2]));
}

// Fixed point of the solver's sums: 2^24 steps per unit.
#define FIXED 16777216.0f

// Rust `(x * FIXED) as i64`: truncating, saturating, NaN to 0.
__device__ __forceinline__ i64 to_fixed(float x) { return __float2ll_rz(x * FIXED); }

__device__ __forceinline__ float from_fixed(i64 sum) { return __ll2float_rn(sum) * (1.0f / FIXED); }

// solver.rs SOFT_DAMPING and MAX_PUSH.
#define SOFT_DAMPING 10.0f
#define MAX_PUSH 3.0f

// solver.rs `Softness`.
struct Softness {
    float bias_rate;
    float mass_scale;
    float impulse_scale;
};

// solver.rs `softness`: a spring of `hertz` and SOFT_DAMPING over a step dt.
__device__ __forceinline__ Softness softness(float hertz, float dt) {
    float omega = 6.2831855f * hertz;
    float a1 = 2.0f * SOFT_DAMPING + dt * omega;
    float a2 = dt * omega * a1;
    float a3 = 1.0f / (1.0f + a2);
    Softness s;
    s.bias_rate = omega / a1;
    s.mass_scale = a2 * a3;
    s.impulse_scale = a3;
    return s;
}

// solver.rs `contact_softness`: at most an eighth of the substep rate,
// doubled when one side cannot move.
__device__ __forceinline__ Softness contact_softness(const Body& a, const Body& b, const World& w) {
    float hertz = min(w.contact_hertz, 0.125f / w.dt);
    if (a.inv_mass <= 0.0f || b.inv_mass <= 0.0f) hertz = 2.0f * hertz;
    return softness(hertz, w.dt);
}

// solver.rs `Impulse` (aligned as Body is, for 16-byte loads).
struct __align__(16) Impulse {
    V3 linear;
    V3 angular_a;
    V3 angular_b;
    V3 push;
};

// The inverse effective mass of a contact along `d`, each body's mass split
// over its `k` contacts.
__device__ __forceinline__ float inv_effective(const Body& a, const Inertia& ia, float ka, V3 ra, const Body& b,
                                               const Inertia& ib, float kb, V3 rb, V3 d) {
    V3 ca = cross(ra, d);
    V3 cb = cross(rb, d);
    return ka * (a.inv_mass + dot(ca, inertia_mul(ia, ca))) + kb * (b.inv_mass + dot(cb, inertia_mul(ib, cb)));
}

// What a body in k contact points counts as in the mass split (World::split).
__device__ __forceinline__ float share(u32 k, const World& w) { return 1.0f + w.split * (__uint2float_rn(k) - 1.0f); }

// One Jacobi pass of contact c between a (in ka contact points) and b (in kb),
// over the substep's w.dt; a relax pass (soft contacts) pushes nothing out.
__device__ __forceinline__ Impulse contact_impulse(Contact& c, const Body& a, const Inertia& ia, u32 ka_, const Body& b,
                                                   const Inertia& ib, u32 kb_, const World& w, bool relax) {
    V3 zero = v3(0.0f, 0.0f, 0.0f);
    Impulse out;
    out.linear = out.angular_a = out.angular_b = out.push = zero;
    float ka = share(ka_, w), kb = share(kb_, w);
    V3 n = v3(c.normal);
    V3 ra = sub(v3(c.point), v3(a.pos));
    V3 rb = sub(v3(c.point), v3(b.pos));
    float kn = inv_effective(a, ia, ka, ra, b, ib, kb, rb, n);
    if (kn <= 0.0f) return out;
    // The depth now, the centres having moved since the narrow phase.
    float depth = c.depth - (dot(sub(v3(b.pos), v3(a.pos)), n) - c.sep);
    // Apart by more than the slop: the bodies may approach until they touch at
    // the substep's end (within the slop the contact counts as touching).
    // Touching, they stop: the bounce comes once, after the substeps.
    float target = depth < -w.slop ? depth / w.dt : 0.0f;
    V3 rel = sub(point_velocity(b, rb), point_velocity(a, ra));
    float vn = dot(rel, n);
    bool soft = w.contact_hertz > 0.0f;
    float lambda;
    if (soft && !relax && depth >= -w.slop) {
        // Box2D's soft step: a stiff spring pushing past the slop through the
        // velocities (the relax pass takes that speed back).
        Softness s = contact_softness(a, b, w);
        float goal = min(s.bias_rate * max(depth - w.slop, 0.0f), MAX_PUSH);
        lambda = max(c.lambda - (s.mass_scale * ((vn - goal) / kn) + s.impulse_scale * c.lambda), 0.0f);
    } else {
        lambda = max(c.lambda - (vn - target) / kn, 0.0f);
    }
    float dn = lambda - c.lambda;
    c.lambda = lambda;
    // It pushed this frame: the restitution pass owes it its bounce.
    if (lambda > 0.0f && c.bounce > 0.0f) c.bounce = -c.bounce;
    // Friction against the sliding velocity, capped by the normal impulse.
    V3 t = sub(rel, scale(n, vn));
    float tl2 = dot(t, t);
    V3 f = v3(c.friction);
    if (tl2 > 1e-12f) {
        float tl = sqrt(tl2);
        float kt = inv_effective(a, ia, ka, ra, b, ib, kb, rb, scale(t, 1.0f / tl));
        f = sub(f, scale(t, 1.0f / kt));
    }
    float fl2 = dot(f, f);
    float stick = w.static_friction * lambda;
    if (fl2 > stick * stick) f = scale(f, w.friction * lambda / sqrt(fl2));
    V3 df = sub(f, v3(c.friction));
    store(c.friction, f);
    V3 p = add(scale(n, dn), df);
    // The split impulse: positions only (soft contacts push through the velocities).
    float push = soft ? 0.0f : max(depth - w.slop, 0.0f) * w.baumgarte / (ka * a.inv_mass + kb * b.inv_mass);
    out.linear = p;
    out.angular_a = scale(cross(ra, p), -1.0f);
    out.angular_b = cross(rb, p);
    out.push = scale(n, push);
    return out;
}

// solver.rs `bounces`: whether c takes part in the restitution pass.
__device__ __forceinline__ bool bounces(const Contact& c) { return c.bounce < 0.0f; }

// solver.rs `bounce_arm`: a movable sphere's lever arm in the restitution
// pass is its surface point along the normal; any other body's the point.
__device__ __forceinline__ V3 bounce_arm(const Body& b, V3 point, V3 out) {
    if (b.shape == COLLIDE_SPHERE && b.inv_mass > 0.0f) return scale(out, b.half[0]);
    return sub(point, v3(b.pos));
}

// solver.rs `restitution`: one of World::bounce_passes after the substeps; a
// contact that pushed moves toward its bounce (each body's mass split over its
// bouncing contacts), the impulse given so far kept in c.sep, never below 0.
__device__ __forceinline__ Impulse restitution(Contact& c, bool first, const Body& a, const Inertia& ia, u32 ka_,
                                               const Body& b, const Inertia& ib, u32 kb_) {
    Impulse out;
    out.linear = out.angular_a = out.angular_b = out.push = v3(0.0f, 0.0f, 0.0f);
    if (!bounces(c)) return out;
    float given = first ? 0.0f : c.sep;
    c.sep = given;
    float ka = (float)ka_, kb = (float)kb_;
    V3 n = v3(c.normal);
    V3 ra = bounce_arm(a, v3(c.point), n);
    V3 rb = bounce_arm(b, v3(c.point), scale(n, -1.0f));
    float kn = inv_effective(a, ia, ka, ra, b, ib, kb, rb, n);
    if (kn <= 0.0f) return out;
    float vn = dot(sub(point_velocity(b, rb), point_velocity(a, ra)), n);
    float total = max(given - (vn + c.bounce) / kn, 0.0f);
    c.sep = total;
    V3 p = scale(n, total - given);
    out.linear = p;
    out.angular_a = scale(cross(ra, p), -1.0f);
    out.angular_b = cross(rb, p);
    return out;
}

// Warm starting: contact c takes the impulses p, the same contact (a, b,
// slot) of the last frame, held in that frame's last substep (friction loses
// its part along the new normal); the first substep applies them (hold).
__device__ __forceinline__ void warm_start(Contact& c, const Contact& p) {
    V3 n = v3(c.normal);
    c.lambda = p.lambda;
    V3 pf = v3(p.friction);
    store(c.friction, sub(pf, scale(n, dot(pf, n))));
}

// The impulse contact c held in the last substep, on one of its bodies (the
// side of solver.rs `hold` that the CPU's gather takes for that body):
// a's side (`on_b` false) takes the opposite impulse.
__device__ __forceinline__ void hold_side(const Contact& c, const Body& body, bool on_b, V3* linear, V3* angular) {
    V3 n = v3(c.normal);
    V3 r = sub(v3(c.point), v3(body.pos));
    V3 j = add(scale(n, c.lambda), v3(c.friction));
    if (on_b) {
        *linear = j;
        *angular = cross(r, j);
    } else {
        *linear = scale(j, -1.0f);
        *angular = scale(cross(r, j), -1.0f);
    }
}

// A body takes the sums of its contacts' impulses of one pass (an immovable
// one takes nothing).
__device__ __forceinline__ void apply(Body& b, const Inertia& ib, V3 linear, V3 angular, V3 push) {
    if (b.inv_mass <= 0.0f) return;
    store(b.vel, add(v3(b.vel), scale(linear, b.inv_mass)));
    store(b.omega, add(v3(b.omega), inertia_mul(ib, angular)));
    store(b.pos, add(v3(b.pos), scale(push, b.inv_mass)));
}

// solver.rs `coloured_impulse`: one coloured pass of contact c; a and b take
// the impulse at once, their masses whole.
__device__ __forceinline__ void coloured_impulse(Contact& c, Body& a, const Inertia& ia, Body& b, const Inertia& ib,
                                                 const World& w, bool relax) {
    Impulse r = contact_impulse(c, a, ia, 1u, b, ib, 1u, w, relax);
    apply(a, ia, scale(r.linear, -1.0f), r.angular_a, scale(r.push, -1.0f));
    apply(b, ib, r.linear, r.angular_b, r.push);
}

// Gravity for one step.
__device__ __forceinline__ void gravity(Body& b, const World& w) {
    if (b.inv_mass > 0.0f) store(b.vel, add(v3(b.vel), scale(v3(w.gravity), w.dt)));
}

// Moves and turns a body by its velocities and puts it back inside the walls
// and the drum (positions only).
__device__ __forceinline__ void integrate(Body& b, const World& w) {
    if (b.inv_mass <= 0.0f) return;
    store(b.pos, add(v3(b.pos), scale(v3(b.vel), w.dt)));
    // q += dt/2 (ω, 0) q.
    float x = b.rot[0], y = b.rot[1], z = b.rot[2], s = b.rot[3];
    V3 o = scale(v3(b.omega), 0.5f * w.dt);
    float q0 = x + (o[0] * s + (o[1] * z - o[2] * y));
    float q1 = y + (o[1] * s + (o[2] * x - o[0] * z));
    float q2 = z + (o[2] * s + (o[0] * y - o[1] * x));
    float q3 = s - (o[0] * x + o[1] * y + o[2] * z);
    float len = sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3);
    b.rot[0] = q0 / len;
    b.rot[1] = q1 / len;
    b.rot[2] = q2 / len;
    b.rot[3] = q3 / len;
    V3 e = extent(b);
    for (int k = 0; k < 3; k++) {
        float lo = w.min[k] + e[k];
        float hi = w.max[k] - e[k];
        if (b.pos[k] < lo) {
            b.pos[k] = lo;
        } else if (b.pos[k] > hi) {
            b.pos[k] = hi;
        }
    }
    if (w.drum_radius > 0.0f) {
        float dx = b.pos[0] - w.drum_x;
        float dy = b.pos[1] - w.drum_y;
        float d = sqrt(dx * dx + dy * dy);
        float lim = w.drum_radius - max(e[0], e[1]);
        if (d > lim && d > 0.0f) {
            b.pos[0] = w.drum_x + dx / d * lim;
            b.pos[1] = w.drum_y + dy / d * lim;
        }
    }
}

}  // namespace physics
