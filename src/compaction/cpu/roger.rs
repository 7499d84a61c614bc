//! `roger`: the hierarchical stream reduction of seed 003 §III (Roger,
//! Assarsson, Holzschuch 2007).
//!
//! Mark; split the stream into blocks of s elements (64, the best size in
//! 003 §V-A) and reduce each block on its own (§III-B): a prefix sum of its
//! empty elements ("sum inside blocks"), then, for each output position, the
//! improved dichotomic search of Fig. 5 ("dichotomic search"); a scan of the
//! blocks' empty counts gives each block's displacement (§III-C, Fig. 6:
//! "global sum"); each block's run is then moved into place ("concatenation",
//! done on the GPU by line drawing). O(n + n log s) work, against Horn's
//! O(n log n). Phase names follow Fig. 10, but for line drawing, which a CPU
//! has no use for.
//!
//! A block is one rayon task and its s search positions run one after the
//! other, the CPU's stand-in for the block's fragments.

use std::mem::MaybeUninit;

use rayon::prelude::*;
use smart_default::SmartDefault;

use crate::compaction::cpu::{Job, KeepIndex, Phases, Scatter, mark};

/// Fewest elements a rayon task covers in one phase.
const GRAIN: usize = 4096;

/// Tuning for [`select`] and [`partition`].
#[derive(Clone, Debug, SmartDefault)]
pub struct RogerTuning {
    /// Elements per block, s. 003 §V-A (Fig. 11) found 64 best up to 16M
    /// elements. Values below 1 count as 1.
    #[default(64)]
    pub block_size: usize,
}

/// Select: the kept elements, in input order; or with `split`, partition:
/// the kept elements first, then the rejected ones, both in input order.
/// Under `split` each block also gathers its rejected elements after its kept
/// ones, with the same search on the mirrored prefix sum.
pub fn compact<T: Copy + Send + Sync>(t: &RogerTuning, job: Job<'_, T, impl KeepIndex>, ph: &mut Phases) -> usize {
    let Job { input, keep, output, split } = job;
    let n = input.len();
    let flags = ph.time("mark", || mark(n, keep));
    if n == 0 {
        return 0;
    }
    // u32 prefix sums within a block are exact for any block that fits in u32.
    let s = t.block_size.clamp(1, u32::MAX as usize);
    let blocks_per_task = (GRAIN / s).max(1);

    // pSum: within each block, the empty elements at or before each element.
    let psum = ph.time("sum inside blocks", || {
        let mut psum = vec![0u32; n];
        psum.par_chunks_mut(s).with_min_len(blocks_per_task).zip(flags.par_chunks(s)).for_each(|(p, f)| {
            let mut empty = 0;
            for (p, &f) in p.iter_mut().zip(f) {
                empty += 1 - f;
                *p = empty;
            }
        });
        psum
    });

    // Each block's elements end up at its start: kept ones, then (partition)
    // rejected ones, in input order. Every slot read later is written here.
    let mut reduced = Box::<[T]>::new_uninit_slice(n);
    ph.time("dichotomic search", || {
        reduced.par_chunks_mut(s).with_min_len(blocks_per_task).zip(psum.par_chunks(s)).enumerate().for_each(
            |(b, (r, p))| {
                let (x, f) = (&input[b * s..b * s + p.len()], &flags[b * s..b * s + p.len()]);
                let kept = gather(r, x, |j| p[j] as usize, |j| f[j] != 0);
                if split {
                    // Kept elements at or before j number j + 1 - pSum[j]: the
                    // rejected elements' own pSum, under the same search.
                    gather(&mut r[kept..], x, |j| j + 1 - p[j] as usize, |j| f[j] == 0);
                }
            },
        );
    });

    // The last term of each block's pSum is its empty count; scanned, these give
    // the empty elements before each block, which is its displacement.
    let (empty_before, empty) = ph.time("global sum", || {
        let counts: Vec<usize> = psum.par_chunks(s).map(|p| p[p.len() - 1] as usize).collect();
        exclusive_scan(&counts)
    });
    let kept = n - empty;

    ph.time("concatenation", || {
        let out = Scatter::new(output);
        reduced
            .par_chunks(s)
            .with_min_len(blocks_per_task)
            .zip(psum.par_chunks(s))
            .zip(&empty_before)
            .enumerate()
            .for_each(|(b, ((r, p), &before))| {
                let block_kept = p.len() - p[p.len() - 1] as usize;
                let runs = if split { p.len() } else { block_kept };
                for (k, v) in r[..runs].iter().enumerate() {
                    // SAFETY: the dichotomic search wrote this block's first
                    // `block_kept` slots, and all its slots when splitting.
                    let v = unsafe { v.assume_init() };
                    let slot = if k < block_kept { b * s - before + k } else { kept + before + (k - block_kept) };
                    // SAFETY: b * s - before kept elements precede block b, so
                    // blocks' kept runs tile 0..kept; likewise `before` rejected
                    // elements precede it, so rejected runs tile kept..n.
                    unsafe { out.write(slot, v) }
                }
            });
    });
    kept
}

/// Gathers one block's wanted elements to the front of `out`, in order, one
/// search per output position; returns how many. `p(j)` is the block's
/// prefix sum of unwanted elements through j.
fn gather<T: Copy>(
    out: &mut [MaybeUninit<T>],
    x: &[T],
    p: impl Fn(usize) -> usize,
    wanted: impl Fn(usize) -> bool,
) -> usize {
    let mut i = 0;
    while let Some(j) = improved_dichotomic_search(x.len(), &p, &wanted, i) {
        out[i].write(x[j]);
        i += 1;
    }
    i
}

/// 003 Fig. 5: in a block of `s` elements whose unwanted elements through j
/// number `p(j)`, the wanted element j_i that lands at position i, the one
/// with j_i - p(j_i) = i; `None` when fewer than i + 1 are wanted. Since
/// j - p(j) is non-decreasing and contracting (|j - j_i| >= |j - p(j) - i|),
/// each probe both halves the interval and moves the far bound by its miss.
fn improved_dichotomic_search(
    s: usize,
    p: impl Fn(usize) -> usize,
    wanted: impl Fn(usize) -> bool,
    i: usize,
) -> Option<usize> {
    if i >= s {
        return None;
    }
    let mut lower = i + p(i);
    let mut upper = i + p(s - 1);
    if upper > s - 1 {
        return None; // no element at position i
    }
    let miss = |j: usize| j as isize - p(j) as isize - i as isize;
    let mut j = (lower + upper) / 2;
    let mut found = miss(j);
    // found == 0 at an unwanted j means j_i lies to the left (j - p(j) only
    // reaches i there after passing j_i), hence max(1, found).
    while found != 0 || !wanted(j) {
        if found < 0 {
            lower = j + found.unsigned_abs();
        } else {
            upper = j - found.max(1) as usize;
        }
        debug_assert!(lower <= upper, "Fig. 5 lost its element: {lower} > {upper}");
        j = (lower + upper) / 2;
        found = miss(j);
    }
    Some(j)
}

/// Exclusive scan of the block counts and their total, work-efficient as
/// 003 §III-D assumes ([5], O(n / s)), coarsened for rayon as seed 001
/// module 10.4 does: each task sums a section, the few section sums are
/// scanned, then each section scans itself from its base.
fn exclusive_scan(counts: &[usize]) -> (Vec<usize>, usize) {
    let sums: Vec<usize> = counts.par_chunks(GRAIN).map(|c| c.iter().sum()).collect();
    let mut total = 0;
    let bases: Vec<usize> = sums
        .iter()
        .map(|&c| {
            total += c;
            total - c
        })
        .collect();
    let mut out = vec![0; counts.len()];
    out.par_chunks_mut(GRAIN).zip(counts.par_chunks(GRAIN)).zip(bases).for_each(|((o, c), mut run)| {
        for (o, &c) in o.iter_mut().zip(c) {
            *o = run;
            run += c;
        }
    });
    (out, total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::cpu::testing;

    /// The paper's s = 64, the degenerate 1, and sizes that leave a short
    /// last block.
    fn tunings() -> Vec<RogerTuning> {
        [64, 0, 1, 2, 3, 7, 100, 1000].map(|s| RogerTuning { block_size: s }).to_vec()
    }

    #[test]
    fn select_and_partition_match_sequential() {
        testing::check_tunings(&tunings(), compact);
    }

    #[test]
    fn phases_are_named_after_the_paper() {
        let names = testing::phase_names(|x, o, ph| {
            compact(&RogerTuning::default(), Job { input: x, keep: &|i| i % 3 == 0, output: o, split: false }, ph)
        });
        assert_eq!(names, ["mark", "sum inside blocks", "dichotomic search", "global sum", "concatenation"]);
    }
}
