//! The CPU twins of the 8-wide BVH's kernels in `kernels/trace/wide.cuh` and `wavefront.cu`
//! (`wide_children`, `trace_depth_first_wide`, `trace_bf_expand_wide` and
//! `trace_bf_step_wide`), one ray or one tile of frontier items each, over
//! [`crate::bvh::wide`]'s nodes. Both
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

/// Input items of one breadth-first tile (wavefront.cu `TRACE_BLOCK`).
pub const TILE: usize = 256;
/// Wide nodes a tile's local item names in its low 24 bits (`BF_NODE_BITS`).
const NODE_BITS: u32 = 24;

/// Refuses breadth-first traversal of a wide BVH whose nodes a local item
/// cannot name (2^24 and more: about 150 million triangles).
pub fn check_breadth_first(nodes: usize) -> crate::trace::TraceResult<()> {
    if nodes >= 1 << NODE_BITS {
        return Err(crate::trace::TraceError::Settings(format!(
            "the wide BVH has {nodes} nodes; breadth-first traversal numbers them in {NODE_BITS} bits (at most \
             {}): use --traversal depth-first or --bvh binary",
            (1u64 << NODE_BITS) - 1
        )));
    }
    Ok(())
}

/// Breadth-first, one step of up to `levels` wide levels over one tile of
/// frontier items (at most [`TILE`]): `trace_bf_step_wide` for one block,
/// and with one level `trace_bf_expand_wide` for the tile's items. Each live
/// item's ray is loaded once; its wide node's children are tested and its
/// hit leaves intersected (nearest first, against the ray's closest hit as
/// the round began; a shadow ray's blocker ends its ray's items from the next
/// round on), and each hit wide child, nearest first in item order, joins the
/// next level. A level runs in rounds of up to a tile of items, whose hits
/// merge after the round, and a round that could leave more than 8 items per
/// input item in flight is not started: the step then stops and emits what it holds. The tile's hits merge into the
/// paths' keys (an atomic min) at its end. Writes the emitted items, (path,
/// wide node), to `out[..count]` (`out` holds 8 per input item, dead past the
/// count) and returns the count.
pub fn trace_bf_wide_tile(s: &Packed, p: &Paths, input: &[u64], shadow: bool, levels: u32, out: &mut [u64]) -> u32 {
    out.fill(DEAD64);
    // Per input slot: (origin, direction, the limit it was loaded with, path), and its best hit.
    let mut rays: Vec<(Vec3, Vec3, f32, u32)> = Vec::with_capacity(input.len());
    let mut best = vec![DEAD64; input.len()];
    let mut ring: Vec<u32> = Vec::with_capacity(8 * input.len());
    for &item in input {
        let slot = rays.len() as u32;
        let path = (item >> 32) as u32;
        let loaded = (item != DEAD64).then(|| ray(p, path as usize, shadow)).flatten();
        let limit = match (loaded, shadow) {
            (None, _) => None,
            // Relaxed loads, as the kernel's: the hit and the occlusion only tighten.
            (Some(_), true) if p.occluded[path as usize].load(Relaxed) != 0 => None,
            (Some((_, _, tmax)), true) => Some(tmax),
            (Some(_), false) => Some(key_dist(p.hit[path as usize].load(Relaxed), f32::INFINITY)),
        };
        let (o, d) = loaded.map_or((Vec3::ZERO, Vec3::ZERO), |(o, d, _)| (o, d));
        rays.push((o, d, limit.unwrap_or(0.0), path));
        if limit.is_some() {
            ring.push(slot << NODE_BITS | item as u32);
        }
    }
    let cap = 8 * input.len();
    // ring[lo..end) is the level's unexpanded part, ring[end..] the next level.
    let (mut lo, mut end) = (0, ring.len());
    let mut level = 0;
    'levels: while lo < ring.len() && level < levels {
        while lo < end {
            let m = TILE.min(end - lo).min((cap - (ring.len() - lo)) / 7);
            if m == 0 {
                break 'levels;
            }
            // Every item of a round culls against the hits known when it began (the kernel's threads
            // run it at once); what they find merges after it.
            let mut found = Vec::with_capacity(m);
            for k in lo..lo + m {
                let item = ring[k];
                let slot = (item >> NODE_BITS) as usize;
                let b = best[slot];
                if shadow && b == 0 {
                    continue;
                }
                let (o, d, limit, _) = rays[slot];
                let (inv, oct) = (inv_dir(d), octant(d));
                let n = &s.wide.nodes[(item & ((1 << NODE_BITS) - 1)) as usize];
                let mut hit = if shadow { DEAD64 } else { b };
                let (nodes, hit_leaves) = wide_children(n, o, inv, oct, key_dist(b, limit));
                if leaves(s, n, hit_leaves, oct, (o, d, limit), shadow, &mut hit) {
                    found.push((slot, 0)); // a blocked shadow ray: the least key
                    continue;
                }
                found.push((slot, hit));
                let child = |bit| (slot as u32) << NODE_BITS | (n.child_base + rank(n.internal, bit, oct));
                ring.extend(nearest_first(nodes).map(child));
            }
            for (slot, hit) in found {
                best[slot] = best[slot].min(hit);
            }
            lo += m;
        }
        end = ring.len();
        level += 1;
    }
    for (&(_, _, _, path), (&b, &item)) in rays.iter().zip(best.iter().zip(input)) {
        if item == DEAD64 || b == DEAD64 {
            continue;
        }
        if shadow {
            if b == 0 {
                p.occluded[path as usize].store(1, Relaxed);
            }
        } else {
            p.hit[path as usize].fetch_min(b, Relaxed);
        }
    }
    for (slot, &item) in out.iter_mut().zip(&ring[lo..]) {
        *slot = (rays[(item >> NODE_BITS) as usize].3 as u64) << 32 | (item & ((1 << NODE_BITS) - 1)) as u64;
    }
    (ring.len() - lo) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::wide::WideBvh;

    /// A local item names its wide node in 24 bits: a BVH with more nodes is refused, not miswalked.
    #[test]
    fn breadth_first_refuses_a_wide_bvh_past_24_bit_node_numbers() {
        assert!(check_breadth_first((1 << 24) - 1).is_ok());
        let msg = check_breadth_first(1 << 24).expect_err("2^24 nodes").to_string();
        assert!(msg.contains("16777216 nodes") && msg.contains("--traversal depth-first"), "{msg}");
    }

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
