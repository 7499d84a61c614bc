//! The path tracer on the GPU against answers known in advance: the bodies
//! of `tests/analytic.rs` (in `common/analytic.rs`), run on the CUDA engine.

use super::analytic::{self, Job};
use super::gpu;
use reap::compaction::cuda::CudaBackend;
use reap::trace::cuda::CudaEngine;

/// A fresh engine per render: each takes its backend by value.
fn cuda(job: Job) -> CudaEngine {
    let b = CudaBackend::new(0).expect("the GPU that gpu() found");
    CudaEngine::new(b, job.packed, job.camera, job.width, job.height, job.seed, job.max_bounces).expect("engine")
}

#[test]
fn cuda_floor_under_a_ceiling_light_matches_the_parallel_form_factor() {
    if gpu().is_some() {
        analytic::floor_under_a_ceiling_light(&mut cuda);
    }
}

#[test]
fn cuda_wall_beside_a_ceiling_light_matches_lamberts_formula() {
    if gpu().is_some() {
        analytic::wall_beside_a_ceiling_light(&mut cuda);
    }
}

#[test]
fn cuda_light_seen_from_its_lit_side_is_exactly_its_radiance() {
    if gpu().is_some() {
        analytic::light_seen_from_its_lit_side_is_exactly_le(&mut cuda);
    }
}

#[test]
fn cuda_one_sided_light_seen_from_behind_is_black() {
    if gpu().is_some() {
        analytic::light_seen_from_behind_is_black(&mut cuda);
    }
}

#[test]
fn cuda_one_sided_light_turned_away_leaves_the_floor_black() {
    if gpu().is_some() {
        analytic::light_facing_away_leaves_the_floor_black(&mut cuda);
    }
}

#[test]
fn cuda_one_sided_light_leaves_the_wall_above_its_plane_black() {
    if gpu().is_some() {
        analytic::wall_above_the_light_sees_its_back_and_stays_black(&mut cuda);
    }
}
