//! The binned-SAH build (Wald, "On fast construction of SAH-based bounding volume hierarchies",
//! 2007), parallel with rayon.
//!
//! Each node bins its triangles' centroids (the centres of their boxes) into [`BuildOptions::bins`]
//! equal slices of the centroid bounds along each axis, and splits between the two bins where the
//! surface area heuristic is cheapest. The subtrees are built in parallel with `rayon::join`, and
//! the binning of the big top nodes is itself parallel.
//!
//! Node slots are given out by triangle count, so parallel subtrees never share an allocator and
//! the layout is the same on every run: a node over `k` triangles owns `2k - 2` slots for its
//! descendants (the most a tree over `k` leaves can have), its two children first, then the left
//! child's slots, then the right's. Leaves of several triangles leave slots unused; a last pass
//! squeezes them out, keeping that depth-first order.

use std::time::Instant;

use glam::{Vec3, Vec3A};
use rayon::prelude::*;
use smart_default::SmartDefault;

use super::{Bvh, Node};

/// Tuning of the build; the defaults suit the GPU traversal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, SmartDefault)]
pub struct BuildOptions {
    /// Nodes with more triangles are always split; smaller ones become leaves when the SAH says a
    /// split does not pay. 0 counts as 1.
    #[default(4)]
    pub max_leaf_size: u32,
    /// SAH candidate bins per axis, 2 to 64 (other values are clamped into that range).
    #[default(16)]
    pub bins: u32,
}

const MAX_BINS: usize = 64;
/// Below this many triangles a subtree is built on the current thread.
const PARALLEL_SUBTREE: usize = 4096;
/// From this many triangles a node bins them in parallel chunks.
const PARALLEL_BINNING: usize = 1 << 16;
const BINNING_CHUNK: usize = 1 << 14;
/// Marks a slot no node was built in; no real node holds this many triangles.
const UNUSED: u32 = u32::MAX;
const UNUSED_SLOT: Node = Node { min: [0.0; 3], first: 0, max: [0.0; 3], count: UNUSED };

/// Builds the BVH of `triangles` with the default [`BuildOptions`].
pub fn build(triangles: &[[Vec3; 3]]) -> Bvh {
    build_with(triangles, &BuildOptions::default())
}

/// Builds the BVH of `triangles`. An empty slice gives a BVH without nodes (loaded scenes always
/// have triangles). Triangles are expected to be finite, as [`crate::scene`] guarantees; a
/// non-finite one does not stop the build but may sit in a poor node.
pub fn build_with(triangles: &[[Vec3; 3]], options: &BuildOptions) -> Bvh {
    let start = Instant::now();
    let n = triangles.len();
    if n == 0 {
        return Bvh { nodes: Vec::new(), order: Vec::new(), build_time: start.elapsed(), depth: 0 };
    }
    assert!(n < u32::MAX as usize / 2, "a BVH addresses at most 2^31 triangles, got {n}");
    let mut prims: Vec<Prim> = triangles
        .par_iter()
        .enumerate()
        .map(|(i, t)| Prim { lo: t[0].min(t[1]).min(t[2]), index: i as u32, hi: t[0].max(t[1]).max(t[2]), pad: 0 })
        .collect();
    let max_leaf = options.max_leaf_size.max(1) as usize;
    let bins = (options.bins as usize).clamp(2, MAX_BINS);
    // The bin arrays are sized at compile time: the smallest that holds `bins`, because filling
    // and copying them is a large part of the cost of the millions of small nodes.
    let (nodes, depth) = match bins {
        2..=8 => Builder::<8> { max_leaf, bins }.run(&mut prims),
        9..=16 => Builder::<16> { max_leaf, bins }.run(&mut prims),
        17..=32 => Builder::<32> { max_leaf, bins }.run(&mut prims),
        _ => Builder::<MAX_BINS> { max_leaf, bins }.run(&mut prims),
    };
    let order = prims.par_iter().map(|p| p.index).collect();
    Bvh { nodes, order, build_time: start.elapsed(), depth }
}

/// A triangle's box and its index in the scene, 32 bytes. The build moves these records
/// themselves, not indices into an array of boxes: every pass then reads memory in order, where
/// an index would cost a cache miss per triangle in each of the big top nodes.
#[derive(Clone, Copy)]
#[repr(C)]
struct Prim {
    lo: Vec3,
    index: u32,
    hi: Vec3,
    pad: u32,
}

impl Prim {
    #[inline]
    fn bounds(&self) -> Aabb {
        Aabb { lo: self.lo.into(), hi: self.hi.into() }
    }
}

/// A box in SIMD lanes (`Vec3A`): the unions and centres of the binning loop are one
/// instruction each.
#[derive(Clone, Copy, Debug)]
struct Aabb {
    lo: Vec3A,
    hi: Vec3A,
}

impl Aabb {
    const EMPTY: Aabb = Aabb { lo: Vec3A::INFINITY, hi: Vec3A::NEG_INFINITY };

    fn union(self, other: Aabb) -> Aabb {
        Aabb { lo: self.lo.min(other.lo), hi: self.hi.max(other.hi) }
    }

    fn grow(&mut self, p: Vec3A) {
        self.lo = self.lo.min(p);
        self.hi = self.hi.max(p);
    }

    /// Half the surface area, which is all the SAH needs; 0 for an empty box.
    fn half_area(&self) -> f32 {
        let d = (self.hi - self.lo).max(Vec3A::ZERO);
        d.x * d.y + d.y * d.z + d.z * d.x
    }

    fn centre(&self) -> Vec3A {
        0.5 * (self.lo + self.hi)
    }
}

#[derive(Clone, Copy)]
struct Bin {
    bounds: Aabb,
    count: u32,
}

/// Bins of the three axes.
type Bins<const N: usize> = [[Bin; N]; 3];

/// Maps a centroid coordinate to its bin along one axis; binning and partitioning must agree.
#[derive(Clone, Copy)]
struct Binning {
    lo: Vec3A,
    scale: Vec3A,
    bins: u32,
}

impl Binning {
    fn new(centroids: &Aabb, bins: usize) -> Self {
        let extent = centroids.hi - centroids.lo;
        // An axis without extent gets scale 0: every centroid in bin 0, and no split is tried on it.
        let scale = Vec3A::select(extent.cmpgt(Vec3A::ZERO), bins as f32 / extent, Vec3A::ZERO);
        Binning { lo: centroids.lo, scale, bins: bins as u32 }
    }

    /// The bin along each axis. The casts saturate: a NaN or negative offset lands in bin 0, the
    /// far end in the last bin.
    #[inline]
    fn bins(&self, c: Vec3A) -> [usize; 3] {
        ((c - self.lo) * self.scale).as_uvec3().min(glam::UVec3::splat(self.bins - 1)).to_array().map(|b| b as usize)
    }

    /// The bin along one axis, with the same arithmetic lane by lane as [`Binning::bins`].
    #[inline]
    fn bin(&self, c: Vec3A, axis: usize) -> usize {
        (((c[axis] - self.lo[axis]) * self.scale[axis]) as u32).min(self.bins - 1) as usize
    }
}

/// The cheapest split found: triangles whose centroid falls in a bin below `bin` go left.
struct Split {
    binning: Binning,
    axis: usize,
    bin: usize,
    /// SAH cost relative to intersecting every triangle of the node (a leaf costs its count).
    cost: f32,
    left: Aabb,
    right: Aabb,
}

/// A node's split: how many triangles go left, then each side's (bounds, centroid bounds).
type Children = (usize, (Aabb, Aabb), (Aabb, Aabb));

struct Builder<const N: usize> {
    max_leaf: usize,
    bins: usize,
}

impl<const N: usize> Builder<N> {
    /// Builds the whole tree, leaving `prims` in BVH order: `(nodes, depth)`.
    fn run(&self, prims: &mut [Prim]) -> (Vec<Node>, u32) {
        let (bounds, centroids) = self.bounds(prims);
        let mut slots = Vec::new();
        (0..2 * prims.len() - 1).into_par_iter().map(|_| UNUSED_SLOT).collect_into_vec(&mut slots);
        let (root, descendants) = slots.split_at_mut(1);
        let depth = self.node(prims, 0, bounds, centroids, &mut root[0], descendants, 1);
        (squeeze(slots), depth)
    }

    /// Bounds of the triangles and of their centroids.
    fn bounds(&self, prims: &[Prim]) -> (Aabb, Aabb) {
        let fold = |(b, mut c): (Aabb, Aabb), p: &Prim| {
            let tri = p.bounds();
            c.grow(tri.centre());
            (b.union(tri), c)
        };
        let merge = |(b0, c0): (Aabb, Aabb), (b1, c1): (Aabb, Aabb)| (b0.union(b1), c0.union(c1));
        let empty = (Aabb::EMPTY, Aabb::EMPTY);
        if prims.len() >= PARALLEL_BINNING {
            prims.par_chunks(BINNING_CHUNK).map(|c| c.iter().fold(empty, fold)).reduce(|| empty, merge)
        } else {
            prims.iter().fold(empty, fold)
        }
    }

    /// Builds the subtree over `prims` (the triangles at BVH positions `first_tri..`) into
    /// `node`, its descendants into `descendants` (slots `first_slot..`); returns its depth.
    #[allow(clippy::too_many_arguments)]
    fn node(
        &self,
        prims: &mut [Prim],
        first_tri: u32,
        bounds: Aabb,
        centroids: Aabb,
        node: &mut Node,
        descendants: &mut [Node],
        first_slot: u32,
    ) -> u32 {
        let k = prims.len();
        node.min = bounds.lo.to_array();
        node.max = bounds.hi.to_array();
        let split = if k > 1 { self.find_split(prims, &bounds, &centroids) } else { None };
        let must_split = k > self.max_leaf;
        let children = match split {
            Some(split) if must_split || split.cost < k as f32 => {
                self.partition(prims, &split).or_else(|| must_split.then(|| self.halve(prims)))
            }
            // All centroids coincide (or are not finite): no plane separates them, so halve the range.
            None if must_split => Some(self.halve(prims)),
            _ => None,
        };
        let Some((mid, left, right)) = children else {
            node.first = first_tri;
            node.count = k as u32;
            return 1;
        };

        node.first = first_slot;
        node.count = 0;
        let (pair, rest) = descendants.split_at_mut(2);
        let (left_node, right_node) = pair.split_at_mut(1);
        let (left_slots, right_slots) = rest.split_at_mut(2 * mid - 2);
        let (left_prims, right_prims) = prims.split_at_mut(mid);
        let build_left =
            || self.node(left_prims, first_tri, left.0, left.1, &mut left_node[0], left_slots, first_slot + 2);
        let right_first = first_slot + 2 * mid as u32;
        let build_right = || {
            let right_tri = first_tri + mid as u32;
            self.node(right_prims, right_tri, right.0, right.1, &mut right_node[0], right_slots, right_first)
        };
        let (l, r) = join(k >= PARALLEL_SUBTREE, build_left, build_right);
        1 + l.max(r)
    }

    /// Bins the centroids along every axis with some extent and returns the cheapest SAH split.
    #[inline(never)] // keeps the bins off the stack frames of the recursion
    fn find_split(&self, prims: &[Prim], bounds: &Aabb, centroids: &Aabb) -> Option<Split> {
        let binning = Binning::new(centroids, self.bins);
        let extent = centroids.hi - centroids.lo;
        let empty: Bins<N> = [[Bin { bounds: Aabb::EMPTY, count: 0 }; N]; 3];
        let bin_chunk = |chunk: &[Prim]| {
            let mut bins = empty;
            for p in chunk {
                let tri = p.bounds();
                for (axis_bins, b) in bins.iter_mut().zip(binning.bins(tri.centre())) {
                    let bin = &mut axis_bins[b];
                    bin.bounds = bin.bounds.union(tri);
                    bin.count += 1;
                }
            }
            bins
        };
        let merge = |mut a: Bins<N>, b: Bins<N>| {
            for (a, b) in a.iter_mut().flatten().zip(b.iter().flatten()) {
                a.bounds = a.bounds.union(b.bounds);
                a.count += b.count;
            }
            a
        };
        let bins = if prims.len() >= PARALLEL_BINNING {
            prims.par_chunks(BINNING_CHUNK).map(bin_chunk).reduce(|| empty, merge)
        } else {
            bin_chunk(prims)
        };

        // Cost of a split = traversal (1) + each side's triangles weighted by the chance that a ray
        // through the node enters that side (area ratio); a leaf costs its triangle count.
        let area = bounds.half_area();
        let area = if area > 0.0 { area } else { 1.0 };
        let mut best: Option<Split> = None;
        for (axis, bins) in bins.iter().enumerate() {
            if !(extent[axis] > 0.0 && extent[axis].is_finite()) {
                continue;
            }
            // Only filled bins change a side's box or count, and a small node fills few of them.
            let mut filled = [(Aabb::EMPTY, 0u32, 0usize); N];
            let mut m = 0;
            for (b, bin) in bins[..self.bins].iter().enumerate().filter(|(_, bin)| bin.count > 0) {
                filled[m] = (bin.bounds, bin.count, b);
                m += 1;
            }
            let filled = &filled[..m];
            // right[j]: the box, its half area and the count of filled[j..]; built from the top.
            let mut right = [(Aabb::EMPTY, 0.0f32, 0u32); N];
            let (mut acc, mut count) = (Aabb::EMPTY, 0);
            for j in (1..m).rev() {
                acc = acc.union(filled[j].0);
                count += filled[j].1;
                right[j] = (acc, acc.half_area(), count);
            }
            let (mut left, mut left_count) = (Aabb::EMPTY, 0);
            for j in 1..m {
                left = left.union(filled[j - 1].0);
                left_count += filled[j - 1].1;
                let (right_box, right_area, right_count) = right[j];
                let cost = 1.0 + (left.half_area() * left_count as f32 + right_area * right_count as f32) / area;
                if best.as_ref().is_none_or(|s| cost < s.cost) {
                    best = Some(Split { binning, axis, bin: filled[j].2, cost, left, right: right_box });
                }
            }
        }
        best
    }

    /// Moves the triangles left of `split` to the front; returns the count on the left and each
    /// side's (bounds, centroid bounds).
    fn partition(&self, prims: &mut [Prim], split: &Split) -> Option<Children> {
        let (mut left_centroids, mut right_centroids) = (Aabb::EMPTY, Aabb::EMPTY);
        let (mut i, mut j) = (0, prims.len());
        // Each record is looked at once, from the front; those going right are swapped to the back.
        while i < j {
            let c = prims[i].bounds().centre();
            if split.binning.bin(c, split.axis) < split.bin {
                left_centroids.grow(c);
                i += 1;
            } else {
                right_centroids.grow(c);
                j -= 1;
                prims.swap(i, j);
            }
        }
        let mid = i;
        // Binning and partition share `Binning::bin`, so the counts match; this guards the
        // recursion against an empty side all the same.
        (mid > 0 && mid < prims.len()).then_some((mid, (split.left, left_centroids), (split.right, right_centroids)))
    }

    /// Splits the index range in the middle, for nodes whose centroids all coincide.
    fn halve(&self, prims: &[Prim]) -> Children {
        let mid = prims.len() / 2;
        (mid, self.bounds(&prims[..mid]), self.bounds(&prims[mid..]))
    }
}

/// `rayon::join` for big subtrees; small ones stay on this thread, where a task would cost more
/// than it saves.
fn join(parallel: bool, a: impl FnOnce() -> u32 + Send, b: impl FnOnce() -> u32 + Send) -> (u32, u32) {
    if parallel { rayon::join(a, b) } else { (a(), b()) }
}

/// Drops the unused slots, keeping the order, and renumbers the children.
fn squeeze(slots: Vec<Node>) -> Vec<Node> {
    // New index of each slot = used slots before it: counted per chunk in parallel, then the
    // chunks' offsets, then filled in parallel.
    const CHUNK: usize = 1 << 16;
    let used = |chunk: &[Node]| chunk.iter().filter(|n| n.count != UNUSED).count() as u32;
    let mut offsets: Vec<u32> = slots.par_chunks(CHUNK).map(used).collect();
    let mut total = 0;
    for offset in &mut offsets {
        total += std::mem::replace(offset, total);
    }
    let mut new_index = vec![0u32; slots.len()];
    new_index.par_chunks_mut(CHUNK).zip(slots.par_chunks(CHUNK)).zip(&offsets).for_each(|((out, chunk), &first)| {
        let mut next = first;
        for (out, slot) in out.iter_mut().zip(chunk) {
            *out = next;
            next += u32::from(slot.count != UNUSED);
        }
    });
    slots
        .par_iter()
        .filter(|n| n.count != UNUSED)
        .map(|&n| if n.count == 0 { Node { first: new_index[n.first as usize], ..n } } else { n })
        .collect()
}
