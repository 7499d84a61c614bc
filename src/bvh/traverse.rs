//! Closest-hit traversal on the CPU: the reference the GPU kernel is checked against, and the
//! tracer's CPU fallback.

use glam::Vec3;
use rayon::prelude::*;

use super::{Bvh, CULL_SLACK, intersect_box, intersect_triangle};

impl Bvh {
    /// The nearest hit of the ray `o + t·d`, `t ≤ t_max`, as `(t, BVH position, u, v)`. Triangles
    /// are given in BVH order ([`Bvh::reorder`]). Among hits at exactly the same `t` the smallest
    /// position wins, so the answer is unique and any correct traversal, in any order, returns the
    /// same one.
    pub fn closest_hit(&self, triangles: &[[Vec3; 3]], o: Vec3, d: Vec3, t_max: f32) -> Option<(f32, u32, f32, f32)> {
        let inv_d = d.recip();
        let entry = |i: u32, t: f32| {
            let node = &self.nodes[i as usize];
            intersect_box(o, inv_d, node.min.into(), node.max.into(), t * CULL_SLACK)
        };
        let mut best: Option<(f32, u32, f32, f32)> = None;
        let mut t_best = t_max;
        // (node, entry distance); a node is skipped if a closer hit was found since it was pushed.
        let mut stack = Vec::with_capacity(64);
        if !self.nodes.is_empty() {
            stack.extend(entry(0, t_best).map(|t| (0u32, t)));
        }
        while let Some((i, t_entry)) = stack.pop() {
            if t_entry > t_best * CULL_SLACK {
                continue;
            }
            let node = self.nodes[i as usize];
            if node.count > 0 {
                leaf_hits(triangles, (o, d, t_max), node.first..node.first + node.count, &mut best);
                t_best = best.map_or(t_max, |b| b.0);
                continue;
            }
            let (a, b) = (node.first, node.first + 1);
            match (entry(a, t_best), entry(b, t_best)) {
                // The nearer child goes on top, to be visited first.
                (Some(ta), Some(tb)) if tb < ta => stack.extend([(a, ta), (b, tb)]),
                (Some(ta), Some(tb)) => stack.extend([(b, tb), (a, ta)]),
                (Some(ta), None) => stack.push((a, ta)),
                (None, Some(tb)) => stack.push((b, tb)),
                (None, None) => {}
            }
        }
        best
    }

    /// `items` (one per scene triangle) permuted into BVH order: `out[p] = items[order[p]]`.
    pub fn reorder<T: Copy + Send + Sync>(&self, items: &[T]) -> Vec<T> {
        self.order.par_iter().map(|&i| items[i as usize]).collect()
    }
}

/// The triangles at `positions` against the ray up to `t_max`, into `best`
/// (closest first, ties to the smallest position): every CPU traversal's leaf.
pub(super) fn leaf_hits(
    triangles: &[[Vec3; 3]],
    (o, d, t_max): (Vec3, Vec3, f32),
    positions: impl IntoIterator<Item = u32>,
    best: &mut Option<(f32, u32, f32, f32)>,
) {
    for position in positions {
        let limit = best.map_or(t_max, |b| b.0);
        let Some((t, u, v)) = intersect_triangle(o, d, &triangles[position as usize], limit) else { continue };
        if best.is_none_or(|(bt, bp, ..)| t < bt || (t == bt && position < bp)) {
            *best = Some((t, position, u, v));
        }
    }
}
