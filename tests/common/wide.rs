//! Scenes and checks shared by the CPU and CUDA tests of the 8-wide BVH.

use std::path::PathBuf;

use reap::trace::layout::{CameraLayout, Packed};

/// An OBJ of coplanar and overlapping quads, slivers a thousandth of their
/// length wide, exact degenerates (the loader skips them) and a box around
/// part of it, with a camera-facing light: the shapes whose ties and flat
/// boxes a traversal must resolve like any other.
pub fn awkward_obj(name: &str) -> PathBuf {
    use std::fmt::Write;
    let mut obj = String::from("# reap test: coplanar, overlapping, sliver and degenerate triangles\n");
    let mut v = 0;
    let mut tri = |obj: &mut String, a: [f32; 3], b: [f32; 3], c: [f32; 3]| {
        for p in [a, b, c] {
            let _ = writeln!(obj, "v {} {} {}", p[0], p[1], p[2]);
        }
        let _ = writeln!(obj, "f {} {} {}", v + 1, v + 2, v + 3);
        v += 3;
    };
    // Coplanar quads at z = 0, overlapping each other by half.
    for i in 0..12 {
        for j in 0..12 {
            let (x, y) = (i as f32 * 0.15 - 0.9, j as f32 * 0.15 - 0.9);
            tri(&mut obj, [x, y, 0.0], [x + 0.3, y, 0.0], [x + 0.3, y + 0.3, 0.0]);
            tri(&mut obj, [x, y, 0.0], [x + 0.3, y + 0.3, 0.0], [x, y + 0.3, 0.0]);
        }
    }
    // Slivers standing on the plane, and degenerates: a point and a line.
    for i in 0..40 {
        let x = i as f32 * 0.04 - 0.8;
        tri(&mut obj, [x, -0.5, 0.0], [x + 0.001, -0.5, 0.0], [x, 0.5, 0.4]);
        tri(&mut obj, [x, 0.1, 0.2], [x, 0.1, 0.2], [x, 0.1, 0.2]);
        tri(&mut obj, [x, 0.0, 0.1], [x + 0.1, 0.0, 0.1], [x + 0.2, 0.0, 0.1]);
    }
    // A box over one corner, its faces coplanar with the quads' plane at the bottom.
    let (lo, hi) = ([-0.6f32, -0.6, 0.0], [-0.2f32, -0.2, 0.4]);
    let c =
        |m: u32| [[lo, hi][m as usize & 1][0], [lo, hi][(m >> 1) as usize & 1][1], [lo, hi][(m >> 2) as usize & 1][2]];
    for (a, b, cc, d) in [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)] {
        tri(&mut obj, c(a), c(b), c(cc));
        tri(&mut obj, c(a), c(cc), c(d));
    }
    let dir = std::env::temp_dir().join(format!("reap-wide-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp folder");
    let path = dir.join(format!("{name}.obj"));
    std::fs::write(&path, obj).expect("the OBJ writes");
    path
}

/// The scenes the wide BVH is checked on: built-ins and the awkward OBJ.
pub fn scenes() -> Vec<String> {
    let obj = awkward_obj("awkward").to_string_lossy().into_owned();
    vec!["cornell".into(), "sphereflake".into(), obj]
}

/// A scene packed for an engine, with its camera at `w`×`h`.
pub fn packed(spec: &str, w: u32, h: u32) -> (Packed, CameraLayout) {
    let scene = reap::scene::load(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let bvh = reap::bvh::build(&scene.triangles);
    (Packed::new(&scene, &bvh), CameraLayout::new(&scene.camera, w, h))
}

use reap::trace::{BlockLevels, BvhKind, Compaction, Engine, Estimator, RenderSettings, Traversal, render};

/// Settings of the wide BVH's checks: `bounces` bounces, `spp` samples.
fn settings(w: u32, h: u32, spp: u32, bounces: u32) -> RenderSettings {
    RenderSettings {
        width: w,
        height: h,
        spp,
        max_bounces: bounces,
        estimator: Estimator::Mis,
        traversal: Traversal::DepthFirst,
        compact_paths: Compaction::None,
        compact_frontier: Compaction::None,
        seed: 3,
        first_sample: 0,
        max_frontier: 1 << 26,
        descend: reap::trace::DESCEND,
        block_levels: reap::trace::BlockLevels::Auto,
        group_levels: 0,
        bvh: BvhKind::Binary,
        fusion: Default::default(),
    }
}

/// On each scene, under every BVH kind, traversal and compaction choice in
/// `algorithms` (the wide breadth-first step at one, two and three levels a
/// step and at all of them, and at one with levels 1-3 grouped by node): the hit keys of the last bounce of a one-bounce frame (rays
/// leaving the first vertex in every direction) and the image of a few
/// bounces are one set of bits (the first run's: binary, breadth-first).
/// Returns each scene's hit keys, for comparing backends.
pub fn wide_finds_the_binary_hits<E: Engine>(
    make: impl Fn(&str, u32, u32, u32) -> E,
    hits: impl Fn(&E) -> Vec<u64>,
    algorithms: &[&str],
) -> Vec<Vec<u64>> {
    let (w, h) = (40, 30);
    let mut keys = Vec::new();
    for spec in scenes() {
        let mut want: Option<(Vec<u64>, Vec<u32>)> = None;
        let configs = BvhKind::ALL.into_iter().flat_map(|b| Traversal::ALL.into_iter().map(move |t| (b, t)));
        let configs = configs.flat_map(|(b, t)| match (b, t) {
            (BvhKind::Wide, Traversal::BreadthFirst) => {
                let levels = [1, 2, 3].map(BlockLevels::Levels).into_iter().chain([BlockLevels::All]);
                // Levels 1-3 grouped by node at one level a step.
                levels.map(|k| (b, t, k, 0)).chain([(b, t, BlockLevels::Levels(1), 3)]).collect()
            }
            _ => vec![(b, t, BlockLevels::Auto, 0)],
        });
        for (bvh, traversal, block_levels, group_levels) in configs {
            {
                for name in algorithms {
                    let mut e = make(&spec, w, h, 4);
                    let c = Compaction::parse(name, e.backend(), "test").expect("a catalog algorithm");
                    let s = RenderSettings {
                        bvh,
                        traversal,
                        block_levels,
                        group_levels,
                        compact_paths: c,
                        compact_frontier: c,
                        ..settings(w, h, 1, 1)
                    };
                    render(&mut e, &s, |_| {}).unwrap_or_else(|e| panic!("{spec}: {e}"));
                    let got_hits = hits(&e);
                    e.reset().expect("reset");
                    render(&mut e, &RenderSettings { spp: 2, max_bounces: 4, ..s.clone() }, |_| {}).expect("renders");
                    let image: Vec<u32> = e.image().expect("image").iter().flatten().map(|v| v.to_bits()).collect();
                    let (b, t) = (bvh.name(), traversal.name());
                    let what = format!("{spec}: {b} {t} {name}, block levels {block_levels}, grouped {group_levels}");
                    match &want {
                        None => {
                            let found = got_hits.iter().filter(|&&k| k != reap::trace::DEAD64).count();
                            // Second rays mostly escape sphereflake and the open OBJ; some must hit for the keys to
                            // say anything (the images compare every bounce).
                            assert!(found > 0, "{what}: no second ray hit anything");
                            want = Some((got_hits, image));
                        }
                        Some((hits0, image0)) => {
                            let differ = got_hits.iter().zip(hits0).filter(|(a, b)| a != b).count();
                            assert_eq!(differ, 0, "{what}: {differ} hit keys differ from the binary depth-first ones");
                            assert!(&image == image0, "{what}: another image than the binary depth-first one");
                        }
                    }
                }
            }
        }
        keys.push(want.expect("a configuration ran").0);
    }
    keys
}
