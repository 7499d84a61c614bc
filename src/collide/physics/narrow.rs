//! The narrow phase: the exact test of a candidate pair (sphere-sphere,
//! sphere-box, box-box by separating axes) giving a contact or none.

use super::{V3, add, axes, cross, dot, scale, sub};
use crate::collide::layout::{BOX, Body, Contact, SPHERE};

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
