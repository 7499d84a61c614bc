//! The path tracer on the GPU against answers known in advance: the bodies
//! of `tests/analytic.rs` (in `common/analytic.rs`), run on the CUDA engine.

use super::analytic;
use super::gpu;
use reap::compaction::cuda::CudaBackend;
use reap::trace::EngineSetup;
use reap::trace::cuda::CudaEngine;

/// A fresh engine per render: each takes its backend by value.
fn cuda(setup: EngineSetup) -> CudaEngine {
    let b = CudaBackend::new(0).expect("the GPU that gpu() found");
    CudaEngine::new(b, setup).expect("engine")
}

/// Stamps out one test per body of `common/analytic.rs`, each under its own
/// name (so each fails on its own), skipped where no GPU is present.
macro_rules! on_the_gpu {
    ($($test:ident => $body:ident,)*) => {$(
        #[test]
        fn $test() {
            if gpu().is_some() {
                analytic::$body(&mut cuda);
            }
        }
    )*};
}

on_the_gpu! {
    cuda_floor_under_a_ceiling_light_matches_the_parallel_form_factor => floor_under_a_ceiling_light,
    cuda_wall_beside_a_ceiling_light_matches_lamberts_formula => wall_beside_a_ceiling_light,
    cuda_light_seen_from_its_lit_side_is_exactly_its_radiance => light_seen_from_its_lit_side_is_exactly_le,
    cuda_one_sided_light_seen_from_behind_is_black => light_seen_from_behind_is_black,
    cuda_one_sided_light_turned_away_leaves_the_floor_black => light_facing_away_leaves_the_floor_black,
    cuda_one_sided_light_leaves_the_wall_above_its_plane_black => wall_above_the_light_sees_its_back_and_stays_black,
}
