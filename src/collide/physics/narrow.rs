//! The narrow phase: the exact test of a candidate pair giving up to
//! [`MAX_POINTS`] contact points (sphere-sphere and sphere-box one,
//! box-box a clipped manifold, manifold.rs), or none.

use super::{MAX_POINTS, V3, add, axes, box_box, dot, pair_reach, point_velocity, scale, sub};
use crate::collide::layout::{BOX, Body, Contact, SPHERE, World};

/// The exact test of candidate (ia, ib), ia < ib: its contact points, the
/// normals pointing from a to b, in `out[..count]`. Surfaces closer than
/// the pair's reach make (speculative) contacts of negative depth.
pub fn collide(ia: u32, a: &Body, ib: u32, b: &Body, w: &World) -> ([Contact; MAX_POINTS], usize) {
    let margin = pair_reach(a, b, w);
    let mut out = [Contact::default(); MAX_POINTS];
    let mut count = 0;
    let mut add_point = |normal: V3, depth: f32, point: V3| {
        out[count] = contact(ia, a, ib, b, w, normal, depth, point, count as u32);
        count += 1;
    };
    match (a.shape, b.shape) {
        (SPHERE, SPHERE) => {
            if let Some((n, d)) = sphere_sphere(a, b, margin) {
                add_point(n, d, add(a.pos, scale(n, a.half[0] - 0.5 * d)));
            }
        }
        (BOX, BOX) => {
            if let Some(m) = box_box(a, b, margin) {
                for k in 0..m.count as usize {
                    add_point(m.normal, m.depths[k], m.points[k]);
                }
            }
        }
        (BOX, _) => {
            if let Some((n, d)) = sphere_box(b, a, margin) {
                add_point(n, d, sub(b.pos, scale(n, b.half[0] - 0.5 * d)));
            }
        }
        _ => {
            if let Some((n, d)) = sphere_box(a, b, margin) {
                add_point(scale(n, -1.0), d, sub(a.pos, scale(n, a.half[0] - 0.5 * d)));
            }
        }
    }
    (out, count)
}

/// A contact record: its geometry, the separation of the centres along the
/// normal, and the bounce restitution asks for (from the approach speed
/// before this step's gravity); no impulse applied yet.
#[allow(clippy::too_many_arguments)]
pub(super) fn contact(
    ia: u32,
    a: &Body,
    ib: u32,
    b: &Body,
    w: &World,
    normal: V3,
    depth: f32,
    point: V3,
    slot: u32,
) -> Contact {
    let rel = sub(point_velocity(b, sub(point, b.pos)), point_velocity(a, sub(point, a.pos)));
    let vn = dot(rel, normal);
    let bounce = if vn < -w.rest_speed { -w.restitution * vn } else { 0.0 };
    Contact {
        a: ia,
        b: ib,
        depth,
        sep: dot(sub(b.pos, a.pos), normal),
        normal,
        lambda: 0.0,
        point,
        bounce,
        friction: [0.0; 3],
        slot,
    }
}

/// Normal from a to b and depth (negative: a gap under `margin`).
fn sphere_sphere(a: &Body, b: &Body, margin: f32) -> Option<(V3, f32)> {
    let d = sub(b.pos, a.pos);
    let dist2 = dot(d, d);
    let rsum = a.half[0] + b.half[0];
    let reach = rsum + margin;
    if dist2 >= reach * reach {
        return None;
    }
    let dist = dist2.sqrt();
    let n = if dist > 1e-6 { scale(d, 1.0 / dist) } else { [0.0, 1.0, 0.0] };
    Some((n, rsum - dist))
}

/// Sphere `s` against box `b`: the normal points from the box to the sphere
/// (a gap under `margin` gives a negative depth).
fn sphere_box(s: &Body, b: &Body, margin: f32) -> Option<(V3, f32)> {
    let u = axes(b.rot);
    let h = b.half;
    let r = s.half[0];
    let d = sub(s.pos, b.pos);
    let l = [dot(d, u[0]), dot(d, u[1]), dot(d, u[2])];
    let c = [l[0].clamp(-h[0], h[0]), l[1].clamp(-h[1], h[1]), l[2].clamp(-h[2], h[2])];
    let diff = sub(l, c);
    let d2 = dot(diff, diff);
    let reach = r + margin;
    if d2 >= reach * reach {
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
