//! Bounding volume hierarchy over a scene's triangles: a binned-SAH build on
//! the CPU (parallel), stored as a flat array of nodes that the GPU reads as is.
//!
//! [`build`] makes it; [`Bvh::closest_hit`] walks it on the CPU with the same
//! [`intersect_triangle`] and [`intersect_box`] that the GPU kernel mirrors.

mod build;
mod intersect;
mod traverse;
pub mod wide;

use std::time::Duration;

pub use build::{BuildOptions, build, build_with};
pub use intersect::{RAY_EPSILON, intersect_box, intersect_triangle};

use crate::memory::{self, Limit, MemoryError};

/// Peak host bytes per triangle of [`build`]: its 32-byte records, up to two
/// 32-byte nodes, the order and the partitions' scratch. tests/hostile_memory2.rs
/// measures it (251 on 200,000 random triangles) and fails should a build
/// outgrow it; the rest is margin.
pub const BUILD_BYTES_PER_TRIANGLE: u64 = 320;

/// Peak host bytes per triangle of packing a scene for the tracers
/// (`trace::layout::Packed::new`) over the binary BVH it starts from: the
/// triangles, normals and UVs in BVH order, and the 8-wide BVH with obvhs's
/// working memory (PLOC's boxes, Morton codes, binary and CWBVH nodes).
/// Measured as [`BUILD_BYTES_PER_TRIANGLE`] is (436), with margin.
pub const PACK_BYTES_PER_TRIANGLE: u64 = 560;

/// Refuses a scene of `triangles` whose BVHs (binary, then 8-wide) cannot be
/// built within `limit`, before either build allocates: an allocation that
/// fails inside a build (obvhs's, above all) ends the process.
pub fn check_memory(triangles: usize, limit: Limit) -> Result<(), MemoryError> {
    let need = memory::times(triangles as u64, BUILD_BYTES_PER_TRIANGLE + PACK_BYTES_PER_TRIANGLE);
    let what = format!("building the binary and 8-wide BVHs of {triangles} triangles");
    memory::check(what, need, limit, "load a smaller scene, or run where more memory is free (or raise ulimit -v)")
}

/// One node, 32 bytes. Keep in sync with `kernels/trace/common.cuh`.
///
/// An interior node (`count == 0`) has its two children at `first` and
/// `first + 1`, so a traversal step loads both children's boxes from one
/// 64-byte line. A leaf holds `count` triangles starting at `first` in the
/// BVH's triangle order.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Node {
    pub min: [f32; 3],
    pub first: u32,
    pub max: [f32; 3],
    pub count: u32,
}

/// A box is culled only when the ray enters it past the closest hit by more
/// than this relative slack. A triangle's computed distance and its box's
/// computed entry round independently, so a hit on a box's face can come out a
/// few ulps before the box's entry: culling at the hit itself would then drop
/// or keep that box depending on which of two touching boxes was visited first,
/// and two traversals (or two BVHs) could return different hits of equal merit.
/// The slack only makes the CPU traversals visit slightly more; which hit wins
/// is decided by the triangle test alone.
pub const CULL_SLACK: f32 = 1.0 + 1.0 / 65536.0;

#[derive(Clone, Debug)]
pub struct Bvh {
    /// Node 0 is the root.
    pub nodes: Vec<Node>,
    /// `order[i]` is the scene triangle stored at BVH position i.
    pub order: Vec<u32>,
    /// Wall time of the build.
    pub build_time: Duration,
    /// Longest root-to-leaf path, in levels (a single leaf root is depth 1).
    pub depth: u32,
}

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::*;

    pub(super) fn random_vec(rng: &mut fastrand::Rng) -> Vec3 {
        Vec3::new(rng.f32(), rng.f32(), rng.f32())
    }

    /// Small triangles scattered in the unit cube, some big ones across it, axis-aligned ones whose
    /// boxes are flat, and exact duplicates (equal t: the tie-break must decide).
    pub(super) fn random_triangles(n: usize, seed: u64) -> Vec<[Vec3; 3]> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut triangles = Vec::with_capacity(n);
        while triangles.len() < n {
            let c = random_vec(&mut rng);
            let tri = match rng.u32(0..10) {
                0 => [random_vec(&mut rng), random_vec(&mut rng), random_vec(&mut rng)],
                1 => [c, c + Vec3::new(0.05, 0.0, 0.0), c + Vec3::new(0.0, 0.05, 0.0)],
                2 if !triangles.is_empty() => triangles[rng.usize(0..triangles.len())],
                _ => [c, c + 0.05 * (random_vec(&mut rng) - 0.5), c + 0.05 * (random_vec(&mut rng) - 0.5)],
            };
            triangles.push(tri);
        }
        triangles
    }

    /// Checks the layout invariants and returns how often each BVH position is reached.
    fn check_structure(bvh: &Bvh, triangles: &[[Vec3; 3]], max_leaf: u32) {
        let n = triangles.len();
        let mut sorted = bvh.order.clone();
        sorted.sort_unstable();
        assert!(sorted.iter().copied().eq(0..n as u32), "order is a permutation");

        let mut reached = vec![0u32; n];
        let mut node_seen = vec![false; bvh.nodes.len()];
        let mut stack = vec![(0usize, 1u32)];
        let mut depth = 0;
        while let Some((i, level)) = stack.pop() {
            assert!(!std::mem::replace(&mut node_seen[i], true), "node {i} reached twice");
            depth = depth.max(level);
            let node = bvh.nodes[i];
            let (min, max) = (Vec3::from(node.min), Vec3::from(node.max));
            let contains = |lo: Vec3, hi: Vec3| min.cmple(lo).all() && hi.cmple(max).all();
            if node.count > 0 {
                assert!(node.count <= max_leaf, "leaf {i} holds {} triangles", node.count);
                for p in node.first..node.first + node.count {
                    reached[p as usize] += 1;
                    let tri = triangles[bvh.order[p as usize] as usize];
                    let (lo, hi) = (tri[0].min(tri[1]).min(tri[2]), tri[0].max(tri[1]).max(tri[2]));
                    assert!(contains(lo, hi), "leaf {i} does not contain its triangle {p}");
                }
            } else {
                for c in [node.first as usize, node.first as usize + 1] {
                    assert!(c > i && c < bvh.nodes.len(), "node {i} has child {c}");
                    let child = bvh.nodes[c];
                    assert!(contains(child.min.into(), child.max.into()), "node {i} does not contain child {c}");
                    stack.push((c, level + 1));
                }
            }
        }
        assert!(reached.iter().all(|&r| r == 1), "every triangle reachable exactly once");
        assert!(node_seen.iter().all(|&s| s), "no orphan nodes");
        assert_eq!(bvh.depth, depth);
    }

    fn brute_force(triangles: &[[Vec3; 3]], o: Vec3, d: Vec3, t_max: f32) -> Option<(f32, u32, f32, f32)> {
        let mut best: Option<(f32, u32, f32, f32)> = None;
        for (p, tri) in triangles.iter().enumerate() {
            if let Some((t, u, v)) = intersect_triangle(o, d, tri, t_max) {
                if best.is_none_or(|(bt, ..)| t < bt) {
                    best = Some((t, p as u32, u, v));
                }
            }
        }
        best
    }

    #[test]
    fn sah_build_is_well_formed() {
        for (n, seed) in [(2, 1), (5, 2), (100, 3), (5000, 4), (20_000, 5)] {
            let triangles = random_triangles(n, seed);
            for options in [BuildOptions::default(), BuildOptions { max_leaf_size: 1, bins: 2 }] {
                let bvh = build_with(&triangles, &options);
                check_structure(&bvh, &triangles, options.max_leaf_size);
            }
        }
    }

    #[test]
    fn closest_hit_equals_brute_force_on_2000_rays() {
        let triangles = random_triangles(3000, 7);
        let bvh = build(&triangles);
        let ordered = bvh.reorder(&triangles);
        let mut rng = fastrand::Rng::with_seed(11);
        let mut hits = 0;
        for ray in 0..2000 {
            let o = 3.0 * random_vec(&mut rng) - 1.0;
            let target = match ray % 4 {
                // Aim at vertices: hits on edges and on the faces of flat boxes.
                0 => ordered[rng.usize(0..ordered.len())][rng.usize(0..3)],
                _ => random_vec(&mut rng),
            };
            let mut d = (target - o).normalize();
            if ray % 5 == 0 {
                // Axis-parallel components: infinite inverse direction in the slab test.
                d[rng.usize(0..3)] = 0.0;
                d = d.normalize();
            }
            let t_max = if ray % 3 == 0 { 2.0 } else { f32::INFINITY };
            let got = bvh.closest_hit(&ordered, o, d, t_max);
            assert_eq!(got, brute_force(&ordered, o, d, t_max), "ray {ray}: o {o}, d {d}");
            hits += usize::from(got.is_some());
        }
        assert!(hits > 1000, "only {hits} rays hit: the test would prove little");
    }

    #[test]
    fn ties_go_to_the_smallest_position() {
        let tri = [Vec3::ZERO, Vec3::X, Vec3::Y];
        let triangles = vec![tri; 37];
        let bvh = build(&triangles);
        check_structure(&bvh, &triangles, 4);
        let hit = bvh.closest_hit(&triangles, Vec3::new(0.25, 0.25, 1.0), Vec3::NEG_Z, f32::INFINITY);
        assert_eq!(hit.map(|h| (h.0, h.1)), Some((1.0, 0)));
    }

    #[test]
    fn single_triangle_root_is_a_leaf_and_empty_has_no_nodes() {
        let triangles = [[Vec3::ZERO, Vec3::X, Vec3::Y]];
        let bvh = build(&triangles);
        assert_eq!(bvh.nodes, vec![Node { min: [0.0; 3], first: 0, max: [1.0, 1.0, 0.0], count: 1 }]);
        assert_eq!((bvh.order.as_slice(), bvh.depth), (&[0][..], 1));

        let empty = build(&[]);
        assert!(empty.nodes.is_empty() && empty.order.is_empty());
        assert_eq!(empty.closest_hit(&[], Vec3::ZERO, Vec3::Z, f32::INFINITY), None);
    }

    #[test]
    fn cornell_bvh_is_well_formed_and_hits_the_back_wall() {
        let scene = crate::scene::builtin("cornell").unwrap();
        let bvh = build(&scene.triangles);
        check_structure(&bvh, &scene.triangles, 4);
        let ordered = bvh.reorder(&scene.triangles);
        let (t, p, ..) = bvh.closest_hit(&ordered, Vec3::new(100.0, 450.0, -800.0), Vec3::Z, f32::INFINITY).unwrap();
        assert!((t - 1359.2).abs() < 1e-3, "{t}");
        assert_eq!(scene.materials[scene.material_of[bvh.order[p as usize] as usize] as usize].name, "white");
    }

    /// `cargo test --release --lib bvh::tests::build_times -- --ignored --nocapture`
    #[test]
    #[ignore = "builds the 10-million-triangle scene; run in release"]
    fn build_times() {
        for name in ["sphereflake", "sphereflake-10m"] {
            let start = std::time::Instant::now();
            let scene = crate::scene::builtin(name).unwrap();
            let generated = start.elapsed();
            let bvh = build(&scene.triangles);
            eprintln!(
                "{name}: {} triangles generated in {generated:.2?}; BVH {} nodes, depth {}, built in {:.2?}",
                scene.triangles.len(),
                bvh.nodes.len(),
                bvh.depth,
                bvh.build_time
            );
            let wide = wide::WideBvh::build(&bvh.reorder(&scene.triangles));
            eprintln!(
                "{name}: 8-wide BVH (obvhs) {} nodes, {} leaves, depth {}, built in {:.2?}",
                wide.nodes.len(),
                wide.leaves,
                wide.depth,
                wide.build_time
            );
            check_structure(&bvh, &scene.triangles, 4);
        }
    }
}
