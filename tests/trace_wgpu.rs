//! The path tracer on the wgpu backend: every trace shader validated by naga
//! (no adapter needed), then the analytic bodies of `common/analytic.rs`
//! and comparisons with the CPU engine on whatever adapter wgpu finds
//! (lavapipe in CI). A missing adapter skips with the reason;
//! REAP_REQUIRE_WGPU=1 turns that into a failure.
//!
//! A little past 600 lines, kept whole: every test renders through the same
//! few helpers (the Cornell engine, the settings, the bit comparison).
#![cfg(feature = "wgpu")]

// Shared with tests/cuda.rs, which uses what is left unused here (the
// brute-force form factor, a band edge moving between engines: one wgpu engine has no neighbour).
#[allow(dead_code)]
#[path = "common/analytic.rs"]
mod analytic;
#[allow(dead_code)]
#[path = "common/shard.rs"]
mod shard;

#[allow(dead_code)] // not every file uses every helper
#[path = "common/wgpu.rs"]
mod adapter;
use adapter::wgpu;
use reap::compaction::wgpu::{AdapterChoice, WgpuBackend};
use reap::trace::EngineSetup;
use reap::trace::wgpu::WgpuEngine;

/// Every trace shader passes naga's validation: what wgpu would refuse at
/// pipeline creation fails here, with no adapter.
#[test]
fn every_trace_shader_validates_with_naga() {
    let mut failures = Vec::new();
    for (name, text, subgroups) in reap::trace::wgpu::shader_variants() {
        if let Err(e) = reap::wgpu_runtime::pipelines::validate(&name, &text, subgroups) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A fresh engine per render: each takes its backend by value.
fn engine(setup: EngineSetup) -> WgpuEngine {
    let b = wgpu().expect("the adapter that wgpu() found");
    WgpuEngine::new(b, setup).expect("engine")
}

/// Stamps out one test per body of `common/analytic.rs`, each under its own
/// name, skipped where no adapter is present.
macro_rules! on_wgpu {
    ($($test:ident => $body:ident,)*) => {$(
        #[test]
        fn $test() {
            if wgpu().is_some() {
                analytic::$body(&mut engine);
            }
        }
    )*};
}

on_wgpu! {
    wgpu_floor_under_a_ceiling_light_matches_the_parallel_form_factor => floor_under_a_ceiling_light,
    wgpu_wall_beside_a_ceiling_light_matches_lamberts_formula => wall_beside_a_ceiling_light,
    wgpu_light_seen_from_its_lit_side_is_exactly_its_radiance => light_seen_from_its_lit_side_is_exactly_le,
    wgpu_one_sided_light_seen_from_behind_is_black => light_seen_from_behind_is_black,
    wgpu_one_sided_light_turned_away_leaves_the_floor_black => light_facing_away_leaves_the_floor_black,
    wgpu_one_sided_light_leaves_the_wall_above_its_plane_black => wall_above_the_light_sees_its_back_and_stays_black,
}

use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::{BvhKind, Compaction, Engine, Estimator, Fusion, RenderSettings, Traversal, render};

/// The built-in Cornell box packed for an engine, with its camera at `w`×`h`.
fn cornell(w: u32, h: u32) -> (Packed, CameraLayout) {
    let scene = reap::scene::builtin("cornell").expect("cornell");
    let bvh = reap::bvh::build(&scene.triangles);
    (Packed::new(&scene, &bvh), CameraLayout::new(&scene.camera, w, h))
}

fn cornell_on_wgpu(w: u32, h: u32, seed: u32, max_bounces: u32) -> Option<WgpuEngine> {
    let b = wgpu()?;
    let (packed, camera) = cornell(w, h);
    let setup = EngineSetup { packed: &packed, camera, width: w, height: h, seed, max_bounces };
    Some(WgpuEngine::new(b, setup).expect("engine"))
}

/// One frame per sample from sample 0, depth-first, no compaction, MIS.
fn settings_for(w: u32, h: u32, spp: u32, max_bounces: u32, seed: u32) -> RenderSettings {
    RenderSettings {
        width: w,
        height: h,
        spp,
        max_bounces,
        estimator: Estimator::Mis,
        traversal: Traversal::DepthFirst,
        compact_paths: Compaction::None,
        compact_frontier: Compaction::None,
        seed,
        first_sample: 0,
        max_frontier: 1 << 22,
        fusion: Default::default(),
        descend: reap::trace::DESCEND,
        block_levels: reap::trace::BlockLevels::Auto,
        group_levels: 0,
        bvh: reap::trace::BVH,
    }
}

fn bits(img: &[[f32; 4]]) -> &[u32] {
    bytemuck::cast_slice(img)
}

/// Every compaction algorithm the wgpu backend implements, at both sites,
/// under both traversals and both BVHs, renders one image bit for bit:
/// random numbers follow (pixel, sample, bounce) and closest hits merge by
/// an order-independent minimum. The frontier past its capacity is redone,
/// not cut short: a small first frontier renders the same image too.
#[test]
fn wgpu_tracer_renders_one_image_whatever_the_algorithm_traversal_and_bvh() {
    let (w, h) = (32, 24);
    let Some(mut e) = cornell_on_wgpu(w, h, 7, 4) else { return };
    let base = settings_for(w, h, 2, 4, 7);
    let choices = Compaction::choices(e.backend());
    assert!(choices.len() > 8, "the wgpu backend selects with most algorithms: {choices:?}");
    let mut images: Vec<(String, Vec<[f32; 4]>)> = Vec::new();
    for bvh in BvhKind::ALL {
        for traversal in Traversal::ALL {
            for c in &choices {
                let alg = Compaction::parse(c, e.backend(), "paths").expect("a choice the backend lists");
                // `atomic` fuses on wgpu (compaction/site.wgsl): both of its paths.
                let fused = matches!(alg, Compaction::With(a) if e.fuses(a));
                let fusions: &[Fusion] = if fused { &[Fusion::Auto, Fusion::Off] } else { &[Fusion::Auto] };
                for &fusion in fusions {
                    let s = RenderSettings {
                        traversal,
                        bvh,
                        compact_paths: alg,
                        compact_frontier: alg,
                        fusion,
                        ..base.clone()
                    };
                    e.reset().unwrap();
                    let frames =
                        render(&mut e, &s, |_| {}).unwrap_or_else(|err| panic!("{c} {traversal:?} {bvh}: {err}"));
                    assert!(
                        frames.iter().all(|f| f.rays > 0 && !f.stages.is_empty()),
                        "{c}: frames report rays and stages"
                    );
                    let passes = frames.iter().flat_map(|f| &f.stages).any(|(id, _)| id.is_compaction());
                    // A stable site that stalled (lavapipe's threads can be descheduled while
                    // waited on: site.wgsl) turns itself off and redoes the frame separately.
                    let stalled = matches!(alg, Compaction::With(a) if fused && !e.fuses(a));
                    assert!(
                        stalled || passes == (!(fused && fusion == Fusion::Auto) && alg != Compaction::None),
                        "{c} {}: a compaction pass runs exactly where the site is not fused",
                        fusion.name()
                    );
                    images.push((format!("{c} {} {bvh} {}", traversal.name(), fusion.name()), e.image().unwrap()));
                }
            }
        }
    }
    let atomic = Compaction::With(reap::compaction::Algorithm::Atomic);
    for descend in [1, 3, 5] {
        for alg in [base.compact_frontier, atomic] {
            let s = RenderSettings {
                traversal: Traversal::BreadthFirst,
                bvh: BvhKind::Binary,
                descend,
                compact_paths: alg,
                compact_frontier: alg,
                ..base.clone()
            };
            e.reset().unwrap();
            render(&mut e, &s, |_| {}).unwrap_or_else(|err| panic!("descend {descend}: {err}"));
            images.push((format!("breadth-first binary descend {descend} {}", alg.name()), e.image().unwrap()));
        }
    }
    let (first_name, first) = &images[0];
    assert!(first.iter().any(|p| p[0] > 0.0), "the Cornell box is lit");
    for (name, img) in &images[1..] {
        assert!(bits(img) == bits(first), "{name} renders a different image than {first_name}");
    }
    println!("{} renders, one image", images.len());
}

/// A stable fused site whose predecessor never publishes (every third tile
/// withheld, site.wgsl `SITE_WITHHOLD`) gives up waiting instead of hanging:
/// the frame is redone through the separate pass, the engine keeps that
/// site off from then on, and the image is the separate pass's, bit for bit.
#[test]
fn wgpu_a_stalled_stable_site_redoes_the_frame_through_the_separate_pass() {
    use reap::compaction::{Algorithm, SitePath};
    let (w, h) = (32, 24);
    for a in [Algorithm::Lookback, Algorithm::Chained] {
        let Some(mut e) = cornell_on_wgpu(w, h, 7, 4) else { return };
        e.tuning.site_withhold = 3;
        let alg = Compaction::With(a);
        let s = RenderSettings {
            traversal: Traversal::BreadthFirst,
            compact_paths: alg,
            compact_frontier: alg,
            ..settings_for(w, h, 2, 4, 7)
        };
        assert!(e.fuses(a), "{a} fuses on this adapter before any stall");
        let frames = render(&mut e, &s, |_| {}).unwrap_or_else(|err| panic!("{a}: {err}"));
        assert!(!e.fuses(a), "{a}: a stall turns the stable site off");
        assert_eq!(frames[0].frontier_site, Some(SitePath::Separate), "{a}: the redone frame ran separately");
        let stalled = e.image().unwrap();
        let Some(mut r) = cornell_on_wgpu(w, h, 7, 4) else { return };
        render(&mut r, &RenderSettings { fusion: Fusion::Off, ..s.clone() }, |_| {}).unwrap();
        assert!(bits(&stalled) == bits(&r.image().unwrap()), "{a}: the redone frames render the separate image");
    }
}

/// Per pixel, the largest difference of the mean radiance's channels.
fn pixel_diffs(a: &[[f32; 4]], b: &[[f32; 4]]) -> Vec<f32> {
    a.iter()
        .zip(b)
        .map(|(p, q)| (0..3).map(|k| (p[k] / p[3].max(1.0) - q[k] / q[3].max(1.0)).abs()).fold(0.0, f32::max))
        .collect()
}

/// The Cornell box on wgpu against the CPU engine, pixel by pixel. The
/// arithmetic is the same in the same order, but WGSL cannot forbid the
/// driver's fused multiply-adds (CUDA's `__fmul_rn`/`__fadd_rn`), and the
/// transcendental functions round otherwise: a hit point moves by a few ulps.
/// Almost everywhere that moves a pixel by float noise (bound 1e-3 of the
/// pixel's value); where a ray grazes an edge or Russian roulette's
/// threshold, the few ulps can send the path elsewhere and the pixel's
/// sample changes wholly: at most 2 % of the pixels may do that, and the
/// image's mean stays within 1 %.
#[test]
fn wgpu_cornell_matches_the_cpu_pixel_by_pixel() {
    use reap::trace::cpu::CpuEngine;
    let (w, h) = (48, 36);
    let Some(mut e) = cornell_on_wgpu(w, h, 7, 6) else { return };
    let (packed, camera) = cornell(w, h);
    let mut cpu = CpuEngine::new(reap::compaction::CpuBackend::new(), packed, camera, w, h, 7, 6);
    for traversal in Traversal::ALL {
        let s = RenderSettings { traversal, ..settings_for(w, h, 4, 6, 7) };
        e.reset().unwrap();
        cpu.reset().unwrap();
        render(&mut e, &s, |_| {}).expect("wgpu renders");
        render(&mut cpu, &s, |_| {}).expect("the CPU renders");
        let (g, c) = (e.image().unwrap(), cpu.image().unwrap());
        assert!(g.iter().zip(&c).all(|(a, b)| a[3] == b[3] && a[3] == 4.0), "every pixel holds 4 samples");
        let d = pixel_diffs(&g, &c);
        // Relative to the pixel's own brightest channel (a float-noise bound), with a floor for black pixels.
        let bound = |p: &[f32; 4]| 1e-3 * p[0].max(p[1]).max(p[2]) / p[3] + 1e-6;
        let off = d.iter().zip(&c).filter(|(x, p)| **x > bound(p)).count();
        let worst = d.iter().zip(&c).map(|(x, p)| x / bound(p) * 1e-3).fold(0.0f32, f32::max);
        let exact = g.iter().zip(&c).filter(|(a, b)| a == b).count();
        let mean = |img: &[[f32; 4]]| img.iter().map(|p| (p[0] + p[1] + p[2]) as f64 / p[3] as f64).sum::<f64>();
        let (mg, mc) = (mean(&g), mean(&c));
        println!(
            "{}: {exact} of {} pixels bit-identical, {off} beyond 1e-3 of their value (worst {worst:.1e}), means {mg} vs {mc}",
            traversal.name(),
            d.len()
        );
        assert!(off * 50 <= d.len(), "{}: {off} of {} pixels differ beyond float noise", traversal.name(), d.len());
        assert!((mg - mc).abs() <= 1e-2 * mc, "{}: mean {mg} vs the CPU's {mc}", traversal.name());
    }
}

/// A textured square (a 3×2 texture, so a swapped width and height or a
/// flipped v shows) filling the view under a sky of 1: texture.wgsl's
/// lookups give the CPU's image pixel by pixel (only the hit points' last
/// bits differ, see the Cornell test), and the image's mean is the texture's.
#[test]
fn wgpu_textured_square_matches_the_cpu() {
    use glam::Vec3;
    use reap::trace::cpu::CpuEngine;
    let Some(b) = wgpu() else { return };
    let scene = analytic::textured_square();
    let texture = scene.textures[0].clone();
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(&scene, &bvh);
    let (w, h) = (32, 32);
    let camera = CameraLayout::new(&scene.camera, w, h);
    let setup = EngineSetup { packed: &packed, camera, width: w, height: h, seed: 7, max_bounces: 2 };
    let mut e = WgpuEngine::new(b, setup).expect("engine");
    let mut cpu = CpuEngine::new(reap::compaction::CpuBackend::new(), packed, camera, w, h, 7, 2);
    for traversal in Traversal::ALL {
        let settings = RenderSettings { traversal, max_frontier: 1 << 20, ..settings_for(w, h, 2, 2, 7) };
        e.reset().unwrap();
        cpu.reset().unwrap();
        render(&mut e, &settings, |_| {}).expect("wgpu renders");
        render(&mut cpu, &settings, |_| {}).expect("the CPU renders");
        let (g, c) = (e.image().unwrap(), cpu.image().unwrap());
        for (i, (g, c)) in g.iter().zip(&c).enumerate() {
            let worst = (0..3).map(|k| (g[k] - c[k]).abs()).fold(0.0f32, f32::max);
            assert!(worst <= 1e-3 && g[3] == c[3], "{traversal:?} pixel {i}: wgpu {g:?} vs CPU {c:?}");
        }
        let mean: Vec3 = g.iter().map(|p| Vec3::new(p[0], p[1], p[2]) / p[3]).sum::<Vec3>() / g.len() as f32;
        assert!((mean - texture.mean()).abs().max_element() < 1e-2, "mean {mean} vs the texture's {}", texture.mean());
    }
}

/// The 8-bit image, read back (`rgba8`) and written into a storage texture
/// (`tonemap_into`, the viewer's path), against the CPU twin of the
/// conversion (src/trace/tonemap.rs) on the same sums: one step apart at
/// most, where WGSL's `pow` rounds otherwise than the CPU's, and in at most
/// 1 % of the pixels. An odd size leaves the last workgroup partly empty.
#[test]
fn wgpu_tonemap_matches_the_cpu_twin_in_words_and_in_a_texture() {
    use reap::trace::tonemap;
    let (w, h) = (61, 59);
    let Some(mut e) = cornell_on_wgpu(w, h, 3, 6) else { return };
    let black = e.rgba8().expect("the image before any sample").to_vec();
    assert!(black.len() == (w * h) as usize && black.iter().all(|p| *p == [0, 0, 0, 255]), "black and opaque");
    render(&mut e, &settings_for(w, h, 2, 6, 3), |_| {}).expect("render");
    let want: Vec<[u8; 4]> = e.image().expect("sums").into_iter().map(tonemap::trace_tonemap).collect();
    let words = e.rgba8().expect("the 8-bit image").to_vec();
    let texture = read_tonemap_texture(&mut e, w, h);
    for (what, got) in [("rgba8", &words), ("tonemap_into", &texture)] {
        assert_eq!(got.len(), want.len(), "{what}");
        let mut off_by_one = 0;
        for (i, (g, c)) in got.iter().zip(&want).enumerate() {
            let worst = g.iter().zip(c).map(|(a, b)| (*a as i32 - *b as i32).abs()).max().unwrap_or(0);
            assert!(worst <= 1 && g[3] == 255, "{what} pixel {i}: wgpu {g:?}, CPU twin {c:?}");
            off_by_one += (worst == 1) as usize;
        }
        assert!(off_by_one * 100 <= got.len(), "{what}: {off_by_one} of {} pixels differ", got.len());
        let lit = got.iter().filter(|p| p[0] > 40 || p[1] > 40 || p[2] > 40).count();
        assert!(lit * 2 > got.len(), "{what}: the Cornell box is lit: {lit} of {} pixels", got.len());
    }
    assert_eq!(words, texture, "the texture holds the read-back bytes");
}

/// `tonemap_into` a fresh Rgba8Unorm storage texture, copied back row by row.
fn read_tonemap_texture(e: &mut WgpuEngine, w: u32, h: u32) -> Vec<[u8; 4]> {
    let dev = e.backend().device().clone();
    let size = wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 };
    let texture = dev.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("test target"),
        size,
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::STORAGE_BINDING | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    e.tonemap_into(&texture.create_view(&Default::default())).expect("tonemap into the texture");
    let row = (w * 4).next_multiple_of(256);
    let buffer = dev.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test read-back"),
        size: (row * h) as u64,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut enc = dev.device.create_command_encoder(&Default::default());
    enc.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(row), rows_per_image: Some(h) },
        },
        size,
    );
    dev.queue.submit([enc.finish()]);
    let bytes = dev.read(&buffer, 0, (row * h) as u64, "the test's texture").expect("read back");
    bytes.chunks(row as usize).flat_map(|r| r[..(w * 4) as usize].chunks(4).map(|p| [p[0], p[1], p[2], p[3]])).collect()
}

/// A quad a b c d (counter-clockwise seen from where its normal points) as
/// two flat-shaded triangles (tests/transport.rs `quad`).
fn quad(scene: &mut reap::scene::Scene, [a, b, c, d]: [glam::Vec3; 4], material: u32) {
    for t in [[a, b, c], [a, c, d]] {
        let n = (t[1] - t[0]).cross(t[2] - t[0]).normalize();
        scene.triangles.push(t);
        scene.normals.push([n; 3]);
        scene.uvs.push([glam::Vec2::ZERO; 3]);
        scene.material_of.push(material);
    }
}

/// tests/transport.rs `veach`: two glossy strips of different roughness
/// under a small bright and a large dim emitter, where the estimators differ most.
fn veach() -> reap::scene::Scene {
    use glam::Vec3;
    use reap::scene::{Camera, Material, MaterialKind};
    let glossy = |roughness, f0| Material {
        kind: MaterialKind::Glossy,
        roughness,
        ..Material::diffuse("glossy", Vec3::splat(f0))
    };
    let emitter = |le| Material { emission: Vec3::splat(le), ..Material::diffuse("light", Vec3::ZERO) };
    let mut s = reap::scene::builtin("furnace").expect("the furnace scene builds");
    (s.triangles, s.normals, s.uvs, s.material_of) = Default::default();
    s.environment = Vec3::ZERO;
    s.camera = Camera { position: Vec3::new(0.0, 2.2, 4.0), target: Vec3::ZERO, up: Vec3::Y, vfov_deg: 60.0 };
    s.materials = vec![
        glossy(0.02, 0.8),
        glossy(0.25, 0.8),
        Material::diffuse("wall", Vec3::splat(0.5)),
        emitter(400.0),
        emitter(1.0),
    ];
    let c = Vec3::new;
    let (l, r) = (-3.0, 3.0);
    quad(&mut s, [c(l, 0.0, 3.5), c(r, 0.0, 3.5), c(r, 0.0, 1.0), c(l, 0.0, 1.0)], 0);
    quad(&mut s, [c(l, 0.0, 1.0), c(r, 0.0, 1.0), c(r, 0.0, -2.0), c(l, 0.0, -2.0)], 1);
    quad(&mut s, [c(l, 0.0, -2.0), c(r, 0.0, -2.0), c(r, 3.0, -2.0), c(l, 3.0, -2.0)], 2);
    for (x, half, m) in [(-1.0, 0.05, 3), (1.0, 0.8, 4)] {
        let (a, b, z0, z1) = (x - half, x + half, -half, half);
        quad(&mut s, [c(a, 1.2, z0), c(b, 1.2, z0), c(b, 1.2, z1), c(a, 1.2, z1)], m); // facing down
    }
    s
}

/// Renders `scene` at `size`² on wgpu and on the CPU with the same settings.
fn both(scene: &reap::scene::Scene, size: u32, s: &RenderSettings) -> Option<(Vec<[f32; 4]>, Vec<[f32; 4]>)> {
    use reap::trace::cpu::CpuEngine;
    let b = wgpu()?;
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(scene, &bvh);
    let camera = CameraLayout::new(&scene.camera, size, size);
    let setup =
        EngineSetup { packed: &packed, camera, width: size, height: size, seed: s.seed, max_bounces: s.max_bounces };
    let mut e = WgpuEngine::new(b, setup).expect("engine");
    let mut cpu =
        CpuEngine::new(reap::compaction::CpuBackend::new(), packed, camera, size, size, s.seed, s.max_bounces);
    render(&mut e, s, |_| {}).expect("wgpu renders");
    render(&mut cpu, s, |_| {}).expect("the CPU renders");
    Some((e.image().unwrap(), cpu.image().unwrap()))
}

/// The white furnace (albedo 1 under a sky of 1) with every material kind,
/// and the glossy scene of tests/transport.rs under each estimator: the
/// wgpu image is the CPU's, pixel by pixel up to float noise (the bound of
/// the Cornell test), so what transport.rs proves of the CPU's light
/// transport (furnaces give one, the estimators agree) holds here too; and
/// the lossless furnaces' wgpu image means are 1 within their noise.
#[test]
fn wgpu_furnaces_and_estimators_give_the_cpus_images() {
    use glam::Vec3;
    use reap::scene::{Material, MaterialKind};
    if wgpu().is_none() {
        return;
    }
    let white = Material::diffuse("white", Vec3::ONE);
    let kinds = [
        (white.clone(), true),
        (Material { kind: MaterialKind::Mirror, ..white.clone() }, true),
        (Material { kind: MaterialKind::Glass, ior: 1.5, ..white.clone() }, true),
        (Material { kind: MaterialKind::Glossy, roughness: 0.05, ..white.clone() }, false),
        (Material { kind: MaterialKind::Glossy, roughness: 0.5, ..white.clone() }, false),
    ];
    let mut cases = Vec::new();
    for (m, lossless) in &kinds {
        let mut furnace = reap::scene::builtin("furnace").expect("the furnace scene builds");
        furnace.materials = vec![m.clone()];
        cases.push((format!("{:?} furnace", m.kind), furnace, Estimator::Mis, *lossless));
    }
    for estimator in Estimator::ALL {
        cases.push((format!("veach, {estimator}"), veach(), estimator, false));
    }
    for (name, scene, estimator, lossless) in cases {
        let size = 24;
        let s = RenderSettings { estimator, ..settings_for(size, size, 16, 16, 3) };
        let Some((g, c)) = both(&scene, size, &s) else { return };
        let d = pixel_diffs(&g, &c);
        let bound = |p: &[f32; 4]| 1e-3 * p[0].max(p[1]).max(p[2]) / p[3] + 1e-6;
        let off = d.iter().zip(&c).filter(|(x, p)| **x > bound(p)).count();
        println!("{name}: {off} of {} pixels beyond float noise", d.len());
        assert!(off * 50 <= d.len(), "{name}: {off} of {} pixels differ from the CPU's", d.len());
        let mean = g.iter().map(|p| (p[0] + p[1] + p[2]) as f64 / (3.0 * p[3] as f64)).sum::<f64>() / g.len() as f64;
        assert!(mean > 0.0, "{name}: lit");
        if lossless {
            // 16 samples of 576 pixels: Russian roulette's weights keep the mean within a few percent.
            assert!((mean - 1.0).abs() < 0.05, "{name}: image mean {mean}, not 1");
        }
    }
}

/// A frame whose frontier would pass --max-frontier returns the clear
/// error, nothing is written past the frontier's capacity (a poisoned guard
/// region reads back intact), and the failed frame accumulates nothing: the
/// overflow status word is set on the device and read once, at the frame's end.
#[test]
fn wgpu_frontier_past_max_frontier_is_an_error_and_nothing_is_written_past_it() {
    use reap::trace::{TraceError, frontier_guard, guard_frontier};
    let (w, h) = (32, 32);
    let Some(mut e) = cornell_on_wgpu(w, h, 7, 4) else { return };
    guard_frontier(&mut e, 1 << 12).expect("guard");
    // Separate, the expansion's fan-out slots pass 3000; through a fused site (stable or
    // `atomic`) only live items count, and 500 is fewer than the rays that enter the root.
    let atomic = Compaction::With(reap::compaction::Algorithm::Atomic);
    let lookback = Compaction::With(reap::compaction::Algorithm::Lookback);
    for (bvh, c, fusion, max) in BvhKind::ALL.into_iter().flat_map(|b| {
        [(b, lookback, Fusion::Off, 3000), (b, lookback, Fusion::Auto, 500), (b, atomic, Fusion::Auto, 500)]
    }) {
        let settings = RenderSettings {
            traversal: Traversal::BreadthFirst,
            bvh,
            max_frontier: max,
            compact_paths: c,
            compact_frontier: c,
            fusion,
            ..settings_for(w, h, 1, 4, 7)
        };
        let compaction = format!("{} {}", c.name(), fusion.name());
        match render(&mut e, &settings, |_| {}) {
            Err(err @ TraceError::FrontierTooLarge { items, max: m, .. }) if m == max => {
                assert!(items > max && err.to_string().contains("--max-frontier"), "{bvh} {compaction}: {err}");
            }
            other => panic!("{bvh} {compaction}: expected FrontierTooLarge, got {other:?}"),
        }
        let (capacity, intact) = frontier_guard(&mut e).expect("reads").expect("a frontier was made");
        // The frontier regrows between attempts (from the last case's), never past the limit.
        assert!(capacity <= max, "{bvh} {compaction}: a frontier of {capacity} items, the limit is {max}");
        assert!(intact, "{bvh} {compaction}: a slot past the frontier's capacity was written");
        assert!(
            e.image().expect("image").iter().all(|p| *p == [0.0; 4]),
            "{bvh} {compaction}: a failed frame accumulated"
        );
    }
}

/// Without timestamp queries each stage is timed by the host clock around
/// its submission (said by `stage_clock`), and the image is the same bits.
#[test]
fn wgpu_without_timestamps_the_host_clock_times_each_stage_and_the_image_is_the_same() {
    use reap::wgpu_runtime::Features;
    use reap::wgpu_runtime::timer::Clock;
    if wgpu().is_none() {
        return;
    }
    let choice: AdapterChoice = std::env::var("REAP_WGPU_ADAPTER").unwrap_or_default().parse().expect("infallible");
    let (w, h) = (24, 16);
    let (packed, camera) = cornell(w, h);
    let mut images = Vec::new();
    for timestamps in [true, false] {
        let b = WgpuBackend::open(&choice, Features { timestamps, ..Features::default() }).expect("the adapter");
        let setup = EngineSetup { packed: &packed, camera, width: w, height: h, seed: 7, max_bounces: 4 };
        let mut e = WgpuEngine::new(b, setup).expect("engine");
        let s = RenderSettings { traversal: Traversal::BreadthFirst, ..settings_for(w, h, 1, 4, 7) };
        let frames = render(&mut e, &s, |_| {}).expect("render");
        // With them, the adapter's timestamps inside encoders where it has them (lavapipe has).
        let want = e.stage_clock();
        assert!(timestamps || want == Clock::Host, "timestamps off, yet {want:?}");
        let f = &frames[0];
        assert!(f.stages.len() > 10 && f.frame_ms > 0.0, "{want:?}: stages timed: {:?}", f.stages);
        assert!(f.stages.iter().any(|(id, _)| id.name == reap::trace::stage::EXPAND), "{want:?}: levels are stages");
        images.push(e.image().unwrap());
    }
    assert!(images.windows(2).all(|p| bits(&p[0]) == bits(&p[1])), "the clock changes the image");
}

/// The stable fused sites rank and walk back through subgroups where the
/// device has them (compaction/site_subgroup.wgsl) and with one invocation
/// where it has not (site_lane.wgsl): both render the separate pass's image.
#[test]
fn wgpu_stable_sites_with_and_without_subgroups_render_the_separate_image() {
    use reap::compaction::Algorithm;
    use reap::wgpu_runtime::Features;
    if wgpu().is_none() {
        return;
    }
    let choice: AdapterChoice = std::env::var("REAP_WGPU_ADAPTER").unwrap_or_default().parse().expect("infallible");
    let (w, h) = (40, 30);
    let (packed, camera) = cornell(w, h);
    let mut images = Vec::new();
    for subgroups in [true, false] {
        for (a, fusion) in [
            (Algorithm::Lookback, Fusion::Off),
            (Algorithm::Lookback, Fusion::Auto),
            (Algorithm::Chained, Fusion::Auto),
        ] {
            let b = WgpuBackend::open(&choice, Features { subgroups, ..Features::default() }).expect("the adapter");
            let mut e = WgpuEngine::new(
                b,
                EngineSetup { packed: &packed, camera, width: w, height: h, seed: 7, max_bounces: 4 },
            )
            .expect("engine");
            let alg = Compaction::With(a);
            let s = RenderSettings {
                traversal: Traversal::BreadthFirst,
                compact_paths: alg,
                compact_frontier: alg,
                fusion,
                ..settings_for(w, h, 2, 4, 7)
            };
            render(&mut e, &s, |_| {})
                .unwrap_or_else(|err| panic!("{a} {} subgroups {subgroups}: {err}", fusion.name()));
            images.push((format!("{a} {} subgroups {subgroups}", fusion.name()), e.image().unwrap()));
        }
    }
    let (first_name, first) = &images[0];
    for (name, img) in &images[1..] {
        assert!(bits(img) == bits(first), "{name} renders a different image than {first_name}");
    }
}

/// Split-frame rendering with one wgpu engine per band (the bodies of
/// tests/common/shard.rs): bands of rows sum to the whole image bit for
/// bit, both traversals; bad shards are typed errors. A `Split` takes one
/// wgpu engine and refuses two (moving sums between adapters needs NCCL).
#[test]
fn wgpu_bands_of_rows_sum_to_the_whole_image_and_a_split_takes_one_engine() {
    use reap::trace::split::Split;
    let (w, h) = (16, 23);
    if wgpu().is_none() {
        return;
    }
    let make = || cornell_on_wgpu(w, h, 7, 4).expect("the adapter answered a moment ago");
    for traversal in Traversal::ALL {
        let s = RenderSettings { traversal, ..settings_for(w, h, 2, 4, 7) };
        shard::split_frames_sum_to_the_whole_image(make, &s, &[&[12, 11], &[8, 1, 14]]);
        shard::split_renders_the_whole_image(|_| make(), &s, 1, vec![h]);
    }
    shard::bad_shards_are_typed_errors(make(), &settings_for(w, h, 1, 4, 7));
    match Split::new(vec![make(), make()], w, h) {
        Err(e) => assert!(e.to_string().contains("--gpus > 1 needs CUDA"), "{e}"),
        Ok(_) => panic!("two wgpu engines were accepted"),
    }
}
