//! Shared by the CPU algorithms' unit tests: sizes around every block, warp
//! and P boundary, and the verify suite's keep patterns.

use crate::verify::Pattern;

/// Sizes at and around the boundaries every algorithm cuts its input at.
pub const EDGE_SIZES: [usize; 16] = [0, 1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1023, 1024, 1025, 4097];

/// The edge sizes, then `random` sizes up to `max` that are multiples of nothing in particular.
pub fn sizes(rng: &mut fastrand::Rng, random: usize, max: usize) -> Vec<usize> {
    EDGE_SIZES.iter().copied().chain((0..random).map(|_| rng.usize(1..=max))).collect()
}

/// Keep patterns over `n` elements, named for failure messages: random at
/// five densities, alternating, runs, one survivor first, one survivor last.
pub fn patterns(n: usize, rng: &mut fastrand::Rng) -> Vec<(String, Vec<bool>)> {
    [
        Pattern::Random(0.0),
        Pattern::Random(1.0),
        Pattern::Random(0.1),
        Pattern::Random(0.5),
        Pattern::Random(0.9),
        Pattern::Alternating,
        Pattern::Runs,
        Pattern::FirstOnly,
        Pattern::LastOnly,
    ]
    .into_iter()
    .map(|p| (p.to_string(), p.flags(n, rng)))
    .collect()
}
