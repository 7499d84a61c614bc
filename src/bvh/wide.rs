//! The 8-wide BVH the tracer walks (issue 28), built by `obvhs`: PLOC with
//! parallel reinsertion, then Ylitie, Karras & Laine's SAH-optimal collapse
//! into compressed 8-wide nodes (HPG 2017), converted into reap's layout.
//!
//! Each wide node holds up to eight children in octant-ordered slots. Child
//! boxes are quantized to 8 bits per plane on a grid whose step per axis is a
//! power of two, rounded outward; reap requantizes obvhs's nodes from the
//! exact boxes with a check in floats, so a dequantized box always contains
//! its subtree. A leaf child is up to three triangles, a range of the wide
//! BVH's own triangle order; [`WideBvh::order`] maps it back to BVH
//! positions, which break ties as in the binary BVH, so both find the same
//! closest hit, bit for bit, whatever order either visits its nodes in.
//!
//! Why obvhs: measured against reap's own greedy collapse of its binned-SAH
//! tree ([`WideBvh::collapse`], kept as the baseline) on this 2-core machine
//! (`cargo test --release --lib bvh::wide::tests::builders_side_by_side --
//! --ignored --nocapture`; the same traversal over both trees, 2^18 rays):
//! sphereflake (928k triangles) SAH cost 10.69 against 13.49, 7.6 children a
//! node against 4.2, 2.31 against 1.57 Mrays/s, built in 0.72 s against 0.68 s
//! (reap's binary build included); a 1M-triangle soup SAH 146 against 153,
//! 0.26 against 0.23 Mrays/s, 0.73 s against 1.10 s.

use glam::Vec3;

use super::{Bvh, CULL_SLACK, Node, intersect_box};

/// Children per wide node.
pub const WIDTH: usize = 8;
/// Triangles per leaf at most: what `leaf_meta`'s two bits of count hold
/// (obvhs makes leaves of three at most, the binary builder of four).
pub const MAX_LEAF: u32 = 4;

/// One wide node, 80 bytes (the footprint of Ylitie et al.'s CWBVH node).
///
/// Child `i` (bit `i` of `valid`) has the box `origin + q · step` for its
/// quantized planes `q`, where `step[a] = 2^(exp[a] - 127)` (a float whose
/// bits are `exp[a] << 23`): the product is exact, so every dequantization,
/// on the CPU or the GPU, with or without a fused multiply-add, rounds once and
/// gives the same box. A child in `internal` is the wide node
/// `child_base + (internal children in slots below i)`; any other is a leaf,
/// triangles `leaf_base + offset ..` of the wide order ([`WideBvh::order`]),
/// its offset and count in `leaf_meta`: a node's leaves read their triangles
/// straight from the node, as Ylitie et al.'s do (no table between).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WideNode {
    pub origin: [f32; 3],
    pub exp: [u8; 3],
    /// Slots holding a child.
    pub valid: u8,
    pub child_base: u32,
    /// The first triangle (wide order) of the node's leaves.
    pub leaf_base: u32,
    /// Slots holding a wide node (a subset of `valid`).
    pub internal: u8,
    /// 7 bits a slot, slot i at bits 7i.. of these bytes read little-endian: a
    /// leaf's first triangle less `leaf_base` (5 bits), and its count less one (2 bits).
    pub leaf_meta: [u8; 7],
    pub lo_x: [u8; 8],
    pub hi_x: [u8; 8],
    pub lo_y: [u8; 8],
    pub hi_y: [u8; 8],
    pub lo_z: [u8; 8],
    pub hi_z: [u8; 8],
}

const _: () = assert!(std::mem::size_of::<WideNode>() == 80);

/// A leaf child: `count` triangles (1 to [`MAX_LEAF`]) from position `first`
/// of the wide BVH's triangle order ([`WideBvh::order`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WideLeaf {
    pub first: u32,
    pub count: u32,
}

/// The wide BVH over a triangle list (the binary BVH's order, its BVH positions).
#[derive(Clone, Debug, Default)]
pub struct WideBvh {
    /// Node 0 is the root (none for an empty scene).
    pub nodes: Vec<WideNode>,
    /// Leaf children over all nodes.
    pub leaves: usize,
    /// Wide levels on the longest root-to-leaf path (the root's children are level 1's leaves).
    pub depth: u32,
    /// The BVH position of each triangle in the wide order the leaves index.
    pub order: Vec<u32>,
    pub build_time: std::time::Duration,
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

    /// What slot `slot` holds: a wide node's index, or a leaf's triangles.
    pub fn child(&self, slot: usize) -> Child {
        let below = (1u32 << slot) - 1;
        if self.internal & (1 << slot) != 0 {
            return Child::Node(self.child_base + (self.internal as u32 & below).count_ones());
        }
        let mut bytes = [0u8; 8];
        bytes[..7].copy_from_slice(&self.leaf_meta);
        let meta = (u64::from_le_bytes(bytes) >> (7 * slot)) as u32 & 0x7f;
        Child::Leaf(WideLeaf { first: self.leaf_base + (meta & 31), count: (meta >> 5) + 1 })
    }

    /// Makes slot `slot` the leaf of `count` triangles from `leaf_base + offset`.
    fn set_leaf(&mut self, slot: usize, offset: u32, count: u32) {
        debug_assert!(offset < 32 && (1..=MAX_LEAF).contains(&count));
        let mut bytes = [0u8; 8];
        bytes[..7].copy_from_slice(&self.leaf_meta);
        let meta = u64::from_le_bytes(bytes) | ((offset | (count - 1) << 5) as u64) << (7 * slot);
        self.leaf_meta.copy_from_slice(&meta.to_le_bytes()[..7]);
    }
}

/// A wide node's child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Child {
    Node(u32),
    Leaf(WideLeaf),
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
/// `slot ^ octant` (`octant` bit a set where the ray runs up axis a): what the
/// traversal's hit bits are ordered by.
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

/// obvhs gives slot `s` the child whose centre lies least along d_s, where
/// d_s's x is negative where bit 2 of s is set (y: bit 1, z: bit 0): the
/// child lies toward +x where bit 2 is set. reap's slot holds the child
/// toward +x where bit 0 is set (y: bit 1, z: bit 2), what its traversal's
/// near-first order assumes ([`octant_slots`]).
fn reap_slot(s: usize) -> usize {
    ((s >> 2) & 1) | (s & 2) | ((s & 1) << 2)
}

/// obvhs's CWBVH over `triangles` in reap's layout. Children keep obvhs's
/// octant slots (renamed to reap's), wide nodes are renumbered breadth first
/// (reap numbers a node's children consecutively in slot order), a leaf child
/// becomes a [`WideLeaf`] over `primitive_indices`, which is the wide order.
/// Every node is requantized from its children's exact boxes, computed
/// bottom up from the triangles, with [`quantize`]'s check in floats: obvhs
/// rounds outward too, but without that check.
fn from_cwbvh(cw: &obvhs::cwbvh::CwBvh, triangles: &[[Vec3; 3]]) -> WideBvh {
    use rayon::prelude::*;
    let mut w = WideBvh { order: cw.primitive_indices.clone(), ..Default::default() };
    // The topology first: (CWBVH node, its wide index, its level), breadth first.
    let mut queue = std::collections::VecDeque::from([(0usize, 0usize, 1u32)]);
    w.nodes.push(WideNode::default());
    // Where each level's nodes begin (breadth first: a level's nodes are consecutive).
    let mut level_start = vec![0];
    while let Some((c, at, level)) = queue.pop_front() {
        if level > w.depth {
            w.depth = level;
            level_start.push(at);
        }
        let src = &cw.nodes[c];
        let mut from = [None; WIDTH];
        (0..WIDTH).filter(|&s| !src.is_child_empty(s)).for_each(|s| from[reap_slot(s)] = Some(s));
        // obvhs's leaves of a node are consecutive from its primitive base already.
        let (child_base, leaf_base) = (w.nodes.len() as u32, src.primitive_base_idx);
        let mut n = WideNode { child_base, leaf_base, ..Default::default() };
        for (slot, s) in from.iter().enumerate() {
            let Some(s) = *s else { continue };
            n.valid |= 1 << slot;
            if src.is_leaf(s) {
                let (first, count) = src.child_primitives(s);
                n.set_leaf(slot, first - leaf_base, count);
                w.leaves += 1;
            } else {
                n.internal |= 1 << slot;
                queue.push_back((src.child_node_index(s) as usize, w.nodes.len(), level + 1));
                w.nodes.push(WideNode::default());
            }
        }
        w.nodes[at] = n;
    }
    // Exact boxes bottom up (children come after their parent), then each node quantized from them.
    let empty = (Vec3::INFINITY, Vec3::NEG_INFINITY);
    let union = |(lo, hi): (Vec3, Vec3), (l, h): (Vec3, Vec3)| (lo.min(l), hi.max(h));
    let leaf_box = |l: WideLeaf| {
        let tris = (l.first..l.first + l.count).map(|p| &triangles[w.order[p as usize] as usize]);
        tris.flatten().fold(empty, |b, &v| union(b, (v, v)))
    };
    // A level's nodes at once, deepest first: their children's boxes are all known by then.
    let mut exact = vec![empty; w.nodes.len()];
    level_start.push(w.nodes.len());
    for l in (0..level_start.len() - 1).rev() {
        let (from, to) = (level_start[l], level_start[l + 1]);
        let (upper, below) = exact.split_at_mut(to);
        upper[from..].par_iter_mut().zip(&mut w.nodes[from..to]).for_each(|(e, n)| {
            let boxes: Vec<(usize, (Vec3, Vec3))> = (0..WIDTH)
                .filter(|&s| n.valid >> s & 1 != 0)
                .map(|s| match n.child(s) {
                    Child::Leaf(l) => (s, leaf_box(l)),
                    Child::Node(c) => (s, below[c as usize - to]),
                })
                .collect();
            *e = boxes.iter().fold(empty, |b, &(_, c)| union(b, c));
            quantize(n, e.0, e.1, &boxes);
        });
    }
    w
}

impl WideBvh {
    /// The lowest and highest node number at each depth (the root's depth
    /// 0): a breadth-first level's items lie in its range, so grouping them
    /// by node sorts `node - lowest` over the bits of the range's width.
    pub fn level_ranges(&self) -> Vec<(u32, u32)> {
        let mut ranges = Vec::new();
        let mut level: Vec<u32> = if self.nodes.is_empty() { Vec::new() } else { vec![0] };
        while !level.is_empty() {
            let (lo, hi) = level.iter().fold((u32::MAX, 0), |(lo, hi), &n| (lo.min(n), hi.max(n)));
            ranges.push((lo, hi));
            level = level
                .iter()
                .flat_map(|&n| {
                    let node = &self.nodes[n as usize];
                    node.child_base..node.child_base + node.internal.count_ones()
                })
                .collect();
        }
        ranges
    }

    /// The wide BVH over `triangles` (BVH positions): obvhs's `medium_build`
    /// (PLOC, reinsertion, CWBVH collapse with up to three triangles a leaf),
    /// converted into reap's layout (see the module's doc).
    pub fn build(triangles: &[[Vec3; 3]]) -> WideBvh {
        let start = std::time::Instant::now();
        let params = obvhs::BvhBuildParams::medium_build();
        // Pre-splits would put a triangle in several leaves; medium_build makes none.
        debug_assert!(!params.pre_split);
        let mut w = match triangles.is_empty() {
            true => WideBvh::default(),
            false => {
                let tris: Vec<obvhs::triangle::Triangle> = triangles
                    .iter()
                    .map(|t| obvhs::triangle::Triangle { v0: t[0].into(), v1: t[1].into(), v2: t[2].into() })
                    .collect();
                let mut core = std::time::Duration::ZERO;
                let cw = obvhs::cwbvh::builder::build_cwbvh_from_tris(&tris, params, &mut core);
                from_cwbvh(&cw, triangles)
            }
        };
        w.build_time = start.elapsed();
        w
    }

    /// Collapses `bvh` into eight-wide nodes: the greedy collapse of Wald et
    /// al. 2008 (open the gathered child of largest area, eight times at
    /// most), its leaves the binary leaves. The baseline [`WideBvh::build`]
    /// was measured against (examples/wide_builders.rs).
    /// `None` when a binary leaf holds more than [`MAX_LEAF`] triangles.
    pub fn collapse(bvh: &Bvh) -> Option<WideBvh> {
        let start = std::time::Instant::now();
        let mut w = WideBvh::default();
        if bvh.nodes.is_empty() {
            return Some(w);
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
            let (child_base, leaf_base) = (w.nodes.len() as u32, w.order.len() as u32);
            let mut n = WideNode { child_base, leaf_base, ..Default::default() };
            let is_leaf = |c: u32| bvh.nodes[c as usize].count > 0;
            // Wide children take consecutive indices in slot order; the leaves' triangles follow each
            // other in the wide order from leaf_base.
            let mut boxes = Vec::with_capacity(children.len());
            for (slot, c) in slots.iter().enumerate() {
                let Some(c) = *c else { continue };
                n.valid |= 1 << slot;
                let child = &bvh.nodes[c as usize];
                if is_leaf(c) {
                    if child.count > MAX_LEAF {
                        return None;
                    }
                    n.set_leaf(slot, w.order.len() as u32 - leaf_base, child.count);
                    w.order.extend(child.first..child.first + child.count);
                    w.leaves += 1;
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
        w.build_time = start.elapsed();
        Some(w)
    }

    /// The nearest hit of the ray `o + t·d`, `t ≤ t_max`, as [`Bvh::closest_hit`]
    /// gives it (triangles in BVH order; ties to the smallest BVH position):
    /// the same answer, since every box is conservative and ties are broken
    /// by BVH position, not by the wide order.
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
                Child::Leaf(leaf) => {
                    let positions = (leaf.first..leaf.first + leaf.count).map(|p| self.order[p as usize]);
                    super::traverse::leaf_hits(triangles, (o, d, t_max), positions, &mut best);
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
mod tests;
