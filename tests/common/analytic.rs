//! Scenes whose images are known in advance, and the statistics that compare
//! a render with them: one body per property, run on every engine
//! (`tests/analytic.rs` on the CPU, `tests/cuda/trace_analytic.rs` on a GPU).
//!
//! Every scene is a rectangular area light of radiance [`LE`] (two triangles,
//! albedo 0 so it reflects nothing) over Lambertian rectangles of albedo
//! [`RHO`], with no environment. With direct lighting only, a point x of
//! normal n that sees the light's lit side has radiance ρ/π · Le · π · F(x) =
//! ρ · Le · F(x), F the point-to-rectangle form factor, known in closed form.
//! A rectangle's lit side is the side of u × v, the side of its triangles'
//! e1 × e2 (counter-clockwise winding).

use std::f64::consts::PI;

use glam::{DVec3, Vec3};
use reap::scene::{Camera, Material, Scene};
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::{Compaction, Engine, EngineSetup, RenderSettings, Traversal, render};

/// The light's emitted radiance and the surfaces' albedo.
pub const LE: f32 = 1.0;
pub const RHO: f32 = 0.5;
/// The ceiling light's height above the floor.
pub const HEIGHT: f32 = 1.0;
const SEED: u32 = 7;

/// A parallelogram `corner + s·u + t·v`, s, t in [0, 1], lit side u × v.
#[derive(Clone, Copy, Debug)]
pub struct Rect {
    pub corner: Vec3,
    pub u: Vec3,
    pub v: Vec3,
}

impl Rect {
    /// Two triangles, both wound so that e1 × e2 points along u × v.
    fn triangles(&self) -> [[Vec3; 3]; 2] {
        let (c, u, v) = (self.corner, self.u, self.v);
        [[c, c + u, c + u + v], [c, c + u + v, c + v]]
    }
    /// The same rectangle lit on the other side.
    pub fn flipped(&self) -> Rect {
        Rect { corner: self.corner, u: self.v, v: self.u }
    }
    pub fn normal(&self) -> DVec3 {
        self.u.as_dvec3().cross(self.v.as_dvec3()).normalize()
    }
    pub fn corners(&self) -> [DVec3; 4] {
        let (c, u, v) = (self.corner.as_dvec3(), self.u.as_dvec3(), self.v.as_dvec3());
        [c, c + u, c + u + v, c + v]
    }
    /// Where the ray `o + t·d` meets the rectangle: `t > 0`, or `None`.
    pub fn hit(&self, o: DVec3, d: DVec3) -> Option<f64> {
        let (c, u, v) = (self.corner.as_dvec3(), self.u.as_dvec3(), self.v.as_dvec3());
        let n = u.cross(v);
        let t = (c - o).dot(n) / d.dot(n);
        let p = o + d * t - c;
        // The coordinates along u and v, by the dual basis.
        let (s, r) = (p.dot(v.cross(n)) / u.dot(v.cross(n)), p.dot(u.cross(n)) / v.dot(u.cross(n)));
        (t.is_finite() && t > 0.0 && (0.0..=1.0).contains(&s) && (0.0..=1.0).contains(&r)).then_some(t)
    }
}

/// The ceiling light: 2 × 2 centred over the origin at [`HEIGHT`], lit side down.
pub fn ceiling_light() -> Rect {
    Rect { corner: Vec3::new(-1.0, HEIGHT, -1.0), u: Vec3::X * 2.0, v: Vec3::Z * 2.0 }
}

/// The floor: 4 × 4 centred under the light, lit side up.
pub fn floor() -> Rect {
    Rect { corner: Vec3::new(-2.0, 0.0, -2.0), u: Vec3::Z * 4.0, v: Vec3::X * 4.0 }
}

/// A wall beside the light, half a unit past its edge, facing it (-X), twice
/// as tall as the light is high: its upper half sees the light's back.
pub fn wall() -> Rect {
    Rect { corner: Vec3::new(1.5, 0.0, -2.0), u: Vec3::Z * 4.0, v: Vec3::Y * 2.0 }
}

/// The light, and the surfaces it shines on, seen by `camera`.
pub fn scene(camera: Camera, light: Rect, surfaces: &[Rect]) -> Scene {
    let lamp = Material { emission: Vec3::splat(LE), ..Material::diffuse("light", Vec3::ZERO) };
    let white = Material::diffuse("white", Vec3::splat(RHO));
    let mut s = Scene {
        name: "analytic".into(),
        triangles: Vec::new(),
        normals: Vec::new(),
        uvs: Vec::new(),
        material_of: Vec::new(),
        materials: vec![lamp, white],
        textures: Vec::new(),
        camera,
        environment: Vec3::ZERO,
        skipped_triangles: 0,
        warnings: Vec::new(),
        sources: Vec::new(),
    };
    for (material, r) in std::iter::once((0, &light)).chain(surfaces.iter().map(|r| (1, r))) {
        let n = r.normal().as_vec3();
        for t in r.triangles() {
            s.triangles.push(t);
            s.normals.push([n; 3]);
            s.uvs.push([glam::Vec2::ZERO; 3]);
            s.material_of.push(material);
        }
    }
    s
}

/// The form factor from a point to the rectangle [0, a] × [0, b] in a
/// parallel plane at distance c, one corner straight above the point
/// (Howell's catalog, C-11).
pub fn corner_form_factor(a: f64, b: f64, c: f64) -> f64 {
    let (x, y) = (a / c, b / c);
    let (sx, sy) = ((1.0 + x * x).sqrt(), (1.0 + y * y).sqrt());
    (x / sx * (y / sx).atan() + y / sy * (x / sy).atan()) / (2.0 * PI)
}

/// The form factor from the point (px, pz) of a plane, facing the parallel
/// rectangle [x0, x1] × [z0, z1] at distance c: four corner rectangles,
/// added or taken away by the side of each edge the point lies on.
pub fn parallel_form_factor(p: (f64, f64), x: (f64, f64), z: (f64, f64), c: f64) -> f64 {
    let g = |u: f64, v: f64| u.signum() * v.signum() * corner_form_factor(u.abs(), v.abs(), c);
    g(x.1 - p.0, z.1 - p.1) - g(x.0 - p.0, z.1 - p.1) - g(x.1 - p.0, z.0 - p.1) + g(x.0 - p.0, z.0 - p.1)
}

/// The form factor from a point x of normal n to a convex polygon wholly in
/// front of it, by Lambert's contour integral: 1/(2π) Σ γ_i n·(R_i × R_i+1)/|…|,
/// γ_i the angle the edge subtends. Exact for any orientation.
pub fn polygon_form_factor(x: DVec3, n: DVec3, polygon: &[DVec3]) -> f64 {
    assert!(polygon.iter().all(|&q| (q - x).dot(n) > 0.0), "the polygon must lie wholly in front of {x}");
    let mut sum = 0.0;
    for (i, &q) in polygon.iter().enumerate() {
        let (a, b) = (q - x, polygon[(i + 1) % polygon.len()] - x);
        let c = a.cross(b);
        sum += c.length().atan2(a.dot(b)) * n.dot(c.normalize());
    }
    sum.abs() / (2.0 * PI)
}

/// The form factor by brute force: cos·cos/(πr²) summed over cells × cells
/// midpoints of the rectangle. The independent check of the closed forms.
pub fn integrated_form_factor(x: DVec3, n: DVec3, r: &Rect, cells: u32) -> f64 {
    let (c, u, v) = (r.corner.as_dvec3(), r.u.as_dvec3(), r.v.as_dvec3());
    let nl = r.normal();
    let da = u.cross(v).length() / (cells as f64 * cells as f64);
    let mut sum = 0.0;
    for i in 0..cells {
        for j in 0..cells {
            let q = c + u * ((i as f64 + 0.5) / cells as f64) + v * ((j as f64 + 0.5) / cells as f64);
            let w = q - x;
            let r2 = w.length_squared();
            let (cx, cl) = (n.dot(w) / r2.sqrt(), nl.dot(w).abs() / r2.sqrt());
            if cx > 0.0 {
                sum += cx * cl / (PI * r2) * da;
            }
        }
    }
    sum
}

/// Per pixel, the mean and the sample variance of the red channel over
/// independent one-sample frames, and the least and largest values met.
pub struct PixelStats {
    pub frames: u32,
    pub mean: Vec<f64>,
    pub var: Vec<f64>,
    pub min: Vec<f64>,
    pub max: Vec<f64>,
}

/// The one place the render's settings are spelled out.
fn settings(width: u32, height: u32, max_bounces: u32, sample: u32) -> RenderSettings {
    RenderSettings {
        width,
        height,
        spp: 1,
        max_bounces,
        estimator: reap::trace::Estimator::Mis,
        traversal: Traversal::DepthFirst,
        compact_paths: Compaction::None,
        compact_frontier: Compaction::None,
        seed: SEED,
        first_sample: sample,
        max_frontier: 1 << 26,
        fusion: Default::default(),
        descend: reap::trace::DESCEND,
        block_levels: reap::trace::BlockLevels::Auto,
        group_levels: 0,
        bvh: reap::trace::BVH,
    }
}

/// Renders `frames` frames of one sample each (distinct `first_sample`, so
/// independent random numbers) and gathers each pixel's statistics (Welford).
pub fn measure<E: Engine>(engine: &mut E, width: u32, height: u32, max_bounces: u32, frames: u32) -> PixelStats {
    let n = (width * height) as usize;
    let (lo, hi) = (vec![f64::INFINITY; n], vec![f64::NEG_INFINITY; n]);
    let mut st = PixelStats { frames, mean: vec![0.0; n], var: vec![0.0; n], min: lo, max: hi };
    for k in 0..frames {
        engine.reset().expect("reset");
        render(engine, &settings(width, height, max_bounces, k), |_| {}).expect("render");
        let img = engine.image().expect("image");
        for (i, p) in img.iter().enumerate() {
            assert_eq!(p[3], 1.0, "pixel {i} of frame {k} holds {} samples", p[3]);
            let x = p[0] as f64;
            let d = x - st.mean[i];
            st.mean[i] += d / (k + 1) as f64;
            st.var[i] += d * (x - st.mean[i]);
            st.min[i] = st.min[i].min(x);
            st.max[i] = st.max[i].max(x);
        }
    }
    for v in &mut st.var {
        *v /= (frames.max(2) - 1) as f64;
    }
    st
}

/// Renders `scene` through `make`'s engine.
pub fn render_scene<E: Engine>(
    make: &mut impl FnMut(EngineSetup) -> E,
    scene: &Scene,
    (width, height): (u32, u32),
    max_bounces: u32,
    frames: u32,
) -> (CameraLayout, PixelStats) {
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(scene, &bvh);
    let camera = CameraLayout::new(&scene.camera, width, height);
    let mut engine = make(EngineSetup { packed: &packed, camera, width, height, seed: SEED, max_bounces });
    (camera, measure(&mut engine, width, height, max_bounces, frames))
}

/// The direction of the camera ray through image coordinates (x, y) in [0, 1]²:
/// `trace_camera`'s (src/trace/shading.rs), in f64 and unnormalised.
pub fn camera_ray(cam: &CameraLayout, x: f64, y: f64) -> DVec3 {
    let f = |a: [f32; 3]| Vec3::from(a).as_dvec3();
    f(cam.forward) + f(cam.right) * (2.0 * x - 1.0) + f(cam.up) * (1.0 - 2.0 * y)
}

/// Quadrature points per pixel side: the jittered rays spread uniformly over
/// the pixel, so a pixel's expected value is the mean over its footprint.
const QUAD: u32 = 8;

/// The mean of `radiance` over the points pixel (col, row) sees on `target`
/// (`quad`² midpoints) and the point its centre sees, or `None` unless every ray through the pixel's
/// corners and midpoints hits `target` first among `scene`'s rectangles (the
/// footprint is convex, as is the rectangle) and `radiance` knows every point.
pub fn footprint_mean(
    cam: &CameraLayout,
    (width, height): (u32, u32),
    (col, row): (u32, u32),
    target: &Rect,
    others: &[Rect],
    quad: u32,
    radiance: &dyn Fn(DVec3) -> Option<f64>,
) -> Option<(f64, DVec3)> {
    let o = Vec3::from(cam.origin).as_dvec3();
    let sees = |x: f64, y: f64| -> Option<DVec3> {
        let d = camera_ray(cam, (col as f64 + x) / width as f64, (row as f64 + y) / height as f64);
        let t = target.hit(o, d)?;
        others.iter().all(|r| r.hit(o, d).is_none_or(|s| s > t)).then_some(o + d * t)
    };
    for (x, y) in [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)] {
        sees(x, y)?;
    }
    let mut sum = 0.0;
    for i in 0..quad {
        for j in 0..quad {
            let p = sees((i as f64 + 0.5) / quad as f64, (j as f64 + 0.5) / quad as f64)?;
            sum += radiance(p)?;
        }
    }
    Some((sum / (quad * quad) as f64, sees(0.5, 0.5)?))
}

/// A pixel to check and the radiance it must average to.
#[derive(Clone, Copy, Debug)]
pub struct Expected {
    pub pixel: (u32, u32),
    /// The point the pixel's centre sees.
    pub centre: DVec3,
    pub value: f64,
    /// How far the 8² quadrature moves when refined to 16², relative.
    pub quadrature: f64,
}

/// The pixels on a grid of `step` whose footprint lies wholly where `radiance`
/// is known, with their expected means.
pub fn expected_pixels(
    cam: &CameraLayout,
    size: (u32, u32),
    step: u32,
    target: &Rect,
    others: &[Rect],
    radiance: &dyn Fn(DVec3) -> Option<f64>,
) -> Vec<Expected> {
    let mut out = Vec::new();
    for row in (step / 2..size.1).step_by(step as usize) {
        for col in (step / 2..size.0).step_by(step as usize) {
            let at = |quad| footprint_mean(cam, size, (col, row), target, others, quad, radiance);
            if let (Some((value, centre)), Some((fine, _))) = (at(QUAD), at(2 * QUAD)) {
                let quadrature = (value - fine).abs() / fine.abs().max(1e-30);
                out.push(Expected { pixel: (col, row), centre, value, quadrature });
            }
        }
    }
    out
}

/// Per-pixel bound on |z|: with k ≤ 40 pixels, |z| > 4 anywhere by chance has
/// probability k · 6.3e-5 ≤ 0.3 %, where a bound of 3 would fail one run in
/// ten. Bias is caught by the joint checks, which are far more sensitive.
const Z_PIXEL: f64 = 4.0;

/// Compares each pixel's mean with its expected value in standard errors, and
/// all of them jointly: the mean of the k z-scores is N(0, 1/√k) and must lie
/// within 3/√k; their squares sum to χ²_k and must stay below k + 4√(2k).
/// It also checks that the test has the power it claims: an irradiance 2 %
/// off would move the mean z by at least 3/√k beyond its bound, and the same
/// samples compared with values 2 % too low or too high do fail.
pub fn check(what: &str, expected: &[Expected], st: &PixelStats, width: u32) {
    let failures = judge(what, expected, st, width, true);
    assert!(failures.is_empty(), "{what}: {}", failures.join("; "));
    for scale in [0.98, 1.02] {
        let off: Vec<Expected> = expected.iter().map(|e| Expected { value: e.value * scale, ..*e }).collect();
        let failures = judge(what, &off, st, width, false);
        println!("  against values {:+.0} % off the check fails: {}", 100.0 * (scale - 1.0), failures.join("; "));
        assert!(!failures.is_empty(), "{what}: values {scale} times the true ones pass too");
    }
}

/// What [`check`] finds wrong, printing every number compared when `print`.
fn judge(what: &str, expected: &[Expected], st: &PixelStats, width: u32, print: bool) -> Vec<String> {
    let k = expected.len();
    assert!((8..=40).contains(&k), "{what}: {k} pixels to check; the bounds assume 8 to 40");
    if print {
        println!("{what}: {k} pixels, {} one-sample frames each", st.frames);
        println!("  pixel    point (x, y, z)        expected     measured     std.err  rel.err      z  quadrature");
    }
    let (mut zs, mut shift) = (Vec::new(), 0.0);
    let mut failures = Vec::new();
    for e in expected {
        let i = (e.pixel.1 * width + e.pixel.0) as usize;
        let se = (st.var[i] / st.frames as f64).sqrt();
        assert!(se > 0.0, "{what}: pixel {:?} has no variance; expected {}", e.pixel, e.value);
        let z = (st.mean[i] - e.value) / se;
        print.then(|| {
            println!(
                "  {:>3},{:<3} ({:>5.2},{:>5.2},{:>5.2}) {:>12.6} {:>12.6} {:>11.6} {:>7.2}% {:>6.2}  {:.1e}",
                e.pixel.0,
                e.pixel.1,
                e.centre.x,
                e.centre.y,
                e.centre.z,
                e.value,
                st.mean[i],
                se,
                100.0 * se / e.value,
                z,
                e.quadrature
            )
        });
        assert!(
            e.quadrature < 1e-3,
            "{what}: the footprint quadrature of {:?} is off by {:.1e}",
            e.pixel,
            e.quadrature
        );
        if z.abs() > Z_PIXEL {
            failures.push(format!("pixel {:?}: z = {z:.2}", e.pixel));
        }
        zs.push(z);
        shift += 0.02 * e.value / se / k as f64;
    }
    let mean_z = zs.iter().sum::<f64>() / k as f64;
    let chi2 = zs.iter().map(|z| z * z).sum::<f64>();
    let (z_bound, chi2_bound) = (3.0 / (k as f64).sqrt(), k as f64 + 4.0 * (2.0 * k as f64).sqrt());
    if print {
        println!("  mean z {mean_z:.3} (bound ±{z_bound:.3}), Σz² {chi2:.1} (bound {chi2_bound:.1}, k = {k})");
        println!("  a 2 % error in the irradiance would move the mean z by {shift:.2}");
    }
    assert!(shift >= 2.0 * z_bound, "{what}: too few samples to see a 2 % error (mean z moves {shift:.2})");
    if mean_z.abs() > z_bound {
        failures.push(format!("mean z = {mean_z:.3} beyond ±{z_bound:.3}"));
    }
    if chi2 > chi2_bound {
        failures.push(format!("Σz² = {chi2:.1} beyond {chi2_bound:.1}"));
    }
    failures
}

/// Asserts that every listed pixel was exactly `value` in every frame.
pub fn check_exact(what: &str, pixels: &[(u32, u32)], value: f64, st: &PixelStats, width: u32) {
    assert!(!pixels.is_empty(), "{what}: no pixel to check");
    let off: Vec<_> = pixels
        .iter()
        .map(|&(c, r)| ((c, r), st.min[(r * width + c) as usize], st.max[(r * width + c) as usize]))
        .filter(|&(_, lo, hi)| lo != value || hi != value)
        .collect();
    let (lo, hi) = off.iter().fold((value, value), |(a, b), &(_, l, h)| (a.min(l), b.max(h)));
    println!(
        "{what}: {} pixels, {} frames, expected exactly {value}: {} differ (values met {lo} to {hi})",
        pixels.len(),
        st.frames,
        off.len()
    );
    assert!(
        off.is_empty(),
        "{what}: {} of {} pixels differ, e.g. {:?}",
        off.len(),
        pixels.len(),
        &off[..off.len().min(5)]
    );
}

/// One-sample frames per pixel for the statistical checks: enough for a
/// relative standard error near 1 % under the light (see `check`'s output).
const FRAMES: u32 = 8192;
/// Frames for the checks of exact values: one lit sample anywhere fails them.
const EXACT_FRAMES: u32 = 16;
const SIZE: (u32, u32) = (48, 36);
/// Checked pixels lie on a grid of this step.
const STEP: u32 = 6;

/// The floor seen from beside the light and below its plane, so that no
/// camera ray meets the light before the floor.
fn floor_camera() -> Camera {
    Camera { position: Vec3::new(0.0, 0.95, 2.4), target: Vec3::new(0.4, 0.0, -0.2), up: Vec3::Y, vfov_deg: 60.0 }
}

/// The radiance of the floor at p under the ceiling light: ρ · Le · F.
fn floor_radiance(p: DVec3) -> Option<f64> {
    let f = parallel_form_factor((p.x, p.z), (-1.0, 1.0), (-1.0, 1.0), HEIGHT as f64 - p.y);
    Some(RHO as f64 * LE as f64 * f)
}

/// Item 1: the floor under a ceiling light, direct lighting only, matches
/// ρ · Le · F(x) with F the parallel-rectangle form factor, at points under
/// the light and outside its footprint (grazing light).
pub fn floor_under_a_ceiling_light<E: Engine>(make: &mut impl FnMut(EngineSetup) -> E) {
    let (light, floor) = (ceiling_light(), floor());
    let (cam, st) = render_scene(make, &scene(floor_camera(), light, &[floor]), SIZE, 1, FRAMES);
    let expected = expected_pixels(&cam, SIZE, STEP, &floor, &[light], &floor_radiance);
    let outside = expected.iter().filter(|e| e.centre.x.abs() > 1.0 || e.centre.z.abs() > 1.0).count();
    assert!(outside >= 3 && outside + 3 <= expected.len(), "{outside} of {} points outside the light", expected.len());
    check("floor under a ceiling light", &expected, &st, SIZE.0);
}

/// The wall beside the light, seen square-on from the light's plane: no
/// camera ray crosses that plane, so none meets the light.
fn wall_camera() -> Camera {
    Camera { position: Vec3::new(-3.0, HEIGHT, 0.0), target: Vec3::new(1.5, HEIGHT, 0.0), up: Vec3::Y, vfov_deg: 28.0 }
}

/// Item 4: a wall perpendicular to the light, beside it, lit at grazing
/// angles from under the light's plane, matches ρ · Le · F(x) with F from
/// Lambert's polygon formula.
pub fn wall_beside_a_ceiling_light<E: Engine>(make: &mut impl FnMut(EngineSetup) -> E) {
    let (light, wall) = (ceiling_light(), wall());
    let (cam, st) = render_scene(make, &scene(wall_camera(), light, &[wall]), SIZE, 1, FRAMES);
    let corners = light.corners();
    let radiance = |p: DVec3| {
        (p.y < HEIGHT as f64).then(|| RHO as f64 * LE as f64 * polygon_form_factor(p, wall.normal(), &corners))
    };
    let expected = expected_pixels(&cam, SIZE, STEP, &wall, &[light], &radiance);
    check("wall beside a ceiling light, below its plane", &expected, &st, SIZE.0);
}

/// Item 4, the other half (needs one-sided emitters): the wall above the
/// light's plane sees only the light's back and stays black.
pub fn wall_above_the_light_sees_its_back_and_stays_black<E: Engine>(make: &mut impl FnMut(EngineSetup) -> E) {
    let (light, wall) = (ceiling_light(), wall());
    let (cam, st) = render_scene(make, &scene(wall_camera(), light, &[wall]), SIZE, 1, EXACT_FRAMES);
    let radiance = |p: DVec3| (p.y > HEIGHT as f64).then_some(0.0);
    let pixels: Vec<_> = expected_pixels(&cam, SIZE, 1, &wall, &[light], &radiance).iter().map(|e| e.pixel).collect();
    check_exact("wall above the light's plane", &pixels, 0.0, &st, SIZE.0);
}

/// The pixels whose whole footprint lies on `target`, every pixel checked.
fn pixels_on(cam: &CameraLayout, target: &Rect, others: &[Rect]) -> Vec<(u32, u32)> {
    expected_pixels(cam, SIZE, 1, target, others, &|_| Some(0.0)).iter().map(|e| e.pixel).collect()
}

/// The light seen from 2 below (lit side) or 2 above (its back), looking
/// at its centre.
fn light_camera(below: bool) -> Camera {
    let y = if below { HEIGHT - 2.0 } else { HEIGHT + 2.0 };
    Camera { position: Vec3::new(0.2, y, 0.3), target: Vec3::new(0.0, HEIGHT, 0.0), up: Vec3::Z, vfov_deg: 50.0 }
}

/// The light's lit side seen directly is exactly Le, whatever the bounces:
/// it reflects nothing. Pins the winding convention once emitters are one-sided.
pub fn light_seen_from_its_lit_side_is_exactly_le<E: Engine>(make: &mut impl FnMut(EngineSetup) -> E) {
    let light = ceiling_light();
    for max_bounces in [1, 8] {
        let (cam, st) = render_scene(make, &scene(light_camera(true), light, &[]), SIZE, max_bounces, EXACT_FRAMES);
        let what = format!("light from its lit side, max_bounces {max_bounces}");
        check_exact(&what, &pixels_on(&cam, &light, &[]), LE as f64, &st, SIZE.0);
    }
}

/// Item 2 (needs one-sided emitters): the light's back seen from above is
/// exactly 0, with nothing behind it to reflect.
pub fn light_seen_from_behind_is_black<E: Engine>(make: &mut impl FnMut(EngineSetup) -> E) {
    let light = ceiling_light();
    for max_bounces in [1, 8] {
        let (cam, st) = render_scene(make, &scene(light_camera(false), light, &[]), SIZE, max_bounces, EXACT_FRAMES);
        let what = format!("light from behind, max_bounces {max_bounces}");
        check_exact(&what, &pixels_on(&cam, &light, &[]), 0.0, &st, SIZE.0);
    }
}

/// Item 3 (needs one-sided emitters): the light turned to face up leaves
/// the floor, and so every pixel, exactly 0, with direct lighting and with
/// eight bounces: nothing above it returns its light.
pub fn light_facing_away_leaves_the_floor_black<E: Engine>(make: &mut impl FnMut(EngineSetup) -> E) {
    let (light, floor) = (ceiling_light().flipped(), floor());
    for max_bounces in [1, 8] {
        let (cam, st) = render_scene(make, &scene(floor_camera(), light, &[floor]), SIZE, max_bounces, EXACT_FRAMES);
        let on_floor = pixels_on(&cam, &floor, &[light]);
        assert!(on_floor.len() > (SIZE.0 * SIZE.1 / 4) as usize, "the floor fills {} pixels", on_floor.len());
        let every: Vec<_> = (0..SIZE.1).flat_map(|r| (0..SIZE.0).map(move |c| (c, r))).collect();
        check_exact(&format!("floor under a light facing up, max_bounces {max_bounces}"), &every, 0.0, &st, SIZE.0);
    }
}

/// A unit square textured by a 3x2 map (repeated past [0, 1]), seen straight
/// on under a white sky: what the GPU engines' texture lookups are checked on
/// against the CPU's.
#[allow(dead_code)] // the GPU suites use it; tests/analytic.rs, which includes this file too, does not
pub fn textured_square() -> reap::scene::Scene {
    use glam::{Vec2, Vec3};
    use reap::scene::{Camera, Material, Scene, Texture, TextureId};
    let corner = |x: f32, y: f32| Vec3::new(x, y, 0.0);
    let triangles = vec![
        [corner(-1.0, -1.0), corner(2.0, -1.0), corner(2.0, 2.0)],
        [corner(-1.0, -1.0), corner(2.0, 2.0), corner(-1.0, 2.0)],
    ];
    let uvs = triangles.iter().map(|t| t.map(|p| Vec2::new(p.x, p.y))).collect();
    let texels = (0..6).map(|i| Vec3::new(i as f32 / 6.0, 1.0 - i as f32 / 6.0, (i % 2) as f32)).collect();
    let texture = Texture { name: "3x2".into(), width: 3, height: 2, texels };
    Scene {
        name: "textured square".into(),
        normals: vec![[Vec3::Z; 3]; 2],
        uvs,
        material_of: vec![0; 2],
        materials: vec![Material { texture: Some(TextureId(0)), ..Material::diffuse("textured", Vec3::splat(0.5)) }],
        textures: vec![texture.clone()],
        camera: Camera {
            position: Vec3::new(0.5, 0.5, 1.0),
            target: Vec3::new(0.5, 0.5, 0.0),
            up: Vec3::Y,
            vfov_deg: 2.0 * 0.5f32.atan().to_degrees(),
        },
        environment: Vec3::ONE,
        skipped_triangles: 0,
        warnings: Vec::new(),
        sources: Vec::new(),
        triangles,
    }
}
