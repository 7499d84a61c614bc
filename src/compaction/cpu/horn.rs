//! `horn`: Horn's stream reduction (GPU Gems 2 ch. 36) as seed 003 §II
//! describes it (Figs. 2-3), with the scan of seed 002 §2.2 Algorithm 2.
//!
//! Mark, then a Hillis-Steele scan in ceil(log2 n) passes, each pass a
//! parallel map over all n elements between two buffers (the paper's two
//! textures swapping roles), then a gather: each output slot finds its source
//! by a dichotomic search over the scan. Both steps are O(n log n) work, which
//! is the point of this algorithm: it is the baseline that seeds 002 and 003
//! improve on.

use rayon::prelude::*;

use crate::compaction::ScanElement;
use crate::compaction::cpu::{FlagScan, Job, Phases};

/// Fewest elements a rayon task takes in one pass: a pass does one add per
/// element, so smaller tasks would cost more to schedule than to run.
const GRAIN: usize = 4096;

/// Exclusive scan; returns the total. Horn's scan is inclusive, so it runs over
/// the input shifted right by one, which is the exclusive scan of the input.
pub fn scan<S: ScanElement>(input: &[S], output: &mut [S], ph: &mut Phases) -> S {
    let n = input.len();
    if n == 0 {
        return S::ZERO;
    }
    ph.time("prefix sum scan", || {
        let mut tmp = vec![S::ZERO; n];
        hillis_steele(|k| if k == 0 { S::ZERO } else { input[k - 1] }, &mut output[..n], &mut tmp);
    });
    output[n - 1].add(input[n - 1])
}

/// Select or partition (see `Job`): mark, scan, gather.
pub struct Horn;

impl FlagScan for Horn {
    fn place<T: Copy + Send + Sync, S: ScanElement>(&self, job: Job<'_, T, [u32]>, ph: &mut Phases) -> usize {
        let Job { input, keep: flags, output, split } = job;
        let n = input.len();
        // Inclusive scan of the flags: sum[i] = kept elements in 0..=i.
        let sum = ph.time("prefix sum scan", || {
            let (mut sum, mut tmp) = (vec![S::ZERO; n], vec![S::ZERO; n]);
            hillis_steele(|k| S::from_u64(flags[k] as u64), &mut sum, &mut tmp);
            sum
        });
        gather(input, &sum, output, split, ph)
    }
}

/// Horn's gather (003 §II): each output slot finds its source by a
/// dichotomic search over the inclusive scan `sum` of the flags. Sengupta's
/// hybrid ends with the same gather. Returns the kept count.
pub(super) fn gather<T: Copy + Send + Sync, S: ScanElement>(
    input: &[T],
    sum: &[S],
    output: &mut [T],
    split: bool,
    ph: &mut Phases,
) -> usize {
    let n = input.len();
    let kept = sum[n - 1].to_u64() as usize;
    ph.time("dichotomic search", || {
        let (kept_out, rejected_out) = output.split_at_mut(kept);
        // Slot j's source is the first i with sum[i] > j: sum is monotone, and
        // it steps from j to j + 1 exactly at the (j + 1)-th kept element.
        kept_out.par_iter_mut().with_min_len(GRAIN / 8).enumerate().for_each(|(j, o)| {
            *o = input[dichotomic_search(n, |i| sum[i].to_u64() as usize, j)];
        });
        if split {
            // Rejected elements in 0..=i number i + 1 - sum[i], also monotone.
            let rejected = &mut rejected_out[..n - kept];
            rejected.par_iter_mut().with_min_len(GRAIN / 8).enumerate().for_each(|(r, o)| {
                *o = input[dichotomic_search(n, |i| i + 1 - sum[i].to_u64() as usize, r)];
            });
        }
    });
    kept
}

/// Horn's scan (002 Algorithm 2): the inclusive scan of `x(0..n)` into `out`,
/// in ceil(log2 n) passes that each add the value `2^d` to the left. Every pass
/// reads one buffer and writes the other, so no element is read after being
/// overwritten in the same pass; the first pass reads `x` itself, and the
/// buffers start in the order that leaves the last pass's result in `out`.
pub(super) fn hillis_steele<S: ScanElement>(x: impl Fn(usize) -> S + Sync, out: &mut [S], tmp: &mut [S]) {
    let n = out.len();
    let passes = usize::BITS - (n - 1).leading_zeros(); // ceil(log2 n); 0 for n = 1
    if passes == 0 {
        out[0] = x(0);
        return;
    }
    let (mut src, mut dst) = if passes % 2 == 1 { (tmp, out) } else { (out, tmp) };
    dst.par_iter_mut().with_min_len(GRAIN).enumerate().for_each(|(k, d)| {
        *d = if k >= 1 { x(k).add(x(k - 1)) } else { x(k) };
    });
    for pass in 1..passes {
        std::mem::swap(&mut src, &mut dst);
        let (src, off) = (&*src, 1usize << pass);
        dst.par_iter_mut().with_min_len(GRAIN).enumerate().for_each(|(k, d)| {
            *d = if k >= off { src[k].add(src[k - off]) } else { src[k] };
        });
    }
}

/// The first `i < n` with `f(i) > target`, for a non-decreasing `f` that is
/// known to exceed `target` somewhere: O(log n) probes, one output slot each.
fn dichotomic_search(n: usize, f: impl Fn(usize) -> usize, target: usize) -> usize {
    let (mut lo, mut hi) = (0, n - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if f(mid) > target { hi = mid } else { lo = mid + 1 }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::compaction::cpu::testing::flag_scan_tests!(Horn, scan, ["mark", "prefix sum scan", "dichotomic search"]);
}
