// The solver and the step: physics/solver.rs and physics/motion.rs, function
// for function (the WGSL twin of kernels/collide/solver.cuh; common.wgsl says
// how the two sides are kept alike). The fixed-point conversions are written
// out in integer arithmetic: WGSL has no i64, and Rust's `as` between f32 and
// i64 (truncating and saturating one way, round to nearest even the other) is
// what the sums must match bit for bit.

// The diagonal of a body's inverse inertia in its own frame.
fn inv_inertia(b: B) -> vec3<f32> {
    if (b.shape == SPHERE) {
        let i = 2.5 * b.inv_mass / (b.half.x * b.half.x);
        return vec3<f32>(i, i, i);
    }
    let x = rounded(b.half.x * b.half.x);
    let y = rounded(b.half.y * b.half.y);
    let z = rounded(b.half.z * b.half.z);
    return vec3<f32>(3.0 * b.inv_mass / (y + z), 3.0 * b.inv_mass / (x + z), 3.0 * b.inv_mass / (x + y));
}

// motion.rs `Inertia`: a body's axes and the diagonal of its inverse inertia
// in its own frame, taken once for all the points of a manifold (a pass
// never turns a body).
struct Inertia {
    u: array<vec3<f32>, 3>,
    d: vec3<f32>,
}

fn inertia(b: B) -> Inertia {
    let d = inv_inertia(b);
    return Inertia(axes(b.rot), d);
}

// The world-space inverse inertia times v: R diag(inv_inertia) Rᵀ v.
fn inertia_mul(m: Inertia, v: vec3<f32>) -> vec3<f32> {
    let u = m.u;
    let d = m.d;
    let l = vec3<f32>(dot3(v, u[0]) * d.x, dot3(v, u[1]) * d.y, dot3(v, u[2]) * d.z);
    return (rounded3(u[0] * l.x) + rounded3(u[1] * l.y)) + rounded3(u[2] * l.z);
}

// Fixed point of the solver's sums: 2^24 steps per unit.
const FIXED: f32 = 16777216.0;

// Rust `(x * FIXED) as i64`: truncating, saturating, NaN to 0; (lo, hi) two's complement.
fn to_fixed(x: f32) -> vec2<u32> {
    let v = x * FIXED;
    if (v != v) {
        return vec2<u32>(0u, 0u);
    }
    if (v >= 0x1p63f) {
        return vec2<u32>(0xffffffffu, 0x7fffffffu);
    }
    if (v <= -0x1p63f) {
        return vec2<u32>(0u, 0x80000000u);
    }
    let a = trunc(abs(v));
    var lo = 0u;
    var hi = 0u;
    if (a < 0x1p32f) {
        lo = u32(a);
    } else {
        // a is a multiple of 2^9 here: both halves are exact.
        hi = u32(a * 0x1p-32f);
        lo = u32(a - f32(hi) * 0x1p32f);
    }
    if (v < 0.0) {
        lo = ~lo + 1u;
        hi = ~hi + select(0u, 1u, lo == 0u);
    }
    return vec2<u32>(lo, hi);
}

// Bit p (0..63) of the 64-bit (lo, hi).
fn bit64(lo: u32, hi: u32, p: u32) -> u32 {
    if (p < 32u) {
        return (lo >> p) & 1u;
    }
    return (hi >> (p - 32u)) & 1u;
}

// Whether any bit below p (1..63) of (lo, hi) is set.
fn any_below(lo: u32, hi: u32, p: u32) -> bool {
    if (p >= 32u) {
        return lo != 0u || (p > 32u && (hi & ((1u << (p - 32u)) - 1u)) != 0u);
    }
    return (lo & ((1u << p) - 1u)) != 0u;
}

// Rust `sum as f32` for an i64: round to nearest, ties to even.
fn i64_to_f32(s: vec2<u32>) -> f32 {
    let neg = (s.y & 0x80000000u) != 0u;
    var lo = s.x;
    var hi = s.y;
    if (neg) {
        lo = ~s.x + 1u;
        hi = ~s.y + select(0u, 1u, lo == 0u);
    }
    var m: f32;
    if (hi == 0u && lo < 0x1000000u) {
        m = f32(lo); // exact
    } else {
        var top = 31u - countLeadingZeros(lo);
        if (hi != 0u) {
            top = 63u - countLeadingZeros(hi);
        }
        let sh = top - 23u; // 1..40: the bits below the 24 kept
        var mant: u32;
        if (sh >= 32u) {
            mant = hi >> (sh - 32u);
        } else {
            mant = (lo >> sh) | (hi << (32u - sh));
        }
        let guard = bit64(lo, hi, sh - 1u) == 1u;
        let sticky = sh > 1u && any_below(lo, hi, sh - 1u);
        if (guard && (sticky || (mant & 1u) == 1u)) {
            mant += 1u; // may reach 2^24: still exact below
        }
        m = f32(mant) * bitcast<f32>((127u + sh) << 23u);
    }
    if (neg) {
        return -m;
    }
    return m;
}

fn from_fixed(sum: vec2<u32>) -> f32 {
    return i64_to_f32(sum) * (1.0 / FIXED);
}

// solver.rs `Impulse`.
struct Impulse {
    linear: vec3<f32>,
    angular_a: vec3<f32>,
    angular_b: vec3<f32>,
    push: vec3<f32>,
}

// The inverse effective mass of a contact along `d`, each body's mass split
// over its `k` contacts.
fn inv_effective(a: B, ia: Inertia, ka: f32, ra: vec3<f32>, b: B, ib: Inertia, kb: f32, rb: vec3<f32>,
                 d: vec3<f32>) -> f32 {
    let ca = cross3(ra, d);
    let cb = cross3(rb, d);
    return rounded(ka * (a.inv_mass + dot3(ca, inertia_mul(ia, ca)))) +
           rounded(kb * (b.inv_mass + dot3(cb, inertia_mul(ib, cb))));
}

// What a body in k contact points counts as in the mass split (World::split).
fn share(k: u32, w: W) -> f32 {
    return 1.0 + rounded(w.split * (f32(k) - 1.0));
}

// solver.rs SOFT_DAMPING and MAX_PUSH.
const SOFT_DAMPING: f32 = 10.0;
const MAX_PUSH: f32 = 3.0;

// solver.rs `Softness`.
struct Softness {
    bias_rate: f32,
    mass_scale: f32,
    impulse_scale: f32,
}

// solver.rs `softness`: a spring of `hertz` and SOFT_DAMPING over a step dt.
fn softness(hertz: f32, dt: f32) -> Softness {
    let omega = 6.2831855 * hertz;
    let a1 = 2.0 * SOFT_DAMPING + rounded(dt * omega);
    let a2 = dt * omega * a1;
    let a3 = 1.0 / (1.0 + a2);
    return Softness(omega / a1, a2 * a3, a3);
}

// solver.rs `contact_softness`: at most an eighth of the substep rate,
// doubled when one side cannot move.
fn contact_softness(a: B, b: B, w: W) -> Softness {
    var hertz = minf(w.contact_hertz, 0.125 / w.dt);
    if (a.inv_mass <= 0.0 || b.inv_mass <= 0.0) {
        hertz = 2.0 * hertz;
    }
    return softness(hertz, w.dt);
}

// One Jacobi pass of contact c between a (in ka contact points) and b (in kb);
// w.dt is the substep's; a relax pass (soft contacts) pushes nothing out.
fn contact_impulse(c: ptr<function, Contact>, a: B, ia: Inertia, ka_: u32, b: B, ib: Inertia, kb_: u32,
                   w: W, relax: bool) -> Impulse {
    let zero = vec3<f32>(0.0, 0.0, 0.0);
    var out = Impulse(zero, zero, zero, zero);
    let ka = share(ka_, w);
    let kb = share(kb_, w);
    let n = v3((*c).normal);
    let ra = v3((*c).point) - a.pos;
    let rb = v3((*c).point) - b.pos;
    let kn = inv_effective(a, ia, ka, ra, b, ib, kb, rb, n);
    if (kn <= 0.0) {
        return out;
    }
    // The depth now, the centres having moved since the narrow phase.
    let depth = (*c).depth - (dot3(b.pos - a.pos, n) - (*c).sep);
    // Apart by more than the slop: the bodies may approach until they touch
    // at the substep's end (within the slop the contact counts as touching).
    // Touching, they stop: the bounce comes once, after the substeps.
    // (solver.rs `target`, a word WGSL reserves.)
    var goal = 0.0;
    if (depth < -w.slop) {
        goal = depth / w.dt;
    }
    let rel = point_velocity(b, rb) - point_velocity(a, ra);
    let vn = dot3(rel, n);
    let soft = w.contact_hertz > 0.0;
    var lambda: f32;
    if (soft && !relax && depth >= -w.slop) {
        // Box2D's soft step: a stiff spring pushing past the slop through the
        // velocities (the relax pass takes that speed back).
        let s = contact_softness(a, b, w);
        let spring = minf(s.bias_rate * maxf(depth - w.slop, 0.0), MAX_PUSH);
        lambda = maxf((*c).lambda - (rounded(s.mass_scale * ((vn - spring) / kn)) + rounded(s.impulse_scale * (*c).lambda)),
                      0.0);
    } else {
        lambda = maxf((*c).lambda - (vn - goal) / kn, 0.0);
    }
    let dn = lambda - (*c).lambda;
    (*c).lambda = lambda;
    // It pushed this frame: the restitution pass owes it its bounce.
    if (lambda > 0.0 && (*c).bounce > 0.0) {
        (*c).bounce = -(*c).bounce;
    }
    // Friction against the sliding velocity, capped by the normal impulse.
    let t = rel - rounded3(n * vn);
    let tl2 = dot3(t, t);
    var f = v3((*c).friction);
    if (tl2 > 1e-12) {
        let tl = sqrt_rn(tl2);
        let kt = inv_effective(a, ia, ka, ra, b, ib, kb, rb, t * (1.0 / tl));
        f = f - rounded3(t * (1.0 / kt));
    }
    let fl2 = dot3(f, f);
    let stick = w.static_friction * lambda;
    if (fl2 > stick * stick) {
        f = f * (w.friction * lambda / sqrt_rn(fl2));
    }
    let df = f - v3((*c).friction);
    (*c).friction = a3(f);
    let p = rounded3(n * dn) + df;
    // The split impulse: positions only (soft contacts push through the velocities).
    var push = 0.0;
    if (!soft) {
        push = maxf(depth - w.slop, 0.0) * w.baumgarte / (rounded(ka * a.inv_mass) + rounded(kb * b.inv_mass));
    }
    out.linear = p;
    out.angular_a = cross3(ra, p) * -1.0;
    out.angular_b = cross3(rb, p);
    out.push = n * push;
    return out;
}

// solver.rs `bounces`: whether c takes part in the restitution pass.
fn bounces(c: Contact) -> bool {
    return c.bounce < 0.0;
}

// solver.rs `bounce_arm`: a movable sphere's lever arm in the restitution
// pass is its surface point along the normal; any other body's the point.
fn bounce_arm(b: B, point: vec3<f32>, out: vec3<f32>) -> vec3<f32> {
    if (b.shape == SPHERE && b.inv_mass > 0.0) {
        return out * b.half.x;
    }
    return point - b.pos;
}

// solver.rs `restitution`: one of World::bounce_passes after the substeps; a
// contact that pushed moves toward its bounce (each body's mass split over its
// bouncing contacts), the impulse given so far kept in c.sep, never below 0.
fn restitution(c: ptr<function, Contact>, first: bool, a: B, ia: Inertia, ka_: u32, b: B, ib: Inertia,
               kb_: u32) -> Impulse {
    let zero = vec3<f32>(0.0, 0.0, 0.0);
    var out = Impulse(zero, zero, zero, zero);
    if (!bounces(*c)) {
        return out;
    }
    var given = (*c).sep;
    if (first) {
        given = 0.0;
    }
    (*c).sep = given;
    let ka = f32(ka_);
    let kb = f32(kb_);
    let n = v3((*c).normal);
    let ra = bounce_arm(a, v3((*c).point), n);
    let rb = bounce_arm(b, v3((*c).point), n * -1.0);
    let kn = inv_effective(a, ia, ka, ra, b, ib, kb, rb, n);
    if (kn <= 0.0) {
        return out;
    }
    let vn = dot3(point_velocity(b, rb) - point_velocity(a, ra), n);
    let total = maxf(given - (vn + (*c).bounce) / kn, 0.0);
    (*c).sep = total;
    let p = rounded3(n * (total - given));
    out.linear = p;
    out.angular_a = cross3(ra, p) * -1.0;
    out.angular_b = cross3(rb, p);
    return out;
}

// Warm starting: contact c takes the impulses p, the same contact (a, b,
// slot) of the last frame, held in that frame's last substep (friction loses
// its part along the new normal); the first substep applies them (`hold`).
fn warm_start(c: ptr<function, Contact>, p: Contact) {
    let n = v3((*c).normal);
    (*c).lambda = p.lambda;
    let pf = v3(p.friction);
    (*c).friction = a3(pf - rounded3(n * dot3(pf, n)));
}

// The impulse contact c held in the last substep, which a substep applies
// again before its passes.
fn hold(c: Contact, a: B, b: B) -> Impulse {
    let n = v3(c.normal);
    let ra = v3(c.point) - a.pos;
    let rb = v3(c.point) - b.pos;
    let j = rounded3(n * c.lambda) + v3(c.friction);
    return Impulse(j, cross3(ra, j) * -1.0, cross3(rb, j), vec3<f32>(0.0, 0.0, 0.0));
}

// A body takes the sums of its contacts' impulses of one pass.
fn apply_sums(b: ptr<function, B>, ib: Inertia, linear: vec3<f32>, angular: vec3<f32>, push: vec3<f32>) {
    // An immovable body takes nothing.
    if ((*b).inv_mass <= 0.0) {
        return;
    }
    (*b).vel = (*b).vel + rounded3(linear * (*b).inv_mass);
    (*b).omega = (*b).omega + inertia_mul(ib, angular);
    (*b).pos = (*b).pos + rounded3(push * (*b).inv_mass);
}

// solver.rs `coloured_impulse`: one coloured pass of contact c; a and b take
// the impulse at once, their masses whole.
fn coloured_impulse(c: ptr<function, Contact>, a: ptr<function, B>, ia: Inertia, b: ptr<function, B>, ib: Inertia,
                    w: W, relax: bool) {
    let r = contact_impulse(c, *a, ia, 1u, *b, ib, 1u, w, relax);
    apply_sums(a, ia, r.linear * -1.0, r.angular_a, r.push * -1.0);
    apply_sums(b, ib, r.linear, r.angular_b, r.push);
}

// Gravity for one step.
fn gravity(b: ptr<function, B>, w: W) {
    if ((*b).inv_mass > 0.0) {
        (*b).vel = (*b).vel + rounded3(w.gravity * w.dt);
    }
}

// Moves and turns a body by its velocities and puts it back inside the walls
// and the drum (positions only).
fn integrate_body(b: ptr<function, B>, w: W) {
    if ((*b).inv_mass <= 0.0) {
        return;
    }
    (*b).pos = (*b).pos + rounded3((*b).vel * w.dt);
    // q += dt/2 (ω, 0) q.
    let x = (*b).rot.x;
    let y = (*b).rot.y;
    let z = (*b).rot.z;
    let s = (*b).rot.w;
    let o = (*b).omega * (0.5 * w.dt);
    let q0 = x + (rounded(o.x * s) + (rounded(o.y * z) - rounded(o.z * y)));
    let q1 = y + (rounded(o.y * s) + (rounded(o.z * x) - rounded(o.x * z)));
    let q2 = z + (rounded(o.z * s) + (rounded(o.x * y) - rounded(o.y * x)));
    let q3 = s - (rounded(o.x * x) + rounded(o.y * y) + rounded(o.z * z));
    let len = sqrt_rn(rounded(q0 * q0) + rounded(q1 * q1) + rounded(q2 * q2) + rounded(q3 * q3));
    (*b).rot = vec4<f32>(q0 / len, q1 / len, q2 / len, q3 / len);
    let e = extent(*b);
    for (var k = 0; k < 3; k++) {
        let lo = w.min[k] + e[k];
        let hi = w.max[k] - e[k];
        if ((*b).pos[k] < lo) {
            (*b).pos[k] = lo;
        } else if ((*b).pos[k] > hi) {
            (*b).pos[k] = hi;
        }
    }
    if (w.drum_radius > 0.0) {
        let dx = (*b).pos.x - w.drum_x;
        let dy = (*b).pos.y - w.drum_y;
        let d = sqrt_rn(rounded(dx * dx) + rounded(dy * dy));
        let lim = w.drum_radius - maxf(e.x, e.y);
        if (d > lim && d > 0.0) {
            (*b).pos.x = w.drum_x + rounded(dx / d * lim);
            (*b).pos.y = w.drum_y + rounded(dy / d * lim);
        }
    }
}
