//! `stencil`: Bernabé & Acacio's CPU stream compaction (Algorithm 2), as seed
//! 004 §5.3 describes it: phase 1 marks the survivors in an auxiliary stencil
//! rather than in the data, phase 2 counts the stencil per thread and turns the
//! counts into a prefix sum for scheduling, phase 3 has every thread compact its
//! chunk at its offset. Out of place, stable. Seed 004 found 8- or 32-bit stencil
//! words no slower than bits; we use the shared `mark` phase's 32-bit words.

use rayon::prelude::*;
use smart_default::SmartDefault;

use crate::compaction::cpu::sequential::split_in_order;
use crate::compaction::cpu::{Job, KeepIndex, Phases, cut, mark};

#[derive(Clone, Debug, SmartDefault)]
pub struct StencilTuning {
    /// Threads, i.e. chunks; 0 means one per thread of the rayon pool.
    #[default(0)]
    pub threads: usize,
}

/// Marks, counts per chunk, and returns (stencil, chunk length, per-chunk kept counts).
fn mark_and_count(
    t: &StencilTuning,
    n: usize,
    keep: &impl KeepIndex,
    ph: &mut Phases,
) -> (Vec<u32>, usize, Vec<usize>) {
    let threads = if t.threads == 0 { rayon::current_num_threads() } else { t.threads };
    let chunk = n.div_ceil(threads.max(1)).max(1);
    let stencil = ph.time("mark", || mark(n, keep));
    let counts = ph
        .time("count", || stencil.par_chunks(chunk).map(|s| s.iter().filter(|&&f| f != 0).count()).collect::<Vec<_>>());
    (stencil, chunk, counts)
}

/// Stable select: mark, count, compact; or with `split`, stable partition:
/// kept elements first, rejected after, both in input order.
pub fn compact<T: Copy + Send + Sync>(t: &StencilTuning, job: Job<'_, T, impl KeepIndex>, ph: &mut Phases) -> usize {
    let Job { input, keep, output, split } = job;
    let (stencil, chunk, counts) = mark_and_count(t, input.len(), keep, ph);
    let kept = counts.iter().sum();
    ph.time("compact", || {
        // Disjoint output slices per chunk: safe code, no shared pointer needed.
        // The exclusive prefix sum of the counts is implicit in the cutting.
        let (front, back) = output.split_at_mut(kept);
        let kept_outs = cut(front, counts.iter().copied()).into_par_iter();
        let chunks = input.par_chunks(chunk).zip(stencil.par_chunks(chunk));
        if !split {
            kept_outs.zip(chunks).for_each(|(o, (x, s))| {
                split_in_order(x, |k| s[k] != 0, o, None);
            });
            return;
        }
        let lens = input.chunks(chunk).map(<[T]>::len);
        let rejected_outs = cut(back, lens.zip(&counts).map(|(len, &k)| len - k));
        kept_outs.zip(rejected_outs).zip(chunks).for_each(|((o, r), (x, s))| {
            split_in_order(x, |k| s[k] != 0, o, Some(r));
        })
    });
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::cpu::testing;

    #[test]
    fn select_and_partition_match_sequential() {
        let variants: Vec<_> = [0, 1, 3, 64]
            .into_iter()
            .map(|threads| {
                let t = StencilTuning { threads };
                testing::variant(format!("threads={threads}"), move |x, k, o, split, ph| {
                    compact(&t, Job { input: x, keep: &|i| k[i], output: o, split }, ph)
                })
            })
            .collect();
        let sizes = testing::sizes(&mut fastrand::Rng::with_seed(0x057e_9c11), 3, 200_000);
        testing::check_select_partition(0x057e_9c11, &sizes, &variants);
    }

    #[test]
    fn phases_are_named() {
        let names = testing::phase_names(|x, o, ph| {
            compact(&StencilTuning::default(), Job { input: x, keep: &|i| i % 3 == 0, output: o, split: false }, ph)
        });
        assert_eq!(names, ["mark", "count", "compact"]);
    }
}
