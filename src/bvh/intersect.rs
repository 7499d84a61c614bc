//! Ray–triangle and ray–box tests: the CPU reference that the GPU traversal must match.
//!
//! Both are inclusive at `t_max` so that [`Bvh::closest_hit`](super::Bvh::closest_hit) can keep
//! the lexicographically smallest `(t, position)` among hits at exactly the same distance; pass a
//! slightly shortened `t_max` where an end point itself must not count (a shadow ray to a light).
//! Keep in sync with `kernels/trace/common.cuh`.

use glam::Vec3;

/// Self-intersection guard: a triangle hit counts only if `t > RAY_EPSILON · s`, where `s` is the
/// largest coordinate magnitude of the ray origin and of the triangle's first vertex. Rounding
/// error in a hit point grows with the magnitude of its coordinates, so a relative epsilon works at
/// any scene scale, where an absolute one would swallow a millimetre-sized scene or fail to cover
/// a kilometre-sized one. With a unit-length `d`, `t` is a distance and so is the epsilon:
/// 0.055 mm at the far wall of the Cornell box.
pub const RAY_EPSILON: f32 = 1e-4;

/// Möller–Trumbore: the hit of the ray `o + t·d` with `tri`, as `(t, u, v)` with barycentrics
/// `u` (weight of vertex 1) and `v` (vertex 2), for `RAY_EPSILON·s < t ≤ t_max` (see
/// [`RAY_EPSILON`]). Both faces count; a ray in the triangle's plane never hits.
#[inline]
pub fn intersect_triangle(o: Vec3, d: Vec3, tri: &[Vec3; 3], t_max: f32) -> Option<(f32, f32, f32)> {
    let [v0, v1, v2] = *tri;
    let (e1, e2) = (v1 - v0, v2 - v0);
    let p = d.cross(e2);
    let det = e1.dot(p);
    // det = 0 would make the barycentrics NaN, and NaN passes no range test below as rejection.
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let inv_det = 1.0 / det;
    let s = o - v0;
    let u = s.dot(p) * inv_det;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(e1);
    let v = d.dot(q) * inv_det;
    let inside = v >= 0.0 && u + v <= 1.0;
    if !inside {
        return None;
    }
    let t = e2.dot(q) * inv_det;
    let t_min = RAY_EPSILON * o.abs().max_element().max(v0.abs().max_element());
    (t > t_min && t <= t_max).then_some((t, u, v))
}

/// `1 + 2·γ₃` with `γₙ = n·u / (1 − n·u)` and `u = 2⁻²⁴`: the factor by which Ize ("Robust BVH ray
/// traversal", JCGT 2013) widens a slab test's exit distance so that rounding never makes a box
/// miss a ray that hits what the box encloses.
const SLAB_WIDEN: f32 = 1.0 + 2.0 * (3.0 * f32::EPSILON / 2.0) / (1.0 - 3.0 * f32::EPSILON / 2.0);

/// Slab test of the ray `o + t·d` (given `inv_d = 1 / d`) against the box `min..max`: the entry
/// distance, clamped to 0 when the origin is inside, if the ray meets the box within
/// `0 ≤ t ≤ t_max`. A zero direction component gives an infinite `inv_d`, which works as is; a ray
/// lying in a face's plane (0·∞ = NaN) counts as inside that slab, so the test stays conservative.
#[inline]
pub fn intersect_box(o: Vec3, inv_d: Vec3, min: Vec3, max: Vec3, t_max: f32) -> Option<f32> {
    let (mut near, mut far) = (0.0f32, t_max);
    for axis in 0..3 {
        let t0 = (min[axis] - o[axis]) * inv_d[axis];
        let t1 = (max[axis] - o[axis]) * inv_d[axis];
        if t0.is_nan() || t1.is_nan() {
            continue;
        }
        near = near.max(t0.min(t1));
        far = far.min(t0.max(t1));
    }
    (near <= far * SLAB_WIDEN).then_some(near)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRI: [Vec3; 3] = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 0.0)];

    #[test]
    fn triangle_hit_reports_distance_and_barycentrics() {
        let (t, u, v) = intersect_triangle(Vec3::new(0.25, 0.5, 2.0), Vec3::NEG_Z, &TRI, f32::INFINITY).unwrap();
        assert_eq!((t, u, v), (2.0, 0.25, 0.5));
        // Back face, t_max inclusive, t_max exceeded, behind the origin, parallel.
        assert!(intersect_triangle(Vec3::new(0.25, 0.25, -1.0), Vec3::Z, &TRI, 1.0).is_some());
        assert!(intersect_triangle(Vec3::new(0.25, 0.25, -1.0), Vec3::Z, &TRI, 0.999).is_none());
        assert!(intersect_triangle(Vec3::new(0.25, 0.25, 1.0), Vec3::Z, &TRI, 10.0).is_none());
        assert!(intersect_triangle(Vec3::new(-1.0, 0.25, 0.0), Vec3::X, &TRI, 10.0).is_none());
        // Outside the edges, and a NaN ray.
        assert!(intersect_triangle(Vec3::new(0.75, 0.75, 1.0), Vec3::NEG_Z, &TRI, 10.0).is_none());
        assert!(intersect_triangle(Vec3::NAN, Vec3::NEG_Z, &TRI, 10.0).is_none());
    }

    #[test]
    fn epsilon_scales_with_the_scene() {
        // A ray leaving the triangle's own surface does not hit it again, at any scale.
        for scale in [1e-3f32, 1.0, 1e3, 1e5] {
            let tri = TRI.map(|v| v * scale);
            let o = Vec3::new(0.3, 0.3, 0.0) * scale;
            let d = Vec3::new(0.3, 0.2, 1.0).normalize();
            assert!(intersect_triangle(o, d, &tri, f32::INFINITY).is_none(), "scale {scale}");
            assert!(intersect_triangle(o + Vec3::Z * scale, Vec3::NEG_Z, &tri, f32::INFINITY).is_some());
        }
    }

    #[test]
    fn box_test_handles_inside_axis_parallel_and_misses() {
        let (min, max) = (Vec3::ZERO, Vec3::ONE);
        let hit = |o: Vec3, d: Vec3, t_max| intersect_box(o, d.recip(), min, max, t_max);
        assert_eq!(hit(Vec3::new(0.5, 0.5, -2.0), Vec3::Z, f32::INFINITY), Some(2.0));
        assert_eq!(hit(Vec3::splat(0.5), Vec3::X, f32::INFINITY), Some(0.0), "origin inside");
        assert_eq!(hit(Vec3::new(0.5, 0.5, -2.0), Vec3::Z, 1.0), None, "beyond t_max");
        assert_eq!(hit(Vec3::new(0.5, 0.5, 2.0), Vec3::Z, f32::INFINITY), None, "behind");
        assert_eq!(hit(Vec3::new(0.5, 2.0, -2.0), Vec3::Z, f32::INFINITY), None, "parallel outside");
        assert_eq!(hit(Vec3::new(0.0, 0.5, -2.0), Vec3::Z, f32::INFINITY), Some(2.0), "in a face's plane");
        assert_eq!(hit(Vec3::new(1.0, 1.0, -2.0), Vec3::Z, f32::INFINITY), Some(2.0), "along an edge");
        let flat = intersect_box(Vec3::new(0.5, -1.0, 0.5), Vec3::Y.recip(), Vec3::ZERO, Vec3::new(1.0, 0.0, 1.0), 5.0);
        assert_eq!(flat, Some(1.0), "a flat box is still hit");
    }
}
