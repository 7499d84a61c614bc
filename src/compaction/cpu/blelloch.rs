//! `blelloch`: scan-then-scatter compaction on the work-efficient scan of
//! Blelloch, as the GPU Teaching Kit (seed 001 modules 10.3-10.4) and seed 002
//! §2.3 (reduce and down-sweep) describe it; what CUDPP did (seed 000 Table 3).
//!
//! Mark, then a balanced-tree scan in place over all n flags: an up-sweep
//! (001's reduction phase: each tree level adds every left child into its
//! right sibling's slot) and a down-sweep (001's post-reduction reverse phase:
//! each level adds a finished prefix into the middle of the next subtree), each
//! level one parallel step, O(n) work in 2 log n steps. Then each kept element
//! scatters itself to its scanned offset. 001's kernel bounds every index by
//! the array's length, so n need not be a power of two and nothing is padded.

use rayon::prelude::*;

use crate::compaction::ScanElement;
use crate::compaction::cpu::{FlagScan, Job, Phases, Scatter};

/// Fewest elements a rayon task covers in one tree level or in the scatter.
const GRAIN: usize = 4096;

/// Exclusive scan; returns the total. The tree scan is inclusive, so it runs in
/// place over the input shifted right by one slot: that is the exclusive scan.
pub fn scan<S: ScanElement>(input: &[S], output: &mut [S], ph: &mut Phases) -> S {
    let n = input.len();
    if n == 0 {
        return S::ZERO;
    }
    let out = &mut output[..n];
    ph.time("up-sweep", || {
        out[0] = S::ZERO;
        out[1..].par_iter_mut().with_min_len(GRAIN).zip(&input[..n - 1]).for_each(|(o, &x)| *o = x);
        up_sweep(out);
    });
    ph.time("down-sweep", || down_sweep(out));
    out[n - 1].add(input[n - 1])
}

/// Select or partition (see `Job`): mark, the tree scan, then a scatter.
pub struct Blelloch;

impl FlagScan for Blelloch {
    fn place<T: Copy + Send + Sync, S: ScanElement>(&self, job: Job<'_, T, [u32]>, ph: &mut Phases) -> usize {
        let Job { input, keep: flags, output, split } = job;
        let n = input.len();
        // Shifted by one slot, the inclusive tree scan leaves offset[i] = kept
        // elements before i.
        let mut offset = ph.time("up-sweep", || {
            let mut a = vec![S::ZERO; n];
            a[1..]
                .par_iter_mut()
                .with_min_len(GRAIN)
                .zip(&flags[..n - 1])
                .for_each(|(o, &f)| *o = S::from_u64(f as u64));
            up_sweep(&mut a);
            a
        });
        ph.time("down-sweep", || down_sweep(&mut offset));
        let kept = offset[n - 1].to_u64() as usize + flags[n - 1] as usize;
        ph.time("scatter", || {
            let out = Scatter::new(output);
            (0..n).into_par_iter().with_min_len(GRAIN).for_each(|i| {
                let before = offset[i].to_u64() as usize;
                if flags[i] != 0 {
                    // SAFETY: an exclusive scan of 0/1 flags gives each kept element
                    // its own slot below `kept`.
                    unsafe { out.write(before, input[i]) }
                } else if split {
                    // SAFETY: i - before counts the rejected elements before i, so
                    // each rejected element gets its own slot at or after `kept`.
                    unsafe { out.write(kept + i - before, input[i]) }
                }
            });
        });
        kept
    }
}

/// One tree level: within every whole group of `2 * stride` elements, the
/// last takes the sum of itself and the group's middle element. A level writes
/// only slots `2 * stride * k - 1` and reads only slots `stride * (2k - 1) - 1`,
/// so its steps are independent; groups are disjoint `chunks_exact_mut`.
fn level<S: ScanElement>(a: &mut [S], stride: usize) {
    let min_chunks = (GRAIN / (2 * stride)).max(1);
    a.par_chunks_exact_mut(2 * stride).with_min_len(min_chunks).for_each(|g| {
        g[2 * stride - 1] = g[2 * stride - 1].add(g[stride - 1]);
    });
}

/// 001's reduction phase: for stride = 1, 2, 4, ..., slot 2·stride·k - 1 adds
/// slot 2·stride·k - 1 - stride. Afterwards slot i holds the sum of the
/// lowbit(i + 1) elements ending at i: the tree's partial sums.
fn up_sweep<S: ScanElement>(a: &mut [S]) {
    let mut stride = 1;
    while 2 * stride <= a.len() {
        level(a, stride);
        stride *= 2;
    }
}

/// 001's post-reduction reverse phase: from the widest stride down, slot
/// 2·stride·k - 1 (already a full prefix) is added into slot 2·stride·k - 1 +
/// stride, the end of the next half-subtree. Working on `a[stride..]` turns
/// that into the same group step as the up-sweep. The widest stride is half
/// the largest power of two in n: the first subtree that n does not cover
/// whole still needs the root's prefix.
fn down_sweep<S: ScanElement>(a: &mut [S]) {
    if a.len() < 2 {
        return;
    }
    let mut stride = (1usize << a.len().ilog2()) / 2;
    while stride >= 1 {
        level(&mut a[stride..], stride);
        stride /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::compaction::cpu::testing::flag_scan_tests!(Blelloch, scan, ["mark", "up-sweep", "down-sweep", "scatter"]);
}
