//! An 8-wide BVH collapsed from the binary one (issue 28, first step: the
//! layout, the collapse and the CPU traversal; the GPU kernels follow).
//!
//! Each wide node holds up to eight children: binary subtrees gathered under
//! one binary node by opening, eight times at most, the gathered child with
//! the largest surface area (the greedy collapse of Wald et al. 2008). Child
//! boxes are quantized to 8 bits per plane on a grid whose step per axis is a
//! power of two (Ylitie, Karras & Laine 2017), rounded outward, so a
//! dequantized box always contains its subtree. A leaf child is a binary
//! leaf, kept as it is: its triangles stay at the same BVH positions, so the
//! wide BVH's closest hit (ties to the smallest position) is the binary
//! one's, bit for bit, whatever order either visits its nodes in.
//!
//! Why a collapse of reap's own tree first: it keeps one triangle order for
//! both kinds, which makes the hit records identical by construction. The
//! comparison with `obvhs`'s PLOC + CWBVH builder (SAH cost, build time,
//! traversal speed) decides the builder once the GPU traversal exists.

use glam::Vec3;

use super::{Bvh, CULL_SLACK, Node, intersect_box};

/// Children per wide node.
pub const WIDTH: usize = 8;

/// One wide node, 80 bytes (the footprint of Ylitie et al.'s CWBVH node).
///
/// Child `i` (bit `i` of `valid`) has the box `origin + q · step` for its
/// quantized planes `q`, where `step[a] = 2^(exp[a] - 127)` (a float whose
/// bits are `exp[a] << 23`): the product is exact, so every dequantization,
/// on the CPU or the GPU, with or without a fused multiply-add, rounds once and
/// gives the same box. A child in `internal` is the wide node
/// `child_base + (internal children in slots below i)`; any other is the leaf
/// `leaf_base + (leaf children in slots below i)` of [`WideBvh::leaves`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WideNode {
    pub origin: [f32; 3],
    pub exp: [u8; 3],
    /// Slots holding a child.
    pub valid: u8,
    pub child_base: u32,
    pub leaf_base: u32,
    /// Slots holding a wide node (a subset of `valid`).
    pub internal: u8,
    pub pad: [u8; 7],
    pub lo_x: [u8; 8],
    pub hi_x: [u8; 8],
    pub lo_y: [u8; 8],
    pub hi_y: [u8; 8],
    pub lo_z: [u8; 8],
    pub hi_z: [u8; 8],
}

const _: () = assert!(std::mem::size_of::<WideNode>() == 80);

/// A leaf child: `count` triangles from BVH position `first` (a binary leaf).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WideLeaf {
    pub first: u32,
    pub count: u32,
}

/// The wide BVH over the binary one's triangle order.
#[derive(Clone, Debug, Default)]
pub struct WideBvh {
    /// Node 0 is the root (none for an empty scene).
    pub nodes: Vec<WideNode>,
    pub leaves: Vec<WideLeaf>,
    /// Wide levels on the longest root-to-leaf path (the root's children are level 1's leaves).
    pub depth: u32,
}

impl WideNode {
    /// The grid step of axis `a`.
    pub fn step(&self, a: usize) -> f32 {
        f32::from_bits((self.exp[a] as u32) << 23)
    }

    /// Child `slot`'s box, dequantized.
    pub fn child_box(&self, slot: usize) -> (Vec3, Vec3) {
        let q = |planes: &[u8; 8], a: usize| self.origin[a] + planes[slot] as f32 * self.step(a);
        let lo = Vec3::new(q(&self.lo_x, 0), q(&self.lo_y, 1), q(&self.lo_z, 2));
        let hi = Vec3::new(q(&self.hi_x, 0), q(&self.hi_y, 1), q(&self.hi_z, 2));
        (lo, hi)
    }

    /// What slot `slot` holds: a wide node's index, or a leaf's.
    pub fn child(&self, slot: usize) -> Child {
        let below = (1u32 << slot) - 1;
        if self.internal & (1 << slot) != 0 {
            Child::Node(self.child_base + (self.internal as u32 & below).count_ones())
        } else {
            let leaves = (self.valid & !self.internal) as u32;
            Child::Leaf(self.leaf_base + (leaves & below).count_ones())
        }
    }
}

/// A wide node's child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Child {
    Node(u32),
    Leaf(u32),
}

/// Quantizes the boxes of up to eight children inside `lo..hi` (their union)
/// into `n`'s grid, rounding outward.
fn quantize(n: &mut WideNode, lo: Vec3, hi: Vec3, boxes: &[(usize, (Vec3, Vec3))]) {
    n.origin = lo.into();
    for a in 0..3 {
        // The smallest power-of-two step whose 255 steps reach past the union's far plane as floats
        // round; a flat axis takes the smallest normal step.
        let extent = hi[a] - lo[a];
        let mut e = if extent > 0.0 { ((extent / 255.0).log2().ceil() as i32 + 127).clamp(1, 254) } else { 1 };
        while e < 254 && lo[a] + 255.0 * f32::from_bits((e as u32) << 23) < hi[a] {
            e += 1;
        }
        n.exp[a] = e as u8;
    }
    let planes = |n: &WideNode, a: usize, v: f32, down: bool| -> u8 {
        let step = n.step(a);
        let origin = n.origin[a];
        let q = ((v - origin) / step).clamp(0.0, 255.0);
        let mut q = if down { q.floor() } else { q.ceil() } as i32;
        // Outward until the dequantized plane (one rounding: q · step is exact) encloses `v`.
        if down {
            while q > 0 && origin + q as f32 * step > v {
                q -= 1;
            }
        } else {
            while q < 255 && origin + (q as f32) * step < v {
                q += 1;
            }
        }
        q as u8
    };
    for &(slot, (clo, chi)) in boxes {
        n.lo_x[slot] = planes(n, 0, clo.x, true);
        n.hi_x[slot] = planes(n, 0, chi.x, false);
        n.lo_y[slot] = planes(n, 1, clo.y, true);
        n.hi_y[slot] = planes(n, 1, chi.y, false);
        n.lo_z[slot] = planes(n, 2, clo.z, true);
        n.hi_z[slot] = planes(n, 2, chi.z, false);
    }
}

/// The slot of each child, Ylitie et al.'s octant order: slot s stands for
/// the direction whose axis a is positive where bit a of s is set, and each
/// child goes to the free slot toward which it lies farthest from the node's
/// centre (greedy over all pairs, best first). A ray whose direction has the
/// signs of s' then meets the children near to far, roughly, by descending
/// `slot ^ (7 - octant)`: what the traversal's hit bits are ordered by.
fn octant_slots(bvh: &Bvh, node: &Node, children: &[u32]) -> [Option<u32>; WIDTH] {
    let centre = |n: &Node| 0.5 * (Vec3::from(n.min) + Vec3::from(n.max));
    let c0 = centre(node);
    let dir = |s: usize| Vec3::new(sign(s & 1), sign(s & 2), sign(s & 4));
    let mut pairs: Vec<(f32, usize, usize)> = Vec::with_capacity(children.len() * WIDTH);
    for (i, &c) in children.iter().enumerate() {
        let offset = centre(&bvh.nodes[c as usize]) - c0;
        pairs.extend((0..WIDTH).map(|s| (offset.dot(dir(s)), i, s)));
    }
    // Best first; ties by child, then slot, so the layout is deterministic.
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut slots = [None; WIDTH];
    let mut placed = vec![false; children.len()];
    for (_, i, s) in pairs {
        if !placed[i] && slots[s].is_none() {
            slots[s] = Some(children[i]);
            placed[i] = true;
        }
    }
    slots
}

fn sign(bit: usize) -> f32 {
    if bit != 0 { 1.0 } else { -1.0 }
}

fn area(n: &Node) -> f32 {
    let e = Vec3::from(n.max) - Vec3::from(n.min);
    e.x * e.y + e.y * e.z + e.z * e.x
}

impl WideBvh {
    /// Collapses `bvh` into eight-wide nodes (see the module's doc).
    pub fn collapse(bvh: &Bvh) -> WideBvh {
        let mut w = WideBvh::default();
        if bvh.nodes.is_empty() {
            return w;
        }
        // A leaf root becomes a wide root with that one leaf child.
        let gathered = |b: u32| -> Vec<u32> {
            let node = &bvh.nodes[b as usize];
            if node.count > 0 {
                return vec![b];
            }
            let mut children = vec![node.first, node.first + 1];
            while children.len() < WIDTH {
                let widest = children
                    .iter()
                    .enumerate()
                    .filter(|&(_, &c)| bvh.nodes[c as usize].count == 0)
                    .max_by(|a, b| area(&bvh.nodes[*a.1 as usize]).total_cmp(&area(&bvh.nodes[*b.1 as usize])));
                let Some((at, &c)) = widest else { break };
                let inner = &bvh.nodes[c as usize];
                children.splice(at..=at, [inner.first, inner.first + 1]);
            }
            children
        };
        // (binary node, its wide index, its wide level); wide nodes are made in breadth-first order.
        let mut queue = std::collections::VecDeque::from([(0u32, 0u32, 1u32)]);
        w.nodes.push(WideNode::default());
        while let Some((b, at, level)) = queue.pop_front() {
            w.depth = w.depth.max(level);
            let children = gathered(b);
            let node = &bvh.nodes[b as usize];
            let slots = octant_slots(bvh, node, &children);
            let mut n =
                WideNode { child_base: w.nodes.len() as u32, leaf_base: w.leaves.len() as u32, ..Default::default() };
            let is_leaf = |c: u32| bvh.nodes[c as usize].count > 0;
            // Wide children take consecutive indices in slot order, and so do the leaves.
            let mut boxes = Vec::with_capacity(children.len());
            for (slot, c) in slots.iter().enumerate() {
                let Some(c) = *c else { continue };
                n.valid |= 1 << slot;
                let child = &bvh.nodes[c as usize];
                if is_leaf(c) {
                    w.leaves.push(WideLeaf { first: child.first, count: child.count });
                } else {
                    n.internal |= 1 << slot;
                    queue.push_back((c, w.nodes.len() as u32, level + 1));
                    w.nodes.push(WideNode::default());
                }
                boxes.push((slot, (Vec3::from(child.min), Vec3::from(child.max))));
            }
            let node = &bvh.nodes[b as usize];
            quantize(&mut n, node.min.into(), node.max.into(), &boxes);
            w.nodes[at as usize] = n;
        }
        w
    }

    /// The nearest hit of the ray `o + t·d`, `t ≤ t_max`, as [`Bvh::closest_hit`]
    /// gives it (triangles in BVH order; ties to the smallest position): the
    /// same answer, since the leaves are the binary BVH's and every box is
    /// conservative.
    pub fn closest_hit(&self, triangles: &[[Vec3; 3]], o: Vec3, d: Vec3, t_max: f32) -> Option<(f32, u32, f32, f32)> {
        let inv_d = d.recip();
        let mut best: Option<(f32, u32, f32, f32)> = None;
        let mut t_best = t_max;
        let mut stack: Vec<(Child, f32)> = Vec::with_capacity(64);
        if !self.nodes.is_empty() {
            stack.push((Child::Node(0), 0.0));
        }
        while let Some((child, t_entry)) = stack.pop() {
            if t_entry > t_best * CULL_SLACK {
                continue;
            }
            match child {
                Child::Leaf(l) => {
                    let leaf = self.leaves[l as usize];
                    super::traverse::leaf_hits(
                        triangles,
                        (o, d, t_max),
                        leaf.first..leaf.first + leaf.count,
                        &mut best,
                    );
                    t_best = best.map_or(t_max, |b| b.0);
                }
                Child::Node(i) => {
                    let n = &self.nodes[i as usize];
                    let mut hits: Vec<(Child, f32)> = (0..WIDTH)
                        .filter(|&s| n.valid & (1 << s) != 0)
                        .filter_map(|s| {
                            let (lo, hi) = n.child_box(s);
                            intersect_box(o, inv_d, lo, hi, t_best * CULL_SLACK).map(|t| (n.child(s), t))
                        })
                        .collect();
                    // The nearest on top, to be visited first.
                    hits.sort_by(|a, b| b.1.total_cmp(&a.1));
                    stack.extend(hits);
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{random_triangles, random_vec};
    use super::super::{BuildOptions, build, build_with};
    use super::*;

    /// Every triangle position in exactly one leaf; each leaf's exact box
    /// inside its slot's dequantized box and inside every ancestor slot's on
    /// the way down (what a traversal relies on); wide children stored after
    /// their parent; the depth the walk finds.
    fn check_wide(bvh: &Bvh, w: &WideBvh) {
        let mut reached = vec![0u32; bvh.order.len()];
        let mut seen = vec![false; w.nodes.len()];
        let mut depth = 0;
        // (wide node, level, the dequantized slot boxes above it)
        let mut stack = vec![(0u32, 1u32, Vec::<(Vec3, Vec3)>::new())];
        while let Some((i, level, above)) = stack.pop() {
            assert!(!std::mem::replace(&mut seen[i as usize], true), "wide node {i} reached twice");
            depth = depth.max(level);
            let n = &w.nodes[i as usize];
            assert_eq!(n.internal & !n.valid, 0, "node {i}: an internal slot that holds no child");
            assert!(n.valid != 0, "node {i} has no child");
            for s in (0..WIDTH).filter(|&s| n.valid & (1 << s) != 0) {
                let slot = n.child_box(s);
                let mut path = above.clone();
                path.push(slot);
                match n.child(s) {
                    Child::Node(c) => {
                        assert!(c > i && (c as usize) < w.nodes.len(), "node {i} slot {s}: child {c}");
                        stack.push((c, level + 1, path));
                    }
                    Child::Leaf(l) => {
                        let leaf = w.leaves[l as usize];
                        (leaf.first..leaf.first + leaf.count).for_each(|p| reached[p as usize] += 1);
                        // The binary leaf with this range has the exact box of its triangles.
                        let b = bvh.nodes.iter().find(|b| b.count > 0 && b.first == leaf.first).expect("a binary leaf");
                        assert_eq!(b.count, leaf.count);
                        let (bmin, bmax) = (Vec3::from(b.min), Vec3::from(b.max));
                        for (lo, hi) in &path {
                            assert!(
                                lo.cmple(bmin).all() && bmax.cmple(*hi).all(),
                                "node {i} slot {s}: {lo}..{hi} vs {bmin}..{bmax}"
                            );
                        }
                    }
                }
            }
        }
        assert!(reached.iter().all(|&r| r == 1), "every triangle position in exactly one leaf");
        assert!(seen.iter().all(|&s| s), "no orphan wide nodes");
        assert_eq!(w.depth, depth);
    }

    /// The wide BVH's closest hit is the binary one's on `rays` random rays.
    fn same_hits(triangles: &[[Vec3; 3]], rays: usize, seed: u64) -> usize {
        let bvh = build(triangles);
        let w = WideBvh::collapse(&bvh);
        check_wide(&bvh, &w);
        let ordered = bvh.reorder(triangles);
        let (lo, hi) = ordered
            .iter()
            .flatten()
            .fold((Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)), |(a, b), v| (a.min(*v), b.max(*v)));
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut hits = 0;
        for ray in 0..rays {
            let o = lo + (hi - lo) * (3.0 * random_vec(&mut rng) - 1.0);
            let target = match ray % 4 {
                0 => ordered[rng.usize(0..ordered.len())][rng.usize(0..3)],
                _ => lo + (hi - lo) * random_vec(&mut rng),
            };
            let mut d = (target - o).normalize();
            if ray % 5 == 0 {
                d[rng.usize(0..3)] = 0.0;
                d = d.normalize();
            }
            let t_max = if ray % 3 == 0 { (hi - lo).length() * 0.5 } else { f32::INFINITY };
            let want = bvh.closest_hit(&ordered, o, d, t_max);
            let got = w.closest_hit(&ordered, o, d, t_max);
            assert_eq!(
                got.map(|h| (h.0.to_bits(), h.1, h.2.to_bits(), h.3.to_bits())),
                want.map(|h| (h.0.to_bits(), h.1, h.2.to_bits(), h.3.to_bits())),
                "ray {ray}: o {o}, d {d}"
            );
            hits += usize::from(got.is_some());
        }
        hits
    }

    #[test]
    fn wide_hits_are_the_binary_hits_on_random_soups() {
        for (n, seed) in [(1, 1), (9, 2), (300, 3), (5000, 4)] {
            let triangles = random_triangles(n, seed);
            let hits = same_hits(&triangles, 1500, seed + 10);
            assert!(n < 300 || hits > 500, "{n} triangles: only {hits} hits");
        }
    }

    #[test]
    fn wide_hits_are_the_binary_hits_on_cornell_and_a_flat_soup() {
        let scene = crate::scene::builtin("cornell").unwrap();
        assert!(same_hits(&scene.triangles, 2000, 5) > 1000);
        // Coplanar, overlapping and degenerate triangles in one plane: flat boxes on one axis.
        let mut rng = fastrand::Rng::with_seed(9);
        let flat: Vec<[Vec3; 3]> = (0..2000)
            .map(|i| {
                let c = Vec3::new(rng.f32(), rng.f32(), 0.5);
                match i % 7 {
                    0 => [c, c, c],
                    1 => [c, c + Vec3::X * 0.1, c + Vec3::X * 0.2],
                    _ => [c, c + Vec3::new(0.05, 0.0, 0.0), c + Vec3::new(0.0, 0.05, 0.0)],
                }
            })
            .collect();
        same_hits(&flat, 1500, 6);
    }

    #[test]
    fn collapse_fills_nodes_and_shortens_the_tree() {
        let triangles = random_triangles(20_000, 12);
        let bvh = build_with(&triangles, &BuildOptions { max_leaf_size: 1, bins: 16 });
        let w = WideBvh::collapse(&bvh);
        check_wide(&bvh, &w);
        assert!(w.depth * 2 < bvh.depth, "wide depth {} against binary {}", w.depth, bvh.depth);
        let children: u32 = w.nodes.iter().map(|n| n.valid.count_ones()).sum();
        // Nodes near the bottom hold what their subtree has left: 4.4 children a node here on average.
        let mean = children as f32 / w.nodes.len() as f32;
        assert!(mean > 4.0, "{mean} children a node");
        // A single-leaf tree and an empty one.
        let one = build(&[[Vec3::ZERO, Vec3::X, Vec3::Y]]);
        let w = WideBvh::collapse(&one);
        assert_eq!((w.nodes.len(), w.leaves.len(), w.depth), (1, 1, 1));
        assert_eq!(w.nodes[0].child(0), Child::Leaf(0));
        assert!(WideBvh::collapse(&build(&[])).nodes.is_empty());
    }
}
