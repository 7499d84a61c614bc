//! The path tracer on the wgpu backend: every trace shader validated by naga
//! (no adapter needed), then the analytic bodies of `common/analytic.rs`
//! and comparisons with the CPU engine on whatever adapter wgpu finds
//! (lavapipe in CI). A missing adapter skips with the reason;
//! REAP_REQUIRE_WGPU=1 turns that into a failure.
#![cfg(feature = "wgpu")]

#[path = "common/analytic.rs"]
mod analytic;

use analytic::Job;
use reap::compaction::wgpu::{AdapterChoice, WgpuBackend};
use reap::trace::wgpu::WgpuEngine;

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// The adapter REAP_WGPU_ADAPTER names (default: the best one), or a skip.
fn wgpu() -> Option<WgpuBackend> {
    let choice: AdapterChoice = std::env::var("REAP_WGPU_ADAPTER").unwrap_or_default().parse().expect("infallible");
    match WgpuBackend::new(&choice) {
        Ok(b) => {
            eprintln!("wgpu adapter: {}", b.name());
            Some(b)
        }
        Err(e) => {
            assert!(!required("REAP_REQUIRE_WGPU"), "REAP_REQUIRE_WGPU=1 but: {e}");
            eprintln!("SKIPPED wgpu test (no usable adapter): {e}");
            None
        }
    }
}

/// Every trace shader passes naga's validation: what wgpu would refuse at
/// pipeline creation fails here, with no adapter.
#[test]
fn every_trace_shader_validates_with_naga() {
    let mut failures = Vec::new();
    for source in reap::trace::wgpu::SOURCES {
        let text = source.assemble("");
        if let Err(e) = reap::wgpu_runtime::pipelines::validate(source.name, &text, false) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A fresh engine per render: each takes its backend by value.
fn engine(job: Job) -> WgpuEngine {
    let b = wgpu().expect("the adapter that wgpu() found");
    WgpuEngine::new(b, job.packed, job.camera, job.width, job.height, job.seed, job.max_bounces).expect("engine")
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
