//! Split-frame rendering on the CPU engine (the bodies, shared with the GPU
//! suite, are in tests/common/shard.rs): bands of rows traced by separate
//! engines sum to the single engine's image bit for bit, under both
//! traversals and with and without compaction, also when a band's edge moves.

#[path = "common/shard.rs"]
mod shard;

use reap::compaction::CpuBackend;
use reap::trace::cpu::CpuEngine;
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::{Compaction, DESCEND, Engine, Estimator, RenderSettings, Traversal};

const SEED: u32 = 11;
const MAX_BOUNCES: u32 = 6;
/// Odd sizes: bands of unequal rows, a last block partly empty.
const W: u32 = 29;
const H: u32 = 23;

fn cornell() -> CpuEngine {
    let scene = reap::scene::builtin("cornell").expect("cornell");
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(&scene, &bvh);
    let camera = CameraLayout::new(&scene.camera, W, H);
    CpuEngine::new(CpuBackend::new(), packed, camera, W, H, SEED, MAX_BOUNCES)
}

fn settings(traversal: Traversal, compaction: &str) -> RenderSettings {
    let c = Compaction::parse(compaction, &CpuBackend::new(), "test").expect("a catalog algorithm");
    RenderSettings {
        width: W,
        height: H,
        spp: 3,
        max_bounces: MAX_BOUNCES,
        estimator: Estimator::Mis,
        traversal,
        compact_paths: c,
        compact_frontier: c,
        seed: SEED,
        first_sample: 0,
        max_frontier: 1 << 24,
        descend: DESCEND,
        block_levels: reap::trace::BlockLevels::Auto,
        group_levels: 0,
        bvh: reap::trace::BVH,
        fusion: Default::default(),
    }
}

/// Two and three bands (and a one-row band) against the whole image, both
/// traversals, no compaction, a fused single-pass algorithm and a separate one.
#[test]
fn bands_of_rows_sum_to_the_whole_image() {
    for traversal in Traversal::ALL {
        for compaction in ["none", "lookback", "roger"] {
            let s = settings(traversal, compaction);
            shard::split_frames_sum_to_the_whole_image(cornell, &s, &[&[12, 11], &[8, 1, 14]]);
        }
    }
}

/// The edge between two bands moves up, then down past where it started:
/// the moved rows' sums are copied to their new owner and zeroed at the old.
#[test]
fn a_moving_band_edge_keeps_the_image() {
    let move_rows = |from: &mut CpuEngine, to: &mut CpuEngine, pixels: std::ops::Range<u64>| {
        let r = pixels.start as usize..pixels.end as usize;
        to.sums_mut()[r.clone()].copy_from_slice(&from.sums()[r.clone()]);
        from.sums_mut()[r].fill([0.0; 4]);
    };
    for traversal in Traversal::ALL {
        let s = settings(traversal, "lookback");
        shard::a_moving_band_edge_keeps_the_image(cornell, &s, &[12, 5, 18, 18], move_rows);
    }
}

/// Split renders (2 and 3 CPU ranks, bands that follow the time, then set
/// by hand) gather to the one-engine image.
#[test]
fn split_renders_gather_to_the_whole_image() {
    for traversal in Traversal::ALL {
        let s = settings(traversal, "lookback");
        shard::split_renders_the_whole_image(|_| cornell(), &s, 2, vec![3, 20]);
        shard::split_renders_the_whole_image(|_| cornell(), &s, 3, vec![20, 1, 2]);
    }
    // One to five ranks, over seven samples a part: rounds that do not divide them.
    let s = RenderSettings { spp: 7, ..settings(Traversal::DepthFirst, "lookback") };
    for ranks in 1..=5 {
        let bands = (0..ranks as u32).map(|r| if r == 0 { H - ranks as u32 + 1 } else { 1 }).collect();
        shard::split_renders_the_whole_image(|_| cornell(), &s, ranks, bands);
    }
    // More ranks than rows cannot split.
    assert!(reap::trace::split::Split::new((0..24).map(|_| cornell()).collect(), W, H).is_err());
}

#[test]
fn bad_shards_are_typed_errors() {
    shard::bad_shards_are_typed_errors(cornell(), &settings(Traversal::DepthFirst, "none"));
}

/// A shard's engine still renders only images of its engine's size: the
/// check is against the image, not the shard.
#[test]
fn render_checks_the_image_size_not_the_shards() {
    let mut e = cornell();
    e.set_shard(reap::trace::Shard::rows(W, 2, 3)).expect("a band");
    let s = settings(Traversal::DepthFirst, "none");
    let band = RenderSettings { height: 3, ..s.clone() };
    assert!(matches!(reap::trace::render(&mut e, &band, |_| {}), Err(reap::trace::TraceError::Settings(_))));
    reap::trace::render(&mut e, &s, |_| {}).expect("the image's settings render the band");
}
