//! The arithmetic of the collision pipeline, one function per step, as plain
//! f32 operations in a fixed order. `kernels/collide/common.cuh` repeats each
//! function under the same name, expression for expression, and NVRTC
//! compiles it with `--fmad=false`: IEEE add, multiply, divide and sqrt round
//! the same on both sides, so one state gives bit-identical contacts and
//! steps on the CPU and the GPU.
//!
//! The solver sums impulses in 64-bit fixed point: integer addition is
//! associative, so the order in which threads add (atomics on the GPU) does
//! not change the result.

use crate::collide::layout::{BOX, Body, Contact, Node, SPHERE, World};

pub type V3 = [f32; 3];

pub fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
pub fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
pub fn scale(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
pub fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub fn cross(a: V3, b: V3) -> V3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// A box's local axes in world space (the columns of its rotation matrix).
pub fn axes(q: [f32; 4]) -> [V3; 3] {
    let [x, y, z, w] = q;
    let (xx, yy, zz) = (x * x, y * y, z * z);
    let (xy, xz, yz) = (x * y, x * z, y * z);
    let (wx, wy, wz) = (w * x, w * y, w * z);
    [
        [1.0 - 2.0 * (yy + zz), 2.0 * (xy + wz), 2.0 * (xz - wy)],
        [2.0 * (xy - wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz + wx)],
        [2.0 * (xz + wy), 2.0 * (yz - wx), 1.0 - 2.0 * (xx + yy)],
    ]
}

/// Half the size of a body's axis-aligned box.
pub fn extent(b: &Body) -> V3 {
    if b.shape == SPHERE {
        return [b.half[0], b.half[0], b.half[0]];
    }
    let u = axes(b.rot);
    let h = b.half;
    let e = |k: usize| u[0][k].abs() * h[0] + u[1][k].abs() * h[1] + u[2][k].abs() * h[2];
    [e(0), e(1), e(2)]
}

/// A body's axis-aligned box (a leaf's bounds).
pub fn aabb(b: &Body) -> (V3, V3) {
    let e = extent(b);
    (sub(b.pos, e), add(b.pos, e))
}

/// Spreads the low 10 bits of `v` to every third bit.
pub fn expand_bits(v: u32) -> u32 {
    let mut v = v & 0x3ff;
    v = (v | (v << 16)) & 0x030000ff;
    v = (v | (v << 8)) & 0x0300f00f;
    v = (v | (v << 4)) & 0x030c30c3;
    v = (v | (v << 2)) & 0x09249249;
    v
}

/// The 30-bit Morton code of a point, 10 bits per axis over the world box
/// (points outside are clamped to it).
pub fn morton(p: V3, w: &World) -> u32 {
    let cell = |k: usize| {
        let t = (p[k] - w.min[k]) * w.inv_extent[k];
        let c = (t * 1024.0).clamp(0.0, 1023.0);
        c as u32
    };
    (expand_bits(cell(0)) << 2) | (expand_bits(cell(1)) << 1) | expand_bits(cell(2))
}

/// Karras 2012's δ(i, j): the length of the longest common prefix of sorted
/// keys i and j, with the index breaking ties between equal codes; -1 when j
/// is out of range.
pub fn delta(codes: &[u32], i: i64, j: i64) -> i32 {
    if j < 0 || j >= codes.len() as i64 {
        return -1;
    }
    let (a, b) = (codes[i as usize], codes[j as usize]);
    if a == b { 32 + ((i ^ j) as u32).leading_zeros() as i32 } else { (a ^ b).leading_zeros() as i32 }
}

/// Karras 2012, Fig. 4: internal node i's children (node indices: internal
/// 0..n-1, leaves n-1+k).
pub fn karras_node(codes: &[u32], i: usize) -> (u32, u32) {
    let n = codes.len() as i64;
    let i = i as i64;
    let d: i64 = if delta(codes, i, i + 1) - delta(codes, i, i - 1) >= 0 { 1 } else { -1 };
    let dmin = delta(codes, i, i - d);
    let mut lmax: i64 = 2;
    while delta(codes, i, i + lmax * d) > dmin {
        lmax *= 2;
    }
    let mut l: i64 = 0;
    let mut t = lmax / 2;
    while t >= 1 {
        if delta(codes, i, i + (l + t) * d) > dmin {
            l += t;
        }
        t /= 2;
    }
    let j = i + l * d;
    let dnode = delta(codes, i, j);
    let mut s: i64 = 0;
    let mut t = l;
    loop {
        t = (t + 1) / 2;
        if delta(codes, i, i + (s + t) * d) > dnode {
            s += t;
        }
        if t == 1 {
            break;
        }
    }
    let gamma = i + s * d + d.min(0);
    let left = if i.min(j) == gamma { (n - 1 + gamma) as u32 } else { gamma as u32 };
    let right = if i.max(j) == gamma + 1 { (n - 1 + gamma + 1) as u32 } else { (gamma + 1) as u32 };
    (left, right)
}

/// Whether two nodes' boxes overlap (touching counts).
pub fn overlap(a: &Node, b: &Node) -> bool {
    a.min[0] <= b.max[0]
        && b.min[0] <= a.max[0]
        && a.min[1] <= b.max[1]
        && b.min[1] <= a.max[1]
        && a.min[2] <= b.max[2]
        && b.min[2] <= a.max[2]
}

/// The union of two boxes.
pub fn union(a: &Node, b: &Node) -> (V3, V3) {
    let mn = [a.min[0].min(b.min[0]), a.min[1].min(b.min[1]), a.min[2].min(b.min[2])];
    let mx = [a.max[0].max(b.max[0]), a.max[1].max(b.max[1]), a.max[2].max(b.max[2])];
    (mn, mx)
}

/// The exact test of candidate (ia, ib), ia < ib: a contact whose normal
/// points from a to b, or none.
pub fn collide(ia: u32, a: &Body, ib: u32, b: &Body) -> Option<Contact> {
    let found = match (a.shape, b.shape) {
        (SPHERE, SPHERE) => sphere_sphere(a, b),
        (BOX, BOX) => box_box(a, b),
        (BOX, _) => sphere_box(b, a),
        _ => sphere_box(a, b).map(|(n, d)| (scale(n, -1.0), d)),
    };
    found.map(|(normal, depth)| Contact { a: ia, b: ib, depth, pad: 0, normal, pad2: 0.0 })
}

/// Normal from a to b and depth.
fn sphere_sphere(a: &Body, b: &Body) -> Option<(V3, f32)> {
    let d = sub(b.pos, a.pos);
    let dist2 = dot(d, d);
    let rsum = a.half[0] + b.half[0];
    if dist2 >= rsum * rsum {
        return None;
    }
    let dist = dist2.sqrt();
    let n = if dist > 1e-6 { scale(d, 1.0 / dist) } else { [0.0, 1.0, 0.0] };
    Some((n, rsum - dist))
}

/// Sphere `s` against box `b`: the normal points from the box to the sphere.
fn sphere_box(s: &Body, b: &Body) -> Option<(V3, f32)> {
    let u = axes(b.rot);
    let h = b.half;
    let r = s.half[0];
    let d = sub(s.pos, b.pos);
    let l = [dot(d, u[0]), dot(d, u[1]), dot(d, u[2])];
    let c = [l[0].clamp(-h[0], h[0]), l[1].clamp(-h[1], h[1]), l[2].clamp(-h[2], h[2])];
    let diff = sub(l, c);
    let d2 = dot(diff, diff);
    if d2 >= r * r {
        return None;
    }
    let (nl, depth) = if d2 > 1e-12 {
        let dist = d2.sqrt();
        (scale(diff, 1.0 / dist), r - dist)
    } else {
        // The centre is inside the box: leave through the nearest face.
        let mut k = 0;
        let mut best = h[0] - l[0].abs();
        for i in 1..3 {
            let gap = h[i] - l[i].abs();
            if gap < best {
                best = gap;
                k = i;
            }
        }
        let mut nl = [0.0; 3];
        nl[k] = if l[k] >= 0.0 { 1.0 } else { -1.0 };
        (nl, r + best)
    };
    let n = add(add(scale(u[0], nl[0]), scale(u[1], nl[1])), scale(u[2], nl[2]));
    Some((n, depth))
}

/// Separating-axis test of two oriented boxes over the 15 axes; the axis of
/// least overlap gives the normal (a to b) and the depth.
fn box_box(a: &Body, b: &Body) -> Option<(V3, f32)> {
    let ua = axes(a.rot);
    let ub = axes(b.rot);
    let t = sub(b.pos, a.pos);
    let mut best = f32::INFINITY;
    let mut normal = [0.0, 1.0, 0.0];
    for k in 0..15 {
        let mut l = if k < 3 {
            ua[k]
        } else if k < 6 {
            ub[k - 3]
        } else {
            cross(ua[(k - 6) / 3], ub[(k - 6) % 3])
        };
        if k >= 6 {
            let len2 = dot(l, l);
            // Parallel edges: the face axes already cover this direction.
            if len2 < 1e-6 {
                continue;
            }
            l = scale(l, 1.0 / len2.sqrt());
        }
        let ra = dot(ua[0], l).abs() * a.half[0] + dot(ua[1], l).abs() * a.half[1] + dot(ua[2], l).abs() * a.half[2];
        let rb = dot(ub[0], l).abs() * b.half[0] + dot(ub[1], l).abs() * b.half[1] + dot(ub[2], l).abs() * b.half[2];
        let s = dot(t, l);
        let o = ra + rb - s.abs();
        if o <= 0.0 {
            return None;
        }
        if o < best {
            best = o;
            normal = if s < 0.0 { scale(l, -1.0) } else { l };
        }
    }
    Some((normal, best))
}

/// Fixed point of the solver's sums: 2^24 steps per unit.
pub const FIXED: f32 = 16777216.0;

pub fn to_fixed(x: f32) -> i64 {
    (x * FIXED) as i64
}

/// The mean of `count` fixed-point addends.
pub fn from_fixed(sum: i64, count: u32) -> f32 {
    (sum as f32) * (1.0 / FIXED) / count as f32
}

/// One Jacobi pass's change for one contact: velocity of a, of b, and (on the
/// first pass only) position of a, of b.
pub fn contact_response(c: &Contact, a: &Body, b: &Body, w: &World, first: bool) -> [V3; 4] {
    let zero = [0.0; 3];
    let inv = a.inv_mass + b.inv_mass;
    if inv <= 0.0 {
        return [zero; 4];
    }
    let n = c.normal;
    let rel = sub(b.vel, a.vel);
    let vn = dot(rel, n);
    let mut p = zero;
    if vn < 0.0 {
        let j = -(1.0 + w.restitution) * vn / inv;
        p = scale(n, j);
        // Coulomb friction, capped by the normal impulse.
        let t = sub(rel, scale(n, vn));
        let tl2 = dot(t, t);
        if tl2 > 1e-12 {
            let tl = tl2.sqrt();
            let jt = (tl / inv).min(w.friction * j);
            p = add(p, scale(t, -jt / tl));
        }
    }
    let (mut pa, mut pb) = (zero, zero);
    if first {
        let corr = (c.depth - w.slop).max(0.0) * w.baumgarte / inv;
        pa = scale(n, -corr * a.inv_mass);
        pb = scale(n, corr * b.inv_mass);
    }
    [scale(p, -a.inv_mass), scale(p, b.inv_mass), pa, pb]
}

/// Gravity for one step.
pub fn gravity(b: &mut Body, w: &World) {
    if b.inv_mass > 0.0 {
        b.vel = add(b.vel, scale(w.gravity, w.dt));
    }
}

/// Moves a body by its velocity and keeps it inside the walls and the drum.
pub fn integrate(b: &mut Body, w: &World) {
    if b.inv_mass <= 0.0 {
        return;
    }
    b.pos = add(b.pos, scale(b.vel, w.dt));
    let e = extent(b);
    for k in 0..3 {
        let lo = w.min[k] + e[k];
        let hi = w.max[k] - e[k];
        if b.pos[k] < lo {
            b.pos[k] = lo;
            if b.vel[k] < 0.0 {
                b.vel[k] = -b.vel[k] * w.restitution;
            }
        } else if b.pos[k] > hi {
            b.pos[k] = hi;
            if b.vel[k] > 0.0 {
                b.vel[k] = -b.vel[k] * w.restitution;
            }
        }
    }
    if w.drum_radius > 0.0 {
        let dx = b.pos[0] - w.drum_x;
        let dy = b.pos[1] - w.drum_y;
        let d = (dx * dx + dy * dy).sqrt();
        let lim = w.drum_radius - e[0].max(e[1]);
        if d > lim && d > 0.0 {
            let (nx, ny) = (dx / d, dy / d);
            b.pos[0] = w.drum_x + nx * lim;
            b.pos[1] = w.drum_y + ny * lim;
            let mut vr = b.vel[0] * nx + b.vel[1] * ny;
            if vr > 0.0 {
                vr = -vr * w.restitution;
            }
            // The wall drags the body along: its tangential speed moves
            // towards the wall's by the friction coefficient.
            let vt = b.vel[0] * -ny + b.vel[1] * nx;
            let wall = w.drum_omega * w.drum_radius;
            let vt = vt + (wall - vt) * w.friction;
            b.vel[0] = vr * nx + vt * -ny;
            b.vel[1] = vr * ny + vt * nx;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::layout::LEAF;

    fn world() -> World {
        World {
            min: [0.0; 3],
            dt: 1.0 / 60.0,
            max: [8.0; 3],
            restitution: 0.2,
            gravity: [0.0, -9.81, 0.0],
            friction: 0.4,
            inv_extent: [1.0 / 8.0; 3],
            slop: 0.01,
            baumgarte: 0.2,
            drum_radius: 0.0,
            drum_x: 0.0,
            drum_y: 0.0,
            drum_omega: 0.0,
            pad: [0.0; 3],
        }
    }

    fn sphere(pos: V3, r: f32) -> Body {
        Body { pos, shape: SPHERE, vel: [0.0; 3], inv_mass: 1.0, half: [r; 3], pad: 0.0, rot: [0.0, 0.0, 0.0, 1.0] }
    }

    fn cuboid(pos: V3, half: V3, rot: [f32; 4]) -> Body {
        Body { pos, shape: BOX, vel: [0.0; 3], inv_mass: 1.0, half, pad: 0.0, rot }
    }

    /// A rotation by `angle` about the unit `axis`.
    fn quat(axis: V3, angle: f32) -> [f32; 4] {
        let s = (0.5 * angle).sin();
        [axis[0] * s, axis[1] * s, axis[2] * s, (0.5 * angle).cos()]
    }

    fn random_quat(rng: &mut fastrand::Rng) -> [f32; 4] {
        let q = [rng.f32() - 0.5, rng.f32() - 0.5, rng.f32() - 0.5, rng.f32() - 0.5];
        let l = dot([q[0], q[1], q[2]], [q[0], q[1], q[2]]) + q[3] * q[3];
        q.map(|x| x / l.sqrt())
    }

    fn close(a: V3, b: V3) -> bool {
        (0..3).all(|k| (a[k] - b[k]).abs() < 1e-5)
    }

    #[test]
    fn morton_interleaves_x_y_z() {
        assert_eq!(expand_bits(0), 0);
        assert_eq!(expand_bits(1), 1);
        assert_eq!(expand_bits(0b11), 0b1001);
        assert_eq!(expand_bits(0x3ff), 0x09249249);
        assert_eq!(expand_bits(0xffff_ffff), 0x09249249, "only the low 10 bits count");
        let w = world();
        assert_eq!(morton([0.0; 3], &w), 0);
        assert_eq!(morton([8.0; 3], &w), 0x3fff_ffff, "the far corner clamps to the last cell");
        assert_eq!(morton([-5.0, 100.0, -1.0], &w), 0b010 * 0x09249249, "outside points clamp");
        // One cell is 8 / 1024: x is the highest bit of each triple.
        let cell = 8.0 / 1024.0;
        assert_eq!(morton([1.5 * cell, 0.0, 0.0], &w), 0b100);
        assert_eq!(morton([0.0, 1.5 * cell, 0.0], &w), 0b010);
        assert_eq!(morton([0.0, 0.0, 1.5 * cell], &w), 0b001);
    }

    /// The hierarchy by its definition: a range of sorted (code, index) keys
    /// splits where the highest bit that differs across it turns to 1; the
    /// left half is named after its last key, the right after its first.
    fn reference(codes: &[u32]) -> Vec<(u32, u32)> {
        let n = codes.len();
        let key = |i: usize| ((codes[i] as u64) << 32) | i as u64;
        let mut nodes = vec![(u32::MAX, u32::MAX); n - 1];
        let mut stack = vec![(0usize, n - 1, 0usize)];
        while let Some((lo, hi, index)) = stack.pop() {
            let common = (key(lo) ^ key(hi)).leading_zeros();
            let split = (lo..hi).rev().find(|&k| (key(lo) ^ key(k)).leading_zeros() > common).unwrap_or(lo);
            let name = |a: usize, b: usize, at: usize| if a == b { (n - 1 + a) as u32 } else { at as u32 };
            let (l, r) = (name(lo, split, split), name(split + 1, hi, split + 1));
            nodes[index] = (l, r);
            if lo != split {
                stack.push((lo, split, split));
            }
            if split + 1 != hi {
                stack.push((split + 1, hi, split + 1));
            }
        }
        nodes
    }

    #[test]
    fn karras_matches_the_definition_on_small_inputs() {
        let mut rng = fastrand::Rng::with_seed(3);
        for n in 2..48 {
            for spread in [1u32, 4, 64, 1 << 30] {
                let mut codes: Vec<u32> = (0..n).map(|_| rng.u32(..spread)).collect();
                codes.sort_unstable();
                let want = reference(&codes);
                for (i, w) in want.iter().enumerate() {
                    assert_eq!(karras_node(&codes, i), *w, "node {i} of {codes:?}");
                }
            }
        }
    }

    #[test]
    fn delta_breaks_ties_by_index() {
        let codes = [5, 5, 5, 9];
        assert_eq!(delta(&codes, 0, 1), 32 + 31);
        assert_eq!(delta(&codes, 0, 2), 32 + 30);
        assert_eq!(delta(&codes, 2, 3), (5u32 ^ 9).leading_zeros() as i32);
        assert_eq!(delta(&codes, 0, -1), -1);
        assert_eq!(delta(&codes, 3, 4), -1);
    }

    #[test]
    fn overlap_and_union_of_boxes() {
        let node = |min: V3, max: V3| Node { min, left: 0, max, right: LEAF };
        let a = node([0.0; 3], [1.0; 3]);
        assert!(overlap(&a, &node([1.0, 0.5, 0.5], [2.0; 3])), "touching counts");
        assert!(!overlap(&a, &node([1.0, 1.5, 0.5], [2.0; 3])));
        assert_eq!(union(&a, &node([-1.0, 0.5, 0.5], [0.5, 3.0, 0.5])), ([-1.0, 0.0, 0.0], [1.0, 3.0, 1.0]));
    }

    #[test]
    fn aabb_of_a_rotated_box() {
        let b = cuboid([1.0, 2.0, 3.0], [1.0, 0.5, 0.25], quat([0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_2));
        let (min, max) = aabb(&b);
        assert!(close(min, [0.5, 1.0, 2.75]) && close(max, [1.5, 3.0, 3.25]), "{min:?} {max:?}");
        let s = sphere([1.0; 3], 0.5);
        assert_eq!(aabb(&s), ([0.5; 3], [1.5; 3]));
    }

    #[test]
    fn sphere_sphere_contact() {
        let (a, b) = (sphere([1.0, 1.0, 1.0], 0.5), sphere([1.8, 1.0, 1.0], 0.5));
        let c = collide(0, &a, 1, &b).expect("they touch");
        assert!(close(c.normal, [1.0, 0.0, 0.0]) && (c.depth - 0.2).abs() < 1e-5, "{c:?}");
        assert_eq!((c.a, c.b), (0, 1));
        assert!(collide(0, &a, 1, &sphere([2.0, 1.0, 1.0], 0.5)).is_none(), "exactly touching is no contact");
        let c = collide(0, &a, 1, &sphere([1.0; 3], 0.3)).expect("one centre");
        assert!(close(c.normal, [0.0, 1.0, 0.0]) && (c.depth - 0.8).abs() < 1e-6, "{c:?}");
    }

    #[test]
    fn sphere_box_contact_both_orders_and_centre_inside() {
        let bx = cuboid([0.0; 3], [1.0; 3], [0.0, 0.0, 0.0, 1.0]);
        let s = sphere([1.3, 0.0, 0.0], 0.5);
        let c = collide(0, &s, 1, &bx).expect("touch");
        assert!(close(c.normal, [-1.0, 0.0, 0.0]) && (c.depth - 0.2).abs() < 1e-5, "sphere first: {c:?}");
        let c = collide(0, &bx, 1, &s).expect("touch");
        assert!(close(c.normal, [1.0, 0.0, 0.0]) && (c.depth - 0.2).abs() < 1e-5, "box first: {c:?}");
        // Past the corner: the normal points from the corner to the centre.
        let s = sphere([1.3, 1.3, 0.0], 0.5);
        let c = collide(0, &bx, 1, &s).expect("touch the edge");
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!(close(c.normal, [h, h, 0.0]) && (c.depth - (0.5 - 0.3 * 2f32.sqrt())).abs() < 1e-5, "{c:?}");
        assert!(collide(0, &bx, 1, &sphere([1.4, 1.4, 0.0], 0.5)).is_none());
        // The centre inside: out through the nearest face.
        let c = collide(0, &bx, 1, &sphere([0.1, -0.8, 0.2], 0.5)).expect("inside");
        assert!(close(c.normal, [0.0, -1.0, 0.0]) && (c.depth - 0.7).abs() < 1e-5, "{c:?}");
        // A box turned 45° about z has an edge at x = √2.
        let turned = cuboid([0.0; 3], [1.0; 3], quat([0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_4));
        let c = collide(0, &turned, 1, &sphere([1.6, 0.0, 0.0], 0.5)).expect("the edge");
        assert!(close(c.normal, [1.0, 0.0, 0.0]) && (c.depth - (0.5 - (1.6 - 2f32.sqrt()))).abs() < 1e-5, "{c:?}");
        assert!(collide(0, &turned, 1, &sphere([1.95, 0.0, 0.0], 0.5)).is_none());
    }

    #[test]
    fn box_box_separating_axes() {
        let id = [0.0, 0.0, 0.0, 1.0];
        let a = cuboid([0.0; 3], [0.5; 3], id);
        let c = collide(0, &a, 1, &cuboid([0.0, 0.9, 0.0], [0.5; 3], id)).expect("stacked");
        assert!(close(c.normal, [0.0, 1.0, 0.0]) && (c.depth - 0.1).abs() < 1e-5, "{c:?}");
        let c = collide(0, &a, 1, &cuboid([0.0, -0.9, 0.0], [0.5; 3], id)).expect("below");
        assert!(close(c.normal, [0.0, -1.0, 0.0]), "{c:?}");
        // b turned 45° about z reaches √2/2 along x.
        let q = quat([0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_4);
        let reach = 0.5 + std::f32::consts::FRAC_1_SQRT_2;
        let c = collide(0, &a, 1, &cuboid([reach - 0.05, 0.0, 0.0], [0.5; 3], q)).expect("edge into face");
        assert!(close(c.normal, [1.0, 0.0, 0.0]) && (c.depth - 0.05).abs() < 1e-5, "{c:?}");
        assert!(collide(0, &a, 1, &cuboid([reach + 0.01, 0.0, 0.0], [0.5; 3], q)).is_none());
        // Two edges crossing: a turned about x, b about z, edge above edge;
        // only the cross product of the edges separates them.
        let qa = quat([1.0, 0.0, 0.0], std::f32::consts::FRAC_PI_4);
        let qb = quat([0.0, 0.0, 1.0], std::f32::consts::FRAC_PI_4);
        let a = cuboid([0.0; 3], [0.5; 3], qa);
        let gap = 2.0 * std::f32::consts::FRAC_1_SQRT_2;
        let c = collide(0, &a, 1, &cuboid([0.0, gap - 0.04, 0.0], [0.5; 3], qb)).expect("edges cross");
        assert!(close(c.normal, [0.0, 1.0, 0.0]) && (c.depth - 0.04).abs() < 1e-5, "{c:?}");
        assert!(collide(0, &a, 1, &cuboid([0.0, gap + 0.01, 0.0], [0.5; 3], qb)).is_none());
    }

    /// For every shape pair: moving b along the normal by the depth (a hair
    /// more) separates the shapes, a hair less does not. This is the property
    /// of the least-penetration axis that the solver relies on.
    #[test]
    fn depth_along_the_normal_separates_random_pairs() {
        let mut rng = fastrand::Rng::with_seed(11);
        let mut seen = [0u32; 3];
        let shape = |rng: &mut fastrand::Rng, pos: V3| {
            if rng.bool() {
                sphere(pos, 0.3 + 0.3 * rng.f32())
            } else {
                cuboid(pos, [0.2 + 0.4 * rng.f32(), 0.2 + 0.4 * rng.f32(), 0.2 + 0.4 * rng.f32()], random_quat(rng))
            }
        };
        for _ in 0..20000 {
            let a = shape(&mut rng, [0.0; 3]);
            let p = [2.0 * rng.f32() - 1.0, 2.0 * rng.f32() - 1.0, 2.0 * rng.f32() - 1.0];
            let mut b = shape(&mut rng, p);
            let Some(c) = collide(0, &a, 1, &b) else { continue };
            seen[(a.shape + b.shape) as usize] += 1;
            assert!(c.depth > 0.0 && (dot(c.normal, c.normal) - 1.0).abs() < 1e-4, "{c:?}");
            let at = b.pos;
            b.pos = add(at, scale(c.normal, c.depth + 2e-3));
            assert!(collide(0, &a, 1, &b).is_none(), "still touching after the depth: {a:?} {b:?} {c:?}");
            if c.depth > 4e-3 {
                b.pos = add(at, scale(c.normal, c.depth - 2e-3));
                assert!(collide(0, &a, 1, &b).is_some(), "apart before the depth: {a:?} {b:?} {c:?}");
            }
        }
        assert!(seen.iter().all(|&s| s > 500), "every pairing must be exercised: {seen:?}");
    }

    #[test]
    fn fixed_point_round_trips_and_averages() {
        assert_eq!(to_fixed(1.0), 1 << 24);
        assert_eq!(to_fixed(-0.5), -(1 << 23));
        assert_eq!(from_fixed(to_fixed(0.25) + to_fixed(0.75), 2), 0.5);
        assert_eq!(from_fixed(to_fixed(-3.0), 1), -3.0);
    }

    #[test]
    fn contact_response_pushes_apart_and_conserves_momentum() {
        let w = world();
        let mut a = sphere([1.0; 3], 0.5);
        let mut b = sphere([1.8, 1.0, 1.0], 0.5);
        a.vel = [1.0, 0.5, 0.0];
        b.vel = [-1.0, 0.0, 0.0];
        b.inv_mass = 0.5;
        let c = collide(0, &a, 1, &b).expect("touch");
        let [dva, dvb, dpa, dpb] = contact_response(&c, &a, &b, &w, true);
        // Momentum: m_a dva + m_b dvb = 0.
        let p = add(scale(dva, 1.0 / a.inv_mass), scale(dvb, 1.0 / b.inv_mass));
        assert!(close(p, [0.0; 3]), "momentum changes by {p:?}");
        let vn = dot(sub(add(b.vel, dvb), add(a.vel, dva)), c.normal);
        assert!((vn - 0.2 * 2.0).abs() < 1e-5, "separating at restitution x approach speed: {vn}");
        assert!(dpa[0] < 0.0 && dpb[0] > 0.0, "positions pushed apart");
        let [_, _, pa, pb] = contact_response(&c, &a, &b, &w, false);
        assert!(pa == [0.0; 3] && pb == [0.0; 3], "later passes leave positions alone");
        // Separating already: no impulse.
        (a.vel, b.vel) = (b.vel, a.vel);
        let r = contact_response(&c, &a, &b, &w, false);
        assert!(r[0] == [0.0; 3] && r[1] == [0.0; 3]);
    }

    #[test]
    fn integrate_keeps_bodies_inside_walls_and_drum() {
        let mut w = world();
        let mut b = sphere([0.6, 4.0, 4.0], 0.5);
        b.vel = [-60.0, 0.0, 0.0];
        integrate(&mut b, &w);
        assert_eq!(b.pos[0], 0.5);
        assert!((b.vel[0] - 12.0).abs() < 1e-4, "bounces at the restitution: {:?}", b.vel);
        w.drum_radius = 3.0;
        w.drum_x = 4.0;
        w.drum_y = 4.0;
        w.drum_omega = 1.0;
        let mut b = sphere([6.45, 4.0, 4.0], 0.5);
        b.vel = [6.0, 0.0, 0.0];
        integrate(&mut b, &w);
        assert!((b.pos[0] - 6.5).abs() < 1e-5 && b.vel[0] < 0.0, "{b:?}");
        assert!(b.vel[1] > 0.0, "the wall drags it along: {b:?}");
    }
}
