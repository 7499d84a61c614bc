//! The CPU twins of the 8-wide BVH's kernels in `kernels/trace/wide.cuh` and `wavefront.cu`
//! (`wide_children`, `trace_depth_first_wide`, `trace_bf_expand_wide`), one
//! ray or one frontier item each, over [`crate::bvh::wide`]'s nodes. Both
//! BVHs hold the triangles in one order and ties go to the smaller position,
//! so these find the binary traversals' hits bit for bit.

use std::sync::atomic::Ordering::Relaxed;

use glam::Vec3;

use crate::bvh::wide::{Child, WIDTH, WideNode};
use crate::trace::DEAD64;
use crate::trace::layout::Packed;
use crate::trace::shading::{Paths, inv_dir, key_dist, leaf_range, ray};

/// The octant of a direction: bit a set when the ray runs up axis a. Child
/// slots are in octant order (`bvh::wide::octant_slots`), so the child in
/// slot `c` goes to bit `c ^ oct` and the highest bit is about the nearest.
pub fn octant(d: Vec3) -> u32 {
    (d.x >= 0.0) as u32 | ((d.y >= 0.0) as u32) << 1 | ((d.z >= 0.0) as u32) << 2
}

/// The node's children the ray enters before `limit`: (wide nodes, leaves),
/// each a mask with child slot `c` at bit `c ^ oct`. The ray is put into the
/// node's grid once (plane q of axis a at `q · is_a + oq_a` along it) and
/// each axis's interval is widened by 2^-20 of its own magnitudes, as on the
/// GPU: no box the exact dequantized test keeps is rejected, and the
/// triangle tests decide every hit. (The GPU fuses `q · is + oq`; the margin
/// covers either rounding.)
pub fn wide_children(n: &WideNode, o: Vec3, inv: Vec3, oct: u32, limit: f32) -> (u32, u32) {
    let step = Vec3::new(n.step(0), n.step(1), n.step(2));
    // An axis the ray runs parallel to (1/0 = inf) would turn the margin into inf - inf = NaN, which
    // max/min drop: that axis would stop culling and a ray along a coordinate axis would walk most of
    // the tree (0.5 s for one GPU thread, sphereflake). A finite stand-in keeps its slab exact.
    let iv = inv.max(Vec3::splat(-1e30)).min(Vec3::splat(1e30));
    let is = step * iv;
    let oq = (Vec3::from(n.origin) - o) * iv;
    let err = 9.54e-7 * (oq.abs() + 255.0 * is.abs());
    let (on, of) = (oq - err, oq + err);
    // The near plane of an axis is its low one where the ray runs up it.
    let rows = |lo: &[u8; 8], hi: &[u8; 8], up: bool| if up { (*lo, *hi) } else { (*hi, *lo) };
    let (nx, fx) = rows(&n.lo_x, &n.hi_x, inv.x >= 0.0);
    let (ny, fy) = rows(&n.lo_y, &n.hi_y, inv.y >= 0.0);
    let (nz, fz) = rows(&n.lo_z, &n.hi_z, inv.z >= 0.0);
    let (mut nodes, mut leaves) = (0, 0);
    for c in (0..WIDTH).filter(|&c| n.valid >> c & 1 != 0) {
        let plane = |q: u8, a: usize, off: Vec3| q as f32 * is[a] + off[a];
        // f32::max/min ignore a NaN operand, as fmaxf/fminf do (a ray with a NaN component).
        let t0 = plane(nx[c], 0, on).max(plane(ny[c], 1, on)).max(plane(nz[c], 2, on).max(0.0));
        let t1 = plane(fx[c], 0, of).min(plane(fy[c], 1, of)).min(plane(fz[c], 2, of).min(limit));
        if t0 <= t1 {
            let bit = 1 << (c as u32 ^ oct);
            if n.internal >> c & 1 != 0 {
                nodes |= bit;
            } else {
                leaves |= bit;
            }
        }
    }
    (nodes, leaves)
}

/// The child behind bit `bit` of a `wide_children` mask: its index among the
/// node's wide children (`internal`) or leaves, counted in slot order.
fn rank(mask_of_kind: u8, bit: u32, oct: u32) -> u32 {
    let slot = bit ^ oct;
    (mask_of_kind as u32 & ((1 << slot) - 1)).count_ones()
}

/// The set bits of `mask`, highest (nearest) first.
fn nearest_first(mut mask: u32) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let bit = 31 - mask.leading_zeros();
            mask &= !(1 << bit);
            bit
        })
    })
}

/// Intersects the hit leaves of `n`, nearest first: true when a shadow ray
/// (`any_hit`) found a blocker.
fn leaves(
    s: &Packed,
    n: &WideNode,
    hits: u32,
    oct: u32,
    (o, d, limit): (Vec3, Vec3, f32),
    any_hit: bool,
    best: &mut u64,
) -> bool {
    nearest_first(hits).any(|bit| {
        let Child::Leaf(l) = n.child((bit ^ oct) as usize) else { return false };
        leaf_range(&s.wide_tris, l.first..l.first + l.count, o, d, key_dist(*best, limit), any_hit, best)
    })
}

/// Depth-first on the wide BVH: `trace_depth_first_wide` for one live queue
/// entry. The nearest child is taken next; `stack` is scratch.
pub fn trace_depth_first_wide(s: &Packed, p: &Paths, path: u32, shadow: bool, stack: &mut Vec<u32>) {
    let Some((o, d, tmax)) = ray(p, path as usize, shadow) else { return };
    let (inv, oct) = (inv_dir(d), octant(d));
    let mut best = DEAD64;
    let mut occluded = false;
    stack.clear();
    stack.push(0);
    while let Some(top) = stack.pop() {
        let n = &s.wide.nodes[top as usize];
        let (nodes, hit_leaves) = wide_children(n, o, inv, oct, key_dist(best, tmax));
        if leaves(s, n, hit_leaves, oct, (o, d, tmax), shadow, &mut best) {
            occluded = true;
            break;
        }
        // Farthest pushed first, so the nearest is popped next.
        let mut bits: Vec<u32> = nearest_first(nodes).collect();
        bits.reverse();
        stack.extend(bits.into_iter().map(|bit| n.child_base + rank(n.internal, bit, oct)));
    }
    if shadow {
        p.occluded[path as usize].store(occluded as u32, Relaxed);
    } else {
        p.hit[path as usize].store(best, Relaxed);
    }
}

/// Breadth-first, one level, one frontier item (path, wide node): tests the
/// node's children, intersects its hit leaves at once (nearest first, the hit
/// merged with an atomic min; a shadow ray's blocker ends the item) and
/// writes the hit wide children to `out[..8]`, nearest first, every other
/// slot dead. Returns the live slots. `trace_bf_expand_wide` for one item.
pub fn trace_bf_expand_wide(s: &Packed, p: &Paths, item: u64, shadow: bool, out: &mut [u64]) -> u32 {
    out.fill(DEAD64);
    if item == DEAD64 {
        return 0;
    }
    let path = (item >> 32) as u32;
    let i = path as usize;
    let Some((o, d, tmax)) = ray(p, i, shadow) else { return 0 };
    // Relaxed loads, as trace_bf_expand's: the hit and the occlusion only tighten.
    let limit = match shadow {
        // Another item of this path may have found a blocker already.
        true if p.occluded[i].load(Relaxed) != 0 => return 0,
        true => tmax,
        false => key_dist(p.hit[i].load(Relaxed), f32::INFINITY),
    };
    let (inv, oct) = (inv_dir(d), octant(d));
    let n = &s.wide.nodes[item as u32 as usize];
    let mut best = DEAD64;
    let (nodes, hit_leaves) = wide_children(n, o, inv, oct, limit);
    if leaves(s, n, hit_leaves, oct, (o, d, limit), shadow, &mut best) {
        p.occluded[i].store(1, Relaxed);
        return 0;
    }
    let base = (path as u64) << 32;
    let mut live = 0;
    for (slot, bit) in out.iter_mut().zip(nearest_first(nodes)) {
        *slot = base | (n.child_base + rank(n.internal, bit, oct)) as u64;
        live += 1;
    }
    if !shadow && best != DEAD64 {
        p.hit[i].fetch_min(best, Relaxed);
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::wide::WideBvh;

    /// A ray parallel to an axis (1/0 = inf there) culls along that axis too: before, the margin's
    /// inf - inf dropped the axis, and a ray along z entered every child of a row of boxes along x.
    #[test]
    fn a_ray_parallel_to_an_axis_enters_only_the_children_it_crosses() {
        // 64 small triangles in a row along x, one a unit apart: the root's 8 children split the row.
        let triangles: Vec<[Vec3; 3]> = (0..64)
            .map(|i| {
                let x = i as f32;
                [Vec3::new(x, 0.0, 0.0), Vec3::new(x + 0.5, 0.0, 0.5), Vec3::new(x, 0.5, 0.0)]
            })
            .collect();
        let root = &WideBvh::build(&triangles).nodes[0];
        assert_eq!(root.valid.count_ones(), 8, "the test needs a full root");
        for d in [Vec3::Z, Vec3::NEG_Z, Vec3::Y] {
            let o = Vec3::new(10.1, 0.1, 0.1) - 5.0 * d;
            let (nodes, leaves) = wide_children(root, o, inv_dir(d), octant(d), f32::INFINITY);
            let entered = (nodes | leaves).count_ones();
            assert!((1..=2).contains(&entered), "ray along {d} entered {entered} of 8 children");
        }
    }
}
