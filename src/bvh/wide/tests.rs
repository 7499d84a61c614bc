//! The wide BVH's tests: structure and coverage, hits against the binary
//! BVH, octant slots, fill, and the two builders side by side.

use super::super::tests::{random_triangles, random_vec};
use super::super::{BuildOptions, build, build_with};
use super::*;

/// `order` a permutation; every triangle (BVH position) in exactly one
/// leaf; each leaf's exact box inside its slot's dequantized box and
/// inside every ancestor slot's on the way down (what a traversal relies
/// on); wide children stored after their parent; the depth the walk finds.
/// `triangles` in BVH order.
fn check_wide(triangles: &[[Vec3; 3]], w: &WideBvh) {
    let mut sorted = w.order.clone();
    sorted.sort_unstable();
    assert!(sorted.iter().enumerate().all(|(i, &p)| p == i as u32), "order is a permutation of the positions");
    let mut reached = vec![0u32; triangles.len()];
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
                Child::Leaf(leaf) => {
                    assert!((1..=MAX_LEAF).contains(&leaf.count), "node {i} slot {s}: {} triangles", leaf.count);
                    let positions = (leaf.first..leaf.first + leaf.count).map(|p| w.order[p as usize]);
                    positions.clone().for_each(|p| reached[p as usize] += 1);
                    let corners = positions.flat_map(|p| triangles[p as usize]);
                    let (bmin, bmax) =
                        corners.fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
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

/// Both wide BVHs' closest hits (obvhs's and the collapse's) are the
/// binary one's on `rays` random rays.
fn same_hits(triangles: &[[Vec3; 3]], rays: usize, seed: u64) -> usize {
    let bvh = build(triangles);
    let ordered = bvh.reorder(triangles);
    let (w, collapsed) = (WideBvh::build(&ordered), WideBvh::collapse(&bvh).expect("leaves of 4 at most"));
    check_wide(&ordered, &w);
    check_wide(&ordered, &collapsed);
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
        let bits = |h: Option<(f32, u32, f32, f32)>| h.map(|h| (h.0.to_bits(), h.1, h.2.to_bits(), h.3.to_bits()));
        let want = bits(bvh.closest_hit(&ordered, o, d, t_max));
        let got = w.closest_hit(&ordered, o, d, t_max);
        assert_eq!(bits(got), want, "ray {ray}: o {o}, d {d}");
        assert_eq!(bits(collapsed.closest_hit(&ordered, o, d, t_max)), want, "collapse, ray {ray}");
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

/// A child sits in the slot of the octant it lies toward from its node's
/// centre, on the whole: the near-first order of the GPU traversal (hit
/// bits by `slot ^ octant`) depends on it.
#[test]
fn children_sit_in_their_octants_slots() {
    let triangles = random_triangles(20_000, 13);
    let bvh = build(&triangles);
    let ordered = bvh.reorder(&triangles);
    for (name, w) in
        [("collapse", WideBvh::collapse(&bvh).expect("leaves of 4 at most")), ("obvhs", WideBvh::build(&ordered))]
    {
        let (mut toward, mut away) = (0, 0);
        for n in &w.nodes {
            let centre = |(lo, hi): (Vec3, Vec3)| 0.5 * (lo + hi);
            let slots: Vec<usize> = (0..WIDTH).filter(|&s| n.valid >> s & 1 != 0).collect();
            let node = slots
                .iter()
                .map(|&s| n.child_box(s))
                .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |a, b| (a.0.min(b.0), a.1.max(b.1)));
            for s in slots {
                let offset = centre(n.child_box(s)) - centre(node);
                let along = offset.dot(Vec3::new(sign(s & 1), sign(s & 2), sign(s & 4)));
                (toward, away) = if along > 0.0 { (toward + 1, away) } else { (toward, away + 1) };
            }
        }
        assert!(toward > 4 * away, "{name}: {toward} children toward their slot's octant, {away} away");
    }
}

#[test]
fn both_builds_fill_nodes_and_shorten_the_tree() {
    let triangles = random_triangles(20_000, 12);
    let bvh = build_with(&triangles, &BuildOptions { max_leaf_size: 1, bins: 16 });
    let ordered = bvh.reorder(&triangles);
    // Nodes near the bottom hold what their subtree has left: 4.4 children a node on average for
    // the greedy collapse here, 7.3 for obvhs's SAH-optimal one.
    for (w, fill) in [(WideBvh::collapse(&bvh).expect("leaves of 4 at most"), 4.0), (WideBvh::build(&ordered), 6.5)] {
        check_wide(&ordered, &w);
        assert!(w.depth * 2 < bvh.depth, "wide depth {} against binary {}", w.depth, bvh.depth);
        let children: u32 = w.nodes.iter().map(|n| n.valid.count_ones()).sum();
        let mean = children as f32 / w.nodes.len() as f32;
        assert!(mean > fill, "{mean} children a node");
    }
    // A single-leaf tree and an empty one.
    let tri = [[Vec3::ZERO, Vec3::X, Vec3::Y]];
    for w in [WideBvh::collapse(&build(&tri)).expect("one leaf"), WideBvh::build(&tri)] {
        assert_eq!((w.nodes.len(), w.leaves, w.depth), (1, 1, 1));
        let only = w.nodes[0].valid.trailing_zeros() as usize;
        assert_eq!(w.nodes[0].child(only), Child::Leaf(WideLeaf { first: 0, count: 1 }));
    }
    assert!(WideBvh::collapse(&build(&[])).expect("empty").nodes.is_empty());
    assert!(WideBvh::build(&[]).nodes.is_empty());
}

/// The SAH cost of a wide tree from its dequantized child boxes, relative
/// to the box `lo..hi` (Ylitie et al.'s weights: a node 1, a triangle 0.3).
fn sah_cost(w: &WideBvh, lo: Vec3, hi: Vec3) -> f64 {
    let area = |(lo, hi): (Vec3, Vec3)| {
        let e = (hi - lo).as_dvec3();
        e.x * e.y + e.y * e.z + e.z * e.x
    };
    let weighted: f64 = (w.nodes.iter())
        .flat_map(|n| (0..WIDTH).filter(|&s| n.valid >> s & 1 != 0).map(move |s| (n, s)))
        .map(|(n, s)| {
            let cost = match n.child(s) {
                Child::Node(_) => 1.0,
                Child::Leaf(l) => 0.3 * l.count as f64,
            };
            area(n.child_box(s)) * cost
        })
        .sum();
    1.0 + weighted / area((lo, hi))
}

/// reap's greedy collapse of its binned-SAH tree against obvhs's build,
/// side by side: build time, SAH cost, children a node, and CPU
/// closest-hit speed on the same rays (the same traversal over both), on
/// sphereflake and a 1M-triangle soup. What chose obvhs (module doc).
/// `cargo test --release --lib bvh::wide::tests::builders_side_by_side -- --ignored --nocapture`
#[test]
#[ignore = "builds two 1M-triangle scenes both ways; run in release"]
fn builders_side_by_side() {
    use rayon::prelude::*;
    let flake = crate::scene::builtin("sphereflake").expect("sphereflake");
    // Small triangles only (random_triangles' large ones cross the whole cube, and every ray meets them).
    let mut rng = fastrand::Rng::with_seed(21);
    let soup: Vec<[Vec3; 3]> = (0..1_000_000)
        .map(|_| {
            let c = random_vec(&mut rng);
            [c, c + 0.01 * random_vec(&mut rng), c + 0.01 * random_vec(&mut rng)]
        })
        .collect();
    for (name, triangles) in [("sphereflake", flake.triangles), ("soup 1M", soup)] {
        let start = std::time::Instant::now();
        let bvh = build(&triangles);
        let binary = start.elapsed();
        let ordered = bvh.reorder(&triangles);
        let (lo, hi) =
            ordered.iter().flatten().fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
        let mut rng = fastrand::Rng::with_seed(5);
        let rays: Vec<(Vec3, Vec3)> = (0..1 << 18)
            .map(|_| (lo + (hi - lo) * random_vec(&mut rng), (random_vec(&mut rng) - 0.5).normalize()))
            .collect();
        let collapsed = WideBvh::collapse(&bvh).expect("leaves of 4 at most");
        let built = WideBvh::build(&ordered);
        let mut hits = Vec::new();
        for (who, w, time) in [
            ("reap binned SAH + greedy collapse", &collapsed, binary + collapsed.build_time),
            ("obvhs PLOC + CWBVH (medium_build)", &built, built.build_time),
        ] {
            let start = std::time::Instant::now();
            let found: Vec<Option<u32>> = rays
                .par_iter()
                .map(|&(o, d)| w.closest_hit(&ordered, o, d, f32::INFINITY).map(|h| h.0.to_bits()))
                .collect();
            let trace = start.elapsed();
            let children: u32 = w.nodes.iter().map(|n| n.valid.count_ones()).sum();
            eprintln!(
                "{name}, {who}: built in {time:.2?}, SAH {:.2}, {} nodes, {:.2} children a node, depth {}, \
                 {:.2} Mrays/s on {} threads",
                sah_cost(w, lo, hi),
                w.nodes.len(),
                children as f64 / w.nodes.len() as f64,
                w.depth,
                rays.len() as f64 / trace.as_secs_f64() / 1e6,
                rayon::current_num_threads()
            );
            hits.push(found);
        }
        assert!(hits[0] == hits[1], "{name}: the two trees found other closest hits");
    }
}
