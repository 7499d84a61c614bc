//! Box against box: the separating-axis test over the 15 axes, then the
//! contact points of the axis found. A face axis clips the other box's most
//! opposed face against the sides of the reference face (Sutherland-Hodgman)
//! and keeps the points below it, at most [`MAX_POINTS`]; an edge axis gives
//! the closest points of the two edges.

use super::{V3, add, axes, cross, dot, scale, sub};
use crate::collide::layout::Body;

/// The most contact points of one pair.
pub const MAX_POINTS: usize = 4;

/// A face axis is kept over an edge axis unless the edge's overlap is
/// smaller by this much: stacked boxes then touch face to face.
const FACE_BIAS: f32 = 1e-3;

/// The contact of two boxes: the normal from a to b, the overlap along it
/// (the least over the axes), and the points with their depths.
#[derive(Clone, Copy, Debug)]
pub struct Manifold {
    pub normal: V3,
    pub depth: f32,
    pub points: [V3; MAX_POINTS],
    pub depths: [f32; MAX_POINTS],
    pub count: u32,
}

fn sign(x: f32) -> f32 {
    if x >= 0.0 { 1.0 } else { -1.0 }
}

/// Separating axes, then the points of contact; none when an axis separates
/// the boxes by `margin` or more. Closer than that, the axis of least
/// overlap (the largest gap) and points up to `margin` above the reference
/// face make a speculative manifold of negative depths.
pub fn box_box(a: &Body, b: &Body, margin: f32) -> Option<Manifold> {
    let ua = axes(a.rot);
    let ub = axes(b.rot);
    let t = sub(b.pos, a.pos);
    let (mut face, mut face_axis, mut face_n) = (f32::INFINITY, 0usize, [0.0, 1.0, 0.0]);
    let (mut edge, mut edge_axis, mut edge_n) = (f32::INFINITY, 0usize, [0.0, 1.0, 0.0]);
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
        if o <= -margin {
            return None;
        }
        let n = if s < 0.0 { scale(l, -1.0) } else { l };
        if k < 6 && o < face {
            (face, face_axis, face_n) = (o, k, n);
        } else if k >= 6 && o < edge {
            (edge, edge_axis, edge_n) = (o, k, n);
        }
    }
    let mut m =
        Manifold { normal: face_n, depth: face, points: [[0.0; 3]; MAX_POINTS], depths: [0.0; MAX_POINTS], count: 0 };
    if edge + FACE_BIAS < face {
        m.normal = edge_n;
        m.depth = edge;
        m.points[0] = edge_point(a, &ua, b, &ub, edge_axis, edge_n);
        m.depths[0] = edge;
        m.count = 1;
        return Some(m);
    }
    clip_faces(a, &ua, b, &ub, face_axis, margin, &mut m);
    if m.count == 0 {
        // Rounding clipped every point away: one point between the centres.
        m.points[0] = scale(add(a.pos, b.pos), 0.5);
        m.depths[0] = m.depth;
        m.count = 1;
    }
    Some(m)
}

/// The midpoint of the closest points of a's edge along axis i and b's
/// along axis j (axis k = 6 + 3i + j), the edges that meet across `n`.
fn edge_point(a: &Body, ua: &[V3; 3], b: &Body, ub: &[V3; 3], k: usize, n: V3) -> V3 {
    let (i, j) = ((k - 6) / 3, (k - 6) % 3);
    let mut pa = a.pos;
    let mut pb = b.pos;
    for m in 0..3 {
        if m != i {
            pa = add(pa, scale(ua[m], sign(dot(ua[m], n)) * a.half[m]));
        }
        if m != j {
            pb = sub(pb, scale(ub[m], sign(dot(ub[m], n)) * b.half[m]));
        }
    }
    let (da, db) = (ua[i], ub[j]);
    let r = sub(pa, pb);
    let bb = dot(da, db);
    let c = dot(da, r);
    let f = dot(db, r);
    let denom = 1.0 - bb * bb;
    let s = ((bb * f - c) / denom).clamp(-a.half[i], a.half[i]);
    let u = ((f - bb * c) / denom).clamp(-b.half[j], b.half[j]);
    scale(add(add(pa, scale(da, s)), add(pb, scale(db, u))), 0.5)
}

/// Face axis k (a's face for k < 3, b's for 3..6) as the reference face:
/// the other box's most opposed face clipped to its sides; the points
/// below it, or less than `margin` above, go to `m` (midway between the two
/// surfaces).
fn clip_faces(a: &Body, ua: &[V3; 3], b: &Body, ub: &[V3; 3], k: usize, margin: f32, m: &mut Manifold) {
    // The reference face's outward normal points at the incident box.
    let (rb, ru, i, inc, iu, nref) =
        if k < 3 { (a, ua, k, b, ub, m.normal) } else { (b, ub, k - 3, a, ua, scale(m.normal, -1.0)) };
    let centre = add(rb.pos, scale(nref, rb.half[i]));
    let (i1, i2) = ((i + 1) % 3, (i + 2) % 3);
    // The incident face: the one whose normal is most opposed to nref.
    let mut j = 0;
    let mut most = dot(iu[0], nref).abs();
    for (q, &u) in iu.iter().enumerate().skip(1) {
        let d = dot(u, nref).abs();
        if d > most {
            most = d;
            j = q;
        }
    }
    let fc = sub(inc.pos, scale(iu[j], sign(dot(iu[j], nref)) * inc.half[j]));
    let (j1, j2) = ((j + 1) % 3, (j + 2) % 3);
    let e1 = scale(iu[j1], inc.half[j1]);
    let e2 = scale(iu[j2], inc.half[j2]);
    let mut poly = [[0.0f32; 3]; 8];
    poly[0] = add(add(fc, e1), e2);
    poly[1] = add(sub(fc, e1), e2);
    poly[2] = sub(sub(fc, e1), e2);
    poly[3] = sub(add(fc, e1), e2);
    let mut len = 4;
    // Four side planes: dot(p - centre, ±axis) <= half.
    for side in 0..4 {
        let axis = if side < 2 { i1 } else { i2 };
        let dir = if side % 2 == 0 { ru[axis] } else { scale(ru[axis], -1.0) };
        let limit = rb.half[axis];
        let mut out = [[0.0f32; 3]; 8];
        let mut n = 0;
        for p in 0..len {
            let (x, y) = (poly[p], poly[(p + 1) % len]);
            let dx = dot(sub(x, centre), dir) - limit;
            let dy = dot(sub(y, centre), dir) - limit;
            if dx <= 0.0 && n < 8 {
                out[n] = x;
                n += 1;
            }
            if (dx <= 0.0) != (dy <= 0.0) && n < 8 {
                let s = dx / (dx - dy);
                out[n] = add(x, scale(sub(y, x), s));
                n += 1;
            }
        }
        poly = out;
        len = n;
        if len == 0 {
            return;
        }
    }
    // The points below the reference face (or within the margin), at most MAX_POINTS: the extremes
    // along the face's two diagonals (the corners of an aligned face).
    let mut keep = [usize::MAX; MAX_POINTS];
    let mut best = [f32::NEG_INFINITY; MAX_POINTS];
    for (p, &q) in poly.iter().enumerate().take(len) {
        let under = dot(sub(q, centre), nref);
        if under >= margin {
            continue;
        }
        let (d1, d2) = (dot(q, ru[i1]), dot(q, ru[i2]));
        let along = [d1 + d2, d1 - d2, d2 - d1, -d1 - d2];
        for e in 0..MAX_POINTS {
            if along[e] > best[e] {
                best[e] = along[e];
                keep[e] = p;
            }
        }
    }
    for e in 0..MAX_POINTS {
        let p = keep[e];
        if p == usize::MAX || keep[..e].contains(&p) {
            continue;
        }
        let under = dot(sub(poly[p], centre), nref);
        let c = m.count as usize;
        m.points[c] = sub(poly[p], scale(nref, 0.5 * under));
        m.depths[c] = -under;
        m.count += 1;
    }
}
