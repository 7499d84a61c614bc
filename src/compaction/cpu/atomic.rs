//! `atomic`: pbrt-v4's GPU work queues (`src/pbrt/wavefront/workqueue.h`): every
//! surviving item reserves its slot with an atomic add on the queue's size, and
//! the CUDA compiler aggregates those adds per warp. Here a warp is a group of
//! `lanes` consecutive elements: the group takes a ballot of its keepers, one
//! `fetch_add(popcount)` reserves their slots, and each keeper writes at
//! base + popcount(ballot & lanes below it). Groups land in whatever order their
//! atomics happen to run, so the output is the right multiset in no fixed order.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use smart_default::SmartDefault;

use crate::compaction::cpu::{KeepIndex, Phases, Scatter};

#[derive(Clone, Debug, SmartDefault)]
pub struct AtomicTuning {
    /// Lanes per group (a warp); the ballot is a `u32`, so 1..=32.
    #[default(32)]
    pub lanes: u32,
    /// Elements per rayon task.
    #[default(16384)]
    pub chunk: usize,
}

/// Unstable select by warp-aggregated atomic append.
pub fn select<T: Copy + Send + Sync>(
    t: &AtomicTuning,
    input: &[T],
    keep: &impl KeepIndex,
    output: &mut [T],
    ph: &mut Phases,
) -> usize {
    let lanes = t.lanes.clamp(1, 32) as usize;
    // Whole groups per task, so no group straddles two tasks.
    let chunk = t.chunk.max(1).div_ceil(lanes) * lanes;
    let size = AtomicUsize::new(0);
    let out = Scatter::new(output);
    ph.time("append", || {
        input.par_chunks(chunk).enumerate().for_each(|(c, items)| {
            for (g, group) in items.chunks(lanes).enumerate() {
                let first = c * chunk + g * lanes;
                let ballot = (0..group.len()).fold(0u32, |m, l| m | ((keep(first + l) as u32) << l));
                if ballot == 0 {
                    continue; // no lane is active, so none takes part in the atomic
                }
                // Relaxed: the add only has to hand out disjoint ranges; the
                // writes reach the caller through rayon's join at the phase end.
                let base = size.fetch_add(ballot.count_ones() as usize, Ordering::Relaxed);
                let mut rest = ballot;
                while rest != 0 {
                    let l = rest.trailing_zeros();
                    let below = ballot & ((1u32 << l) - 1);
                    // SAFETY: base..base + popcount(ballot) was reserved for this
                    // group alone by the fetch_add; lanes take distinct ranks in it.
                    unsafe { out.write(base + below.count_ones() as usize, group[l as usize]) };
                    rest &= rest - 1;
                }
            }
        })
    });
    size.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::cpu::{sequential, testing};

    #[test]
    fn select_matches_sequential_as_multiset() {
        let mut rng = fastrand::Rng::with_seed(0xa701c);
        for n in testing::sizes(&mut rng, 3, 200_000) {
            let input: Vec<u64> = (0..n as u64).map(|i| i * 7 + 1).collect();
            for (name, flags) in testing::patterns(n, &mut rng) {
                let keep = |i: usize| flags[i];
                let mut want = vec![0; n];
                let want_k = sequential::select(&input, &keep, &mut want, &mut Phases::default());
                want.truncate(want_k);
                want.sort_unstable();
                for t in [
                    AtomicTuning::default(),
                    AtomicTuning { lanes: 32, chunk: 33 },
                    AtomicTuning { lanes: 5, chunk: 7 },
                ] {
                    let mut got = vec![u64::MAX; n];
                    let k = select(&t, &input, &keep, &mut got, &mut Phases::default());
                    assert_eq!(k, want_k, "count n={n} {name} {t:?}");
                    got.truncate(k);
                    got.sort_unstable();
                    assert_eq!(got, want, "n={n} {name} {t:?}");
                }
            }
        }
    }
}
