//! Light transport on the CPU engine (issue 13): emitters light one side only,
//! the three estimators converge to the same image with MIS the least noisy,
//! and every material kind passes a white-furnace test.
//!
//! Noise is judged from independent one-sample frames (each frame's random
//! numbers depend on its sample index alone), never from fixed tolerances.

use glam::Vec3;

use reap::compaction::CpuBackend;
use reap::scene::{Camera, Material, MaterialKind, Scene};
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::{Compaction, DESCEND, Engine, Estimator, RenderSettings, Traversal, cpu::CpuEngine, render};

const SEED: u32 = 3;

/// One frame per sample: `frames[k][pixel]` is the radiance of sample k.
fn frames(scene: &Scene, size: u32, n: u32, max_bounces: u32, estimator: Estimator) -> Vec<Vec<Vec3>> {
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(scene, &bvh);
    let camera = CameraLayout::new(&scene.camera, size, size);
    let mut e = CpuEngine::new(CpuBackend::new(), packed, camera, size, size, SEED, max_bounces);
    (0..n)
        .map(|k| {
            let s = RenderSettings {
                width: size,
                height: size,
                spp: 1,
                max_bounces,
                estimator,
                traversal: Traversal::DepthFirst,
                compact_paths: Compaction::None,
                compact_frontier: Compaction::None,
                seed: SEED,
                first_sample: k,
                max_frontier: 1 << 24,
                fusion: Default::default(),
                descend: DESCEND,
                block_levels: reap::trace::BlockLevels::Auto,
                group_levels: 0,
                bvh: reap::trace::BVH,
            };
            render(&mut e, &s, |_| {}).expect("the scene renders");
            let image = e.image().expect("the image reads back");
            e.reset().expect("the sums reset");
            image.iter().map(|p| Vec3::new(p[0], p[1], p[2])).collect()
        })
        .collect()
}

/// Mean and variance of xs (the unbiased estimate).
fn mean_var(xs: impl ExactSizeIterator<Item = f64> + Clone) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.clone().sum::<f64>() / n;
    let var = xs.map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// Per pixel, the mean over frames of the pixel's channel average and the
/// variance of that mean.
fn pixel_stats(frames: &[Vec<Vec3>]) -> Vec<(f64, f64)> {
    (0..frames[0].len())
        .map(|p| {
            let (m, v) = mean_var(frames.iter().map(|f| f[p].element_sum() as f64 / 3.0));
            (m, v / frames.len() as f64)
        })
        .collect()
}

/// The image's mean and its standard error, from the per-frame image means.
fn image_mean(frames: &[Vec<Vec3>]) -> (f64, f64) {
    let per_frame = frames.iter().map(|f| f.iter().map(|c| c.element_sum() as f64 / 3.0).sum::<f64>() / f.len() as f64);
    let (m, v) = mean_var(per_frame);
    (m, (v / frames.len() as f64).sqrt())
}

/// A quad a b c d (counter-clockwise seen from where its normal points) as
/// two flat-shaded triangles.
fn quad(scene: &mut Scene, [a, b, c, d]: [Vec3; 4], material: u32) {
    for t in [[a, b, c], [a, c, d]] {
        let n = (t[1] - t[0]).cross(t[2] - t[0]).normalize();
        scene.triangles.push(t);
        scene.normals.push([n; 3]);
        scene.uvs.push([glam::Vec2::ZERO; 3]);
        scene.material_of.push(material);
    }
}

/// A horizontal square at height y centred on (x, z), facing up or down.
fn square(scene: &mut Scene, x: f32, y: f32, z: f32, half: f32, up: bool, material: u32) {
    let (a, b) = (x - half, x + half);
    let (c, d) = (z - half, z + half);
    let mut q = [Vec3::new(a, y, d), Vec3::new(b, y, d), Vec3::new(b, y, c), Vec3::new(a, y, c)];
    if !up {
        q.reverse();
    }
    quad(scene, q, material);
}

fn empty(camera: Camera, environment: Vec3, materials: Vec<Material>) -> Scene {
    Scene {
        name: "test".into(),
        triangles: Vec::new(),
        normals: Vec::new(),
        uvs: Vec::new(),
        material_of: Vec::new(),
        materials,
        textures: Vec::new(),
        camera,
        environment,
        skipped_triangles: 0,
        warnings: Vec::new(),
        sources: Vec::new(),
    }
}

fn emitter(le: f32) -> Material {
    Material { emission: Vec3::splat(le), ..Material::diffuse("light", Vec3::ZERO) }
}

fn glossy(roughness: f32, f0: f32) -> Material {
    Material { kind: MaterialKind::Glossy, roughness, ..Material::diffuse("glossy", Vec3::splat(f0)) }
}

#[test]
fn cornell_emitters_face_down_into_the_box() {
    let scene = reap::scene::builtin("cornell").expect("the Cornell box loads");
    let lights = scene.emitters();
    assert!(!lights.is_empty(), "the Cornell box has a light");
    for t in lights {
        let [a, b, c] = scene.triangles[t as usize];
        let n = (b - a).cross(c - a).normalize();
        assert!(n.y < -0.999, "emitter triangle {t} faces {n}, not down");
    }
}

#[test]
fn an_emitter_seen_from_behind_is_black() {
    let camera = Camera { position: Vec3::new(0.0, 3.0, 0.0), target: Vec3::ZERO, up: Vec3::Z, vfov_deg: 60.0 };
    for (up, lit) in [(false, false), (true, true)] {
        let mut scene = empty(camera, Vec3::ZERO, vec![emitter(2.0)]);
        square(&mut scene, 0.0, 0.0, 0.0, 1.0, up, 0);
        for estimator in Estimator::ALL {
            let f = frames(&scene, 16, 2, 4, estimator);
            let brightest = f.iter().flatten().map(|c| c.max_element()).fold(0.0f32, f32::max);
            if lit {
                assert_eq!(brightest, 2.0, "{estimator}: the lit side shows Le");
            } else {
                assert_eq!(brightest, 0.0, "{estimator}: the back of an emitter must be black");
            }
        }
    }
}

/// A light hanging over a floor lights it only when its lit side faces the
/// floor: neither next-event estimation nor an emitter hit may count the back.
#[test]
fn an_emitter_facing_away_leaves_the_floor_black() {
    // Below the light, so the camera sees the light's underside and the floor.
    let camera =
        Camera { position: Vec3::new(0.0, 0.6, 3.0), target: Vec3::new(0.0, 0.0, 0.0), up: Vec3::Y, vfov_deg: 60.0 };
    for (facing_down, lit) in [(false, false), (true, true)] {
        let mut scene = empty(camera, Vec3::ZERO, vec![Material::diffuse("floor", Vec3::splat(0.8)), emitter(4.0)]);
        square(&mut scene, 0.0, 0.0, 0.0, 4.0, true, 0);
        square(&mut scene, 0.0, 1.0, 0.0, 0.5, !facing_down, 1);
        for estimator in Estimator::ALL {
            let f = frames(&scene, 24, 4, 4, estimator);
            // The image's bottom row sees only the floor.
            let bottom = f.iter().flat_map(|img| img[img.len() - 24..].to_vec());
            let floor = bottom.map(|c| c.element_sum()).sum::<f32>();
            if lit {
                assert!(floor > 0.0, "{estimator}: a light facing the floor lights it");
            } else {
                let total = f.iter().flatten().map(|c| c.element_sum()).sum::<f32>();
                assert_eq!(total, 0.0, "{estimator}: a light facing away lit the scene");
            }
        }
    }
}

/// Veach's classic MIS scene, reduced: a glossy floor of two roughnesses
/// reflecting a small bright light and a large dim one, and a diffuse wall.
/// The camera looks down past the lights' unlit backs, so all it sees of
/// them is their reflections: where light sampling fails (a large light in
/// the smooth strip) and where BSDF sampling fails (the small light in the
/// rough strip).
fn veach() -> Scene {
    let camera =
        Camera { position: Vec3::new(0.0, 2.2, 4.0), target: Vec3::new(0.0, 0.0, 0.0), up: Vec3::Y, vfov_deg: 60.0 };
    let materials = vec![
        glossy(0.02, 0.8),
        glossy(0.25, 0.8),
        Material::diffuse("wall", Vec3::splat(0.5)),
        emitter(400.0),
        emitter(1.0),
    ];
    let mut s = empty(camera, Vec3::ZERO, materials);
    let (l, r) = (-3.0, 3.0);
    let c = Vec3::new;
    quad(&mut s, [c(l, 0.0, 3.5), c(r, 0.0, 3.5), c(r, 0.0, 1.0), c(l, 0.0, 1.0)], 0);
    quad(&mut s, [c(l, 0.0, 1.0), c(r, 0.0, 1.0), c(r, 0.0, -2.0), c(l, 0.0, -2.0)], 1);
    quad(&mut s, [c(l, 0.0, -2.0), c(r, 0.0, -2.0), c(r, 3.0, -2.0), c(l, 3.0, -2.0)], 2);
    square(&mut s, -1.0, 1.2, 0.0, 0.05, false, 3);
    square(&mut s, 1.0, 1.2, 0.0, 0.8, false, 4);
    s
}

#[test]
fn estimators_agree_and_mis_is_the_least_noisy() {
    let scene = veach();
    let n = 256;
    let runs: Vec<(Estimator, (f64, f64), f64)> = Estimator::ALL
        .into_iter()
        .map(|e| {
            let f = frames(&scene, 48, n, 3, e);
            let stats = pixel_stats(&f);
            let variance = stats.iter().map(|(_, v)| v).sum::<f64>() / stats.len() as f64;
            eprintln!("{e}: image mean {:?}, mean per-pixel variance {variance}", image_mean(&f));
            (e, image_mean(&f), variance)
        })
        .collect();
    for (i, (a, (ma, sa), _)) in runs.iter().enumerate() {
        assert!(*ma > 0.0, "{a}: the scene is lit");
        for (b, (mb, sb), _) in &runs[i + 1..] {
            let se = (sa * sa + sb * sb).sqrt();
            assert!((ma - mb).abs() < 4.0 * se, "{a} mean {ma} vs {b} mean {mb}: more than 4 standard errors {se}");
        }
    }
    let var = |e: Estimator| runs.iter().find(|r| r.0 == e).map_or(f64::NAN, |r| r.2);
    let (mis, light, bsdf) = (var(Estimator::Mis), var(Estimator::Light), var(Estimator::Bsdf));
    assert!(mis < light && mis < bsdf, "mean per-pixel variance: mis {mis}, light {light}, bsdf {bsdf}");
}

/// The built-in furnace sphere with material `m`, and an open box (a cube
/// without its top, seen from above at an angle) whose walls reflect into
/// each other, both of albedo `m` under a sky of 1.
fn furnaces(m: &Material) -> [Scene; 2] {
    let mut sphere = reap::scene::builtin("furnace").expect("the furnace scene builds");
    sphere.materials = vec![m.clone()];
    let camera =
        Camera { position: Vec3::new(1.5, 3.0, 2.5), target: Vec3::new(0.0, 0.2, 0.0), up: Vec3::Y, vfov_deg: 40.0 };
    let mut open = empty(camera, Vec3::ONE, vec![m.clone()]);
    let c = |x: f32, y: f32, z: f32| Vec3::new(x, y, z);
    square(&mut open, 0.0, 0.0, 0.0, 1.0, true, 0);
    quad(&mut open, [c(-1.0, 0.0, 1.0), c(1.0, 0.0, 1.0), c(1.0, 1.0, 1.0), c(-1.0, 1.0, 1.0)], 0);
    quad(&mut open, [c(1.0, 0.0, -1.0), c(-1.0, 0.0, -1.0), c(-1.0, 1.0, -1.0), c(1.0, 1.0, -1.0)], 0);
    quad(&mut open, [c(1.0, 0.0, 1.0), c(1.0, 0.0, -1.0), c(1.0, 1.0, -1.0), c(1.0, 1.0, 1.0)], 0);
    quad(&mut open, [c(-1.0, 0.0, -1.0), c(-1.0, 0.0, 1.0), c(-1.0, 1.0, 1.0), c(-1.0, 1.0, -1.0)], 0);
    [sphere, open]
}

/// Albedo 1 under a sky of 1: diffuse, mirror and glass neither lose nor gain
/// energy, so the image's expectation is 1. Judged on the image mean: a
/// single pixel's few samples are skewed by Russian roulette (0 or 1/q^k).
#[test]
fn furnace_diffuse_mirror_and_glass_give_one() {
    let white = Material::diffuse("white", Vec3::ONE);
    let kinds = [
        white.clone(),
        Material { kind: MaterialKind::Mirror, ..white.clone() },
        Material { kind: MaterialKind::Glass, ior: 1.5, ..white.clone() },
    ];
    for m in &kinds {
        for scene in furnaces(m) {
            let f = frames(&scene, 24, 24, 64, Estimator::Mis);
            let (mean, se) = image_mean(&f);
            eprintln!("{:?} furnace, {}: mean {mean} ± {se}", m.kind, scene.name);
            // A path still inside after 64 bounces is cut: allow that sliver besides the noise.
            assert!((mean - 1.0).abs() <= 4.0 * se + 1e-3, "{:?} {}: mean {mean} ± {se}", m.kind, scene.name);
        }
    }
}

/// GGX with F0 = 1 loses energy only to single scattering's missing
/// multiple-bounce term: never above 1 anywhere, and close to 1 when smooth.
/// Per pixel with three bounces, where Russian roulette (from bounce 3)
/// leaves every sample's weight a product of F·G2/G1 ≤ 1, so a pixel's mean
/// is a fair judge; the image mean with 64 bounces, so paths leave the box.
#[test]
fn furnace_glossy_never_gains_energy_and_smooth_is_near_one() {
    for (roughness, near_one) in [(0.05, true), (0.5, false), (1.0, false)] {
        for scene in furnaces(&glossy(roughness, 1.0)) {
            let f = frames(&scene, 24, 24, 3, Estimator::Mis);
            for (p, (pm, pv)) in pixel_stats(&f).into_iter().enumerate() {
                assert!(pm <= 1.0 + 3.0 * pv.sqrt() + 1e-4, "roughness {roughness} {}: pixel {p} {pm}", scene.name);
            }
            let (mean, se) = image_mean(&frames(&scene, 24, 24, 64, Estimator::Mis));
            eprintln!("glossy furnace, roughness {roughness}, {}: mean {mean} ± {se}", scene.name);
            if near_one {
                assert!(mean > 0.97 - 4.0 * se, "roughness {roughness} {}: mean {mean}", scene.name);
            } else {
                assert!(mean < 1.0 + 3.0 * se, "roughness {roughness} {}: mean {mean} gains energy", scene.name);
            }
        }
    }
}

/// `--estimator` takes the catalog names and refuses others with the choices.
#[cfg(feature = "cli")]
#[test]
fn render_takes_an_estimator_by_name() {
    let dir = std::env::temp_dir().join(format!("reap-transport-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let run = |estimator: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_reap"))
            .args(["render", "--backend", "cpu", "--width", "16", "--height", "12", "--spp", "1"])
            .args(["--max-bounces", "2", "--estimator", estimator, "--out"])
            .arg(dir.join(format!("{estimator}.png")))
            .output()
            .expect("reap runs")
    };
    for e in Estimator::ALL {
        let out = run(e.name());
        assert!(out.status.success(), "--estimator {e}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{e} estimator")));
    }
    let out = run("nee");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("mis, light or bsdf"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
