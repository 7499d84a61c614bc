//! The path tracer against answers known in advance (issue 13), on the CPU
//! engine: the closed-form form factors checked first on their own, then
//! rendered scenes against them. `--nocapture` prints every number compared.
//! The scenes and checks are in `common/analytic.rs`, shared with the GPU's
//! run of the same bodies (`cuda/trace_analytic.rs`).

#[path = "common/analytic.rs"]
mod analytic;

use analytic::*;
use glam::DVec3;
use reap::compaction::CpuBackend;
use reap::trace::EngineSetup;
use reap::trace::cpu::CpuEngine;

fn cpu(job: EngineSetup) -> CpuEngine {
    CpuEngine::new(CpuBackend::new(), job.packed.clone(), job.camera, job.width, job.height, job.seed, job.max_bounces)
}

/// A point at `(x, z)` on the floor, facing up.
fn on_floor(x: f64, z: f64) -> DVec3 {
    DVec3::new(x, 0.0, z)
}

#[test]
fn corner_form_factor_tends_to_a_quarter_and_the_full_plane_to_one() {
    let c = HEIGHT as f64;
    assert!((corner_form_factor(1e9, 1e9, c) - 0.25).abs() < 1e-8);
    assert_eq!(corner_form_factor(0.0, 5.0, c), 0.0);
    for p in [(0.0, 0.0), (3.0, -7.0)] {
        let f = parallel_form_factor(p, (-1e9, 1e9), (-1e9, 1e9), c);
        assert!((f - 1.0).abs() < 1e-8, "an infinite light over {p:?}: F = {f}");
    }
    // A square of side 2c centred over the point: each corner has A = B = 1,
    // so F = 4 · (1/2π) · 2 · atan(1/√2)/√2 = 0.554126 (Howell C-11).
    let f = parallel_form_factor((0.0, 0.0), (-1.0, 1.0), (-1.0, 1.0), 1.0);
    println!("centred square of side 2c: F = {f:.6}");
    assert!((f - 0.554126).abs() < 1e-6, "F = {f}");
}

#[test]
fn the_closed_forms_agree_with_each_other_and_with_brute_force_integration() {
    let light = ceiling_light();
    let corners = light.corners();
    let c = HEIGHT as f64;
    // Under the light, on its edge, and outside its footprint (grazing).
    for (x, z) in [(0.0, 0.0), (0.5, -0.3), (1.0, 0.2), (1.8, 0.5), (-1.9, -1.9), (0.0, 3.0)] {
        let p = on_floor(x, z);
        let parallel = parallel_form_factor((x, z), (-1.0, 1.0), (-1.0, 1.0), c);
        let lambert = polygon_form_factor(p, DVec3::Y, &corners);
        let brute = integrated_form_factor(p, DVec3::Y, &light, 800);
        println!("floor ({x}, {z}): corner sum {parallel:.8}, Lambert {lambert:.8}, brute force {brute:.8}");
        assert!((parallel - lambert).abs() < 1e-12, "({x}, {z}): {parallel} vs {lambert}");
        assert!((parallel - brute).abs() < 1e-5 * parallel, "({x}, {z}): {parallel} vs {brute}");
    }
    // The wall beside the light, below its plane: light from the side.
    let w = wall();
    for (y, z) in [(0.2, 0.0), (0.6, 1.0), (0.95, -0.4), (0.5, 1.9)] {
        let p = DVec3::new(1.5, y, z);
        let lambert = polygon_form_factor(p, w.normal(), &corners);
        let brute = integrated_form_factor(p, w.normal(), &light, 800);
        println!("wall (y {y}, z {z}): Lambert {lambert:.8}, brute force {brute:.8}");
        assert!((lambert - brute).abs() < 1e-4 * lambert, "wall ({y}, {z}): {lambert} vs {brute}");
    }
}

#[test]
fn rectangles_are_wound_to_light_the_side_they_name() {
    let lit_side = |r: &Rect| {
        let [a, b, _, d] = r.corners();
        (b - a).cross(d - a).normalize()
    };
    assert_eq!(lit_side(&ceiling_light()), -DVec3::Y, "the ceiling light faces down");
    assert_eq!(lit_side(&ceiling_light().flipped()), DVec3::Y);
    assert_eq!(lit_side(&floor()), DVec3::Y);
    assert_eq!(lit_side(&wall()), -DVec3::X, "the wall faces the light");
    // The scene's triangles carry the same winding: e1 × e2 along u × v.
    let s = scene(reap::scene::Camera::fit(glam::Vec3::ZERO, glam::Vec3::ONE), ceiling_light(), &[floor()]);
    for (t, m) in s.triangles.iter().zip(&s.material_of) {
        let n = (t[1] - t[0]).cross(t[2] - t[0]).normalize();
        let want = if *m == 0 { -glam::Vec3::Y } else { glam::Vec3::Y };
        assert!(n.abs_diff_eq(want, 1e-6), "material {m}: e1 × e2 = {n}");
    }
}

#[test]
fn floor_under_a_ceiling_light_matches_the_parallel_form_factor() {
    floor_under_a_ceiling_light(&mut cpu);
}

#[test]
fn wall_beside_a_ceiling_light_matches_lamberts_formula() {
    wall_beside_a_ceiling_light(&mut cpu);
}

#[test]
fn light_seen_from_its_lit_side_is_exactly_its_radiance() {
    light_seen_from_its_lit_side_is_exactly_le(&mut cpu);
}

#[test]
fn one_sided_light_seen_from_behind_is_black() {
    light_seen_from_behind_is_black(&mut cpu);
}

#[test]
fn one_sided_light_turned_away_leaves_the_floor_black() {
    light_facing_away_leaves_the_floor_black(&mut cpu);
}

#[test]
fn one_sided_light_leaves_the_wall_above_its_plane_black() {
    wall_above_the_light_sees_its_back_and_stays_black(&mut cpu);
}
